//! Conversation fixtures (`tests/fixtures/http/*.t`) run through the stage,
//! plus split-point and no-panic tests over whole conversations.
//!
//! `.t` format (after Suricata's libhtp tests): a line `>>>` starts a block of
//! client bytes, `<<<` a block of server bytes; `><> N` is a gap of N client
//! bytes, `<>< N` of N server bytes. Each block is one delivery. Block lines
//! are sent with CRLF after each; a line ending in `\` is sent without it;
//! `\xHH` is a byte and `\\` a backslash. Lines before the first block that
//! start with `#` are directives:
//! - `#row key=value ...` an expected row, in row order (`-` = unset);
//! - `#stats key=value ...` expected counters (`non_http`, `skipped`, `exchanges`);
//! - `#end fin|rst|capture` how the stream ends (default `fin`: FIN from
//!   both sides, then `Closed`);
//! - `#swapped` the flow guessed the sides wrong (server bytes arrive as `Client`).

use crate::http::HttpCounters;
use crate::http::*;
use crate::stream::{CloseReason, GapLen, Side, StreamEvent, StreamEventKind, StreamStage};
use crate::timestamp::CaptureTime;
use std::path::PathBuf;

#[derive(Debug, Clone)]
enum Block {
    Data(Side, Vec<u8>),
    Gap(Side, u64),
}

#[derive(Debug, Clone)]
struct Fixture {
    name: String,
    blocks: Vec<Block>,
    rows: Vec<Vec<(String, String)>>,
    stats: Vec<(String, String)>,
    end: String,
    swapped: bool,
}

fn unescape(line: &str) -> Vec<u8> {
    let b = line.as_bytes();
    let mut out = Vec::new();
    let mut i = 0;
    while i < b.len() {
        if b[i] == b'\\' && i + 1 < b.len() && b[i + 1] == b'\\' {
            out.push(b'\\');
            i += 2;
        } else if b[i] == b'\\' && i + 3 < b.len() && b[i + 1] == b'x' {
            let hex = std::str::from_utf8(&b[i + 2..i + 4]).unwrap();
            out.push(u8::from_str_radix(hex, 16).unwrap());
            i += 4;
        } else {
            out.push(b[i]);
            i += 1;
        }
    }
    out
}

fn pairs(s: &str) -> Vec<(String, String)> {
    s.split_whitespace()
        .map(|kv| {
            let (k, v) = kv.split_once('=').unwrap_or((kv, ""));
            (k.to_string(), v.to_string())
        })
        .collect()
}

fn parse_fixture(name: &str, text: &str) -> Fixture {
    let mut f = Fixture {
        name: name.to_string(),
        blocks: Vec::new(),
        rows: Vec::new(),
        stats: Vec::new(),
        end: "fin".into(),
        swapped: false,
    };
    let mut current: Option<(Side, Vec<u8>)> = None;
    let flush = |cur: &mut Option<(Side, Vec<u8>)>, blocks: &mut Vec<Block>| {
        if let Some((side, bytes)) = cur.take() {
            blocks.push(Block::Data(side, bytes));
        }
    };
    for line in text.lines() {
        if current.is_none() && line.starts_with('#') {
            if let Some(rest) = line.strip_prefix("#row ") {
                f.rows.push(pairs(rest));
            } else if let Some(rest) = line.strip_prefix("#stats ") {
                f.stats = pairs(rest);
            } else if let Some(rest) = line.strip_prefix("#end ") {
                f.end = rest.trim().to_string();
            } else if line.trim() == "#swapped" {
                f.swapped = true;
            }
            continue;
        }
        match line {
            ">>>" => {
                flush(&mut current, &mut f.blocks);
                current = Some((Side::Client, Vec::new()));
            }
            "<<<" => {
                flush(&mut current, &mut f.blocks);
                current = Some((Side::Server, Vec::new()));
            }
            l if l.starts_with("><>") || l.starts_with("<><") => {
                flush(&mut current, &mut f.blocks);
                let side = if l.starts_with("><>") {
                    Side::Client
                } else {
                    Side::Server
                };
                let n: u64 = l[3..].trim().parse().unwrap();
                f.blocks.push(Block::Gap(side, n));
            }
            l => {
                if let Some((_, bytes)) = current.as_mut() {
                    match l.strip_suffix('\\') {
                        Some(no_eol) if !no_eol.ends_with('\\') => bytes.extend(unescape(no_eol)),
                        _ => {
                            bytes.extend(unescape(l));
                            bytes.extend_from_slice(b"\r\n");
                        }
                    }
                }
            }
        }
    }
    flush(&mut current, &mut f.blocks);
    f
}

fn fixture_dir() -> PathBuf {
    PathBuf::from(concat!(env!("CARGO_MANIFEST_DIR"), "/tests/fixtures/http"))
}

fn load(name: &str) -> Fixture {
    let path = fixture_dir().join(name);
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    parse_fixture(name, &text)
}

/// Stream events for a fixture; each data block is cut by `cut` (a list of
/// piece lengths for a block of the given length).
fn events(f: &Fixture, cut: &dyn Fn(usize) -> Vec<usize>) -> Vec<StreamEvent> {
    let client: std::net::SocketAddr = "10.0.0.1:40000".parse().unwrap();
    let server: std::net::SocketAddr = "10.0.0.2:80".parse().unwrap();
    let flip = |s: Side| if f.swapped { s.other() } else { s };
    let (oc, os) = if f.swapped {
        (server, client)
    } else {
        (client, server)
    };
    let mut evs = Vec::new();
    let mut ts_ns = 1_700_000_000_000_000_000i64;
    let mut frame = 0u64;
    let mut push = |kind: StreamEventKind, ts_ns: i64, frame: u64| {
        evs.push(StreamEvent {
            stream: 7,
            ts: CaptureTime::from_ns(ts_ns),
            frame,
            kind,
        })
    };
    push(
        StreamEventKind::Opened {
            client: oc,
            server: os,
            saw_syn: true,
            input: 0,
        },
        ts_ns,
        frame,
    );
    for b in &f.blocks {
        ts_ns += 1_000_000;
        frame += 1;
        match b {
            Block::Data(side, bytes) => {
                let mut at = 0;
                for len in cut(bytes.len()) {
                    push(
                        StreamEventKind::Data {
                            side: flip(*side),
                            bytes: bytes[at..at + len].to_vec(),
                        },
                        ts_ns,
                        frame,
                    );
                    at += len;
                }
                assert_eq!(at, bytes.len());
            }
            Block::Gap(side, len) => push(
                StreamEventKind::Gap {
                    side: flip(*side),
                    len: crate::stream::GapLen::Bytes(*len),
                },
                ts_ns,
                frame,
            ),
        }
    }
    ts_ns += 1_000_000;
    frame += 1;
    match f.end.as_str() {
        "fin" => {
            push(
                StreamEventKind::Fin {
                    side: flip(Side::Client),
                },
                ts_ns,
                frame,
            );
            push(
                StreamEventKind::Fin {
                    side: flip(Side::Server),
                },
                ts_ns,
                frame,
            );
            push(StreamEventKind::closed(CloseReason::Finished), ts_ns, frame);
        }
        "rst" => {
            push(
                StreamEventKind::Rst {
                    side: flip(Side::Server),
                },
                ts_ns,
                frame,
            );
            push(StreamEventKind::closed(CloseReason::Finished), ts_ns, frame);
        }
        _ => {}
    }
    evs
}

fn run(evs: Vec<StreamEvent>) -> (Vec<HttpEvent>, HttpCounters) {
    let mut stage = HttpStage::new(vec!["fixture.pcap".into()]);
    let mut stats = HttpCounters::default();
    let mut out = Vec::new();
    for e in evs {
        stage.push(e, &mut stats, &mut out);
    }
    stage.finish(&mut stats, &mut out);
    (out, stats)
}

fn rows(evs: &[HttpEvent]) -> Vec<HttpRow> {
    let mut log = HttpLog::new();
    for e in evs {
        log.push(e);
    }
    log.finish()
}

fn whole(n: usize) -> Vec<usize> {
    if n == 0 { vec![] } else { vec![n] }
}

/// Checks the promises of `HttpEvent`: the request comes before its
/// response events, and each request ends exactly once.
fn check_event_order(evs: &[HttpEvent]) {
    use std::collections::HashMap;
    let mut seen_request = HashMap::new();
    let mut ended = HashMap::new();
    for e in evs {
        match e {
            HttpEvent::Request(r) => {
                assert!(
                    !ended.contains_key(&r.xref.depth),
                    "request after its end: {e:?}"
                );
                seen_request.insert(r.xref.depth, true);
            }
            HttpEvent::ResponseEnd { xref, .. } | HttpEvent::NoResponse { xref, .. } => {
                assert!(
                    ended.insert(xref.depth, true).is_none(),
                    "ended twice: {e:?}"
                );
            }
            HttpEvent::ResponseHead { xref, .. } | HttpEvent::ResponseBody { xref, .. } => {
                assert!(!ended.contains_key(&xref.depth), "after end: {e:?}");
            }
            HttpEvent::ConnectionClosed(_) => {}
        }
    }
    for d in seen_request.keys() {
        assert!(ended.contains_key(d), "request {d} never ended");
    }
}

fn field(r: &HttpRow, key: &str) -> String {
    let o = |v: &Option<String>| v.clone().unwrap_or_else(|| "-".into());
    match key {
        "depth" => r.trans_depth.to_string(),
        "method" => o(&r.method),
        "host" => o(&r.host),
        "uri" => o(&r.uri),
        "version" => o(&r.version),
        "status" => r.status_code.map_or("-".into(), |s| s.to_string()),
        "req_body" => r.request_body_len.to_string(),
        "resp_body" => r.response_body_len.to_string(),
        "req_wire" => r.request_wire_len.to_string(),
        "resp_wire" => r.response_wire_len.to_string(),
        "complete" => r.complete.to_string(),
        "anomalies" => r.anomalies.text().unwrap_or("-").to_string(),
        "client" => r.client_addr.clone(),
        "server" => r.server_addr.clone(),
        other => panic!("unknown row key {other}"),
    }
}

fn check_fixture(f: &Fixture) -> Vec<HttpEvent> {
    let (evs, stats) = run(events(f, &whole));
    check_event_order(&evs);
    let got = rows(&evs);
    assert_eq!(got.len(), f.rows.len(), "{}: rows {got:#?}", f.name);
    for (i, (row, want)) in got.iter().zip(&f.rows).enumerate() {
        for (k, v) in want {
            assert_eq!(&field(row, k), v, "{}: row {i} field {k}: {row:#?}", f.name);
        }
    }
    for (k, v) in &f.stats {
        let got = match k.as_str() {
            "non_http" => stats.non_http_streams,
            "skipped" => stats.http_bytes_skipped,
            "exchanges" => stats.http_exchanges,
            other => panic!("unknown stats key {other}"),
        };
        assert_eq!(&got.to_string(), v, "{}: stats {k}: {stats:#?}", f.name);
    }
    evs
}

/// Events with the body pieces of one response merged, so runs cut
/// differently compare equal. For bodies without content coding the time of
/// every byte must still match (kept as runs of (ts, bytes)); decoders may
/// release decoded bytes at different points, so coded bodies compare by
/// content only.
fn normalized(evs: &[HttpEvent]) -> Vec<String> {
    use std::collections::{BTreeMap, HashSet};
    let mut out: Vec<String> = Vec::new();
    let mut coded = HashSet::new();
    // depth -> (body bytes, runs of (ts, bytes))
    type Body = (Vec<u8>, Vec<(i64, usize)>);
    let mut bodies: BTreeMap<u32, Body> = BTreeMap::new();
    for e in evs {
        match e {
            HttpEvent::ResponseBody { xref, ts_us, data } => {
                let (acc, runs) = bodies.entry(xref.depth).or_default();
                acc.extend_from_slice(data);
                if !coded.contains(&xref.depth) {
                    match runs.last_mut() {
                        Some((ts, n)) if *ts == *ts_us => *n += data.len(),
                        _ => runs.push((*ts_us, data.len())),
                    }
                }
                continue;
            }
            HttpEvent::ResponseHead { xref, head, .. }
                if head.headers.get("content-encoding").is_some() =>
            {
                coded.insert(xref.depth);
            }
            HttpEvent::ResponseEnd { xref, .. } => {
                if let Some((acc, runs)) = bodies.remove(&xref.depth) {
                    out.push(format!(
                        "body {} {:?} {:?}",
                        xref.depth,
                        String::from_utf8_lossy(&acc),
                        runs
                    ));
                }
            }
            _ => {}
        }
        let s = match e {
            HttpEvent::Request(r) => format!(
                "req {} {} {} {} {:?} {:?} {} {:?} {} {}",
                r.xref.depth,
                r.ts_first_us,
                r.ts_last_us,
                r.frame,
                r.head,
                String::from_utf8_lossy(&r.body),
                r.wire_len,
                r.anomalies,
                r.complete,
                r.xref.conn.client_addr
            ),
            other => format!("{other:?}"),
        };
        out.push(s);
    }
    out
}

fn all_fixtures() -> Vec<Fixture> {
    let mut names: Vec<String> = std::fs::read_dir(fixture_dir())
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|n| n.ends_with(".t"))
        .collect();
    names.sort();
    assert!(names.len() >= 12, "fixtures missing: {names:?}");
    names.iter().map(|n| load(n)).collect()
}

#[test]
fn fixtures_give_expected_rows() {
    for f in all_fixtures() {
        assert!(
            !f.rows.is_empty() || !f.stats.is_empty(),
            "{} states nothing",
            f.name
        );
        check_fixture(&f);
    }
}

#[test]
fn conversation_split_at_every_byte() {
    for f in all_fixtures() {
        let base = normalized(&run(events(&f, &whole)).0);
        let longest = f
            .blocks
            .iter()
            .map(|b| match b {
                Block::Data(_, d) => d.len(),
                Block::Gap(..) => 0,
            })
            .max()
            .unwrap_or(0);
        for at in 1..longest {
            let cut = |n: usize| if at < n { vec![at, n - at] } else { whole(n) };
            assert_eq!(
                normalized(&run(events(&f, &cut)).0),
                base,
                "{} cut at {at}",
                f.name
            );
        }
        let bytewise = |n: usize| vec![1; n];
        assert_eq!(
            normalized(&run(events(&f, &bytewise)).0),
            base,
            "{} byte at a time",
            f.name
        );
    }
}

#[test]
fn sse_pieces_arrive_with_their_times() {
    let f = load("sse-streaming.t");
    let evs = check_fixture(&f);
    let pieces: Vec<(i64, String)> = evs
        .iter()
        .filter_map(|e| match e {
            HttpEvent::ResponseBody { ts_us, data, .. } => {
                Some((*ts_us, String::from_utf8_lossy(data).into_owned()))
            }
            _ => None,
        })
        .collect();
    assert_eq!(pieces.len(), 3, "{pieces:?}");
    assert!(pieces[0].0 < pieces[1].0 && pieces[1].0 < pieces[2].0);
    assert!(pieces[0].1.starts_with("event: message"));
    assert!(matches!(
        evs.last(),
        Some(HttpEvent::ResponseEnd {
            end: BodyEnd::CaptureEnd,
            ..
        })
    ));
}

/// One step of a hand-written stream for the who-closed tests.
#[derive(Debug, Clone, Copy)]
enum Step {
    /// Bytes from the flow's `Client` / `Server` side.
    C(&'static str),
    S(&'static str),
    Fin(Side),
    Rst(Side),
    /// `Closed { Finished }` (after FINs or a RST).
    Closed,
}

/// Runs `steps` on one stream (sides as the flow guessed them) and returns the HTTP events.
fn steps(list: &[Step]) -> Vec<HttpEvent> {
    let client: std::net::SocketAddr = "10.0.0.1:40000".parse().unwrap();
    let server: std::net::SocketAddr = "10.0.0.2:80".parse().unwrap();
    let mut evs = vec![StreamEvent {
        stream: 3,
        ts: CaptureTime::from_ns(1_000_000_000),
        frame: 0,
        kind: StreamEventKind::Opened {
            client,
            server,
            saw_syn: true,
            input: 0,
        },
    }];
    for (i, s) in list.iter().enumerate() {
        let kind = match *s {
            Step::C(t) => StreamEventKind::Data {
                side: Side::Client,
                bytes: t.as_bytes().to_vec(),
            },
            Step::S(t) => StreamEventKind::Data {
                side: Side::Server,
                bytes: t.as_bytes().to_vec(),
            },
            Step::Fin(side) => StreamEventKind::Fin { side },
            Step::Rst(side) => StreamEventKind::Rst { side },
            Step::Closed => StreamEventKind::closed(CloseReason::Finished),
        };
        let n = i as i64 + 1;
        evs.push(StreamEvent {
            stream: 3,
            ts: CaptureTime::from_ns(1_000_000_000 + n * 1_000_000),
            frame: n as u64,
            kind,
        });
    }
    let (out, _) = run(evs);
    check_event_order(&out);
    out
}

/// (end, client_closed) of every ResponseEnd / NoResponse, tagged `resp` / `none`.
fn ends(evs: &[HttpEvent]) -> Vec<(&'static str, BodyEnd, bool)> {
    evs.iter()
        .filter_map(|e| match e {
            HttpEvent::ResponseEnd {
                end, client_closed, ..
            } => Some(("resp", *end, *client_closed)),
            HttpEvent::NoResponse {
                end, client_closed, ..
            } => Some(("none", *end, *client_closed)),
            _ => None,
        })
        .collect()
}

const POST: &str = "POST /mcp HTTP/1.1\r\nHost: a\r\nContent-Length: 2\r\n\r\n{}";
const SSE_HEAD: &str =
    "HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nTransfer-Encoding: chunked\r\n\r\n";
const SSE_EVENT: &str = "9\r\ndata: 1\n\n\r\n";

#[test]
fn client_fin_before_stream_end_is_client_closed() {
    use Step::*;
    let evs = steps(&[
        C(POST),
        S(SSE_HEAD),
        S(SSE_EVENT),
        Fin(Side::Client),
        Fin(Side::Server),
        Closed,
    ]);
    assert_eq!(ends(&evs), [("resp", BodyEnd::Fin, true)]);
}

#[test]
fn server_fin_first_is_not_client_closed() {
    use Step::*;
    let evs = steps(&[
        C(POST),
        S(SSE_HEAD),
        S(SSE_EVENT),
        Fin(Side::Server),
        Fin(Side::Client),
        Closed,
    ]);
    assert_eq!(ends(&evs), [("resp", BodyEnd::Fin, false)]);
}

#[test]
fn rst_says_which_side_sent_it() {
    use Step::*;
    let by_client = steps(&[
        C(POST),
        S(SSE_HEAD),
        S(SSE_EVENT),
        Rst(Side::Client),
        Closed,
    ]);
    assert_eq!(ends(&by_client), [("resp", BodyEnd::Rst, true)]);
    let by_server = steps(&[
        C(POST),
        S(SSE_HEAD),
        S(SSE_EVENT),
        Rst(Side::Server),
        Closed,
    ]);
    assert_eq!(ends(&by_server), [("resp", BodyEnd::Rst, false)]);
}

#[test]
fn client_fin_still_waiting_stream_open_at_capture_end() {
    use Step::*;
    // The server never closes: the capture ends with the stream open.
    let evs = steps(&[C(POST), S(SSE_HEAD), S(SSE_EVENT), Fin(Side::Client)]);
    assert_eq!(ends(&evs), [("resp", BodyEnd::CaptureEnd, true)]);
    let untouched = steps(&[C(POST), S(SSE_HEAD), S(SSE_EVENT)]);
    assert_eq!(ends(&untouched), [("resp", BodyEnd::CaptureEnd, false)]);
}

#[test]
fn complete_response_then_client_close_is_not_client_closed() {
    use Step::*;
    let evs = steps(&[
        C(POST),
        S(SSE_HEAD),
        S(SSE_EVENT),
        S("0\r\n\r\n"),
        Fin(Side::Client),
        Fin(Side::Server),
        Closed,
    ]);
    assert_eq!(ends(&evs), [("resp", BodyEnd::Complete, false)]);
}

#[test]
fn no_response_after_client_close() {
    use Step::*;
    let evs = steps(&[C(POST), Fin(Side::Client), Fin(Side::Server), Closed]);
    assert_eq!(ends(&evs), [("none", BodyEnd::Fin, true)]);
    let evs = steps(&[C(POST), Rst(Side::Client), Closed]);
    assert_eq!(ends(&evs), [("none", BodyEnd::Rst, true)]);
    let evs = steps(&[C(POST), Fin(Side::Server), Fin(Side::Client), Closed]);
    assert_eq!(ends(&evs), [("none", BodyEnd::Fin, false)]);
    let evs = steps(&[C(POST), Rst(Side::Server), Closed]);
    assert_eq!(ends(&evs), [("none", BodyEnd::Rst, false)]);
}

#[test]
fn client_closed_follows_the_http_roles_not_the_flow_guess() {
    use Step::*;
    // The flow took the server for the client: the requests arrive as `Server`.
    let evs = steps(&[
        S(POST),
        C(SSE_HEAD),
        C(SSE_EVENT),
        Fin(Side::Server),
        Fin(Side::Client),
        Closed,
    ]);
    assert_eq!(ends(&evs), [("resp", BodyEnd::Fin, true)]);
    let evs = steps(&[
        S(POST),
        C(SSE_HEAD),
        C(SSE_EVENT),
        Rst(Side::Client),
        Closed,
    ]);
    assert_eq!(ends(&evs), [("resp", BodyEnd::Rst, false)]);
}

#[test]
fn client_fin_held_before_sides_are_known() {
    use Step::*;
    // A request line too short to tell the roles, then the client's FIN: the
    // FIN waits with the bytes and still marks the client once the server answers.
    let evs = steps(&[
        C("GET /"),
        Fin(Side::Client),
        S("HTTP/1.1 200 OK\r\nContent-Length: 10\r\n\r\nabc"),
        Fin(Side::Server),
        Closed,
    ]);
    assert_eq!(ends(&evs), [("resp", BodyEnd::Fin, true)]);
}

#[test]
fn pipelined_requests_cut_by_client_close() {
    use Step::*;
    // The first response completes; the second is cut after the client's FIN.
    let evs = steps(&[
        C(POST),
        C(POST),
        S("HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\n{}"),
        S(SSE_HEAD),
        Fin(Side::Client),
        Fin(Side::Server),
        Closed,
    ]);
    assert_eq!(
        ends(&evs),
        [
            ("resp", BodyEnd::Complete, false),
            ("resp", BodyEnd::Fin, true)
        ]
    );
}

mod proptests {
    use super::*;
    use proptest::prelude::*;

    fn conversation() -> impl Strategy<Value = Vec<(bool, Vec<u8>)>> {
        let piece = prop_oneof![
            Just(b"GET / HTTP/1.1\r\nHost: a\r\n\r\n".to_vec()),
            Just(b"POST /x HTTP/1.1\r\nContent-Length: 3\r\n\r\nabc".to_vec()),
            Just(b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n3\r\nabc\r\n0\r\n\r\n".to_vec()),
            Just(b"HTTP/1.1 100 Continue\r\n\r\n".to_vec()),
            Just(b"HTTP/1.1 200 OK\r\nContent-Encoding: gzip\r\nContent-Length: 4\r\n\r\n\x1f\x8b\x08\x00".to_vec()),
            prop::collection::vec(any::<u8>(), 0..40),
        ];
        prop::collection::vec((any::<bool>(), piece), 0..12)
    }

    proptest! {
        #[test]
        fn malformed_http_never_panics(
            conv in conversation(),
            cuts in prop::collection::vec(1usize..20, 1..8),
            gaps in prop::collection::vec(any::<Option<(bool, u16)>>(), 0..12),
            end in 0usize..3,
            swapped in any::<bool>(),
        ) {
            let end = ["fin", "rst", "capture"][end].to_string();
            let mut f = Fixture { name: "prop".into(), blocks: vec![], rows: vec![], stats: vec![], end, swapped };
            for (i, (client, bytes)) in conv.into_iter().enumerate() {
                let side = if client { Side::Client } else { Side::Server };
                f.blocks.push(Block::Data(side, bytes));
                if let Some(Some((c, len))) = gaps.get(i) {
                    f.blocks.push(Block::Gap(if *c { Side::Client } else { Side::Server }, u64::from(*len)));
                }
            }
            let cut = |n: usize| {
                let mut v = Vec::new();
                let mut left = n;
                let mut i = 0;
                while left > 0 {
                    let c = cuts[i % cuts.len()].min(left);
                    v.push(c);
                    left -= c;
                    i += 1;
                }
                v
            };
            let (evs, stats) = run(events(&f, &cut));
            check_event_order(&evs);
            let rows = rows(&evs);
            // Every exchange is counted once and becomes one row.
            prop_assert_eq!(stats.http_exchanges, rows.len() as u64);
        }
    }
}

/// A stream event at `ms` milliseconds.
fn at(stream: u64, ms: i64, kind: StreamEventKind) -> StreamEvent {
    StreamEvent {
        stream,
        ts: CaptureTime::from_us(ms * 1000),
        frame: u64::try_from(ms).unwrap(),
        kind,
    }
}

fn opened(port: u16) -> StreamEventKind {
    StreamEventKind::Opened {
        client: format!("10.0.0.1:{port}").parse().unwrap(),
        server: "10.0.0.2:80".parse().unwrap(),
        saw_syn: true,
        input: 0,
    }
}

fn client(text: &str) -> StreamEventKind {
    StreamEventKind::Data {
        side: Side::Client,
        bytes: text.as_bytes().to_vec(),
    }
}

#[test]
fn the_earliest_request_under_way_is_tracked_until_it_is_handed_on() {
    let mut stage = HttpStage::new(vec!["t.pcap".into()]);
    let mut stats = HttpCounters::default();
    let out = std::cell::RefCell::new(Vec::new());
    let mut push = |stage: &mut HttpStage, ev| {
        stage.push(ev, &mut stats, &mut out.borrow_mut());
        stage.held_since_us()
    };
    assert_eq!(push(&mut stage, at(3, 1000, opened(40000))), None);
    // Half a head on stream 3, then a whole head and half a body on stream 4.
    let partial = client("POST /mcp HTTP/1.1\r\nContent-Length: 10\r\n");
    assert_eq!(push(&mut stage, at(3, 1001, partial)), Some(1_001_000));
    assert_eq!(
        push(&mut stage, at(4, 1002, opened(40001))),
        Some(1_001_000)
    );
    let head = client("POST /mcp HTTP/1.1\r\nContent-Length: 4\r\n\r\n{}");
    assert_eq!(push(&mut stage, at(4, 1003, head)), Some(1_001_000));
    // Stream 3's head completes, its body is still short: still under way since 1001 ms.
    assert_eq!(
        push(&mut stage, at(3, 1004, client("\r\n01234"))),
        Some(1_001_000)
    );
    // Its body completes: the request is handed on, stream 4's is the earliest now.
    assert_eq!(
        push(&mut stage, at(3, 1005, client("56789"))),
        Some(1_003_000)
    );
    let handed_on = |ts: i64| {
        out.borrow()
            .iter()
            .any(|e| matches!(e, HttpEvent::Request(r) if r.ts_first_us == ts))
    };
    assert!(handed_on(1_001_000));
    // A request that arrives whole is never under way.
    assert_eq!(
        push(&mut stage, at(3, 1006, client("GET / HTTP/1.1\r\n\r\n"))),
        Some(1_003_000)
    );
    // Stream 4 closes: its request is cut and handed on as it is.
    let closed = StreamEventKind::closed(CloseReason::Finished);
    assert_eq!(push(&mut stage, at(4, 1007, closed)), None);
    assert!(handed_on(1_003_000));
}

#[test]
fn bytes_held_before_the_sides_are_known_count_as_a_request_under_way() {
    let mut stage = HttpStage::new(vec!["t.pcap".into()]);
    let mut stats = HttpCounters::default();
    let mut out = Vec::new();
    stage.push(at(5, 2000, opened(40002)), &mut stats, &mut out);
    // Two bytes say nothing yet about which side speaks HTTP.
    stage.push(at(5, 2001, client("PO")), &mut stats, &mut out);
    assert_eq!(stage.held_since_us(), Some(2_001_000));
    stage.push(
        at(5, 2002, client("ST / HTTP/1.1\r\n\r\n")),
        &mut stats,
        &mut out,
    );
    assert_eq!(stage.held_since_us(), None);
    stage.finish(&mut stats, &mut out);
    let starts: Vec<i64> = out
        .iter()
        .filter_map(|e| match e {
            HttpEvent::Request(r) => Some(r.ts_first_us),
            _ => None,
        })
        .collect();
    assert_eq!(starts, vec![2_001_000]);
}

fn server(text: &str) -> StreamEventKind {
    StreamEventKind::Data {
        side: Side::Server,
        bytes: text.as_bytes().to_vec(),
    }
}

/// Events of one stream run through a fresh stage, then its end of input.
fn run_stream(events: Vec<StreamEventKind>) -> (Vec<HttpEvent>, HttpCounters) {
    let mut stage = HttpStage::new(vec!["t.pcap".into()]);
    let mut stats = HttpCounters::default();
    let mut out = Vec::new();
    stage.push(at(7, 3000, opened(40003)), &mut stats, &mut out);
    for (ms, kind) in (3001..).zip(events) {
        stage.push(at(7, ms, kind), &mut stats, &mut out);
    }
    stage.finish(&mut stats, &mut out);
    (out, stats)
}

fn ends_by_depth(out: &[HttpEvent]) -> Vec<(u32, BodyEnd)> {
    out.iter()
        .filter_map(|e| match e {
            HttpEvent::ResponseEnd { xref, end, .. } | HttpEvent::NoResponse { xref, end, .. } => {
                Some((xref.depth, *end))
            }
            _ => None,
        })
        .collect()
}

#[test]
fn a_gap_of_unknown_length_ends_a_counted_body_and_the_next_response_is_found_again() {
    let gap = |len| StreamEventKind::Gap {
        side: Side::Server,
        len,
    };
    let two_requests = client("GET /a HTTP/1.1\r\n\r\nGET /b HTTP/1.1\r\n\r\n");
    let first = "HTTP/1.1 200 OK\r\nContent-Length: 10\r\n\r\n0123";
    let second = "HTTP/1.1 204 No Content\r\n\r\n";
    // A known length is taken as body bytes not seen: 6 bytes finish the first body.
    let (out, _) = run_stream(vec![
        two_requests.clone(),
        server(first),
        gap(GapLen::Bytes(6)),
        server(second),
    ]);
    assert_eq!(
        ends_by_depth(&out),
        [(1, BodyEnd::Gap), (2, BodyEnd::Complete)]
    );
    // An unknown length cannot be counted off: the body ends at the gap, and the next
    // response is found by looking for a status line.
    let (out, stats) = run_stream(vec![
        two_requests,
        server(first),
        gap(GapLen::Unknown),
        server(&format!("89{second}")),
    ]);
    assert_eq!(
        ends_by_depth(&out),
        [(1, BodyEnd::Gap), (2, BodyEnd::Complete)]
    );
    assert_eq!(
        stats.http_bytes_skipped, 2,
        "the first body's tail is skipped"
    );
}

#[test]
fn a_gap_of_unknown_length_in_a_close_delimited_body_keeps_reading_it() {
    let (out, _) = run_stream(vec![
        client("GET / HTTP/1.1\r\n\r\n"),
        server("HTTP/1.1 200 OK\r\n\r\nab"),
        StreamEventKind::Gap {
            side: Side::Server,
            len: GapLen::Unknown,
        },
        server("cd"),
        StreamEventKind::Fin { side: Side::Server },
    ]);
    let body: Vec<u8> = out
        .iter()
        .filter_map(|e| match e {
            HttpEvent::ResponseBody { data, .. } => Some(data.clone()),
            _ => None,
        })
        .flatten()
        .collect();
    assert_eq!(body, b"abcd");
    assert_eq!(ends_by_depth(&out), [(1, BodyEnd::Gap)]);
}

#[test]
fn a_negotiated_protocol_changes_nothing_for_http_1() {
    let exchange = || {
        vec![
            client("GET / HTTP/1.1\r\n\r\n"),
            server("HTTP/1.1 204 No Content\r\n\r\n"),
        ]
    };
    let (plain, _) = run_stream(exchange());
    let mut announced = vec![StreamEventKind::Negotiated {
        protocol: b"http/1.1".to_vec().into_boxed_slice(),
    }];
    announced.extend(exchange());
    let (negotiated, _) = run_stream(announced);
    assert_eq!(ends_by_depth(&plain), [(1, BodyEnd::Complete)]);
    assert_eq!(ends_by_depth(&negotiated), ends_by_depth(&plain));
}

#[test]
fn a_stream_reset_is_named_rst_as_the_contract_says() {
    assert_eq!(BodyEnd::StreamReset.name(), "rst");
    assert_eq!(BodyEnd::Rst.name(), "rst");
}
