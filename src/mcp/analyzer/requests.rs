//! The request side: an HTTP request becomes rows (one per JSON-RPC element of a POST), with
//! its session key and its place in the session's pairing state.

use super::Analyzer;
use super::detect::{MAX_PENDING_PREFLIGHTS, looks_jsonrpc};
use super::http_ctx::{Ctx, ExchangeRole, ctx_key};
use super::row::Row;
use crate::anomaly::Anomaly;
use crate::http::{BodyEnd, HttpRequest};
use crate::mcp::McpCounters;
use crate::mcp::classify;
use crate::mcp::prepare::{PreparedPost, prepare_post};
use crate::mcp::session::{ContextKey, fnv1a, host_of, legacy_session_param, path_of};
use crate::mcp::texts::Texts;
use crate::mcp::{Kind, TraceParent};
use crate::rpc::digest::DigestError;
use crate::rpc::digest::ElementDigest;
use crate::rpc::envelope::{Envelope, EnvelopeBody, EnvelopeElement};
use crate::rpc::{self, RpcId, RpcMessage};
use arcstr::ArcStr;
use serde_json::Value;
use std::borrow::Cow;

pub(super) const META_PROTOCOL_VERSION: &str = "io.modelcontextprotocol/protocolVersion";

pub(super) const META_CLIENT_INFO: &str = "io.modelcontextprotocol/clientInfo";

/// A parsed POST body and the fingerprints of its elements (see [`super::prepare`]).
struct PreparedBody {
    value: EnvelopeBody,
    fingerprints: Vec<ElementDigest>,
}

impl Analyzer {
    pub(super) fn on_request(
        &mut self,
        req: HttpRequest,
        post: Option<Box<PreparedPost>>,
        stats: &mut McpCounters,
    ) {
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
            role: ExchangeRole::Other,
            session_key: ArcStr::new(),
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
                if parsed.as_ref().err() == Some(&DigestError::TooDeep) {
                    stats.anomaly(Anomaly::RpcJsonTooDeep);
                }
                let value = parsed.ok();
                let is_json = value.is_some();
                let is_rpc = value.as_ref().is_some_and(looks_jsonrpc);
                match value.filter(|_| is_rpc) {
                    Some(v) => {
                        self.learn_endpoint(&endpoint, stats);
                        ctx.role = ExchangeRole::Post;
                        let body = PreparedBody {
                            value: v,
                            fingerprints,
                        };
                        self.post_rows(&req, body, &mut ctx, sid, legacy_sid, &endpoint, stats);
                    }
                    None if known || sid.is_some() => {
                        let session_key = self.session_key_for(
                            &req,
                            sid.as_deref(),
                            legacy_sid.as_deref(),
                            &endpoint,
                            None,
                        );
                        ctx.session_key = session_key.clone();
                        let i =
                            self.new_row(&req, Kind::Http, session_key, sid, legacy_sid, &endpoint);
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
                let session_key = self.session_key_for(
                    &req,
                    sid.as_deref(),
                    legacy_sid.as_deref(),
                    &endpoint,
                    None,
                );
                ctx.session_key = session_key.clone();
                let i = self.new_row(&req, kind, session_key.clone(), sid, legacy_sid, &endpoint);
                ctx.rows.push(i);
                if kind == Kind::Stream {
                    let mut origin = Vec::new();
                    if let Some(r) = self.rows.get_mut(i) {
                        r.tentative = !confirmed;
                        r.ex.inference.last_event_id.clone_from(&last_event_id);
                    }
                    if let Some(le) = &last_event_id {
                        origin = self
                            .pairings
                            .get(&session_key)
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
                    ctx.role = ExchangeRole::Stream {
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
                let session_key = self.session_key_for(
                    &req,
                    sid.as_deref(),
                    legacy_sid.as_deref(),
                    &endpoint,
                    None,
                );
                ctx.session_key = session_key.clone();
                let i = self.new_row(&req, kind, session_key, sid, legacy_sid, &endpoint);
                ctx.rows.push(i);
            }
            // A CORS preflight usually precedes the first JSON-RPC POST (browser clients):
            // keep it aside until the end shows whether its endpoint is MCP.
            "OPTIONS" if !known && sid.is_none() => {
                let session_key = self.session_key_for(&req, None, None, &endpoint, None);
                ctx.session_key = session_key.clone();
                let i = self.new_row(&req, Kind::Http, session_key, None, None, &endpoint);
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
                    stats.anomaly(Anomaly::McpPreflightLimit);
                }
            }
            _ if known || sid.is_some() => {
                let session_key = self.session_key_for(
                    &req,
                    sid.as_deref(),
                    legacy_sid.as_deref(),
                    &endpoint,
                    None,
                );
                ctx.session_key = session_key.clone();
                let i = self.new_row(&req, Kind::Http, session_key, sid, legacy_sid, &endpoint);
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
            stats.anomaly(Anomaly::McpExchangeReused);
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
        stats: &mut McpCounters,
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
        let session_key =
            self.session_key_for(req, sid.as_deref(), legacy_sid.as_deref(), endpoint, first);
        ctx.session_key = session_key.clone();
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
                session_key.clone(),
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
                    r.ex.inference.params_fingerprint_unnamed = fingerprint.params_unnamed;
                }
            }
            match kind {
                Kind::Request => self.register_request(i, req.ts_first_us, stats),
                Kind::Notification if method.as_deref() == Some("notifications/cancelled") => {
                    self.on_cancel(i, params, req.ts_first_us, stats);
                }
                Kind::Response => {
                    let found = msg.id().and_then(|id| {
                        self.pairings
                            .get_mut(&session_key)
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

    /// Session key at request time (report-schema.md section 4).
    fn session_key_for(
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
}

/// `needle` (lower case) occurs in `hay`, ignoring ASCII case.
pub(super) fn contains_ignore_ascii_case(hay: &str, needle: &str) -> bool {
    hay.as_bytes()
        .windows(needle.len().max(1))
        .any(|w| w.eq_ignore_ascii_case(needle.as_bytes()))
}

/// Columns and inference inputs taken from a request's `params`.
fn fill_params_facts(r: &mut Row, method: Option<&str>, p: &Value, texts: &mut Texts) {
    if method == Some("tools/call") {
        r.ex.tool_name = p.get("name").and_then(Value::as_str).map(|n| texts.get(n));
        r.params_task = p.get("task").is_some_and(Value::is_object);
    }
    if method == Some("prompts/get") {
        r.ex.inference.prompt_name = p.get("name").and_then(Value::as_str).map(|n| texts.get(n));
    }
    r.ex.inference.has_mrtr_fields =
        p.get("inputResponses").is_some() || p.get("requestState").is_some();
    r.ex.inference.list_cursor = method == Some("tools/list") && p.get("cursor").is_some();
    let meta = p.get("_meta");
    r.ex.inference.trace_parent = meta
        .and_then(|m| m.get("traceparent"))
        .and_then(Value::as_str)
        .and_then(TraceParent::parse);
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
