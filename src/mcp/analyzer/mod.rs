//! [`Analyzer`]: HTTP events -> MCP rows, pairing JSON-RPC responses with
//! their requests by (direction, id) within the session, wherever they travel
//! (mcp-wire.md section 7):
//!
//! 1. in the POST's own JSON body (its id must match: else `INVALID_ENVELOPE`);
//! 2. on the POST's own SSE stream;
//! 3. on a resumed stream (GET with `Last-Event-ID` naming an event id the
//!    first stream carried), which completes the original POST;
//! 4. on the standalone GET stream, or the legacy HTTP+SSE GET stream, by id
//!    among the session's *open* requests (2026-07-28 reuses ids after completion);
//! 5. server->client requests on any stream pair with the client's POSTed responses.
//!
//! Pending state is bounded per session by the `MAX_*` limits below; hitting
//! one records an anomaly. Never panics on any input.
//!
//! # Release
//!
//! Rows leave as soon as they are final, so memory follows live state (open
//! exchanges, pending requests), not the capture ([`Analyzer::drain_ready`]).
//! Rows wait in a buffer ordered by (`ts_request`, arrival); `exchange_id` is
//! assigned as the head leaves, so ids follow the request's first byte:
//!
//! 1. The head waits [`REORDER_SLACK_US`] after its first byte (a request is
//!    seen at its last byte; a slower upload that started earlier comes first),
//!    or less once a release mark says no earlier request can still come: the
//!    pipeline passes on, every round of packets, the first byte of the earliest
//!    request the HTTP stages have under way ([`Analyzer::set_release_mark`]).
//!    Rows then leave while still in cache, and few wait at the end of input.
//! 2. It leaves once its HTTP exchange is over and no later message can change
//!    it: a request without its response stays while it may still be answered
//!    elsewhere: [`STREAM_RESUME_HOLD_US`] after its stream broke (a GET with
//!    `Last-Event-ID` may complete it, report-schema.md rule 5), or until the
//!    legacy session's GET stream ends.
//! 3. A head still open [`HOLD_LIMIT_US`] after its first byte (a GET stream
//!    open for the whole capture, a request never answered), or with more than
//!    [`MAX_BUFFERED_ROWS`] behind it, is set aside: its id is reserved, retry
//!    inference sees it as it is then (as if the capture ended there), and it is
//!    written when it ends, out of id order. Rows behind it go on.
//! 4. A tentative row (preflight, GET probe) leaves once its endpoint is known as
//!    MCP, or is dropped when it cannot be any more or after [`TENTATIVE_HOLD_US`].
//!
//! Session facts (protocol version, clientInfo, User-Agent) are gathered as rows
//! arrive, so a row gets what its session showed up to its release; retry
//! inference runs on each row as it is released, in id order
//! ([`super::retry::RetryInference`]). Without [`Analyzer::drain_ready`],

mod connections;
mod detect;
mod http_ctx;
mod pairing;
mod release;
mod requests;
mod responses;
mod row;

pub use detect::{MAX_KNOWN_ENDPOINTS, MAX_LEGACY_SESSIONS, MAX_PENDING_PREFLIGHTS};
pub use pairing::{
    MAX_EVENT_IDS_PER_SESSION, MAX_ORPHANS_PER_SESSION, MAX_PENDING_PER_SESSION,
    MAX_SERVER_REQUESTS_PER_SESSION, ORPHAN_WINDOW_US,
};
pub use release::{
    HOLD_LIMIT_US, MAX_BUFFERED_ROWS, MAX_RELEASED_IDS, RELEASE_MARK_MIN_AGE_US, REORDER_SLACK_US,
    STREAM_RESUME_HOLD_US, TENTATIVE_HOLD_US,
};
pub use row::MAX_SESSION_INFOS;

use super::McpLimits;
use super::hops::{HopConfig, Linker};
use super::prepare::{Prepared, PreparedEvents, Preparer};
use super::retry::RetryInference;
use super::session::{DerivedSessions, SessionInfo};
use super::texts::Texts;
use super::{Exchange, InferenceConfig};
use crate::anomaly::Anomaly;
use crate::hashing::{HashMap, HashSet};
use crate::http::{BodyEnd, HttpEvent};
use crate::mcp::McpCounters;
use crate::stream::ConnectionRecord;
use arcstr::ArcStr;
use connections::ConnectionRows;
use detect::LegacySession;
use http_ctx::{Ctx, CtxKey, ctx_key};
use pairing::SessionPairing;
use release::{Readiness, ReleaseQueue};
use responses::ResponseEnded;
use row::RowStore;
use std::collections::VecDeque;

/// The MCP stage. Feed every [`HttpEvent`] with [`Analyzer::push`], take the rows that are
/// final with [`Analyzer::drain_ready`] as often as convenient, then call [`Analyzer::finish`].
///
/// Invariant: every row in `rows` is in `queue`, either waiting (no id yet) or set aside (id
/// reserved).
#[derive(Debug)]
pub struct Analyzer {
    cfg: InferenceConfig,
    limits: McpLimits,
    /// Prepares the events handed to [`Analyzer::push`] (the pipeline prepares its own), and
    /// the responses when [`Analyzer::prepare_responses_here`] was called.
    preparer: Preparer,
    prepares_responses: bool,
    /// Strings rows share (see [`Texts`]).
    texts: Texts,
    rows: RowStore,
    /// The release order and the `exchange_id`s handed out.
    queue: ReleaseQueue,
    retry: RetryInference,
    /// Hop linking, between release and retry inference.
    linker: Linker,
    /// Session facts gathered as rows arrive, with the session's latest activity (µs).
    infos: HashMap<String, (SessionInfo, i64)>,
    /// Times half the session facts were forgotten (`mcp.session_info_limit`).
    evicted_infos: u64,
    ctxs: HashMap<CtxKey, Ctx>,
    pairings: HashMap<ArcStr, SessionPairing>,
    derived: DerivedSessions,
    endpoints: HashSet<String>,
    legacy: HashMap<(ArcStr, String), LegacySession>,
    /// Preflight rows awaiting their endpoint's verdict, oldest first.
    preflights: VecDeque<usize>,
    last_ts: i64,
    /// Largest step back in event time seen so far (µs).
    max_backstep: i64,
    /// Rows per connection, for the connections table.
    connection_rows: ConnectionRows,
}

impl Analyzer {
    /// A fresh analyzer with the given inference thresholds.
    pub fn new(cfg: InferenceConfig) -> Analyzer {
        Self::with_limits(cfg, McpLimits::default())
    }

    /// [`Analyzer::new`] with the body, SSE, pending and retry-index bounds of `limits`.
    pub fn with_limits(cfg: InferenceConfig, limits: McpLimits) -> Analyzer {
        Analyzer {
            cfg,
            limits,
            preparer: Preparer::new(limits, PreparedEvents::All),
            prepares_responses: false,
            rows: RowStore::default(),
            queue: ReleaseQueue::with_hold_limit(limits.hold_limit_us),
            retry: RetryInference::with_limits(&cfg, limits.retry_rows, limits.catalog_tools),
            linker: Linker::new(HopConfig {
                window_us: cfg.hop_window_ms.saturating_mul(1000),
                max_waiting: limits.hop_waiting,
            }),
            infos: HashMap::default(),
            evicted_infos: 0,
            ctxs: HashMap::default(),
            pairings: HashMap::default(),
            derived: DerivedSessions::default(),
            endpoints: HashSet::default(),
            legacy: HashMap::default(),
            texts: Texts::default(),
            preflights: VecDeque::new(),
            last_ts: i64::MIN,
            max_backstep: 0,
            connection_rows: ConnectionRows::default(),
        }
    }

    /// Process one HTTP event (events of one exchange in order: request, head, body pieces, end).
    pub fn push(&mut self, ev: HttpEvent, stats: &mut McpCounters) {
        let prepared = self.preparer.prepare(&ev);
        self.consume(ev, prepared, stats);
    }

    /// From now on response events come unprepared (their producer's [`Preparer`] prepares
    /// [`PreparedEvents::Posts`]) and are prepared here: with two cores the producing thread
    /// is the busier one.
    pub fn prepare_responses_here(&mut self) {
        self.prepares_responses = true;
    }

    /// [`Analyzer::push`] with the body work already done by a [`Preparer`] that saw every
    /// event, in order (elsewhere, perhaps on another thread). A POST without it is prepared
    /// here.
    pub fn push_prepared(
        &mut self,
        ev: HttpEvent,
        prepared: Option<Prepared>,
        stats: &mut McpCounters,
    ) {
        let prepared = if self.prepares_responses && !matches!(ev, HttpEvent::Request(_)) {
            self.preparer.prepare(&ev)
        } else {
            prepared
        };
        self.consume(ev, prepared, stats);
    }

    fn consume(&mut self, ev: HttpEvent, prepared: Option<Prepared>, stats: &mut McpCounters) {
        match ev {
            HttpEvent::Request(req) => {
                self.saw_time(req.ts_last_us);
                let post = match prepared {
                    Some(Prepared::Post(p)) => Some(p),
                    _ => None,
                };
                self.on_request(req, post, stats);
            }
            HttpEvent::ResponseHead {
                xref, ts_us, head, ..
            } => {
                // The head's first byte, not the packet's time: no step back to count.
                self.last_ts = self.last_ts.max(ts_us);
                self.on_head(ctx_key(&xref), &head, ts_us);
            }
            HttpEvent::ResponseBody { xref, ts_us, .. } => {
                self.saw_time(ts_us);
                if let Some(Prepared::Body(piece)) = prepared {
                    self.on_body(ctx_key(&xref), piece, stats);
                }
            }
            HttpEvent::ResponseEnd {
                xref,
                ts_us,
                end,
                wire_len,
                anomalies,
                client_closed,
                ..
            } => {
                self.saw_time(ts_us);
                let key = ctx_key(&xref);
                self.mark_ended(key, ts_us);
                if client_closed {
                    self.mark_client_closed(key);
                }
                let body = match prepared {
                    Some(Prepared::End(b)) => Some(*b),
                    _ => None,
                };
                let ended = ResponseEnded {
                    ts: ts_us,
                    end,
                    wire_len,
                    anomalies,
                };
                self.on_end(key, ended, body, stats);
            }
            HttpEvent::NoResponse {
                xref,
                ts_us,
                end,
                client_closed,
            } => {
                self.saw_time(ts_us);
                let key = ctx_key(&xref);
                self.mark_ended(key, ts_us);
                if client_closed {
                    self.mark_client_closed(key);
                }
                self.on_no_response(key, end);
            }
            HttpEvent::ConnectionClosed(record) => {
                self.connection_rows.closed(record.flow.tcp_stream, record);
            }
        }
    }

    /// The records of connections that closed and whose rows have all been released (in
    /// that order), each with its `mcp_exchanges`.
    pub fn take_connections(&mut self) -> Vec<ConnectionRecord> {
        self.connection_rows.take_ready()
    }

    /// Capture time of the latest event pushed (µs).
    pub fn last_event_us(&self) -> i64 {
        self.last_ts
    }

    /// A packet's time: a step back is the capture's clock going backwards.
    fn saw_time(&mut self, ts: i64) {
        if ts < self.last_ts {
            self.max_backstep = self.max_backstep.max(self.last_ts.saturating_sub(ts));
        }
        self.last_ts = self.last_ts.max(ts);
    }

    /// Tells the analyzer that every request still to come started at or after
    /// `unfinished_from_us` (the HTTP stage's earliest request under way,
    /// [`crate::stream::StreamStage::held_since_us`]; `None`: none is) or else
    /// at or after the packet that completes it, with every event before it already pushed.
    /// From then on a row that started before that time and [`RELEASE_MARK_MIN_AGE_US`]
    /// before the latest event leaves without waiting out [`REORDER_SLACK_US`]: its
    /// `exchange_id` can no longer be taken by an earlier request. Without marks (a HAR input,
    /// the tests) rows wait out the slack.
    pub fn set_release_mark(&mut self, unfinished_from_us: Option<i64>) {
        self.queue
            .set_mark(self.last_ts, self.max_backstep, unfinished_from_us);
    }

    /// Moves the rows that are final, as of capture time `now_us`, to `out` in `exchange_id`
    /// order (see the module doc, "Release"), then any row set aside that has ended.
    pub fn drain_ready(
        &mut self,
        now_us: i64,
        stats: &mut McpCounters,
        out: &mut Vec<Box<Exchange>>,
    ) {
        let now = now_us.max(self.last_ts);
        self.release(now, false, stats, out);
        if self.queue.aside_scan_due(now) {
            let done: Vec<usize> = self
                .queue
                .aside()
                .filter(|&i| {
                    self.rows
                        .get(i)
                        .is_some_and(|r| self.readiness(r, now, false) == Readiness::Ready)
                })
                .collect();
            for i in done {
                self.queue.unset_aside(i);
                if let Some(ex) = self.finalize(i, stats) {
                    out.push(ex);
                }
            }
        }
    }

    /// End of input: unanswered requests become rows; every row left is released, in
    /// `exchange_id` order (rows set aside included), and retry inference's counts go to
    /// `stats`. Without earlier [`Analyzer::drain_ready`] calls this is every row, with ids
    /// 1.. in order of (`ts_request`, arrival).
    pub fn finish(self, stats: &mut McpCounters) -> Vec<Box<Exchange>> {
        self.finish_with_connections(stats).0
    }

    /// [`Analyzer::finish`], with the records of the connections still waiting for their
    /// rows (after those of [`Analyzer::take_connections`]).
    pub fn finish_with_connections(
        mut self,
        stats: &mut McpCounters,
    ) -> (Vec<Box<Exchange>>, Vec<ConnectionRecord>) {
        // The HTTP stage ends every exchange; anything left is cut by the end of input.
        let mut left: Vec<CtxKey> = self.ctxs.keys().copied().collect();
        left.sort_unstable();
        for key in left {
            let has_head = self.ctxs.get(&key).is_some_and(|c| c.status.is_some());
            if has_head {
                let ended = ResponseEnded {
                    ts: self.last_ts,
                    end: BodyEnd::CaptureEnd,
                    wire_len: 0,
                    anomalies: Vec::new(),
                };
                self.on_end(key, ended, None, stats);
            } else {
                self.on_no_response(key, BodyEnd::CaptureEnd);
            }
        }
        for pairing in self.pairings.values() {
            for _ in &pairing.orphans {
                stats.anomaly(Anomaly::McpResponseWithoutRequest);
            }
        }
        let preflights = std::mem::take(&mut self.preflights);
        for i in preflights {
            self.confirm_preflight(i);
        }
        let mut out = Vec::with_capacity(self.rows.len());
        self.release(self.last_ts, true, stats, &mut out);
        let aside = self.queue.take_aside();
        for i in aside {
            if let Some(ex) = self.finalize(i, stats) {
                out.push(ex);
            }
        }
        out.sort_by_key(|e| e.exchange_id);
        self.retry.anomalies().record(stats);
        for _ in 0..self.evicted_infos {
            stats.anomaly(Anomaly::McpSessionInfoLimit);
        }
        let connections = self.connection_rows.finish();
        (out, connections)
    }
}

#[cfg(test)]
mod tests;
