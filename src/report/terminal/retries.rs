//! Retry chains: attempts of the same call, split by how they ended, with their origins.

use super::SummaryRow;
use super::paint::*;
use crate::hashing::HashMap;
use crate::mcp::retry::{RetryChain, retry_chains_of};
use std::collections::BTreeMap;
use std::fmt::Write as _;

/// Retry chains shown per category before the rest is only counted.
pub(super) const MAX_CHAINS_SHOWN: usize = 20;

pub(super) fn chain_table(
    p: Painter,
    out: &mut String,
    chains: &[&RetryChain],
    by_id: &HashMap<u64, &SummaryRow>,
) {
    let mut table = Vec::new();
    for chain in chains.iter().take(MAX_CHAINS_SHOWN) {
        let attempts = chain.attempts.iter().filter_map(|(id, _, _)| by_id.get(id));
        for (i, e) in attempts.enumerate() {
            let origin = if i == 0 {
                "first".to_string()
            } else {
                e.retry_origin.to_string()
            };
            table.push(vec![
                plain(if i == 0 { e.describe() } else { String::new() }),
                plain(e.attempt.to_string()),
                plain(format!("#{}", e.exchange_id)),
                plain(origin),
                outcome_text(e.outcome),
                plain(super::hygiene::rule_clause(
                    e.retry_evidence.as_deref().unwrap_or_default(),
                )),
            ]);
        }
        let fin = chain.final_outcome;
        table.push(vec![
            plain(""),
            plain(""),
            plain(""),
            Text("final".into(), Style::Dim),
            outcome_text(fin),
            plain(""),
        ]);
    }
    p.table(
        out,
        &[
            "call", "attempt", "exchange", "origin", "outcome", "evidence",
        ],
        &[false, true, false, false, false, false],
        &table,
    );
    if chains.len() > MAX_CHAINS_SHOWN {
        let _ = writeln!(
            out,
            "  ... and {} more chains",
            chains.len() - MAX_CHAINS_SHOWN
        );
    }
}

pub(super) fn write_retries(p: Painter, out: &mut String, rows: &[&SummaryRow]) {
    p.heading(out, "Retry chains");
    let chains = retry_chains_of(rows);
    if chains.is_empty() {
        out.push_str("  none\n");
        return;
    }
    let by_id: HashMap<u64, &SummaryRow> = rows.iter().map(|r| (r.exchange_id, *r)).collect();
    let mut by_origin: BTreeMap<&str, u64> = BTreeMap::new();
    for r in rows.iter().filter(|r| r.retry_of.is_some()) {
        let n = by_origin.entry(r.retry_origin.name()).or_default();
        *n = n.saturating_add(1);
    }
    let origins: Vec<String> = by_origin.iter().map(|(o, n)| format!("{o} {n}")).collect();
    let (after_failure, after_success): (Vec<&RetryChain>, Vec<&RetryChain>) =
        chains.iter().partition(|c| c.after_failure);
    let recovered = after_failure
        .iter()
        .filter(|c| !c.final_outcome.is_failure())
        .count();
    let _ = writeln!(
        out,
        "  {}: {} after failures ({} recovered), {} of calls that had succeeded; retries by origin: {}",
        count(chains.len(), "retry chain"),
        after_failure.len(),
        recovered,
        after_success.len(),
        origins.join(", ")
    );
    if !after_failure.is_empty() {
        out.push_str("\n  Retries after failures\n");
        chain_table(p, out, &after_failure, &by_id);
    }
    if !after_success.is_empty() {
        out.push_str("\n  Repeats after success\n");
        chain_table(p, out, &after_success, &by_id);
    }
}
