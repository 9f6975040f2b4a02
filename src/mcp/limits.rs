//! The MCP stage's bounds on the state that grows with input. The MCP stage runs the
//! JSON-RPC parsers on the bodies it gathers, so its limits carry theirs.

use super::analyzer::MAX_PENDING_PER_SESSION;
use super::hops::MAX_HOP_WAITING;
use super::retry::{MAX_CATALOG_TOOLS, MAX_INDEXED_REQUESTS};
use crate::http::REQUEST_BODY_LIMIT;
use crate::rpc::RpcLimits;

/// Per-run limits of the MCP stage. `Default` gives the documented defaults.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct McpLimits {
    /// Most bytes of a JSON response body kept for parsing (`mcp.body_too_large`); by
    /// default the HTTP stage's request body bound, as one `--max-body` sets both.
    pub body_bytes: usize,
    /// Most requests awaiting a response per session; past it the oldest ones are no longer
    /// tracked (`mcp.pending_limit`).
    pub pending_per_session: usize,
    /// Most requests held in the retry-inference index (the repeat window); past it the oldest
    /// are not indexed (`mcp.retry_index_full`).
    pub retry_rows: usize,
    /// Most entries in the tool catalog (listings plus tools, over all endpoints); past it
    /// the oldest listings are forgotten (`mcp.tool_catalog_full`).
    pub catalog_tools: usize,
    /// Most rows held while they may still get a gateway's copy (`--max-hop-waiting`); past
    /// it the oldest leaves (`mcp.hop_waiting_full`).
    pub hop_waiting: usize,
    /// The bounds of the JSON-RPC parsing done on response bodies.
    pub rpc: RpcLimits,
    /// Most SSE events kept per row ([`crate::mcp::InferenceInputs::sse_marks`], for the
    /// OTLP span events; `--otlp-max-events`); 0 keeps none.
    pub sse_marks_per_row: usize,
    /// An open row (a GET stream, a call not answered yet) holds back the rows behind it at
    /// most this long (µs), then is set aside with its `exchange_id` and written when it ends
    /// (`--max-row-hold`; [`crate::mcp::HOLD_LIMIT_US`] by default, 1 s for `live`).
    pub hold_limit_us: i64,
}

impl Default for McpLimits {
    fn default() -> Self {
        McpLimits {
            body_bytes: REQUEST_BODY_LIMIT,
            pending_per_session: MAX_PENDING_PER_SESSION,
            retry_rows: MAX_INDEXED_REQUESTS,
            catalog_tools: MAX_CATALOG_TOOLS,
            hop_waiting: MAX_HOP_WAITING,
            rpc: RpcLimits::default(),
            sse_marks_per_row: 0,
            hold_limit_us: crate::mcp::HOLD_LIMIT_US,
        }
    }
}
