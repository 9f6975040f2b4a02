//! Analyzer tests on hand-built HTTP event sequences: the pairing cases of
//! style.md section 5 by name, then one test (or more) per outcome.

use super::*;
use crate::http::{ConnInfo, Headers, RequestHead};
use crate::rpc::canonical_fingerprint;
use std::sync::Arc;

/// Fingerprint of a JSON text (test input, valid by construction).
fn json_fp(text: &str) -> crate::rpc::JsonFingerprint {
    canonical_fingerprint(&serde_json::from_str(text).unwrap())
}

const T0: i64 = 1_700_000_000_000_000;

struct Run {
    a: Analyzer,
    stats: Stats,
    next_conn: u64,
    t: i64,
}

#[derive(Clone)]
struct C {
    conn: Arc<ConnInfo>,
    depth: u32,
}

fn hdrs(h: &[(&str, &str)]) -> Headers {
    h.iter().copied().collect()
}

impl Run {
    fn new() -> Run {
        Run {
            a: Analyzer::new(InferenceConfig::default()),
            stats: Stats::default(),
            next_conn: 0,
            t: T0,
        }
    }

    fn tick(&mut self) -> i64 {
        self.t += 1000;
        self.t
    }

    fn conn(&mut self) -> C {
        self.next_conn += 1;
        C {
            conn: Arc::new(ConnInfo {
                conn: self.next_conn,
                tcp_stream: Some(self.next_conn - 1),
                client_addr: format!("10.0.0.1:{}", 40000 + self.next_conn).into(),
                server_addr: "10.0.0.2:8080".into(),
                capture: "t.pcap".into(),
            }),
            depth: 0,
        }
    }

    fn xref(c: &C) -> ExchangeRef {
        ExchangeRef {
            conn: c.conn.clone(),
            depth: c.depth,
        }
    }

    fn request(&mut self, c: &mut C, method: &str, uri: &str, h: &[(&str, &str)], body: &str) {
        c.depth += 1;
        let ts = self.tick();
        let req = HttpRequest {
            xref: Run::xref(c),
            ts_first_us: ts,
            ts_last_us: ts + 10,
            frame: 0,
            head: RequestHead {
                method: method.into(),
                uri: uri.into(),
                version: "1.1".into(),
                headers: hdrs(h),
            },
            body: body.as_bytes().to_vec(),
            wire_len: body.len() as u64,
            complete: true,
            anomalies: vec![],
        };
        self.a.push(HttpEvent::Request(req), &mut self.stats);
    }

    fn post(&mut self, c: &mut C, h: &[(&str, &str)], body: &str) {
        self.request(c, "POST", "/mcp", h, body);
    }

    fn head(&mut self, c: &C, status: u16, h: &[(&str, &str)]) {
        let ts = self.tick();
        self.a.push(
            HttpEvent::ResponseHead {
                xref: Run::xref(c),
                ts_us: ts,
                frame: 0,
                head: ResponseHead {
                    status,
                    reason: "R".into(),
                    version: "1.1".into(),
                    headers: hdrs(h),
                },
            },
            &mut self.stats,
        );
    }

    fn body(&mut self, c: &C, data: &str) {
        let ts = self.tick();
        self.a.push(
            HttpEvent::ResponseBody {
                xref: Run::xref(c),
                ts_us: ts,
                data: data.as_bytes().to_vec(),
            },
            &mut self.stats,
        );
    }

    fn end(&mut self, c: &C, end: BodyEnd) {
        self.end_closed(c, end, false);
    }

    /// The response ended; `client_closed`: the client closed first.
    fn end_closed(&mut self, c: &C, end: BodyEnd, client_closed: bool) {
        let ts = self.tick();
        self.a.push(
            HttpEvent::ResponseEnd {
                xref: Run::xref(c),
                ts_us: ts,
                end,
                wire_len: 42,
                decoded_len: 42,
                anomalies: vec![],
                client_closed,
            },
            &mut self.stats,
        );
    }

    fn no_response(&mut self, c: &C, end: BodyEnd) {
        self.no_response_closed(c, end, false);
    }

    fn no_response_closed(&mut self, c: &C, end: BodyEnd, client_closed: bool) {
        let ts = self.tick();
        self.a.push(
            HttpEvent::NoResponse {
                xref: Run::xref(c),
                ts_us: ts,
                end,
                client_closed,
            },
            &mut self.stats,
        );
    }

    /// Whole response with a body of the given media type.
    fn respond(&mut self, c: &C, status: u16, media: &str, body: &str) {
        let mut h = vec![];
        if !media.is_empty() {
            h.push(("content-type", media));
        }
        self.head(c, status, &h);
        if !body.is_empty() {
            self.body(c, body);
        }
        self.end(c, BodyEnd::Complete);
    }

    fn json(&mut self, c: &C, status: u16, body: &str) {
        self.respond(c, status, "application/json", body);
    }

    fn sse_head(&mut self, c: &C) {
        self.head(c, 200, &[("content-type", "text/event-stream")]);
    }

    fn event(&mut self, c: &C, data: &str) {
        self.body(c, &format!("event: message\ndata: {data}\n\n"));
    }

    fn finish(self) -> (Vec<Exchange>, Stats) {
        let mut stats = self.stats;
        let rows = self.a.finish(&mut stats);
        (rows.into_iter().map(|ex| *ex).collect(), stats)
    }
}

fn call(id: u64, tool: &str) -> String {
    format!(
        r#"{{"jsonrpc":"2.0","id":{id},"method":"tools/call","params":{{"name":"{tool}","arguments":{{"a":1}}}}}}"#
    )
}

fn ok_tool(id: u64) -> String {
    format!(
        r#"{{"jsonrpc":"2.0","id":{id},"result":{{"content":[{{"type":"text","text":"ok"}}]}}}}"#
    )
}

fn only(rows: &[Exchange]) -> &Exchange {
    assert_eq!(rows.len(), 1, "rows: {rows:#?}");
    &rows[0]
}

/// One tools/call POST answered with a JSON body.
fn tool_json(status: u16, media: &str, body: &str) -> Exchange {
    let mut r = Run::new();
    let mut c = r.conn();
    r.post(&mut c, &[], &call(1, "echo"));
    r.respond(&c, status, media, body);
    let (rows, _) = r.finish();
    only(&rows).clone()
}

fn has_anomaly(e: &Exchange, name: &str) -> bool {
    e.anomalies
        .as_deref()
        .is_some_and(|a| a.split(';').any(|x| x == name))
}

// ---- style.md section 5: pairing cases ----------------------------------

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
    let post = rows.iter().find(|e| e.kind == "request").unwrap();
    assert!(post.final_response);
    assert_eq!(post.outcome, "TOOL_SUCCESS");
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
    assert_eq!(rows[0].outcome, "TOOL_SUCCESS");
    assert_eq!(rows[1].tool_name.as_deref(), Some("two"));
    assert_eq!(rows[1].outcome, "JSONRPC_ERROR");
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
    let reqs: Vec<_> = rows.iter().filter(|e| e.kind == "request").collect();
    assert_eq!(reqs.len(), 2);
    assert_eq!(reqs[0].outcome, "TOOL_SUCCESS");
    assert_eq!(reqs[1].outcome, "JSONRPC_ERROR");
    assert_eq!(reqs[1].error_code, Some(-32603));
    assert!(reqs.iter().all(|e| e.transport == "legacy_sse"
        && e.session_key == "legacy:abc"
        && e.session_id.as_deref() == Some("abc")
        && e.sse_events == 1
        && e.http_status == Some(202)));
    assert!(reqs[0].ts_response < reqs[1].ts_request.into());
    assert!(stats.anomalies.is_empty(), "{:?}", stats.anomalies);
    let stream = rows.iter().find(|e| e.kind == "stream").unwrap();
    assert_eq!((stream.transport, stream.sse_events), ("legacy_sse", 3));
    assert_eq!(stream.outcome, "STREAM_OPEN");
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
    assert_eq!(rows[0].outcome, "TOOL_SUCCESS");
    assert_eq!(rows[1].outcome, "TOOL_ERROR");
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
        (e.kind, e.outcome, e.layer),
        ("notification", "ACCEPTED", "protocol")
    );
    assert_eq!(e.jsonrpc_id, None);
    assert_eq!(e.rpc_method.as_deref(), Some("notifications/initialized"));
    assert!(!e.final_response);
    assert_eq!(e.http_status, Some(202));
    assert_eq!(e.anomalies, None);
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
        .map(|e| (e.kind, e.jsonrpc_id.as_deref(), e.outcome, e.error_code))
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
    assert_eq!((e.outcome, e.layer), ("JSONRPC_ERROR", "protocol"));
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
        assert_eq!((e.outcome, e.layer), ("NO_RESPONSE", "transport"));
        assert_eq!(e.http_status, None);
        assert_eq!(e.ts_response, None);
        assert_eq!(e.stream_end, "none");
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
    assert_eq!(rows[0].outcome, "TOOL_ERROR");
    assert_eq!(rows[1].outcome, "TOOL_SUCCESS");
    assert_eq!(rows[0].ts_response, Some(t_first));
    assert_eq!(rows[1].ts_response, Some(t_second));
    assert!(
        rows.iter()
            .all(|e| e.sse_events == 3 && e.stream_end == "complete")
    );
    assert_eq!(rows[0].content_type.as_deref(), Some("text/event-stream"));
}

// ---- outcomes ------------------------------------------------------------

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
    assert_eq!((rows[0].outcome, rows[0].layer), ("CANCELLED", "protocol"));
    assert!(rows[0].final_response);
    assert_eq!(rows[1].outcome, "ACCEPTED");
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
    assert_eq!(rows[0].outcome, "TOOL_SUCCESS");
    assert!(has_anomaly(&rows[1], "mcp.cancel_without_open_request"));
    assert_eq!(
        stats.anomalies.get("mcp.cancel_without_open_request"),
        Some(&1)
    );
}

#[test]
fn outcome_http_error_wins_over_body() {
    let e = tool_json(500, "application/json", &ok_tool(1));
    assert_eq!((e.outcome, e.layer), ("HTTP_ERROR", "transport"));
    assert_eq!(e.error_code, None);
    assert_eq!(e.http_status, Some(500));
    let e = tool_json(
        404,
        "application/json",
        r#"{"jsonrpc":"2.0","id":null,"error":{"code":-32001,"message":"Session not found"}}"#,
    );
    assert_eq!((e.outcome, e.error_code), ("HTTP_ERROR", Some(-32001)));
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
    assert_eq!(rows[0].outcome, "ACCEPTED");
    assert!(has_anomaly(&rows[0], "mcp.body_on_accepted"));
}

#[test]
fn outcome_unexpected_response() {
    let e = tool_json(202, "", "");
    assert_eq!((e.outcome, e.layer), ("UNEXPECTED_RESPONSE", "protocol"));
    let e = tool_json(200, "text/html", "<html>");
    assert_eq!(e.outcome, "UNEXPECTED_RESPONSE");
    assert_eq!(e.content_type.as_deref(), Some("text/html"));
}

#[test]
fn outcome_malformed_json() {
    let e = tool_json(200, "application/json", r#"{"jsonrpc":"2.0","id":1,"res"#);
    assert_eq!((e.outcome, e.layer), ("MALFORMED_JSON", "protocol"));
    assert!(!e.final_response);
    let e = tool_json(200, "application/json", "");
    assert_eq!(e.outcome, "MALFORMED_JSON");
    // On an SSE stream: the data that should carry the response is not JSON.
    let mut r = Run::new();
    let mut c = r.conn();
    r.post(&mut c, &[], &call(1, "x"));
    r.sse_head(&c);
    r.event(&c, "{not json");
    r.end(&c, BodyEnd::Complete);
    let (rows, stats) = r.finish();
    assert_eq!(rows[0].outcome, "MALFORMED_JSON");
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
            (e.outcome, e.layer),
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
        assert_eq!((e.outcome, e.layer), ("STREAM_INCOMPLETE", "protocol"));
        assert_eq!(e.stream_end, end.name());
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
        assert_eq!((e.outcome, e.layer), ("CANCELLED", "protocol"), "{end:?}");
        assert_eq!(
            e.stream_end,
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
    assert_eq!(e.outcome, "STREAM_INCOMPLETE");
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
        assert_eq!(e.outcome, "STREAM_INCOMPLETE", "{end:?}");
        assert_eq!(e.stream_end, end.name());
        assert!(has_anomaly(&e, "mcp.client_closed_stream"), "{e:#?}");
    }
    // No version at all: not assumed to be 2026-07-28.
    let e = cut_sse(&[], &call(1, "slow"), BodyEnd::Fin, true);
    assert_eq!(e.outcome, "STREAM_INCOMPLETE");
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
    assert_eq!(e.outcome, "CANCELLED");
    let e = cut_sse(&[], &r5_call(1), BodyEnd::Rst, true);
    assert_eq!(e.outcome, "CANCELLED");
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
    assert_eq!(e.outcome, "TOOL_SUCCESS");
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
    assert_eq!((e.outcome, e.layer), ("NO_RESPONSE", "transport"));
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
    assert_eq!(rows[0].outcome, "NO_RESPONSE");
    assert_eq!(rows[1].outcome, "ACCEPTED");
    assert!(rows.iter().all(|e| e.anomalies.is_none()), "{rows:#?}");
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
    assert_eq!(post.outcome, "TOOL_SUCCESS");
    assert_eq!(post.stream_end, "fin", "records how the first stream ended");
    assert_eq!(post.ts_response, Some(t_answer));
    assert_eq!(post.sse_events, 2);
    let get = &rows[1];
    assert_eq!(get.kind, "stream");
    assert_eq!(get.inference.last_event_id.as_deref(), Some("ev-1"));
    assert_eq!(get.inference.resumes, Some(post.exchange_id));
    assert_eq!(get.outcome, "ACCEPTED");
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
        (rows[0].outcome, rows[0].error_code),
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
    assert_eq!((e.outcome, e.layer), ("INPUT_REQUIRED", "interaction"));
    assert_eq!(e.result_type.as_deref(), Some("input_required"));
    let e = tool_json(
        200,
        "application/json",
        r#"{"jsonrpc":"2.0","id":1,"result":{"resultType":"task","taskId":"t"}}"#,
    );
    assert_eq!((e.outcome, e.layer), ("TASK_CREATED", "interaction"));
}

#[test]
fn outcome_tool_results() {
    let e = tool_json(
        200,
        "application/json",
        r#"{"jsonrpc":"2.0","id":1,"result":{"content":"not-an-array"}}"#,
    );
    assert_eq!((e.outcome, e.layer), ("INVALID_TOOL_RESULT", "application"));
    let e = tool_json(
        200,
        "application/json",
        r#"{"jsonrpc":"2.0","id":1,"result":{"content":[],"isError":true}}"#,
    );
    assert_eq!((e.outcome, e.is_error), ("TOOL_ERROR", Some(true)));
    let e = tool_json(200, "application/json", &ok_tool(1));
    assert_eq!(
        (e.outcome, e.result_type.as_deref()),
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
        (rows[0].outcome, rows[0].jsonrpc_id.as_deref()),
        ("RPC_SUCCESS", Some("\"a\""))
    );
    assert_eq!((rows[1].kind, rows[1].outcome), ("stream", "STREAM_OPEN"));
    assert_eq!(rows[1].stream_end, "capture_end");
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
    assert_eq!((rows[1].kind, rows[1].outcome), ("stream", "HTTP_ERROR"));
    assert_eq!((rows[2].kind, rows[2].outcome), ("session_end", "ACCEPTED"));
}

// ---- detection, sessions, server requests ----------------------------------

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
    assert_eq!(rows[1].kind, "http");
    assert_eq!(
        (rows[1].outcome, rows[1].error_code),
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
        assert_eq!(e.transport, "streamable_http");
    }
    assert_eq!(rows[0].outcome, "RPC_SUCCESS");
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
    assert_eq!(rows[0].outcome, "TOOL_SUCCESS");
    assert_eq!(rows[0].sse_events, 2);
    let resp = &rows[1];
    assert_eq!((resp.kind, resp.outcome), ("response", "ACCEPTED"));
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
    assert_eq!((rows[0].attempt, rows[0].retry_origin), (1, "none"));
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
    assert!(rows.iter().all(|e| e.outcome == "STREAM_INCOMPLETE"));
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
    assert_eq!(rows[0].outcome, "MALFORMED_JSON");
    assert!(stats.anomalies.contains_key("rpc.sse_unterminated_event"));
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
    let post = rows.iter().find(|e| e.kind == "request").unwrap();
    assert_eq!(post.outcome, "TOOL_SUCCESS");
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
    let post = rows.iter().find(|e| e.kind == "request").unwrap();
    assert_eq!(post.outcome, "STREAM_INCOMPLETE");
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
        .map(|e| (e.http_method.as_str(), e.path.as_str(), e.kind, e.outcome))
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

proptest::proptest! {
    /// Random event sequences (bodies from MCP-ish fragments, events in any
    /// order, some for unknown exchanges) never panic, and the rows are
    /// numbered 1..n in request order.
    #[test]
    fn random_event_sequences_never_panic(
        steps in proptest::collection::vec((0u8..7, 0u32..4, 0usize..12, 0usize..12), 0..60)
    ) {
        const BODIES: [&str; 12] = [
            r#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"x"}}"#,
            r#"{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":1}}"#,
            r#"{"jsonrpc":"2.0","id":1,"result":{"content":[]}}"#,
            r#"[{"jsonrpc":"2.0","id":2,"method":"a"},{"jsonrpc":"2.0","id":2,"method":"a"}]"#,
            "event: endpoint\ndata: /m?sessionId=s\n\n",
            "data: {\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{}}\n\n",
            "id: e1\ndata: {\"jsonrpc\":\"2.0\",\"id\":0,\"method\":\"sampling/createMessage\"}\n\n",
            "data: not json\r\n\r\n",
            "{",
            "",
            "[]",
            r#"{"jsonrpc":"2.0","id":null,"error":{"code":1,"message":"m"}}"#,
        ];
        const HEADERS: [&[(&str, &str)]; 4] = [
            &[],
            &[("mcp-session-id", "S"), ("accept", "text/event-stream")],
            &[("accept", "text/event-stream"), ("last-event-id", "e1")],
            &[("content-type", "text/event-stream")],
        ];
        let mut r = Run::new();
        let mut conns = [r.conn(), r.conn(), r.conn(), r.conn()];
        let mut requests = 0usize;
        for (op, ci, a, b) in steps {
            let c = &mut conns[ci as usize];
            match op {
                0 => { r.post(c, HEADERS[b % 4], BODIES[a]); requests += 1; }
                1 => { r.request(c, "GET", if a % 2 == 0 { "/mcp" } else { "/sse" }, HEADERS[b % 4], ""); requests += 1; }
                2 => { let c = c.clone(); r.head(&c, [200, 202, 404, 500][a % 4], HEADERS[b % 4]); }
                3 => { let c = c.clone(); r.body(&c, BODIES[a]); }
                4 => { let c = c.clone(); r.end(&c, [BodyEnd::Complete, BodyEnd::Fin, BodyEnd::Rst, BodyEnd::Gap][a % 4]); }
                5 => { let c = c.clone(); r.no_response(&c, BodyEnd::Rst); }
                _ => { r.request(c, "DELETE", "/mcp", HEADERS[1], ""); requests += 1; }
            }
        }
        let (rows, _) = r.finish();
        proptest::prop_assert!(rows.len() <= requests * 2);
        for (n, e) in rows.iter().enumerate() {
            proptest::prop_assert_eq!(e.exchange_id, n as u64 + 1);
            proptest::prop_assert!(!e.outcome.is_empty() && !e.layer.is_empty());
            proptest::prop_assert!(!e.session_key.is_empty());
        }
    }
}

/// Rough throughput measurement (run with `--ignored --nocapture`).
#[test]
#[ignore]
fn throughput_100k_exchanges() {
    let mut r = Run::new();
    let mut c = r.conn();
    let n = 100_000u64;
    let start = std::time::Instant::now();
    for id in 0..n {
        r.post(&mut c, &[("mcp-session-id", "S")], &call(id, "echo"));
        r.sse_head(&c);
        r.event(&c, &ok_tool(id));
        r.end(&c, BodyEnd::Complete);
    }
    let (rows, _) = r.finish();
    let el = start.elapsed();
    assert_eq!(rows.len() as u64, n);
    eprintln!(
        "{n} SSE exchanges in {el:?} ({:.0}/s)",
        n as f64 / el.as_secs_f64()
    );
}

// ---- release as rows become final (streaming) ----------------------------------------------

impl Run {
    /// Capture time jumps forward by `us`.
    fn advance(&mut self, us: i64) {
        self.t += us;
    }

    /// The rows released as of the current capture time.
    fn drain(&mut self) -> Vec<Exchange> {
        let mut out = Vec::new();
        self.a.drain_ready(self.t, &mut self.stats, &mut out);
        out.into_iter().map(|ex| *ex).collect()
    }

    /// One `tools/call` in session S answered with JSON.
    fn json_call(&mut self, id: u64) {
        let mut c = self.conn();
        self.post(&mut c, &[("mcp-session-id", "S")], &call(id, "echo"));
        self.json(&c, 200, &ok_tool(id));
    }
}

fn ids(rows: &[Exchange]) -> Vec<u64> {
    rows.iter().map(|e| e.exchange_id).collect()
}

/// Every column (JSON) of rows sorted by id, for comparing streamed and batch runs.
fn as_json(rows: &[Exchange]) -> Vec<String> {
    let mut rows = rows.to_vec();
    rows.sort_by_key(|e| e.exchange_id);
    rows.iter()
        .map(|e| serde_json::to_string(e).unwrap())
        .collect()
}

#[test]
fn final_rows_are_released_in_id_order_after_the_slack() {
    let mut r = Run::new();
    for id in 1..=3 {
        r.json_call(id);
    }
    assert!(r.drain().is_empty(), "younger than REORDER_SLACK_US");
    r.advance(REORDER_SLACK_US);
    let first = r.drain();
    assert_eq!(ids(&first), vec![1, 2, 3]);
    assert!(first.iter().all(|e| e.outcome == "TOOL_SUCCESS"));
    r.json_call(4);
    r.advance(REORDER_SLACK_US);
    assert_eq!(ids(&r.drain()), vec![4]);
    let (rest, _) = r.finish();
    assert!(rest.is_empty(), "{rest:#?}");
}

/// A request created late (slow upload) with an earlier first byte than a released row
/// still sorts before rows not yet released.
#[test]
fn rows_are_ordered_by_first_byte_within_the_slack() {
    let mut r = Run::new();
    r.json_call(1);
    let t_late = T0; // first byte before call 1's
    let mut c = r.conn();
    c.depth += 1;
    let req = HttpRequest {
        xref: Run::xref(&c),
        ts_first_us: t_late,
        ts_last_us: r.t,
        frame: 0,
        head: RequestHead {
            method: "POST".into(),
            uri: "/mcp".into(),
            version: "1.1".into(),
            headers: hdrs(&[("mcp-session-id", "S")]),
        },
        body: call(2, "slow").into_bytes(),
        wire_len: 10,
        complete: true,
        anomalies: vec![],
    };
    r.a.push(HttpEvent::Request(req), &mut r.stats);
    r.json(&c, 200, &ok_tool(2));
    r.advance(REORDER_SLACK_US);
    let rows = r.drain();
    assert_eq!(ids(&rows), vec![1, 2]);
    assert_eq!(rows[0].tool_name.as_deref(), Some("slow"));
}

/// A GET stream open for the whole capture does not hold back the calls behind it: they are
/// released as they end, the stream's id is reserved once it is older than HOLD_LIMIT_US,
/// and the result equals the batch run's.
#[test]
fn long_open_get_stream_does_not_block() {
    let script = |r: &mut Run, stream: bool| -> Vec<Exchange> {
        let mut got = Vec::new();
        let mut g = r.conn();
        let h = [("mcp-session-id", "S"), ("accept", "text/event-stream")];
        r.request(&mut g, "GET", "/mcp", &h, "");
        r.sse_head(&g);
        for id in 1..=100 {
            r.advance(1_500_000);
            r.json_call(id);
            if stream {
                got.extend(r.drain());
            }
        }
        r.end(&g, BodyEnd::Fin);
        got
    };
    let mut batch_run = Run::new();
    script(&mut batch_run, false);
    let (batch, _) = batch_run.finish();
    assert_eq!(batch.len(), 101);
    assert_eq!(batch[0].kind, "stream");

    let mut r = Run::new();
    let early = script(&mut r, true);
    // 150 s of calls: all but the last slack's worth left before the end.
    assert!(early.len() >= 95, "{}", early.len());
    assert!(early.iter().all(|e| e.kind == "request"));
    assert_eq!(early[0].exchange_id, 2, "id 1 is the stream's, reserved");
    assert!(r.a.rows.map.len() < 10, "released rows are not kept");
    let (rest, _) = r.finish();
    assert_eq!(rest.first().map(|e| e.kind), Some("stream"));
    let all: Vec<Exchange> = early.into_iter().chain(rest).collect();
    assert_eq!(as_json(&all), as_json(&batch));
}

fn broken_stream_then_resume(gap_us: i64) -> (Vec<Exchange>, Vec<Exchange>) {
    let mut r = Run::new();
    let sid = [("mcp-session-id", "S"), ("accept", "text/event-stream")];
    let mut c = r.conn();
    r.post(&mut c, &sid, &call(4, "long"));
    r.sse_head(&c);
    r.body(&c, "id: ev-1\ndata: \n\n");
    r.end(&c, BodyEnd::Fin);
    let mut early = Vec::new();
    // Time passes in steps, with other traffic draining.
    let steps = gap_us / 1_000_000;
    for _ in 0..steps {
        r.advance(1_000_000);
        early.extend(r.drain());
    }
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
    r.end(&g, BodyEnd::Complete);
    r.advance(REORDER_SLACK_US);
    early.extend(r.drain());
    let (rest, _) = r.finish();
    (early, rest)
}

#[test]
fn stream_incomplete_completed_by_resume_within_the_hold() {
    let (early, rest) = broken_stream_then_resume(30_000_000);
    assert!(rest.is_empty(), "{rest:#?}");
    assert_eq!(ids(&early), vec![1, 2]);
    assert_eq!(
        early[0].outcome, "TOOL_SUCCESS",
        "completed by the resumed GET"
    );
    assert!(early[0].final_response);
    assert_eq!(early[1].kind, "stream");
    assert_eq!(early[1].retry_of, Some(1));
    assert_eq!(early[1].retry_origin, "sdk");
}

#[test]
fn stream_incomplete_after_the_hold_is_released_as_is() {
    let (early, rest) = broken_stream_then_resume(STREAM_RESUME_HOLD_US + 5_000_000);
    assert!(rest.is_empty(), "{rest:#?}");
    assert_eq!(ids(&early), vec![1, 2]);
    assert_eq!(early[0].outcome, "STREAM_INCOMPLETE");
    // The resumed GET still names the exchange it resumes.
    assert_eq!(early[1].inference.resumes, Some(1));
    assert_eq!(early[1].retry_of, Some(1));
}

#[test]
fn unanswered_request_is_released_at_finish() {
    let mut r = Run::new();
    let mut c = r.conn();
    r.post(&mut c, &[("mcp-session-id", "S")], &call(1, "never"));
    r.advance(10_000_000);
    r.json_call(2);
    r.advance(REORDER_SLACK_US);
    assert!(
        r.drain().is_empty(),
        "the open head holds the rows behind it"
    );
    let (rows, _) = r.finish();
    assert_eq!(ids(&rows), vec![1, 2]);
    assert_eq!(rows[0].outcome, "NO_RESPONSE");
    assert_eq!(rows[0].stream_end, "none");
    assert_eq!(rows[1].outcome, "TOOL_SUCCESS");
}

/// An unanswered request older than HOLD_LIMIT_US is set aside with its id; retry inference
/// sees it as unanswered, so the same call sent again is an application retry of it.
#[test]
fn unanswered_request_set_aside_keeps_its_id() {
    let mut r = Run::new();
    let mut c = r.conn();
    r.post(&mut c, &[("mcp-session-id", "S")], &call(1, "echo"));
    r.advance(HOLD_LIMIT_US + 1_000_000);
    r.json_call(2);
    r.advance(REORDER_SLACK_US);
    let early = r.drain();
    assert_eq!(ids(&early), vec![2]);
    assert_eq!(early[0].retry_of, Some(1));
    assert_eq!(early[0].retry_origin, "application");
    r.no_response(&c, BodyEnd::Rst);
    r.advance(ASIDE_SCAN_INTERVAL_US);
    let late = r.drain();
    assert_eq!(ids(&late), vec![1]);
    assert_eq!(late[0].outcome, "NO_RESPONSE");
    assert_eq!(late[0].stream_end, "none");
    assert!(r.finish().0.is_empty());
}

/// A preflight to an endpoint that never turns out to be MCP is dropped after
/// TENTATIVE_HOLD_US without holding back the rows behind it longer.
#[test]
fn unconfirmed_preflight_is_dropped_after_its_hold() {
    let mut r = Run::new();
    let mut o = r.conn();
    r.request(&mut o, "OPTIONS", "/other", &[], "");
    r.json(&o, 204, "");
    r.json_call(1);
    r.advance(REORDER_SLACK_US);
    assert!(r.drain().is_empty());
    r.advance(TENTATIVE_HOLD_US);
    let rows = r.drain();
    assert_eq!(ids(&rows), vec![1]);
    assert_eq!(rows[0].kind, "request");
}

proptest::proptest! {
    /// Draining after every event, with time jumping, numbers the rows 1..n exactly once, and
    /// with no jump beyond the holds gives exactly the batch rows.
    #[test]
    fn streamed_release_numbers_every_row_once(
        steps in proptest::collection::vec((0u8..8, 0u32..4, 0usize..6, 0u8..4), 0..80),
        jumps in proptest::bool::ANY,
    ) {
        const BODIES: [&str; 6] = [
            r#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"x"}}"#,
            r#"{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"x"}}"#,
            r#"{"jsonrpc":"2.0","id":1,"result":{"content":[]}}"#,
            "id: e1\ndata: {\"jsonrpc\":\"2.0\",\"id\":2,\"result\":{}}\n\n",
            "id: e1\ndata: \n\n",
            r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#,
        ];
        const HEADERS: [&[(&str, &str)]; 4] = [
            &[("mcp-session-id", "S")],
            &[("mcp-session-id", "S"), ("accept", "text/event-stream")],
            &[("mcp-session-id", "S"), ("accept", "text/event-stream"), ("last-event-id", "e1")],
            &[("content-type", "text/event-stream")],
        ];
        let play = |stream: bool| {
            let mut r = Run::new();
            let mut conns = [r.conn(), r.conn(), r.conn(), r.conn()];
            let mut got = Vec::new();
            for &(op, ci, a, b) in &steps {
                let c = &mut conns[ci as usize];
                match op {
                    0 | 1 => r.post(c, HEADERS[usize::from(b) % 2], BODIES[a]),
                    2 => r.request(c, "GET", "/mcp", HEADERS[usize::from(b) % 3], ""),
                    3 => { let c = c.clone(); r.head(&c, [200, 202, 404, 503][usize::from(b)], HEADERS[3]); }
                    4 => { let c = c.clone(); r.body(&c, BODIES[a]); }
                    5 => { let c = c.clone(); r.end(&c, [BodyEnd::Complete, BodyEnd::Fin, BodyEnd::Rst, BodyEnd::Gap][usize::from(b)]); }
                    6 => { let c = c.clone(); r.no_response(&c, BodyEnd::Rst); }
                    _ => r.advance(if jumps { 20_000_000 } else { 300_000 } * i64::from(b)),
                }
                if stream {
                    got.extend(r.drain());
                }
            }
            let (rest, _) = r.finish();
            got.extend(rest);
            got
        };
        let streamed = play(true);
        let mut got = ids(&streamed);
        got.sort_unstable();
        let n = streamed.len() as u64;
        proptest::prop_assert_eq!(got, (1..=n).collect::<Vec<_>>());
        if !jumps {
            proptest::prop_assert_eq!(as_json(&streamed), as_json(&play(false)));
        }
    }
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

// ---- release marks -------------------------------------------------------------------------

impl Run {
    /// The capture time the next `json_call` request starts at.
    fn next_start(&self) -> i64 {
        self.t + 1000
    }
}

#[test]
fn a_release_mark_frees_rows_older_than_the_earliest_request_under_way() {
    let mut r = Run::new();
    for id in 1..=3 {
        r.json_call(id);
    }
    // Nothing under way, but the rows are younger than RELEASE_MARK_MIN_AGE_US.
    r.a.set_release_mark(None);
    assert!(r.drain().is_empty());
    r.advance(RELEASE_MARK_MIN_AGE_US);
    let fourth = r.next_start();
    r.json_call(4);
    r.a.set_release_mark(None);
    assert_eq!(
        ids(&r.drain()),
        vec![1, 2, 3],
        "old enough, long before the slack"
    );
    r.advance(RELEASE_MARK_MIN_AGE_US);
    r.json_call(5);
    // A request that began just before the fourth is still under way: the fourth waits.
    r.a.set_release_mark(Some(fourth - 1));
    assert!(r.drain().is_empty());
    r.a.set_release_mark(None);
    assert_eq!(ids(&r.drain()), vec![4]);
    // Without a new mark the fifth waits out the slack, as rows without marks do.
    r.advance(REORDER_SLACK_US);
    assert_eq!(ids(&r.drain()), vec![5]);
    let (rest, _) = r.finish();
    assert!(rest.is_empty(), "{rest:#?}");
}

#[test]
fn a_step_back_of_the_clock_makes_marks_wait_twice_as_long() {
    let mut r = Run::new();
    r.json_call(1);
    // A request whose packets are stamped about 100 ms before the latest event.
    r.t -= 100_000;
    let stepped_back = r.next_start();
    r.json_call(2);
    r.t += 100_000;
    r.json_call(3);
    r.advance(150_000);
    r.json_call(4);
    r.a.set_release_mark(None);
    // Marks now free rows about 200 ms old: only the stepped-back one (about 255 ms).
    let first = r.drain();
    assert_eq!(ids(&first), vec![1]);
    assert_eq!(first[0].ts_request, stepped_back);
    r.advance(60_000);
    r.json_call(5);
    r.a.set_release_mark(None);
    let second = r.drain();
    assert_eq!(
        ids(&second),
        vec![2, 3],
        "about 215 ms old; the fourth is 60 ms old"
    );
    assert!(second[0].ts_request < second[1].ts_request);
}
