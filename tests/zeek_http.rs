//! Integration tests: zeek_http. Rows of `mcp-trace http` against the
//! http.log Zeek wrote for 32 public Zeek test traces
//! (`../shared/corpus/zeek-http`, see its MANIFEST.md).
//!
//! Rows are compared per connection: Zeek writes rows in completion order
//! and its `uid`s mean nothing to us, so each Zeek connection (uid) is
//! matched to the TCP stream whose rows agree best, and within a connection
//! rows must agree in order (trans_depth). Compared: 4-tuple, trans_depth,
//! method, host, uri (in Zeek's escaping), status_code, request_body_len,
//! response_body_len, each only where the baseline has the column.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::indexing_slicing)]

use mcp_trace::http::HttpRow;
use mcp_trace::http::redact::redact_target;
use mcp_trace::report::RunStats;
use serde_json::Value;
use std::collections::BTreeMap;
use std::net::{IpAddr, SocketAddr};
use std::path::{Path, PathBuf};

fn corpus_dir() -> PathBuf {
    crate::support::corpus("zeek-http")
}

/// The end-to-end pipeline (capture -> decode -> flow -> http -> rows).
fn http_rows(inputs: &[String]) -> (Vec<HttpRow>, RunStats) {
    mcp_trace::pipeline::http_rows(inputs, &mcp_trace::pipeline::Config::default())
        .unwrap_or_else(|e| panic!("{inputs:?}: {e}"))
}

/// Columns present in each baseline (`None` = all 13 of http.log).
fn columns(case: &str) -> Option<&'static [&'static str]> {
    match case {
        c if c.starts_with("261-") => Some(&["uid", "trans_depth", "method", "host", "uri"]),
        "docker-http-upgrade" => Some(&["uid", "method", "uri", "status_code"]),
        "dvwa-pcapng-chunked" => Some(&["uid", "method", "host", "uri"]),
        _ => None,
    }
}

/// Zeek's log escaping of a string: bytes below 0x20 and 0x7f as `\xHH`,
/// a backslash doubled; printable UTF-8 kept.
fn zeek_escape(s: &str) -> String {
    let mut out = String::new();
    for ch in s.chars() {
        match ch {
            '\\' => out.push_str("\\\\"),
            c if (c as u32) < 0x20 || c as u32 == 0x7f => {
                out.push_str(&format!("\\x{:02x}", c as u32))
            }
            c => out.push(c),
        }
    }
    out
}

/// `%HH` decoded (an invalid escape stays as it is), as Zeek's `unescape_URI`.
fn percent_decode(s: &str) -> String {
    let b = s.as_bytes();
    let mut out = Vec::new();
    let mut i = 0;
    while i < b.len() {
        let hex = |c: u8| (c as char).to_digit(16);
        match (
            b[i],
            b.get(i + 1).and_then(|&c| hex(c)),
            b.get(i + 2).and_then(|&c| hex(c)),
        ) {
            (b'%', Some(h), Some(l)) => {
                out.push((h * 16 + l) as u8);
                i += 3;
            }
            (c, _, _) => {
                out.push(c);
                i += 1;
            }
        }
    }
    String::from_utf8_lossy(&out).into_owned()
}

/// Our value of a Zeek http.log column, as JSON.
fn ours(r: &HttpRow, col: &str) -> Value {
    let client: Option<SocketAddr> = r.client_addr.parse().ok();
    let server: Option<SocketAddr> = r.server_addr.parse().ok();
    let opt = |o: &Option<String>| {
        o.as_ref()
            .map_or(Value::Null, |s| Value::String(zeek_escape(s)))
    };
    match col {
        "orig_h" => client.map_or(Value::Null, |a| Value::String(a.ip().to_string())),
        "orig_p" => client.map_or(Value::Null, |a| a.port().into()),
        "resp_h" => server.map_or(Value::Null, |a| Value::String(a.ip().to_string())),
        "resp_p" => server.map_or(Value::Null, |a| a.port().into()),
        "trans_depth" => r.trans_depth.into(),
        "method" => opt(&r.method),
        "host" => opt(&r.host),
        // Zeek logs the URI percent-decoded (its `unescaped_URI`); ours is as sent.
        "uri" => r.uri.as_ref().map_or(Value::Null, |u| {
            Value::String(zeek_escape(&percent_decode(u)))
        }),
        "status_code" => r.status_code.map_or(Value::Null, Into::into),
        "request_body_len" => r.request_body_len.into(),
        "response_body_len" => r.response_body_len.into(),
        _ => Value::Null,
    }
}

const COMPARED: [&str; 11] = [
    "orig_h",
    "orig_p",
    "resp_h",
    "resp_p",
    "trans_depth",
    "method",
    "host",
    "uri",
    "status_code",
    "request_body_len",
    "response_body_len",
];

fn same(col: &str, want: &Value, got: &Value) -> bool {
    if col.ends_with("_h") {
        let parse = |v: &Value| v.as_str().and_then(|s| s.parse::<IpAddr>().ok());
        return parse(want).is_some() && parse(want) == parse(got);
    }
    want == got
}

/// Columns where our row differs from Zeek's.
fn diffs(case: &str, want: &Value, got: &HttpRow) -> Vec<String> {
    let cols = columns(case);
    COMPARED
        .iter()
        .filter(|c| cols.is_none_or(|cs| cs.contains(c)))
        .filter(|c| !same(c, &want[**c], &ours(got, c)))
        .map(|c| format!("{c}: zeek {} ours {}", want[*c], ours(got, c)))
        .collect()
}

/// A difference we chose, with the reason. It names the Zeek row by case,
/// originator port and trans_depth, and the columns that may differ; no
/// columns means the whole row: Zeek logs it and we do not (`extra: false`),
/// or we log it and Zeek does not (`extra: true`).
struct Deliberate {
    case: &'static str,
    orig_p: u16,
    depth: u32,
    fields: &'static [&'static str],
    extra: bool,
    reason: &'static str,
}

const DELIBERATE: &[Deliberate] = &[
    Deliberate {
        case: "http-09",
        orig_p: 42960,
        depth: 2,
        fields: &[],
        extra: false,
        reason: "after an HTTP/0.9 reply ends at the close, Zeek logs an empty second \
                 transaction (no method, no status); there is no second message on the wire",
    },
    Deliberate {
        case: "http-09",
        orig_p: 42964,
        depth: 2,
        fields: &[],
        extra: false,
        reason: "the same empty phantom transaction after an HTTP/0.9 reply",
    },
    Deliberate {
        case: "http-09",
        orig_p: 42970,
        depth: 1,
        fields: &[],
        extra: true,
        reason: "`T /zeek.html` answered by `bad method`: the Zeek test calls this request \
                 invalid and logs nothing; a one-letter method is a valid token (RFC 9110 §9.1), \
                 so we log it as an HTTP/0.9 exchange",
    },
    Deliberate {
        case: "wikipedia",
        orig_p: 35634,
        depth: 1,
        fields: &[],
        extra: true,
        reason: "the trace holds this connection from its GET on (no handshake); Zeek attaches \
                 no HTTP analyzer to it, we parse the clean request and its 304",
    },
];

fn deliberate(
    case: &str,
    orig_p: Option<u16>,
    depth: Option<u32>,
    extra: bool,
) -> Option<&'static Deliberate> {
    DELIBERATE.iter().find(|d| {
        d.case == case && Some(d.orig_p) == orig_p && Some(d.depth) == depth && d.extra == extra
    })
}

/// Zeek counts 2 bytes more than Content-Length for these multipart bodies.
const NO_CRLF_REASON: &str = "multipart/form-data POST bodies whose closing boundary has no CRLF: \
     Zeek's MIME parser counts 2 bytes more than the Content-Length; we count the body the \
     Content-Length frames (RFC 9112 §6.2)";

fn deliberate_fields(
    case: &str,
    orig_p: Option<u16>,
    depth: Option<u32>,
) -> Option<(&'static [&'static str], &'static str)> {
    if case == "no-crlf-chunked-posts" && orig_p == Some(49783) {
        return Some((&["request_body_len"], NO_CRLF_REASON));
    }
    deliberate(case, orig_p, depth, false)
        .filter(|d| !d.fields.is_empty())
        .map(|d| (d.fields, d.reason))
}

struct CaseResult {
    expected: usize,
    matched: usize,
    deliberate: usize,
    ours: usize,
    failures: Vec<String>,
}

fn trace_of(dir: &Path) -> Option<String> {
    let mut files: Vec<PathBuf> = std::fs::read_dir(dir)
        .ok()?
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| {
            let n = p.file_name().and_then(|n| n.to_str()).unwrap_or("");
            n.ends_with(".pcap") || n.ends_with(".pcapng") || n.ends_with(".pcap.gz")
        })
        .collect();
    files.sort();
    files.first().map(|p| p.to_string_lossy().into_owned())
}

fn compare_case(case: &str, expected: &[Value], rows: &[HttpRow]) -> CaseResult {
    // Zeek connections in order of first row; within one, rows by trans_depth.
    let mut uids: Vec<String> = Vec::new();
    let mut groups: BTreeMap<String, Vec<&Value>> = BTreeMap::new();
    for v in expected {
        let uid = v["uid"].as_str().unwrap_or("").to_string();
        if !uids.contains(&uid) {
            uids.push(uid.clone());
        }
        groups.entry(uid).or_default().push(v);
    }
    for g in groups.values_mut() {
        g.sort_by_key(|v| v["trans_depth"].as_u64().unwrap_or(0));
    }
    let mut streams: BTreeMap<Option<u64>, Vec<&HttpRow>> = BTreeMap::new();
    for r in rows {
        streams.entry(r.tcp_stream).or_default().push(r);
    }
    for s in streams.values_mut() {
        s.sort_by_key(|r| r.trans_depth);
    }
    // Pair Zeek connections with streams, best agreement first.
    let mut scored: Vec<(usize, usize, Option<u64>)> = Vec::new();
    for (ui, uid) in uids.iter().enumerate() {
        for (k, got) in &streams {
            let score = groups[uid]
                .iter()
                .zip(got.iter())
                .filter(|(w, g)| diffs(case, w, g).is_empty())
                .count();
            scored.push((score, ui, *k));
        }
    }
    scored.sort_by(|a, b| b.0.cmp(&a.0).then(a.1.cmp(&b.1)).then(a.2.cmp(&b.2)));
    let mut pairing: BTreeMap<usize, Option<u64>> = BTreeMap::new();
    let mut taken: Vec<Option<u64>> = Vec::new();
    for (_, ui, k) in scored {
        if !pairing.contains_key(&ui) && !taken.contains(&k) {
            pairing.insert(ui, k);
            taken.push(k);
        }
    }
    let mut used: Vec<Option<u64>> = Vec::new();
    let mut res = CaseResult {
        expected: expected.len(),
        matched: 0,
        deliberate: 0,
        ours: rows.len(),
        failures: Vec::new(),
    };
    for uid in &uids {
        let want = &groups[uid];
        let Some((key, got)) = pairing
            .get(&uids.iter().position(|u| u == uid).unwrap_or(0))
            .and_then(|k| streams.get_key_value(k))
        else {
            for w in &groups[uid] {
                res.failures
                    .push(format!("{case}: no stream for Zeek connection {uid}: {w}"));
            }
            continue;
        };
        used.push(*key);
        // Rows are paired by trans_depth when the baseline has it, else in order.
        for (i, w) in want.iter().enumerate() {
            let depth = w["trans_depth"].as_u64().map(|d| d as u32);
            let orig_p = w["orig_p"].as_u64().map(|p| p as u16);
            let g = match depth {
                Some(d) => got.iter().find(|r| r.trans_depth == d),
                None => got.get(i),
            };
            let (problem, chosen) = match g {
                None => (
                    Some(format!("missing row (depth {depth:?})")),
                    deliberate(case, orig_p, depth, false).is_some_and(|d| d.fields.is_empty()),
                ),
                Some(g) => {
                    let d = diffs(case, w, g);
                    let allowed = deliberate_fields(case, orig_p, depth).map_or(&[][..], |f| f.0);
                    let chosen = !d.is_empty()
                        && d.iter()
                            .all(|x| allowed.iter().any(|f| x.starts_with(&format!("{f}:"))));
                    ((!d.is_empty()).then(|| d.join(", ")), chosen)
                }
            };
            match (problem, chosen) {
                (None, _) => res.matched += 1,
                (Some(_), true) => res.deliberate += 1,
                (Some(p), false) => res.failures.push(format!(
                    "{case} {uid} depth {depth:?}: {p}\n    zeek {w}\n    ours {g:?}"
                )),
            }
        }
        if got.len() > want.len() {
            for extra in got.iter().filter(|r| {
                want.iter()
                    .all(|w| w["trans_depth"].as_u64() != Some(u64::from(r.trans_depth)))
            }) {
                if want.iter().any(|w| w["trans_depth"].is_null()) {
                    break;
                }
                res.failures
                    .push(format!("{case} {uid}: extra row {extra:?}"));
            }
        }
    }
    for (k, got) in &streams {
        if !used.contains(k) {
            for r in got {
                let port = r.client_addr.parse::<SocketAddr>().ok().map(|a| a.port());
                if deliberate(case, port, Some(r.trans_depth), true).is_none() {
                    res.failures.push(format!(
                        "{case}: row on a connection Zeek did not log: {r:?}"
                    ));
                }
            }
        }
    }
    res
}

/// Zeek's `\xHH`-escaped entity data back to bytes, without the gap marker.
fn unescape_entity(text: &str) -> (Vec<u8>, Vec<u64>) {
    let mut out = Vec::new();
    let mut gaps = Vec::new();
    let b = text.as_bytes();
    let mut i = 0;
    while i < b.len() {
        if b[i] == b'\\' && b.get(i + 1) == Some(&b'x') && i + 3 < b.len() {
            out.push(u8::from_str_radix(&text[i + 2..i + 4], 16).unwrap());
            i += 4;
        } else if b[i] == b'<' && text[i..].contains(" byte gap>") {
            let end = text[i..].find('>').unwrap() + i;
            let n: u64 = text[i + 1..end].split(' ').next().unwrap().parse().unwrap();
            gaps.push(n);
            i = end + 1;
        } else {
            out.push(b[i]);
            i += 1;
        }
    }
    (out, gaps)
}

#[test]
#[ignore = "needs ../shared/corpus"]
fn zeek_http_logs_match() {
    let dir = corpus_dir();
    let mut cases: Vec<String> = std::fs::read_dir(&dir)
        .unwrap()
        .filter_map(|e| e.ok())
        .filter(|e| e.path().join("expected.jsonl").is_file())
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .collect();
    cases.sort();
    let mut total = (0usize, 0usize, 0usize);
    let mut failures = Vec::new();
    println!(
        "{:<36} {:>8} {:>6} {:>8} {:>10} {:>6}",
        "case", "expected", "ours", "matched", "deliberate", "failed"
    );
    for case in &cases {
        let cdir = dir.join(case);
        let expected: Vec<Value> = std::fs::read_to_string(cdir.join("expected.jsonl"))
            .unwrap()
            .lines()
            .filter(|l| !l.trim().is_empty())
            .map(|l| serde_json::from_str(l).unwrap())
            .collect();
        let trace = trace_of(&cdir).unwrap_or_else(|| panic!("{case}: no trace"));
        let (rows, _stats) = http_rows(&[trace]);
        let r = compare_case(case, &expected, &rows);
        println!(
            "{:<36} {:>8} {:>6} {:>8} {:>10} {:>6}",
            case,
            r.expected,
            r.ours,
            r.matched,
            r.deliberate,
            r.failures.len()
        );
        total.0 += r.expected;
        total.1 += r.matched;
        total.2 += r.deliberate;
        failures.extend(r.failures);
    }
    println!(
        "zeek_http: {} of {} Zeek rows match ({:.1}%), {} deliberate differences:",
        total.1,
        total.0,
        100.0 * total.1 as f64 / total.0.max(1) as f64,
        total.2
    );
    for d in DELIBERATE {
        println!(
            "  {} orig_p {} depth {}: {}",
            d.case, d.orig_p, d.depth, d.reason
        );
    }
    println!("  no-crlf-chunked-posts request_body_len: {NO_CRLF_REASON}");
    assert!(
        failures.is_empty(),
        "{} mismatches:\n{}",
        failures.len(),
        failures.join("\n")
    );
}

#[test]
#[ignore = "needs ../shared/corpus"]
fn zeek_special_expectations() {
    let dir = corpus_dir();
    // 1000 pipelined requests, one response lost: every request still gets a row.
    let case = dir.join("1000-requests-one-dropped-response");
    let (rows, _) = http_rows(&[trace_of(&case).unwrap()]);
    assert_eq!(rows.len(), 1000, "1000-requests-one-dropped-response");
    assert!(rows.iter().all(|r| r.method.as_deref() == Some("GET")));
    // The lost segment held a response head: exactly that request has no
    // response, every other one pairs with its own.
    let unanswered: Vec<&HttpRow> = rows.iter().filter(|r| r.status_code.is_none()).collect();
    assert_eq!(unanswered.len(), 1, "{unanswered:?}");
    assert_eq!(unanswered[0].anomalies.text(), Some("http.no_response_gap"));
    assert_eq!(rows.iter().filter(|r| r.complete).count(), 999);

    // A 1448-byte hole in a response body: the body is reported with the
    // bytes Zeek delivered around the gap, and marked.
    let case = dir.join("entity-gap");
    let baseline = std::fs::read_to_string(case.join("zeek-baseline.entity_data")).unwrap();
    // One line per delivered piece, after the btest banner.
    let text: String = baseline.lines().skip(1).collect();
    let (entity, gaps) = unescape_entity(&text);
    assert_eq!(gaps, vec![1448]);
    let (rows, stats) = http_rows(&[trace_of(&case).unwrap()]);
    assert_eq!(rows.len(), 1, "{rows:?}");
    assert_eq!(rows[0].response_body_len, entity.len() as u64, "{rows:?}");
    assert!(!rows[0].complete);
    assert!(
        rows[0]
            .anomalies
            .text()
            .unwrap_or("")
            .contains("http.gap_in_body"),
        "{rows:?}"
    );
    assert!(stats.flow.gap_bytes >= 1448);

    // IPv6 with atomic fragments: the four connections Zeek saw.
    let case = dir.join("ipv6-atomic-frag");
    let (rows, _) = http_rows(&[trace_of(&case).unwrap()]);
    for line in std::fs::read_to_string(case.join("expected-conns.jsonl"))
        .unwrap()
        .lines()
    {
        let c: Value = serde_json::from_str(line).unwrap();
        let client = SocketAddr::new(
            c["orig_h"].as_str().unwrap().parse().unwrap(),
            c["orig_p"].as_u64().unwrap() as u16,
        );
        let server = SocketAddr::new(
            c["resp_h"].as_str().unwrap().parse().unwrap(),
            c["resp_p"].as_u64().unwrap() as u16,
        );
        assert!(
            rows.iter().any(|r| r.client_addr == client.to_string() && r.server_addr == server.to_string()),
            "no row for {client} -> {server}: {rows:?}"
        );
    }
}

/// The recorded MCP samples (`samples/*.pcap`, made with the real SDKs):
/// one row per HTTP exchange their generator logged, with its method, path
/// and status (truth files are written from the generator's relay, never
/// from mcp-trace).
#[test]
fn samples_rows_match_truth() {
    let dir = PathBuf::from(concat!(env!("CARGO_MANIFEST_DIR"), "/samples"));
    let entries = std::fs::read_dir(&dir).unwrap();
    let mut names: Vec<PathBuf> = entries
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.extension().is_some_and(|x| x == "pcap" || x == "pcapng"))
        .collect();
    names.sort();
    for p in names {
        let Ok(text) = std::fs::read_to_string(p.with_extension("truth.json")) else {
            continue;
        };
        let truth: Value = serde_json::from_str(&text).unwrap();
        let input = [p.to_string_lossy().into_owned()];
        // A TLS recording is read with the key log recorded beside it.
        let (rows, _) = match crate::support::keylog_beside(&p) {
            Some(keys) => {
                let mut keylog = mcp_trace::tls::KeyLog::new();
                keylog
                    .read_from(
                        "keys",
                        std::io::BufReader::new(std::fs::File::open(keys).unwrap()),
                    )
                    .unwrap();
                let cfg = mcp_trace::pipeline::Config {
                    keylog: std::sync::Arc::new(keylog),
                    ..Default::default()
                };
                mcp_trace::pipeline::http_rows(&input, &cfg).unwrap()
            }
            None => http_rows(&input),
        };
        // Requests on a connection whose secrets are missing give no row.
        let undecrypted: Vec<u64> = truth["connections"]
            .as_array()
            .into_iter()
            .flatten()
            .filter(|c| c["decryption"].as_str() != Some("decrypted"))
            .flat_map(|c| c["entries"].as_array().cloned().unwrap_or_default())
            .filter_map(|n| n.as_u64())
            .collect();
        let mut want: Vec<String> = truth["entries"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|t| !undecrypted.contains(&t["n"].as_u64().unwrap_or(0)))
            .map(|t| {
                // The log shows credentials in the query as hashes (report-schema.md 1b).
                let path = t["path"].as_str().map(redact_target);
                let path = path.map_or("null".into(), |p| format!("{p:?}"));
                format!("{} {} {}", t["http_method"], path, t["http_status"])
            })
            .collect();
        let mut got: Vec<String> = rows
            .iter()
            .map(|r| {
                let path = r.uri.as_deref().unwrap_or("");
                format!(
                    "{} {:?} {}",
                    r.method
                        .as_ref()
                        .map_or("null".into(), |m| format!("{m:?}")),
                    path,
                    r.status_code.map_or("null".into(), |s| s.to_string())
                )
            })
            .collect();
        want.sort();
        got.sort();
        assert_eq!(got, want, "{}", p.display());
    }
}
