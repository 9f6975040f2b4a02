//! HTTP stage (head parsing, framing, chunked, content decoding, pairing):
//! a conversation of client and server deliveries, gaps, FIN and RST.
#![no_main]
use libfuzzer_sys::fuzz_target;
use mcp_trace::http::{HttpCounters, HttpEvent, HttpStage};
use mcp_trace::stream::StreamStage;
use std::collections::HashMap;

fuzz_target!(|data: &[u8]| {
    let mut stage = HttpStage::new(vec!["fuzz".into()]);
    let mut stats = HttpCounters::default();
    let mut out = Vec::new();
    for ev in mcp_trace_fuzz::stream_events(data) {
        stage.push(ev, &mut stats, &mut out);
    }
    stage.finish(&mut stats, &mut out);
    // Contract (http/mod.rs): every request gets exactly one ResponseEnd or NoResponse.
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
});
