//! The run summary (`--summary`, report-schema.md section 5): one JSON object with the
//! run's counters, so scripts can check what was read, what was skipped and why.

use super::hops::HopTally;
use crate::capture::{CaptureDrops, InputInfo};
use crate::mcp::retry::Finding;
use crate::mcp::{Exchange, Layer, Outcome, RetryOrigin};
use crate::report::RunStats;
use crate::stream::Decryption;
use serde_json::{Map, Value, json};
use std::collections::BTreeMap;

/// Version of the output contract; bumped when a column is renamed or removed.
pub const SCHEMA_VERSION: &str = "1";

/// Everything a summary is made of.
#[derive(Debug, Clone, Copy)]
pub struct RunInfo<'a> {
    pub inputs: &'a [InputInfo],
    pub stats: &'a RunStats,
    /// Every exchange of the run (not the filtered rows).
    pub rows: &'a [&'a Exchange],
    /// Wall-clock seconds the run took.
    pub elapsed_s: f64,
    /// Bytes read from all inputs.
    pub bytes_read: u64,
    /// TLS connections not decrypted, for the terminal summary.
    pub undecrypted: &'a super::Undecrypted,
}

impl RunInfo<'_> {
    /// Input megabytes (10^6 bytes) per second; 0 when no time elapsed.
    pub fn throughput_mb_s(&self) -> f64 {
        if self.elapsed_s > 0.0 && self.elapsed_s.is_finite() {
            self.bytes_read as f64 / 1e6 / self.elapsed_s
        } else {
            0.0
        }
    }
}

impl RunInfo<'_> {
    /// Drops the inputs' capture statistics report, summed; unknown members stay `None`.
    pub fn capture_drops(&self) -> CaptureDrops {
        let mut all = CaptureDrops::default();
        for i in self.inputs {
            all.add(&i.drops);
        }
        all
    }

    /// The capture-loss estimate: the share of advancing ACKs that acknowledged sequence
    /// space the capture never showed (Zeek's `capture-loss` method); `None` without any
    /// such ACK (no TCP data was acknowledged, a HAR).
    pub fn capture_loss(&self) -> Option<f64> {
        let f = &self.stats.flow;
        (f.ack_events > 0).then(|| f.ack_gap_events as f64 / f.ack_events as f64)
    }
}

/// Rows per outcome: every section 3 outcome (zero included, so the keys are stable).
pub(crate) fn outcome_counts(outcomes: impl IntoIterator<Item = Outcome>) -> BTreeMap<String, u64> {
    let mut counts = [0u64; Outcome::ALL.len()];
    for outcome in outcomes {
        if let Some(n) = counts.get_mut(outcome.index()) {
            *n = n.saturating_add(1);
        }
    }
    Outcome::ALL
        .iter()
        .zip(counts)
        .map(|(o, n)| (o.name().to_string(), n))
        .collect()
}

/// Rows per layer (the four layers always present).
pub(crate) fn layer_counts(layers: impl IntoIterator<Item = Layer>) -> BTreeMap<String, u64> {
    let mut counts = [0u64; Layer::ALL.len()];
    for layer in layers {
        if let Some(n) = counts.get_mut(layer.index()) {
            *n = n.saturating_add(1);
        }
    }
    Layer::ALL
        .iter()
        .zip(counts)
        .map(|(l, n)| (l.name().to_string(), n))
        .collect()
}

/// Rows per retry-hygiene finding (all six names present).
pub(crate) fn finding_counts(rows: &[&Exchange]) -> BTreeMap<String, u64> {
    let mut counts: BTreeMap<String, u64> = Finding::ALL
        .iter()
        .map(|f| (f.name().to_string(), 0))
        .collect();
    for r in rows {
        for f in r.retry_findings.iter() {
            if let Some(n) = counts.get_mut(f.name()) {
                *n = n.saturating_add(1);
            }
        }
    }
    counts
}

fn count_map<K: AsRef<str>>(m: &BTreeMap<K, u64>) -> Value {
    Value::Object(
        m.iter()
            .map(|(k, v)| (k.as_ref().to_string(), json!(v)))
            .collect(),
    )
}

/// The run summary as a JSON object. Keys of section 5 plus every other [`RunStats`] counter,
/// `mcp_exchanges_total`, `layers`, `sessions`, `retries` and `bytes_read`.
pub fn run_summary(info: &RunInfo) -> Value {
    let s = info.stats;
    let mut retries = BTreeMap::new();
    for origin in RetryOrigin::ALL {
        if origin != RetryOrigin::None {
            retries.insert(origin.name().to_string(), 0u64);
        }
    }
    for r in info.rows {
        if let Some(n) = retries.get_mut(r.retry_origin.name()) {
            *n = n.saturating_add(1);
        }
    }
    let sessions: std::collections::HashSet<&str> =
        info.rows.iter().map(|r| r.session_key.as_str()).collect();
    let inputs: Vec<Value> = info
        .inputs
        .iter()
        .map(|i| {
            json!({
                "name": i.name,
                "bytes": i.bytes,
                "format": i.format,
                "link_types": i.link_types,
                "gzip": i.gzip,
                "error": i.error,
            })
        })
        .collect();
    let mut m = Map::new();
    m.insert("schema_version".into(), json!(SCHEMA_VERSION));
    m.insert("inputs".into(), Value::Array(inputs));
    m.insert("packets_total".into(), json!(s.capture.packets_total));
    m.insert("packets_decoded".into(), json!(s.capture.packets_decoded));
    m.insert(
        "packets_skipped".into(),
        count_map(&s.capture.packets_skipped.by_name()),
    );
    m.insert(
        "packets_skipped_total".into(),
        json!(s.packets_skipped_total()),
    );
    m.insert(
        "packets_truncated".into(),
        json!(s.capture.packets_truncated),
    );
    m.insert("tcp_streams".into(), json!(s.flow.tcp_streams));
    m.insert(
        "tcp_payload_bytes_seen".into(),
        json!(s.flow.tcp_payload_bytes_seen),
    );
    m.insert("tcp_payload_bytes".into(), json!(s.flow.tcp_payload_bytes));
    m.insert("duplicate_bytes".into(), json!(s.flow.duplicate_bytes));
    m.insert(
        "tcp_bytes_unused".into(),
        count_map(&s.flow.tcp_bytes_unused.by_name()),
    );
    m.insert("gap_bytes".into(), json!(s.flow.gap_bytes));
    m.insert("http_messages".into(), json!(s.http.http_messages));
    m.insert(
        "http_messages_parsed".into(),
        json!(s.http.http_messages_parsed),
    );
    m.insert(
        "http_messages_skipped".into(),
        count_map(&s.http.http_messages_skipped.by_name()),
    );
    m.insert("http_exchanges".into(), json!(s.http.http_exchanges));
    m.insert("non_http_streams".into(), json!(s.http.non_http_streams));
    m.insert(
        "http_bytes_skipped".into(),
        json!(s.http.http_bytes_skipped),
    );
    m.insert(
        "mcp_exchanges".into(),
        count_map(&outcome_counts(info.rows.iter().map(|r| r.outcome))),
    );
    m.insert("mcp_exchanges_total".into(), json!(info.rows.len()));
    m.insert(
        "layers".into(),
        count_map(&layer_counts(info.rows.iter().map(|r| r.layer))),
    );
    m.insert("sessions".into(), json!(sessions.len()));
    m.insert("retries".into(), count_map(&retries));
    m.insert(
        "retry_findings".into(),
        count_map(&finding_counts(info.rows)),
    );
    HopTally::of(info.rows.iter().copied()).fill(&mut m);
    m.insert("anomalies".into(), count_map(&s.anomalies()));
    let mut tls: BTreeMap<String, u64> = Decryption::ALL
        .iter()
        .map(|d| (d.as_str().to_string(), 0))
        .collect();
    for (name, n) in &s.tls.tls_connections {
        *tls.entry(name.to_string()).or_default() += n;
    }
    m.insert("tls_connections".into(), count_map(&tls));
    // received = handshake + application + sum(undecrypted), for TLS connections.
    m.insert(
        "tls_bytes".into(),
        json!({
            "received": s.tls.tls_bytes_received,
            "handshake": s.tls.tls_bytes_handshake,
            "application": s.tls.tls_bytes_application,
            "undecrypted": count_map(&s.tls.tls_bytes_undecrypted),
        }),
    );
    m.insert(
        "keylog".into(),
        json!({
            "malformed_lines": s.tls.keylog_malformed_lines,
            "malformed_at": s.tls.keylog_malformed_at,
        }),
    );
    let drops = info.capture_drops();
    m.insert(
        "capture_drops".into(),
        if drops.is_unknown() {
            Value::Null
        } else {
            json!(drops)
        },
    );
    m.insert(
        "capture_loss".into(),
        json!(info.capture_loss().map(finite)),
    );
    m.insert(
        "capture_loss_acks".into(),
        json!({
            "acks": s.flow.ack_events,
            "acks_above_gap": s.flow.ack_gap_events,
        }),
    );
    m.insert("bytes_read".into(), json!(info.bytes_read));
    m.insert("elapsed_s".into(), json!(finite(info.elapsed_s)));
    m.insert(
        "throughput_mb_s".into(),
        json!(finite(info.throughput_mb_s())),
    );
    Value::Object(m)
}

fn finite(v: f64) -> f64 {
    if v.is_finite() { v } else { 0.0 }
}

#[cfg(test)]
pub(crate) mod tests {
    use super::super::test_rows::ex;
    use super::*;
    use crate::anomaly::{Anomaly, SkipReason};

    pub(crate) fn stats() -> RunStats {
        let mut s = RunStats::default();
        s.capture.packets_total = 10;
        s.capture.packets_decoded = 7;
        s.flow.tcp_streams = 2;
        s.flow.tcp_payload_bytes = 5000;
        s.flow.gap_bytes = 120;
        s.http.http_exchanges = 4;
        s.capture.skip(SkipReason::NotTcp);
        s.capture.skip(SkipReason::NotTcp);
        s.capture.skip(SkipReason::Malformed);
        s.flow.anomaly(Anomaly::FlowOverlapMismatch);
        s
    }

    pub(crate) fn inputs() -> Vec<InputInfo> {
        vec![InputInfo {
            name: "cap.pcap".into(),
            bytes: 2_000_000,
            format: crate::capture::InputFormat::Pcap,
            link_types: vec![1],
            gzip: false,
            error: None,
            drops: CaptureDrops::default(),
        }]
    }

    #[test]
    fn section_5_keys_and_counts() {
        let stats = stats();
        let inputs = inputs();
        let mut rows = [ex(1, 0), ex(2, 1), ex(3, 2)];
        rows[1].outcome = Outcome::HttpError;
        rows[1].layer = Layer::Transport;
        rows[2].retry_origin = RetryOrigin::Sdk;
        rows[2].retry_findings = [Finding::UnsafeRetry, Finding::NoBackoff]
            .into_iter()
            .collect();
        let info = RunInfo {
            undecrypted: &crate::report::NO_UNDECRYPTED,
            inputs: &inputs,
            stats: &stats,
            rows: &rows.iter().collect::<Vec<_>>(),
            elapsed_s: 0.5,
            bytes_read: 2_000_000,
        };
        let v = run_summary(&info);
        for key in [
            "schema_version",
            "inputs",
            "packets_total",
            "packets_decoded",
            "packets_skipped",
            "tcp_streams",
            "tcp_payload_bytes",
            "gap_bytes",
            "http_exchanges",
            "mcp_exchanges",
            "anomalies",
            "elapsed_s",
            "throughput_mb_s",
        ] {
            assert!(v.get(key).is_some(), "missing {key}");
        }
        assert_eq!(v["schema_version"], "1");
        assert_eq!(v["inputs"][0]["name"], "cap.pcap");
        assert_eq!(v["inputs"][0]["link_types"][0], 1);
        assert_eq!(v["packets_skipped"]["not_tcp"], 2);
        // The identity the summary promises.
        let skipped: u64 = v["packets_skipped"]
            .as_object()
            .unwrap()
            .values()
            .map(|n| n.as_u64().unwrap())
            .sum();
        assert_eq!(
            v["packets_total"].as_u64().unwrap(),
            v["packets_decoded"].as_u64().unwrap() + skipped
        );
        assert_eq!(v["mcp_exchanges"]["TOOL_SUCCESS"], 2);
        assert_eq!(v["mcp_exchanges"]["HTTP_ERROR"], 1);
        assert_eq!(v["mcp_exchanges"]["CANCELLED"], 0);
        assert_eq!(v["mcp_exchanges"].as_object().unwrap().len(), 16);
        assert_eq!(v["layers"]["transport"], 1);
        assert_eq!(v["retries"]["sdk"], 1);
        assert_eq!(v["retry_findings"]["unsafe_retry"], 1);
        assert_eq!(v["retry_findings"]["no_backoff"], 1);
        assert_eq!(v["retry_findings"]["too_many_attempts"], 0);
        assert_eq!(v["retry_findings"].as_object().unwrap().len(), 6);
        assert_eq!(v["anomalies"]["flow.overlap_mismatch"], 1);
        assert_eq!(v["throughput_mb_s"], 4.0);
        assert_eq!(v["sessions"], 1);
        // A classic pcap says nothing about drops; no ACK was counted, so no estimate.
        assert_eq!(v["capture_drops"], Value::Null);
        assert_eq!(v["capture_loss"], Value::Null);
        assert_eq!(
            v["capture_loss_acks"],
            json!({"acks": 0, "acks_above_gap": 0})
        );
    }

    #[test]
    fn zero_elapsed_gives_zero_throughput() {
        let stats = RunStats::default();
        let info = RunInfo {
            undecrypted: &crate::report::NO_UNDECRYPTED,
            inputs: &[],
            stats: &stats,
            rows: &[],
            elapsed_s: 0.0,
            bytes_read: 10,
        };
        assert_eq!(run_summary(&info)["throughput_mb_s"], 0.0);
    }
}
