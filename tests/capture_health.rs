//! What the capture itself missed: `capture_drops` (pcapng Interface Statistics Blocks) and
//! the `capture_loss` estimate (ACKs for data the capture never showed), in the run summary
//! and the terminal summary's "Not analyzed" part.

use crate::support::{Capture, corpus_slice, keylog_beside};
use serde_json::{Value, json};
use std::path::Path;
use std::process::Command;

/// `analyze INPUT --summary`: (run summary, terminal output).
fn summary(input: &Path) -> (Value, String) {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("run.json");
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_mcp-trace"));
    cmd.arg("analyze").arg(input).arg("--summary").arg(&path);
    if let Some(keys) = keylog_beside(input) {
        cmd.arg("--keylog").arg(keys);
    }
    let o = cmd.output().unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let text = std::fs::read_to_string(&path).unwrap();
    (
        serde_json::from_str(&text).unwrap(),
        String::from_utf8(o.stdout).unwrap(),
    )
}

/// Two segments removed from a capture built with the test builders (every data segment
/// acknowledged by the peer, MSS 100). Counted by hand:
/// - client → server, 1000 bytes in 10 segments, segment 3 (bytes 300..400) removed: the
///   server's 10 ACKs each advance (10 ACK events), the one for 300..400 acknowledges
///   bytes never captured (1 gap event);
/// - server → client, 500 bytes in 5 segments, segment 1 removed: 5 ACK events, 1 gap event;
/// - the close: the server's FIN|ACK acknowledges the client's FIN (1 ACK event, the FIN
///   was seen); the client's last ACK arrives after both FINs closed the connection and is
///   not looked at. The handshake's and the data segments' ACKs advance nothing.
///
/// capture_loss = 2 / 16.
#[test]
fn capture_loss_counts_acks_for_removed_segments() {
    let mut cap = Capture::new();
    let mut c = cap.connect(8080);
    c.tcp.mss = 100;
    c.tcp.send_losing(&mut cap, true, &[b'q'; 1000], Some(3));
    c.tcp.send_losing(&mut cap, false, &[b'r'; 500], Some(1));
    cap.close(&mut c, false);
    let dir = tempfile::tempdir().unwrap();
    let path = cap.write(dir.path(), "lossy.pcap");
    let (s, terminal) = summary(&path);
    assert_eq!(
        s["capture_loss_acks"],
        json!({"acks": 16, "acks_above_gap": 2})
    );
    assert_eq!(s["capture_loss"], json!(0.125));
    assert_eq!(s["gap_bytes"], json!(200));
    assert_eq!(
        s["capture_drops"],
        Value::Null,
        "a classic pcap says nothing"
    );
    let not_analyzed = terminal.split("Not analyzed").nth(1).unwrap();
    assert!(
        not_analyzed.contains("capture loss: ACKs for data never captured, 12.50% of 16 ACKs"),
        "{not_analyzed}"
    );
    assert!(!not_analyzed.contains("dropped by the"), "{not_analyzed}");

    // The same conversation with nothing removed: 0, and nothing in the terminal.
    let mut cap = Capture::new();
    let mut c = cap.connect(8080);
    c.tcp.mss = 100;
    cap.send(&mut c, true, &[b'q'; 1000]);
    cap.send(&mut c, false, &[b'r'; 500]);
    cap.close(&mut c, false);
    let path = cap.write(dir.path(), "whole.pcap");
    let (s, terminal) = summary(&path);
    assert_eq!(
        s["capture_loss_acks"],
        json!({"acks": 16, "acks_above_gap": 0})
    );
    assert_eq!(s["capture_loss"], json!(0.0));
    assert!(!terminal.contains("capture loss"));
}

/// Every bundled sample was captured whole: no ACK acknowledges data the capture lacks
/// (`snaplen-200.pcap`'s gaps are the snap length's cut tails, seen on the wire, not loss);
/// a HAR has no TCP, so no estimate.
#[test]
fn bundled_samples_have_no_capture_loss() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("samples");
    let mut checked = 0;
    for entry in std::fs::read_dir(&dir).unwrap() {
        let path = entry.unwrap().path();
        let name = path.file_name().unwrap().to_string_lossy().to_string();
        let (s, _) = if name.ends_with(".pcap") || name.ends_with(".pcapng") {
            summary(&path)
        } else if name.ends_with(".har") {
            let (s, t) = summary(&path);
            assert_eq!(s["capture_loss"], Value::Null, "{name}");
            assert_eq!(s["capture_drops"], Value::Null, "{name}");
            (s, t)
        } else {
            continue;
        };
        if !name.ends_with(".har") {
            assert_eq!(s["capture_loss"], json!(0.0), "{name}");
            assert!(
                s["capture_loss_acks"]["acks"].as_u64().unwrap() > 0,
                "{name}"
            );
        }
        checked += 1;
    }
    assert!(checked >= 40, "{checked} samples");
}

/// dumpcap's Interface Statistics Block in the vendored corpus slice (isb_ifdrop 0, written
/// from pcap_stats' ps_drop): the kernel dropped nothing, the interface drops are not said.
#[test]
fn capture_drops_from_a_dumpcap_pcapng() {
    let (s, terminal) = summary(&corpus_slice(
        "zeek-http/dvwa-pcapng-chunked/cooper-grill-dvwa.pcapng",
    ));
    assert_eq!(s["capture_drops"], json!({"kernel": 0, "interface": null}));
    // Known but zero: not listed among what was not analyzed.
    assert!(!terminal.contains("dropped by the"));
}

/// Zeek traces with one TCP segment missing (MANIFEST.md): `entity_gap.pcap` lacks one
/// 1448-byte segment of a response body, `1000-requests-one-dropped-response` one response.
/// Each gives exactly one ACK above a gap; the ACK totals are as measured (every advancing
/// ACK of the trace), so the share is 1/4 and 1/2159.
#[test]
fn zeek_traces_with_a_missing_segment_show_capture_loss() {
    for (rel, acks) in [
        ("zeek-http/entity-gap/entity_gap.pcap", 4),
        (
            "zeek-http/1000-requests-one-dropped-response/1000-requests-one-dropped-response.pcap.gz",
            2159,
        ),
    ] {
        let (s, terminal) = summary(&corpus_slice(rel));
        assert_eq!(
            s["capture_loss_acks"],
            json!({"acks": acks, "acks_above_gap": 1}),
            "{rel}"
        );
        assert_eq!(s["capture_loss"], json!(1.0 / acks as f64), "{rel}");
        assert!(
            terminal.contains("capture loss: ACKs for data never captured"),
            "{rel}"
        );
    }
}
