//! `mcp-trace http --keylog` on the public TLS corpus (`../shared/corpus/tls`, from
//! Wireshark's test suite): every HTTP/1.x request tshark decrypted (its `expected.jsonl`)
//! is found with the same TCP stream, method, path and status, and no secret of the key
//! log appears in any output. The tests that read the corpus are ignored by default (Wireshark's
//! captures are GPL, so not vendored): `cargo test -- --ignored` runs them.

use serde_json::Value;
use std::process::Command;

const CORPUS: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/../shared/corpus/tls");

/// (case, capture, key logs): captures whose HTTP/1.x tshark decrypts.
const CASES: &[(&str, &str, &[&str])] = &[
    ("tls12-dsb", "tls12-dsb.pcapng", &[]),
    (
        "tls12-chacha20poly1305",
        "tls12-chacha20poly1305.pcap",
        &["tls12-chacha20poly1305.keys"],
    ),
    (
        "tls13-20-chacha20poly1305",
        "tls13-20-chacha20poly1305.pcap",
        &["tls13-20-chacha20poly1305.keys"],
    ),
    (
        "tls13-rfc8446",
        "tls13-rfc8446.pcap",
        &["tls13-rfc8446.keys"],
    ),
    (
        "tls12-aes256gcm-psk",
        "tls12-aes256gcm.pcap",
        &["tls12-aes256gcm.tshark-exported.keys"],
    ),
];

type Request = (u64, String, String, Option<u64>);

fn expected(case: &str) -> Vec<Request> {
    let text = std::fs::read_to_string(format!("{CORPUS}/{case}/expected.jsonl")).unwrap();
    let mut rows: Vec<Request> = text
        .lines()
        .map(|l| serde_json::from_str::<Value>(l).unwrap())
        .filter(|v| v["proto"] == "h1" && v["method"].is_string())
        .map(|v| {
            (
                v["tcp_stream"].as_u64().unwrap(),
                v["method"].as_str().unwrap().to_string(),
                v["path"].as_str().unwrap().to_string(),
                v["status"].as_u64(),
            )
        })
        .collect();
    rows.sort();
    rows
}

fn http_log(args: &[String]) -> (Vec<Request>, String) {
    let out = Command::new(env!("CARGO_BIN_EXE_mcp-trace"))
        .arg("http")
        .args(["--format", "jsonl"])
        .args(args)
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
    assert!(out.status.success(), "{args:?}: {stderr}");
    let stdout = String::from_utf8(out.stdout).unwrap();
    let mut rows: Vec<Request> = stdout
        .lines()
        .map(|l| serde_json::from_str::<Value>(l).unwrap())
        .map(|v| {
            (
                v["tcp_stream"].as_u64().unwrap(),
                v["method"].as_str().unwrap().to_string(),
                v["uri"].as_str().unwrap().to_string(),
                v["status_code"].as_u64(),
            )
        })
        .collect();
    rows.sort();
    (rows, stdout + &stderr)
}

/// The secret hex strings of a key log (the last field of each line).
fn secrets_of(path: &str) -> Vec<String> {
    std::fs::read_to_string(path)
        .unwrap()
        .lines()
        .filter(|l| !l.starts_with('#'))
        .filter_map(|l| l.split_whitespace().nth(2))
        .map(str::to_ascii_lowercase)
        .collect()
}

#[test]
#[ignore = "needs ../shared/corpus"]
fn http_with_keylog_finds_every_request_tshark_decrypted_and_no_secret() {
    crate::support::corpus("tls");
    for (case, capture, keys) in CASES {
        let dir = format!("{CORPUS}/{case}");
        let mut args = Vec::new();
        let mut secrets = Vec::new();
        for k in *keys {
            args.push("--keylog".to_string());
            args.push(format!("{dir}/{k}"));
            secrets.extend(secrets_of(&format!("{dir}/{k}")));
        }
        args.push(format!("{dir}/{capture}"));
        let want = expected(case);
        assert!(!want.is_empty(), "{case}: tshark found requests");
        let (found, output) = http_log(&args);
        assert_eq!(found, want, "{case}");
        let lower = output.to_ascii_lowercase();
        for s in &secrets {
            assert!(
                !lower.contains(s.as_str()),
                "{case}: a key log secret in the output"
            );
        }
    }
}

#[test]
#[ignore = "needs ../shared/corpus"]
fn without_the_key_log_nothing_is_guessed() {
    let dir = format!("{CORPUS}/tls12-chacha20poly1305");
    crate::support::corpus("tls/tls12-chacha20poly1305");
    let (found, _) = http_log(&[format!("{dir}/tls12-chacha20poly1305.pcap")]);
    assert_eq!(found, vec![]);
}

#[test]
fn a_missing_key_log_is_a_clear_error_with_exit_2() {
    let out = Command::new(env!("CARGO_BIN_EXE_mcp-trace"))
        .args(["analyze", "--keylog", "/nonexistent/keys.log", "x.pcap"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("--keylog /nonexistent/keys.log"),
        "{stderr}"
    );
    assert_eq!(stderr.lines().count(), 1, "{stderr}");
}

fn summary(args: &[String], threads: &str) -> Value {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("s.json");
    let out = Command::new(env!("CARGO_BIN_EXE_mcp-trace"))
        .args(["analyze", "--threads", threads, "--summary"])
        .arg(&path)
        .args(args)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap()
}

#[test]
#[ignore = "needs ../shared/corpus"]
fn tls_bytes_add_up_and_every_connection_is_decrypted_on_one_thread_and_on_four() {
    crate::support::corpus("tls");
    for (case, capture, keys) in CASES {
        let dir = format!("{CORPUS}/{case}");
        let mut args: Vec<String> = keys
            .iter()
            .flat_map(|k| ["--keylog".to_string(), format!("{dir}/{k}")])
            .collect();
        args.push(format!("{dir}/{capture}"));
        for threads in ["1", "4"] {
            let s = summary(&args, threads);
            let tls = &s["tls_connections"];
            assert_eq!(tls.as_object().unwrap().len(), 6, "{case}: every value");
            let streams = s["tcp_streams"].as_u64().unwrap();
            assert_eq!(tls["decrypted"], streams, "{case} threads {threads}: {tls}");
            let b = &s["tls_bytes"];
            let undecrypted: u64 = b["undecrypted"]
                .as_object()
                .unwrap()
                .values()
                .map(|n| n.as_u64().unwrap())
                .sum();
            assert!(b["application"].as_u64().unwrap() > 0, "{case}: {b}");
            assert_eq!(
                b["received"].as_u64().unwrap(),
                b["handshake"].as_u64().unwrap() + b["application"].as_u64().unwrap() + undecrypted,
                "{case}: {b}"
            );
            assert_eq!(s["keylog"]["malformed_lines"], 0, "{case}");
        }
    }
}

#[test]
#[ignore = "needs ../shared/corpus"]
fn malformed_key_log_lines_are_counted_with_their_line_numbers_and_no_secret() {
    let dir = format!("{CORPUS}/tls12-chacha20poly1305");
    crate::support::corpus("tls/tls12-chacha20poly1305");
    let tmp = tempfile::tempdir().unwrap();
    let keys = tmp.path().join("broken.keys");
    let good = std::fs::read_to_string(format!("{dir}/tls12-chacha20poly1305.keys")).unwrap();
    std::fs::write(
        &keys,
        format!("CLIENT_RANDOM zz 0011223344556677\n{good}CLIENT_RANDOM 00\n"),
    )
    .unwrap();
    let s = summary(
        &[
            "--keylog".into(),
            keys.to_string_lossy().into_owned(),
            format!("{dir}/tls12-chacha20poly1305.pcap"),
        ],
        "1",
    );
    let last = good.lines().count() + 2;
    assert_eq!(s["keylog"]["malformed_lines"], 2, "{s}");
    assert_eq!(
        s["keylog"]["malformed_at"],
        serde_json::json!(["broken.keys:1", format!("broken.keys:{last}")])
    );
    assert!(!s.to_string().contains("0011223344556677"));
    assert!(s["tls_connections"]["decrypted"].as_u64().unwrap() > 0);
}

#[test]
#[ignore = "needs ../shared/corpus"]
fn the_terminal_summary_names_connections_not_decrypted_and_malformed_key_log_lines() {
    let dir = format!("{CORPUS}/tls12-chacha20poly1305");
    crate::support::corpus("tls/tls12-chacha20poly1305");
    let tmp = tempfile::tempdir().unwrap();
    let keys = tmp.path().join("other.keys");
    std::fs::write(&keys, "# no secret of this capture\nCLIENT_RANDOM zz 00\n").unwrap();
    let out = Command::new(env!("CARGO_BIN_EXE_mcp-trace"))
        .args(["analyze", "--color", "never", "--keylog"])
        .arg(&keys)
        .arg(format!("{dir}/tls12-chacha20poly1305.pcap"))
        .output()
        .unwrap();
    assert!(out.status.success());
    let text = String::from_utf8_lossy(&out.stdout);
    let line = |what: &str| {
        text.lines()
            .find(|l| l.contains(what))
            .map(|l| l.split_whitespace().collect::<Vec<_>>().join(" "))
            .unwrap_or_else(|| panic!("no `{what}` in {text}"))
    };
    assert_eq!(
        line("TLS not decrypted"),
        "TLS not decrypted: no_key 7 connections"
    );
    assert_eq!(
        line("key log lines malformed"),
        "key log lines malformed, skipped (other.keys:2) 1 lines"
    );
}
