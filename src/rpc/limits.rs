//! The JSON-RPC stage's bound on the state that grows with input.

use super::sse::MAX_SSE_EVENT_BYTES;

/// Per-run limits of the JSON-RPC stage. `Default` gives the documented defaults.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RpcLimits {
    /// Largest SSE event; a larger one is skipped to its end (`rpc.sse_event_too_large`).
    pub sse_event_bytes: usize,
}

impl Default for RpcLimits {
    fn default() -> Self {
        RpcLimits {
            sse_event_bytes: MAX_SSE_EVENT_BYTES,
        }
    }
}
