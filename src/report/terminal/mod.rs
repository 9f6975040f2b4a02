//! Text for a person (report-schema.md section 5): the run's terminal summary, the sessions
//! list (`mcp-trace sessions`) and one session's timeline (`mcp-trace show --session`).
//!
//! Columns are aligned on visible width; ANSI color is added after padding and only when
//! the caller asks (stdout is a terminal), so redirected output is plain text.

mod failing_tools;
mod hops;
mod hygiene;
mod latency;
#[cfg(feature = "live")]
pub mod live;
mod outcomes;
mod overview;
mod paint;
mod retries;
mod sessions;
mod summary_row;
mod timeline;
mod unanalyzed;

use super::HopTally;
use super::summary::RunInfo;
use failing_tools::write_failing_tools;
use latency::write_latency;
use outcomes::write_outcomes;
use overview::write_overview;
use paint::Painter;
use retries::write_retries;
use unanalyzed::write_unanalyzed;

pub use sessions::sessions_table_text;
pub use summary_row::SummaryRow;
pub use timeline::session_timeline;

/// Rows of other long lists (tools, methods, anomalies) shown before "... N more".
pub(super) const MAX_LIST_ROWS: usize = 40;

/// Longest text shown in one table cell; longer capture-derived text is cut with `…`.
pub(super) const MAX_CELL_CHARS: usize = 120;

/// The run summary for a person: overview, outcomes by outcome and layer, failing tools,
/// retry chains with origins, latency percentiles per method and what could not be analyzed;
/// of `info.rows`.
pub fn terminal_summary(info: &RunInfo, color: bool) -> String {
    let rows: Vec<SummaryRow> = info
        .rows
        .iter()
        .map(|r| SummaryRow::from((*r).clone()))
        .collect();
    terminal_summary_of(info, &rows, color)
}

/// [`terminal_summary`] of `rows` (in `exchange_id` order), what a run kept of its rows;
/// `info.rows` is not read.
pub fn terminal_summary_of(info: &RunInfo, rows: &[SummaryRow], color: bool) -> String {
    let p = Painter { color };
    let mut out = String::new();
    let all: Vec<&SummaryRow> = rows.iter().collect();
    let tally = HopTally::of_facts(rows.iter().map(SummaryRow::hop_facts));
    // Calls are the hop-1 rows (section 4c): a gateway's copies are not counted again.
    let hop_one: Vec<&SummaryRow>;
    let calls = if tally.has_hops() {
        hop_one = all.iter().copied().filter(|r| r.hop.0 <= 1).collect();
        hop_one.as_slice()
    } else {
        all.as_slice()
    };
    write_overview(p, &mut out, info, &all, &tally);
    write_outcomes(p, &mut out, calls);
    write_failing_tools(p, &mut out, calls);
    write_retries(p, &mut out, calls);
    hygiene::write_hygiene(p, &mut out, &all);
    write_latency(p, &mut out, calls);
    hops::write_hops(p, &mut out, &tally);
    write_unanalyzed(p, &mut out, info);
    out
}

#[cfg(test)]
mod tests;
