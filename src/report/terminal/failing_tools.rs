//! Failing tools: the tools with failed calls, most failures first.

use super::MAX_LIST_ROWS;
use super::SummaryRow;
use super::paint::*;
use std::collections::BTreeMap;
use std::fmt::Write as _;

pub(super) fn write_failing_tools(p: Painter, out: &mut String, rows: &[&SummaryRow]) {
    p.heading(out, "Failing tools");
    #[derive(Default)]
    struct Tool {
        calls: u64,
        failures: u64,
        by_outcome: BTreeMap<&'static str, u64>,
    }
    let mut tools: BTreeMap<&str, Tool> = BTreeMap::new();
    for r in rows {
        let Some(name) = r.tool_name.as_deref() else {
            continue;
        };
        let t = tools.entry(name).or_default();
        t.calls = t.calls.saturating_add(1);
        if r.outcome.is_failure() {
            t.failures = t.failures.saturating_add(1);
            let n = t.by_outcome.entry(r.outcome.name()).or_default();
            *n = n.saturating_add(1);
        }
    }
    let mut failing: Vec<(&str, Tool)> =
        tools.into_iter().filter(|(_, t)| t.failures > 0).collect();
    if failing.is_empty() {
        out.push_str("  none\n");
        return;
    }
    failing.sort_by(|a, b| b.1.failures.cmp(&a.1.failures).then(a.0.cmp(b.0)));
    let more = failing.len().saturating_sub(MAX_LIST_ROWS);
    let table: Vec<Vec<Text>> = failing
        .iter()
        .take(MAX_LIST_ROWS)
        .map(|(name, t)| {
            let outcomes: Vec<String> = t
                .by_outcome
                .iter()
                .map(|(o, n)| format!("{o} {n}"))
                .collect();
            vec![
                plain(*name),
                plain(t.calls.to_string()),
                Text(t.failures.to_string(), Style::Bad),
                plain(outcomes.join(", ")),
            ]
        })
        .collect();
    p.table(
        out,
        &["tool", "calls", "failures", "outcomes"],
        &[false, true, true, false],
        &table,
    );
    if more > 0 {
        let _ = writeln!(out, "  ... and {more} more tools");
    }
}
