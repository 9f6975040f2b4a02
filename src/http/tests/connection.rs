//! The HTTP stage's part of the connection record and the TLS facts of the exchanges.
#![allow(clippy::unwrap_used, clippy::indexing_slicing)]

use crate::http::HttpCounters;
use crate::http::{HttpEvent, HttpStage};
use crate::stream::{
    CloseReason, ConnectionRecord, Side, StreamEvent, StreamEventKind, StreamStage,
};
use crate::timestamp::CaptureTime;

fn at(ms: i64, kind: StreamEventKind) -> StreamEvent {
    StreamEvent {
        stream: 3,
        ts: CaptureTime::from_us(ms * 1000),
        frame: 0,
        kind,
    }
}

fn data(side: Side, text: &str) -> StreamEventKind {
    StreamEventKind::Data {
        side,
        bytes: text.as_bytes().to_vec(),
    }
}

/// One connection through a fresh stage: its events (without `Opened`), then `Closed` with
/// a flow record of 100 client and 7 server bytes.
fn run(events: Vec<StreamEventKind>) -> Vec<HttpEvent> {
    let (client, server) = (
        "10.0.0.1:40000".parse().unwrap(),
        "10.0.0.2:443".parse().unwrap(),
    );
    let mut stage = HttpStage::new(vec!["a.pcap".into(), "b.pcap".into()]);
    let mut stats = HttpCounters::default();
    let mut out = Vec::new();
    let opened = StreamEventKind::Opened {
        client,
        server,
        saw_syn: true,
        input: 1,
    };
    stage.push(at(1, opened), &mut stats, &mut out);
    for (ms, kind) in (2..).zip(events) {
        stage.push(at(ms, kind), &mut stats, &mut out);
    }
    let mut record = ConnectionRecord::new(3, 1, client, server);
    (record.flow.client_bytes, record.flow.server_bytes) = (100, 7);
    let closed = StreamEventKind::Closed {
        reason: CloseReason::Finished,
        record: Box::new(record),
    };
    stage.push(at(99, closed), &mut stats, &mut out);
    stage.finish(&mut stats, &mut out);
    out
}

fn last_record(out: &[HttpEvent]) -> &ConnectionRecord {
    match out.last() {
        Some(HttpEvent::ConnectionClosed(r)) => r,
        other => panic!("last event {other:?}"),
    }
}

#[test]
fn the_record_comes_last_with_the_version_and_every_exchange_that_ended() {
    let out = run(vec![
        data(
            Side::Client,
            "GET /a HTTP/1.0\r\n\r\nGET /b HTTP/1.1\r\n\r\n",
        ),
        data(Side::Server, "HTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n"),
    ]);
    // The second request never got its answer: its `NoResponse` still precedes the record.
    let ends = out
        .iter()
        .filter(|e| {
            matches!(
                e,
                HttpEvent::ResponseEnd { .. } | HttpEvent::NoResponse { .. }
            )
        })
        .count();
    assert_eq!(ends, 2);
    let record = last_record(&out);
    assert_eq!(record.http.version.map(|v| v.as_str()), Some("HTTP/1.0"));
    assert_eq!(record.http.exchanges, 2);
    assert_eq!(record.flow.capture, "b.pcap");
    assert_eq!(
        (record.flow.client_bytes, record.flow.server_bytes),
        (100, 7)
    );
    let closed = out
        .iter()
        .filter(|e| matches!(e, HttpEvent::ConnectionClosed(_)))
        .count();
    assert_eq!(closed, 1);
}

#[test]
fn a_connection_without_http_has_no_version_and_no_exchanges() {
    let out = run(vec![data(
        Side::Client,
        "\x16\x03\x01 not http at all, ever\r\n\r\n",
    )]);
    assert_eq!(out.len(), 1);
    let record = last_record(&out);
    assert_eq!((record.http.version, record.http.exchanges), (None, 0));
    assert_eq!(record.flow.capture, "b.pcap");
}

#[test]
fn sides_swapped_by_http_are_swapped_in_the_record() {
    // The flow took the server for the client: the request comes from `Server`.
    let out = run(vec![
        data(Side::Server, "GET / HTTP/1.1\r\n\r\n"),
        data(Side::Client, "HTTP/1.1 204 No Content\r\n\r\n"),
    ]);
    let record = last_record(&out);
    assert_eq!(record.flow.client.to_string(), "10.0.0.2:443");
    assert_eq!(record.flow.server.to_string(), "10.0.0.1:40000");
    assert_eq!(
        (record.flow.client_bytes, record.flow.server_bytes),
        (7, 100)
    );
    assert_eq!(record.http.exchanges, 1);
}

#[test]
fn a_decrypted_connection_gives_its_exchanges_the_tls_version_and_server_name() {
    let out = run(vec![
        StreamEventKind::Decrypted {
            version: Some("TLS 1.3".into()),
            sni: Some("mcp.example.com".into()),
        },
        data(
            Side::Client,
            "POST /mcp HTTP/1.1\r\nContent-Length: 0\r\n\r\n",
        ),
    ]);
    let Some(HttpEvent::Request(req)) = out.first() else {
        panic!("{out:?}");
    };
    assert_eq!(req.xref.conn.tls_version.as_deref(), Some("TLS 1.3"));
    assert_eq!(req.xref.conn.tls_sni.as_deref(), Some("mcp.example.com"));
    assert_eq!(req.h2_stream, None);
    // Plaintext: no TLS facts.
    let plain = run(vec![data(
        Side::Client,
        "POST /mcp HTTP/1.1\r\nContent-Length: 0\r\n\r\n",
    )]);
    let Some(HttpEvent::Request(req)) = plain.first() else {
        panic!("{plain:?}");
    };
    assert_eq!(
        (&req.xref.conn.tls_version, &req.xref.conn.tls_sni),
        (&None, &None)
    );
}
