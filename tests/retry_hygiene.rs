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

/// Every input in samples/ (pcap, pcapng, HAR).
fn sample_inputs() -> Vec<std::path::PathBuf> {
    let dir = Path::new(concat!(env!("CARGO_MANIFEST_DIR"), "/samples"));
    let mut inputs: Vec<std::path::PathBuf> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| {
            p.extension()
                .is_some_and(|e| e == "pcap" || e == "pcapng" || e == "har")
        })
        .collect();
    inputs.sort();
    inputs
}

/// The run summary's `retry_findings` (all six names, zeros included) and the sessions
/// table's `n_<finding>` columns equal the counts over the rows, on every sample.
#[test]
fn summary_and_sessions_count_the_findings_of_the_rows() {
    const NAMES: [&str; 6] = [
        "unsafe_retry",
        "retry_after_ignored",
        "unchanged_after_invalid_params",
        "replay_after_invalid_response",
        "no_backoff",
        "too_many_attempts",
    ];
    let inputs = sample_inputs();
    assert!(inputs.len() >= 20, "{} sample inputs", inputs.len());
    let mut findings_seen = 0;
    for input in &inputs {
        let dir = tempfile::tempdir().unwrap();
        let (rows_path, summary_path, sessions_path) = (
            dir.path().join("rows.jsonl"),
            dir.path().join("run.json"),
            dir.path().join("sessions.jsonl"),
        );
        crate::golden::run_ok(&[
            "analyze",
            crate::golden::path_str(input),
            "-o",
            crate::golden::path_str(&rows_path),
            "--summary",
            crate::golden::path_str(&summary_path),
            "--sessions",
            crate::golden::path_str(&sessions_path),
        ]);
        let read_lines = |p: &Path| -> Vec<Value> {
            std::fs::read_to_string(p)
                .unwrap()
                .lines()
                .map(|l| serde_json::from_str(l).unwrap())
                .collect()
        };
        let rows = read_lines(&rows_path);
        let sessions = read_lines(&sessions_path);
        let summary: Value =
            serde_json::from_str(&std::fs::read_to_string(&summary_path).unwrap()).unwrap();
        let counted = summary["retry_findings"].as_object().unwrap();
        assert_eq!(counted.len(), NAMES.len(), "{}", input.display());
        for name in NAMES {
            let in_rows = rows
                .iter()
                .filter(|r| {
                    r["retry_findings"]
                        .as_str()
                        .is_some_and(|f| f.split(';').any(|x| x == name))
                })
                .count() as u64;
            // Only repeats are judged.
            for r in &rows {
                if r["retry_findings"].is_string() {
                    assert!(r["retry_of"].is_u64(), "{r}");
                }
            }
            let in_sessions: u64 = sessions
                .iter()
                .map(|s| s[format!("n_{name}").as_str()].as_u64().unwrap())
                .sum();
            assert_eq!(
                counted[name].as_u64(),
                Some(in_rows),
                "{} {name}",
                input.display()
            );
            assert_eq!(in_sessions, in_rows, "{} {name}", input.display());
            findings_seen += in_rows;
        }
    }
    // fault-503-app-retry: the application re-sent the TS test server's echo tool, which
    // declares no annotations, after a 503.
    assert!(findings_seen >= 1);
}

/// `--fail-on` takes finding names as well as outcome names; an unknown name is refused
/// (exit 2) before any input is read.
#[test]
fn fail_on_accepts_finding_names() {
    let sample = "samples/fault-503-app-retry.pcap";
    let code = |args: &[&str]| crate::golden::run(args).status.code();
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("o.jsonl");
    let out = crate::golden::path_str(&out);
    assert_eq!(
        code(&["analyze", sample, "-o", out, "--fail-on", "unsafe_retry"]),
        Some(1)
    );
    assert_eq!(
        code(&[
            "analyze",
            sample,
            "-o",
            out,
            "--fail-on",
            "no_backoff,retry_after_ignored"
        ]),
        Some(0)
    );
    assert_eq!(
        code(&[
            "analyze",
            sample,
            "-o",
            out,
            "--fail-on",
            "tool_success,no_backoff"
        ]),
        Some(1)
    );
    let refused = crate::golden::run(&["analyze", sample, "--fail-on", "unsafe_retryy"]);
    assert_eq!(refused.status.code(), Some(2));
    let err = String::from_utf8_lossy(&refused.stderr);
    assert!(
        err.contains("unknown outcome or finding `unsafe_retryy`")
            && err.contains("too_many_attempts"),
        "{err}"
    );
}

/// The hygiene options are shown in `--help` with their defaults, and bad values are refused.
#[test]
fn hygiene_options_in_help() {
    let help = crate::golden::run_ok(&["analyze", "--help"]);
    for (flag, default) in [
        ("--max-attempts", "[default: 3]"),
        ("--backoff-factor", "[default: 1.5]"),
        ("--backoff-floor", "[default: 50ms]"),
        ("--max-catalog-tools", "[default: 65536]"),
    ] {
        let at = help
            .find(flag)
            .unwrap_or_else(|| panic!("{flag} in {help}"));
        let rest = &help[at..];
        let end = rest.find("\n  -").unwrap_or(rest.len());
        assert!(rest[..end].contains(default), "{flag}: {}", &rest[..end]);
    }
    let sample = "samples/fault-503-app-retry.pcap";
    for (flag, value) in [
        ("--max-attempts", "0"),
        ("--backoff-factor", "-1"),
        ("--backoff-factor", "nan"),
        ("--backoff-floor", "soon"),
    ] {
        let out = crate::golden::run(&["analyze", sample, flag, value]);
        assert_eq!(out.status.code(), Some(2), "{flag} {value}");
    }
    // --max-attempts 1: the application's retry is one attempt too many.
    let dir = tempfile::tempdir().unwrap();
    let rows_path = dir.path().join("rows.jsonl");
    crate::golden::run_ok(&[
        "analyze",
        sample,
        "--max-attempts",
        "1",
        "-o",
        crate::golden::path_str(&rows_path),
    ]);
    let text = std::fs::read_to_string(&rows_path).unwrap();
    assert!(
        text.contains(r#""retry_findings":"unsafe_retry;too_many_attempts""#),
        "{text}"
    );
}

/// Through every stage of a packet capture: a `tools/list` result's annotations decide
/// `unsafe_retry` (a read-only tool retried after a 503 is fine, an unannotated one is not),
/// and a 429's `Retry-After` header decides `retry_after_ignored`.
#[test]
fn tools_list_annotations_and_retry_after_from_the_wire() {
    let call = |id: u32, tool: &str, q: u32| {
        format!(
            r#"{{"jsonrpc":"2.0","id":{id},"method":"tools/call","params":{{"name":"{tool}","arguments":{{"q":{q}}}}}}}"#
        )
    };
    let ok = |id: u32| {
        format!(
            r#"{{"jsonrpc":"2.0","id":{id},"result":{{"content":[{{"type":"text","text":"ok"}}]}}}}"#
        )
    };
    let rows = crate::support::analyze(|cap| {
        let mut c = cap.connect(3000);
        c.post(
            cap,
            &[],
            r#"{"jsonrpc":"2.0","id":1,"method":"tools/list"}"#,
        );
        cap.wait_ms(5);
        c.respond_json(
            cap,
            200,
            r#"{"jsonrpc":"2.0","id":1,"result":{"tools":[{"name":"get","inputSchema":{"type":"object","properties":{"q":{"type":"number"}}},"annotations":{"title":"Get","readOnlyHint":true}},{"name":"put","inputSchema":{"type":"object"},"annotations":{"destructiveHint":false}}]}}"#,
        );
        for (first, again, tool) in [(2, 3, "get"), (4, 5, "put")] {
            cap.wait_ms(100);
            c.post(cap, &[], &call(first, tool, 1));
            cap.wait_ms(5);
            c.respond(cap, 503, "", "");
            cap.wait_ms(300);
            c.post(cap, &[], &call(again, tool, 1));
            cap.wait_ms(5);
            c.respond_json(cap, 200, &ok(again));
        }
        cap.wait_ms(100);
        c.post(cap, &[], &call(6, "get", 2));
        cap.wait_ms(5);
        cap.send(
            &mut c,
            false,
            b"HTTP/1.1 429 Too Many Requests\r\nRetry-After: 5\r\nContent-Length: 0\r\n\r\n",
        );
        cap.wait_ms(1000);
        c.post(cap, &[], &call(7, "get", 2));
        cap.wait_ms(5);
        c.respond_json(cap, 200, &ok(7));
        cap.close(&mut c, false);
    });
    let got: Vec<(&str, Option<u64>, Option<&str>)> = rows
        .iter()
        .filter(|r| r["rpc_method"] == "tools/call")
        .map(|r| {
            (
                r["jsonrpc_id"].as_str().unwrap(),
                r["retry_of"].as_u64(),
                r["retry_findings"].as_str(),
            )
        })
        .collect();
    assert_eq!(
        got,
        [
            ("2", None, None),
            ("3", Some(2), None),
            ("4", None, None),
            ("5", Some(4), Some("unsafe_retry")),
            ("6", None, None),
            ("7", Some(6), Some("retry_after_ignored")),
        ],
        "{rows:#?}"
    );
    let evidence = |id: &str| {
        rows.iter()
            .find(|r| r["jsonrpc_id"] == id && r["rpc_method"] == "tools/call")
            .and_then(|r| r["retry_evidence"].as_str())
            .unwrap()
            .to_string()
    };
    assert!(
        evidence("5").contains(
            "unsafe_retry: tool put not declared safe (tools/list #1 gave readOnlyHint false (default), idempotentHint false (default), destructiveHint false)"
        ),
        "{}",
        evidence("5")
    );
    assert!(
        evidence("7").contains("retry_after_ignored: HTTP 429 of #6 asked Retry-After 5000ms, sent 1000ms after that response"),
        "{}",
        evidence("7")
    );
}
