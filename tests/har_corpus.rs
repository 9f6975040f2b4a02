//! Integration tests: har_corpus. The HAR files of the corpus (its slice in
//! `tests/data/corpus/har`; all of ../shared/corpus/har/ for the ignored tests) read by
//! `har::read_har`, checked against mitmproxy's own interpretation
//! (`har_files/*.json`, see the corpus MANIFEST) and against what each
//! `flows/*.har` is known to contain.
//!
//! Deliberate differences from mitmproxy, excluded from the comparison:
//! * pseudo-headers (`:authority`, ...) are dropped and a `Host` header is
//!   synthesised when absent; mitmproxy keeps the pseudo-headers verbatim.
//! * `content-length` (both directions) and response `content-encoding`:
//!   mitmproxy rewrites them after decoding the body; we keep the recorded ones.
//! * text bodies are delivered as UTF-8 (mitmproxy re-encodes text without a
//!   declared charset as Latin-1; no body in this corpus is affected, so the
//!   comparison below is exact).

// Test helpers outside #[test] fns: a failed unwrap is a failed test here.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::indexing_slicing)]

use mcp_trace::capture::CaptureError;
use mcp_trace::capture::{has_zlib_header, is_compressed_har};
use mcp_trace::har::read_har;
use mcp_trace::http::HttpCounters;
use mcp_trace::http::{BodyEnd, HttpEvent, HttpRequest, ResponseHead};
use serde_json::Value;
use sha2::{Digest, Sha256};
use std::path::{Path, PathBuf};

/// The whole mitmproxy folder of `../shared/corpus` (ignored tests only).
fn corpus() -> PathBuf {
    crate::support::corpus("har/mitmproxy")
}

/// Its slice in `tests/data/corpus`: `flows/`, `corrupted_har/`, two of `har_files/`.
fn slice() -> PathBuf {
    crate::support::corpus_slice("har/mitmproxy")
}

/// One entry's events regrouped.
#[derive(Debug)]
struct Exchange {
    req: HttpRequest,
    head: Option<ResponseHead>,
    body: Vec<u8>,
    end: Option<(BodyEnd, u64, u64, Vec<String>)>,
    no_response: bool,
    ts: Vec<i64>,
}

/// Regroup events per entry, checking the stage contract on the way: requests in
/// request-time order, each exchange's events after its request and exactly one end (the
/// events of overlapping entries interleave, in time order, as a capture's do).
fn exchanges(events: Vec<HttpEvent>) -> Vec<Exchange> {
    let mut out: Vec<Exchange> = Vec::new();
    for ev in events {
        if let HttpEvent::Request(r) = ev {
            if let Some(prev) = out.last() {
                assert!(
                    prev.req.ts_first_us <= r.ts_first_us,
                    "not in request-time order"
                );
            }
            let t = vec![r.ts_first_us, r.ts_last_us];
            out.push(Exchange {
                req: r,
                head: None,
                body: Vec::new(),
                end: None,
                no_response: false,
                ts: t,
            });
            continue;
        }
        let xref = match &ev {
            HttpEvent::ResponseHead { xref, .. }
            | HttpEvent::ResponseBody { xref, .. }
            | HttpEvent::ResponseEnd { xref, .. }
            | HttpEvent::NoResponse { xref, .. } => xref.clone(),
            HttpEvent::Request(_) => unreachable!(),
            HttpEvent::ConnectionClosed(_) => panic!("a HAR input has no TCP connection to close"),
        };
        let x = out
            .iter_mut()
            .rev()
            .find(|x| x.req.xref == xref)
            .expect("event before its request");
        assert!(x.end.is_none() && !x.no_response, "event after end");
        match ev {
            HttpEvent::ResponseHead { ts_us, head, .. } => {
                assert!(x.head.is_none());
                x.ts.push(ts_us);
                x.head = Some(head);
            }
            HttpEvent::ResponseBody { ts_us, data, .. } => {
                assert!(x.head.is_some());
                x.ts.push(ts_us);
                x.body.extend(data);
            }
            HttpEvent::ResponseEnd {
                ts_us,
                end,
                wire_len,
                decoded_len,
                anomalies,
                ..
            } => {
                assert!(x.head.is_some());
                x.ts.push(ts_us);
                x.end = Some((end, wire_len, decoded_len, anomalies));
            }
            HttpEvent::NoResponse { ts_us, end, .. } => {
                assert!(x.head.is_none());
                assert_eq!(end, BodyEnd::CaptureEnd);
                x.ts.push(ts_us);
                x.no_response = true;
            }
            HttpEvent::Request(_) | HttpEvent::ConnectionClosed(_) => unreachable!(),
        }
    }
    for x in &out {
        assert!(
            x.end.is_some() || x.no_response,
            "exchange never ended: {x:?}"
        );
        assert!(
            x.ts.windows(2).all(|w| w[0] <= w[1]),
            "time goes backwards: {:?}",
            x.ts
        );
    }
    out
}

fn read(path: &Path) -> (Vec<Exchange>, HttpCounters) {
    let data = std::fs::read(path).unwrap();
    let mut stats = HttpCounters::default();
    let name = path.file_name().unwrap().to_str().unwrap();
    let events = read_har(name, &data, 1000, &mut stats).unwrap_or_else(|e| panic!("{e}"));
    (exchanges(events), stats)
}

fn sha256_hex(b: &[u8]) -> String {
    Sha256::digest(b)
        .iter()
        .map(|x| format!("{x:02x}"))
        .collect()
}

fn header_list(v: &Value) -> Vec<(String, String)> {
    v.as_array()
        .unwrap()
        .iter()
        .map(|h| {
            (
                h[0].as_str().unwrap().to_string(),
                h[1].as_str().unwrap().to_string(),
            )
        })
        .collect()
}

/// Headers minus the ones excluded from the comparison (see module doc).
fn comparable(h: &[(String, String)], also: &[&str]) -> Vec<(String, String)> {
    h.iter()
        .filter(|(n, _)| {
            !n.starts_with(':')
                && !n.eq_ignore_ascii_case("content-length")
                && !also.iter().any(|a| n.eq_ignore_ascii_case(a))
        })
        .cloned()
        .collect()
}

#[derive(Default, Debug)]
struct Agreement {
    entries: usize,
    fields: usize,
}

/// Compare one `har_files/<name>.har` with `<name>.json`.
fn compare_with_mitmproxy(har_path: &Path) -> Agreement {
    let expected: Vec<Value> =
        serde_json::from_slice(&std::fs::read(har_path.with_extension("json")).unwrap()).unwrap();
    let (got, _) = read(har_path);
    let file = har_path.file_name().unwrap().to_string_lossy().to_string();
    assert_eq!(got.len(), expected.len(), "{file}: entry count");

    // Our rows are in request-time order; put mitmproxy's (file order) the same way.
    let mut order: Vec<usize> = (0..expected.len()).collect();
    order.sort_by(|&a, &b| {
        let t = |i: usize| expected[i]["request"]["timestamp_start"].as_f64().unwrap();
        t(a).partial_cmp(&t(b)).unwrap()
    });
    let mut agree = Agreement::default();
    for (x, &i) in got.iter().zip(&order) {
        let want = &expected[i];
        let rq = &want["request"];
        let ctx = format!("{file} entry {i} {}", rq["path"]);
        let mut check = |ok: bool, what: &str| {
            assert!(ok, "{ctx}: {what} differs\n got: {x:#?}\nwant: {want:#}");
            agree.fields += 1;
        };
        let ts = (rq["timestamp_start"].as_f64().unwrap() * 1e6).round() as i64;
        check((x.req.ts_first_us - ts).abs() <= 1, "timestamp_start");
        check(
            x.req.head.method == rq["method"].as_str().unwrap(),
            "method",
        );
        check(x.req.head.uri == rq["path"].as_str().unwrap(), "path");
        let host = x
            .req
            .head
            .headers
            .get("host")
            .unwrap()
            .rsplit_once(':')
            .map_or_else(
                || x.req.head.headers.get("host").unwrap().to_string(),
                |(h, _)| h.to_string(),
            );
        check(host == rq["host"].as_str().unwrap(), "host");
        let port = x.req.xref.conn.server_addr.rsplit_once(':').unwrap().1;
        check(port.parse::<u64>().ok() == rq["port"].as_u64(), "port");
        let want_req_h = header_list(&rq["headers"]);
        let got_req_h = &x.req.head.headers.to_pairs();
        let has_host = want_req_h
            .iter()
            .any(|(n, _)| n.eq_ignore_ascii_case("host"));
        let skip: &[&str] = if has_host { &[] } else { &["host"] };
        check(
            comparable(got_req_h, skip) == comparable(&want_req_h, &[]),
            "request headers",
        );
        check(
            x.req.body.len() as u64 == rq["contentLength"].as_u64().unwrap(),
            "request contentLength",
        );
        check(
            sha256_hex(&x.req.body) == rq["contentHash"].as_str().unwrap(),
            "request contentHash",
        );

        let rs = &want["response"];
        let status = rs["status_code"].as_u64().unwrap();
        if status == 0 {
            check(
                x.no_response && x.req.anomalies.contains(&"har.no_response".to_string()),
                "no response",
            );
            agree.entries += 1;
            continue;
        }
        let head = x.head.as_ref().unwrap();
        check(u64::from(head.status) == status, "status_code");
        let want_rs_h = header_list(&rs["headers"]);
        check(
            comparable(&head.headers.to_pairs(), &["content-encoding"])
                == comparable(&want_rs_h, &["content-encoding"]),
            "response headers",
        );
        check(
            x.body.len() as u64 == rs["contentLength"].as_u64().unwrap(),
            "response contentLength",
        );
        check(
            sha256_hex(&x.body) == rs["contentHash"].as_str().unwrap(),
            "response contentHash",
        );
        agree.entries += 1;
    }
    agree
}

#[test]
#[ignore = "needs ../shared/corpus"]
fn har_files_agree_with_mitmproxy() {
    let dir = corpus();
    let mut files: Vec<PathBuf> = std::fs::read_dir(dir.join("har_files"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "har"))
        .collect();
    files.sort();
    assert_eq!(files.len(), 7, "{files:?}");
    let mut total = Agreement::default();
    for f in &files {
        let a = compare_with_mitmproxy(f);
        eprintln!(
            "{}: {} entries agree, {} fields checked",
            f.file_name().unwrap().to_string_lossy(),
            a.entries,
            a.fields
        );
        total.entries += a.entries;
        total.fields += a.fields;
    }
    eprintln!("total: {total:?}");
    assert_eq!(total.entries, 1 + 3 + 14 + 1 + 1 + 19 + 1);
}

#[test]
fn with_bom_reads_like_postdata() {
    let dir = slice();
    let (a, _) = read(&dir.join("har_files/postdata.har"));
    let (b, _) = read(&dir.join("har_files/with-bom.har"));
    assert_eq!(
        format!("{a:?}").replace("postdata.har", "X"),
        format!("{b:?}").replace("with-bom.har", "X")
    );
    assert_eq!(a[0].req.head.version, "2");
    assert_eq!(a[0].req.xref.conn.tcp_stream, Some(159_834));
    assert_eq!(a[0].req.xref.conn.server_addr, "99.83.181.31:443");
}

#[test]
#[ignore = "needs ../shared/corpus"]
fn safari_connection_ids_share_connections() {
    let dir = corpus();
    let (x, _) = read(&dir.join("har_files/safari.har"));
    let on_1: Vec<u32> = x
        .iter()
        .filter(|e| e.req.xref.conn.tcp_stream == Some(1))
        .map(|e| e.req.xref.depth)
        .collect();
    assert_eq!(on_1, [1, 2]);
    let on_2 = x
        .iter()
        .filter(|e| e.req.xref.conn.tcp_stream == Some(2))
        .count();
    assert_eq!(on_2, 1);
    let mut ids: Vec<u64> = x.iter().map(|e| e.req.xref.conn.conn).collect();
    ids.dedup();
    ids.sort();
    ids.dedup();
    assert_eq!(ids.len(), 18, "19 entries, two on connection 1");
    assert!(ids.iter().all(|&c| c >= 1000));
}

#[test]
fn event_stream_har_without_body_is_incomplete() {
    let dir = slice();
    let (x, stats) = read(&dir.join("flows/event_stream.har"));
    assert_eq!(x.len(), 2);
    for e in &x {
        assert_eq!(e.head.as_ref().unwrap().status, 200);
        assert_eq!(e.head.as_ref().unwrap().version, "2");
        assert!(e.body.is_empty());
        let (end, _, _, anomalies) = e.end.as_ref().unwrap();
        assert_eq!(*end, BodyEnd::CaptureEnd);
        assert_eq!(anomalies, &["har.sse_body_not_recorded".to_string()]);
    }
    assert_eq!(stats.anomalies.get("har.sse_body_not_recorded"), Some(&2));
}

#[test]
fn error_and_incomplete_logs_are_no_response() {
    let dir = slice();
    let (x, stats) = read(&dir.join("flows/error_log.har"));
    assert_eq!(x.len(), 2);
    assert!(x[0].no_response);
    assert_eq!(x[0].req.xref.conn.server_addr, "163.com:80");
    assert_eq!(x[1].head.as_ref().unwrap().status, 405);
    assert_eq!(x[1].body.len(), 178);
    assert_eq!(x[1].req.head.method, "POST");
    assert_eq!(stats.anomalies.get("har.no_response"), Some(&1));

    let (x, stats) = read(&dir.join("flows/incomplete_log.har"));
    assert_eq!(x.len(), 4);
    assert!(x.iter().all(|e| e.no_response));
    assert_eq!(stats.anomalies.get("har.no_response"), Some(&4));
    assert_eq!(stats.http_exchanges, 4);
}

#[test]
fn corrupted_gzip_body_is_counted_not_fatal() {
    let dir = slice();
    let (x, stats) = read(&dir.join("flows/corrupted_gzip_body.har"));
    assert_eq!(x.len(), 1);
    assert_eq!(x[0].body.len(), 24);
    assert!(x[0].body.starts_with(&[0x1f, 0x8b]));
    let (end, wire, decoded, anomalies) = x[0].end.as_ref().unwrap();
    assert_eq!((*end, *wire, *decoded), (BodyEnd::Complete, 24, 24));
    assert_eq!(anomalies, &["har.bad_content_encoding".to_string()]);
    assert_eq!(stats.anomalies.get("har.bad_content_encoding"), Some(&1));
}

#[test]
fn websocket_extensions_ignored() {
    let dir = slice();
    let (x, stats) = read(&dir.join("flows/websocket.har"));
    assert_eq!(x.len(), 3);
    for e in &x {
        assert_eq!(e.head.as_ref().unwrap().status, 101);
        assert_eq!(e.end.as_ref().unwrap().0, BodyEnd::Complete);
        assert_eq!(e.req.head.uri.split('?').next(), Some("/v3/channel_123"));
    }
    assert_eq!(
        stats.anomalies.get("har.websocket_messages_ignored"),
        Some(&3)
    );
    assert_eq!(stats.anomalies.get("har.tolerant_parse"), None);
}

#[test]
fn successful_and_diff_data_bodies_match_har_text() {
    let dir = slice();
    for (file, n) in [("flows/successful_log.har", 2), ("flows/diff_data.har", 5)] {
        let path = dir.join(file);
        let raw: Value = serde_json::from_slice(&std::fs::read(&path).unwrap()).unwrap();
        let (x, stats) = read(&path);
        assert_eq!(x.len(), n, "{file}");
        assert!(stats.anomalies.is_empty(), "{file}: {:?}", stats.anomalies);
        // mitmproxy writes entries in time order already, so positions match.
        for (e, r) in x.iter().zip(raw["log"]["entries"].as_array().unwrap()) {
            let post = r["request"]["postData"]["text"].as_str().unwrap_or("");
            assert_eq!(e.req.body, post.as_bytes(), "{file}");
            // mitmproxy writes the decoded text and, as `content.size`, the
            // size on the wire (compressed): the body is the text, wire_len bodySize.
            let content = &r["response"]["content"];
            let text = content["text"].as_str().unwrap();
            let want = if content["encoding"] == "base64" {
                use base64::Engine as _;
                base64::engine::general_purpose::STANDARD
                    .decode(text)
                    .unwrap()
            } else {
                text.as_bytes().to_vec()
            };
            assert_eq!(e.body, want, "{file} {}", e.req.head.uri);
            let (end, wire, decoded, _) = e.end.as_ref().unwrap();
            assert_eq!(
                (*end, *wire, *decoded),
                (
                    BodyEnd::Complete,
                    r["response"]["bodySize"].as_u64().unwrap(),
                    want.len() as u64
                )
            );
        }
    }
}

#[test]
fn zhar_reads_like_its_har() {
    let dir = slice();
    let data = std::fs::read(dir.join("flows/compressed.zhar")).unwrap();
    assert!(is_compressed_har(&data));
    // A format probe sees only the first bytes: enough to decide.
    assert!(has_zlib_header(&data[..2]));
    assert!(is_compressed_har(&data[..512]));
    for magic in [
        [0xa1, 0xb2],
        [0xd4, 0xc3],
        [0x4d, 0x3c],
        [0x0a, 0x0d],
        [0x1f, 0x8b],
        [b'{', b'"'],
    ] {
        assert!(!has_zlib_header(&magic), "{magic:x?}");
    }
    let (x, stats) = read(&dir.join("flows/compressed.zhar"));
    let (y, _) = read(&dir.join("flows/successful_log.har"));
    assert_eq!(
        format!("{x:?}").replace("compressed.zhar", "X"),
        format!("{y:?}").replace("successful_log.har", "X")
    );
    assert_eq!(stats.http_exchanges, 2);
}

#[test]
fn corrupted_har_files_are_clear_errors() {
    let dir = slice();
    for (file, want) in [
        (
            "corrupted_har/brokenfile.har",
            "not a HAR file: invalid JSON",
        ),
        (
            "corrupted_har/broken_headers.json",
            "not a HAR file: no top-level `log` object",
        ),
    ] {
        let data = std::fs::read(dir.join(file)).unwrap();
        let mut stats = HttpCounters::default();
        let err = read_har("f", &data, 0, &mut stats).unwrap_err();
        assert!(matches!(err, CaptureError::Malformed { .. }), "{err:?}");
        assert!(err.to_string().contains(want), "{file}: {err}");
        assert_eq!(stats.http_exchanges, 0);
    }
}

#[test]
#[ignore = "needs ../shared/corpus"]
fn every_corpus_file_and_its_prefixes_never_panic() {
    let dir = corpus();
    let mut files = Vec::new();
    for sub in ["har_files", "flows", "corrupted_har"] {
        for e in std::fs::read_dir(dir.join(sub)).unwrap() {
            files.push(e.unwrap().path());
        }
    }
    let mut read_ok = 0;
    for f in &files {
        let data = std::fs::read(f).unwrap();
        let mut stats = HttpCounters::default();
        if read_har("f", &data, 0, &mut stats).is_ok() {
            read_ok += 1;
        }
        // Cut files (a download stopped short) must fail cleanly, not panic.
        let last = data
            .iter()
            .rposition(|c| !c.is_ascii_whitespace())
            .unwrap_or(0);
        for cut in [1, data.len() / 3, data.len() / 2, last] {
            let r = read_har("f", &data[..cut], 0, &mut HttpCounters::default());
            assert!(r.is_err(), "{}: cut {cut} accepted", f.display());
        }
    }
    // 7 browser/tool HARs + 7 mitmproxy HARs + the zhar (the .json oracles and broken files fail).
    assert_eq!(read_ok, 15, "{files:?}");
}

/// A streamable-HTTP MCP session as a browser would export it, entries out of
/// order, one SSE answer complete and one the recorder did not keep.
fn mcp_session_har() -> Vec<u8> {
    let entry = |t: &str, body: &str, status: u16, ctype: &str, text: Option<&str>| {
        let mut content = serde_json::json!({"size": text.map_or(0, str::len), "mimeType": ctype});
        if let Some(text) = text {
            content["text"] = Value::from(text);
        }
        serde_json::json!({
            "startedDateTime": t, "time": 20.0, "connection": "77",
            "request": {"method": "POST", "url": "https://mcp.example.com/mcp", "httpVersion": "h2",
                "headers": [
                    {"name": ":authority", "value": "mcp.example.com"},
                    {"name": "content-type", "value": "application/json"},
                    {"name": "accept", "value": "application/json, text/event-stream"},
                    {"name": "mcp-session-id", "value": "s-1"}],
                "cookies": [], "queryString": [], "headersSize": -1, "bodySize": body.len(),
                "postData": {"mimeType": "application/json", "text": body}},
            "response": {"status": status, "statusText": "", "httpVersion": "h2", "cookies": [],
                "headers": [{"name": "content-type", "value": ctype}, {"name": "mcp-session-id", "value": "s-1"}],
                "content": content, "redirectURL": "", "headersSize": -1, "bodySize": -1},
            "cache": {}, "timings": {"send": 1, "wait": 15, "receive": 4},
            "serverIPAddress": "203.0.113.9", "_priority": "High"
        })
    };
    let init = r#"{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}"#;
    let init_ok = r#"{"jsonrpc":"2.0","id":0,"result":{"protocolVersion":"2025-06-18","capabilities":{},"serverInfo":{"name":"s","version":"1"}}}"#;
    let call = |id: u32| {
        format!(
            r#"{{"jsonrpc":"2.0","id":{id},"method":"tools/call","params":{{"name":"echo","arguments":{{}}}}}}"#
        )
    };
    let sse_ok =
        "event: message\ndata: {\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{\"content\":[]}}\n\n";
    // Unrecorded and never ended (a browser writes receive -1 for an open stream).
    let mut lost = entry(
        "2025-01-01T00:00:03Z",
        &call(2),
        200,
        "text/event-stream",
        None,
    );
    lost["timings"]["receive"] = Value::from(-1);
    // The standalone GET stream: unrecorded, but its end was timed (receive 4 ms).
    let mut get = entry("2025-01-01T00:00:01.5Z", "", 200, "text/event-stream", None);
    get["request"]["method"] = Value::from("GET");
    get["request"].as_object_mut().unwrap().remove("postData");
    let doc = serde_json::json!({"log": {"version": "1.2", "creator": {"name": "t", "version": "1"}, "entries": [
        lost,
        entry("2025-01-01T00:00:00Z", init, 200, "application/json", Some(init_ok)),
        entry("2025-01-01T00:00:02Z", &call(1), 200, "text/event-stream", Some(sse_ok)),
        get,
        entry("2025-01-01T00:00:01Z", r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#, 202, "", None),
    ]}});
    serde_json::to_vec(&doc).unwrap()
}

#[test]
fn har_events_through_the_mcp_stage() {
    use mcp_trace::mcp::{Analyzer, InferenceConfig, McpCounters};
    let mut stats = HttpCounters::default();
    let events = read_har("session.har", &mcp_session_har(), 5000, &mut stats).unwrap();
    let mut analyzer = Analyzer::new(InferenceConfig::default());
    let mut mcp = McpCounters::default();
    for ev in events {
        analyzer.push(ev, &mut mcp);
    }
    let rows = analyzer.finish(&mut mcp);
    // `stream_end` is `none` for plain JSON answers (report-schema.md).
    let got: Vec<(Option<&str>, &str, &str)> = rows
        .iter()
        .map(|r| {
            (
                r.rpc_method.as_deref(),
                r.outcome.name(),
                r.stream_end.name(),
            )
        })
        .collect();
    assert_eq!(
        got,
        [
            (Some("initialize"), "RPC_SUCCESS", "none"),
            (Some("notifications/initialized"), "ACCEPTED", "none"),
            (None, "ACCEPTED", "complete"),
            (Some("tools/call"), "TOOL_SUCCESS", "complete"),
            (Some("tools/call"), "STREAM_INCOMPLETE", "capture_end"),
        ],
        "{rows:#?}"
    );
    for r in &rows {
        assert_eq!(r.capture, "session.har");
        assert_eq!(r.tcp_stream, Some(77));
        assert_eq!(r.server_addr, "203.0.113.9:443");
        assert_eq!(r.path, "/mcp");
    }
    assert!(rows.windows(2).all(|w| w[0].ts_request < w[1].ts_request));
    assert!(
        rows[4]
            .anomalies
            .text()
            .unwrap_or("")
            .contains("har.sse_body_not_recorded"),
        "{:?}",
        rows[4].anomalies
    );
    assert_eq!(stats.anomalies.get("har.sse_body_not_recorded"), Some(&2));
}

/// The real HAR recordings in samples/ (issue "Real MCP traffic in
/// samples/") through the MCP stage give the rows of their ground truth.
#[test]
fn samples_har_match_ground_truth() {
    use mcp_trace::mcp::{Analyzer, InferenceConfig, McpCounters};
    let dir = Path::new(concat!(env!("CARGO_MANIFEST_DIR"), "/samples"));
    let listing = std::fs::read_dir(dir).unwrap();
    let mut hars: Vec<PathBuf> = listing
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "har"))
        .collect();
    hars.sort();
    let mut rows_checked = 0;
    for har in &hars {
        let truth_path = har.with_extension("truth.json");
        let Ok(truth) = std::fs::read(&truth_path) else {
            continue;
        };
        let truth: Value = serde_json::from_slice(&truth).unwrap();
        let name = har.file_name().unwrap().to_str().unwrap();
        let mut stats = HttpCounters::default();
        let events = read_har(name, &std::fs::read(har).unwrap(), 0, &mut stats).unwrap();
        let mut analyzer = Analyzer::new(InferenceConfig::default());
        let mut mcp = McpCounters::default();
        for ev in events {
            analyzer.push(ev, &mut mcp);
        }
        let rows = analyzer.finish(&mut mcp);
        let want = truth["entries"].as_array().unwrap();
        assert_eq!(rows.len(), want.len(), "{name}: rows");
        for (r, t) in rows.iter().zip(want) {
            let opt = |v: &Value| v.as_str().map(str::to_string);
            let got = (
                r.http_method.to_string(),
                r.rpc_method.as_deref().map(str::to_string),
                r.jsonrpc_id.clone(),
                r.http_status.map(u64::from),
                r.outcome.name().to_string(),
                r.final_response,
                r.retry_origin.name().to_string(),
            );
            let exp = (
                t["http_method"].as_str().unwrap().to_string(),
                opt(&t["rpc_method"]),
                opt(&t["jsonrpc_id"]),
                t["http_status"].as_u64(),
                t["outcome"].as_str().unwrap().to_string(),
                t["final_response"].as_bool().unwrap(),
                t["retry_origin"].as_str().unwrap().to_string(),
            );
            assert_eq!(got, exp, "{name} row {}: {}", t["n"], t["reason"]);
            assert_eq!(r.capture, name);
            assert_eq!(r.tcp_stream, None);
            rows_checked += 1;
        }
        eprintln!("{name}: {} rows agree with the truth", rows.len());
    }
    eprintln!("samples: {rows_checked} HAR rows checked");
}
