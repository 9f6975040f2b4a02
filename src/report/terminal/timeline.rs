//! One session as a timeline (`mcp-trace show --session`).

use super::paint::*;
use crate::mcp::retry::Finding;
use crate::mcp::{Exchange, StreamEnd};
use crate::report::sessions::sessions;
use crate::timestamp::format_rfc3339_us;
use std::fmt::Write as _;

/// One session as a story (`mcp-trace show --session KEY`): each request at the time it was
/// sent (`->`) and its response when it was complete (`<-`), with status, outcome, latency
/// and retry links. `key` matches `session_key` or `session_id`. `None` when no row matches.
pub fn session_timeline(rows: &[Exchange], session_key: &str, color: bool) -> Option<String> {
    let p = Painter { color };
    let mine: Vec<Exchange> = rows
        .iter()
        .filter(|r| r.session_key == session_key || r.session_id.as_deref() == Some(session_key))
        .cloned()
        .collect();
    let info = sessions(&mine);
    let mut out = String::new();
    for s in &info {
        p.heading(&mut out, &format!("Session {}", clean(&s.session_key)));
        let mut facts = vec![
            (
                "session id",
                s.session_id.clone().unwrap_or_else(|| "-".into()),
            ),
            ("transport", s.transport.name().to_string()),
            (
                "protocol",
                s.protocol_version.clone().unwrap_or_else(|| "-".into()),
            ),
        ];
        let client = [&s.client_name, &s.client_version, &s.user_agent]
            .iter()
            .filter_map(|v| v.as_deref())
            .collect::<Vec<_>>()
            .join(" / ");
        facts.push((
            "client",
            if client.is_empty() {
                "-".into()
            } else {
                client
            },
        ));
        facts.push((
            "endpoints",
            format!("{} -> {}", s.client_addr, s.server_addr),
        ));
        facts.push((
            "span",
            format!(
                "{} .. {}",
                format_rfc3339_us(s.first_ts),
                format_rfc3339_us(s.last_ts)
            ),
        ));
        facts.push(("ended by", s.ended_by.clone()));
        for (k, v) in facts {
            let _ = writeln!(out, "  {k:<10}  {}", clean(&v));
        }
    }
    if info.is_empty() {
        return None;
    }
    // A gateway's copies of the session's calls (section 4c), each on its own leg.
    let mut copies: Vec<&Exchange> = Vec::new();
    let mut linked: std::collections::HashSet<u64> = mine.iter().map(|r| r.exchange_id).collect();
    loop {
        let more: Vec<&Exchange> = rows
            .iter()
            .filter(|r| {
                r.forwarded_from.is_some_and(|f| linked.contains(&f))
                    && !linked.contains(&r.exchange_id)
            })
            .collect();
        if more.is_empty() {
            break;
        }
        linked.extend(more.iter().map(|r| r.exchange_id));
        copies.extend(more);
    }
    let low_hop = mine.iter().map(|r| r.hop.0).min().unwrap_or(1);
    let top_hop = copies.iter().map(|r| r.hop.0).max().unwrap_or(low_hop);
    let leg = |r: &Exchange| {
        let at = |k: u8| match k {
            _ if k == top_hop.saturating_add(1) => "server".to_string(),
            1 => "client".to_string(),
            k if top_hop > 2 => format!("gateway {}", k.saturating_sub(1)),
            _ => "gateway".to_string(),
        };
        format!("{} -> {}", at(r.hop.0), at(r.hop.0.saturating_add(1)))
    };
    // Events: (time, exchange id, 0 = request / 1 = response, row).
    let mut events: Vec<(i64, u64, u8, &Exchange)> = Vec::new();
    for r in mine.iter().chain(copies.iter().copied()) {
        events.push((r.ts_request, r.exchange_id, 0, r));
        if let Some(t) = r.ts_response {
            events.push((t, r.exchange_id, 1, r));
        }
    }
    events.sort_by_key(|&(t, id, dir, _)| (t, id, dir));
    let table: Vec<Vec<Text>> = events
        .iter()
        .map(|&(t, id, dir, r)| {
            let mut links = Vec::new();
            if dir == 0
                && let Some(from) = r.forwarded_from
            {
                links.push(format!("copy of #{from}"));
            }
            if let Some(f) = r.fault_hop.filter(|_| dir == 1 || r.ts_response.is_none()) {
                links.push(format!("failure arose at hop {f}"));
            }
            if dir == 0 {
                if !r.retry_findings.is_empty() {
                    let names: Vec<&str> = r.retry_findings.iter().map(Finding::name).collect();
                    links.push(format!("hygiene: {}", names.join(", ")));
                }
                if let Some(prev) = r.retry_of {
                    let mut l = format!(
                        "retry of #{prev} ({}, attempt {})",
                        r.retry_origin, r.attempt
                    );
                    if let Some(ev) = &r.retry_evidence {
                        let _ = write!(l, ": {}", super::hygiene::rule_clause(ev));
                    }
                    links.push(l);
                }
                if let Some(c) = r.continuation_of {
                    links.push(format!("continues #{c}"));
                }
            } else {
                if let Some(code) = r.error_code {
                    let msg = r.error_message.as_deref().unwrap_or("");
                    links.push(format!("error {code} {msg}").trim_end().to_string());
                }
                if !matches!(r.stream_end, StreamEnd::None | StreamEnd::Complete) {
                    links.push(format!("stream ended: {}", r.stream_end));
                }
                if let Some(a) = r.anomalies.text() {
                    links.push(format!("anomalies: {a}"));
                }
            }
            // The outcome goes on the response line, or on the request when nothing came back.
            let show_outcome = dir == 1 || r.ts_response.is_none();
            let mut cells = vec![
                plain(format_rfc3339_us(t)),
                plain(if dir == 0 { "->" } else { "<-" }),
                plain(format!("#{id}")),
                plain(describe(r)),
                plain(if dir == 1 {
                    r.http_status.map(|s| s.to_string()).unwrap_or_default()
                } else {
                    String::new()
                }),
                if show_outcome {
                    outcome_text(r.outcome)
                } else {
                    plain("")
                },
                plain(if dir == 1 {
                    r.latency_ms.map(fmt_ms).unwrap_or_default()
                } else {
                    String::new()
                }),
                plain(links.join("; ")),
            ];
            if !copies.is_empty() {
                cells.insert(1, plain(leg(r)));
            }
            cells
        })
        .collect();
    out.push('\n');
    let mut heads = vec![
        "time (UTC)",
        "dir",
        "exchange",
        "message",
        "status",
        "outcome",
        "latency",
        "notes",
    ];
    let mut right = vec![false, false, false, false, true, false, true, false];
    if !copies.is_empty() {
        heads.insert(1, "leg");
        right.insert(1, false);
    }
    p.table(&mut out, &heads, &right, &table);
    Some(out)
}
