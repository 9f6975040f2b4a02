//! Painting a [`LiveView`] into a ratatui frame: the header (interface and capture health),
//! counters by outcome and layer, the exchanges table, retry chains and findings, the key
//! line, and the details pane over the table.
//!
//! Outcomes are coloured as the terminal summary colours them (`paint::outcome_style`:
//! successes green, interaction outcomes yellow, failures red), and the layer beside them.

use super::details::draw_details;
use super::health::{fmt_elapsed, fmt_known, fmt_rate, fmt_share};
use super::style::{bad_if, clock, dim, outcome_tone, safe, tone};
use super::table::draw_table;
use super::view::{ChainEvent, LiveView, Mode};
use crate::mcp::retry::Finding;
use crate::mcp::{Layer, Outcome, RetryOrigin};
use crate::report::terminal::paint::{self, fmt_bytes};
use ratatui::Frame;
use ratatui::layout::Rect;
use ratatui::style::{Color, Modifier, Style};
use ratatui::text::{Line, Span};
use ratatui::widgets::Paragraph;

/// Chains shown at most in the chains panel.
const CHAIN_LINES: usize = 5;
/// Below this height the chains panel gives its lines to the table.
const CHAIN_PANEL_MIN_HEIGHT: u16 = 20;

/// The screen for `view`, filling the frame.
pub fn draw(view: &LiveView, frame: &mut Frame) {
    let area = frame.area();
    if area.width == 0 || area.height == 0 {
        return;
    }
    let line = |y: u16, h: u16| Rect::new(area.x, y, area.width, h);
    let mut top = area.y;
    let mut bottom = area.bottom();
    frame.render_widget(Paragraph::new(header_line(view, area.width)), line(top, 1));
    top = top.saturating_add(1);
    if bottom > top {
        bottom = bottom.saturating_sub(1);
        frame.render_widget(Paragraph::new(status_line(view)), line(bottom, 1));
    }
    if bottom.saturating_sub(top) >= 6 {
        frame.render_widget(Paragraph::new(counter_lines(view)), line(top, 2));
        top = top.saturating_add(2);
    }
    if area.height >= CHAIN_PANEL_MIN_HEIGHT && !view.chains.is_empty() {
        let n = view.chains.len().min(CHAIN_LINES) as u16; // at most CHAIN_LINES
        let h = n.saturating_add(1);
        bottom = bottom.saturating_sub(h);
        draw_chains(view, frame, line(bottom, h));
    }
    let table = line(top, bottom.saturating_sub(top));
    draw_table(view, frame, table);
    if view.mode == Mode::Details
        && let Some(row) = &view.details
    {
        draw_details(view, row, frame, table);
    }
}

/// The header: the long form when it fits, else short labels, so that drops and rows not
/// shown stay in sight on a narrow screen.
fn header_line(view: &LiveView, width: u16) -> Line<'static> {
    let long = header_spans(view, false);
    if long.width() <= usize::from(width) {
        long
    } else {
        header_spans(view, true)
    }
}

fn header_spans(view: &LiveView, short: bool) -> Line<'static> {
    let sep = || Span::styled(" │ ", dim());
    let bold = Style::new().add_modifier(Modifier::BOLD);
    let label =
        |long: &'static str, brief: &'static str| Span::raw(if short { brief } else { long });
    let mut spans = Vec::new();
    if !short {
        spans.push(Span::styled("mcp-trace live ", bold));
    }
    let h = view.health.latest.as_ref();
    let iface = h
        .map(|h| h.interface.as_str())
        .filter(|i| !i.is_empty())
        .unwrap_or(&view.header.interface);
    spans.push(Span::styled(safe(iface, 40), bold));
    if let Some(f) = view.header.bpf_filter.as_ref().filter(|_| !short) {
        spans.push(Span::raw(format!(" [{}]", safe(f, 40))));
    }
    let Some(h) = h else {
        spans.push(sep());
        spans.push(Span::styled("waiting for capture statistics", dim()));
        return Line::from(spans);
    };
    spans.push(sep());
    spans.push(Span::raw(fmt_elapsed(h.elapsed_s)));
    spans.push(sep());
    spans.push(Span::raw(h.packets.to_string()));
    spans.push(label(" packets ", " pkts "));
    spans.push(Span::raw(fmt_bytes(h.bytes)));
    spans.push(sep());
    spans.push(Span::raw(match view.health.rate() {
        Some((bytes, _)) if short => fmt_rate(bytes),
        Some((bytes, packets)) => format!("{} {packets:.0} pkt/s", fmt_rate(bytes)),
        None => "rate n/a".to_string(),
    }));
    spans.push(sep());
    spans.push(Span::raw("drops kernel "));
    spans.push(Span::styled(
        fmt_known(h.kernel_drops),
        bad_if(h.kernel_drops.unwrap_or(0)),
    ));
    spans.push(label(" interface ", " iface "));
    spans.push(Span::styled(
        fmt_known(h.interface_drops),
        bad_if(h.interface_drops.unwrap_or(0)),
    ));
    spans.push(sep());
    spans.push(label("capture loss ", "loss "));
    let lost = h.capture_loss.filter(|l| *l > 0.0).map_or(0, |_| 1);
    spans.push(Span::styled(fmt_share(h.capture_loss), bad_if(lost)));
    spans.push(sep());
    spans.push(label("rows not shown ", "not shown "));
    spans.push(Span::styled(
        h.rows_not_shown.to_string(),
        bad_if(h.rows_not_shown),
    ));
    if !short {
        for out in &view.header.outputs {
            spans.push(sep());
            spans.push(Span::styled(format!("→ {}", safe(out, 60)), dim()));
        }
    }
    Line::from(spans)
}

fn counter_lines(view: &LiveView) -> Vec<Line<'static>> {
    let sep = || Span::styled(" │ ", dim());
    let mut first = vec![
        Span::styled("calls ", dim()),
        Span::raw(view.calls.to_string()),
    ];
    for o in Outcome::ALL {
        let n = view.outcome_count(o);
        if n > 0 {
            first.push(Span::raw("  "));
            first.push(Span::styled(o.name(), outcome_tone(o)));
            first.push(Span::raw(format!(" {n}")));
        }
    }
    if view.copies > 0 {
        first.push(sep());
        first.push(Span::styled(
            format!(
                "{} gateway {} (hop > 1, not counted)",
                view.copies,
                if view.copies == 1 { "copy" } else { "copies" }
            ),
            dim(),
        ));
    }
    let mut second = vec![Span::styled("layers", dim())];
    for l in Layer::ALL {
        let n = view.layer_count(l);
        let failed = view.failures_by_layer.get(l.index()).copied().unwrap_or(0);
        second.push(Span::raw(format!("  {} {n}", l.name())));
        if failed > 0 {
            second.push(Span::styled(
                format!(" ({failed} failed)"),
                tone(paint::Style::Bad),
            ));
        }
    }
    let retries: Vec<String> = RetryOrigin::ALL
        .iter()
        .filter_map(|o| {
            let n = view.retries_by_origin.get(o.index()).copied().unwrap_or(0);
            (n > 0).then(|| format!("{} {n}", o.name()))
        })
        .collect();
    second.push(sep());
    second.push(Span::styled("retries ", dim()));
    second.push(Span::raw(if retries.is_empty() {
        "0".to_string()
    } else {
        retries.join(", ")
    }));
    let findings: Vec<String> = Finding::ALL
        .iter()
        .filter_map(|f| {
            let n = view.findings.get(f.index()).copied().unwrap_or(0);
            (n > 0).then(|| format!("{} {n}", f.name()))
        })
        .collect();
    second.push(sep());
    second.push(Span::styled("findings ", dim()));
    if findings.is_empty() {
        second.push(Span::raw("0"));
    } else {
        second.push(Span::styled(findings.join(", "), tone(paint::Style::Warn)));
    }
    vec![Line::from(first), Line::from(second)]
}

fn status_line(view: &LiveView) -> Line<'static> {
    let key = |k: &'static str| Span::styled(k, Style::new().add_modifier(Modifier::BOLD));
    let text = |t: &'static str| Span::styled(t, dim());
    if view.mode == Mode::Filter {
        return Line::from(vec![
            key("/"),
            Span::raw(safe(&view.input, 60)),
            Span::styled("█", dim()),
            text("  tool or method  "),
            key("Enter"),
            text(" apply  "),
            key("Esc"),
            text(" cancel"),
        ]);
    }
    // The state first: on a narrow screen the key names are what is cut.
    let sep = || Span::styled(" │ ", dim());
    let mut spans = vec![if view.follow {
        Span::styled("following", Style::new().fg(Color::Green))
    } else {
        Span::styled("scrolled (End follows)", Style::new().fg(Color::Yellow))
    }];
    spans.push(sep());
    let kept = view.rows.len() as u64; // usize fits u64
    spans.push(Span::raw(if kept < view.pushed {
        format!("{} rows, newest {kept} kept", view.pushed)
    } else {
        format!("{} rows", view.pushed)
    }));
    let lost = view.health.latest.as_ref().map_or(0, |h| h.rows_not_shown);
    if lost > 0 {
        spans.push(Span::styled(
            format!(" (+{lost} not shown: the screen fell behind)"),
            bad_if(lost),
        ));
    }
    let mark = Style::new().fg(Color::Cyan).add_modifier(Modifier::BOLD);
    if view.failures_only {
        spans.push(sep());
        spans.push(Span::styled("showing failures only", mark));
    }
    if !view.text_filter.is_empty() {
        spans.push(sep());
        spans.push(Span::styled(
            format!("filter: {}", safe(&view.text_filter, 40)),
            mark,
        ));
    }
    spans.push(sep());
    let keys: &[(&'static str, &'static str)] = match view.mode {
        Mode::Details => &[("Esc", "close"), ("↑↓", "scroll"), ("q", "quit")],
        _ if !view.text_filter.is_empty() => &[
            ("q", "quit"),
            ("f", "failures only"),
            ("/", "filter"),
            ("Esc", "clear filter"),
            ("Enter", "details"),
            ("↑↓ PgUp PgDn Home End", "scroll"),
        ],
        _ => &[
            ("q", "quit"),
            ("f", "failures only"),
            ("/", "filter"),
            ("Enter", "details"),
            ("↑↓ PgUp PgDn Home End", "scroll"),
        ],
    };
    for (n, (k, what)) in keys.iter().enumerate() {
        if n > 0 {
            spans.push(Span::raw("  "));
        }
        spans.push(key(k));
        spans.push(Span::styled(format!(" {what}"), dim()));
    }
    Line::from(spans)
}

fn draw_chains(view: &LiveView, frame: &mut Frame, area: Rect) {
    let shown = usize::from(area.height.saturating_sub(1));
    let mut lines = vec![Line::from(vec![
        Span::styled(
            "Retry chains and findings",
            Style::new().add_modifier(Modifier::BOLD),
        ),
        Span::styled(
            format!(" (newest last; {} chains)", view.chains.len()),
            dim(),
        ),
    ])];
    let skip = view.chains.len().saturating_sub(shown);
    lines.extend(view.chains.iter().skip(skip).map(chain_line));
    frame.render_widget(Paragraph::new(lines), area);
}

fn chain_line(c: &ChainEvent) -> Line<'static> {
    let mut spans = vec![
        Span::raw(clock(c.ts_request)),
        Span::raw("  "),
        Span::raw(safe(&c.call, 40)),
    ];
    if c.hop.0 > 1 {
        spans.push(Span::styled(format!(" (hop {})", c.hop.0), dim()));
    }
    spans.push(Span::raw(": "));
    for (n, a) in c.attempts.iter().enumerate() {
        if n > 0 {
            spans.push(Span::styled(" → ", dim()));
            if n + 1 == c.attempts.len() && c.elided > 0 {
                spans.push(Span::styled(format!("… {} more → ", c.elided), dim()));
            }
        }
        spans.push(Span::raw(format!("#{} ", a.exchange_id)));
        match a.outcome {
            Some(o) => spans.push(Span::styled(o.name(), outcome_tone(o))),
            None => spans.push(Span::styled("(not kept)", dim())),
        }
        if a.origin != RetryOrigin::None {
            spans.push(Span::styled(format!(" by {}", a.origin), dim()));
        }
    }
    if let Some(text) = c.findings.text() {
        spans.push(Span::raw("  "));
        spans.push(Span::styled(text, tone(paint::Style::Warn)));
    }
    Line::from(spans)
}
