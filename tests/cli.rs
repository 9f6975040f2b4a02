//! Integration tests: the command line's contract (exit codes, one-line errors).

use std::process::Command;

fn mcp_trace(args: &[&str]) -> std::process::Output {
    Command::new(env!("CARGO_BIN_EXE_mcp-trace"))
        .args(args)
        .output()
        .expect("run mcp-trace")
}

fn stderr(out: &std::process::Output) -> String {
    String::from_utf8_lossy(&out.stderr).into_owned()
}

/// Exit 2 with a single `mcp-trace:` line, and never a panic.
fn assert_clean_failure(out: &std::process::Output, needle: &str) {
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
    let mut h = Vec::new();
    h.extend_from_slice(&0xa1b2_c3d4u32.to_le_bytes());
    h.extend_from_slice(&2u16.to_le_bytes());
    h.extend_from_slice(&4u16.to_le_bytes());
    h.extend_from_slice(&[0; 8]);
    h.extend_from_slice(&65535u32.to_le_bytes());
    h.extend_from_slice(&1u32.to_le_bytes());
    h
}

#[test]
fn missing_file_is_exit_2() {
    let out = mcp_trace(&["analyze", "/nonexistent/capture.pcap"]);
    assert_clean_failure(&out, "/nonexistent/capture.pcap");
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
