//! Every recording in samples/ (made by the real SDKs and recorders) runs
//! through `mcp-trace analyze`, and each row is compared with the recording's
//! ground truth (written by the generator from what it did, never from our
//! output): kind, JSON-RPC id and method, tool, HTTP status, outcome,
//! `final_response`, session grouping, the retry/continuation links, and the
//! retry-hygiene findings where the truth entry names them (`retry_findings`).

use serde_json::Value;
use std::collections::{BTreeMap, HashMap};
use std::path::{Path, PathBuf};

fn samples_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("samples")
}

fn truth_files() -> Vec<PathBuf> {
    let mut files: Vec<PathBuf> = std::fs::read_dir(samples_dir())
        .unwrap()
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.to_string_lossy().ends_with(".truth.json"))
        .collect();
    files.sort();
    files
}

fn analyze(input: &Path) -> Vec<Value> {
    let dir = tempfile::tempdir().unwrap();
    crate::support::run_analyze_into(input, dir.path())
}

fn text(v: &Value) -> Option<String> {
    match v {
        Value::Null => None,
        Value::String(s) => Some(s.clone()),
        other => Some(other.to_string()),
    }
}

/// The fields that identify a request on the wire.
fn identity(
    v: &Value,
) -> (
    Option<String>,
    Option<String>,
    Option<String>,
    Option<String>,
) {
    (
        text(&v["http_method"]),
        text(&v["kind"]),
        text(&v["jsonrpc_id"]),
        text(&v["rpc_method"]),
    )
}

/// Compare one recording; returns (fields checked, list of disagreements).
fn compare(truth_path: &Path) -> (usize, Vec<String>) {
    let truth: Value = serde_json::from_str(&std::fs::read_to_string(truth_path).unwrap()).unwrap();
    let capture = samples_dir().join(truth["capture"].as_str().unwrap());
    let rows = analyze(&capture);
    let all_entries = truth["entries"].as_array().unwrap();
    // TLS recordings: the requests of a connection that cannot be decrypted (its secrets are
    // missing from the key log) must give no row; nothing is guessed.
    let undecrypted: Vec<u64> = truth["connections"]
        .as_array()
        .into_iter()
        .flatten()
        .filter(|c| c["decryption"].as_str() != Some("decrypted"))
        .flat_map(|c| c["entries"].as_array().cloned().unwrap_or_default())
        .filter_map(|n| n.as_u64())
        .collect();
    let entries: Vec<Value> = all_entries
        .iter()
        .filter(|e| !undecrypted.contains(&e["n"].as_u64().unwrap_or(0)))
        .cloned()
        .collect();
    let entries = &entries;
    if !undecrypted.is_empty() && rows.len() != entries.len() {
        return (
            1,
            vec![format!(
                "{} rows for {} entries on decrypted connections",
                rows.len(),
                entries.len()
            )],
        );
    }
    if truth["snaplen"].as_u64().is_some() {
        return compare_snapped(entries, &rows);
    }
    let mut problems = Vec::new();
    let mut checked = 0;
    let mut used = vec![false; rows.len()];
    // truth n -> exchange_id, and session label <-> session_key (must be a bijection).
    let mut n_to_id: HashMap<u64, u64> = HashMap::new();
    let mut label_to_key: HashMap<String, String> = HashMap::new();
    let mut key_to_label: HashMap<String, String> = HashMap::new();
    let mut matched = Vec::new();
    for entry in entries {
        let n = entry["n"].as_u64().unwrap();
        // Greedy: the first unused row with the same identity, in request order.
        // Gateway recordings (section 4c) say which leg each entry travelled on.
        let same_leg = |row: &Value| {
            entry
                .get("server_addr")
                .is_none_or(|a| text(a) == text(&row["server_addr"]))
        };
        let found = rows
            .iter()
            .enumerate()
            .find(|(i, row)| !used[*i] && identity(row) == identity(entry) && same_leg(row));
        let Some((i, row)) = found else {
            problems.push(format!(
                "#{n} {:?}: no row found ({})",
                identity(entry),
                entry["reason"].as_str().unwrap_or("")
            ));
            continue;
        };
        used[i] = true;
        n_to_id.insert(n, row["exchange_id"].as_u64().unwrap());
        matched.push((entry, row));
    }
    for (entry, row) in &matched {
        let n = entry["n"].as_u64().unwrap();
        let id = row["exchange_id"].as_u64().unwrap();
        let mut check = |field: &str, expected: Option<String>, actual: Option<String>| {
            checked += 1;
            if expected != actual {
                problems.push(format!(
                    "#{n} (row {id}, {} {}): {field} expected {expected:?}, got {actual:?} [{}]",
                    entry["rpc_method"]
                        .as_str()
                        .unwrap_or(entry["http_method"].as_str().unwrap_or("")),
                    text(&entry["jsonrpc_id"]).unwrap_or_default(),
                    entry["reason"].as_str().unwrap_or("")
                ));
            }
        };
        for field in [
            "outcome",
            "http_status",
            "tool_name",
            "final_response",
            "retry_origin",
        ] {
            check(field, text(&entry[field]), text(&row[field]));
        }
        // Retry hygiene (report-schema.md section 4b), where the truth names the findings
        // (`"unsafe_retry;no_backoff"`, or null for none).
        if let Some(expected) = entry.get("retry_findings") {
            check(
                "retry_findings",
                text(expected),
                text(&row["retry_findings"]),
            );
        }
        let map_link = |v: &Value| {
            v.as_u64()
                .and_then(|n| n_to_id.get(&n))
                .map(|id| id.to_string())
        };
        check(
            "retry_of",
            map_link(&entry["retry_of"]),
            text(&row["retry_of"]),
        );
        check(
            "continuation_of",
            map_link(&entry["continuation_of"]),
            text(&row["continuation_of"]),
        );
        // Hops (section 4c), where the truth names them.
        if entry.get("hop").is_some() {
            check("hop", text(&entry["hop"]), text(&row["hop"]));
            check(
                "forwarded_from",
                map_link(&entry["forwarded_from"]),
                text(&row["forwarded_from"]),
            );
            check(
                "fault_hop",
                text(&entry["fault_hop"]),
                text(&row["fault_hop"]),
            );
        }
        let label = entry["session"].as_str().unwrap_or("").to_string();
        let key = row["session_key"].as_str().unwrap_or("").to_string();
        checked += 1;
        match (label_to_key.get(&label), key_to_label.get(&key)) {
            (None, None) => {
                label_to_key.insert(label, key.clone());
                key_to_label.insert(key, entry["session"].as_str().unwrap_or("").to_string());
            }
            (Some(k), _) if *k != key => {
                problems.push(format!("#{n}: session {label} was {k}, now {key}"))
            }
            (_, Some(l)) if *l != label => problems.push(format!(
                "#{n}: session key {key} joins truth sessions {l} and {label}"
            )),
            _ => {}
        }
    }
    for (i, row) in rows.iter().enumerate() {
        if !used[i] {
            problems.push(format!(
                "row {} {:?} has no truth entry",
                row["exchange_id"],
                identity(row)
            ));
        }
    }
    (checked, problems)
}

/// A capture cut by a small snap length hides the bodies, so the JSON-RPC
/// identity of each request cannot be seen. Deliberate difference from the
/// truth (which lists what was sent): every row must be one of the truth's
/// HTTP requests in order (same method and status), marked with the damage;
/// the first POST to a not-yet-known endpoint, whose body and MCP headers were
/// both cut, cannot be recognised as MCP and may be missing.
fn compare_snapped(entries: &[Value], rows: &[Value]) -> (usize, Vec<String>) {
    let mut problems = Vec::new();
    let mut checked = 0;
    let mut next = 0;
    for row in rows {
        checked += 1;
        let key = (text(&row["http_method"]), text(&row["http_status"]));
        let Some(offset) = entries[next..]
            .iter()
            .position(|e| (text(&e["http_method"]), text(&e["http_status"])) == key)
        else {
            problems.push(format!(
                "row {} {key:?} matches no remaining truth entry",
                row["exchange_id"]
            ));
            continue;
        };
        if offset > 0 && next > 0 {
            problems.push(format!(
                "row {} skips {offset} truth entries",
                row["exchange_id"]
            ));
        }
        next += offset + 1;
        let anomalies = row["anomalies"].as_str().unwrap_or("");
        if !anomalies.contains("gap") {
            problems.push(format!(
                "row {}: damage not named (anomalies {anomalies:?})",
                row["exchange_id"]
            ));
        }
    }
    if rows.len() + 1 < entries.len() {
        problems.push(format!(
            "{} rows for {} requests",
            rows.len(),
            entries.len()
        ));
    }
    (checked, problems)
}

#[test]
fn every_sample_agrees_with_its_ground_truth() {
    let files = truth_files();
    assert!(
        files.len() >= 20,
        "expected the bundled recordings, found {}",
        files.len()
    );
    let mut total_checked = 0;
    let mut all_problems = Vec::new();
    println!("{:<32} {:>7} {:>9}", "recording", "checked", "disagree");
    for file in &files {
        let name = file
            .file_name()
            .unwrap()
            .to_string_lossy()
            .replace(".truth.json", "");
        let (checked, problems) = compare(file);
        println!("{name:<32} {checked:>7} {:>9}", problems.len());
        total_checked += checked;
        all_problems.extend(problems.into_iter().map(|p| format!("{name}: {p}")));
    }
    println!(
        "agreement: {}/{} fields ({:.1}%)",
        total_checked - all_problems.len().min(total_checked),
        total_checked,
        100.0 * (total_checked - all_problems.len().min(total_checked)) as f64
            / total_checked.max(1) as f64
    );
    assert!(
        all_problems.is_empty(),
        "{} disagreements:\n{}",
        all_problems.len(),
        all_problems.join("\n")
    );
}

/// Runs `analyze` with `--connections` and `--summary` on a packet capture (with its key log
/// when one lies beside it): (exchange rows, connection rows, run summary).
fn analyze_with_connections(capture: &Path) -> (Vec<Value>, Vec<Value>, Value) {
    let dir = tempfile::tempdir().unwrap();
    let (out, conns, summary) = (
        dir.path().join("out.jsonl"),
        dir.path().join("conns.jsonl"),
        dir.path().join("summary.json"),
    );
    let mut cmd = std::process::Command::new(env!("CARGO_BIN_EXE_mcp-trace"));
    cmd.arg("analyze").arg(capture).arg("-o").arg(&out);
    cmd.arg("--connections")
        .arg(&conns)
        .arg("--summary")
        .arg(&summary);
    if let Some(keys) = crate::support::keylog_beside(capture) {
        cmd.arg("--keylog").arg(keys);
    }
    let o = cmd.output().unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let lines = |p: &Path| -> Vec<Value> {
        std::fs::read_to_string(p)
            .unwrap()
            .lines()
            .map(|l| serde_json::from_str(l).unwrap())
            .collect()
    };
    let summary = serde_json::from_str(&std::fs::read_to_string(&summary).unwrap()).unwrap();
    (lines(&out), lines(&conns), summary)
}

/// The connections table of every packet sample: one row per TCP connection, its sums equal
/// to the run summary's counts, each TLS connection as its truth file lists it, every
/// connection of a plaintext sample `plaintext`; the exchange rows carry their connection's
/// HTTP and TLS version and server name.
#[test]
fn every_sample_connections_table_agrees_with_the_summary_and_the_truth() {
    let mut problems = Vec::new();
    let mut tls_checked = 0;
    for file in truth_files() {
        let truth: Value = serde_json::from_str(&std::fs::read_to_string(&file).unwrap()).unwrap();
        let name = truth["capture"].as_str().unwrap().to_string();
        if name.ends_with(".har") {
            continue;
        }
        let (rows, conns, summary) = analyze_with_connections(&samples_dir().join(&name));
        let mut p = |what: String| problems.push(format!("{name}: {what}"));
        let sum = |col: &str| -> u64 { conns.iter().map(|c| c[col].as_u64().unwrap_or(0)).sum() };
        let mut streams: Vec<u64> = conns
            .iter()
            .map(|c| c["tcp_stream"].as_u64().unwrap())
            .collect();
        streams.sort_unstable();
        let expected: Vec<u64> = (0..summary["tcp_streams"].as_u64().unwrap()).collect();
        if streams != expected {
            p(format!(
                "connection rows {streams:?}, tcp_streams {}",
                expected.len()
            ));
        }
        for (col, key) in [
            ("gap_bytes", "gap_bytes"),
            ("http_exchanges", "http_exchanges"),
            ("mcp_exchanges", "mcp_exchanges_total"),
        ] {
            if sum(col) != summary[key].as_u64().unwrap() {
                p(format!(
                    "sum of {col} {} != summary {key} {}",
                    sum(col),
                    summary[key]
                ));
            }
        }
        let payload = sum("client_bytes") + sum("server_bytes");
        if payload != summary["tcp_payload_bytes"].as_u64().unwrap() {
            p(format!(
                "payload {payload} != {}",
                summary["tcp_payload_bytes"]
            ));
        }
        if sum("packets") > summary["packets_decoded"].as_u64().unwrap() || sum("packets") == 0 {
            p(format!("{} packets in connections", sum("packets")));
        }
        let mut by_decryption: BTreeMap<String, u64> = BTreeMap::new();
        for c in &conns {
            *by_decryption
                .entry(c["decryption"].as_str().unwrap().into())
                .or_default() += 1;
            let stream = c["tcp_stream"].as_u64();
            let on_it: Vec<&Value> = rows
                .iter()
                .filter(|r| r["tcp_stream"].as_u64() == stream)
                .collect();
            if c["mcp_exchanges"].as_u64() != Some(on_it.len() as u64) {
                p(format!(
                    "stream {stream:?}: mcp_exchanges {} for {} rows",
                    c["mcp_exchanges"],
                    on_it.len()
                ));
            }
            for r in on_it {
                for (col, conn_col) in [
                    ("tls_version", "tls_version"),
                    ("tls_sni", "tls_sni"),
                    ("http_version", "http_version"),
                ] {
                    if r[col] != c[conn_col] {
                        p(format!(
                            "exchange {} {col} {} on a connection with {}",
                            r["exchange_id"], r[col], c[conn_col]
                        ));
                    }
                }
            }
            if !["fin", "rst", "idle", "capture_end"].contains(&c["ended_by"].as_str().unwrap()) {
                p(format!("ended_by {}", c["ended_by"]));
            }
        }
        let counted: BTreeMap<String, u64> = summary["tls_connections"]
            .as_object()
            .unwrap()
            .iter()
            .map(|(k, v)| (k.clone(), v.as_u64().unwrap()))
            .filter(|(_, n)| *n > 0)
            .collect();
        if by_decryption != counted {
            p(format!(
                "decryption {by_decryption:?} != summary {counted:?}"
            ));
        }
        let Some(listed) = truth["connections"].as_array() else {
            for c in &conns {
                if c["decryption"] != "plaintext"
                    || !c["tls_version"].is_null()
                    || !c["tls_resumed"].is_null()
                {
                    p(format!("plaintext sample, connection {c}"));
                }
            }
            continue;
        };
        for t in listed {
            let Some(c) = conns.iter().find(|c| c["tcp_stream"] == t["tcp_stream"]) else {
                p(format!("no row for connection {}", t["tcp_stream"]));
                continue;
            };
            let mut cols = vec![
                "client_addr",
                "server_addr",
                "decryption",
                "tls_version",
                "tls_cipher",
                "tls_sni",
                "tls_resumed",
            ];
            if t["decryption"] == "decrypted" {
                // ALPN of TLS 1.3 travels encrypted, and the exchanges only show once decrypted.
                cols.extend(["alpn", "http_exchanges"]);
            }
            for col in cols {
                tls_checked += 1;
                if c[col] != t[col] {
                    p(format!(
                        "stream {}: {col} {} (truth {})",
                        t["tcp_stream"], c[col], t[col]
                    ));
                }
            }
            // Null where no HTTP was seen (a connection never used, one not decrypted).
            let http = t["decryption"] == "decrypted" && t["http_exchanges"].as_u64() > Some(0);
            // The truth names the version where it recorded one (the HTTP/2 samples).
            let version = match t.get("http_version") {
                Some(v) => v.clone(),
                None if http => Value::from("HTTP/1.1"),
                None => Value::Null,
            };
            if c["http_version"] != version {
                p(format!(
                    "stream {}: http_version {}",
                    t["tcp_stream"], c["http_version"]
                ));
            }
        }
    }
    assert!(
        tls_checked > 50,
        "only {tls_checked} TLS connection fields checked"
    );
    assert!(problems.is_empty(), "{}", problems.join("\n"));
}
