//! One connection as HTTP/1.x, once the router knows which side is the client: heads,
//! bodies, gaps and ends (RFC 9112).
//!
//! Invariants (with [`Exchanges`]):
//! - Every request head gets the next exchange number and, through the waiting requests,
//!   exactly one `ResponseEnd` or `NoResponse`.
//! - Buffers are bounded: heads by [`HEAD_LIMIT`], request bodies by
//!   [`REQUEST_BODY_LIMIT`]; response bodies are streamed, never kept.
//!
//! ```text
//! mod.rs      the connection: its two readers and the stream events it is fed
//! heads.rs    the byte path: heads, resynchronisation, starting messages
//! body.rs     bodies: framed reading, content decoding, finishing messages
//! ends.rs     gaps (inside heads, bodies, or between messages) and the end of a direction
//! parse.rs    parsing and probing message heads
//! framing.rs  how long a body is (RFC 9112 §6.3)
//! chunked.rs  the chunked transfer coding
//! upgrade.rs  `Upgrade: h2c` answered `101`: the connection handed to HTTP/2
//! ```

mod body;
pub(super) mod chunked;
mod ends;
pub(super) mod framing;
mod heads;
pub(super) mod parse;
mod upgrade;

pub use chunked::{CHUNK_EXTENSIONS_LIMIT, TRAILERS_LIMIT};
pub use parse::{HEAD_LIMIT, START_LINE_LIMIT};

use super::HttpLimits;
use super::decompress::ContentDecoder;
use super::event::push_anomaly;
use super::exchanges::{Emitted, Exchanges};
use super::reader::{ConnReader, Dir, Upgrade};
use super::{BodyEnd, ConnInfo, ExchangeRef, HttpEvent, RequestHead};
use crate::anomaly::HeadSkip;
use crate::http::HttpCounters;
use crate::stream::GapLen;
use chunked::ChunkedDecoder;
use std::collections::VecDeque;
use std::sync::Arc;

/// Most decoded request-body bytes kept per request; the rest is counted in
/// `wire_len` only (`http.request_body_limit`).
pub const REQUEST_BODY_LIMIT: usize = 16 * 1024 * 1024;

/// Faults in HTTP framing. They never stop the run: the stage turns each one
/// into an anomaly, an incomplete message, or a resynchronisation.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum HttpError {
    #[error("request line is not `METHOD target HTTP/x.y`: {line:?}")]
    BadRequestLine { line: String },
    #[error("status line is not `HTTP/x.y NNN reason`: {line:?}")]
    BadStatusLine { line: String },
    #[error("chunk size does not fit in 64 bits")]
    ChunkSizeOverflow,
    #[error("unexpected byte 0x{byte:02x} in chunked framing")]
    BadChunk { byte: u8 },
    #[error("chunk extensions longer than {CHUNK_EXTENSIONS_LIMIT} bytes")]
    ChunkExtensionsTooLong,
    #[error("trailer section longer than {TRAILERS_LIMIT} bytes")]
    TrailersTooLong,
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

/// Capacity an emptied message buffer keeps; a larger one goes back to the thread's spares.
const EMPTIED_BUFFER_KEPT: usize = 4096;

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
        if self.buf.capacity() == 0 {
            self.buf = crate::buffers::copy_of(data);
        } else {
            self.buf.extend_from_slice(data);
        }
    }

    /// Drops the first `n` buffered bytes. An emptied buffer goes back to the thread's
    /// spares: a connection between messages holds none for its largest delivery.
    fn consume(&mut self, n: usize) {
        let n = n.min(self.buf.len());
        if n == self.buf.len() && self.buf.capacity() > EMPTIED_BUFFER_KEPT {
            crate::buffers::recycle(std::mem::take(&mut self.buf));
        } else {
            self.buf.drain(..n);
        }
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

/// HTTP/1.x state of one connection.
pub(super) struct Conn {
    req: Reader,
    resp: Reader,
    req_msg: Option<ReqMsg>,
    resp_msg: Option<RespMsg>,
    exchanges: Exchanges,
    /// The client (the request side) sent FIN or RST. Every response cut after that says
    /// the client closed first.
    client_closed: bool,
    limits: HttpLimits,
    /// Switched to HTTP/2 (`Upgrade: h2c`, `101`): what the router hands on.
    handover: Option<Box<upgrade::Switched>>,
}

impl Conn {
    pub fn new(info: Arc<ConnInfo>, limits: HttpLimits) -> Conn {
        Conn {
            req: Reader::new(),
            resp: Reader::new(),
            req_msg: None,
            resp_msg: None,
            exchanges: Exchanges::new(info),
            client_closed: false,
            limits,
            handover: None,
        }
    }

    /// `dir`'s bytes begin mid-message (its stream began with a gap): look for a message
    /// start before reading a head.
    pub fn start_mid_message(&mut self, dir: Dir) {
        self.reader(dir).state = ReadState::Resync { line_start: false };
    }

    fn reader(&mut self, dir: Dir) -> &mut Reader {
        match dir {
            Dir::Req => &mut self.req,
            Dir::Resp => &mut self.resp,
        }
    }

    /// Sends an event out, or holds it while its request is still arriving.
    fn emit(&mut self, ev: HttpEvent, stats: &mut HttpCounters, out: &mut Vec<HttpEvent>) {
        let waiting = self.req_msg.as_ref().map(|m| m.xref.depth);
        if self.exchanges.emit(ev, waiting, stats, out) == Emitted::Dropped
            && let Some(m) = self.resp_msg.as_mut()
        {
            push_anomaly(&mut m.anomalies, "http.deferred_limit");
        }
    }
}

impl ConnReader for Conn {
    fn on_data(
        &mut self,
        dir: Dir,
        bytes: &[u8],
        ts_us: i64,
        frame: u64,
        stats: &mut HttpCounters,
        out: &mut Vec<HttpEvent>,
    ) -> Option<Upgrade> {
        self.data(dir, bytes, ts_us, frame, stats, out);
        self.take_upgrade()
    }

    fn on_gap(
        &mut self,
        dir: Dir,
        len: GapLen,
        ts_us: Option<i64>,
        stats: &mut HttpCounters,
        out: &mut Vec<HttpEvent>,
    ) -> Option<Upgrade> {
        let ts_us = ts_us.unwrap_or_else(|| self.reader(dir).marks.back().map_or(0, |m| m.1));
        self.gap(dir, len, ts_us, stats, out);
        self.take_upgrade()
    }

    fn on_fin(
        &mut self,
        dir: Dir,
        ts_us: i64,
        stats: &mut HttpCounters,
        out: &mut Vec<HttpEvent>,
    ) -> Option<Upgrade> {
        if dir == Dir::Req {
            self.client_closed = true;
        }
        self.end_dir(dir, BodyEnd::Fin, ts_us, stats, out);
        self.take_upgrade()
    }

    fn on_rst(
        &mut self,
        dir: Dir,
        ts_us: i64,
        stats: &mut HttpCounters,
        out: &mut Vec<HttpEvent>,
    ) -> Option<Upgrade> {
        if dir == Dir::Req {
            self.client_closed = true;
        }
        self.end_dir(Dir::Req, BodyEnd::Rst, ts_us, stats, out);
        self.end_dir(Dir::Resp, BodyEnd::Rst, ts_us, stats, out);
        self.take_upgrade()
    }

    fn on_close(
        &mut self,
        end: BodyEnd,
        ts_us: i64,
        stats: &mut HttpCounters,
        out: &mut Vec<HttpEvent>,
    ) -> Option<Upgrade> {
        self.end_dir(Dir::Req, end, ts_us, stats, out);
        for dir in [Dir::Req, Dir::Resp] {
            if self.reader(dir).head_started {
                self.head_done(dir, Err(HeadSkip::Unfinished), stats);
            }
        }
        self.end_dir(Dir::Resp, end, ts_us, stats, out);
        self.exchanges.flush_deferred(out);
        self.take_upgrade()
    }

    fn held_since_us(&self) -> Option<i64> {
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_emptied_message_buffer_does_not_keep_its_largest_delivery() {
        let info = Arc::new(ConnInfo::for_tests());
        let mut conn = Conn::new(info, HttpLimits::default());
        let (mut stats, mut out) = (HttpCounters::default(), Vec::new());
        let body = vec![b'x'; 20_000];
        let mut first = format!(
            "POST /mcp HTTP/1.1\r\nHost: h\r\nContent-Length: {}\r\n\r\n",
            body.len()
        )
        .into_bytes();
        first.extend_from_slice(&body);
        conn.on_data(Dir::Req, &first, 1, 1, &mut stats, &mut out);
        assert!(
            conn.req.buf.capacity() <= EMPTIED_BUFFER_KEPT,
            "capacity {} after a whole message",
            conn.req.buf.capacity()
        );
        // The next message, cut in two, still reads whole.
        let second = b"POST /mcp HTTP/1.1\r\nHost: h\r\nContent-Length: 2\r\n\r\n{}".to_vec();
        let (a, b) = second.split_at(20);
        conn.on_data(Dir::Req, a, 2, 2, &mut stats, &mut out);
        conn.on_data(Dir::Req, b, 3, 3, &mut stats, &mut out);
        let bodies: Vec<usize> = out
            .iter()
            .filter_map(|e| match e {
                HttpEvent::Request(r) => Some(r.body.len()),
                _ => None,
            })
            .collect();
        assert_eq!(bodies, [20_000, 2]);
    }
}
