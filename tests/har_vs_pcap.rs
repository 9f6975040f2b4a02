//! Issue 7, last test: the same scenario captured both as pcap and as HAR
//! gives the same outcomes and pairings.
//!
//! `samples/generator` records each HAR scenario twice in one run: the
//! recorder's HAR (`<name>.har`) and tcpdump on the port the client talks to
//! (`<name>.wire.pcap`, the client <-> mitmproxy leg, or page <-> server for
//! Chromium). Both go through the real binary; rows are matched on
//! (http_method, kind, jsonrpc_id, rpc_method) in request order and compared
//! field by field, and sessions must group the same rows. Where the recorder
//! changes the traffic (drops a row, stores the server side instead of what
//! the client got) the difference is listed below with its reason; any other
//! difference fails. The same list is checked against the two ground-truth
//! files, so it comes from what the generator did, not from our output.

use serde_json::Value;
use std::collections::HashMap;
use std::path::{Path, PathBuf};

/// (http_method, kind, jsonrpc_id, rpc_method) as the rows print them.
type Identity = (
    Option<String>,
    Option<String>,
    Option<String>,
    Option<String>,
);

/// Compared one to one on every matched pair of rows.
const COMPARED: &[&str] = &[
    "outcome",
    "http_status",
    "jsonrpc_id",
    "rpc_method",
    "tool_name",
    "final_response",
    "retry_origin",
];

/// A row the pcap has and the HAR cannot have.
struct NotRecorded {
    http_method: &'static str,
    kind: &'static str,
    reason: &'static str,
}

/// A field on which the two recordings of one request legitimately differ.
struct FieldDiff {
    jsonrpc_id: &'static str,
    field: &'static str,
    pcap: Option<&'static str>,
    har: Option<&'static str>,
    reason: &'static str,
}

/// One scenario recorded both ways.
struct Pair {
    name: &'static str,
    not_recorded: &'static [NotRecorded],
    field_diffs: &'static [FieldDiff],
}

const MITM_502: &str = "mitmproxy answered the client itself with 502 Bad Gateway; its HAR keeps \
                        the server side of the flow (samples/README.md, recorders table)";

const PAIRS: &[Pair] = &[
    Pair {
        name: "har-mitmproxy-ts",
        not_recorded: &[],
        field_diffs: &[],
    },
    Pair {
        name: "har-mitmproxy-raw",
        not_recorded: &[],
        field_diffs: &[
            // tools/call sse_cut: the server cut its SSE body after one event.
            FieldDiff {
                jsonrpc_id: "7",
                field: "http_status",
                pcap: Some("502"),
                har: Some("200"),
                reason: MITM_502,
            },
            FieldDiff {
                jsonrpc_id: "7",
                field: "outcome",
                pcap: Some("HTTP_ERROR"),
                har: Some("STREAM_INCOMPLETE"),
                reason: MITM_502,
            },
            // tools/call no_response: the server closed without answering.
            FieldDiff {
                jsonrpc_id: "8",
                field: "http_status",
                pcap: Some("502"),
                har: None,
                reason: MITM_502,
            },
            FieldDiff {
                jsonrpc_id: "8",
                field: "outcome",
                pcap: Some("HTTP_ERROR"),
                har: Some("NO_RESPONSE"),
                reason: MITM_502,
            },
        ],
    },
    Pair {
        name: "har-chromium-ts",
        not_recorded: &[NotRecorded {
            http_method: "OPTIONS",
            kind: "http",
            reason: "CORS preflight: on the wire, but Chromium's HAR has no entry for it",
        }],
        field_diffs: &[],
    },
];

fn samples_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("samples")
}

fn analyze(input: &Path) -> Vec<Value> {
    let dir = tempfile::tempdir().unwrap();
    crate::support::run_analyze_into(input, dir.path())
}

fn truth_entries(file: &str) -> Vec<Value> {
    let doc: Value =
        serde_json::from_str(&std::fs::read_to_string(samples_dir().join(file)).unwrap()).unwrap();
    doc["entries"].as_array().unwrap().clone()
}

fn text(v: &Value) -> Option<String> {
    match v {
        Value::Null => None,
        Value::String(s) => Some(s.clone()),
        other => Some(other.to_string()),
    }
}

fn identity(v: &Value) -> Identity {
    (
        text(&v["http_method"]),
        text(&v["kind"]),
        text(&v["jsonrpc_id"]),
        text(&v["rpc_method"]),
    )
}

/// Where a row's number and session live: analyzer rows or truth entries.
struct Shape {
    number: &'static str,
    session: &'static str,
}

const ROWS: Shape = Shape {
    number: "exchange_id",
    session: "session_key",
};
const TRUTH: Shape = Shape {
    number: "n",
    session: "session",
};

/// Compare one pair of recordings (rows or truth entries, pcap side first)
/// against the pair's list of known differences. Returns the unexplained
/// differences and the number of fields compared.
fn compare(pair: &Pair, shape: &Shape, pcap: &[Value], har: &[Value]) -> (usize, Vec<String>) {
    let mut problems = Vec::new();
    let mut checked = 0;
    let mut used = vec![false; har.len()];
    let mut matched: Vec<(&Value, &Value)> = Vec::new();
    let mut not_recorded_seen = vec![0usize; pair.not_recorded.len()];
    for p in pcap {
        let id = identity(p);
        let found = har
            .iter()
            .enumerate()
            .find(|(i, h)| !used[*i] && identity(h) == id);
        if let Some((i, h)) = found {
            used[i] = true;
            matched.push((p, h));
            continue;
        }
        let known = pair.not_recorded.iter().position(|k| {
            id.0.as_deref() == Some(k.http_method) && id.1.as_deref() == Some(k.kind)
        });
        match known {
            Some(k) => not_recorded_seen[k] += 1,
            None => problems.push(format!(
                "pcap row {} {id:?} (status {:?}, {:?}) has no HAR row",
                p[shape.number],
                text(&p["http_status"]),
                text(&p["outcome"])
            )),
        }
    }
    for (i, h) in har.iter().enumerate() {
        if !used[i] {
            problems.push(format!(
                "HAR row {} {:?} (status {:?}, {:?}) has no pcap row",
                h[shape.number],
                identity(h),
                text(&h["http_status"]),
                text(&h["outcome"])
            ));
        }
    }
    for (k, seen) in pair.not_recorded.iter().zip(&not_recorded_seen) {
        if *seen == 0 {
            problems.push(format!(
                "listed as not recorded but absent from the pcap: {} {} ({})",
                k.http_method, k.kind, k.reason
            ));
        }
    }

    // pcap number -> HAR number, for the retry/continuation links.
    let link: HashMap<Option<String>, Option<String>> = matched
        .iter()
        .map(|(p, h)| (text(&p[shape.number]), text(&h[shape.number])))
        .collect();
    let mut diff_seen = vec![false; pair.field_diffs.len()];
    let mut p_to_h: HashMap<String, String> = HashMap::new();
    let mut h_to_p: HashMap<String, String> = HashMap::new();
    for (p, h) in &matched {
        let what = format!(
            "{} {} id={} (pcap row {}, HAR row {})",
            text(&p["http_method"]).unwrap_or_default(),
            text(&p["rpc_method"]).unwrap_or_default(),
            text(&p["jsonrpc_id"]).unwrap_or_default(),
            p[shape.number],
            h[shape.number]
        );
        let mut fields: Vec<(&str, Option<String>, Option<String>)> = COMPARED
            .iter()
            .map(|f| (*f, text(&p[*f]), text(&h[*f])))
            .collect();
        // retry_of / continuation_of point at row numbers: map the pcap's to the HAR's.
        for f in ["retry_of", "continuation_of"] {
            let mapped = text(&p[f]).and_then(|n| link.get(&Some(n)).cloned().flatten());
            fields.push((f, mapped, text(&h[f])));
        }
        for (field, pv, hv) in fields {
            checked += 1;
            if pv == hv {
                continue;
            }
            let known = pair.field_diffs.iter().position(|d| {
                text(&p["jsonrpc_id"]).as_deref() == Some(d.jsonrpc_id)
                    && d.field == field
                    && d.pcap.map(str::to_string) == pv
                    && d.har.map(str::to_string) == hv
            });
            match known {
                Some(k) => diff_seen[k] = true,
                None => problems.push(format!(
                    "{what}: {field} pcap {pv:?}, HAR {hv:?} (not a listed recorder difference)"
                )),
            }
        }
        // Sessions: pcap session <-> HAR session must be one to one.
        checked += 1;
        let (ps, hs) = (
            text(&p[shape.session]).unwrap_or_default(),
            text(&h[shape.session]).unwrap_or_default(),
        );
        match (p_to_h.get(&ps), h_to_p.get(&hs)) {
            (None, None) => {
                p_to_h.insert(ps.clone(), hs.clone());
                h_to_p.insert(hs, ps);
            }
            (Some(x), _) if *x != hs => problems.push(format!(
                "{what}: pcap session {ps} was HAR session {x}, here {hs}"
            )),
            (_, Some(x)) if *x != ps => problems.push(format!(
                "{what}: HAR session {hs} was pcap session {x}, here {ps}"
            )),
            _ => {}
        }
    }
    for (d, seen) in pair.field_diffs.iter().zip(&diff_seen) {
        if !seen {
            problems.push(format!(
                "listed difference not seen: id {} {} pcap {:?} HAR {:?} ({})",
                d.jsonrpc_id, d.field, d.pcap, d.har, d.reason
            ));
        }
    }
    (checked, problems)
}

/// The analyzer gives the same outcomes, pairings and sessions for the pcap
/// and the HAR of one recording run, except where the recorder changed things.
#[test]
fn pcap_and_har_of_one_run_agree() {
    let mut failures = Vec::new();
    let mut total = 0;
    for pair in PAIRS {
        let pcap = analyze(&samples_dir().join(format!("{}.wire.pcap", pair.name)));
        let har = analyze(&samples_dir().join(format!("{}.har", pair.name)));
        assert!(
            !pcap.is_empty() && !har.is_empty(),
            "{}: no rows",
            pair.name
        );
        let (checked, problems) = compare(pair, &ROWS, &pcap, &har);
        println!(
            "{}: pcap {} rows, HAR {} rows, {checked} fields compared, {} unexplained",
            pair.name,
            pcap.len(),
            har.len(),
            problems.len()
        );
        total += checked;
        failures.extend(problems.into_iter().map(|p| format!("{}: {p}", pair.name)));
    }
    assert!(total > 100, "only {total} fields compared");
    assert!(
        failures.is_empty(),
        "pcap and HAR of the same run disagree:\n{}",
        failures.join("\n")
    );
}

/// The list of recorder differences above is what the generator's ground
/// truth says (written from its relay log and client logs, not from us).
#[test]
fn listed_differences_match_the_ground_truth() {
    let mut failures = Vec::new();
    for pair in PAIRS {
        let pcap = truth_entries(&format!("{}.wire.truth.json", pair.name));
        let har = truth_entries(&format!("{}.truth.json", pair.name));
        let (checked, problems) = compare(pair, &TRUTH, &pcap, &har);
        assert!(checked > 20, "{}: only {checked} fields", pair.name);
        failures.extend(problems.into_iter().map(|p| format!("{}: {p}", pair.name)));
    }
    assert!(
        failures.is_empty(),
        "truth files disagree with the listed differences:\n{}",
        failures.join("\n")
    );
}

/// The comparison itself notices an unlisted difference, a missing row and a
/// split session.
#[test]
fn compare_reports_unlisted_differences() {
    let row = |n: u64, id: &str, outcome: &str, session: &str| {
        serde_json::json!({"exchange_id": n, "http_method": "POST", "kind": "request",
            "jsonrpc_id": id, "rpc_method": "tools/call", "tool_name": "echo",
            "http_status": 200, "outcome": outcome, "final_response": true,
            "retry_origin": "none", "retry_of": null, "continuation_of": null,
            "session_key": session})
    };
    let pair = &PAIRS[0];
    let pcap = vec![
        row(1, "1", "TOOL_SUCCESS", "a"),
        row(2, "2", "TOOL_SUCCESS", "a"),
    ];
    let (_, ok) = compare(pair, &ROWS, &pcap, &pcap);
    assert!(ok.is_empty(), "{ok:?}");
    let har = vec![
        row(1, "1", "TOOL_ERROR", "x"),
        row(2, "2", "TOOL_SUCCESS", "y"),
    ];
    let (_, bad) = compare(pair, &ROWS, &pcap, &har);
    assert_eq!(bad.len(), 2, "{bad:?}");
    assert!(bad[0].contains("outcome pcap Some(\"TOOL_SUCCESS\"), HAR Some(\"TOOL_ERROR\")"));
    assert!(bad[1].contains("pcap session a was HAR session x, here y"));
    let (_, missing) = compare(pair, &ROWS, &pcap, &pcap[..1]);
    assert_eq!(missing.len(), 1);
    assert!(missing[0].contains("has no HAR row"), "{missing:?}");
}
