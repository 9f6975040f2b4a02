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
mod timeline;
mod unanalyzed;

use super::HopTally;
use super::summary::RunInfo;
use crate::mcp::Exchange;
use failing_tools::write_failing_tools;
use latency::write_latency;
use outcomes::write_outcomes;
use overview::write_overview;
use paint::Painter;
use retries::write_retries;
use unanalyzed::write_unanalyzed;

pub use sessions::sessions_table_text;
pub use timeline::session_timeline;

/// Rows of other long lists (tools, methods, anomalies) shown before "... N more".
pub(super) const MAX_LIST_ROWS: usize = 40;

/// Longest text shown in one table cell; longer capture-derived text is cut with `…`.
pub(super) const MAX_CELL_CHARS: usize = 120;

/// The run summary for a person: overview, outcomes by outcome and layer, failing tools,
/// retry chains with origins, latency percentiles per method and what could not be analyzed.
pub fn terminal_summary(info: &RunInfo, color: bool) -> String {
    let p = Painter { color };
    let mut out = String::new();
    let tally = HopTally::of(info.rows.iter().copied());
    // Calls are the hop-1 rows (section 4c): a gateway's copies are not counted again.
    let hop_one: Vec<&Exchange>;
    let calls = if tally.has_hops() {
        hop_one = info.rows.iter().copied().filter(|r| r.hop.0 <= 1).collect();
        hop_one.as_slice()
    } else {
        info.rows
    };
    write_overview(p, &mut out, info, &tally);
    write_outcomes(p, &mut out, calls);
    write_failing_tools(p, &mut out, calls);
    write_retries(p, &mut out, calls);
    hygiene::write_hygiene(p, &mut out, info.rows);
    write_latency(p, &mut out, calls);
    hops::write_hops(p, &mut out, &tally);
    write_unanalyzed(p, &mut out, info);
    out
}

#[cfg(test)]
mod tests;
