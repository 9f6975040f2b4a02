//! One exchange row as one span (report-schema.md section 6, with the names of the
//! OpenTelemetry semantic conventions for MCP, `docs/gen-ai/mcp.md`).

use super::ids::{RunKey, session_root_span_id, session_trace_id};
use super::model::{
    Event, Hex, KeyValue, Link, SPAN_KIND_CLIENT, STATUS_ERROR, STATUS_UNSET, Span, Status, Text,
    U64Text,
};
use crate::mcp::{Exchange, Outcome, RetryOrigin};

/// Where a span sits: its trace, and its parent (the caller's span, or the session root).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Placement {
    pub trace_id: [u8; 16],
    pub parent: [u8; 8],
    /// Under the caller's span from `_meta.traceparent` (else under the session root).
    pub joined: bool,
}

impl Placement {
    /// The caller's trace when the request carried a valid `traceparent`, else its
    /// session's trace under the session root span.
    pub fn of(row: &Exchange) -> Placement {
        match row.inference.trace_parent {
            Some(tp) => Placement {
                trace_id: tp.trace_id,
                parent: tp.span_id,
                joined: true,
            },
            None => Placement {
                trace_id: session_trace_id(&row.session_key),
                parent: session_root_span_id(&row.session_key),
                joined: false,
            },
        }
    }
}

/// A link to be resolved: the exchange a row repeats or continues, and why.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct LinkTarget {
    pub exchange_id: u64,
    pub relation: &'static str,
}

/// The exchanges `row` links to: the attempt it repeats, the `input_required` exchange it
/// continues.
pub fn link_targets(row: &Exchange) -> impl Iterator<Item = LinkTarget> {
    let retry = row.retry_of.map(|exchange_id| LinkTarget {
        exchange_id,
        relation: "retry_of",
    });
    let continuation = row.continuation_of.map(|exchange_id| LinkTarget {
        exchange_id,
        relation: "continuation_of",
    });
    retry.into_iter().chain(continuation)
}

/// The link to `target`'s span, which lies in trace `trace_id`; a retry's link says who
/// sent it again (`origin`).
pub fn link(run: &RunKey, target: LinkTarget, trace_id: [u8; 16], origin: RetryOrigin) -> Link {
    let mut attributes = vec![KeyValue::str("mcp_trace.link.relation", target.relation)];
    if target.relation == "retry_of" {
        attributes.push(KeyValue::str("mcp_trace.retry_origin", origin.name()));
    }
    Link {
        trace_id: Hex(trace_id),
        span_id: Hex(run.span_id(target.exchange_id)),
        attributes,
    }
}

/// The span of `row`, placed by `place`, with its SSE events and without links (added once
/// resolved).
pub fn span_of(run: &RunKey, row: &Exchange, place: Placement) -> Span {
    let events = row
        .inference
        .sse_marks
        .iter()
        .map(|m| Event {
            time_unix_nano: U64Text(us_to_ns(m.ts_us)),
            name: m.name.to_string(),
        })
        .collect();
    let start_ns = us_to_ns(row.ts_request);
    let end_us = row
        .ts_response
        .unwrap_or(row.inference.ts_request_end)
        .max(row.ts_request);
    let failed = row.outcome.is_failure();
    Span {
        trace_id: Hex(place.trace_id),
        span_id: Hex(run.span_id(row.exchange_id)),
        parent_span_id: Some(Hex(place.parent)),
        name: span_name(row),
        kind: SPAN_KIND_CLIENT,
        start_time_unix_nano: U64Text(start_ns),
        end_time_unix_nano: U64Text(us_to_ns(end_us).max(start_ns)),
        attributes: attributes(row),
        events,
        dropped_events_count: row.inference.sse_marks_dropped,
        links: Vec::new(),
        status: Status {
            code: if failed { STATUS_ERROR } else { STATUS_UNSET },
            // The conventions ask for the JSON-RPC error's message when there is one.
            message: failed.then(|| {
                row.error_message
                    .clone()
                    .filter(|_| row.outcome == Outcome::JsonrpcError)
                    .unwrap_or_else(|| row.outcome.name().to_string())
            }),
        },
    }
}

/// `{mcp.method.name} {target}` (the tool or prompt), `{mcp.method.name}` without one; a
/// row that is no JSON-RPC message is named by its HTTP method and kind (`GET stream`).
pub fn span_name(row: &Exchange) -> String {
    let target = row
        .tool_name
        .as_deref()
        .or(row.inference.prompt_name.as_deref());
    match (row.rpc_method.as_deref(), target) {
        (Some(method), Some(target)) => format!("{method} {target}"),
        (Some(method), None) => method.to_string(),
        (None, _) => format!("{} {}", row.http_method, row.kind.name()),
    }
}

/// Microseconds since the epoch to nanoseconds; times before 1970 are clamped to 0.
pub fn us_to_ns(us: i64) -> u64 {
    u64::try_from(us).unwrap_or(0).saturating_mul(1000)
}

fn attributes(row: &Exchange) -> Vec<KeyValue> {
    let mut a = Vec::with_capacity(24);
    if let Some(m) = &row.rpc_method {
        a.push(KeyValue::str("mcp.method.name", m));
    }
    if let Some(id) = row.jsonrpc_id.as_deref() {
        a.push(KeyValue::str("jsonrpc.request.id", request_id_text(id)));
    }
    if let Some(sid) = &row.session_id {
        a.push(KeyValue::str("mcp.session.id", sid));
    }
    if let Some(v) = &row.protocol_version {
        a.push(KeyValue::str("mcp.protocol.version", v.clone()));
    }
    if row.rpc_method.as_deref() == Some("tools/call") {
        if let Some(tool) = &row.tool_name {
            a.push(KeyValue::str("gen_ai.tool.name", tool));
        }
        a.push(KeyValue::str("gen_ai.operation.name", "execute_tool"));
    }
    if let Some(prompt) = &row.inference.prompt_name {
        a.push(KeyValue::str("gen_ai.prompt.name", prompt));
    }
    if let Some(code) = row.error_code {
        a.push(KeyValue::str("rpc.response.status_code", code.to_string()));
    }
    if let Some(kind) = error_type(row) {
        a.push(KeyValue::str("error.type", kind));
    }
    a.push(KeyValue::str("network.transport", "tcp"));
    a.push(KeyValue::str("network.protocol.name", "http"));
    if let Some(v) = row.http_version {
        a.push(KeyValue::str(
            "network.protocol.version",
            v.strip_prefix("HTTP/").unwrap_or(v),
        ));
    }
    push_endpoint(&mut a, "server.address", "server.port", &row.server_addr);
    push_endpoint(&mut a, "client.address", "client.port", &row.client_addr);
    if let Some(status) = row.http_status {
        a.push(KeyValue::int(
            "http.response.status_code",
            i64::from(status),
        ));
    }
    let path = match row.path.split_once('?') {
        Some((p, _)) => Text::Owned(p.to_string()),
        None => Text::Shared(row.path.clone()),
    };
    a.push(KeyValue::str("url.path", path));

    a.push(KeyValue::str("mcp_trace.kind", row.kind.name()));
    a.push(KeyValue::bool(
        "mcp_trace.final_response",
        row.final_response,
    ));
    a.push(KeyValue::str("mcp_trace.stream_end", row.stream_end.name()));
    a.push(KeyValue::int(
        "mcp_trace.sse_events",
        i64::from(row.sse_events),
    ));
    a.push(KeyValue::str("mcp_trace.outcome", row.outcome.name()));
    a.push(KeyValue::str("mcp_trace.layer", row.outcome.layer().name()));
    a.push(KeyValue::int("mcp_trace.attempt", i64::from(row.attempt)));
    a.push(KeyValue::str(
        "mcp_trace.retry_origin",
        row.retry_origin.name(),
    ));
    if let Some(f) = row.retry_findings.text() {
        a.push(KeyValue::str("mcp_trace.retry_findings", f));
    }
    if let Some(e) = &row.retry_evidence {
        a.push(KeyValue::str("mcp_trace.retry_evidence", e.clone()));
    }
    a.push(KeyValue::str("mcp_trace.session_key", &row.session_key));
    a.push(KeyValue::str("mcp_trace.capture", &row.capture));
    if let Some(s) = row.tcp_stream {
        a.push(KeyValue::int("mcp_trace.tcp_stream", saturating_i64(s)));
    }
    a.push(KeyValue::int(
        "mcp_trace.exchange_id",
        saturating_i64(row.exchange_id),
    ));
    a
}

/// `error.type` on a failed row: the JSON-RPC error code when one came back, `tool_error`
/// for a tool result with `isError` (both as the conventions name them), else the outcome.
fn error_type(row: &Exchange) -> Option<String> {
    if !row.outcome.is_failure() {
        return None;
    }
    Some(match (row.outcome, row.error_code) {
        (Outcome::ToolError, _) => "tool_error".to_string(),
        (_, Some(code)) => code.to_string(),
        (outcome, None) => outcome.name().to_string(),
    })
}

/// The id as the conventions want it: a string id without its JSON quotes, a number as
/// written.
fn request_id_text(json: &str) -> String {
    if json.starts_with('"') {
        serde_json::from_str::<String>(json).unwrap_or_else(|_| json.to_string())
    } else {
        json.to_string()
    }
}

/// `ip:port`, `[ip]:port` or a HAR `host:port` as address and port attributes.
fn push_endpoint(a: &mut Vec<KeyValue>, address: &'static str, port: &'static str, text: &str) {
    // An IPv6 address carries its port only in brackets.
    let with_port = |h: &str| {
        if h.starts_with('[') {
            h.ends_with(']')
        } else {
            !h.is_empty() && !h.contains(':')
        }
    };
    let (host, port_no) = match text.rsplit_once(':') {
        Some((h, p)) if with_port(h) => match p.parse::<u16>() {
            Ok(n) => (h, Some(n)),
            Err(_) => (text, None),
        },
        _ => (text, None),
    };
    let host = host.trim_start_matches('[').trim_end_matches(']');
    if host.is_empty() {
        return;
    }
    a.push(KeyValue::str(address, host.to_string()));
    if let Some(n) = port_no {
        a.push(KeyValue::int(port, i64::from(n)));
    }
}

fn saturating_i64(v: u64) -> i64 {
    i64::try_from(v).unwrap_or(i64::MAX)
}
