//! One test (or more) per outcome (report-schema.md section 3).

use super::*;

#[test]
fn outcome_cancelled() {
    let mut r = Run::new();
    let sid = [("mcp-session-id", "S")];
    let (mut c, mut d) = (r.conn(), r.conn());
    r.post(&mut c, &sid, &call(7, "slow"));
    r.sse_head(&c);
    r.post(&mut d, &sid, r#"{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":7,"reason":"timeout"}}"#);
    r.respond(&d, 202, "", "");
    r.event(&c, &ok_tool(7)); // a late answer does not undo the cancellation
    r.end(&c, BodyEnd::Complete);
    let (rows, _) = r.finish();
    assert_eq!(
        (rows[0].outcome.name(), rows[0].layer.name()),
        ("CANCELLED", "protocol")
    );
    assert!(rows[0].final_response);
    assert_eq!(rows[1].outcome.name(), "ACCEPTED");
}

#[test]
fn outcome_cancel_after_response_is_not_cancelled() {
    let mut r = Run::new();
    let sid = [("mcp-session-id", "S")];
    let mut c = r.conn();
    r.post(&mut c, &sid, &call(7, "x"));
    r.json(&c, 200, &ok_tool(7));
    r.post(
        &mut c,
        &sid,
        r#"{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":7}}"#,
    );
    r.respond(&c, 202, "", "");
    let (rows, stats) = r.finish();
    assert_eq!(rows[0].outcome.name(), "TOOL_SUCCESS");
    assert!(has_anomaly(&rows[1], "mcp.cancel_without_open_request"));
    assert_eq!(
        stats.anomalies.get("mcp.cancel_without_open_request"),
        Some(&1)
    );
}

#[test]
fn outcome_http_error_wins_over_body() {
    let e = tool_json(500, "application/json", &ok_tool(1));
    assert_eq!(
        (e.outcome.name(), e.layer.name()),
        ("HTTP_ERROR", "transport")
    );
    assert_eq!(e.error_code, None);
    assert_eq!(e.http_status, Some(500));
    let e = tool_json(
        404,
        "application/json",
        r#"{"jsonrpc":"2.0","id":null,"error":{"code":-32001,"message":"Session not found"}}"#,
    );
    assert_eq!(
        (e.outcome.name(), e.error_code),
        ("HTTP_ERROR", Some(-32001))
    );
    assert_eq!(e.error_message.as_deref(), Some("Session not found"));
    assert!(!e.final_response);
    let e = tool_json(503, "", "");
    assert_eq!(e.error_message.as_deref(), Some("HTTP 503 R"));
}

#[test]
fn outcome_accepted_with_body_is_an_anomaly() {
    let mut r = Run::new();
    let mut c = r.conn();
    r.post(
        &mut c,
        &[],
        r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#,
    );
    r.respond(&c, 202, "application/json", r#"{"ok":true}"#);
    let (rows, _) = r.finish();
    assert_eq!(rows[0].outcome.name(), "ACCEPTED");
    assert!(has_anomaly(&rows[0], "mcp.body_on_accepted"));
}

#[test]
fn outcome_unexpected_response() {
    let e = tool_json(202, "", "");
    assert_eq!(
        (e.outcome.name(), e.layer.name()),
        ("UNEXPECTED_RESPONSE", "protocol")
    );
    let e = tool_json(200, "text/html", "<html>");
    assert_eq!(e.outcome.name(), "UNEXPECTED_RESPONSE");
    assert_eq!(e.content_type.as_deref(), Some("text/html"));
}

#[test]
fn outcome_malformed_json() {
    let e = tool_json(200, "application/json", r#"{"jsonrpc":"2.0","id":1,"res"#);
    assert_eq!(
        (e.outcome.name(), e.layer.name()),
        ("MALFORMED_JSON", "protocol")
    );
    assert!(!e.final_response);
    let e = tool_json(200, "application/json", "");
    assert_eq!(e.outcome.name(), "MALFORMED_JSON");
    // On an SSE stream: the data that should carry the response is not JSON.
    let mut r = Run::new();
    let mut c = r.conn();
    r.post(&mut c, &[], &call(1, "x"));
    r.sse_head(&c);
    r.event(&c, "{not json");
    r.end(&c, BodyEnd::Complete);
    let (rows, stats) = r.finish();
    assert_eq!(rows[0].outcome.name(), "MALFORMED_JSON");
    assert_eq!(stats.anomalies.get("rpc.sse_data_not_json"), Some(&1));
}

#[test]
fn outcome_invalid_envelope() {
    for (body, why) in [
        (
            r#"{"jsonrpc":"2.0","id":1,"result":{"content":[]},"error":{"code":1,"message":"m"}}"#,
            "both result and error",
        ),
        (
            r#"{"jsonrpc":"2.0","id":2,"result":{"content":[]}}"#,
            "response id 2 does not match request id 1",
        ),
        (
            r#"{"jsonrpc":"1.0","id":1,"result":{"content":[]}}"#,
            "jsonrpc is not \"2.0\"",
        ),
        (r#"{"jsonrpc":"2.0","id":1}"#, "neither result nor error"),
        (
            r#"{"jsonrpc":"2.0","id":1,"error":{"code":"x"}}"#,
            "bad error shape (code must be an integer, message a string)",
        ),
    ] {
        let e = tool_json(200, "application/json", body);
        assert_eq!(
            (e.outcome.name(), e.layer.name()),
            ("INVALID_ENVELOPE", "protocol"),
            "{body}"
        );
        assert_eq!(e.error_message.as_deref(), Some(why));
        assert!(e.final_response);
    }
}

#[test]
fn outcome_stream_incomplete_for_every_end() {
    for end in [
        BodyEnd::Fin,
        BodyEnd::Rst,
        BodyEnd::Gap,
        BodyEnd::CaptureEnd,
        BodyEnd::Complete,
    ] {
        let mut r = Run::new();
        let mut c = r.conn();
        r.post(&mut c, &[], &call(1, "x"));
        r.sse_head(&c);
        r.event(
            &c,
            r#"{"jsonrpc":"2.0","method":"notifications/progress","params":{}}"#,
        );
        r.end(&c, end);
        let (rows, _) = r.finish();
        let e = only(&rows);
        assert_eq!(
            (e.outcome.name(), e.layer.name()),
            ("STREAM_INCOMPLETE", "protocol")
        );
        assert_eq!(e.stream_end.name(), end.name());
        assert!(!e.final_response);
        assert_eq!(e.sse_events, 1);
    }
}

/// A 2026-07-28 tools/call (header and `_meta`), as the R5 clients send it.
fn r5_call(id: u64) -> String {
    format!(
        r#"{{"jsonrpc":"2.0","id":{id},"method":"tools/call","params":{{"name":"slow","arguments":{{}},"_meta":{{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{{}},"progressToken":{id}}}}}}}"#
    )
}

const R5_HEADERS: [(&str, &str); 3] = [
    ("mcp-protocol-version", "2026-07-28"),
    ("mcp-method", "tools/call"),
    ("mcp-name", "slow"),
];

const PROGRESS: &str = r#"{"jsonrpc":"2.0","method":"notifications/progress","params":{"progressToken":1,"progress":1}}"#;

/// One POST whose SSE stream carries a progress event and then ends with
/// `end`, the client closing first when `client_closed`.
fn cut_sse(headers: &[(&str, &str)], body: &str, end: BodyEnd, client_closed: bool) -> Exchange {
    let mut r = Run::new();
    let mut c = r.conn();
    r.post(&mut c, headers, body);
    r.sse_head(&c);
    r.event(&c, PROGRESS);
    r.end_closed(&c, end, client_closed);
    let (rows, _) = r.finish();
    only(&rows).clone()
}

#[test]
fn outcome_cancelled_by_client_close_2026_07_28() {
    for end in [
        BodyEnd::Fin,
        BodyEnd::Rst,
        BodyEnd::CaptureEnd,
        BodyEnd::Gap,
    ] {
        let e = cut_sse(&R5_HEADERS, &r5_call(1), end, true);
        assert_eq!(
            (e.outcome.name(), e.layer.name()),
            ("CANCELLED", "protocol"),
            "{end:?}"
        );
        assert_eq!(
            e.stream_end.name(),
            end.name(),
            "stream_end still says how it ended"
        );
        assert!(!e.final_response);
        assert_eq!(e.sse_events, 1);
        assert_eq!(e.protocol_version.as_deref(), Some("2026-07-28"));
        assert!(!has_anomaly(&e, "mcp.client_closed_stream"));
    }
    // The server closing first is no cancellation.
    let e = cut_sse(&R5_HEADERS, &r5_call(1), BodyEnd::Fin, false);
    assert_eq!(e.outcome.name(), "STREAM_INCOMPLETE");
}

#[test]
fn client_close_is_not_cancellation_before_2026_07_28() {
    // 2025-11-25 (and every older revision): "Disconnection SHOULD NOT be
    // read as cancellation"; the row keeps its outcome and names the close.
    let sid = [
        ("mcp-session-id", "S"),
        ("mcp-protocol-version", "2025-11-25"),
    ];
    for end in [BodyEnd::Fin, BodyEnd::Rst] {
        let e = cut_sse(&sid, &call(1, "slow"), end, true);
        assert_eq!(e.outcome.name(), "STREAM_INCOMPLETE", "{end:?}");
        assert_eq!(e.stream_end.name(), end.name());
        assert!(has_anomaly(&e, "mcp.client_closed_stream"), "{e:#?}");
    }
    // No version at all: not assumed to be 2026-07-28.
    let e = cut_sse(&[], &call(1, "slow"), BodyEnd::Fin, true);
    assert_eq!(e.outcome.name(), "STREAM_INCOMPLETE");
    assert!(has_anomaly(&e, "mcp.client_closed_stream"));
    // A server close is not named.
    let e = cut_sse(&sid, &call(1, "slow"), BodyEnd::Fin, false);
    assert!(!has_anomaly(&e, "mcp.client_closed_stream"));
}

#[test]
fn client_close_revision_from_session_or_request() {
    // The negotiated revision of the session decides for a request that declares none.
    let session = |version: &str| {
        let mut r = Run::new();
        let mut c = r.conn();
        r.post(
            &mut c,
            &[],
            &format!(
                r#"{{"jsonrpc":"2.0","id":0,"method":"initialize","params":{{"protocolVersion":"{version}","capabilities":{{}},"clientInfo":{{"name":"c","version":"1"}}}}}}"#
            ),
        );
        r.head(
            &c,
            200,
            &[
                ("content-type", "application/json"),
                ("mcp-session-id", "S"),
            ],
        );
        r.body(
            &c,
            &format!(r#"{{"jsonrpc":"2.0","id":0,"result":{{"protocolVersion":"{version}"}}}}"#),
        );
        r.end(&c, BodyEnd::Complete);
        r.post(&mut c, &[("mcp-session-id", "S")], &call(1, "slow"));
        r.sse_head(&c);
        r.event(&c, PROGRESS);
        r.end_closed(&c, BodyEnd::Fin, true);
        let (rows, _) = r.finish();
        assert_eq!(rows.len(), 2);
        rows[1].clone()
    };
    assert_eq!(session("2026-07-28").outcome, "CANCELLED");
    assert_eq!(session("2025-06-18").outcome, "STREAM_INCOMPLETE");
    // The request's own declaration alone (header, or `_meta`) is enough.
    let e = cut_sse(
        &[("mcp-protocol-version", "2026-07-28")],
        &call(1, "slow"),
        BodyEnd::Rst,
        true,
    );
    assert_eq!(e.outcome.name(), "CANCELLED");
    let e = cut_sse(&[], &r5_call(1), BodyEnd::Rst, true);
    assert_eq!(e.outcome.name(), "CANCELLED");
}

#[test]
fn client_close_after_final_response_or_on_http_error_is_not_cancelled() {
    // The final response arrived before the close: the call succeeded.
    let mut r = Run::new();
    let mut c = r.conn();
    r.post(&mut c, &R5_HEADERS, &r5_call(1));
    r.sse_head(&c);
    r.event(&c, PROGRESS);
    r.event(&c, &ok_tool(1));
    r.end_closed(&c, BodyEnd::Fin, true);
    let (rows, _) = r.finish();
    let e = only(&rows);
    assert_eq!(e.outcome.name(), "TOOL_SUCCESS");
    assert!(!has_anomaly(e, "mcp.client_closed_stream"));
    // An HTTP error status is the server's final answer.
    let mut r = Run::new();
    let mut c = r.conn();
    r.post(&mut c, &R5_HEADERS, &r5_call(1));
    r.head(&c, 503, &[("content-type", "application/json")]);
    r.body(&c, r#"{"jsonrpc":"2.0","id":1,"error":{"code":-3"#);
    r.end_closed(&c, BodyEnd::Rst, true);
    let (rows, _) = r.finish();
    assert_eq!(only(&rows).outcome, "HTTP_ERROR");
}

#[test]
fn client_close_before_any_response() {
    // 2026-07-28: CANCELLED is evaluated before NO_RESPONSE.
    let mut r = Run::new();
    let mut c = r.conn();
    r.post(&mut c, &R5_HEADERS, &r5_call(1));
    r.no_response_closed(&c, BodyEnd::Rst, true);
    let (rows, _) = r.finish();
    assert_eq!(only(&rows).outcome, "CANCELLED");
    // Older revisions: NO_RESPONSE, and the close is named.
    let mut r = Run::new();
    let mut c = r.conn();
    r.post(
        &mut c,
        &[("mcp-protocol-version", "2025-11-25")],
        &call(1, "x"),
    );
    r.no_response_closed(&c, BodyEnd::Fin, true);
    let (rows, stats) = r.finish();
    let e = only(&rows);
    assert_eq!(
        (e.outcome.name(), e.layer.name()),
        ("NO_RESPONSE", "transport")
    );
    assert!(has_anomaly(e, "mcp.client_closed_before_response"));
    assert_eq!(
        stats.anomalies.get("mcp.client_closed_before_response"),
        Some(&1)
    );
    // A JSON answer cut by a 2026-07-28 client's close: cancelled, not malformed.
    let mut r = Run::new();
    let mut c = r.conn();
    r.post(&mut c, &R5_HEADERS, &r5_call(1));
    r.head(&c, 200, &[("content-type", "application/json")]);
    r.body(&c, r#"{"jsonrpc":"2.0","id":1,"res"#);
    r.end_closed(&c, BodyEnd::Fin, true);
    let (rows, _) = r.finish();
    assert_eq!(only(&rows).outcome, "CANCELLED");
}

#[test]
fn client_close_only_cancels_requests() {
    // A notification POST and a GET stream the client closes keep their outcomes.
    let mut r = Run::new();
    let mut c = r.conn();
    r.post(
        &mut c,
        &R5_HEADERS,
        r#"{"jsonrpc":"2.0","method":"notifications/progress","params":{}}"#,
    );
    r.no_response_closed(&c, BodyEnd::Fin, true);
    let mut g = r.conn();
    let sid = [("mcp-session-id", "S"), ("accept", "text/event-stream")];
    r.request(&mut g, "GET", "/mcp", &sid, "");
    r.sse_head(&g);
    r.end_closed(&g, BodyEnd::Fin, true);
    let (rows, _) = r.finish();
    assert_eq!(rows.len(), 2);
    assert_eq!(rows[0].outcome.name(), "NO_RESPONSE");
    assert_eq!(rows[1].outcome.name(), "ACCEPTED");
    assert!(rows.iter().all(|e| e.anomalies.is_empty()), "{rows:#?}");
}

#[test]
fn outcome_stream_incomplete_then_resumed() {
    let mut r = Run::new();
    let sid = [("mcp-session-id", "S"), ("accept", "text/event-stream")];
    let mut c = r.conn();
    r.post(&mut c, &sid, &call(4, "long"));
    r.sse_head(&c);
    r.body(&c, "id: ev-1\nretry: 500\ndata: \n\n");
    r.end(&c, BodyEnd::Fin);
    let mut g = r.conn();
    r.request(
        &mut g,
        "GET",
        "/mcp",
        &[
            ("mcp-session-id", "S"),
            ("accept", "text/event-stream"),
            ("last-event-id", "ev-1"),
        ],
        "",
    );
    r.sse_head(&g);
    r.body(&g, &format!("id: ev-2\ndata: {}\n\n", ok_tool(4)));
    let t_answer = r.t;
    r.end(&g, BodyEnd::Complete);
    let (rows, _) = r.finish();
    let post = &rows[0];
    assert_eq!(post.outcome.name(), "TOOL_SUCCESS");
    assert_eq!(
        post.stream_end.name(),
        "fin",
        "records how the first stream ended"
    );
    assert_eq!(post.ts_response, Some(t_answer));
    assert_eq!(post.sse_events, 2);
    let get = &rows[1];
    assert_eq!(get.kind.name(), "stream");
    assert_eq!(get.inference.last_event_id.as_deref(), Some("ev-1"));
    assert_eq!(get.inference.resumes, Some(post.exchange_id));
    assert_eq!(get.outcome.name(), "ACCEPTED");
}

#[test]
fn outcome_jsonrpc_error_on_sse() {
    let mut r = Run::new();
    let mut c = r.conn();
    r.post(&mut c, &[], &call(1, "x"));
    r.sse_head(&c);
    r.event(
        &c,
        r#"{"jsonrpc":"2.0","id":1,"error":{"code":-32000,"message":"nope"}}"#,
    );
    r.end(&c, BodyEnd::Complete);
    let (rows, _) = r.finish();
    assert_eq!(
        (rows[0].outcome.name(), rows[0].error_code),
        ("JSONRPC_ERROR", Some(-32000))
    );
}

#[test]
fn outcome_input_required_and_task() {
    let e = tool_json(
        200,
        "application/json",
        r#"{"jsonrpc":"2.0","id":1,"result":{"resultType":"input_required","requestState":"s"}}"#,
    );
    assert_eq!(
        (e.outcome.name(), e.layer.name()),
        ("INPUT_REQUIRED", "interaction")
    );
    assert_eq!(e.result_type.as_deref(), Some("input_required"));
    let e = tool_json(
        200,
        "application/json",
        r#"{"jsonrpc":"2.0","id":1,"result":{"resultType":"task","taskId":"t"}}"#,
    );
    assert_eq!(
        (e.outcome.name(), e.layer.name()),
        ("TASK_CREATED", "interaction")
    );
}

#[test]
fn outcome_tool_results() {
    let e = tool_json(
        200,
        "application/json",
        r#"{"jsonrpc":"2.0","id":1,"result":{"content":"not-an-array"}}"#,
    );
    assert_eq!(
        (e.outcome.name(), e.layer.name()),
        ("INVALID_TOOL_RESULT", "application")
    );
    let e = tool_json(
        200,
        "application/json",
        r#"{"jsonrpc":"2.0","id":1,"result":{"content":[],"isError":true}}"#,
    );
    assert_eq!((e.outcome.name(), e.is_error), ("TOOL_ERROR", Some(true)));
    let e = tool_json(200, "application/json", &ok_tool(1));
    assert_eq!(
        (e.outcome.name(), e.result_type.as_deref()),
        ("TOOL_SUCCESS", None)
    );
    assert_eq!(e.tool_name.as_deref(), Some("echo"));
    assert_eq!(e.rpc_method.as_deref(), Some("tools/call"));
}

#[test]
fn outcome_rpc_success_and_stream_open() {
    let mut r = Run::new();
    let mut c = r.conn();
    r.post(
        &mut c,
        &[],
        r#"{"jsonrpc":"2.0","id":"a","method":"resources/read","params":{"uri":"x"}}"#,
    );
    r.json(
        &c,
        200,
        r#"{"jsonrpc":"2.0","id":"a","result":{"contents":[]}}"#,
    );
    let mut g = r.conn();
    r.request(
        &mut g,
        "GET",
        "/mcp",
        &[("accept", "text/event-stream")],
        "",
    );
    r.sse_head(&g);
    let (rows, _) = r.finish();
    assert_eq!(
        (rows[0].outcome.name(), rows[0].jsonrpc_id.as_deref()),
        ("RPC_SUCCESS", Some("\"a\""))
    );
    assert_eq!(
        (rows[1].kind.name(), rows[1].outcome.name()),
        ("stream", "STREAM_OPEN")
    );
    assert_eq!(rows[1].stream_end.name(), "capture_end");
}

#[test]
fn get_405_is_http_error_stream_row() {
    let mut r = Run::new();
    let mut c = r.conn();
    r.post(&mut c, &[], &call(1, "x"));
    r.json(&c, 200, &ok_tool(1));
    r.request(
        &mut c,
        "GET",
        "/mcp",
        &[("accept", "text/event-stream")],
        "",
    );
    r.respond(&c, 405, "", "");
    r.request(&mut c, "DELETE", "/mcp", &[("mcp-session-id", "S")], "");
    r.respond(&c, 200, "", "");
    let (rows, _) = r.finish();
    assert_eq!(
        (rows[1].kind.name(), rows[1].outcome.name()),
        ("stream", "HTTP_ERROR")
    );
    assert_eq!(
        (rows[2].kind.name(), rows[2].outcome.name()),
        ("session_end", "ACCEPTED")
    );
}
