//! [`Exchange`]: one row of the exchanges table (report-schema.md section 2).
//! Field names are the column names; do not rename them.

use crate::anomaly::AnomalySet;
use crate::http::retry_after::RetryAfter;
use crate::mcp::names::{Kind, Layer, Outcome, RetryOrigin, StreamEnd, Transport};
use crate::mcp::retry::{FindingSet, ToolsPage};
use crate::mcp::trace_context::TraceParent;
use crate::rpc::JsonFingerprint;
pub use arcstr::ArcStr;
use serde::Serialize;

/// One client message or HTTP request to an MCP endpoint.
#[derive(Debug, Clone, Default, Serialize)]
pub struct Exchange {
    /// 1-based, in order of the request's first byte across all inputs.
    pub exchange_id: u64,
    /// File name of the input the request came from.
    pub capture: ArcStr,
    /// First byte of the HTTP request, microseconds since the Unix epoch (UTC).
    pub ts_request: i64,
    /// When the final JSON-RPC response (or the HTTP response, if none) was complete.
    pub ts_response: Option<i64>,
    /// `ts_response - ts_request` in milliseconds.
    pub latency_ms: Option<f64>,
    /// `ip:port`; IPv6 as `[ip]:port`.
    pub client_addr: ArcStr,
    pub server_addr: ArcStr,
    /// TCP connection index (null for HAR).
    pub tcp_stream: Option<u64>,
    /// `HTTP/1.0`, `HTTP/1.1`, `HTTP/2` from the request head (HAR: as recorded; null when
    /// the recorder left it blank).
    pub http_version: Option<&'static str>,
    /// HTTP/2 stream id of the exchange (null for HTTP/1.x).
    pub h2_stream: Option<u32>,
    /// `TLS 1.2`, `TLS 1.3` when the exchange travelled in decrypted TLS (null: plaintext).
    pub tls_version: Option<ArcStr>,
    /// Server name from the ClientHello.
    pub tls_sni: Option<ArcStr>,
    /// `streamable_http`, `legacy_sse`, `unknown`.
    pub transport: Transport,
    /// The analyzer's session grouping key (section 4), never empty.
    pub session_key: ArcStr,
    /// `Mcp-Session-Id` or the legacy `sessionId`/`session_id` query value.
    pub session_id: Option<ArcStr>,
    pub protocol_version: Option<String>,
    pub client_name: Option<String>,
    pub client_version: Option<String>,
    pub user_agent: Option<ArcStr>,
    /// `request`, `notification`, `response`, `stream`, `session_end`, `http`.
    pub kind: Kind,
    pub http_method: ArcStr,
    /// Request target including the query.
    pub path: ArcStr,
    pub http_status: Option<u16>,
    /// Response media type without parameters.
    pub content_type: Option<ArcStr>,
    /// The JSON-RPC id as JSON text (`1`, `"abc"`).
    pub jsonrpc_id: Option<String>,
    pub rpc_method: Option<ArcStr>,
    /// `params.name` of `tools/call`.
    pub tool_name: Option<ArcStr>,
    /// Section 3 outcome name.
    pub outcome: Outcome,
    /// `transport`, `protocol`, `interaction`, `application`.
    pub layer: Layer,
    pub error_code: Option<i64>,
    pub error_message: Option<String>,
    /// `resultType` as sent.
    pub result_type: Option<String>,
    /// `isError` of a tool result.
    pub is_error: Option<bool>,
    /// SSE events seen for this request, on every stream that carried them.
    pub sse_events: u32,
    /// The final JSON-RPC response was seen.
    pub final_response: bool,
    /// `complete`, `fin`, `rst`, `gap`, `capture_end`, `none`.
    pub stream_end: StreamEnd,
    /// Body bytes on the wire (before decoding).
    pub request_bytes: u64,
    pub response_bytes: u64,
    /// 1 for a first call, n for the n-th attempt of a retry chain.
    pub attempt: u32,
    /// `exchange_id` of the previous attempt.
    pub retry_of: Option<u64>,
    /// `none`, `sdk`, `application`, `manual`.
    pub retry_origin: RetryOrigin,
    /// One line: the rule that fired and its facts.
    pub retry_evidence: Option<String>,
    /// Retry-hygiene findings on this attempt (section 4b), written `;`-separated in the
    /// order of [`crate::mcp::retry::Finding::ALL`].
    pub retry_findings: FindingSet,
    /// For an MRTR follow-up: the `input_required` exchange it answers.
    pub continuation_of: Option<u64>,
    /// Anomaly names, written `;`-separated.
    pub anomalies: AnomalySet,
    /// 1 for a message as its client sent it; k+1 for a gateway's copy of a hop-k row
    /// (report-schema.md section 4c).
    pub hop: Hop,
    /// `exchange_id` of the row one hop closer to the client that this row is a copy of.
    pub forwarded_from: Option<u64>,
    /// On a failed row of a call seen on several hops: the hop whose server the failure
    /// arose at.
    pub fault_hop: Option<u8>,
    /// One line: why the rows are linked and how the failure passed.
    pub hop_evidence: Option<String>,

    /// Inputs to retry inference; not columns.
    #[serde(skip)]
    pub inference: InferenceInputs,
}

/// A row's hop (section 4c): 1 unless the row is a gateway's copy.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
#[serde(transparent)]
pub struct Hop(pub u8);

impl Default for Hop {
    fn default() -> Self {
        Hop(1)
    }
}

/// Facts retry inference needs that are not report columns.
#[derive(Debug, Clone, Default)]
pub struct InferenceInputs {
    /// Fingerprint of the canonical JSON of `params` without `_meta`, `progressToken`,
    /// `inputResponses`, `requestState` (key order and spacing normalised, report-schema.md
    /// section 4). `None` when there are no params.
    pub params_fingerprint: Option<JsonFingerprint>,
    /// Fingerprint of the canonical JSON of the whole request body (for "same body").
    pub body_fingerprint: Option<JsonFingerprint>,
    /// The request carries `inputResponses` or `requestState`.
    pub has_mrtr_fields: bool,
    /// `Last-Event-ID` of a `stream` GET.
    pub last_event_id: Option<String>,
    /// Exchange (by `exchange_id`, once assigned) whose stream this GET resumes.
    pub resumes: Option<u64>,
    /// The server endpoint: `server_addr` + path without the query.
    pub endpoint: ArcStr,
    /// Time the request's last byte was sent (µs).
    pub ts_request_end: i64,
    /// Hash of the `Authorization` header, if any (never the credential).
    pub auth_hash: Option<u64>,
    /// Position in arrival order, used to keep sorting stable.
    pub seq: u64,
    /// The wait a 429 or 503 response asked for (`Retry-After`).
    pub retry_after: Option<RetryAfter>,
    /// A `tools/list` request carrying `params.cursor` (a later page of a listing).
    pub list_cursor: bool,
    /// A `tools/list` result's tools, until the tool catalog has taken them.
    pub tools_page: Option<Box<ToolsPage>>,
    /// A valid W3C `traceparent` from `params._meta`: the caller's span.
    pub trace_parent: Option<TraceParent>,
    /// `params.name` of `prompts/get`.
    pub prompt_name: Option<ArcStr>,
    /// `params` fingerprint as for `params_fingerprint`, also without `name`: a `tools/call`
    /// whose tool name a gateway prefixed is still a copy (section 4c). `None` without a
    /// `name` member.
    pub params_fingerprint_unnamed: Option<JsonFingerprint>,
    /// When the response head started (µs): a gateway's copy starts before it (section 4c).
    pub ts_response_start: Option<i64>,
    /// When the HTTP exchange ended without a response, or its response ended (µs).
    pub ts_ended: Option<i64>,
    /// The client side closed or reset before the response was complete (a gateway gave up
    /// on its upstream copy).
    pub client_gave_up: bool,
    /// Set by hop linking on a gateway's second copy of one original: the earlier copy.
    pub gateway_retry_of: Option<u64>,
    /// Set by hop linking on a row that has copies, for retry inference to mirror relations.
    pub has_copies: bool,
    /// Set by hop linking on every row of a call seen on several hops: the gateway, i.e.
    /// the server endpoint (`server_addr`) of the call's hop-1 row.
    pub gateway: Option<ArcStr>,
    /// Set by hop linking on a failed row whose outcome differs from the outcome at the hop
    /// where the failure arose (a gateway translated it).
    pub translated: bool,
    /// Set by hop linking on a hop-1 row with copies: its latency minus its last copy's
    /// (µs), the time the gateway added.
    pub gateway_added_us: Option<i64>,
    /// The SSE events counted in `sse_events`, up to [`crate::mcp::McpLimits::sse_marks_per_row`]
    /// (none unless a report asks for them).
    pub sse_marks: Vec<SseMark>,
    /// Events past that limit.
    pub sse_marks_dropped: u32,
}

/// One SSE event on an exchange's stream: when it arrived and what it carried (the method of
/// a notification or server request, `response`, `endpoint`, `priming` for blank data,
/// `invalid` for data that is no JSON-RPC).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SseMark {
    pub ts_us: i64,
    pub name: ArcStr,
}

impl InferenceInputs {
    /// Keeps `mark` while fewer than `limit` are kept, else counts it as dropped.
    pub fn note_sse(&mut self, mark: SseMark, limit: usize) {
        if self.sse_marks.len() < limit {
            self.sse_marks.push(mark);
        } else if limit > 0 {
            self.sse_marks_dropped = self.sse_marks_dropped.saturating_add(1);
        }
    }
}
