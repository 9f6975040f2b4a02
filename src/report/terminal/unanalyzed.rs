//! Damage: what could not be analyzed (skipped packets, gaps, anomalies).

use super::MAX_LIST_ROWS;
use super::paint::*;
use crate::report::summary::RunInfo;
use std::fmt::Write as _;

pub(super) fn write_unanalyzed(p: Painter, out: &mut String, info: &RunInfo) {
    p.heading(out, "Not analyzed");
    let s = info.stats;
    let mut facts: Vec<Vec<Text>> = Vec::new();
    let mut fact = |what: String, n: u64, unit: &str| {
        if n > 0 {
            facts.push(vec![
                plain(what),
                Text(n.to_string(), Style::Warn),
                plain(unit),
            ]);
        }
    };
    for (reason, n) in &s.capture.packets_skipped.by_name() {
        fact(format!("skipped: {reason}"), *n, "packets");
    }
    fact(
        "truncated by snap length (used as far as they go)".into(),
        s.capture.packets_truncated,
        "packets",
    );
    fact("gaps in TCP streams".into(), s.flow.gap_bytes, "bytes");
    for (reason, n) in &s.flow.tcp_bytes_unused.by_name() {
        fact(
            format!("TCP payload not stream data: {reason}"),
            *n,
            "bytes",
        );
    }
    let drops = info.capture_drops();
    fact(
        "dropped by the kernel (capture statistics)".into(),
        drops.kernel.unwrap_or(0),
        "packets",
    );
    fact(
        "dropped by the interface (capture statistics)".into(),
        drops.interface.unwrap_or(0),
        "packets",
    );
    if let Some(loss) = info.capture_loss().filter(|l| *l > 0.0) {
        fact(
            format!(
                "capture loss: ACKs for data never captured, {:.2}% of {} ACKs",
                loss * 100.0,
                s.flow.ack_events
            ),
            s.flow.ack_gap_events,
            "ACKs",
        );
    }
    for (reason, n) in &s.http.http_messages_skipped.by_name() {
        fact(format!("HTTP heads skipped: {reason}"), *n, "messages");
    }
    fact(
        "retransmitted or overlapping".into(),
        s.flow.duplicate_bytes,
        "bytes",
    );
    fact(
        "TCP streams that were not HTTP".into(),
        s.http.non_http_streams,
        "streams",
    );
    fact(
        "skipped while resynchronising HTTP".into(),
        s.http.http_bytes_skipped,
        "bytes",
    );
    for (decryption, n) in &s.tls.tls_connections {
        if !matches!(*decryption, "plaintext" | "decrypted") {
            fact(
                format!("TLS not decrypted: {decryption}"),
                *n,
                "connections",
            );
        }
    }
    let listed = &info.undecrypted.listed;
    for (reason, n) in &s.tls.tls_bytes_undecrypted {
        fact(format!("TLS bytes not decrypted: {reason}"), *n, "bytes");
    }
    let at = match s.tls.keylog_malformed_at.as_slice() {
        [] => String::new(),
        lines => format!(" ({})", lines.join(", ")),
    };
    fact(
        format!("key log lines malformed, skipped{at}"),
        s.tls.keylog_malformed_lines,
        "lines",
    );
    let anomalies = s.anomalies();
    let more_anomalies = anomalies.len().saturating_sub(MAX_LIST_ROWS);
    for (name, n) in anomalies.iter().take(MAX_LIST_ROWS) {
        fact(format!("anomaly {name}"), *n, "times");
    }
    for i in info.inputs {
        if let Some(e) = &i.error {
            facts.push(vec![
                plain(format!("{}: {e}", i.name)),
                plain(""),
                plain(""),
            ]);
        }
    }
    if facts.is_empty() {
        out.push_str("  nothing: every packet was used\n");
        return;
    }
    p.table(
        out,
        &["what", "count", "unit"],
        &[false, true, false],
        &facts,
    );
    if more_anomalies > 0 {
        let _ = writeln!(
            out,
            "  ... and {more_anomalies} more anomaly names (see --summary)"
        );
    }
    if !listed.is_empty() {
        out.push_str("  TLS connections not decrypted:\n");
        let rows: Vec<Vec<Text>> = listed
            .iter()
            .map(|c| {
                vec![
                    plain(c.tcp_stream.to_string()),
                    plain(format!("{} → {}", c.client_addr, c.server_addr)),
                    plain(c.tls_sni.as_deref().unwrap_or("-").to_string()),
                    plain(c.tls_version.as_deref().unwrap_or("-").to_string()),
                    Text(c.decryption.as_str().to_string(), Style::Warn),
                ]
            })
            .collect();
        p.table(
            out,
            &["tcp_stream", "client → server", "SNI", "TLS", "reason"],
            &[true, false, false, false, false],
            &rows,
        );
        let more = info.undecrypted.more();
        if more > 0 {
            let _ = writeln!(out, "  ... and {more} more (see --connections)");
        }
    }
}
