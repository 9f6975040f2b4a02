//! The terminal summary's "Retry hygiene" part (report-schema.md sections 4b and 5): every
//! finding with its chain, the tool and its one line of evidence, under the retry chains.

use super::MAX_LIST_ROWS;
use super::SummaryRow;
use super::paint::{Painter, Style, Text, count, plain};
use crate::hashing::HashMap;
use crate::mcp::retry::Finding;
use std::fmt::Write as _;

/// Hops shown of a chain before the middle is elided (`#1 -> ... -> #7 -> #9`).
const MAX_CHAIN_HOPS: usize = 4;

/// Where finding `f`'s clause starts in `retry_evidence`.
fn clause_start(evidence: &str, f: Finding) -> Option<usize> {
    evidence.find(&format!("; {}: ", f.name()))
}

/// The retry rule's part of `retry_evidence`, without the hygiene clauses that follow it.
pub(super) fn rule_clause(evidence: &str) -> &str {
    let cut = Finding::ALL
        .iter()
        .filter_map(|&f| clause_start(evidence, f))
        .min()
        .unwrap_or(evidence.len());
    evidence.get(..cut).unwrap_or(evidence)
}

/// Finding `f`'s facts in `retry_evidence` (after its `name: `), up to the next clause.
fn finding_clause(evidence: &str, f: Finding) -> &str {
    let Some(start) = clause_start(evidence, f) else {
        return "";
    };
    let body = start + f.name().len() + 4;
    let rest = evidence.get(body..).unwrap_or_default();
    let end = Finding::ALL
        .iter()
        .filter_map(|&g| rest.find(&format!("; {}: ", g.name())))
        .min()
        .unwrap_or(rest.len());
    rest.get(..end).unwrap_or(rest)
}

/// `#first -> ... -> #this` along `retry_of`.
fn chain_path(row: &SummaryRow, by_id: &HashMap<u64, &SummaryRow>) -> String {
    let mut ids = vec![row.exchange_id];
    let mut at = row;
    // Links point back to smaller ids; anything else ends the walk, so no cycle.
    while let Some(prev) = at.retry_of.filter(|&p| p < at.exchange_id) {
        ids.push(prev);
        match by_id.get(&prev) {
            Some(r) => at = r,
            None => break,
        }
    }
    ids.reverse();
    let hop = |id: &u64| format!("#{id}");
    if ids.len() <= MAX_CHAIN_HOPS {
        return ids.iter().map(hop).collect::<Vec<_>>().join(" -> ");
    }
    let head = ids.first().map(hop).unwrap_or_default();
    let tail: Vec<String> = ids
        .iter()
        .skip(ids.len() - (MAX_CHAIN_HOPS - 2))
        .map(hop)
        .collect();
    format!("{head} -> ... -> {}", tail.join(" -> "))
}

/// "Retry hygiene": counts per finding, then one line per finding on an attempt.
pub(super) fn write_hygiene(p: Painter, out: &mut String, rows: &[&SummaryRow]) {
    p.heading(out, "Retry hygiene");
    let judged: Vec<&SummaryRow> = rows
        .iter()
        .copied()
        .filter(|r| !r.retry_findings.is_empty())
        .collect();
    if judged.is_empty() {
        out.push_str("  none\n");
        return;
    }
    let mut counts = [0u64; Finding::ALL.len()];
    let mut lines = Vec::new();
    let by_id: HashMap<u64, &SummaryRow> = rows.iter().map(|r| (r.exchange_id, *r)).collect();
    for r in &judged {
        let evidence = r.retry_evidence.as_deref().unwrap_or_default();
        for f in r.retry_findings.iter() {
            if let Some(n) = counts.get_mut(f.index()) {
                *n = n.saturating_add(1);
            }
            lines.push(vec![
                Text(f.name().to_string(), Style::Warn),
                plain(chain_path(r, &by_id)),
                plain(r.attempt.to_string()),
                plain(r.describe()),
                plain(finding_clause(evidence, f)),
            ]);
        }
    }
    if lines.is_empty() {
        out.push_str("  none\n");
        return;
    }
    let per_name: Vec<String> = Finding::ALL
        .iter()
        .zip(counts)
        .filter(|(_, n)| *n > 0)
        .map(|(f, n)| format!("{} {n}", f.name()))
        .collect();
    let _ = writeln!(
        out,
        "  {} on {}: {}",
        count(lines.len(), "finding"),
        count(judged.len(), "attempt"),
        per_name.join(", ")
    );
    let more = lines.len().saturating_sub(MAX_LIST_ROWS);
    lines.truncate(MAX_LIST_ROWS);
    p.table(
        out,
        &["finding", "chain", "attempt", "call", "evidence"],
        &[false, false, true, false, false],
        &lines,
    );
    if more > 0 {
        let _ = writeln!(out, "  ... and {more} more findings");
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::mcp::{Exchange, Outcome, RetryOrigin};

    fn summary_rows(rows: &[Exchange]) -> Vec<SummaryRow> {
        rows.iter().cloned().map(SummaryRow::from).collect()
    }

    const EV: &str = "rule 3 new id 400ms after #1 ended with HTTP_ERROR (503), same session, different user-agent (Mozilla/5.0 (X11; Linux x86_64)); unsafe_retry: tool send not declared safe (x) and #1 ended HTTP_ERROR (503), which may have run it; no_backoff: gap 1ms after #1 vs 2ms before it (both under 50ms)";

    #[test]
    fn clauses_split_at_finding_names_only() {
        // The user agent's "; " is part of the rule's clause.
        assert!(rule_clause(EV).ends_with("(X11; Linux x86_64))"));
        assert_eq!(
            finding_clause(EV, Finding::UnsafeRetry),
            "tool send not declared safe (x) and #1 ended HTTP_ERROR (503), which may have run it"
        );
        assert_eq!(
            finding_clause(EV, Finding::NoBackoff),
            "gap 1ms after #1 vs 2ms before it (both under 50ms)"
        );
        assert_eq!(finding_clause(EV, Finding::TooManyAttempts), "");
        assert_eq!(rule_clause("rule 2 x"), "rule 2 x");
    }

    fn row(id: u64, of: Option<u64>) -> Exchange {
        Exchange {
            exchange_id: id,
            retry_of: of,
            ..Exchange::default()
        }
    }

    #[test]
    fn chains_are_shown_along_retry_of_and_elided_when_long() {
        let rows: Vec<Exchange> = (1..=7).map(|i| row(i, (i > 1).then(|| i - 1))).collect();
        let rows = summary_rows(&rows);
        let by_id: HashMap<u64, &SummaryRow> = rows.iter().map(|r| (r.exchange_id, r)).collect();
        assert_eq!(chain_path(&rows[2], &by_id), "#1 -> #2 -> #3");
        assert_eq!(chain_path(&rows[6], &by_id), "#1 -> ... -> #6 -> #7");
        // A link forward (impossible, but from a hand-made file) ends the walk.
        let odd = SummaryRow::from(row(3, Some(9)));
        assert_eq!(chain_path(&odd, &by_id), "#3");
    }

    fn judged_rows() -> Vec<Exchange> {
        let mut a = row(4, None);
        a.rpc_method = Some("tools/call".into());
        a.tool_name = Some("send_email".into());
        a.jsonrpc_id = Some("1".into());
        a.outcome = Outcome::HttpError;
        a.session_key = "S".into();
        let mut b = row(5, Some(4));
        b.rpc_method = a.rpc_method.clone();
        b.tool_name = a.tool_name.clone();
        b.jsonrpc_id = Some("2".into());
        b.attempt = 2;
        b.retry_origin = RetryOrigin::Application;
        b.outcome = Outcome::ToolSuccess;
        b.session_key = "S".into();
        b.retry_findings = [Finding::UnsafeRetry, Finding::RetryAfterIgnored]
            .into_iter()
            .collect();
        b.retry_evidence = Some(
            "rule 3 new id 10ms after #4 ended with HTTP_ERROR (503), same session; unsafe_retry: tool send_email not declared safe (no tools/list of this endpoint seen before this attempt) and #4 ended HTTP_ERROR (503), which may have run it; retry_after_ignored: HTTP 503 of #4 asked Retry-After 2000ms, sent 10ms after that response".into(),
        );
        vec![a, b]
    }

    #[test]
    fn each_finding_gets_a_line_with_its_chain_tool_and_evidence() {
        let mut out = String::new();
        let rows = summary_rows(&judged_rows());
        let refs: Vec<&SummaryRow> = rows.iter().collect();
        write_hygiene(Painter { color: false }, &mut out, &refs);
        let lines: Vec<&str> = out.lines().collect();
        assert_eq!(lines[0], "Retry hygiene");
        assert_eq!(
            lines[1],
            "  2 findings on 1 attempt: unsafe_retry 1, retry_after_ignored 1"
        );
        assert!(
            lines[2]
                .split_whitespace()
                .eq(["finding", "chain", "attempt", "call", "evidence"])
        );
        assert!(
            lines[3].starts_with("  unsafe_retry         #4 -> #5        2  tools/call id=2 send_email  tool send_email not declared safe"),
            "{out}"
        );
        assert!(
            lines[4].contains("retry_after_ignored")
                && lines[4].contains("asked Retry-After 2000ms")
        );
        assert_eq!(lines.len(), 5);
        let mut none = String::new();
        let rows = summary_rows(&judged_rows());
        let first: Vec<&SummaryRow> = rows.iter().take(1).collect();
        write_hygiene(Painter { color: false }, &mut none, &first);
        assert_eq!(none, "Retry hygiene\n  none\n");
    }

    #[test]
    fn the_timeline_marks_the_findings() {
        let t = super::super::session_timeline(&judged_rows(), "S", false).unwrap();
        let line = t.lines().find(|l| l.contains("retry of #4")).unwrap();
        assert!(
            line.contains("hygiene: unsafe_retry, retry_after_ignored; retry of #4 (application, attempt 2): rule 3 new id"),
            "{line}"
        );
        assert!(!line.contains("which may have run it"), "{line}");
    }
}
