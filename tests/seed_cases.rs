//! Integration tests: the seed cases of issue 5, end to end. Each builds a
//! capture (packets on the wire), runs `mcp-trace analyze <pcap> -o out.jsonl`
//! and checks the row it writes.
#![allow(clippy::unwrap_used, clippy::indexing_slicing)]

use crate::support;

use serde_json::{Value, json};
use support::{Capture, Conn, analyze};

const CALL: &str = r#"{"method":"tools/call","params":{"name":"run_configured_test_scenario","arguments":{}},"jsonrpc":"2.0","id":1}"#;

fn call(id: u64) -> String {
    CALL.replace(r#""id":1"#, &format!(r#""id":{id}"#))
}

/// One tools/call (id 1) on a fresh connection, answered by `respond`.
fn one_call(respond: impl FnOnce(&mut Conn, &mut Capture)) -> Value {
    let rows = analyze(|cap| {
        let mut c = cap.connect(8080);
        c.post(cap, &[], CALL);
        cap.wait_ms(5);
        respond(&mut c, cap);
        cap.close(&mut c, false);
    });
    assert_eq!(rows.len(), 1, "rows: {rows:#?}");
    rows.into_iter().next().unwrap()
}

/// Check the listed columns of `row`.
fn check(row: &Value, want: Value) {
    for (k, v) in want.as_object().unwrap() {
        assert_eq!(row.get(k), Some(v), "column {k} of row {row:#}");
    }
}

#[test]
fn seed_tool_success() {
    let row = one_call(|c, cap| {
        c.respond_json(cap, 200, r#"{"jsonrpc":"2.0","id":1,"result":{"content":[{"type":"text","text":"{\"scenarioId\":\"baseline\"}"}]}}"#)
    });
    check(
        &row,
        json!({"outcome":"TOOL_SUCCESS","layer":"application","http_status":200,"kind":"request",
               "jsonrpc_id":"1","rpc_method":"tools/call","tool_name":"run_configured_test_scenario",
               "final_response":true,"is_error":null,"error_code":null,"stream_end":"none",
               "content_type":"application/json","exchange_id":1,"attempt":1,"retry_origin":"none",
               "client_addr":"10.0.0.1:40001","server_addr":"10.0.0.2:8080","path":"/mcp",
               "request_bytes":CALL.len()}),
    );
    assert!(row["latency_ms"].as_f64().unwrap() >= 5.0);
}

#[test]
fn seed_503_then_explicit_second_post() {
    let rows = analyze(|cap| {
        let mut c = cap.connect(8080);
        c.post(cap, &[], &call(1));
        c.respond(cap, 503, "", "");
        cap.wait_ms(3000);
        c.post(cap, &[], &call(2));
        c.respond_json(
            cap,
            200,
            r#"{"jsonrpc":"2.0","id":2,"result":{"content":[{"type":"text","text":"ok"}]}}"#,
        );
        cap.close(&mut c, false);
    });
    assert_eq!(rows.len(), 2);
    check(
        &rows[0],
        json!({"outcome":"HTTP_ERROR","layer":"transport","http_status":503,"jsonrpc_id":"1","error_code":null,"final_response":false}),
    );
    check(
        &rows[1],
        json!({"outcome":"TOOL_SUCCESS","http_status":200,"jsonrpc_id":"2"}),
    );
    // Sent explicitly with a new id: nothing may call it an automatic (SDK) retry.
    for r in &rows {
        assert_ne!(r["retry_origin"], "sdk", "{r:#}");
    }
    assert_eq!(rows[0]["retry_origin"], "none");
}

#[test]
fn seed_jsonrpc_error_32602() {
    let row = one_call(|c, cap| {
        c.respond_json(
            cap,
            200,
            r#"{"jsonrpc":"2.0","id":1,"error":{"code":-32602,"message":"Invalid params"}}"#,
        )
    });
    check(
        &row,
        json!({"outcome":"JSONRPC_ERROR","layer":"protocol","http_status":200,"error_code":-32602,"error_message":"Invalid params","final_response":true}),
    );
}

#[test]
fn seed_tool_error() {
    let row = one_call(|c, cap| {
        c.respond_json(cap, 200, r#"{"jsonrpc":"2.0","id":1,"result":{"isError":true,"content":[{"type":"text","text":"Tool-side failure"}]}}"#)
    });
    check(
        &row,
        json!({"outcome":"TOOL_ERROR","layer":"application","is_error":true,"error_code":null,"final_response":true}),
    );
}

#[test]
fn seed_500_with_success_body() {
    let row = one_call(|c, cap| {
        c.respond_json(
            cap,
            500,
            r#"{"jsonrpc":"2.0","id":1,"result":{"content":[]}}"#,
        )
    });
    check(
        &row,
        json!({"outcome":"HTTP_ERROR","layer":"transport","http_status":500,"error_code":null}),
    );
}

#[test]
fn seed_malformed_json() {
    let row = one_call(|c, cap| {
        c.respond_json(cap, 200, r#"{"jsonrpc":"2.0","id":1,"result":{"content":["#)
    });
    check(
        &row,
        json!({"outcome":"MALFORMED_JSON","layer":"protocol","http_status":200,"final_response":false}),
    );
}

#[test]
fn seed_both_result_and_error() {
    let row = one_call(|c, cap| {
        c.respond_json(cap, 200, r#"{"jsonrpc":"2.0","id":1,"result":{"content":[]},"error":{"code":-32603,"message":"x"}}"#)
    });
    check(
        &row,
        json!({"outcome":"INVALID_ENVELOPE","layer":"protocol","error_message":"both result and error"}),
    );
}

#[test]
fn seed_response_id_differs() {
    let row = one_call(|c, cap| {
        c.respond_json(
            cap,
            200,
            r#"{"jsonrpc":"2.0","id":2,"result":{"content":[]}}"#,
        )
    });
    check(
        &row,
        json!({"outcome":"INVALID_ENVELOPE","jsonrpc_id":"1","error_message":"response id 2 does not match request id 1"}),
    );
}

#[test]
fn seed_input_required() {
    let row = one_call(|c, cap| {
        c.respond_json(cap, 200, r#"{"jsonrpc":"2.0","id":1,"result":{"resultType":"input_required","inputRequests":{"elicitation":{"method":"elicitation/create","params":{"mode":"form","message":"Approve?","requestedSchema":{"type":"object","properties":{}}}}},"requestState":"awaiting-elicitation"}}"#)
    });
    check(
        &row,
        json!({"outcome":"INPUT_REQUIRED","layer":"interaction","result_type":"input_required","final_response":true}),
    );
}

#[test]
fn seed_legacy_result_without_result_type() {
    let row = one_call(|c, cap| {
        c.respond_json(
            cap,
            200,
            r#"{"jsonrpc":"2.0","id":1,"result":{"content":[{"type":"text","text":"hi"}]}}"#,
        )
    });
    check(
        &row,
        json!({"outcome":"TOOL_SUCCESS","result_type":null,"is_error":null}),
    );
}

#[test]
fn seed_content_not_an_array() {
    let row = one_call(|c, cap| {
        c.respond_json(
            cap,
            200,
            r#"{"jsonrpc":"2.0","id":1,"result":{"content":"not-an-array"}}"#,
        )
    });
    check(
        &row,
        json!({"outcome":"INVALID_TOOL_RESULT","layer":"application"}),
    );
}

#[test]
fn seed_sse_final_event_carries_error() {
    let row = one_call(|c, cap| {
        c.sse_head(cap);
        c.sse_raw(cap, ": keepalive\n\n");
        c.sse_event(cap, r#"{"jsonrpc":"2.0","method":"notifications/progress","params":{"progressToken":1,"progress":1}}"#);
        c.sse_event(
            cap,
            r#"{"jsonrpc":"2.0","id":1,"error":{"code":-32603,"message":"Internal error"}}"#,
        );
        c.sse_end(cap);
    });
    check(
        &row,
        json!({"outcome":"JSONRPC_ERROR","error_code":-32603,"content_type":"text/event-stream",
               "stream_end":"complete","final_response":true,"sse_events":2}),
    );
}

/// An SSE stream cut before the final response, ended by `cut`.
fn cut_stream(cut: impl FnOnce(&mut Conn, &mut Capture)) -> Value {
    let rows = analyze(|cap| {
        let mut c = cap.connect(8080);
        c.post(cap, &[], CALL);
        c.sse_head(cap);
        c.sse_event(cap, r#"{"jsonrpc":"2.0","method":"notifications/progress","params":{"progressToken":1,"progress":1}}"#);
        cut(&mut c, cap);
    });
    assert_eq!(rows.len(), 1, "rows: {rows:#?}");
    rows.into_iter().next().unwrap()
}

#[test]
fn seed_sse_cut_by_fin() {
    let row = cut_stream(|c, cap| cap.close(c, true));
    check(
        &row,
        json!({"outcome":"STREAM_INCOMPLETE","layer":"protocol","stream_end":"fin","final_response":false,"http_status":200,"sse_events":1}),
    );
}

#[test]
fn seed_sse_cut_by_rst() {
    let row = cut_stream(|c, cap| cap.reset(c, true));
    check(
        &row,
        json!({"outcome":"STREAM_INCOMPLETE","stream_end":"rst","final_response":false}),
    );
}

#[test]
fn seed_sse_cut_by_capture_end() {
    let row = cut_stream(|_, _| {});
    check(
        &row,
        json!({"outcome":"STREAM_INCOMPLETE","stream_end":"capture_end","final_response":false}),
    );
}

#[test]
fn seed_202_for_notification() {
    let rows = analyze(|cap| {
        let mut c = cap.connect(8080);
        c.post(
            cap,
            &[],
            r#"{"method":"notifications/initialized","jsonrpc":"2.0"}"#,
        );
        c.respond(cap, 202, "", "");
        cap.close(&mut c, false);
    });
    assert_eq!(rows.len(), 1);
    check(
        &rows[0],
        json!({"outcome":"ACCEPTED","layer":"protocol","kind":"notification","http_status":202,
               "jsonrpc_id":null,"rpc_method":"notifications/initialized","is_error":null,
               "result_type":null,"final_response":false,"anomalies":null}),
    );
}

#[test]
fn seed_legacy_http_sse() {
    let rows = analyze(|cap| {
        let mut g = cap.connect(3001);
        g.request(cap, "GET", "/sse", &[("Accept", "text/event-stream")], "");
        g.sse_head(cap);
        g.sse_raw(cap, "event: endpoint\ndata: /messages?sessionId=3f2a\n\n");
        let mut c = cap.connect(3001);
        c.request(
            cap,
            "POST",
            "/messages?sessionId=3f2a",
            &[("Content-Type", "application/json")],
            CALL,
        );
        c.respond(cap, 202, "text/plain", "Accepted");
        g.sse_event(
            cap,
            r#"{"jsonrpc":"2.0","id":1,"result":{"content":[{"type":"text","text":"ok"}]}}"#,
        );
        cap.close(&mut c, false);
    });
    assert_eq!(rows.len(), 2, "{rows:#?}");
    check(
        &rows[0],
        json!({"kind":"stream","transport":"legacy_sse","session_id":"3f2a","outcome":"STREAM_OPEN","stream_end":"capture_end"}),
    );
    check(
        &rows[1],
        json!({"kind":"request","transport":"legacy_sse","session_id":"3f2a","session_key":"legacy:3f2a",
               "http_status":202,"outcome":"TOOL_SUCCESS","final_response":true,"sse_events":1}),
    );
}

// ---- the client closes the response stream (report-schema.md section 3) ----

/// A 2026-07-28 tools/call: the `MCP-Protocol-Version` header and the `_meta` the revision requires.
const R5_CALL: &str = r#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"slow","arguments":{"steps":4},"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{},"io.modelcontextprotocol/clientInfo":{"name":"seed-client","version":"1.0.0"},"progressToken":1}}}"#;

const PROGRESS: &str = r#"{"jsonrpc":"2.0","method":"notifications/progress","params":{"progressToken":1,"progress":1,"total":4}}"#;

/// `headers`+`body` POSTed, an SSE 200 with one progress event, then the
/// client ends the connection with `client_end` before the final response.
fn client_cuts_stream(
    headers: &[(&str, &str)],
    body: &str,
    client_end: impl FnOnce(&mut Conn, &mut Capture),
) -> Value {
    let rows = analyze(|cap| {
        let mut c = cap.connect(8080);
        c.post(cap, headers, body);
        c.sse_head(cap);
        c.sse_event(cap, PROGRESS);
        cap.wait_ms(250);
        client_end(&mut c, cap);
    });
    assert_eq!(rows.len(), 1, "rows: {rows:#?}");
    rows.into_iter().next().unwrap()
}

/// The row's anomaly names.
fn anomalies(row: &Value) -> Vec<&str> {
    row["anomalies"]
        .as_str()
        .map(|a| a.split(';').collect())
        .unwrap_or_default()
}

const R5_HEADERS: [(&str, &str); 3] = [
    ("MCP-Protocol-Version", "2026-07-28"),
    ("Mcp-Method", "tools/call"),
    ("Mcp-Name", "slow"),
];

#[test]
fn seed_r5_client_fin_cancels() {
    // Client FIN first, then the server's.
    let row = client_cuts_stream(&R5_HEADERS, R5_CALL, |c, cap| cap.close(c, false));
    check(
        &row,
        json!({"outcome":"CANCELLED","layer":"protocol","stream_end":"fin","final_response":false,
               "http_status":200,"sse_events":1,"protocol_version":"2026-07-28","jsonrpc_id":"1",
               "tool_name":"slow","client_name":"seed-client"}),
    );
    assert!(row["error_message"].as_str().unwrap().contains("closed"));
    // The cut chunked body is named by the HTTP stage; no close anomaly on a cancellation.
    assert_eq!(anomalies(&row), ["http.truncated_body"]);
}

#[test]
fn seed_r5_client_rst_cancels() {
    let row = client_cuts_stream(&R5_HEADERS, R5_CALL, |c, cap| cap.reset(c, false));
    check(
        &row,
        json!({"outcome":"CANCELLED","layer":"protocol","stream_end":"rst","final_response":false}),
    );
}

#[test]
fn seed_r5_server_close_is_not_cancelled() {
    // The server ends the stream first: a broken stream, not a cancellation.
    let row = client_cuts_stream(&R5_HEADERS, R5_CALL, |c, cap| cap.close(c, true));
    check(
        &row,
        json!({"outcome":"STREAM_INCOMPLETE","stream_end":"fin"}),
    );
    assert_eq!(anomalies(&row), ["http.truncated_body"]);
    let row = client_cuts_stream(&R5_HEADERS, R5_CALL, |c, cap| cap.reset(c, true));
    check(
        &row,
        json!({"outcome":"STREAM_INCOMPLETE","stream_end":"rst"}),
    );
    assert!(!anomalies(&row).contains(&"mcp.client_closed_stream"));
}

#[test]
fn seed_2025_11_25_client_close_is_stream_incomplete() {
    // Before 2026-07-28 a disconnect is no cancellation (a client cancels
    // with notifications/cancelled); the row says who closed.
    let headers = [
        ("MCP-Protocol-Version", "2025-11-25"),
        ("Mcp-Session-Id", "4b1d"),
    ];
    for rst in [false, true] {
        let row = client_cuts_stream(&headers, CALL, |c, cap| {
            if rst {
                cap.reset(c, false)
            } else {
                cap.close(c, false)
            }
        });
        check(
            &row,
            json!({"outcome":"STREAM_INCOMPLETE","layer":"protocol","final_response":false,
                   "stream_end": if rst { "rst" } else { "fin" },
                   "protocol_version":"2025-11-25"}),
        );
        assert_eq!(
            anomalies(&row),
            ["http.truncated_body", "mcp.client_closed_stream"]
        );
    }
}

#[test]
fn seed_r5_client_close_before_response_head() {
    let rows = analyze(|cap| {
        let mut c = cap.connect(8080);
        c.post(cap, &R5_HEADERS, R5_CALL);
        cap.wait_ms(100);
        cap.reset(&mut c, false);
    });
    assert_eq!(rows.len(), 1, "{rows:#?}");
    check(
        &rows[0],
        json!({"outcome":"CANCELLED","http_status":null,"final_response":false}),
    );
}

/// Rows of a HAR document written to a temp dir.
fn analyze_har(har: &Value) -> Vec<Value> {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("seed.har");
    std::fs::write(&path, serde_json::to_vec(har).unwrap()).unwrap();
    support::run_analyze(&path)
}

/// A Chromium-style HAR entry: a POST answered 200 `text/event-stream`,
/// aborted by the page (`net::ERR_ABORTED`) with no body recorded.
fn aborted_har(headers: Value, body: &str) -> Value {
    json!({"log":{"version":"1.2","creator":{"name":"Playwright","version":"1.65.1"},"entries":[{
        "startedDateTime":"2026-11-29T20:38:54.872Z","time":260.5,
        "request":{"method":"POST","url":"http://127.0.0.1:18620/mcp","httpVersion":"HTTP/1.1",
            "cookies":[],"headers":headers,"queryString":[],"headersSize":-1,"bodySize":body.len(),
            "postData":{"mimeType":"application/json","text":body}},
        "response":{"status":200,"statusText":"OK","httpVersion":"HTTP/1.1","cookies":[],
            "headers":[{"name":"content-type","value":"text/event-stream"}],
            "content":{"size":-1,"mimeType":"text/event-stream"},"headersSize":-1,"bodySize":-1,
            "redirectURL":"","_failureText":"net::ERR_ABORTED"},
        "cache":{},"timings":{"send":0,"wait":13.6,"receive":-1}}]}})
}

#[test]
fn seed_har_aborted_fetch_per_revision() {
    let h = |pairs: &[(&str, &str)]| {
        let mut v: Vec<Value> = pairs
            .iter()
            .map(|(n, v)| json!({"name":n,"value":v}))
            .collect();
        v.push(json!({"name":"content-type","value":"application/json"}));
        v.push(json!({"name":"accept","value":"application/json, text/event-stream"}));
        Value::Array(v)
    };
    let rows = analyze_har(&aborted_har(h(&R5_HEADERS), R5_CALL));
    assert_eq!(rows.len(), 1, "{rows:#?}");
    check(
        &rows[0],
        json!({"outcome":"CANCELLED","http_status":200,"final_response":false}),
    );
    let rows = analyze_har(&aborted_har(
        h(&[("mcp-protocol-version", "2025-11-25")]),
        CALL,
    ));
    assert_eq!(rows.len(), 1, "{rows:#?}");
    check(&rows[0], json!({"outcome":"STREAM_INCOMPLETE"}));
    assert!(
        anomalies(&rows[0]).contains(&"mcp.client_closed_stream"),
        "{:#}",
        rows[0]
    );
}

#[test]
fn sample_chromium_abort_is_named_not_cancelled() {
    // samples/har-chromium-ts: the page aborts a 2025-11-25 fetch (id 4);
    // its truth says STREAM_INCOMPLETE. The HAR and the wire agree on who closed.
    let samples = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("samples");
    for name in ["har-chromium-ts.har", "har-chromium-ts.wire.pcap"] {
        let dir = tempfile::tempdir().unwrap();
        let rows = support::run_analyze_into(&samples.join(name), dir.path());
        let aborted: Vec<&Value> = rows
            .iter()
            .filter(|r| r["jsonrpc_id"] == "4" && r["rpc_method"] == "tools/call")
            .collect();
        assert_eq!(aborted.len(), 1, "{name}: {rows:#?}");
        let row = aborted[0];
        assert_eq!(row["outcome"], "STREAM_INCOMPLETE", "{name}: {row:#}");
        assert!(
            anomalies(row).contains(&"mcp.client_closed_stream"),
            "{name}: {row:#}"
        );
        // Nothing else in the run was closed early by the client.
        let others = rows
            .iter()
            .filter(|r| {
                r["anomalies"]
                    .as_str()
                    .is_some_and(|a| a.contains("client_closed"))
            })
            .count();
        assert_eq!(others, 1, "{name}: {rows:#?}");
    }
}
