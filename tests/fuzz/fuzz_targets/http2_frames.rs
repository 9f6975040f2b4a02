//! HTTP/2 stage (frames, HPACK, streams, limits): the conversations of
//! `http_conversation`, with the client preface sent first on both streams, so every
//! delivery after it is read as HTTP/2 frames from arbitrary bytes.
#![no_main]
use libfuzzer_sys::fuzz_target;
use mcp_trace::http::{HttpCounters, HttpEvent, HttpStage};
use mcp_trace::stream::{Side, StreamEvent, StreamEventKind, StreamStage};
use std::collections::HashMap;

const PREFACE: &[u8] = b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n";

fuzz_target!(|data: &[u8]| {
    let mut stage = HttpStage::new(vec!["fuzz".into()]);
    let mut stats = HttpCounters::default();
    let mut out = Vec::new();
    for ev in mcp_trace_fuzz::stream_events(data) {
        let opened = matches!(ev.kind, StreamEventKind::Opened { .. });
        let (stream, ts, frame) = (ev.stream, ev.ts, ev.frame);
        stage.push(ev, &mut stats, &mut out);
        if opened {
            let preface = StreamEvent {
                stream,
                ts,
                frame,
                kind: StreamEventKind::Data {
                    side: Side::Client,
                    bytes: PREFACE.to_vec(),
                },
            };
            stage.push(preface, &mut stats, &mut out);
        }
    }
    stage.finish(&mut stats, &mut out);
    // Every request ends exactly once; every header block is parsed or skipped.
    let mut ends: HashMap<(u64, u32), i32> = HashMap::new();
    for ev in &out {
        match ev {
            HttpEvent::Request(r) => {
                assert!(
                    ends.insert((r.xref.conn.conn, r.xref.depth), 0).is_none(),
                    "request repeated"
                )
            }
            HttpEvent::ResponseEnd { xref, .. } | HttpEvent::NoResponse { xref, .. } => {
                *ends.entry((xref.conn.conn, xref.depth)).or_insert(0) += 1
            }
            _ => {}
        }
    }
    for (key, n) in ends {
        assert_eq!(n, 1, "exchange {key:?} ended {n} times");
    }
    let skipped: u64 = stats.http_messages_skipped.total();
    assert_eq!(stats.http_messages, stats.http_messages_parsed + skipped);
});
