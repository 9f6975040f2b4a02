//! Bounds on the state that grows with input, past the TCP stage (whose bounds
//! are [`crate::flow::FlowLimits`]). Each is an `analyze` option; hitting one
//! records a named anomaly and the loss is counted, so memory follows these
//! numbers and never the capture.

use crate::http::{DECODED_BODY_LIMIT, HEAD_LIMIT, REQUEST_BODY_LIMIT};
use crate::mcp::MAX_PENDING_PER_SESSION;
use crate::mcp::retry::{MAX_CATALOG_TOOLS, MAX_INDEXED_REQUESTS};
use crate::rpc::MAX_SSE_EVENT_BYTES;

/// Most bytes reserved ahead for one body from its Content-Length: most JSON-RPC bodies fit,
/// while a forged length (many open requests that never send their body) reserves little.
pub const BODY_RESERVE_MAX: usize = 16 * 1024;

/// Per-run limits of the HTTP, RPC and MCP stages. `Default` gives the documented defaults.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Limits {
    /// Largest HTTP head (start line + headers) read; past it `http.head_too_large` and the
    /// head's bytes are skipped.
    pub head_bytes: usize,
    /// Most body bytes kept per message for JSON parsing (request bodies in the HTTP stage,
    /// JSON response bodies in the MCP stage); the rest is counted, not kept
    /// (`http.request_body_limit`, `mcp.body_too_large`).
    pub body_bytes: usize,
    /// Most bytes produced by content decoding (gzip, deflate, br) per body
    /// (`http.decompression_limit`): a decompression bomb stops here.
    pub decoded_bytes: u64,
    /// Largest SSE event; a larger one is skipped to its end (`rpc.sse_event_too_large`).
    pub sse_event_bytes: usize,
    /// Most requests awaiting a response per session; past it the oldest ones are no longer
    /// tracked (`mcp.pending_limit`).
    pub pending_per_session: usize,
    /// Most requests held in the retry-inference index (the repeat window); past it the oldest
    /// are not indexed (`mcp.retry_index_full`).
    pub retry_rows: usize,
    /// Most entries in the tool catalog (listings plus tools, over all endpoints); past it
    /// the oldest listings are forgotten (`mcp.tool_catalog_full`).
    pub catalog_tools: usize,
}

impl Default for Limits {
    fn default() -> Self {
        Limits {
            head_bytes: HEAD_LIMIT,
            body_bytes: REQUEST_BODY_LIMIT,
            decoded_bytes: DECODED_BODY_LIMIT,
            sse_event_bytes: MAX_SSE_EVENT_BYTES,
            pending_per_session: MAX_PENDING_PER_SESSION,
            retry_rows: MAX_INDEXED_REQUESTS,
            catalog_tools: MAX_CATALOG_TOOLS,
        }
    }
}
