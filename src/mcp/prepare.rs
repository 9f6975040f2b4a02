//! The body work that needs no analyzer state, done by a [`Preparer`] on the thread that
//! produced the HTTP events, so the analyzer's thread (the one that cannot be split) does
//! less:
//! - a POST body: parsing, the retry fingerprints, and cutting `params` down to the members
//!   the analyzer reads;
//! - a response body: SSE events split and each `data` parsed, or a JSON body gathered (up
//!   to the body limit) and parsed at its end.
//!
//! It depends only on the events of one exchange, in order, and every exchange's events stay
//! on one thread, so each producer keeps its own [`Preparer`].
//! [`super::Analyzer::push`] prepares with the analyzer's own.

use super::McpLimits;
use crate::hashing::HashMap;
use crate::http::BODY_RESERVE_MAX;
use crate::http::{ExchangeRef, HttpEvent, ResponseHead};
use crate::rpc::digest::{DigestError, ElementDigest, ParamsKeys, digest_envelopes};
use crate::rpc::envelope::EnvelopeBody;
use crate::rpc::{self, RpcError, RpcMessage, SseEvent, SseParser};

/// Top-level `params` members retry equivalence ignores (report-schema.md section 4).
pub(super) const PARAMS_KEYS_IGNORED: [&str; 4] =
    ["_meta", "progressToken", "inputResponses", "requestState"];

/// `params` members the analyzer reads; whose value it needs is kept, the others are only
/// tested for presence (kept as `null`).
const PARAMS_KEYS_READ: [&str; 6] = [
    "name",
    "_meta",
    "protocolVersion",
    "clientInfo",
    "requestId",
    "task",
];
const PARAMS_KEYS_PRESENT: [&str; 3] = ["inputResponses", "requestState", "cursor"];

/// A POST body, parsed, with its fingerprints.
#[derive(Debug)]
pub struct PreparedPost {
    /// The body with each element's `params` cut down, or serde_json's error text.
    pub(super) parsed: Result<EnvelopeBody, DigestError>,
    /// Per JSON-RPC element (one, or each of a batch): the canonical fingerprint of the whole
    /// element and of its `params` without [`PARAMS_KEYS_IGNORED`], taken before cutting.
    pub(super) fingerprints: Vec<ElementDigest>,
}

/// What a [`Preparer`] made of one event.
#[derive(Debug)]
pub enum Prepared {
    /// A POST request's body.
    Post(Box<PreparedPost>),
    /// A response body piece: the SSE events it completed, or (JSON and other bodies)
    /// whether it was dropped for the body limit.
    Body(BodyPiece),
    /// A response's end: the last SSE state, or the whole body parsed.
    End(Box<PreparedEnd>),
}

/// See [`Prepared::Body`].
#[derive(Debug)]
pub enum BodyPiece {
    /// The events this piece of an event stream completed.
    Sse(Vec<PreparedSse>),
    /// A piece of any other body; `dropped`: it did not fit under the body limit.
    Json { dropped: bool },
}

/// See [`Prepared::End`].
#[derive(Debug)]
pub enum PreparedEnd {
    /// Events the end of the stream completed (none, by the spec) and the parser's anomalies.
    Sse {
        events: Vec<PreparedSse>,
        anomalies: Vec<&'static str>,
    },
    /// The gathered body: its parse and whether it was only whitespace.
    Json {
        parsed: Result<Vec<RpcMessage>, RpcError>,
        blank: bool,
    },
}

/// An SSE event with its `data` parsed (`None` when the data is blank: a priming event or
/// keep-alive).
#[derive(Debug)]
pub struct PreparedSse {
    pub event: SseEvent,
    pub parsed: Option<Result<Vec<RpcMessage>, RpcError>>,
}

/// The body of a response being read.
#[derive(Debug)]
enum ResponseBody {
    Sse(SseParser),
    Json(Vec<u8>),
}

/// Which events a [`Preparer`] prepares.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PreparedEvents {
    /// POST bodies only: the analyzer prepares the responses on its own thread (see
    /// [`super::Analyzer::prepare_responses_here`]), when that thread has room to spare.
    Posts,
    /// POST and response bodies.
    All,
}

/// One producer's preparation state: the response bodies in progress, by exchange.
#[derive(Debug)]
pub struct Preparer {
    limits: McpLimits,
    events: PreparedEvents,
    responses: HashMap<(u64, u32), ResponseBody>,
}

/// A fresh preparer per producer, from the run's limits and the events it prepares.
impl From<(McpLimits, PreparedEvents)> for Preparer {
    fn from((limits, events): (McpLimits, PreparedEvents)) -> Self {
        Preparer::new(limits, events)
    }
}

fn key_of(xref: &ExchangeRef) -> (u64, u32) {
    (xref.conn.conn, xref.depth)
}

impl Preparer {
    /// No response in progress; bodies are bounded by `limits` as the analyzer's were.
    pub fn new(limits: McpLimits, events: PreparedEvents) -> Self {
        Preparer {
            limits,
            events,
            responses: HashMap::default(),
        }
    }

    /// The preparation `ev` needs, if any. Events must come in their exchange's order.
    pub fn prepare(&mut self, ev: &HttpEvent) -> Option<Prepared> {
        match ev {
            HttpEvent::Request(req) if req.head.method.eq_ignore_ascii_case("POST") => {
                Some(Prepared::Post(Box::new(prepare_post(&req.body))))
            }
            HttpEvent::Request(_) => None,
            _ if self.events == PreparedEvents::Posts => None,
            HttpEvent::ResponseHead { xref, head, .. } => {
                self.responses.insert(key_of(xref), self.body_for(head));
                None
            }
            HttpEvent::ResponseBody { xref, ts_us, data } => {
                let body = self.responses.get_mut(&key_of(xref))?;
                Some(Prepared::Body(match body {
                    ResponseBody::Sse(parser) => {
                        let mut events = Vec::new();
                        parser.feed(data, *ts_us, &mut events);
                        BodyPiece::Sse(events.into_iter().map(parse_event).collect())
                    }
                    ResponseBody::Json(buf) => {
                        // The analyzer's rule: a piece that would pass the limit is dropped.
                        let dropped = buf.len().saturating_add(data.len()) > self.limits.body_bytes;
                        if !dropped {
                            buf.extend_from_slice(data);
                        }
                        BodyPiece::Json { dropped }
                    }
                }))
            }
            HttpEvent::ResponseEnd { xref, .. } => {
                let body = self.responses.remove(&key_of(xref))?;
                Some(Prepared::End(Box::new(match body {
                    ResponseBody::Sse(mut parser) => {
                        let mut events = Vec::new();
                        parser.finish(&mut events);
                        PreparedEnd::Sse {
                            events: events.into_iter().map(parse_event).collect(),
                            anomalies: parser.take_anomalies(),
                        }
                    }
                    ResponseBody::Json(buf) => PreparedEnd::Json {
                        parsed: rpc::parse_response_body(&buf),
                        blank: buf.iter().all(u8::is_ascii_whitespace),
                    },
                })))
            }
            HttpEvent::NoResponse { xref, .. } => {
                self.responses.remove(&key_of(xref));
                None
            }
            HttpEvent::ConnectionClosed(_) => None,
        }
    }

    /// An event stream for a response [`is_event_stream`] accepts, else a body gathered whole.
    fn body_for(&self, head: &ResponseHead) -> ResponseBody {
        if is_event_stream(head.status, head.headers.media_type().as_deref()) {
            ResponseBody::Sse(SseParser::with_max_event_bytes(
                self.limits.rpc.sse_event_bytes,
            ))
        } else {
            // Sized from Content-Length when it is plain (a hint only: bounded, and a coded
            // body may decode larger).
            let hint = head
                .headers
                .get("content-length")
                .and_then(|v| v.trim().parse::<usize>().ok())
                .unwrap_or(0)
                .min(self.limits.body_bytes)
                .min(BODY_RESERVE_MAX);
            ResponseBody::Json(Vec::with_capacity(hint))
        }
    }

    /// Responses whose end has not come yet.
    pub fn open_responses(&self) -> usize {
        self.responses.len()
    }
}

/// A response whose body is read as an event stream: a 2xx `text/event-stream` (`media` is
/// the lower-cased media type). The analyzer and the preparer both decide by this.
pub(super) fn is_event_stream(status: u16, media: Option<&str>) -> bool {
    (200..300).contains(&status) && media == Some("text/event-stream")
}

fn parse_event(event: SseEvent) -> PreparedSse {
    let parsed = (!event.data.trim().is_empty()).then(|| rpc::parse_response_text(&event.data));
    PreparedSse { event, parsed }
}

/// Parses `body` (a leading UTF-8 BOM is skipped) and fingerprints its elements in one pass;
/// object `params` are cut to the members the analyzer reads (tool arguments, the bulk of a
/// request, are hashed as they stream by and never built).
pub(super) fn prepare_post(body: &[u8]) -> PreparedPost {
    let body = body.strip_prefix(b"\xEF\xBB\xBF").unwrap_or(body);
    let keys = ParamsKeys {
        read: &PARAMS_KEYS_READ,
        present: &PARAMS_KEYS_PRESENT,
        ignored: &PARAMS_KEYS_IGNORED,
    };
    match digest_envelopes(body, &keys) {
        Ok((value, fingerprints)) => PreparedPost {
            parsed: Ok(value),
            fingerprints,
        },
        Err(e) => PreparedPost {
            parsed: Err(DigestError::from(&e)),
            fingerprints: Vec::new(),
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::http::{BodyEnd, ConnInfo, Headers, ResponseHead};
    use crate::rpc::{canonical_fingerprint, canonical_fingerprint_without};
    use serde_json::Value;
    use std::sync::Arc;

    fn xref(depth: u32) -> ExchangeRef {
        ExchangeRef {
            conn: Arc::new(ConnInfo {
                conn: 7,
                tcp_stream: Some(0),
                client_addr: "10.0.0.1:40000".into(),
                server_addr: "10.0.0.2:8080".into(),
                capture: "t.pcap".into(),
                tls_version: None,
                tls_sni: None,
            }),
            depth,
        }
    }

    fn head(depth: u32, status: u16, media: &str) -> HttpEvent {
        HttpEvent::ResponseHead {
            xref: xref(depth),
            ts_us: 1,
            frame: 0,
            head: ResponseHead {
                status,
                reason: "R".into(),
                version: "1.1".into(),
                headers: [("Content-Type", media)].into_iter().collect::<Headers>(),
            },
        }
    }

    fn body(depth: u32, data: &str) -> HttpEvent {
        HttpEvent::ResponseBody {
            xref: xref(depth),
            ts_us: 2,
            data: data.as_bytes().to_vec(),
        }
    }

    fn end(depth: u32) -> HttpEvent {
        HttpEvent::ResponseEnd {
            xref: xref(depth),
            ts_us: 3,
            end: BodyEnd::Complete,
            wire_len: 0,
            decoded_len: 0,
            anomalies: vec![],
            client_closed: false,
        }
    }

    #[test]
    fn event_streams_come_split_and_parsed() {
        let mut p = Preparer::new(McpLimits::default(), PreparedEvents::All);
        assert!(p.prepare(&head(1, 200, "text/event-stream")).is_none());
        let piece = p.prepare(&body(
            1,
            "data: {\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{}}\n\ndata:",
        ));
        let Some(Prepared::Body(BodyPiece::Sse(events))) = piece else {
            panic!("{piece:?}");
        };
        assert_eq!(events.len(), 1);
        assert!(matches!(&events[0].parsed, Some(Ok(m)) if m.len() == 1));
        let Some(Prepared::End(end)) = p.prepare(&end(1)) else {
            panic!("no end");
        };
        let PreparedEnd::Sse { events, anomalies } = *end else {
            panic!("not SSE");
        };
        assert!(events.is_empty());
        assert_eq!(anomalies, vec!["rpc.sse_unterminated_event"]);
        assert_eq!(p.open_responses(), 0);
    }

    #[test]
    fn other_bodies_are_gathered_to_the_limit_and_parsed_at_the_end() {
        let limits = McpLimits {
            body_bytes: 8,
            ..McpLimits::default()
        };
        let mut p = Preparer::new(limits, PreparedEvents::All);
        // A 2xx event stream only counts as one with its media type; errors are bodies.
        p.prepare(&head(1, 404, "text/event-stream"));
        let kept = p.prepare(&body(1, "{\"a\":"));
        assert!(matches!(
            kept,
            Some(Prepared::Body(BodyPiece::Json { dropped: false }))
        ));
        let over = p.prepare(&body(1, "1234567"));
        assert!(matches!(
            over,
            Some(Prepared::Body(BodyPiece::Json { dropped: true }))
        ));
        // A later piece that fits is still taken, as the analyzer did.
        let fits = p.prepare(&body(1, "1}"));
        assert!(matches!(
            fits,
            Some(Prepared::Body(BodyPiece::Json { dropped: false }))
        ));
        let Some(Prepared::End(end)) = p.prepare(&end(1)) else {
            panic!("no end");
        };
        let PreparedEnd::Json { parsed, blank } = *end else {
            panic!("not JSON");
        };
        assert!(!blank);
        assert!(parsed.is_ok(), "{parsed:?}");
        assert_eq!(p.open_responses(), 0);
    }

    #[test]
    fn state_ends_with_the_response_and_a_posts_only_preparer_keeps_none() {
        let mut p = Preparer::new(McpLimits::default(), PreparedEvents::All);
        p.prepare(&head(1, 200, "application/json"));
        p.prepare(&head(2, 200, "application/json"));
        assert_eq!(p.open_responses(), 2);
        p.prepare(&HttpEvent::NoResponse {
            xref: xref(2),
            ts_us: 3,
            end: BodyEnd::Rst,
            client_closed: false,
        });
        assert!(matches!(p.prepare(&end(1)), Some(Prepared::End(_))));
        assert_eq!(p.open_responses(), 0);
        // Events of an unknown response prepare nothing.
        assert!(p.prepare(&body(9, "x")).is_none());

        let mut posts = Preparer::new(McpLimits::default(), PreparedEvents::Posts);
        posts.prepare(&head(1, 200, "text/event-stream"));
        assert!(posts.prepare(&body(1, "data: 1\n\n")).is_none());
        assert!(posts.prepare(&end(1)).is_none());
        assert_eq!(posts.open_responses(), 0);
    }

    #[test]
    fn fingerprints_are_taken_before_params_are_cut() {
        let body = br#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"echo","arguments":{"text":"hi"},"_meta":{"progressToken":7},"inputResponses":{"a":1}}}"#;
        let p = prepare_post(body);
        let full: Value = serde_json::from_slice(body).unwrap();
        assert_eq!(p.fingerprints.len(), 1);
        assert_eq!(p.fingerprints[0].body, canonical_fingerprint(&full));
        assert_eq!(
            p.fingerprints[0].params,
            Some(canonical_fingerprint_without(
                &full["params"],
                &PARAMS_KEYS_IGNORED
            ))
        );
        let parsed = p.parsed.unwrap().into_value();
        let params = &parsed["params"];
        assert_eq!(params["name"], "echo");
        assert_eq!(params["_meta"]["progressToken"], 7);
        assert!(params.get("arguments").is_none());
        assert_eq!(params.get("inputResponses"), Some(&Value::Null));
    }

    #[test]
    fn batches_get_one_entry_per_element_and_errors_keep_the_text() {
        let p = prepare_post(br#"[{"jsonrpc":"2.0","method":"a"},{"jsonrpc":"2.0","id":2,"method":"b","params":[1]}]"#);
        assert_eq!(p.fingerprints.len(), 2);
        assert!(p.fingerprints[0].params.is_none());
        assert!(p.fingerprints[1].params.is_some());
        let bad = prepare_post(b"{not json");
        assert!(bad.parsed.is_err() && bad.fingerprints.is_empty());
        let bom = prepare_post(b"\xEF\xBB\xBF{\"jsonrpc\":\"2.0\",\"method\":\"x\"}");
        assert!(bom.parsed.is_ok());
    }
}
