//! Run-wide accounting shared by every stage: packet and byte counters and
//! named anomalies (`stage.condition`, e.g. `flow.overlap_mismatch`).
//!
//! Identities the run summary promises:
//! `packets_total = packets_decoded + sum(packets_skipped)`.

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
    /// TCP payload bytes delivered in order to the HTTP stage.
    pub tcp_payload_bytes: u64,
    /// Payload bytes seen more than once (retransmissions, overlaps) and dropped.
    pub duplicate_bytes: u64,
    /// Bytes of sequence space never seen (reported as gaps).
    pub gap_bytes: u64,
    /// HTTP request/response exchanges reconstructed.
    pub http_exchanges: u64,
    /// TCP streams whose payload was not HTTP.
    pub non_http_streams: u64,
    /// Bytes skipped by the HTTP stage while resynchronising.
    pub http_bytes_skipped: u64,
    /// Anomalies by name.
    pub anomalies: BTreeMap<String, u64>,
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

    /// Sum of all skipped packets.
    pub fn packets_skipped_total(&self) -> u64 {
        self.packets_skipped.values().sum()
    }
}
