//! Hop linking (report-schema.md section 4c): one message seen on several legs of a gateway
//! capture (client -> gateway, gateway -> server), each copy linked to the row one hop closer
//! to the client, and the failure of a call placed at the hop where it arose.
//!
//! In: released rows in `exchange_id` order, final (outcomes classified), before retry
//! inference. Out: the same rows in the same order with `hop`, `forwarded_from`, `fault_hop`
//! and `hop_evidence` filled, plus `gateway_retry_of` and `has_copies` for retry inference.
//!
//! A row's copies start before its response starts (or, without a response, before its HTTP
//! exchange ended and within the hop window), so a row is held until the rows pushed after it
//! start past that deadline: no later row can be its copy. Rows come in request order, so the
//! latest request start pushed is the clock. A call's chain is settled when its hop-1 row
//! leaves: its copies (later ids) are still held, and `fault_hop` is written on all of them.
//! Memory follows the rows of one deadline, bounded by [`HopConfig::max_waiting`].

mod evidence;
mod fault;
mod key;

use crate::anomaly::Anomaly;
use crate::hashing::HashMap;
use crate::mcp::{Exchange, Hop, Kind, McpCounters};
use arcstr::ArcStr;
use std::collections::VecDeque;

pub use key::bare_tool_name;

/// `--hop-window` default (ms): how long after an original without a response a copy may
/// still start.
pub const DEFAULT_HOP_WINDOW_MS: i64 = 30_000;

/// `--max-hop-waiting` default: most rows held while they may still get copies.
pub const MAX_HOP_WAITING: usize = 65_536;

/// Most sessions a pass-through gateway carried to another endpoint whose per-leg key is
/// remembered (the oldest forgotten first).
pub const MAX_LEG_SESSIONS: usize = 65_536;

/// Hop linking thresholds and bounds.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct HopConfig {
    /// `--hop-window` in microseconds.
    pub window_us: i64,
    /// `--max-hop-waiting`: past it the oldest held row leaves unlinked-to
    /// (`mcp.hop_waiting_full`).
    pub max_waiting: usize,
}

impl Default for HopConfig {
    fn default() -> Self {
        HopConfig {
            window_us: DEFAULT_HOP_WINDOW_MS.saturating_mul(1000),
            max_waiting: MAX_HOP_WAITING,
        }
    }
}

/// One row while it may still get copies.
#[derive(Debug)]
struct Held {
    /// `row.exchange_id`, kept beside the row: lookups by id touch only the queue.
    id: u64,
    row: Box<Exchange>,
    /// Copy key ([`key::copy_key`]); `None`: never linked.
    key: Option<u64>,
    /// A copy must start before this (µs).
    deadline: i64,
    /// Earlier held row with the same key (a list through the held rows, newest first).
    prev_same_key: Option<u64>,
    /// Copies in the order they started (ids).
    copies: Vec<u64>,
    /// Server endpoints of the rows it is a copy of (its own is the row's): a copy moves
    /// away from all of them.
    ancestors: Vec<ArcStr>,
}

/// The held rows of one copy key.
#[derive(Debug)]
struct KeyRows {
    /// The newest of them.
    newest: u64,
    /// Their one server endpoint, until rows of another join (`None` then): a row cannot be
    /// a copy of rows sent to its own endpoint, so single-leg traffic never walks the list.
    endpoint: Option<ArcStr>,
}

/// Links copies across hops, one row at a time (see the module notes).
#[derive(Debug)]
pub struct Linker {
    cfg: HopConfig,
    held: VecDeque<Held>,
    /// Copy key -> its held rows; built only while the held rows go to more than one
    /// server endpoint (before, no row can be a copy of another).
    newest: HashMap<u64, KeyRows>,
    indexed: bool,
    /// The one server endpoint of the held rows while `newest` is not built.
    only_endpoint: Option<ArcStr>,
    /// Latest request start pushed (µs).
    now: i64,
    ready: VecDeque<Box<Exchange>>,
    waiting_full: u64,
    /// (session key, server endpoint) -> the leg's own session key, for sessions a
    /// pass-through gateway carried on with the client's `Mcp-Session-Id`.
    leg_sessions: HashMap<(ArcStr, ArcStr), ArcStr>,
    leg_order: VecDeque<(ArcStr, ArcStr)>,
}

impl Linker {
    pub fn new(cfg: HopConfig) -> Self {
        Linker {
            cfg,
            held: VecDeque::new(),
            newest: HashMap::default(),
            indexed: false,
            only_endpoint: None,
            now: i64::MIN,
            ready: VecDeque::new(),
            waiting_full: 0,
            leg_sessions: HashMap::default(),
            leg_order: VecDeque::new(),
        }
    }

    /// Takes the next released row (in `exchange_id` order).
    pub fn push(&mut self, mut row: Box<Exchange>) {
        // A row that comes out of order (set aside while open, or a hand-made slice) cannot
        // be placed among the held rows' copies: it passes unlinked.
        let in_order = self.held.back().is_none_or(|h| h.id < row.exchange_id);
        let key = if in_order { key::copy_key(&row) } else { None };
        self.now = self.now.max(row.ts_request);
        if key.is_some() && !self.indexed {
            match &self.only_endpoint {
                None => self.only_endpoint = Some(row.inference.endpoint.clone()),
                Some(e) if *e == row.inference.endpoint => {}
                Some(_) => self.build_index(),
            }
        }
        let mut ancestors = Vec::new();
        if self.indexed
            && let Some(k) = key
            && let Some((original, retry_of)) = self.find_original(k, &row)
        {
            ancestors = self.link(original, retry_of, &mut row);
        }
        if !self.leg_sessions.is_empty() {
            let leg = (row.session_key.clone(), row.inference.endpoint.clone());
            if let Some(own) = self.leg_sessions.get(&leg) {
                row.session_key = own.clone();
            }
        }
        if key.is_none() && self.held.is_empty() {
            self.ready.push_back(row);
            return;
        }
        // An SSE response's head comes before the gateway asks upstream: the response that
        // counts is its final message.
        let answered = if row.kind == Kind::Request
            && row.content_type.as_deref() == Some("text/event-stream")
        {
            row.ts_response.or(row.inference.ts_response_start)
        } else {
            row.inference.ts_response_start
        };
        let deadline = match (key, answered) {
            (None, _) => i64::MIN,
            (Some(_), Some(start)) => start,
            (Some(_), None) => {
                let window_end = row.ts_request.saturating_add(self.cfg.window_us);
                row.inference
                    .ts_ended
                    .map_or(window_end, |end| end.min(window_end))
            }
        };
        let prev_same_key = match key {
            Some(k) if self.indexed => self.note_key(k, &row),
            _ => None,
        };
        self.held.push_back(Held {
            id: row.exchange_id,
            row,
            key,
            deadline,
            prev_same_key,
            copies: Vec::new(),
            ancestors,
        });
        self.settle(false);
    }

    /// The rows whose links are final, in `exchange_id` order.
    pub fn pop(&mut self) -> Option<Box<Exchange>> {
        self.ready.pop_front()
    }

    /// No row still to come starts before `ts` (µs): rows whose deadline passed may leave.
    pub fn advance(&mut self, ts: i64) {
        if ts > self.now {
            self.now = ts;
            self.settle(false);
        }
    }

    /// Every row may leave (the capture ended).
    pub fn flush(&mut self) {
        self.settle(true);
    }

    /// Counts `mcp.hop_waiting_full` once per row that left early.
    pub fn record(&mut self, stats: &mut McpCounters) {
        if self.waiting_full > 0 {
            stats.anomalies.add_many(
                Anomaly::McpHopWaitingFull,
                std::mem::take(&mut self.waiting_full),
            );
        }
    }

    /// Rows held now.
    pub fn held(&self) -> usize {
        self.held.len()
    }

    fn index_of(&self, id: u64) -> Option<usize> {
        fault::position(&self.held, id)
    }

    /// Indexes the held rows by key: a row to another endpoint came.
    fn build_index(&mut self) {
        self.indexed = true;
        for i in 0..self.held.len() {
            let Some(h) = self.held.get(i) else { break };
            let (Some(k), id, endpoint) = (h.key, h.id, h.row.inference.endpoint.clone()) else {
                continue;
            };
            let prev = self.note_key_of(k, id, &endpoint);
            if let Some(h) = self.held.get_mut(i) {
                h.prev_same_key = prev;
            }
        }
    }

    /// Makes `row` the newest held row of key `k`; returns the one before.
    fn note_key(&mut self, k: u64, row: &Exchange) -> Option<u64> {
        self.note_key_of(k, row.exchange_id, &row.inference.endpoint)
    }

    fn note_key_of(&mut self, k: u64, id: u64, endpoint: &ArcStr) -> Option<u64> {
        match self.newest.get_mut(&k) {
            Some(rows) => {
                if rows.endpoint.as_ref().is_some_and(|e| e != endpoint) {
                    rows.endpoint = None;
                }
                Some(std::mem::replace(&mut rows.newest, id))
            }
            None => {
                self.newest.insert(
                    k,
                    KeyRows {
                        newest: id,
                        endpoint: Some(endpoint.clone()),
                    },
                );
                None
            }
        }
    }

    /// The held row `row` is a copy of, and the earlier copy it resends (a gateway retry):
    /// a free original first, the nearest hop first, then the earliest.
    fn find_original(&self, key: u64, row: &Exchange) -> Option<(usize, Option<u64>)> {
        let mut best_free: Option<(Hop, usize)> = None;
        let mut best_retry: Option<(Hop, usize, u64)> = None;
        let rows = self.newest.get(&key)?;
        if rows
            .endpoint
            .as_ref()
            .is_some_and(|e| *e == row.inference.endpoint)
        {
            return None;
        }
        let mut next = Some(rows.newest);
        while let Some(id) = next {
            let Some(i) = self.index_of(id) else { break };
            let Some(h) = self.held.get(i) else { break };
            next = h.prev_same_key;
            let a = &h.row;
            let qualifies = h.key == Some(key)
                && row.ts_request > a.ts_request
                && row.ts_request < h.deadline
                && a.inference.endpoint != row.inference.endpoint
                && !h.ancestors.contains(&row.inference.endpoint);
            if !qualifies {
                continue;
            }
            let hop = a.hop;
            match h.copies.last() {
                None => {
                    // Walking newest first: `>=` keeps the earliest of one hop.
                    if best_free.is_none_or(|(b, _)| hop >= b) {
                        best_free = Some((hop, i));
                    }
                }
                Some(&last) => {
                    let resend = self
                        .index_of(last)
                        .and_then(|j| self.held.get(j))
                        .is_some_and(|c| ended_failed_before(&c.row, row.ts_request));
                    if resend && best_retry.is_none_or(|(b, _, _)| hop >= b) {
                        best_retry = Some((hop, i, last));
                    }
                }
            }
        }
        match (best_free, best_retry) {
            (Some((_, i)), _) => Some((i, None)),
            (None, Some((_, i, last))) => Some((i, Some(last))),
            (None, None) => None,
        }
    }

    /// Makes `row` a copy of held row `i`; returns the endpoints of the rows it copies.
    fn link(&mut self, i: usize, retry_of: Option<u64>, row: &mut Exchange) -> Vec<ArcStr> {
        let Some(original) = self.held.get_mut(i) else {
            return Vec::new();
        };
        original.copies.push(row.exchange_id);
        original.row.inference.has_copies = true;
        let a = &original.row;
        row.hop = Hop(a.hop.0.saturating_add(1));
        row.forwarded_from = Some(a.exchange_id);
        row.inference.gateway_retry_of = retry_of;
        row.hop_evidence = Some(evidence::copy_of(a, row));
        let same_session = row.session_key == a.session_key;
        let mut path = original.ancestors.clone();
        path.push(a.inference.endpoint.clone());
        if same_session {
            // Sessions are per leg: the gateway's upstream session is one of its own.
            let leg = (row.session_key.clone(), row.inference.endpoint.clone());
            let own = match self.leg_sessions.get(&leg) {
                Some(own) => own.clone(),
                None => {
                    let mut key = String::with_capacity(leg.0.len() + leg.1.len() + 1);
                    key.push_str(&leg.0);
                    key.push('@');
                    key.push_str(&leg.1);
                    let own = ArcStr::from(key);
                    self.leg_sessions.insert(leg.clone(), own.clone());
                    self.leg_order.push_back(leg);
                    own
                }
            };
            row.session_key = own;
            while self.leg_order.len() > MAX_LEG_SESSIONS {
                if let Some(old) = self.leg_order.pop_front() {
                    self.leg_sessions.remove(&old);
                }
            }
        }
        path
    }

    /// Releases held rows from the front while no later row can be their copy (all of them
    /// with `all`), settling each call's chain as its first row leaves.
    fn settle(&mut self, all: bool) {
        while let Some(front) = self.held.front() {
            let full = self.held.len() > self.cfg.max_waiting;
            if !all && !full && !self.is_settled(0) {
                return;
            }
            if full && !all && !self.is_settled(0) {
                self.waiting_full = self.waiting_full.saturating_add(1);
            }
            if front.row.forwarded_from.is_none() && !front.copies.is_empty() {
                fault::settle_chain(&mut self.held);
            }
            let Some(h) = self.held.pop_front() else {
                return;
            };
            if self.indexed
                && let Some(k) = h.key
                && self.newest.get(&k).is_some_and(|r| r.newest == h.id)
            {
                self.newest.remove(&k);
            }
            self.ready.push_back(h.row);
            if self.held.is_empty() {
                self.indexed = false;
                self.newest.clear();
                self.only_endpoint = None;
            }
        }
    }

    /// No later row can be a copy of held row `i` nor of any of its copies.
    fn is_settled(&self, i: usize) -> bool {
        let Some(h) = self.held.get(i) else {
            return true;
        };
        self.now >= h.deadline
            && h.copies
                .iter()
                .all(|&c| self.index_of(c).is_none_or(|j| self.is_settled(j)))
    }
}

/// The copy ended without success before `ts`: a later copy resends it.
fn ended_failed_before(copy: &Exchange, ts: i64) -> bool {
    let end = copy.ts_response.or(copy.inference.ts_ended);
    fault::failed(copy) && end.is_some_and(|e| e <= ts)
}

#[cfg(test)]
mod tests;
