//! The bookkeeping every HTTP version needs on one connection, whatever its framing:
//!
//! - every request gets the next exchange number (1-based, in order: Zeek's `trans_depth`),
//!   and a response nobody asked for gets a number of its own;
//! - HTTP/1.x: requests wait in [`Exchanges::answer_oldest`] order for their response, at
//!   most [`PENDING_LIMIT`] of them (HTTP/2 pairs by stream id and keeps its own bounded
//!   stream table instead);
//! - the `Request` event of an exchange goes out before any of its response events:
//!   response events that overtake their request's body (the server answered early) wait,
//!   at most [`DEFERRED_RESPONSE_LIMIT`] bytes of them;
//! - exactly one end (`ResponseEnd` or `NoResponse`) per exchange, counted in
//!   `http_exchanges` as it goes out.

use super::{BodyEnd, ConnInfo, ExchangeRef, HttpEvent};
use crate::anomaly::Anomaly;
use crate::http::HttpCounters;
use arcstr::ArcStr;
use std::borrow::Cow;
use std::collections::VecDeque;
use std::sync::Arc;

/// Most decoded response bytes held back while their request's body is
/// still arriving; past it those body pieces are dropped (`http.deferred_limit`).
pub const DEFERRED_RESPONSE_LIMIT: usize = 16 * 1024 * 1024;

/// Most requests waiting for a response per connection (Zeek keeps 100);
/// past it the oldest gets `NoResponse` (`http.pending_limit`).
pub const PENDING_LIMIT: usize = 1000;

/// A request whose head has been read and that awaits its response.
#[derive(Debug)]
pub(super) struct Pending {
    pub xref: ExchangeRef,
    pub method: ArcStr,
    pub version: Cow<'static, str>,
}

/// What [`Exchanges::emit`] did with an event.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[must_use]
pub(super) enum Emitted {
    /// Handed on, or held until its request has gone out.
    Kept,
    /// A body piece dropped: the held response bytes reached [`DEFERRED_RESPONSE_LIMIT`].
    Dropped,
}

/// The exchanges of one connection.
#[derive(Debug)]
pub(super) struct Exchanges {
    info: Arc<ConnInfo>,
    next_number: u32,
    pending: VecDeque<Pending>,
    deferred: Vec<HttpEvent>,
    deferred_bytes: usize,
}

impl Exchanges {
    pub fn new(info: Arc<ConnInfo>) -> Exchanges {
        Exchanges {
            info,
            next_number: 1,
            pending: VecDeque::new(),
            deferred: Vec::new(),
            deferred_bytes: 0,
        }
    }

    /// The connection the exchanges are on.
    pub fn info(&self) -> &Arc<ConnInfo> {
        &self.info
    }

    /// The next exchange of the connection.
    pub fn next_exchange(&mut self) -> ExchangeRef {
        let depth = self.next_number;
        self.next_number = self.next_number.saturating_add(1);
        ExchangeRef {
            conn: self.info.clone(),
            depth,
        }
    }

    /// A request head was read: its exchange, now awaiting a response. Past
    /// [`PENDING_LIMIT`] the oldest waiting request gets `NoResponse`. `waiting`: as for
    /// [`Exchanges::emit`].
    pub fn open_request(
        &mut self,
        method: ArcStr,
        version: Cow<'static, str>,
        ts_us: i64,
        waiting: Option<u32>,
        stats: &mut HttpCounters,
        out: &mut Vec<HttpEvent>,
    ) -> ExchangeRef {
        let xref = self.next_exchange();
        if self.pending.len() >= PENDING_LIMIT
            && let Some(old) = self.pending.pop_front()
        {
            stats.anomaly(Anomaly::HttpPendingLimit);
            let ev = HttpEvent::NoResponse {
                xref: old.xref,
                ts_us,
                end: BodyEnd::CaptureEnd,
                client_closed: false,
            };
            // No body piece: never dropped.
            let _ = self.emit(ev, waiting, stats, out);
        }
        self.pending.push_back(Pending {
            xref: xref.clone(),
            method,
            version,
        });
        xref
    }

    /// The oldest request still awaiting its response.
    pub fn oldest(&self) -> Option<&Pending> {
        self.pending.front()
    }

    /// Takes the oldest waiting request: a response (or its loss) answers it.
    pub fn answer_oldest(&mut self) -> Option<Pending> {
        self.pending.pop_front()
    }

    /// No request awaits a response.
    pub fn none_waiting(&self) -> bool {
        self.pending.is_empty()
    }

    /// Sends an event out, or holds it while its request is still arriving: `waiting` is
    /// the number of the exchange whose `Request` event has not gone out yet, if any.
    pub fn emit(
        &mut self,
        ev: HttpEvent,
        waiting: Option<u32>,
        stats: &mut HttpCounters,
        out: &mut Vec<HttpEvent>,
    ) -> Emitted {
        if matches!(
            ev,
            HttpEvent::ResponseEnd { .. } | HttpEvent::NoResponse { .. }
        ) {
            stats.http_exchanges = stats.http_exchanges.saturating_add(1);
        }
        let depth = event_depth(&ev);
        if depth.is_none() || waiting != depth {
            out.push(ev);
            return Emitted::Kept;
        }
        if let HttpEvent::ResponseBody { data, .. } = &ev {
            if self.deferred_bytes.saturating_add(data.len()) > DEFERRED_RESPONSE_LIMIT {
                return Emitted::Dropped;
            }
            self.deferred_bytes = self.deferred_bytes.saturating_add(data.len());
        }
        self.deferred.push(ev);
        Emitted::Kept
    }

    /// A request went out: the response events held for it follow.
    pub fn flush_deferred(&mut self, out: &mut Vec<HttpEvent>) {
        out.append(&mut self.deferred);
        self.deferred_bytes = 0;
    }

    /// The request of exchange `depth` went out: the response events held for it follow;
    /// those of other exchanges (HTTP/2 holds several at once) stay held.
    pub fn flush_deferred_for(&mut self, depth: u32, out: &mut Vec<HttpEvent>) {
        if self.deferred.is_empty() {
            return;
        }
        let mut kept = Vec::new();
        for ev in self.deferred.drain(..) {
            if event_depth(&ev) != Some(depth) {
                kept.push(ev);
                continue;
            }
            if let HttpEvent::ResponseBody { data, .. } = &ev {
                self.deferred_bytes = self.deferred_bytes.saturating_sub(data.len());
            }
            out.push(ev);
        }
        self.deferred = kept;
    }
}

/// The exchange number an event belongs to (none for a connection's own events).
fn event_depth(ev: &HttpEvent) -> Option<u32> {
    match ev {
        HttpEvent::Request(r) => Some(r.xref.depth),
        HttpEvent::ResponseHead { xref, .. }
        | HttpEvent::ResponseBody { xref, .. }
        | HttpEvent::ResponseEnd { xref, .. }
        | HttpEvent::NoResponse { xref, .. } => Some(xref.depth),
        HttpEvent::ConnectionClosed(_) => None,
    }
}
