//! Outcomes: counts by outcome and by layer.

use super::SummaryRow;
use super::paint::*;
use crate::mcp::{Layer, Outcome};
use crate::report::summary::{layer_counts, outcome_counts};
use std::collections::HashMap;

pub(super) fn write_outcomes(p: Painter, out: &mut String, rows: &[&SummaryRow]) {
    p.heading(out, "Outcomes");
    if rows.is_empty() {
        out.push_str("  no MCP exchanges found\n");
        return;
    }
    let total = rows.len() as f64;
    let counts = outcome_counts(rows.iter().map(|r| r.outcome));
    let table: Vec<Vec<Text>> = Outcome::ALL
        .iter()
        .filter_map(|o| Some((o, counts.get(o.name()).copied().filter(|&n| n > 0)?)))
        .map(|(o, n)| {
            vec![
                outcome_text(*o),
                plain(o.layer().name()),
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
    let mut failures: HashMap<Layer, u64> = HashMap::new();
    for r in rows.iter().filter(|r| r.outcome.is_failure()) {
        let n = failures.entry(r.layer).or_default();
        *n = n.saturating_add(1);
    }
    let layers = layer_counts(rows.iter().map(|r| r.layer));
    let table: Vec<Vec<Text>> = Layer::ALL
        .iter()
        .map(|l| {
            let f = failures.get(l).copied().unwrap_or(0);
            vec![
                plain(l.name()),
                plain(layers.get(l.name()).copied().unwrap_or(0).to_string()),
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
