//! The pairing cases of style.md section 5, by name.

use super::*;

#[test]
fn response_before_request() {
    let mut r = Run::new();
    let sid = [("mcp-session-id", "S1"), ("accept", "text/event-stream")];
    let mut g = r.conn();
    r.request(&mut g, "GET", "/mcp", &sid, "");
    r.sse_head(&g);
    // The answer to id 5 is processed before the POST that asked for it.
    r.event(&g, &ok_tool(5));
    let mut c = r.conn();
    r.post(&mut c, &sid, &call(5, "echo"));
    r.sse_head(&c);
    r.end(&c, BodyEnd::Complete);
    let (rows, stats) = r.finish();
    let post = rows.iter().find(|e| e.kind.name() == "request").unwrap();
    assert!(post.final_response);
    assert_eq!(post.outcome.name(), "TOOL_SUCCESS");
    assert!(has_anomaly(post, "mcp.response_before_request"));
    assert_eq!(stats.anomalies.get("mcp.response_before_request"), Some(&1));
    assert_eq!(stats.anomalies.get("mcp.response_without_request"), None);
}

#[test]
fn response_without_request_is_counted() {
    let mut r = Run::new();
    let mut g = r.conn();
    r.request(
        &mut g,
        "GET",
        "/mcp",
        &[("mcp-session-id", "S1"), ("accept", "text/event-stream")],
        "",
    );
    r.sse_head(&g);
    r.event(&g, &ok_tool(99));
    let (rows, stats) = r.finish();
    assert_eq!(only(&rows).kind, "stream");
    assert_eq!(only(&rows).outcome, "STREAM_OPEN");
    assert_eq!(
        stats.anomalies.get("mcp.response_without_request"),
        Some(&1)
    );
}

#[test]
fn duplicate_id() {
    let mut r = Run::new();
    let sid = [("mcp-session-id", "S1")];
    let (mut a, mut b) = (r.conn(), r.conn());
    r.post(&mut a, &sid, &call(3, "one"));
    r.post(&mut b, &sid, &call(3, "two"));
    r.json(
        &b,
        200,
        r#"{"jsonrpc":"2.0","id":3,"error":{"code":-1,"message":"x"}}"#,
    );
    r.json(&a, 200, &ok_tool(3));
    let (rows, stats) = r.finish();
    assert_eq!(rows.len(), 2);
    assert_eq!(rows[0].tool_name.as_deref(), Some("one"));
    assert_eq!(rows[0].outcome.name(), "TOOL_SUCCESS");
    assert_eq!(rows[1].tool_name.as_deref(), Some("two"));
    assert_eq!(rows[1].outcome.name(), "JSONRPC_ERROR");
    assert!(has_anomaly(&rows[1], "mcp.duplicate_request_id"));
    assert_eq!(stats.anomalies.get("mcp.duplicate_request_id"), Some(&1));
}

#[test]
fn id_reused_after_its_response() {
    // Legacy transport: answers travel on the GET stream, so pairing is by id among
    // *open* requests; the second id 1 must not pair with the first (already answered).
    let mut r = Run::new();
    let mut g = r.conn();
    r.request(
        &mut g,
        "GET",
        "/sse",
        &[("accept", "text/event-stream")],
        "",
    );
    r.sse_head(&g);
    r.body(&g, "event: endpoint\ndata: /messages?sessionId=abc\n\n");
    let mut c = r.conn();
    r.request(
        &mut c,
        "POST",
        "/messages?sessionId=abc",
        &[],
        &call(1, "echo"),
    );
    r.respond(&c, 202, "text/plain", "Accepted");
    r.event(&g, &ok_tool(1));
    r.request(
        &mut c,
        "POST",
        "/messages?sessionId=abc",
        &[],
        &call(1, "echo"),
    );
    r.respond(&c, 202, "text/plain", "Accepted");
    r.event(
        &g,
        r#"{"jsonrpc":"2.0","id":1,"error":{"code":-32603,"message":"boom"}}"#,
    );
    let (rows, stats) = r.finish();
    let reqs: Vec<_> = rows.iter().filter(|e| e.kind.name() == "request").collect();
    assert_eq!(reqs.len(), 2);
    assert_eq!(reqs[0].outcome.name(), "TOOL_SUCCESS");
    assert_eq!(reqs[1].outcome.name(), "JSONRPC_ERROR");
    assert_eq!(reqs[1].error_code, Some(-32603));
    assert!(reqs.iter().all(|e| e.transport.name() == "legacy_sse"
        && e.session_key == "legacy:abc"
        && e.session_id.as_deref() == Some("abc")
        && e.sse_events == 1
        && e.http_status == Some(202)));
    assert!(reqs[0].ts_response < reqs[1].ts_request.into());
    assert!(stats.anomalies.is_empty(), "{:?}", stats.anomalies);
    let stream = rows.iter().find(|e| e.kind.name() == "stream").unwrap();
    assert_eq!(
        (stream.transport.name(), stream.sse_events),
        ("legacy_sse", 3)
    );
    assert_eq!(stream.outcome.name(), "STREAM_OPEN");
}

#[test]
fn id_reused_after_response_in_own_bodies() {
    let mut r = Run::new();
    let mut c = r.conn();
    r.post(&mut c, &[], &call(1, "echo"));
    r.json(&c, 200, &ok_tool(1));
    r.post(&mut c, &[], &call(1, "echo"));
    r.json(
        &c,
        200,
        r#"{"jsonrpc":"2.0","id":1,"result":{"content":[],"isError":true}}"#,
    );
    let (rows, stats) = r.finish();
    assert_eq!(rows[0].outcome.name(), "TOOL_SUCCESS");
    assert_eq!(rows[1].outcome.name(), "TOOL_ERROR");
    assert!(!has_anomaly(&rows[1], "mcp.duplicate_request_id"));
    assert!(stats.anomalies.is_empty());
}

#[test]
fn notification() {
    let mut r = Run::new();
    let mut c = r.conn();
    r.post(
        &mut c,
        &[],
        r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#,
    );
    r.respond(&c, 202, "", "");
    let (rows, _) = r.finish();
    let e = only(&rows);
    assert_eq!(
        (e.kind.name(), e.outcome.name(), e.layer.name()),
        ("notification", "ACCEPTED", "protocol")
    );
    assert_eq!(e.jsonrpc_id, None);
    assert_eq!(e.rpc_method.as_deref(), Some("notifications/initialized"));
    assert!(!e.final_response);
    assert_eq!(e.http_status, Some(202));
    assert_eq!(e.anomalies.text(), None);
}

#[test]
fn batch() {
    let mut r = Run::new();
    let mut c = r.conn();
    r.post(
        &mut c,
        &[],
        r#"[{"jsonrpc":"2.0","id":1,"method":"tools/list"},{"jsonrpc":"2.0","method":"notifications/x"},{"jsonrpc":"2.0","id":2,"method":"prompts/get","params":{"name":"p"}}]"#,
    );
    r.json(
        &c,
        200,
        r#"[{"jsonrpc":"2.0","id":2,"error":{"code":-32602,"message":"no prompt"}},{"jsonrpc":"2.0","id":1,"result":{"tools":[]}}]"#,
    );
    let (rows, _) = r.finish();
    assert_eq!(rows.len(), 3);
    let got: Vec<_> = rows
        .iter()
        .map(|e| {
            (
                e.kind.name(),
                e.jsonrpc_id.as_deref(),
                e.outcome.name(),
                e.error_code,
            )
        })
        .collect();
    assert_eq!(
        got,
        vec![
            ("request", Some("1"), "RPC_SUCCESS", None),
            ("notification", None, "ACCEPTED", None),
            ("request", Some("2"), "JSONRPC_ERROR", Some(-32602)),
        ]
    );
    assert_eq!(
        rows.iter().map(|e| e.exchange_id).collect::<Vec<_>>(),
        vec![1, 2, 3]
    );
    assert!(rows.iter().all(|e| e.ts_request == rows[0].ts_request));
}

#[test]
fn error_response() {
    let e = tool_json(
        200,
        "application/json",
        r#"{"jsonrpc":"2.0","id":1,"error":{"code":-32602,"message":"Invalid params"}}"#,
    );
    assert_eq!(
        (e.outcome.name(), e.layer.name()),
        ("JSONRPC_ERROR", "protocol")
    );
    assert_eq!(e.error_code, Some(-32602));
    assert_eq!(e.error_message.as_deref(), Some("Invalid params"));
    assert!(e.final_response);
}

#[test]
fn request_never_answered() {
    let mut r = Run::new();
    let mut c = r.conn();
    r.post(&mut c, &[], &call(1, "a"));
    r.no_response(&c, BodyEnd::Rst);
    let mut d = r.conn();
    r.post(&mut d, &[], &call(2, "b"));
    // No end at all for d: the end of input cuts it.
    let (rows, _) = r.finish();
    assert_eq!(rows.len(), 2);
    for e in &rows {
        assert_eq!(
            (e.outcome.name(), e.layer.name()),
            ("NO_RESPONSE", "transport")
        );
        assert_eq!(e.http_status, None);
        assert_eq!(e.ts_response, None);
        assert_eq!(e.stream_end.name(), "none");
    }
    assert_eq!(
        rows[0].error_message.as_deref(),
        Some("no HTTP response (rst)")
    );
    assert_eq!(
        rows[1].error_message.as_deref(),
        Some("no HTTP response (capture_end)")
    );
}

#[test]
fn sse_stream_carrying_several_responses() {
    let mut r = Run::new();
    let mut c = r.conn();
    r.post(&mut c, &[], &format!("[{},{}]", call(1, "a"), call(2, "b")));
    r.sse_head(&c);
    r.event(&c, r#"{"jsonrpc":"2.0","method":"notifications/progress","params":{"progressToken":1,"progress":1}}"#);
    r.event(&c, &ok_tool(2));
    let t_second = r.t;
    r.body(&c, ": keepalive\n\n");
    r.event(
        &c,
        r#"{"jsonrpc":"2.0","id":1,"result":{"content":[],"isError":true}}"#,
    );
    let t_first = r.t;
    r.end(&c, BodyEnd::Complete);
    let (rows, _) = r.finish();
    assert_eq!(rows.len(), 2);
    assert_eq!(rows[0].outcome.name(), "TOOL_ERROR");
    assert_eq!(rows[1].outcome.name(), "TOOL_SUCCESS");
    assert_eq!(rows[0].ts_response, Some(t_first));
    assert_eq!(rows[1].ts_response, Some(t_second));
    assert!(
        rows.iter()
            .all(|e| e.sse_events == 3 && e.stream_end.name() == "complete")
    );
    assert_eq!(rows[0].content_type.as_deref(), Some("text/event-stream"));
}
