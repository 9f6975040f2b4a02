//! The response side: the head (status, media, a session id joining), body pieces, SSE
//! events and the end of each HTTP response, pairing the JSON-RPC messages they carry.

use super::Analyzer;
use super::detect::{LegacySession, MAX_LEGACY_SESSIONS, value_looks_jsonrpc};
use super::http_ctx::{Carrier, Ctx, CtxKey, ExchangeRole};
use crate::anomaly::Anomaly;
use crate::http::retry_after::RetryAfter;
use crate::http::{BodyEnd, ResponseHead};
use crate::mcp::McpCounters;
use crate::mcp::classify::{self, Final};
use crate::mcp::prepare::{BodyPiece, PreparedEnd, PreparedSse, is_event_stream};
use crate::mcp::session::{legacy_session_param, path_of};
use crate::mcp::{Kind, SseMark, Transport};
use crate::rpc::{RpcError, RpcMessage};
use arcstr::ArcStr;
use serde_json::Value;

/// How a response ended (the HTTP stage's `ResponseEnd`).
pub(super) struct ResponseEnded {
    pub(super) ts: i64,
    pub(super) end: BodyEnd,
    pub(super) wire_len: u64,
    pub(super) anomalies: Vec<String>,
}

impl Analyzer {
    pub(super) fn on_head(&mut self, key: CtxKey, head: &ResponseHead, ts: i64) {
        let Some(ctx) = self.ctxs.get_mut(&key) else {
            return;
        };
        let retry_after = RetryAfter::of_response(head.status, &head.headers, ts);
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
        let new_key = new_sid.as_ref().map(|sid| {
            ctx.session_key = self.texts.concat("sid:", sid);
            ctx.session_key.clone()
        });
        for &i in &rows {
            if let (Some(sid), Some(session_key)) = (&new_sid, &new_key) {
                self.move_to_session(i, session_key);
                if let Some(r) = self.rows.get_mut(i) {
                    r.ex.session_id = Some(self.texts.get(sid));
                }
            }
            if let Some(r) = self.rows.get_mut(i) {
                r.ex.http_status = Some(head.status);
                r.ex.inference.ts_response_start.get_or_insert(ts);
                r.ex.inference.retry_after = retry_after;
                r.ex.content_type.clone_from(&media);
                r.reason.clone_from(&head.reason);
            }
        }
    }

    pub(super) fn on_body(&mut self, key: CtxKey, piece: BodyPiece, stats: &mut McpCounters) {
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
                stats.anomaly(Anomaly::McpBodyTooLarge);
            }
            _ => {}
        }
    }

    pub(super) fn on_sse_event(
        &mut self,
        key: CtxKey,
        prepared: PreparedSse,
        stats: &mut McpCounters,
    ) {
        let PreparedSse { event: ev, parsed } = prepared;
        let Some(ctx) = self.ctxs.get_mut(&key) else {
            return;
        };
        // Probe: a GET to an endpoint not yet known as MCP.
        if let ExchangeRole::Stream {
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
                    ctx.session_key = self.texts.concat("legacy:", s);
                }
                let session_key = ctx.session_key.clone();
                if let Some(r) = self.rows.get_mut(row) {
                    r.tentative = false;
                    r.legacy = sid.is_some();
                    r.ex.transport = Transport::LegacySse;
                    r.ex.session_id = sid.as_deref().map(|s| self.texts.get(s));
                    r.ex.session_key = session_key.clone();
                    r.session_key = session_key;
                    r.ex.sse_events = r.ex.sse_events.saturating_add(1);
                    let mark = SseMark {
                        ts_us: ev.ts_us,
                        name: arcstr::literal!("endpoint"),
                    };
                    r.ex.inference.note_sse(mark, self.limits.sse_marks_per_row);
                }
                self.absorb_row(row);
                match sid {
                    Some(s) => {
                        if self.legacy.len() >= MAX_LEGACY_SESSIONS {
                            stats.anomaly(Anomaly::McpLegacySessionLimit);
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
        let session_key = ctx.session_key.clone();
        let (carrier, local, stream_row) = match &ctx.role {
            ExchangeRole::Post => (Carrier::PostStream, ctx.rows.clone(), None),
            ExchangeRole::Stream { origin, .. } => (
                Carrier::GetStream,
                origin.clone(),
                ctx.rows.first().copied(),
            ),
            ExchangeRole::Other => return,
        };
        let limit = self.limits.sse_marks_per_row;
        let mark = (limit > 0).then(|| SseMark {
            ts_us: ev.ts_us,
            name: self.sse_mark_name(parsed.as_ref()),
        });
        for &i in local.iter().chain(stream_row.iter()) {
            if let Some(r) = self.rows.get_mut(i) {
                r.ex.sse_events = r.ex.sse_events.saturating_add(1);
                if let Some(m) = &mark {
                    r.ex.inference.note_sse(m.clone(), limit);
                }
            }
        }
        if let Some(id) = &ev.id {
            let origin: Vec<usize> = local
                .iter()
                .copied()
                .filter(|&i| self.rows.get(i).is_some_and(|r| r.kind == Kind::Request))
                .collect();
            if !origin.is_empty() {
                self.remember_event_id(&session_key, id, origin);
            }
        }
        // Blank data: a priming event or keep-alive (2025-11-25 transports).
        let Some(parsed) = parsed else {
            return;
        };
        match parsed {
            Err(e) => {
                stats.anomaly(Anomaly::RpcSseDataNotJson);
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
                    self.on_server_message(
                        m,
                        ev.ts_us,
                        &local,
                        &session_key,
                        carrier,
                        stream_row,
                        stats,
                    );
                }
            }
        }
    }

    /// What an SSE event carried, as a span event's name: the method of its (first)
    /// message, `response`, `priming` for blank data, `invalid` for data that is no JSON-RPC.
    fn sse_mark_name(&mut self, parsed: Option<&Result<Vec<RpcMessage>, RpcError>>) -> ArcStr {
        match parsed {
            None => arcstr::literal!("priming"),
            Some(Err(_)) => arcstr::literal!("invalid"),
            Some(Ok(msgs)) => match msgs.first().and_then(RpcMessage::method) {
                Some(method) => self.texts.get(method),
                None => arcstr::literal!("response"),
            },
        }
    }

    pub(super) fn on_end(
        &mut self,
        key: CtxKey,
        ended: ResponseEnded,
        body: Option<PreparedEnd>,
        stats: &mut McpCounters,
    ) {
        let ResponseEnded {
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
                r.anomalies.extend(anomalies.iter().map(String::as_str));
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
                ExchangeRole::Stream { .. } => ctx.rows.first().copied().into_iter().collect(),
                _ => ctx.rows.clone(),
            };
            for a in parser_anomalies {
                stats.anomaly_name(a);
                for &i in &carriers {
                    self.note_uncounted(i, a);
                }
            }
            match &ctx.role {
                ExchangeRole::Post => {
                    for &i in &ctx.rows {
                        if let Some(r) = self.rows.get_mut(i)
                            && r.kind == Kind::Request
                        {
                            r.ex.stream_end = end.into();
                            if r.final_msg.is_none() {
                                r.stream_broken = Some(end);
                            }
                        }
                    }
                }
                ExchangeRole::Stream { legacy, .. } => {
                    if let Some(r) = ctx.rows.first().and_then(|&i| self.rows.get_mut(i)) {
                        r.stream_row_end = Some(end);
                        r.ex.stream_end = end.into();
                    }
                    if let Some(s) = legacy
                        && let Some(l) = self.legacy.get_mut(&(ctx.server_addr.clone(), s.clone()))
                    {
                        l.end = Some(end);
                    }
                }
                ExchangeRole::Other => {}
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
    pub(super) fn json_response(
        &mut self,
        ctx: &mut Ctx,
        ts: i64,
        parsed: Result<Vec<RpcMessage>, RpcError>,
        blank: bool,
        stats: &mut McpCounters,
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
        if !ok || !matches!(ctx.role, ExchangeRole::Post) {
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
                let session_key = ctx.session_key.clone();
                let rows = ctx.rows.clone();
                for m in msgs {
                    self.on_server_message(
                        m,
                        ts,
                        &rows,
                        &session_key,
                        Carrier::JsonBody,
                        None,
                        stats,
                    );
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
    pub(super) fn close_ctx(&mut self, ctx: Ctx, end: BodyEnd) {
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
        if let ExchangeRole::Stream {
            legacy: Some(s), ..
        } = &ctx.role
            && let Some(l) = self.legacy.get_mut(&(ctx.server_addr.clone(), s.clone()))
        {
            l.end = Some(end);
        }
    }

    /// When the HTTP exchange of `key` ended, for hop linking (a copy starts before it).
    pub(super) fn mark_ended(&mut self, key: CtxKey, ts: i64) {
        let Some(ctx) = self.ctxs.get(&key) else {
            return;
        };
        for &i in &ctx.rows {
            if let Some(r) = self.rows.get_mut(i) {
                r.ex.inference.ts_ended.get_or_insert(ts);
            }
        }
    }

    /// The client closed the connection before the response of `key` ended
    /// (classified per revision: mcp-wire.md 2.3, 3.5).
    pub(super) fn mark_client_closed(&mut self, key: CtxKey) {
        let Some(ctx) = self.ctxs.get(&key) else {
            return;
        };
        for &i in &ctx.rows {
            if let Some(r) = self.rows.get_mut(i) {
                r.client_closed = true;
            }
        }
    }

    pub(super) fn on_no_response(&mut self, key: CtxKey, end: BodyEnd) {
        if let Some(ctx) = self.ctxs.remove(&key) {
            self.close_ctx(ctx, end);
        }
    }
}

/// `a` then `b` in one allocation (`format!` costs several times more, once per request).
fn concat(a: &str, b: &str) -> String {
    let mut s = String::with_capacity(a.len() + b.len());
    s.push_str(a);
    s.push_str(b);
    s
}
