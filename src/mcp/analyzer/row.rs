//! Rows under construction: the [`Row`] store, a new row from its request, and the final
//! [`Exchange`] columns built from a row and what its session showed (classification).

use super::Analyzer;
use crate::anomaly::AnomalySet;
use crate::hashing::HashMap;
use crate::http::redact::redact_target;
use crate::http::{BodyEnd, HttpRequest, http_version_name};
use crate::mcp::McpCounters;
use crate::mcp::classify::{self, Final, RowFacts};
use crate::mcp::retry::FindingSet;
use crate::mcp::session::{SessionFacts, SessionInfo, fnv1a};
use crate::mcp::{Exchange, InferenceInputs, Kind, RetryOrigin, StreamEnd, Transport};
use crate::rpc::RpcId;
use arcstr::ArcStr;
use std::borrow::Cow;

/// Sessions whose facts (protocol version, clientInfo, User-Agent) are kept; beyond it the
/// least recently active half is forgotten (`mcp.session_info_limit`).
pub const MAX_SESSION_INFOS: usize = 262_144;

/// One row under construction, with the facts classification needs.
#[derive(Debug)]
pub(super) struct Row {
    /// The HTTP connection (`ConnInfo::conn`) it came from.
    pub(super) conn: u64,
    /// Boxed: at release it moves on to the writer as a pointer.
    pub(super) ex: Box<Exchange>,
    pub(super) kind: Kind,
    pub(super) rpc_id: Option<RpcId>,
    /// The session key as far as known (pairing state is per session key).
    pub(super) session_key: ArcStr,
    pub(super) legacy: bool,
    /// A GET probed for MCP that has not shown MCP content, or a preflight to an
    /// endpoint not (yet) known as MCP: dropped at the end unless confirmed.
    pub(super) tentative: bool,
    /// Kept if its endpoint turns out to be MCP by the end of input.
    pub(super) await_endpoint: bool,
    /// Listed in its session's open requests.
    pub(super) open: bool,
    /// The HTTP exchange that carried it has ended.
    pub(super) http_done: bool,
    pub(super) facts: SessionFacts,
    pub(super) params_task: bool,
    pub(super) reason: ArcStr,
    pub(super) no_response: Option<BodyEnd>,
    pub(super) final_msg: Option<Final>,
    pub(super) final_ts: Option<i64>,
    pub(super) cancel_ts: Option<i64>,
    /// The client closed the connection before this row's HTTP response ended.
    pub(super) client_closed: bool,
    /// Whether the revision this request itself declares (`MCP-Protocol-Version`
    /// header or `_meta` protocolVersion) reads a client close as cancellation;
    /// `None` when it declares none (the session's revision decides).
    pub(super) close_cancels_declared: Option<bool>,
    pub(super) malformed: Option<String>,
    pub(super) stream_broken: Option<BodyEnd>,
    pub(super) stream_row_end: Option<BodyEnd>,
    pub(super) body_error: Option<(i64, String)>,
    pub(super) request_body_json: Option<bool>,
    pub(super) resp_end_ts: Option<i64>,
    pub(super) resumes_row: Option<usize>,
    pub(super) anomalies: AnomalySet,
    /// Set aside while open: its `exchange_id` and the retry columns inferred then.
    pub(super) reserved: Option<Reserved>,
}

/// What a row set aside keeps until it is written.
#[derive(Debug)]
pub(super) struct Reserved {
    pub(super) exchange_id: u64,
    pub(super) attempt: u32,
    pub(super) retry_of: Option<u64>,
    pub(super) retry_origin: RetryOrigin,
    pub(super) retry_evidence: Option<String>,
    pub(super) retry_findings: FindingSet,
    pub(super) continuation_of: Option<u64>,
}

/// Rows under construction by arrival index (`InferenceInputs::seq`); released rows leave.
/// Boxed: a row is over a kilobyte, and the table moves its entries as it grows.
#[derive(Debug, Default)]
pub(super) struct RowStore {
    pub(super) map: HashMap<usize, Box<Row>>,
    pub(super) next: usize,
}

impl RowStore {
    pub(super) fn get(&self, i: usize) -> Option<&Row> {
        self.map.get(&i).map(|r| &**r)
    }

    pub(super) fn get_mut(&mut self, i: usize) -> Option<&mut Row> {
        self.map.get_mut(&i).map(|r| &mut **r)
    }

    pub(super) fn push(&mut self, row: Box<Row>) -> usize {
        let i = self.next;
        self.next = self.next.wrapping_add(1);
        self.map.insert(i, row);
        i
    }

    pub(super) fn remove(&mut self, i: usize) -> Option<Box<Row>> {
        self.map.remove(&i)
    }

    pub(super) fn len(&self) -> usize {
        self.map.len()
    }
}

impl Analyzer {
    pub(super) fn new_row(
        &mut self,
        req: &HttpRequest,
        kind: Kind,
        session_key: ArcStr,
        sid: Option<ArcStr>,
        legacy_sid: Option<ArcStr>,
        endpoint: &ArcStr,
    ) -> usize {
        let h = &req.head.headers;
        let conn = &req.xref.conn;
        let legacy = legacy_sid.is_some();
        let transport = if legacy {
            Transport::LegacySse
        } else if kind == Kind::Http && sid.is_none() {
            Transport::Unknown
        } else {
            Transport::StreamableHttp
        };
        let seq = self.rows.next as u64;
        let user_agent = h.get("user-agent").map(|ua| self.texts.get(ua));
        let ex = Exchange {
            capture: conn.capture.clone(),
            ts_request: req.ts_first_us,
            client_addr: conn.client_addr.clone(),
            server_addr: conn.server_addr.clone(),
            tcp_stream: conn.tcp_stream,
            http_version: http_version_name(&req.head.version),
            h2_stream: req.h2_stream,
            tls_version: conn.tls_version.clone(),
            tls_sni: conn.tls_sni.clone(),
            transport,
            session_key: session_key.clone(),
            session_id: legacy_sid.or(sid),
            user_agent: user_agent.clone(),
            kind,
            http_method: req.head.method.clone(),
            // Section 1b: credentials in the query are shown as hashes.
            path: match redact_target(&req.head.uri) {
                Cow::Borrowed(_) => req.head.uri.clone(),
                Cow::Owned(s) => s.into(),
            },
            stream_end: StreamEnd::None,
            request_bytes: req.wire_len,
            attempt: 1,
            retry_origin: RetryOrigin::None,
            inference: InferenceInputs {
                endpoint: endpoint.clone(),
                ts_request_end: req.ts_last_us,
                auth_hash: h.get("authorization").map(|a| fnv1a(&[a.as_bytes()])),
                seq,
                ..InferenceInputs::default()
            },
            ..Exchange::default()
        };
        self.connection_rows.made(conn.conn);
        let i = self.rows.push(Box::new(Row {
            conn: conn.conn,
            ex: Box::new(ex),
            kind,
            rpc_id: None,
            session_key,
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
            anomalies: req.anomalies.iter().map(String::as_str).collect(),
            reserved: None,
        }));
        self.queue.enqueue(req.ts_first_us, i);
        i
    }

    /// The row's columns, classified (report-schema.md section 3). `provisional`: the row is
    /// still open and is judged as if the capture ended now. Returns the classification's
    /// anomalies, to be counted once the row is final. `ex` is the row's own (taken when the
    /// row is released, a copy while it is open).
    pub(super) fn build_exchange(
        &self,
        row: &Row,
        mut ex: Box<Exchange>,
        id: u64,
        provisional: bool,
    ) -> (Box<Exchange>, Vec<&'static str>) {
        ex.exchange_id = id;
        ex.inference.client_gave_up = row.client_closed;
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
        anomalies.extend(verdict.anomalies.iter().copied());
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
        ex.anomalies = anomalies;
        if ex.attempt == 0 {
            ex.attempt = 1;
        }
        (ex, verdict.anomalies)
    }

    /// Adds row `i`'s facts to its session's.
    pub(super) fn absorb_row(&mut self, i: usize) {
        let Some(r) = self.rows.get(i) else {
            return;
        };
        if r.tentative {
            return;
        }
        absorb_into(
            &mut self.infos,
            &mut self.evicted_infos,
            &r.session_key,
            &r.facts,
            self.last_ts,
        );
    }

    /// An answered `initialize` tells its session's negotiated revision.
    pub(super) fn learn_negotiated(&mut self, i: usize) {
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

    pub(super) fn note(&mut self, i: usize, name: &str, stats: &mut McpCounters) {
        stats.anomaly_name(name);
        self.note_uncounted(i, name);
    }

    /// Attach an anomaly name to a row once (the run total is counted by the caller).
    pub(super) fn note_uncounted(&mut self, i: usize, name: &str) {
        if let Some(r) = self.rows.get_mut(i) {
            r.anomalies.insert(name);
        }
    }
}

/// Adds a row's facts to those of its session `session_key` (the first of each wins; report-schema.md
/// section 4), making room first when the table is full.
pub(super) fn absorb_into(
    infos: &mut HashMap<String, (SessionInfo, i64)>,
    evicted: &mut u64,
    session_key: &str,
    facts: &SessionFacts,
    ts: i64,
) {
    if !infos.contains_key(session_key) {
        if infos.len() >= MAX_SESSION_INFOS {
            evict_infos(infos, evicted);
        }
        infos.insert(session_key.to_string(), (SessionInfo::default(), ts));
    }
    if let Some((info, last)) = infos.get_mut(session_key) {
        info.absorb(facts);
        *last = (*last).max(ts);
    }
}

/// Forgets the least recently active half of the session facts.
pub(super) fn evict_infos(infos: &mut HashMap<String, (SessionInfo, i64)>, evicted: &mut u64) {
    let mut lasts: Vec<i64> = infos.values().map(|(_, t)| *t).collect();
    let mid = lasts.len() / 2;
    if lasts.is_empty() {
        return;
    }
    let (_, &mut cut, _) = lasts.select_nth_unstable(mid);
    infos.retain(|_, (_, t)| *t > cut);
    *evicted = evicted.saturating_add(1);
}

pub(super) fn facts_of<'a>(row: &'a Row, ex: &'a Exchange, close_cancels: bool) -> RowFacts<'a> {
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
