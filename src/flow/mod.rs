//! Flow stage: [`crate::decode::Segment`]s -> ordered byte streams per
//! direction, as [`StreamEvent`]s.
//!
//! Missing data is an explicit [`StreamEventKind::Gap`] with its size, never
//! concatenated bytes. Retransmissions keep the first copy. Memory is bounded
//! by [`FlowLimits`]; hitting a limit records an anomaly and a gap.
//! Input is one segment per packet, in capture order; see [`FlowTable`] for
//! the stream lifecycle and `assembler.rs` for the gap policy (in short: a
//! hole becomes a gap when the peer acknowledged past it, when the buffer
//! limit is hit, when a truncated frame lost it, or when the stream closes).
//! Never panics on any input.

mod assembler;
#[cfg(test)]
mod corpus_tests;
mod history;
#[cfg(test)]
mod proptests;
pub mod seq;
mod slab;
mod table;
#[cfg(test)]
mod tests;

pub use assembler::{
    ACK_EVIDENCE_SEGMENTS, MAX_ACK_AHEAD_BYTES, MAX_BUFFERED_CHUNKS, MAX_WINDOW_BYTES,
};
pub use history::RETAINED_DELIVERED_BYTES;
pub use table::{CLOSED_LINGER_NS, FlowTable, SWEEP_INTERVAL_NS, SYN_REUSE_DISTANCE};

use std::net::SocketAddr;

/// Which end of the connection sent the bytes. The client is the SYN sender,
/// or the receiver of a lone SYN-ACK; without either, the sender of the
/// stream's first packet (the HTTP stage may still swap them if the content
/// says otherwise).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Side {
    /// The connection's initiator (see above).
    Client,
    /// The other end.
    Server,
}

impl Side {
    /// The opposite end.
    pub fn other(self) -> Side {
        match self {
            Side::Client => Side::Server,
            Side::Server => Side::Client,
        }
    }
}

/// Why a stream ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CloseReason {
    /// Both directions finished with FIN, or a RST was seen.
    Finished,
    /// No packet for longer than the idle timeout.
    Idle,
    /// Evicted to stay under the open-flow limit.
    Evicted,
    /// Still open when the capture ended.
    CaptureEnd,
}

/// One event on one TCP stream.
#[derive(Debug, Clone)]
pub struct StreamEvent {
    /// Stream index in order of first packet (like tshark's `tcp.stream`), 0-based.
    pub stream: u64,
    /// Time of the packet that produced the event.
    pub ts_ns: i64,
    /// Frame index of the packet that produced the event.
    pub frame: u64,
    /// What happened.
    pub kind: StreamEventKind,
}

/// The events of one stream, in order: `Opened`; then per side its `Data`
/// and `Gap`s in sequence order, never overlapping and never leaving a
/// hole between them, followed by at most one `Fin`, and at most one `Rst`
/// for the stream; then exactly one `Closed`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum StreamEventKind {
    /// First event of every stream.
    Opened {
        /// Address of the [`Side::Client`].
        client: SocketAddr,
        /// Address of the [`Side::Server`].
        server: SocketAddr,
        /// The stream's first packet was a SYN or SYN-ACK (else picked up mid-connection).
        saw_syn: bool,
        /// Input (position in the input list) of the stream's first packet.
        input: usize,
    },
    /// In-order payload bytes.
    Data { side: Side, bytes: Vec<u8> },
    /// `len` bytes of this direction's sequence space were never seen.
    Gap { side: Side, len: u64 },
    /// The side sent FIN (all its data before it has been delivered or gapped).
    Fin { side: Side },
    /// The side sent RST.
    Rst { side: Side },
    /// Last event of every stream.
    Closed { reason: CloseReason },
}

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
            max_open_flows: 100_000,
            max_buffered_bytes_per_direction: 4 * 1024 * 1024,
            idle_timeout_ns: 10 * 60 * 1_000_000_000,
        }
    }
}
