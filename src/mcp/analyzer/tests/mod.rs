//! Analyzer tests on hand-built HTTP event sequences, one file per job of the analyzer:
//! the pairing cases of style.md section 5 by name ([`pairing`]), one test (or more) per
//! outcome ([`outcomes`]), detection and sessions ([`detect`]), release ([`release`]) and
//! random event sequences ([`robustness`]). This file holds the event builder they share.

mod detect;
mod outcomes;
mod pairing;
mod release;
mod robustness;

use super::*;
use crate::http::{
    BodyEnd, ConnInfo, ExchangeRef, Headers, HttpEvent, HttpRequest, RequestHead, ResponseHead,
};
use crate::mcp::McpCounters;
use crate::rpc::canonical_fingerprint;
use std::sync::Arc;

/// Fingerprint of a JSON text (test input, valid by construction).
fn json_fp(text: &str) -> crate::rpc::JsonFingerprint {
    canonical_fingerprint(&serde_json::from_str(text).unwrap())
}

const T0: i64 = 1_700_000_000_000_000;

struct Run {
    a: Analyzer,
    stats: McpCounters,
    next_conn: u64,
    t: i64,
}

#[derive(Clone)]
struct C {
    conn: Arc<ConnInfo>,
    depth: u32,
}

fn hdrs(h: &[(&str, &str)]) -> Headers {
    h.iter().copied().collect()
}

impl Run {
    fn new() -> Run {
        Run {
            a: Analyzer::new(InferenceConfig::default()),
            stats: McpCounters::default(),
            next_conn: 0,
            t: T0,
        }
    }

    fn tick(&mut self) -> i64 {
        self.t += 1000;
        self.t
    }

    fn conn(&mut self) -> C {
        self.next_conn += 1;
        C {
            conn: Arc::new(ConnInfo {
                conn: self.next_conn,
                tcp_stream: Some(self.next_conn - 1),
                client_addr: format!("10.0.0.1:{}", 40000 + self.next_conn).into(),
                server_addr: "10.0.0.2:8080".into(),
                capture: "t.pcap".into(),
                tls_version: None,
                tls_sni: None,
            }),
            depth: 0,
        }
    }

    fn xref(c: &C) -> ExchangeRef {
        ExchangeRef {
            conn: c.conn.clone(),
            depth: c.depth,
        }
    }

    fn request(&mut self, c: &mut C, method: &str, uri: &str, h: &[(&str, &str)], body: &str) {
        c.depth += 1;
        let ts = self.tick();
        let req = HttpRequest {
            xref: Run::xref(c),
            h2_stream: None,
            ts_first_us: ts,
            ts_last_us: ts + 10,
            frame: 0,
            head: RequestHead {
                method: method.into(),
                uri: uri.into(),
                version: "1.1".into(),
                headers: hdrs(h),
            },
            body: body.as_bytes().to_vec(),
            wire_len: body.len() as u64,
            complete: true,
            anomalies: vec![],
        };
        self.a.push(HttpEvent::Request(req), &mut self.stats);
    }

    fn post(&mut self, c: &mut C, h: &[(&str, &str)], body: &str) {
        self.request(c, "POST", "/mcp", h, body);
    }

    fn head(&mut self, c: &C, status: u16, h: &[(&str, &str)]) {
        let ts = self.tick();
        self.a.push(
            HttpEvent::ResponseHead {
                xref: Run::xref(c),
                ts_us: ts,
                frame: 0,
                head: ResponseHead {
                    status,
                    reason: "R".into(),
                    version: "1.1".into(),
                    headers: hdrs(h),
                },
            },
            &mut self.stats,
        );
    }

    fn body(&mut self, c: &C, data: &str) {
        let ts = self.tick();
        self.a.push(
            HttpEvent::ResponseBody {
                xref: Run::xref(c),
                ts_us: ts,
                data: data.as_bytes().to_vec(),
            },
            &mut self.stats,
        );
    }

    fn end(&mut self, c: &C, end: BodyEnd) {
        self.end_closed(c, end, false);
    }

    /// The response ended; `client_closed`: the client closed first.
    fn end_closed(&mut self, c: &C, end: BodyEnd, client_closed: bool) {
        let ts = self.tick();
        self.a.push(
            HttpEvent::ResponseEnd {
                xref: Run::xref(c),
                ts_us: ts,
                end,
                wire_len: 42,
                decoded_len: 42,
                anomalies: vec![],
                client_closed,
            },
            &mut self.stats,
        );
    }

    fn no_response(&mut self, c: &C, end: BodyEnd) {
        self.no_response_closed(c, end, false);
    }

    fn no_response_closed(&mut self, c: &C, end: BodyEnd, client_closed: bool) {
        let ts = self.tick();
        self.a.push(
            HttpEvent::NoResponse {
                xref: Run::xref(c),
                ts_us: ts,
                end,
                client_closed,
            },
            &mut self.stats,
        );
    }

    /// Whole response with a body of the given media type.
    fn respond(&mut self, c: &C, status: u16, media: &str, body: &str) {
        let mut h = vec![];
        if !media.is_empty() {
            h.push(("content-type", media));
        }
        self.head(c, status, &h);
        if !body.is_empty() {
            self.body(c, body);
        }
        self.end(c, BodyEnd::Complete);
    }

    fn json(&mut self, c: &C, status: u16, body: &str) {
        self.respond(c, status, "application/json", body);
    }

    fn sse_head(&mut self, c: &C) {
        self.head(c, 200, &[("content-type", "text/event-stream")]);
    }

    fn event(&mut self, c: &C, data: &str) {
        self.body(c, &format!("event: message\ndata: {data}\n\n"));
    }

    fn finish(self) -> (Vec<Exchange>, McpCounters) {
        let mut stats = self.stats;
        let rows = self.a.finish(&mut stats);
        (rows.into_iter().map(|ex| *ex).collect(), stats)
    }
}

fn call(id: u64, tool: &str) -> String {
    format!(
        r#"{{"jsonrpc":"2.0","id":{id},"method":"tools/call","params":{{"name":"{tool}","arguments":{{"a":1}}}}}}"#
    )
}

fn ok_tool(id: u64) -> String {
    format!(
        r#"{{"jsonrpc":"2.0","id":{id},"result":{{"content":[{{"type":"text","text":"ok"}}]}}}}"#
    )
}

fn only(rows: &[Exchange]) -> &Exchange {
    assert_eq!(rows.len(), 1, "rows: {rows:#?}");
    &rows[0]
}

/// One tools/call POST answered with a JSON body.
fn tool_json(status: u16, media: &str, body: &str) -> Exchange {
    let mut r = Run::new();
    let mut c = r.conn();
    r.post(&mut c, &[], &call(1, "echo"));
    r.respond(&c, status, media, body);
    let (rows, _) = r.finish();
    only(&rows).clone()
}

fn has_anomaly(e: &Exchange, name: &str) -> bool {
    e.anomalies.contains(name)
}
