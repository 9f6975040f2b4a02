//! Unit tests of the entry -> event mapping on small hand-written HARs.

use super::*;
use serde_json::{Value, json};

/// A HAR 1.2 document around `entries`.
fn har(entries: Value) -> Vec<u8> {
    serde_json::to_vec(&json!({"log": {"version": "1.2", "creator": {"name": "t", "version": "1"}, "entries": entries}})).unwrap()
}

/// A complete, strictly valid entry; tests patch what they need.
fn entry(started: &str, method: &str, url: &str) -> Value {
    json!({
        "startedDateTime": started, "time": 30.0,
        "request": {"method": method, "url": url, "httpVersion": "HTTP/1.1", "cookies": [],
            "headers": [{"name": "Content-Type", "value": "application/json"}],
            "queryString": [], "headersSize": -1, "bodySize": -1},
        "response": {"status": 200, "statusText": "OK", "httpVersion": "HTTP/1.1", "cookies": [],
            "headers": [{"name": "Content-Type", "value": "application/json"}],
            "content": {"size": 0, "mimeType": "application/json", "text": ""},
            "redirectURL": "", "headersSize": -1, "bodySize": -1},
        "cache": {}, "timings": {"blocked": -1, "dns": -1, "connect": -1, "send": 5, "wait": 20, "receive": 5}
    })
}

fn read(doc: &[u8]) -> (Vec<HttpEvent>, HttpCounters) {
    let mut stats = HttpCounters::default();
    let ev = read_har("t.har", doc, 100, &mut stats).unwrap();
    (ev, stats)
}

fn requests(ev: &[HttpEvent]) -> Vec<&HttpRequest> {
    ev.iter()
        .filter_map(|e| match e {
            HttpEvent::Request(r) => Some(r),
            _ => None,
        })
        .collect()
}

/// (end, wire_len, decoded_len, anomalies) of the first `ResponseEnd`.
fn response_end(ev: &[HttpEvent]) -> (BodyEnd, u64, u64, Vec<String>) {
    ev.iter()
        .find_map(|e| match e {
            HttpEvent::ResponseEnd {
                end,
                wire_len,
                decoded_len,
                anomalies,
                ..
            } => Some((*end, *wire_len, *decoded_len, anomalies.clone())),
            _ => None,
        })
        .unwrap()
}

fn response_body(ev: &[HttpEvent]) -> Vec<u8> {
    ev.iter()
        .filter_map(|e| match e {
            HttpEvent::ResponseBody { data, .. } => Some(data.clone()),
            _ => None,
        })
        .flatten()
        .collect()
}

#[test]
fn json_exchange_maps_every_field() {
    let mut e = entry(
        "2024-05-01T10:00:00.000Z",
        "POST",
        "https://api.example.com:8443/mcp?x=1",
    );
    e["serverIPAddress"] = json!("2001:db8::7");
    e["request"]["postData"] = json!({"mimeType": "application/json", "text": "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"ping\"}"});
    e["response"]["content"]["text"] = json!("{\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{}}");
    let (ev, stats) = read(&har(json!([e])));
    assert_eq!(ev.len(), 4, "{ev:#?}");
    let HttpEvent::Request(r) = &ev[0] else {
        panic!()
    };
    assert_eq!(r.xref.conn.conn, 100);
    assert_eq!(r.xref.conn.tcp_stream, None);
    assert_eq!(r.xref.conn.client_addr, "");
    assert_eq!(r.xref.conn.server_addr, "[2001:db8::7]:8443");
    assert_eq!(&*r.xref.conn.capture, "t.har");
    assert_eq!(r.xref.depth, 1);
    assert_eq!(
        (
            r.head.method.as_str(),
            r.head.uri.as_str(),
            r.head.version.as_ref()
        ),
        ("POST", "/mcp?x=1", "1.1")
    );
    // Host synthesised from the URL authority, first like an HTTP/1 client writes it.
    assert_eq!(
        r.head.headers.to_pairs()[0],
        ("Host".to_string(), "api.example.com:8443".to_string())
    );
    assert_eq!(
        r.body,
        b"{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"ping\"}"
    );
    assert_eq!(r.wire_len, r.body.len() as u64);
    assert!(r.complete && r.anomalies.is_empty());
    // start 10:00:00, end +30 ms, head = end - receive 5, request sent = head - wait 20
    let t0 = 1_714_557_600_000_000;
    assert_eq!((r.ts_first_us, r.ts_last_us), (t0, t0 + 5_000));
    let HttpEvent::ResponseHead { ts_us, head, .. } = &ev[1] else {
        panic!()
    };
    assert_eq!(
        (*ts_us, head.status, head.reason.as_str()),
        (t0 + 25_000, 200, "OK")
    );
    let HttpEvent::ResponseBody { ts_us, data, .. } = &ev[2] else {
        panic!()
    };
    assert_eq!(
        (*ts_us, data.as_slice()),
        (
            t0 + 30_000,
            b"{\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{}}".as_slice()
        )
    );
    let n = b"{\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{}}".len() as u64;
    assert_eq!(response_end(&ev), (BodyEnd::Complete, n, n, vec![]));
    assert_eq!(stats.http_exchanges, 1);
    assert!(stats.anomalies.is_empty(), "{:?}", stats.anomalies);
}

#[test]
fn base64_bodies_both_ways() {
    let mut e = entry("2024-05-01T10:00:00Z", "POST", "http://h/mcp");
    e["request"]["postData"] =
        json!({"mimeType": "application/octet-stream", "text": "AAEC/w==", "encoding": "base64"});
    e["response"]["content"] = json!({"size": 5, "mimeType": "application/json", "text": "eyJhIjoxfQ", "encoding": "base64"});
    let (ev, stats) = read(&har(json!([e])));
    assert_eq!(requests(&ev)[0].body, vec![0, 1, 2, 0xff]);
    assert_eq!(response_body(&ev), b"{\"a\":1}");
    assert!(stats.anomalies.is_empty());
}

#[test]
fn bad_base64_delivers_text_and_counts() {
    let mut e = entry("2024-05-01T10:00:00Z", "GET", "http://h/");
    e["response"]["content"] =
        json!({"size": 3, "mimeType": "text/plain", "text": "%%%", "encoding": "base64"});
    let (ev, stats) = read(&har(json!([e])));
    assert_eq!(response_body(&ev), b"%%%");
    assert_eq!(response_end(&ev).3, vec!["har.bad_base64".to_string()]);
    assert_eq!(stats.anomalies.get("har.bad_base64"), Some(&1));
}

#[test]
fn out_of_order_entries_sorted_by_time_ties_stable() {
    let entries = json!([
        entry("2024-05-01T10:00:02Z", "GET", "http://h/c"),
        entry("2024-05-01T12:00:00+02:00", "GET", "http://h/a"), // = 10:00:00Z
        entry("2024-05-01T10:00:01Z", "GET", "http://h/b1"),
        entry("2024-05-01T10:00:01.000000Z", "GET", "http://h/b2"),
    ]);
    let (ev, _) = read(&har(entries));
    let uris: Vec<&str> = requests(&ev).iter().map(|r| r.head.uri.as_str()).collect();
    assert_eq!(uris, ["/a", "/b1", "/b2", "/c"]);
    let conns: Vec<u64> = requests(&ev).iter().map(|r| r.xref.conn.conn).collect();
    assert_eq!(conns, [100, 101, 102, 103]);
    // Each entry's events stay together: Request, ResponseHead, ResponseEnd.
    assert_eq!(ev.len(), 12);
    assert!(matches!(ev[3], HttpEvent::Request(_)));
}

#[test]
fn http2_pseudo_headers_dropped_authority_becomes_host() {
    let mut e = entry("2024-05-01T10:00:00Z", "POST", "https://h.example/mcp");
    e["request"]["httpVersion"] = json!("h2");
    e["response"]["httpVersion"] = json!("http/2.0");
    e["request"]["headers"] = json!([
        {"name": ":method", "value": "POST"}, {"name": ":authority", "value": "h.example:443"},
        {"name": ":path", "value": "/mcp"}, {"name": ":scheme", "value": "https"},
        {"name": "accept", "value": "application/json, text/event-stream"}
    ]);
    e["response"]["headers"] = json!([{"name": ":status", "value": "200"}, {"name": "content-type", "value": "application/json"}]);
    let (ev, _) = read(&har(json!([e])));
    let r = requests(&ev)[0];
    assert_eq!(r.head.version, "2");
    assert_eq!(
        r.head.headers.to_pairs(),
        vec![
            ("Host".to_string(), "h.example:443".to_string()),
            (
                "accept".to_string(),
                "application/json, text/event-stream".to_string()
            )
        ]
    );
    let HttpEvent::ResponseHead { head, .. } = &ev[1] else {
        panic!()
    };
    assert_eq!(head.version, "2");
    assert_eq!(
        head.headers.to_pairs(),
        vec![("content-type".to_string(), "application/json".to_string())]
    );
}

#[test]
fn existing_host_is_kept() {
    let mut e = entry("2024-05-01T10:00:00Z", "GET", "http://h:81/");
    e["request"]["headers"] = json!([{"name": "host", "value": "other"}]);
    let (ev, _) = read(&har(json!([e])));
    assert_eq!(
        requests(&ev)[0].head.headers.to_pairs(),
        vec![("host".to_string(), "other".to_string())]
    );
}

#[test]
fn versions_normalised() {
    for (raw, want) in [
        ("HTTP/1.1", "1.1"),
        ("HTTP/1.0", "1.0"),
        ("h2", "2"),
        ("http/2.0", "2"),
        ("HTTP/2", "2"),
        ("h3", "3"),
        ("HTTP/3", "3"),
        ("h3-29", "3"),
        ("", ""),
        ("spdy/3", ""),
    ] {
        assert_eq!(normalise_version(raw), want, "{raw}");
    }
}

#[test]
fn connection_ids_group_entries_with_depths() {
    let mut a = entry("2024-05-01T10:00:00Z", "POST", "https://h/mcp");
    let mut b = entry("2024-05-01T10:00:02Z", "POST", "https://h/mcp");
    let mut c = entry("2024-05-01T10:00:01Z", "GET", "https://h/mcp");
    let mut d = entry("2024-05-01T10:00:03Z", "GET", "https://h/mcp");
    a["connection"] = json!("5123");
    b["connection"] = json!("5123");
    c["connection"] = json!("conn-x");
    // Firefox writes the server port into `connection`: not an id.
    d["connection"] = json!("443");
    let (ev, _) = read(&har(json!([a, b, c, d])));
    let rs = requests(&ev);
    let got: Vec<(u64, Option<u64>, u32)> = rs
        .iter()
        .map(|r| (r.xref.conn.conn, r.xref.conn.tcp_stream, r.xref.depth))
        .collect();
    assert_eq!(
        got,
        [
            (100, Some(5123), 1),
            (101, None, 1),
            (100, Some(5123), 2),
            (102, None, 1)
        ]
    );
    assert!(Arc::ptr_eq(&rs[0].xref.conn, &rs[2].xref.conn));
}

#[test]
fn same_connection_id_on_other_server_is_another_connection() {
    let mut a = entry("2024-05-01T10:00:00Z", "GET", "https://h/");
    let mut b = entry("2024-05-01T10:00:01Z", "GET", "https://other/");
    a["connection"] = json!("1");
    b["connection"] = json!("1");
    let (ev, _) = read(&har(json!([a, b])));
    let conns: Vec<u64> = requests(&ev).iter().map(|r| r.xref.conn.conn).collect();
    assert_eq!(conns, [100, 101]);
}

#[test]
fn status_zero_or_missing_response_is_no_response() {
    let mut a = entry("2024-05-01T10:00:00Z", "GET", "http://h/a");
    a["response"]["status"] = json!(0);
    let mut b = entry("2024-05-01T10:00:01Z", "POST", "http://h/b");
    b.as_object_mut().unwrap().remove("response");
    let (ev, stats) = read(&har(json!([a, b])));
    assert_eq!(ev.len(), 4);
    for pair in ev.chunks(2) {
        let HttpEvent::Request(r) = &pair[0] else {
            panic!()
        };
        assert!(r.anomalies.contains(&"har.no_response".to_string()));
        let HttpEvent::NoResponse { end, ts_us, .. } = &pair[1] else {
            panic!("{pair:?}")
        };
        assert_eq!(*end, BodyEnd::CaptureEnd);
        assert_eq!(*ts_us, r.ts_first_us + 30_000);
    }
    assert_eq!(stats.anomalies.get("har.no_response"), Some(&2));
    // The entry without `response` breaks the strict model.
    assert_eq!(stats.anomalies.get("har.tolerant_parse"), Some(&1));
}

#[test]
fn absurd_status_is_counted() {
    let mut e = entry("2024-05-01T10:00:00Z", "GET", "http://h/");
    e["response"]["status"] = json!(70000);
    let (ev, stats) = read(&har(json!([e])));
    assert!(matches!(ev[1], HttpEvent::NoResponse { .. }));
    assert_eq!(stats.anomalies.get("har.bad_status"), Some(&1));
}

#[test]
fn minimal_entry_read_tolerantly() {
    // Only what a hand-rolled exporter might write.
    let doc = br#"{"log":{"entries":[{"startedDateTime":"2024-05-01T10:00:00Z",
        "request":{"method":"POST","url":"http://127.0.0.1:3000/mcp","headers":[["content-type","application/json"]],
                   "postData":{"text":"{}"}},
        "response":{"status":"202","content":{}}}]}}"#;
    let (ev, stats) = read(doc);
    let r = requests(&ev)[0];
    assert_eq!(
        r.head.headers.to_pairs(),
        vec![
            ("Host".into(), "127.0.0.1:3000".into()),
            ("content-type".into(), "application/json".into())
        ]
    );
    assert_eq!(r.xref.conn.server_addr, "127.0.0.1:3000");
    assert_eq!(r.head.version, "");
    assert_eq!(r.anomalies, vec!["har.tolerant_parse".to_string()]);
    let HttpEvent::ResponseHead { head, .. } = &ev[1] else {
        panic!()
    };
    assert_eq!(head.status, 202);
    assert_eq!(response_end(&ev), (BodyEnd::Complete, 0, 0, vec![]));
    assert_eq!(stats.anomalies.get("har.missing_version"), Some(&1));
    assert_eq!(stats.anomalies.get("har.tolerant_parse"), Some(&1));
}

#[test]
fn damaged_entries_skipped_or_flagged() {
    let mut bad_time = entry("yesterday", "GET", "http://h/late");
    bad_time["time"] = json!("12");
    let entries = json!([
        entry("2024-05-01T10:00:05Z", "GET", "http://h/first"),
        42,
        {"request": {"method": "GET"}},
        bad_time,
        entry("2024-05-01T10:00:00Z", "GET", "not a url"),
    ]);
    let (ev, stats) = read(&har(entries));
    let rs = requests(&ev);
    let uris: Vec<&str> = rs.iter().map(|r| r.head.uri.as_str()).collect();
    // The undated entry keeps its place after the entry before it in the file.
    assert_eq!(uris, ["not a url", "/first", "/late"]);
    assert_eq!(rs[2].ts_first_us, rs[1].ts_first_us);
    assert_eq!(rs[0].xref.conn.server_addr, "");
    assert_eq!(stats.anomalies.get("har.entry_skipped"), Some(&2));
    assert_eq!(stats.anomalies.get("har.bad_timestamp"), Some(&1));
    assert_eq!(stats.anomalies.get("har.bad_url"), Some(&1));
    assert_eq!(stats.http_exchanges, 3);
}

fn sse_entry(text: Option<&str>) -> Value {
    let mut e = entry("2024-05-01T10:00:00Z", "POST", "http://h/mcp");
    e["response"]["headers"] =
        json!([{"name": "Content-Type", "value": "text/event-stream; charset=utf-8"}]);
    e["response"]["content"] = match text {
        Some(t) => json!({"size": t.len(), "mimeType": "text/event-stream", "text": t}),
        None => json!({"size": 0, "mimeType": "text/event-stream"}),
    };
    e
}

#[test]
fn sse_complete_body_is_complete() {
    let text = "event: message\ndata: {\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{}}\n\n";
    let (ev, stats) = read(&har(json!([sse_entry(Some(text))])));
    assert_eq!(response_body(&ev), text.as_bytes());
    assert_eq!(response_end(&ev).0, BodyEnd::Complete);
    assert!(stats.anomalies.is_empty());
}

#[test]
fn sse_truncated_body_is_capture_end() {
    let text = "event: message\ndata: {\"jsonrpc\":\"2.0\",\"id\":1,\"res";
    let (ev, stats) = read(&har(json!([sse_entry(Some(text))])));
    assert_eq!(response_body(&ev), text.as_bytes());
    let (end, _, decoded, anomalies) = response_end(&ev);
    assert_eq!(end, BodyEnd::CaptureEnd);
    assert_eq!(decoded, text.len() as u64);
    assert_eq!(anomalies, vec!["har.sse_body_truncated".to_string()]);
    assert_eq!(stats.anomalies.get("har.sse_body_truncated"), Some(&1));
}

#[test]
fn sse_not_recorded_is_capture_end_without_body() {
    for (mut e, receive) in [
        (sse_entry(None), json!(-1)),
        (sse_entry(Some("")), json!(0)),
    ] {
        e["timings"]["receive"] = receive;
        let (ev, stats) = read(&har(json!([e])));
        assert!(response_body(&ev).is_empty());
        assert!(
            !ev.iter()
                .any(|e| matches!(e, HttpEvent::ResponseBody { .. }))
        );
        assert_eq!(response_end(&ev).0, BodyEnd::CaptureEnd);
        assert_eq!(stats.anomalies.get("har.sse_body_not_recorded"), Some(&1));
    }
}

#[test]
fn sized_body_not_recorded_is_not_complete_but_304_is() {
    let mut e = entry("2024-05-01T10:00:00Z", "GET", "http://h/");
    e["response"]["content"] = json!({"size": 120, "mimeType": "application/json"});
    let (ev, stats) = read(&har(json!([e.clone()])));
    assert_eq!(
        response_end(&ev),
        (
            BodyEnd::CaptureEnd,
            0,
            120,
            vec!["har.body_not_recorded".to_string()]
        )
    );
    assert_eq!(stats.anomalies.get("har.body_not_recorded"), Some(&1));
    e["response"]["status"] = json!(304);
    let (ev, stats) = read(&har(json!([e])));
    assert_eq!(response_end(&ev).0, BodyEnd::Complete);
    assert!(stats.anomalies.is_empty());
}

#[test]
fn gzip_body_stored_compressed_is_decoded() {
    use std::io::Write;
    let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
    gz.write_all(b"{\"ok\":true}").unwrap();
    let compressed = gz.finish().unwrap();
    let mut e = entry("2024-05-01T10:00:00Z", "GET", "http://h/");
    e["response"]["headers"] = json!([{"name": "Content-Encoding", "value": "gzip"}]);
    e["response"]["bodySize"] = json!(compressed.len());
    e["response"]["content"] = json!({"size": 11, "mimeType": "application/json", "encoding": "base64",
        "text": base64::engine::general_purpose::STANDARD.encode(&compressed)});
    let (ev, stats) = read(&har(json!([e])));
    assert_eq!(response_body(&ev), b"{\"ok\":true}");
    assert_eq!(
        response_end(&ev),
        (BodyEnd::Complete, compressed.len() as u64, 11, vec![])
    );
    assert!(stats.anomalies.is_empty());
}

use base64::Engine as _;

#[test]
fn websocket_messages_ignored_and_counted() {
    let mut e = entry("2024-05-01T10:00:00Z", "GET", "wss://h/ws");
    e["response"]["status"] = json!(101);
    e["_webSocketMessages"] = json!([{"type": "send", "time": 1.0, "opcode": 1, "data": "x"}]);
    e["_resourceType"] = json!({"nested": [1, 2, {"deep": null}]});
    let (ev, stats) = read(&har(json!([e])));
    assert_eq!(requests(&ev)[0].xref.conn.server_addr, "h:443");
    assert_eq!(response_end(&ev).0, BodyEnd::Complete);
    assert_eq!(
        stats.anomalies.get("har.websocket_messages_ignored"),
        Some(&1)
    );
}

#[test]
fn bom_and_zhar_read_like_plain() {
    use std::io::Write;
    let plain = har(json!([entry("2024-05-01T10:00:00Z", "GET", "http://h/")]));
    let mut bom = b"\xEF\xBB\xBF".to_vec();
    bom.extend_from_slice(&plain);
    let mut z = flate2::write::ZlibEncoder::new(Vec::new(), flate2::Compression::best());
    z.write_all(&plain).unwrap();
    let zhar = z.finish().unwrap();
    let mut g = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
    g.write_all(&bom).unwrap();
    let gzhar = g.finish().unwrap();
    assert!(!is_compressed_har(&plain));
    assert!(is_compressed_har(&zhar));
    assert!(is_compressed_har(&gzhar));
    let want = format!("{:?}", read(&plain).0);
    for doc in [&bom, &zhar, &gzhar] {
        assert_eq!(format!("{:?}", read(doc).0), want);
    }
}

#[test]
fn compressed_non_har_is_not_zhar() {
    use std::io::Write;
    let mut g = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
    g.write_all(&[0xd4, 0xc3, 0xb2, 0xa1, 2, 0, 4, 0]).unwrap();
    assert!(!is_compressed_har(&g.finish().unwrap()));
    assert!(!is_compressed_har(&[0xd4, 0xc3, 0xb2, 0xa1]));
    assert!(!is_compressed_har(&[0x78]));
}

#[test]
fn not_a_har_is_a_clear_error() {
    let cases: [(&[u8], &str); 4] = [
        (b"{\"log\": [2,1,3] \"x\"}", "invalid JSON"),
        (b"[1,2]", "no top-level `log` object"),
        (
            b"{\"headers\": [[\"Content-Type\"]]}",
            "no top-level `log` object",
        ),
        (
            b"{\"log\": {\"entries\": {}}}",
            "`log.entries` is missing or not a list",
        ),
    ];
    // A .zhar cut short: recognised by its start, refused as damaged.
    let mut z = flate2::write::ZlibEncoder::new(Vec::new(), flate2::Compression::best());
    std::io::Write::write_all(
        &mut z,
        &har(Value::Array(vec![
            entry(
                "2024-05-01T10:00:00Z",
                "GET",
                "http://h/"
            );
            20
        ])),
    )
    .unwrap();
    let zhar = z.finish().unwrap();
    let cut = &zhar[..zhar.len() / 2];
    assert!(is_compressed_har(cut));
    let cases = cases
        .into_iter()
        .chain([(cut, "compressed HAR (.zhar) is damaged")]);
    for (doc, want) in cases {
        let mut stats = HttpCounters::default();
        let err = read_har("x.har", doc, 0, &mut stats).unwrap_err();
        let msg = err.to_string();
        assert!(msg.starts_with("x.har: ") && msg.contains(want), "{msg}");
        assert!(matches!(err, CaptureError::Malformed { .. }));
    }
}

#[test]
fn empty_entries_is_empty_output() {
    let (ev, stats) = read(&har(json!([])));
    assert!(ev.is_empty());
    assert_eq!(stats.http_exchanges, 0);
}

mod never_panics {
    use super::*;
    use proptest::prelude::*;

    /// Any small JSON value: what a broken exporter might put in any field.
    fn any_json() -> impl Strategy<Value = Value> {
        let leaf = prop_oneof![
            Just(Value::Null),
            any::<bool>().prop_map(Value::from),
            any::<i64>().prop_map(Value::from),
            any::<f64>()
                .prop_map(|f| serde_json::Number::from_f64(f).map_or(Value::Null, Value::Number)),
            "[ -~]{0,12}".prop_map(Value::from),
            Just(json!("-1")),
            Just(json!("2024-05-01T10:00:00Z")),
            Just(json!("http://[::1]:0/")),
        ];
        leaf.prop_recursive(2, 8, 3, |inner| {
            prop_oneof![
                prop::collection::vec(inner.clone(), 0..3).prop_map(Value::Array),
                prop::collection::vec(("[a-z]{1,6}", inner), 0..3)
                    .prop_map(|kv| Value::Object(kv.into_iter().collect())),
            ]
        })
    }

    const FIELDS: &[&str] = &[
        "/startedDateTime",
        "/time",
        "/connection",
        "/serverIPAddress",
        "/timings",
        "/timings/wait",
        "/request",
        "/request/url",
        "/request/method",
        "/request/httpVersion",
        "/request/headers",
        "/request/postData",
        "/request/bodySize",
        "/response",
        "/response/status",
        "/response/headers",
        "/response/content",
        "/response/content/text",
        "/response/content/encoding",
        "/response/content/size",
        "/response/bodySize",
        "/response/httpVersion",
    ];

    proptest! {
        #[test]
        fn any_field_any_value(picks in prop::collection::vec((0..FIELDS.len(), any_json()), 1..4)) {
            let mut e = entry("2024-05-01T10:00:00Z", "POST", "http://h/mcp");
            for (i, v) in picks {
                if let Some(slot) = e.pointer_mut(FIELDS[i]) {
                    *slot = v;
                }
            }
            let mut stats = HttpCounters::default();
            let ev = read_har("p.har", &har(json!([e])), 0, &mut stats).unwrap();
            // Every delivered request gets exactly one end.
            let reqs = ev.iter().filter(|e| matches!(e, HttpEvent::Request(_))).count();
            let ends = ev.iter().filter(|e| matches!(e, HttpEvent::ResponseEnd { .. } | HttpEvent::NoResponse { .. })).count();
            prop_assert_eq!(reqs, ends);
            prop_assert_eq!(reqs as u64, stats.http_exchanges);
        }

        #[test]
        fn any_bytes(data in prop::collection::vec(any::<u8>(), 0..200)) {
            let _ = read_har("p.har", &data, 0, &mut HttpCounters::default());
        }
    }
}

#[test]
fn playwright_attached_body_is_not_a_success() {
    let mut e = entry("2024-05-01T10:00:00Z", "POST", "http://h/mcp");
    e["response"]["content"] =
        json!({"size": 40, "mimeType": "application/json", "_file": "0a1b2c.json"});
    let (ev, stats) = read(&har(json!([e])));
    assert_eq!(
        response_end(&ev),
        (
            BodyEnd::CaptureEnd,
            0,
            40,
            vec!["har.body_in_separate_file".to_string()]
        )
    );
    assert_eq!(stats.anomalies.get("har.body_not_recorded"), None);
}

#[test]
fn sse_not_recorded_but_timed_end_is_complete_and_flagged() {
    // mitmproxy: a stream that closed has a positive `receive`; its events are still lost.
    let mut e = sse_entry(Some(""));
    e["request"]["method"] = json!("GET");
    e["timings"]["receive"] = json!(660.9);
    let (ev, stats) = read(&har(json!([e])));
    assert!(response_body(&ev).is_empty());
    assert_eq!(
        response_end(&ev),
        (
            BodyEnd::Complete,
            0,
            0,
            vec!["har.sse_body_not_recorded".to_string()]
        )
    );
    assert_eq!(stats.anomalies.get("har.sse_body_not_recorded"), Some(&1));
}
