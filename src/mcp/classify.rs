//! Outcome classification (report-schema.md section 3): the facts gathered
//! for one row -> `outcome`, `layer` and the error/result columns.
//!
//! The rules are evaluated in the table's order; the first that applies wins.
//! Pure functions of [`RowFacts`], so each rule is tested on its own.

use crate::http::BodyEnd;
use crate::mcp::names::{Kind, Layer, Outcome, StreamEnd};
use crate::mcp::retry::ToolsPage;
use serde_json::Value;
use std::borrow::Cow;

/// What the final JSON-RPC response of a request was.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Final {
    Result(ResultFacts),
    Error {
        code: i64,
        message: String,
    },
    /// Not a valid envelope (reason), though it answered this request.
    Invalid(String),
}

impl Final {
    /// A result, read at once for what classification needs (the tree is not kept).
    pub fn result(result: &Value) -> Final {
        Final::Result(ResultFacts::of(result))
    }
}

/// What classification reads of a `result` (mcp-wire.md 4.1-4.2), taken while the parsed
/// response is at hand, so a row holds a few fields rather than a JSON tree until its release.
#[derive(Debug, Clone, PartialEq, Default)]
pub(crate) struct ResultFacts {
    result_type: Option<Value>,
    is_error: Option<Value>,
    task_is_object: bool,
    content: Content,
    /// `protocolVersion` (an `initialize` result's negotiated version).
    pub protocol_version: Option<String>,
    /// A `tools/list` result's tools and their annotations, for the tool catalog.
    pub tools: Option<Box<ToolsPage>>,
}

/// The shape of a result's `content`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
enum Content {
    #[default]
    Missing,
    NotAnArray,
    /// Index of the first block without a string `type`.
    UntypedBlock(usize),
    Blocks,
}

impl ResultFacts {
    pub fn of(result: &Value) -> ResultFacts {
        let content = match result.get("content") {
            None => Content::Missing,
            Some(Value::Array(blocks)) => blocks
                .iter()
                .position(|b| b.get("type").and_then(Value::as_str).is_none())
                .map_or(Content::Blocks, Content::UntypedBlock),
            Some(_) => Content::NotAnArray,
        };
        ResultFacts {
            result_type: result.get("resultType").cloned(),
            is_error: result.get("isError").cloned(),
            task_is_object: result.get("task").is_some_and(Value::is_object),
            content,
            protocol_version: result
                .get("protocolVersion")
                .and_then(Value::as_str)
                .map(str::to_string),
            tools: ToolsPage::from_result(result).map(Box::new),
        }
    }
}

/// Everything the classifier needs about one row, borrowed from it (classifying copies
/// nothing, not even the final result).
#[derive(Debug, Clone)]
pub(crate) struct RowFacts<'a> {
    pub kind: Kind,
    pub rpc_method: Option<&'a str>,
    /// `tools/call` carried `params.task` (2025-11-25 task-augmented call).
    pub params_task: bool,
    /// Legacy HTTP+SSE POST: the 202 is not the outcome (report-schema.md section 3).
    pub legacy: bool,
    pub status: Option<u16>,
    pub reason: &'a str,
    pub media: Option<&'a str>,
    /// The HTTP exchange ended without a response head.
    pub no_response: Option<BodyEnd>,
    pub final_msg: Option<Cow<'a, Final>>,
    pub final_ts: Option<i64>,
    pub cancel_ts: Option<i64>,
    /// The client closed the connection (FIN/RST) before the HTTP response ended.
    pub client_closed: bool,
    /// The row's revision reads a client close as cancellation ([`close_is_cancellation`]).
    pub close_cancels: bool,
    pub malformed: Option<&'a str>,
    /// The SSE stream that should carry the response ended without it.
    pub stream_broken: Option<BodyEnd>,
    /// A stream row's own end (`None`: still open at the end of input).
    pub stream_row_end: Option<BodyEnd>,
    /// JSON-RPC error found in the body of an HTTP error (or of an `http` row).
    pub body_error: Option<(i64, &'a str)>,
    /// `http` rows: `Some(true)` when the request body is JSON (but not JSON-RPC),
    /// `Some(false)` when it is not JSON; `None` for requests without a JSON-RPC role (GET, OPTIONS...).
    pub request_body_json: Option<bool>,
}

/// Classifier output: the columns it decides.
#[derive(Debug, Clone, Default, PartialEq)]
pub(crate) struct Verdict {
    pub outcome: Outcome,
    pub layer: Layer,
    pub error_code: Option<i64>,
    pub error_message: Option<String>,
    pub result_type: Option<String>,
    pub is_error: Option<bool>,
    /// Extra anomalies found while classifying (e.g. `mcp.unknown_result_type`).
    pub anomalies: Vec<&'static str>,
}

fn verdict(outcome: Outcome) -> Verdict {
    Verdict {
        outcome,
        layer: outcome.layer(),
        ..Verdict::default()
    }
}

fn with_msg(mut v: Verdict, msg: impl Into<String>) -> Verdict {
    v.error_message = Some(msg.into());
    v
}

/// First revision whose clients cancel by closing the response stream
/// (mcp-wire.md 2.3 and 3.5; SPEC 2026-07-28 basic/patterns/cancellation.mdx).
pub(crate) const CLOSE_CANCELS_FROM: &str = "2026-07-28";

/// Does a client closing the response stream cancel the request in revision
/// `version`? Yes from 2026-07-28 on (the server MUST treat the disconnect
/// as cancellation); before it, no: "Disconnection SHOULD NOT be read as
/// cancellation" (R2-R4 Streamable HTTP, mcp-wire.md 2.2): the client sends
/// `notifications/cancelled` instead. Revisions are `YYYY-MM-DD` dates, so
/// later ones compare greater; anything else (drafts, garbage) is not assumed to.
pub(crate) fn close_is_cancellation(version: &str) -> bool {
    let v = version.trim();
    let date_shaped = v.len() == 10
        && v.bytes().enumerate().all(|(i, b)| match i {
            4 | 7 => b == b'-',
            _ => b.is_ascii_digit(),
        });
    date_shaped && v >= CLOSE_CANCELS_FROM
}

/// `application/json` or any `+json` media type.
pub(crate) fn is_json_media(media: Option<&str>) -> bool {
    media.is_some_and(|m| m == "application/json" || m.ends_with("+json"))
}

/// Apply report-schema.md section 3 in order.
pub(crate) fn classify(f: &RowFacts<'_>) -> Verdict {
    // The client closed the connection while this request still waited for
    // its answer: no final JSON-RPC response, and no HTTP error status (which
    // is itself the server's final answer, and wins over any body).
    let client_gave_up = f.kind == Kind::Request
        && f.client_closed
        && f.final_msg.is_none()
        && f.status.is_none_or(|s| (200..300).contains(&s));
    let mut v = classify_in_order(f, client_gave_up);
    if client_gave_up && v.outcome != Outcome::Cancelled {
        // Before 2026-07-28 a close is no cancellation; the row keeps its
        // outcome (STREAM_INCOMPLETE, NO_RESPONSE, ...) and says who closed.
        v.anomalies.push(if f.status.is_some() {
            "mcp.client_closed_stream"
        } else {
            "mcp.client_closed_before_response"
        });
    }
    v
}

fn classify_in_order(f: &RowFacts<'_>, client_gave_up: bool) -> Verdict {
    let final_ts = f.final_ts.unwrap_or(i64::MAX);
    // 1. CANCELLED: a notifications/cancelled naming the id before the final
    //    response, or (2026-07-28) the client closed the response stream first.
    if f.kind == Kind::Request
        && let Some(c) = f.cancel_ts
        && (f.final_msg.is_none() || c < final_ts)
    {
        return with_msg(verdict(Outcome::Cancelled), "cancelled by the client");
    }
    if client_gave_up && f.close_cancels {
        return with_msg(
            verdict(Outcome::Cancelled),
            "the client closed the response stream (cancellation since 2026-07-28)",
        );
    }
    // 2. NO_RESPONSE.
    if let Some(end) = f.no_response {
        return with_msg(
            verdict(Outcome::NoResponse),
            format!("no HTTP response ({})", StreamEnd::from(end)),
        );
    }
    let Some(status) = f.status else {
        return with_msg(verdict(Outcome::NoResponse), "no HTTP response");
    };
    // 3. HTTP_ERROR: the status wins over any body.
    if !(200..300).contains(&status) {
        let mut v = verdict(Outcome::HttpError);
        match &f.body_error {
            Some((code, msg)) => {
                v.error_code = Some(*code);
                v.error_message = Some(msg.to_string());
            }
            None => v.error_message = Some(format!("HTTP {status} {}", f.reason).trim().into()),
        }
        return v;
    }
    match f.kind {
        // 4. ACCEPTED.
        Kind::Notification | Kind::Response | Kind::SessionEnd => {
            return verdict(Outcome::Accepted);
        }
        // Any other request to an MCP endpoint (the reading of samples/generator/truth.py):
        // a POST whose body is not JSON / not JSON-RPC fails at the protocol layer even
        // when the server said 2xx; other methods (OPTIONS preflight, plain GET) are ACCEPTED.
        Kind::Http => {
            let mut v = match f.request_body_json {
                None => verdict(Outcome::Accepted),
                Some(false) => {
                    with_msg(verdict(Outcome::MalformedJson), "request body is not JSON")
                }
                Some(true) => with_msg(
                    verdict(Outcome::InvalidEnvelope),
                    "request body is not a JSON-RPC message",
                ),
            };
            if let Some((code, _)) = &f.body_error {
                v.error_code = Some(*code);
            }
            return v;
        }
        Kind::Stream => return classify_stream(f),
        Kind::Request => {}
    }
    // 5. UNEXPECTED_RESPONSE (legacy POSTs: the 202 is expected, the answer is on the GET stream).
    if !f.legacy {
        if status == 202 {
            return with_msg(
                verdict(Outcome::UnexpectedResponse),
                "HTTP 202 to a request",
            );
        }
        let media = f.media;
        if !is_json_media(media) && media != Some("text/event-stream") {
            return with_msg(
                verdict(Outcome::UnexpectedResponse),
                format!(
                    "media type {} is neither JSON nor SSE",
                    media.unwrap_or("(none)")
                ),
            );
        }
    }
    let Some(final_msg) = &f.final_msg else {
        // 6. MALFORMED_JSON, 8. STREAM_INCOMPLETE.
        if let Some(m) = &f.malformed {
            return with_msg(verdict(Outcome::MalformedJson), *m);
        }
        let end = f
            .stream_broken
            .map_or(StreamEnd::CaptureEnd, StreamEnd::from);
        return with_msg(
            verdict(Outcome::StreamIncomplete),
            format!("stream ended ({end}) before the final response"),
        );
    };
    match &**final_msg {
        // 7. INVALID_ENVELOPE.
        Final::Invalid(reason) => with_msg(verdict(Outcome::InvalidEnvelope), reason.clone()),
        // 9. JSONRPC_ERROR.
        Final::Error { code, message } => {
            let mut v = verdict(Outcome::JsonrpcError);
            v.error_code = Some(*code);
            v.error_message = Some(message.clone());
            v
        }
        Final::Result(result) => classify_result(f, result),
    }
}

fn classify_stream(f: &RowFacts<'_>) -> Verdict {
    if f.media != Some("text/event-stream") {
        return with_msg(
            verdict(Outcome::UnexpectedResponse),
            format!(
                "stream request answered with {}",
                f.media.unwrap_or("(no media type)")
            ),
        );
    }
    match f.stream_row_end {
        None | Some(BodyEnd::CaptureEnd) => verdict(Outcome::StreamOpen),
        // Events were lost in a gap of the capture.
        Some(BodyEnd::Gap) => with_msg(verdict(Outcome::StreamIncomplete), "stream ended (gap)"),
        // Closed before the end of the capture (by either side, e.g. after replaying a
        // resumed response or at client exit): no JSON-RPC answer is expected on a GET
        // stream, so a 2xx that opened it is ACCEPTED (samples/README.md reads it so too).
        Some(BodyEnd::Complete | BodyEnd::Fin | BodyEnd::Rst | BodyEnd::StreamReset) => {
            verdict(Outcome::Accepted)
        }
    }
}

fn classify_result(f: &RowFacts<'_>, result: &ResultFacts) -> Verdict {
    let rt = result.result_type.as_ref();
    let result_type = rt.map(|v| match v {
        Value::String(s) => s.clone(),
        other => other.to_string(),
    });
    let is_tool = f.rpc_method == Some("tools/call");
    let is_error = if is_tool {
        result.is_error.as_ref().and_then(Value::as_bool)
    } else {
        None
    };
    let done = |mut v: Verdict| {
        v.result_type = result_type.clone();
        v.is_error = is_error;
        v
    };
    // 10-11. Interaction outcomes (mcp-wire.md 4.2: absent resultType means complete).
    match rt.and_then(Value::as_str) {
        Some("input_required") => return done(verdict(Outcome::InputRequired)),
        Some("task") => return done(verdict(Outcome::TaskCreated)),
        _ => {}
    }
    // 2025-11-25 task-augmented call: CreateTaskResult {task} instead of a CallToolResult.
    if f.params_task && rt.is_none() && result.task_is_object {
        return done(verdict(Outcome::TaskCreated));
    }
    let unknown_rt = match rt {
        None => false,
        Some(Value::String(s)) => s != "complete",
        Some(_) => true,
    };
    if !is_tool {
        let mut v = done(verdict(Outcome::RpcSuccess));
        if unknown_rt {
            v.anomalies.push("mcp.unknown_result_type");
        }
        return v;
    }
    // 12. INVALID_TOOL_RESULT (CallToolResult shape, mcp-wire.md 4.1).
    if let Some(why) = tool_result_problem(result, unknown_rt) {
        return done(with_msg(verdict(Outcome::InvalidToolResult), why));
    }
    if is_error == Some(true) {
        return done(verdict(Outcome::ToolError));
    }
    done(verdict(Outcome::ToolSuccess))
}

fn tool_result_problem(result: &ResultFacts, unknown_rt: bool) -> Option<String> {
    if unknown_rt {
        return Some(format!(
            "unknown resultType {}",
            result
                .result_type
                .as_ref()
                .map(Value::to_string)
                .unwrap_or_default()
        ));
    }
    match result.content {
        Content::Missing => return Some("content is missing".into()),
        Content::NotAnArray => return Some("content is not an array".into()),
        Content::UntypedBlock(i) => return Some(format!("content[{i}] has no string type")),
        Content::Blocks => {}
    }
    match result.is_error {
        None | Some(Value::Bool(_)) => None,
        Some(_) => Some("isError is not a boolean".into()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn facts() -> RowFacts<'static> {
        RowFacts {
            kind: Kind::Request,
            rpc_method: Some("tools/call"),
            params_task: false,
            legacy: false,
            status: Some(200),
            reason: "OK",
            media: Some("application/json"),
            no_response: None,
            final_msg: fin(Final::result(
                &json!({"content":[{"type":"text","text":"x"}]}),
            )),
            final_ts: Some(10),
            cancel_ts: None,
            client_closed: false,
            close_cancels: false,
            malformed: None,
            stream_broken: None,
            stream_row_end: None,
            body_error: None,
            request_body_json: None,
        }
    }

    fn fin(f: Final) -> Option<Cow<'static, Final>> {
        Some(Cow::Owned(f))
    }

    fn outcome(f: &RowFacts<'_>) -> Outcome {
        classify(f).outcome
    }

    #[test]
    fn tool_results() {
        let mut f = facts();
        assert_eq!(outcome(&f), "TOOL_SUCCESS");
        f.final_msg = fin(Final::result(&json!({"content":[],"isError":true})));
        let v = classify(&f);
        assert_eq!(
            (v.outcome.name(), v.layer.name(), v.is_error),
            ("TOOL_ERROR", "application", Some(true))
        );
        f.final_msg = fin(Final::result(&json!({"content":"not-an-array"})));
        assert_eq!(outcome(&f), "INVALID_TOOL_RESULT");
        f.final_msg = fin(Final::result(&json!({"content":[],"isError":"yes"})));
        assert_eq!(outcome(&f), "INVALID_TOOL_RESULT");
        f.final_msg = fin(Final::result(&json!({"content":[],"resultType":"weird"})));
        assert_eq!(outcome(&f), "INVALID_TOOL_RESULT");
        f.final_msg = fin(Final::result(
            &json!({"content":[],"resultType":"complete"}),
        ));
        let v = classify(&f);
        assert_eq!(
            (v.outcome.name(), v.result_type.as_deref()),
            ("TOOL_SUCCESS", Some("complete"))
        );
        f.final_msg = fin(Final::result(
            &json!({"resultType":"input_required","requestState":"s"}),
        ));
        assert_eq!(classify(&f).layer, "interaction");
        assert_eq!(outcome(&f), "INPUT_REQUIRED");
        f.final_msg = fin(Final::result(&json!({"resultType":"task","taskId":"t"})));
        assert_eq!(outcome(&f), "TASK_CREATED");
    }

    #[test]
    fn order_of_rules() {
        let mut f = facts();
        f.cancel_ts = Some(5);
        assert_eq!(outcome(&f), "CANCELLED");
        f.cancel_ts = Some(11);
        assert_eq!(
            outcome(&f),
            "TOOL_SUCCESS",
            "cancel after the final response"
        );
        f.cancel_ts = None;
        f.status = Some(500);
        assert_eq!(outcome(&f), "HTTP_ERROR");
        f.body_error = Some((-32603, "boom"));
        assert_eq!(classify(&f).error_code, Some(-32603));
        f.status = Some(202);
        assert_eq!(outcome(&f), "UNEXPECTED_RESPONSE");
        f.legacy = true;
        assert_eq!(outcome(&f), "TOOL_SUCCESS", "legacy 202 is not the outcome");
        f.legacy = false;
        f.status = Some(200);
        f.media = Some("text/html");
        assert_eq!(outcome(&f), "UNEXPECTED_RESPONSE");
        f.media = Some("text/event-stream");
        f.final_msg = None;
        f.stream_broken = Some(BodyEnd::Rst);
        assert_eq!(outcome(&f), "STREAM_INCOMPLETE");
        f.malformed = Some("not JSON");
        assert_eq!(outcome(&f), "MALFORMED_JSON");
        f.final_msg = fin(Final::Invalid("both result and error".into()));
        assert_eq!(outcome(&f), "INVALID_ENVELOPE");
        f.final_msg = fin(Final::Error {
            code: -32602,
            message: "Invalid params".into(),
        });
        let v = classify(&f);
        assert_eq!(
            (v.outcome.name(), v.error_code),
            ("JSONRPC_ERROR", Some(-32602))
        );
        f.no_response = Some(BodyEnd::Rst);
        assert_eq!(outcome(&f), "NO_RESPONSE");
    }

    #[test]
    fn close_cancels_from_2026_07_28() {
        for (v, want) in [
            ("2026-07-28", true),
            (" 2026-07-28", true),
            ("2027-03-01", true),
            ("2025-11-25", false),
            ("2024-11-05", false),
            ("DRAFT-2026-v1", false),
            ("2026-07-2x", false),
            ("", false),
        ] {
            assert_eq!(close_is_cancellation(v), want, "{v:?}");
        }
    }

    #[test]
    fn client_close_rule() {
        let mut f = facts();
        f.media = Some("text/event-stream");
        f.final_msg = None;
        f.final_ts = None;
        f.stream_broken = Some(BodyEnd::Fin);
        f.client_closed = true;
        f.close_cancels = true;
        let v = classify(&f);
        assert_eq!(
            (v.outcome.name(), v.layer.name()),
            ("CANCELLED", "protocol")
        );
        assert!(v.anomalies.is_empty());
        // Before 2026-07-28: the outcome stays, the close is named.
        f.close_cancels = false;
        let v = classify(&f);
        assert_eq!(v.outcome.name(), "STREAM_INCOMPLETE");
        assert_eq!(v.anomalies, ["mcp.client_closed_stream"]);
        f.status = None;
        f.no_response = Some(BodyEnd::Rst);
        let v = classify(&f);
        assert_eq!(v.outcome.name(), "NO_RESPONSE");
        assert_eq!(v.anomalies, ["mcp.client_closed_before_response"]);
        f.close_cancels = true;
        assert_eq!(outcome(&f), "CANCELLED", "evaluated before NO_RESPONSE");
        // An HTTP error status, or the final response, was the answer.
        f.no_response = None;
        f.status = Some(500);
        assert_eq!(outcome(&f), "HTTP_ERROR");
        f.status = Some(200);
        f.final_msg = fin(Final::result(&json!({"content":[]})));
        let v = classify(&f);
        assert_eq!(v.outcome.name(), "TOOL_SUCCESS");
        assert!(v.anomalies.is_empty());
        // Only requests are cancelled.
        f.final_msg = None;
        f.kind = Kind::Notification;
        assert_eq!(outcome(&f), "ACCEPTED");
    }

    #[test]
    fn other_kinds() {
        let mut f = facts();
        f.kind = Kind::Notification;
        f.status = Some(202);
        f.media = None;
        assert_eq!(outcome(&f), "ACCEPTED");
        f.kind = Kind::Stream;
        f.media = Some("text/event-stream");
        f.stream_row_end = Some(BodyEnd::CaptureEnd);
        assert_eq!(outcome(&f), "STREAM_OPEN");
        f.stream_row_end = Some(BodyEnd::Gap);
        assert_eq!(outcome(&f), "STREAM_INCOMPLETE");
        f.stream_row_end = Some(BodyEnd::Fin);
        assert_eq!(outcome(&f), "ACCEPTED");
        f.status = Some(405);
        assert_eq!(outcome(&f), "HTTP_ERROR");
        f.kind = Kind::Http;
        f.status = Some(204);
        assert_eq!(outcome(&f), "ACCEPTED");
        f.request_body_json = Some(false);
        assert_eq!(outcome(&f), "MALFORMED_JSON");
        f.request_body_json = Some(true);
        assert_eq!(outcome(&f), "INVALID_ENVELOPE");
        f.kind = Kind::Request;
        f.rpc_method = Some("tools/list");
        f.status = Some(200);
        f.media = Some("application/json");
        f.final_msg = fin(Final::result(&json!({"tools":[]})));
        assert_eq!(outcome(&f), "RPC_SUCCESS");
    }
}
