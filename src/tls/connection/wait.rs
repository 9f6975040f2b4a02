//! A connection waiting for secrets that come after its ServerHello (see `tls/waiting.rs`):
//! when it begins, what it holds, and the replay through the normal path when it ends.

use super::super::keylog::Label;
use super::super::waiting::Held;
use super::{KeyState, TlsConnection, TlsContext};
use crate::stream::{Side, StreamEvent, StreamEventKind};
use crate::timestamp::CaptureTime;
use crate::tls::{TlsCounters, anomaly};

impl TlsConnection {
    /// Whether the connection waits for its secrets.
    pub fn is_waiting(&self) -> bool {
        self.wait.is_some()
    }

    /// At the ServerHello: waits when keys are missing and the stage lets it.
    pub(super) fn wait_if_secrets_may_come(&mut self, ctx: &mut TlsContext) {
        let missing = match self.key_state {
            KeyState::Missing => true,
            // Handshake secrets alone, so far: the data needs the application ones.
            KeyState::Ready if self.tls13 => !self.tls13_application_secrets(ctx),
            _ => false,
        };
        if missing && !self.waited && self.wait.is_none() && ctx.wait.admit(self.stream) {
            self.waited = true;
            self.wait = Some(Box::default());
        }
    }

    /// Both TLS 1.3 application traffic secrets of the connection are known.
    fn tls13_application_secrets(&self, ctx: &TlsContext) -> bool {
        let secrets = self
            .client_hello
            .as_ref()
            .and_then(|hello| ctx.keylog.get(&hello.random));
        secrets.is_some_and(|s| {
            s.get(Label::ClientTraffic0).is_some() && s.get(Label::ServerTraffic0).is_some()
        })
    }

    /// The wait began on a record of the delivery at `at` on `side`: `rest`, the delivery's
    /// bytes after that record, waits too.
    pub(super) fn hold_rest(
        &mut self,
        side: Side,
        rest: Vec<u8>,
        at: (CaptureTime, u64),
        ctx: &mut TlsContext,
    ) {
        let in_reader = self.dir(side).records.held();
        let Some(held) = self.wait.as_mut() else {
            return;
        };
        held.split = Some((side, at.0, at.1));
        held.since = Some(at.0);
        let cost = rest.len().saturating_add(in_reader);
        held.rest = rest;
        if ctx.wait.charge(held.charged, cost) {
            held.charged += cost;
        } else {
            held.over = true;
        }
    }

    /// An event of a waiting connection: held, or handed back when the wait ended first
    /// (at `Closed`, or when holding it would pass a bound).
    pub(super) fn hold(
        &mut self,
        mut event: StreamEvent,
        ctx: &mut TlsContext,
        stats: &mut TlsCounters,
        out: &mut Vec<StreamEvent>,
    ) -> Option<StreamEvent> {
        let Some(held) = self.wait.as_mut() else {
            return Some(event);
        };
        if matches!(event.kind, StreamEventKind::Closed { .. }) {
            self.end_wait(ctx, stats, out);
            return Some(event);
        }
        let cost = Held::cost(&mut event);
        if !ctx.wait.charge(held.charged, cost) {
            stats.anomaly(anomaly::KEY_WAIT_LIMIT);
            self.end_wait(ctx, stats, out);
            return Some(event);
        }
        held.charged += cost;
        held.since.get_or_insert(event.ts);
        held.events.push(event);
        None
    }

    /// A new secrets block was taken: a waiting connection whose secrets are now all known
    /// ends its wait.
    pub fn retry_wait(
        &mut self,
        ctx: &mut TlsContext,
        stats: &mut TlsCounters,
        out: &mut Vec<StreamEvent>,
    ) {
        if self.wait.is_none() {
            return;
        }
        let known = if self.tls13 {
            self.tls13_application_secrets(ctx)
        } else {
            match (&self.client_hello, &self.server_hello) {
                (Some(c), Some(s)) => self.tls12_master(c, s, ctx).is_some(),
                _ => false,
            }
        };
        if known {
            self.end_wait(ctx, stats, out);
        }
    }

    /// Ends the wait: keys from the secrets known now (if any), then what was held goes
    /// through the normal path, in order.
    pub(super) fn end_wait(
        &mut self,
        ctx: &mut TlsContext,
        stats: &mut TlsCounters,
        out: &mut Vec<StreamEvent>,
    ) {
        let Some(held) = self.wait.take() else {
            return;
        };
        ctx.wait.release(self.stream, held.charged);
        if let (Some(c), Some(s)) = (self.client_hello.clone(), self.server_hello.clone()) {
            self.key_state = self.derive_keys(&c, &s, ctx);
        }
        let Held {
            split,
            rest,
            events,
            ..
        } = *held;
        if let Some((side, ts, frame)) = split {
            // What the delivery that began the wait still had: the records the reader
            // holds whole, then the bytes after them.
            self.read_held(side, ctx, stats);
            let dir = self.dir(side);
            if dir.records.held() == 0 {
                dir.held_since = None;
            }
            if !rest.is_empty() {
                self.read_delivery(side, rest, (ts, frame), ctx, stats);
            }
            self.hand_on_plaintext(side, (ts, frame), out);
        }
        for event in events {
            self.push_decided(event, ctx, stats, out);
        }
    }
}
