//! Plain text and color for the terminal: safe cells, styles, aligned tables, counts and
//! units shared by every section.

use super::MAX_CELL_CHARS;
use crate::display::{self, Cut, Escape};
use crate::mcp::Exchange;
use crate::mcp::{Kind, Outcome};
use std::fmt::Write as _;

/// Capture-derived text made safe for a terminal: control characters (escape sequences,
/// newlines) are shown escaped, never interpreted, and overlong text is cut.
pub(super) fn clean(text: &str) -> String {
    display::clip(text, Escape::Rust, Cut::Text(MAX_CELL_CHARS))
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Style {
    Plain,
    Bold,
    Dim,
    Good,
    Warn,
    Bad,
}

/// One table cell: text plus style.
#[derive(Debug, Clone)]
pub(super) struct Text(pub(super) String, pub(super) Style);

pub(super) fn plain(s: impl Into<String>) -> Text {
    Text(s.into(), Style::Plain)
}

/// The style of an outcome: green for success, yellow for interaction, red for failure.
pub(super) fn outcome_style(outcome: Outcome) -> Style {
    match outcome {
        Outcome::InputRequired | Outcome::TaskCreated => Style::Warn,
        o if o.is_failure() => Style::Bad,
        _ => Style::Good,
    }
}

pub(super) fn outcome_text(outcome: Outcome) -> Text {
    Text(outcome.name().to_string(), outcome_style(outcome))
}

#[derive(Debug, Clone, Copy)]
pub(super) struct Painter {
    pub(super) color: bool,
}

impl Painter {
    pub(super) fn paint(&self, text: &str, style: Style) -> String {
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

    pub(super) fn heading(&self, out: &mut String, title: &str) {
        if !out.is_empty() {
            out.push('\n');
        }
        out.push_str(&self.paint(title, Style::Bold));
        out.push('\n');
    }

    /// Appends an aligned table indented by two spaces. `right` marks numeric columns.
    pub(super) fn table(
        &self,
        out: &mut String,
        header: &[&str],
        right: &[bool],
        rows: &[Vec<Text>],
    ) {
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
pub(super) fn count(n: impl std::fmt::Display, noun: &str) -> String {
    let n = n.to_string();
    if n == "1" {
        format!("1 {noun}")
    } else {
        format!("{n} {noun}s")
    }
}

/// Milliseconds for a person: `412.0 ms`, `3.20 s`.
pub(super) fn fmt_ms(ms: f64) -> String {
    if ms.abs() >= 1000.0 {
        format!("{:.2} s", ms / 1000.0)
    } else {
        format!("{ms:.1} ms")
    }
}

pub(super) fn fmt_bytes(n: u64) -> String {
    match n {
        n if n >= 1_000_000_000 => format!("{:.1} GB", n as f64 / 1e9),
        n if n >= 1_000_000 => format!("{:.1} MB", n as f64 / 1e6),
        n if n >= 1_000 => format!("{:.1} kB", n as f64 / 1e3),
        n => format!("{n} B"),
    }
}

/// What a row asked for: `tools/call id=1 search`, `GET stream`, `DELETE`.
pub(super) fn describe(e: &Exchange) -> String {
    Call {
        rpc_method: e.rpc_method.as_deref(),
        kind: e.kind,
        http_method: &e.http_method,
        path: &e.path,
        jsonrpc_id: e.jsonrpc_id.as_deref(),
        tool_name: e.tool_name.as_deref(),
    }
    .describe()
}

/// The parts of a row that say what it asked for.
pub(super) struct Call<'a> {
    pub rpc_method: Option<&'a str>,
    pub kind: Kind,
    pub http_method: &'a str,
    pub path: &'a str,
    pub jsonrpc_id: Option<&'a str>,
    pub tool_name: Option<&'a str>,
}

impl Call<'_> {
    /// `tools/call id=1 search`, `GET stream`, `DELETE`.
    pub(super) fn describe(&self) -> String {
        let mut s = match (self.rpc_method, self.kind) {
            (Some(m), _) => m.to_string(),
            (None, Kind::Stream) => format!("{} stream", self.http_method),
            (None, Kind::SessionEnd) => self.http_method.to_string(),
            (None, _) => format!("{} {}", self.http_method, self.path),
        };
        if let Some(id) = self.jsonrpc_id {
            let _ = write!(s, " id={id}");
        }
        if let Some(tool) = self.tool_name {
            let _ = write!(s, " {tool}");
        }
        s
    }
}
