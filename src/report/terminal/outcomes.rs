//! Outcomes: counts by outcome and by layer.

use super::paint::*;
use crate::mcp::Exchange;
use crate::report::row::{OUTCOMES, is_failure, outcome_index};
use crate::report::summary::{layer_counts, outcome_counts};
use std::collections::HashMap;

pub(super) fn write_outcomes(p: Painter, out: &mut String, rows: &[Exchange]) {
    p.heading(out, "Outcomes");
    if rows.is_empty() {
        out.push_str("  no MCP exchanges found\n");
        return;
    }
    let total = rows.len() as f64;
    let counts = outcome_counts(rows);
    let mut names: Vec<&String> = counts
        .keys()
        .filter(|k| counts.get(*k) != Some(&0))
        .collect();
    names.sort_by_key(|o| (outcome_index(o).unwrap_or(usize::MAX), o.to_string()));
    let table: Vec<Vec<Text>> = names
        .iter()
        .map(|o| {
            let n = counts.get(*o).copied().unwrap_or(0);
            let layer = OUTCOMES
                .iter()
                .find(|(name, _)| name == o)
                .map_or("?", |(_, l)| l);
            vec![
                outcome_text(o),
                plain(layer),
                plain(n.to_string()),
                plain(format!("{:.1}%", n as f64 * 100.0 / total)),
            ]
        })
        .collect();
    p.table(
        out,
        &["outcome", "layer", "count", "share"],
        &[false, false, true, true],
        &table,
    );

    p.heading(out, "By layer");
    let mut failures: HashMap<&str, u64> = HashMap::new();
    for r in rows.iter().filter(|r| is_failure(r.outcome)) {
        let n = failures.entry(r.layer).or_default();
        *n = n.saturating_add(1);
    }
    let layers = layer_counts(rows);
    let mut order: Vec<&String> = layers.keys().collect();
    order.sort_by_key(|l| {
        super::super::row::LAYERS
            .iter()
            .position(|x| x == l)
            .unwrap_or(usize::MAX)
    });
    let table: Vec<Vec<Text>> = order
        .iter()
        .map(|l| {
            let f = failures.get(l.as_str()).copied().unwrap_or(0);
            vec![
                plain(l.as_str()),
                plain(layers.get(*l).copied().unwrap_or(0).to_string()),
                Text(f.to_string(), if f > 0 { Style::Bad } else { Style::Plain }),
            ]
        })
        .collect();
    p.table(
        out,
        &["layer", "exchanges", "failures"],
        &[false, true, true],
        &table,
    );
}
