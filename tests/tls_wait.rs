//! Secrets that come after the handshake they belong to: two rustls connections
//! (tests/tls_rustls.rs), their handshakes, data and closes interleaved, written as a pcapng
//! whose Decryption Secrets Block comes before every packet, after the ServerHellos, after
//! application data, just before the closes, or never. `mcp-trace analyze` gives the same
//! rows and TLS counts wherever the block is, as long as it comes before a connection ends;
//! without it, what it gives without keys; `--threads` changes nothing.

use crate::support::Capture;
use crate::tls_rustls::{INIT, INIT_RESULT, Server, Setup, Tls, post, reply, setup, tool_call};
use serde_json::Value;
use std::path::Path;
use std::process::Command;

/// Frame counts where a block may go.
struct Points {
    handshakes: usize,
    data: usize,
    before_close: usize,
}

/// Two connections, interleaved: handshakes, `initialize` on each, a tool call on each,
/// closes. Returns the capture, the frame counts, and how many secrets the first logged.
fn two_connections(s: &Setup) -> (Capture, Points, usize) {
    let mut cap = Capture::new();
    let mut a = Tls::connect(&mut cap, s);
    a.pump(&mut cap);
    let first = s.secrets.len();
    let mut b = Tls::connect(&mut cap, s);
    b.pump(&mut cap);
    let handshakes = cap.frames();
    a.exchange(
        &mut cap,
        &post(1, "initialize", INIT),
        &reply(1, INIT_RESULT),
    );
    b.exchange(
        &mut cap,
        &post(11, "initialize", INIT),
        &reply(11, INIT_RESULT),
    );
    let data = cap.frames();
    for (tls, id) in [(&mut a, 2), (&mut b, 12)] {
        let (req, res) = tool_call(id);
        tls.exchange(&mut cap, &req, &res);
    }
    let before_close = cap.frames();
    a.close(&mut cap);
    b.close(&mut cap);
    let points = Points {
        handshakes,
        data,
        before_close,
    };
    (cap, points, first)
}

/// Rows (the JSONL text) and the run summary of `analyze` on `input`.
fn analyze(input: &Path, threads: usize) -> (String, Value) {
    analyze_with(input, threads, &[])
}

fn analyze_with(input: &Path, threads: usize, args: &[&str]) -> (String, Value) {
    let dir = input.parent().unwrap();
    let rows = dir.join(format!("rows-{threads}.jsonl"));
    let summary = dir.join(format!("summary-{threads}.json"));
    let out = Command::new(env!("CARGO_BIN_EXE_mcp-trace"))
        .arg("analyze")
        .arg(input)
        .arg("-o")
        .arg(&rows)
        .arg("--summary")
        .arg(&summary)
        .args(["--threads", &threads.to_string(), "--no-progress"])
        .args(args)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let summary = serde_json::from_str(&std::fs::read_to_string(summary).unwrap()).unwrap();
    (std::fs::read_to_string(rows).unwrap(), summary)
}

/// What the TLS stage counted: connections by `decryption`, bytes by fate, anomalies.
fn tls_counts(summary: &Value) -> Value {
    serde_json::json!({
        "connections": summary["tls_connections"],
        "bytes": summary["tls_bytes"],
        "anomalies": summary["anomalies"],
    })
}

/// The capture as a pcapng with `secrets` (rows name their input file: every variant is
/// `capture.pcapng`, each in its own folder).
fn pcapng(cap: &Capture, dir: &Path, secrets: &[(usize, &str)]) -> std::path::PathBuf {
    let path = dir.join("capture.pcapng");
    std::fs::write(&path, cap.to_pcapng(secrets)).unwrap();
    path
}

fn late_secrets_decrypt_the_same(versions: &[&'static rustls::SupportedProtocolVersion]) {
    let s = setup(versions, None, Server::Stateful);
    let (cap, at, first) = two_connections(&s);
    let all = s.secrets.nss(|_, _| false);
    let (mine, theirs) = (
        s.secrets.nss(|i, _| i >= first),
        s.secrets.nss(|i, _| i < first),
    );
    let dir = tempfile::tempdir().unwrap();
    let early = pcapng(&cap, dir.path(), &[(0, &all)]);
    let (want_rows, want) = analyze(&early, 1);
    assert_eq!(want_rows.lines().count(), 4, "{want_rows}");
    assert_eq!(want["tls_connections"]["decrypted"], 2, "{want}");
    // Without waiting (as before it existed), a block after the handshakes comes too late.
    let sub = tempfile::tempdir().unwrap();
    let late = pcapng(&cap, sub.path(), &[(at.handshakes, &all)]);
    let (rows, summary) = analyze_with(&late, 1, &["--max-tls-wait", "0"]);
    assert!(rows.is_empty(), "{rows}");
    assert_eq!(summary["tls_connections"]["no_key"], 2, "{summary}");
    for (what, blocks) in [
        (
            "after the ServerHellos",
            vec![(at.handshakes, all.as_str())],
        ),
        ("after application data", vec![(at.data, all.as_str())]),
        ("before the closes", vec![(at.before_close, all.as_str())]),
        (
            "one connection's secrets, then the other's",
            vec![(at.handshakes, mine.as_str()), (at.data, theirs.as_str())],
        ),
    ] {
        let sub = tempfile::tempdir().unwrap();
        let late = pcapng(&cap, sub.path(), &blocks);
        for threads in [1, 3] {
            let (rows, summary) = analyze(&late, threads);
            assert_eq!(rows, want_rows, "{what}, --threads {threads}");
            assert_eq!(
                tls_counts(&summary),
                tls_counts(&want),
                "{what}, --threads {threads}"
            );
        }
    }

    // Never, or only once the connections ended: what a capture without secrets gives.
    let sub = tempfile::tempdir().unwrap();
    let (none_rows, none) = analyze(&pcapng(&cap, sub.path(), &[]), 1);
    assert!(none_rows.is_empty());
    assert_eq!(none["tls_connections"]["no_key"], 2, "{none}");
    let (pcap_rows, pcap) = analyze(&cap.write(dir.path(), "none.pcap"), 1);
    assert!(pcap_rows.is_empty());
    assert_eq!(tls_counts(&none), tls_counts(&pcap));
    // Past the bound: read without secrets at once, the same, and counted.
    let (rows, small) = analyze_with(
        &pcapng(&cap, sub.path(), &[]),
        1,
        &["--max-tls-wait", "1KiB"],
    );
    assert!(rows.is_empty());
    assert_eq!(small["anomalies"]["tls.key_wait_limit"], 2, "{small}");
    assert_eq!(small["tls_bytes"], pcap["tls_bytes"]);
    assert_eq!(small["tls_connections"], pcap["tls_connections"]);
    let sub = tempfile::tempdir().unwrap();
    let after = pcapng(&cap, sub.path(), &[(cap.frames(), &all)]);
    let (after_rows, after) = analyze(&after, 1);
    assert!(after_rows.is_empty());
    assert_eq!(tls_counts(&after), tls_counts(&pcap));
}

#[test]
fn tls13_secrets_after_the_handshake_decrypt_the_same() {
    late_secrets_decrypt_the_same(&[&rustls::version::TLS13]);
}

#[test]
fn tls12_secrets_after_the_handshake_decrypt_the_same() {
    late_secrets_decrypt_the_same(&[&rustls::version::TLS12]);
}

#[test]
fn only_a_pcapng_input_may_bring_secrets() {
    let s = setup(&[&rustls::version::TLS13], None, Server::Stateful);
    let (cap, _, _) = two_connections(&s);
    let dir = tempfile::tempdir().unwrap();
    let pcap = cap.write(dir.path(), "capture.pcap");
    let ng = pcapng(&cap, dir.path(), &[]);
    let secrets = |paths: &[&Path]| {
        let readers = paths
            .iter()
            .enumerate()
            .map(
                |(i, p)| match mcp_trace::capture::open(p.to_str().unwrap(), i) {
                    Ok(mcp_trace::capture::Source::Packets(r)) => r,
                    _ => panic!("{p:?} is not a packet capture"),
                },
            )
            .collect();
        mcp_trace::capture::Merger::new(readers).secrets()
    };
    assert!(!secrets(&[&pcap]).may_grow(), "no connection waits");
    assert!(secrets(&[&ng]).may_grow());
    assert!(secrets(&[&pcap, &ng]).may_grow());
}
