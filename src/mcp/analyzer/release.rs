//! When a row may leave the analyzer (the "Release" rules of [`super`]): the
//! [`ReleaseQueue`] orders rows by (`ts_request`, arrival) and hands out `exchange_id`s as
//! the head leaves; the [`Analyzer`] methods here decide, row by row, whether the head is
//! final, waits, is set aside or is dropped.

use super::Analyzer;
use super::row::{Reserved, Row};
use crate::hashing::HashMap;
use crate::http::BodyEnd;
use crate::mcp::Exchange;
use crate::mcp::Kind;
use crate::mcp::McpCounters;
use crate::mcp::classify::Final;
use std::cmp::Reverse;
use std::collections::{BTreeSet, BinaryHeap, VecDeque};

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

/// Rows set aside are checked for their end at most once per this much capture time (µs).
pub(super) const ASIDE_SCAN_INTERVAL_US: i64 = 1_000_000;

/// Whether the row at the head of the buffer can go.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Readiness {
    Ready,
    Wait,
    /// A tentative row decided not MCP.
    Drop,
}

/// The release order: rows without an `exchange_id` by (`ts_request`, arrival), the rows set
/// aside with their id reserved, the next id to hand out, and the ids of released rows that a
/// later resumed GET may still name. It decides *when* the head may be looked at; whether the
/// head row is final is the analyzer's ([`Analyzer::release`]).
#[derive(Debug)]
pub(super) struct ReleaseQueue {
    /// Rows without an id, by (`ts_request`, arrival).
    pending: BinaryHeap<Reverse<(i64, usize)>>,
    /// Rows whose id is reserved, written when they end.
    aside: BTreeSet<usize>,
    next_id: u64,
    /// Rows whose request started before this time (µs) need not wait out
    /// [`REORDER_SLACK_US`]: no earlier request can still come ([`ReleaseQueue::set_mark`]).
    release_before: i64,
    last_aside_scan: i64,
    /// `exchange_id` of released rows a resumed GET may name, oldest first.
    released_ids: HashMap<usize, u64>,
    released_order: VecDeque<usize>,
    /// An open head older than this (µs) is set aside ([`HOLD_LIMIT_US`] by default).
    hold_limit_us: i64,
}

impl Default for ReleaseQueue {
    fn default() -> Self {
        ReleaseQueue::with_hold_limit(HOLD_LIMIT_US)
    }
}

impl ReleaseQueue {
    /// A queue whose open head holds the rows behind it at most `hold_limit_us`.
    pub(super) fn with_hold_limit(hold_limit_us: i64) -> Self {
        ReleaseQueue {
            pending: BinaryHeap::new(),
            aside: BTreeSet::new(),
            next_id: 1,
            release_before: i64::MIN,
            last_aside_scan: i64::MIN,
            released_ids: HashMap::default(),
            released_order: VecDeque::new(),
            hold_limit_us,
        }
    }

    /// Row `row`, whose request's first byte came at `ts_request`, waits for its id.
    pub(super) fn enqueue(&mut self, ts_request: i64, row: usize) {
        self.pending.push(Reverse((ts_request, row)));
    }

    /// The head: (`ts_request`, row) of the earliest row without an id.
    pub(super) fn head(&self) -> Option<(i64, usize)> {
        self.pending.peek().map(|&Reverse(head)| head)
    }

    /// Takes the head out of the order (released, dropped or set aside by the caller).
    pub(super) fn pop(&mut self) {
        self.pending.pop();
    }

    /// Whether a head that started at `ts` may be looked at, as of `now`: it has waited out
    /// [`REORDER_SLACK_US`], or the release mark says no earlier request can still come.
    pub(super) fn is_due(&self, ts: i64, now: i64) -> bool {
        now.saturating_sub(ts) >= REORDER_SLACK_US || ts < self.release_before
    }

    /// Whether an open head that started at `ts` has held the rows behind it too long: past
    /// its hold limit ([`HOLD_LIMIT_US`] by default), or with more than [`MAX_BUFFERED_ROWS`]
    /// waiting.
    pub(super) fn holds_too_long(&self, ts: i64, now: i64) -> bool {
        now.saturating_sub(ts) > self.hold_limit_us || self.pending.len() > MAX_BUFFERED_ROWS
    }

    /// The next `exchange_id` (1, 2, ...).
    pub(super) fn take_id(&mut self) -> u64 {
        let id = self.next_id;
        self.next_id = self.next_id.saturating_add(1);
        id
    }

    /// The release mark ([`Analyzer::set_release_mark`]): rows that started before
    /// `unfinished_from` and before `last_ts` less [`RELEASE_MARK_MIN_AGE_US`] (or twice
    /// `max_backstep`, if more) need not wait out the slack.
    pub(super) fn set_mark(
        &mut self,
        last_ts: i64,
        max_backstep: i64,
        unfinished_from: Option<i64>,
    ) {
        let age = RELEASE_MARK_MIN_AGE_US
            .max(max_backstep.saturating_mul(2))
            .min(REORDER_SLACK_US);
        let by_clock = last_ts.saturating_sub(age);
        self.release_before = unfinished_from.map_or(by_clock, |t| t.min(by_clock));
    }

    /// Row `row` (its id reserved) is written when it ends.
    pub(super) fn set_aside(&mut self, row: usize) {
        self.aside.insert(row);
    }

    /// Whether the rows set aside are due a check for their end at `now`
    /// ([`ASIDE_SCAN_INTERVAL_US`]); a `true` starts the next interval.
    pub(super) fn aside_scan_due(&mut self, now: i64) -> bool {
        if now.saturating_sub(self.last_aside_scan) >= ASIDE_SCAN_INTERVAL_US {
            self.last_aside_scan = now;
            return true;
        }
        false
    }

    /// The rows set aside, in arrival order.
    pub(super) fn aside(&self) -> impl Iterator<Item = usize> + '_ {
        self.aside.iter().copied()
    }

    /// Row `row` is no longer set aside (it is being written).
    pub(super) fn unset_aside(&mut self, row: usize) {
        self.aside.remove(&row);
    }

    /// Every row set aside, taken out (the end of input).
    pub(super) fn take_aside(&mut self) -> BTreeSet<usize> {
        std::mem::take(&mut self.aside)
    }

    /// Row `row` left with `exchange_id` `id`; a later resumed GET may name it. The oldest
    /// beyond [`MAX_RELEASED_IDS`] is forgotten.
    pub(super) fn remember_released(&mut self, row: usize, id: u64) {
        self.released_ids.insert(row, id);
        self.released_order.push_back(row);
        while self.released_order.len() > MAX_RELEASED_IDS {
            if let Some(old) = self.released_order.pop_front() {
                self.released_ids.remove(&old);
            }
        }
    }

    /// The `exchange_id` released row `row` left with, if remembered.
    pub(super) fn released_id(&self, row: usize) -> Option<u64> {
        self.released_ids.get(&row).copied()
    }
}

impl Analyzer {
    /// Releases rows from the head of the buffer while they are final (`at_end`: all are),
    /// setting aside open rows that held the head too long.
    // Boxed rows: a released row moves on to the writer as a pointer, not 656 bytes a hop.
    #[allow(clippy::vec_box)]
    pub(super) fn release(
        &mut self,
        now: i64,
        at_end: bool,
        stats: &mut McpCounters,
        out: &mut Vec<Box<Exchange>>,
    ) {
        self.release_rows(now, at_end, stats);
        // No row still queued started before the head; none to come before `now`.
        match self.queue.head() {
            _ if at_end => self.linker.flush(),
            Some((ts, _)) => self.linker.advance(ts),
            None => self.linker.advance(now.saturating_sub(REORDER_SLACK_US)),
        }
        while let Some(mut ex) = self.linker.pop() {
            self.retry.push(&mut ex);
            out.push(ex);
        }
        self.linker.record(stats);
    }

    /// Moves final rows from the head of the buffer to hop linking.
    fn release_rows(&mut self, now: i64, at_end: bool, stats: &mut McpCounters) {
        // Nothing below adds to `pending` before the pop, so the pop takes this row.
        while let Some((ts, i)) = self.queue.head() {
            if !at_end && !self.queue.is_due(ts, now) {
                return;
            }
            self.confirm_preflight(i);
            let readiness = match self.rows.get(i) {
                Some(r) => self.readiness(r, now, at_end),
                None => Readiness::Drop,
            };
            match readiness {
                Readiness::Drop => {
                    self.queue.pop();
                    self.drop_row(i);
                }
                Readiness::Ready => {
                    self.queue.pop();
                    let id = self.queue.take_id();
                    if let Some(r) = self.rows.get_mut(i) {
                        r.ex.exchange_id = id;
                    }
                    if let Some(ex) = self.finalize(i, stats) {
                        self.linker.push(ex);
                    }
                }
                Readiness::Wait => {
                    if !self.queue.holds_too_long(ts, now) {
                        return;
                    }
                    self.queue.pop();
                    self.set_aside(i);
                }
            }
        }
    }

    /// A row may leave when its HTTP exchange is over and no later message can change it.
    pub(super) fn readiness(&self, r: &Row, now: i64, at_end: bool) -> Readiness {
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

    pub(super) fn legacy_end(&self, r: &Row) -> Option<BodyEnd> {
        let sid = r.ex.session_id.as_deref().unwrap_or_default().to_string();
        self.legacy
            .get(&(r.ex.server_addr.clone(), sid))
            .and_then(|l| l.end)
    }

    pub(super) fn drop_row(&mut self, i: usize) {
        self.close_open(i);
        if let Some(row) = self.rows.remove(i) {
            self.connection_rows.left(row.conn, false);
        }
    }

    /// A preflight whose endpoint turned out to be MCP is kept.
    pub(super) fn confirm_preflight(&mut self, i: usize) {
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
    pub(super) fn set_aside(&mut self, i: usize) {
        let id = self.queue.take_id();
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
                retry_findings: ex.retry_findings,
                continuation_of: ex.continuation_of,
            });
        }
        self.queue.set_aside(i);
    }

    /// Takes row `i` out as a final exchange (its id already in `ex.exchange_id`, or
    /// reserved), classified with what its session is known to be.
    pub(super) fn finalize(&mut self, i: usize, stats: &mut McpCounters) -> Option<Box<Exchange>> {
        self.close_open(i);
        let mut row = self.rows.remove(i)?;
        self.connection_rows.left(row.conn, true);
        if row.legacy && row.kind == Kind::Request && row.final_msg.is_none() {
            // Legacy requests still waiting: their answer would have come on the GET stream.
            let end = self.legacy_end(&row).unwrap_or(BodyEnd::CaptureEnd);
            row.stream_broken = Some(end);
            row.ex.stream_end = end.into();
        }
        let id = row
            .reserved
            .as_ref()
            .map_or(row.ex.exchange_id, |r| r.exchange_id);
        let taken = std::mem::take(&mut row.ex);
        let (mut ex, anomalies) = self.build_exchange(&row, taken, id, false);
        for a in anomalies {
            stats.anomaly_name(a);
        }
        if let Some(r) = row.reserved.take() {
            ex.attempt = r.attempt;
            ex.retry_of = r.retry_of;
            ex.retry_origin = r.retry_origin;
            ex.retry_evidence = r.retry_evidence;
            ex.retry_findings = r.retry_findings;
            ex.continuation_of = r.continuation_of;
        }
        // A tools/list result goes to the tool catalog as its row leaves.
        if let Some(Final::Result(res)) = row.final_msg.as_mut() {
            ex.inference.tools_page = res.tools.take();
        }
        self.retry.observe_tools(&mut ex);
        if row.kind == Kind::Request && ex.sse_events > 0 {
            // A later GET with Last-Event-ID may name this exchange.
            self.queue.remember_released(i, id);
        }
        Some(ex)
    }

    /// The `exchange_id` row `i` has (reserved or released), if known.
    pub(super) fn id_of(&self, i: usize) -> Option<u64> {
        match self.rows.get(i) {
            Some(r) => r.reserved.as_ref().map(|x| x.exchange_id),
            None => self.queue.released_id(i),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Drains the queue as if every head were final at `now`: the (row, id) pairs in order.
    fn release_all(q: &mut ReleaseQueue, now: i64) -> Vec<(usize, u64)> {
        let mut out = Vec::new();
        while let Some((ts, row)) = q.head() {
            if !q.is_due(ts, now) {
                break;
            }
            q.pop();
            out.push((row, q.take_id()));
        }
        out
    }

    #[test]
    fn ids_follow_the_first_byte_then_arrival() {
        let mut q = ReleaseQueue::default();
        q.enqueue(300, 0);
        q.enqueue(100, 1);
        q.enqueue(100, 2);
        q.enqueue(200, 3);
        let now = 300 + REORDER_SLACK_US;
        assert_eq!(
            release_all(&mut q, now),
            vec![(1, 1), (2, 2), (3, 3), (0, 4)]
        );
        assert_eq!(q.head(), None);
    }

    #[test]
    fn the_head_waits_out_the_slack() {
        let mut q = ReleaseQueue::default();
        q.enqueue(1_000, 7);
        assert!(!q.is_due(1_000, 1_000 + REORDER_SLACK_US - 1));
        assert!(q.is_due(1_000, 1_000 + REORDER_SLACK_US));
        assert_eq!(release_all(&mut q, 1_000 + REORDER_SLACK_US - 1), vec![]);
        assert_eq!(release_all(&mut q, 1_000 + REORDER_SLACK_US), vec![(7, 1)]);
    }

    #[test]
    fn a_mark_frees_rows_started_before_it() {
        let mut q = ReleaseQueue::default();
        let last = 10_000_000;
        // No request under way: anything older than the minimum age may go.
        q.set_mark(last, 0, None);
        assert!(q.is_due(last - RELEASE_MARK_MIN_AGE_US - 1, last));
        assert!(!q.is_due(last - RELEASE_MARK_MIN_AGE_US, last));
        // A request under way since `t`: only rows before `t` go.
        let t = last - 500_000;
        q.set_mark(last, 0, Some(t));
        assert!(q.is_due(t - 1, last));
        assert!(!q.is_due(t, last));
    }

    #[test]
    fn a_step_back_of_the_clock_doubles_the_mark_age_up_to_the_slack() {
        let mut q = ReleaseQueue::default();
        let last = 10_000_000;
        q.set_mark(last, 100_000, None);
        assert!(q.is_due(last - 200_001, last));
        assert!(!q.is_due(last - 200_000, last));
        // Never longer than the slack itself.
        q.set_mark(last, 10 * REORDER_SLACK_US, None);
        assert!(q.is_due(last - REORDER_SLACK_US - 1, last));
        assert!(!q.is_due(last - REORDER_SLACK_US, last - 1));
    }

    #[test]
    fn an_open_head_holds_too_long_past_the_limit_or_the_buffer() {
        let mut q = ReleaseQueue::default();
        q.enqueue(0, 0);
        assert!(!q.holds_too_long(0, HOLD_LIMIT_US));
        assert!(q.holds_too_long(0, HOLD_LIMIT_US + 1));
        for row in 1..MAX_BUFFERED_ROWS {
            q.enqueue(1, row);
        }
        assert!(!q.holds_too_long(0, 1));
        q.enqueue(1, MAX_BUFFERED_ROWS);
        assert!(q.holds_too_long(0, 1));
    }

    #[test]
    fn rows_set_aside_keep_their_id_and_are_scanned_once_per_interval() {
        let mut q = ReleaseQueue::default();
        q.enqueue(0, 4);
        q.enqueue(5, 9);
        q.pop();
        let reserved = q.take_id();
        q.set_aside(4);
        assert_eq!(reserved, 1);
        assert_eq!(release_all(&mut q, 5 + REORDER_SLACK_US), vec![(9, 2)]);
        assert!(q.aside_scan_due(0));
        assert!(!q.aside_scan_due(ASIDE_SCAN_INTERVAL_US - 1));
        assert!(q.aside_scan_due(ASIDE_SCAN_INTERVAL_US));
        assert_eq!(q.aside().collect::<Vec<_>>(), vec![4]);
        q.unset_aside(4);
        assert_eq!(q.aside().count(), 0);
        q.set_aside(3);
        q.set_aside(1);
        assert_eq!(q.take_aside().into_iter().collect::<Vec<_>>(), vec![1, 3]);
        assert_eq!(q.aside().count(), 0);
    }

    #[test]
    fn released_ids_are_remembered_up_to_the_limit() {
        let mut q = ReleaseQueue::default();
        for row in 0..=MAX_RELEASED_IDS {
            q.remember_released(row, row as u64 + 100);
        }
        assert_eq!(q.released_id(0), None, "the oldest is forgotten");
        assert_eq!(q.released_id(1), Some(101));
        assert_eq!(
            q.released_id(MAX_RELEASED_IDS),
            Some(MAX_RELEASED_IDS as u64 + 100)
        );
        assert_eq!(q.released_ids.len(), MAX_RELEASED_IDS);
    }
}
