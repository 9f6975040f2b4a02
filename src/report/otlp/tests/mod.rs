//! The sink on hand-made rows: links to targets released later, evicted or never seen,
//! session roots, batching into requests, and the parts of a span.

use super::span::SpanDraft;
use super::*;
use crate::mcp::{Outcome, TraceParent};
use crate::report::test_rows::ex;

/// Runs `rows` through a sink writing to a temp file; returns the lines and the report.
fn run(rows: &[(Exchange, bool)]) -> (Vec<serde_json::Value>, OtlpReport) {
    run_with(rows, OtlpLimits::default())
}

/// A sink writing to `path`.
fn sink_at(path: &std::path::Path, limits: OtlpLimits) -> OtlpSink {
    OtlpSink::create(OtlpOptions {
        path: Some(path.to_path_buf()),
        endpoint: None,
        inputs: vec!["cap.pcap".into()],
        limits,
    })
    .unwrap()
}

fn run_with(rows: &[(Exchange, bool)], limits: OtlpLimits) -> (Vec<serde_json::Value>, OtlpReport) {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("t.jsonl");
    let mut sink = sink_at(&path, limits);
    for (row, keep) in rows {
        sink.push(row, *keep).unwrap();
    }
    let report = sink.finish().unwrap();
    let text = std::fs::read_to_string(&path).unwrap();
    let lines = text
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    (lines, report)
}

/// The name of `row`'s span.
fn name_of(row: &Exchange) -> String {
    SpanDraft::of(&RunKey::of_inputs(&["cap.pcap"]), row, Placement::of(row))
        .name()
        .to_string()
}

fn spans(lines: &[serde_json::Value]) -> Vec<serde_json::Value> {
    lines
        .iter()
        .flat_map(|l| l["resourceSpans"].as_array().unwrap().clone())
        .flat_map(|rs| rs["scopeSpans"][0]["spans"].as_array().unwrap().clone())
        .collect()
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

fn span_id(id: u64) -> String {
    hex(&RunKey::of_inputs(&["cap.pcap"]).span_id(id))
}

fn retry_of(mut row: Exchange, of: u64) -> Exchange {
    row.retry_of = Some(of);
    row.attempt = 2;
    row.retry_origin = RetryOrigin::Application;
    row
}

#[test]
fn a_retry_released_before_its_target_waits_for_it() {
    // #1 stays open (a request never answered) and is released after its retry #2.
    let mut first = ex(1, 1_000);
    first.outcome = Outcome::NoResponse;
    first.inference.trace_parent =
        TraceParent::parse("00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01");
    let second = retry_of(ex(2, 5_000), 1);
    let (lines, report) = run(&[(second, true), (first, true)]);
    let all = spans(&lines);
    assert_eq!(all.len(), 3, "two exchanges and the session root");
    let retry = all.iter().find(|s| s["spanId"] == span_id(2)).unwrap();
    assert_eq!(retry["links"][0]["spanId"], span_id(1));
    // The target joined its caller's trace: the link points there.
    assert_eq!(
        retry["links"][0]["traceId"],
        "4bf92f3577b34da6a3ce929d0e0e4736"
    );
    assert_eq!(report.links, 1);
    assert_eq!(report.links_unresolved, 0);
}

#[test]
fn a_link_whose_target_never_comes_is_written_without_it() {
    let (lines, report) = run(&[(retry_of(ex(5, 5_000), 3), true)]);
    let all = spans(&lines);
    let retry = all.iter().find(|s| s["spanId"] == span_id(5)).unwrap();
    assert!(retry.get("links").is_none());
    assert_eq!(report.links_unresolved, 1);
    // A target with a larger id than the row cannot come later: not held at all.
    let mut odd = ex(2, 5_000);
    odd.continuation_of = Some(9);
    let (_, report) = run(&[(odd, true)]);
    assert_eq!(report.links_unresolved, 1);
}

#[test]
fn a_filtered_row_has_no_span_but_its_retry_links_to_it() {
    let mut first = ex(1, 1_000);
    first.outcome = Outcome::HttpError;
    let (lines, report) = run(&[(first, false), (retry_of(ex(2, 2_000), 1), true)]);
    let all = spans(&lines);
    assert_eq!(all.len(), 2, "the retry and its session root");
    assert_eq!(all[0]["links"][0]["spanId"], span_id(1));
    assert_eq!(report.spans, 1);
}

#[test]
fn the_session_root_covers_its_rows_and_parents_them() {
    let mut a = ex(1, 1_000_000);
    a.ts_response = Some(1_500_000);
    let mut b = ex(2, 2_000_000);
    b.ts_response = Some(4_000_000);
    b.outcome = Outcome::ToolError;
    b.session_id = Some("abc".into());
    let (lines, report) = run(&[(a, true), (b, true)]);
    let all = spans(&lines);
    let root = all.iter().find(|s| s["name"] == "MCP session").unwrap();
    assert_eq!(root["startTimeUnixNano"], "1000000000");
    assert_eq!(root["endTimeUnixNano"], "4000000000");
    assert_eq!(root["kind"], 1);
    assert_eq!(root["traceId"], hex(&session_trace_id("s1")));
    assert_eq!(root["spanId"], hex(&session_root_span_id("s1")));
    for s in all.iter().filter(|s| s["name"] != "MCP session") {
        assert_eq!(s["parentSpanId"], root["spanId"]);
        assert_eq!(s["traceId"], root["traceId"]);
    }
    assert_eq!(report.session_spans, 1);
    let attrs = root["attributes"].to_string();
    assert!(attrs.contains(r#""key":"mcp.session.id","value":{"stringValue":"abc"}"#));
    assert!(attrs.contains(r#""key":"mcp_trace.failures","value":{"intValue":"1"}"#));
}

#[test]
fn spans_go_out_in_requests_of_at_most_spans_per_request() {
    let n = 2 * SPANS_PER_REQUEST as u64 + 76;
    let rows: Vec<(Exchange, bool)> = (1..=n)
        .map(|i| (ex(i, i64::try_from(i).unwrap() * 1000), true))
        .collect();
    let (lines, report) = run(&rows);
    assert_eq!(lines.len(), 3);
    for line in &lines[..2] {
        assert_eq!(spans(std::slice::from_ref(line)).len(), SPANS_PER_REQUEST);
    }
    // The last request also carries the session root span.
    assert_eq!(spans(&lines).len() as u64, n + 1);
    assert_eq!(report.requests, 3);
    assert_eq!(report.spans, n);
}

#[test]
fn resources_name_the_observed_client() {
    let mut a = ex(1, 1_000);
    a.client_name = Some("claude-code".into());
    a.client_version = Some("2.1".into());
    let b = ex(2, 2_000);
    let (lines, _) = run(&[(a, true), (b, true)]);
    let resources: Vec<String> = lines[0]["resourceSpans"]
        .as_array()
        .unwrap()
        .iter()
        .map(|rs| rs["resource"]["attributes"].to_string())
        .collect();
    // The session root goes with the first client name the session showed.
    assert_eq!(resources.len(), 2, "{resources:?}");
    assert!(resources[0].contains("claude-code") && resources[0].contains("2.1"));
    assert!(resources[1].contains("unknown_service"));
    let names = |i: usize| -> Vec<String> {
        lines[0]["resourceSpans"][i]["scopeSpans"][0]["spans"]
            .as_array()
            .unwrap()
            .iter()
            .map(|s| s["name"].as_str().unwrap().to_string())
            .collect()
    };
    assert_eq!(names(0), ["POST request", "MCP session"]);
    assert_eq!(names(1), ["POST request"]);
}

#[test]
fn names_and_endpoints() {
    let mut prompt = ex(1, 0);
    prompt.rpc_method = Some("prompts/get".into());
    prompt.inference.prompt_name = Some("review".into());
    assert_eq!(name_of(&prompt), "prompts/get review");
    let mut get = ex(2, 0);
    get.http_method = "GET".into();
    get.kind = crate::mcp::Kind::Stream;
    assert_eq!(name_of(&get), "GET stream");

    let mut v6 = ex(3, 0);
    v6.server_addr = "[::1]:3000".into();
    v6.client_addr = "::1".into();
    v6.path = "/mcp?api_key=sha256:0123456789ab".into();
    v6.jsonrpc_id = Some("\"req-7\"".into());
    let (lines, _) = run(&[(v6, true)]);
    let attrs = spans(&lines)[0]["attributes"].to_string();
    for expected in [
        r#"{"key":"server.address","value":{"stringValue":"::1"}}"#,
        r#"{"key":"server.port","value":{"intValue":"3000"}}"#,
        r#"{"key":"client.address","value":{"stringValue":"::1"}}"#,
        r#"{"key":"url.path","value":{"stringValue":"/mcp"}}"#,
        r#"{"key":"jsonrpc.request.id","value":{"stringValue":"req-7"}}"#,
        r#"{"key":"network.protocol.version","value":{"stringValue":"1.1"}}"#,
    ] {
        assert!(attrs.contains(expected), "{expected} not in {attrs}");
    }
    assert!(!attrs.contains("client.port"), "{attrs}");
}

#[test]
fn urls_for_sending_and_for_showing() {
    assert_eq!(
        Endpoint::traces_url("http://h:4318"),
        "http://h:4318/v1/traces"
    );
    assert_eq!(
        Endpoint::traces_url("http://h:4318/v1/traces/"),
        "http://h:4318/v1/traces"
    );
    assert_eq!(
        Endpoint::traces_url("https://h/otlp/?k=v"),
        "https://h/otlp/v1/traces?k=v"
    );
    assert_eq!(
        display_url("https://u:p@h:1/x/v1/traces?token=t#f"),
        "https://h:1/x/v1/traces"
    );
}

#[test]
fn hostile_many_retries_of_requests_still_open_stay_within_the_held_limit() {
    // 10,000 retries whose targets (ids 1..=10,000) are released only at the end: past the
    // limit of 100 held spans the rest go out at once without their link.
    let limits = OtlpLimits {
        held_spans: 100,
        ..OtlpLimits::default()
    };
    let n = 10_000u64;
    let mut rows: Vec<(Exchange, bool)> =
        (1..=n).map(|i| (retry_of(ex(n + i, 0), i), true)).collect();
    rows.extend((1..=n).map(|i| (ex(i, 0), true)));
    let mut sink = OtlpSink::create(OtlpOptions {
        limits,
        ..OtlpOptions::default()
    })
    .unwrap();
    for (row, keep) in &rows {
        sink.push(row, *keep).unwrap();
        assert!(sink.held_count <= 100);
    }
    let report = sink.finish().unwrap();
    assert_eq!(report.links, 100);
    assert_eq!(report.links_unresolved, n - 100);
    assert_eq!(report.spans, 2 * n);
}

#[test]
fn hostile_old_link_targets_are_forgotten_past_the_limit() {
    let limits = OtlpLimits {
        link_targets: 10,
        ..OtlpLimits::default()
    };
    let mut rows: Vec<(Exchange, bool)> = (1..=50u64).map(|i| (ex(i, 0), true)).collect();
    rows.push((retry_of(ex(51, 0), 45), true)); // remembered
    rows.push((retry_of(ex(52, 0), 5), true)); // forgotten: written without its link at the end
    let (_, report) = run_with(&rows, limits);
    assert_eq!((report.links, report.links_unresolved), (1, 1));
}

#[test]
fn hostile_many_sessions_write_their_roots_early() {
    let limits = OtlpLimits {
        session_roots: 10,
        ..OtlpLimits::default()
    };
    let rows: Vec<(Exchange, bool)> = (1..=35u64)
        .map(|i| {
            let mut r = ex(i, 0);
            r.session_key = format!("s{i}").into();
            (r, true)
        })
        .collect();
    let (lines, report) = run_with(&rows, limits);
    assert_eq!(report.session_spans, 35);
    assert_eq!(report.session_roots_written_early, 30);
    let roots = spans(&lines)
        .iter()
        .filter(|s| s["name"] == "MCP session")
        .count();
    assert_eq!(roots, 35);
}

/// Rows covering every optional part of a span: events and dropped events, links, an error
/// message and an id to unescape, a prompt, a GET stream, IPv6 and HAR endpoints, texts to
/// escape, gateway and retry columns.
fn varied_rows() -> Vec<Exchange> {
    let mut rows = crate::report::test_rows::rows();
    let mut stream = ex(10, 5_000);
    stream.http_method = "GET".into();
    stream.kind = crate::mcp::Kind::Stream;
    stream.rpc_method = None;
    stream.stream_end = crate::mcp::StreamEnd::Rst;
    stream.sse_events = 3;
    stream.inference.sse_marks = vec![
        crate::mcp::SseMark {
            ts_us: 5_100,
            name: "notifications/progress".into(),
        },
        crate::mcp::SseMark {
            ts_us: 5_200,
            name: "resp\"onse\u{1}".into(),
        },
    ];
    stream.inference.sse_marks_dropped = 4;
    rows.push(stream);
    let mut prompt = ex(11, 6_000);
    prompt.rpc_method = Some("prompts/get".into());
    prompt.inference.prompt_name = Some("rév\\iew\t".into());
    prompt.server_addr = "[::1]:3000".into();
    prompt.client_addr = "api.example.com:443".into();
    prompt.path = "/mcp?k=v".into();
    prompt.jsonrpc_id = Some("\"a\\\"b\"".into());
    prompt.outcome = Outcome::JsonrpcError;
    prompt.error_code = Some(-32000);
    prompt.error_message = Some("bad \"thing\"\n".into());
    rows.push(prompt);
    let mut tool_error = retry_of(ex(12, 7_000), 11);
    tool_error.rpc_method = Some("tools/call".into());
    tool_error.tool_name = Some("send_email".into());
    tool_error.outcome = Outcome::ToolError;
    tool_error.retry_evidence = Some("same params 12 ms later".into());
    tool_error.hop = crate::mcp::Hop(2);
    tool_error.forwarded_from = Some(3);
    tool_error.fault_hop = Some(2);
    tool_error.http_version = None;
    tool_error.tcp_stream = None;
    rows.push(tool_error);
    let mut no_response = ex(13, 8_000);
    no_response.outcome = Outcome::NoResponse;
    no_response.rpc_method = Some("initialize".into());
    no_response.server_addr = "".into();
    rows.push(no_response);
    rows
}

#[test]
fn a_draft_writes_the_bytes_of_its_span() {
    let run = RunKey::of_inputs(&["cap.pcap"]);
    for row in varied_rows() {
        let mut draft = SpanDraft::of(&run, &row, Placement::of(&row));
        if row.retry_of.is_some() {
            let target = link_targets(&row).next().unwrap();
            draft
                .links
                .push(link(&run, target, [7; 16], row.retry_origin));
        }
        let mut direct = Vec::new();
        super::json::encode_draft(&mut direct, &draft);
        let mut via_model = Vec::new();
        super::json::encode_span(&mut via_model, &draft.to_span());
        assert_eq!(
            String::from_utf8(direct).unwrap(),
            String::from_utf8(via_model).unwrap(),
            "row {}",
            row.exchange_id
        );
    }
}

#[test]
fn services_with_one_hash_are_told_apart() {
    let mut sink = OtlpSink::create(OtlpOptions::default()).unwrap();
    let a = Service {
        name: Some("a".into()),
        version: None,
    };
    let b = Service {
        name: Some("b".into()),
        version: Some("1".into()),
    };
    let index_a = sink.add_service(a);
    let index_b = sink.add_service(b);
    // Make b's hash point at a, as a collision would.
    let hash_b = sink.service_hasher.hash_one((Some("b"), Some("1")));
    sink.service_by_hash.insert(hash_b, index_a);
    assert_eq!(sink.service_index(Some("a"), None), Some(index_a));
    assert_eq!(sink.service_index(Some("b"), Some("1")), Some(index_b));
    assert_eq!(sink.service_index(Some("c"), None), None);
    sink.finish().unwrap();
}

#[test]
fn a_sink_dropped_before_the_end_leaves_no_file() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("t.jsonl");
    let mut sink = sink_at(&path, OtlpLimits::default());
    for id in 1..=300 {
        sink.push(&ex(id, i64::try_from(id).unwrap() * 1000), true)
            .unwrap();
    }
    drop(sink);
    assert!(!path.exists());
    assert!(!dir.path().join("t.jsonl.partial").exists());
}
