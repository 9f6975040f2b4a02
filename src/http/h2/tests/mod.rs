//! HTTP/2 through the whole HTTP stage: detection, streams as exchanges, splits, ends and
//! hostile input. Header blocks come from a tiny test-only HPACK encoder (literals without
//! indexing, no Huffman, and indexed static entries).

mod equiv;
mod hostile;

use super::frames::{flag, kind};
use crate::http::HttpCounters;
use crate::http::{HttpEvent, HttpLimits, HttpStage};
use crate::stream::{CloseReason, GapLen, Side, StreamEvent, StreamEventKind, StreamStage};
use crate::timestamp::CaptureTime;

pub(crate) mod enc {
    //! The test encoder.

    /// RFC 7541 §5.1 integer with an `n`-bit prefix; `first` holds the pattern bits.
    pub fn int(out: &mut Vec<u8>, n: u32, first: u8, value: usize) {
        let max = (1usize << n) - 1;
        if value < max {
            out.push(first | value as u8);
            return;
        }
        out.push(first | max as u8);
        let mut v = value - max;
        while v >= 128 {
            out.push((v % 128 + 128) as u8);
            v /= 128;
        }
        out.push(v as u8);
    }

    /// Literal header field without indexing, new name (RFC 7541 §6.2.2).
    pub fn lit(out: &mut Vec<u8>, name: &[u8], value: &[u8]) {
        out.push(0);
        int(out, 7, 0, name.len());
        out.extend_from_slice(name);
        int(out, 7, 0, value.len());
        out.extend_from_slice(value);
    }

    /// Indexed header field (RFC 7541 §6.1).
    pub fn idx(out: &mut Vec<u8>, index: usize) {
        int(out, 7, 0x80, index);
    }

    pub fn block(fields: &[(&str, &str)]) -> Vec<u8> {
        let mut out = Vec::new();
        for (n, v) in fields {
            match (*n, *v) {
                (":method", "GET") => idx(&mut out, 2),
                (":method", "POST") => idx(&mut out, 3),
                (":status", "200") => idx(&mut out, 8),
                _ => lit(&mut out, n.as_bytes(), v.as_bytes()),
            }
        }
        out
    }

    pub fn frame(kind: u8, flags: u8, stream: u32, payload: &[u8]) -> Vec<u8> {
        let len = payload.len() as u32;
        let mut v = vec![(len >> 16) as u8, (len >> 8) as u8, len as u8, kind, flags];
        v.extend_from_slice(&stream.to_be_bytes());
        v.extend_from_slice(payload);
        v
    }
}

pub(super) use enc::{block, frame};

pub(super) const PREFACE: &[u8] = super::PREFACE;

pub(super) fn settings() -> Vec<u8> {
    frame(kind::SETTINGS, 0, 0, &[0, 3, 0, 0, 0, 100])
}

pub(super) fn settings_ack() -> Vec<u8> {
    frame(kind::SETTINGS, flag::ACK, 0, &[])
}

pub(super) fn request(stream: u32, method: &str, path: &str, body: Option<&[u8]>) -> Vec<u8> {
    let b = block(&[
        (":method", method),
        (":scheme", "http"),
        (":authority", "mcp.test:8080"),
        (":path", path),
        ("content-type", "application/json"),
    ]);
    let mut v = frame(
        kind::HEADERS,
        flag::END_HEADERS | if body.is_none() { flag::END_STREAM } else { 0 },
        stream,
        &b,
    );
    if let Some(body) = body {
        v.extend(frame(kind::DATA, flag::END_STREAM, stream, body));
    }
    v
}

pub(super) fn response(stream: u32, status: &str, extra: &[(&str, &str)], body: &[u8]) -> Vec<u8> {
    let mut fields = vec![(":status", status)];
    fields.extend_from_slice(extra);
    let mut v = frame(kind::HEADERS, flag::END_HEADERS, stream, &block(&fields));
    v.extend(frame(kind::DATA, flag::END_STREAM, stream, body));
    v
}

pub(super) fn client_start() -> Vec<u8> {
    let mut v = PREFACE.to_vec();
    v.extend(settings());
    v
}

pub(super) fn server_start() -> Vec<u8> {
    let mut v = settings();
    v.extend(settings_ack());
    v
}

/// Runs deliveries (each one `Data` event, 1 ms apart) through a fresh stage, with FIN
/// from both sides and `Closed` at the end unless `end` says otherwise.
pub(super) fn run_with(
    deliveries: &[(Side, Vec<u8>)],
    limits: HttpLimits,
    negotiated: Option<&[u8]>,
    end: Option<StreamEventKind>,
) -> (Vec<HttpEvent>, HttpCounters) {
    let mut stage = HttpStage::with_limits(vec!["t.pcap".into()], limits);
    let mut stats = HttpCounters::default();
    let mut out = Vec::new();
    let mut ts = 1_000_000_000i64;
    let mut push = |kind, stage: &mut HttpStage, out: &mut Vec<HttpEvent>| {
        ts += 1_000_000;
        stage.push(
            StreamEvent {
                stream: 0,
                ts: CaptureTime::from_ns(ts),
                frame: (ts / 1_000_000) as u64,
                kind,
            },
            &mut stats,
            out,
        );
    };
    push(
        StreamEventKind::Opened {
            client: "10.0.0.1:40000".parse().unwrap(),
            server: "10.0.0.2:5555".parse().unwrap(),
            saw_syn: true,
            input: 0,
        },
        &mut stage,
        &mut out,
    );
    if let Some(p) = negotiated {
        push(
            StreamEventKind::Negotiated { protocol: p.into() },
            &mut stage,
            &mut out,
        );
    }
    for (side, bytes) in deliveries {
        if bytes.is_empty() {
            push(
                StreamEventKind::Gap {
                    side: *side,
                    len: GapLen::Bytes(100),
                },
                &mut stage,
                &mut out,
            );
            continue;
        }
        push(
            StreamEventKind::Data {
                side: *side,
                bytes: bytes.clone(),
            },
            &mut stage,
            &mut out,
        );
    }
    match end {
        Some(k) => push(k, &mut stage, &mut out),
        None => {
            push(
                StreamEventKind::Fin { side: Side::Client },
                &mut stage,
                &mut out,
            );
            push(
                StreamEventKind::Fin { side: Side::Server },
                &mut stage,
                &mut out,
            );
            push(
                StreamEventKind::closed(CloseReason::Finished),
                &mut stage,
                &mut out,
            );
        }
    }
    stage.finish(&mut stats, &mut out);
    (out, stats)
}

pub(super) fn run(deliveries: &[(Side, Vec<u8>)]) -> (Vec<HttpEvent>, HttpCounters) {
    run_with(deliveries, HttpLimits::default(), None, None)
}

/// The events as short lines (what the tests compare).
pub(crate) fn summary(events: &[HttpEvent]) -> Vec<String> {
    events
        .iter()
        // The connection's own record is checked by the connections tests.
        .filter(|e| !matches!(e, HttpEvent::ConnectionClosed(_)))
        .map(|e| match e {
            HttpEvent::ConnectionClosed(_) => String::new(),
            HttpEvent::Request(r) => format!(
                "req #{} {:?} {} {} HTTP/{} host={:?} body={:?} complete={} {:?}",
                r.xref.depth,
                r.h2_stream,
                r.head.method,
                r.head.uri,
                r.head.version,
                r.head.headers.get("host"),
                String::from_utf8_lossy(&r.body),
                r.complete,
                r.anomalies
            ),
            HttpEvent::ResponseHead { xref, head, .. } => {
                format!("head #{} {}", xref.depth, head.status)
            }
            HttpEvent::ResponseBody { xref, data, .. } => {
                format!("body #{} {:?}", xref.depth, String::from_utf8_lossy(data))
            }
            HttpEvent::ResponseEnd {
                xref,
                end,
                anomalies,
                client_closed,
                ..
            } => format!(
                "end #{} {} client_closed={} {:?}",
                xref.depth,
                end.name(),
                client_closed,
                anomalies
            ),
            HttpEvent::NoResponse {
                xref,
                end,
                client_closed,
                ..
            } => format!(
                "none #{} {} client_closed={}",
                xref.depth,
                end.name(),
                client_closed
            ),
        })
        .collect()
}

/// Response body pieces joined per exchange, so tests do not depend on how pieces split.
pub(super) fn joined(events: &[HttpEvent]) -> Vec<String> {
    let mut merged: Vec<HttpEvent> = Vec::new();
    for e in events {
        if let (
            HttpEvent::ResponseBody { xref, data, .. },
            Some(HttpEvent::ResponseBody {
                xref: last,
                data: into,
                ..
            }),
        ) = (e, merged.last_mut())
            && last.depth == xref.depth
        {
            into.extend_from_slice(data);
            continue;
        }
        merged.push(e.clone());
    }
    summary(&merged)
}

fn basic_exchange() -> Vec<(Side, Vec<u8>)> {
    let mut c = client_start();
    c.extend(request(
        1,
        "POST",
        "/mcp",
        Some(br#"{"jsonrpc":"2.0","id":1}"#),
    ));
    let mut s = server_start();
    s.extend(response(
        1,
        "200",
        &[("content-type", "application/json")],
        b"{}",
    ));
    vec![(Side::Client, c), (Side::Server, s)]
}

#[test]
fn prior_knowledge_on_any_port_gives_one_exchange_per_stream() {
    let (events, stats) = run(&basic_exchange());
    assert_eq!(
        summary(&events),
        vec![
            r#"req #1 Some(1) POST /mcp HTTP/2 host=Some("mcp.test:8080") body="{\"jsonrpc\":\"2.0\",\"id\":1}" complete=true []"#,
            "head #1 200",
            r#"body #1 "{}""#,
            "end #1 complete client_closed=false []",
        ]
    );
    assert_eq!(stats.http_exchanges, 1);
    assert_eq!(stats.non_http_streams, 0);
    assert_eq!(stats.http_messages, 2);
    assert_eq!(stats.http_messages_parsed, 2);
    assert!(stats.anomalies.is_empty(), "{:?}", stats.anomalies);
    let HttpEvent::Request(r) = &events[0] else {
        panic!()
    };
    assert_eq!(&*r.xref.conn.client_addr, "10.0.0.1:40000");
}

#[test]
fn the_preface_side_is_the_client_even_when_the_flow_guessed_wrong() {
    let d = basic_exchange();
    let swapped: Vec<_> = d
        .into_iter()
        .map(|(s, b)| {
            let s = if s == Side::Client {
                Side::Server
            } else {
                Side::Client
            };
            (s, b)
        })
        .collect();
    let (events, _) = run(&swapped);
    let HttpEvent::Request(r) = &events[0] else {
        panic!("{:?}", summary(&events))
    };
    // The preface came from the flow's "server" address.
    assert_eq!(&*r.xref.conn.client_addr, "10.0.0.2:5555");
    assert_eq!(summary(&events).len(), 4);
}

#[test]
fn alpn_h2_makes_the_connection_http2() {
    let (events, _) = run_with(&basic_exchange(), HttpLimits::default(), Some(b"h2"), None);
    assert_eq!(summary(&events)[1], "head #1 200");
    // ALPN http/1.1 with HTTP/2 bytes: the preface still decides.
    let (events, _) = run_with(
        &basic_exchange(),
        HttpLimits::default(),
        Some(b"http/1.1"),
        None,
    );
    assert_eq!(summary(&events).len(), 4);
}

#[test]
fn every_split_point_gives_the_same_events() {
    let d = basic_exchange();
    let (whole, _) = run(&d);
    let expected = joined(&whole);
    let client = &d[0].1;
    let server = &d[1].1;
    for cut in 1..client.len() {
        let (a, b) = client.split_at(cut);
        let deliveries = vec![
            (Side::Client, a.to_vec()),
            (Side::Client, b.to_vec()),
            (Side::Server, server.clone()),
        ];
        assert_eq!(joined(&run(&deliveries).0), expected, "client cut at {cut}");
    }
    for cut in 1..server.len() {
        let (a, b) = server.split_at(cut);
        let deliveries = vec![
            (Side::Client, client.clone()),
            (Side::Server, a.to_vec()),
            (Side::Server, b.to_vec()),
        ];
        assert_eq!(joined(&run(&deliveries).0), expected, "server cut at {cut}");
    }
    // One byte per delivery.
    let mut deliveries: Vec<_> = client.iter().map(|&b| (Side::Client, vec![b])).collect();
    deliveries.extend(server.iter().map(|&b| (Side::Server, vec![b])));
    assert_eq!(joined(&run(&deliveries).0), expected);
}

#[test]
fn a_header_block_across_continuation_frames() {
    let b = block(&[
        (":method", "POST"),
        (":scheme", "http"),
        (":authority", "a.test"),
        (":path", "/split/path"),
        ("x-long", &"v".repeat(300)),
    ]);
    let mut c = client_start();
    let (one, rest) = b.split_at(5);
    let (two, three) = rest.split_at(100);
    c.extend(frame(kind::HEADERS, 0, 1, one));
    c.extend(frame(kind::CONTINUATION, 0, 1, two));
    c.extend(frame(kind::CONTINUATION, flag::END_HEADERS, 1, three));
    c.extend(frame(kind::DATA, flag::END_STREAM, 1, b"x"));
    let mut s = server_start();
    s.extend(response(1, "200", &[], b"ok"));
    let (events, stats) = run(&[(Side::Client, c), (Side::Server, s)]);
    let HttpEvent::Request(r) = &events[0] else {
        panic!()
    };
    assert_eq!(&*r.head.uri, "/split/path");
    assert_eq!(r.head.headers.get("x-long").map(str::len), Some(300));
    assert!(stats.anomalies.is_empty(), "{:?}", stats.anomalies);
}

#[test]
fn interleaved_streams_pair_by_stream_id_and_number_by_request_order() {
    let mut c = client_start();
    c.extend(request(1, "POST", "/a", Some(b"A")));
    c.extend(request(3, "POST", "/b", Some(b"B")));
    let mut s = server_start();
    // Stream 3 answered first, its body interleaved with stream 1's head.
    s.extend(frame(
        kind::HEADERS,
        flag::END_HEADERS,
        3,
        &block(&[(":status", "503")]),
    ));
    s.extend(frame(
        kind::HEADERS,
        flag::END_HEADERS,
        1,
        &block(&[(":status", "200")]),
    ));
    s.extend(frame(kind::DATA, flag::END_STREAM, 3, b"busy"));
    s.extend(frame(kind::DATA, flag::END_STREAM, 1, b"fine"));
    let (events, stats) = run(&[(Side::Client, c), (Side::Server, s)]);
    let lines = summary(&events);
    assert_eq!(
        lines[2..].to_vec(),
        vec![
            "head #2 503",
            "head #1 200",
            r#"body #2 "busy""#,
            "end #2 complete client_closed=false []",
            r#"body #1 "fine""#,
            "end #1 complete client_closed=false []",
        ]
    );
    assert!(lines[0].starts_with("req #1 Some(1) POST /a"));
    assert!(lines[1].starts_with("req #2 Some(3) POST /b"));
    assert_eq!(stats.http_exchanges, 2);
}

#[test]
fn a_response_that_overtakes_its_request_body_waits_for_it() {
    let mut c = client_start();
    c.extend(frame(
        kind::HEADERS,
        flag::END_HEADERS,
        1,
        &block(&[(":method", "POST"), (":path", "/u")]),
    ));
    let mut s = server_start();
    s.extend(response(1, "413", &[], b"too big"));
    let deliveries = vec![
        (Side::Client, c),
        (Side::Server, s),
        (
            Side::Client,
            frame(kind::DATA, flag::END_STREAM, 1, b"late body"),
        ),
    ];
    let (events, _) = run(&deliveries);
    let lines = summary(&events);
    assert!(lines[0].starts_with("req #1"), "{lines:?}");
    assert!(lines[0].contains("late body"));
    assert_eq!(lines[1], "head #1 413");
}

#[test]
fn client_cancel_is_the_client_closing_the_stream() {
    let mut c = client_start();
    c.extend(request(1, "POST", "/slow", Some(b"{}")));
    c.extend(request(3, "POST", "/stream", Some(b"{}")));
    let mut s = server_start();
    s.extend(frame(
        kind::HEADERS,
        flag::END_HEADERS,
        3,
        &block(&[(":status", "200"), ("content-type", "text/event-stream")]),
    ));
    s.extend(frame(kind::DATA, 0, 3, b"data: 1\n\n"));
    let mut cancel = frame(kind::RST_STREAM, 0, 1, &8u32.to_be_bytes());
    cancel.extend(frame(kind::RST_STREAM, 0, 3, &8u32.to_be_bytes()));
    let deliveries = vec![
        (Side::Client, c),
        (Side::Server, s),
        (Side::Client, cancel),
        (Side::Server, response(5, "200", &[], b"")),
    ];
    let (events, stats) = run(&deliveries);
    let lines = summary(&events);
    assert!(
        lines.contains(&"none #1 rst client_closed=true".to_string()),
        "{lines:?}"
    );
    assert!(
        lines.contains(&r#"end #2 rst client_closed=true ["h2.rst_stream_cancel"]"#.to_string())
    );
    assert_eq!(stats.anomalies.get("h2.rst_stream_cancel"), Some(&2));
    // A server reset is not the client's doing.
    let mut c = client_start();
    c.extend(request(1, "GET", "/", None));
    let mut s = server_start();
    s.extend(frame(kind::RST_STREAM, 0, 1, &7u32.to_be_bytes()));
    let (events, stats) = run(&[(Side::Client, c), (Side::Server, s)]);
    assert_eq!(summary(&events)[1], "none #1 rst client_closed=false");
    assert_eq!(
        stats.anomalies.get("h2.rst_stream_refused_stream"),
        Some(&1)
    );
}

#[test]
fn streams_above_goaway_were_never_processed() {
    let mut c = client_start();
    c.extend(frame(
        kind::HEADERS,
        flag::END_HEADERS,
        1,
        &block(&[(":method", "GET"), (":path", "/1")]),
    ));
    c.extend(frame(
        kind::HEADERS,
        flag::END_HEADERS,
        3,
        &block(&[(":method", "GET"), (":path", "/3")]),
    ));
    let mut s = server_start();
    let mut goaway = 1u32.to_be_bytes().to_vec();
    goaway.extend(0u32.to_be_bytes());
    s.extend(frame(kind::GOAWAY, 0, 0, &goaway));
    let deliveries = vec![
        (Side::Client, c),
        (Side::Server, s),
        (
            Side::Client,
            [
                frame(kind::DATA, flag::END_STREAM, 1, b""),
                frame(kind::DATA, flag::END_STREAM, 3, b""),
            ]
            .concat(),
        ),
    ];
    let (events, stats) = run(&deliveries);
    let reqs: Vec<_> = events
        .iter()
        .filter_map(|e| match e {
            HttpEvent::Request(r) => Some((r.h2_stream, r.anomalies.clone())),
            _ => None,
        })
        .collect();
    assert_eq!(
        reqs,
        vec![
            (Some(1), vec![]),
            (Some(3), vec!["h2.goaway_unprocessed".to_string()])
        ]
    );
    assert_eq!(stats.anomalies.get("h2.goaway_unprocessed"), Some(&1));
}

#[test]
fn a_gap_stops_the_direction_and_its_headers_are_never_decoded_with_a_wrong_table() {
    let mut c = client_start();
    c.extend(request(1, "GET", "/a", None));
    let mut s = server_start();
    s.extend(frame(
        kind::HEADERS,
        flag::END_HEADERS,
        1,
        &block(&[(":status", "200")]),
    ));
    s.extend(frame(kind::DATA, 0, 1, b"part"));
    let deliveries = vec![
        (Side::Client, c),
        (Side::Server, s),
        (Side::Server, vec![]),
        (Side::Client, request(3, "GET", "/b", None)),
        (Side::Server, response(3, "200", &[], b"never read")),
    ];
    let (events, stats) = run(&deliveries);
    let lines = summary(&events);
    assert!(
        lines.contains(&"end #1 gap client_closed=false []".to_string()),
        "{lines:?}"
    );
    // The request after the gap is still read (its direction is intact); its response is not.
    assert!(lines.iter().any(|l| l.starts_with("req #2 Some(3) GET /b")));
    assert!(
        lines.contains(&"none #2 fin client_closed=true".to_string()),
        "{lines:?}"
    );
    assert!(!lines.iter().any(|l| l.contains("never read")));
    assert_eq!(stats.anomalies.get("h2.hpack_state_lost"), Some(&1));
}

#[test]
fn gzip_bodies_are_decoded_as_for_http1() {
    use std::io::Write;
    let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
    gz.write_all(br#"{"jsonrpc":"2.0","id":1,"result":{}}"#)
        .unwrap();
    let body = gz.finish().unwrap();
    let mut c = client_start();
    c.extend(request(1, "POST", "/mcp", Some(b"{}")));
    let mut s = server_start();
    s.extend(response(1, "200", &[("content-encoding", "gzip")], &body));
    let (events, _) = run(&[(Side::Client, c), (Side::Server, s)]);
    assert_eq!(
        joined(&events)[2],
        r#"body #1 "{\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{}}""#
    );
    let HttpEvent::ResponseEnd {
        wire_len,
        decoded_len,
        ..
    } = events[3]
    else {
        panic!()
    };
    assert_eq!(wire_len, body.len() as u64);
    assert_eq!(decoded_len, 36);
}

#[test]
fn capture_end_and_tcp_reset_end_open_streams() {
    let mut c = client_start();
    c.extend(request(1, "GET", "/", None));
    let (events, _) = run_with(
        &[(Side::Client, c.clone()), (Side::Server, server_start())],
        HttpLimits::default(),
        None,
        Some(StreamEventKind::closed(CloseReason::CaptureEnd)),
    );
    assert_eq!(
        summary(&events)[1],
        "none #1 capture_end client_closed=false"
    );
    let (events, _) = run_with(
        &[(Side::Client, c)],
        HttpLimits::default(),
        None,
        Some(StreamEventKind::Rst { side: Side::Client }),
    );
    assert_eq!(summary(&events)[1], "none #1 rst client_closed=true");
}

#[test]
fn the_release_mark_is_the_earliest_open_request() {
    let mut stage = HttpStage::new(vec!["t".into()]);
    let mut stats = HttpCounters::default();
    let mut out = Vec::new();
    let mut push = |ts_us: i64, kind| {
        stage.push(
            StreamEvent {
                stream: 7,
                ts: CaptureTime::from_us(ts_us),
                frame: 0,
                kind,
            },
            &mut stats,
            &mut out,
        );
        stage.held_since_us()
    };
    let opened = StreamEventKind::Opened {
        client: "10.0.0.1:1".parse().unwrap(),
        server: "10.0.0.2:2".parse().unwrap(),
        saw_syn: true,
        input: 0,
    };
    assert_eq!(push(10, opened), None);
    let data = |b: Vec<u8>| StreamEventKind::Data {
        side: Side::Client,
        bytes: b,
    };
    assert_eq!(push(20, data(client_start())), None);
    let open = |id| {
        frame(
            kind::HEADERS,
            flag::END_HEADERS,
            id,
            &block(&[(":method", "POST"), (":path", "/")]),
        )
    };
    assert_eq!(push(30, data(open(1))), Some(30));
    assert_eq!(push(40, data(open(3))), Some(30));
    // Half a frame of stream 5 is a request under way too.
    let five = open(5);
    assert_eq!(push(45, data(five[..4].to_vec())), Some(30));
    // The rest of stream 5's frame, then stream 1's end.
    let mut rest = five[4..].to_vec();
    rest.extend(frame(kind::DATA, flag::END_STREAM, 1, b"{}"));
    assert_eq!(push(50, data(rest)), Some(40));
    assert_eq!(
        push(70, data(frame(kind::DATA, flag::END_STREAM, 3, b"{}"))),
        Some(45)
    );
    assert_eq!(
        push(80, data(frame(kind::DATA, flag::END_STREAM, 5, b"{}"))),
        None
    );
}

#[test]
fn a_non_h2_stream_that_starts_like_the_preface_is_still_http1() {
    // "PRI * HTTP/2.0" cut short and then something else: not HTTP/2.
    let c = b"PRI * HTTP/1.1\r\nHost: a\r\n\r\n".to_vec();
    let s = b"HTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n".to_vec();
    let (events, _) = run(&[(Side::Client, c), (Side::Server, s)]);
    let HttpEvent::Request(r) = &events[0] else {
        panic!()
    };
    assert_eq!(r.head.version, "1.1");
    assert_eq!(r.h2_stream, None);
}
