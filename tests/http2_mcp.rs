//! An MCP session over HTTP/2 with prior knowledge (h2c), through the whole pipeline:
//! concurrent tool calls on one connection answered out of order, a 503 retried by the
//! application, and a call the client abandons with RST_STREAM(CANCEL). The rows are those
//! HTTP/1.1 gives for the same calls. Header blocks come from a tiny literal-only HPACK
//! encoder.

use crate::support::{Capture, Conn, analyze};

fn hpack_int(out: &mut Vec<u8>, value: usize) {
    if value < 127 {
        out.push(value as u8);
        return;
    }
    out.push(127);
    let mut v = value - 127;
    while v >= 128 {
        out.push((v % 128 + 128) as u8);
        v /= 128;
    }
    out.push(v as u8);
}

/// Literal header fields without indexing, new names (RFC 7541 §6.2.2).
fn block(fields: &[(&str, &str)]) -> Vec<u8> {
    let mut out = Vec::new();
    for (n, v) in fields {
        out.push(0);
        hpack_int(&mut out, n.len());
        out.extend_from_slice(n.as_bytes());
        hpack_int(&mut out, v.len());
        out.extend_from_slice(v.as_bytes());
    }
    out
}

fn frame(kind: u8, flags: u8, stream: u32, payload: &[u8]) -> Vec<u8> {
    let len = payload.len() as u32;
    let mut v = vec![(len >> 16) as u8, (len >> 8) as u8, len as u8, kind, flags];
    v.extend_from_slice(&stream.to_be_bytes());
    v.extend_from_slice(payload);
    v
}

const DATA: u8 = 0;
const HEADERS: u8 = 1;
const RST_STREAM: u8 = 3;
const SETTINGS: u8 = 4;
const END_STREAM: u8 = 1;
const END_HEADERS: u8 = 4;

fn post(cap: &mut Capture, c: &mut Conn, stream: u32, session: Option<&str>, body: &str) {
    let mut fields = vec![
        (":method", "POST"),
        (":scheme", "http"),
        (":authority", "10.0.0.2:8000"),
        (":path", "/mcp"),
        ("content-type", "application/json"),
        ("accept", "application/json, text/event-stream"),
        ("user-agent", "python-httpx/0.28"),
    ];
    if let Some(s) = session {
        fields.push(("mcp-session-id", s));
    }
    let mut bytes = frame(HEADERS, END_HEADERS, stream, &block(&fields));
    bytes.extend(frame(DATA, END_STREAM, stream, body.as_bytes()));
    cap.send(c, true, &bytes);
}

fn respond(cap: &mut Capture, c: &mut Conn, stream: u32, status: &str, body: &str) {
    let mut fields = vec![(":status", status)];
    if !body.is_empty() {
        fields.push(("content-type", "application/json"));
    }
    fields.push(("mcp-session-id", "s-1"));
    let flags = END_HEADERS | if body.is_empty() { END_STREAM } else { 0 };
    let mut bytes = frame(HEADERS, flags, stream, &block(&fields));
    if !body.is_empty() {
        bytes.extend(frame(DATA, END_STREAM, stream, body.as_bytes()));
    }
    cap.send(c, false, &bytes);
}

fn call(id: u32, text: &str) -> String {
    format!(
        r#"{{"jsonrpc":"2.0","id":{id},"method":"tools/call","params":{{"name":"echo","arguments":{{"text":"{text}"}}}}}}"#
    )
}

fn result(id: u32, text: &str) -> String {
    format!(
        r#"{{"jsonrpc":"2.0","id":{id},"result":{{"content":[{{"type":"text","text":"{text}"}}],"isError":false}}}}"#
    )
}

#[test]
fn an_mcp_session_over_h2c_gives_the_rows_http1_gives() {
    let rows = analyze(|cap| {
        let mut c = cap.connect(8000);
        let mut start = b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n".to_vec();
        start.extend(frame(SETTINGS, 0, 0, &[]));
        cap.send(&mut c, true, &start);
        let mut settings = frame(SETTINGS, 0, 0, &[]);
        settings.extend(frame(SETTINGS, 1, 0, &[]));
        cap.send(&mut c, false, &settings);
        post(
            cap,
            &mut c,
            1,
            None,
            r#"{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}"#,
        );
        cap.wait_ms(5);
        respond(
            cap,
            &mut c,
            1,
            "200",
            r#"{"jsonrpc":"2.0","id":0,"result":{"protocolVersion":"2025-06-18","capabilities":{"tools":{}},"serverInfo":{"name":"s","version":"1"}}}"#,
        );
        cap.wait_ms(5);
        post(
            cap,
            &mut c,
            3,
            Some("s-1"),
            r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#,
        );
        respond(cap, &mut c, 3, "202", "");
        cap.wait_ms(5);
        // Two calls at once; the second is answered first.
        post(cap, &mut c, 5, Some("s-1"), &call(1, "a"));
        post(cap, &mut c, 7, Some("s-1"), &call(2, "b"));
        cap.wait_ms(5);
        respond(cap, &mut c, 7, "200", &result(2, "b"));
        respond(cap, &mut c, 5, "503", "");
        // The application retries the failed call on a new stream.
        cap.wait_ms(300);
        post(cap, &mut c, 9, Some("s-1"), &call(3, "a"));
        cap.wait_ms(5);
        respond(cap, &mut c, 9, "200", &result(3, "a"));
        // A call the client abandons.
        cap.wait_ms(5);
        post(cap, &mut c, 11, Some("s-1"), &call(4, "slow"));
        cap.wait_ms(50);
        cap.send(&mut c, true, &frame(RST_STREAM, 0, 11, &8u32.to_be_bytes()));
        cap.wait_ms(5);
        cap.close(&mut c, false);
    });
    let brief: Vec<(String, String, Option<u64>)> = rows
        .iter()
        .map(|r| {
            (
                r["rpc_method"].as_str().unwrap_or("-").to_string(),
                r["outcome"].as_str().unwrap_or("-").to_string(),
                r["http_status"].as_u64(),
            )
        })
        .collect();
    let s = |m: &str, o: &str, st: Option<u64>| (m.to_string(), o.to_string(), st);
    assert_eq!(
        brief,
        vec![
            s("initialize", "RPC_SUCCESS", Some(200)),
            s("notifications/initialized", "ACCEPTED", Some(202)),
            s("tools/call", "HTTP_ERROR", Some(503)),
            s("tools/call", "TOOL_SUCCESS", Some(200)),
            s("tools/call", "TOOL_SUCCESS", Some(200)),
            s("tools/call", "NO_RESPONSE", None),
        ],
        "{rows:#?}"
    );
    // The retry is found across streams of the one connection.
    assert_eq!(rows[4]["attempt"], 2, "{:#?}", rows[4]);
    assert_eq!(rows[4]["retry_of"], rows[2]["exchange_id"]);
    // The abandoned call: no response, the client ended it (as a client's close before the
    // response reads over HTTP/1.1 at this protocol revision).
    assert_eq!(rows[5]["outcome"], "NO_RESPONSE");
    assert_eq!(rows[5]["anomalies"], "mcp.client_closed_before_response");
    assert!(
        rows.iter()
            .all(|r| r["session_id"] == "s-1" || r["rpc_method"] == "initialize"),
        "{rows:#?}"
    );
}
