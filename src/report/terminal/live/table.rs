//! The exchanges table: one line per row in sight, columns dropped from the least needed on
//! a narrow screen, the selected row reversed.

use super::row::ScreenRow;
use super::style::{clock, dim, outcome_tone, safe, tone};
use super::view::LiveView;
use crate::report::terminal::paint::{self, fmt_ms};
use ratatui::Frame;
use ratatui::layout::{Constraint, Rect};
use ratatui::style::{Modifier, Style};
use ratatui::text::{Line, Span};
use ratatui::widgets::{Cell, Paragraph, Row, Table};

/// A table column: its header, its cell for a row, and how much it matters on a narrow
/// screen (columns are dropped from the highest `drop_order` first).
struct Column {
    header: &'static str,
    cell: fn(&ScreenRow) -> (String, Style),
    /// Widest cell shown; longer text is cut.
    max: usize,
    drop_order: u8,
    right: bool,
}

fn col_id(r: &ScreenRow) -> (String, Style) {
    (format!("#{}", r.exchange_id), dim())
}
fn col_time(r: &ScreenRow) -> (String, Style) {
    (clock(r.ts_request), Style::new())
}
fn col_session(r: &ScreenRow) -> (String, Style) {
    (r.session_key.to_string(), dim())
}
fn col_call(r: &ScreenRow) -> (String, Style) {
    (r.call(), Style::new())
}
fn col_status(r: &ScreenRow) -> (String, Style) {
    match r.http_status {
        Some(s) if !(200..300).contains(&s) => (s.to_string(), tone(paint::Style::Bad)),
        Some(s) => (s.to_string(), Style::new()),
        None => ("-".into(), dim()),
    }
}
fn col_outcome(r: &ScreenRow) -> (String, Style) {
    (r.outcome.name().into(), outcome_tone(r.outcome))
}
fn col_layer(r: &ScreenRow) -> (String, Style) {
    (r.layer.name().into(), outcome_tone(r.outcome))
}
fn col_latency(r: &ScreenRow) -> (String, Style) {
    match r.latency_ms {
        Some(ms) => (fmt_ms(ms), Style::new()),
        None => ("-".into(), dim()),
    }
}
fn col_retry(r: &ScreenRow) -> (String, Style) {
    match (r.retry_of, r.continuation_of) {
        (Some(of), _) => (format!("#{of} {}", r.retry_origin), Style::new()),
        (None, Some(of)) => (format!("continues #{of}"), dim()),
        (None, None) => (String::new(), Style::new()),
    }
}
fn col_findings(r: &ScreenRow) -> (String, Style) {
    let text = r.retry_findings.text().unwrap_or_default().to_string();
    (text, tone(paint::Style::Warn))
}
fn col_hop(r: &ScreenRow) -> (String, Style) {
    let mut s = r.hop.0.to_string();
    if let Some(from) = r.forwarded_from {
        s.push_str(&format!(" ←#{from}"));
    }
    if let Some(f) = r.fault_hop {
        s.push_str(&format!(" fault {f}"));
    }
    (s, Style::new())
}

/// The table's columns in screen order.
const COLUMNS: [Column; 11] = [
    Column {
        header: "#",
        cell: col_id,
        max: 8,
        drop_order: 2,
        right: true,
    },
    Column {
        header: "time",
        cell: col_time,
        max: 12,
        drop_order: 4,
        right: false,
    },
    Column {
        header: "session",
        cell: col_session,
        max: 16,
        drop_order: 9,
        right: false,
    },
    Column {
        header: "method / tool",
        cell: col_call,
        max: 48,
        drop_order: 1,
        right: false,
    },
    Column {
        header: "status",
        cell: col_status,
        max: 6,
        drop_order: 5,
        right: true,
    },
    Column {
        header: "outcome",
        cell: col_outcome,
        max: 19,
        drop_order: 0,
        right: false,
    },
    Column {
        header: "layer",
        cell: col_layer,
        max: 11,
        drop_order: 10,
        right: false,
    },
    Column {
        header: "latency",
        cell: col_latency,
        max: 10,
        drop_order: 3,
        right: true,
    },
    Column {
        header: "retry of",
        cell: col_retry,
        max: 22,
        drop_order: 6,
        right: false,
    },
    Column {
        header: "findings",
        cell: col_findings,
        max: 40,
        drop_order: 7,
        right: false,
    },
    Column {
        header: "hop",
        cell: col_hop,
        max: 18,
        drop_order: 8,
        right: false,
    },
];

/// The index of the `method / tool` column, which takes the width left over.
const CALL_COLUMN: usize = 3;
/// The narrowest `method / tool` column kept.
const CALL_MIN: usize = 12;
/// Columns less needed than `method / tool` are dropped to give it this many characters.
const CALL_WANT: usize = 32;

pub(super) fn draw_table(view: &LiveView, frame: &mut Frame, area: Rect) {
    if area.height == 0 {
        return;
    }
    let visible = view.visible();
    let height = usize::from(area.height.saturating_sub(1)); // the header row
    let top = view.top_pos(&visible, height);
    let selected = view.selected_pos(&visible);
    let window: Vec<(bool, &ScreenRow)> = visible
        .iter()
        .enumerate()
        .skip(top)
        .take(height)
        .filter_map(|(pos, &i)| Some((Some(pos) == selected, &view.rows.get(i)?.row)))
        .collect();
    if window.is_empty() {
        let why = if view.pushed == 0 {
            "no MCP exchange yet: rows appear as calls complete"
        } else {
            "no row matches the filters (f, /, Esc clears the text filter)"
        };
        let lines = vec![
            header_row_line(),
            Line::from(Span::styled(format!("  {why}"), dim())),
        ];
        frame.render_widget(Paragraph::new(lines), area);
        return;
    }
    // Each column's cells for the rows in sight, and its width.
    let cells: Vec<Vec<(String, Style)>> = COLUMNS
        .iter()
        .map(|c| {
            window
                .iter()
                .map(|(_, r)| {
                    let (text, style) = (c.cell)(r);
                    (safe(&text, c.max), style)
                })
                .collect()
        })
        .collect();
    let mut widths: Vec<usize> = COLUMNS
        .iter()
        .zip(&cells)
        .map(|(c, col)| {
            col.iter()
                .map(|(t, _)| t.chars().count())
                .chain([c.header.chars().count()])
                .max()
                .unwrap_or(0)
        })
        .collect();
    let shown = fit_columns(&widths, usize::from(area.width));
    // The call column takes what is left.
    let used: usize = shown
        .iter()
        .filter(|&&i| i != CALL_COLUMN)
        .map(|&i| widths.get(i).copied().unwrap_or(0).saturating_add(1))
        .sum();
    if let Some(w) = widths.get_mut(CALL_COLUMN) {
        *w = usize::from(area.width)
            .saturating_sub(used)
            .max(CALL_MIN.min(*w));
    }
    let header = Row::new(shown.iter().filter_map(|&i| {
        let c = COLUMNS.get(i)?;
        let w = widths.get(i).copied().unwrap_or(0);
        Some(Cell::from(align(c.header, w, c.right)).style(dim().add_modifier(Modifier::BOLD)))
    }));
    let rows = window.iter().enumerate().map(|(n, (is_selected, _))| {
        let row = Row::new(shown.iter().filter_map(|&i| {
            let c = COLUMNS.get(i)?;
            let (text, style) = cells.get(i)?.get(n)?;
            let w = widths.get(i).copied().unwrap_or(0);
            Some(Cell::from(Span::styled(align(text, w, c.right), *style)))
        }));
        if *is_selected {
            row.style(Style::new().add_modifier(Modifier::REVERSED))
        } else {
            row
        }
    });
    let constraints: Vec<Constraint> = shown
        .iter()
        .map(|&i| {
            let w = widths.get(i).copied().unwrap_or(0);
            Constraint::Length(u16::try_from(w).unwrap_or(u16::MAX))
        })
        .collect();
    let table = Table::new(rows, constraints)
        .header(header)
        .column_spacing(1);
    frame.render_widget(table, area);
}

fn header_row_line() -> Line<'static> {
    let names: Vec<&str> = COLUMNS.iter().map(|c| c.header).collect();
    Line::from(Span::styled(names.join("  "), dim()))
}

/// The columns that fit in `width`, in screen order: the least needed are dropped first.
fn fit_columns(widths: &[usize], width: usize) -> Vec<usize> {
    let mut order: Vec<usize> = (0..COLUMNS.len()).collect();
    order.sort_by_key(|&i| COLUMNS.get(i).map_or(u8::MAX, |c| c.drop_order));
    let need = |i: usize| {
        let w = widths.get(i).copied().unwrap_or(0);
        if i == CALL_COLUMN {
            w.min(CALL_WANT)
        } else {
            w
        }
        .saturating_add(1)
    };
    let mut kept = Vec::new();
    let mut used = 0usize;
    for i in order {
        if used.saturating_add(need(i)) <= width.saturating_add(1) || kept.is_empty() {
            used = used.saturating_add(need(i));
            kept.push(i);
        }
    }
    kept.sort_unstable();
    kept
}

fn align(text: &str, width: usize, right: bool) -> String {
    if right {
        format!("{text:>width$}")
    } else {
        text.to_string()
    }
}
