//! The sessions list (`mcp-trace sessions`).

use super::paint::*;
use crate::mcp::Exchange;
use crate::mcp::Outcome;
use crate::report::sessions::sessions;
use crate::timestamp::format_rfc3339_us;

/// One row per session (`mcp-trace sessions`).
pub fn sessions_table_text(rows: &[Exchange], color: bool) -> String {
    let p = Painter { color };
    let list = sessions(rows);
    if list.is_empty() {
        return "no MCP sessions found\n".to_string();
    }
    let table: Vec<Vec<Text>> = list
        .iter()
        .map(|s| {
            let client = match (&s.client_name, &s.client_version, &s.user_agent) {
                (Some(n), Some(v), _) => format!("{n} {v}"),
                (Some(n), None, _) => n.clone(),
                (None, _, Some(ua)) => ua.clone(),
                (None, _, None) => String::new(),
            };
            let failures: u64 = Outcome::ALL
                .iter()
                .zip(&s.outcome_counts)
                .filter(|(o, _)| o.is_failure())
                .map(|(_, n)| *n)
                .sum::<u64>()
                .saturating_add(s.other_outcomes);
            let retries = s
                .retries_sdk
                .saturating_add(s.retries_application)
                .saturating_add(s.retries_manual);
            let span_ms = s.last_ts.saturating_sub(s.first_ts) as f64 / 1000.0;
            vec![
                plain(s.session_key.clone()),
                plain(client),
                plain(s.client_addr.clone()),
                plain(s.transport.name()),
                plain(format_rfc3339_us(s.first_ts)),
                plain(fmt_ms(span_ms)),
                plain(s.exchanges.to_string()),
                Text(
                    failures.to_string(),
                    if failures > 0 {
                        Style::Bad
                    } else {
                        Style::Plain
                    },
                ),
                plain(retries.to_string()),
                plain(s.ended_by.clone()),
            ]
        })
        .collect();
    let mut out = String::new();
    p.table(
        &mut out,
        &[
            "session",
            "client",
            "client addr",
            "transport",
            "first",
            "span",
            "exchanges",
            "failures",
            "retries",
            "ended by",
        ],
        &[
            false, false, false, false, false, true, true, true, true, false,
        ],
        &table,
    );
    out
}
