use super::*;
use crate::tcp::*;
use mcp_trace::anomaly::Stats;
use mcp_trace::capture::{self, Source};
use mcp_trace::decode::{Decoded, Decoder};
use mcp_trace::flow::{FlowLimits, FlowTable, Side, StreamEvent, StreamEventKind};
use mcp_trace::tls::{ConnectionReport, Decryption, KeyLog, TlsStage};

#[test]
fn checksums_verify() {
    let a = Dir {
        ip: [127, 0, 0, 2],
        port: 40000,
        seq: 7,
        shift: 0,
    };
    let b = Dir {
        ip: SERVER_IP,
        port: SERVER_PORT,
        seq: 9,
        shift: 0,
    };
    let f = frame(&a, &b, 7, 9, ACK | PSH, b"hello", MSS);
    // A header with its checksum in place sums to 0xffff (RFC 1071).
    assert_eq!(checksum_fold(checksum_add(0, &f[14..34])), 0);
    let mut pseudo = Vec::from([127, 0, 0, 2, 127, 0, 0, 1, 0, 6, 0, 25]);
    pseudo.extend_from_slice(&f[34..]);
    assert_eq!(checksum_fold(checksum_add(0, &pseudo)), 0);
    assert_eq!(f.len(), 14 + 20 + 20 + 5);
}

#[test]
fn same_seed_same_bytes_and_truth() {
    let dir = tempfile::tempdir().unwrap();
    let p1 = dir.path().join("a.pcap");
    let p2 = dir.path().join("b.pcap");
    run(p1.to_str().unwrap(), 1, 7, 20, false).unwrap();
    run(p2.to_str().unwrap(), 1, 7, 20, false).unwrap();
    assert_eq!(std::fs::read(&p1).unwrap(), std::fs::read(&p2).unwrap());
    let t: serde_json::Value =
        serde_json::from_slice(&std::fs::read(dir.path().join("a.truth.json")).unwrap()).unwrap();
    let outcomes = t["mcp_exchanges"].as_object().unwrap();
    let sum: u64 = outcomes.values().map(|v| v.as_u64().unwrap()).sum();
    assert_eq!(sum, t["requests"].as_u64().unwrap());
    assert!(t["bytes"].as_u64().unwrap() >= 1_000_000);
    // One `notifications/initialized` per session at most (the run may stop
    // between a client's initialize and its notification); one resend per error at most.
    let sessions = t["sessions"].as_u64().unwrap();
    assert!(sessions >= 10, "{t}");
    assert!(outcomes["ACCEPTED"].as_u64().unwrap() <= sessions);
    assert!(t["retries"]["sdk"].as_u64().unwrap() <= outcomes["HTTP_ERROR"].as_u64().unwrap());
}

/// Bytes each stream hands on, per side ([client, server]), after the flow stage and,
/// with a key log, the TLS stage; with the TLS stage's reports and the run's counters.
struct Streams {
    bytes: BTreeMap<u64, [Vec<u8>; 2]>,
    gaps: u64,
    reports: Vec<ConnectionReport>,
    stats: Stats,
}

fn through_stages(path: &std::path::Path, keys: Option<&std::path::Path>) -> Streams {
    let Source::Packets(reader) = capture::open(path.to_str().unwrap(), 0).unwrap() else {
        panic!("{} is not a packet capture", path.display());
    };
    let mut stage = keys.map(|k| {
        let mut log = KeyLog::new();
        log.read_from("keys", std::io::BufReader::new(File::open(k).unwrap()))
            .unwrap();
        TlsStage::new(log)
    });
    let mut stats = Stats::default();
    let mut frames = capture::Merger::new(vec![reader]);
    let mut decoder = Decoder::new();
    let mut table = FlowTable::new(FlowLimits::default());
    let (mut flow_out, mut out) = (Vec::new(), Vec::new());
    let mut pass =
        |flow_out: &mut Vec<StreamEvent>, out: &mut Vec<StreamEvent>, stats: &mut Stats| {
            for ev in flow_out.drain(..) {
                match stage.as_mut() {
                    Some(s) => s.push(ev, stats, out),
                    None => out.push(ev),
                }
            }
        };
    while let Some(frame) = frames.next_frame(&mut stats) {
        if let Decoded::Segment(seg) = decoder.decode(&frame) {
            table.push(seg, &mut stats, &mut flow_out);
            pass(&mut flow_out, &mut out, &mut stats);
        }
    }
    table.finish(&mut stats, &mut flow_out);
    pass(&mut flow_out, &mut out, &mut stats);
    let mut reports = Vec::new();
    if let Some(s) = stage.as_mut() {
        s.finish(&mut stats, &mut out);
        reports = s.take_reports();
    }
    let mut streams = Streams {
        bytes: BTreeMap::new(),
        gaps: 0,
        reports,
        stats,
    };
    for ev in out {
        let sides = streams.bytes.entry(ev.stream).or_default();
        match ev.kind {
            StreamEventKind::Data { side, bytes } => {
                sides[usize::from(side == Side::Server)].extend_from_slice(&bytes);
            }
            StreamEventKind::Gap { .. } => streams.gaps += 1,
            _ => {}
        }
    }
    streams
}

/// The TLS capture decrypts, connection by connection, to the plaintext capture's bytes.
#[test]
fn tls_capture_decrypts_to_the_plaintext_capture() {
    let dir = tempfile::tempdir().unwrap();
    let (plain, tls) = (dir.path().join("p.pcap"), dir.path().join("t.pcap"));
    run(plain.to_str().unwrap(), 2, 11, 30, false).unwrap();
    run(tls.to_str().unwrap(), 2, 11, 30, true).unwrap();
    let keys = dir.path().join("t.keys");

    let want = through_stages(&plain, None);
    let got = through_stages(&tls, Some(&keys));
    assert_eq!((want.gaps, got.gaps), (0, 0));
    assert!(want.bytes.len() >= 30, "{} streams", want.bytes.len());
    assert_eq!(
        want.bytes.keys().collect::<Vec<_>>(),
        got.bytes.keys().collect::<Vec<_>>()
    );
    for (stream, sides) in &want.bytes {
        assert!(
            got.bytes[stream] == *sides,
            "stream {stream}: decrypted bytes differ from the plaintext capture's"
        );
    }
    // Every connection with traffic is TLS 1.3 as generated, decrypted, its bytes
    // accounted for; the stage reports nothing wrong.
    let with_data = want.bytes.values().filter(|s| !s[0].is_empty()).count();
    assert_eq!(got.reports.len(), want.bytes.len());
    let mut decrypted = 0;
    for r in &got.reports {
        if want.bytes[&r.stream][0].is_empty() {
            continue;
        }
        assert_eq!(r.decryption, Decryption::Decrypted, "stream {}", r.stream);
        assert!(
            r.bytes.adds_up() && r.bytes.undecrypted.is_empty(),
            "{:?}",
            r.bytes
        );
        let f = &r.facts;
        assert_eq!(
            (
                f.version,
                f.cipher_suite,
                f.sni.as_deref(),
                f.alpn.as_deref()
            ),
            (
                Some(0x0304),
                Some(0x1301),
                Some("bench.local"),
                Some("http/1.1")
            )
        );
        decrypted += 1;
    }
    assert_eq!(decrypted, with_data);
    assert!(
        !got.stats.anomalies.keys().any(|k| k.starts_with("tls.")),
        "{:?}",
        got.stats.anomalies
    );
    // The two captures carry the same packets but for the TLS-only ones.
    assert_eq!(
        want.stats.tcp_payload_bytes,
        want.bytes
            .values()
            .map(|s| (s[0].len() + s[1].len()) as u64)
            .sum::<u64>()
    );
    assert!(got.stats.packets_total > want.stats.packets_total);
}

#[test]
fn tls_truth_is_the_plaintext_truth_and_the_run_repeats() {
    let dir = tempfile::tempdir().unwrap();
    let path = |name: &str| dir.path().join(name).to_str().unwrap().to_string();
    run(&path("p.pcap"), 1, 4, 12, false).unwrap();
    run(&path("t.pcap"), 1, 4, 12, true).unwrap();
    run(&path("u.pcap"), 1, 4, 12, true).unwrap();
    let read = |name: &str| std::fs::read(path(name)).unwrap();
    assert_eq!(read("t.pcap"), read("u.pcap"));
    assert_eq!(read("t.keys"), read("u.keys"));
    let truth = |name: &str| {
        let mut t: serde_json::Value = serde_json::from_slice(&read(name)).unwrap();
        let t = t.as_object_mut().unwrap();
        let sizes = (t.remove("bytes").unwrap(), t.remove("packets").unwrap());
        (t.remove("tls"), sizes, t.clone())
    };
    let (plain_tls, plain_sizes, plain) = truth("p.truth.json");
    let (tls_tls, tls_sizes, tls) = truth("t.truth.json");
    assert_eq!(plain, tls);
    assert_eq!(plain_tls, None);
    assert_eq!(tls_tls.unwrap(), "TLS 1.3 TLS_AES_128_GCM_SHA256");
    assert!(tls_sizes.0.as_u64() > plain_sizes.0.as_u64());
    // Four secrets per TCP connection.
    let keys = String::from_utf8(read("t.keys")).unwrap();
    assert_eq!(
        keys.lines().count() as u64,
        4 * plain["tcp_connections"].as_u64().unwrap()
    );
}
