//! Run-wide accounting shared by every stage: packet and byte counters and
//! named anomalies (`stage.condition`, e.g. `flow.overlap_mismatch`).
//!
//! Identities the run summary promises:
//! - `packets_total = packets_decoded + sum(packets_skipped)`;
//! - `tcp_payload_bytes_seen = tcp_payload_bytes + duplicate_bytes + sum(tcp_bytes_unused)`
//!   (gap bytes are sequence space never captured, so they are not among the bytes seen);
//! - `http_messages = http_messages_parsed + sum(http_messages_skipped)`;
//! - `tls_bytes_received = tls_bytes_handshake + tls_bytes_application + sum(tls_bytes_undecrypted)`.

use serde::Serialize;
use std::collections::BTreeMap;

/// Counters for one run. Every stage receives `&mut Stats`.
#[derive(Debug, Default, Clone, Serialize)]
pub struct Stats {
    /// Every packet record read from every input.
    pub packets_total: u64,
    /// Packets decoded down to a TCP segment (or an IP fragment that was held for reassembly).
    pub packets_decoded: u64,
    /// Packets not used, by reason (`link_type`, `not_ip`, `not_tcp`, `malformed`, `truncated`, ...).
    pub packets_skipped: BTreeMap<String, u64>,
    /// Frames cut short by the snap length (still used as far as they go).
    pub packets_truncated: u64,
    /// TCP streams (connections) seen, including port reuse.
    pub tcp_streams: u64,
    /// Captured TCP payload bytes of every segment given to the flow stage.
    pub tcp_payload_bytes_seen: u64,
    /// TCP payload bytes delivered in order to the HTTP stage.
    pub tcp_payload_bytes: u64,
    /// Payload bytes seen more than once (retransmissions, overlaps) and dropped.
    pub duplicate_bytes: u64,
    /// Bytes of sequence space never seen (reported as gaps).
    pub gap_bytes: u64,
    /// Captured payload bytes that cannot be stream data, by reason (`before_stream_start`,
    /// `out_of_window`, `after_fin`, `after_close`, `rst_payload`).
    pub tcp_bytes_unused: BTreeMap<String, u64>,
    /// HTTP message heads the HTTP stage began to read (requests and responses, 1xx included).
    pub http_messages: u64,
    /// Heads parsed into a request or a response (some cut short, with an anomaly on the row).
    pub http_messages_parsed: u64,
    /// Heads begun but not usable, by reason (`head_too_large`, `bad_head`, `cut_by_gap`,
    /// `unfinished`).
    pub http_messages_skipped: BTreeMap<String, u64>,
    /// HTTP request/response exchanges reconstructed.
    pub http_exchanges: u64,
    /// TCP streams whose payload was not HTTP.
    pub non_http_streams: u64,
    /// Bytes skipped by the HTTP stage while resynchronising.
    pub http_bytes_skipped: u64,
    /// Anomalies by name.
    pub anomalies: BTreeMap<String, u64>,
    /// TCP connections by the TLS stage's `decryption` value (`plaintext` included).
    pub tls_connections: BTreeMap<String, u64>,
    /// Stream bytes of TLS connections given to the TLS stage.
    pub tls_bytes_received: u64,
    /// Of those, TLS protocol records (handshake, change cipher spec, alerts).
    pub tls_bytes_handshake: u64,
    /// Of those, application data records decrypted.
    pub tls_bytes_application: u64,
    /// Of those, bytes not decrypted, by reason.
    pub tls_bytes_undecrypted: BTreeMap<String, u64>,
    /// Key log lines that are not `LABEL <hex> <hex>` (skipped).
    pub keylog_malformed_lines: u64,
    /// Where the first of them are, as `file:line` (never the line itself).
    pub keylog_malformed_at: Vec<String>,
}

impl Stats {
    /// Count one packet skipped for `reason`.
    pub fn skip(&mut self, reason: &str) {
        *self.packets_skipped.entry(reason.to_string()).or_default() += 1;
    }

    /// Count one occurrence of the anomaly `name`.
    pub fn anomaly(&mut self, name: &str) {
        *self.anomalies.entry(name.to_string()).or_default() += 1;
    }

    /// Count `n` captured TCP payload bytes that cannot be stream data, for `reason`.
    pub fn unused_tcp_bytes(&mut self, reason: &str, n: u64) {
        if n > 0 {
            let count = self.tcp_bytes_unused.entry(reason.to_string()).or_default();
            *count = count.saturating_add(n);
        }
    }

    /// Count one HTTP message head begun but not usable, for `reason`.
    pub fn skip_http_message(&mut self, reason: &str) {
        *self
            .http_messages_skipped
            .entry(reason.to_string())
            .or_default() += 1;
    }

    /// Sum of all skipped packets.
    pub fn packets_skipped_total(&self) -> u64 {
        self.packets_skipped.values().sum()
    }

    /// Adds `other`'s counts to these (a worker thread's stats into the run's).
    pub fn merge(&mut self, other: &Stats) {
        // Destructured so that a new counter cannot be left out here.
        let Stats {
            packets_total,
            packets_decoded,
            packets_skipped,
            packets_truncated,
            tcp_streams,
            tcp_payload_bytes_seen,
            tcp_payload_bytes,
            duplicate_bytes,
            gap_bytes,
            tcp_bytes_unused,
            http_messages,
            http_messages_parsed,
            http_messages_skipped,
            http_exchanges,
            non_http_streams,
            http_bytes_skipped,
            anomalies,
            tls_connections,
            tls_bytes_received,
            tls_bytes_handshake,
            tls_bytes_application,
            tls_bytes_undecrypted,
            keylog_malformed_lines,
            keylog_malformed_at,
        } = other;
        for (mine, theirs) in [
            (&mut self.packets_total, packets_total),
            (&mut self.packets_decoded, packets_decoded),
            (&mut self.packets_truncated, packets_truncated),
            (&mut self.tcp_streams, tcp_streams),
            (&mut self.tcp_payload_bytes_seen, tcp_payload_bytes_seen),
            (&mut self.tcp_payload_bytes, tcp_payload_bytes),
            (&mut self.http_messages, http_messages),
            (&mut self.http_messages_parsed, http_messages_parsed),
            (&mut self.duplicate_bytes, duplicate_bytes),
            (&mut self.gap_bytes, gap_bytes),
            (&mut self.http_exchanges, http_exchanges),
            (&mut self.non_http_streams, non_http_streams),
            (&mut self.http_bytes_skipped, http_bytes_skipped),
            (&mut self.tls_bytes_received, tls_bytes_received),
            (&mut self.tls_bytes_handshake, tls_bytes_handshake),
            (&mut self.tls_bytes_application, tls_bytes_application),
            (&mut self.keylog_malformed_lines, keylog_malformed_lines),
        ] {
            *mine = mine.saturating_add(*theirs);
        }
        for (mine, theirs) in [
            (&mut self.packets_skipped, packets_skipped),
            (&mut self.tcp_bytes_unused, tcp_bytes_unused),
            (&mut self.http_messages_skipped, http_messages_skipped),
            (&mut self.anomalies, anomalies),
            (&mut self.tls_connections, tls_connections),
            (&mut self.tls_bytes_undecrypted, tls_bytes_undecrypted),
        ] {
            for (name, n) in theirs {
                let count = mine.entry(name.clone()).or_default();
                *count = count.saturating_add(*n);
            }
        }
        self.keylog_malformed_at
            .extend(keylog_malformed_at.iter().cloned());
    }
}
