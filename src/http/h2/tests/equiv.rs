//! HTTP/2 and HTTP/1.1 give the same events for the same exchanges (apart from the
//! version and the stream id), and an `Upgrade: h2c` connection reads on as HTTP/2.

use super::{block, client_start, frame, joined, run, server_start, settings};
use crate::http::h2::frames::{flag, kind};
use crate::stream::Side;
use proptest::prelude::*;

#[derive(Debug, Clone)]
struct Exchange {
    post: bool,
    path: String,
    req_body: Vec<u8>,
    status: u16,
    resp_body: Vec<u8>,
}

fn exchange() -> impl Strategy<Value = Exchange> {
    (
        any::<bool>(),
        "/[a-z0-9]{0,12}",
        proptest::collection::vec(any::<u8>(), 0..300),
        prop::sample::select(vec![200u16, 202, 404, 503]),
        proptest::collection::vec(any::<u8>(), 0..300),
    )
        .prop_map(|(post, path, req_body, status, resp_body)| Exchange {
            post,
            path,
            req_body: if post { req_body } else { Vec::new() },
            status,
            resp_body,
        })
}

fn h1(x: &Exchange) -> (Vec<u8>, Vec<u8>) {
    let method = if x.post { "POST" } else { "GET" };
    let mut req = format!(
        "{method} {} HTTP/1.1\r\nHost: mcp.test:8080\r\ncontent-type: application/json\r\n",
        x.path
    );
    if x.post {
        req.push_str(&format!("content-length: {}\r\n", x.req_body.len()));
    }
    req.push_str("\r\n");
    let mut req = req.into_bytes();
    req.extend_from_slice(&x.req_body);
    let mut resp = format!(
        "HTTP/1.1 {} X\r\ncontent-length: {}\r\n\r\n",
        x.status,
        x.resp_body.len()
    )
    .into_bytes();
    resp.extend_from_slice(&x.resp_body);
    (req, resp)
}

fn h2(x: &Exchange, id: u32) -> (Vec<u8>, Vec<u8>) {
    let method = if x.post { "POST" } else { "GET" };
    let head = block(&[
        (":method", method),
        (":scheme", "http"),
        (":authority", "mcp.test:8080"),
        (":path", &x.path),
        ("content-type", "application/json"),
    ]);
    let mut req = frame(
        kind::HEADERS,
        flag::END_HEADERS | if x.post { 0 } else { flag::END_STREAM },
        id,
        &head,
    );
    if x.post {
        req.extend(frame(kind::DATA, flag::END_STREAM, id, &x.req_body));
    }
    let status = x.status.to_string();
    let length = x.resp_body.len().to_string();
    let head = block(&[(":status", &status), ("content-length", &length)]);
    let empty = x.resp_body.is_empty();
    let mut resp = frame(
        kind::HEADERS,
        flag::END_HEADERS | if empty { flag::END_STREAM } else { 0 },
        id,
        &head,
    );
    if !empty {
        resp.extend(frame(kind::DATA, flag::END_STREAM, id, &x.resp_body));
    }
    (req, resp)
}

/// Each delivery cut in two at `cut` (modulo its length).
fn split(deliveries: Vec<(Side, Vec<u8>)>, cut: usize) -> Vec<(Side, Vec<u8>)> {
    let mut out = Vec::new();
    for (side, bytes) in deliveries {
        let at = if bytes.len() > 1 {
            1 + cut % (bytes.len() - 1)
        } else {
            bytes.len()
        };
        let (a, b) = bytes.split_at(at);
        out.push((side, a.to_vec()));
        if !b.is_empty() {
            out.push((side, b.to_vec()));
        }
    }
    out
}

/// Event lines without the version and the stream id.
fn neutral(lines: Vec<String>) -> Vec<String> {
    lines
        .into_iter()
        .map(|l| {
            let l = l.replace("HTTP/1.1 host", "HTTP/- host");
            let l = l.replace("HTTP/2 host", "HTTP/- host");
            match l.find(" Some(") {
                Some(at) if l.starts_with("req ") => {
                    let end = l[at + 1..].find(')').map_or(l.len(), |e| at + 2 + e);
                    format!("{} None{}", &l[..at], &l[end..])
                }
                _ => l,
            }
        })
        .collect()
}

proptest! {
    #![proptest_config(crate::testing::proptest_cases(64))]

    #[test]
    fn the_same_exchanges_as_http1_and_http2_give_the_same_events(
        exchanges in proptest::collection::vec(exchange(), 1..5),
        cut in any::<usize>(),
    ) {
        let mut one = Vec::new();
        let mut two = vec![(Side::Client, client_start()), (Side::Server, server_start())];
        for (i, x) in exchanges.iter().enumerate() {
            let (req, resp) = h1(x);
            one.push((Side::Client, req));
            one.push((Side::Server, resp));
            let (req, resp) = h2(x, 2 * i as u32 + 1);
            two.push((Side::Client, req));
            two.push((Side::Server, resp));
        }
        let (events_one, _) = run(&split(one, cut));
        let (events_two, stats_two) = run(&split(two, cut));
        prop_assert_eq!(neutral(joined(&events_one)), neutral(joined(&events_two)));
        prop_assert_eq!(stats_two.http_exchanges, exchanges.len() as u64);
        prop_assert!(stats_two.anomalies.is_empty(), "{:?}", stats_two.anomalies);
    }
}

#[test]
fn neutral_lines_drop_only_version_and_stream() {
    let lines = neutral(vec![
        r#"req #1 Some(3) GET / HTTP/2 host=Some("a") body="" complete=true []"#.into(),
        "head #1 200".into(),
    ]);
    assert_eq!(
        lines,
        vec![
            r#"req #1 None GET / HTTP/- host=Some("a") body="" complete=true []"#,
            "head #1 200"
        ]
    );
}

#[test]
fn an_h2c_upgrade_reads_stream_1_as_the_upgraded_requests_response() {
    let upgrade = b"GET /robots.txt HTTP/1.1\r\nHost: a.test\r\nConnection: Upgrade, HTTP2-Settings\r\nUpgrade: h2c\r\nHTTP2-Settings: AAMAAABkAARAAAAAAAIAAAAA\r\n\r\n".to_vec();
    let mut switched =
        b"HTTP/1.1 101 Switching Protocols\r\nConnection: Upgrade\r\nUpgrade: h2c\r\n\r\n".to_vec();
    switched.extend(settings());
    switched.extend(frame(
        kind::HEADERS,
        flag::END_HEADERS,
        1,
        &block(&[(":status", "200")]),
    ));
    switched.extend(frame(kind::DATA, flag::END_STREAM, 1, b"User-agent: *"));
    let mut client = client_start();
    client.extend(frame(
        kind::HEADERS,
        flag::END_HEADERS | flag::END_STREAM,
        3,
        &block(&[
            (":method", "GET"),
            (":authority", "a.test"),
            (":path", "/humans.txt"),
        ]),
    ));
    let mut later = frame(kind::SETTINGS, flag::ACK, 0, &[]);
    later.extend(frame(
        kind::HEADERS,
        flag::END_HEADERS | flag::END_STREAM,
        3,
        &block(&[(":status", "404")]),
    ));
    let (events, stats) = run(&[
        (Side::Client, upgrade),
        (Side::Server, switched),
        (Side::Client, client),
        (Side::Server, later),
    ]);
    assert_eq!(
        joined(&events),
        vec![
            r#"req #1 None GET /robots.txt HTTP/1.1 host=Some("a.test") body="" complete=true []"#,
            "head #1 200",
            r#"body #1 "User-agent: *""#,
            "end #1 complete client_closed=false []",
            r#"req #2 Some(3) GET /humans.txt HTTP/2 host=Some("a.test") body="" complete=true []"#,
            "head #2 404",
            "end #2 complete client_closed=false []",
        ]
    );
    assert!(stats.anomalies.is_empty(), "{:?}", stats.anomalies);
    assert_eq!(stats.http_exchanges, 2);
}
