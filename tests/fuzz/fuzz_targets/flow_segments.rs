//! TCP reassembly: segments of up to 16 connections, any seq/flags/times,
//! with small limits so eviction and buffer limits are reached.
#![no_main]
use libfuzzer_sys::fuzz_target;
use mcp_trace::flow::FlowCounters;
use mcp_trace::flow::{FlowLimits, FlowTable};
use mcp_trace::stream::StreamEventKind;
use std::collections::HashMap;

fuzz_target!(|data: &[u8]| {
    let limits = FlowLimits {
        max_open_flows: 4,
        max_buffered_bytes_per_direction: 4096,
        idle_timeout_ns: 5_000_000_000,
    };
    let mut table = FlowTable::new(limits);
    let mut stats = FlowCounters::default();
    let mut events = Vec::new();
    for seg in mcp_trace_fuzz::segments(data) {
        table.push(seg, &mut stats, &mut events);
        assert!(table.open_flows() <= limits.max_open_flows);
        assert!(table.largest_direction_buffer() <= limits.max_buffered_bytes_per_direction);
    }
    table.finish(&mut stats, &mut events);
    assert_eq!(table.open_flows(), 0);
    // Each stream: Opened first, Closed last, nothing after; the counters
    // equal the bytes and gaps delivered.
    let mut open: HashMap<u64, bool> = HashMap::new();
    let (mut delivered, mut gaps) = (0u64, 0u64);
    for ev in &events {
        match &ev.kind {
            StreamEventKind::Opened { .. } => {
                assert!(
                    open.insert(ev.stream, true).is_none(),
                    "stream {} opened twice",
                    ev.stream
                )
            }
            StreamEventKind::Closed { .. } => {
                assert_eq!(
                    open.insert(ev.stream, false),
                    Some(true),
                    "close of stream {}",
                    ev.stream
                )
            }
            other => {
                assert_eq!(
                    open.get(&ev.stream),
                    Some(&true),
                    "{other:?} outside stream {}",
                    ev.stream
                );
                match other {
                    StreamEventKind::Data { bytes, .. } => delivered += bytes.len() as u64,
                    StreamEventKind::Gap { len, .. } => gaps += len.bytes().unwrap_or_default(),
                    _ => {}
                }
            }
        }
    }
    assert!(open.values().all(|o| !o), "stream left open after finish");
    assert_eq!(open.len() as u64, stats.tcp_streams);
    assert_eq!(delivered, stats.tcp_payload_bytes);
    assert_eq!(gaps, stats.gap_bytes);
});
