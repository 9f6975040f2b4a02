use super::super::summary::tests::{inputs, stats};
use super::super::test_rows::ex;
use super::paint::*;
use super::*;
use crate::mcp::Exchange;
use crate::mcp::{Kind, Layer, Outcome, RetryOrigin};

#[test]
fn percentiles_nearest_rank() {
    let v: Vec<f64> = (1..=100).map(f64::from).collect();
    assert_eq!(percentile(&v, 50.0), Some(50.0));
    assert_eq!(percentile(&v, 90.0), Some(90.0));
    assert_eq!(percentile(&v, 99.0), Some(99.0));
    assert_eq!(percentile(&v, 100.0), Some(100.0));
    assert_eq!(percentile(&v, 0.0), Some(1.0));
    let small = [10.0, 20.0, 30.0];
    assert_eq!(percentile(&small, 50.0), Some(20.0));
    assert_eq!(percentile(&small, 90.0), Some(30.0));
    assert_eq!(percentile(&[7.5], 99.0), Some(7.5));
    assert_eq!(percentile(&[], 50.0), None);
}

/// A session with a failed call retried by the SDK, then by the application, a manual
/// repeat of a call that had succeeded, and latencies for two methods.
fn story() -> Vec<Exchange> {
    let call = |id, ts, outcome: &'static str, layer: &'static str| {
        let mut e = ex(id, ts);
        e.rpc_method = Some("tools/call".into());
        e.jsonrpc_id = Some(id.to_string());
        e.tool_name = Some("search".into());
        e.outcome = Outcome::from_name(outcome).unwrap();
        e.layer = Layer::from_name(layer).unwrap();
        e
    };
    let mut a = call(1, 1_000_000, "HTTP_ERROR", "transport");
    a.http_status = Some(503);
    a.ts_response = Some(1_010_000);
    a.latency_ms = Some(10.0);
    let mut b = call(2, 1_500_000, "TOOL_ERROR", "application");
    b.retry_of = Some(1);
    b.attempt = 2;
    b.retry_origin = RetryOrigin::Sdk;
    b.retry_evidence = Some("same id+body 490ms after HTTP 503".into());
    b.ts_response = Some(1_520_000);
    b.latency_ms = Some(20.0);
    let mut c = call(3, 2_000_000, "TOOL_SUCCESS", "application");
    c.retry_of = Some(2);
    c.attempt = 3;
    c.retry_origin = RetryOrigin::Application;
    c.ts_response = Some(2_030_000);
    c.latency_ms = Some(30.0);
    let mut d = call(4, 3_000_000, "TOOL_SUCCESS", "application");
    d.tool_name = Some("fetch".into());
    d.ts_response = Some(3_040_000);
    d.latency_ms = Some(40.0);
    let mut e = call(5, 900_000_000, "TOOL_SUCCESS", "application");
    e.tool_name = Some("fetch".into());
    e.retry_of = Some(4);
    e.attempt = 2;
    e.retry_origin = RetryOrigin::Manual;
    e.ts_response = Some(900_050_000);
    e.latency_ms = Some(50.0);
    let mut f = ex(6, 500_000);
    f.rpc_method = Some("initialize".into());
    f.outcome = Outcome::RpcSuccess;
    f.ts_response = Some(502_000);
    f.latency_ms = Some(2.0);
    let mut g = ex(7, 4_000_000);
    g.kind = Kind::Notification;
    g.rpc_method = Some("notifications/initialized".into());
    g.outcome = Outcome::NoResponse;
    g.layer = Layer::Transport;
    vec![f, a, b, c, d, e, g]
}

fn summary(color: bool) -> String {
    let stats = stats();
    let inputs = inputs();
    let rows = story();
    terminal_summary(
        &RunInfo {
            undecrypted: &crate::report::NO_UNDECRYPTED,
            inputs: &inputs,
            stats: &stats,
            rows: &rows.iter().collect::<Vec<_>>(),
            elapsed_s: 1.0,
            bytes_read: 2_000_000,
        },
        color,
    )
}

fn line_with<'a>(text: &'a str, needle: &str) -> &'a str {
    text.lines()
        .find(|l| l.contains(needle))
        .unwrap_or_else(|| panic!("no line with {needle:?} in\n{text}"))
}

fn words(line: &str) -> Vec<&str> {
    line.split_whitespace().collect()
}

#[test]
fn summary_counts_by_outcome_and_layer() {
    let s = summary(false);
    assert!(!s.contains('\x1b'), "ANSI without color:\n{s}");
    assert_eq!(
        words(line_with(&s, "TOOL_SUCCESS  ")),
        ["TOOL_SUCCESS", "application", "3", "42.9%"]
    );
    assert_eq!(
        words(line_with(&s, "HTTP_ERROR  ")),
        ["HTTP_ERROR", "transport", "1", "14.3%"]
    );
    assert!(!s.contains("CANCELLED"), "zero outcomes are not listed");
    let by_layer = s.split("By layer").nth(1).unwrap();
    assert_eq!(
        words(line_with(by_layer, "transport")),
        ["transport", "2", "2"]
    );
    assert_eq!(
        words(line_with(by_layer, "application")),
        ["application", "5", "1"]
    );
    assert!(
        s.contains("7 MCP exchanges in 1 session; 4 HTTP exchanges"),
        "{s}"
    );
}

#[test]
fn summary_failing_tools_and_latency() {
    let s = summary(false);
    let tools = s.split("Failing tools").nth(1).unwrap();
    assert_eq!(
        words(line_with(tools, "search")),
        ["search", "3", "2", "HTTP_ERROR", "1,", "TOOL_ERROR", "1"]
    );
    assert!(
        !tools
            .split("Retry chains")
            .next()
            .unwrap()
            .contains("fetch")
    );
    let lat = s.split("Latency by method").nth(1).unwrap();
    // tools/call latencies 10..50 ms: nearest-rank p50 = 30, p90 = p99 = 50.
    assert_eq!(
        words(line_with(lat, "tools/call")),
        [
            "tools/call",
            "5",
            "30.0",
            "ms",
            "50.0",
            "ms",
            "50.0",
            "ms",
            "50.0",
            "ms"
        ]
    );
    assert_eq!(words(line_with(lat, "initialize"))[1], "1");
}

#[test]
fn summary_retry_chains_split_by_failure() {
    let s = summary(false);
    let r = s
        .split("Retry chains")
        .nth(1)
        .unwrap()
        .split("Latency")
        .next()
        .unwrap();
    assert!(
        r.contains("2 retry chains: 1 after failures (1 recovered), 1 of calls that had succeeded"),
        "{r}"
    );
    let (fail, success) = r.split_once("Repeats after success").unwrap();
    assert!(fail.contains("Retries after failures"));
    assert_eq!(
        words(line_with(fail, "#1 ")),
        [
            "tools/call",
            "id=1",
            "search",
            "1",
            "#1",
            "first",
            "HTTP_ERROR"
        ]
    );
    assert_eq!(
        words(line_with(fail, "#2 ")),
        [
            "2",
            "#2",
            "sdk",
            "TOOL_ERROR",
            "same",
            "id+body",
            "490ms",
            "after",
            "HTTP",
            "503"
        ]
    );
    assert_eq!(
        words(line_with(fail, "#3 ")),
        ["3", "#3", "application", "TOOL_SUCCESS"]
    );
    assert_eq!(words(line_with(fail, "final")), ["final", "TOOL_SUCCESS"]);
    assert_eq!(
        words(line_with(success, "#5 ")),
        ["2", "#5", "manual", "TOOL_SUCCESS"]
    );
}

#[test]
fn summary_what_could_not_be_analyzed() {
    let s = summary(false);
    let n = s.split("Not analyzed").nth(1).unwrap();
    assert_eq!(
        words(line_with(n, "not_tcp")),
        ["skipped:", "not_tcp", "2", "packets"]
    );
    assert_eq!(
        words(line_with(n, "malformed")),
        ["skipped:", "malformed", "1", "packets"]
    );
    assert_eq!(
        words(line_with(n, "gaps")),
        ["gaps", "in", "TCP", "streams", "120", "bytes"]
    );
    assert!(line_with(n, "flow.overlap_mismatch").contains(" 1 "));
}

#[test]
fn drops_and_capture_loss_are_not_analyzed() {
    use crate::capture::CaptureDrops;
    let mut stats = stats();
    stats.flow.ack_events = 400;
    stats.flow.ack_gap_events = 3;
    let mut inputs = inputs();
    inputs[0].drops = CaptureDrops {
        kernel: Some(5),
        interface: None,
    };
    let mut second = inputs[0].clone();
    second.drops = CaptureDrops {
        kernel: Some(2),
        interface: Some(0),
    };
    inputs.push(second);
    let rows = story();
    let info = RunInfo {
        undecrypted: &crate::report::NO_UNDECRYPTED,
        inputs: &inputs,
        stats: &stats,
        rows: &rows.iter().collect::<Vec<_>>(),
        elapsed_s: 1.0,
        bytes_read: 2_000_000,
    };
    let s = terminal_summary(&info, false);
    let n = s.split("Not analyzed").nth(1).unwrap();
    assert_eq!(
        words(line_with(n, "by the kernel")),
        [
            "dropped",
            "by",
            "the",
            "kernel",
            "(capture",
            "statistics)",
            "7",
            "packets"
        ]
    );
    assert!(!n.contains("by the interface"), "known, but 0: {n}");
    assert_eq!(
        words(line_with(n, "capture loss")),
        [
            "capture",
            "loss:",
            "ACKs",
            "for",
            "data",
            "never",
            "captured,",
            "0.75%",
            "of",
            "400",
            "ACKs",
            "3",
            "ACKs"
        ]
    );
    let v = crate::report::summary::run_summary(&info);
    assert_eq!(
        v["capture_drops"],
        serde_json::json!({"kernel": 7, "interface": 0})
    );
    assert_eq!(v["capture_loss"], serde_json::json!(0.0075));
}

#[test]
fn columns_are_aligned() {
    let s = summary(false);
    let outcomes = s
        .split("Outcomes\n")
        .nth(1)
        .unwrap()
        .split("\n\n")
        .next()
        .unwrap();
    let starts: Vec<usize> = outcomes
        .lines()
        .map(|l| l.find("  ").unwrap_or(0))
        .collect();
    let layer_col: Vec<usize> = outcomes
        .lines()
        .skip(1)
        .map(|l| {
            ["application", "transport", "protocol"]
                .iter()
                .find_map(|w| l.find(w))
                .unwrap()
        })
        .collect();
    assert!(layer_col.windows(2).all(|w| w[0] == w[1]), "{outcomes}");
    assert!(!starts.is_empty());
    let ends: Vec<usize> = outcomes.lines().map(|l| l.len()).collect();
    assert!(
        ends.windows(2).all(|w| w[0] == w[1]),
        "right-aligned share column:\n{outcomes}"
    );
}

#[test]
fn color_only_when_asked() {
    let s = summary(true);
    assert!(s.contains("\x1b[31mHTTP_ERROR\x1b[0m"));
    assert!(s.contains("\x1b[32mTOOL_SUCCESS\x1b[0m"));
    assert!(s.contains("\x1b[1mOutcomes\x1b[0m"));
    let plain = summary(false);
    let stripped = s
        .split('\x1b')
        .enumerate()
        .map(|(i, part)| {
            if i == 0 {
                part
            } else {
                part.split_once('m').unwrap().1
            }
        })
        .collect::<String>();
    assert_eq!(stripped, plain);
}

#[test]
fn snapshots() {
    insta::assert_snapshot!("terminal_summary", summary(false));
    insta::assert_snapshot!(
        "session_timeline",
        session_timeline(&story(), "s1", false).unwrap()
    );
    insta::assert_snapshot!("sessions_table", sessions_table_text(&story(), false));
}

#[test]
fn empty_run_says_so() {
    let stats = crate::report::RunStats::default();
    let s = terminal_summary(
        &RunInfo {
            undecrypted: &crate::report::NO_UNDECRYPTED,
            inputs: &[],
            stats: &stats,
            rows: &[],
            elapsed_s: 0.0,
            bytes_read: 0,
        },
        false,
    );
    assert!(s.contains("no MCP exchanges found"));
    assert!(s.contains("nothing: every packet was used"));
}

#[test]
fn timeline_reads_like_a_story() {
    let rows = story();
    assert!(session_timeline(&rows, "nope", false).is_none());
    let t = session_timeline(&rows, "s1", false).unwrap();
    assert!(!t.contains('\x1b'));
    assert!(line_with(&t, "ended by").contains("capture_end"));
    let lines: Vec<&str> = t.lines().filter(|l| l.contains("Z  ")).collect();
    // 7 requests, 6 responses, in time order.
    assert_eq!(lines.len(), 13, "{t}");
    let first = words(lines[0]);
    assert_eq!(
        first,
        ["1970-01-01T00:00:00.500000Z", "->", "#6", "initialize"]
    );
    assert_eq!(
        words(lines[1]),
        [
            "1970-01-01T00:00:00.502000Z",
            "<-",
            "#6",
            "initialize",
            "RPC_SUCCESS",
            "2.0",
            "ms"
        ]
    );
    let retry = line_with(&t, "retry of #1");
    assert!(
        retry.contains("-> ") && retry.contains("#2") && retry.contains("sdk, attempt 2"),
        "{retry}"
    );
    let failed = words(
        lines
            .iter()
            .find(|l| words(l)[1..3] == ["<-", "#1"])
            .unwrap(),
    );
    assert_eq!(
        failed[4..],
        ["id=1", "search", "503", "HTTP_ERROR", "10.0", "ms"]
    );
    // No response: the outcome stands on the request line.
    assert!(line_with(&t, "notifications/initialized").contains("NO_RESPONSE"));
    let times: Vec<&str> = lines.iter().map(|l| words(l)[0]).collect();
    assert!(times.windows(2).all(|w| w[0] <= w[1]));
}

#[test]
fn capture_text_cannot_drive_the_terminal() {
    let mut rows = story();
    rows[1].tool_name = Some("evil\x1b]0;pwned\x07\nnext".into());
    rows[1].session_key = "k\x1b[2J".into();
    let stats = crate::report::RunStats::default();
    let s = terminal_summary(
        &RunInfo {
            undecrypted: &crate::report::NO_UNDECRYPTED,
            inputs: &[],
            stats: &stats,
            rows: &rows.iter().collect::<Vec<_>>(),
            elapsed_s: 1.0,
            bytes_read: 0,
        },
        false,
    );
    assert!(!s.contains('\x1b') && !s.contains('\x07'), "{s}");
    assert!(s.contains("evil\\u{1b}]0;pwned\\u{7}\\nnext"), "{s}");
    let t = session_timeline(&rows, "k\x1b[2J", false).unwrap();
    assert!(!t.contains('\x1b'), "{t}");
    let long = "x".repeat(500);
    assert_eq!(clean(&long).chars().count(), MAX_CELL_CHARS + 1);
}

#[test]
fn sessions_table_lists_each_session() {
    let mut rows = story();
    rows[0].session_key = "s0".into();
    rows[0].client_name = Some("cli".into());
    rows[0].client_version = Some("1.2".into());
    let t = sessions_table_text(&rows, false);
    assert!(!t.contains('\x1b'));
    assert_eq!(t.lines().count(), 3);
    let s0 = words(line_with(&t, "s0 "));
    assert_eq!(s0[..3], ["s0", "cli", "1.2"]);
    let s1 = words(line_with(&t, "s1 "));
    // 6 exchanges, 3 failures (HTTP_ERROR, TOOL_ERROR, NO_RESPONSE), 3 retries.
    assert_eq!(s1[s1.len() - 4..], ["6", "3", "3", "capture_end"]);
    assert_eq!(sessions_table_text(&[], false), "no MCP sessions found\n");
}
