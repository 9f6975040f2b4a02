//! One exchange row as one span (report-schema.md section 6, with the names of the
//! OpenTelemetry semantic conventions for MCP, `docs/gen-ai/mcp.md`).

use super::ids::{RunKey, session_root_span_id, session_trace_id};
use super::model::{
    Event, Hex, KeyValue, Link, SPAN_KIND_CLIENT, STATUS_ERROR, STATUS_UNSET, Span, Status, U64Text,
};
use crate::mcp::retry::FindingSet;
use crate::mcp::{Exchange, Kind, Outcome, RetryOrigin, SseMark, StreamEnd};

/// An attribute's name, with the JSON that opens the attribute (`{"key":NAME,"value":{`)
/// made once, at compile time.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Key {
    pub name: &'static str,
    pub json_head: &'static str,
}

/// The [`Key`] of an attribute name (a literal with nothing to escape in JSON).
macro_rules! key {
    ($name:literal) => {
        Key {
            name: $name,
            json_head: concat!("{\"key\":\"", $name, "\",\"value\":{"),
        }
    };
}

/// Where a span sits: its trace, and its parent (the caller's span, or the session root).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Placement {
    pub trace_id: [u8; 16],
    pub parent: [u8; 8],
    /// Under the caller's span from `_meta.traceparent` (else under the session root).
    pub joined: bool,
}

impl Placement {
    /// Under the caller's span when the request carried a valid `traceparent`.
    pub fn joined(row: &Exchange) -> Option<Placement> {
        row.inference.trace_parent.map(|tp| Placement {
            trace_id: tp.trace_id,
            parent: tp.span_id,
            joined: true,
        })
    }

    /// In the session's trace, under its root span.
    pub fn in_session(trace_id: [u8; 16], root: [u8; 8]) -> Placement {
        Placement {
            trace_id,
            parent: root,
            joined: false,
        }
    }

    /// The caller's trace when the request carried a valid `traceparent`, else its
    /// session's trace under the session root span.
    pub fn of(row: &Exchange) -> Placement {
        Placement::joined(row).unwrap_or_else(|| {
            Placement::in_session(
                session_trace_id(&row.session_key),
                session_root_span_id(&row.session_key),
            )
        })
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

/// The row's texts a span is made of, in the order of [`Field`].
const FIELDS: usize = 14;

/// A text of the row, copied into a [`SpanDraft`]'s buffer.
#[derive(Debug, Clone, Copy)]
enum Field {
    Capture,
    SessionKey,
    RpcMethod,
    JsonrpcId,
    SessionId,
    ProtocolVersion,
    ToolName,
    PromptName,
    HttpMethod,
    Path,
    ServerAddr,
    ClientAddr,
    JsonrpcErrorMessage,
    RetryEvidence,
}

/// What the span of a row is made of, taken from the row on the analysis thread: names,
/// attributes and texts are written from it on the encoder's thread (`json::encode_draft`,
/// [`SpanDraft::to_span`]).
/// The row's texts are copied into one buffer: one allocation per row, and no reference
/// count shared with the row across the two threads.
#[derive(Debug, Clone)]
pub struct SpanDraft {
    pub trace_id: [u8; 16],
    pub span_id: [u8; 8],
    pub parent: [u8; 8],
    pub start_ns: u64,
    pub end_ns: u64,
    /// Added once resolved.
    pub links: Vec<Link>,
    texts: String,
    /// Where each [`Field`] lies in `texts` (`None`: the row has none).
    slots: [Option<(u32, u32)>; FIELDS],
    exchange_id: u64,
    kind: Kind,
    http_version: Option<&'static str>,
    http_status: Option<u16>,
    tcp_stream: Option<u64>,
    outcome: Outcome,
    error_code: Option<i64>,
    final_response: bool,
    stream_end: StreamEnd,
    sse_events: u32,
    sse_marks: Vec<SseMark>,
    sse_marks_dropped: u32,
    attempt: u32,
    retry_origin: RetryOrigin,
    retry_findings: FindingSet,
    hop: u8,
    forwarded_from: Option<u64>,
    fault_hop: Option<u8>,
}

impl SpanDraft {
    /// The draft of `row`'s span, placed by `place`, without links.
    pub fn of(run: &RunKey, row: &Exchange, place: Placement) -> SpanDraft {
        let start_ns = us_to_ns(row.ts_request);
        let end_us = row
            .ts_response
            .unwrap_or(row.inference.ts_request_end)
            .max(row.ts_request);
        let fields: [Option<&str>; FIELDS] = [
            Some(&row.capture),
            Some(&row.session_key),
            row.rpc_method.as_deref(),
            row.jsonrpc_id.as_deref(),
            row.session_id.as_deref(),
            row.protocol_version.as_deref(),
            row.tool_name.as_deref(),
            row.inference.prompt_name.as_deref(),
            Some(&row.http_method),
            Some(&row.path),
            Some(&row.server_addr),
            Some(&row.client_addr),
            row.error_message
                .as_deref()
                .filter(|_| row.outcome == Outcome::JsonrpcError),
            row.retry_evidence.as_deref(),
        ];
        let mut texts = String::with_capacity(fields.iter().flatten().map(|t| t.len()).sum());
        let slots = fields.map(|field| {
            field.and_then(|text| {
                let start = u32::try_from(texts.len()).ok()?;
                texts.push_str(text);
                Some((start, u32::try_from(texts.len()).ok()?))
            })
        });
        SpanDraft {
            trace_id: place.trace_id,
            span_id: run.span_id(row.exchange_id),
            parent: place.parent,
            start_ns,
            end_ns: us_to_ns(end_us).max(start_ns),
            links: Vec::new(),
            texts,
            slots,
            exchange_id: row.exchange_id,
            kind: row.kind,
            http_version: row.http_version,
            http_status: row.http_status,
            tcp_stream: row.tcp_stream,
            outcome: row.outcome,
            error_code: row.error_code,
            final_response: row.final_response,
            stream_end: row.stream_end,
            sse_events: row.sse_events,
            sse_marks: row.inference.sse_marks.clone(),
            sse_marks_dropped: row.inference.sse_marks_dropped,
            attempt: row.attempt,
            retry_origin: row.retry_origin,
            retry_findings: row.retry_findings,
            hop: row.hop.0,
            forwarded_from: row.forwarded_from,
            fault_hop: row.fault_hop,
        }
    }

    /// The row's text `field`, if it had one.
    fn text(&self, field: Field) -> Option<&str> {
        let (start, end) = (*self.slots.get(field as usize)?)?;
        self.texts.get(start as usize..end as usize)
    }

    /// A text every row has (empty if it could not be kept).
    fn text_or_empty(&self, field: Field) -> &str {
        self.text(field).unwrap_or_default()
    }

    pub fn sse_marks(&self) -> &[SseMark] {
        &self.sse_marks
    }

    pub fn sse_marks_dropped(&self) -> u32 {
        self.sse_marks_dropped
    }

    /// The span's name as the pieces it is joined from.
    pub fn name(&self) -> SpanName<'_> {
        SpanName::of(
            self.text(Field::RpcMethod),
            self.text(Field::ToolName)
                .or_else(|| self.text(Field::PromptName)),
            self.text_or_empty(Field::HttpMethod),
            self.kind,
        )
    }

    /// `STATUS_CODE_ERROR` on a failed row, else `UNSET`.
    pub fn status_code(&self) -> u8 {
        if self.outcome.is_failure() {
            STATUS_ERROR
        } else {
            STATUS_UNSET
        }
    }

    /// The status message of a failed span: the JSON-RPC error's message when there is one
    /// (as the conventions ask), else the outcome.
    pub fn status_message(&self) -> Option<&str> {
        self.outcome.is_failure().then(|| {
            self.text(Field::JsonrpcErrorMessage)
                .unwrap_or(self.outcome.name())
        })
    }

    /// The span, with its SSE events.
    pub fn to_span(&self) -> Span {
        let mut attributes = Vec::with_capacity(24);
        self.write_attributes(&mut attributes);
        Span {
            trace_id: Hex(self.trace_id),
            span_id: Hex(self.span_id),
            parent_span_id: Some(Hex(self.parent)),
            name: self.name().to_string(),
            kind: SPAN_KIND_CLIENT,
            start_time_unix_nano: U64Text(self.start_ns),
            end_time_unix_nano: U64Text(self.end_ns),
            attributes,
            events: self
                .sse_marks
                .iter()
                .map(|m| Event {
                    time_unix_nano: U64Text(us_to_ns(m.ts_us)),
                    name: m.name.to_string(),
                })
                .collect(),
            dropped_events_count: self.sse_marks_dropped,
            status: Status {
                code: self.status_code(),
                message: self.status_message().map(str::to_string),
            },
            links: self.links.clone(),
        }
    }

    /// The span's attributes, in order, into `a`: the one list both encodings write.
    pub fn write_attributes(&self, a: &mut impl AttributeSink) {
        let rpc_method = self.text(Field::RpcMethod);
        if let Some(m) = rpc_method {
            a.str(key!("mcp.method.name"), m);
        }
        if let Some(id) = self.text(Field::JsonrpcId) {
            a.str(key!("jsonrpc.request.id"), &request_id_text(id));
        }
        if let Some(sid) = self.text(Field::SessionId) {
            a.str(key!("mcp.session.id"), sid);
        }
        if let Some(v) = self.text(Field::ProtocolVersion) {
            a.str(key!("mcp.protocol.version"), v);
        }
        if rpc_method == Some("tools/call") {
            if let Some(tool) = self.text(Field::ToolName) {
                a.str(key!("gen_ai.tool.name"), tool);
            }
            a.str(key!("gen_ai.operation.name"), "execute_tool");
        }
        if let Some(prompt) = self.text(Field::PromptName) {
            a.str(key!("gen_ai.prompt.name"), prompt);
        }
        let mut digits = itoa::Buffer::new();
        let code = self.error_code.map(|code| digits.format(code));
        if let Some(code) = code {
            a.str(key!("rpc.response.status_code"), code);
        }
        if self.outcome.is_failure() {
            // The JSON-RPC error code when one came back, `tool_error` for a tool result
            // with `isError` (both as the conventions name them), else the outcome.
            let kind = match (self.outcome, code) {
                (Outcome::ToolError, _) => "tool_error",
                (_, Some(code)) => code,
                (outcome, None) => outcome.name(),
            };
            a.str(key!("error.type"), kind);
        }
        a.str(key!("network.transport"), "tcp");
        a.str(key!("network.protocol.name"), "http");
        if let Some(v) = self.http_version {
            a.str(
                key!("network.protocol.version"),
                v.strip_prefix("HTTP/").unwrap_or(v),
            );
        }
        write_endpoint(
            a,
            key!("server.address"),
            key!("server.port"),
            self.text_or_empty(Field::ServerAddr),
        );
        write_endpoint(
            a,
            key!("client.address"),
            key!("client.port"),
            self.text_or_empty(Field::ClientAddr),
        );
        if let Some(status) = self.http_status {
            a.int(key!("http.response.status_code"), i64::from(status));
        }
        let path = self.text_or_empty(Field::Path);
        a.str(
            key!("url.path"),
            path.split_once('?').map_or(path, |(p, _)| p),
        );

        a.str(key!("mcp_trace.kind"), self.kind.name());
        a.bool(key!("mcp_trace.final_response"), self.final_response);
        // Only a response that was a stream has a stream end and events.
        if self.stream_end != StreamEnd::None || self.sse_events > 0 {
            a.str(key!("mcp_trace.stream_end"), self.stream_end.name());
            a.int(key!("mcp_trace.sse_events"), i64::from(self.sse_events));
        }
        a.str(key!("mcp_trace.outcome"), self.outcome.name());
        a.str(key!("mcp_trace.layer"), self.outcome.layer().name());
        a.int(key!("mcp_trace.attempt"), i64::from(self.attempt));
        a.str(key!("mcp_trace.retry_origin"), self.retry_origin.name());
        if let Some(f) = self.retry_findings.text() {
            a.str(key!("mcp_trace.retry_findings"), f);
        }
        a.int(key!("mcp_trace.hop"), i64::from(self.hop));
        if let Some(from) = self.forwarded_from {
            a.int(key!("mcp_trace.forwarded_from"), saturating_i64(from));
        }
        if let Some(f) = self.fault_hop {
            a.int(key!("mcp_trace.fault_hop"), i64::from(f));
        }
        if let Some(e) = self.text(Field::RetryEvidence) {
            a.str(key!("mcp_trace.retry_evidence"), e);
        }
        a.str(
            key!("mcp_trace.session_key"),
            self.text_or_empty(Field::SessionKey),
        );
        a.str(
            key!("mcp_trace.capture"),
            self.text_or_empty(Field::Capture),
        );
        if let Some(s) = self.tcp_stream {
            a.int(key!("mcp_trace.tcp_stream"), saturating_i64(s));
        }
        a.int(
            key!("mcp_trace.exchange_id"),
            saturating_i64(self.exchange_id),
        );
    }
}

/// Where a span's attributes are written: the JSON writer, or a list for the protobuf
/// encoding.
pub trait AttributeSink {
    fn str(&mut self, key: Key, value: &str);
    fn int(&mut self, key: Key, value: i64);
    fn bool(&mut self, key: Key, value: bool);
}

impl AttributeSink for Vec<KeyValue> {
    fn str(&mut self, key: Key, value: &str) {
        self.push(KeyValue::str(key.name, value.to_string()));
    }

    fn int(&mut self, key: Key, value: i64) {
        self.push(KeyValue::int(key.name, value));
    }

    fn bool(&mut self, key: Key, value: bool) {
        self.push(KeyValue::bool(key.name, value));
    }
}

/// A span's name as the pieces it is written from: `head`, and `tail` after a space.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SpanName<'a> {
    pub head: &'a str,
    pub tail: Option<&'a str>,
}

impl<'a> SpanName<'a> {
    /// `{mcp.method.name} {target}` (the tool or prompt), `{mcp.method.name}` without one;
    /// a row that is no JSON-RPC message is named by its HTTP method and kind (`GET
    /// stream`).
    pub fn of(
        rpc_method: Option<&'a str>,
        target: Option<&'a str>,
        http_method: &'a str,
        kind: Kind,
    ) -> SpanName<'a> {
        match (rpc_method, target) {
            (Some(head), tail) => SpanName { head, tail },
            (None, _) => SpanName {
                head: http_method,
                tail: Some(kind.name()),
            },
        }
    }
}

impl std::fmt::Display for SpanName<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.head)?;
        if let Some(tail) = self.tail {
            write!(f, " {tail}")?;
        }
        Ok(())
    }
}

/// Microseconds since the epoch to nanoseconds; times before 1970 are clamped to 0.
pub fn us_to_ns(us: i64) -> u64 {
    u64::try_from(us).unwrap_or(0).saturating_mul(1000)
}

/// The id as the conventions want it: a string id without its JSON quotes, a number as
/// written.
fn request_id_text(json: &str) -> std::borrow::Cow<'_, str> {
    if json.starts_with('"') {
        serde_json::from_str::<String>(json)
            .map_or(std::borrow::Cow::Borrowed(json), std::borrow::Cow::Owned)
    } else {
        std::borrow::Cow::Borrowed(json)
    }
}

/// `ip:port`, `[ip]:port` or a HAR `host:port` as address and port attributes.
fn write_endpoint(a: &mut impl AttributeSink, address: Key, port: Key, text: &str) {
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
    a.str(address, host);
    if let Some(n) = port_no {
        a.int(port, i64::from(n));
    }
}

fn saturating_i64(v: u64) -> i64 {
    i64::try_from(v).unwrap_or(i64::MAX)
}
