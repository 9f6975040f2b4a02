//! `mcp-trace http`'s rows: one per HTTP exchange (like Zeek's http.log), built from
//! [`HttpEvent`]s. They are this stage's own account of what it parsed, MCP or not; the
//! report stage writes them (`crate::report::write_http_rows`).

use super::{BodyEnd, ExchangeRef, HttpEvent};
use crate::anomaly::AnomalySet;
use crate::timestamp::format_rfc3339_us;
use serde::Serialize;
use std::collections::HashMap;

/// One exchange: a request (answered or not), or a response without request.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct HttpRow {
    /// Time of the request's first byte (the response's when there is no
    /// request), microseconds since the Unix epoch; serialized as RFC 3339 UTC.
    #[serde(serialize_with = "serialize_ts")]
    pub ts: i64,
    /// TCP stream index (`None` for HAR input).
    pub tcp_stream: Option<u64>,
    /// `ip:port` of the client (`[ip]:port` for IPv6).
    pub client_addr: String,
    /// `ip:port` of the server.
    pub server_addr: String,
    /// 1-based position of the exchange on its connection (Zeek's `trans_depth`).
    pub trans_depth: u32,
    /// HTTP/2 stream id of the exchange (`None` for HTTP/1.x, HAR, and an HTTP/2 response
    /// seen without its request).
    pub h2_stream: Option<u32>,
    /// Request method; `None` for a response without request.
    pub method: Option<String>,
    /// `Host` header of the request.
    pub host: Option<String>,
    /// Request target as sent.
    pub uri: Option<String>,
    /// HTTP version of the request (of the response when there is no request).
    pub version: Option<String>,
    /// Final status code; `None` when no response was seen, `0` for HTTP/0.9.
    pub status_code: Option<u16>,
    /// Request body length after de-chunking and content decoding.
    pub request_body_len: u64,
    /// Response body length after de-chunking and content decoding.
    pub response_body_len: u64,
    /// Request body bytes on the wire (with chunk framing, before decoding).
    pub request_wire_len: u64,
    /// Response body bytes on the wire.
    pub response_wire_len: u64,
    /// Request and response both complete (no gap, cut, or missing response).
    pub complete: bool,
    /// Anomaly names of the exchange, written `;`-separated.
    pub anomalies: AnomalySet,
}

#[derive(Debug)]
struct Entry {
    row: HttpRow,
    request_complete: bool,
    response_done: bool,
    response_ok: bool,
}

/// Collects [`HttpEvent`]s into rows.
#[derive(Debug, Default)]
pub struct HttpLog {
    rows: Vec<Entry>,
    /// (connection id, depth) -> index in `rows`.
    index: HashMap<(u64, u32), usize>,
}

impl HttpLog {
    pub fn new() -> Self {
        Self::default()
    }

    fn entry(&mut self, xref: &ExchangeRef, ts: i64) -> Option<&mut Entry> {
        let key = (xref.conn.conn, xref.depth);
        let idx = match self.index.get(&key) {
            Some(&i) => i,
            None => {
                let i = self.rows.len();
                self.rows.push(Entry {
                    row: HttpRow {
                        ts,
                        tcp_stream: xref.conn.tcp_stream,
                        client_addr: xref.conn.client_addr.to_string(),
                        server_addr: xref.conn.server_addr.to_string(),
                        trans_depth: xref.depth,
                        h2_stream: None,
                        method: None,
                        host: None,
                        uri: None,
                        version: None,
                        status_code: None,
                        request_body_len: 0,
                        response_body_len: 0,
                        request_wire_len: 0,
                        response_wire_len: 0,
                        complete: false,
                        anomalies: AnomalySet::default(),
                    },
                    request_complete: true,
                    response_done: false,
                    response_ok: false,
                });
                self.index.insert(key, i);
                i
            }
        };
        self.rows.get_mut(idx)
    }

    /// Adds one event.
    pub fn push(&mut self, ev: &HttpEvent) {
        match ev {
            HttpEvent::Request(r) => {
                let Some(e) = self.entry(&r.xref, r.ts_first_us) else {
                    return;
                };
                e.row.ts = r.ts_first_us;
                e.row.h2_stream = r.h2_stream;
                e.row.method = Some(r.head.method.to_string());
                e.row.host = r.head.headers.get("host").map(str::to_string);
                e.row.uri = Some(super::redact::redact_target(&r.head.uri).into_owned());
                e.row.version = Some(r.head.version.to_string());
                e.row.request_body_len = r.body.len() as u64;
                e.row.request_wire_len = r.wire_len;
                e.request_complete = r.complete;
                e.row
                    .anomalies
                    .extend(r.anomalies.iter().map(String::as_str));
            }
            HttpEvent::ResponseHead {
                xref, ts_us, head, ..
            } => {
                let Some(e) = self.entry(xref, *ts_us) else {
                    return;
                };
                e.row.status_code = Some(head.status);
                if e.row.version.is_none() && e.row.method.is_none() {
                    e.row.version = Some(head.version.to_string());
                }
            }
            HttpEvent::ResponseBody { .. } => {}
            HttpEvent::ResponseEnd {
                xref,
                ts_us,
                end,
                wire_len,
                decoded_len,
                anomalies,
                ..
            } => {
                let Some(e) = self.entry(xref, *ts_us) else {
                    return;
                };
                e.row.response_body_len = *decoded_len;
                e.row.response_wire_len = *wire_len;
                e.response_done = true;
                let cut = anomalies
                    .iter()
                    .any(|a| a == "http.truncated_body" || a == "http.gap_in_body");
                e.response_ok = matches!(end, BodyEnd::Complete | BodyEnd::Fin) && !cut;
                e.row.anomalies.extend(anomalies.iter().map(String::as_str));
            }
            HttpEvent::NoResponse {
                xref, ts_us, end, ..
            } => {
                let Some(e) = self.entry(xref, *ts_us) else {
                    return;
                };
                e.response_done = true;
                e.response_ok = false;
                e.row
                    .anomalies
                    .insert(&format!("http.no_response_{}", end.name()));
            }
            // The connections table takes these (see the pipeline).
            HttpEvent::ConnectionClosed(_) => {}
        }
    }

    /// The rows, in order of request first byte (then stream, then depth).
    pub fn finish(self) -> Vec<HttpRow> {
        let mut rows: Vec<HttpRow> = self
            .rows
            .into_iter()
            .map(|mut e| {
                e.row.complete = e.request_complete && e.response_done && e.response_ok;
                e.row
            })
            .collect();
        rows.sort_by(|a, b| {
            (a.ts, a.tcp_stream, &a.client_addr, a.trans_depth).cmp(&(
                b.ts,
                b.tcp_stream,
                &b.client_addr,
                b.trans_depth,
            ))
        });
        rows
    }
}

fn serialize_ts<S: serde::Serializer>(ts_us: &i64, s: S) -> Result<S::Ok, S::Error> {
    s.serialize_str(&format_rfc3339_us(*ts_us))
}
