//! What the router asks of a connection's reader (HTTP/1.x, HTTP/2, or a protocol a
//! connection upgrades to): the stream's events, already turned from the flow's sides into
//! HTTP directions, and the start of the earliest request still being read.
//!
//! A reader that hands the connection to another protocol (`Upgrade: h2c` answered `101`,
//! a CONNECT tunnel) returns an [`Upgrade`] and reads nothing more; the router starts the
//! reader the upgrade names. Another upgrade is a reader in its own folder, a
//! [`Protocol`] and one arm in the router.

use super::exchanges::Exchanges;
use super::{BodyEnd, ExchangeRef, HttpEvent};
use crate::http::HttpCounters;
use crate::stream::{CloseReason, GapLen, Side};

/// Direction of HTTP messages, once the router knows which side is the client.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Dir {
    /// Client to server: requests.
    Req,
    /// Server to client: responses.
    Resp,
}

impl Dir {
    /// `side`'s direction; `swapped`: the flow's `Side::Client` is the server.
    pub fn of(side: Side, swapped: bool) -> Dir {
        match (side, swapped) {
            (Side::Client, false) | (Side::Server, true) => Dir::Req,
            _ => Dir::Resp,
        }
    }

    pub fn other(self) -> Dir {
        match self {
            Dir::Req => Dir::Resp,
            Dir::Resp => Dir::Req,
        }
    }
}

/// How the bodies still open end when the stream closes for `reason`.
pub(super) fn end_at_close(reason: CloseReason) -> BodyEnd {
    match reason {
        CloseReason::Finished => BodyEnd::Fin,
        CloseReason::Idle | CloseReason::Evicted | CloseReason::CaptureEnd => BodyEnd::CaptureEnd,
    }
}

/// The protocol a connection goes on in after an upgrade.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Protocol {
    /// HTTP/2: `Upgrade: h2c`, or prior knowledge inside a CONNECT tunnel.
    Http2,
}

/// The connection handed from one reader to the next.
pub(super) struct Upgrade {
    pub protocol: Protocol,
    pub handover: Handover,
}

/// The connection as the old reader left it.
pub(super) struct Handover {
    pub exchanges: Exchanges,
    /// The upgraded request's exchange, answered in the new protocol (`None`: a tunnel).
    pub upgraded: Option<ExchangeRef>,
    pub client_closed: bool,
    /// Bytes buffered after the switch in each direction, with their delivery's time and
    /// frame: (client to server, server to client).
    pub req_rest: (Vec<u8>, i64, u64),
    pub resp_rest: (Vec<u8>, i64, u64),
}

/// One connection's reader. Every event may end in an [`Upgrade`]; the reader then reads
/// nothing more.
pub(super) trait ConnReader {
    /// `dir`'s bytes, delivered at `ts_us` in `frame`.
    fn on_data(
        &mut self,
        dir: Dir,
        bytes: &[u8],
        ts_us: i64,
        frame: u64,
        stats: &mut HttpCounters,
        out: &mut Vec<HttpEvent>,
    ) -> Option<Upgrade>;

    /// A gap in `dir`; `ts_us` `None`: a gap the router held, timed by the last delivery
    /// before it.
    fn on_gap(
        &mut self,
        dir: Dir,
        len: GapLen,
        ts_us: Option<i64>,
        stats: &mut HttpCounters,
        out: &mut Vec<HttpEvent>,
    ) -> Option<Upgrade>;

    /// A FIN: `dir` ends.
    fn on_fin(
        &mut self,
        dir: Dir,
        ts_us: i64,
        stats: &mut HttpCounters,
        out: &mut Vec<HttpEvent>,
    ) -> Option<Upgrade>;

    /// A RST sent in `dir`: both directions end.
    fn on_rst(
        &mut self,
        dir: Dir,
        ts_us: i64,
        stats: &mut HttpCounters,
        out: &mut Vec<HttpEvent>,
    ) -> Option<Upgrade>;

    /// The stream is over: everything still open ends with `end`.
    fn on_close(
        &mut self,
        end: BodyEnd,
        ts_us: i64,
        stats: &mut HttpCounters,
        out: &mut Vec<HttpEvent>,
    ) -> Option<Upgrade>;

    /// The first-byte time of a request this connection has begun and not yet handed on
    /// as an [`HttpEvent::Request`], if it has one. Every request it hands on later started
    /// at or after this time, or at or after the delivery that brings it.
    fn held_since_us(&self) -> Option<i64>;
}
