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
