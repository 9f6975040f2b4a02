//! [`ScreenRow`]: what the live screen keeps of one exchange row. The capture side makes it
//! from `&Exchange` and sends it, so the screen thread never holds a whole [`Exchange`]
//! (inference inputs, SSE marks, tool pages). Shared strings are `ArcStr` clones (a count
//! increment), not copies.

use crate::anomaly::AnomalySet;
use crate::mcp::retry::FindingSet;
use crate::mcp::{Exchange, Hop, Kind, Layer, Outcome, RetryOrigin, StreamEnd};
use arcstr::ArcStr;

/// One exchange as the live screen shows it: the table's cells and the details pane's
/// fields. Field names are the exchanges table's column names (report-schema.md section 2).
#[derive(Debug, Clone, Default)]
pub struct ScreenRow {
    pub exchange_id: u64,
    pub ts_request: i64,
    pub ts_response: Option<i64>,
    pub latency_ms: Option<f64>,
    pub client_addr: ArcStr,
    pub server_addr: ArcStr,
    /// The server endpoint: `server_addr` + path without the query.
    pub endpoint: ArcStr,
    pub tcp_stream: Option<u64>,
    pub http_version: Option<&'static str>,
    pub h2_stream: Option<u32>,
    pub tls_version: Option<ArcStr>,
    pub tls_sni: Option<ArcStr>,
    pub session_key: ArcStr,
    pub session_id: Option<ArcStr>,
    pub client_name: Option<String>,
    pub user_agent: Option<ArcStr>,
    pub kind: Kind,
    pub http_method: ArcStr,
    pub path: ArcStr,
    pub http_status: Option<u16>,
    pub jsonrpc_id: Option<String>,
    pub rpc_method: Option<ArcStr>,
    pub tool_name: Option<ArcStr>,
    pub outcome: Outcome,
    pub layer: Layer,
    pub error_code: Option<i64>,
    pub error_message: Option<String>,
    pub result_type: Option<String>,
    pub is_error: Option<bool>,
    pub sse_events: u32,
    pub final_response: bool,
    pub stream_end: StreamEnd,
    pub request_bytes: u64,
    pub response_bytes: u64,
    pub attempt: u32,
    pub retry_of: Option<u64>,
    pub retry_origin: RetryOrigin,
    pub retry_evidence: Option<String>,
    pub retry_findings: FindingSet,
    pub continuation_of: Option<u64>,
    pub anomalies: AnomalySet,
    pub hop: Hop,
    pub forwarded_from: Option<u64>,
    pub fault_hop: Option<u8>,
    pub hop_evidence: Option<String>,
    /// The gateway of a call seen on several hops (section 4c).
    pub gateway: Option<ArcStr>,
    /// A gateway changed the failure's outcome on the way back.
    pub translated: bool,
}

impl ScreenRow {
    /// The screen's copy of `e`: the capture thread's whole cost of showing a row.
    pub fn from_exchange(e: &Exchange) -> ScreenRow {
        let endpoint = if e.inference.endpoint.is_empty() {
            let path = e.path.split('?').next().unwrap_or_default();
            ArcStr::from(format!("{}{}", e.server_addr, path))
        } else {
            e.inference.endpoint.clone()
        };
        ScreenRow {
            exchange_id: e.exchange_id,
            ts_request: e.ts_request,
            ts_response: e.ts_response,
            latency_ms: e.latency_ms,
            client_addr: e.client_addr.clone(),
            server_addr: e.server_addr.clone(),
            endpoint,
            tcp_stream: e.tcp_stream,
            http_version: e.http_version,
            h2_stream: e.h2_stream,
            tls_version: e.tls_version.clone(),
            tls_sni: e.tls_sni.clone(),
            session_key: e.session_key.clone(),
            session_id: e.session_id.clone(),
            client_name: e.client_name.clone(),
            user_agent: e.user_agent.clone(),
            kind: e.kind,
            http_method: e.http_method.clone(),
            path: e.path.clone(),
            http_status: e.http_status,
            jsonrpc_id: e.jsonrpc_id.clone(),
            rpc_method: e.rpc_method.clone(),
            tool_name: e.tool_name.clone(),
            outcome: e.outcome,
            layer: e.layer,
            error_code: e.error_code,
            error_message: e.error_message.clone(),
            result_type: e.result_type.clone(),
            is_error: e.is_error,
            sse_events: e.sse_events,
            final_response: e.final_response,
            stream_end: e.stream_end,
            request_bytes: e.request_bytes,
            response_bytes: e.response_bytes,
            attempt: e.attempt,
            retry_of: e.retry_of,
            retry_origin: e.retry_origin,
            retry_evidence: e.retry_evidence.clone(),
            retry_findings: e.retry_findings,
            continuation_of: e.continuation_of,
            anomalies: e.anomalies.clone(),
            hop: e.hop,
            forwarded_from: e.forwarded_from,
            fault_hop: e.fault_hop,
            hop_evidence: e.hop_evidence.clone(),
            gateway: e.inference.gateway.clone(),
            translated: e.inference.translated,
        }
    }

    /// The `/` filter: `needle` in the tool name or the method, in any case.
    pub(super) fn matches_text(&self, needle: &str) -> bool {
        let has = |s: &Option<ArcStr>| s.as_deref().is_some_and(|s| contains_any_case(s, needle));
        needle.is_empty() || has(&self.tool_name) || has(&self.rpc_method)
    }

    /// What the row asked for, as the terminal summary says it: `tools/call get_weather`,
    /// `GET stream`, `DELETE`, `POST /mcp`.
    pub(super) fn call(&self) -> String {
        let mut s = match (&self.rpc_method, self.kind) {
            (Some(m), _) => m.to_string(),
            (None, Kind::Stream) => format!("{} stream", self.http_method),
            (None, Kind::SessionEnd) => self.http_method.to_string(),
            (None, _) => format!("{} {}", self.http_method, self.path),
        };
        if let Some(tool) = &self.tool_name {
            s.push(' ');
            s.push_str(tool);
        }
        s
    }
}

/// `needle` in `hay`, any case; without allocating when the needle is ASCII (every redraw
/// filters every kept row).
fn contains_any_case(hay: &str, needle: &str) -> bool {
    if needle.is_ascii() {
        let n = needle.len();
        n == 0
            || hay
                .as_bytes()
                .windows(n)
                .any(|w| w.eq_ignore_ascii_case(needle.as_bytes()))
    } else {
        hay.to_lowercase().contains(&needle.to_lowercase())
    }
}
