//! Text for a person (report-schema.md section 5): the run's terminal summary, the sessions
//! list (`mcp-trace sessions`) and one session's timeline (`mcp-trace show --session`).
//!
//! Columns are aligned on visible width; ANSI color is added after padding and only when
//! the caller asks (stdout is a terminal), so redirected output is plain text.

use super::row::{OUTCOMES, is_failure, outcome_index};
use super::sessions::sessions;
use super::summary::{RunInfo, layer_counts, outcome_counts};
use crate::mcp::Exchange;
use crate::mcp::retry::{RetryChain, retry_chains};
use crate::timestamp::format_rfc3339_us;
use std::collections::{BTreeMap, HashMap};
use std::fmt::Write as _;

#[path = "terminal_hygiene.rs"]
mod hygiene;

/// Retry chains shown per category before the rest is only counted.
const MAX_CHAINS_SHOWN: usize = 20;
/// Rows of other long lists (tools, methods, anomalies) shown before "... N more".
const MAX_LIST_ROWS: usize = 40;
/// Longest text shown in one table cell; longer capture-derived text is cut with `…`.
const MAX_CELL_CHARS: usize = 120;

/// Capture-derived text made safe for a terminal: control characters (escape sequences,
/// newlines) are shown escaped, never interpreted, and overlong text is cut.
fn clean(text: &str) -> String {
    let mut out = String::new();
    for (n, c) in text.chars().enumerate() {
        if n >= MAX_CELL_CHARS {
            out.push('…');
            break;
        }
        if c.is_control() {
            out.extend(c.escape_default());
        } else {
            out.push(c);
        }
    }
    out
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Style {
    Plain,
    Bold,
    Dim,
    Good,
    Warn,
    Bad,
}

/// One table cell: text plus style.
#[derive(Debug, Clone)]
struct Text(String, Style);

fn plain(s: impl Into<String>) -> Text {
    Text(s.into(), Style::Plain)
}

/// The style of an outcome: green for success, yellow for interaction, red for failure.
fn outcome_style(outcome: &str) -> Style {
    match outcome {
        "INPUT_REQUIRED" | "TASK_CREATED" => Style::Warn,
        o if is_failure(o) => Style::Bad,
        _ => Style::Good,
    }
}

fn outcome_text(outcome: &str) -> Text {
    Text(outcome.to_string(), outcome_style(outcome))
}

#[derive(Debug, Clone, Copy)]
struct Painter {
    color: bool,
}

impl Painter {
    fn paint(&self, text: &str, style: Style) -> String {
        let code = match style {
            _ if !self.color => return text.to_string(),
            Style::Plain => return text.to_string(),
            Style::Bold => "1",
            Style::Dim => "2",
            Style::Good => "32",
            Style::Warn => "33",
            Style::Bad => "31",
        };
        format!("\x1b[{code}m{text}\x1b[0m")
    }

    fn heading(&self, out: &mut String, title: &str) {
        if !out.is_empty() {
            out.push('\n');
        }
        out.push_str(&self.paint(title, Style::Bold));
        out.push('\n');
    }

    /// Appends an aligned table indented by two spaces. `right` marks numeric columns.
    fn table(&self, out: &mut String, header: &[&str], right: &[bool], rows: &[Vec<Text>]) {
        let n = header.len();
        let rows: Vec<Vec<Text>> = rows
            .iter()
            .map(|r| r.iter().map(|c| Text(clean(&c.0), c.1)).collect())
            .collect();
        let mut widths: Vec<usize> = header.iter().map(|h| h.chars().count()).collect();
        for row in &rows {
            for (w, cell) in widths.iter_mut().zip(row) {
                *w = (*w).max(cell.0.chars().count());
            }
        }
        let mut line = |cells: Vec<Text>| {
            let mut s = String::from("  ");
            for (i, cell) in cells.iter().enumerate().take(n) {
                let width = widths.get(i).copied().unwrap_or(0);
                let pad = width.saturating_sub(cell.0.chars().count());
                let last = i + 1 == n;
                let right_aligned = right.get(i).copied().unwrap_or(false);
                if right_aligned {
                    s.push_str(&" ".repeat(pad));
                }
                s.push_str(&self.paint(&cell.0, cell.1));
                if !right_aligned && !last {
                    s.push_str(&" ".repeat(pad));
                }
                if !last {
                    s.push_str("  ");
                }
            }
            out.push_str(s.trim_end());
            out.push('\n');
        };
        line(
            header
                .iter()
                .map(|h| Text(h.to_string(), Style::Dim))
                .collect(),
        );
        for row in rows {
            line(row);
        }
    }
}

/// Nearest-rank percentile of an ascending slice: the smallest value with at least `p`
/// percent of the values at or below it. `None` for an empty slice.
pub fn percentile(sorted: &[f64], p: f64) -> Option<f64> {
    if sorted.is_empty() {
        return None;
    }
    let n = sorted.len();
    let rank = ((p / 100.0) * n as f64).ceil() as usize; // saturating cast
    let index = rank.clamp(1, n) - 1;
    sorted.get(index).copied()
}

/// `1 session`, `2 sessions`.
fn count(n: impl std::fmt::Display, noun: &str) -> String {
    let n = n.to_string();
    if n == "1" {
        format!("1 {noun}")
    } else {
        format!("{n} {noun}s")
    }
}

/// Milliseconds for a person: `412.0 ms`, `3.20 s`.
fn fmt_ms(ms: f64) -> String {
    if ms.abs() >= 1000.0 {
        format!("{:.2} s", ms / 1000.0)
    } else {
        format!("{ms:.1} ms")
    }
}

fn fmt_bytes(n: u64) -> String {
    match n {
        n if n >= 1_000_000_000 => format!("{:.1} GB", n as f64 / 1e9),
        n if n >= 1_000_000 => format!("{:.1} MB", n as f64 / 1e6),
        n if n >= 1_000 => format!("{:.1} kB", n as f64 / 1e3),
        n => format!("{n} B"),
    }
}

/// What a row asked for: `tools/call id=1 search`, `GET stream`, `DELETE`.
fn describe(e: &Exchange) -> String {
    let mut s = match (&e.rpc_method, e.kind) {
        (Some(m), _) => m.to_string(),
        (None, "stream") => format!("{} stream", e.http_method),
        (None, "session_end") => e.http_method.to_string(),
        (None, _) => format!("{} {}", e.http_method, e.path),
    };
    if let Some(id) = &e.jsonrpc_id {
        let _ = write!(s, " id={id}");
    }
    if let Some(tool) = &e.tool_name {
        let _ = write!(s, " {tool}");
    }
    s
}

fn write_overview(p: Painter, out: &mut String, info: &RunInfo) {
    let rows = info.rows;
    let n_sessions = rows
        .iter()
        .map(|r| r.session_key.as_str())
        .collect::<std::collections::HashSet<_>>()
        .len();
    p.heading(out, "mcp-trace summary");
    let _ = writeln!(
        out,
        "  {} in {}; {}; {} read in {:.2} s ({:.1} MB/s)",
        count(rows.len(), "MCP exchange"),
        count(n_sessions, "session"),
        count(info.stats.http_exchanges, "HTTP exchange"),
        fmt_bytes(info.bytes_read),
        info.elapsed_s,
        info.throughput_mb_s()
    );
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

fn write_outcomes(p: Painter, out: &mut String, rows: &[Exchange]) {
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
        super::row::LAYERS
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

fn write_failing_tools(p: Painter, out: &mut String, rows: &[Exchange]) {
    p.heading(out, "Failing tools");
    #[derive(Default)]
    struct Tool {
        calls: u64,
        failures: u64,
        by_outcome: BTreeMap<String, u64>,
    }
    let mut tools: BTreeMap<&str, Tool> = BTreeMap::new();
    for r in rows {
        let Some(name) = r.tool_name.as_deref() else {
            continue;
        };
        let t = tools.entry(name).or_default();
        t.calls = t.calls.saturating_add(1);
        if is_failure(r.outcome) {
            t.failures = t.failures.saturating_add(1);
            let n = t.by_outcome.entry(r.outcome.to_string()).or_default();
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

fn chain_table(
    p: Painter,
    out: &mut String,
    chains: &[&RetryChain],
    by_id: &HashMap<u64, &Exchange>,
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
                plain(if i == 0 { describe(e) } else { String::new() }),
                plain(e.attempt.to_string()),
                plain(format!("#{}", e.exchange_id)),
                plain(origin),
                outcome_text(e.outcome),
                plain(hygiene::rule_clause(
                    e.retry_evidence.as_deref().unwrap_or_default(),
                )),
            ]);
        }
        let fin = chain.final_outcome.as_str();
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

fn write_retries(p: Painter, out: &mut String, rows: &[Exchange]) {
    p.heading(out, "Retry chains");
    let chains = retry_chains(rows);
    if chains.is_empty() {
        out.push_str("  none\n");
        return;
    }
    let by_id: HashMap<u64, &Exchange> = rows.iter().map(|r| (r.exchange_id, r)).collect();
    let mut by_origin: BTreeMap<&str, u64> = BTreeMap::new();
    for r in rows.iter().filter(|r| r.retry_of.is_some()) {
        let n = by_origin.entry(r.retry_origin).or_default();
        *n = n.saturating_add(1);
    }
    let origins: Vec<String> = by_origin.iter().map(|(o, n)| format!("{o} {n}")).collect();
    let (after_failure, after_success): (Vec<&RetryChain>, Vec<&RetryChain>) =
        chains.iter().partition(|c| c.after_failure);
    let recovered = after_failure
        .iter()
        .filter(|c| !is_failure(&c.final_outcome))
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

fn write_latency(p: Painter, out: &mut String, rows: &[Exchange]) {
    p.heading(out, "Latency by method");
    let mut by_method: BTreeMap<&str, Vec<f64>> = BTreeMap::new();
    for r in rows {
        if let (Some(m), Some(l)) = (r.rpc_method.as_deref(), r.latency_ms)
            && l.is_finite()
        {
            by_method.entry(m).or_default().push(l);
        }
    }
    if by_method.is_empty() {
        out.push_str("  no completed requests\n");
        return;
    }
    let mut methods: Vec<(&str, Vec<f64>)> = by_method.into_iter().collect();
    methods.sort_by(|a, b| b.1.len().cmp(&a.1.len()).then(a.0.cmp(b.0)));
    let more = methods.len().saturating_sub(MAX_LIST_ROWS);
    let table: Vec<Vec<Text>> = methods
        .iter_mut()
        .take(MAX_LIST_ROWS)
        .map(|(m, v)| {
            v.sort_by(f64::total_cmp);
            let pct = |q| percentile(v, q).map_or_else(String::new, fmt_ms);
            vec![
                plain(*m),
                plain(v.len().to_string()),
                plain(pct(50.0)),
                plain(pct(90.0)),
                plain(pct(99.0)),
                plain(v.last().copied().map_or_else(String::new, fmt_ms)),
            ]
        })
        .collect();
    p.table(
        out,
        &["method", "n", "p50", "p90", "p99", "max"],
        &[false, true, true, true, true, true],
        &table,
    );
    if more > 0 {
        let _ = writeln!(out, "  ... and {more} more methods");
    }
}

fn write_unanalyzed(p: Painter, out: &mut String, info: &RunInfo) {
    p.heading(out, "Not analyzed");
    let s = info.stats;
    let mut facts: Vec<Vec<Text>> = Vec::new();
    let mut fact = |what: String, n: u64, unit: &str| {
        if n > 0 {
            facts.push(vec![
                plain(what),
                Text(n.to_string(), Style::Warn),
                plain(unit),
            ]);
        }
    };
    for (reason, n) in &s.packets_skipped {
        fact(format!("skipped: {reason}"), *n, "packets");
    }
    fact(
        "truncated by snap length (used as far as they go)".into(),
        s.packets_truncated,
        "packets",
    );
    fact("gaps in TCP streams".into(), s.gap_bytes, "bytes");
    for (reason, n) in &s.tcp_bytes_unused {
        fact(
            format!("TCP payload not stream data: {reason}"),
            *n,
            "bytes",
        );
    }
    for (reason, n) in &s.http_messages_skipped {
        fact(format!("HTTP heads skipped: {reason}"), *n, "messages");
    }
    fact(
        "retransmitted or overlapping".into(),
        s.duplicate_bytes,
        "bytes",
    );
    fact(
        "TCP streams that were not HTTP".into(),
        s.non_http_streams,
        "streams",
    );
    fact(
        "skipped while resynchronising HTTP".into(),
        s.http_bytes_skipped,
        "bytes",
    );
    let more_anomalies = s.anomalies.len().saturating_sub(MAX_LIST_ROWS);
    for (name, n) in s.anomalies.iter().take(MAX_LIST_ROWS) {
        fact(format!("anomaly {name}"), *n, "times");
    }
    for i in info.inputs {
        if let Some(e) = &i.error {
            facts.push(vec![
                plain(format!("{}: {e}", i.name)),
                plain(""),
                plain(""),
            ]);
        }
    }
    if facts.is_empty() {
        out.push_str("  nothing: every packet was used\n");
        return;
    }
    p.table(
        out,
        &["what", "count", "unit"],
        &[false, true, false],
        &facts,
    );
    if more_anomalies > 0 {
        let _ = writeln!(
            out,
            "  ... and {more_anomalies} more anomaly names (see --summary)"
        );
    }
}

/// The run summary for a person: overview, outcomes by outcome and layer, failing tools,
/// retry chains with origins, latency percentiles per method and what could not be analyzed.
pub fn terminal_summary(info: &RunInfo, color: bool) -> String {
    let p = Painter { color };
    let mut out = String::new();
    write_overview(p, &mut out, info);
    write_outcomes(p, &mut out, info.rows);
    write_failing_tools(p, &mut out, info.rows);
    write_retries(p, &mut out, info.rows);
    hygiene::write_hygiene(p, &mut out, info.rows);
    write_latency(p, &mut out, info.rows);
    write_unanalyzed(p, &mut out, info);
    out
}

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
            let failures: u64 = OUTCOMES
                .iter()
                .zip(&s.outcome_counts)
                .filter(|((o, _), _)| is_failure(o))
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
                plain(s.transport.clone()),
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
            ("transport", s.transport.clone()),
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
    // Events: (time, exchange id, 0 = request / 1 = response, row).
    let mut events: Vec<(i64, u64, u8, &Exchange)> = Vec::new();
    for r in &mine {
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
            if dir == 0 {
                if let Some(f) = &r.retry_findings {
                    links.push(format!("hygiene: {}", f.replace(';', ", ")));
                }
                if let Some(prev) = r.retry_of {
                    let mut l = format!(
                        "retry of #{prev} ({}, attempt {})",
                        r.retry_origin, r.attempt
                    );
                    if let Some(ev) = &r.retry_evidence {
                        let _ = write!(l, ": {}", hygiene::rule_clause(ev));
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
                if r.stream_end != "none" && r.stream_end != "complete" {
                    links.push(format!("stream ended: {}", r.stream_end));
                }
                if let Some(a) = &r.anomalies {
                    links.push(format!("anomalies: {a}"));
                }
            }
            // The outcome goes on the response line, or on the request when nothing came back.
            let show_outcome = dir == 1 || r.ts_response.is_none();
            vec![
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
            ]
        })
        .collect();
    out.push('\n');
    p.table(
        &mut out,
        &[
            "time (UTC)",
            "dir",
            "exchange",
            "message",
            "status",
            "outcome",
            "latency",
            "notes",
        ],
        &[false, false, false, false, true, false, true, false],
        &table,
    );
    Some(out)
}

#[cfg(test)]
mod tests {
    use super::super::summary::tests::{inputs, stats};
    use super::super::test_rows::ex;
    use super::*;

    #[test]
    fn percentiles_nearest_rank() {
        let v: Vec<f64> = (1..=100).map(f64::from).collect();
        assert_eq!(percentile(&v, 50.0), Some(50.0));
        assert_eq!(percentile(&v, 90.0), Some(90.0));
        assert_eq!(percentile(&v, 99.0), Some(99.0));
        assert_eq!(percentile(&v, 100.0), Some(100.0));
        assert_eq!(percentile(&v, 0.0), Some(1.0));
        let small = [10.0, 20.0, 30.0];
        assert_eq!(percentile(&small, 50.0), Some(20.0));
        assert_eq!(percentile(&small, 90.0), Some(30.0));
        assert_eq!(percentile(&[7.5], 99.0), Some(7.5));
        assert_eq!(percentile(&[], 50.0), None);
    }

    /// A session with a failed call retried by the SDK, then by the application, a manual
    /// repeat of a call that had succeeded, and latencies for two methods.
    fn story() -> Vec<Exchange> {
        let call = |id, ts, outcome: &'static str, layer: &'static str| {
            let mut e = ex(id, ts);
            e.rpc_method = Some("tools/call".into());
            e.jsonrpc_id = Some(id.to_string());
            e.tool_name = Some("search".into());
            e.outcome = outcome;
            e.layer = layer;
            e
        };
        let mut a = call(1, 1_000_000, "HTTP_ERROR", "transport");
        a.http_status = Some(503);
        a.ts_response = Some(1_010_000);
        a.latency_ms = Some(10.0);
        let mut b = call(2, 1_500_000, "TOOL_ERROR", "application");
        b.retry_of = Some(1);
        b.attempt = 2;
        b.retry_origin = "sdk";
        b.retry_evidence = Some("same id+body 490ms after HTTP 503".into());
        b.ts_response = Some(1_520_000);
        b.latency_ms = Some(20.0);
        let mut c = call(3, 2_000_000, "TOOL_SUCCESS", "application");
        c.retry_of = Some(2);
        c.attempt = 3;
        c.retry_origin = "application";
        c.ts_response = Some(2_030_000);
        c.latency_ms = Some(30.0);
        let mut d = call(4, 3_000_000, "TOOL_SUCCESS", "application");
        d.tool_name = Some("fetch".into());
        d.ts_response = Some(3_040_000);
        d.latency_ms = Some(40.0);
        let mut e = call(5, 900_000_000, "TOOL_SUCCESS", "application");
        e.tool_name = Some("fetch".into());
        e.retry_of = Some(4);
        e.attempt = 2;
        e.retry_origin = "manual";
        e.ts_response = Some(900_050_000);
        e.latency_ms = Some(50.0);
        let mut f = ex(6, 500_000);
        f.rpc_method = Some("initialize".into());
        f.outcome = "RPC_SUCCESS";
        f.ts_response = Some(502_000);
        f.latency_ms = Some(2.0);
        let mut g = ex(7, 4_000_000);
        g.kind = "notification";
        g.rpc_method = Some("notifications/initialized".into());
        g.outcome = "NO_RESPONSE";
        g.layer = "transport";
        vec![f, a, b, c, d, e, g]
    }

    fn summary(color: bool) -> String {
        let stats = stats();
        let inputs = inputs();
        let rows = story();
        terminal_summary(
            &RunInfo {
                inputs: &inputs,
                stats: &stats,
                rows: &rows,
                elapsed_s: 1.0,
                bytes_read: 2_000_000,
            },
            color,
        )
    }

    fn line_with<'a>(text: &'a str, needle: &str) -> &'a str {
        text.lines()
            .find(|l| l.contains(needle))
            .unwrap_or_else(|| panic!("no line with {needle:?} in\n{text}"))
    }

    fn words(line: &str) -> Vec<&str> {
        line.split_whitespace().collect()
    }

    #[test]
    fn summary_counts_by_outcome_and_layer() {
        let s = summary(false);
        assert!(!s.contains('\x1b'), "ANSI without color:\n{s}");
        assert_eq!(
            words(line_with(&s, "TOOL_SUCCESS  ")),
            ["TOOL_SUCCESS", "application", "3", "42.9%"]
        );
        assert_eq!(
            words(line_with(&s, "HTTP_ERROR  ")),
            ["HTTP_ERROR", "transport", "1", "14.3%"]
        );
        assert!(!s.contains("CANCELLED"), "zero outcomes are not listed");
        let by_layer = s.split("By layer").nth(1).unwrap();
        assert_eq!(
            words(line_with(by_layer, "transport")),
            ["transport", "2", "2"]
        );
        assert_eq!(
            words(line_with(by_layer, "application")),
            ["application", "5", "1"]
        );
        assert!(
            s.contains("7 MCP exchanges in 1 session; 4 HTTP exchanges"),
            "{s}"
        );
    }

    #[test]
    fn summary_failing_tools_and_latency() {
        let s = summary(false);
        let tools = s.split("Failing tools").nth(1).unwrap();
        assert_eq!(
            words(line_with(tools, "search")),
            ["search", "3", "2", "HTTP_ERROR", "1,", "TOOL_ERROR", "1"]
        );
        assert!(
            !tools
                .split("Retry chains")
                .next()
                .unwrap()
                .contains("fetch")
        );
        let lat = s.split("Latency by method").nth(1).unwrap();
        // tools/call latencies 10..50 ms: nearest-rank p50 = 30, p90 = p99 = 50.
        assert_eq!(
            words(line_with(lat, "tools/call")),
            [
                "tools/call",
                "5",
                "30.0",
                "ms",
                "50.0",
                "ms",
                "50.0",
                "ms",
                "50.0",
                "ms"
            ]
        );
        assert_eq!(words(line_with(lat, "initialize"))[1], "1");
    }

    #[test]
    fn summary_retry_chains_split_by_failure() {
        let s = summary(false);
        let r = s
            .split("Retry chains")
            .nth(1)
            .unwrap()
            .split("Latency")
            .next()
            .unwrap();
        assert!(
            r.contains(
                "2 retry chains: 1 after failures (1 recovered), 1 of calls that had succeeded"
            ),
            "{r}"
        );
        let (fail, success) = r.split_once("Repeats after success").unwrap();
        assert!(fail.contains("Retries after failures"));
        assert_eq!(
            words(line_with(fail, "#1 ")),
            [
                "tools/call",
                "id=1",
                "search",
                "1",
                "#1",
                "first",
                "HTTP_ERROR"
            ]
        );
        assert_eq!(
            words(line_with(fail, "#2 ")),
            [
                "2",
                "#2",
                "sdk",
                "TOOL_ERROR",
                "same",
                "id+body",
                "490ms",
                "after",
                "HTTP",
                "503"
            ]
        );
        assert_eq!(
            words(line_with(fail, "#3 ")),
            ["3", "#3", "application", "TOOL_SUCCESS"]
        );
        assert_eq!(words(line_with(fail, "final")), ["final", "TOOL_SUCCESS"]);
        assert_eq!(
            words(line_with(success, "#5 ")),
            ["2", "#5", "manual", "TOOL_SUCCESS"]
        );
    }

    #[test]
    fn summary_what_could_not_be_analyzed() {
        let s = summary(false);
        let n = s.split("Not analyzed").nth(1).unwrap();
        assert_eq!(
            words(line_with(n, "not_tcp")),
            ["skipped:", "not_tcp", "2", "packets"]
        );
        assert_eq!(
            words(line_with(n, "malformed")),
            ["skipped:", "malformed", "1", "packets"]
        );
        assert_eq!(
            words(line_with(n, "gaps")),
            ["gaps", "in", "TCP", "streams", "120", "bytes"]
        );
        assert!(line_with(n, "flow.overlap_mismatch").contains(" 1 "));
    }

    #[test]
    fn columns_are_aligned() {
        let s = summary(false);
        let outcomes = s
            .split("Outcomes\n")
            .nth(1)
            .unwrap()
            .split("\n\n")
            .next()
            .unwrap();
        let starts: Vec<usize> = outcomes
            .lines()
            .map(|l| l.find("  ").unwrap_or(0))
            .collect();
        let layer_col: Vec<usize> = outcomes
            .lines()
            .skip(1)
            .map(|l| {
                ["application", "transport", "protocol"]
                    .iter()
                    .find_map(|w| l.find(w))
                    .unwrap()
            })
            .collect();
        assert!(layer_col.windows(2).all(|w| w[0] == w[1]), "{outcomes}");
        assert!(!starts.is_empty());
        let ends: Vec<usize> = outcomes.lines().map(|l| l.len()).collect();
        assert!(
            ends.windows(2).all(|w| w[0] == w[1]),
            "right-aligned share column:\n{outcomes}"
        );
    }

    #[test]
    fn color_only_when_asked() {
        let s = summary(true);
        assert!(s.contains("\x1b[31mHTTP_ERROR\x1b[0m"));
        assert!(s.contains("\x1b[32mTOOL_SUCCESS\x1b[0m"));
        assert!(s.contains("\x1b[1mOutcomes\x1b[0m"));
        let plain = summary(false);
        let stripped = s
            .split('\x1b')
            .enumerate()
            .map(|(i, part)| {
                if i == 0 {
                    part
                } else {
                    part.split_once('m').unwrap().1
                }
            })
            .collect::<String>();
        assert_eq!(stripped, plain);
    }

    #[test]
    fn snapshots() {
        insta::assert_snapshot!("terminal_summary", summary(false));
        insta::assert_snapshot!(
            "session_timeline",
            session_timeline(&story(), "s1", false).unwrap()
        );
        insta::assert_snapshot!("sessions_table", sessions_table_text(&story(), false));
    }

    #[test]
    fn empty_run_says_so() {
        let stats = crate::anomaly::Stats::default();
        let s = terminal_summary(
            &RunInfo {
                inputs: &[],
                stats: &stats,
                rows: &[],
                elapsed_s: 0.0,
                bytes_read: 0,
            },
            false,
        );
        assert!(s.contains("no MCP exchanges found"));
        assert!(s.contains("nothing: every packet was used"));
    }

    #[test]
    fn timeline_reads_like_a_story() {
        let rows = story();
        assert!(session_timeline(&rows, "nope", false).is_none());
        let t = session_timeline(&rows, "s1", false).unwrap();
        assert!(!t.contains('\x1b'));
        assert!(line_with(&t, "ended by").contains("capture_end"));
        let lines: Vec<&str> = t.lines().filter(|l| l.contains("Z  ")).collect();
        // 7 requests, 6 responses, in time order.
        assert_eq!(lines.len(), 13, "{t}");
        let first = words(lines[0]);
        assert_eq!(
            first,
            ["1970-01-01T00:00:00.500000Z", "->", "#6", "initialize"]
        );
        assert_eq!(
            words(lines[1]),
            [
                "1970-01-01T00:00:00.502000Z",
                "<-",
                "#6",
                "initialize",
                "RPC_SUCCESS",
                "2.0",
                "ms"
            ]
        );
        let retry = line_with(&t, "retry of #1");
        assert!(
            retry.contains("-> ") && retry.contains("#2") && retry.contains("sdk, attempt 2"),
            "{retry}"
        );
        let failed = words(
            lines
                .iter()
                .find(|l| words(l)[1..3] == ["<-", "#1"])
                .unwrap(),
        );
        assert_eq!(
            failed[4..],
            ["id=1", "search", "503", "HTTP_ERROR", "10.0", "ms"]
        );
        // No response: the outcome stands on the request line.
        assert!(line_with(&t, "notifications/initialized").contains("NO_RESPONSE"));
        let times: Vec<&str> = lines.iter().map(|l| words(l)[0]).collect();
        assert!(times.windows(2).all(|w| w[0] <= w[1]));
    }

    #[test]
    fn capture_text_cannot_drive_the_terminal() {
        let mut rows = story();
        rows[1].tool_name = Some("evil\x1b]0;pwned\x07\nnext".into());
        rows[1].session_key = "k\x1b[2J".into();
        let stats = crate::anomaly::Stats::default();
        let s = terminal_summary(
            &RunInfo {
                inputs: &[],
                stats: &stats,
                rows: &rows,
                elapsed_s: 1.0,
                bytes_read: 0,
            },
            false,
        );
        assert!(!s.contains('\x1b') && !s.contains('\x07'), "{s}");
        assert!(s.contains("evil\\u{1b}]0;pwned\\u{7}\\nnext"), "{s}");
        let t = session_timeline(&rows, "k\x1b[2J", false).unwrap();
        assert!(!t.contains('\x1b'), "{t}");
        let long = "x".repeat(500);
        assert_eq!(clean(&long).chars().count(), MAX_CELL_CHARS + 1);
    }

    #[test]
    fn sessions_table_lists_each_session() {
        let mut rows = story();
        rows[0].session_key = "s0".into();
        rows[0].client_name = Some("cli".into());
        rows[0].client_version = Some("1.2".into());
        let t = sessions_table_text(&rows, false);
        assert!(!t.contains('\x1b'));
        assert_eq!(t.lines().count(), 3);
        let s0 = words(line_with(&t, "s0 "));
        assert_eq!(s0[..3], ["s0", "cli", "1.2"]);
        let s1 = words(line_with(&t, "s1 "));
        // 6 exchanges, 3 failures (HTTP_ERROR, TOOL_ERROR, NO_RESPONSE), 3 retries.
        assert_eq!(s1[s1.len() - 4..], ["6", "3", "3", "capture_end"]);
        assert_eq!(sessions_table_text(&[], false), "no MCP sessions found\n");
    }
}
