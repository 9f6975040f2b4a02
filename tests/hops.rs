//! Gateways (report-schema.md section 4c) end to end on the real recordings of
//! `samples/gw-*.pcap`: the run summary counts calls once and each gateway's copies, retries and
//! where failures arose; the terminal summary and `show` say the same for a person; the
//! sessions table keeps each leg's sessions apart. Values come from the gateways' logs
//! (`samples/gateway-logs/`), which the truth files cite.

use serde_json::Value;
use std::path::{Path, PathBuf};
use std::process::Command;

fn sample(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("samples")
        .join(name)
}

fn mcp_trace(args: &[&str], capture: &Path) -> (String, Value, Vec<Value>) {
    let dir = tempfile::tempdir().unwrap();
    let summary = dir.path().join("run.json");
    let sessions = dir.path().join("sessions.jsonl");
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_mcp-trace"));
    cmd.args(args).arg(capture);
    if let Some(keys) = crate::support::keylog_beside(capture) {
        cmd.arg("--keylog").arg(keys);
    }
    if args.first() == Some(&"analyze") {
        cmd.arg("--summary").arg(&summary);
        cmd.arg("--sessions").arg(&sessions);
    }
    let o = cmd.output().unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let stdout = String::from_utf8(o.stdout).unwrap();
    let read = |p: &Path| std::fs::read_to_string(p).unwrap_or_default();
    let run = serde_json::from_str(&read(&summary)).unwrap_or(Value::Null);
    let sessions = read(&sessions)
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    (stdout, run, sessions)
}

fn gateway(run: &Value, endpoint: &str) -> Value {
    run["hops"][endpoint].clone()
}

#[test]
fn an_upstream_timeout_is_the_gateways_and_counted_once() {
    let (text, run, sessions) = mcp_trace(&["analyze"], &sample("gw-nginx-timeout.pcap"));
    // nginx access log: 14 requests, each proxied once to 127.0.0.3:18444.
    let g = gateway(&run, "127.0.0.2:18443");
    assert_eq!(g["calls"], 14, "{run}");
    assert_eq!(g["copies"], 14);
    assert_eq!(g["gateway_retries"], 0);
    // Two `sleepy` calls answered 504 after nginx's 1 s proxy_read_timeout; `fail` is the
    // server's tool error, relayed.
    assert_eq!(g["faults_at_gateway"], 2);
    assert_eq!(g["faults_upstream"], 1);
    assert_eq!(run["mcp_calls"]["HTTP_ERROR"], 2);
    assert_eq!(run["mcp_exchanges"]["HTTP_ERROR"], 2);
    assert_eq!(run["mcp_exchanges"]["NO_RESPONSE"], 2);
    assert_eq!(run["mcp_calls"]["NO_RESPONSE"], 0);
    assert_eq!(run["anomalies"].get("mcp.duplicate_request_id"), None);
    let hops: Vec<u64> = sessions
        .iter()
        .map(|s| s["hop"].as_u64().unwrap())
        .collect();
    assert_eq!(hops, [1, 2], "{sessions:?}");
    assert!(
        text.contains("14 calls (14 of them through 1 gateway), 14 copies"),
        "{text}"
    );
    // The terminal summary counts the calls: two HTTP_ERROR, no NO_RESPONSE.
    assert!(!text.contains("NO_RESPONSE"), "{text}");
    let (shown, _, _) = mcp_trace(
        &[
            "show",
            "--session",
            "derived:127.0.0.1>127.0.0.2:18443/mcp:9d88babf:1",
        ],
        &sample("gw-nginx-timeout.pcap"),
    );
    assert!(shown.contains("gateway -> server"), "{shown}");
    assert!(
        shown.contains("copy of #13; failure arose at hop 1"),
        "{shown}"
    );
}

#[test]
fn gateway_resends_are_gateway_retries_judged_by_hygiene() {
    // nginx `proxy_next_upstream http_503 non_idempotent`: three calls resent to the other
    // upstream after a 503, send_email among them.
    let (text, run, sessions) = mcp_trace(&["analyze"], &sample("gw-nginx-next-upstream.pcap"));
    let g = gateway(&run, "127.0.0.2:18440");
    assert_eq!(
        (&g["calls"], &g["copies"], &g["gateway_retries"]),
        (&Value::from(12), &Value::from(15), &Value::from(3)),
        "{run}"
    );
    assert_eq!(run["retries"]["gateway"], 3);
    assert_eq!(run["retry_findings"]["unsafe_retry"], 1);
    assert_eq!(run["mcp_calls"]["HTTP_ERROR"], 0, "the client saw no 503");
    let gateway_sessions: u64 = sessions
        .iter()
        .filter(|s| s["hop"] == 2)
        .map(|s| s["retries_gateway"].as_u64().unwrap())
        .sum();
    assert_eq!(gateway_sessions, 3);
    assert!(text.contains("Hops"), "{text}");
}

#[test]
fn a_translated_failure_is_the_servers() {
    // FastMCP turned the upstream 503 into a tool result with isError: true.
    let (_, run, _) = mcp_trace(&["analyze"], &sample("gw-fastmcp-proxy.pcap"));
    let g = gateway(&run, "127.0.0.2:18450");
    assert_eq!(g["translated"], 1, "{run}");
    assert_eq!(g["faults_upstream"], 2, "{run}");
    assert_eq!(g["calls"], 6);
}

#[test]
fn a_copys_span_is_a_child_of_its_originals() {
    let dir = tempfile::tempdir().unwrap();
    let otlp = dir.path().join("spans.jsonl");
    let o = Command::new(env!("CARGO_BIN_EXE_mcp-trace"))
        .arg("analyze")
        .arg(sample("gw-nginx-shared.pcap"))
        .arg("--otlp")
        .arg(&otlp)
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let spans: Vec<Value> = std::fs::read_to_string(&otlp)
        .unwrap()
        .lines()
        .flat_map(|l| {
            let v: Value = serde_json::from_str(l).unwrap();
            let mut out = Vec::new();
            for rs in v["resourceSpans"].as_array().unwrap() {
                for ss in rs["scopeSpans"].as_array().unwrap() {
                    out.extend(ss["spans"].as_array().unwrap().iter().cloned());
                }
            }
            out
        })
        .collect();
    let attr = |s: &Value, key: &str| -> Option<String> {
        s["attributes"]
            .as_array()?
            .iter()
            .find(|a| a["key"] == key)
            .and_then(|a| a["value"].as_object()?.values().next().cloned())
            .map(|v| v.as_str().map_or_else(|| v.to_string(), str::to_string))
    };
    // nginx's access log: six requests, each proxied once.
    let copies: Vec<&Value> = spans
        .iter()
        .filter(|s| attr(s, "mcp_trace.hop").as_deref() == Some("2"))
        .collect();
    assert_eq!(copies.len(), 6);
    for c in copies {
        let from = attr(c, "mcp_trace.forwarded_from").unwrap();
        let original = spans
            .iter()
            .find(|s| attr(s, "mcp_trace.exchange_id").as_deref() == Some(from.as_str()))
            .unwrap();
        assert_eq!(c["parentSpanId"], original["spanId"]);
        assert_eq!(c["traceId"], original["traceId"]);
    }
}
