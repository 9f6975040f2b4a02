//! Flow stage: [`crate::decode::Segment`]s -> ordered byte streams per
//! direction, as [`StreamEvent`](crate::stream::StreamEvent)s.
//!
//! Missing data is an explicit gap
//! ([`StreamEventKind::Gap`](crate::stream::StreamEventKind::Gap)) with its size, never
//! concatenated bytes. Retransmissions keep the first copy. Memory is bounded
//! by [`FlowLimits`]; hitting a limit records an anomaly and a gap.
//! Input is one segment per packet, in capture order; see [`FlowTable`] for
//! the stream lifecycle and `assembler.rs` for the gap policy (in short: a
//! hole becomes a gap when the peer acknowledged past it, when the buffer
//! limit is hit, when a truncated frame lost it, or when the stream closes).
//! Never panics on any input.
//!
//! The events are the shared words of [`crate::stream`]: what each kind means, and which
//! stage sends which, is written there.

mod assembler;
mod counters;
mod history;
pub mod seq;
mod slab;
mod table;
#[cfg(test)]
mod tests;

pub use assembler::{
    ACK_EVIDENCE_SEGMENTS, MAX_ACK_AHEAD_BYTES, MAX_BUFFERED_CHUNKS, MAX_WINDOW_BYTES,
};
pub use counters::FlowCounters;
pub use history::RETAINED_DELIVERED_BYTES;
pub use table::{CLOSED_LINGER_NS, FlowTable, SWEEP_INTERVAL_NS, SYN_REUSE_DISTANCE};

/// Default [`FlowLimits::max_open_flows`].
pub const MAX_OPEN_FLOWS: usize = 100_000;
/// Default [`FlowLimits::max_buffered_bytes_per_direction`].
pub const MAX_BUFFERED_BYTES_PER_DIRECTION: usize = 4 * 1024 * 1024;
/// Default [`FlowLimits::idle_timeout_ns`]: ten minutes.
pub const IDLE_TIMEOUT_NS: i64 = 10 * 60 * 1_000_000_000;

/// Bounds on reassembly state.
#[derive(Debug, Clone, Copy)]
pub struct FlowLimits {
    /// Most open flows at once; the least recently active flow is evicted past it.
    pub max_open_flows: usize,
    /// Most out-of-order bytes buffered per direction before a gap is declared.
    pub max_buffered_bytes_per_direction: usize,
    /// A flow with no packet for this long (capture time) is expired.
    pub idle_timeout_ns: i64,
}

impl Default for FlowLimits {
    fn default() -> Self {
        FlowLimits {
            max_open_flows: MAX_OPEN_FLOWS,
            max_buffered_bytes_per_direction: MAX_BUFFERED_BYTES_PER_DIRECTION,
            idle_timeout_ns: IDLE_TIMEOUT_NS,
        }
    }
}
