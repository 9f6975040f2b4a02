//! What retry inference keeps for gateways' copies (report-schema.md section 4c): for each
//! row that has copies, its own relation and its latest copy, so a copy of a retry repeats
//! that relation one hop up; and each copy's [`Prior`], so a gateway's resend is judged
//! against the copy it repeats. Only rows of calls seen on several hops are kept, for one
//! repeat window.

use super::index::Prior;
use crate::hashing::HashMap;
use crate::mcp::{Exchange, RetryOrigin};
use std::collections::VecDeque;

use super::Link;

/// Most rows remembered here; past it the oldest are forgotten (their copies' relations
/// are then not mirrored).
pub const MAX_COPY_RELATIONS: usize = 65_536;

/// A row with copies: what its copies mirror.
#[derive(Debug, Clone, Default)]
struct Original {
    retry_of: Option<u64>,
    continuation_of: Option<u64>,
    origin: RetryOrigin,
    /// Its latest copy.
    last_copy: Option<u64>,
}

#[derive(Debug, Default)]
pub(super) struct CopyRelations {
    originals: HashMap<u64, Original>,
    priors: HashMap<u64, Prior>,
    /// (ts_request, exchange_id) in push order, to forget the oldest.
    order: VecDeque<(i64, u64)>,
}

impl CopyRelations {
    /// A row (of any hop) whose copies come next.
    pub(super) fn note_original(&mut self, row: &Exchange, now_us: i64, window_us: i64) {
        let o = self.originals.entry(row.exchange_id).or_default();
        o.retry_of = row.retry_of;
        o.continuation_of = row.continuation_of;
        o.origin = row.retry_origin;
        self.remember(row, now_us, window_us);
    }

    /// A copy, with the snapshot a later resend of it is compared with.
    pub(super) fn note_copy(&mut self, row: &Exchange, prior: Prior, now_us: i64, window_us: i64) {
        if let Some(from) = row.forwarded_from
            && let Some(o) = self.originals.get_mut(&from)
        {
            o.last_copy = Some(row.exchange_id);
        }
        self.priors.insert(row.exchange_id, prior);
        if row.inference.has_copies {
            self.note_original(row, now_us, window_us);
        } else {
            self.remember(row, now_us, window_us);
        }
    }

    pub(super) fn prior(&self, id: u64) -> Option<&Prior> {
        self.priors.get(&id)
    }

    /// The relation a copy takes from its original: the original repeats (or continues) an
    /// earlier row, so the copy repeats that row's copy, with the same origin. Findings stay
    /// on the original, where the resend was decided.
    pub(super) fn mirror(&self, row: &Exchange) -> Link {
        let Some(o) = row.forwarded_from.and_then(|f| self.originals.get(&f)) else {
            return Link::None;
        };
        let from = row.forwarded_from.unwrap_or_default();
        let copy_of = |id: u64| self.originals.get(&id).and_then(|e| e.last_copy);
        if let Some(earlier) = o.retry_of
            && let Some(copy) = copy_of(earlier)
        {
            let of_attempt = self.priors.get(&copy).map_or(1, |p| p.attempt);
            return Link::Retry {
                of: copy,
                of_attempt,
                origin: o.origin,
                evidence: format!(
                    "copy of #{from}, which repeats #{earlier} ({}): repeats #{earlier}'s copy #{copy}",
                    o.origin.name()
                ),
            };
        }
        if let Some(earlier) = o.continuation_of
            && let Some(copy) = copy_of(earlier)
        {
            return Link::Continuation {
                of: copy,
                evidence: format!(
                    "copy of #{from}, which continues #{earlier}: continues #{earlier}'s copy #{copy}"
                ),
            };
        }
        Link::None
    }

    fn remember(&mut self, row: &Exchange, now_us: i64, window_us: i64) {
        self.order.push_back((row.ts_request, row.exchange_id));
        let oldest = now_us.saturating_sub(window_us);
        while let Some(&(ts, id)) = self.order.front() {
            if ts >= oldest && self.order.len() <= MAX_COPY_RELATIONS {
                break;
            }
            self.order.pop_front();
            self.originals.remove(&id);
            self.priors.remove(&id);
        }
    }
}
