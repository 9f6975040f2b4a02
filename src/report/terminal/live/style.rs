//! Styles and cell text shared by the screen's parts: the terminal summary's outcome colours
//! as ratatui styles, capture text made safe for a cell, clock times.

use crate::display::{self, Cut, Escape};
use crate::mcp::Outcome;
use crate::report::terminal::paint::{self, outcome_style};
use crate::timestamp::format_rfc3339_us;
use ratatui::style::{Color, Modifier, Style};

pub(super) fn tone(style: paint::Style) -> Style {
    match style {
        paint::Style::Plain => Style::new(),
        paint::Style::Bold => Style::new().add_modifier(Modifier::BOLD),
        paint::Style::Dim => Style::new().fg(Color::DarkGray),
        paint::Style::Good => Style::new().fg(Color::Green),
        paint::Style::Warn => Style::new().fg(Color::Yellow),
        paint::Style::Bad => Style::new().fg(Color::Red),
    }
}

pub(super) fn outcome_tone(o: Outcome) -> Style {
    tone(outcome_style(o))
}

pub(super) fn dim() -> Style {
    tone(paint::Style::Dim)
}

pub(super) fn bad_if(n: u64) -> Style {
    if n > 0 {
        tone(paint::Style::Bad).add_modifier(Modifier::BOLD)
    } else {
        Style::new()
    }
}

/// Capture text safe for one cell, at most `max` characters shown.
pub(super) fn safe(text: &str, max: usize) -> String {
    display::clip(text, Escape::Rust, Cut::Shown(max.max(1)))
}

/// `12:34:56.789` (UTC).
pub(super) fn clock(ts_us: i64) -> String {
    let t = format_rfc3339_us(ts_us);
    t.get(11..23).unwrap_or(&t).to_string()
}
