//! RPC stage: HTTP bodies -> JSON-RPC messages (single, batch, or SSE events).
//!
//! [`parse_response_body`] reads one JSON body or SSE `data` into [`RpcMessage`]s;
//! [`SseParser`] splits a `text/event-stream` body, fed piece by piece, into
//! [`SseEvent`]s. Neither panics on any input.

pub mod digest;
pub mod envelope;
mod fastjson;
mod fingerprint;
mod jsonrpc;
mod limits;
#[cfg(any(test, fuzzing))]
pub mod oracle;
mod seed;
mod sse;

pub use fingerprint::{
    JsonFingerprint, canonical_fingerprint, canonical_fingerprint_without, text_fingerprint,
};
pub use jsonrpc::{
    RpcId, RpcMessage, parse_envelopes, parse_response_body, parse_response_text, parse_value,
};
pub use limits::RpcLimits;
pub use sse::{MAX_SSE_EVENT_BYTES, SseEvent, SseParser};

/// Why a body could not be read as JSON-RPC at all.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum RpcError {
    /// Nothing but whitespace.
    #[error("body is empty")]
    Empty,
    /// Not parseable as JSON.
    #[error("body is not JSON: {0}")]
    NotJson(String),
    /// JSON, but neither an object nor an array.
    #[error("body is JSON {0}, not a JSON-RPC object or batch")]
    NotJsonRpc(&'static str),
    /// A batch with no elements (JSON-RPC 2.0 section 6: invalid).
    #[error("body is an empty batch")]
    EmptyBatch,
}
