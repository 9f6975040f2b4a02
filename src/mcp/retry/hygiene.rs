//! Retry hygiene (report-schema.md section 4b): was a repeat wise? Six findings on each attempt
//! that repeats another by rules 2-4, judged against the attempt it repeats (its snapshot in
//! the repeat index) and the tool catalog. Continuations (rule 1) and stream resumptions
//! (rule 5) are never judged.
//!
//! In: the attempt's row (retry columns just set) and the earlier attempt's [`Prior`].
//! Out: the findings that apply, in [`Finding::ALL`] order, each with one clause of facts for
//! `retry_evidence`. Pure: no state of its own.
//!
//! Gaps: an attempt's gap is its `ts_request` minus the end of the attempt it repeats
//! (`ts_response`, or `ts_request` if that never ended); a negative gap (sent while the earlier
//! one was still open) counts as 0.

use super::index::Prior;
use super::tool_catalog::{ToolCatalog, ToolSafety};
use super::{clip, ms, result};
use crate::contract::contract_names;
use crate::mcp::{Exchange, InferenceConfig, Outcome};
use std::sync::OnceLock;

contract_names! {
    /// A retry-hygiene finding; [`Finding::name`] is its contract name, [`Finding::ALL`] the
    /// order of the contract's table (and of `retry_findings`).
    pub enum Finding {
        UnsafeRetry => "unsafe_retry",
        RetryAfterIgnored => "retry_after_ignored",
        UnchangedAfterInvalidParams => "unchanged_after_invalid_params",
        ReplayAfterInvalidResponse => "replay_after_invalid_response",
        NoBackoff => "no_backoff",
        TooManyAttempts => "too_many_attempts",
    }
}

/// The findings on one row (the `retry_findings` column): a set over [`Finding::ALL`],
/// written as the names in that order joined by `;`.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct FindingSet {
    bits: u8,
}

impl FindingSet {
    pub fn insert(&mut self, f: Finding) {
        self.bits |= 1 << f.index();
    }

    pub fn contains(self, f: Finding) -> bool {
        self.bits & (1 << f.index()) != 0
    }

    pub fn is_empty(self) -> bool {
        self.bits == 0
    }

    /// The findings, in [`Finding::ALL`] order.
    pub fn iter(self) -> impl Iterator<Item = Finding> {
        Finding::ALL.into_iter().filter(move |f| self.contains(*f))
    }

    /// The column's text, `None` for no finding. Every set's text is made once, so that a
    /// writer borrows it as it borrows any other cell.
    pub fn text(self) -> Option<&'static str> {
        static TEXTS: OnceLock<Vec<String>> = OnceLock::new();
        let texts = TEXTS.get_or_init(|| {
            (0..1u16 << Finding::ALL.len())
                .map(|bits| {
                    let set = FindingSet { bits: bits as u8 };
                    set.iter().map(Finding::name).collect::<Vec<_>>().join(";")
                })
                .collect()
        });
        if self.is_empty() {
            return None;
        }
        texts.get(usize::from(self.bits)).map(String::as_str)
    }
}

impl FromIterator<Finding> for FindingSet {
    fn from_iter<I: IntoIterator<Item = Finding>>(iter: I) -> FindingSet {
        let mut set = FindingSet::default();
        for f in iter {
            set.insert(f);
        }
        set
    }
}

impl serde::Serialize for FindingSet {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        self.text().serialize(s)
    }
}

/// Earlier attempts whose side effects are uncertain (they may have run).
fn uncertain(e: &Prior) -> bool {
    match e.outcome {
        Outcome::NoResponse | Outcome::StreamIncomplete | Outcome::Cancelled => true,
        Outcome::HttpError => matches!(e.http_status, Some(500 | 502 | 503 | 504)),
        _ => false,
    }
}

/// Responses that are not valid answers: replaying the same call asks for the same breakage.
const INVALID_RESPONSES: [Outcome; 3] = [
    Outcome::MalformedJson,
    Outcome::InvalidEnvelope,
    Outcome::InvalidToolResult,
];

/// JSON-RPC "Invalid params".
const INVALID_PARAMS: i64 = -32602;

/// The gap of an attempt sent at `ts_request` after `e` (µs, at least 0).
pub(super) fn gap_after(ts_request: i64, e: &Prior) -> i64 {
    let end = e.ts_response.unwrap_or(e.ts_request);
    ts_request.saturating_sub(end).max(0)
}

/// The findings on `row`, a repeat (rules 2-4) of `e`, with one evidence clause each.
/// `gap_us` is `row`'s gap ([`gap_after`]).
pub(super) fn judge(
    row: &Exchange,
    e: &Prior,
    gap_us: i64,
    catalog: &ToolCatalog,
    cfg: &InferenceConfig,
) -> Vec<(Finding, String)> {
    let mut out = Vec::new();
    let id = e.exchange_id;

    if row.rpc_method.as_deref() == Some("tools/call") && uncertain(e) {
        let tool = row.tool_name.as_deref().unwrap_or_default();
        let safety = catalog.safety(&row.inference.endpoint, tool, row.ts_request);
        let declared = match safety {
            ToolSafety::Listed { hints, .. } if hints.is_safe() => None,
            ToolSafety::Listed { hints, page } => {
                Some(format!("tools/list #{page} gave {}", hints.describe()))
            }
            ToolSafety::NotListed { listing, cut } => Some(format!(
                "not in the latest tools/list of this endpoint (#{listing}{})",
                if cut {
                    ", cut at the catalog limit"
                } else {
                    ""
                }
            )),
            ToolSafety::NeverListed => {
                Some("no tools/list of this endpoint seen before this attempt".to_string())
            }
        };
        if let Some(declared) = declared {
            out.push((
                Finding::UnsafeRetry,
                format!(
                    "unsafe_retry: tool {} not declared safe ({declared}) and #{id} ended {}, which may have run it",
                    clip(tool),
                    result(e)
                ),
            ));
        }
    }

    if let (Some(ra), Some(status @ (429 | 503))) = (e.retry_after(), e.http_status)
        && row.ts_request < ra.until_us
    {
        let head_us = ra.until_us.saturating_sub(ra.delay_ms.saturating_mul(1000));
        let form = if ra.from_date { " (HTTP-date)" } else { "" };
        out.push((
            Finding::RetryAfterIgnored,
            format!(
                "retry_after_ignored: HTTP {status} of #{id} asked Retry-After {}ms{form}, sent {}ms after that response",
                ra.delay_ms,
                ms(row.ts_request.saturating_sub(head_us))
            ),
        ));
    }

    if e.error_code == Some(INVALID_PARAMS) {
        out.push((
            Finding::UnchangedAfterInvalidParams,
            format!("unchanged_after_invalid_params: #{id} answered {INVALID_PARAMS} (invalid params), params equivalent"),
        ));
    }

    if INVALID_RESPONSES.contains(&e.outcome) {
        out.push((
            Finding::ReplayAfterInvalidResponse,
            format!(
                "replay_after_invalid_response: #{id} ended {}, params equivalent",
                e.outcome
            ),
        ));
    }

    if row.attempt >= 3
        && let Some(prev_gap) = e.gap()
    {
        let floor_us = cfg.backoff_floor_ms.saturating_mul(1000);
        let both_small = gap_us < floor_us && prev_gap < floor_us;
        let not_grown = (gap_us as f64) < cfg.backoff_factor * prev_gap as f64;
        if both_small || not_grown {
            let why = if not_grown {
                format!("under {}x", cfg.backoff_factor)
            } else {
                format!("both under {}ms", cfg.backoff_floor_ms)
            };
            out.push((
                Finding::NoBackoff,
                format!(
                    "no_backoff: gap {}ms after #{id} vs {}ms before it ({why})",
                    ms(gap_us),
                    ms(prev_gap)
                ),
            ));
        }
    }

    if row.attempt > cfg.max_attempts {
        out.push((
            Finding::TooManyAttempts,
            format!(
                "too_many_attempts: attempt {} of at most {}",
                row.attempt, cfg.max_attempts
            ),
        ));
    }
    out
}

/// Writes `findings` into the row: `retry_findings`, and each clause appended to
/// `retry_evidence` after `; `.
pub(super) fn apply(row: &mut Exchange, findings: Vec<(Finding, String)>) {
    row.retry_findings = findings.iter().map(|(f, _)| *f).collect();
    if findings.is_empty() {
        return;
    }
    let evidence = row.retry_evidence.get_or_insert_with(String::new);
    for (_, clause) in findings {
        if !evidence.is_empty() {
            evidence.push_str("; ");
        }
        evidence.push_str(&clause);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_round_trip_in_contract_order() {
        let names: Vec<&str> = Finding::ALL.into_iter().map(Finding::name).collect();
        assert_eq!(
            names,
            [
                "unsafe_retry",
                "retry_after_ignored",
                "unchanged_after_invalid_params",
                "replay_after_invalid_response",
                "no_backoff",
                "too_many_attempts",
            ]
        );
        for (i, f) in Finding::ALL.into_iter().enumerate() {
            assert_eq!(f.index(), i);
            assert_eq!(Finding::from_name(f.name()), Some(f));
        }
        assert_eq!(Finding::from_name("UNSAFE_RETRY"), None);
    }

    #[test]
    fn a_set_is_written_in_contract_order() {
        let set: FindingSet = [Finding::NoBackoff, Finding::UnsafeRetry, Finding::NoBackoff]
            .into_iter()
            .collect();
        assert_eq!(set.text(), Some("unsafe_retry;no_backoff"));
        let got: Vec<Finding> = set.iter().collect();
        assert_eq!(got, [Finding::UnsafeRetry, Finding::NoBackoff]);
        assert!(set.contains(Finding::NoBackoff) && !set.contains(Finding::TooManyAttempts));
        assert_eq!(FindingSet::default().text(), None);
        assert_eq!(
            serde_json::to_string(&set).unwrap(),
            r#""unsafe_retry;no_backoff""#
        );
        assert_eq!(
            serde_json::to_string(&FindingSet::default()).unwrap(),
            "null"
        );
        let all: FindingSet = Finding::ALL.into_iter().collect();
        assert_eq!(all.iter().count(), Finding::ALL.len());
    }
}
