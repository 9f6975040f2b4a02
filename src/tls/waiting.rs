//! A TLS connection waits, within a bound, for secrets that come after its handshake: a live
//! capture's key log lines are written as the client connects, and a pcapng Decryption
//! Secrets Block may follow the packets it decrypts.
//!
//! A connection whose ServerHello finds no secrets for its client random (TLS 1.3: no
//! application traffic secrets) waits, when secrets may still come: it reads nothing past
//! that record and holds the rest of that delivery and every later event of its stream, in
//! order. Each time the stage takes a new secrets block, every waiting connection looks
//! again; one that finds its secrets derives its keys and replays what it held through the
//! normal path, so it hands on the events it would have with the secrets from the start.
//! When the connection ends (`Closed`, end of input), or its held bytes would pass
//! [`MAX_WAITING_BYTES_PER_CONNECTION`] or the stage's [`MAX_WAITING_BYTES`]
//! (`tls.key_wait_limit`), it replays them with the keys it has then: without secrets, the
//! result is the one it had without waiting (`no_key`, the same byte counts), only later.
//! A connection waits once. No connection waits when no secrets can come (only classic pcap
//! inputs, a stage not given the capture's secrets).

use crate::stream::{Side, StreamEvent, StreamEventKind};
use crate::timestamp::CaptureTime;
use std::collections::BTreeSet;

/// Most bytes one connection holds while it waits for its secrets.
pub const MAX_WAITING_BYTES_PER_CONNECTION: usize = 1 << 20;

/// Most bytes all the connections of a stage hold while they wait for their secrets.
pub const MAX_WAITING_BYTES: usize = 64 << 20;

/// What a held event costs beyond its payload, so that many tiny events cannot hold far
/// more memory than the bound says.
pub const HELD_EVENT_COST: usize = size_of::<StreamEvent>();

/// The TLS stage's bounds. `Default` gives the documented defaults.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TlsLimits {
    /// Most bytes a connection holds while it waits for its secrets; past it the connection
    /// is read without them (`tls.key_wait_limit`). 0: no connection waits.
    pub wait_bytes_per_connection: usize,
    /// Most bytes all connections of the run hold while they wait (`tls.key_wait_limit`).
    pub wait_bytes_total: usize,
}

impl Default for TlsLimits {
    fn default() -> Self {
        TlsLimits {
            wait_bytes_per_connection: MAX_WAITING_BYTES_PER_CONNECTION,
            wait_bytes_total: MAX_WAITING_BYTES,
        }
    }
}

impl TlsLimits {
    /// The limits of one of `stages` stages that share the run's total.
    pub fn shared_by(self, stages: usize) -> TlsLimits {
        TlsLimits {
            wait_bytes_total: self.wait_bytes_total / stages.max(1),
            ..self
        }
    }
}

/// What the connections of a stage hold while they wait, against the stage's bounds.
#[derive(Debug, Default)]
pub struct WaitRoom {
    pub(crate) limits: TlsLimits,
    /// Secrets may still come: connections wait.
    pub(crate) enabled: bool,
    held: usize,
    /// The streams waiting, in stream order (the order they look again in).
    waiting: BTreeSet<u64>,
}

impl WaitRoom {
    /// Bytes held by the waiting connections.
    pub fn held(&self) -> usize {
        self.held
    }

    /// The streams waiting, in order.
    pub fn waiting(&self) -> impl Iterator<Item = u64> + '_ {
        self.waiting.iter().copied()
    }

    /// Whether any connection waits.
    pub fn is_empty(&self) -> bool {
        self.waiting.is_empty()
    }

    /// Lets `stream` wait, if connections do.
    pub(crate) fn admit(&mut self, stream: u64) -> bool {
        let admitted = self.enabled && self.limits.wait_bytes_per_connection > 0;
        if admitted {
            self.waiting.insert(stream);
        }
        admitted
    }

    /// Takes `cost` more bytes for a connection holding `charged`, if both bounds allow.
    pub(crate) fn charge(&mut self, charged: usize, cost: usize) -> bool {
        let mine = charged.saturating_add(cost);
        let all = self.held.saturating_add(cost);
        let fits =
            mine <= self.limits.wait_bytes_per_connection && all <= self.limits.wait_bytes_total;
        if fits {
            self.held = all;
        }
        fits
    }

    /// `stream` stopped waiting; the `charged` bytes it held are free.
    pub(crate) fn release(&mut self, stream: u64, charged: usize) {
        self.waiting.remove(&stream);
        self.held = self.held.saturating_sub(charged);
    }
}

/// What one waiting connection holds, in stream order.
#[derive(Default)]
pub(crate) struct Held {
    /// The delivery whose record began the wait: its side, time and frame.
    pub split: Option<(Side, CaptureTime, u64)>,
    /// That delivery's bytes after the record (those the record reader holds stay there).
    pub rest: Vec<u8>,
    /// Every later event of the stream, as it came.
    pub events: Vec<StreamEvent>,
    /// Bytes charged to the stage's [`WaitRoom`].
    pub charged: usize,
    /// Capture time of the oldest bytes held.
    pub since: Option<CaptureTime>,
    /// The split delivery alone passed a bound: the wait ends once that delivery is read.
    pub over: bool,
}

impl Held {
    /// What holding `event` costs (a recycled buffer much larger than its bytes is copied
    /// first, so that the cost is what is held).
    pub fn cost(event: &mut StreamEvent) -> usize {
        let payload = match &mut event.kind {
            StreamEventKind::Data { bytes, .. } => {
                if bytes.capacity() > 2 * bytes.len() {
                    let exact = bytes.as_slice().to_vec();
                    crate::buffers::recycle(std::mem::replace(bytes, exact));
                }
                bytes.capacity()
            }
            _ => 0,
        };
        HELD_EVENT_COST.saturating_add(payload)
    }
}

// Sizes only: the held bytes are the connection's traffic.
impl std::fmt::Debug for Held {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Held")
            .field("rest", &self.rest.len())
            .field("events", &self.events.len())
            .field("charged", &self.charged)
            .field("over", &self.over)
            .finish()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn both_bounds_hold_and_release_frees() {
        let mut room = WaitRoom {
            limits: TlsLimits {
                wait_bytes_per_connection: 10,
                wait_bytes_total: 15,
            },
            enabled: true,
            ..WaitRoom::default()
        };
        assert!(room.admit(1) && room.admit(2));
        assert!(room.charge(0, 10));
        assert!(!room.charge(10, 1), "past the connection's bound");
        assert!(room.charge(0, 5));
        assert!(!room.charge(5, 1), "past the stage's bound");
        room.release(1, 10);
        assert_eq!(room.held(), 5);
        assert_eq!(room.waiting().collect::<Vec<_>>(), [2]);
        assert!(room.charge(5, 5));
    }

    #[test]
    fn nothing_waits_when_disabled_or_bound_zero() {
        let mut room = WaitRoom::default();
        assert!(!room.admit(1));
        room.enabled = true;
        room.limits.wait_bytes_per_connection = 0;
        assert!(!room.admit(1));
        assert!(room.is_empty());
    }

    #[test]
    fn the_total_is_shared_by_the_stages() {
        let shared = TlsLimits::default().shared_by(4);
        assert_eq!(shared.wait_bytes_total, MAX_WAITING_BYTES / 4);
        assert_eq!(
            shared.wait_bytes_per_connection,
            MAX_WAITING_BYTES_PER_CONNECTION
        );
        assert_eq!(TlsLimits::default().shared_by(0), TlsLimits::default());
    }
}
