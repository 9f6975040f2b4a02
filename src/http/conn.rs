//! One TCP connection as HTTP/1.x: side detection, heads, bodies, pairing.
//!
//! Invariants:
//! - Every request head gets a depth (1-based, in order) and, through
//!   `pending`, exactly one `ResponseEnd` or `NoResponse`; a response with no
//!   pending request gets the next depth of its own.
//! - The `Request` event of an exchange is emitted before any of its response
//!   events: response events that overtake their request's body (the server
//!   answered early) wait in `deferred`, which is bounded.
//! - Buffers are bounded: heads by [`HEAD_LIMIT`], request bodies by
//!   [`REQUEST_BODY_LIMIT`], deferred response bytes by [`DEFERRED_RESPONSE_LIMIT`];
//!   response bodies are streamed, never kept.

use super::chunked::ChunkedDecoder;
use super::decompress::ContentDecoder;
use super::framing::{Framing, request_framing, response_framing};
use super::head::{
    HEAD_LIMIT, Probe, START_LINE_LIMIT, Strictness, find_head_end, leading_empty_lines,
    parse_request_head, parse_response_head, parse_status_line, probe, push_anomaly,
};
use super::{
    BodyEnd, ConnInfo, ExchangeRef, Headers, HttpEvent, HttpRequest, RequestHead, ResponseHead,
};
use crate::anomaly::Stats;
use crate::flow::{CloseReason, Side};
use std::collections::VecDeque;
use std::net::SocketAddr;
use std::sync::Arc;

/// Most decoded request-body bytes kept per request; the rest is counted in
/// `wire_len` only (`http.request_body_limit`).
pub const REQUEST_BODY_LIMIT: usize = 16 * 1024 * 1024;

/// Most decoded response bytes held back while their request's body is
/// still arriving; past it those body pieces are dropped (`http.deferred_limit`).
pub const DEFERRED_RESPONSE_LIMIT: usize = 16 * 1024 * 1024;

/// Most requests waiting for a response per connection (Zeek keeps 100);
/// past it the oldest gets `NoResponse` (`http.pending_limit`).
pub const PENDING_LIMIT: usize = 1000;

/// Bytes buffered per side before the side is known to be HTTP or not.
const DETECT_LIMIT: usize = HEAD_LIMIT;

/// Direction of HTTP messages (after side detection).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Dir {
    /// Client to server: requests.
    Req,
    /// Server to client: responses.
    Resp,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum ReadState {
    /// Waiting for (or inside) a message head.
    Head,
    /// Looking for the next plausible message start; `line_start`: the
    /// buffer begins at the start of a line.
    Resync { line_start: bool },
    /// Inside a body.
    Body,
    /// Finished (FIN/RST, tunnel): input is ignored.
    Dead,
}

/// Byte reader of one direction.
#[derive(Debug)]
struct Reader {
    buf: Vec<u8>,
    /// Stream offset of `buf[0]`.
    buf_offset: u64,
    /// Resume point of the head-end scan within `buf`.
    scanned: usize,
    state: ReadState,
    /// (stream offset, ts_us, frame) of each delivery still in `buf`.
    marks: VecDeque<(u64, i64, u64)>,
    /// A gap was seen and not yet recovered from by a message start.
    gap: bool,
}

impl Reader {
    fn new() -> Self {
        Reader {
            buf: Vec::new(),
            buf_offset: 0,
            scanned: 0,
            state: ReadState::Head,
            marks: VecDeque::new(),
            gap: false,
        }
    }

    fn append(&mut self, data: &[u8], ts_us: i64, frame: u64) {
        let at = self.buf_offset.saturating_add(self.buf.len() as u64);
        self.marks.push_back((at, ts_us, frame));
        self.buf.extend_from_slice(data);
    }

    /// Drops the first `n` buffered bytes.
    fn consume(&mut self, n: usize) {
        let n = n.min(self.buf.len());
        self.buf.drain(..n);
        self.buf_offset = self.buf_offset.saturating_add(n as u64);
        self.scanned = self.scanned.saturating_sub(n);
        while self.marks.len() > 1 && self.marks.get(1).is_some_and(|m| m.0 <= self.buf_offset) {
            self.marks.pop_front();
        }
    }

    /// Time and frame of the delivery that brought `buf[0]`.
    fn first_mark(&self, fallback: (i64, u64)) -> (i64, u64) {
        self.marks
            .iter()
            .take_while(|m| m.0 <= self.buf_offset)
            .last()
            .map_or(fallback, |m| (m.1, m.2))
    }

    fn clear(&mut self) -> usize {
        let n = self.buf.len();
        self.consume(n);
        self.marks.clear();
        n
    }
}

/// How a body is being read.
#[derive(Debug)]
enum BodyReader {
    Length(u64),
    Chunked(ChunkedDecoder),
    Close,
}

/// A request whose head has been read.
#[derive(Debug)]
struct Pending {
    xref: ExchangeRef,
    method: String,
    version: String,
}

/// A request being read (head parsed, body arriving).
struct ReqMsg {
    xref: ExchangeRef,
    ts_first_us: i64,
    frame: u64,
    head: RequestHead,
    body: Vec<u8>,
    wire_len: u64,
    reader: BodyReader,
    decoder: ContentDecoder,
    anomalies: Vec<String>,
    complete: bool,
}

/// A response whose head has been read and whose body is arriving.
struct RespMsg {
    xref: ExchangeRef,
    wire_len: u64,
    reader: BodyReader,
    decoder: ContentDecoder,
    anomalies: Vec<String>,
    gap: bool,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Role {
    Undecided,
    /// `swapped`: the flow's `Side::Client` is really the server.
    Http {
        swapped: bool,
    },
    NotHttp,
}

/// A stream event held while the sides are not known yet.
#[derive(Debug)]
enum Held {
    Data {
        side: Side,
        ts_us: i64,
        frame: u64,
        bytes: Vec<u8>,
    },
    Gap {
        side: Side,
        len: u64,
    },
    Fin {
        side: Side,
        ts_us: i64,
    },
}

/// HTTP state of one TCP stream.
pub struct Conn {
    stream: u64,
    client: SocketAddr,
    server: SocketAddr,
    capture: Arc<str>,
    info: Option<Arc<ConnInfo>>,
    role: Role,
    held: Vec<Held>,
    held_bytes: [usize; 2],
    /// The side's stream began with a gap (its first bytes are mid-message).
    starts_with_gap: [bool; 2],
    req: Reader,
    resp: Reader,
    req_msg: Option<ReqMsg>,
    resp_msg: Option<RespMsg>,
    pending: VecDeque<Pending>,
    next_depth: u32,
    deferred: Vec<HttpEvent>,
    deferred_bytes: usize,
    last_ts_us: i64,
}

fn side_index(side: Side) -> usize {
    match side {
        Side::Client => 0,
        Side::Server => 1,
    }
}

impl Conn {
    pub fn new(stream: u64, client: SocketAddr, server: SocketAddr, capture: Arc<str>) -> Conn {
        Conn {
            stream,
            client,
            server,
            capture,
            info: None,
            role: Role::Undecided,
            held: Vec::new(),
            held_bytes: [0, 0],
            starts_with_gap: [false, false],
            req: Reader::new(),
            resp: Reader::new(),
            req_msg: None,
            resp_msg: None,
            pending: VecDeque::new(),
            next_depth: 1,
            deferred: Vec::new(),
            deferred_bytes: 0,
            last_ts_us: 0,
        }
    }

    /// Time of the last event seen on the stream.
    pub fn last_ts_us(&self) -> i64 {
        self.last_ts_us
    }

    fn dir_of(&self, side: Side) -> Dir {
        let swapped = matches!(self.role, Role::Http { swapped: true });
        match (side, swapped) {
            (Side::Client, false) | (Side::Server, true) => Dir::Req,
            _ => Dir::Resp,
        }
    }

    // ----- stream events -----

    pub fn on_data(
        &mut self,
        side: Side,
        bytes: Vec<u8>,
        ts_us: i64,
        frame: u64,
        stats: &mut Stats,
        out: &mut Vec<HttpEvent>,
    ) {
        self.last_ts_us = self.last_ts_us.max(ts_us);
        match self.role {
            Role::NotHttp => {}
            Role::Undecided => {
                let i = side_index(side);
                if let Some(n) = self.held_bytes.get_mut(i) {
                    *n = n.saturating_add(bytes.len());
                }
                self.held.push(Held::Data {
                    side,
                    ts_us,
                    frame,
                    bytes,
                });
                self.decide(false, stats, out);
            }
            Role::Http { .. } => {
                let dir = self.dir_of(side);
                self.data(dir, &bytes, ts_us, frame, stats, out);
            }
        }
    }

    pub fn on_gap(
        &mut self,
        side: Side,
        len: u64,
        ts_us: i64,
        stats: &mut Stats,
        out: &mut Vec<HttpEvent>,
    ) {
        self.last_ts_us = self.last_ts_us.max(ts_us);
        match self.role {
            Role::NotHttp => {}
            Role::Undecided => {
                let i = side_index(side);
                if self.held_bytes.get(i).copied().unwrap_or_default() == 0
                    && let Some(g) = self.starts_with_gap.get_mut(i)
                {
                    *g = true;
                }
                self.held.push(Held::Gap { side, len });
            }
            Role::Http { .. } => {
                let dir = self.dir_of(side);
                self.gap(dir, len, ts_us, stats, out);
            }
        }
    }

    pub fn on_fin(&mut self, side: Side, ts_us: i64, stats: &mut Stats, out: &mut Vec<HttpEvent>) {
        self.last_ts_us = self.last_ts_us.max(ts_us);
        match self.role {
            Role::NotHttp => {}
            Role::Undecided => self.held.push(Held::Fin { side, ts_us }),
            Role::Http { .. } => {
                let dir = self.dir_of(side);
                self.end_dir(dir, BodyEnd::Fin, ts_us, stats, out);
            }
        }
    }

    /// A RST aborts both directions.
    pub fn on_rst(&mut self, ts_us: i64, stats: &mut Stats, out: &mut Vec<HttpEvent>) {
        if self.role == Role::Undecided {
            self.decide(true, stats, out);
        }
        if matches!(self.role, Role::Http { .. }) {
            self.end_dir(Dir::Req, BodyEnd::Rst, ts_us, stats, out);
            self.end_dir(Dir::Resp, BodyEnd::Rst, ts_us, stats, out);
        }
    }

    /// The stream is over; flushes everything still open.
    pub fn on_close(
        &mut self,
        reason: CloseReason,
        ts_us: i64,
        stats: &mut Stats,
        out: &mut Vec<HttpEvent>,
    ) {
        if self.role == Role::Undecided {
            self.decide(true, stats, out);
        }
        if matches!(self.role, Role::Http { .. }) {
            let end = match reason {
                CloseReason::Finished => BodyEnd::Fin,
                CloseReason::Idle | CloseReason::Evicted | CloseReason::CaptureEnd => {
                    BodyEnd::CaptureEnd
                }
            };
            self.end_dir(Dir::Req, end, ts_us, stats, out);
            self.end_dir(Dir::Resp, end, ts_us, stats, out);
            self.flush_deferred(out);
        }
    }

    // ----- side detection -----

    /// Decides which side is the client from the first bytes of each side:
    /// a request line marks the client, a status line the server; a stream
    /// whose first bytes are neither is not HTTP.
    fn decide(&mut self, at_end: bool, stats: &mut Stats, out: &mut Vec<HttpEvent>) {
        let mut verdicts = [None, None];
        for side in [Side::Client, Side::Server] {
            let i = side_index(side);
            let bytes: Vec<u8> = self
                .held
                .iter()
                .filter_map(|h| match h {
                    Held::Data { side: s, bytes, .. } if *s == side => Some(bytes.as_slice()),
                    _ => None,
                })
                .flatten()
                .copied()
                .take(DETECT_LIMIT)
                .collect();
            if bytes.is_empty() {
                continue;
            }
            let verdict = if self.starts_with_gap.get(i).copied().unwrap_or_default() {
                // Mid-message start: look for a message start anywhere.
                match find_message_start(&bytes, None, false, at_end) {
                    Some((_, p)) => p,
                    None if at_end || bytes.len() >= DETECT_LIMIT => Probe::Neither,
                    None => Probe::NeedMore,
                }
            } else {
                let skip = leading_empty_lines(&bytes);
                match probe(
                    bytes.get(skip..).unwrap_or_default(),
                    Strictness::Lenient,
                    at_end,
                ) {
                    Probe::NeedMore if at_end || bytes.len() >= START_LINE_LIMIT => Probe::Neither,
                    Probe::NeedMore if skip == bytes.len() => Probe::NeedMore,
                    p => p,
                }
            };
            if let Some(v) = verdicts.get_mut(i) {
                *v = Some(verdict);
            }
        }
        let [c, s] = verdicts;
        let role = if c == Some(Probe::Request) || s == Some(Probe::Response) {
            Role::Http { swapped: false }
        } else if s == Some(Probe::Request) || c == Some(Probe::Response) {
            Role::Http { swapped: true }
        } else if c == Some(Probe::Neither) && s == Some(Probe::Neither) {
            Role::NotHttp
        } else if (c == Some(Probe::Neither) || s == Some(Probe::Neither))
            && (at_end || self.held_bytes.iter().any(|&n| n >= DETECT_LIMIT))
        {
            // One side is not HTTP and the other stayed silent (or undecided)
            // to the end; a garbled request still waits for a status line from
            // the other side, as Zeek logs such a response on its own.
            Role::NotHttp
        } else if at_end && (c.is_some() || s.is_some()) {
            Role::NotHttp
        } else {
            return;
        };
        self.role = role;
        match role {
            Role::NotHttp => {
                stats.non_http_streams = stats.non_http_streams.saturating_add(1);
                self.held = Vec::new();
            }
            Role::Http { swapped } => {
                let (client, server) = if swapped {
                    (self.server, self.client)
                } else {
                    (self.client, self.server)
                };
                self.info = Some(Arc::new(ConnInfo {
                    conn: self.stream,
                    tcp_stream: Some(self.stream),
                    client_addr: client.to_string(),
                    server_addr: server.to_string(),
                    capture: self.capture.clone(),
                }));
                for side in [Side::Client, Side::Server] {
                    if self
                        .starts_with_gap
                        .get(side_index(side))
                        .copied()
                        .unwrap_or_default()
                    {
                        let dir = self.dir_of(side);
                        self.reader(dir).state = ReadState::Resync { line_start: false };
                    }
                }
                let mut leading_gap = self.starts_with_gap;
                for h in std::mem::take(&mut self.held) {
                    match h {
                        Held::Data {
                            side,
                            ts_us,
                            frame,
                            bytes,
                        } => {
                            let dir = self.dir_of(side);
                            self.data(dir, &bytes, ts_us, frame, stats, out);
                        }
                        Held::Gap { side, len } => {
                            let i = side_index(side);
                            // A leading gap was handled by starting in Resync.
                            if leading_gap.get(i).copied().unwrap_or_default() {
                                if let Some(g) = leading_gap.get_mut(i) {
                                    *g = false;
                                }
                                continue;
                            }
                            let dir = self.dir_of(side);
                            let ts = self.reader(dir).marks.back().map_or(0, |m| m.1);
                            self.gap(dir, len, ts, stats, out);
                        }
                        Held::Fin { side, ts_us } => {
                            let dir = self.dir_of(side);
                            self.end_dir(dir, BodyEnd::Fin, ts_us, stats, out);
                        }
                    }
                }
            }
            Role::Undecided => {}
        }
    }

    fn reader(&mut self, dir: Dir) -> &mut Reader {
        match dir {
            Dir::Req => &mut self.req,
            Dir::Resp => &mut self.resp,
        }
    }

    fn xref(&mut self) -> ExchangeRef {
        let depth = self.next_depth;
        self.next_depth = self.next_depth.saturating_add(1);
        let conn = self.info.clone().unwrap_or_else(|| {
            Arc::new(ConnInfo {
                conn: self.stream,
                tcp_stream: Some(self.stream),
                client_addr: self.client.to_string(),
                server_addr: self.server.to_string(),
                capture: self.capture.clone(),
            })
        });
        ExchangeRef { conn, depth }
    }

    // ----- bytes -----

    fn data(
        &mut self,
        dir: Dir,
        bytes: &[u8],
        ts_us: i64,
        frame: u64,
        stats: &mut Stats,
        out: &mut Vec<HttpEvent>,
    ) {
        let reader = self.reader(dir);
        if reader.state == ReadState::Dead {
            return;
        }
        // Fast path: body bytes are read straight from the delivery.
        if reader.state == ReadState::Body && reader.buf.is_empty() {
            let n = self.body(dir, bytes, ts_us, stats, out);
            let reader = self.reader(dir);
            reader.buf_offset = reader.buf_offset.saturating_add(n as u64);
            let rest = bytes.get(n..).unwrap_or_default();
            if rest.is_empty() {
                return;
            }
            reader.append(rest, ts_us, frame);
        } else {
            reader.append(bytes, ts_us, frame);
        }
        self.drain(dir, false, ts_us, frame, stats, out);
    }

    /// Processes buffered bytes as far as possible.
    fn drain(
        &mut self,
        dir: Dir,
        at_end: bool,
        ts_us: i64,
        frame: u64,
        stats: &mut Stats,
        out: &mut Vec<HttpEvent>,
    ) {
        loop {
            let state = self.reader(dir).state;
            if self.reader(dir).buf.is_empty() {
                return;
            }
            match state {
                ReadState::Dead => {
                    self.reader(dir).clear();
                    return;
                }
                ReadState::Body => {
                    let buf = std::mem::take(&mut self.reader(dir).buf);
                    let n = self.body(dir, &buf, ts_us, stats, out);
                    let reader = self.reader(dir);
                    reader.buf = buf;
                    reader.consume(n);
                    if n == 0 && reader.state == ReadState::Body {
                        return;
                    }
                }
                ReadState::Resync { line_start } => {
                    let reader = self.reader(dir);
                    let want = Some(match dir {
                        Dir::Req => Probe::Request,
                        Dir::Resp => Probe::Response,
                    });
                    match find_message_start(&reader.buf, want, line_start, at_end) {
                        Some((at, p)) => {
                            reader.consume(at);
                            stats.http_bytes_skipped =
                                stats.http_bytes_skipped.saturating_add(at as u64);
                            if p == Probe::NeedMore {
                                reader.state = ReadState::Resync { line_start: true };
                                return;
                            }
                            reader.state = ReadState::Head;
                            reader.gap = false;
                        }
                        None => {
                            // Keep a short tail: it may begin a message start.
                            let keep = reader.buf.len().min(16);
                            let drop = reader.buf.len().saturating_sub(keep);
                            let line_start =
                                match drop.checked_sub(1).and_then(|i| reader.buf.get(i)) {
                                    Some(b) => *b == b'\n',
                                    None => line_start,
                                };
                            reader.consume(drop);
                            stats.http_bytes_skipped =
                                stats.http_bytes_skipped.saturating_add(drop as u64);
                            reader.state = ReadState::Resync { line_start };
                            if at_end {
                                let n = reader.clear();
                                stats.http_bytes_skipped =
                                    stats.http_bytes_skipped.saturating_add(n as u64);
                            }
                            return;
                        }
                    }
                }
                ReadState::Head => {
                    if !self.head(dir, at_end, ts_us, frame, stats, out) {
                        return;
                    }
                }
            }
        }
    }

    /// Reads a head from the buffer. Returns false when more bytes are needed.
    fn head(
        &mut self,
        dir: Dir,
        at_end: bool,
        ts_us: i64,
        frame: u64,
        stats: &mut Stats,
        out: &mut Vec<HttpEvent>,
    ) -> bool {
        // The server answers while the request head is still open: the
        // request line was all there was (HTTP/0.9, or a cut head).
        if dir == Dir::Resp
            && self.pending.is_empty()
            && self.req_msg.is_none()
            && self.req.state == ReadState::Head
            && !self.req.buf.is_empty()
        {
            self.promote_partial_request(ts_us, frame, "http.truncated_head", stats, out);
        }
        // A reply to an HTTP/0.9 request has no head: it is all body, up to
        // the close (RFC 1945 §4.1 Simple-Response; Zeek reads it so too).
        if dir == Dir::Resp && self.pending.front().is_some_and(|p| p.version == "0.9") {
            let (first_ts, first_frame) = self.resp.first_mark((ts_us, frame));
            let head = ResponseHead {
                status: 0,
                reason: String::new(),
                version: "0.9".into(),
                headers: Headers::default(),
            };
            self.start_response(head, first_ts, first_frame, vec![], ts_us, stats, out);
            return true;
        }
        let reader = self.reader(dir);
        let skip = leading_empty_lines(&reader.buf);
        if skip > 0 {
            reader.consume(skip);
            if reader.buf.is_empty() {
                return false;
            }
        }
        let want = match dir {
            Dir::Req => Probe::Request,
            Dir::Resp => Probe::Response,
        };
        match probe(&reader.buf, Strictness::Lenient, at_end) {
            Probe::NeedMore => return false,
            p if p == want => {}
            _ => {
                stats.anomaly(match dir {
                    Dir::Req => "http.bad_request_line",
                    Dir::Resp => "http.bad_status_line",
                });
                reader.state = ReadState::Resync { line_start: false };
                return true;
            }
        }
        let mut scanned = reader.scanned;
        let end = find_head_end(&reader.buf, &mut scanned);
        reader.scanned = scanned;
        let (head_len, truncated) = match end {
            Some(n) => (n, false),
            None if at_end => (reader.buf.len(), true),
            None => {
                if reader.buf.len() > HEAD_LIMIT {
                    stats.anomaly("http.head_too_large");
                    reader.state = ReadState::Resync { line_start: false };
                    return true;
                }
                return false;
            }
        };
        let (first_ts, first_frame) = reader.first_mark((ts_us, frame));
        let mut head_bytes = reader.buf.get(..head_len).unwrap_or_default().to_vec();
        if truncated {
            // An unfinished last line is cut, not malformed: leave it out.
            if let Some(lf) = head_bytes.iter().rposition(|&b| b == b'\n') {
                head_bytes.truncate(lf.saturating_add(1));
            }
        }
        reader.consume(head_len);
        reader.scanned = 0;
        let mut anomalies = Vec::new();
        if truncated {
            push_anomaly(&mut anomalies, "http.truncated_head");
        }
        match dir {
            Dir::Req => match parse_request_head(&head_bytes, &mut anomalies) {
                Ok(head) => self.start_request(
                    head,
                    first_ts,
                    first_frame,
                    anomalies,
                    !truncated,
                    ts_us,
                    stats,
                    out,
                ),
                Err(_) => {
                    stats.anomaly("http.bad_request_line");
                    stats.http_bytes_skipped =
                        stats.http_bytes_skipped.saturating_add(head_len as u64);
                    self.req.state = ReadState::Resync { line_start: true };
                }
            },
            Dir::Resp => match parse_response_head(&head_bytes, &mut anomalies) {
                Ok(head) => {
                    if (100..200).contains(&head.status) && head.status != 101 {
                        // Interim response (RFC 9110 §15.2): not the final head.
                        return true;
                    }
                    self.start_response(head, first_ts, first_frame, anomalies, ts_us, stats, out);
                }
                Err(_) => {
                    stats.anomaly("http.bad_status_line");
                    stats.http_bytes_skipped =
                        stats.http_bytes_skipped.saturating_add(head_len as u64);
                    self.resp.state = ReadState::Resync { line_start: true };
                }
            },
        }
        true
    }

    /// Takes the buffered start of a request head as the whole request: an
    /// HTTP/0.9 request ends with its request line (RFC 1945 §4.1); any other
    /// head is cut (`http.truncated_head`).
    fn promote_partial_request(
        &mut self,
        ts_us: i64,
        frame: u64,
        cut_anomaly: &str,
        stats: &mut Stats,
        out: &mut Vec<HttpEvent>,
    ) {
        let skip = leading_empty_lines(&self.req.buf);
        let rest = self.req.buf.get(skip..).unwrap_or_default();
        if !rest.contains(&b'\n') || probe(rest, Strictness::Lenient, false) != Probe::Request {
            return;
        }
        self.req.consume(skip);
        let (first_ts, first_frame) = self.req.first_mark((ts_us, frame));
        let mut head_bytes = std::mem::take(&mut self.req.buf);
        self.req.clear();
        self.req.buf_offset = self.req.buf_offset.saturating_add(head_bytes.len() as u64);
        // An unfinished last line is cut, not malformed: leave it out.
        if let Some(lf) = head_bytes.iter().rposition(|&b| b == b'\n') {
            head_bytes.truncate(lf.saturating_add(1));
        }
        self.req.scanned = 0;
        let mut anomalies = Vec::new();
        if let Ok(head) = parse_request_head(&head_bytes, &mut anomalies) {
            let complete = head.version == "0.9";
            if !complete {
                push_anomaly(&mut anomalies, cut_anomaly);
            }
            self.start_request(
                head,
                first_ts,
                first_frame,
                anomalies,
                complete,
                ts_us,
                stats,
                out,
            );
        }
    }

    #[allow(clippy::too_many_arguments)]
    fn start_request(
        &mut self,
        head: RequestHead,
        ts_first_us: i64,
        frame: u64,
        mut anomalies: Vec<String>,
        head_complete: bool,
        ts_us: i64,
        stats: &mut Stats,
        out: &mut Vec<HttpEvent>,
    ) {
        let xref = self.xref();
        if self.pending.len() >= PENDING_LIMIT
            && let Some(old) = self.pending.pop_front()
        {
            stats.anomaly("http.pending_limit");
            self.emit(
                HttpEvent::NoResponse {
                    xref: old.xref,
                    ts_us,
                    end: BodyEnd::CaptureEnd,
                },
                stats,
                out,
            );
        }
        self.pending.push_back(Pending {
            xref: xref.clone(),
            method: head.method.clone(),
            version: head.version.clone(),
        });
        let framing = if head_complete {
            request_framing(&head.headers, &mut anomalies)
        } else {
            Framing::None
        };
        let decoder = ContentDecoder::new(head.headers.get("content-encoding"), &mut anomalies);
        let reader = match framing {
            Framing::Length(n) => Some(BodyReader::Length(n)),
            Framing::Chunked => Some(BodyReader::Chunked(ChunkedDecoder::new())),
            Framing::None | Framing::Close | Framing::Tunnel => None,
        };
        let msg = ReqMsg {
            xref,
            ts_first_us,
            frame,
            head,
            body: Vec::new(),
            wire_len: 0,
            reader: reader.unwrap_or(BodyReader::Length(0)),
            decoder,
            anomalies,
            complete: head_complete,
        };
        self.req_msg = Some(msg);
        if matches!(framing, Framing::Length(_) | Framing::Chunked) {
            self.req.state = ReadState::Body;
        } else {
            self.req.state = ReadState::Head;
            self.finish_request(ts_us, stats, out);
        }
    }

    #[allow(clippy::too_many_arguments)]
    fn start_response(
        &mut self,
        head: ResponseHead,
        ts_first_us: i64,
        frame: u64,
        mut anomalies: Vec<String>,
        ts_us: i64,
        stats: &mut Stats,
        out: &mut Vec<HttpEvent>,
    ) {
        let (xref, method) = self.pair_response(&mut anomalies);
        let framing = if head.version == "0.9" {
            Framing::Close
        } else {
            response_framing(method.as_deref(), &head, &mut anomalies)
        };
        let decoder = ContentDecoder::new(head.headers.get("content-encoding"), &mut anomalies);
        self.emit(
            HttpEvent::ResponseHead {
                xref: xref.clone(),
                ts_us: ts_first_us,
                frame,
                head,
            },
            stats,
            out,
        );
        let reader = match framing {
            Framing::Length(n) => BodyReader::Length(n),
            Framing::Chunked => BodyReader::Chunked(ChunkedDecoder::new()),
            Framing::Close => BodyReader::Close,
            Framing::None | Framing::Tunnel => {
                self.resp_msg = Some(RespMsg {
                    xref,
                    wire_len: 0,
                    reader: BodyReader::Length(0),
                    decoder,
                    anomalies,
                    gap: false,
                });
                self.finish_response(BodyEnd::Complete, ts_us, stats, out);
                if framing == Framing::Tunnel {
                    // RFC 9110 §7.8 / RFC 9112 §6.3 rule 2: the bytes after this
                    // head belong to another protocol.
                    self.req.state = ReadState::Dead;
                    self.resp.state = ReadState::Dead;
                    self.req.clear();
                    self.resp.clear();
                    if let Some(m) = self.req_msg.as_mut() {
                        m.complete = false;
                    }
                    self.finish_request(ts_us, stats, out);
                }
                return;
            }
        };
        self.resp_msg = Some(RespMsg {
            xref,
            wire_len: 0,
            reader,
            decoder,
            anomalies,
            gap: false,
        });
        self.resp.state = ReadState::Body;
    }

    /// Reads body bytes of the current message in `dir`; returns bytes consumed.
    fn body(
        &mut self,
        dir: Dir,
        bytes: &[u8],
        ts_us: i64,
        stats: &mut Stats,
        out: &mut Vec<HttpEvent>,
    ) -> usize {
        match dir {
            Dir::Req => self.request_body(bytes, ts_us, stats, out),
            Dir::Resp => self.response_body(bytes, ts_us, stats, out),
        }
    }

    fn request_body(
        &mut self,
        bytes: &[u8],
        ts_us: i64,
        stats: &mut Stats,
        out: &mut Vec<HttpEvent>,
    ) -> usize {
        let Some(msg) = self.req_msg.as_mut() else {
            self.req.state = ReadState::Head;
            return 0;
        };
        let mut decoded = Vec::new();
        let (consumed, done, failed) = read_framed(&mut msg.reader, bytes, &mut decoded);
        msg.wire_len = msg.wire_len.saturating_add(consumed as u64);
        let mut plain = Vec::new();
        msg.decoder.feed(&decoded, &mut plain, &mut msg.anomalies);
        let room = REQUEST_BODY_LIMIT.saturating_sub(msg.body.len());
        if plain.len() > room {
            push_anomaly(&mut msg.anomalies, "http.request_body_limit");
        }
        msg.body
            .extend_from_slice(plain.get(..plain.len().min(room)).unwrap_or_default());
        if failed {
            push_anomaly(&mut msg.anomalies, "http.bad_chunked");
            msg.complete = false;
            self.req.state = ReadState::Resync { line_start: false };
            self.finish_request(ts_us, stats, out);
        } else if done {
            self.req.state = ReadState::Head;
            self.finish_request(ts_us, stats, out);
        }
        consumed
    }

    fn response_body(
        &mut self,
        bytes: &[u8],
        ts_us: i64,
        stats: &mut Stats,
        out: &mut Vec<HttpEvent>,
    ) -> usize {
        let Some(msg) = self.resp_msg.as_mut() else {
            self.resp.state = ReadState::Head;
            return 0;
        };
        let mut decoded = Vec::new();
        let (consumed, done, failed) = read_framed(&mut msg.reader, bytes, &mut decoded);
        msg.wire_len = msg.wire_len.saturating_add(consumed as u64);
        let mut plain = Vec::new();
        msg.decoder.feed(&decoded, &mut plain, &mut msg.anomalies);
        let xref = msg.xref.clone();
        if !plain.is_empty() {
            self.emit(
                HttpEvent::ResponseBody {
                    xref,
                    ts_us,
                    data: plain,
                },
                stats,
                out,
            );
        }
        if failed {
            if let Some(m) = self.resp_msg.as_mut() {
                push_anomaly(&mut m.anomalies, "http.bad_chunked");
            }
            self.resp.state = ReadState::Resync { line_start: false };
            self.finish_response(BodyEnd::Gap, ts_us, stats, out);
        } else if done {
            self.resp.state = ReadState::Head;
            self.finish_response(BodyEnd::Complete, ts_us, stats, out);
        }
        consumed
    }

    fn finish_request(&mut self, ts_us: i64, stats: &mut Stats, out: &mut Vec<HttpEvent>) {
        let Some(mut msg) = self.req_msg.take() else {
            return;
        };
        let mut tail = Vec::new();
        msg.decoder
            .finish(msg.complete, &mut tail, &mut msg.anomalies);
        let room = REQUEST_BODY_LIMIT.saturating_sub(msg.body.len());
        msg.body
            .extend_from_slice(tail.get(..tail.len().min(room)).unwrap_or_default());
        for a in &msg.anomalies {
            stats.anomaly(a);
        }
        out.push(HttpEvent::Request(HttpRequest {
            xref: msg.xref,
            ts_first_us: msg.ts_first_us,
            ts_last_us: ts_us,
            frame: msg.frame,
            head: msg.head,
            body: msg.body,
            wire_len: msg.wire_len,
            complete: msg.complete,
            anomalies: msg.anomalies,
        }));
        self.flush_deferred(out);
    }

    fn finish_response(
        &mut self,
        end: BodyEnd,
        ts_us: i64,
        stats: &mut Stats,
        out: &mut Vec<HttpEvent>,
    ) {
        let Some(mut msg) = self.resp_msg.take() else {
            return;
        };
        let complete = matches!(end, BodyEnd::Complete) && !msg.gap;
        let mut tail = Vec::new();
        msg.decoder.finish(
            complete || matches!(msg.reader, BodyReader::Close),
            &mut tail,
            &mut msg.anomalies,
        );
        if !tail.is_empty() {
            self.emit(
                HttpEvent::ResponseBody {
                    xref: msg.xref.clone(),
                    ts_us,
                    data: tail,
                },
                stats,
                out,
            );
        }
        let end = if msg.gap && end != BodyEnd::Rst {
            BodyEnd::Gap
        } else {
            end
        };
        for a in &msg.anomalies {
            stats.anomaly(a);
        }
        self.emit(
            HttpEvent::ResponseEnd {
                xref: msg.xref,
                ts_us,
                end,
                wire_len: msg.wire_len,
                decoded_len: msg.decoder.decoded_len(),
                anomalies: msg.anomalies,
            },
            stats,
            out,
        );
    }

    /// Sends an event out, or holds it while its request is still arriving.
    fn emit(&mut self, ev: HttpEvent, stats: &mut Stats, out: &mut Vec<HttpEvent>) {
        if matches!(
            ev,
            HttpEvent::ResponseEnd { .. } | HttpEvent::NoResponse { .. }
        ) {
            stats.http_exchanges = stats.http_exchanges.saturating_add(1);
        }
        let waiting = self.req_msg.as_ref().map(|m| m.xref.depth);
        let depth = match &ev {
            HttpEvent::Request(r) => r.xref.depth,
            HttpEvent::ResponseHead { xref, .. }
            | HttpEvent::ResponseBody { xref, .. }
            | HttpEvent::ResponseEnd { xref, .. }
            | HttpEvent::NoResponse { xref, .. } => xref.depth,
        };
        if waiting != Some(depth) {
            out.push(ev);
            return;
        }
        if let HttpEvent::ResponseBody { data, .. } = &ev {
            if self.deferred_bytes.saturating_add(data.len()) > DEFERRED_RESPONSE_LIMIT {
                if let Some(m) = self.resp_msg.as_mut() {
                    push_anomaly(&mut m.anomalies, "http.deferred_limit");
                }
                return;
            }
            self.deferred_bytes = self.deferred_bytes.saturating_add(data.len());
        }
        self.deferred.push(ev);
    }

    fn flush_deferred(&mut self, out: &mut Vec<HttpEvent>) {
        out.append(&mut self.deferred);
        self.deferred_bytes = 0;
    }

    // ----- gaps and ends -----

    fn gap(&mut self, dir: Dir, len: u64, ts_us: i64, stats: &mut Stats, out: &mut Vec<HttpEvent>) {
        let reader = self.reader(dir);
        reader.buf_offset = reader.buf_offset.saturating_add(len);
        match reader.state {
            ReadState::Dead => {}
            ReadState::Resync { .. } => {
                let n = reader.clear();
                stats.http_bytes_skipped = stats.http_bytes_skipped.saturating_add(n as u64);
                reader.state = ReadState::Resync { line_start: false };
            }
            ReadState::Head => {
                let had_head = !reader.buf.is_empty();
                if had_head {
                    self.head_cut_by_gap(dir, ts_us, stats, out);
                }
                let reader = self.reader(dir);
                let n = reader.clear();
                stats.http_bytes_skipped = stats.http_bytes_skipped.saturating_add(n as u64);
                reader.gap = true;
                // A head kept as a message carries the anomaly itself.
                if !had_head {
                    stats.anomaly("http.gap_between_messages");
                } else if n > 0 {
                    stats.anomaly("http.gap_in_head");
                }
                reader.state = ReadState::Resync { line_start: false };
            }
            ReadState::Body => {
                // Bytes still buffered are before the gap: read them first.
                let buf = std::mem::take(&mut reader.buf);
                let n = self.body(dir, &buf, ts_us, stats, out);
                let skipped = buf.len().saturating_sub(n);
                self.reader(dir).buf.clear();
                self.reader(dir).marks.clear();
                if self.reader(dir).state != ReadState::Body {
                    // The message ended before the gap; what followed is lost.
                    stats.http_bytes_skipped =
                        stats.http_bytes_skipped.saturating_add(skipped as u64);
                    let reader = self.reader(dir);
                    reader.state = ReadState::Resync { line_start: false };
                    reader.gap = true;
                    return;
                }
                self.body_gap(dir, len, ts_us, stats, out);
            }
        }
    }

    /// A gap cut the head being read. A request whose request line arrived is
    /// kept (incomplete); a response head that had begun was the answer to
    /// the oldest waiting request, which therefore gets `NoResponse` (gap),
    /// so later responses still pair with the right requests.
    fn head_cut_by_gap(
        &mut self,
        dir: Dir,
        ts_us: i64,
        stats: &mut Stats,
        out: &mut Vec<HttpEvent>,
    ) {
        match dir {
            Dir::Req => {
                let frame = self.req.marks.back().map_or(0, |m| m.2);
                self.promote_partial_request(ts_us, frame, "http.gap_in_head", stats, out);
            }
            Dir::Resp => {
                let skip = leading_empty_lines(&self.resp.buf);
                self.resp.consume(skip);
                let buf = &self.resp.buf;
                if !buf.starts_with(b"HTTP/")
                    || self.pending.front().is_some_and(|p| p.version == "0.9")
                {
                    return;
                }
                // The status line arrived whole: report the response with what
                // its head had (lines cut by the gap left out).
                let status_line = buf
                    .iter()
                    .position(|&b| b == b'\n')
                    .and_then(|lf| buf.get(..lf))
                    .map(|l| l.strip_suffix(b"\r").unwrap_or(l))
                    .and_then(parse_status_line);
                let Some((_, status, _)) = status_line else {
                    if let Some(p) = self.pending.pop_front() {
                        let ev = HttpEvent::NoResponse {
                            xref: p.xref,
                            ts_us,
                            end: BodyEnd::Gap,
                        };
                        self.emit(ev, stats, out);
                    }
                    return;
                };
                if (100..200).contains(&status) && status != 101 {
                    return;
                }
                let fallback = (ts_us, self.resp.marks.back().map_or(0, |m| m.2));
                let (first_ts, first_frame) = self.resp.first_mark(fallback);
                let mut head_bytes = buf.clone();
                // Used, not skipped.
                self.resp.clear();
                if let Some(lf) = head_bytes.iter().rposition(|&b| b == b'\n') {
                    head_bytes.truncate(lf.saturating_add(1));
                }
                let mut anomalies = Vec::new();
                let Ok(head) = parse_response_head(&head_bytes, &mut anomalies) else {
                    return;
                };
                push_anomaly(&mut anomalies, "http.gap_in_head");
                let (xref, _) = self.pair_response(&mut anomalies);
                let decoder = ContentDecoder::new(None, &mut anomalies);
                self.emit(
                    HttpEvent::ResponseHead {
                        xref: xref.clone(),
                        ts_us: first_ts,
                        frame: first_frame,
                        head,
                    },
                    stats,
                    out,
                );
                self.resp_msg = Some(RespMsg {
                    xref,
                    wire_len: 0,
                    reader: BodyReader::Length(0),
                    decoder,
                    anomalies,
                    gap: true,
                });
                self.finish_response(BodyEnd::Gap, ts_us, stats, out);
                if status == 101 {
                    self.req.state = ReadState::Dead;
                    self.resp.state = ReadState::Dead;
                    self.req.clear();
                }
            }
        }
    }

    /// The request a response answers: the oldest waiting one, or a new
    /// depth of its own (`http.response_without_request`).
    fn pair_response(&mut self, anomalies: &mut Vec<String>) -> (ExchangeRef, Option<String>) {
        match self.pending.pop_front() {
            Some(p) => (p.xref, Some(p.method)),
            None => {
                push_anomaly(anomalies, "http.response_without_request");
                (self.xref(), None)
            }
        }
    }

    /// A gap of `len` bytes inside the current body. Content-Length and
    /// chunk data keep their count (the gap is taken as body bytes that were
    /// not seen); otherwise framing is lost and the message ends at the gap.
    fn body_gap(
        &mut self,
        dir: Dir,
        len: u64,
        ts_us: i64,
        stats: &mut Stats,
        out: &mut Vec<HttpEvent>,
    ) {
        let (reader, decoder, anomalies) = match dir {
            Dir::Req => match self.req_msg.as_mut() {
                Some(m) => {
                    m.complete = false;
                    (&mut m.reader, &mut m.decoder, &mut m.anomalies)
                }
                None => return,
            },
            Dir::Resp => match self.resp_msg.as_mut() {
                Some(m) => {
                    m.gap = true;
                    (&mut m.reader, &mut m.decoder, &mut m.anomalies)
                }
                None => return,
            },
        };
        push_anomaly(anomalies, "http.gap_in_body");
        // Coded bodies cannot be decoded across a hole.
        if decoder.is_coded() {
            let mut sink = Vec::new();
            let mut ignore = Vec::new();
            decoder.finish(false, &mut sink, &mut ignore);
        }
        let (absorbed, done) = match reader {
            BodyReader::Length(rem) => {
                let take = (*rem).min(len);
                *rem = rem.saturating_sub(take);
                (take, *rem == 0)
            }
            BodyReader::Chunked(c) => {
                let take = c.skip_data(len);
                (take, false)
            }
            BodyReader::Close => (len, false),
        };
        let lost_framing = absorbed < len;
        if done || lost_framing {
            match dir {
                Dir::Req => {
                    self.req.state = if lost_framing {
                        ReadState::Resync { line_start: false }
                    } else {
                        ReadState::Head
                    };
                    self.finish_request(ts_us, stats, out);
                }
                Dir::Resp => {
                    self.resp.state = if lost_framing {
                        ReadState::Resync { line_start: false }
                    } else {
                        ReadState::Head
                    };
                    self.finish_response(BodyEnd::Gap, ts_us, stats, out);
                }
            }
            self.reader(dir).gap = lost_framing;
        }
    }

    /// The direction ended (FIN, RST, or end of stream) with `end`.
    fn end_dir(
        &mut self,
        dir: Dir,
        end: BodyEnd,
        ts_us: i64,
        stats: &mut Stats,
        out: &mut Vec<HttpEvent>,
    ) {
        if self.reader(dir).state == ReadState::Dead {
            if dir == Dir::Resp {
                self.no_responses(end, ts_us, stats, out);
            }
            return;
        }
        let frame = self.reader(dir).marks.back().map_or(0, |m| m.2);
        // Whatever is buffered is judged as final: an unterminated head still counts.
        self.drain(dir, true, ts_us, frame, stats, out);
        if self.reader(dir).state == ReadState::Head && !self.reader(dir).buf.is_empty() {
            self.drain(dir, true, ts_us, frame, stats, out);
        }
        match dir {
            Dir::Req => {
                if let Some(m) = self.req_msg.as_mut() {
                    m.complete = false;
                    push_anomaly(&mut m.anomalies, "http.truncated_body");
                    self.finish_request(ts_us, stats, out);
                }
            }
            Dir::Resp => {
                if let Some(m) = self.resp_msg.as_mut() {
                    // A close-delimited body ends normally at FIN (RFC 9112 §6.3 rule 8).
                    let close_delimited = matches!(m.reader, BodyReader::Close);
                    if !close_delimited || end != BodyEnd::Fin {
                        push_anomaly(&mut m.anomalies, "http.truncated_body");
                    }
                    self.finish_response(end, ts_us, stats, out);
                }
            }
        }
        let reader = self.reader(dir);
        let n = reader.clear();
        stats.http_bytes_skipped = stats.http_bytes_skipped.saturating_add(n as u64);
        reader.state = ReadState::Dead;
        if dir == Dir::Resp {
            self.no_responses(end, ts_us, stats, out);
        }
    }

    /// Every request still waiting gets `NoResponse`.
    fn no_responses(
        &mut self,
        end: BodyEnd,
        ts_us: i64,
        stats: &mut Stats,
        out: &mut Vec<HttpEvent>,
    ) {
        if self.req_msg.is_some() && self.req.state == ReadState::Dead {
            self.finish_request(ts_us, stats, out);
        }
        let end = if self.resp.gap && end != BodyEnd::Rst {
            BodyEnd::Gap
        } else {
            end
        };
        while let Some(p) = self.pending.pop_front() {
            self.emit(
                HttpEvent::NoResponse {
                    xref: p.xref,
                    ts_us,
                    end,
                },
                stats,
                out,
            );
        }
    }
}

/// Reads framed body bytes: appends the body content (de-chunked, still
/// content-coded) to `out`. Returns (consumed, body done, framing error).
fn read_framed(reader: &mut BodyReader, bytes: &[u8], out: &mut Vec<u8>) -> (usize, bool, bool) {
    match reader {
        BodyReader::Length(rem) => {
            let take = usize::try_from(*rem).unwrap_or(usize::MAX).min(bytes.len());
            out.extend_from_slice(bytes.get(..take).unwrap_or_default());
            *rem = rem.saturating_sub(take as u64);
            (take, *rem == 0, false)
        }
        BodyReader::Chunked(c) => {
            let (n, r) = c.feed(bytes, out);
            (n, c.is_done(), r.is_err())
        }
        BodyReader::Close => {
            out.extend_from_slice(bytes);
            (bytes.len(), false, false)
        }
    }
}

/// Finds the next plausible message start in `buf` (strict probe): at a line
/// start, or (mid-line) at `HTTP/` for responses or an upper-case token
/// after a non-token byte for requests. `want` limits the kind. Returns its
/// offset and whether it is certain (`Request`/`Response`) or a prefix
/// (`NeedMore`).
pub(super) fn find_message_start(
    buf: &[u8],
    want: Option<Probe>,
    line_start: bool,
    at_end: bool,
) -> Option<(usize, Probe)> {
    let mut i = 0usize;
    while i < buf.len() {
        let b = buf.get(i).copied().unwrap_or_default();
        let prev = i.checked_sub(1).and_then(|p| buf.get(p)).copied();
        // The buffer start is a candidate too: it follows a gap, a body, or
        // bytes already rejected (`line_start` only says whether it is known
        // to begin a line).
        let at_line = match prev {
            None => true,
            Some(p) => p == b'\n',
        };
        let _ = line_start;
        let resp_candidate = want != Some(Probe::Request) && b == b'H';
        let req_candidate = want != Some(Probe::Response)
            && b.is_ascii_uppercase()
            && (at_line || prev.is_some_and(|p| !p.is_ascii_alphanumeric()));
        if resp_candidate || req_candidate {
            let rest = buf.get(i..).unwrap_or_default();
            match probe(rest, Strictness::Strict, at_end) {
                Probe::NeedMore => return Some((i, Probe::NeedMore)),
                p @ (Probe::Request | Probe::Response) if want.is_none_or(|w| w == p) => {
                    return Some((i, p));
                }
                _ => {}
            }
        }
        i = i.saturating_add(1);
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn message_start_after_garbage() {
        let buf = b"xx}{garbage\r\nHTTP/1.1 200 OK\r\n";
        assert_eq!(
            find_message_start(buf, Some(Probe::Response), false, false),
            Some((13, Probe::Response))
        );
        let buf = b"\x00\x01POST /mcp HTTP/1.1\r\n";
        assert_eq!(
            find_message_start(buf, Some(Probe::Request), false, false),
            Some((2, Probe::Request))
        );
        assert_eq!(
            find_message_start(b"zzzz", Some(Probe::Request), false, false),
            None
        );
        assert_eq!(
            find_message_start(b"zz HTT", Some(Probe::Response), false, false),
            Some((3, Probe::NeedMore))
        );
    }
}
