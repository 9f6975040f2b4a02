//! The public TLS captures of ../shared/corpus/tls (Wireshark's test suite,
//! with their key logs) through capture -> decode -> flow -> TLS: every
//! HTTP/1 request line tshark decrypts is found in the decrypted client bytes,
//! h2 connections start with the client preface, each connection gets the
//! expected `decryption` value and its bytes add up. Wireshark's captures are
//! GPL, so not vendored: the tests are ignored by default and fail when the corpus
//! is absent (`cargo test -- --ignored`).

use crate::capture::{self, Source};
use crate::decode::{Decoded, Decoder};
use crate::flow::{FlowLimits, FlowTable};
use crate::stream::{Side, TlsSummary};
use crate::tls::*;
use std::collections::BTreeMap;

const CORPUS: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/../shared/corpus/tls");

struct Outcome {
    /// Decrypted client bytes per stream.
    client: BTreeMap<u64, Vec<u8>>,
    /// The TLS part of each connection's record, by stream.
    records: BTreeMap<u64, TlsSummary>,
    stats: TlsCounters,
}

fn run(case: &str, capture_file: &str, key_files: &[&str], use_dsb: bool) -> Outcome {
    let dir = format!("{CORPUS}/{case}");
    let path = format!("{dir}/{capture_file}");
    assert!(
        std::path::Path::new(&path).exists(),
        "needs ../shared/corpus: {path} is absent"
    );
    let mut keylog = KeyLog::new();
    for name in key_files {
        let file = std::fs::File::open(format!("{dir}/{name}")).expect("key file");
        keylog
            .read_from(name, std::io::BufReader::new(file))
            .expect("read key file");
    }
    if use_dsb {
        let bytes = std::fs::read(&path).expect("capture");
        let (_, pcapng) = pcap_parser::parse_pcapng(&bytes).expect("pcapng");
        let mut blocks = 0;
        for section in &pcapng.sections {
            for block in &section.blocks {
                if let pcap_parser::pcapng::Block::DecryptionSecrets(dsb) = block {
                    assert!(keylog.add_decryption_secrets("dsb", dsb.secrets_type.0, dsb.data));
                    blocks += 1;
                }
            }
        }
        assert!(blocks > 0, "{case}: no Decryption Secrets Block");
    }
    let Source::Packets(reader) = capture::open(&path, 0).expect("open") else {
        panic!("{path} is not a packet capture");
    };
    let mut stats = TlsCounters::default();
    let mut frames = capture::Merger::new(vec![reader]);
    let mut decoder = Decoder::new();
    let mut table = FlowTable::new(FlowLimits::default());
    let mut stage = TlsStage::new(keylog);
    let mut flow_out = Vec::new();
    let mut out = Vec::new();
    let mut feed =
        |flow_out: &mut Vec<StreamEvent>, stage: &mut TlsStage, stats: &mut TlsCounters| {
            for ev in flow_out.drain(..) {
                stage.push(ev, stats, &mut out);
            }
        };
    let mut flow = crate::flow::FlowCounters::default();
    while let Some(frame) = frames.next_frame(&mut Default::default()) {
        if let Decoded::Segment(seg) = decoder.decode(&frame) {
            table.push(seg, &mut flow, &mut flow_out);
            feed(&mut flow_out, &mut stage, &mut stats);
        }
    }
    table.finish(&mut flow, &mut flow_out);
    feed(&mut flow_out, &mut stage, &mut stats);
    stage.finish(&mut stats, &mut out);
    let mut client: BTreeMap<u64, Vec<u8>> = BTreeMap::new();
    for ev in &out {
        if let StreamEventKind::Data {
            side: Side::Client,
            bytes,
        } = &ev.kind
        {
            client
                .entry(ev.stream)
                .or_default()
                .extend_from_slice(bytes);
        }
    }
    let records = super::summaries(&out);
    for (stream, r) in &records {
        assert!(r.bytes.adds_up(), "{case} stream {stream}: {:?}", r.bytes);
    }
    Outcome {
        client,
        records,
        stats,
    }
}

/// Request lines (`METHOD path`) in decrypted client bytes.
fn request_lines(bytes: &[u8]) -> Vec<(String, String)> {
    let text = String::from_utf8_lossy(bytes);
    text.split('\n')
        .map(|line| line.strip_suffix('\r').unwrap_or(line))
        .filter_map(|line| {
            let mut words = line.split(' ');
            let (method, path, version) = (words.next()?, words.next()?, words.next()?);
            let is_method = !method.is_empty() && method.bytes().all(|b| b.is_ascii_uppercase());
            (is_method && version.starts_with("HTTP/1.") && words.next().is_none())
                .then(|| (method.to_string(), path.to_string()))
        })
        .collect()
}

/// tshark's HTTP/1 requests (stream, method, path) from expected.jsonl.
fn expected_requests(case: &str) -> Vec<(u64, String, String)> {
    let text =
        std::fs::read_to_string(format!("{CORPUS}/{case}/expected.jsonl")).expect("expected.jsonl");
    text.lines()
        .map(|l| serde_json::from_str::<serde_json::Value>(l).expect("json"))
        .filter(|v| v["proto"] == "h1")
        .map(|v| {
            (
                v["tcp_stream"].as_u64().expect("stream"),
                v["method"].as_str().expect("method").to_string(),
                v["path"].as_str().expect("path").to_string(),
            )
        })
        .collect()
}

fn found_requests(o: &Outcome) -> Vec<(u64, String, String)> {
    o.client
        .iter()
        .flat_map(|(stream, bytes)| {
            request_lines(bytes)
                .into_iter()
                .map(move |(m, p)| (*stream, m, p))
        })
        .collect()
}

fn decryptions(o: &Outcome) -> Vec<&'static str> {
    o.records.values().map(|r| r.decryption.as_str()).collect()
}

#[test]
#[ignore = "needs ../shared/corpus"]
fn tls13_rfc8446_full_handshake_and_0rtt_resumption() {
    let o = run(
        "tls13-rfc8446",
        "tls13-rfc8446.pcap",
        &["tls13-rfc8446.keys"],
        false,
    );
    assert_eq!(found_requests(&o), expected_requests("tls13-rfc8446"));
    assert_eq!(decryptions(&o), vec!["decrypted", "decrypted"]);
    let resumed: Vec<_> = o.records.values().map(|r| r.resumed).collect();
    assert_eq!(resumed, vec![Some(false), Some(true)]);
    assert!(
        o.records
            .values()
            .all(|r| r.version.as_deref() == Some("TLS 1.3"))
    );
    assert!(
        o.records.values().all(|r| r.bytes.undecrypted.is_empty()),
        "{:?}",
        o.records
    );
    assert!(
        o.stats
            .anomalies
            .by_name()
            .keys()
            .all(|k| !k.starts_with("tls.")),
        "{:?}",
        o.stats.anomalies
    );
}

#[test]
#[ignore = "needs ../shared/corpus"]
fn tls13_rfc8446_without_early_secret_skips_only_the_0rtt_request() {
    let o = run(
        "tls13-rfc8446",
        "tls13-rfc8446.pcap",
        &["tls13-rfc8446-noearly.keys"],
        false,
    );
    let want: Vec<_> = expected_requests("tls13-rfc8446")
        .into_iter()
        .filter(|r| r.2 != "/early")
        .collect();
    assert_eq!(found_requests(&o), want);
    assert_eq!(decryptions(&o), vec!["decrypted", "decrypted"]);
    let early = o
        .records
        .get(&1)
        .and_then(|r| r.bytes.undecrypted.get(facts::reason::NO_EARLY_KEY));
    assert!(early.is_some_and(|n| *n > 0), "{:?}", o.records.get(&1));
}

#[test]
#[ignore = "needs ../shared/corpus"]
fn tls13_draft20_chacha20() {
    let case = "tls13-20-chacha20poly1305";
    let o = run(
        case,
        "tls13-20-chacha20poly1305.pcap",
        &["tls13-20-chacha20poly1305.keys"],
        false,
    );
    assert_eq!(found_requests(&o), expected_requests(case));
    assert_eq!(decryptions(&o), vec!["decrypted", "decrypted"]);
    let r = o.records.get(&0).expect("stream 0");
    assert_eq!(r.version.as_deref(), Some("TLS 1.3 (draft 20)"));
    assert_eq!(r.cipher.as_deref(), Some("TLS_CHACHA20_POLY1305_SHA256"));
}

#[test]
#[ignore = "needs ../shared/corpus"]
fn tls12_chacha20_seven_suites() {
    let case = "tls12-chacha20poly1305";
    let o = run(
        case,
        "tls12-chacha20poly1305.pcap",
        &["tls12-chacha20poly1305.keys"],
        false,
    );
    assert_eq!(found_requests(&o), expected_requests(case));
    assert_eq!(decryptions(&o), vec!["decrypted"; 7]);
    let suites: Vec<_> = o
        .records
        .values()
        .filter_map(|r| r.cipher.as_deref())
        .collect();
    let want = [0xcca9, 0xcca8, 0xccaa, 0xccae, 0xccad, 0xccac, 0xccab].map(cipher::suite_name);
    assert_eq!(suites, want);
}

#[test]
#[ignore = "needs ../shared/corpus"]
fn tls12_secrets_from_decryption_secrets_blocks() {
    let o = run("tls12-dsb", "tls12-dsb.pcapng", &[], true);
    assert_eq!(found_requests(&o), expected_requests("tls12-dsb"));
    assert_eq!(decryptions(&o), vec!["decrypted", "decrypted"]);
    let r = o.records.get(&0).expect("stream 0");
    assert_eq!(r.alpn.as_deref(), Some("http/1.1"));
    assert_eq!(r.sni.as_deref(), Some("example.com"));
}

#[test]
#[ignore = "needs ../shared/corpus"]
fn tls12_aes256gcm_psk() {
    let case = "tls12-aes256gcm-psk";
    let o = run(
        case,
        "tls12-aes256gcm.pcap",
        &["tls12-aes256gcm.tshark-exported.keys"],
        false,
    );
    assert_eq!(found_requests(&o), expected_requests(case));
    assert_eq!(decryptions(&o), vec!["decrypted"]);
}

#[test]
#[ignore = "needs ../shared/corpus"]
fn h2_over_tls12_starts_with_the_preface() {
    for (case, file, keys, dsb) in [
        (
            "http2-data-reassembly",
            "http2-data-reassembly.pcap",
            &["http2-data-reassembly.keys"][..],
            false,
        ),
        ("http2-brotli", "http2-brotli.pcapng", &[][..], true),
        (
            "http2-follow-multistream",
            "http2_follow_multistream.pcapng",
            &[][..],
            true,
        ),
    ] {
        let o = run(case, file, keys, dsb);
        assert_eq!(decryptions(&o), vec!["decrypted"], "{case}");
        let r = o.records.get(&0).expect("stream 0");
        assert_eq!(r.alpn.as_deref(), Some("h2"), "{case}");
        let client = o.client.get(&0).expect("client bytes");
        assert!(
            client.starts_with(b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n"),
            "{case}"
        );
    }
}

#[test]
#[ignore = "needs ../shared/corpus"]
fn tls12_cbc_suites_decrypt() {
    for (case, file, keys, suite) in [
        (
            "rsa-p-lt-q",
            "rsa-p-lt-q.pcap",
            "rsa-p-lt-q.tshark-exported.keys",
            "TLS_RSA_WITH_AES_256_CBC_SHA",
        ),
        // Five handshakes on one connection, the later ones under the previous keys.
        (
            "tls-renegotiation",
            "tls-renegotiation.pcap",
            "tls-renegotiation.tshark-exported.keys",
            "TLS_RSA_WITH_AES_128_CBC_SHA",
        ),
    ] {
        let o = run(case, file, &[keys], false);
        assert_eq!(found_requests(&o), expected_requests(case), "{case}");
        assert_eq!(decryptions(&o), vec!["decrypted"], "{case}");
        let r = o.records.values().next().expect("a connection");
        assert_eq!(r.cipher.as_deref(), Some(suite), "{case}");
        assert!(r.bytes.undecrypted.is_empty(), "{case}: {:?}", r.bytes);
    }
}

#[test]
#[ignore = "needs ../shared/corpus"]
fn ccm_tls10_and_ssl3_captures_are_unsupported_with_the_suite_name() {
    for (case, file, keys, suite) in [
        (
            "dhe1",
            "dhe1.pcapng.gz",
            "dhe1_keylog.dat",
            "TLS_DHE_RSA_WITH_AES_256_CBC_SHA",
        ),
        (
            "tls12-aes128ccm-psk",
            "tls12-aes128ccm.pcap",
            "tls12-aes128ccm.tshark-exported.keys",
            "TLS_PSK_WITH_AES_128_CCM",
        ),
    ] {
        let o = run(case, file, &[keys], false);
        assert_eq!(decryptions(&o), vec!["unsupported_cipher"], "{case}");
        let r = o.records.values().next().expect("a connection");
        assert_eq!(r.cipher.as_deref(), Some(suite), "{case}");
        assert!(o.client.is_empty(), "{case}: nothing handed on");
    }
    let o = run(
        "rsasnakeoil2",
        "rsasnakeoil2.pcap",
        &["rsasnakeoil2.tshark-exported.keys"],
        false,
    );
    assert_eq!(
        decryptions(&o),
        vec!["unsupported_cipher", "unsupported_cipher"]
    );
    assert!(
        o.records
            .values()
            .all(|r| r.version.as_deref() == Some("SSL 3.0"))
    );
}
