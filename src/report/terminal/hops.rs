//! The "Hops" part: per gateway, the calls it forwarded and where their failures arose.

use super::MAX_LIST_ROWS;
use super::paint::*;
use crate::report::HopTally;
use std::fmt::Write as _;

pub(super) fn write_hops(p: Painter, out: &mut String, tally: &HopTally) {
    if !tally.has_hops() {
        return;
    }
    p.heading(
        out,
        "Hops (calls seen on several legs; counts above are per call)",
    );
    let more = tally.gateways.len().saturating_sub(MAX_LIST_ROWS);
    let table: Vec<Vec<Text>> = tally
        .gateways
        .iter()
        .take(MAX_LIST_ROWS)
        .map(|(gateway, g)| {
            let mut added = g.added_ms.clone();
            added.sort_by(f64::total_cmp);
            let pct = |q| percentile(&added, q).map_or_else(String::new, fmt_ms);
            let bad = |n: u64| {
                if n > 0 {
                    Text(n.to_string(), Style::Bad)
                } else {
                    plain("0")
                }
            };
            vec![
                plain(clean(gateway)),
                plain(g.calls.to_string()),
                plain(g.copies.to_string()),
                bad(g.gateway_retries),
                bad(g.faults_at_gateway),
                bad(g.faults_upstream),
                bad(g.translated),
                plain(pct(50.0)),
                plain(pct(90.0)),
                plain(pct(99.0)),
            ]
        })
        .collect();
    p.table(
        out,
        &[
            "gateway",
            "calls",
            "copies",
            "gw retries",
            "failed at gw",
            "failed upstream",
            "translated",
            "added p50",
            "p90",
            "p99",
        ],
        &[false, true, true, true, true, true, true, true, true, true],
        &table,
    );
    if more > 0 {
        let _ = writeln!(out, "  ... and {more} more gateways");
    }
}
