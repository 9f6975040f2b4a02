//! Text for a person (report-schema.md section 5): the run's terminal summary, the sessions
//! list (`mcp-trace sessions`) and one session's timeline (`mcp-trace show --session`).
//!
//! Columns are aligned on visible width; ANSI color is added after padding and only when
//! the caller asks (stdout is a terminal), so redirected output is plain text.

use super::row::{OUTCOMES, is_failure, outcome_index};
use super::sessions::sessions;
use super::summary::{RunInfo, layer_counts, outcome_counts};
use super::time::format_rfc3339_us;
use crate::mcp::Exchange;
use std::collections::{BTreeMap, HashMap};
use std::fmt::Write as _;

/// Retry chains shown per category before the rest is only counted.
const MAX_CHAINS_SHOWN: usize = 20;
/// Longest `retry_of` path followed; guards against a cycle in bad input.
const MAX_CHAIN_DEPTH: usize = 1000;
/// Rows of other long lists (tools, methods, anomalies) shown before "... N more".
const MAX_LIST_ROWS: usize = 40;

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
        let mut widths: Vec<usize> = header.iter().map(|h| h.chars().count()).collect();
        for row in rows {
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
        line(header.iter().map(|h| Text(h.to_string(), Style::Dim)).collect());
        for row in rows {
            line(row.clone());
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

/// A retry chain rebuilt from the rows' `retry_of` links.
#[derive(Debug, Clone)]
pub struct Chain<'a> {
    /// Attempts in exchange order; the first has no `retry_of` inside the chain.
    pub attempts: Vec<&'a Exchange>,
}

impl Chain<'_> {
    /// Outcome of the last attempt.
    pub fn final_outcome(&self) -> &str {
        self.attempts.last().map_or("", |e| e.outcome.as_str())
    }

    /// The first attempt failed: these are retries after a failure, not repeats of a
    /// call that had succeeded (section 4: the summary keeps them apart).
    pub fn after_failure(&self) -> bool {
        self.attempts.first().is_some_and(|e| is_failure(&e.outcome))
    }
}

/// Groups rows linked by `retry_of` into chains, ordered by their first exchange.
pub fn retry_chains(rows: &[Exchange]) -> Vec<Chain<'_>> {
    let by_id: HashMap<u64, &Exchange> = rows.iter().map(|r| (r.exchange_id, r)).collect();
    let mut groups: BTreeMap<u64, Vec<&Exchange>> = BTreeMap::new();
    for r in rows.iter().filter(|r| r.retry_of.is_some()) {
        let mut root = r;
        for _ in 0..MAX_CHAIN_DEPTH {
            match root.retry_of.and_then(|p| by_id.get(&p)) {
                Some(prev) if prev.exchange_id != root.exchange_id => root = prev,
                _ => break,
            }
        }
        let group = groups.entry(root.exchange_id).or_default();
        if group.is_empty() && root.exchange_id != r.exchange_id {
            group.push(root);
        }
        group.push(r);
    }
    groups
        .into_values()
        .map(|mut attempts| {
            attempts.sort_by_key(|e| e.exchange_id);
            attempts.dedup_by_key(|e| e.exchange_id);
            Chain { attempts }
        })
        .collect()
}

/// What a row asked for: `tools/call id=1 search`, `GET stream`, `DELETE`.
fn describe(e: &Exchange) -> String {
    let mut s = match (&e.rpc_method, e.kind.as_str()) {
        (Some(m), _) => m.clone(),
        (None, "stream") => format!("{} stream", e.http_method),
        (None, "session_end") => e.http_method.clone(),
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
        "  {} MCP exchanges in {} sessions; {} HTTP exchanges; {} read in {:.2} s ({:.1} MB/s)",
        rows.len(),
        n_sessions,
        info.stats.http_exchanges,
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
                plain(if i.gzip { format!("{} (gzip)", i.format) } else { i.format.to_string() }),
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
        p.table(out, &["input", "format", "size", "link types", "note"], &[false, false, true, false, false], &table);
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
    let mut names: Vec<&String> = counts.keys().filter(|k| counts.get(*k) != Some(&0)).collect();
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
    p.table(out, &["outcome", "layer", "count", "share"], &[false, false, true, true], &table);

    p.heading(out, "By layer");
    let mut failures: HashMap<&str, u64> = HashMap::new();
    for r in rows.iter().filter(|r| is_failure(&r.outcome)) {
        let n = failures.entry(r.layer.as_str()).or_default();
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
    p.table(out, &["layer", "exchanges", "failures"], &[false, true, true], &table);
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
        let Some(name) = r.tool_name.as_deref() else { continue };
        let t = tools.entry(name).or_default();
        t.calls = t.calls.saturating_add(1);
        if is_failure(&r.outcome) {
            t.failures = t.failures.saturating_add(1);
            let n = t.by_outcome.entry(r.outcome.clone()).or_default();
            *n = n.saturating_add(1);
        }
    }
    let mut failing: Vec<(&str, Tool)> = tools.into_iter().filter(|(_, t)| t.failures > 0).collect();
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
            let outcomes: Vec<String> =
                t.by_outcome.iter().map(|(o, n)| format!("{o} {n}")).collect();
            vec![
                plain(*name),
                plain(t.calls.to_string()),
                Text(t.failures.to_string(), Style::Bad),
                plain(outcomes.join(", ")),
            ]
        })
        .collect();
    p.table(out, &["tool", "calls", "failures", "outcomes"], &[false, true, true, false], &table);
    if more > 0 {
        let _ = writeln!(out, "  ... and {more} more tools");
    }
}

fn chain_table(p: Painter, out: &mut String, chains: &[&Chain<'_>]) {
    let mut table = Vec::new();
    for chain in chains.iter().take(MAX_CHAINS_SHOWN) {
        for (i, e) in chain.attempts.iter().enumerate() {
            let origin = if i == 0 { "first".to_string() } else { e.retry_origin.clone() };
            table.push(vec![
                plain(if i == 0 { describe(e) } else { String::new() }),
                plain(e.attempt.to_string()),
                plain(format!("#{}", e.exchange_id)),
                plain(origin),
                outcome_text(&e.outcome),
                plain(e.retry_evidence.clone().unwrap_or_default()),
            ]);
        }
        let fin = chain.final_outcome();
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
        &["call", "attempt", "exchange", "origin", "outcome", "evidence"],
        &[false, true, false, false, false, false],
        &table,
    );
    if chains.len() > MAX_CHAINS_SHOWN {
        let _ = writeln!(out, "  ... and {} more chains", chains.len() - MAX_CHAINS_SHOWN);
    }
}

fn write_retries(p: Painter, out: &mut String, rows: &[Exchange]) {
    p.heading(out, "Retry chains");
    let chains = retry_chains(rows);
    if chains.is_empty() {
        out.push_str("  none\n");
        return;
    }
    let mut by_origin: BTreeMap<&str, u64> = BTreeMap::new();
    for r in rows.iter().filter(|r| r.retry_of.is_some()) {
        let n = by_origin.entry(r.retry_origin.as_str()).or_default();
        *n = n.saturating_add(1);
    }
    let origins: Vec<String> = by_origin.iter().map(|(o, n)| format!("{o} {n}")).collect();
    let (after_failure, after_success): (Vec<&Chain>, Vec<&Chain>) =
        chains.iter().partition(|c| c.after_failure());
    let recovered = after_failure
        .iter()
        .filter(|c| !is_failure(c.final_outcome()))
        .count();
    let _ = writeln!(
        out,
        "  {} chains: {} retries after failures ({} recovered), {} repeats of calls that had succeeded; retries by origin: {}",
        chains.len(),
        after_failure.len(),
        recovered,
        after_success.len(),
        origins.join(", ")
    );
    if !after_failure.is_empty() {
        out.push_str("\n  Retries after failures\n");
        chain_table(p, out, &after_failure);
    }
    if !after_success.is_empty() {
        out.push_str("\n  Repeats after success\n");
        chain_table(p, out, &after_success);
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
    p.table(out, &["method", "n", "p50", "p90", "p99", "max"], &[false, true, true, true, true, true], &table);
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
            facts.push(vec![plain(what), Text(n.to_string(), Style::Warn), plain(unit)]);
        }
    };
    for (reason, n) in &s.packets_skipped {
        fact(format!("skipped: {reason}"), *n, "packets");
    }
    fact("truncated by snap length (used as far as they go)".into(), s.packets_truncated, "packets");
    fact("gaps in TCP streams".into(), s.gap_bytes, "bytes");
    fact("retransmitted or overlapping".into(), s.duplicate_bytes, "bytes");
    fact("TCP streams that were not HTTP".into(), s.non_http_streams, "streams");
    fact("skipped while resynchronising HTTP".into(), s.http_bytes_skipped, "bytes");
    let more_anomalies = s.anomalies.len().saturating_sub(MAX_LIST_ROWS);
    for (name, n) in s.anomalies.iter().take(MAX_LIST_ROWS) {
        fact(format!("anomaly {name}"), *n, "times");
    }
    for i in info.inputs {
        if let Some(e) = &i.error {
            facts.push(vec![plain(format!("{}: {e}", i.name)), plain(""), plain("")]);
        }
    }
    if facts.is_empty() {
        out.push_str("  nothing: every packet was used\n");
        return;
    }
    p.table(out, &["what", "count", "unit"], &[false, true, false], &facts);
    if more_anomalies > 0 {
        let _ = writeln!(out, "  ... and {more_anomalies} more anomaly names (see --summary)");
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
                Text(failures.to_string(), if failures > 0 { Style::Bad } else { Style::Plain }),
                plain(retries.to_string()),
                plain(s.ended_by.clone()),
            ]
        })
        .collect();
    let mut out = String::new();
    p.table(
        &mut out,
        &["session", "client", "client addr", "transport", "first", "span", "exchanges", "failures", "retries", "ended by"],
        &[false, false, false, false, false, true, true, true, true, false],
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
        p.heading(&mut out, &format!("Session {}", s.session_key));
        let mut facts = vec![
            ("session id", s.session_id.clone().unwrap_or_else(|| "-".into())),
            ("transport", s.transport.clone()),
            ("protocol", s.protocol_version.clone().unwrap_or_else(|| "-".into())),
        ];
        let client = [&s.client_name, &s.client_version, &s.user_agent]
            .iter()
            .filter_map(|v| v.as_deref())
            .collect::<Vec<_>>()
            .join(" / ");
        facts.push(("client", if client.is_empty() { "-".into() } else { client }));
        facts.push(("endpoints", format!("{} -> {}", s.client_addr, s.server_addr)));
        facts.push((
            "span",
            format!("{} .. {}", format_rfc3339_us(s.first_ts), format_rfc3339_us(s.last_ts)),
        ));
        facts.push(("ended by", s.ended_by.clone()));
        for (k, v) in facts {
            let _ = writeln!(out, "  {k:<10}  {v}");
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
                if let Some(prev) = r.retry_of {
                    let mut l = format!("retry of #{prev} ({}, attempt {})", r.retry_origin, r.attempt);
                    if let Some(ev) = &r.retry_evidence {
                        let _ = write!(l, ": {ev}");
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
                plain(if dir == 1 { r.http_status.map(|s| s.to_string()).unwrap_or_default() } else { String::new() }),
                if show_outcome { outcome_text(&r.outcome) } else { plain("") },
                plain(if dir == 1 { r.latency_ms.map(fmt_ms).unwrap_or_default() } else { String::new() }),
                plain(links.join("; ")),
            ]
        })
        .collect();
    out.push('\n');
    p.table(
        &mut out,
        &["time (UTC)", "dir", "exchange", "message", "status", "outcome", "latency", "notes"],
        &[false, false, false, false, true, false, true, false],
        &table,
    );
    Some(out)
}
