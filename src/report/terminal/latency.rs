//! Latency percentiles per method.

use super::MAX_LIST_ROWS;
use super::SummaryRow;
use super::paint::*;
use std::collections::BTreeMap;
use std::fmt::Write as _;

pub(super) fn write_latency(p: Painter, out: &mut String, rows: &[&SummaryRow]) {
    p.heading(out, "Latency by method");
    let mut by_method: BTreeMap<&str, Vec<f64>> = BTreeMap::new();
    for r in rows {
        if let (Some(m), Some(l)) = (r.rpc_method.as_deref(), r.latency_ms)
            && l.is_finite()
        {
            by_method.entry(m).or_default().push(l);
        }
    }
    if by_method.is_empty() {
        out.push_str("  no completed requests\n");
        return;
    }
    let mut methods: Vec<(&str, Vec<f64>)> = by_method.into_iter().collect();
    methods.sort_by(|a, b| b.1.len().cmp(&a.1.len()).then(a.0.cmp(b.0)));
    let more = methods.len().saturating_sub(MAX_LIST_ROWS);
    let table: Vec<Vec<Text>> = methods
        .iter_mut()
        .take(MAX_LIST_ROWS)
        .map(|(m, v)| {
            v.sort_by(f64::total_cmp);
            let pct = |q| percentile(v, q).map_or_else(String::new, fmt_ms);
            vec![
                plain(*m),
                plain(v.len().to_string()),
                plain(pct(50.0)),
                plain(pct(90.0)),
                plain(pct(99.0)),
                plain(v.last().copied().map_or_else(String::new, fmt_ms)),
            ]
        })
        .collect();
    p.table(
        out,
        &["method", "n", "p50", "p90", "p99", "max"],
        &[false, true, true, true, true, true],
        &table,
    );
    if more > 0 {
        let _ = writeln!(out, "  ... and {more} more methods");
    }
}
