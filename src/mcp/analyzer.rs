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
//! [`Analyzer::finish`] releases everything at the end, as one batch.

use super::classify::{self, Final, Kind, RowFacts};
use super::prepare::{
    BodyPiece, PrepareScope, Prepared, PreparedEnd, PreparedPost, PreparedSse, Preparer,
    is_event_stream, prepare_post,
};
use super::retry::RetryInference;
use super::session::{
    ContextKey, DerivedSessions, SessionFacts, SessionInfo, fnv1a, host_of, legacy_session_param,
    path_of,
};
use super::texts::Texts;
use super::{Exchange, InferenceConfig, InferenceInputs};
use crate::anomaly::Stats;
use crate::hashing::{HashMap, HashSet};
use crate::http::redact::redact_target;
use crate::http::{BodyEnd, ExchangeRef, HttpEvent, HttpRequest, ResponseHead};
use crate::limits::Limits;
use crate::rpc::digest::{ElementDigest, Envelope, EnvelopeBody, EnvelopeElement};
use crate::rpc::{self, RpcError, RpcId, RpcMessage};
use arcstr::ArcStr;
use serde_json::Value;
use std::borrow::Cow;
use std::cmp::Reverse;
use std::collections::{BTreeSet, BinaryHeap, VecDeque};

/// Open (unanswered) client requests kept per session; beyond it the oldest
/// stops waiting for a cross-stream response (`mcp.pending_limit`).
pub const MAX_PENDING_PER_SESSION: usize = 4096;
/// Responses without a known request held per session in case their request
/// is processed later (`response before request`); beyond it the oldest is
/// dropped and counted as `mcp.response_without_request`.
pub const MAX_ORPHANS_PER_SESSION: usize = 256;
/// An orphan response pairs with a later-processed request only if it is not
/// older than the request by more than this (µs): clock skew between merged
/// inputs. (HAR delivers a whole legacy GET stream before the POSTs it answers.)
pub const ORPHAN_WINDOW_US: i64 = 5_000_000;
/// Server->client requests awaiting the client's POSTed response, per session
/// (`mcp.server_request_limit`).
pub const MAX_SERVER_REQUESTS_PER_SESSION: usize = 4096;
/// SSE event ids remembered per session for `Last-Event-ID` resumption.
pub const MAX_EVENT_IDS_PER_SESSION: usize = 4096;
/// MCP endpoints remembered for detecting GETs and non-JSON-RPC requests (`mcp.endpoint_limit`).
pub const MAX_KNOWN_ENDPOINTS: usize = 65_536;
/// Legacy HTTP+SSE sessions remembered (`mcp.legacy_session_limit`).
pub const MAX_LEGACY_SESSIONS: usize = 65_536;
/// `OPTIONS` requests to endpoints not yet known as MCP, held until the end
/// of input decides (`mcp.preflight_limit`; the oldest is dropped).
pub const MAX_PENDING_PREFLIGHTS: usize = 4096;

/// A row waits at least this long (capture time, µs) after its request's first byte before it
/// is released: the HTTP stage emits a request at its last byte, so a slower upload that
/// started earlier still gets the earlier `exchange_id`.
pub const REORDER_SLACK_US: i64 = 1_000_000;
/// A release mark ([`Analyzer::set_release_mark`]) frees a row only once it is this old
/// (capture time, µs), or twice the largest step back the capture's clock has taken so far
/// if that is more: a packet written out of time order can still bring an earlier request.
pub const RELEASE_MARK_MIN_AGE_US: i64 = 20_000;
/// A request whose stream ended without its response (`STREAM_INCOMPLETE`) stays open this
/// long (capture time, µs, from the end of its HTTP response) for a resumed GET with
/// `Last-Event-ID` or the standalone stream to complete it (report-schema.md rule 5).
pub const STREAM_RESUME_HOLD_US: i64 = 60_000_000;
/// A row still open this long (capture time, µs) after its request's first byte stops holding
/// back the rows behind it: its `exchange_id` is reserved, retry inference sees it as it is
/// then, and it is written when it ends (out of `exchange_id` order).
pub const HOLD_LIMIT_US: i64 = 60_000_000;
/// Rows waiting for release at most; beyond it the oldest open row is set aside as at
/// [`HOLD_LIMIT_US`].
pub const MAX_BUFFERED_ROWS: usize = 65_536;
/// A preflight or GET probe to an endpoint not (yet) known as MCP is dropped when its endpoint
/// is still unknown this long (capture time, µs) after its first byte.
pub const TENTATIVE_HOLD_US: i64 = 10_000_000;
/// Released rows whose `exchange_id` a later resumed GET may name, remembered at most.
pub const MAX_RELEASED_IDS: usize = 65_536;
/// Sessions whose facts (protocol version, clientInfo, User-Agent) are kept; beyond it the
/// least recently active half is forgotten (`mcp.session_info_limit`).
pub const MAX_SESSION_INFOS: usize = 262_144;
/// Rows set aside are checked for their end at most once per this much capture time (µs).
const ASIDE_SCAN_INTERVAL_US: i64 = 1_000_000;

const META_PROTOCOL_VERSION: &str = "io.modelcontextprotocol/protocolVersion";
const META_CLIENT_INFO: &str = "io.modelcontextprotocol/clientInfo";

type CtxKey = (u64, u32);

fn ctx_key(x: &ExchangeRef) -> CtxKey {
    (x.conn.conn, x.depth)
}

/// One row under construction, with the facts classification needs.
#[derive(Debug)]
struct Row {
    /// Boxed: at release it moves on to the writer as a pointer.
    ex: Box<Exchange>,
    kind: Kind,
    rpc_id: Option<RpcId>,
    /// Pairing scope (the session key as far as known).
    scope: ArcStr,
    legacy: bool,
    /// A GET probed for MCP that has not shown MCP content, or a preflight to an
    /// endpoint not (yet) known as MCP: dropped at the end unless confirmed.
    tentative: bool,
    /// Kept if its endpoint turns out to be MCP by the end of input.
    await_endpoint: bool,
    /// Listed in its scope's open table.
    open: bool,
    /// The HTTP exchange that carried it has ended.
    http_done: bool,
    facts: SessionFacts,
    params_task: bool,
    reason: ArcStr,
    no_response: Option<BodyEnd>,
    final_msg: Option<Final>,
    final_ts: Option<i64>,
    cancel_ts: Option<i64>,
    /// The client closed the connection before this row's HTTP response ended.
    client_closed: bool,
    /// Whether the revision this request itself declares (`MCP-Protocol-Version`
    /// header or `_meta` protocolVersion) reads a client close as cancellation;
    /// `None` when it declares none (the session's revision decides).
    close_cancels_declared: Option<bool>,
    malformed: Option<String>,
    stream_broken: Option<BodyEnd>,
    stream_row_end: Option<BodyEnd>,
    body_error: Option<(i64, String)>,
    request_body_json: Option<bool>,
    resp_end_ts: Option<i64>,
    resumes_row: Option<usize>,
    anomalies: Vec<String>,
    /// Set aside while open: its `exchange_id` and the retry columns inferred then.
    reserved: Option<Reserved>,
}

/// What a row set aside keeps until it is written.
#[derive(Debug)]
struct Reserved {
    exchange_id: u64,
    attempt: u32,
    retry_of: Option<u64>,
    retry_origin: &'static str,
    retry_evidence: Option<String>,
    continuation_of: Option<u64>,
}

/// `needle` (lower case) occurs in `hay`, ignoring ASCII case.
fn contains_ignore_ascii_case(hay: &str, needle: &str) -> bool {
    hay.as_bytes()
        .windows(needle.len().max(1))
        .any(|w| w.eq_ignore_ascii_case(needle.as_bytes()))
}

/// `a` then `b` in one allocation (`format!` costs several times more, once per request).
fn concat(a: &str, b: &str) -> String {
    let mut s = String::with_capacity(a.len() + b.len());
    s.push_str(a);
    s.push_str(b);
    s
}

/// Rows under construction by arrival index (`InferenceInputs::seq`); released rows leave.
/// Boxed: a row is over a kilobyte, and the table moves its entries as it grows.
#[derive(Debug, Default)]
struct RowStore {
    map: HashMap<usize, Box<Row>>,
    next: usize,
}

impl RowStore {
    fn get(&self, i: usize) -> Option<&Row> {
        self.map.get(&i).map(|r| &**r)
    }

    fn get_mut(&mut self, i: usize) -> Option<&mut Row> {
        self.map.get_mut(&i).map(|r| &mut **r)
    }

    fn push(&mut self, row: Box<Row>) -> usize {
        let i = self.next;
        self.next = self.next.wrapping_add(1);
        self.map.insert(i, row);
        i
    }

    fn remove(&mut self, i: usize) -> Option<Box<Row>> {
        self.map.remove(&i)
    }

    fn len(&self) -> usize {
        self.map.len()
    }
}

/// Whether the row at the head of the buffer can go.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Readiness {
    Ready,
    Wait,
    /// A tentative row decided not MCP.
    Drop,
}

#[derive(Debug)]
struct Orphan {
    id: RpcId,
    fin: Final,
    ts: i64,
}

/// Per-session pairing state (all bounded).
#[derive(Debug, Default)]
struct Scope {
    /// Client requests without a final response, by id, oldest first.
    open: HashMap<RpcId, Vec<usize>>,
    open_order: VecDeque<usize>,
    open_count: usize,
    server_reqs: HashMap<RpcId, String>,
    server_order: VecDeque<RpcId>,
    orphans: VecDeque<Orphan>,
    /// SSE event id -> the request rows whose stream carried it.
    event_origin: HashMap<String, Vec<usize>>,
    event_order: VecDeque<String>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Carrier {
    JsonBody,
    PostStream,
    GetStream,
}

#[derive(Debug)]
enum Role {
    /// POST of JSON-RPC messages (rows = one per element).
    Post,
    /// GET stream; `rows[0]` is the stream row; `origin` = rows whose stream it resumes.
    Stream {
        origin: Vec<usize>,
        probe: bool,
        legacy: Option<String>,
    },
    /// DELETE or any other request to an MCP endpoint.
    Other,
}

#[derive(Debug)]
struct Ctx {
    rows: Vec<usize>,
    role: Role,
    scope: ArcStr,
    server_addr: ArcStr,
    had_sid: bool,
    status: Option<u16>,
    media: Option<ArcStr>,
    /// A 2xx event stream (its events come split and parsed by the [`Preparer`]).
    sse: bool,
    body_overflow: bool,
}

/// How a response ended (the HTTP stage's `ResponseEnd`).
struct Ended {
    ts: i64,
    end: BodyEnd,
    wire_len: u64,
    anomalies: Vec<String>,
}

#[derive(Debug)]
struct LegacySession {
    end: Option<BodyEnd>,
}

/// The MCP stage. Feed every [`HttpEvent`] with [`Analyzer::push`], take the rows that are
/// final with [`Analyzer::drain_ready`] as often as convenient, then call [`Analyzer::finish`].
///
/// Invariants: every row in `rows` is either in `pending` (no id yet) or in `aside` (id
/// reserved); `next_id` is the id the next released or reserved row gets.
#[derive(Debug)]
pub struct Analyzer {
    cfg: InferenceConfig,
    limits: Limits,
    /// Prepares the events handed to [`Analyzer::push`] (the pipeline prepares its own), and
    /// the responses when [`Analyzer::prepare_responses_here`] was called.
    preparer: Preparer,
    prepares_responses: bool,
    /// Strings rows share (see [`Texts`]).
    texts: Texts,
    rows: RowStore,
    /// Rows without an id, by (`ts_request`, arrival): the release order.
    pending: BinaryHeap<Reverse<(i64, usize)>>,
    /// Rows whose id is reserved, written when they end.
    aside: BTreeSet<usize>,
    next_id: u64,
    retry: RetryInference,
    /// Session facts gathered as rows arrive, with the session's latest activity (µs).
    infos: HashMap<String, (SessionInfo, i64)>,
    /// `exchange_id` of released rows a resumed GET may name, oldest first.
    released_ids: HashMap<usize, u64>,
    released_order: VecDeque<usize>,
    last_aside_scan: i64,
    /// Times half the session facts were forgotten (`mcp.session_info_limit`).
    evicted_infos: u64,
    ctxs: HashMap<CtxKey, Ctx>,
    scopes: HashMap<ArcStr, Scope>,
    derived: DerivedSessions,
    endpoints: HashSet<String>,
    legacy: HashMap<(ArcStr, String), LegacySession>,
    /// Preflight rows awaiting their endpoint's verdict, oldest first.
    preflights: VecDeque<usize>,
    last_ts: i64,
    /// Largest step back in event time seen so far (µs).
    max_backstep: i64,
    /// Rows whose request started before this time (µs) need not wait out
    /// [`REORDER_SLACK_US`]: no earlier request can still come ([`Analyzer::set_release_mark`]).
    release_before: i64,
}

impl Analyzer {
    /// A fresh analyzer with the given inference thresholds.
    pub fn new(cfg: InferenceConfig) -> Analyzer {
        Self::with_limits(cfg, Limits::default())
    }

    /// [`Analyzer::new`] with the body, SSE, pending and retry-index bounds of `limits`.
    pub fn with_limits(cfg: InferenceConfig, limits: Limits) -> Analyzer {
        Analyzer {
            cfg,
            limits,
            preparer: Preparer::new(limits, PrepareScope::All),
            prepares_responses: false,
            rows: RowStore::default(),
            pending: BinaryHeap::new(),
            aside: BTreeSet::new(),
            next_id: 1,
            retry: RetryInference::with_limit(&cfg, limits.retry_rows),
            infos: HashMap::default(),
            released_ids: HashMap::default(),
            released_order: VecDeque::new(),
            last_aside_scan: i64::MIN,
            evicted_infos: 0,
            ctxs: HashMap::default(),
            scopes: HashMap::default(),
            derived: DerivedSessions::default(),
            endpoints: HashSet::default(),
            legacy: HashMap::default(),
            texts: Texts::default(),
            preflights: VecDeque::new(),
            last_ts: i64::MIN,
            max_backstep: 0,
            release_before: i64::MIN,
        }
    }

    /// Process one HTTP event (events of one exchange in order: request, head, body pieces, end).
    pub fn push(&mut self, ev: HttpEvent, stats: &mut Stats) {
        let prepared = self.preparer.prepare(&ev);
        self.consume(ev, prepared, stats);
    }

    /// From now on response events come unprepared (their producer's [`Preparer`] has scope
    /// [`PrepareScope::Posts`]) and are prepared here: with two cores the producing thread
    /// is the busier one.
    pub fn prepare_responses_here(&mut self) {
        self.prepares_responses = true;
    }

    /// [`Analyzer::push`] with the body work already done by a [`Preparer`] that saw every
    /// event, in order (elsewhere, perhaps on another thread). A POST without it is prepared
    /// here.
    pub fn push_prepared(&mut self, ev: HttpEvent, prepared: Option<Prepared>, stats: &mut Stats) {
        let prepared = if self.prepares_responses && !matches!(ev, HttpEvent::Request(_)) {
            self.preparer.prepare(&ev)
        } else {
            prepared
        };
        self.consume(ev, prepared, stats);
    }

    fn consume(&mut self, ev: HttpEvent, prepared: Option<Prepared>, stats: &mut Stats) {
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
                self.on_head(ctx_key(&xref), &head);
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
                if client_closed {
                    self.mark_client_closed(key);
                }
                let body = match prepared {
                    Some(Prepared::End(b)) => Some(*b),
                    _ => None,
                };
                let ended = Ended {
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
                if client_closed {
                    self.mark_client_closed(key);
                }
                self.on_no_response(key, end);
            }
        }
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
    /// [`crate::http::HttpStage::earliest_unfinished_request_us`]; `None`: none is) or else
    /// at or after the packet that completes it, with every event before it already pushed.
    /// From then on a row that started before that time and [`RELEASE_MARK_MIN_AGE_US`]
    /// before the latest event leaves without waiting out [`REORDER_SLACK_US`]: its
    /// `exchange_id` can no longer be taken by an earlier request. Without marks (a HAR input,
    /// the tests) rows wait out the slack.
    pub fn set_release_mark(&mut self, unfinished_from_us: Option<i64>) {
        let age = RELEASE_MARK_MIN_AGE_US
            .max(self.max_backstep.saturating_mul(2))
            .min(REORDER_SLACK_US);
        let by_clock = self.last_ts.saturating_sub(age);
        self.release_before = unfinished_from_us.map_or(by_clock, |t| t.min(by_clock));
    }

    /// Moves the rows that are final, as of capture time `now_us`, to `out` in `exchange_id`
    /// order (see the module doc, "Release"), then any row set aside that has ended.
    pub fn drain_ready(&mut self, now_us: i64, stats: &mut Stats, out: &mut Vec<Box<Exchange>>) {
        let now = now_us.max(self.last_ts);
        self.release(now, false, stats, out);
        if now.saturating_sub(self.last_aside_scan) >= ASIDE_SCAN_INTERVAL_US {
            self.last_aside_scan = now;
            let done: Vec<usize> = self
                .aside
                .iter()
                .copied()
                .filter(|&i| {
                    self.rows
                        .get(i)
                        .is_some_and(|r| self.readiness(r, now, false) == Readiness::Ready)
                })
                .collect();
            for i in done {
                self.aside.remove(&i);
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
    pub fn finish(mut self, stats: &mut Stats) -> Vec<Box<Exchange>> {
        // The HTTP stage ends every exchange; anything left is cut by the end of input.
        let mut left: Vec<CtxKey> = self.ctxs.keys().copied().collect();
        left.sort_unstable();
        for key in left {
            let has_head = self.ctxs.get(&key).is_some_and(|c| c.status.is_some());
            if has_head {
                let ended = Ended {
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
        for scope in self.scopes.values() {
            for _ in &scope.orphans {
                stats.anomaly("mcp.response_without_request");
            }
        }
        let preflights = std::mem::take(&mut self.preflights);
        for i in preflights {
            self.confirm_preflight(i);
        }
        let mut out = Vec::with_capacity(self.rows.len());
        self.release(self.last_ts, true, stats, &mut out);
        let aside = std::mem::take(&mut self.aside);
        for i in aside {
            if let Some(ex) = self.finalize(i, stats) {
                out.push(ex);
            }
        }
        out.sort_by_key(|e| e.exchange_id);
        self.retry.anomalies().record(stats);
        for _ in 0..self.evicted_infos {
            stats.anomaly("mcp.session_info_limit");
        }
        out
    }

    /// Releases rows from the head of the buffer while they are final (`at_end`: all are),
    /// setting aside open rows that held the head too long.
    // Boxed rows: a released row moves on to the writer as a pointer, not 656 bytes a hop.
    #[allow(clippy::vec_box)]
    fn release(&mut self, now: i64, at_end: bool, stats: &mut Stats, out: &mut Vec<Box<Exchange>>) {
        // Nothing below adds to `pending` before the pop, so the pop takes this row.
        while let Some(&Reverse((ts, i))) = self.pending.peek() {
            if !at_end && now.saturating_sub(ts) < REORDER_SLACK_US && ts >= self.release_before {
                return;
            }
            self.confirm_preflight(i);
            let readiness = match self.rows.get(i) {
                Some(r) => self.readiness(r, now, at_end),
                None => Readiness::Drop,
            };
            match readiness {
                Readiness::Drop => {
                    self.pending.pop();
                    self.drop_row(i);
                }
                Readiness::Ready => {
                    self.pending.pop();
                    let id = self.take_id();
                    if let Some(r) = self.rows.get_mut(i) {
                        r.ex.exchange_id = id;
                    }
                    if let Some(mut ex) = self.finalize(i, stats) {
                        self.retry.push(&mut ex);
                        out.push(ex);
                    }
                }
                Readiness::Wait => {
                    let too_old = now.saturating_sub(ts) > HOLD_LIMIT_US;
                    if !too_old && self.pending.len() <= MAX_BUFFERED_ROWS {
                        return;
                    }
                    self.pending.pop();
                    self.set_aside(i);
                }
            }
        }
    }

    fn take_id(&mut self) -> u64 {
        let id = self.next_id;
        self.next_id = self.next_id.saturating_add(1);
        id
    }

    /// A row may leave when its HTTP exchange is over and no later message can change it.
    fn readiness(&self, r: &Row, now: i64, at_end: bool) -> Readiness {
        if r.tentative {
            let confirmable =
                r.await_endpoint && self.endpoints.contains(r.ex.inference.endpoint.as_str());
            if !confirmable {
                // A probe that ended without MCP content, or a preflight evicted from the
                // queue, can never be confirmed; others get `TENTATIVE_HOLD_US`.
                let hopeless = !r.await_endpoint && r.http_done;
                let expired = now.saturating_sub(r.ex.ts_request) > TENTATIVE_HOLD_US;
                return if at_end || hopeless || expired {
                    Readiness::Drop
                } else {
                    Readiness::Wait
                };
            }
        }
        if at_end {
            return Readiness::Ready;
        }
        if !r.http_done {
            return Readiness::Wait;
        }
        if r.kind == Kind::Request && r.final_msg.is_none() && r.open {
            if r.legacy {
                // Its answer comes on the session's GET stream, until that ends.
                return if self.legacy_end(r).is_some() {
                    Readiness::Ready
                } else {
                    Readiness::Wait
                };
            }
            // Rule 5: a resumed stream may still complete it.
            let since = r.resp_end_ts.unwrap_or(r.ex.ts_request);
            if now.saturating_sub(since) < STREAM_RESUME_HOLD_US {
                return Readiness::Wait;
            }
        }
        Readiness::Ready
    }

    fn legacy_end(&self, r: &Row) -> Option<BodyEnd> {
        let sid = r.ex.session_id.as_deref().unwrap_or_default().to_string();
        self.legacy
            .get(&(r.ex.server_addr.clone(), sid))
            .and_then(|l| l.end)
    }

    fn drop_row(&mut self, i: usize) {
        self.close_open(i);
        self.rows.remove(i);
    }

    /// A preflight whose endpoint turned out to be MCP is kept.
    fn confirm_preflight(&mut self, i: usize) {
        let known = self.rows.get(i).is_some_and(|r| {
            r.tentative
                && r.await_endpoint
                && self.endpoints.contains(r.ex.inference.endpoint.as_str())
        });
        if known && let Some(r) = self.rows.get_mut(i) {
            r.tentative = false;
            self.absorb_row(i);
        }
    }

    /// Reserves the id of an open row that held the head too long and runs retry inference on
    /// it as it is now (as if the capture ended now); it is written when it ends.
    fn set_aside(&mut self, i: usize) {
        let id = self.take_id();
        let Some(row) = self.rows.get(i) else {
            return;
        };
        let mut ex = self.build_exchange(row, row.ex.clone(), id, true).0;
        self.retry.push(&mut ex);
        if let Some(r) = self.rows.get_mut(i) {
            r.ex.exchange_id = id;
            r.reserved = Some(Reserved {
                exchange_id: id,
                attempt: ex.attempt,
                retry_of: ex.retry_of,
                retry_origin: ex.retry_origin,
                retry_evidence: ex.retry_evidence,
                continuation_of: ex.continuation_of,
            });
        }
        self.aside.insert(i);
    }

    /// Takes row `i` out as a final exchange (its id already in `ex.exchange_id`, or
    /// reserved), classified with what its session is known to be.
    fn finalize(&mut self, i: usize, stats: &mut Stats) -> Option<Box<Exchange>> {
        self.close_open(i);
        let mut row = self.rows.remove(i)?;
        if row.legacy && row.kind == Kind::Request && row.final_msg.is_none() {
            // Legacy requests still waiting: their answer would have come on the GET stream.
            let end = self.legacy_end(&row).unwrap_or(BodyEnd::CaptureEnd);
            row.stream_broken = Some(end);
            row.ex.stream_end = end.name();
        }
        let id = row
            .reserved
            .as_ref()
            .map_or(row.ex.exchange_id, |r| r.exchange_id);
        let taken = std::mem::take(&mut row.ex);
        let (mut ex, anomalies) = self.build_exchange(&row, taken, id, false);
        for a in anomalies {
            stats.anomaly(a);
        }
        if let Some(r) = row.reserved.take() {
            ex.attempt = r.attempt;
            ex.retry_of = r.retry_of;
            ex.retry_origin = r.retry_origin;
            ex.retry_evidence = r.retry_evidence;
            ex.continuation_of = r.continuation_of;
        }
        if row.kind == Kind::Request && ex.sse_events > 0 {
            // A later GET with Last-Event-ID may name this exchange.
            self.released_ids.insert(i, id);
            self.released_order.push_back(i);
            while self.released_order.len() > MAX_RELEASED_IDS {
                if let Some(old) = self.released_order.pop_front() {
                    self.released_ids.remove(&old);
                }
            }
        }
        Some(ex)
    }

    /// The `exchange_id` row `i` has (reserved or released), if known.
    fn id_of(&self, i: usize) -> Option<u64> {
        match self.rows.get(i) {
            Some(r) => r.reserved.as_ref().map(|x| x.exchange_id),
            None => self.released_ids.get(&i).copied(),
        }
    }

    /// The row's columns, classified (report-schema.md section 3). `provisional`: the row is
    /// still open and is judged as if the capture ended now. Returns the classification's
    /// anomalies, to be counted once the row is final. `ex` is the row's own (taken when the
    /// row is released, a copy while it is open).
    fn build_exchange(
        &self,
        row: &Row,
        mut ex: Box<Exchange>,
        id: u64,
        provisional: bool,
    ) -> (Box<Exchange>, Vec<&'static str>) {
        ex.exchange_id = id;
        ex.inference.resumes = row.resumes_row.and_then(|r| self.id_of(r));
        let info = self.infos.get(ex.session_key.as_str()).map(|(i, _)| i);
        ex.protocol_version = info
            .and_then(SessionInfo::protocol_version)
            .or_else(|| row.facts.declared_version.clone());
        // The request's own declaration first, else the session's revision.
        let close_cancels = row.close_cancels_declared.unwrap_or_else(|| {
            ex.protocol_version
                .as_deref()
                .is_some_and(classify::close_is_cancellation)
        });
        let mut facts = facts_of(row, &ex, close_cancels);
        if provisional {
            let end = BodyEnd::CaptureEnd;
            if !row.http_done && ex.http_status.is_none() {
                facts.no_response = Some(end);
            } else if row.kind == Kind::Stream {
                facts.stream_row_end = facts.stream_row_end.or(Some(end));
            } else if row.kind == Kind::Request && row.final_msg.is_none() {
                facts.stream_broken = facts.stream_broken.or(self.legacy_end(row)).or(Some(end));
            }
        }
        let verdict = classify::classify(&facts);
        let mut anomalies = row.anomalies.clone();
        for a in &verdict.anomalies {
            anomalies.push((*a).to_string());
        }
        ex.outcome = verdict.outcome;
        ex.layer = verdict.layer;
        ex.error_code = verdict.error_code;
        ex.error_message = verdict.error_message;
        ex.result_type = verdict.result_type;
        ex.is_error = verdict.is_error;
        ex.final_response = row.final_msg.is_some();
        ex.ts_response = match row.final_ts {
            Some(t) => Some(t),
            None if provisional && !row.http_done => None,
            None => row.resp_end_ts,
        };
        ex.latency_ms = ex
            .ts_response
            .map(|t| t.saturating_sub(ex.ts_request) as f64 / 1000.0);
        if let Some(info) = info {
            if let Some((name, version)) = &info.client_info {
                ex.client_name.clone_from(name);
                ex.client_version.clone_from(version);
            }
            ex.user_agent = row
                .facts
                .user_agent
                .clone()
                .or_else(|| info.user_agent.clone());
        }
        let mut seen = HashSet::default();
        anomalies.retain(|a| seen.insert(a.clone()));
        ex.anomalies = (!anomalies.is_empty()).then(|| anomalies.join(";"));
        if ex.attempt == 0 {
            ex.attempt = 1;
        }
        (ex, verdict.anomalies)
    }

    /// Adds row `i`'s facts to its session's.
    fn absorb_row(&mut self, i: usize) {
        let Some(r) = self.rows.get(i) else {
            return;
        };
        if r.tentative {
            return;
        }
        absorb_into(
            &mut self.infos,
            &mut self.evicted_infos,
            &r.scope,
            &r.facts,
            self.last_ts,
        );
    }

    /// An answered `initialize` tells its session's negotiated revision.
    fn learn_negotiated(&mut self, i: usize) {
        let Some(r) = self.rows.get_mut(i) else {
            return;
        };
        if r.ex.rpc_method.as_deref() != Some("initialize") {
            return;
        }
        if let Some(Final::Result(res)) = &r.final_msg {
            r.facts.negotiated_version.clone_from(&res.protocol_version);
            self.absorb_row(i);
        }
    }

    // ---- requests -------------------------------------------------------

    fn on_request(&mut self, req: HttpRequest, post: Option<Box<PreparedPost>>, stats: &mut Stats) {
        let key = ctx_key(&req.xref);
        let h = &req.head.headers;
        let sid = h
            .get("mcp-session-id")
            .map(str::trim)
            .filter(|s| !s.is_empty())
            .map(|s| self.texts.get(s));
        let server_addr = req.xref.conn.server_addr.clone();
        let endpoint = self.texts.concat(&server_addr, path_of(&req.head.uri));
        let legacy_sid = legacy_session_param(&req.head.uri)
            .filter(|s| self.legacy.contains_key(&(server_addr.clone(), s.clone())))
            .map(|s| self.texts.get(&s));
        let known = self.endpoints.contains(endpoint.as_str()) || legacy_sid.is_some();
        // A method nearly always arrives upper case (no copy then); `Accept` is searched
        // without a lower-cased copy.
        let method = if req.head.method.bytes().any(|b| b.is_ascii_lowercase()) {
            Cow::Owned(req.head.method.to_ascii_uppercase())
        } else {
            Cow::Borrowed(req.head.method.as_str())
        };
        let accept_sse = h
            .get("accept")
            .is_some_and(|a| contains_ignore_ascii_case(a, "text/event-stream"));

        let mut ctx = Ctx {
            rows: Vec::new(),
            role: Role::Other,
            scope: ArcStr::new(),
            server_addr: server_addr.clone(),
            had_sid: sid.is_some(),
            status: None,
            media: None,
            sse: false,
            body_overflow: false,
        };

        match &*method {
            "POST" => {
                let PreparedPost {
                    parsed,
                    fingerprints,
                } = match post {
                    Some(p) => *p,
                    None => prepare_post(&req.body),
                };
                // serde_json stops at 128 levels of nesting; such a body may well be
                // JSON-RPC, so its loss is counted even on an endpoint not known as MCP.
                if let Err(e) = &parsed
                    && e.starts_with("recursion limit exceeded")
                {
                    stats.anomaly("rpc.json_too_deep");
                }
                let value = parsed.ok();
                let is_json = value.is_some();
                let is_rpc = value.as_ref().is_some_and(looks_jsonrpc);
                match value.filter(|_| is_rpc) {
                    Some(v) => {
                        self.learn_endpoint(&endpoint, stats);
                        ctx.role = Role::Post;
                        let body = PreparedBody {
                            value: v,
                            fingerprints,
                        };
                        self.post_rows(&req, body, &mut ctx, sid, legacy_sid, &endpoint, stats);
                    }
                    None if known || sid.is_some() => {
                        let scope = self.scope_for(
                            &req,
                            sid.as_deref(),
                            legacy_sid.as_deref(),
                            &endpoint,
                            None,
                        );
                        ctx.scope = scope.clone();
                        let i = self.new_row(&req, Kind::Http, scope, sid, legacy_sid, &endpoint);
                        self.note(i, "mcp.request_not_jsonrpc", stats);
                        if let Some(r) = self.rows.get_mut(i) {
                            r.request_body_json = Some(is_json);
                        }
                        ctx.rows.push(i);
                    }
                    None => return,
                }
            }
            "GET" if accept_sse || known || sid.is_some() => {
                let last_event_id = h.get("last-event-id").map(str::to_string);
                let confirmed = known || sid.is_some() || last_event_id.is_some();
                let kind = if accept_sse { Kind::Stream } else { Kind::Http };
                let scope =
                    self.scope_for(&req, sid.as_deref(), legacy_sid.as_deref(), &endpoint, None);
                ctx.scope = scope.clone();
                let i = self.new_row(&req, kind, scope.clone(), sid, legacy_sid, &endpoint);
                ctx.rows.push(i);
                if kind == Kind::Stream {
                    let mut origin = Vec::new();
                    if let Some(r) = self.rows.get_mut(i) {
                        r.tentative = !confirmed;
                        r.ex.inference.last_event_id.clone_from(&last_event_id);
                    }
                    if let Some(le) = &last_event_id {
                        origin = self
                            .scopes
                            .get(&scope)
                            .and_then(|s| s.event_origin.get(le))
                            .cloned()
                            .unwrap_or_default();
                        match origin.first() {
                            Some(&o) => {
                                if let Some(r) = self.rows.get_mut(i) {
                                    r.resumes_row = Some(o);
                                }
                            }
                            None => self.note(i, "mcp.resume_unknown_event_id", stats),
                        }
                    }
                    ctx.role = Role::Stream {
                        origin,
                        probe: !confirmed,
                        legacy: None,
                    };
                }
            }
            "DELETE" if sid.is_some() || known => {
                let kind = if sid.is_some() {
                    Kind::SessionEnd
                } else {
                    Kind::Http
                };
                let scope =
                    self.scope_for(&req, sid.as_deref(), legacy_sid.as_deref(), &endpoint, None);
                ctx.scope = scope.clone();
                let i = self.new_row(&req, kind, scope, sid, legacy_sid, &endpoint);
                ctx.rows.push(i);
            }
            // A CORS preflight usually precedes the first JSON-RPC POST (browser clients):
            // keep it aside until the end shows whether its endpoint is MCP.
            "OPTIONS" if !known && sid.is_none() => {
                let scope = self.scope_for(&req, None, None, &endpoint, None);
                ctx.scope = scope.clone();
                let i = self.new_row(&req, Kind::Http, scope, None, None, &endpoint);
                ctx.rows.push(i);
                if let Some(r) = self.rows.get_mut(i) {
                    r.tentative = true;
                    r.await_endpoint = true;
                }
                self.preflights.push_back(i);
                if self.preflights.len() > MAX_PENDING_PREFLIGHTS
                    && let Some(old) = self.preflights.pop_front()
                    && let Some(r) = self.rows.get_mut(old)
                {
                    r.await_endpoint = false;
                    stats.anomaly("mcp.preflight_limit");
                }
            }
            _ if known || sid.is_some() => {
                let scope =
                    self.scope_for(&req, sid.as_deref(), legacy_sid.as_deref(), &endpoint, None);
                ctx.scope = scope.clone();
                let i = self.new_row(&req, Kind::Http, scope, sid, legacy_sid, &endpoint);
                ctx.rows.push(i);
            }
            _ => return,
        }
        for &i in &ctx.rows {
            self.absorb_row(i);
        }
        if let Some(old) = self.ctxs.insert(key, ctx) {
            // The HTTP stage reuses (conn, depth) only if it lost an exchange's end.
            self.close_ctx(old, BodyEnd::CaptureEnd);
            stats.anomaly("mcp.exchange_reused");
        }
    }

    /// Rows for each JSON-RPC element of a POST body (a batch gives one row per element).
    #[allow(clippy::too_many_arguments)]
    fn post_rows(
        &mut self,
        req: &HttpRequest,
        body: PreparedBody,
        ctx: &mut Ctx,
        sid: Option<ArcStr>,
        legacy_sid: Option<ArcStr>,
        endpoint: &ArcStr,
        stats: &mut Stats,
    ) {
        let PreparedBody {
            value: body,
            fingerprints,
        } = body;
        // The first element, when an object (only its `method` and `params` are read).
        let first = match &body {
            EnvelopeBody::One(env) => Some(env),
            EnvelopeBody::Batch(items) => match items.first() {
                Some(EnvelopeElement::Envelope(env)) => Some(env),
                _ => None,
            },
            EnvelopeBody::Other(_) => None,
        };
        let parses = match &body {
            EnvelopeBody::One(_) => true,
            EnvelopeBody::Batch(items) => !items.is_empty(),
            EnvelopeBody::Other(_) => false,
        };
        if !parses {
            return; // rpc::parse_envelopes would refuse it: not one envelope nor a batch
        }
        let scope = self.scope_for(req, sid.as_deref(), legacy_sid.as_deref(), endpoint, first);
        ctx.scope = scope.clone();
        let msgs = match rpc::parse_envelopes(body) {
            Ok(m) => m,
            Err(_) => return,
        };
        let header_version = req
            .head
            .headers
            .get("mcp-protocol-version")
            .map(|v| v.trim().to_string());
        for (msg, fingerprint) in msgs.into_iter().zip(fingerprints) {
            let (kind, invalid) = match &msg {
                RpcMessage::Request { .. } => (Kind::Request, None),
                RpcMessage::Notification { .. } => (Kind::Notification, None),
                RpcMessage::Result { .. } | RpcMessage::Error { .. } => (Kind::Response, None),
                RpcMessage::Invalid { reason, raw, id } => {
                    let k = if raw.get("method").is_some() {
                        if id.is_some() {
                            Kind::Request
                        } else {
                            Kind::Notification
                        }
                    } else if msg.is_response() {
                        Kind::Response
                    } else {
                        Kind::Http
                    };
                    (k, Some(reason.clone()))
                }
            };
            let i = self.new_row(
                req,
                kind,
                scope.clone(),
                sid.clone(),
                legacy_sid.clone(),
                endpoint,
            );
            ctx.rows.push(i);
            if let Some(reason) = invalid {
                self.note(i, "rpc.invalid_request_envelope", stats);
                if kind == Kind::Http
                    && let Some(r) = self.rows.get_mut(i)
                {
                    r.ex.error_message = Some(reason);
                    r.request_body_json = Some(true);
                }
            }
            let params = msg.params();
            let method = msg.method().map(|m| self.texts.get(m));
            let meta_version = params
                .and_then(|p| p.get("_meta"))
                .and_then(|m| m.get(META_PROTOCOL_VERSION))
                .and_then(Value::as_str);
            let declared: Vec<&str> = header_version
                .iter()
                .map(String::as_str)
                .chain(meta_version)
                .collect();
            if let Some(r) = self.rows.get_mut(i) {
                r.close_cancels_declared = (!declared.is_empty())
                    .then(|| declared.iter().any(|v| classify::close_is_cancellation(v)));
                r.rpc_id = msg.id().cloned();
                r.ex.jsonrpc_id = r.rpc_id.as_ref().map(RpcId::to_json_text);
                r.ex.rpc_method.clone_from(&method);
                r.ex.inference.body_fingerprint = Some(fingerprint.body);
                r.facts.declared_version.clone_from(&header_version);
                if let Some(p) = params {
                    fill_params_facts(r, method.as_deref(), p, &mut self.texts);
                    r.ex.inference.params_fingerprint = fingerprint.params;
                }
            }
            match kind {
                Kind::Request => self.register_request(i, req.ts_first_us, stats),
                Kind::Notification if method.as_deref() == Some("notifications/cancelled") => {
                    self.on_cancel(i, params, req.ts_first_us, stats);
                }
                Kind::Response => {
                    let found = msg.id().and_then(|id| {
                        self.scopes
                            .get_mut(&scope)
                            .and_then(|s| s.server_reqs.remove(id))
                    });
                    match found {
                        Some(m) => {
                            if let Some(r) = self.rows.get_mut(i) {
                                r.ex.rpc_method = Some(m.into());
                            }
                        }
                        None => {
                            self.note(i, "mcp.response_without_request", stats);
                        }
                    }
                }
                _ => {}
            }
        }
    }

    fn new_row(
        &mut self,
        req: &HttpRequest,
        kind: Kind,
        scope: ArcStr,
        sid: Option<ArcStr>,
        legacy_sid: Option<ArcStr>,
        endpoint: &ArcStr,
    ) -> usize {
        let h = &req.head.headers;
        let conn = &req.xref.conn;
        let legacy = legacy_sid.is_some();
        let transport = if legacy {
            "legacy_sse"
        } else if kind == Kind::Http && sid.is_none() {
            "unknown"
        } else {
            "streamable_http"
        };
        let seq = self.rows.next as u64;
        let user_agent = h.get("user-agent").map(|ua| self.texts.get(ua));
        let ex = Exchange {
            capture: conn.capture.clone(),
            ts_request: req.ts_first_us,
            client_addr: conn.client_addr.clone(),
            server_addr: conn.server_addr.clone(),
            tcp_stream: conn.tcp_stream,
            transport,
            session_key: scope.clone(),
            session_id: legacy_sid.or(sid),
            user_agent: user_agent.clone(),
            kind: kind.name(),
            http_method: req.head.method.clone(),
            // Section 1b: credentials in the query are shown as hashes.
            path: match redact_target(&req.head.uri) {
                Cow::Borrowed(_) => req.head.uri.clone(),
                Cow::Owned(s) => s.into(),
            },
            stream_end: "none",
            request_bytes: req.wire_len,
            attempt: 1,
            retry_origin: "none",
            inference: InferenceInputs {
                endpoint: endpoint.clone(),
                ts_request_end: req.ts_last_us,
                auth_hash: h.get("authorization").map(|a| fnv1a(&[a.as_bytes()])),
                seq,
                ..InferenceInputs::default()
            },
            ..Exchange::default()
        };
        let i = self.rows.push(Box::new(Row {
            ex: Box::new(ex),
            kind,
            rpc_id: None,
            scope,
            legacy,
            tentative: false,
            await_endpoint: false,
            open: false,
            http_done: false,
            facts: SessionFacts {
                user_agent,
                ..SessionFacts::default()
            },
            params_task: false,
            reason: ArcStr::new(),
            no_response: None,
            final_msg: None,
            final_ts: None,
            cancel_ts: None,
            client_closed: false,
            close_cancels_declared: None,
            malformed: None,
            stream_broken: None,
            stream_row_end: None,
            body_error: None,
            request_body_json: None,
            resp_end_ts: None,
            resumes_row: None,
            anomalies: req.anomalies.clone(),
            reserved: None,
        }));
        self.pending.push(Reverse((req.ts_first_us, i)));
        i
    }

    /// Session key at request time (report-schema.md section 4).
    fn scope_for(
        &mut self,
        req: &HttpRequest,
        sid: Option<&str>,
        legacy_sid: Option<&str>,
        endpoint: &str,
        first: Option<&Envelope>,
    ) -> ArcStr {
        if let Some(l) = legacy_sid {
            return self.texts.concat("legacy:", l);
        }
        if let Some(s) = sid {
            return self.texts.concat("sid:", s);
        }
        let h = &req.head.headers;
        let method = first
            .and_then(|e| e.method.as_ref())
            .and_then(Value::as_str);
        let starts = matches!(method, Some("initialize" | "server/discover"));
        let params = first.and_then(|e| e.params.as_ref());
        let client_info = params
            .and_then(|p| {
                p.get("_meta")
                    .and_then(|m| m.get(META_CLIENT_INFO))
                    .or_else(|| {
                        (method == Some("initialize"))
                            .then(|| p.get("clientInfo"))
                            .flatten()
                    })
            })
            .map(|ci| {
                let s = |k: &str| ci.get(k).and_then(Value::as_str).unwrap_or("").to_string();
                (s("name"), s("version"))
            });
        let ctx = ContextKey {
            host: host_of(&req.xref.conn.client_addr).to_string(),
            endpoint: endpoint.to_string(),
            auth_hash: h.get("authorization").map(|a| fnv1a(&[a.as_bytes()])),
            user_agent: h.get("user-agent").map(|ua| self.texts.get(ua)),
        };
        let (key, _) = self.derived.key_for(
            ctx,
            req.ts_first_us,
            starts,
            client_info,
            self.cfg.session_gap_ms,
        );
        self.texts.get(&key)
    }

    fn learn_endpoint(&mut self, endpoint: &str, stats: &mut Stats) {
        if self.endpoints.contains(endpoint) {
            return;
        }
        if self.endpoints.len() >= MAX_KNOWN_ENDPOINTS {
            stats.anomaly("mcp.endpoint_limit");
            return;
        }
        self.endpoints.insert(endpoint.to_string());
    }

    fn register_request(&mut self, i: usize, ts: i64, stats: &mut Stats) {
        let Some((scope_name, id)) = self
            .rows
            .get(i)
            .and_then(|r| Some((r.scope.clone(), r.rpc_id.clone()?)))
        else {
            return;
        };
        let scope = self.scopes.entry(scope_name).or_default();
        // Two requests in flight with the same id: ambiguous pairing (mcp-wire.md 3.1).
        let in_flight = scope.open.get(&id).is_some_and(|v| {
            v.iter()
                .any(|&o| self.rows.get(o).is_some_and(|r| !r.http_done))
        });
        // A response processed before its request (e.g. merged captures out of order).
        let orphan = scope
            .orphans
            .iter()
            .position(|o| o.id == id && o.ts >= ts.saturating_sub(ORPHAN_WINDOW_US))
            .and_then(|p| scope.orphans.remove(p));
        if let Some(o) = orphan {
            if let Some(r) = self.rows.get_mut(i) {
                r.final_msg = Some(o.fin);
                r.final_ts = Some(o.ts);
            }
            self.learn_negotiated(i);
            self.note(i, "mcp.response_before_request", stats);
            return;
        }
        scope.open.entry(id).or_default().push(i);
        scope.open_order.push_back(i);
        scope.open_count = scope.open_count.saturating_add(1);
        if let Some(r) = self.rows.get_mut(i) {
            r.open = true;
        }
        if in_flight {
            self.note(i, "mcp.duplicate_request_id", stats);
        }
        self.enforce_pending_limit(i, stats);
    }

    fn enforce_pending_limit(&mut self, i: usize, stats: &mut Stats) {
        let max_pending = self.limits.pending_per_session;
        let Some(scope_name) = self.rows.get(i).map(|r| r.scope.clone()) else {
            return;
        };
        loop {
            let Some(scope) = self.scopes.get_mut(&scope_name) else {
                return;
            };
            if scope.open_count <= max_pending {
                // Drop closed entries from the order queue now and then, so it stays bounded.
                if scope.open_order.len() > max_pending.saturating_mul(2) {
                    let rows = &self.rows;
                    scope
                        .open_order
                        .retain(|&o| rows.get(o).is_some_and(|r| r.open));
                }
                return;
            }
            let Some(oldest) = scope.open_order.pop_front() else {
                return;
            };
            if self.rows.get(oldest).is_some_and(|r| r.open) {
                self.close_open(oldest);
                self.note(oldest, "mcp.pending_limit", stats);
            }
        }
    }

    fn close_open(&mut self, i: usize) {
        let Some(row) = self.rows.get_mut(i) else {
            return;
        };
        if !row.open {
            return;
        }
        row.open = false;
        let (Some(id), Some(scope)) = (row.rpc_id.as_ref(), self.scopes.get_mut(&row.scope)) else {
            return;
        };
        if let Some(v) = scope.open.get_mut(id) {
            v.retain(|&o| o != i);
            if v.is_empty() {
                scope.open.remove(id);
            }
        }
        scope.open_count = scope.open_count.saturating_sub(1);
    }

    /// `notifications/cancelled` (mcp-wire.md 3.5): the latest open request with that id.
    fn on_cancel(&mut self, i: usize, params: Option<&Value>, ts: i64, stats: &mut Stats) {
        let Some(scope_name) = self.rows.get(i).map(|r| r.scope.clone()) else {
            return;
        };
        let target = params
            .and_then(|p| p.get("requestId"))
            .and_then(RpcId::from_value)
            .and_then(|id| {
                self.scopes
                    .get(&scope_name)
                    .and_then(|s| s.open.get(&id))
                    .and_then(|v| v.last().copied())
            });
        match target.and_then(|t| self.rows.get_mut(t)) {
            Some(r) => {
                if r.cancel_ts.is_none() {
                    r.cancel_ts = Some(ts);
                }
            }
            None => self.note(i, "mcp.cancel_without_open_request", stats),
        }
    }

    // ---- responses ------------------------------------------------------

    fn on_head(&mut self, key: CtxKey, head: &ResponseHead) {
        let Some(ctx) = self.ctxs.get_mut(&key) else {
            return;
        };
        let media = head.headers.media_type().map(|m| self.texts.get(&m));
        ctx.status = Some(head.status);
        ctx.media.clone_from(&media);
        let is_legacy = ctx
            .rows
            .first()
            .and_then(|&r| self.rows.get(r))
            .is_some_and(|r| r.legacy);
        // The session id joins through the response header (report-schema.md section 4).
        let new_sid = head
            .headers
            .get("mcp-session-id")
            .map(str::trim)
            .filter(|s| !s.is_empty() && !ctx.had_sid && !is_legacy)
            .map(str::to_string);
        if is_event_stream(head.status, media.as_deref()) {
            ctx.sse = true;
        }
        let rows = ctx.rows.clone();
        let new_scope = new_sid.as_ref().map(|sid| {
            ctx.scope = self.texts.concat("sid:", sid);
            ctx.scope.clone()
        });
        for &i in &rows {
            if let (Some(sid), Some(scope)) = (&new_sid, &new_scope) {
                self.rescope(i, scope);
                if let Some(r) = self.rows.get_mut(i) {
                    r.ex.session_id = Some(self.texts.get(sid));
                }
            }
            if let Some(r) = self.rows.get_mut(i) {
                r.ex.http_status = Some(head.status);
                r.ex.content_type.clone_from(&media);
                r.reason.clone_from(&head.reason);
            }
        }
    }

    fn rescope(&mut self, i: usize, new_scope: &ArcStr) {
        let was_open = self.rows.get(i).is_some_and(|r| r.open);
        if was_open {
            self.close_open(i);
        }
        if let Some(r) = self.rows.get_mut(i) {
            r.scope = new_scope.clone();
            r.ex.session_key = new_scope.clone();
        }
        self.absorb_row(i);
        if was_open {
            let Some(id) = self.rows.get(i).and_then(|r| r.rpc_id.clone()) else {
                return;
            };
            let scope = self.scopes.entry(new_scope.clone()).or_default();
            scope.open.entry(id).or_default().push(i);
            scope.open_order.push_back(i);
            scope.open_count = scope.open_count.saturating_add(1);
            if let Some(r) = self.rows.get_mut(i) {
                r.open = true;
            }
        }
    }

    fn on_body(&mut self, key: CtxKey, piece: BodyPiece, stats: &mut Stats) {
        let Some(ctx) = self.ctxs.get_mut(&key) else {
            return;
        };
        match piece {
            BodyPiece::Sse(events) if ctx.sse => {
                for ev in events {
                    self.on_sse_event(key, ev, stats);
                }
            }
            BodyPiece::Json { dropped: true } if !ctx.sse && !ctx.body_overflow => {
                ctx.body_overflow = true;
                stats.anomaly("mcp.body_too_large");
            }
            _ => {}
        }
    }

    fn on_sse_event(&mut self, key: CtxKey, prepared: PreparedSse, stats: &mut Stats) {
        let PreparedSse { event: ev, parsed } = prepared;
        let Some(ctx) = self.ctxs.get_mut(&key) else {
            return;
        };
        // Probe: a GET to an endpoint not yet known as MCP.
        if let Role::Stream {
            probe: probe @ true,
            legacy,
            ..
        } = &mut ctx.role
        {
            let Some(&row) = ctx.rows.first() else {
                return;
            };
            if ev.event == "endpoint" {
                // Legacy HTTP+SSE (2024-11-05): the first event names the POST endpoint.
                *probe = false;
                let sid = legacy_session_param(&ev.data);
                let server_addr = ctx.server_addr.clone();
                let post_endpoint = concat(&server_addr, path_of(ev.data.trim()));
                if let Some(s) = &sid {
                    *legacy = Some(s.clone());
                    ctx.scope = self.texts.concat("legacy:", s);
                }
                let scope = ctx.scope.clone();
                if let Some(r) = self.rows.get_mut(row) {
                    r.tentative = false;
                    r.legacy = sid.is_some();
                    r.ex.transport = "legacy_sse";
                    r.ex.session_id = sid.as_deref().map(|s| self.texts.get(s));
                    r.ex.session_key = scope.clone();
                    r.scope = scope;
                    r.ex.sse_events = r.ex.sse_events.saturating_add(1);
                }
                self.absorb_row(row);
                match sid {
                    Some(s) => {
                        if self.legacy.len() >= MAX_LEGACY_SESSIONS {
                            stats.anomaly("mcp.legacy_session_limit");
                        } else {
                            self.legacy
                                .insert((server_addr, s), LegacySession { end: None });
                        }
                    }
                    None => self.note(row, "mcp.legacy_endpoint_without_session", stats),
                }
                self.learn_endpoint(&post_endpoint, stats);
                return;
            }
            let is_rpc = serde_json::from_str::<Value>(&ev.data)
                .ok()
                .as_ref()
                .is_some_and(value_looks_jsonrpc);
            if !is_rpc {
                return; // not (yet) MCP: some other event stream
            }
            *probe = false;
            if let Some(r) = self.rows.get_mut(row) {
                r.tentative = false;
            }
            self.absorb_row(row);
        }
        let Some(ctx) = self.ctxs.get(&key) else {
            return;
        };
        let scope = ctx.scope.clone();
        let (carrier, local, stream_row) = match &ctx.role {
            Role::Post => (Carrier::PostStream, ctx.rows.clone(), None),
            Role::Stream { origin, .. } => (
                Carrier::GetStream,
                origin.clone(),
                ctx.rows.first().copied(),
            ),
            Role::Other => return,
        };
        for &i in local.iter().chain(stream_row.iter()) {
            if let Some(r) = self.rows.get_mut(i) {
                r.ex.sse_events = r.ex.sse_events.saturating_add(1);
            }
        }
        if let Some(id) = &ev.id {
            let origin: Vec<usize> = local
                .iter()
                .copied()
                .filter(|&i| self.rows.get(i).is_some_and(|r| r.kind == Kind::Request))
                .collect();
            if !origin.is_empty() {
                self.remember_event_id(&scope, id, origin);
            }
        }
        // Blank data: a priming event or keep-alive (2025-11-25 transports).
        let Some(parsed) = parsed else {
            return;
        };
        match parsed {
            Err(e) => {
                stats.anomaly("rpc.sse_data_not_json");
                let targets: Vec<usize> = self.open_requests(&local);
                for &i in targets.iter().chain(stream_row.iter()) {
                    self.note_uncounted(i, "rpc.sse_data_not_json");
                    if let Some(r) = self.rows.get_mut(i)
                        && r.kind == Kind::Request
                        && r.malformed.is_none()
                    {
                        r.malformed = Some(format!("SSE data: {e}"));
                    }
                }
            }
            Ok(msgs) => {
                for m in msgs {
                    self.on_server_message(m, ev.ts_us, &local, &scope, carrier, stream_row, stats);
                }
            }
        }
    }

    fn remember_event_id(&mut self, scope: &ArcStr, id: &str, origin: Vec<usize>) {
        let s = self.scopes.entry(scope.clone()).or_default();
        if s.event_origin.insert(id.to_string(), origin).is_none() {
            s.event_order.push_back(id.to_string());
        }
        while s.event_order.len() > MAX_EVENT_IDS_PER_SESSION {
            if let Some(old) = s.event_order.pop_front() {
                s.event_origin.remove(&old);
            }
        }
    }

    fn open_requests(&self, rows: &[usize]) -> Vec<usize> {
        rows.iter()
            .copied()
            .filter(|&i| {
                self.rows
                    .get(i)
                    .is_some_and(|r| r.kind == Kind::Request && r.final_msg.is_none())
            })
            .collect()
    }

    /// A message from the server: a response to pair, or a server->client request to remember.
    #[allow(clippy::too_many_arguments)]
    fn on_server_message(
        &mut self,
        msg: RpcMessage,
        ts: i64,
        local: &[usize],
        scope: &ArcStr,
        carrier: Carrier,
        stream_row: Option<usize>,
        stats: &mut Stats,
    ) {
        if !msg.is_response() {
            match msg {
                RpcMessage::Request { id, method, .. } => {
                    let s = self.scopes.entry(scope.clone()).or_default();
                    if s.server_reqs.len() >= MAX_SERVER_REQUESTS_PER_SESSION {
                        stats.anomaly("mcp.server_request_limit");
                        return;
                    }
                    if s.server_reqs.insert(id.clone(), method).is_none() {
                        s.server_order.push_back(id);
                    }
                }
                RpcMessage::Notification { .. } => {}
                _ => {
                    stats.anomaly("rpc.invalid_envelope");
                    if let Some(r) = stream_row {
                        self.note_uncounted(r, "rpc.invalid_envelope");
                    }
                }
            }
            return;
        }
        let id = msg.id().cloned();
        let fin = match msg {
            // Server messages come from `rpc::parse_response_body`: the result is slim already.
            RpcMessage::Result { result, .. } => Final::result(&result),
            RpcMessage::Error { code, message, .. } => Final::Error { code, message },
            RpcMessage::Invalid { reason, .. } => Final::Invalid(reason),
            _ => return,
        };
        let open_local = self.open_requests(local);
        let Some(id) = id else {
            // An error without id answers the HTTP exchange it came in (mcp-wire.md 7.7).
            if open_local.is_empty() {
                stats.anomaly("mcp.response_without_request");
                if let Some(r) = stream_row {
                    self.note_uncounted(r, "mcp.response_without_request");
                }
            }
            for i in open_local {
                self.set_final(i, fin.clone(), ts);
            }
            return;
        };
        let matching = local.iter().copied().find(|&i| {
            self.rows
                .get(i)
                .is_some_and(|r| r.kind == Kind::Request && r.rpc_id.as_ref() == Some(&id))
        });
        if let Some(i) = matching {
            if self.rows.get(i).is_some_and(|r| r.final_msg.is_some()) {
                self.note(i, "mcp.duplicate_response", stats);
            } else {
                self.set_final(i, fin, ts);
            }
            return;
        }
        let mismatch = |this: &mut Self, fin: Final| -> Option<Final> {
            if let [only] = open_local.as_slice() {
                let expected = this
                    .rows
                    .get(*only)
                    .and_then(|r| r.rpc_id.clone())
                    .map(|r| r.to_json_text())
                    .unwrap_or_default();
                this.set_final(
                    *only,
                    Final::Invalid(format!(
                        "response id {} does not match request id {expected}",
                        id.to_json_text()
                    )),
                    ts,
                );
                None
            } else {
                Some(fin)
            }
        };
        let fin = if carrier == Carrier::JsonBody {
            match mismatch(self, fin) {
                Some(f) => f,
                None => return,
            }
        } else {
            fin
        };
        let open = self
            .scopes
            .get(scope)
            .and_then(|s| s.open.get(&id))
            .and_then(|v| v.first().copied());
        if let Some(i) = open {
            self.set_final(i, fin, ts);
            if carrier == Carrier::GetStream
                && !local.contains(&i)
                && let Some(r) = self.rows.get_mut(i)
            {
                r.ex.sse_events = r.ex.sse_events.saturating_add(1);
            }
            return;
        }
        let fin = if carrier == Carrier::PostStream {
            match mismatch(self, fin) {
                Some(f) => f,
                None => return,
            }
        } else {
            fin
        };
        let s = self.scopes.entry(scope.clone()).or_default();
        s.orphans.push_back(Orphan { id, fin, ts });
        if s.orphans.len() > MAX_ORPHANS_PER_SESSION {
            s.orphans.pop_front();
            stats.anomaly("mcp.response_without_request");
        }
    }

    fn set_final(&mut self, i: usize, fin: Final, ts: i64) {
        if let Some(r) = self.rows.get_mut(i) {
            r.final_msg = Some(fin);
            r.final_ts = Some(ts);
        }
        self.learn_negotiated(i);
        self.close_open(i);
    }

    fn on_end(&mut self, key: CtxKey, ended: Ended, body: Option<PreparedEnd>, stats: &mut Stats) {
        let Ended {
            ts,
            end,
            wire_len,
            anomalies,
        } = ended;
        let Some(mut ctx) = self.ctxs.remove(&key) else {
            return;
        };
        for &i in &ctx.rows {
            if let Some(r) = self.rows.get_mut(i) {
                r.ex.response_bytes = wire_len;
                r.anomalies.extend(anomalies.iter().cloned());
                r.resp_end_ts = Some(ts);
                r.http_done = true;
            }
        }
        if ctx.sse {
            // Without the preparer's end (the input ended inside the stream) there is no
            // parser state to finish.
            let (events, parser_anomalies) = match body {
                Some(PreparedEnd::Sse { events, anomalies }) => (events, anomalies),
                _ => (Vec::new(), Vec::new()),
            };
            self.ctxs.insert(key, ctx);
            for ev in events {
                self.on_sse_event(key, ev, stats);
            }
            let Some(ctx) = self.ctxs.remove(&key) else {
                return;
            };
            let carriers: Vec<usize> = match &ctx.role {
                Role::Stream { .. } => ctx.rows.first().copied().into_iter().collect(),
                _ => ctx.rows.clone(),
            };
            for a in parser_anomalies {
                stats.anomaly(a);
                for &i in &carriers {
                    self.note_uncounted(i, a);
                }
            }
            match &ctx.role {
                Role::Post => {
                    for &i in &ctx.rows {
                        if let Some(r) = self.rows.get_mut(i)
                            && r.kind == Kind::Request
                        {
                            r.ex.stream_end = end.name();
                            if r.final_msg.is_none() {
                                r.stream_broken = Some(end);
                            }
                        }
                    }
                }
                Role::Stream { legacy, .. } => {
                    if let Some(r) = ctx.rows.first().and_then(|&i| self.rows.get_mut(i)) {
                        r.stream_row_end = Some(end);
                        r.ex.stream_end = end.name();
                    }
                    if let Some(s) = legacy
                        && let Some(l) = self.legacy.get_mut(&(ctx.server_addr.clone(), s.clone()))
                    {
                        l.end = Some(end);
                    }
                }
                Role::Other => {}
            }
            return;
        }
        let (parsed, blank) = match body {
            Some(PreparedEnd::Json { parsed, blank }) => (parsed, blank),
            _ => (Err(RpcError::Empty), true),
        };
        self.json_response(&mut ctx, ts, parsed, blank, stats);
        self.close_ctx(ctx, end);
    }

    /// A non-SSE response body: the JSON-RPC answer, or the error detail of an HTTP error.
    fn json_response(
        &mut self,
        ctx: &mut Ctx,
        ts: i64,
        parsed: Result<Vec<RpcMessage>, RpcError>,
        blank: bool,
        stats: &mut Stats,
    ) {
        let Some(status) = ctx.status else {
            return;
        };
        let ok = (200..300).contains(&status);
        let all_accepted_kinds = ctx.rows.iter().all(|&i| {
            self.rows.get(i).is_some_and(|r| {
                matches!(
                    r.kind,
                    Kind::Notification | Kind::Response | Kind::SessionEnd
                )
            })
        });
        let legacy = ctx
            .rows
            .first()
            .and_then(|&i| self.rows.get(i))
            .is_some_and(|r| r.legacy);
        if !ok || !matches!(ctx.role, Role::Post) {
            // HTTP errors (and `http` rows): keep the JSON-RPC error detail if there is one.
            if let Ok(msgs) = &parsed {
                for m in msgs {
                    if let RpcMessage::Error {
                        id, code, message, ..
                    } = m
                    {
                        for &i in &ctx.rows {
                            if let Some(r) = self.rows.get_mut(i)
                                && r.body_error.is_none()
                                && (id.is_none() || r.rpc_id.is_none() || r.rpc_id == *id)
                            {
                                r.body_error = Some((*code, message.clone()));
                            }
                        }
                    }
                }
            }
            return;
        }
        if all_accepted_kinds {
            // 202 (or any 2xx) for notifications/responses: a body there is an anomaly,
            // except the legacy transport's text `Accepted`.
            if !legacy && !blank {
                for i in ctx.rows.clone() {
                    self.note(i, "mcp.body_on_accepted", stats);
                }
            }
            return;
        }
        if legacy || status == 202 || !classify::is_json_media(ctx.media.as_deref()) {
            return; // legacy answers come on the GET stream; others are UNEXPECTED_RESPONSE
        }
        match parsed {
            Err(e) => {
                let why = if ctx.body_overflow {
                    format!("body larger than {} bytes", self.limits.body_bytes)
                } else {
                    e.to_string()
                };
                for i in self.open_requests(&ctx.rows) {
                    if let Some(r) = self.rows.get_mut(i) {
                        r.malformed = Some(why.clone());
                    }
                }
            }
            Ok(msgs) => {
                let scope = ctx.scope.clone();
                let rows = ctx.rows.clone();
                for m in msgs {
                    self.on_server_message(m, ts, &rows, &scope, Carrier::JsonBody, None, stats);
                }
                for i in self.open_requests(&rows) {
                    self.set_final(
                        i,
                        Final::Invalid("no response for this id in the JSON body".into()),
                        ts,
                    );
                }
            }
        }
    }

    /// The exchange is over; requests that cannot be answered elsewhere stop waiting.
    fn close_ctx(&mut self, ctx: Ctx, end: BodyEnd) {
        let ok = ctx.status.is_some_and(|s| (200..300).contains(&s));
        for &i in &ctx.rows {
            let keep_open = self
                .rows
                .get(i)
                .is_some_and(|r| r.legacy && ok && r.final_msg.is_none());
            if let Some(r) = self.rows.get_mut(i) {
                r.http_done = true;
                if ctx.status.is_none() {
                    r.no_response = Some(end);
                }
            }
            if !keep_open {
                self.close_open(i);
            }
        }
        if let Role::Stream {
            legacy: Some(s), ..
        } = &ctx.role
            && let Some(l) = self.legacy.get_mut(&(ctx.server_addr.clone(), s.clone()))
        {
            l.end = Some(end);
        }
    }

    /// The client closed the connection before the response of `key` ended
    /// (classified per revision: mcp-wire.md 2.3, 3.5).
    fn mark_client_closed(&mut self, key: CtxKey) {
        let Some(ctx) = self.ctxs.get(&key) else {
            return;
        };
        for &i in &ctx.rows {
            if let Some(r) = self.rows.get_mut(i) {
                r.client_closed = true;
            }
        }
    }

    fn on_no_response(&mut self, key: CtxKey, end: BodyEnd) {
        if let Some(ctx) = self.ctxs.remove(&key) {
            self.close_ctx(ctx, end);
        }
    }

    fn note(&mut self, i: usize, name: &str, stats: &mut Stats) {
        stats.anomaly(name);
        self.note_uncounted(i, name);
    }

    /// Attach an anomaly name to a row once (the run total is counted by the caller).
    fn note_uncounted(&mut self, i: usize, name: &str) {
        if let Some(r) = self.rows.get_mut(i)
            && !r.anomalies.iter().any(|a| a == name)
        {
            r.anomalies.push(name.to_string());
        }
    }
}

/// A parsed POST body and the fingerprints of its elements (see [`super::prepare`]).
struct PreparedBody {
    value: EnvelopeBody,
    fingerprints: Vec<ElementDigest>,
}

/// MCP by content: a JSON object (or batch of objects) with a `jsonrpc` member.
fn value_looks_jsonrpc(v: &Value) -> bool {
    match v {
        Value::Object(o) => o.contains_key("jsonrpc"),
        Value::Array(items) => items
            .iter()
            .any(|i| i.as_object().is_some_and(|o| o.contains_key("jsonrpc"))),
        _ => false,
    }
}

/// [`value_looks_jsonrpc`] of a body read as envelopes.
fn looks_jsonrpc(body: &EnvelopeBody) -> bool {
    let has_jsonrpc = |e: &EnvelopeElement| match e {
        EnvelopeElement::Envelope(env) => env.jsonrpc.is_some(),
        EnvelopeElement::Other(_) => false,
    };
    match body {
        EnvelopeBody::One(env) => env.jsonrpc.is_some(),
        EnvelopeBody::Batch(items) => items.iter().any(has_jsonrpc),
        EnvelopeBody::Other(_) => false,
    }
}

/// Columns and inference inputs taken from a request's `params`.
fn fill_params_facts(r: &mut Row, method: Option<&str>, p: &Value, texts: &mut Texts) {
    if method == Some("tools/call") {
        r.ex.tool_name = p.get("name").and_then(Value::as_str).map(|n| texts.get(n));
        r.params_task = p.get("task").is_some_and(Value::is_object);
    }
    r.ex.inference.has_mrtr_fields =
        p.get("inputResponses").is_some() || p.get("requestState").is_some();
    let meta = p.get("_meta");
    if let Some(v) = meta
        .and_then(|m| m.get(META_PROTOCOL_VERSION))
        .and_then(Value::as_str)
    {
        r.facts.declared_version = Some(v.to_string());
    }
    let mut ci = meta.and_then(|m| m.get(META_CLIENT_INFO));
    if method == Some("initialize") {
        if let Some(v) = p.get("protocolVersion").and_then(Value::as_str) {
            r.facts.declared_version = Some(v.to_string());
        }
        ci = p.get("clientInfo").or(ci);
    }
    if let Some(ci) = ci {
        let s = |k: &str| ci.get(k).and_then(Value::as_str).map(str::to_string);
        r.facts.client_info = Some((s("name"), s("version")));
    }
}

/// Adds a row's facts to its session `scope`'s (the first of each wins; report-schema.md
/// section 4), making room first when the table is full.
fn absorb_into(
    infos: &mut HashMap<String, (SessionInfo, i64)>,
    evicted: &mut u64,
    scope: &str,
    facts: &SessionFacts,
    ts: i64,
) {
    if !infos.contains_key(scope) {
        if infos.len() >= MAX_SESSION_INFOS {
            evict_infos(infos, evicted);
        }
        infos.insert(scope.to_string(), (SessionInfo::default(), ts));
    }
    if let Some((info, last)) = infos.get_mut(scope) {
        info.absorb(facts);
        *last = (*last).max(ts);
    }
}

/// Forgets the least recently active half of the session facts.
fn evict_infos(infos: &mut HashMap<String, (SessionInfo, i64)>, evicted: &mut u64) {
    let mut lasts: Vec<i64> = infos.values().map(|(_, t)| *t).collect();
    let mid = lasts.len() / 2;
    if lasts.is_empty() {
        return;
    }
    let (_, &mut cut, _) = lasts.select_nth_unstable(mid);
    infos.retain(|_, (_, t)| *t > cut);
    *evicted = evicted.saturating_add(1);
}

fn facts_of<'a>(row: &'a Row, ex: &'a Exchange, close_cancels: bool) -> RowFacts<'a> {
    RowFacts {
        kind: row.kind,
        rpc_method: ex.rpc_method.as_deref(),
        params_task: row.params_task,
        legacy: row.legacy,
        status: ex.http_status,
        reason: &row.reason,
        media: ex.content_type.as_deref(),
        no_response: row.no_response,
        final_msg: row.final_msg.as_ref().map(Cow::Borrowed),
        final_ts: row.final_ts,
        cancel_ts: row.cancel_ts,
        client_closed: row.client_closed,
        close_cancels,
        malformed: row.malformed.as_deref(),
        stream_broken: row.stream_broken,
        stream_row_end: row.stream_row_end,
        body_error: row.body_error.as_ref().map(|(code, m)| (*code, m.as_str())),
        request_body_json: row.request_body_json,
    }
}

#[cfg(test)]
#[path = "analyzer_tests.rs"]
mod tests;
