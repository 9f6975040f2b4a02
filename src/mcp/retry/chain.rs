//! Retry chains for the terminal summary: the first attempt, each repeat with its origin, the
//! final outcome, and whether the repeats followed a failure (report-schema.md sections 4, 5).
//!
//! In: rows after [`super::infer_retries`]. A chain is every row reachable backwards along
//! `retry_of` from the same first attempt; it can branch (a resumed stream and a resent POST
//! may both repeat the same exchange), so members are listed by `exchange_id`.

use super::is_success_outcome;
use crate::hashing::HashMap;
use crate::mcp::{Exchange, Kind, Outcome, RetryOrigin};
use std::collections::BTreeMap;

/// One logical call that was attempted more than once.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RetryChain {
    /// `exchange_id` of the first attempt.
    pub first: u64,
    /// Every attempt by `exchange_id`, the first included (its origin is `none`):
    /// (exchange_id, retry_origin, outcome).
    pub attempts: Vec<(u64, RetryOrigin, Outcome)>,
    /// Outcome of the last `request` attempt; a resumed stream completes the request it
    /// resumes, so its own outcome is not the call's.
    pub final_outcome: Outcome,
    /// The first repeat followed a failed attempt (an outcome that is not a success, or a
    /// broken stream that was resumed); false when a call that had succeeded was sent again.
    pub after_failure: bool,
}

/// What a chain reads of a row: the row itself, or a record made from it.
pub trait ChainMember {
    fn exchange_id(&self) -> u64;
    fn retry_of(&self) -> Option<u64>;
    fn kind(&self) -> Kind;
    fn outcome(&self) -> Outcome;
    fn retry_origin(&self) -> RetryOrigin;
}

impl ChainMember for Exchange {
    fn exchange_id(&self) -> u64 {
        self.exchange_id
    }

    fn retry_of(&self) -> Option<u64> {
        self.retry_of
    }

    fn kind(&self) -> Kind {
        self.kind
    }

    fn outcome(&self) -> Outcome {
        self.outcome
    }

    fn retry_origin(&self) -> RetryOrigin {
        self.retry_origin
    }
}

/// The retry chains of `rows`, ordered by their first attempt.
pub fn retry_chains(rows: &[Exchange]) -> Vec<RetryChain> {
    retry_chains_of(&rows.iter().collect::<Vec<_>>())
}

/// [`retry_chains`] of rows held by reference.
pub fn retry_chains_of<R: ChainMember>(rows: &[&R]) -> Vec<RetryChain> {
    let pos_of: HashMap<u64, usize> = rows
        .iter()
        .enumerate()
        .map(|(p, r)| (r.exchange_id(), p))
        .collect();
    let parent_of = |p: usize| -> Option<usize> {
        let id = rows.get(p)?.retry_of()?;
        // A link must point to an earlier row; anything else is ignored, so no cycle.
        pos_of.get(&id).copied().filter(|&q| q < p)
    };

    // Roots resolved in position order: a parent always comes before its child.
    let mut root: Vec<usize> = Vec::with_capacity(rows.len());
    let mut members: BTreeMap<usize, Vec<usize>> = BTreeMap::new();
    for p in 0..rows.len() {
        let r = match parent_of(p) {
            Some(q) => root.get(q).copied().unwrap_or(q),
            None => p,
        };
        root.push(r);
        if r != p {
            members.entry(r).or_default().push(p);
        }
    }

    let mut chains: Vec<RetryChain> = members
        .into_iter()
        .filter_map(|(r, repeats)| {
            let first = *rows.get(r)?;
            let first_repeat = repeats.first().and_then(|&p| Some((p, *rows.get(p)?)))?;
            let previous = parent_of(first_repeat.0).and_then(|q| rows.get(q))?;
            let after_failure =
                first_repeat.1.kind() == Kind::Stream || !is_success_outcome(previous.outcome());
            let all: Vec<&R> = std::iter::once(first)
                .chain(repeats.iter().filter_map(|&p| rows.get(p).copied()))
                .collect();
            let final_outcome = all
                .iter()
                .rev()
                .find(|e| e.kind() == Kind::Request)
                .or(all.last())
                .map_or(Outcome::default(), |e| e.outcome());
            Some(RetryChain {
                first: first.exchange_id(),
                attempts: all
                    .iter()
                    .map(|e| (e.exchange_id(), e.retry_origin(), e.outcome()))
                    .collect(),
                final_outcome,
                after_failure,
            })
        })
        .collect();
    chains.sort_by_key(|c| c.first);
    chains
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `row(id, kind, retry_of, origin, outcome)`
    fn row(
        id: u64,
        kind: &'static str,
        retry_of: Option<u64>,
        origin: &'static str,
        outcome: &'static str,
    ) -> Exchange {
        Exchange {
            exchange_id: id,
            kind: Kind::from_name(kind).unwrap(),
            retry_of,
            retry_origin: RetryOrigin::from_name(origin).unwrap(),
            outcome: Outcome::from_name(outcome).unwrap(),
            ..Default::default()
        }
    }

    fn ids(c: &RetryChain) -> Vec<(u64, &str, &str)> {
        c.attempts
            .iter()
            .map(|(i, o, r)| (*i, o.name(), r.name()))
            .collect()
    }

    #[test]
    fn chain_after_failure_three_attempts() {
        let rows = vec![
            row(1, "request", None, "none", "HTTP_ERROR"),
            row(2, "request", None, "none", "TOOL_SUCCESS"),
            row(3, "request", Some(1), "application", "HTTP_ERROR"),
            row(4, "request", Some(3), "application", "TOOL_SUCCESS"),
        ];
        let chains = retry_chains(&rows);
        assert_eq!(chains.len(), 1);
        let c = &chains[0];
        assert_eq!(c.first, 1);
        assert_eq!(
            ids(c),
            vec![
                (1, "none", "HTTP_ERROR"),
                (3, "application", "HTTP_ERROR"),
                (4, "application", "TOOL_SUCCESS")
            ]
        );
        assert_eq!(c.final_outcome, "TOOL_SUCCESS");
        assert!(c.after_failure);
    }

    #[test]
    fn manual_resend_of_success_is_not_after_failure() {
        let rows = vec![
            row(1, "request", None, "none", "TOOL_SUCCESS"),
            row(2, "request", Some(1), "manual", "TOOL_ERROR"),
        ];
        let c = &retry_chains(&rows)[0];
        assert!(!c.after_failure);
        assert_eq!(c.final_outcome, "TOOL_ERROR");
    }

    #[test]
    fn resumed_stream_final_outcome_is_the_request() {
        let rows = vec![
            row(1, "request", None, "none", "TOOL_SUCCESS"),
            row(2, "stream", Some(1), "sdk", "STREAM_OPEN"),
        ];
        let c = &retry_chains(&rows)[0];
        assert_eq!(c.final_outcome, "TOOL_SUCCESS");
        assert!(c.after_failure, "a resume always follows a broken stream");
        assert_eq!(
            ids(c),
            vec![(1, "none", "TOOL_SUCCESS"), (2, "sdk", "STREAM_OPEN")]
        );
    }

    #[test]
    fn branches_and_separate_chains_in_order() {
        let rows = vec![
            row(1, "request", None, "none", "STREAM_INCOMPLETE"),
            row(2, "request", None, "none", "NO_RESPONSE"),
            row(3, "stream", Some(1), "sdk", "STREAM_OPEN"),
            row(4, "request", Some(2), "sdk", "RPC_SUCCESS"),
            row(5, "request", Some(1), "manual", "RPC_SUCCESS"),
        ];
        let chains = retry_chains(&rows);
        assert_eq!(chains.len(), 2);
        assert_eq!(chains[0].first, 1);
        assert_eq!(
            chains[0].attempts.iter().map(|a| a.0).collect::<Vec<_>>(),
            vec![1, 3, 5]
        );
        assert_eq!(chains[0].final_outcome, "RPC_SUCCESS");
        assert_eq!(chains[1].first, 2);
        assert_eq!(
            chains[1].attempts.iter().map(|a| a.0).collect::<Vec<_>>(),
            vec![2, 4]
        );
    }

    #[test]
    fn bad_links_are_ignored() {
        let rows = vec![
            row(1, "request", Some(2), "sdk", "TOOL_SUCCESS"), // forward link
            row(2, "request", Some(2), "sdk", "TOOL_SUCCESS"), // self link
            row(3, "request", Some(99), "sdk", "TOOL_SUCCESS"), // unknown id
        ];
        assert!(retry_chains(&rows).is_empty());
        assert!(retry_chains(&[]).is_empty());
    }
}
