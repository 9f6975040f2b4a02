//! The header: what was read, how much, and each input.

use super::SummaryRow;
use super::paint::*;
use crate::report::HopTally;
use crate::report::summary::RunInfo;
use std::fmt::Write as _;

pub(super) fn write_overview(
    p: Painter,
    out: &mut String,
    info: &RunInfo,
    rows: &[&SummaryRow],
    hops: &HopTally,
) {
    let n_sessions = rows
        .iter()
        .map(|r| r.session_key.as_str())
        .collect::<crate::hashing::HashSet<_>>()
        .len();
    p.heading(out, "mcp-trace summary");
    let _ = writeln!(
        out,
        "  {} in {}; {}; {} read in {:.2} s ({:.1} MB/s)",
        count(rows.len(), "MCP exchange"),
        count(n_sessions, "session"),
        count(info.stats.http.http_exchanges, "HTTP exchange"),
        fmt_bytes(info.bytes_read),
        info.elapsed_s,
        info.throughput_mb_s()
    );
    if hops.has_hops() {
        let calls: u64 = hops.calls.iter().sum();
        let _ = writeln!(
            out,
            "  {} ({} of them through {}), {} on gateway legs",
            count(calls, "call"),
            hops.gateways.values().map(|g| g.calls).sum::<u64>(),
            count(hops.gateways.len(), "gateway"),
            match hops.copies {
                1 => "1 copy".to_string(),
                n => format!("{n} copies"),
            }
        );
    }
    let table: Vec<Vec<Text>> = info
        .inputs
        .iter()
        .map(|i| {
            let links: Vec<String> = i.link_types.iter().map(|l| l.to_string()).collect();
            vec![
                plain(i.name.clone()),
                plain(if i.gzip {
                    format!("{} (gzip)", i.format)
                } else {
                    i.format.to_string()
                }),
                plain(fmt_bytes(i.bytes)),
                plain(links.join(",")),
                match &i.error {
                    Some(e) => Text(format!("stopped early: {e}"), Style::Bad),
                    None => plain(""),
                },
            ]
        })
        .collect();
    if !table.is_empty() {
        p.table(
            out,
            &["input", "format", "size", "link types", "note"],
            &[false, false, true, false, false],
            &table,
        );
    }
}
