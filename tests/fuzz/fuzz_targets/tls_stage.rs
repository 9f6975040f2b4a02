//! TLS stage (records, handshake, key schedule, decryption, resynchronisation):
//! a conversation of client and server deliveries, gaps, FIN and RST on 2 streams,
//! with a key log from the input (seeds: the TLS samples' streams and key logs).
#![no_main]
use libfuzzer_sys::fuzz_target;
use mcp_trace::tls::TlsCounters;
use mcp_trace::capture::{CaptureSecrets, SecretsBlock};
use mcp_trace::stream::{Decryption, Side, StreamEvent, StreamEventKind, TlsSummary};
use mcp_trace::tls::{KeyLog, TlsStage, keylog::DSB_TLS_KEY_LOG};
use std::collections::HashMap;

/// Per stream and side: bytes in, bytes out.
#[derive(Default)]
struct Flow {
    data_in: [Vec<u8>; 2],
    data_out: [Vec<u8>; 2],
    opened: usize,
    closed: usize,
    after_close: bool,
}

fn side_index(side: Side) -> usize {
    match side {
        Side::Client => 0,
        Side::Server => 1,
    }
}

fuzz_target!(|data: &[u8]| {
    let input = mcp_trace_fuzz::tls_input(data);
    let mut stage = if input.as_capture_secrets {
        let secrets = CaptureSecrets::default();
        secrets.append(SecretsBlock {
            from_frame: 0,
            secrets_type: DSB_TLS_KEY_LOG,
            data: input.keylog_text.clone(),
        });
        TlsStage::new(KeyLog::new()).with_capture_secrets(secrets)
    } else {
        let mut keylog = KeyLog::new();
        keylog.add_text("fuzz", &input.keylog_text);
        TlsStage::new(keylog)
    };
    let mut stats = TlsCounters::default();
    let mut out: Vec<StreamEvent> = Vec::new();
    let mut flows: HashMap<u64, Flow> = HashMap::new();
    for ev in input.events {
        if let StreamEventKind::Data { side, bytes } = &ev.kind {
            let flow = flows.entry(ev.stream).or_default();
            flow.data_in[side_index(*side)].extend_from_slice(bytes);
        }
        stage.push(ev, &mut stats, &mut out);
    }
    stage.finish(&mut stats, &mut out);

    for ev in &out {
        let flow = flows.entry(ev.stream).or_default();
        assert!(!flow.after_close, "event after Closed: {:?}", ev.kind);
        match &ev.kind {
            StreamEventKind::Opened { .. } => {
                assert_eq!(flow.opened, 0, "stream opened twice");
                flow.opened += 1;
            }
            StreamEventKind::Closed { .. } => {
                flow.closed += 1;
                flow.after_close = true;
            }
            StreamEventKind::Data { side, bytes } => {
                assert!(flow.opened == 1, "data before Opened");
                assert!(!bytes.is_empty(), "empty Data event");
                flow.data_out[side_index(*side)].extend_from_slice(bytes);
            }
            _ => assert!(flow.opened == 1, "event before Opened"),
        }
    }

    // The TLS part of each connection's record, as its `Closed` event carries it.
    let records: Vec<(u64, &TlsSummary)> = out
        .iter()
        .filter_map(|e| match &e.kind {
            StreamEventKind::Closed { record, .. } => Some((e.stream, &record.tls)),
            _ => None,
        })
        .collect();
    let debug = format!("{records:?} {stats:?}");
    for secret in &input.made_up_secrets {
        assert!(!debug.contains(secret.as_str()), "a secret in the records");
    }
    for stream in 0..2u64 {
        let flow = flows.remove(&stream).unwrap_or_default();
        assert_eq!((flow.opened, flow.closed), (1, 1), "stream {stream} open/close");
        let mine: Vec<_> = records.iter().filter(|(s, _)| *s == stream).collect();
        assert_eq!(mine.len(), 1, "stream {stream}: {} records", mine.len());
        let report = mine[0].1;
        let received: usize = flow.data_in.iter().map(Vec::len).sum();
        let handed_on: usize = flow.data_out.iter().map(Vec::len).sum();
        match report.decryption {
            // Not TLS: every byte passes unchanged.
            Decryption::Plaintext => assert_eq!(flow.data_in, flow.data_out, "plaintext changed"),
            other => {
                let b = &report.bytes;
                assert!(b.adds_up(), "stream {stream}: bytes do not add up: {b:?}");
                assert_eq!(b.received, received as u64, "received bytes");
                assert_eq!(b.plaintext_out, handed_on as u64, "plaintext handed on");
                // Nothing guessed: plaintext only from records that decrypted (each shorter
                // than its record), none without a ClientHello. (The value names the worst
                // that happened: 0-RTT data decrypted before a ServerHello that never came
                // is `handshake_not_captured`, a TLS 1.2 renegotiation without keys `no_key`.)
                assert!(b.plaintext_out <= b.application, "more plaintext than records: {b:?}");
                if other == Decryption::HandshakeNotCaptured && report.client_random.is_none() {
                    assert_eq!(handed_on, 0, "{other:?} handed on plaintext");
                }
            }
        }
    }
    let counted: u64 = stats.tls_connections.values().sum();
    assert_eq!(counted, 2, "connections counted: {:?}", stats.tls_connections);
});
