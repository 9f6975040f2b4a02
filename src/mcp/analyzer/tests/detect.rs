//! MCP detection, sessions and server->client requests.

use super::super::requests::contains_ignore_ascii_case;
use super::*;

#[test]
fn non_mcp_http_is_ignored_but_non_jsonrpc_to_mcp_endpoint_is_a_row() {
    let mut r = Run::new();
    let mut c = r.conn();
    r.request(&mut c, "GET", "/index.html", &[], "");
    r.respond(&c, 200, "text/html", "<html>");
    r.request(&mut c, "POST", "/api", &[], r#"{"a":1}"#);
    r.json(&c, 200, "{}");
    r.request(
        &mut c,
        "GET",
        "/events",
        &[("accept", "text/event-stream")],
        "",
    );
    r.sse_head(&c);
    r.body(&c, "data: tick\n\n");
    r.end(&c, BodyEnd::Complete);
    r.post(&mut c, &[], &call(1, "x"));
    r.json(&c, 200, &ok_tool(1));
    r.post(&mut c, &[], "hello");
    r.json(
        &c,
        400,
        r#"{"jsonrpc":"2.0","id":null,"error":{"code":-32700,"message":"Parse error"}}"#,
    );
    let (rows, stats) = r.finish();
    assert_eq!(rows.len(), 2, "{rows:#?}");
    assert_eq!(rows[1].kind.name(), "http");
    assert_eq!(
        (rows[1].outcome.name(), rows[1].error_code),
        ("HTTP_ERROR", Some(-32700))
    );
    assert_eq!(stats.anomalies.get("mcp.request_not_jsonrpc"), Some(&1));
}

#[test]
fn session_joins_through_initialize_response_header() {
    let mut r = Run::new();
    let mut c = r.conn();
    r.post(
        &mut c,
        &[("user-agent", "node")],
        r#"{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-06-18","clientInfo":{"name":"cli","version":"1.2"},"capabilities":{}}}"#,
    );
    r.head(
        &c,
        200,
        &[
            ("content-type", "text/event-stream"),
            ("mcp-session-id", "abc"),
        ],
    );
    r.event(&c, r#"{"jsonrpc":"2.0","id":0,"result":{"protocolVersion":"2025-03-26","capabilities":{},"serverInfo":{"name":"s","version":"1"}}}"#);
    r.end(&c, BodyEnd::Complete);
    let mut d = r.conn();
    r.post(
        &mut d,
        &[("mcp-session-id", "abc"), ("user-agent", "node")],
        &call(1, "x"),
    );
    r.json(&d, 200, &ok_tool(1));
    let (rows, _) = r.finish();
    for e in &rows {
        assert_eq!(e.session_key, "sid:abc");
        assert_eq!(e.session_id.as_deref(), Some("abc"));
        assert_eq!(e.protocol_version.as_deref(), Some("2025-03-26"));
        assert_eq!(
            (e.client_name.as_deref(), e.client_version.as_deref()),
            (Some("cli"), Some("1.2"))
        );
        assert_eq!(e.user_agent.as_deref(), Some("node"));
        assert_eq!(e.transport.name(), "streamable_http");
    }
    assert_eq!(rows[0].outcome.name(), "RPC_SUCCESS");
}

#[test]
fn derived_sessions_for_stateless_clients() {
    let mut r = Run::new();
    let mut c = r.conn();
    let meta = |id: u64| {
        format!(
            r#"{{"jsonrpc":"2.0","id":{id},"method":"tools/call","params":{{"name":"t","_meta":{{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientInfo":{{"name":"py","version":"2"}},"progressToken":9}}}}}}"#
        )
    };
    r.post(
        &mut c,
        &[("user-agent", "python-httpx2/2.16.2")],
        r#"{"jsonrpc":"2.0","id":1,"method":"server/discover","params":{}}"#,
    );
    r.json(
        &c,
        200,
        r#"{"jsonrpc":"2.0","id":1,"result":{"resultType":"complete"}}"#,
    );
    r.post(&mut c, &[("user-agent", "python-httpx2/2.16.2")], &meta(2));
    r.json(&c, 200, &ok_tool(2));
    r.post(
        &mut c,
        &[("user-agent", "python-httpx2/2.16.2")],
        r#"{"jsonrpc":"2.0","id":1,"method":"server/discover","params":{}}"#,
    );
    r.json(
        &c,
        200,
        r#"{"jsonrpc":"2.0","id":1,"result":{"resultType":"complete"}}"#,
    );
    let (rows, _) = r.finish();
    assert!(
        rows[0]
            .session_key
            .starts_with("derived:10.0.0.1>10.0.0.2:8080/mcp:")
    );
    assert_eq!(rows[0].session_key, rows[1].session_key);
    assert_ne!(
        rows[1].session_key, rows[2].session_key,
        "server/discover starts a session"
    );
    assert_eq!(rows[1].protocol_version.as_deref(), Some("2026-07-28"));
    assert_eq!(rows[1].client_name.as_deref(), Some("py"));
    assert_eq!(
        rows[1].inference.params_fingerprint,
        Some(json_fp(r#"{"name":"t"}"#))
    );
    assert_eq!(rows[1].inference.endpoint, "10.0.0.2:8080/mcp");
    assert_eq!(rows[0].session_id, None);
}

#[test]
fn server_request_pairs_with_client_posted_response() {
    let mut r = Run::new();
    let sid = [("mcp-session-id", "S")];
    let mut c = r.conn();
    r.post(&mut c, &sid, &call(1, "needs_llm"));
    r.sse_head(&c);
    r.event(
        &c,
        r#"{"jsonrpc":"2.0","id":0,"method":"sampling/createMessage","params":{}}"#,
    );
    let mut d = r.conn();
    r.post(&mut d, &sid, r#"{"jsonrpc":"2.0","id":0,"result":{"role":"assistant","content":{"type":"text","text":"hi"}}}"#);
    r.respond(&d, 202, "", "");
    r.event(&c, &ok_tool(1));
    r.end(&c, BodyEnd::Complete);
    // A response the server never asked for.
    r.post(&mut d, &sid, r#"{"jsonrpc":"2.0","id":55,"result":{}}"#);
    r.respond(&d, 202, "", "");
    let (rows, stats) = r.finish();
    assert_eq!(rows[0].outcome.name(), "TOOL_SUCCESS");
    assert_eq!(rows[0].sse_events, 2);
    let resp = &rows[1];
    assert_eq!(
        (resp.kind.name(), resp.outcome.name()),
        ("response", "ACCEPTED")
    );
    assert_eq!(resp.rpc_method.as_deref(), Some("sampling/createMessage"));
    assert_eq!(resp.jsonrpc_id.as_deref(), Some("0"));
    assert!(has_anomaly(&rows[2], "mcp.response_without_request"));
    assert_eq!(
        stats.anomalies.get("mcp.response_without_request"),
        Some(&1)
    );
}

#[test]
fn inference_inputs_filled() {
    let mut r = Run::new();
    let mut c = r.conn();
    r.post(
        &mut c,
        &[("authorization", "Bearer x")],
        r#"{"params":{"name":"t","arguments":{"b":2,"a":1},"inputResponses":{"k":{}},"requestState":"s"},"jsonrpc":"2.0","id":3,"method":"tools/call"}"#,
    );
    r.json(&c, 200, &ok_tool(3));
    let (rows, _) = r.finish();
    let i = &rows[0].inference;
    assert_eq!(
        i.params_fingerprint,
        Some(json_fp(r#"{"arguments":{"a":1,"b":2},"name":"t"}"#))
    );
    assert!(i.has_mrtr_fields);
    assert_eq!(
        i.body_fingerprint,
        Some(json_fp(
            r#"{"id":3,"jsonrpc":"2.0","method":"tools/call","params":{"arguments":{"a":1,"b":2},"inputResponses":{"k":{}},"name":"t","requestState":"s"}}"#
        ))
    );
    assert!(i.auth_hash.is_some());
    assert_eq!(i.ts_request_end, rows[0].ts_request + 10);
    assert_eq!(rows[0].request_bytes as usize, r#"{"params":{"name":"t","arguments":{"b":2,"a":1},"inputResponses":{"k":{}},"requestState":"s"},"jsonrpc":"2.0","id":3,"method":"tools/call"}"#.len());
    assert_eq!(rows[0].response_bytes, 42);
    assert_eq!((rows[0].attempt, rows[0].retry_origin.name()), (1, "none"));
    let lat = rows[0].latency_ms.unwrap();
    assert!(lat > 0.0 && lat < 10.0, "{lat}");
}

#[test]
fn pending_limit_bounds_open_requests() {
    let mut r = Run::new();
    let sid = [("mcp-session-id", "S")];
    let mut c = r.conn();
    for id in 0..(MAX_PENDING_PER_SESSION as u64 + 3) {
        r.post(&mut c, &sid, &call(id, "x"));
        r.sse_head(&c);
        r.end(&c, BodyEnd::Fin);
    }
    let (rows, stats) = r.finish();
    assert_eq!(stats.anomalies.get("mcp.pending_limit"), Some(&3));
    assert!(rows.iter().all(|e| e.outcome.name() == "STREAM_INCOMPLETE"));
}

#[test]
fn garbage_sse_and_bodies_never_panic() {
    let mut r = Run::new();
    let mut c = r.conn();
    r.post(&mut c, &[], &call(1, "x"));
    r.sse_head(&c);
    r.body(&c, "\u{0}\r\r\n:::\ndata: [1,2]\n\ndata: []\n\ndata: {\"jsonrpc\":\"2.0\",\"id\":null,\"method\":\"x\"}\n\nevent");
    r.end(&c, BodyEnd::Rst);
    let (rows, stats) = r.finish();
    assert_eq!(rows[0].outcome.name(), "MALFORMED_JSON");
    assert!(stats.anomalies.get("rpc.sse_unterminated_event").is_some());
}

#[test]
fn legacy_stream_delivered_before_its_posts() {
    // HAR order: the whole GET /sse entry (ending later) comes before the POST entries.
    let mut r = Run::new();
    let mut g = r.conn();
    r.request(
        &mut g,
        "GET",
        "/sse",
        &[("accept", "text/event-stream")],
        "",
    );
    r.head(&g, 200, &[("content-type", "text/event-stream")]);
    let later = r.t + 60_000_000;
    r.a.push(
        HttpEvent::ResponseBody {
            xref: Run::xref(&g),
            ts_us: later,
            data: format!(
                "event: endpoint\ndata: /messages/?session_id=ff\n\nevent: message\ndata: {}\n\n",
                ok_tool(1)
            )
            .into_bytes(),
        },
        &mut r.stats,
    );
    r.end(&g, BodyEnd::Complete);
    let mut c = r.conn();
    r.request(
        &mut c,
        "POST",
        "/messages/?session_id=ff",
        &[],
        &call(1, "x"),
    );
    r.respond(&c, 202, "text/plain", "Accepted");
    let (rows, stats) = r.finish();
    let post = rows.iter().find(|e| e.kind.name() == "request").unwrap();
    assert_eq!(post.outcome.name(), "TOOL_SUCCESS");
    assert_eq!(post.ts_response, Some(later));
    assert!(has_anomaly(post, "mcp.response_before_request"));
    assert_eq!(stats.anomalies.get("mcp.response_without_request"), None);
}

#[test]
fn old_orphan_does_not_pair_with_a_much_later_request() {
    let mut r = Run::new();
    let sid = [("mcp-session-id", "S"), ("accept", "text/event-stream")];
    let mut g = r.conn();
    r.request(&mut g, "GET", "/mcp", &sid, "");
    r.sse_head(&g);
    r.event(&g, &ok_tool(1));
    r.t += 10_000_000;
    let mut c = r.conn();
    r.post(&mut c, &sid, &call(1, "x"));
    r.sse_head(&c);
    r.end(&c, BodyEnd::Fin);
    let (rows, stats) = r.finish();
    let post = rows.iter().find(|e| e.kind.name() == "request").unwrap();
    assert_eq!(post.outcome.name(), "STREAM_INCOMPLETE");
    assert_eq!(
        stats.anomalies.get("mcp.response_without_request"),
        Some(&1)
    );
}

#[test]
fn cors_preflight_before_first_post_is_a_row() {
    let mut r = Run::new();
    let mut c = r.conn();
    r.request(
        &mut c,
        "OPTIONS",
        "/mcp",
        &[("access-control-request-method", "POST")],
        "",
    );
    r.respond(&c, 204, "", "");
    r.request(&mut c, "OPTIONS", "/not-mcp", &[], "");
    r.respond(&c, 204, "", "");
    r.post(&mut c, &[], &call(1, "x"));
    r.json(&c, 200, &ok_tool(1));
    r.post(&mut c, &[], r#"{"hello":1}"#);
    r.json(&c, 200, "{}");
    let (rows, _) = r.finish();
    let got: Vec<_> = rows
        .iter()
        .map(|e| {
            (
                e.http_method.as_str(),
                e.path.as_str(),
                e.kind.name(),
                e.outcome.name(),
            )
        })
        .collect();
    assert_eq!(
        got,
        vec![
            ("OPTIONS", "/mcp", "http", "ACCEPTED"),
            ("POST", "/mcp", "request", "TOOL_SUCCESS"),
            ("POST", "/mcp", "http", "INVALID_ENVELOPE"),
        ]
    );
    assert_eq!(rows[0].session_key, rows[1].session_key);
}

#[test]
fn accept_and_method_are_read_without_regard_to_case() {
    assert!(contains_ignore_ascii_case(
        "application/json, Text/Event-Stream",
        "text/event-stream"
    ));
    assert!(contains_ignore_ascii_case(
        "text/event-stream",
        "text/event-stream"
    ));
    assert!(!contains_ignore_ascii_case(
        "text/event",
        "text/event-stream"
    ));
    assert!(!contains_ignore_ascii_case("", "text/event-stream"));
}
