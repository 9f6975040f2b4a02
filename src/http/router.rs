//! In front of every connection: which end is the client, whether the stream is HTTP at
//! all, and the stream events held until both are known; then the connection goes to the
//! reader of its HTTP version.
//!
//! HTTP/1.x: a request line marks the client, a status line the server. HTTP/2: ALPN `h2`
//! ([`StreamEventKind::Negotiated`](crate::stream::StreamEventKind::Negotiated), the flow's
//! client is the client), or the connection preface (`PRI * HTTP/2.0`) on any port, which
//! marks the client (prior knowledge). The checks run only while a stream is undecided:
//! an HTTP/1.x connection pays nothing for HTTP/2 afterwards.
//!
//! Once decided, every event goes through one [`ConnReader`], the flow's side turned into
//! the HTTP direction; an [`Upgrade`] it returns starts the reader of the named protocol.

use super::HttpLimits;
use super::h1::{
    self,
    parse::{
        HEAD_LIMIT, Probe, START_LINE_LIMIT, Strictness, find_message_start, leading_empty_lines,
        probe,
    },
};
use super::h2;
use super::reader::{ConnReader, Dir, Protocol, Upgrade, end_at_close};
use super::{ConnInfo, HttpEvent};
use crate::http::HttpCounters;
use crate::stream::{CloseReason, ConnectionRecord, GapLen, HttpVersion, Side};
use arcstr::ArcStr;
use std::net::SocketAddr;
use std::sync::Arc;

/// Bytes buffered per side before the side is known to be HTTP or not.
const DETECT_LIMIT: usize = HEAD_LIMIT;

/// A stream event, as the router hands it to the connection's reader. Data, gaps and FINs
/// are held while the sides are not known yet.
#[derive(Debug)]
enum Event {
    Data {
        side: Side,
        ts_us: i64,
        frame: u64,
        bytes: Vec<u8>,
    },
    /// `ts_us` `None`: held, timed by the reader's last delivery before it.
    Gap {
        side: Side,
        len: GapLen,
        ts_us: Option<i64>,
    },
    Fin {
        side: Side,
        ts_us: i64,
    },
    Rst {
        side: Side,
        ts_us: i64,
    },
    Close {
        reason: CloseReason,
        ts_us: i64,
    },
}

/// Where the stream's events go.
// Each router is boxed by the stage: the connection inline saves a second hop per event.
#[allow(clippy::large_enum_variant)]
enum Route {
    /// Not decided yet: events are held.
    Undecided,
    Http1(h1::Conn),
    /// Boxed: larger than an HTTP/1.x connection, and every router holds the larger.
    Http2(Box<h2::Conn>),
    /// Not HTTP: events are dropped.
    NotHttp,
}

/// One TCP stream, routed.
pub(super) struct Router {
    stream: u64,
    client: SocketAddr,
    server: SocketAddr,
    capture: ArcStr,
    limits: HttpLimits,
    route: Route,
    held: Vec<Event>,
    held_bytes: [usize; 2],
    /// The side's stream began with a gap (its first bytes are mid-message).
    starts_with_gap: [bool; 2],
    /// TLS negotiated `h2`.
    alpn_h2: bool,
    last_ts_us: i64,
    /// TLS version and server name of a decrypted connection, for its `ConnInfo`.
    tls_version: Option<ArcStr>,
    tls_sni: Option<ArcStr>,
    /// For the connections table: the sides were swapped, the first HTTP version seen, and
    /// the exchanges that ended.
    swapped: bool,
    http_version: Option<HttpVersion>,
    exchanges: u64,
}

/// What the first bytes say about HTTP/2.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum H2Probe {
    /// Not HTTP/2 (as far as the router can tell).
    No,
    /// A side's bytes so far are the start of the preface: wait for more.
    Wait,
    /// HTTP/2; `swapped`: the flow's `Side::Client` is the server.
    Yes { swapped: bool },
}

fn side_index(side: Side) -> usize {
    match side {
        Side::Client => 0,
        Side::Server => 1,
    }
}

impl Router {
    pub fn new(
        stream: u64,
        client: SocketAddr,
        server: SocketAddr,
        capture: ArcStr,
        limits: HttpLimits,
    ) -> Router {
        Router {
            stream,
            client,
            server,
            capture,
            limits,
            route: Route::Undecided,
            held: Vec::new(),
            held_bytes: [0, 0],
            starts_with_gap: [false, false],
            alpn_h2: false,
            last_ts_us: 0,
            tls_version: None,
            tls_sni: None,
            swapped: false,
            http_version: None,
            exchanges: 0,
        }
    }

    /// The connection is decrypted TLS (before any of its data).
    pub fn on_decrypted(&mut self, version: Option<&str>, sni: Option<&str>) {
        self.tls_version = version.map(ArcStr::from);
        self.tls_sni = sni.map(ArcStr::from);
    }

    /// Counts what the router just handed on: the HTTP version of the first head and every
    /// exchange that ended (as `http_exchanges` in the run summary counts them).
    pub fn tally(&mut self, events: &[HttpEvent]) {
        for ev in events {
            match ev {
                HttpEvent::Request(r) if self.http_version.is_none() => {
                    self.http_version = HttpVersion::from_head(&r.head.version);
                }
                HttpEvent::ResponseHead { head, .. } if self.http_version.is_none() => {
                    self.http_version = HttpVersion::from_head(&head.version);
                }
                HttpEvent::ResponseEnd { .. } | HttpEvent::NoResponse { .. } => {
                    self.exchanges = self.exchanges.saturating_add(1);
                }
                _ => {}
            }
        }
    }

    /// Adds the HTTP stage's columns to the connection's record: the capture's name, the
    /// sides as HTTP saw them, the version and the exchanges.
    pub fn fill_record(&self, record: &mut ConnectionRecord) {
        let flow = &mut record.flow;
        flow.capture = self.capture.clone();
        if self.swapped {
            std::mem::swap(&mut flow.client, &mut flow.server);
            std::mem::swap(&mut flow.client_bytes, &mut flow.server_bytes);
        }
        record.http.version = self.http_version;
        record.http.exchanges = self.exchanges;
    }

    /// TLS agreed on `protocol` (ALPN): `h2` makes the connection HTTP/2.
    pub fn on_negotiated(&mut self, protocol: &[u8]) {
        if matches!(self.route, Route::Undecided) {
            self.alpn_h2 = protocol == b"h2";
        }
    }

    /// Time of the last data, gap or FIN seen on the stream.
    pub fn last_ts_us(&self) -> i64 {
        self.last_ts_us
    }

    /// The first-byte time of a request this stream has begun and not yet handed on as an
    /// [`HttpEvent::Request`], if it has one: bytes held while the sides are unknown (either
    /// side's, to be safe), or what the connection's reader says. Every request it hands
    /// on later started at or after this time, or at or after the delivery that brings it.
    pub fn held_since_us(&self) -> Option<i64> {
        match &self.route {
            Route::NotHttp => None,
            Route::Undecided => self.held.iter().find_map(|h| match h {
                Event::Data { ts_us, .. } => Some(*ts_us),
                _ => None,
            }),
            Route::Http1(conn) => conn.held_since_us(),
            Route::Http2(conn) => conn.held_since_us(),
        }
    }

    pub fn on_data(
        &mut self,
        side: Side,
        bytes: Vec<u8>,
        ts_us: i64,
        frame: u64,
        stats: &mut HttpCounters,
        out: &mut Vec<HttpEvent>,
    ) {
        self.last_ts_us = self.last_ts_us.max(ts_us);
        let len = bytes.len();
        let ev = Event::Data {
            side,
            ts_us,
            frame,
            bytes,
        };
        if matches!(self.route, Route::Undecided) {
            if let Some(n) = self.held_bytes.get_mut(side_index(side)) {
                *n = n.saturating_add(len);
            }
            self.held.push(ev);
            self.decide(false, stats, out);
        } else {
            self.deliver(ev, stats, out);
        }
    }

    pub fn on_gap(
        &mut self,
        side: Side,
        len: GapLen,
        ts_us: i64,
        stats: &mut HttpCounters,
        out: &mut Vec<HttpEvent>,
    ) {
        self.last_ts_us = self.last_ts_us.max(ts_us);
        if matches!(self.route, Route::Undecided) {
            let i = side_index(side);
            if self.held_bytes.get(i).copied().unwrap_or_default() == 0
                && let Some(g) = self.starts_with_gap.get_mut(i)
            {
                *g = true;
            }
            self.held.push(Event::Gap {
                side,
                len,
                ts_us: None,
            });
        } else {
            let ts_us = Some(ts_us);
            self.deliver(Event::Gap { side, len, ts_us }, stats, out);
        }
    }

    pub fn on_fin(
        &mut self,
        side: Side,
        ts_us: i64,
        stats: &mut HttpCounters,
        out: &mut Vec<HttpEvent>,
    ) {
        self.last_ts_us = self.last_ts_us.max(ts_us);
        if matches!(self.route, Route::Undecided) {
            self.held.push(Event::Fin { side, ts_us });
        } else {
            self.deliver(Event::Fin { side, ts_us }, stats, out);
        }
    }

    /// A RST from `side` aborts both directions.
    pub fn on_rst(
        &mut self,
        side: Side,
        ts_us: i64,
        stats: &mut HttpCounters,
        out: &mut Vec<HttpEvent>,
    ) {
        if matches!(self.route, Route::Undecided) {
            self.decide(true, stats, out);
        }
        self.deliver(Event::Rst { side, ts_us }, stats, out);
    }

    /// The stream is over; flushes everything still open.
    pub fn on_close(
        &mut self,
        reason: CloseReason,
        ts_us: i64,
        stats: &mut HttpCounters,
        out: &mut Vec<HttpEvent>,
    ) {
        if matches!(self.route, Route::Undecided) {
            self.decide(true, stats, out);
        }
        self.deliver(Event::Close { reason, ts_us }, stats, out);
    }

    /// The connection's reader, once the stream is known to be HTTP.
    fn reader(&mut self) -> Option<&mut dyn ConnReader> {
        match &mut self.route {
            Route::Http1(conn) => Some(conn),
            Route::Http2(conn) => Some(conn.as_mut()),
            Route::Undecided | Route::NotHttp => None,
        }
    }

    /// Hands `ev` to the connection's reader, with the flow's side turned into the HTTP
    /// direction. After an upgrade the next reader takes over; an end (gap, FIN, RST,
    /// close) that brought it is its too, while data after the switch came in the handover.
    fn deliver(&mut self, ev: Event, stats: &mut HttpCounters, out: &mut Vec<HttpEvent>) {
        let swapped = self.swapped;
        let dir = |side| Dir::of(side, swapped);
        let Some(reader) = self.reader() else {
            return;
        };
        let upgrade = match &ev {
            Event::Data {
                side,
                ts_us,
                frame,
                bytes,
            } => reader.on_data(dir(*side), bytes, *ts_us, *frame, stats, out),
            Event::Gap { side, len, ts_us } => reader.on_gap(dir(*side), *len, *ts_us, stats, out),
            Event::Fin { side, ts_us } => reader.on_fin(dir(*side), *ts_us, stats, out),
            Event::Rst { side, ts_us } => reader.on_rst(dir(*side), *ts_us, stats, out),
            Event::Close { reason, ts_us } => {
                reader.on_close(end_at_close(*reason), *ts_us, stats, out)
            }
        };
        let Some(upgrade) = upgrade else {
            if let Event::Data { bytes, .. } = ev {
                crate::buffers::recycle(bytes);
            }
            return;
        };
        self.upgrade(upgrade, stats, out);
        match ev {
            Event::Data { bytes, .. } => crate::buffers::recycle(bytes),
            ev => self.deliver(ev, stats, out),
        }
    }

    /// The connection goes on in another protocol: its reader takes over.
    fn upgrade(&mut self, upgrade: Upgrade, stats: &mut HttpCounters, out: &mut Vec<HttpEvent>) {
        let Upgrade { protocol, handover } = upgrade;
        self.route = match protocol {
            Protocol::Http2 => Route::Http2(Box::new(h2::Conn::upgraded(
                handover,
                self.limits,
                stats,
                out,
            ))),
        };
    }

    /// Decides which side is the client from the first bytes of each side:
    /// a request line marks the client, a status line the server; a stream
    /// whose first bytes are neither is not HTTP.
    fn decide(&mut self, at_end: bool, stats: &mut HttpCounters, out: &mut Vec<HttpEvent>) {
        match self.probe_h2(at_end) {
            H2Probe::Yes { swapped } => return self.start_h2(swapped, stats, out),
            H2Probe::Wait => return,
            H2Probe::No => {}
        }
        let mut verdicts = [None, None];
        for side in [Side::Client, Side::Server] {
            let i = side_index(side);
            let bytes: Vec<u8> = self
                .held
                .iter()
                .filter_map(|h| match h {
                    Event::Data { side: s, bytes, .. } if *s == side => Some(bytes.as_slice()),
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
        let swapped = if c == Some(Probe::Request) || s == Some(Probe::Response) {
            Some(false)
        } else if s == Some(Probe::Request) || c == Some(Probe::Response) {
            Some(true)
        } else if c == Some(Probe::Neither) && s == Some(Probe::Neither) {
            None
        } else if (c == Some(Probe::Neither) || s == Some(Probe::Neither))
            && (at_end || self.held_bytes.iter().any(|&n| n >= DETECT_LIMIT))
        {
            // One side is not HTTP and the other stayed silent (or undecided)
            // to the end; a garbled request still waits for a status line from
            // the other side, as Zeek logs such a response on its own.
            None
        } else if at_end && (c.is_some() || s.is_some()) {
            None
        } else {
            return;
        };
        let Some(swapped) = swapped else {
            stats.non_http_streams = stats.non_http_streams.saturating_add(1);
            self.held = Vec::new();
            self.route = Route::NotHttp;
            return;
        };
        let info = self.connection_info(swapped);
        let mut conn = h1::Conn::new(info, self.limits);
        let mut leading_gap = self.starts_with_gap;
        for side in [Side::Client, Side::Server] {
            if leading_gap
                .get(side_index(side))
                .copied()
                .unwrap_or_default()
            {
                conn.start_mid_message(Dir::of(side, swapped));
            }
        }
        self.route = Route::Http1(conn);
        for h in std::mem::take(&mut self.held) {
            if let Event::Gap { side, .. } = h {
                let i = side_index(side);
                // A leading gap was handled by starting mid-message.
                if leading_gap.get(i).copied().unwrap_or_default() {
                    if let Some(g) = leading_gap.get_mut(i) {
                        *g = false;
                    }
                    continue;
                }
            }
            self.deliver(h, stats, out);
        }
    }
}

impl Router {
    /// ALPN `h2`, or a side whose bytes begin with the client preface (that side is the
    /// client). A side that began with a gap cannot show a preface.
    fn probe_h2(&self, at_end: bool) -> H2Probe {
        if self.alpn_h2 {
            return H2Probe::Yes { swapped: false };
        }
        let mut wait = false;
        for side in [Side::Client, Side::Server] {
            if self
                .starts_with_gap
                .get(side_index(side))
                .copied()
                .unwrap_or_default()
            {
                continue;
            }
            let mut first = [0u8; h2::PREFACE.len()];
            let mut n = 0usize;
            for h in &self.held {
                if let Event::Data { side: s, bytes, .. } = h
                    && *s == side
                {
                    for (dst, src) in first.iter_mut().skip(n).zip(bytes.iter()) {
                        *dst = *src;
                        n = n.saturating_add(1);
                    }
                    if n == first.len() {
                        break;
                    }
                }
            }
            if n == 0 || first.get(..n) != h2::PREFACE.get(..n) {
                continue;
            }
            if n == first.len() {
                return H2Probe::Yes {
                    swapped: side == Side::Server,
                };
            }
            wait = true;
        }
        if wait && !at_end {
            H2Probe::Wait
        } else {
            H2Probe::No
        }
    }

    /// The connection as HTTP sees it, once the sides are known (`swapped`: the flow's
    /// `Side::Client` is the server).
    fn connection_info(&mut self, swapped: bool) -> Arc<ConnInfo> {
        self.swapped = swapped;
        let (client, server) = if swapped {
            (self.server, self.client)
        } else {
            (self.client, self.server)
        };
        Arc::new(ConnInfo {
            conn: self.stream,
            tcp_stream: Some(self.stream),
            client_addr: client.to_string().into(),
            server_addr: server.to_string().into(),
            capture: self.capture.clone(),
            tls_version: self.tls_version.clone(),
            tls_sni: self.tls_sni.clone(),
        })
    }

    fn start_h2(&mut self, swapped: bool, stats: &mut HttpCounters, out: &mut Vec<HttpEvent>) {
        let info = self.connection_info(swapped);
        self.route = Route::Http2(Box::new(h2::Conn::new(info, self.limits)));
        for h in std::mem::take(&mut self.held) {
            self.deliver(h, stats, out);
        }
    }
}
