//! Retry inference (report-schema.md section 4): `attempt`, `retry_of`, `retry_origin`,
//! `retry_evidence` and `continuation_of` on every row; and retry hygiene (section 4b):
//! `retry_findings` on every repeat by rules 2-4, judged in `hygiene` against the attempt it
//! repeats and the [`ToolCatalog`] that `tools/list` rows feed as they pass.
//!
//! In: rows one at a time ([`RetryInference::push`]) in `exchange_id` order (ids follow
//! `ts_request`), outcomes classified; [`infer_retries`] does the same over a slice.
//! Out: the five retry columns filled on every row (earlier values are overwritten).
//! Incremental: a row is compared with the rows pushed before it only, keeping what later rows
//! need of it (see [`RetryInference`]); the analyzer pushes each row as it is released.
//!
//! A `request` row that is not lifecycle/discovery is compared with the latest earlier
//! equivalent request (same client host, endpoint, method and canonical params) sent within
//! the repeat window; rules 1-4 decide, in order. Rule 5 links a `stream` GET carrying
//! `Last-Event-ID` to the exchange whose stream it resumes. Evidence names the rule and the
//! facts a person can check in the capture. Never panics; memory follows the requests of one
//! repeat window, bounded by [`MAX_INDEXED_REQUESTS`].
//!
//! "Latest earlier" prefers the candidate's own session: when that session holds an equivalent
//! request, its latest one is taken even if another session sent one later. Concurrent clients
//! on one host interleave their calls; comparing across them would call a client's application
//! retry "not a repeat" (another worker's call 0.5 s before) and its next ordinary call "manual"
//! (another worker's call seconds before). Without one in its own session, the latest from the
//! same client host is taken, as the schema says.
//!
//! Why id equality is not enough: in 2026-07-28 an id may be reused once its request was
//! answered (mcp-wire.md 3.1), and a re-run TS client restarts its ids at 0 (mcp-wire.md 10b).
//! So rule 2 also needs the same body, and calls it `sdk` only for an auth retry or a resend in
//! the same session by the same User-Agent within `sdk_max_gap` of the earlier attempt's end.
//! Consequence (deliberate): a same-id same-body request in the same session that comes after
//! the gap is `manual` even when the earlier attempt had succeeded (no SDK resends an answered
//! request; a person replaying it does), and within the gap it is `sdk` (an HTTP-layer
//! duplicate, mcp-wire.md 6.1).
//!
//! Gaps: rule 2's SDK gap runs from the end of the earlier attempt (its `ts_response`, or its
//! `ts_request` if it never ended; negative while it is still open, which counts as within).
//! The manual-min-gap of rules 2 and 4 runs from start to start ("sent less than ... after the
//! earlier one"), so concurrent workers that start together are never linked even when their
//! calls overlap.

mod chain;
mod copies;
mod hygiene;
mod index;
mod tool_catalog;

pub use chain::{ChainMember, RetryChain, retry_chains, retry_chains_of};
pub use hygiene::{Finding, FindingSet};
pub use tool_catalog::{
    LISTINGS_PER_ENDPOINT, MAX_CATALOG_TOOLS, MAX_TOOLS_PER_PAGE, ToolCatalog, ToolHints,
    ToolSafety, ToolsPage,
};

use crate::anomaly::Anomaly;
use crate::display::{self, Cut, Escape};
use crate::hashing::HashMap;
use crate::mcp::McpCounters;
use crate::mcp::{Exchange, InferenceConfig, Kind, Outcome, RetryOrigin};

use copies::CopyRelations;
use index::{Prior, RecentRequests, session_hash_of};
use std::collections::VecDeque;

/// Most requests held in the repeat index at once (live ones within the repeat window plus
/// superseded ones not yet expired). Beyond it a request is not indexed, so a later repeat of
/// it is not linked, and `mcp.retry_index_full` is counted. An entry takes about 400 bytes
/// (bodies are kept as fingerprints), so a full index is about 400 MB.
pub const MAX_INDEXED_REQUESTS: usize = 1_000_000;

/// Longest User-Agent or `Last-Event-ID` quoted in `retry_evidence` (in chars), so one
/// capture-supplied header cannot blow up every evidence line.
pub const EVIDENCE_VALUE_MAX_CHARS: usize = 80;

/// Outcomes after which a repeat with a new id is "just another call" (rule 3).
const SUCCESS_OUTCOMES: &[Outcome] = &[
    Outcome::ToolSuccess,
    Outcome::RpcSuccess,
    Outcome::Accepted,
    Outcome::InputRequired,
    Outcome::TaskCreated,
];

/// Requests every client sends on its own; never linked (report-schema.md section 4).
const LIFECYCLE_METHODS: &[&str] = &[
    "initialize",
    "server/discover",
    "ping",
    "logging/setLevel",
    "subscriptions/listen",
    "resources/subscribe",
    "resources/unsubscribe",
];

/// Methods that start a (new) session: a client re-initializing after a 404.
const SESSION_START_METHODS: &[&str] = &["initialize", "server/discover"];

/// The outcome is a success in the sense of rule 3 (not a failure to retry after).
pub fn is_success_outcome(outcome: Outcome) -> bool {
    SUCCESS_OUTCOMES.contains(&outcome)
}

/// Lifecycle and discovery methods: `initialize`, `server/discover`, `ping`, every `*/list`,
/// `logging/setLevel`, `subscriptions/listen`, `resources/subscribe`, `resources/unsubscribe`.
pub fn is_lifecycle_method(method: &str) -> bool {
    LIFECYCLE_METHODS.contains(&method) || method.ends_with("/list")
}

/// What retry inference could not do, to be counted as anomalies.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct RetryAnomalies {
    /// Requests not indexed because [`MAX_INDEXED_REQUESTS`] was reached.
    pub index_full: u64,
    /// Resuming GETs whose `resumes` target is not an earlier row.
    pub resume_target_missing: u64,
    /// Tools not kept by the tool catalog because [`MAX_CATALOG_TOOLS`] was reached.
    pub tool_catalog_full: u64,
}

impl RetryAnomalies {
    /// Add the counts to `stats` as `mcp.retry_index_full`, `mcp.resume_target_missing` and
    /// `mcp.tool_catalog_full`.
    pub fn record(&self, stats: &mut McpCounters) {
        for (key, n) in [
            (Anomaly::McpRetryIndexFull, self.index_full),
            (Anomaly::McpResumeTargetMissing, self.resume_target_missing),
            (Anomaly::McpToolCatalogFull, self.tool_catalog_full),
        ] {
            stats.anomalies.add_many(key, n);
        }
    }
}

/// The decision for one row.
#[derive(Debug, PartialEq)]
enum Link {
    /// Not a repeat (or not a candidate).
    None,
    /// Rule 1: MRTR follow-up of the exchange with this id.
    Continuation { of: u64, evidence: String },
    /// Rules 2-5: a repeat of the earlier exchange `of`, which was attempt `of_attempt`.
    Retry {
        of: u64,
        of_attempt: u32,
        origin: RetryOrigin,
        evidence: String,
    },
}

/// Facts about one session that rule 4 needs.
#[derive(Debug, Default)]
struct SessionFacts {
    /// First HTTP 404 answered to a request carrying a session id: (ts_request, exchange_id).
    first_404: Option<(i64, u64)>,
    /// `initialize` / `server/discover` requests of the session: (ts_request, exchange_id),
    /// at most [`MAX_STARTS_PER_SESSION`] (the latest).
    starts: Vec<(i64, u64)>,
    /// Latest `ts_request` of any row of the session, for forgetting silent sessions.
    last_us: i64,
}

/// Session starts remembered per session (a session normally has one).
pub const MAX_STARTS_PER_SESSION: usize = 64;

/// Sessions whose facts are kept before a sweep forgets those silent for longer than the
/// repeat window (no later row can be compared with theirs: rule 4 looks back one window).
const SESSION_SWEEP_MIN: usize = 4096;

/// Most `exchange_id`s with an attempt above 1 remembered for rule 5 (a resumed stream's
/// attempt counts on from its target's). Beyond it the oldest is forgotten: a resumption of
/// it counts from attempt 1.
pub const MAX_REMEMBERED_ATTEMPTS: usize = 65_536;

/// Retry inference one row at a time, in `exchange_id` order (report-schema.md section 4).
///
/// Keeps only what later rows can be compared with: the latest equivalent request per key
/// within the repeat window (snapshots of the few fields the rules read), per-session 404 and
/// start facts of sessions active within the window, the set of ids seen (as ranges) and the
/// attempts above 1. Memory follows the requests of one window, never the capture.
///
/// Rows must come in `exchange_id` order; a row is compared with rows pushed before it, and
/// rule 4's facts (a 404, a re-initialize) count only when they come before the candidate in
/// request order, so a row's answer never depends on how many later rows are already known.
/// [`infer_retries`] is the same loop over a slice.
#[derive(Debug)]
pub struct RetryInference {
    cfg: InferenceConfig,
    window_us: i64,
    recent: RecentRequests,
    /// By [`session_hash_of`] the session key.
    sessions: HashMap<u64, SessionFacts>,
    sweep_at: usize,
    /// Ids pushed so far, as ascending inclusive ranges (ids are dense and ascending).
    known_ids: Vec<(u64, u64)>,
    /// Attempt of ids above 1 (every other known id is attempt 1), oldest first for eviction.
    attempts: HashMap<u64, u32>,
    attempt_order: VecDeque<u64>,
    /// Latest start seen: expiry never goes back, so rows out of order cannot regrow the index.
    now_us: i64,
    /// Tool annotations per endpoint, for `unsafe_retry` (section 4b).
    catalog: ToolCatalog,
    /// What gateways' copies (section 4c) need of the rows they copy.
    copies: CopyRelations,
    anomalies: RetryAnomalies,
}

impl RetryInference {
    /// Inference with the thresholds of `cfg` and an index of [`MAX_INDEXED_REQUESTS`].
    pub fn new(cfg: &InferenceConfig) -> Self {
        Self::with_limit(cfg, MAX_INDEXED_REQUESTS)
    }

    /// Inference whose repeat index holds at most `limit` requests (`mcp.retry_index_full`).
    pub fn with_limit(cfg: &InferenceConfig, limit: usize) -> Self {
        Self::with_limits(cfg, limit, MAX_CATALOG_TOOLS)
    }

    /// [`RetryInference::with_limit`] with a tool catalog of at most `catalog_tools` entries
    /// (`mcp.tool_catalog_full`).
    pub fn with_limits(cfg: &InferenceConfig, limit: usize, catalog_tools: usize) -> Self {
        RetryInference {
            cfg: *cfg,
            window_us: cfg.repeat_window_ms.saturating_mul(1000),
            recent: RecentRequests::new(limit),
            sessions: HashMap::default(),
            sweep_at: SESSION_SWEEP_MIN,
            known_ids: Vec::new(),
            attempts: HashMap::default(),
            attempt_order: VecDeque::new(),
            now_us: i64::MIN,
            catalog: ToolCatalog::with_limit(catalog_tools),
            copies: CopyRelations::default(),
            anomalies: RetryAnomalies::default(),
        }
    }

    /// Fills the five retry columns and `retry_findings` of `row` (earlier values are
    /// overwritten), comparing it with the rows pushed before, then remembers what later rows
    /// need of it (a `tools/list` result goes to the tool catalog).
    pub fn push(&mut self, row: &mut Exchange) {
        self.observe_tools(row);
        self.now_us = self.now_us.max(row.ts_request);
        self.recent
            .expire(self.now_us.saturating_sub(self.window_us));
        self.note_session(row);
        if row.forwarded_from.is_some() {
            self.push_copy(row);
            return;
        }

        // Rules 1-4 only for candidates, which are then indexed for later ones.
        let probe = is_candidate(row).then(|| Prior::of(row));
        // The attempt a rules 2-4 retry repeats, for retry hygiene.
        let mut earlier = None;
        let link = if let Some(c) = &probe {
            match self
                .recent
                .latest(c)
                .filter(|e| c.ts_request.saturating_sub(e.ts_request) <= self.window_us)
            {
                Some(e) => {
                    let link = decide(c, e, &self.cfg, &self.sessions);
                    if matches!(link, Link::Retry { .. }) {
                        earlier = Some(e.clone());
                    }
                    link
                }
                None => Link::None,
            }
        } else if is_resumption(row) {
            match row.inference.resumes.filter(|&id| self.is_known(id)) {
                Some(id) => resumption(row, id, self.attempt_of(id)),
                None => {
                    self.anomalies.resume_target_missing =
                        self.anomalies.resume_target_missing.saturating_add(1);
                    Link::None
                }
            }
        } else {
            Link::None
        };
        apply(row, link);
        let gap_us = earlier.as_ref().map(|e| self.judge(row, e));
        self.remember_id(row.exchange_id, row.attempt);
        if row.inference.has_copies {
            self.copies.note_original(row, self.now_us, self.window_us);
        }

        if let Some(mut prior) = probe {
            prior.attempt = row.attempt;
            prior.gap_us = gap_us.unwrap_or(index::NO_GAP);
            if !self.recent.insert(prior) {
                self.anomalies.index_full = self.anomalies.index_full.saturating_add(1);
            }
        }
    }

    /// A gateway's copy (section 4c): the rules compare rows of one hop only, so a copy
    /// takes its relation from its original's (one hop up) or is the gateway's resend of an
    /// earlier copy, judged by section 4b.
    fn push_copy(&mut self, row: &mut Exchange) {
        let link = match row.inference.gateway_retry_of {
            Some(earlier) => match self.copies.prior(earlier) {
                Some(e) => Link::Retry {
                    of: earlier,
                    of_attempt: e.attempt,
                    origin: RetryOrigin::Gateway,
                    evidence: format!(
                        "gateway resent the call of its copy #{earlier} {}",
                        timing(&Prior::of(row), e)
                    ),
                },
                None => Link::None,
            },
            None => self.copies.mirror(row),
        };
        let earlier = match &link {
            Link::Retry {
                origin: RetryOrigin::Gateway,
                of,
                ..
            } => self.copies.prior(*of).cloned(),
            _ => None,
        };
        apply(row, link);
        let gap_us = earlier.as_ref().map(|e| self.judge(row, e));
        self.remember_id(row.exchange_id, row.attempt);
        let mut prior = Prior::of(row);
        prior.attempt = row.attempt;
        prior.gap_us = gap_us.unwrap_or(index::NO_GAP);
        self.copies
            .note_copy(row, prior, self.now_us, self.window_us);
    }

    /// Retry hygiene (section 4b) of `row` against the attempt `e` it repeats; returns the gap
    /// between them.
    fn judge(&self, row: &mut Exchange, e: &Prior) -> i64 {
        let gap = hygiene::gap_after(row.ts_request, e);
        let findings = hygiene::judge(row, e, gap, &self.catalog, &self.cfg);
        hygiene::apply(row, findings);
        gap
    }

    /// Takes a `tools/list` row's result into the tool catalog (rows set aside while open
    /// come here when they end; [`RetryInference::push`] does it for every other row).
    pub fn observe_tools(&mut self, row: &mut Exchange) {
        if row.inference.tools_page.is_some() {
            self.catalog.observe(row);
            self.anomalies.tool_catalog_full = self.catalog.dropped();
        }
    }

    /// What inference could not do so far.
    pub fn anomalies(&self) -> &RetryAnomalies {
        &self.anomalies
    }

    /// The 404 and start facts rule 4 reads, and the session's last activity.
    fn note_session(&mut self, row: &Exchange) {
        // A 404 ends a session only where there is a session to expire (mcp-wire.md 8); in
        // 2026-07-28 a 404 means "method not found" and says nothing about the session.
        let is_404 = row.http_status == Some(404) && row.session_id.is_some();
        let is_start = row.kind == Kind::Request
            && row
                .rpc_method
                .as_deref()
                .is_some_and(|m| SESSION_START_METHODS.contains(&m));
        let key = session_hash_of(&row.session_key);
        if !is_404 && !is_start {
            if let Some(f) = self.sessions.get_mut(&key) {
                f.last_us = f.last_us.max(row.ts_request);
            }
            return;
        }
        if !self.sessions.contains_key(&key) {
            self.sweep_sessions();
            self.sessions.insert(key, SessionFacts::default());
        }
        let Some(f) = self.sessions.get_mut(&key) else {
            return;
        };
        f.last_us = f.last_us.max(row.ts_request);
        if is_404 && f.first_404.is_none() {
            f.first_404 = Some((row.ts_request, row.exchange_id));
        }
        if is_start {
            // Rule 4 binary-searches them by time; rows come (nearly) in time order.
            let at = f
                .starts
                .partition_point(|s| *s <= (row.ts_request, row.exchange_id));
            f.starts.insert(at, (row.ts_request, row.exchange_id));
            if f.starts.len() > MAX_STARTS_PER_SESSION {
                f.starts.remove(0);
            }
        }
    }

    /// Forget sessions silent for longer than the repeat window once the table has doubled.
    fn sweep_sessions(&mut self) {
        if self.sessions.len() < self.sweep_at {
            return;
        }
        let oldest = self.now_us.saturating_sub(self.window_us);
        self.sessions.retain(|_, f| f.last_us >= oldest);
        self.sweep_at = self.sessions.len().saturating_mul(2).max(SESSION_SWEEP_MIN);
    }

    fn is_known(&self, id: u64) -> bool {
        let at = self.known_ids.partition_point(|&(_, hi)| hi < id);
        self.known_ids.get(at).is_some_and(|&(lo, _)| lo <= id)
    }

    fn attempt_of(&self, id: u64) -> u32 {
        self.attempts.get(&id).copied().unwrap_or(1)
    }

    fn remember_id(&mut self, id: u64, attempt: u32) {
        match self.known_ids.last_mut() {
            Some((_, hi)) if hi.checked_add(1) == Some(id) => *hi = id,
            Some((_, hi)) if *hi >= id => {
                // Out of order (a hand-made slice): keep the ranges sorted and merged.
                if !self.is_known(id) {
                    let at = self.known_ids.partition_point(|&(lo, _)| lo < id);
                    self.known_ids.insert(at, (id, id));
                }
            }
            _ => self.known_ids.push((id, id)),
        }
        if attempt > 1 {
            if self.attempts.insert(id, attempt).is_none() {
                self.attempt_order.push_back(id);
            }
            while self.attempt_order.len() > MAX_REMEMBERED_ATTEMPTS {
                if let Some(old) = self.attempt_order.pop_front() {
                    self.attempts.remove(&old);
                }
            }
        }
    }
}

/// Fills attempt, retry_of, retry_origin, retry_evidence and continuation_of on every row
/// (report-schema.md section 4, rules in order): [`RetryInference::push`] on each row.
///
/// `rows` must be sorted by `ts_request` with `exchange_id` assigned in that order. The returned
/// counts go to [`McpCounters`] with [`RetryAnomalies::record`].
pub fn infer_retries(rows: &mut [Exchange], cfg: &InferenceConfig) -> RetryAnomalies {
    infer_with_limit(rows, cfg, MAX_INDEXED_REQUESTS)
}

fn infer_with_limit(rows: &mut [Exchange], cfg: &InferenceConfig, limit: usize) -> RetryAnomalies {
    let mut inference = RetryInference::with_limit(cfg, limit);
    for row in rows.iter_mut() {
        inference.push(row);
    }
    inference.anomalies
}

/// Only client requests outside lifecycle/discovery take part in rules 1-4.
fn is_candidate(row: &Exchange) -> bool {
    row.kind == Kind::Request
        && row
            .rpc_method
            .as_deref()
            .is_some_and(|m| !is_lifecycle_method(m))
}

/// Rule 5 applies to `stream` rows with a `Last-Event-ID` whose resumed exchange is known.
fn is_resumption(row: &Exchange) -> bool {
    row.kind == Kind::Stream
        && row.inference.last_event_id.is_some()
        && row.inference.resumes.is_some()
}

/// Rule 5: `row` resumes the stream of exchange `id`, which was attempt `attempt`.
fn resumption(row: &Exchange, id: u64, attempt: u32) -> Link {
    let last = row.inference.last_event_id.as_deref().unwrap_or_default();
    Link::Retry {
        of: id,
        of_attempt: attempt,
        origin: RetryOrigin::Sdk,
        evidence: format!(
            "rule 5 resumes stream of #{id} with Last-Event-ID {}",
            clip(last)
        ),
    }
}

/// Write the decision into the row's columns.
fn apply(row: &mut Exchange, link: Link) {
    row.attempt = 1;
    row.retry_of = None;
    set_origin(row, RetryOrigin::None);
    row.retry_evidence = None;
    row.retry_findings = FindingSet::default();
    row.continuation_of = None;
    match link {
        Link::None => {}
        Link::Continuation { of, evidence } => {
            row.continuation_of = Some(of);
            row.retry_evidence = Some(evidence);
        }
        Link::Retry {
            of,
            of_attempt,
            origin,
            evidence,
        } => {
            row.retry_of = Some(of);
            row.attempt = of_attempt.max(1).saturating_add(1);
            set_origin(row, origin);
            row.retry_evidence = Some(evidence);
        }
    }
}

fn set_origin(row: &mut Exchange, origin: RetryOrigin) {
    row.retry_origin = origin;
}

/// Rules 1-4 for a candidate and its latest earlier equivalent request `e`.
fn decide(
    c: &Prior,
    e: &Prior,
    cfg: &InferenceConfig,
    sessions: &HashMap<u64, SessionFacts>,
) -> Link {
    let sdk_gap_us = cfg.sdk_max_gap_ms.saturating_mul(1000);
    let manual_gap_us = cfg.manual_min_gap_ms.saturating_mul(1000);
    let since_start_us = c.ts_request.saturating_sub(e.ts_request);
    let e_end = e.ts_response.unwrap_or(e.ts_request);
    let since_end_us = c.ts_request.saturating_sub(e_end);
    let same_session = c.session == e.session;
    let retry = |origin, evidence| Link::Retry {
        of: e.exchange_id,
        of_attempt: e.attempt,
        origin,
        evidence,
    };

    // Rule 1: an MRTR follow-up answers the input_required result with a new id; it is not a
    // retry (mcp-wire.md 4.3).
    if c.has_mrtr_fields && e.outcome == Outcome::InputRequired {
        return Link::Continuation {
            of: e.exchange_id,
            evidence: format!(
                "rule 1 continuation of #{} (input_required), {}",
                e.exchange_id,
                timing(c, e)
            ),
        };
    }

    let same_id = c.jsonrpc_id.is_some() && c.jsonrpc_id == e.jsonrpc_id;
    let same_body = c.body.is_some() && c.body == e.body;

    // Rule 2: same id and same body.
    if same_id && same_body {
        // TS and Python clients re-send the identical request after an auth refresh (mcp-wire 6.1).
        if matches!(e.http_status, Some(401 | 403)) {
            let auth = if c.auth_hash == e.auth_hash {
                "authorization unchanged"
            } else {
                "authorization changed"
            };
            return retry(
                RetryOrigin::Sdk,
                format!(
                    "rule 2 same id+body {} (auth refresh), {auth}",
                    timing(c, e)
                ),
            );
        }
        let same_ua = c.user_agent == e.user_agent;
        if same_session && same_ua && since_end_us <= sdk_gap_us {
            return retry(
                RetryOrigin::Sdk,
                format!(
                    "rule 2 same id+body {}, same user-agent, same session",
                    timing(c, e)
                ),
            );
        }
        if !same_session && since_start_us < manual_gap_us {
            // Separate instances of the same client software (concurrent workers).
            return Link::None;
        }
        let mut differs = Vec::new();
        if same_ua {
            differs.push("same user-agent".to_string());
        } else {
            differs.push(format!(
                "different user-agent ({} vs {})",
                clip(c.user_agent.as_deref().unwrap_or("none")),
                clip(e.user_agent.as_deref().unwrap_or("none"))
            ));
        }
        differs.push(
            if same_session {
                "same session"
            } else {
                "different session"
            }
            .to_string(),
        );
        if same_ua && same_session {
            differs.push(format!("over sdk-max-gap {}ms", cfg.sdk_max_gap_ms));
        }
        return retry(
            RetryOrigin::Manual,
            format!(
                "rule 2 same id+body {}, {}",
                timing(c, e),
                differs.join(", ")
            ),
        );
    }

    // Rules 3 and 4 speak of a new id; a reused id with a different body is no resend either
    // (2026-07-28 allows reuse after completion), so it is judged the same way.
    let what = if same_id {
        "same id, different body"
    } else {
        "new id"
    };

    // Rule 3: new id in the same session.
    if same_session {
        if is_success_outcome(e.outcome) {
            return Link::None;
        }
        return retry(
            RetryOrigin::Application,
            format!("rule 3 {what} {}, same session", timing(c, e)),
        );
    }

    // Rule 4: new id in a new session. A 404 then a header-less initialize is session
    // re-establishment (mcp-wire.md 8), driven by the SDK or the application.
    // Facts count only in request order, (ts_request, exchange_id): the 404 came before the
    // candidate, and the re-initialize after the 404 and before the candidate. A row pushed
    // later cannot change the decision, whatever order the rows were known in.
    let sent = (c.ts_request, c.exchange_id);
    let first_404 = sessions.get(&e.session).and_then(|f| f.first_404);
    if let Some((t404, id404)) = first_404.filter(|&ended| ended < sent) {
        // `starts` ascend in request order: the first start after the 404.
        let reinit = sessions.get(&c.session).and_then(|f| {
            let first = f.starts.partition_point(|&start| start <= (t404, id404));
            f.starts.get(first).filter(|&&start| start < sent)
        });
        if let Some((_, init_id)) = reinit {
            return retry(
                RetryOrigin::Application,
                format!(
                    "rule 4 {what} in new session {}ms after #{} was sent, earlier session ended by HTTP 404 (#{id404}) and client re-initialized (#{init_id})",
                    ms(since_start_us),
                    e.exchange_id
                ),
            );
        }
    }
    if since_start_us >= manual_gap_us {
        return retry(
            RetryOrigin::Manual,
            format!(
                "rule 4 {what} in new session {}ms after #{} was sent, earlier session not ended by 404",
                ms(since_start_us),
                e.exchange_id
            ),
        );
    }
    Link::None
}

/// When the candidate came relative to the earlier attempt, and how that attempt ended.
fn timing(c: &Prior, e: &Prior) -> String {
    let id = e.exchange_id;
    match e.ts_response {
        Some(end) if c.ts_request < end => format!(
            "while #{id} was still open ({}ms after it was sent)",
            ms(c.ts_request.saturating_sub(e.ts_request))
        ),
        Some(end) => format!(
            "{}ms after #{id} ended with {}",
            ms(c.ts_request.saturating_sub(end)),
            result(e)
        ),
        None => format!(
            "{}ms after #{id} was sent, which never ended ({})",
            ms(c.ts_request.saturating_sub(e.ts_request)),
            result(e)
        ),
    }
}

/// The earlier attempt's result: outcome, with the HTTP status or JSON-RPC error code.
fn result(e: &Prior) -> String {
    match (e.http_status, e.error_code) {
        (Some(s), _) if !(200..300).contains(&s) => format!("{} ({s})", e.outcome),
        (_, Some(code)) => format!("{} ({code})", e.outcome),
        _ => e.outcome.name().to_string(),
    }
}

/// Microseconds to whole milliseconds.
fn ms(us: i64) -> i64 {
    us / 1000
}

/// A capture-supplied value cut to [`EVIDENCE_VALUE_MAX_CHARS`] chars, control characters
/// escaped so the evidence stays one line.
fn clip(s: &str) -> String {
    display::clip(s, Escape::Rust, Cut::Text(EVIDENCE_VALUE_MAX_CHARS))
}

#[cfg(test)]
mod tests;
