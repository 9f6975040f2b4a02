//! One `log.entries[i]` -> [`EntryRecord`], the fields the exchange model uses.
//!
//! First through the `har` crate's strict models (`v1_2::Entries` or
//! `v1_3::Entries`, by `log.version`); when a real export breaks them (a
//! missing `response`, a number where a string belongs, `[name, value]`
//! header pairs as Slack writes them, ...) a tolerant walk of the same fields
//! over the JSON value takes over. `_`-prefixed recorder extensions are never
//! read, except that `_webSocketMessages` is noticed so the caller can count it
//! and a Chromium abort mark (`net::ERR_ABORTED`) is read as the client closing.

use super::time::Timings;
use serde_json::Value;

/// HAR version of the document, chooses the strict model.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Model {
    V1_2,
    V1_3,
}

/// The request half of an entry.
#[derive(Debug, Clone, Default, PartialEq)]
pub(super) struct RequestRecord {
    pub method: String,
    pub url: String,
    pub http_version: String,
    pub headers: Vec<(String, String)>,
    /// `postData.text`.
    pub post_text: Option<String>,
    /// `postData.encoding` (HAR 1.3; some 1.2 writers add it too).
    pub post_encoding: Option<String>,
    /// `bodySize`, -1 when unknown.
    pub body_size: i64,
}

/// The response half of an entry.
#[derive(Debug, Clone, Default, PartialEq)]
pub(super) struct ResponseRecord {
    pub status: i64,
    pub status_text: String,
    pub http_version: String,
    pub headers: Vec<(String, String)>,
    /// `content.text`; `None` when the recorder kept no body.
    pub text: Option<String>,
    /// `content.encoding` (`base64` for binary bodies).
    pub text_encoding: Option<String>,
    pub mime_type: Option<String>,
    /// `content.size`, -1 when unknown.
    pub content_size: i64,
    /// `bodySize`, -1 when unknown.
    pub body_size: i64,
    /// The body was written to a separate file (`content._file`, Playwright's
    /// `content: "attach"` mode), which a single HAR document cannot reach.
    pub attached_file: bool,
}

/// One entry, whichever way it was read.
#[derive(Debug, Clone, Default, PartialEq)]
pub(super) struct EntryRecord {
    pub started: String,
    pub time_ms: Option<f64>,
    pub timings: Timings,
    pub server_ip: Option<String>,
    pub connection: Option<String>,
    pub request: RequestRecord,
    /// `None` when the entry has no `response` object.
    pub response: Option<ResponseRecord>,
    /// The entry carries `_webSocketMessages` (Chrome, mitmproxy), which is not read.
    pub websocket_messages: bool,
    /// The browser aborted the request itself (`net::ERR_ABORTED`: e.g. a
    /// page's `AbortController`, or the page closing); see `client_aborted()`.
    pub client_aborted: bool,
}

/// How an entry was read.
#[derive(Debug, Clone, PartialEq)]
pub(super) enum Parsed {
    Strict(EntryRecord),
    Tolerant(EntryRecord),
}

/// Read one entry: strict model first, tolerant walk second; `None` when the
/// value has no `request.url` at all (nothing to build an exchange from).
pub(super) fn parse_entry(model: Model, v: &Value) -> Option<Parsed> {
    let strict = match model {
        Model::V1_2 => serde_json::from_value::<::har::v1_2::Entries>(v.clone())
            .ok()
            .map(from_v1_2),
        Model::V1_3 => serde_json::from_value::<::har::v1_3::Entries>(v.clone())
            .ok()
            .map(from_v1_3),
    };
    let mut parsed = match strict {
        Some(mut rec) => {
            // Fields the strict 1.2 model has no place for.
            if rec.request.post_encoding.is_none() {
                rec.request.post_encoding = v.pointer("/request/postData/encoding").and_then(text);
            }
            Parsed::Strict(rec)
        }
        None => Parsed::Tolerant(tolerant(v)?),
    };
    let (Parsed::Strict(rec) | Parsed::Tolerant(rec)) = &mut parsed;
    rec.websocket_messages = v.get("_webSocketMessages").is_some();
    rec.client_aborted = client_aborted(v);
    if let Some(r) = rec.response.as_mut() {
        r.attached_file = v.pointer("/response/content/_file").is_some();
    }
    Some(parsed)
}

/// Chromium's mark for a request the client itself cancelled: DevTools
/// writes `_error` (on the entry or its response), Playwright's recorder
/// `response._failureText`. Other `net::ERR_*` values (reset, refused,
/// timeout) are failures on the way, not the client's choice.
pub(super) fn client_aborted(v: &Value) -> bool {
    ["/_error", "/response/_error", "/response/_failureText"]
        .iter()
        .filter_map(|p| v.pointer(p).and_then(Value::as_str))
        .any(|e| e.trim() == "net::ERR_ABORTED")
}

fn timings_from(
    blocked: Option<f64>,
    dns: Option<f64>,
    connect: Option<f64>,
    send: f64,
    wait: f64,
    receive: f64,
) -> Timings {
    Timings {
        blocked,
        dns,
        connect,
        send: Some(send),
        wait: Some(wait),
        receive: Some(receive),
    }
}

fn headers_from<'a>(
    h: impl IntoIterator<Item = (&'a String, &'a String)>,
) -> Vec<(String, String)> {
    h.into_iter().map(|(n, v)| (n.clone(), v.clone())).collect()
}

fn from_v1_2(e: ::har::v1_2::Entries) -> EntryRecord {
    let q = e.request;
    let r = e.response;
    let t = e.timings;
    EntryRecord {
        started: e.started_date_time,
        time_ms: Some(e.time),
        timings: timings_from(t.blocked, t.dns, t.connect, t.send, t.wait, t.receive),
        server_ip: e.server_ip_address,
        connection: e.connection,
        request: RequestRecord {
            method: q.method,
            url: q.url,
            http_version: q.http_version,
            headers: headers_from(q.headers.iter().map(|h| (&h.name, &h.value))),
            post_text: q.post_data.and_then(|p| p.text),
            post_encoding: None,
            body_size: q.body_size,
        },
        response: Some(ResponseRecord {
            status: r.status,
            status_text: r.status_text,
            http_version: r.http_version,
            headers: headers_from(r.headers.iter().map(|h| (&h.name, &h.value))),
            text: r.content.text,
            text_encoding: r.content.encoding,
            mime_type: r.content.mime_type,
            content_size: r.content.size,
            body_size: r.body_size,
            attached_file: false,
        }),
        websocket_messages: false,
        client_aborted: false,
    }
}

fn from_v1_3(e: ::har::v1_3::Entries) -> EntryRecord {
    let q = e.request;
    let r = e.response;
    let t = e.timings;
    let (post_text, post_encoding) = q.post_data.map_or((None, None), |p| (p.text, p.encoding));
    EntryRecord {
        started: e.started_date_time,
        time_ms: Some(e.time),
        timings: timings_from(t.blocked, t.dns, t.connect, t.send, t.wait, t.receive),
        server_ip: e.server_ip_address,
        connection: e.connection,
        request: RequestRecord {
            method: q.method,
            url: q.url,
            http_version: q.http_version,
            headers: headers_from(q.headers.iter().map(|h| (&h.name, &h.value))),
            post_text,
            post_encoding,
            body_size: q.body_size,
        },
        response: Some(ResponseRecord {
            status: r.status,
            status_text: r.status_text,
            http_version: r.http_version,
            headers: headers_from(r.headers.iter().map(|h| (&h.name, &h.value))),
            text: r.content.text,
            text_encoding: r.content.encoding,
            mime_type: r.content.mime_type,
            content_size: r.content.size,
            body_size: r.body_size,
            attached_file: false,
        }),
        websocket_messages: false,
        client_aborted: false,
    }
}

/// A string field, accepting numbers and booleans as their JSON text
/// (lenient: some writers emit `"connection": 12` or `"status": "200"`).
fn text(v: &Value) -> Option<String> {
    match v {
        Value::String(s) => Some(s.clone()),
        Value::Number(n) => Some(n.to_string()),
        Value::Bool(b) => Some(b.to_string()),
        _ => None,
    }
}

/// A number field, accepting numeric strings.
fn number(v: &Value) -> Option<f64> {
    match v {
        Value::Number(n) => n.as_f64(),
        Value::String(s) => s.trim().parse().ok(),
        _ => None,
    }
}

fn str_at(v: &Value, key: &str) -> Option<String> {
    v.get(key).and_then(text)
}

fn num_at(v: &Value, key: &str) -> Option<f64> {
    v.get(key).and_then(number)
}

/// An integer size field; -1 (HAR's "unknown") when absent or not a number.
fn size_at(v: &Value, key: &str) -> i64 {
    // `as` saturates; sizes beyond i64 are nonsense anyway.
    num_at(v, key)
        .filter(|x| x.is_finite())
        .map_or(-1, |x| x as i64)
}

/// Headers as `[{name, value}]`, `[[name, value]]` or `{name: value}`;
/// items without a usable name are dropped (the caller counts the loss).
pub(super) fn tolerant_headers(v: Option<&Value>) -> (Vec<(String, String)>, usize) {
    let mut out = Vec::new();
    let mut bad = 0usize;
    match v {
        Some(Value::Array(items)) => {
            for item in items {
                let pair = match item {
                    Value::Object(_) => {
                        str_at(item, "name").map(|n| (n, str_at(item, "value").unwrap_or_default()))
                    }
                    Value::Array(a) => match (a.first().and_then(text), a.get(1).and_then(text)) {
                        (Some(n), Some(val)) => Some((n, val)),
                        _ => None,
                    },
                    _ => None,
                };
                match pair {
                    Some(p) => out.push(p),
                    None => bad = bad.saturating_add(1),
                }
            }
        }
        Some(Value::Object(map)) => {
            for (n, val) in map {
                out.push((n.clone(), text(val).unwrap_or_default()));
            }
        }
        None | Some(Value::Null) => {}
        Some(_) => bad = bad.saturating_add(1),
    }
    (out, bad)
}

/// The tolerant walk: every field optional, types coerced where harmless.
fn tolerant(v: &Value) -> Option<EntryRecord> {
    let req = v.get("request")?;
    let url = str_at(req, "url")?;
    let post = req.get("postData");
    let timings = v.get("timings").map_or_else(Timings::default, |t| Timings {
        blocked: num_at(t, "blocked"),
        dns: num_at(t, "dns"),
        connect: num_at(t, "connect"),
        send: num_at(t, "send"),
        wait: num_at(t, "wait"),
        receive: num_at(t, "receive"),
    });
    let response = v.get("response").filter(|r| r.is_object()).map(|r| {
        let content = r.get("content");
        let content_str = |k: &str| content.and_then(|c| str_at(c, k));
        ResponseRecord {
            status: num_at(r, "status")
                .filter(|x| x.is_finite())
                .map_or(0, |x| x as i64),
            status_text: str_at(r, "statusText").unwrap_or_default(),
            http_version: str_at(r, "httpVersion").unwrap_or_default(),
            headers: tolerant_headers(r.get("headers")).0,
            text: content_str("text"),
            text_encoding: content_str("encoding"),
            mime_type: content_str("mimeType"),
            content_size: content.map_or(-1, |c| size_at(c, "size")),
            body_size: size_at(r, "bodySize"),
            attached_file: false,
        }
    });
    Some(EntryRecord {
        started: str_at(v, "startedDateTime").unwrap_or_default(),
        time_ms: num_at(v, "time"),
        timings,
        server_ip: str_at(v, "serverIPAddress"),
        connection: str_at(v, "connection"),
        request: RequestRecord {
            method: str_at(req, "method").unwrap_or_default(),
            url,
            http_version: str_at(req, "httpVersion").unwrap_or_default(),
            headers: tolerant_headers(req.get("headers")).0,
            post_text: post.and_then(|p| str_at(p, "text")),
            post_encoding: post.and_then(|p| str_at(p, "encoding")),
            body_size: size_at(req, "bodySize"),
        },
        response,
        websocket_messages: false,
        client_aborted: false,
    })
}

/// Header items the tolerant walk had to drop, for the `har.bad_header` count.
pub(super) fn dropped_headers(v: &Value) -> usize {
    let count = |p: &str| tolerant_headers(v.pointer(p)).1;
    count("/request/headers").saturating_add(count("/response/headers"))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn full_entry() -> Value {
        json!({
            "startedDateTime": "2024-01-01T00:00:00Z", "time": 10.0,
            "request": {"method": "POST", "url": "http://h/mcp", "httpVersion": "HTTP/1.1",
                "cookies": [], "headers": [{"name": "Content-Type", "value": "application/json"}],
                "queryString": [], "postData": {"mimeType": "application/json", "text": "{}"},
                "headersSize": -1, "bodySize": 2},
            "response": {"status": 200, "statusText": "OK", "httpVersion": "HTTP/1.1", "cookies": [],
                "headers": [], "content": {"size": 2, "mimeType": "application/json", "text": "{}"},
                "redirectURL": "", "headersSize": -1, "bodySize": 2},
            "cache": {}, "timings": {"send": 1, "wait": 8, "receive": 1},
            "_webSocketMessages": []
        })
    }

    #[test]
    fn strict_model_reads_complete_entry() {
        let Some(Parsed::Strict(rec)) = parse_entry(Model::V1_2, &full_entry()) else {
            panic!("expected strict parse");
        };
        assert_eq!(rec.request.method, "POST");
        assert_eq!(rec.request.post_text.as_deref(), Some("{}"));
        assert_eq!(rec.response.as_ref().map(|r| r.status), Some(200));
        assert!(rec.websocket_messages);
    }

    #[test]
    fn missing_response_falls_back_to_tolerant() {
        let mut e = full_entry();
        e.as_object_mut().unwrap().remove("response");
        let Some(Parsed::Tolerant(rec)) = parse_entry(Model::V1_2, &e) else {
            panic!("expected tolerant parse");
        };
        assert_eq!(rec.response, None);
        assert_eq!(
            rec.request.headers,
            vec![("Content-Type".into(), "application/json".into())]
        );
    }

    #[test]
    fn tolerant_coerces_numbers_and_pair_headers() {
        let e = json!({
            "startedDateTime": "2024-01-01T00:00:00Z", "connection": 7,
            "request": {"url": "http://h/", "headers": [["a", "1"], ["broken"], 5, {"value": "x"}]},
            "response": {"status": "204", "headers": {"x-y": "z"}, "content": {"size": "0"}}
        });
        let Some(Parsed::Tolerant(rec)) = parse_entry(Model::V1_3, &e) else {
            panic!("expected tolerant parse");
        };
        assert_eq!(rec.connection.as_deref(), Some("7"));
        assert_eq!(rec.request.headers, vec![("a".into(), "1".into())]);
        let r = rec.response.unwrap();
        assert_eq!((r.status, r.content_size, r.body_size), (204, 0, -1));
        assert_eq!(r.headers, vec![("x-y".into(), "z".into())]);
        assert_eq!(dropped_headers(&e), 3);
    }

    #[test]
    fn no_url_is_no_entry() {
        assert_eq!(
            parse_entry(Model::V1_2, &json!({"request": {"method": "GET"}})),
            None
        );
        assert_eq!(parse_entry(Model::V1_2, &json!([1, 2])), None);
    }

    #[test]
    fn v1_3_post_encoding() {
        let mut e = full_entry();
        e["request"]["postData"]["encoding"] = json!("base64");
        for model in [Model::V1_2, Model::V1_3] {
            let Some(Parsed::Strict(rec)) = parse_entry(model, &e) else {
                panic!("expected strict parse");
            };
            assert_eq!(rec.request.post_encoding.as_deref(), Some("base64"));
        }
    }
}
