//! The words the stream stages share, owned by none of them: flow produces [`StreamEvent`]s,
//! TLS turns them into [`StreamEvent`]s, HTTP consumes them; each is a [`StreamStage`], and
//! the pipeline joins them with [`Chain`]. A connection's [`ConnectionRecord`] rides on its
//! `Closed` event, each stage filling its own part.
//!
//! This module imports no stage: every stage that speaks these words sits above it.
//!
//! [`StreamEvent`] is also what every stage between flow and HTTP hands on (a TLS stage
//! turns ciphertext events into plaintext events of the same kinds), so it carries what such
//! a stage knows and the flow stage does not:
//! - [`StreamEventKind::Negotiated`]: the application protocol agreed on the connection
//!   (TLS ALPN), after `Opened` and before the first `Data`. The flow stage never sends it.
//! - [`StreamEventKind::Decrypted`]: the stream's data from here on is decrypted TLS, with
//!   the version and server name, sent once by the TLS stage after `Opened` and before the
//!   first decrypted `Data` (before `Negotiated`). A separate event rather than a field of
//!   `Opened`, because the TLS stage learns them from the handshake, after `Opened` went on;
//!   the HTTP stage copies them onto the connection (`ConnInfo`) for the exchange columns.
//!   A TLS connection that is not decrypted never sends it (and hands on no `Data`).
//! - The `Closed` event carries the connection's [`ConnectionRecord`] (a row of the
//!   connections table): each stage fills its own fields as the event passes (see
//!   `record.rs`), so the table costs no state beyond the open connections.
//! - [`GapLen`]: how much a gap lost. The flow stage always knows ([`GapLen::Bytes`], in
//!   sequence space); after decryption a lost record hides how much plaintext it held
//!   ([`GapLen::Unknown`]), and a consumer must not count on a length it was not given.

mod record;
mod stage;

pub use record::{
    ConnectionRecord, Decryption, EndedBy, FlowFacts, HttpFacts, HttpVersion, McpCounts, TlsBytes,
    TlsSummary,
};
pub use stage::{Chain, StreamStage};

use crate::timestamp::CaptureTime;
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
    pub ts: CaptureTime,
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
    /// The connection's application protocol as negotiated (TLS ALPN, RFC 7301), e.g. `h2`
    /// or `http/1.1`, exactly as sent. Only a stage that decrypts sends it, after `Opened`
    /// and before the stream's first `Data`; the flow stage never does.
    Negotiated { protocol: Box<[u8]> },
    /// The data that follows was decrypted from TLS: the negotiated version as the contract
    /// writes it (`TLS 1.3`) and the ClientHello's server name. Only a stage that decrypts
    /// sends it, once, after `Opened` and before the stream's first `Data` (and `Negotiated`).
    Decrypted {
        version: Option<Box<str>>,
        sni: Option<Box<str>>,
    },
    /// In-order payload bytes.
    Data { side: Side, bytes: Vec<u8> },
    /// Bytes of this direction were never seen: `len` says how many, when that is known.
    Gap { side: Side, len: GapLen },
    /// The side sent FIN (all its data before it has been delivered or gapped).
    Fin { side: Side },
    /// The side sent RST.
    Rst { side: Side },
    /// Last event of every stream, with the connection's record so far (see `record.rs`).
    Closed {
        reason: CloseReason,
        record: Box<ConnectionRecord>,
    },
}

impl StreamEventKind {
    /// A `Closed` with an empty record: what a stage's tests, or a stream not counted by the
    /// flow stage, end with.
    pub fn closed(reason: CloseReason) -> StreamEventKind {
        StreamEventKind::Closed {
            reason,
            record: Box::default(),
        }
    }
}

/// How much of a stream a [`StreamEventKind::Gap`] lost.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum GapLen {
    /// This many bytes (the flow stage's gaps: sequence space never seen).
    Bytes(u64),
    /// An unknown number of bytes: a stage between flow and HTTP lost data whose decoded
    /// length it cannot tell (a TLS record missing in part). Framing that counts bytes
    /// cannot skip over it.
    Unknown,
}

impl GapLen {
    /// The length, when known.
    pub fn bytes(self) -> Option<u64> {
        match self {
            GapLen::Bytes(n) => Some(n),
            GapLen::Unknown => None,
        }
    }
}
