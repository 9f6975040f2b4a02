//! Hostile HTTP/2: each attack finishes with its anomaly named and the connection's state
//! bounded (checked on the connection itself, not only on its output).

use super::{block, client_start, enc, frame, request, server_start};
use crate::http::HttpCounters;
use crate::http::h2::conn::{Conn, Dir};
use crate::http::h2::frames::{flag, kind};
use crate::http::reader::ConnReader;
use crate::http::{BodyEnd, ConnInfo, HttpEvent, HttpLimits};
use crate::stream::GapLen;
use std::sync::Arc;

fn conn(limits: HttpLimits) -> Conn {
    let info = Arc::new(ConnInfo::for_tests());
    Conn::new(info, limits)
}

struct Run {
    conn: Conn,
    stats: HttpCounters,
    out: Vec<HttpEvent>,
    ts: i64,
}

impl Run {
    fn new(limits: HttpLimits) -> Run {
        let mut r = Run {
            conn: conn(limits),
            stats: HttpCounters::default(),
            out: Vec::new(),
            ts: 0,
        };
        r.client(&client_start());
        r.server(&server_start());
        r
    }

    fn send(&mut self, dir: Dir, bytes: &[u8]) {
        self.conn
            .on_data(dir, bytes, self.ts, 0, &mut self.stats, &mut self.out);
    }

    fn client(&mut self, bytes: &[u8]) {
        self.send(Dir::Req, bytes);
    }

    fn server(&mut self, bytes: &[u8]) {
        self.send(Dir::Resp, bytes);
    }

    fn anomaly(&self, name: &str) -> u64 {
        self.stats.anomalies.get(name).copied().unwrap_or_default()
    }

    fn requests(&self) -> usize {
        self.out
            .iter()
            .filter(|e| matches!(e, HttpEvent::Request(_)))
            .count()
    }

    fn close(&mut self) {
        self.conn
            .on_close(BodyEnd::CaptureEnd, self.ts, &mut self.stats, &mut self.out);
    }
}

fn open_headers(id: u32) -> Vec<u8> {
    frame(
        kind::HEADERS,
        flag::END_HEADERS,
        id,
        &block(&[(":method", "POST"), (":path", "/mcp")]),
    )
}

#[test]
fn streams_past_the_limit_are_not_kept() {
    let limits = HttpLimits {
        h2_streams: 100,
        ..HttpLimits::default()
    };
    let mut r = Run::new(limits);
    for i in 0..5_000u32 {
        r.client(&open_headers(2 * i + 1));
        assert!(r.conn.streams.len() <= 100);
    }
    assert_eq!(r.anomaly("h2.stream_limit"), 4_900);
    assert_eq!(r.conn.unfinished.len(), 100);
    r.close();
    // The kept streams end as cut requests, each with its one end.
    assert_eq!(r.requests(), 100);
    assert_eq!(r.stats.http_exchanges, 100);
    assert!(r.conn.streams.is_empty());
    assert_eq!(
        r.stats.http_messages,
        r.stats.http_messages_parsed + r.stats.http_messages_skipped.total()
    );
}

#[test]
fn a_continuation_flood_stops_at_the_header_limit() {
    let mut r = Run::new(HttpLimits::default());
    let fragment = vec![0u8; 1024];
    r.client(&frame(kind::HEADERS, 0, 1, &fragment));
    for _ in 0..10_000 {
        r.client(&frame(kind::CONTINUATION, 0, 1, &fragment));
        let [req, _] = &r.conn.dirs;
        assert!(
            req.block
                .as_ref()
                .is_none_or(|b| b.bytes.len() <= 64 * 1024)
        );
    }
    assert_eq!(r.anomaly("h2.continuation_flood"), 1);
    assert_eq!(r.anomaly("h2.hpack_state_lost"), 1);
    // The rest of the flood was skipped, counted.
    assert!(r.stats.http_bytes_skipped > 9_000 * 1024);
    assert_eq!(r.requests(), 0);
}

#[test]
fn rapid_reset_keeps_no_state_and_is_named() {
    let mut r = Run::new(HttpLimits::default());
    for i in 0..20_000u32 {
        let id = 2 * i + 1;
        let mut b = frame(
            kind::HEADERS,
            flag::END_HEADERS | flag::END_STREAM,
            id,
            &block(&[(":method", "GET"), (":path", "/")]),
        );
        b.extend(frame(kind::RST_STREAM, 0, id, &8u32.to_be_bytes()));
        r.ts += 10; // 20,000 resets in 0.2 s
        r.client(&b);
        assert!(r.conn.streams.is_empty());
    }
    assert_eq!(r.anomaly("h2.rapid_reset"), 1);
    assert_eq!(r.anomaly("h2.rst_stream_cancel"), 20_000);
    assert!(r.conn.unfinished.is_empty());
    assert_eq!(r.stats.http_exchanges, 20_000);
    // The same resets spread over time are not an attack.
    let mut r = Run::new(HttpLimits::default());
    for i in 0..1_000u32 {
        let id = 2 * i + 1;
        let mut b = open_headers(id);
        b.extend(frame(kind::RST_STREAM, 0, id, &8u32.to_be_bytes()));
        r.ts += 100_000;
        r.client(&b);
    }
    assert_eq!(r.anomaly("h2.rapid_reset"), 0);
}

#[test]
fn settings_and_ping_floods_are_named_and_bounded() {
    let mut r = Run::new(HttpLimits::default());
    for _ in 0..10_000 {
        r.ts += 1;
        // A table size the flood would otherwise queue for an ACK that never comes.
        r.client(&frame(kind::SETTINGS, 0, 0, &[0, 1, 0, 0, 0x10, 0]));
        r.client(&frame(kind::PING, 0, 0, b"12345678"));
        let [req, _] = &r.conn.dirs;
        assert!(req.unacked_table_sizes.len() <= 16);
    }
    assert_eq!(r.anomaly("h2.settings_flood"), 1);
    assert_eq!(r.anomaly("h2.ping_flood"), 1);
    // The connection still works.
    r.client(&request(1, "GET", "/after", None));
    assert_eq!(r.requests(), 1);
}

#[test]
fn a_frame_over_the_max_frame_size_is_named_and_read() {
    let mut r = Run::new(HttpLimits::default());
    r.client(&open_headers(1));
    let body = vec![b'x'; 70_000];
    r.client(&frame(kind::DATA, flag::END_STREAM, 1, &body));
    assert_eq!(r.anomaly("h2.frame_too_large"), 1);
    let Some(HttpEvent::Request(req)) = r.out.first() else {
        panic!("{:?}", r.out)
    };
    assert_eq!(req.body.len(), 70_000);
    // A peer that allowed larger frames: no anomaly.
    let mut r = Run::new(HttpLimits::default());
    r.server(&frame(kind::SETTINGS, 0, 0, &[0, 5, 0, 2, 0, 0]));
    r.client(&open_headers(1));
    r.client(&frame(kind::DATA, flag::END_STREAM, 1, &body));
    assert_eq!(r.anomaly("h2.frame_too_large"), 0);
}

/// Literal with incremental indexing, new name (RFC 7541 §6.2.1).
fn indexed_literal(out: &mut Vec<u8>, name: &[u8], value: &[u8]) {
    out.push(0x40);
    enc::int(out, 7, 0, name.len());
    out.extend_from_slice(name);
    enc::int(out, 7, 0, value.len());
    out.extend_from_slice(value);
}

#[test]
fn a_header_list_that_repeats_a_huge_entry_is_dropped_and_the_table_stays_in_step() {
    let mut r = Run::new(HttpLimits::default());
    // One 4000-byte entry referenced 2000 times: 8 MB of decoded headers from 6 KB.
    let mut b = Vec::new();
    enc::idx(&mut b, 3);
    enc::lit(&mut b, b":path", b"/bomb");
    indexed_literal(&mut b, b"x-big", &[b'v'; 4000]);
    for _ in 0..2000 {
        enc::idx(&mut b, 62);
    }
    r.client(&frame(
        kind::HEADERS,
        flag::END_HEADERS | flag::END_STREAM,
        1,
        &b,
    ));
    assert_eq!(r.anomaly("h2.hpack_list_too_large"), 1);
    assert_eq!(r.requests(), 0);
    assert!(r.conn.streams.is_empty());
    // The next block refers to the entry the bomb added: still decoded right.
    let mut b = Vec::new();
    enc::idx(&mut b, 2);
    enc::lit(&mut b, b":path", b"/next");
    enc::idx(&mut b, 62);
    r.client(&frame(
        kind::HEADERS,
        flag::END_HEADERS | flag::END_STREAM,
        3,
        &b,
    ));
    let Some(HttpEvent::Request(req)) = r.out.first() else {
        panic!("{:?}", r.out)
    };
    assert_eq!(&*req.head.uri, "/next");
    assert_eq!(req.head.headers.get("x-big").map(str::len), Some(4000));
    assert_eq!(r.anomaly("h2.hpack_state_lost"), 0);
}

#[test]
fn push_promise_is_named_and_its_block_keeps_the_table_in_step() {
    let mut r = Run::new(HttpLimits::default());
    r.client(&request(1, "GET", "/", None));
    let mut promised = 2u32.to_be_bytes().to_vec();
    let mut b = Vec::new();
    enc::idx(&mut b, 2);
    indexed_literal(&mut b, b":path", b"/pushed.css");
    promised.extend(b);
    r.server(&frame(kind::PUSH_PROMISE, flag::END_HEADERS, 1, &promised));
    // The response's :status refers to nothing new, but a header refers to the entry the
    // PUSH_PROMISE added (index 62).
    let mut b = Vec::new();
    enc::idx(&mut b, 8);
    enc::idx(&mut b, 62);
    r.server(&frame(
        kind::HEADERS,
        flag::END_HEADERS | flag::END_STREAM,
        1,
        &b,
    ));
    assert_eq!(r.anomaly("h2.push_promise"), 1);
    let head = r.out.iter().find_map(|e| match e {
        HttpEvent::ResponseHead { head, .. } => Some(head),
        _ => None,
    });
    assert_eq!(head.map(|h| h.status), Some(200));
    assert!(r.conn.streams.is_empty());
    // The pushed response itself is not an exchange.
    r.server(&frame(
        kind::HEADERS,
        flag::END_HEADERS,
        2,
        &block(&[(":status", "200")]),
    ));
    r.server(&frame(kind::DATA, flag::END_STREAM, 2, b"body {}"));
    r.close();
    assert_eq!(r.stats.http_exchanges, 1);
    assert!(r.conn.streams.is_empty());
}

#[test]
fn a_gap_mid_frame_never_decodes_what_follows() {
    let mut r = Run::new(HttpLimits::default());
    let f = open_headers(1);
    r.client(&f[..5]);
    r.conn.on_gap(
        Dir::Req,
        GapLen::Bytes(20),
        Some(0),
        &mut r.stats,
        &mut r.out,
    );
    r.client(&request(3, "GET", "/never", None));
    assert_eq!(r.anomaly("h2.hpack_state_lost"), 1);
    assert_eq!(r.requests(), 0);
    assert!(r.stats.http_bytes_skipped > 0);
}

#[test]
fn garbage_after_the_preface_never_panics_and_state_stays_bounded() {
    // Arbitrary frames from a fixed pseudo-random sequence.
    let mut r = Run::new(HttpLimits::default());
    let mut x = 0x2545_f491_4f6c_dd1du64;
    let mut bytes = Vec::new();
    for _ in 0..200_000 {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        bytes.push(x as u8);
    }
    for chunk in bytes.chunks(1500) {
        r.client(chunk);
        r.server(chunk);
        assert!(r.conn.streams.len() <= crate::http::H2_STREAM_LIMIT);
    }
    r.close();
    assert!(r.conn.streams.is_empty());
}

#[test]
fn concurrent_request_bodies_share_one_body_limit() {
    let limits = HttpLimits {
        body_bytes: 64 * 1024,
        ..HttpLimits::default()
    };
    let mut r = Run::new(limits);
    for id in (1..=39u32).step_by(2) {
        r.client(&open_headers(id));
    }
    let piece = vec![b'a'; 10_000];
    for _ in 0..3 {
        for id in (1..=39u32).step_by(2) {
            r.client(&frame(kind::DATA, 0, id, &piece));
            assert!(r.conn.kept_request_bytes <= 64 * 1024);
        }
    }
    for id in (1..=39u32).step_by(2) {
        r.client(&frame(kind::DATA, flag::END_STREAM, id, b""));
    }
    let kept: usize = r
        .out
        .iter()
        .filter_map(|e| match e {
            HttpEvent::Request(q) => Some(q.body.len()),
            _ => None,
        })
        .sum();
    assert_eq!(r.requests(), 20);
    assert_eq!(kept, 64 * 1024);
    assert!(r.anomaly("http.request_body_limit") >= 1);
    assert_eq!(r.conn.kept_request_bytes, 0);
    // Once they are handed on, the budget is free again.
    r.client(&open_headers(41));
    r.client(&frame(kind::DATA, flag::END_STREAM, 41, &piece));
    let Some(HttpEvent::Request(last)) = r.out.last() else {
        panic!()
    };
    assert_eq!(last.body.len(), 10_000);
}

#[test]
fn an_advertised_header_table_is_kept_only_up_to_the_limit() {
    let mut r = Run::new(HttpLimits::default());
    // The client advertises 4 GiB; the server acknowledges.
    r.client(&frame(
        kind::SETTINGS,
        0,
        0,
        &[0, 1, 0xff, 0xff, 0xff, 0xff],
    ));
    r.server(&frame(kind::SETTINGS, flag::ACK, 0, &[]));
    assert_eq!(r.anomaly("h2.header_table_limit"), 1);
    // A size update to 1 MiB is then refused, named, and nothing is decoded wrong.
    r.client(&request(1, "GET", "/", None));
    let mut b = Vec::new();
    enc::int(&mut b, 5, 0x20, 1 << 20);
    enc::idx(&mut b, 8);
    r.server(&frame(
        kind::HEADERS,
        flag::END_HEADERS | flag::END_STREAM,
        1,
        &b,
    ));
    assert_eq!(r.anomaly("h2.hpack_size_update_too_large"), 1);
    assert_eq!(r.anomaly("h2.hpack_state_lost"), 1);
    // Within the limit it is honoured.
    let mut r = Run::new(HttpLimits::default());
    r.client(&frame(kind::SETTINGS, 0, 0, &[0, 1, 0, 1, 0, 0]));
    r.server(&frame(kind::SETTINGS, flag::ACK, 0, &[]));
    r.client(&request(1, "GET", "/", None));
    let mut b = Vec::new();
    enc::int(&mut b, 5, 0x20, 65_536);
    enc::idx(&mut b, 8);
    r.server(&frame(
        kind::HEADERS,
        flag::END_HEADERS | flag::END_STREAM,
        1,
        &b,
    ));
    assert_eq!(r.anomaly("h2.header_table_limit"), 0);
    assert_eq!(r.anomaly("h2.hpack_state_lost"), 0);
    assert_eq!(r.stats.http_exchanges, 1);
}
