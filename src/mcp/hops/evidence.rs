//! `hop_evidence` texts: one line a person can check in the capture.

use super::Held;
use crate::mcp::{Exchange, Outcome};
use std::collections::VecDeque;
use std::fmt::Write;

/// Why the walk stopped at a row.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Stop {
    /// The row has no copy in the capture: its own server failed it.
    NoCopy,
    /// Its copy (this index) succeeded: the failure arose at the row's server.
    CopySucceeded(usize),
    /// Its copy (this index) was closed by the row's server (the gateway) before an answer.
    CopyGivenUp(usize),
}

fn ms(us: i64) -> f64 {
    us as f64 / 1000.0
}

/// On a copy: what it copies, through which gateway, how long after.
pub(super) fn copy_of(original: &Exchange, copy: &Exchange) -> String {
    let mut s = format!(
        "copy of #{} via {} (+{:.1} ms)",
        original.exchange_id,
        original.server_addr,
        ms(copy.ts_request.saturating_sub(original.ts_request))
    );
    if let Some(earlier) = copy.inference.gateway_retry_of {
        let _ = write!(s, ", resent after #{earlier} failed");
    }
    s
}

/// What a row's answer was, for a person: `HTTP 503`, or the outcome.
fn answer(row: &Exchange) -> String {
    match row.http_status {
        Some(status) if !(200..300).contains(&status) => format!("HTTP {status}"),
        _ => row.outcome.name().to_string(),
    }
}

/// Why the failure is placed at the row at `stop_at`.
pub(super) fn failure(held: &VecDeque<Held>, stop_at: usize, why: Stop) -> String {
    let Some(c) = held.get(stop_at).map(|h| &*h.row) else {
        return String::new();
    };
    let copy = |d: usize| held.get(d).map(|h| &*h.row);
    match why {
        Stop::NoCopy => format!(
            "failure arose at hop {}: #{} {}",
            c.hop.0,
            c.exchange_id,
            answer(c)
        ),
        Stop::CopySucceeded(d) => match copy(d) {
            Some(d) => format!(
                "failure arose at hop {}: #{} {} although its copy #{} succeeded",
                c.hop.0,
                c.exchange_id,
                answer(c),
                d.exchange_id
            ),
            None => String::new(),
        },
        Stop::CopyGivenUp(d) => match copy(d) {
            Some(d) => {
                let end = d
                    .inference
                    .ts_ended
                    .or(d.ts_response)
                    .unwrap_or(d.ts_request);
                let silent = if d.http_status.is_none() {
                    "without a response"
                } else {
                    "before the response was complete"
                };
                format!(
                    "gateway closed #{} after {:.0} ms {silent} and answered {} (failure at hop {})",
                    d.exchange_id,
                    ms(end.saturating_sub(d.ts_request)),
                    answer(c),
                    c.hop.0
                )
            }
            None => String::new(),
        },
    }
}

/// The failure changed outcome on its way back to this row.
pub(super) fn translated(now: Outcome, was: Outcome, hop: u8, at: u64) -> String {
    format!(
        "translated: {} at hop {hop} (#{at}) became {}",
        was.name(),
        now.name()
    )
}

/// Appends `text` to an evidence line (`; ` between parts).
pub(super) fn append(line: &mut Option<String>, text: &str) {
    if text.is_empty() {
        return;
    }
    match line {
        Some(l) => {
            l.push_str("; ");
            l.push_str(text);
        }
        None => *line = Some(text.to_string()),
    }
}
