//! Per-session pairing state: open client requests by id, responses that came before their
//! request (orphans), server->client requests and SSE event ids for resumption, each bounded
//! by a `MAX_*` limit below (mcp-wire.md section 7).

use super::Analyzer;
use super::http_ctx::Carrier;
use crate::anomaly::Anomaly;
use crate::hashing::HashMap;
use crate::mcp::McpCounters;
use crate::mcp::classify::Final;
use crate::mcp::{Kind, SseMark};
use crate::rpc::{RpcId, RpcMessage};
use arcstr::ArcStr;
use serde_json::Value;
use std::collections::VecDeque;

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

#[derive(Debug)]
pub(super) struct Orphan {
    pub(super) id: RpcId,
    pub(super) fin: Final,
    pub(super) ts: i64,
}

/// Per-session pairing state (all bounded).
#[derive(Debug, Default)]
pub(super) struct SessionPairing {
    /// Client requests without a final response, by id, oldest first.
    pub(super) open: HashMap<RpcId, Vec<usize>>,
    pub(super) open_order: VecDeque<usize>,
    pub(super) open_count: usize,
    pub(super) server_reqs: HashMap<RpcId, String>,
    pub(super) server_order: VecDeque<RpcId>,
    pub(super) orphans: VecDeque<Orphan>,
    /// SSE event id -> the request rows whose stream carried it.
    pub(super) event_origin: HashMap<String, Vec<usize>>,
    pub(super) event_order: VecDeque<String>,
}

impl Analyzer {
    pub(super) fn register_request(&mut self, i: usize, ts: i64, stats: &mut McpCounters) {
        let Some((session_key, id, server)) = self.rows.get(i).and_then(|r| {
            Some((
                r.session_key.clone(),
                r.rpc_id.clone()?,
                r.ex.server_addr.clone(),
            ))
        }) else {
            return;
        };
        let pairing = self.pairings.entry(session_key).or_default();
        // Two requests in flight with the same id to one server: ambiguous pairing
        // (mcp-wire.md 3.1). To another server it is a gateway's copy (section 4c).
        let in_flight = pairing.open.get(&id).is_some_and(|v| {
            v.iter().any(|&o| {
                self.rows
                    .get(o)
                    .is_some_and(|r| !r.http_done && r.ex.server_addr == server)
            })
        });
        // A response processed before its request (e.g. merged captures out of order).
        let orphan = pairing
            .orphans
            .iter()
            .position(|o| o.id == id && o.ts >= ts.saturating_sub(ORPHAN_WINDOW_US))
            .and_then(|p| pairing.orphans.remove(p));
        if let Some(o) = orphan {
            if let Some(r) = self.rows.get_mut(i) {
                r.final_msg = Some(o.fin);
                r.final_ts = Some(o.ts);
            }
            self.learn_negotiated(i);
            self.note(i, "mcp.response_before_request", stats);
            return;
        }
        pairing.open.entry(id).or_default().push(i);
        pairing.open_order.push_back(i);
        pairing.open_count = pairing.open_count.saturating_add(1);
        if let Some(r) = self.rows.get_mut(i) {
            r.open = true;
        }
        if in_flight {
            self.note(i, "mcp.duplicate_request_id", stats);
        }
        self.enforce_pending_limit(i, stats);
    }

    pub(super) fn enforce_pending_limit(&mut self, i: usize, stats: &mut McpCounters) {
        let max_pending = self.limits.pending_per_session;
        let Some(session_key) = self.rows.get(i).map(|r| r.session_key.clone()) else {
            return;
        };
        loop {
            let Some(pairing) = self.pairings.get_mut(&session_key) else {
                return;
            };
            if pairing.open_count <= max_pending {
                // Drop closed entries from the order queue now and then, so it stays bounded.
                if pairing.open_order.len() > max_pending.saturating_mul(2) {
                    let rows = &self.rows;
                    pairing
                        .open_order
                        .retain(|&o| rows.get(o).is_some_and(|r| r.open));
                }
                return;
            }
            let Some(oldest) = pairing.open_order.pop_front() else {
                return;
            };
            if self.rows.get(oldest).is_some_and(|r| r.open) {
                self.close_open(oldest);
                self.note(oldest, "mcp.pending_limit", stats);
            }
        }
    }

    pub(super) fn close_open(&mut self, i: usize) {
        let Some(row) = self.rows.get_mut(i) else {
            return;
        };
        if !row.open {
            return;
        }
        row.open = false;
        let (Some(id), Some(pairing)) =
            (row.rpc_id.as_ref(), self.pairings.get_mut(&row.session_key))
        else {
            return;
        };
        if let Some(v) = pairing.open.get_mut(id) {
            v.retain(|&o| o != i);
            if v.is_empty() {
                pairing.open.remove(id);
            }
        }
        pairing.open_count = pairing.open_count.saturating_sub(1);
    }

    /// `notifications/cancelled` (mcp-wire.md 3.5): the latest open request with that id.
    pub(super) fn on_cancel(
        &mut self,
        i: usize,
        params: Option<&Value>,
        ts: i64,
        stats: &mut McpCounters,
    ) {
        let Some(session_key) = self.rows.get(i).map(|r| r.session_key.clone()) else {
            return;
        };
        let target = params
            .and_then(|p| p.get("requestId"))
            .and_then(RpcId::from_value)
            .and_then(|id| {
                self.pairings
                    .get(&session_key)
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

    pub(super) fn move_to_session(&mut self, i: usize, new_key: &ArcStr) {
        let was_open = self.rows.get(i).is_some_and(|r| r.open);
        if was_open {
            self.close_open(i);
        }
        if let Some(r) = self.rows.get_mut(i) {
            r.session_key = new_key.clone();
            r.ex.session_key = new_key.clone();
        }
        self.absorb_row(i);
        if was_open {
            let Some(id) = self.rows.get(i).and_then(|r| r.rpc_id.clone()) else {
                return;
            };
            let pairing = self.pairings.entry(new_key.clone()).or_default();
            pairing.open.entry(id).or_default().push(i);
            pairing.open_order.push_back(i);
            pairing.open_count = pairing.open_count.saturating_add(1);
            if let Some(r) = self.rows.get_mut(i) {
                r.open = true;
            }
        }
    }

    pub(super) fn remember_event_id(&mut self, session_key: &ArcStr, id: &str, origin: Vec<usize>) {
        let s = self.pairings.entry(session_key.clone()).or_default();
        if s.event_origin.insert(id.to_string(), origin).is_none() {
            s.event_order.push_back(id.to_string());
        }
        while s.event_order.len() > MAX_EVENT_IDS_PER_SESSION {
            if let Some(old) = s.event_order.pop_front() {
                s.event_origin.remove(&old);
            }
        }
    }

    pub(super) fn open_requests(&self, rows: &[usize]) -> Vec<usize> {
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
    pub(super) fn on_server_message(
        &mut self,
        msg: RpcMessage,
        ts: i64,
        local: &[usize],
        session_key: &ArcStr,
        carrier: Carrier,
        stream_row: Option<usize>,
        stats: &mut McpCounters,
    ) {
        if !msg.is_response() {
            match msg {
                RpcMessage::Request { id, method, .. } => {
                    let s = self.pairings.entry(session_key.clone()).or_default();
                    if s.server_reqs.len() >= MAX_SERVER_REQUESTS_PER_SESSION {
                        stats.anomaly(Anomaly::McpServerRequestLimit);
                        return;
                    }
                    if s.server_reqs.insert(id.clone(), method).is_none() {
                        s.server_order.push_back(id);
                    }
                }
                RpcMessage::Notification { .. } => {}
                _ => {
                    stats.anomaly(Anomaly::RpcInvalidEnvelope);
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
                stats.anomaly(Anomaly::McpResponseWithoutRequest);
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
            .pairings
            .get(session_key)
            .and_then(|s| s.open.get(&id))
            .and_then(|v| v.first().copied());
        if let Some(i) = open {
            self.set_final(i, fin, ts);
            if carrier == Carrier::GetStream
                && !local.contains(&i)
                && let Some(r) = self.rows.get_mut(i)
            {
                r.ex.sse_events = r.ex.sse_events.saturating_add(1);
                let mark = SseMark {
                    ts_us: ts,
                    name: arcstr::literal!("response"),
                };
                r.ex.inference.note_sse(mark, self.limits.sse_marks_per_row);
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
        let s = self.pairings.entry(session_key.clone()).or_default();
        s.orphans.push_back(Orphan { id, fin, ts });
        if s.orphans.len() > MAX_ORPHANS_PER_SESSION {
            s.orphans.pop_front();
            stats.anomaly(Anomaly::McpResponseWithoutRequest);
        }
    }

    pub(super) fn set_final(&mut self, i: usize, fin: Final, ts: i64) {
        if let Some(r) = self.rows.get_mut(i) {
            r.final_msg = Some(fin);
            r.final_ts = Some(ts);
        }
        self.learn_negotiated(i);
        self.close_open(i);
    }
}
