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

mod detect;
mod ends;
mod message;

use super::chunked::ChunkedDecoder;
use super::decompress::ContentDecoder;
use super::framing::{Framing, request_framing, response_framing};
use super::head::{
    HEAD_LIMIT, Probe, START_LINE_LIMIT, Strictness, find_head_end, find_message_start,
    leading_empty_lines, parse_request_head, parse_response_head, parse_status_line, probe,
    push_anomaly,
};
use super::{
    BodyEnd, ConnInfo, ExchangeRef, Headers, HttpEvent, HttpRequest, RequestHead, ResponseHead,
};
use crate::anomaly::Stats;
use crate::flow::{CloseReason, GapLen, Side};
use crate::limits::Limits;
use arcstr::ArcStr;
use std::borrow::Cow;
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
    /// A gap fell between two messages: if the bytes after it are not a
    /// message start, the gap swallowed the start of one.
    gap_at_boundary: bool,
    /// The head being read was counted in `http_messages` and awaits its verdict.
    head_started: bool,
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
            gap_at_boundary: false,
            head_started: false,
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
    method: ArcStr,
    version: Cow<'static, str>,
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
        len: GapLen,
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
    capture: ArcStr,
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
    /// The client (the request side, after side detection) sent FIN or RST.
    /// Every response cut after that says the client closed first.
    client_closed: bool,
    limits: Limits,
}

fn side_index(side: Side) -> usize {
    match side {
        Side::Client => 0,
        Side::Server => 1,
    }
}

impl Conn {
    pub fn new(
        stream: u64,
        client: SocketAddr,
        server: SocketAddr,
        capture: ArcStr,
        limits: Limits,
    ) -> Conn {
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
            client_closed: false,
            limits,
        }
    }

    /// Time of the last event seen on the stream.
    pub fn last_ts_us(&self) -> i64 {
        self.last_ts_us
    }

    /// The first-byte time of a request this stream has begun and not yet handed on as an
    /// [`HttpEvent::Request`], if it has one: bytes held while the sides are unknown (either
    /// side's, to be safe), a head being read, or a body being read. Every request it hands
    /// on later started at or after this time, or at or after the delivery that brings it.
    pub fn request_started_us(&self) -> Option<i64> {
        match self.role {
            Role::NotHttp => None,
            Role::Undecided => self.held.iter().find_map(|h| match h {
                Held::Data { ts_us, .. } => Some(*ts_us),
                Held::Gap { .. } | Held::Fin { .. } => None,
            }),
            Role::Http { .. } => {
                if let Some(msg) = &self.req_msg {
                    return Some(msg.ts_first_us);
                }
                if self.req.buf.is_empty() || self.req.state == ReadState::Dead {
                    return None;
                }
                // No mark for the buffer's start cannot happen; if it did, hold everything.
                Some(self.req.first_mark((i64::MIN, 0)).0)
            }
        }
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
                crate::buffers::recycle(bytes);
            }
        }
    }

    pub fn on_gap(
        &mut self,
        side: Side,
        len: GapLen,
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
            Role::Http { .. } => self.fin(side, ts_us, stats, out),
        }
    }

    /// A FIN from `side` (roles known): its direction ends.
    fn fin(&mut self, side: Side, ts_us: i64, stats: &mut Stats, out: &mut Vec<HttpEvent>) {
        let dir = self.dir_of(side);
        if dir == Dir::Req {
            self.client_closed = true;
        }
        self.end_dir(dir, BodyEnd::Fin, ts_us, stats, out);
    }

    /// A RST from `side` aborts both directions.
    pub fn on_rst(&mut self, side: Side, ts_us: i64, stats: &mut Stats, out: &mut Vec<HttpEvent>) {
        if self.role == Role::Undecided {
            self.decide(true, stats, out);
        }
        if matches!(self.role, Role::Http { .. }) {
            if self.dir_of(side) == Dir::Req {
                self.client_closed = true;
            }
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
            for dir in [Dir::Req, Dir::Resp] {
                if self.reader(dir).head_started {
                    self.head_done(dir, Err("unfinished"), stats);
                }
            }
            self.end_dir(Dir::Resp, end, ts_us, stats, out);
            self.flush_deferred(out);
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
                client_addr: self.client.to_string().into(),
                server_addr: self.server.to_string().into(),
                capture: self.capture.clone(),
            })
        });
        ExchangeRef { conn, depth }
    }
}
