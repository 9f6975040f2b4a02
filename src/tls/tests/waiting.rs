//! Secrets that come after the handshake (`tls/waiting.rs`): a connection holds what it
//! cannot read yet, and hands on exactly what it would have with the secrets from the start;
//! secrets that never come give exactly what they gave before waiting existed; the bounds
//! hold.

use super::*;
use crate::capture::{CaptureSecrets, SecretsBlock};
use crate::tls::keylog;
use crate::tls::waiting::{self, TlsLimits};

type Deliveries = [(Side, Option<Vec<u8>>, u64)];

/// An event as a comparable tuple.
type Seen = (u64, i64, u64, StreamEventKind);

struct Outcome {
    events: Vec<Seen>,
    tls: TlsSummary,
    stats: TlsCounters,
    /// Most bytes held for waiting connections after any event.
    most_held: usize,
}

fn seen(out: &[StreamEvent]) -> Vec<Seen> {
    out.iter()
        .map(|e| (e.stream, e.ts.as_us(), e.frame, e.kind.clone()))
        .collect()
}

fn block(from_frame: u64, text: &str) -> SecretsBlock {
    SecretsBlock {
        from_frame,
        secrets_type: keylog::DSB_TLS_KEY_LOG,
        data: text.as_bytes().to_vec(),
    }
}

/// A stage reading the capture's secrets from `secrets` (waiting on), with `limits`.
fn waiting_stage(secrets: &CaptureSecrets, limits: TlsLimits) -> TlsStage {
    TlsStage::new(KeyLog::new())
        .with_capture_secrets(secrets.clone())
        .with_limits(limits)
}

/// One connection's deliveries (delivery `i` is frame and time `i + 1`) through `stage`;
/// each `(i, text)` of `blocks` is a key log block appended before delivery `i` (after the
/// last: before the end), stamped with that delivery's frame. `close`: the stream ends with
/// `Closed`, else at end of input.
fn run_blocks(
    stage: &mut TlsStage,
    secrets: &CaptureSecrets,
    deliveries: &Deliveries,
    blocks: &[(usize, &str)],
    close: bool,
) -> Outcome {
    let stream = 3;
    let mut stats = TlsCounters::default();
    let mut out = Vec::new();
    let mut most_held = 0;
    stage.push(opened(stream), &mut stats, &mut out);
    for i in 0..=deliveries.len() {
        for (_, text) in blocks.iter().filter(|(at, _)| *at == i) {
            secrets.append(block(i as u64 + 1, text));
        }
        let Some((side, bytes, gap)) = deliveries.get(i) else {
            break;
        };
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
        most_held = most_held.max(stage.waiting_bytes());
    }
    if close {
        let closed = ev(stream, 1000, StreamEventKind::closed(CloseReason::Finished));
        stage.push(closed, &mut stats, &mut out);
    } else {
        stage.finish(&mut stats, &mut out);
    }
    assert_eq!(
        stage.waiting_bytes(),
        0,
        "nothing held once the stream ended"
    );
    assert_eq!(stage.waiting_connections(), 0);
    let tls = summaries(&out).remove(&stream).unwrap_or_else(|| {
        // Ended at end of input: the stage counts it, no Closed event carries a record.
        TlsSummary::default()
    });
    Outcome {
        events: seen(&out),
        tls,
        stats,
        most_held,
    }
}

/// What a stage without waiting gives (the keys of `keylog` known from the start).
fn reference(keylog: KeyLog, deliveries: &Deliveries, close: bool) -> Outcome {
    let secrets = CaptureSecrets::default();
    run_blocks(&mut TlsStage::new(keylog), &secrets, deliveries, &[], close)
}

fn assert_same(got: &Outcome, want: &Outcome, what: &str) {
    assert_eq!(got.events, want.events, "{what}: events");
    assert_eq!(got.tls, want.tls, "{what}: record");
    assert_eq!(got.stats, want.stats, "{what}: counters");
}

fn rfc8448_keylog_text() -> String {
    format!(
        "CLIENT_HANDSHAKE_TRAFFIC_SECRET {r} {RFC8448_CLIENT_HS}\n\
         SERVER_HANDSHAKE_TRAFFIC_SECRET {r} {RFC8448_SERVER_HS}\n\
         CLIENT_TRAFFIC_SECRET_0 {r} {RFC8448_CLIENT_AP}\n\
         SERVER_TRAFFIC_SECRET_0 {r} {RFC8448_SERVER_AP}\n",
        r = RFC8448_CLIENT_RANDOM
    )
}

fn keylog_of(text: &str) -> KeyLog {
    let mut log = KeyLog::new();
    log.add_text("k", text.as_bytes());
    log
}

/// The RFC 8448 connection and `n` more server records (`rfc8448_with_server_records`),
/// one delivery each.
fn rfc8448_long(n: u64) -> Vec<(Side, Option<Vec<u8>>, u64)> {
    let mut deliveries = data_only(rfc8448_wire());
    for i in 0..n {
        let body: Vec<u8> = (0..(i * 97 % 700 + 1)).map(|b| (b + i) as u8).collect();
        let record = seal13(RFC8448_SERVER_AP, 2 + i, 23, &body);
        deliveries.push((Side::Server, Some(record), 0));
    }
    deliveries
}

#[test]
fn tls13_secrets_after_the_handshake_and_after_data_decrypt_all_of_it() {
    let text = rfc8448_keylog_text();
    let deliveries = rfc8448_long(5);
    for close in [true, false] {
        let want = reference(keylog_of(&text), &deliveries, close);
        assert_eq!(want.stats.tls_connections.get("decrypted"), Some(&1));
        // Before the ClientHello, between the hellos, after the ServerHello's flight, after
        // application data both ways, after the last delivery.
        for at in 0..=deliveries.len() {
            let secrets = CaptureSecrets::default();
            let mut stage = waiting_stage(&secrets, TlsLimits::default());
            let got = run_blocks(&mut stage, &secrets, &deliveries, &[(at, &text)], close);
            assert_same(&got, &want, &format!("secrets before delivery {at}"));
            if at >= 2 {
                assert!(got.most_held > 0, "{at}: the connection waited");
            }
        }
    }
}

#[test]
fn tls13_late_secrets_with_every_delivery_cut_at_every_byte() {
    let text = rfc8448_keylog_text();
    let wire = rfc8448_wire();
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
            let want = reference(keylog_of(&text), &deliveries, true);
            let secrets = CaptureSecrets::default();
            let mut stage = waiting_stage(&secrets, TlsLimits::default());
            let last = deliveries.len() - 1;
            let got = run_blocks(&mut stage, &secrets, &deliveries, &[(last, &text)], true);
            assert_same(&got, &want, &format!("delivery {which} cut at {cut}"));
            assert_eq!(got.tls.decryption, Decryption::Decrypted);
        }
    }
}

#[test]
fn tls13_handshake_secrets_first_and_application_secrets_later() {
    let text = rfc8448_keylog_text();
    let lines: Vec<&str> = text.lines().collect();
    let handshake = format!("{}\n{}\n", lines[0], lines[1]);
    let application = format!("{}\n{}\n", lines[2], lines[3]);
    let deliveries = rfc8448_long(3);
    let want = reference(keylog_of(&text), &deliveries, true);
    let secrets = CaptureSecrets::default();
    let mut stage = waiting_stage(&secrets, TlsLimits::default());
    let got = run_blocks(
        &mut stage,
        &secrets,
        &deliveries,
        &[(1, &handshake), (5, &application)],
        true,
    );
    assert_same(&got, &want, "two blocks");
    assert!(got.most_held > 0, "waited for the application secrets");
    // The application secrets never come: what the handshake secrets alone gave.
    let want = reference(keylog_of(&handshake), &deliveries, true);
    let secrets = CaptureSecrets::default();
    let mut stage = waiting_stage(&secrets, TlsLimits::default());
    let got = run_blocks(&mut stage, &secrets, &deliveries, &[(1, &handshake)], true);
    assert_same(&got, &want, "handshake secrets only");
}

fn tls12_keylog_text(t: &Tls12) -> String {
    let hex = |b: &[u8]| b.iter().map(|x| format!("{x:02x}")).collect::<String>();
    format!("CLIENT_RANDOM {} {}\n", hex(&t.client_random), hex(&MASTER))
}

#[test]
fn tls12_full_and_abbreviated_handshakes_with_late_secrets() {
    let t = tls12(0xC02F, Aead::Aes128Gcm, HashAlg::Sha256);
    let resumed = Tls12 {
        client_random: [0x33; 32],
        server_random: [0x44; 32],
        ..tls12(0xC02F, Aead::Aes128Gcm, HashAlg::Sha256)
    };
    for (what, conn, deliveries) in [
        ("full", &t, t.connection(&[5; 32], true)),
        // ServerHello, ChangeCipherSpec and the protected Finished in one delivery.
        ("abbreviated", &resumed, resumed.connection(&[9; 32], false)),
    ] {
        let text = tls12_keylog_text(conn);
        let want = reference(conn.keylog(), &deliveries, true);
        assert_eq!(want.tls.decryption, Decryption::Decrypted, "{what}");
        for at in 0..=deliveries.len() {
            let secrets = CaptureSecrets::default();
            let mut stage = waiting_stage(&secrets, TlsLimits::default());
            let got = run_blocks(&mut stage, &secrets, &deliveries, &[(at, &text)], true);
            assert_same(
                &got,
                &want,
                &format!("{what}: secrets before delivery {at}"),
            );
            if at >= 2 {
                assert!(got.most_held > 0, "{what} {at}: the connection waited");
            }
        }
    }
}

#[test]
fn secrets_that_never_come_give_what_they_gave_without_waiting() {
    let t = tls12(0xCCA8, Aead::ChaCha20Poly1305, HashAlg::Sha256);
    let mut with_gap = t.connection(&[], true);
    let lost = with_gap.remove(5).1.expect("bytes").len() as u64;
    with_gap.insert(5, (Side::Server, None, lost));
    let mut cut_short = rfc8448_long(2);
    let last = cut_short.pop().expect("a record").0;
    cut_short.push((
        last,
        Some(seal13(RFC8448_SERVER_AP, 3, 23, b"cut")[..9].to_vec()),
        0,
    ));
    for (what, deliveries) in [
        ("tls 1.3", rfc8448_long(4)),
        ("tls 1.3, a record cut by the end", cut_short),
        ("tls 1.2", t.connection(&[5; 32], true)),
        ("tls 1.2 with a gap", with_gap),
    ] {
        for close in [true, false] {
            let want = reference(KeyLog::new(), &deliveries, close);
            let secrets = CaptureSecrets::default();
            let mut stage = waiting_stage(&secrets, TlsLimits::default());
            let got = run_blocks(&mut stage, &secrets, &deliveries, &[], close);
            assert_same(&got, &want, what);
            assert!(got.most_held > 0, "{what}: the connection waited");
            if close {
                assert_eq!(got.tls.decryption, Decryption::NoKey, "{what}");
            }
        }
    }
}

#[test]
fn classic_pcap_inputs_wait_for_nothing() {
    let deliveries = rfc8448_long(2);
    let secrets = CaptureSecrets::default();
    secrets.none_to_come();
    let mut stage = waiting_stage(&secrets, TlsLimits::default());
    let got = run_blocks(&mut stage, &secrets, &deliveries, &[], true);
    assert_eq!(got.most_held, 0);
    assert_same(&got, &reference(KeyLog::new(), &deliveries, true), "pcap");
}

#[test]
fn held_since_is_the_delivery_that_began_the_wait() {
    let secrets = CaptureSecrets::default();
    let mut stage = waiting_stage(&secrets, TlsLimits::default());
    let mut stats = TlsCounters::default();
    let mut out = Vec::new();
    stage.push(opened(1), &mut stats, &mut out);
    for (i, (side, bytes)) in rfc8448_wire().into_iter().enumerate() {
        let t = 10 * (i as i64 + 1);
        stage.push(
            ev(1, t, StreamEventKind::Data { side, bytes }),
            &mut stats,
            &mut out,
        );
    }
    assert_eq!(stage.waiting_connections(), 1);
    assert_eq!(stage.held_since(), Some(CaptureTime::from_us(20)));
    secrets.append(block(100, &rfc8448_keylog_text()));
    let next = ev(1, 100, StreamEventKind::Fin { side: Side::Client });
    stage.push(next, &mut stats, &mut out);
    assert_eq!(stage.waiting_connections(), 0);
    assert_eq!(stage.held_since(), None);
    let plaintext: usize = out
        .iter()
        .map(|e| match &e.kind {
            StreamEventKind::Data { bytes, .. } => bytes.len(),
            _ => 0,
        })
        .sum();
    assert_eq!(
        plaintext, 100,
        "both directions' data, once the secrets came"
    );
    // The replayed events came before the event that brought the secrets.
    assert!(matches!(
        out.last().map(|e| &e.kind),
        Some(StreamEventKind::Fin { .. })
    ));
}

/// Server records of `total` bytes of application data (after the RFC 8448 connection's own).
fn rfc8448_flood(total: usize) -> Vec<(Side, Option<Vec<u8>>, u64)> {
    let mut deliveries = data_only(rfc8448_wire());
    let mut sent = 0;
    let mut seq = 2;
    while sent < total {
        let record = seal13(RFC8448_SERVER_AP, seq, 23, &[0x5a; 16_000]);
        sent += record.len();
        seq += 1;
        deliveries.push((Side::Server, Some(record), 0));
    }
    deliveries
}

#[test]
fn a_connection_past_its_bound_is_read_without_secrets_and_counted() {
    let deliveries = rfc8448_flood(2 * waiting::MAX_WAITING_BYTES_PER_CONNECTION);
    let want = reference(KeyLog::new(), &deliveries, true);
    for limits in [
        TlsLimits::default(),
        TlsLimits {
            wait_bytes_per_connection: 64 * 1024,
            ..TlsLimits::default()
        },
    ] {
        let secrets = CaptureSecrets::default();
        let mut stage = waiting_stage(&secrets, limits);
        // The secrets come after the bound was passed: too late.
        let last = deliveries.len();
        let text = rfc8448_keylog_text();
        let mut got = run_blocks(&mut stage, &secrets, &deliveries, &[(last, &text)], true);
        assert!(got.most_held <= limits.wait_bytes_per_connection);
        assert!(got.most_held > limits.wait_bytes_per_connection / 2);
        assert_eq!(
            got.stats.anomalies.get(anomaly::KEY_WAIT_LIMIT.name()),
            Some(&1)
        );
        assert_eq!(got.tls.decryption, Decryption::NoKey);
        got.stats.anomalies = want.stats.anomalies.clone();
        assert_same(&got, &want, "past the bound");
    }
}

#[test]
fn many_waiting_connections_stay_within_the_stage_bound() {
    let limits = TlsLimits {
        wait_bytes_per_connection: 64 * 1024,
        wait_bytes_total: 256 * 1024,
    };
    let secrets = CaptureSecrets::default();
    let mut stage = waiting_stage(&secrets, limits);
    let mut stats = TlsCounters::default();
    let mut out = Vec::new();
    let conns = 40u64;
    // Every connection sends its handshake, then 40 KB of data in records, in turns: each
    // stays under its own bound, together they pass the stage's.
    let deliveries = rfc8448_flood(40 * 1024);
    for stream in 0..conns {
        stage.push(opened(stream), &mut stats, &mut out);
    }
    let mut most = 0;
    for (i, (side, bytes, _)) in deliveries.iter().enumerate() {
        for stream in 0..conns {
            let kind = StreamEventKind::Data {
                side: *side,
                bytes: bytes.clone().expect("bytes"),
            };
            stage.push(ev(stream, i as i64 + 1, kind), &mut stats, &mut out);
            most = most.max(stage.waiting_bytes());
        }
    }
    assert!(most <= limits.wait_bytes_total, "{most}");
    let waiting = stage.waiting_connections() as u64;
    assert!(waiting > 0 && waiting < conns, "{waiting} still waiting");
    assert_eq!(
        stats.anomalies.get(anomaly::KEY_WAIT_LIMIT.name()),
        Some(&(conns - waiting))
    );
    // The secrets come: the connections still waiting decrypt, the others stay `no_key`.
    secrets.append(block(10_000, &rfc8448_keylog_text()));
    for stream in 0..conns {
        let closed = ev(
            stream,
            10_000,
            StreamEventKind::closed(CloseReason::Finished),
        );
        stage.push(closed, &mut stats, &mut out);
    }
    assert_eq!(stage.waiting_bytes(), 0);
    let values: Vec<Decryption> = summaries(&out).values().map(|t| t.decryption).collect();
    let decrypted = values
        .iter()
        .filter(|d| **d == Decryption::Decrypted)
        .count() as u64;
    assert_eq!(decrypted, waiting);
    assert_eq!(values.len() as u64, conns);
    assert!(
        values
            .iter()
            .all(|d| matches!(d, Decryption::Decrypted | Decryption::NoKey))
    );
}

#[test]
fn a_hundred_thousand_waiting_connections_hold_no_more_than_the_stage_bound() {
    // Each holds a little; together they reach the bound and the rest are read without
    // secrets at once.
    let limits = TlsLimits {
        wait_bytes_total: 1 << 20,
        ..TlsLimits::default()
    };
    let secrets = CaptureSecrets::default();
    let mut stage = waiting_stage(&secrets, limits);
    let mut stats = TlsCounters::default();
    let mut out = Vec::new();
    let wire = rfc8448_wire();
    let n = 100_000u64;
    let mut most = 0;
    for stream in 0..n {
        stage.push(opened(stream), &mut stats, &mut out);
        for (side, bytes) in &wire {
            let kind = StreamEventKind::Data {
                side: *side,
                bytes: bytes.clone(),
            };
            stage.push(ev(stream, 1, kind), &mut stats, &mut out);
        }
        most = most.max(stage.waiting_bytes());
        // One read without secrets closes, as the flow stage would close it some time.
        if !stage.conns.get(&stream).is_some_and(|c| c.is_waiting()) {
            let closed = ev(stream, 2, StreamEventKind::closed(CloseReason::Finished));
            stage.push(closed, &mut stats, &mut out);
        }
        out.clear();
    }
    assert!(most <= limits.wait_bytes_total);
    let waiting = stage.waiting_connections() as u64;
    assert!(waiting > 100 && waiting < n, "{waiting}");
    assert_eq!(
        stats.anomalies.get(anomaly::KEY_WAIT_LIMIT.name()),
        Some(&(n - waiting))
    );
    stage.finish(&mut stats, &mut out);
    assert_eq!(stage.waiting_bytes(), 0);
    assert_eq!(stats.tls_connections.get("no_key"), Some(&n));
}
