//! `analyze --html`: written through `PATH.partial`, honours the row filters and
//! `--html-max-rows`, fails with one line on an unwritable path. (Drawing and interaction are
//! checked in headless Chromium by tests/python/test_html_report.py.)

use serde_json::Value;
use std::process::Command;

fn analyze(args: &[&str]) -> std::process::Output {
    Command::new(env!("CARGO_BIN_EXE_mcp-trace"))
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .arg("analyze")
        .args(args)
        .output()
        .unwrap()
}

fn data(path: &std::path::Path) -> Value {
    let page = std::fs::read_to_string(path).unwrap();
    let open = "<script type=\"application/json\" id=\"mcp-trace-data\">";
    let start = page.find(open).unwrap() + open.len();
    let end = start + page[start..].find("</script>").unwrap();
    serde_json::from_str(&page[start..end]).unwrap()
}

#[test]
fn html_follows_the_filters_and_the_row_limit() {
    let dir = tempfile::tempdir().unwrap();
    let html = dir.path().join("r.html");
    let jsonl = dir.path().join("r.jsonl");
    let out = analyze(&[
        "samples/raw-shapes.pcap",
        "--only-failures",
        "--html",
        html.to_str().unwrap(),
        "-o",
        jsonl.to_str().unwrap(),
    ]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let failing = std::fs::read_to_string(&jsonl).unwrap().lines().count();
    assert!(failing > 2, "raw-shapes.pcap has failures");
    let d = data(&html);
    assert_eq!(d["rows"].as_array().unwrap().len(), failing);
    assert_eq!(d["filters"], serde_json::json!(["--only-failures"]));
    // The run counts cover every exchange, not only the selected ones.
    assert!(d["summary"]["mcp_exchanges_total"].as_u64().unwrap() > failing as u64);
    assert!(!dir.path().join("r.html.partial").exists());

    let out = analyze(&[
        "samples/raw-shapes.pcap",
        "--only-failures",
        "--html",
        html.to_str().unwrap(),
        "--html-max-rows",
        "2",
    ]);
    assert!(out.status.success());
    // Without -o the terminal summary still goes to stdout.
    assert!(String::from_utf8_lossy(&out.stdout).contains("mcp-trace summary"));
    let d = data(&html);
    assert_eq!(d["rows"].as_array().unwrap().len(), 2);
    assert_eq!(d["rows_omitted"], failing as u64 - 2);
}

#[test]
fn unwritable_html_path_is_one_line_and_exit_2() {
    let dir = tempfile::tempdir().unwrap();
    let html = dir.path().join("missing").join("r.html");
    let out = analyze(&["samples/raw-shapes.pcap", "--html", html.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(err.trim().lines().count(), 1, "{err}");
    assert!(err.contains("missing/r.html"), "{err}");
    assert!(out.stdout.is_empty());
}
