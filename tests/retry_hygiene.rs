//! Retry hygiene end to end (report-schema.md section 4b), and the outcomes its findings start
//! from, the same whatever the input format.

use crate::support::run_analyze_into;
use serde_json::Value;
use std::path::Path;

fn fixture(name: &str) -> std::path::PathBuf {
    Path::new(concat!(env!("CARGO_MANIFEST_DIR"), "/tests/fixtures")).join(name)
}

/// A call the page aborted (`net::ERR_ABORTED`, status 0 or -1) and the client then cancelled
/// with `notifications/cancelled` naming its id is CANCELLED, as in packet captures; one
/// aborted and never cancelled stays NO_RESPONSE (the fixture's `log.comment` says so too).
#[test]
fn aborted_then_cancelled_har_call_is_cancelled() {
    let dir = tempfile::tempdir().unwrap();
    let rows = run_analyze_into(&fixture("har/aborted-then-cancelled.har"), dir.path());
    let calls: Vec<(&str, &str, &str)> = rows
        .iter()
        .filter(|r| r["rpc_method"] == "tools/call")
        .map(|r| {
            (
                r["jsonrpc_id"].as_str().unwrap(),
                r["outcome"].as_str().unwrap(),
                r["layer"].as_str().unwrap(),
            )
        })
        .collect();
    assert_eq!(
        calls,
        [
            ("1", "CANCELLED", "protocol"),
            ("2", "CANCELLED", "protocol"),
            ("3", "NO_RESPONSE", "transport"),
        ],
        "{rows:#?}"
    );
    // The cancellations found their requests.
    for r in &rows {
        let anomalies = r["anomalies"].as_str().unwrap_or_default();
        assert!(
            !anomalies.contains("mcp.cancel_without_open_request"),
            "{r}"
        );
    }
}
