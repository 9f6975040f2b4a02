//! `--otlp` and `--otlp-endpoint` (report-schema.md section 6) on real recordings: spans
//! join the caller's trace where the Python SDK sent a `traceparent` (truth: the SDK's own
//! span file), the other rows sit in their session's trace under a root span, retries link
//! to the attempt they repeat, ids are stable; and the sender against receivers that are
//! down, answer 503 first, or are too slow: the file is whole, what was not delivered is
//! counted, the run exits 0, and no header value is printed.

use serde_json::Value;
use std::collections::{BTreeMap, BTreeSet};
use std::io::{BufRead, BufReader, Read, Write};
use std::net::{TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

fn sample(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("samples")
        .join(name)
}

fn mcp_trace(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_mcp-trace"))
        .args(args)
        .arg("--no-progress")
        .output()
        .expect("run mcp-trace")
}

/// Every span of an OTLP/JSON lines file, with the service it was under.
fn spans_of(text: &str) -> Vec<(String, Value)> {
    let mut out = Vec::new();
    for line in text.lines() {
        let request: Value = serde_json::from_str(line).unwrap();
        for rs in request["resourceSpans"].as_array().unwrap() {
            let service = rs["resource"]["attributes"]
                .as_array()
                .unwrap()
                .iter()
                .find(|a| a["key"] == "service.name")
                .map(|a| a["value"]["stringValue"].as_str().unwrap().to_string())
                .unwrap();
            for ss in rs["scopeSpans"].as_array().unwrap() {
                assert_eq!(ss["scope"]["name"], "mcp-trace");
                for span in ss["spans"].as_array().unwrap() {
                    out.push((service.clone(), span.clone()));
                }
            }
        }
    }
    out
}

/// A span's attributes as key -> JSON value of its one member.
fn attrs(span: &Value) -> BTreeMap<String, Value> {
    span["attributes"]
        .as_array()
        .unwrap()
        .iter()
        .map(|a| {
            let v = a["value"].as_object().unwrap().values().next().unwrap();
            (a["key"].as_str().unwrap().to_string(), v.clone())
        })
        .collect()
}

fn analyze_otlp(input: &Path, extra: &[&str]) -> (String, Value, Output) {
    let dir = tempfile::tempdir().unwrap();
    let spans = dir.path().join("spans.jsonl");
    let summary = dir.path().join("run.json");
    let mut args = vec![
        "analyze",
        input.to_str().unwrap(),
        "--otlp",
        spans.to_str().unwrap(),
        "--summary",
        summary.to_str().unwrap(),
    ];
    args.extend_from_slice(extra);
    let out = mcp_trace(&args);
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let text = std::fs::read_to_string(&spans).unwrap();
    let summary: Value = serde_json::from_str(&std::fs::read_to_string(&summary).unwrap()).unwrap();
    (text, summary, out)
}

fn sha256_prefix_hex(text: &str, bytes: usize) -> String {
    use sha2::{Digest, Sha256};
    Sha256::digest(text.as_bytes())[..bytes]
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect()
}

#[test]
fn spans_join_the_callers_trace_as_the_sdk_recorded_it() {
    let (text, summary, _) = analyze_otlp(&sample("otel-py-client.pcap"), &[]);
    let spans = spans_of(&text);
    // Truth: the Python SDK's own CLIENT spans, one per request it sent with a traceparent.
    let sdk = std::fs::read_to_string(sample("otel-py-client.spans.json")).unwrap();
    let mut joined = 0;
    for line in sdk.lines() {
        let s: Value = serde_json::from_str(line).unwrap();
        if s["kind"] != "CLIENT" {
            continue;
        }
        let (method, id) = (
            s["attributes"]["mcp.method.name"].as_str().unwrap(),
            s["attributes"]["jsonrpc.request.id"].as_str().unwrap(),
        );
        let ours: Vec<&Value> = spans
            .iter()
            .filter(|(service, span)| {
                let a = attrs(span);
                service == "samples-py-client"
                    && a.get("mcp.method.name") == Some(&Value::from(method))
                    && a.get("jsonrpc.request.id") == Some(&Value::from(id))
            })
            .map(|(_, span)| span)
            .collect();
        assert_eq!(ours.len(), 1, "{method} id {id}");
        assert_eq!(ours[0]["traceId"], s["trace_id"], "{method} id {id}");
        assert_eq!(ours[0]["parentSpanId"], s["span_id"], "{method} id {id}");
        joined += 1;
    }
    assert_eq!(joined, 8, "the SDK traced 8 requests");

    // The retry (id 8) links to the attempt it repeats (id 7, HTTP 503), in that trace.
    let by_id = |id: &str| {
        spans
            .iter()
            .find(|(svc, span)| {
                svc == "samples-py-client"
                    && attrs(span).get("jsonrpc.request.id") == Some(&Value::from(id))
            })
            .map(|(_, span)| span.clone())
            .unwrap()
    };
    let (first, retry) = (by_id("7"), by_id("8"));
    assert_eq!(first["status"]["code"], 2);
    assert_eq!(attrs(&first)["error.type"], "HTTP_ERROR");
    assert_eq!(attrs(&first)["http.response.status_code"], "503");
    let links = retry["links"].as_array().unwrap();
    assert_eq!(links.len(), 1);
    assert_eq!(links[0]["spanId"], first["spanId"]);
    assert_eq!(links[0]["traceId"], first["traceId"]);
    assert_eq!(attrs(&retry)["mcp_trace.retry_origin"], "application");
    assert_eq!(attrs(&retry)["mcp_trace.attempt"], "2");
    // Tool error and JSON-RPC error as the conventions name them.
    let fail = by_id("5");
    assert_eq!(fail["name"], "tools/call fail");
    assert_eq!(attrs(&fail)["error.type"], "tool_error");
    assert_eq!(attrs(&fail)["gen_ai.operation.name"], "execute_tool");
    let prompt = by_id("6");
    assert_eq!(attrs(&prompt)["error.type"], "-32602");
    assert_eq!(attrs(&prompt)["rpc.response.status_code"], "-32602");
    assert_eq!(prompt["name"], "prompts/get no_such_prompt");

    // The TS client sent no traceparent: its session's trace, under the session root.
    let ts: Vec<&Value> = spans
        .iter()
        .filter(|(svc, _)| svc == "samples-ts-client")
        .map(|(_, s)| s)
        .collect();
    let root = ts.iter().find(|s| s["name"] == "MCP session").unwrap();
    let key = attrs(root)["mcp_trace.session_key"]
        .as_str()
        .unwrap()
        .to_string();
    assert_eq!(root["traceId"], sha256_prefix_hex(&key, 16));
    assert!(root.get("parentSpanId").is_none());
    assert_eq!(ts.len(), 7, "6 exchanges and the root");
    for s in ts.iter().filter(|s| s["name"] != "MCP session") {
        assert_eq!(s["traceId"], root["traceId"]);
        assert_eq!(s["parentSpanId"], root["spanId"]);
        assert_eq!(s["kind"], 3);
    }
    let o = &summary["otlp"];
    assert_eq!(o["spans"], 17);
    assert_eq!(o["session_spans"], 2);
    assert_eq!(o["links"], 1);
    assert_eq!(o["links_unresolved"], 0);
}

#[test]
fn ids_are_the_same_on_every_run_and_thread_count() {
    let input = sample("otel-py-client.pcap");
    let (one, _, _) = analyze_otlp(&input, &["--threads", "1"]);
    let (two, _, _) = analyze_otlp(&input, &["--threads", "2"]);
    let (again, _, _) = analyze_otlp(&input, &["--threads", "1"]);
    assert_eq!(one, two);
    assert_eq!(one, again);
    let ids: BTreeSet<String> = spans_of(&one)
        .iter()
        .map(|(_, s)| s["spanId"].as_str().unwrap().to_string())
        .collect();
    assert_eq!(ids.len(), spans_of(&one).len(), "span ids are unique");
}

#[test]
fn filters_leave_out_spans_but_not_links() {
    let (text, _, _) = analyze_otlp(&sample("otel-py-client.pcap"), &["--only-failures"]);
    let spans = spans_of(&text);
    let names: Vec<&str> = spans
        .iter()
        .filter(|(_, s)| s["name"] != "MCP session")
        .map(|(_, s)| s["name"].as_str().unwrap())
        .collect();
    assert_eq!(
        names,
        [
            "server/discover",
            "tools/call fail",
            "prompts/get no_such_prompt",
            "tools/call echo"
        ]
    );
}

/// What a test receiver got: each request's head and body.
type Received = std::sync::Arc<std::sync::Mutex<Vec<(String, Vec<u8>)>>>;

/// A loopback OTLP receiver that answers each request with the next of `answers` (the last
/// one repeats) after `delay`, and keeps the bodies it got.
struct Receiver {
    port: u16,
    bodies: Received,
}

impl Receiver {
    fn start(answers: Vec<&'static str>, delay: std::time::Duration) -> Receiver {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let port = listener.local_addr().unwrap().port();
        let bodies: Received = std::sync::Arc::default();
        let kept = std::sync::Arc::clone(&bodies);
        std::thread::spawn(move || {
            let mut n = 0;
            for conn in listener.incoming() {
                let Ok(conn) = conn else { return };
                let answers = answers.clone();
                let kept = std::sync::Arc::clone(&kept);
                // One connection after another; keep-alive requests on one connection too.
                let _ = serve(conn, &answers, &mut n, &kept, delay);
            }
        });
        Receiver { port, bodies }
    }

    fn url(&self) -> String {
        format!("http://127.0.0.1:{}", self.port)
    }
}

fn serve(
    conn: TcpStream,
    answers: &[&str],
    n: &mut usize,
    kept: &std::sync::Mutex<Vec<(String, Vec<u8>)>>,
    delay: std::time::Duration,
) -> std::io::Result<()> {
    let mut reader = BufReader::new(conn.try_clone()?);
    let mut conn = conn;
    loop {
        let mut head = String::new();
        let mut length = 0usize;
        loop {
            let mut line = String::new();
            if reader.read_line(&mut line)? == 0 {
                return Ok(());
            }
            if let Some(v) = line.to_ascii_lowercase().strip_prefix("content-length:") {
                length = v.trim().parse().unwrap_or(0);
            }
            if line == "\r\n" {
                break;
            }
            head.push_str(&line);
        }
        let mut body = vec![0; length];
        reader.read_exact(&mut body)?;
        kept.lock().unwrap().push((head, body));
        std::thread::sleep(delay);
        let answer = answers[(*n).min(answers.len() - 1)];
        *n += 1;
        let (status, extra) = answer.split_once('|').unwrap_or((answer, ""));
        let reply = format!(
            "HTTP/1.1 {status}\r\n{extra}Content-Type: application/json\r\nContent-Length: 2\r\n\r\n{{}}"
        );
        conn.write_all(reply.as_bytes())?;
    }
}

fn otlp(summary: &Value) -> &Value {
    &summary["otlp"]["endpoint"]
}

#[test]
fn a_receiver_that_answers_503_first_gets_every_span_after_a_retry() {
    let receiver = Receiver::start(
        vec!["503 Service Unavailable|Retry-After: 0\r\n", "200 OK"],
        std::time::Duration::ZERO,
    );
    let (text, summary, _) = analyze_otlp(
        &sample("otel-py-client.pcap"),
        &[
            "--otlp-endpoint",
            &receiver.url(),
            "--otlp-protocol",
            "http/json",
            "--otlp-header",
            "Authorization=Bearer otlp-s3cret-token",
        ],
    );
    let e = otlp(&summary);
    assert_eq!(e["sent_spans"], 19, "{e}");
    assert_eq!(e["requests"], 2);
    assert_eq!(e["retries"], 1);
    assert_eq!(e["not_delivered_spans"], 0);
    let bodies = receiver.bodies.lock().unwrap();
    assert_eq!(bodies.len(), 2);
    // What the receiver got is the file's one line, with the header sent.
    assert_eq!(bodies[1].1, text.trim_end().as_bytes());
    assert!(bodies[1].0.starts_with("POST /v1/traces HTTP/1.1"));
    assert!(
        bodies[1]
            .0
            .to_ascii_lowercase()
            .contains("authorization: bearer otlp-s3cret-token")
    );
    assert!(
        bodies[1]
            .0
            .to_ascii_lowercase()
            .contains("content-type: application/json")
    );
}

#[test]
fn a_receiver_that_is_down_loses_spans_counted_and_the_run_still_ends_well() {
    // A port nobody listens on.
    let port = TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let url = format!("http://user:pw-s3cret@127.0.0.1:{port}/base/?api_key=q-s3cret");
    let (text, summary, out) = analyze_otlp(
        &sample("otel-py-client.pcap"),
        &[
            "--otlp-endpoint",
            &url,
            "--otlp-header",
            "X-Api-Key=otlp-s3cret-token",
            "--otlp-timeout",
            "1s",
        ],
    );
    assert_eq!(spans_of(&text).len(), 19, "the file is whole");
    let e = otlp(&summary);
    assert_eq!(e["sent_spans"], 0);
    assert_eq!(e["not_delivered_spans"], 19, "{e}");
    assert_eq!(e["url"], format!("http://127.0.0.1:{port}/base/v1/traces"));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("19 spans were not delivered"), "{stderr}");
    let everything = format!("{stderr}{summary}");
    assert!(!everything.contains("s3cret"), "{everything}");
}

#[test]
fn a_receiver_slower_than_the_flush_timeout_loses_the_batch_counted() {
    let receiver = Receiver::start(vec!["200 OK"], std::time::Duration::from_secs(5));
    let (text, summary, _) = analyze_otlp(
        &sample("otel-py-client.pcap"),
        &["--otlp-endpoint", &receiver.url(), "--otlp-timeout", "1s"],
    );
    assert_eq!(spans_of(&text).len(), 19);
    let e = otlp(&summary);
    assert_eq!(e["sent_spans"], 0, "{e}");
    assert_eq!(e["not_delivered_spans"], 19, "{e}");
}

#[test]
fn otlp_flags_are_checked_before_any_input_is_read() {
    let input = sample("otel-py-client.pcap");
    let input = input.to_str().unwrap();
    for (args, needle) in [
        (
            vec!["analyze", input, "--otlp-endpoint", "ftp://x"],
            "--otlp-endpoint",
        ),
        (
            vec![
                "analyze",
                input,
                "--otlp-endpoint",
                "http://127.0.0.1:9",
                "--otlp-header",
                "Bad Name=s3cret",
            ],
            "--otlp-header #1",
        ),
    ] {
        let out = mcp_trace(&args);
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{err}");
        assert!(err.contains(needle), "{err}");
        assert!(!err.contains("s3cret"), "{err}");
        assert_eq!(err.trim_end().lines().count(), 1, "{err}");
    }
}

#[test]
fn sse_events_are_span_events_up_to_the_limit() {
    let input = sample("ts-streamable-sse.pcap");
    let slow = |text: &str| {
        spans_of(text)
            .into_iter()
            .map(|(_, s)| s)
            .find(|s| s["name"] == "tools/call slow")
            .unwrap()
    };
    let (text, _, _) = analyze_otlp(&input, &[]);
    let span = slow(&text);
    let names: Vec<&str> = span["events"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| e["name"].as_str().unwrap())
        .collect();
    // The TS server primes the stream, reports progress twice, then answers.
    assert_eq!(
        names,
        [
            "priming",
            "notifications/progress",
            "notifications/progress",
            "response"
        ]
    );
    let times: Vec<u64> = span["events"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| e["timeUnixNano"].as_str().unwrap().parse().unwrap())
        .collect();
    let start: u64 = span["startTimeUnixNano"].as_str().unwrap().parse().unwrap();
    let end: u64 = span["endTimeUnixNano"].as_str().unwrap().parse().unwrap();
    assert!(times.windows(2).all(|w| w[0] <= w[1]), "{times:?}");
    assert!(start <= times[0] && *times.last().unwrap() <= end);
    assert!(span.get("droppedEventsCount").is_none());

    let (text, _, _) = analyze_otlp(&input, &["--otlp-max-events", "1"]);
    let span = slow(&text);
    assert_eq!(span["events"].as_array().unwrap().len(), 1);
    assert_eq!(span["droppedEventsCount"], 3);
}
