//! Stage tests: whole connections through [`TlsStage`], built from RFC 8448's
//! published TLS 1.3 trace and from TLS 1.2 records sealed here with keys
//! derived from a known master secret.

mod corpus;
mod waiting;

use super::cbc::Mac;
use super::cbc::tests::seal as cbc_seal;
use super::cipher::{Aead, AeadKey};
use super::decrypt::tests::{
    RFC8448_CLIENT_DATA, RFC8448_SERVER_DATA, RFC8448_SERVER_FLIGHT, RFC8448_SERVER_NST,
};
use super::facts::reason;
use super::handshake::tests::{CH, SH};
use super::schedule::tests::{
    RFC8448_CLIENT_AP, RFC8448_CLIENT_HS, RFC8448_SERVER_AP, RFC8448_SERVER_HS, hex,
};
use super::schedule::{HashAlg, tls12_key_block, tls13_traffic_keys};
use super::*;
use crate::stream::TlsSummary;
use crate::stream::{CloseReason, GapLen, Side};
use crate::timestamp::CaptureTime;
use arcstr::ArcStr;
use std::collections::BTreeMap;
use std::net::SocketAddr;

const RFC8448_CLIENT_RANDOM: &str =
    "cb34ecb1e78163ba1c38c6dacb196a6dffa21a8d9912ec18a2ef6283024dece7";
/// RFC 8448 section 3 client Finished message.
const RFC8448_CLIENT_FINISHED: &str =
    "14000020a8ec436d677634ae525ac1fcebe11a039ec17694fac6e98527b642f2edd5ce61";

fn ev(stream: u64, ts_us: i64, kind: StreamEventKind) -> StreamEvent {
    StreamEvent {
        stream,
        ts: CaptureTime::from_us(ts_us),
        frame: ts_us as u64,
        kind,
    }
}

fn opened(stream: u64) -> StreamEvent {
    let client: SocketAddr = "10.0.0.1:50000".parse().expect("addr");
    let server: SocketAddr = "10.0.0.2:443".parse().expect("addr");
    ev(
        stream,
        0,
        StreamEventKind::Opened {
            client,
            server,
            saw_syn: true,
            input: 0,
        },
    )
}

fn record(ty: u8, body: &[u8]) -> Vec<u8> {
    let mut v = vec![ty, 3, 3];
    v.extend((body.len() as u16).to_be_bytes());
    v.extend(body);
    v
}

/// TLS 1.3 record sealed under a traffic secret at `seq` (inner type `ty`).
fn seal13(secret: &str, seq: u64, ty: u8, plain: &[u8]) -> Vec<u8> {
    let keys = tls13_traffic_keys(HashAlg::Sha256, &hex(secret), 16).expect("keys");
    let key = AeadKey::new(Aead::Aes128Gcm, &keys.key.0).expect("key");
    let mut nonce = [0u8; 12];
    nonce.copy_from_slice(&keys.iv.0);
    for (n, s) in nonce[4..].iter_mut().zip(seq.to_be_bytes()) {
        *n ^= s;
    }
    let mut inner = plain.to_vec();
    inner.push(ty);
    let header = [23, 3, 3, 0, 0];
    let len = ((inner.len() + 16) as u16).to_be_bytes();
    let header = [header[0], header[1], header[2], len[0], len[1]];
    let mut wire = header.to_vec();
    wire.extend(key.seal(nonce, &header, &inner));
    wire
}

fn rfc8448_keylog() -> KeyLog {
    let mut log = KeyLog::new();
    let text = format!(
        "CLIENT_HANDSHAKE_TRAFFIC_SECRET {r} {RFC8448_CLIENT_HS}\n\
         SERVER_HANDSHAKE_TRAFFIC_SECRET {r} {RFC8448_SERVER_HS}\n\
         CLIENT_TRAFFIC_SECRET_0 {r} {RFC8448_CLIENT_AP}\n\
         SERVER_TRAFFIC_SECRET_0 {r} {RFC8448_SERVER_AP}\n",
        r = RFC8448_CLIENT_RANDOM
    );
    log.add_text("rfc8448.keys", text.as_bytes());
    log
}

/// The RFC 8448 section 3 connection, in the order its records travel.
fn rfc8448_wire() -> Vec<(Side, Vec<u8>)> {
    let mut client_hello = record(22, &hex(CH));
    client_hello[2] = 1; // the RFC's ClientHello record says version 0x0301
    vec![
        (Side::Client, client_hello),
        (Side::Server, {
            let mut r = record(22, &hex(SH));
            r.extend(hex(RFC8448_SERVER_FLIGHT));
            r
        }),
        (
            Side::Client,
            seal13(RFC8448_CLIENT_HS, 0, 22, &hex(RFC8448_CLIENT_FINISHED)),
        ),
        (Side::Server, hex(RFC8448_SERVER_NST)),
        (Side::Client, hex(RFC8448_CLIENT_DATA)),
        (Side::Server, hex(RFC8448_SERVER_DATA)),
    ]
}

struct Run {
    out: Vec<StreamEvent>,
    /// The TLS part of the connection's record, as the `Closed` event carries it.
    tls: TlsSummary,
    stats: TlsCounters,
}

/// The TLS part of the record of each `Closed` event among `out`, by stream.
pub(super) fn summaries(out: &[StreamEvent]) -> BTreeMap<u64, TlsSummary> {
    out.iter()
        .filter_map(|e| match &e.kind {
            StreamEventKind::Closed { record, .. } => Some((e.stream, record.tls.clone())),
            _ => None,
        })
        .collect()
}

impl Run {
    fn data(&self, side: Side) -> Vec<u8> {
        self.out
            .iter()
            .filter_map(|e| match &e.kind {
                StreamEventKind::Data { side: s, bytes } if *s == side => Some(bytes.clone()),
                _ => None,
            })
            .flatten()
            .collect()
    }

    fn data_events(&self) -> usize {
        self.out
            .iter()
            .filter(|e| matches!(e.kind, StreamEventKind::Data { .. }))
            .count()
    }
}

/// Runs one connection's deliveries (side, bytes or gap) through a stage.
fn run_with(stage: &mut TlsStage, stream: u64, deliveries: &[(Side, Option<Vec<u8>>, u64)]) -> Run {
    let mut stats = TlsCounters::default();
    let mut out = Vec::new();
    stage.push(opened(stream), &mut stats, &mut out);
    for (i, (side, bytes, gap)) in deliveries.iter().enumerate() {
        let kind = match bytes {
            Some(b) => StreamEventKind::Data {
                side: *side,
                bytes: b.clone(),
            },
            None => StreamEventKind::Gap {
                side: *side,
                len: GapLen::Bytes(*gap),
            },
        };
        stage.push(ev(stream, i as i64 + 1, kind), &mut stats, &mut out);
    }
    stage.push(
        ev(stream, 1000, StreamEventKind::closed(CloseReason::Finished)),
        &mut stats,
        &mut out,
    );
    let tls = summaries(&out).remove(&stream).expect("a record at Closed");
    assert!(tls.bytes.adds_up(), "byte identity: {:?}", tls.bytes);
    Run { out, tls, stats }
}

fn data_only(wire: Vec<(Side, Vec<u8>)>) -> Vec<(Side, Option<Vec<u8>>, u64)> {
    wire.into_iter().map(|(s, b)| (s, Some(b), 0)).collect()
}

#[test]
fn rfc8448_connection_is_decrypted() {
    let mut stage = TlsStage::new(rfc8448_keylog());
    let run = run_with(&mut stage, 7, &data_only(rfc8448_wire()));
    let fifty: Vec<u8> = (0u8..50).collect();
    assert_eq!(run.data(Side::Client), fifty);
    assert_eq!(run.data(Side::Server), fifty);
    assert_eq!(run.data_events(), 2);
    let r = &run.tls;
    assert_eq!(r.decryption, Decryption::Decrypted);
    assert_eq!(r.decryption.as_str(), "decrypted");
    assert_eq!(r.version.as_deref(), Some("TLS 1.3"));
    assert_eq!(r.cipher.as_deref(), Some("TLS_AES_128_GCM_SHA256"));
    assert_eq!(r.sni.as_deref(), Some("server"));
    assert_eq!(r.resumed, Some(false));
    assert_eq!(r.alpn, None);
    assert_eq!(
        r.client_random
            .map(|r| r.iter().map(|b| format!("{b:02x}")).collect::<String>())
            .as_deref(),
        Some(RFC8448_CLIENT_RANDOM)
    );
    assert_eq!(r.bytes.application, 72 * 2);
    assert_eq!(r.bytes.plaintext_out, 100);
    assert!(r.bytes.undecrypted.is_empty(), "{:?}", r.bytes.undecrypted);
    assert!(run.stats.anomalies.is_empty(), "{:?}", run.stats.anomalies);
    // Lifecycle events pass through.
    assert!(matches!(
        run.out.first().map(|e| &e.kind),
        Some(StreamEventKind::Opened { .. })
    ));
    assert!(matches!(
        run.out.last().map(|e| &e.kind),
        Some(StreamEventKind::Closed { .. })
    ));
    // The HTTP stage learns version and server name once, before the first decrypted data.
    let first_data = run
        .out
        .iter()
        .position(|e| matches!(e.kind, StreamEventKind::Data { .. }))
        .unwrap();
    let decrypted: Vec<usize> = (0..run.out.len())
        .filter(|&i| matches!(run.out[i].kind, StreamEventKind::Decrypted { .. }))
        .collect();
    assert_eq!(decrypted, [first_data - 1]);
    assert_eq!(
        run.out[first_data - 1].kind,
        StreamEventKind::Decrypted {
            version: Some("TLS 1.3".into()),
            sni: Some("server".into()),
        }
    );
    // The connection's record gets the handshake facts as `Closed` passes.
    let record = closed_record(&run);
    assert_eq!(record.tls.decryption.as_str(), "decrypted");
    assert_eq!(record.tls.version.as_deref(), Some("TLS 1.3"));
    assert_eq!(record.tls.cipher.as_deref(), Some("TLS_AES_128_GCM_SHA256"));
    assert_eq!(record.tls.sni.as_deref(), Some("server"));
    assert_eq!(
        (record.tls.alpn.as_deref(), record.tls.resumed),
        (None, Some(false))
    );
}

/// The record the `Closed` event of a run carries.
fn closed_record(run: &Run) -> &crate::stream::ConnectionRecord {
    match run.out.last().map(|e| &e.kind) {
        Some(StreamEventKind::Closed { record, .. }) => record,
        other => panic!("last event {other:?}"),
    }
}

#[test]
fn rfc8448_split_at_every_byte_gives_the_same_plaintext() {
    let wire = rfc8448_wire();
    // Each delivery cut in two at every position (one delivery at a time).
    for (which, (_, bytes)) in wire.iter().enumerate() {
        for cut in 1..bytes.len() {
            let mut deliveries = Vec::new();
            for (i, (side, b)) in wire.iter().enumerate() {
                if i == which {
                    deliveries.push((*side, Some(b[..cut].to_vec()), 0));
                    deliveries.push((*side, Some(b[cut..].to_vec()), 0));
                } else {
                    deliveries.push((*side, Some(b.clone()), 0));
                }
            }
            let run = run_with(&mut TlsStage::new(rfc8448_keylog()), 1, &deliveries);
            assert_eq!(
                run.data(Side::Client).len(),
                50,
                "delivery {which} cut {cut}"
            );
            assert_eq!(
                run.data(Side::Server).len(),
                50,
                "delivery {which} cut {cut}"
            );
            assert_eq!(run.tls.decryption, Decryption::Decrypted);
        }
    }
}

#[test]
fn held_since_is_the_partial_record() {
    let mut stage = TlsStage::new(rfc8448_keylog());
    let mut stats = TlsCounters::default();
    let mut out = Vec::new();
    stage.push(opened(1), &mut stats, &mut out);
    assert_eq!(stage.held_since(), None);
    let ch = rfc8448_wire().remove(0).1;
    stage.push(
        ev(
            1,
            5,
            StreamEventKind::Data {
                side: Side::Client,
                bytes: ch[..2].to_vec(),
            },
        ),
        &mut stats,
        &mut out,
    );
    assert_eq!(
        stage.held_since(),
        Some(CaptureTime::from_us(5)),
        "undecided: the held event"
    );
    stage.push(
        ev(
            1,
            6,
            StreamEventKind::Data {
                side: Side::Client,
                bytes: ch[2..10].to_vec(),
            },
        ),
        &mut stats,
        &mut out,
    );
    assert_eq!(
        stage.held_since(),
        Some(CaptureTime::from_us(5)),
        "the record began at 5"
    );
    stage.push(
        ev(
            1,
            7,
            StreamEventKind::Data {
                side: Side::Client,
                bytes: ch[10..].to_vec(),
            },
        ),
        &mut stats,
        &mut out,
    );
    assert_eq!(stage.held_since(), None);
}

#[test]
fn without_key_nothing_is_handed_on() {
    let run = run_with(
        &mut TlsStage::new(KeyLog::new()),
        2,
        &data_only(rfc8448_wire()),
    );
    assert_eq!(run.data_events(), 0);
    assert_eq!(run.tls.decryption, Decryption::NoKey);
    // Every protected record is undecrypted for want of a key.
    let protected = 679 + 58 + 227 + 72 + 72;
    assert_eq!(
        run.tls.bytes.undecrypted.get(reason::NO_KEY),
        Some(&(protected as u64))
    );
    assert_eq!(run.tls.sni.as_deref(), Some("server"));
    // Not decrypted: no `Decrypted` event, and the record says why, with what is known.
    assert!(
        !run.out
            .iter()
            .any(|e| matches!(e.kind, StreamEventKind::Decrypted { .. }))
    );
    let record = closed_record(&run);
    assert_eq!(record.tls.decryption.as_str(), "no_key");
    assert_eq!(record.tls.version.as_deref(), Some("TLS 1.3"));
    assert_eq!(record.tls.sni.as_deref(), Some("server"));
}

#[test]
fn only_application_secrets_still_decrypt_application_data() {
    let mut log = KeyLog::new();
    let text = format!(
        "CLIENT_TRAFFIC_SECRET_0 {r} {RFC8448_CLIENT_AP}\nSERVER_TRAFFIC_SECRET_0 {r} {RFC8448_SERVER_AP}\n",
        r = RFC8448_CLIENT_RANDOM
    );
    log.add_text("k", text.as_bytes());
    let run = run_with(&mut TlsStage::new(log), 3, &data_only(rfc8448_wire()));
    assert_eq!(run.data(Side::Client).len(), 50);
    assert_eq!(run.data(Side::Server).len(), 50);
    assert_eq!(run.tls.decryption, Decryption::Decrypted);
    // The handshake flights stay undecrypted (their secrets were not logged).
    assert_eq!(
        run.tls.bytes.undecrypted.get(reason::DECRYPT_FAILED),
        Some(&(679 + 58))
    );
}

#[test]
fn capture_without_handshake() {
    let wire: Vec<_> = rfc8448_wire().into_iter().skip(3).collect();
    let run = run_with(&mut TlsStage::new(rfc8448_keylog()), 4, &data_only(wire));
    assert_eq!(run.tls.decryption, Decryption::HandshakeNotCaptured);
    assert_eq!(run.data_events(), 0);
    assert_eq!(
        run.tls
            .bytes
            .undecrypted
            .get(reason::HANDSHAKE_NOT_CAPTURED),
        Some(&(227 + 72 + 72))
    );
}

#[test]
fn plaintext_passes_through_untouched() {
    let deliveries = vec![
        (Side::Client, Some(b"G".to_vec()), 0),
        (Side::Client, Some(b"ET / HTTP/1.1\r\n\r\n".to_vec()), 0),
        (Side::Server, None, 10),
        (Side::Server, Some(b"HTTP/1.1 200 OK\r\n\r\n".to_vec()), 0),
    ];
    let run = run_with(&mut TlsStage::new(KeyLog::new()), 5, &deliveries);
    assert_eq!(run.tls.decryption, Decryption::Plaintext);
    assert_eq!(run.out.len(), 6);
    assert_eq!(run.data(Side::Client), b"GET / HTTP/1.1\r\n\r\n");
    assert!(run.out.iter().any(|e| e.kind
        == StreamEventKind::Gap {
            side: Side::Server,
            len: GapLen::Bytes(10)
        }));
    assert_eq!(run.tls.bytes, TlsBytes::default());
    let record = closed_record(&run);
    assert_eq!(record.tls.decryption.as_str(), "plaintext");
    assert_eq!((&record.tls.version, record.tls.resumed), (&None, None));
}

#[test]
fn empty_connection_is_plaintext() {
    let run = run_with(&mut TlsStage::new(KeyLog::new()), 6, &[]);
    assert_eq!(run.tls.decryption, Decryption::Plaintext);
    assert_eq!(run.out.len(), 2);
}

#[test]
fn gap_inside_application_record_then_resync() {
    // The server's ticket record is cut by a gap: its tail is skipped, the data record
    // after it is found and decrypted at the next sequence number.
    let mut wire = rfc8448_wire();
    let nst = wire.remove(3).1;
    let mut deliveries: Vec<(Side, Option<Vec<u8>>, u64)> = Vec::new();
    for (i, (side, b)) in wire.into_iter().enumerate() {
        if i == 3 {
            deliveries.push((Side::Server, Some(nst[..100].to_vec()), 0));
            deliveries.push((Side::Server, None, 20));
            deliveries.push((Side::Server, Some(nst[120..].to_vec()), 0));
        }
        deliveries.push((side, Some(b), 0));
    }
    let run = run_with(&mut TlsStage::new(rfc8448_keylog()), 8, &deliveries);
    assert_eq!(run.data(Side::Server), (0u8..50).collect::<Vec<_>>());
    assert_eq!(run.tls.decryption, Decryption::Decrypted);
    assert_eq!(
        run.tls.bytes.undecrypted.get(reason::CUT_BY_GAP),
        Some(&(100 + nst.len() as u64 - 120))
    );
    let gaps: Vec<_> = run
        .out
        .iter()
        .filter(|e| matches!(e.kind, StreamEventKind::Gap { .. }))
        .collect();
    assert_eq!(gaps.len(), 1);
    assert_eq!(
        gaps[0].kind,
        StreamEventKind::Gap {
            side: Side::Server,
            len: GapLen::Unknown
        }
    );
}

#[test]
fn tampered_records_fail_and_the_direction_is_given_up() {
    let mut wire = rfc8448_wire();
    let data = wire.pop().expect("server data").1;
    for _ in 0..MAX_FAILURES_IN_ROW + 2 {
        let mut bad = data.clone();
        *bad.last_mut().expect("byte") ^= 0x55;
        wire.push((Side::Server, bad));
    }
    let run = run_with(&mut TlsStage::new(rfc8448_keylog()), 9, &data_only(wire));
    assert_eq!(run.tls.decryption, Decryption::DecryptFailed);
    assert_eq!(
        run.stats.anomalies.get(anomaly::DECRYPT_GAVE_UP.name()),
        Some(&1)
    );
    assert_eq!(
        run.tls.bytes.undecrypted.get(reason::DECRYPT_FAILED),
        Some(&(72 * (u64::from(MAX_FAILURES_IN_ROW) + 2)))
    );
    assert_eq!(
        run.data(Side::Client).len(),
        50,
        "the other direction still decrypts"
    );
}

#[test]
fn record_too_long_and_huge_handshake_are_counted_not_buffered() {
    let mut too_long = vec![22, 3, 3, 0xFF, 0xFF];
    too_long.extend([0u8; 64]);
    let run = run_with(
        &mut TlsStage::new(KeyLog::new()),
        10,
        &[(Side::Client, Some(too_long), 0)],
    );
    assert_eq!(
        run.stats.anomalies.get(anomaly::RECORD_TOO_LONG.name()),
        Some(&1)
    );
    assert_eq!(
        run.tls.bytes.undecrypted.get(reason::NOT_RECORDS),
        Some(&69)
    );
    assert_eq!(run.tls.decryption, Decryption::HandshakeNotCaptured);

    // A ClientHello announcing 16 MB, followed by many records of it.
    let mut deliveries = vec![(
        Side::Client,
        Some(record(22, &[1, 0xFF, 0xFF, 0xFF, 3, 3])),
        0,
    )];
    for _ in 0..100 {
        deliveries.push((Side::Client, Some(record(22, &[0u8; 16000])), 0));
    }
    let run = run_with(&mut TlsStage::new(KeyLog::new()), 11, &deliveries);
    assert_eq!(
        run.stats.anomalies.get(anomaly::HANDSHAKE_TOO_LONG.name()),
        Some(&1)
    );
    assert_eq!(run.tls.bytes.handshake, 11 + 100 * 16005);
}

// ---- TLS 1.2 -------------------------------------------------------------------------

const MASTER: [u8; 48] = [0x42; 48];

struct Tls12 {
    client_random: [u8; 32],
    server_random: [u8; 32],
    suite: u16,
    aead: Aead,
    hash: HashAlg,
    /// AES-CBC instead of the AEAD: key length, MAC, encrypt-then-MAC agreed.
    cbc: Option<(usize, Mac, bool)>,
}

impl Tls12 {
    fn client_hello(&self, session_id: &[u8]) -> Vec<u8> {
        let mut body = vec![3, 3];
        body.extend(self.client_random);
        body.push(session_id.len() as u8);
        body.extend(session_id);
        body.extend([0, 2]);
        body.extend(self.suite.to_be_bytes());
        body.extend([1, 0]);
        // ALPN h2, http/1.1 and SNI example.com.
        let mut exts = vec![0, 16, 0, 14, 0, 12, 2, b'h', b'2', 8];
        exts.extend(b"http/1.1");
        exts.extend([0, 0, 0, 16, 0, 14, 0, 0, 11]);
        exts.extend(b"example.com");
        if self.cbc.is_some_and(|c| c.2) {
            exts.extend([0, 22, 0, 0]);
        }
        body.extend((exts.len() as u16).to_be_bytes());
        body.extend(exts);
        handshake_record(1, &body)
    }

    fn server_hello(&self, session_id: &[u8], full: bool) -> Vec<u8> {
        let mut body = vec![3, 3];
        body.extend(self.server_random);
        body.push(session_id.len() as u8);
        body.extend(session_id);
        body.extend(self.suite.to_be_bytes());
        body.push(0);
        let mut exts = vec![0, 16, 0, 11, 0, 9, 8];
        exts.extend(b"http/1.1");
        if self.cbc.is_some_and(|c| c.2) {
            exts.extend([0, 22, 0, 0]);
        }
        body.extend((exts.len() as u16).to_be_bytes());
        body.extend(exts);
        let mut wire = handshake_record(2, &body);
        if full {
            wire.extend(handshake_record(11, &[0, 0, 0]));
            wire.extend(handshake_record(14, &[]));
        }
        wire
    }

    fn keys(&self, side: Side) -> (AeadKey, Vec<u8>) {
        let iv_len = if self.aead == Aead::ChaCha20Poly1305 {
            12
        } else {
            4
        };
        let kb = tls12_key_block(
            self.hash,
            &MASTER,
            &self.client_random,
            &self.server_random,
            0,
            self.aead.key_len(),
            iv_len,
        );
        let (key, iv) = match side {
            Side::Client => (kb.client_key, kb.client_iv),
            Side::Server => (kb.server_key, kb.server_iv),
        };
        (AeadKey::new(self.aead, &key.0).expect("key"), iv.0)
    }

    fn seal(&self, side: Side, seq: u64, ty: u8, plain: &[u8]) -> Vec<u8> {
        if let Some((key_len, mac, etm)) = self.cbc {
            let kb = tls12_key_block(
                self.hash,
                &MASTER,
                &self.client_random,
                &self.server_random,
                mac.output_len(),
                key_len,
                0,
            );
            let (key, mac_key) = match side {
                Side::Client => (kb.client_key, kb.client_mac),
                Side::Server => (kb.server_key, kb.server_mac),
            };
            let header = [ty, 3, 3, 0, 0];
            let iv = [seq as u8; 16];
            return record(
                ty,
                &cbc_seal(&key.0, mac, &mac_key.0, etm, seq, &header, plain, iv),
            );
        }
        let (key, iv) = self.keys(side);
        let mut aad = seq.to_be_bytes().to_vec();
        aad.extend([ty, 3, 3]);
        aad.extend((plain.len() as u16).to_be_bytes());
        let mut fragment = Vec::new();
        let mut nonce = [0u8; 12];
        if self.aead == Aead::ChaCha20Poly1305 {
            nonce.copy_from_slice(&iv);
            for (n, s) in nonce[4..].iter_mut().zip(seq.to_be_bytes()) {
                *n ^= s;
            }
        } else {
            nonce[..4].copy_from_slice(&iv);
            nonce[4..].copy_from_slice(&seq.to_be_bytes());
            fragment.extend(seq.to_be_bytes());
        }
        fragment.extend(key.seal(nonce, &aad, plain));
        record(ty, &fragment)
    }

    fn keylog(&self) -> KeyLog {
        let mut log = KeyLog::new();
        let hex = |b: &[u8]| b.iter().map(|x| format!("{x:02x}")).collect::<String>();
        log.add_text(
            "k",
            format!(
                "CLIENT_RANDOM {} {}\n",
                hex(&self.client_random),
                hex(&MASTER)
            )
            .as_bytes(),
        );
        log
    }

    /// A full handshake, two requests, two responses.
    fn connection(&self, session_id: &[u8], full: bool) -> Vec<(Side, Option<Vec<u8>>, u64)> {
        // A full handshake: the client offers no id, the server gives one; resumption: echoed.
        let offered: &[u8] = if full { &[] } else { session_id };
        let finished = handshake_record(20, &[7; 12]);
        let ccs = record(20, &[1]);
        let mut server_first = self.server_hello(session_id, full);
        if !full {
            server_first.extend(&ccs);
            server_first.extend(self.seal(Side::Server, 0, 22, &finished[5..]));
        }
        let mut client_finish = ccs.clone();
        client_finish.extend(self.seal(Side::Client, 0, 22, &finished[5..]));
        let mut v = vec![
            (Side::Client, Some(self.client_hello(offered)), 0),
            (Side::Server, Some(server_first), 0),
            (Side::Client, Some(client_finish), 0),
        ];
        let s0 = if full {
            let mut server_finish = ccs.clone();
            server_finish.extend(self.seal(Side::Server, 0, 22, &finished[5..]));
            v.push((Side::Server, Some(server_finish), 0));
            1
        } else {
            1
        };
        v.push((
            Side::Client,
            Some(self.seal(Side::Client, 1, 23, b"GET /a HTTP/1.1\r\n\r\n")),
            0,
        ));
        v.push((
            Side::Server,
            Some(self.seal(Side::Server, s0, 23, b"HTTP/1.1 200 OK\r\n\r\n")),
            0,
        ));
        v.push((
            Side::Client,
            Some(self.seal(Side::Client, 2, 23, b"GET /b HTTP/1.1\r\n\r\n")),
            0,
        ));
        v.push((
            Side::Server,
            Some(self.seal(Side::Server, s0 + 1, 23, b"HTTP/1.1 404 Not Found\r\n\r\n")),
            0,
        ));
        v
    }
}

fn handshake_record(ty: u8, body: &[u8]) -> Vec<u8> {
    let mut msg = vec![ty];
    msg.extend(&(body.len() as u32).to_be_bytes()[1..]);
    msg.extend(body);
    record(22, &msg)
}

fn tls12(suite: u16, aead: Aead, hash: HashAlg) -> Tls12 {
    Tls12 {
        client_random: [0x11; 32],
        server_random: [0x22; 32],
        suite,
        aead,
        hash,
        cbc: None,
    }
}

#[test]
fn tls12_aead_suites_decrypt() {
    for (suite, aead, hash) in [
        (0xC02F, Aead::Aes128Gcm, HashAlg::Sha256),
        (0xC030, Aead::Aes256Gcm, HashAlg::Sha384),
        (0xCCA8, Aead::ChaCha20Poly1305, HashAlg::Sha256),
    ] {
        let t = tls12(suite, aead, hash);
        let run = run_with(
            &mut TlsStage::new(t.keylog()),
            20,
            &t.connection(&[5; 32], true),
        );
        let name = super::cipher::suite_name(suite);
        assert_eq!(run.tls.decryption, Decryption::Decrypted, "{name}");
        assert_eq!(
            run.data(Side::Client),
            b"GET /a HTTP/1.1\r\n\r\nGET /b HTTP/1.1\r\n\r\n",
            "{name}"
        );
        assert_eq!(
            run.data(Side::Server),
            b"HTTP/1.1 200 OK\r\n\r\nHTTP/1.1 404 Not Found\r\n\r\n",
            "{name}"
        );
        let f = &run.tls;
        assert_eq!(f.version.as_deref(), Some("TLS 1.2"));
        assert_eq!(f.cipher.as_deref(), Some(name.as_str()));
        assert_eq!(
            f.alpn_offered,
            [ArcStr::from("h2"), ArcStr::from("http/1.1")]
        );
        assert_eq!(f.alpn.as_deref(), Some("http/1.1"));
        assert_eq!(f.sni.as_deref(), Some("example.com"));
        assert_eq!(f.resumed, Some(false));
        assert!(run.stats.anomalies.is_empty(), "{:?}", run.stats.anomalies);
    }
}

#[test]
fn tls12_cbc_suites_decrypt_with_and_without_encrypt_then_mac() {
    for (suite, key_len, mac, hash, etm) in [
        (0x002F, 16, Mac::Sha1, HashAlg::Sha256, false),
        (0xC014, 32, Mac::Sha1, HashAlg::Sha256, true),
        (0x003C, 16, Mac::Sha256, HashAlg::Sha256, false),
        (0xC028, 32, Mac::Sha384, HashAlg::Sha384, true),
    ] {
        let t = Tls12 {
            cbc: Some((key_len, mac, etm)),
            ..tls12(suite, Aead::Aes128Gcm, hash)
        };
        let run = run_with(
            &mut TlsStage::new(t.keylog()),
            60,
            &t.connection(&[1; 32], true),
        );
        let name = super::cipher::suite_name(suite);
        assert_eq!(
            run.tls.decryption,
            Decryption::Decrypted,
            "{name} etm {etm}"
        );
        assert_eq!(
            run.data(Side::Client),
            b"GET /a HTTP/1.1\r\n\r\nGET /b HTTP/1.1\r\n\r\n",
            "{name}"
        );
        assert_eq!(
            run.data(Side::Server),
            b"HTTP/1.1 200 OK\r\n\r\nHTTP/1.1 404 Not Found\r\n\r\n",
            "{name}"
        );
    }
    // Encrypt-then-MAC offered by the client only is not in effect.
    let t = Tls12 {
        cbc: Some((16, Mac::Sha1, true)),
        ..tls12(0x002F, Aead::Aes128Gcm, HashAlg::Sha256)
    };
    let mut deliveries = t.connection(&[1; 32], true);
    let plain_sh = Tls12 {
        cbc: Some((16, Mac::Sha1, false)),
        ..tls12(0x002F, Aead::Aes128Gcm, HashAlg::Sha256)
    }
    .server_hello(&[1; 32], true);
    deliveries[1] = (Side::Server, Some(plain_sh), 0);
    let run = run_with(&mut TlsStage::new(t.keylog()), 61, &deliveries);
    assert_eq!(
        run.tls.decryption,
        Decryption::DecryptFailed,
        "records sealed with ETM do not open without it"
    );
}

#[test]
fn tls12_resumption_by_session_id_uses_the_earlier_master_secret() {
    let first = tls12(0xC02F, Aead::Aes128Gcm, HashAlg::Sha256);
    let mut stage = TlsStage::new(first.keylog());
    let run = run_with(&mut stage, 30, &first.connection(&[9; 32], true));
    assert_eq!(run.tls.decryption, Decryption::Decrypted);
    // A later connection resumes the session: new randoms, not in the key log.
    let second = Tls12 {
        client_random: [0x33; 32],
        server_random: [0x44; 32],
        ..first
    };
    let run = run_with(&mut stage, 31, &second.connection(&[9; 32], false));
    assert_eq!(run.tls.decryption, Decryption::Decrypted);
    assert_eq!(run.tls.resumed, Some(true));
    assert_eq!(
        run.data(Side::Server),
        b"HTTP/1.1 200 OK\r\n\r\nHTTP/1.1 404 Not Found\r\n\r\n"
    );
    // Without the earlier handshake there is no key.
    let run = run_with(
        &mut TlsStage::new(KeyLog::new()),
        32,
        &second.connection(&[9; 32], false),
    );
    assert_eq!(run.tls.decryption, Decryption::NoKey);
    assert_eq!(run.tls.resumed, Some(true));
}

#[test]
fn tls12_lost_record_is_skipped_by_sequence_search() {
    let t = tls12(0xCCA8, Aead::ChaCha20Poly1305, HashAlg::Sha256);
    let mut deliveries = t.connection(&[], true);
    // The server's first response is lost entirely.
    let lost = deliveries.remove(5).1.expect("bytes").len() as u64;
    deliveries.insert(5, (Side::Server, None, lost));
    let run = run_with(&mut TlsStage::new(t.keylog()), 40, &deliveries);
    assert_eq!(run.data(Side::Server), b"HTTP/1.1 404 Not Found\r\n\r\n");
    assert_eq!(run.tls.decryption, Decryption::Decrypted);
}

#[test]
fn tls12_unsupported_suite_is_named() {
    let t = tls12(0xC0A4, Aead::Aes128Gcm, HashAlg::Sha256);
    let run = run_with(&mut TlsStage::new(t.keylog()), 50, &t.connection(&[], true));
    assert_eq!(run.tls.decryption, Decryption::UnsupportedCipher);
    assert_eq!(run.tls.cipher.as_deref(), Some("TLS_PSK_WITH_AES_128_CCM"));
    assert_eq!(run.data_events(), 0);
    assert!(
        run.tls
            .bytes
            .undecrypted
            .contains_key(reason::UNSUPPORTED_CIPHER)
    );
}

#[test]
fn many_connections_without_key_stay_bounded() {
    // Hostile: connections that never close are held by the stage, so they are closed here
    // as the flow stage does; the stage keeps no state after Closed.
    let t = tls12(0xC02F, Aead::Aes128Gcm, HashAlg::Sha256);
    let deliveries = t.connection(&[], true);
    let mut stage = TlsStage::new(KeyLog::new());
    let mut stats = TlsCounters::default();
    let mut out = Vec::new();
    let started = std::time::Instant::now();
    let n = 100_000u64;
    for stream in 0..n {
        stage.push(opened(stream), &mut stats, &mut out);
        for (side, bytes, _) in &deliveries {
            let kind = StreamEventKind::Data {
                side: *side,
                bytes: bytes.clone().expect("bytes"),
            };
            stage.push(ev(stream, 1, kind), &mut stats, &mut out);
        }
        stage.push(
            ev(stream, 2, StreamEventKind::closed(CloseReason::Finished)),
            &mut stats,
            &mut out,
        );
        assert_eq!(out.len(), 2, "Opened and Closed only");
        assert_eq!(
            summaries(&out).get(&stream).map(|t| t.decryption),
            Some(Decryption::NoKey)
        );
        out.clear();
    }
    assert!(stage.conns.is_empty());
    eprintln!("{n} connections without key: {:?}", started.elapsed());
}

/// A small deterministic generator for the hostile tests below.
struct XorShift(u64);

impl XorShift {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }

    fn below(&mut self, n: usize) -> usize {
        (self.next() % n.max(1) as u64) as usize
    }
}

#[test]
fn mutated_and_random_streams_never_panic_and_add_up() {
    let mut rng = XorShift(0x9E37_79B9_7F4A_7C15);
    let base = rfc8448_wire();
    for round in 0..1500 {
        let mut deliveries: Vec<(Side, Option<Vec<u8>>, u64)> = Vec::new();
        if round % 3 == 0 {
            // Random bytes that start like a record, so the stage reads them as TLS.
            for _ in 0..rng.below(6) + 1 {
                let side = if rng.below(2) == 0 {
                    Side::Client
                } else {
                    Side::Server
                };
                let mut b = vec![22, 3, 3];
                b.extend((0..rng.below(300)).map(|_| rng.next() as u8));
                deliveries.push((side, Some(b), 0));
            }
        } else {
            for (side, bytes) in &base {
                let mut b = bytes.clone();
                for _ in 0..rng.below(3) {
                    let at = rng.below(b.len());
                    b[at] ^= 1 << rng.below(8);
                }
                let cut = rng.below(b.len());
                deliveries.push((*side, Some(b[..cut].to_vec()), 0));
                if rng.below(5) == 0 {
                    deliveries.push((*side, None, rng.below(50) as u64 + 1));
                } else {
                    deliveries.push((*side, Some(b[cut..].to_vec()), 0));
                }
            }
        }
        let keys = if round % 2 == 0 {
            rfc8448_keylog()
        } else {
            KeyLog::new()
        };
        // run_with asserts the byte identity.
        let run = run_with(&mut TlsStage::new(keys), round, &deliveries);
        if run.tls.decryption == Decryption::Plaintext {
            assert!(
                round % 3 != 0,
                "a stream starting with a record header is TLS"
            );
        }
    }
}

#[test]
fn debug_of_a_live_stage_shows_no_secret_and_no_plaintext() {
    let mut stage = TlsStage::new(rfc8448_keylog());
    let mut stats = TlsCounters::default();
    let mut out = Vec::new();
    stage.push(opened(1), &mut stats, &mut out);
    let mut wire = rfc8448_wire();
    // The client's application record cut short: its plaintext is not yet handed on.
    let (_, data) = wire.remove(4);
    for (i, (side, bytes)) in wire.into_iter().take(4).enumerate() {
        stage.push(
            ev(1, i as i64, StreamEventKind::Data { side, bytes }),
            &mut stats,
            &mut out,
        );
    }
    stage.push(
        ev(
            1,
            9,
            StreamEventKind::Data {
                side: Side::Client,
                bytes: data[..30].to_vec(),
            },
        ),
        &mut stats,
        &mut out,
    );
    assert_eq!(
        stage.facts(1).and_then(|f| f.sni.clone()).as_deref(),
        Some("server")
    );
    let shown = format!("{stage:?}").to_lowercase();
    for secret in [
        RFC8448_CLIENT_HS,
        RFC8448_SERVER_HS,
        RFC8448_CLIENT_AP,
        RFC8448_SERVER_AP,
    ] {
        assert!(!shown.contains(&secret[..16]), "secret shown");
        // Nor as decimal bytes, as a derived Debug of a byte array would print them.
        let first = hex(secret);
        let decimal = format!("{}, {}, {}", first[0], first[1], first[2]);
        assert!(!shown.contains(&decimal), "secret bytes shown: {decimal}");
    }
    // The partial record is shown as a size, not as bytes.
    assert!(shown.contains("held: 30"), "{shown}");
}

#[test]
fn key_update_through_the_stage() {
    let next =
        super::schedule::tls13_next_secret(HashAlg::Sha256, &hex(RFC8448_SERVER_AP)).expect("next");
    let next_hex: String = next.0.iter().map(|b| format!("{b:02x}")).collect();
    let mut wire = rfc8448_wire();
    wire.pop(); // the server's data record (seq 1 under the first secret)
    // KeyUpdate(update_not_requested) at seq 1, then data under the next secret from seq 0.
    wire.push((
        Side::Server,
        seal13(RFC8448_SERVER_AP, 1, 22, &[24, 0, 0, 1, 0]),
    ));
    wire.push((Side::Server, seal13(&next_hex, 0, 23, b"after the update")));
    wire.push((Side::Server, seal13(&next_hex, 1, 23, b", and again")));
    let run = run_with(&mut TlsStage::new(rfc8448_keylog()), 70, &data_only(wire));
    assert_eq!(run.data(Side::Server), b"after the update, and again");
    assert_eq!(run.tls.decryption, Decryption::Decrypted);
    assert!(run.tls.bytes.undecrypted.is_empty(), "{:?}", run.tls.bytes);
}

/// Deliveries of a connection, side by side.
type Wire = Vec<(Side, Vec<u8>)>;

/// The RFC 8448 connection, then `n` more server records of application data (seq 2..)
/// as one byte string, and the plaintext they carry.
fn rfc8448_with_server_records(n: u64) -> (Wire, Vec<u8>, Vec<u8>) {
    let wire = rfc8448_wire();
    let mut more = Vec::new();
    let mut plain = Vec::new();
    for i in 0..n {
        let body: Vec<u8> = (0..(i * 97 % 700 + 1)).map(|b| (b + i) as u8).collect();
        more.extend(seal13(RFC8448_SERVER_AP, 2 + i, 23, &body));
        plain.extend(body);
    }
    (wire, more, plain)
}

#[test]
fn records_whole_in_a_delivery_and_records_cut_between_deliveries_give_the_same_plaintext() {
    let (wire, more, plain) = rfc8448_with_server_records(12);
    let mut expected: Vec<u8> = (0u8..50).collect();
    expected.extend(&plain);
    // The extra records re-cut into three deliveries at assorted points: inside a header,
    // inside a fragment, at record boundaries.
    for first_cut in (0..more.len()).step_by(37) {
        for second_cut in [first_cut, (first_cut + 3).min(more.len()), more.len()] {
            let mut deliveries = data_only(wire.clone());
            for part in [
                &more[..first_cut],
                &more[first_cut..second_cut],
                &more[second_cut..],
            ] {
                if !part.is_empty() {
                    deliveries.push((Side::Server, Some(part.to_vec()), 0));
                }
            }
            let run = run_with(&mut TlsStage::new(rfc8448_keylog()), 1, &deliveries);
            assert_eq!(
                run.data(Side::Server),
                expected,
                "cuts {first_cut} {second_cut}"
            );
            assert_eq!(run.tls.decryption, Decryption::Decrypted);
            assert!(
                run.tls.bytes.undecrypted.is_empty(),
                "cuts {first_cut} {second_cut}"
            );
        }
    }
}

#[test]
fn a_record_failing_authentication_in_place_costs_only_itself() {
    let (wire, _, _) = rfc8448_with_server_records(0);
    let good = seal13(RFC8448_SERVER_AP, 2, 23, b"two");
    let mut bad = seal13(RFC8448_SERVER_AP, 3, 23, b"three");
    *bad.last_mut().expect("tag") ^= 1;
    let after = seal13(RFC8448_SERVER_AP, 4, 23, b"four");
    let mut deliveries = data_only(wire);
    let mut one = good.clone();
    one.extend(&bad);
    one.extend(&after);
    deliveries.push((Side::Server, Some(one), 0));
    let run = run_with(&mut TlsStage::new(rfc8448_keylog()), 1, &deliveries);
    let mut expected: Vec<u8> = (0u8..50).collect();
    expected.extend(b"twofour");
    assert_eq!(run.data(Side::Server), expected);
    assert_eq!(
        run.tls.bytes.undecrypted.get(reason::DECRYPT_FAILED),
        Some(&(bad.len() as u64)),
        "{:?}",
        run.tls.bytes
    );
}
