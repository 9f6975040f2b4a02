//! Contract section 1b: no output carries a credential. For every sample in samples/, the
//! credential values are taken from the raw traffic (the values of `Authorization`, `Cookie`,
//! `X-Api-Key`-style headers and of token-like query parameters, found in the capture's bytes
//! or the HAR's JSON, plus the truth file's `secrets` list when it has one) and looked for in
//! everything `mcp-trace` writes for that sample: the exchanges table in every format, the
//! sessions table, the run summary, the HTML report, the terminal summary, `sessions`, `show`,
//! the `http` log, and every stderr.

use mcp_trace::http::redact::{is_secret_header, is_secret_param};
use serde_json::Value;
use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::process::Command;

/// Values shorter than this are not searched for (they would match by chance).
const MIN_SECRET_LEN: usize = 6;

fn samples() -> Vec<PathBuf> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("samples");
    let mut files: Vec<PathBuf> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| {
            let name = p.to_string_lossy();
            [".pcap", ".pcapng", ".har"]
                .iter()
                .any(|e| name.ends_with(e))
        })
        .collect();
    files.sort();
    files
}

/// The credential in a header value, and its parts: the token of `Bearer x`/`Basic x` (and
/// the decoded `user:password` of `Basic` with its password), each cookie value of `a=x; b=y`.
fn header_secrets(value: &str, out: &mut BTreeSet<String>) {
    use base64::Engine as _;
    let value = value.trim();
    out.insert(value.to_string());
    if let Some((scheme, token)) = value.split_once(' ') {
        let token = token.trim();
        out.insert(token.to_string());
        if scheme.eq_ignore_ascii_case("basic")
            && let Ok(decoded) = base64::engine::general_purpose::STANDARD.decode(token)
            && let Ok(decoded) = String::from_utf8(decoded)
        {
            if let Some((_user, password)) = decoded.split_once(':') {
                out.insert(password.to_string());
            }
            out.insert(decoded);
        }
    }
    for part in value.split(';') {
        if let Some((_, v)) = part.split_once('=') {
            out.insert(v.trim().to_string());
        }
    }
}

fn query_secrets(text: &str, out: &mut BTreeSet<String>) {
    for (i, _) in text.match_indices(['?', '&', ';']) {
        let rest = &text[i + 1..];
        let Some((name, after)) = rest.split_once('=') else {
            continue;
        };
        if name.is_empty()
            || !name
                .bytes()
                .all(|b| b.is_ascii_alphanumeric() || b"_-.%".contains(&b))
        {
            continue;
        }
        let end = after
            .find(|c: char| c.is_whitespace() || "&;#\"'<>\\".contains(c))
            .unwrap_or(after.len());
        if is_secret_param(name) {
            out.insert(after[..end].to_string());
        }
    }
}

/// Header lines (`Name: value` between CRLFs) and query parameters in raw capture bytes.
fn raw_secrets(bytes: &[u8], out: &mut BTreeSet<String>) {
    let text = String::from_utf8_lossy(bytes);
    for line in text.split("\r\n") {
        if let Some((name, value)) = line.split_once(':')
            && !name.is_empty()
            && name.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'-')
            && is_secret_header(name)
        {
            header_secrets(value, out);
        }
    }
    query_secrets(&text, out);
}

fn har_secrets(har: &Value, out: &mut BTreeSet<String>) {
    let entries = har["log"]["entries"]
        .as_array()
        .cloned()
        .unwrap_or_default();
    for e in entries {
        for side in ["request", "response"] {
            for h in e[side]["headers"].as_array().into_iter().flatten() {
                if is_secret_header(h["name"].as_str().unwrap_or_default()) {
                    header_secrets(h["value"].as_str().unwrap_or_default(), out);
                }
            }
            for c in e[side]["cookies"].as_array().into_iter().flatten() {
                out.insert(c["value"].as_str().unwrap_or_default().to_string());
            }
        }
        for q in e["request"]["queryString"].as_array().into_iter().flatten() {
            if is_secret_param(q["name"].as_str().unwrap_or_default()) {
                out.insert(q["value"].as_str().unwrap_or_default().to_string());
            }
        }
        query_secrets(e["request"]["url"].as_str().unwrap_or_default(), out);
    }
}

fn secrets_of(sample: &Path) -> BTreeSet<String> {
    let bytes = std::fs::read(sample).unwrap();
    let mut out = BTreeSet::new();
    if sample.extension().is_some_and(|e| e == "har") {
        har_secrets(&serde_json::from_slice(&bytes).unwrap(), &mut out);
    } else {
        raw_secrets(&bytes, &mut out);
    }
    let name = sample.file_name().unwrap().to_string_lossy();
    let stem = name.rsplit_once('.').unwrap().0;
    let truth = sample.with_file_name(format!("{stem}.truth.json"));
    if let Ok(text) = std::fs::read_to_string(truth) {
        let truth: Value = serde_json::from_str(&text).unwrap();
        for s in truth["secrets"].as_array().into_iter().flatten() {
            out.insert(s.as_str().unwrap().to_string());
        }
    }
    // The secrets of its key log (NSS lines: label, client random, secret).
    if let Some(keys) = crate::support::keylog_beside(sample) {
        for line in std::fs::read_to_string(keys).unwrap().lines() {
            if let Some(secret) = line.split_whitespace().nth(2) {
                out.insert(secret.to_string());
            }
        }
    }
    out.retain(|s| s.len() >= MIN_SECRET_LEN);
    out
}

/// Runs the binary; returns stdout and stderr together (every byte a person could see).
fn run(args: &[&str]) -> (bool, Vec<u8>) {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_mcp-trace"));
    cmd.args(args);
    // A TLS sample is decrypted with the key log recorded beside it (`X.keys`).
    if let Some(keys) = args
        .get(1)
        .and_then(|input| crate::support::keylog_beside(Path::new(input)))
    {
        cmd.arg("--keylog").arg(keys);
    }
    let out = cmd.output().unwrap();
    let mut all = out.stdout;
    all.extend_from_slice(&out.stderr);
    (out.status.success(), all)
}

#[cfg(feature = "parquet")]
fn parquet_as_text(path: &Path) -> Vec<u8> {
    use polars::prelude::*;
    let mut df = ParquetReader::new(std::fs::File::open(path).unwrap())
        .finish()
        .unwrap();
    let mut buf = Vec::new();
    CsvWriter::new(&mut buf).finish(&mut df).unwrap();
    buf
}

/// Everything written for `sample`, as (what, bytes).
fn outputs(sample: &Path) -> Vec<(String, Vec<u8>)> {
    let dir = tempfile::tempdir().unwrap();
    let input = sample.to_str().unwrap();
    let p = |name: &str| dir.path().join(name).to_str().unwrap().to_string();
    let mut outs = Vec::new();
    let (ok, log) = run(&[
        "analyze",
        input,
        "-o",
        &p("x.jsonl"),
        "--sessions",
        &p("s.jsonl"),
        "--summary",
        &p("sum.json"),
        "--html",
        &p("r.html"),
        "--connections",
        &p("c.jsonl"),
        "--otlp",
        &p("t.jsonl"),
        "--no-progress",
    ]);
    assert!(ok, "{input}: {}", String::from_utf8_lossy(&log));
    outs.push(("analyze stderr".into(), log));
    let (_, log) = run(&[
        "analyze",
        input,
        "-o",
        &p("x.csv"),
        "--sessions",
        &p("s.csv"),
        "--no-progress",
    ]);
    outs.push(("analyze csv stderr".into(), log));
    let (_, log) = run(&[
        "analyze",
        input,
        "-o",
        &p("x.parquet"),
        "--sessions",
        &p("s.parquet"),
        "--connections",
        &p("c.parquet"),
        "--no-progress",
    ]);
    outs.push(("analyze parquet stderr".into(), log));
    for name in [
        "x.jsonl",
        "s.jsonl",
        "sum.json",
        "r.html",
        "x.csv",
        "s.csv",
        "x.parquet",
        "c.jsonl",
        "t.jsonl",
    ] {
        outs.push((name.into(), std::fs::read(p(name)).unwrap()));
    }
    #[cfg(feature = "parquet")]
    for name in ["x.parquet", "s.parquet", "c.parquet"] {
        outs.push((
            format!("{name} as CSV"),
            parquet_as_text(Path::new(&p(name))),
        ));
    }
    for args in [
        &["analyze", input, "--color", "never", "--no-progress"][..],
        &[
            "analyze",
            input,
            "--color",
            "always",
            "--no-progress",
            "--only-failures",
        ],
        &["sessions", input, "--color", "never", "--no-progress"],
        &["http", input],
    ] {
        outs.push((args.join(" "), run(args).1));
    }
    let (_, log) = run(&[
        "http",
        input,
        "-o",
        &p("h.jsonl"),
        "--connections",
        &p("hc.csv"),
    ]);
    outs.push(("http -o stderr".into(), log));
    for name in ["h.jsonl", "hc.csv"] {
        outs.push((name.into(), std::fs::read(p(name)).unwrap_or_default()));
    }
    let sessions = std::fs::read_to_string(p("s.jsonl")).unwrap();
    for line in sessions.lines().take(8) {
        let key: Value = serde_json::from_str(line).unwrap();
        let key = key["session_key"].as_str().unwrap();
        let args = [
            "show",
            input,
            "--session",
            key,
            "--color",
            "never",
            "--no-progress",
        ];
        outs.push((args.join(" "), run(&args).1));
    }
    outs
}

fn contains(hay: &[u8], needle: &[u8]) -> bool {
    hay.windows(needle.len()).any(|w| w == needle)
}

#[test]
fn no_output_carries_a_credential_of_any_sample() {
    let mut searched = 0;
    let mut leaks = Vec::new();
    let mut with_secrets = Vec::new();
    for sample in samples() {
        let secrets = secrets_of(&sample);
        if secrets.is_empty() {
            continue;
        }
        let name = sample.file_name().unwrap().to_string_lossy().to_string();
        let raw = std::fs::read(&sample).unwrap();
        // What the capture itself carries, a Basic password decoded from its header too.
        let mut carried = BTreeSet::new();
        raw_secrets(&raw, &mut carried);
        if let Some(keys) = crate::support::keylog_beside(&sample) {
            carried.extend(
                std::fs::read_to_string(keys)
                    .unwrap()
                    .lines()
                    .filter_map(|l| l.split_whitespace().nth(2).map(str::to_string)),
            );
        }
        for s in &secrets {
            // Taken from the capture itself: the check below can fail.
            assert!(
                contains(&raw, s.as_bytes()) || carried.contains(s),
                "{name}: {s} not in the input"
            );
        }
        for (what, bytes) in outputs(&sample) {
            for s in &secrets {
                searched += 1;
                if contains(&bytes, s.as_bytes()) {
                    leaks.push(format!("{name}: {what} contains {s:?}"));
                }
            }
        }
        with_secrets.push(name);
    }
    assert!(
        with_secrets.iter().any(|n| n == "auth-401-sdk-retry.pcap"),
        "no credential found in auth-401-sdk-retry.pcap (it carries Bearer tokens): {with_secrets:?}"
    );
    assert!(
        leaks.is_empty(),
        "{} of {searched} checks:\n{}",
        leaks.len(),
        leaks.join("\n")
    );
}

/// The extraction itself, on text whose credentials are known.
#[test]
fn credentials_are_found_in_raw_traffic() {
    let raw = b"POST /mcp?access_token=q-secret-1&x=1 HTTP/1.1\r\nHost: h\r\n\
        Authorization: Bearer tok-abcdef\r\nCookie: sid=cookie-val-1; b=2\r\n\
        X-Api-Key: key-123456\r\nUser-Agent: agent-007\r\n\r\n";
    let mut got = BTreeSet::new();
    raw_secrets(raw, &mut got);
    got.retain(|s| s.len() >= MIN_SECRET_LEN);
    for want in [
        "q-secret-1",
        "tok-abcdef",
        "Bearer tok-abcdef",
        "cookie-val-1",
        "key-123456",
    ] {
        assert!(got.contains(want), "{want} not in {got:?}");
    }
    assert!(!got.iter().any(|s| s.contains("agent-007")), "{got:?}");
}

/// A request carrying a token in its query and an Authorization header, end to end: the
/// path shows the hash, not the value.
#[test]
fn query_token_is_hashed_in_the_path() {
    let dir = tempfile::tempdir().unwrap();
    let har = serde_json::json!({"log": {"version": "1.2", "creator": {"name": "t", "version": "1"},
        "entries": [{
        "startedDateTime": "2026-01-01T00:00:00.000Z", "time": 5,
        "request": {"method": "POST", "url": "http://127.0.0.1:1/mcp?access_token=tok-in-query-42&v=1",
            "httpVersion": "HTTP/1.1", "cookies": [], "queryString": [], "headersSize": -1, "bodySize": 58,
            "headers": [{"name": "Content-Type", "value": "application/json"},
                        {"name": "Authorization", "value": "Bearer tok-in-header-42"}],
            "postData": {"mimeType": "application/json",
                "text": "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"tools/list\"}"}},
        "response": {"status": 401, "statusText": "Unauthorized", "httpVersion": "HTTP/1.1",
            "headers": [{"name": "Content-Type", "value": "application/json"}], "cookies": [],
            "content": {"size": 2, "mimeType": "application/json", "text": "{}"},
            "redirectURL": "", "headersSize": -1, "bodySize": 2},
        "cache": {}, "timings": {"send": 0, "wait": 5, "receive": 0}}]}});
    let input = dir.path().join("t.har");
    std::fs::write(&input, har.to_string()).unwrap();
    let secrets = secrets_of(&input);
    assert!(secrets.contains("tok-in-query-42") && secrets.contains("tok-in-header-42"));
    let outs = outputs(&input);
    for (what, bytes) in &outs {
        for s in &secrets {
            assert!(!contains(bytes, s.as_bytes()), "{what} contains {s}");
        }
    }
    let rows = &outs.iter().find(|(w, _)| w == "x.jsonl").unwrap().1;
    let row: Value = serde_json::from_slice(rows.split(|b| *b == b'\n').next().unwrap()).unwrap();
    let hash = mcp_trace::http::redact::short_hash(b"tok-in-query-42");
    assert_eq!(row["path"], format!("/mcp?access_token={hash}&v=1"));
}
