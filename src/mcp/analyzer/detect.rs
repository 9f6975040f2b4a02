//! MCP endpoint detection: MCP is found by content (a JSON-RPC body or SSE event), and the
//! endpoints seen carrying it are remembered so that GETs, DELETEs, preflights and
//! non-JSON-RPC requests to them become rows too; legacy HTTP+SSE sessions are found by
//! their `endpoint` event.

use super::Analyzer;
use crate::anomaly::Anomaly;
use crate::http::BodyEnd;
use crate::mcp::McpCounters;
use crate::rpc::envelope::{EnvelopeBody, EnvelopeElement};
use serde_json::Value;

/// MCP endpoints remembered for detecting GETs and non-JSON-RPC requests (`mcp.endpoint_limit`).
pub const MAX_KNOWN_ENDPOINTS: usize = 65_536;

/// Legacy HTTP+SSE sessions remembered (`mcp.legacy_session_limit`).
pub const MAX_LEGACY_SESSIONS: usize = 65_536;

/// `OPTIONS` requests to endpoints not yet known as MCP, held until the end
/// of input decides (`mcp.preflight_limit`; the oldest is dropped).
pub const MAX_PENDING_PREFLIGHTS: usize = 4096;

#[derive(Debug)]
pub(super) struct LegacySession {
    pub(super) end: Option<BodyEnd>,
}

impl Analyzer {
    pub(super) fn learn_endpoint(&mut self, endpoint: &str, stats: &mut McpCounters) {
        if self.endpoints.contains(endpoint) {
            return;
        }
        if self.endpoints.len() >= MAX_KNOWN_ENDPOINTS {
            stats.anomaly(Anomaly::McpEndpointLimit);
            return;
        }
        self.endpoints.insert(endpoint.to_string());
    }
}

/// MCP by content: a JSON object (or batch of objects) with a `jsonrpc` member.
pub(super) fn value_looks_jsonrpc(v: &Value) -> bool {
    match v {
        Value::Object(o) => o.contains_key("jsonrpc"),
        Value::Array(items) => items
            .iter()
            .any(|i| i.as_object().is_some_and(|o| o.contains_key("jsonrpc"))),
        _ => false,
    }
}

/// [`value_looks_jsonrpc`] of a body read as envelopes.
pub(super) fn looks_jsonrpc(body: &EnvelopeBody) -> bool {
    let has_jsonrpc = |e: &EnvelopeElement| match e {
        EnvelopeElement::Envelope(env) => env.jsonrpc.is_some(),
        EnvelopeElement::Other(_) => false,
    };
    match body {
        EnvelopeBody::One(env) => env.jsonrpc.is_some(),
        EnvelopeBody::Batch(items) => items.iter().any(has_jsonrpc),
        EnvelopeBody::Other(_) => false,
    }
}
