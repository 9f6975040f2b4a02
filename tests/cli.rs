//! Integration tests: the command line's contract (exit codes, one-line errors).

use std::process::Command;

pub(crate) fn mcp_trace(args: &[&str]) -> std::process::Output {
    Command::new(env!("CARGO_BIN_EXE_mcp-trace"))
        .args(args)
        .output()
        .expect("run mcp-trace")
}

fn stderr(out: &std::process::Output) -> String {
    String::from_utf8_lossy(&out.stderr).into_owned()
}

/// Exit 2 with a single `mcp-trace:` line, and never a panic.
pub(crate) fn assert_clean_failure(out: &std::process::Output, needle: &str) {
    let err = stderr(out);
    assert_eq!(out.status.code(), Some(2), "stderr: {err}");
    assert!(!err.contains("panicked"), "panic: {err}");
    assert_eq!(
        err.trim_end().lines().count(),
        1,
        "one line expected: {err}"
    );
    assert!(err.starts_with("mcp-trace: "), "prefix: {err}");
    assert!(err.contains(needle), "`{needle}` not in: {err}");
}

fn temp_file(dir: &tempfile::TempDir, name: &str, bytes: &[u8]) -> String {
    let path = dir.path().join(name);
    std::fs::write(&path, bytes).unwrap();
    path.to_string_lossy().into_owned()
}

/// A valid little-endian classic pcap header (Ethernet, snaplen 65535).
fn pcap_header() -> Vec<u8> {
    crate::support::pcap_file::PcapFormat::default().header()
}

#[test]
fn missing_file_is_exit_2() {
    let out = mcp_trace(&["analyze", "/nonexistent/capture.pcap"]);
    assert_clean_failure(&out, "/nonexistent/capture.pcap");
}

/// The reason is said once (the error's message carries it; it is not its source too).
#[test]
fn an_unreadable_input_says_why_once() {
    let out = mcp_trace(&["analyze", "/nonexistent.pcap"]);
    assert_clean_failure(&out, "cannot open /nonexistent.pcap: ");
    assert_eq!(
        stderr(&out).matches("(os error 2)").count(),
        1,
        "{}",
        stderr(&out)
    );
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().to_string_lossy().into_owned();
    let out = mcp_trace(&["analyze", &path]);
    assert_clean_failure(&out, &format!("{path}: read error: "));
    assert_eq!(
        stderr(&out).matches("(os error 21)").count(),
        1,
        "{}",
        stderr(&out)
    );
}

#[test]
fn empty_file_is_exit_2() {
    let dir = tempfile::tempdir().unwrap();
    let path = temp_file(&dir, "empty.pcap", b"");
    assert_clean_failure(&mcp_trace(&["analyze", &path]), "empty");
}

#[test]
fn bad_magic_is_exit_2() {
    let dir = tempfile::tempdir().unwrap();
    let path = temp_file(&dir, "text.pcap", b"this is not a capture at all\n");
    assert_clean_failure(&mcp_trace(&["analyze", &path]), "text.pcap");
}

#[test]
fn truncated_global_header_is_exit_2() {
    let dir = tempfile::tempdir().unwrap();
    let header = pcap_header();
    let path = temp_file(&dir, "short.pcap", &header[..10]);
    assert_clean_failure(&mcp_trace(&["analyze", &path]), "short.pcap");
}

#[test]
fn record_longer_than_file_is_counted_damage() {
    let dir = tempfile::tempdir().unwrap();
    let mut bytes = pcap_header();
    // One record header announcing 1000 bytes, followed by only 4.
    bytes.extend_from_slice(&1u32.to_le_bytes());
    bytes.extend_from_slice(&0u32.to_le_bytes());
    bytes.extend_from_slice(&1000u32.to_le_bytes());
    bytes.extend_from_slice(&1000u32.to_le_bytes());
    bytes.extend_from_slice(&[0xde, 0xad, 0xbe, 0xef]);
    let path = temp_file(&dir, "cut.pcap", &bytes);
    let summary = dir.path().join("run.json");
    let out = mcp_trace(&["analyze", &path, "--summary", summary.to_str().unwrap()]);
    let err = stderr(&out);
    assert!(!err.contains("panicked"), "{err}");
    assert_eq!(
        out.status.code(),
        Some(0),
        "partial analysis expected: {err}"
    );
    let run: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&summary).unwrap()).unwrap();
    assert_eq!(run["packets_total"], 0);
    assert_eq!(run["anomalies"]["capture.damaged_input"], 1, "{run}");
}

#[test]
fn bad_duration_is_exit_2_before_reading() {
    let out = mcp_trace(&["analyze", "/nonexistent.pcap", "--sdk-max-gap", "soon"]);
    assert_clean_failure(&out, "--sdk-max-gap");
}

#[test]
fn unknown_outcome_is_exit_2() {
    let out = mcp_trace(&["analyze", "/nonexistent.pcap", "--fail-on", "TOOL_OOPS"]);
    assert_clean_failure(&out, "TOOL_OOPS");
}

#[test]
fn bad_since_is_exit_2() {
    let out = mcp_trace(&["analyze", "/nonexistent.pcap", "--since", "yesterday"]);
    assert_clean_failure(&out, "--since");
}

#[test]
fn help_shows_threshold_defaults() {
    let out = mcp_trace(&["analyze", "--help"]);
    let text = String::from_utf8_lossy(&out.stdout);
    for needle in [
        "--repeat-window",
        "[default: 10m]",
        "--sdk-max-gap",
        "[default: 2s]",
        "--manual-min-gap",
        "[default: 1s]",
        "--session-gap",
        "[default: 5m]",
    ] {
        assert!(
            text.contains(needle),
            "`{needle}` missing from help:\n{text}"
        );
    }
}

#[test]
fn empty_capture_analyzes_to_zero_rows() {
    let dir = tempfile::tempdir().unwrap();
    let path = temp_file(&dir, "none.pcap", &pcap_header());
    let jsonl = dir.path().join("out.jsonl");
    let out = mcp_trace(&["analyze", &path, "-o", jsonl.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert_eq!(std::fs::read_to_string(&jsonl).unwrap(), "");
}

#[test]
fn unwritable_output_is_exit_2_and_leaves_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let path = temp_file(&dir, "none.pcap", &pcap_header());
    let target = dir.path().join("no-such-dir").join("out.jsonl");
    let out = mcp_trace(&["analyze", &path, "-o", target.to_str().unwrap()]);
    assert_clean_failure(&out, "no-such-dir");
    assert!(!target.exists());
}

// Filters, --fail-on, output formats and inputs on real samples (issue 8). The binary runs
// from the crate root (see `golden::run`), so inputs are named `samples/...`.

use crate::golden::{self, JsonRow};
use serde_json::Value;

const FAULT: &str = "samples/fault-503-app-retry.pcap";
const SHAPES: &str = "samples/raw-shapes.pcap";
const LEGACY: &str = "samples/legacy-sse.pcap";
const RESUME: &str = "samples/sse-resume.pcap";

/// `analyze INPUTS... -o x.jsonl EXTRA...`: exit code and rows sorted by exchange_id.
fn analyze_rows(inputs: &[&str], extra: &[&str]) -> (Option<i32>, Vec<JsonRow>) {
    let dir = tempfile::tempdir().unwrap();
    let out_path = dir.path().join("x.jsonl");
    let mut args = vec!["analyze"];
    args.extend_from_slice(inputs);
    args.extend_from_slice(&["-o", golden::path_str(&out_path)]);
    args.extend_from_slice(extra);
    let out = golden::run(&args);
    let err = stderr(&out);
    assert!(err.is_empty(), "{args:?}: {err}");
    (out.status.code(), golden::read_exchanges_jsonl(&out_path))
}

/// Rows of a run that must exit 0.
fn rows_ok(inputs: &[&str], extra: &[&str]) -> Vec<JsonRow> {
    let (code, rows) = analyze_rows(inputs, extra);
    assert_eq!(code, Some(0), "{inputs:?} {extra:?}");
    rows
}

fn ids(rows: &[JsonRow]) -> Vec<u64> {
    rows.iter().map(JsonRow::id).collect()
}

/// Filtering never changes the analysis: every kept row is byte for byte the row of the
/// unfiltered run with the same exchange_id.
fn assert_unchanged(all: &[JsonRow], kept: &[JsonRow]) {
    for k in kept {
        let same = all.iter().find(|r| r.id() == k.id()).unwrap();
        assert_eq!(k.raw, same.raw);
    }
}

/// The value of `column` in the row with `exchange_id` `id`.
fn cell<'a>(rows: &'a [JsonRow], id: u64, column: &str) -> &'a Value {
    rows.iter().find(|r| r.id() == id).unwrap().get(column)
}

#[test]
fn filter_outcome_keeps_retry_links_to_filtered_rows() {
    let all = rows_ok(&[FAULT], &[]);
    assert_eq!(ids(&all), [1, 2, 3, 4, 5, 6]);
    let kept = rows_ok(&[FAULT], &["--outcome", "TOOL_SUCCESS"]);
    assert_eq!(ids(&kept), [5]);
    assert_unchanged(&all, &kept);
    // #5 is the application's retry of #4 (the 503), which the filter dropped.
    assert_eq!(cell(&kept, 5, "retry_of"), 4);
    assert_eq!(cell(&kept, 5, "attempt"), 2);
    assert_eq!(cell(&kept, 5, "retry_origin"), "application");
    // Comma-separated, case-insensitive.
    let kept = rows_ok(&[FAULT], &["--outcome", "http_error,Tool_Success"]);
    assert_eq!(ids(&kept), [4, 5]);
    assert_unchanged(&all, &kept);
    // Nothing matches: an empty table, still exit 0.
    assert!(rows_ok(&[FAULT], &["--outcome", "STREAM_OPEN"]).is_empty());
}

#[test]
fn filter_tool() {
    let all = rows_ok(&[SHAPES], &[]);
    assert_eq!(all.len(), 13);
    let kept = rows_ok(&[SHAPES], &["--tool", "echo"]);
    assert_eq!(ids(&kept), [2, 13]);
    assert_unchanged(&all, &kept);
    let kept = rows_ok(&[SHAPES], &["--tool", "malformed,both"]);
    assert_eq!(ids(&kept), [6, 7]);
    assert_eq!(cell(&kept, 6, "outcome"), "MALFORMED_JSON");
    assert_eq!(cell(&kept, 7, "outcome"), "INVALID_ENVELOPE");
    assert!(rows_ok(&[SHAPES], &["--tool", "no_such_tool"]).is_empty());
}

#[test]
fn filter_method() {
    let all = rows_ok(&[FAULT], &[]);
    let kept = rows_ok(&[FAULT], &["--method", "initialize"]);
    assert_eq!(ids(&kept), [1]);
    assert_unchanged(&all, &kept);
    // Rows without a JSON-RPC method (the GET stream, the DELETE) never match a method.
    let kept = rows_ok(
        &[FAULT],
        &["--method", "notifications/initialized,tools/call"],
    );
    assert_eq!(ids(&kept), [2, 4, 5]);
    assert_unchanged(&all, &kept);
}

#[test]
fn filter_session_by_key_or_id() {
    let all = rows_ok(&[FAULT, LEGACY], &[]);
    assert_eq!(all.len(), 12);
    let legacy_key = cell(&all, 1, "session_key").as_str().unwrap().to_owned();
    let fault_key = cell(&all, 7, "session_key").as_str().unwrap().to_owned();
    let fault_id = cell(&all, 7, "session_id").as_str().unwrap().to_owned();
    assert!(legacy_key.starts_with("legacy:"), "{legacy_key}");
    assert_eq!(fault_key, format!("sid:{fault_id}"));
    let kept = rows_ok(&[FAULT, LEGACY], &["--session", &legacy_key]);
    assert_eq!(ids(&kept), [1, 2, 3, 4, 5, 6]);
    assert_unchanged(&all, &kept);
    // The bare Mcp-Session-Id selects the same rows as the key.
    let kept = rows_ok(&[FAULT, LEGACY], &["--session", &fault_id]);
    assert_eq!(ids(&kept), [7, 8, 9, 10, 11, 12]);
    assert_unchanged(&all, &kept);
    assert!(rows_ok(&[FAULT, LEGACY], &["--session", "sid:nope"]).is_empty());
}

#[test]
fn filter_since_until_rfc3339() {
    let all = rows_ok(&[SHAPES], &[]);
    let ts = |id: u64| cell(&all, id, "ts_request").as_str().unwrap().to_owned();
    // `--since` is inclusive, `--until` exclusive.
    let kept = rows_ok(&[SHAPES], &["--since", &ts(5), "--until", &ts(8)]);
    assert_eq!(ids(&kept), [5, 6, 7]);
    assert_unchanged(&all, &kept);
    assert_eq!(ids(&rows_ok(&[SHAPES], &["--since", &ts(12)])), [12, 13]);
    assert_eq!(ids(&rows_ok(&[SHAPES], &["--until", &ts(3)])), [1, 2]);
    // The same instant with a UTC offset: 20:18:15.190104Z is 21:18:15.190104+01:00.
    assert_eq!(ts(5), "2026-11-29T20:18:15.190104Z");
    let kept = rows_ok(
        &[SHAPES],
        &[
            "--since",
            "2026-11-29T21:18:15.190104+01:00",
            "--until",
            "2026-11-29T20:18:15.389726Z",
        ],
    );
    assert_eq!(ids(&kept), [5, 6, 7]);
    // One microsecond later excludes #5.
    let kept = rows_ok(&[SHAPES], &["--since", "2026-11-29T20:18:15.190105Z"]);
    assert_eq!(kept.first().map(JsonRow::id), Some(6));
}

#[test]
fn filter_only_failures() {
    let all = rows_ok(&[SHAPES], &[]);
    let kept = rows_ok(&[SHAPES], &["--only-failures"]);
    // raw-shapes: #1 discover, #2 and #13 echo succeed, #3 is an accepted notification.
    assert_eq!(ids(&kept), [4, 5, 6, 7, 8, 9, 10, 11, 12]);
    assert_unchanged(&all, &kept);
    for r in &kept {
        let outcome = r.get("outcome").as_str().unwrap();
        assert!(
            !["TOOL_SUCCESS", "RPC_SUCCESS", "ACCEPTED", "STREAM_OPEN"].contains(&outcome),
            "{outcome}"
        );
    }
    let kept = rows_ok(&[FAULT], &["--only-failures"]);
    assert_eq!(ids(&kept), [4]);
}

#[test]
fn filters_combine() {
    let kept = rows_ok(&[FAULT], &["--tool", "echo", "--only-failures"]);
    assert_eq!(ids(&kept), [4]);
    let kept = rows_ok(
        &[SHAPES],
        &["--method", "tools/call", "--outcome", "TOOL_SUCCESS"],
    );
    assert_eq!(ids(&kept), [2, 13]);
}

/// Filters select the written exchange rows only: the sessions table and the run summary
/// are computed from every row (what the code does; report-schema.md does not say).
#[test]
fn filters_do_not_change_sessions_or_summary() {
    let dir = tempfile::tempdir().unwrap();
    let p = |f: &str| dir.path().join(f);
    let mut outputs = Vec::new();
    for (tag, extra) in [("a", &[][..]), ("b", &["--outcome", "TOOL_SUCCESS"][..])] {
        let sessions = p(&format!("{tag}.csv"));
        let summary = p(&format!("{tag}.json"));
        let x = p(&format!("{tag}.jsonl"));
        let mut args = vec![
            "analyze",
            FAULT,
            "-o",
            golden::path_str(&x),
            "--sessions",
            golden::path_str(&sessions),
            "--summary",
            golden::path_str(&summary),
        ];
        args.extend_from_slice(extra);
        golden::run_ok(&args);
        let mut run: Value =
            serde_json::from_str(&std::fs::read_to_string(&summary).unwrap()).unwrap();
        let obj = run.as_object_mut().unwrap();
        obj.remove("elapsed_s").unwrap();
        obj.remove("throughput_mb_s").unwrap();
        outputs.push((std::fs::read_to_string(&sessions).unwrap(), run));
    }
    assert_eq!(outputs[0].0, outputs[1].0, "sessions table");
    assert_eq!(outputs[0].1, outputs[1].1, "run summary");
    assert_eq!(outputs[1].1["mcp_exchanges"]["HTTP_ERROR"], 1);
    assert_eq!(outputs[1].1["mcp_exchanges_total"], 6);
}

/// The terminal summary, unlike the summary file, describes the selected rows.
#[test]
fn filters_apply_to_terminal_summary() {
    let text = golden::run_ok(&[
        "analyze",
        FAULT,
        "--outcome",
        "TOOL_SUCCESS",
        "--color",
        "never",
    ]);
    assert!(text.contains("1 MCP exchange in 1 session"), "{text}");
    // Only the selected row is counted; its retry-hygiene evidence still says how the
    // attempt it repeats (not selected) ended.
    let (counted, hygiene) = text.split_once("Retry hygiene").unwrap();
    assert!(!counted.contains("HTTP_ERROR"), "{text}");
    assert!(
        hygiene.contains("unsafe_retry") && hygiene.contains("#4 ended HTTP_ERROR (503)"),
        "{text}"
    );
}

/// `--fail-on` decides from every row of the analysis, not only the rows the filters keep
/// (report-schema.md: "exit status 1 when any row has one of those outcomes"); the outputs
/// are still written in full.
#[test]
fn fail_on_exit_status() {
    let (code, rows) = analyze_rows(&[FAULT], &["--fail-on", "HTTP_ERROR"]);
    assert_eq!(code, Some(1));
    assert_eq!(rows.len(), 6);
    let (code, _) = analyze_rows(&[FAULT], &["--fail-on", "TOOL_ERROR"]);
    assert_eq!(code, Some(0));
    let (code, _) = analyze_rows(&[FAULT], &["--fail-on", "tool_error,http_error"]);
    assert_eq!(code, Some(1));
    // The failing row is filtered out of the table, yet the run fails.
    let (code, rows) = analyze_rows(
        &[FAULT],
        &["--fail-on", "HTTP_ERROR", "--outcome", "TOOL_SUCCESS"],
    );
    assert_eq!(code, Some(1));
    assert_eq!(ids(&rows), [5]);
    // raw-shapes has a TOOL_ERROR-free, INVALID_TOOL_RESULT row.
    let (code, _) = analyze_rows(&[SHAPES], &["--fail-on", "INVALID_TOOL_RESULT"]);
    assert_eq!(code, Some(1));
    let (code, _) = analyze_rows(&[SHAPES], &["--fail-on", "CANCELLED,TASK_CREATED"]);
    assert_eq!(code, Some(0));
    // Without -o: the summary is printed, nothing on stderr, exit 1.
    let out = golden::run(&[
        "analyze",
        FAULT,
        "--fail-on",
        "HTTP_ERROR",
        "--color",
        "never",
    ]);
    assert_eq!(out.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&out.stdout).contains("mcp-trace summary"));
    assert_eq!(stderr(&out), "");
}

#[test]
fn format_flag_overrides_extension() {
    let dir = tempfile::tempdir().unwrap();
    let p = |f: &str| golden::path_str(&dir.path().join(f)).to_owned();
    golden::run_ok(&["analyze", FAULT, "-o", &p("ref.csv")]);
    golden::run_ok(&["analyze", FAULT, "-o", &p("ref.jsonl")]);
    golden::run_ok(&["analyze", FAULT, "-o", &p("a.txt"), "--format", "csv"]);
    golden::run_ok(&["analyze", FAULT, "-o", &p("b.csv"), "--format", "jsonl"]);
    golden::run_ok(&["analyze", FAULT, "-o", &p("c.ndjson")]);
    let read = |f: &str| std::fs::read(p(f)).unwrap();
    assert!(read("ref.csv").starts_with(b"exchange_id,capture,"));
    assert_eq!(read("a.txt"), read("ref.csv"));
    assert_eq!(read("b.csv"), read("ref.jsonl"));
    assert_eq!(read("c.ndjson"), read("ref.jsonl"));
}

#[test]
fn unknown_extension_is_exit_2_and_writes_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let target = dir.path().join("rows.txt");
    let out = golden::run(&["analyze", FAULT, "-o", golden::path_str(&target)]);
    assert_clean_failure(&out, "rows.txt");
    assert!(out.stdout.is_empty());
    assert!(std::fs::read_dir(dir.path()).unwrap().next().is_none());
    // The sessions table's format comes from its extension too.
    let target = dir.path().join("s.txt");
    let out = golden::run(&["analyze", FAULT, "--sessions", golden::path_str(&target)]);
    assert_clean_failure(&out, "s.txt");
    // `http` alike.
    let out = golden::run(&["http", FAULT, "-o", golden::path_str(&target)]);
    assert_clean_failure(&out, "s.txt");
    assert!(std::fs::read_dir(dir.path()).unwrap().next().is_none());
    // And an unknown --format value.
    let out = golden::run(&["analyze", FAULT, "-o", "x.csv", "--format", "xml"]);
    assert_clean_failure(&out, "xml");
}

#[test]
fn show_unknown_session_is_exit_2() {
    let out = golden::run(&["show", FAULT, "--session", "nope"]);
    assert_clean_failure(&out, "nope");
    assert!(out.stdout.is_empty());
}

/// Rows equal except the columns named.
fn assert_rows_equal_except(a: &[JsonRow], b: &[JsonRow], except: &[&str]) {
    assert_eq!(a.len(), b.len());
    for (x, y) in a.iter().zip(b) {
        let strip = |r: &JsonRow| {
            let mut v = r.value.clone();
            for c in except {
                v.as_object_mut().unwrap().remove(*c).unwrap();
            }
            v
        };
        assert_eq!(strip(x), strip(y));
    }
}

#[test]
fn stdin_gives_the_same_rows() {
    let file_rows = rows_ok(&[FAULT], &[]);
    let bytes = std::fs::read(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/samples/fault-503-app-retry.pcap"
    ))
    .unwrap();
    let dir = tempfile::tempdir().unwrap();
    let x = dir.path().join("x.jsonl");
    let out = golden::run_with_stdin(&["analyze", "-", "-o", golden::path_str(&x)], Some(&bytes));
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let rows = golden::read_exchanges_jsonl(&x);
    assert_rows_equal_except(&file_rows, &rows, &["capture"]);
    // Standard input is named `-` in the `capture` column.
    assert!(rows.iter().all(|r| r.get("capture") == "-"));
}

fn gzip(bytes: &[u8]) -> Vec<u8> {
    use std::io::Write;
    let mut enc = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
    enc.write_all(bytes).unwrap();
    enc.finish().unwrap()
}

#[test]
fn gzip_input_gives_the_same_rows() {
    let file_rows = rows_ok(&[FAULT], &[]);
    let bytes = std::fs::read(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/samples/fault-503-app-retry.pcap"
    ))
    .unwrap();
    let dir = tempfile::tempdir().unwrap();
    let gz = dir.path().join("f.pcap.gz");
    std::fs::write(&gz, gzip(&bytes)).unwrap();
    let rows = rows_ok(&[golden::path_str(&gz)], &[]);
    assert_rows_equal_except(&file_rows, &rows, &["capture"]);
    assert!(rows.iter().all(|r| r.get("capture") == "f.pcap.gz"));
    // Recognised by content: gzip on standard input too.
    let x = dir.path().join("x.jsonl");
    let out = golden::run_with_stdin(
        &["analyze", "-", "-o", golden::path_str(&x)],
        Some(&gzip(&bytes)),
    );
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert_rows_equal_except(&file_rows, &golden::read_exchanges_jsonl(&x), &["capture"]);
}

#[test]
fn two_inputs_merge_in_time_order() {
    let fault = rows_ok(&[FAULT], &[]);
    let legacy = rows_ok(&[LEGACY], &[]);
    // legacy-sse was recorded 5 s before fault-503: its rows come first whatever the
    // argument order.
    let merged = rows_ok(&[FAULT, LEGACY], &[]);
    assert_eq!(merged.len(), fault.len() + legacy.len());
    assert_eq!(rows_ok(&[LEGACY, FAULT], &[]).len(), merged.len());
    let ts: Vec<&str> = merged
        .iter()
        .map(|r| r.get("ts_request").as_str().unwrap())
        .collect();
    assert!(ts.windows(2).all(|w| w[0] <= w[1]), "{ts:?}");
    let (first, second) = merged.split_at(legacy.len());
    assert!(first.iter().all(|r| r.get("capture") == "legacy-sse.pcap"));
    assert!(
        second
            .iter()
            .all(|r| r.get("capture") == "fault-503-app-retry.pcap")
    );
    // Same analysis; ids and TCP stream indices continue after the first capture's.
    let shift = legacy.len() as u64;
    assert_rows_equal_except(&legacy, first, &[]);
    assert_rows_equal_except(
        &fault,
        second,
        &["exchange_id", "retry_of", "tcp_stream", "retry_evidence"],
    );
    assert_eq!(cell(&merged, 5 + shift, "retry_of"), 4 + shift);
    let evidence = cell(&merged, 5 + shift, "retry_evidence").as_str().unwrap();
    assert!(evidence.contains(&format!("#{}", 4 + shift)), "{evidence}");
    let max_legacy_stream = legacy
        .iter()
        .filter_map(|r| r.get("tcp_stream").as_u64())
        .max()
        .unwrap();
    for (f, m) in fault.iter().zip(second) {
        assert_eq!(m.id(), f.id() + shift);
        assert!(m.get("tcp_stream").as_u64().unwrap() > max_legacy_stream);
    }
}

/// A classic pcap cut in two at a record boundary: (header + first `n` records,
/// header + the rest).
fn split_pcap(bytes: &[u8], n: usize) -> (Vec<u8>, Vec<u8>) {
    use crate::support::pcap_file::{FILE_HEADER_LEN, PcapFormat, RECORD_HEADER_LEN};
    assert_eq!(
        &bytes[..4],
        &PcapFormat::default().header()[..4],
        "little-endian µs pcap"
    );
    let header = &bytes[..FILE_HEADER_LEN];
    let mut pos = FILE_HEADER_LEN;
    for _ in 0..n {
        let len = u32::from_le_bytes(bytes[pos + 8..pos + 12].try_into().unwrap()) as usize;
        pos += RECORD_HEADER_LEN + len;
    }
    assert!(pos < bytes.len(), "cut past the end");
    let mut a = header.to_vec();
    a.extend_from_slice(&bytes[FILE_HEADER_LEN..pos]);
    let mut b = header.to_vec();
    b.extend_from_slice(&bytes[pos..]);
    (a, b)
}

/// Rotated captures are one capture: cutting sse-resume in the middle of its SSE stream
/// changes nothing but the `capture` column.
#[test]
fn rotated_capture_is_one_capture() {
    let whole = rows_ok(&[RESUME], &[]);
    let bytes = std::fs::read(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/samples/sse-resume.pcap"
    ))
    .unwrap();
    let dir = tempfile::tempdir().unwrap();
    for n in [10, 25, 40] {
        let (a, b) = split_pcap(&bytes, n);
        let pa = dir.path().join("part-1.pcap");
        let pb = dir.path().join("part-2.pcap");
        std::fs::write(&pa, a).unwrap();
        std::fs::write(&pb, b).unwrap();
        // Given in either order.
        for inputs in [[&pa, &pb], [&pb, &pa]] {
            let inputs = inputs.map(|p| golden::path_str(p));
            let rows = rows_ok(&inputs, &[]);
            assert_rows_equal_except(&whole, &rows, &["capture"]);
            assert!(
                rows.iter().all(|r| ["part-1.pcap", "part-2.pcap"]
                    .contains(&r.get("capture").as_str().unwrap())),
                "cut after {n} records"
            );
        }
    }
}

/// Names in `dir`, sorted.
fn entries(dir: &std::path::Path) -> Vec<String> {
    let mut names: Vec<String> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    names.sort();
    names
}

/// An output path that is an existing directory: exit 2, one line, no `.partial` left.
#[test]
fn table_output_path_is_a_directory_is_exit_2_and_leaves_nothing() {
    let dir = tempfile::tempdir().unwrap();
    for name in ["x.jsonl", "x.csv", "s.csv"] {
        std::fs::create_dir(dir.path().join(name)).unwrap();
    }
    let p = |f: &str| golden::path_str(&dir.path().join(f)).to_owned();
    for args in [
        vec!["analyze", FAULT, "-o", &p("x.jsonl")],
        vec!["analyze", FAULT, "-o", &p("x.csv")],
        vec!["analyze", FAULT, "--sessions", &p("s.csv")],
    ] {
        let out = golden::run(&args);
        assert_clean_failure(&out, args[3].rsplit('/').next().unwrap());
        assert_eq!(
            entries(dir.path()),
            ["s.csv", "x.csv", "x.jsonl"],
            "{args:?}"
        );
    }
}

#[test]
fn summary_path_is_a_directory_leaves_no_partial() {
    let dir = tempfile::tempdir().unwrap();
    let target = dir.path().join("run.json");
    std::fs::create_dir(&target).unwrap();
    let out = golden::run(&["analyze", FAULT, "--summary", golden::path_str(&target)]);
    assert_clean_failure(&out, "run.json");
    assert_eq!(entries(dir.path()), ["run.json"]);
}

#[test]
fn http_output_path_is_a_directory_leaves_no_partial() {
    let dir = tempfile::tempdir().unwrap();
    let target = dir.path().join("h.csv");
    std::fs::create_dir(&target).unwrap();
    let out = golden::run(&["http", FAULT, "-o", golden::path_str(&target)]);
    assert_clean_failure(&out, "h.csv");
    assert_eq!(entries(dir.path()), ["h.csv"]);
}

/// The one error line names the OS error once.
#[test]
fn write_error_names_the_os_error_once() {
    let dir = tempfile::tempdir().unwrap();
    for args in [
        ["-o", "no-such-dir/x.jsonl"],
        ["-o", "no-such-dir/x.csv"],
        ["--sessions", "no-such-dir/s.csv"],
        ["--summary", "no-such-dir/run.json"],
    ] {
        let target = dir.path().join(args[1]);
        let out = golden::run(&["analyze", FAULT, args[0], golden::path_str(&target)]);
        assert_clean_failure(&out, "no-such-dir");
        let err = stderr(&out);
        assert_eq!(err.matches("os error 2").count(), 1, "{err}");
    }
}

/// Filters select CSV rows exactly as they select JSON lines.
#[test]
fn filters_apply_to_csv() {
    let dir = tempfile::tempdir().unwrap();
    let csv = dir.path().join("x.csv");
    golden::run_ok(&[
        "analyze",
        SHAPES,
        "-o",
        golden::path_str(&csv),
        "--tool",
        "echo,sse_cut",
    ]);
    let rows = rows_ok(&[SHAPES], &["--tool", "echo,sse_cut"]);
    assert_eq!(ids(&rows), [2, 10, 13]);
    golden::assert_csv_equals_jsonl(
        &std::fs::read_to_string(&csv).unwrap(),
        &rows,
        "exchange_id",
        "filtered CSV",
        golden::EmptyField::Distinct,
    );
}

/// Issue 9: rows are written as they are released. A capture of 150 s with one call a second
/// and a GET stream open throughout: every call is written in exchange_id order, the stream
/// (id 1, reserved when it held the head longer than the hold limit) is written when it ends,
/// after calls released before, and rows, ids and retry links are those of the request order; the run summary and the
/// sessions table count every row.
#[test]
fn long_capture_with_stream_open_throughout_is_written_as_rows_end() {
    use crate::support::Capture;
    const CALLS: usize = 150;
    let sid = [("Mcp-Session-Id", "S1")];
    let mut cap = Capture::new();
    let mut g = cap.connect(3000);
    g.request(
        &mut cap,
        "GET",
        "/mcp",
        &[("Mcp-Session-Id", "S1"), ("Accept", "text/event-stream")],
        "",
    );
    g.sse_head(&mut cap);
    let mut c = cap.connect(3000);
    for n in 1..=CALLS {
        cap.wait_ms(1000);
        // Call 50 fails with 503; call 51 is the same call with a new id.
        let args = if n == 51 { 50 } else { n };
        let body = format!(
            r#"{{"jsonrpc":"2.0","id":{n},"method":"tools/call","params":{{"name":"t{args}","arguments":{{}}}}}}"#
        );
        c.post(&mut cap, &sid, &body);
        if n == 50 {
            c.respond(&mut cap, 503, "text/plain", "busy");
        } else {
            c.respond_json(
                &mut cap,
                200,
                &format!(r#"{{"jsonrpc":"2.0","id":{n},"result":{{"content":[]}}}}"#),
            );
        }
    }
    g.sse_end(&mut cap);
    cap.close(&mut g, true);
    cap.close(&mut c, false);
    let dir = tempfile::tempdir().unwrap();
    let pcap = cap.write(dir.path(), "long.pcap");
    let out_path = dir.path().join("x.jsonl");
    let summary = dir.path().join("run.json");
    let sessions = dir.path().join("s.csv");
    let out = mcp_trace(&[
        "analyze",
        pcap.to_str().unwrap(),
        "-o",
        out_path.to_str().unwrap(),
        "--summary",
        summary.to_str().unwrap(),
        "--sessions",
        sessions.to_str().unwrap(),
    ]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let text = std::fs::read_to_string(&out_path).unwrap();
    let written: Vec<Value> = text
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(written.len(), CALLS + 1);
    let id = |v: &Value| v["exchange_id"].as_u64().unwrap();
    // File order: the calls 2..=151 in order; the stream, written when it ended (at the end
    // of the capture, with the rows still held then), comes after the calls released earlier.
    let file_ids: Vec<u64> = written.iter().map(id).collect();
    let calls: Vec<u64> = file_ids.iter().copied().filter(|&i| i != 1).collect();
    assert_eq!(calls, (2..=CALLS as u64 + 1).collect::<Vec<_>>());
    let stream_at = file_ids.iter().position(|&i| i == 1).unwrap();
    assert!(stream_at > 60, "written at {stream_at}: {file_ids:?}");
    let mut rows = written.clone();
    rows.sort_by_key(id);
    assert_eq!(rows[0]["kind"], "stream");
    assert_eq!(rows[0]["stream_end"], "complete");
    for (n, row) in rows.iter().enumerate().skip(1) {
        assert_eq!(row["kind"], "request", "#{n}");
        assert_eq!(row["jsonrpc_id"], n.to_string(), "ids follow request order");
        assert_eq!(row["session_key"], "sid:S1");
        let outcome = if n == 50 {
            "HTTP_ERROR"
        } else {
            "TOOL_SUCCESS"
        };
        assert_eq!(row["outcome"], outcome, "#{n}");
        if n == 51 {
            assert_eq!(row["retry_of"], 51, "call 51 repeats call 50 (exchange 51)");
            assert_eq!(row["retry_origin"], "application");
            assert_eq!(row["attempt"], 2);
        } else {
            assert_eq!(row["retry_origin"], "none", "#{n}");
        }
    }
    let s: Value = serde_json::from_str(&std::fs::read_to_string(&summary).unwrap()).unwrap();
    assert_eq!(s["mcp_exchanges_total"], CALLS as u64 + 1);
    assert_eq!(s["mcp_exchanges"]["TOOL_SUCCESS"], CALLS as u64 - 1);
    assert_eq!(s["mcp_exchanges"]["HTTP_ERROR"], 1);
    assert_eq!(s["retries"]["application"], 1);
    assert_eq!(s["sessions"], 1);
    let table = std::fs::read_to_string(&sessions).unwrap();
    assert_eq!(table.lines().count(), 2, "{table}");
    assert!(
        table.lines().nth(1).unwrap().starts_with("sid:S1,"),
        "{table}"
    );
}

#[test]
fn flow_limits_are_options_and_their_hits_are_counted() {
    let dir = tempfile::tempdir().unwrap();
    let summary = dir.path().join("run.json");
    let sample = concat!(env!("CARGO_MANIFEST_DIR"), "/samples/concurrent.pcap");
    let out = mcp_trace(&[
        "analyze",
        sample,
        "--max-open-flows",
        "1",
        "--summary",
        summary.to_str().unwrap(),
    ]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let run: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&summary).unwrap()).unwrap();
    let evicted = run["anomalies"]["flow.evicted"].as_u64().unwrap_or(0);
    assert!(evicted > 0, "one open flow at a time must evict: {run}");

    let bad = mcp_trace(&["analyze", sample, "--flow-idle-timeout", "later"]);
    assert_clean_failure(&bad, "--flow-idle-timeout");
}

/// Anomalies of one `analyze` run on a sample, with extra options.
fn run_anomalies(sample: &str, extra: &[&str]) -> serde_json::Map<String, Value> {
    let dir = tempfile::tempdir().unwrap();
    let summary = dir.path().join("run.json");
    let jsonl = dir.path().join("out.jsonl");
    let path = format!("{}/samples/{sample}", env!("CARGO_MANIFEST_DIR"));
    let mut args = vec![
        "analyze",
        path.as_str(),
        "-o",
        jsonl.to_str().unwrap(),
        "--summary",
        summary.to_str().unwrap(),
    ];
    args.extend_from_slice(extra);
    let out = mcp_trace(&args);
    assert_eq!(out.status.code(), Some(0), "{args:?}: {}", stderr(&out));
    let run: Value = serde_json::from_str(&std::fs::read_to_string(&summary).unwrap()).unwrap();
    run["anomalies"].as_object().cloned().unwrap_or_default()
}

/// Every limit of the HTTP, RPC and MCP stages is an option; set low on a sample that
/// stays within the default, it records its anomaly (and the default run does not).
#[test]
fn stage_limits_are_options_and_their_hits_are_counted() {
    let cases: &[(&str, &[&str], &str)] = &[
        (
            "concurrent.pcap",
            &["--max-header", "300"],
            "http.head_too_large",
        ),
        (
            "ts-streamable-json.pcap",
            &["--max-body", "20"],
            "http.request_body_limit",
        ),
        (
            "ts-streamable-json.pcap",
            &["--max-body", "20"],
            "mcp.body_too_large",
        ),
        (
            "har-mitmproxy-raw.wire.pcap",
            &["--max-decoded", "10"],
            "http.decompression_limit",
        ),
        (
            "ts-streamable-sse.pcap",
            &["--max-sse-event", "20"],
            "rpc.sse_event_too_large",
        ),
        (
            "raw-shapes.pcap",
            &["--max-pending", "1"],
            "mcp.pending_limit",
        ),
        (
            "concurrent.pcap",
            &["--max-retry-rows", "1"],
            "mcp.retry_index_full",
        ),
        (
            "legacy-sse.pcap",
            &["--max-catalog-tools", "1"],
            "mcp.tool_catalog_full",
        ),
    ];
    for (sample, flags, anomaly) in cases {
        let default = run_anomalies(sample, &[]);
        assert!(
            !default.contains_key(*anomaly),
            "{sample}: {anomaly} by default"
        );
        let limited = run_anomalies(sample, flags);
        let hits = limited.get(*anomaly).and_then(Value::as_u64).unwrap_or(0);
        assert!(hits > 0, "{sample} {flags:?}: no {anomaly} in {limited:?}");
    }
    // clap rejects a bad size before any input is read (its usage note follows the error).
    for (flag, value) in [("--max-body", "lots"), ("--max-header", "0")] {
        let out = mcp_trace(&["analyze", "x.pcap", flag, value]);
        let err = stderr(&out);
        assert_eq!(out.status.code(), Some(2), "{err}");
        assert!(
            err.starts_with("error: invalid value") && err.contains(flag),
            "{err}"
        );
    }
}

/// `--threads` changes where the work runs, never the output: the same bytes for 1, 2 and 3.
#[test]
fn thread_counts_give_identical_tables() {
    let dir = tempfile::tempdir().unwrap();
    let sample = concat!(env!("CARGO_MANIFEST_DIR"), "/samples/concurrent.pcap");
    let mut outputs = Vec::new();
    for threads in ["1", "2", "3"] {
        let out_path = dir.path().join(format!("t{threads}.jsonl"));
        let sum_path = dir.path().join(format!("t{threads}.json"));
        let conns_path = dir.path().join(format!("t{threads}.conns.csv"));
        let out = mcp_trace(&[
            "analyze",
            sample,
            "--threads",
            threads,
            "-o",
            out_path.to_str().unwrap(),
            "--summary",
            sum_path.to_str().unwrap(),
            "--connections",
            conns_path.to_str().unwrap(),
        ]);
        assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
        let mut summary: Value =
            serde_json::from_str(&std::fs::read_to_string(&sum_path).unwrap()).unwrap();
        // Wall time differs from run to run; everything else must not.
        for timing in ["elapsed_s", "throughput_mb_s"] {
            summary.as_object_mut().unwrap().remove(timing);
        }
        outputs.push((
            std::fs::read(&out_path).unwrap(),
            summary,
            std::fs::read_to_string(&conns_path).unwrap(),
        ));
    }
    assert!(!outputs[0].0.is_empty());
    // A header and one line per connection.
    let streams = outputs[0].1["tcp_streams"].as_u64().unwrap() as usize;
    assert_eq!(outputs[0].2.lines().count(), 1 + streams);
    for other in &outputs[1..] {
        assert!(other.0 == outputs[0].0, "rows differ between thread counts");
        assert_eq!(other.1, outputs[0].1);
        assert_eq!(
            other.2, outputs[0].2,
            "connections differ between thread counts"
        );
    }
}

const MISSING_KEY: &str = "samples/tls-missing-key.pcap";
const MISSING_KEY_LOG: &str = "samples/tls-missing-key.keys";

#[test]
fn terminal_summary_lists_the_connection_it_could_not_decrypt() {
    let out = mcp_trace(&[
        "analyze",
        MISSING_KEY,
        "--keylog",
        MISSING_KEY_LOG,
        "--color",
        "never",
    ]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let text = String::from_utf8_lossy(&out.stdout);
    let section = &text[text.find("Not analyzed").expect("Not analyzed section")..];
    let line = section
        .lines()
        .find(|l| l.contains("127.0.0.1:45244 → 127.0.0.1:18770"))
        .unwrap_or_else(|| panic!("no line for the undecrypted connection:\n{section}"));
    // tcp_stream, client → server, SNI, version, reason (tls-missing-key.truth.json).
    let words: Vec<&str> = line.split_whitespace().collect();
    assert_eq!(words.first(), Some(&"5"), "{line}");
    for want in ["localhost", "TLS 1.3", "no_key"] {
        assert!(line.contains(want), "{want} missing: {line}");
    }
    // Only that one: the others were decrypted.
    assert_eq!(section.matches(" → 127.0.0.1:").count(), 1, "{section}");
}

#[test]
fn http_writes_the_connections_table_without_mcp_counts() {
    let dir = tempfile::tempdir().unwrap();
    let conns = dir.path().join("conns.jsonl");
    let out = mcp_trace(&[
        "http",
        MISSING_KEY,
        "--keylog",
        MISSING_KEY_LOG,
        "-o",
        dir.path().join("http.csv").to_str().unwrap(),
        "--connections",
        conns.to_str().unwrap(),
    ]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let rows: Vec<Value> = std::fs::read_to_string(&conns)
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(rows.len(), 10);
    assert!(
        rows.iter().all(|r| r["mcp_exchanges"].is_null()),
        "{rows:?}"
    );
    let no_key: Vec<&Value> = rows
        .iter()
        .filter(|r| r["decryption"] == "no_key")
        .collect();
    assert_eq!(no_key.len(), 1);
    assert_eq!(no_key[0]["tcp_stream"], 5);
    assert_eq!(no_key[0]["http_exchanges"], 0);
    assert!(no_key[0]["http_version"].is_null());
    let http: u64 = rows
        .iter()
        .map(|r| r["http_exchanges"].as_u64().unwrap())
        .sum();
    let http_rows = std::fs::read_to_string(dir.path().join("http.csv")).unwrap();
    assert_eq!(http as usize, http_rows.lines().count() - 1);
}

#[test]
fn connections_of_a_har_input_are_an_empty_table_in_every_format() {
    let dir = tempfile::tempdir().unwrap();
    for ext in ["csv", "jsonl", "parquet"] {
        let conns = dir.path().join(format!("conns.{ext}"));
        let out = mcp_trace(&[
            "analyze",
            "samples/har-mitmproxy-ts.har",
            "-o",
            dir.path().join("out.jsonl").to_str().unwrap(),
            "--connections",
            conns.to_str().unwrap(),
        ]);
        assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
        let bytes = std::fs::read(&conns).unwrap();
        match ext {
            "csv" => assert_eq!(
                String::from_utf8(bytes).unwrap().trim_end(),
                "tcp_stream,capture,client_addr,server_addr,first_ts,last_ts,packets,client_bytes,\
                 server_bytes,gap_bytes,ended_by,tls_version,tls_cipher,tls_sni,alpn,tls_resumed,\
                 decryption,http_version,http_exchanges,mcp_exchanges"
            ),
            "jsonl" => assert!(bytes.is_empty()),
            _ => assert_eq!(&bytes[..4], b"PAR1"),
        }
    }
}

#[test]
fn connections_with_an_unknown_extension_is_exit_2_before_reading() {
    let dir = tempfile::tempdir().unwrap();
    let conns = dir.path().join("conns.txt");
    let out = mcp_trace(&["analyze", FAULT, "--connections", conns.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    assert!(!conns.exists());
}

/// Outputs to named pipes (as to `/dev/null` or `/dev/stdout`) are written in place: every
/// reader gets the whole output, and each pipe is still a pipe afterwards (a partial file
/// renamed over it would have replaced it).
#[test]
fn outputs_to_pipes_are_written_in_place() {
    use std::os::unix::fs::FileTypeExt;
    let dir = tempfile::tempdir().unwrap();
    let names = ["rows.jsonl", "spans.jsonl", "run.json", "report.html"];
    let readers: Vec<_> = names
        .iter()
        .map(|name| {
            let path = dir.path().join(name);
            assert!(
                Command::new("mkfifo")
                    .arg(&path)
                    .status()
                    .unwrap()
                    .success()
            );
            std::thread::spawn(move || std::fs::read_to_string(path).unwrap())
        })
        .collect();
    let path = |name: &str| dir.path().join(name).display().to_string();
    let out = mcp_trace(&[
        "analyze",
        "samples/fault-503-app-retry.pcap",
        "--no-progress",
        "-o",
        &path("rows.jsonl"),
        "--otlp",
        &path("spans.jsonl"),
        "--summary",
        &path("run.json"),
        "--html",
        &path("report.html"),
    ]);
    assert!(out.status.success(), "{}", stderr(&out));
    // Checked before waiting for the readers: a pipe replaced by a file is never opened for
    // writing, and its reader would wait forever.
    for name in names {
        let kind = std::fs::metadata(dir.path().join(name))
            .unwrap()
            .file_type();
        assert!(kind.is_fifo(), "{name} is no longer a pipe");
        assert!(!dir.path().join(format!("{name}.partial")).exists());
    }
    let texts: Vec<String> = readers.into_iter().map(|r| r.join().unwrap()).collect();
    let rows: Vec<serde_json::Value> = texts[0]
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert!(
        rows.iter().any(|r| r["outcome"] == "HTTP_ERROR"),
        "{}",
        texts[0]
    );
    for line in texts[1].lines() {
        let request: serde_json::Value = serde_json::from_str(line).unwrap();
        assert!(request["resourceSpans"].is_array());
    }
    assert!(!texts[1].is_empty());
    let run: serde_json::Value = serde_json::from_str(&texts[2]).unwrap();
    assert_eq!(run["mcp_exchanges_total"], rows.len());
    assert!(
        texts[3].contains("<html"),
        "{}",
        &texts[3][..texts[3].len().min(200)]
    );
}
