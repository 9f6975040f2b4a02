//! HAR 1.2/1.3 exports (browsers, mitmproxy, Charles, Insomnia, Playwright)
//! -> [`HttpEvent`]s: a producer at the HTTP stage's level (recorded exchanges, not
//! packets), whose events go where the HTTP stage's go. The capture stage only decides
//! that an input is a HAR ([`crate::capture::Source::Har`]).
//!
//! In: the bytes of a `.har` file (a UTF-8 BOM is skipped) or of mitmproxy's
//! `.zhar` (the same JSON, zlib- or gzip-compressed). Out: per entry, a
//! `Request` followed by `ResponseHead`, at most one `ResponseBody` and a
//! `ResponseEnd`, or by a `NoResponse`: the same contract as the HTTP stage;
//! the events of all entries merged in time order, as a capture delivers them
//! (entries in request-time order, `startedDateTime`, ties in file order; see
//! `order`).
//!
//! Only a file that is not a HAR at all is an error; a damaged entry is read
//! tolerantly or skipped and counted as a `har.*` anomaly. Never panics.
//!
//! Mapping decisions (each documented where it is made):
//! * one connection per entry, unless the entry names a `connection`: entries
//!   with the same id and server share a [`ConnInfo`] and get `trans_depth`
//!   1, 2, ... in time order; `tcp_stream` is that id when it is numeric.
//! * `client_addr` is empty: HAR does not record the client's address.
//! * `server_addr` is `serverIPAddress` with the URL's port, else the URL's
//!   host and port.
//! * timestamps: request at `startedDateTime`, request sent at the first
//!   response byte minus `wait`, response head at the end minus `receive`,
//!   body and end at `startedDateTime + time` (see `time::instants`).
//!
//! Anomalies (`stats.anomaly`, and on the request or `ResponseEnd`):
//! per file `har.missing_version`, `har.unsupported_version`; per entry
//! `har.entry_skipped` (no `request.url`), `har.tolerant_parse`,
//! `har.bad_header`, `har.bad_timestamp`, `har.bad_url`, `har.no_response`
//! (status 0 or no response), `har.bad_status`, `har.bad_base64`,
//! `har.unknown_text_encoding`, `har.bad_content_encoding`,
//! `har.unsupported_content_encoding`, `har.body_limit`,
//! `har.sse_body_not_recorded`, `har.sse_body_truncated`,
//! `har.body_not_recorded`, `har.body_in_separate_file`,
//! `har.websocket_messages_ignored`. `har.no_response`, the two `sse_*`,
//! `har.body_not_recorded` and `har.body_in_separate_file` mark a response
//! whose content is lost: a `NoResponse`, an end of `CaptureEnd`, or (an
//! unrecorded event stream whose end the recorder timed) a `Complete` end
//! with no body, so no final JSON-RPC response can be read from it.

mod body;
mod entry;
mod order;
mod time;
mod url;

pub use body::MAX_DECODED_BODY_BYTES;

use crate::anomaly::Anomaly;
use crate::capture::{CaptureError, UTF8_BOM, has_zlib_header, is_compressed_har};
use crate::http::HttpCounters;
use crate::http::pseudo::{ensure_host, split_pseudo};
use crate::http::{
    BodyEnd, ConnInfo, ExchangeRef, Headers, HttpEvent, HttpRequest, RequestHead, ResponseHead,
};
use arcstr::ArcStr;
use entry::{EntryRecord, Model, Parsed, ResponseRecord};
use serde_json::Value;
use std::collections::HashMap;
use std::io::Read;
use std::sync::Arc;

/// Largest HAR document a `.zhar` may inflate to; a bigger one is refused
/// rather than exhausting memory.
pub const MAX_INFLATED_HAR_BYTES: u64 = 1024 * 1024 * 1024;

/// Inflate a `.zhar` within [`MAX_INFLATED_HAR_BYTES`].
fn inflate_document(name: &str, data: &[u8]) -> Result<Vec<u8>, CaptureError> {
    let mut out = Vec::new();
    let limit = MAX_INFLATED_HAR_BYTES.saturating_add(1);
    let res = if has_zlib_header(data) {
        flate2::read::ZlibDecoder::new(data)
            .take(limit)
            .read_to_end(&mut out)
    } else {
        flate2::read::MultiGzDecoder::new(data)
            .take(limit)
            .read_to_end(&mut out)
    };
    let malformed = |reason: String| CaptureError::Malformed {
        path: name.to_string(),
        reason,
    };
    match res {
        Err(e) => Err(malformed(format!("compressed HAR (.zhar) is damaged: {e}"))),
        Ok(n) if (n as u64) > MAX_INFLATED_HAR_BYTES => Err(malformed(format!(
            "compressed HAR inflates beyond {MAX_INFLATED_HAR_BYTES} bytes; refused"
        ))),
        Ok(_) => Ok(out),
    }
}

/// Parse a whole HAR document (bytes as read from the file, maybe with a
/// UTF-8 BOM, or a `.zhar`) into [`HttpEvent`]s, ordered by request time
/// (`startedDateTime`; stable for ties).
///
/// `name` becomes `ConnInfo.capture`; connection ids start at `conn_base`.
/// Fatal only when the document is not a HAR at all (not JSON, no
/// `log.entries`): [`CaptureError::Malformed`] with the reason. Damaged
/// entries are read tolerantly or skipped, with a `har.*` anomaly each.
/// Counts one `stats.http_exchanges` per entry delivered.
pub fn read_har(
    name: &str,
    data: &[u8],
    conn_base: u64,
    stats: &mut HttpCounters,
) -> Result<Vec<HttpEvent>, CaptureError> {
    let inflated;
    let mut doc = data;
    if is_compressed_har(data) {
        inflated = inflate_document(name, data)?;
        doc = &inflated;
    }
    let doc = doc.strip_prefix(UTF8_BOM).unwrap_or(doc);
    let malformed = |reason: String| CaptureError::Malformed {
        path: name.to_string(),
        reason,
    };
    let root: Value = serde_json::from_slice(doc)
        .map_err(|e| malformed(format!("not a HAR file: invalid JSON ({e})")))?;
    let log = root
        .get("log")
        .filter(|l| l.is_object())
        .ok_or_else(|| malformed("not a HAR file: no top-level `log` object".to_string()))?;
    let entries = log
        .get("entries")
        .and_then(Value::as_array)
        .ok_or_else(|| {
            malformed("not a HAR file: `log.entries` is missing or not a list".to_string())
        })?;

    // The strict model follows `log.version`; an unknown version is still
    // read (as 1.2, whose fields 1.3 only extends) rather than refused.
    let model = match log.get("version").and_then(Value::as_str) {
        Some("1.2") => Model::V1_2,
        Some("1.3") => Model::V1_3,
        Some(_) => {
            stats.anomaly(Anomaly::HarUnsupportedVersion);
            Model::V1_2
        }
        None => {
            stats.anomaly(Anomaly::HarMissingVersion);
            Model::V1_2
        }
    };

    let mut records = Vec::with_capacity(entries.len());
    let mut last_start = 0i64;
    for v in entries {
        let mut anomalies = Vec::new();
        let rec = match entry::parse_entry(model, v) {
            None => {
                stats.anomaly(Anomaly::HarEntrySkipped);
                continue;
            }
            Some(Parsed::Strict(rec)) => rec,
            Some(Parsed::Tolerant(rec)) => {
                anomalies.push("har.tolerant_parse");
                if entry::dropped_headers(v) > 0 {
                    anomalies.push("har.bad_header");
                }
                rec
            }
        };
        // An entry without a readable start keeps its place in file order.
        let start = match time::parse_datetime_us(&rec.started) {
            Some(t) => t,
            None => {
                anomalies.push("har.bad_timestamp");
                last_start
            }
        };
        last_start = start;
        records.push((start, rec, anomalies));
    }
    // Stable: ties keep file order.
    records.sort_by_key(|(start, _, _)| *start);

    let capture = ArcStr::from(name);
    let mut conns = Connections::new(conn_base, capture);
    let mut out = Vec::with_capacity(records.len().saturating_mul(4));
    for (start, rec, anomalies) in records {
        entry_events(start, rec, anomalies, &mut conns, stats, &mut out);
    }
    order::by_time(&mut out);
    Ok(out)
}

/// Assigns [`ConnInfo`]s and `trans_depth`s in request-time order.
struct Connections {
    next: u64,
    capture: ArcStr,
    /// (connection id, server address) -> connection and requests so far.
    named: HashMap<(String, String), (Arc<ConnInfo>, u32)>,
}

impl Connections {
    fn new(conn_base: u64, capture: ArcStr) -> Self {
        Connections {
            next: conn_base,
            capture,
            named: HashMap::new(),
        }
    }

    fn fresh(&mut self, tcp_stream: Option<u64>, server_addr: String) -> Arc<ConnInfo> {
        let conn = self.next;
        self.next = self.next.saturating_add(1);
        Arc::new(ConnInfo {
            conn,
            tcp_stream,
            // HAR records no client address.
            client_addr: ArcStr::new(),
            server_addr: server_addr.into(),
            capture: self.capture.clone(),
            tls_version: None,
            tls_sni: None,
        })
    }

    /// The exchange slot of the next request. `connection` is the entry's
    /// id; the server address is part of the key because an id is only
    /// unique per server in some exports.
    fn slot(&mut self, connection: Option<String>, server_addr: String) -> ExchangeRef {
        let Some(id) = connection else {
            return ExchangeRef {
                conn: self.fresh(None, server_addr),
                depth: 1,
            };
        };
        let key = (id, server_addr);
        if let Some((conn, depth)) = self.named.get_mut(&key) {
            *depth = depth.saturating_add(1);
            return ExchangeRef {
                conn: Arc::clone(conn),
                depth: *depth,
            };
        }
        let conn = self.fresh(key.0.parse().ok(), key.1.clone());
        self.named.insert(key, (Arc::clone(&conn), 1));
        ExchangeRef { conn, depth: 1 }
    }
}

/// `httpVersion` as the HTTP stage writes it: `1.0`, `1.1`, `2`, `3`, or
/// empty when the recorder left it blank or wrote something unknown.
fn normalise_version(v: &str) -> String {
    let lower = v.trim().to_ascii_lowercase();
    let bare = lower.strip_prefix("http/").unwrap_or(&lower);
    match bare {
        "1.1" => "1.1",
        "1.0" => "1.0",
        "0.9" => "0.9",
        "2" | "2.0" | "h2" | "h2c" => "2",
        b if b == "3" || b == "3.0" || b.starts_with("h3") => "3",
        _ => "",
    }
    .to_string()
}

/// Status codes that never carry a body (RFC 9110 §6.4.1).
fn bodiless(method: &str, status: u16) -> bool {
    method.eq_ignore_ascii_case("HEAD") || status < 200 || status == 204 || status == 304
}

/// Collects an entry's anomaly names and counts them in [`HttpCounters`].
struct Notes<'a> {
    stats: &'a mut HttpCounters,
}

impl Notes<'_> {
    fn add(&mut self, list: &mut Vec<String>, name: &str) {
        self.stats.anomaly_name(name);
        list.push(name.to_string());
    }
}

/// Body bytes of a text field; on a bad encoding the text itself, noted.
fn field_bytes(
    text: &str,
    encoding: Option<&str>,
    notes: &mut Notes<'_>,
    list: &mut Vec<String>,
) -> Vec<u8> {
    body::decode_text(text, encoding).unwrap_or_else(|anomaly| {
        notes.add(list, anomaly);
        text.as_bytes().to_vec()
    })
}

/// Content-decoded body bytes, with the anomalies of the decoding noted.
fn content_decoded(
    raw: Vec<u8>,
    headers: &Headers,
    notes: &mut Notes<'_>,
    list: &mut Vec<String>,
) -> Vec<u8> {
    let decoded = body::undo_content_encoding(raw, headers.get("content-encoding"));
    for a in decoded.anomalies {
        notes.add(list, a);
    }
    decoded.body
}

/// Events of one entry, appended to `out`.
fn entry_events(
    start: i64,
    rec: EntryRecord,
    entry_anomalies: Vec<&'static str>,
    conns: &mut Connections,
    stats: &mut HttpCounters,
    out: &mut Vec<HttpEvent>,
) {
    stats.http_exchanges = stats.http_exchanges.saturating_add(1);
    // A HAR entry is a request and, unless status is 0, a response: both already parsed.
    let messages = if rec.response.as_ref().is_some_and(|r| r.status != 0) {
        2
    } else {
        1
    };
    stats.http_messages = stats.http_messages.saturating_add(messages);
    stats.http_messages_parsed = stats.http_messages_parsed.saturating_add(messages);
    let mut notes = Notes { stats };
    let mut req_anomalies = Vec::new();
    for a in entry_anomalies {
        notes.add(&mut req_anomalies, a);
    }
    if rec.websocket_messages {
        notes.add(&mut req_anomalies, "har.websocket_messages_ignored");
    }
    let at = time::instants(start, rec.time_ms, &rec.timings);
    let q = rec.request;

    let parts = url::parse_url(&q.url);
    if parts.is_none() {
        notes.add(&mut req_anomalies, "har.bad_url");
    }
    let server_ip = rec
        .server_ip
        .as_deref()
        .map(str::trim)
        .filter(|s| !s.is_empty());
    let server_addr = match (&parts, server_ip) {
        (Some(p), Some(ip)) => url::server_addr(ip, p.port),
        (Some(p), None) => url::socket_addr(&p.host, p.port),
        (None, _) => String::new(),
    };
    // Firefox writes the server port into `connection`; that is no id.
    let connection = rec
        .connection
        .map(|c| c.trim().to_string())
        .filter(|c| !c.is_empty() && parts.as_ref().is_none_or(|p| *c != p.port.to_string()));
    let xref = conns.slot(connection, server_addr);

    let (mut headers, pseudo) = split_pseudo(q.headers);
    // The request's own URL names the host when the recorder kept no `:authority`.
    let authority = pseudo
        .authority
        .or_else(|| parts.as_ref().map(|p| p.authority.clone()));
    ensure_host(&mut headers, authority);
    let req_headers = Headers::from(headers);
    let req_raw = q
        .post_text
        .as_deref()
        .map(|t| {
            field_bytes(
                t,
                q.post_encoding.as_deref(),
                &mut notes,
                &mut req_anomalies,
            )
        })
        .unwrap_or_default();
    let req_body = content_decoded(req_raw, &req_headers, &mut notes, &mut req_anomalies);
    let method = q.method;

    // Decide the response before emitting, so `har.no_response` lands on the request.
    let response = match rec.response {
        Some(r) if r.status == 0 => None,
        Some(r) => match u16::try_from(r.status)
            .ok()
            .filter(|s| (100..=999).contains(s))
        {
            Some(status) => Some((status, r)),
            None => {
                notes.add(&mut req_anomalies, "har.bad_status");
                None
            }
        },
        None => None,
    };
    if response.is_none() {
        // Status 0 is how browsers and mitmproxy record a failed or aborted request.
        notes.add(&mut req_anomalies, "har.no_response");
    }

    out.push(HttpEvent::Request(HttpRequest {
        xref: xref.clone(),
        h2_stream: None,
        ts_first_us: at.start,
        ts_last_us: at.request_end,
        frame: 0,
        wire_len: u64::try_from(q.body_size).unwrap_or(req_body.len() as u64),
        head: RequestHead {
            method: method.as_str().into(),
            uri: parts
                .as_ref()
                .map_or(q.url.as_str(), |p| p.target.as_str())
                .into(),
            version: normalise_version(&q.http_version).into(),
            headers: req_headers,
        },
        body: req_body,
        complete: true,
        anomalies: req_anomalies,
    }));

    // A browser's own abort (`net::ERR_ABORTED`) is the client closing first,
    // as a FIN/RST from the client is on the wire.
    let Some((status, r)) = response else {
        out.push(HttpEvent::NoResponse {
            xref,
            ts_us: at.end,
            end: BodyEnd::CaptureEnd,
            client_closed: rec.client_aborted,
        });
        return;
    };
    let receive_ended = time::valid_ms(rec.timings.receive).is_some_and(|ms| ms > 0.0);
    response_events(
        status,
        r,
        &method,
        receive_ended,
        rec.client_aborted,
        xref,
        at,
        &mut notes,
        out,
    );
}

/// `ResponseHead`, `ResponseBody` (when a body was recorded) and `ResponseEnd`.
/// `receive_ended`: the recorder timed the response's last byte;
/// `client_aborted`: the browser aborted the request (`net::ERR_ABORTED`).
#[allow(clippy::too_many_arguments)]
fn response_events(
    status: u16,
    r: ResponseRecord,
    method: &str,
    receive_ended: bool,
    client_aborted: bool,
    xref: ExchangeRef,
    at: time::Instants,
    notes: &mut Notes<'_>,
    out: &mut Vec<HttpEvent>,
) {
    let mut anomalies = Vec::new();
    let headers = Headers::from(split_pseudo(r.headers).0);
    let media = headers.media_type().or_else(|| {
        r.mime_type.as_deref().map(|m| {
            m.split(';')
                .next()
                .unwrap_or_default()
                .trim()
                .to_ascii_lowercase()
                .into()
        })
    });
    let is_sse = media.as_deref() == Some("text/event-stream");

    let recorded = r.text.as_deref().filter(|t| !t.is_empty());
    let body = match recorded {
        Some(t) => {
            let raw = field_bytes(t, r.text_encoding.as_deref(), notes, &mut anomalies);
            content_decoded(raw, &headers, notes, &mut anomalies)
        }
        None => Vec::new(),
    };
    let no_body_expected = bodiless(method, status);
    // Rules, in order: an event stream must end on an event boundary, or it
    // was cut (or never kept) by the recorder; any other body the recorder
    // sized but did not keep is also not a complete response.
    let end = if no_body_expected {
        BodyEnd::Complete
    } else if body.is_empty() && r.attached_file {
        notes.add(&mut anomalies, "har.body_in_separate_file");
        BodyEnd::CaptureEnd
    } else if is_sse && body.is_empty() {
        notes.add(&mut anomalies, "har.sse_body_not_recorded");
        // The events are lost either way. Whether the stream itself ended is
        // told by `receive`: mitmproxy writes the time from the first to the
        // last response byte, 0 while the response never ended; browsers
        // write -1 for a stream still open. A timed end closes the stream
        // (a GET stream that closed is ACCEPTED, not STREAM_OPEN); a POST
        // still lacks its final response, so it is never a success.
        if receive_ended {
            BodyEnd::Complete
        } else {
            BodyEnd::CaptureEnd
        }
    } else if is_sse && !body::sse_ends_with_blank_line(&body) {
        notes.add(&mut anomalies, "har.sse_body_truncated");
        BodyEnd::CaptureEnd
    } else if body.is_empty() && r.content_size > 0 {
        notes.add(&mut anomalies, "har.body_not_recorded");
        BodyEnd::CaptureEnd
    } else {
        BodyEnd::Complete
    };
    // decoded_len: the bytes delivered; when none were kept, the recorder's
    // `content.size` (what the body would have been). wire_len: `bodySize`
    // (bytes on the wire, before content decoding) when known.
    let decoded_len = if body.is_empty() && !no_body_expected {
        u64::try_from(r.content_size).unwrap_or(0)
    } else {
        body.len() as u64
    };
    let wire_len = u64::try_from(r.body_size).unwrap_or(body.len() as u64);

    out.push(HttpEvent::ResponseHead {
        xref: xref.clone(),
        ts_us: at.response_head,
        frame: 0,
        head: ResponseHead {
            status,
            reason: r.status_text.into(),
            version: normalise_version(&r.http_version).into(),
            headers,
        },
    });
    if !body.is_empty() {
        out.push(HttpEvent::ResponseBody {
            xref: xref.clone(),
            ts_us: at.end,
            data: body,
        });
    }
    // As on the wire, a response the recorder kept whole was not given up,
    // even when the page dropped it afterwards (Chromium marks a DELETE
    // whose page closed right after its 200 as aborted too).
    let client_closed = client_aborted && end != BodyEnd::Complete;
    out.push(HttpEvent::ResponseEnd {
        xref,
        ts_us: at.end,
        end,
        wire_len,
        decoded_len,
        anomalies,
        client_closed,
    });
}

#[cfg(test)]
mod tests;
