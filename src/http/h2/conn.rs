//! One connection as HTTP/2, once the router knows which side is the client: the two
//! directions' frame readers and HPACK decoders, the connection-level frames (SETTINGS,
//! PING, GOAWAY) and the stream events it is fed. Streams are in `streams.rs`.
//!
//! Invariants:
//! - One HPACK decoder per direction, fed every header block of that direction in order
//!   (PUSH_PROMISE and refused streams included), so its table stays in step. When that
//!   cannot be guaranteed (a gap, a header block too large to keep, a decoding error) the
//!   direction stops (`h2.hpack_state_lost`): nothing after is decoded with a wrong table.
//! - State is bounded: at most `HttpLimits::h2_streams` streams, header blocks by the head
//!   limit, DATA streamed, SETTINGS/PING/resets counted per second (`flood.rs`).

use super::exchange::Stream;
use super::flood::{PING_RATE_LIMIT, Rate, SETTINGS_RATE_LIMIT};
use super::frames::{
    DEFAULT_MAX_FRAME_SIZE, FrameHeader, FrameReader, Piece, be_u32, error_code_name, flag, kind,
};
use super::hpack::Decoder;
use crate::anomaly::Anomaly;
use crate::hashing::HashMap;
use crate::http::HttpCounters;
use crate::http::exchanges::Exchanges;
pub(super) use crate::http::reader::Dir;
use crate::http::reader::{ConnReader, Handover, Upgrade};
use crate::http::{BodyEnd, ConnInfo, HttpEvent, HttpLimits};
use crate::stream::GapLen;
use std::collections::BTreeSet;
use std::sync::Arc;

/// The client connection preface (RFC 9113 §3.4).
pub const PREFACE: &[u8; 24] = b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n";

/// RFC 7541 §4.2 / RFC 9113 §6.5.2: the initial SETTINGS_HEADER_TABLE_SIZE.
const DEFAULT_TABLE_SIZE: usize = 4096;

/// Largest HPACK dynamic table kept per direction. A peer may advertise up to 4 GiB; past
/// this an encoder that uses more fails to decode (named by the HPACK decoder), never
/// decodes wrong. Browsers advertise 64 KiB, most servers 4 KiB.
pub const HEADER_TABLE_LIMIT: usize = 64 * 1024;

/// Most SETTINGS frames of one side awaiting their ACK; past it the oldest is taken as
/// acknowledged (a peer that never ACKs cannot grow the queue).
const UNACKED_SETTINGS_LIMIT: usize = 16;

/// Default [`HttpLimits::h2_streams`]: most concurrent streams per connection (RFC 9113
/// recommends advertising at least 100; nghttp2 and Go allow 100 to 1000).
pub const H2_STREAM_LIMIT: usize = 1000;

/// A header block being collected (HEADERS or PUSH_PROMISE, then CONTINUATION frames).
pub(super) struct Block {
    pub stream: u32,
    pub kind: u8,
    pub end_stream: bool,
    pub bytes: Vec<u8>,
    pub ts_us: i64,
    pub frame: u64,
    pub continuations: u32,
}

/// One direction's reading state.
pub(super) struct DirState {
    pub reader: FrameReader,
    pub hpack: Decoder,
    /// Preface bytes still expected (client direction only).
    pub preface_left: usize,
    pub block: Option<Block>,
    /// Nothing more is read in this direction (gap, FIN, HPACK state lost).
    pub dead: bool,
    /// Largest frame the peer allows this direction (its SETTINGS_MAX_FRAME_SIZE).
    pub max_frame_size: u32,
    pub settings: Rate,
    pub pings: Rate,
    /// SETTINGS_HEADER_TABLE_SIZE values this direction sent, awaiting the peer's ACK (the
    /// peer's encoder may use the old size until then); at most [`UNACKED_SETTINGS_LIMIT`].
    pub unacked_table_sizes: std::collections::VecDeque<Option<u32>>,
    /// Time of the last delivery.
    pub last_ts: i64,
    pub last_frame: u64,
}

impl DirState {
    fn new(preface: bool, limits: &HttpLimits) -> DirState {
        DirState {
            reader: FrameReader::new(limits.head_bytes),
            hpack: Decoder::new(DEFAULT_TABLE_SIZE, limits.head_bytes),
            preface_left: if preface { PREFACE.len() } else { 0 },
            block: None,
            dead: false,
            max_frame_size: DEFAULT_MAX_FRAME_SIZE,
            settings: Rate::default(),
            pings: Rate::default(),
            unacked_table_sizes: std::collections::VecDeque::new(),
            last_ts: 0,
            last_frame: 0,
        }
    }
}

/// HTTP/2 state of one connection.
pub(in crate::http) struct Conn {
    pub(super) dirs: [DirState; 2],
    pub(super) streams: HashMap<u32, Stream>,
    /// Requests begun and not handed on: (first-byte time, stream id).
    pub(super) unfinished: BTreeSet<(i64, u32)>,
    pub(super) exchanges: Exchanges,
    pub(super) limits: HttpLimits,
    /// Highest stream id that opened a stream (a frame on a lower, unknown id is on a
    /// stream already closed).
    pub(super) highest_stream: u32,
    /// The server's GOAWAY: streams above it were never processed.
    pub(super) goaway_last: Option<u32>,
    /// The client sent FIN or RST.
    pub(super) client_closed: bool,
    pub(super) resets: Rate,
    /// Request body bytes kept by the open streams together (at most the body limit).
    pub(super) kept_request_bytes: usize,
    /// Inside a CONNECT tunnel: bytes that are not HTTP/2 are another protocol, not an
    /// anomaly.
    tunnel: bool,
}

impl Conn {
    /// A connection whose client bytes begin with the connection preface.
    pub fn new(info: Arc<ConnInfo>, limits: HttpLimits) -> Conn {
        Conn {
            dirs: [DirState::new(true, &limits), DirState::new(false, &limits)],
            streams: HashMap::default(),
            unfinished: BTreeSet::new(),
            exchanges: Exchanges::new(info),
            limits,
            highest_stream: 0,
            goaway_last: None,
            client_closed: false,
            resets: Rate::default(),
            kept_request_bytes: 0,
            tunnel: false,
        }
    }

    /// The connection after an HTTP/1.1 `Upgrade: h2c` answered `101`: the upgraded
    /// request is stream 1, awaiting its response; the client's preface comes next; the
    /// bytes buffered after the switch are read as HTTP/2.
    pub fn upgraded(
        h: Handover,
        limits: HttpLimits,
        stats: &mut HttpCounters,
        out: &mut Vec<HttpEvent>,
    ) -> Conn {
        let mut conn = Conn {
            dirs: [DirState::new(true, &limits), DirState::new(false, &limits)],
            streams: HashMap::default(),
            unfinished: BTreeSet::new(),
            exchanges: h.exchanges,
            limits,
            highest_stream: 1,
            goaway_last: None,
            client_closed: h.client_closed,
            resets: Rate::default(),
            kept_request_bytes: 0,
            tunnel: false,
        };
        match h.upgraded {
            Some(xref) => {
                conn.streams.insert(
                    1,
                    Stream {
                        xref,
                        req: None,
                        resp: super::exchange::Resp::Awaiting,
                    },
                );
            }
            None => {
                conn.tunnel = true;
                conn.highest_stream = 0;
            }
        }
        let (bytes, ts, frame) = h.resp_rest;
        if !bytes.is_empty() {
            conn.data(Dir::Resp, &bytes, ts, frame, stats, out);
        }
        let (bytes, ts, frame) = h.req_rest;
        if !bytes.is_empty() {
            conn.data(Dir::Req, &bytes, ts, frame, stats, out);
        }
        conn
    }

    pub(super) fn dir_state(&mut self, dir: Dir) -> &mut DirState {
        let [req, resp] = &mut self.dirs;
        match dir {
            Dir::Req => req,
            Dir::Resp => resp,
        }
    }

    // ----- bytes to frames -----

    fn data(
        &mut self,
        dir: Dir,
        bytes: &[u8],
        ts_us: i64,
        frame: u64,
        stats: &mut HttpCounters,
        out: &mut Vec<HttpEvent>,
    ) {
        let d = self.dir_state(dir);
        d.last_ts = ts_us;
        d.last_frame = frame;
        if d.dead {
            stats.http_bytes_skipped = stats.http_bytes_skipped.saturating_add(bytes.len() as u64);
            return;
        }
        let [req, _] = &self.dirs;
        if self.tunnel && dir == Dir::Resp && req.preface_left > 0 {
            // Not known to be HTTP/2 until the client's preface: the server's bytes wait
            // for nothing (before it, they are only SETTINGS).
            return;
        }
        let d = self.dir_state(dir);
        let mut rest = bytes;
        if d.preface_left > 0 {
            let done = PREFACE.len().saturating_sub(d.preface_left);
            let want = PREFACE.get(done..).unwrap_or_default();
            let n = want.len().min(rest.len());
            if rest.get(..n) != want.get(..n) {
                if self.tunnel {
                    // Another protocol in the tunnel (TLS, most often): ignored, as
                    // HTTP/1.x ignores a tunnel's bytes.
                    self.stop_dir(Dir::Req);
                    self.stop_dir(Dir::Resp);
                    return;
                }
                stats.anomaly(Anomaly::H2BadPreface);
                self.stop_dir(dir);
                stats.http_bytes_skipped =
                    stats.http_bytes_skipped.saturating_add(rest.len() as u64);
                return;
            }
            let d = self.dir_state(dir);
            d.preface_left = d.preface_left.saturating_sub(n);
            rest = rest.get(n..).unwrap_or_default();
        }
        while !rest.is_empty() {
            let (n, piece) = self.dir_state(dir).reader.next(rest, ts_us, frame);
            match piece {
                Some(Piece::Frame {
                    hdr,
                    payload,
                    truncated,
                    ts_us: f_ts,
                    frame: f_frame,
                }) => {
                    self.check_size(dir, &hdr, stats);
                    self.frame(
                        dir,
                        hdr,
                        payload,
                        truncated,
                        (f_ts, f_frame),
                        ts_us,
                        stats,
                        out,
                    );
                }
                Some(Piece::Data {
                    hdr,
                    range,
                    last,
                    bad_padding,
                }) => {
                    if last {
                        self.check_size(dir, &hdr, stats);
                        if bad_padding {
                            stats.anomaly(Anomaly::H2BadPadding);
                        }
                    }
                    let data = rest.get(range).unwrap_or_default();
                    self.data_frame(dir, &hdr, data, last, ts_us, stats, out);
                }
                None => {}
            }
            rest = rest.get(n..).unwrap_or_default();
            if self.dir_state(dir).dead {
                stats.http_bytes_skipped =
                    stats.http_bytes_skipped.saturating_add(rest.len() as u64);
                return;
            }
            // The reader consumes whatever it is given; never spin on a step that took nothing.
            if n == 0 {
                return;
            }
        }
    }

    /// A frame longer than the receiver allows (RFC 9113 §4.2) is read anyway, as
    /// Wireshark and Suricata do, and named.
    fn check_size(&mut self, dir: Dir, hdr: &FrameHeader, stats: &mut HttpCounters) {
        if hdr.len > self.dir_state(dir).max_frame_size {
            stats.anomaly(Anomaly::H2FrameTooLarge);
        }
    }

    #[allow(clippy::too_many_arguments)]
    fn frame(
        &mut self,
        dir: Dir,
        hdr: FrameHeader,
        payload: Vec<u8>,
        truncated: bool,
        start: (i64, u64),
        ts_us: i64,
        stats: &mut HttpCounters,
        out: &mut Vec<HttpEvent>,
    ) {
        if self.dir_state(dir).block.is_some() && hdr.kind != kind::CONTINUATION {
            // RFC 9113 §6.10: nothing may come between a header block's frames.
            stats.anomaly(Anomaly::H2ContinuationExpected);
            self.lose_hpack(dir, ts_us, stats, out);
            return;
        }
        match hdr.kind {
            kind::HEADERS | kind::PUSH_PROMISE | kind::CONTINUATION => {
                self.header_frame(dir, &hdr, &payload, truncated, start, ts_us, stats, out)
            }
            kind::RST_STREAM => {
                let code = be_u32(&payload, 0).unwrap_or(u32::MAX);
                self.reset_stream(dir, hdr.stream, code, ts_us, stats, out);
            }
            kind::SETTINGS => self.settings(dir, &hdr, &payload, ts_us, stats),
            kind::PING => {
                if self.dir_state(dir).pings.trips(ts_us, PING_RATE_LIMIT) {
                    stats.anomaly(Anomaly::H2PingFlood);
                }
            }
            kind::GOAWAY => self.goaway(dir, &payload, stats),
            kind::WINDOW_UPDATE | kind::PRIORITY => {}
            _ => stats.anomaly(Anomaly::H2UnknownFrameType),
        }
    }

    fn settings(
        &mut self,
        dir: Dir,
        hdr: &FrameHeader,
        payload: &[u8],
        ts: i64,
        stats: &mut HttpCounters,
    ) {
        if hdr.has(flag::ACK) {
            // `dir` acknowledges the other side's oldest SETTINGS: from here `dir`'s
            // encoder works with the table size they set (RFC 9113 §6.5.3).
            let acked = self.dir_state(dir.other()).unacked_table_sizes.pop_front();
            if let Some(Some(size)) = acked {
                self.set_table_size(dir, size, stats);
            }
            return;
        }
        if self.dir_state(dir).settings.over(ts, SETTINGS_RATE_LIMIT) {
            let d = self.dir_state(dir);
            if !std::mem::replace(&mut d.settings.tripped, true) {
                stats.anomaly(Anomaly::H2SettingsFlood);
            }
            // Past the rate they are not applied: a flood costs nothing.
            return;
        }
        // What the sender allows the other direction.
        let mut table_size = None;
        for setting in payload.chunks_exact(6) {
            let id = setting
                .first_chunk::<2>()
                .map_or(0, |b| u16::from_be_bytes(*b));
            let value = super::frames::be_u32(setting, 2).unwrap_or_default();
            match id {
                0x1 => table_size = Some(value),
                0x5 => {
                    self.dir_state(dir.other()).max_frame_size =
                        value.clamp(DEFAULT_MAX_FRAME_SIZE, 0x00ff_ffff)
                }
                _ => {}
            }
        }
        let queue = &mut self.dir_state(dir).unacked_table_sizes;
        queue.push_back(table_size);
        if queue.len() > UNACKED_SETTINGS_LIMIT
            && let Some(Some(size)) = queue.pop_front()
        {
            self.set_table_size(dir.other(), size, stats);
        }
    }

    /// `dir`'s encoder may now use a table of `size` bytes (at most [`HEADER_TABLE_LIMIT`]).
    fn set_table_size(&mut self, dir: Dir, size: u32, stats: &mut HttpCounters) {
        let size = usize::try_from(size).unwrap_or(usize::MAX);
        if size > HEADER_TABLE_LIMIT {
            stats.anomaly(Anomaly::H2HeaderTableLimit);
        }
        self.dir_state(dir)
            .hpack
            .set_max_table_size(size.min(HEADER_TABLE_LIMIT));
    }

    fn goaway(&mut self, dir: Dir, payload: &[u8], stats: &mut HttpCounters) {
        let last = be_u32(payload, 0).map(|v| v & 0x7fff_ffff);
        let code = be_u32(payload, 4).unwrap_or_default();
        if code != 0 {
            stats
                .anomalies
                .add_pattern(Anomaly::H2Goaway, error_code_name(code), 1);
        }
        if dir != Dir::Resp {
            return;
        }
        let Some(last) = last else { return };
        let last = self.goaway_last.map_or(last, |l| l.min(last));
        self.goaway_last = Some(last);
        self.mark_unprocessed(last, stats);
    }

    /// A gap: frame boundaries and the HPACK table of that direction are unknown from here.
    fn gap(
        &mut self,
        dir: Dir,
        len: GapLen,
        ts_us: i64,
        stats: &mut HttpCounters,
        out: &mut Vec<HttpEvent>,
    ) {
        if self.dir_state(dir).dead || len.bytes() == Some(0) {
            return;
        }
        stats.anomaly(Anomaly::H2Gap);
        self.lose_hpack(dir, ts_us, stats, out);
    }

    /// The direction's HPACK state (or its frame boundaries) can no longer be trusted: it
    /// stops, and its open messages end with a gap.
    pub(super) fn lose_hpack(
        &mut self,
        dir: Dir,
        ts_us: i64,
        stats: &mut HttpCounters,
        out: &mut Vec<HttpEvent>,
    ) {
        stats.anomaly(Anomaly::H2HpackStateLost);
        self.stop_dir(dir);
        self.end_dir(dir, BodyEnd::Gap, ts_us, stats, out);
    }

    fn stop_dir(&mut self, dir: Dir) {
        let d = self.dir_state(dir);
        d.dead = true;
        d.block = None;
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
        None
    }

    fn on_gap(
        &mut self,
        dir: Dir,
        len: GapLen,
        ts_us: Option<i64>,
        stats: &mut HttpCounters,
        out: &mut Vec<HttpEvent>,
    ) -> Option<Upgrade> {
        let ts_us = ts_us.unwrap_or_else(|| self.dir_state(dir).last_ts);
        self.gap(dir, len, ts_us, stats, out);
        None
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
        None
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
        None
    }

    fn on_close(
        &mut self,
        end: BodyEnd,
        ts_us: i64,
        stats: &mut HttpCounters,
        out: &mut Vec<HttpEvent>,
    ) -> Option<Upgrade> {
        self.end_dir(Dir::Req, end, ts_us, stats, out);
        self.end_dir(Dir::Resp, end, ts_us, stats, out);
        self.exchanges.flush_deferred(out);
        None
    }

    /// The earliest of: a stream's request, a request header block being collected, a
    /// client frame being read.
    fn held_since_us(&self) -> Option<i64> {
        let [req, _] = &self.dirs;
        let streams = self.unfinished.first().map(|&(ts, _)| ts);
        let block = req.block.as_ref().map(|b| b.ts_us);
        let frame = if req.dead {
            None
        } else {
            req.reader.frame_started().map(|(ts, _)| ts)
        };
        [streams, block, frame].into_iter().flatten().min()
    }
}
