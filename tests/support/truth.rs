//! Compare `analyze` rows with a recording's ground truth (`samples/*.truth.json`,
//! format in samples/README.md): one truth entry per HTTP request, in order.

use serde_json::Value;
use std::collections::HashMap;

/// Columns compared one to one (when the truth entry has them).
pub const COMPARED: &[&str] = &[
    "http_method",
    "path",
    "kind",
    "jsonrpc_id",
    "rpc_method",
    "tool_name",
    "http_status",
    "outcome",
    "final_response",
    "retry_of",
    "retry_origin",
    "continuation_of",
];

/// How one recording's rows agree with its truth.
#[derive(Debug)]
pub struct Agreement {
    pub capture: String,
    pub entries: usize,
    pub rows: usize,
    /// Entries whose row agrees on every compared column and on the session.
    pub agree: usize,
    /// One line per disagreement, with the truth entry's `n` (`None`: the whole recording).
    pub diffs: Vec<(Option<u64>, String)>,
}

fn describe(e: &Value) -> String {
    format!(
        "#{} {} {} id={}",
        e["n"],
        e["http_method"].as_str().unwrap_or(""),
        e["rpc_method"]
            .as_str()
            .or(e["path"].as_str())
            .unwrap_or(""),
        e["jsonrpc_id"]
    )
}

/// Align rows and entries in order (an entry takes the next row with the same
/// method, path and JSON-RPC id, so one missing row does not shift the rest);
/// sessions must map one to one (truth `session` <-> our `session_key`).
pub fn compare(truth: &Value, rows: &[Value]) -> Agreement {
    let entries = truth["entries"].as_array().cloned().unwrap_or_default();
    let mut diffs = Vec::new();
    if rows.len() != entries.len() {
        let line = format!("{} rows for {} truth entries", rows.len(), entries.len());
        diffs.push((None, line));
    }
    let mut ours_of: HashMap<String, String> = HashMap::new();
    let mut truth_of: HashMap<String, String> = HashMap::new();
    let mut agree = 0;
    let mut next = 0;
    for e in &entries {
        let n = e["n"].as_u64();
        let reason = e["reason"].as_str().unwrap_or("");
        let same = |r: &&Value| {
            ["http_method", "path", "jsonrpc_id"]
                .iter()
                .all(|k| r.get(*k) == e.get(*k))
        };
        let Some(pos) = rows.iter().skip(next).position(|r| same(&r)) else {
            diffs.push((n, format!("{}: no row  [{reason}]", describe(e))));
            continue;
        };
        let r = &rows[next + pos];
        next += pos + 1;
        let mut d = Vec::new();
        for col in COMPARED {
            if let Some(want) = e.get(*col)
                && r.get(*col) != Some(want)
            {
                let got = r.get(*col).unwrap_or(&Value::Null);
                d.push(format!("{col}: truth {want} ours {got}"));
            }
        }
        let ts = e["session"].as_str().unwrap_or("").to_string();
        let os = r["session_key"].as_str().unwrap_or("").to_string();
        match (ours_of.get(&ts), truth_of.get(&os)) {
            (Some(o), _) if *o != os => d.push(format!("session {ts} split: {o} and {os}")),
            (_, Some(t)) if *t != ts => d.push(format!("sessions {t} and {ts} merged in {os}")),
            _ => {
                ours_of.insert(ts.clone(), os.clone());
                truth_of.insert(os, ts);
            }
        }
        if d.is_empty() {
            agree += 1;
        } else {
            diffs.push((n, format!("{}: {}  [{reason}]", describe(e), d.join("; "))));
        }
    }
    Agreement {
        capture: truth["capture"].as_str().unwrap_or("").to_string(),
        entries: entries.len(),
        rows: rows.len(),
        agree,
        diffs,
    }
}
