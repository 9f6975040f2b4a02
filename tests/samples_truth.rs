//! Every recording in samples/ (made by the real SDKs and recorders) runs
//! through `mcp-trace analyze`, and each row is compared with the recording's
//! ground truth (written by the generator from what it did, never from our
//! output): kind, JSON-RPC id and method, tool, HTTP status, outcome,
//! `final_response`, session grouping, the retry/continuation links, and the
//! retry-hygiene findings where the truth entry names them (`retry_findings`).

use serde_json::Value;
use std::collections::HashMap;
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
        let found = rows
            .iter()
            .enumerate()
            .find(|(i, row)| !used[*i] && identity(row) == identity(entry));
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
