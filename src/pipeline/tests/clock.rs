//! A live source's quiet moments move the clock (issue 33): with no packet to carry the time,
//! a finished call's row still leaves about a second after it ended, and an unanswered call
//! becomes `NO_RESPONSE` once its connection has idled out, both before the capture ends.

use super::Conn;
use crate::capture::{CaptureCounters, CaptureSecrets, FrameRef, FrameSource, InputInfo, Next};
use crate::pipeline::{Config, FnSink, analyze_source_into};
use std::collections::VecDeque;
use std::sync::Arc;
use std::sync::atomic::{AtomicI64, Ordering};

/// Frames at given times, then quiet ticks: a live interface, scripted.
struct Scripted {
    steps: VecDeque<(i64, Option<Vec<u8>>)>,
    frame: Vec<u8>,
    index: u64,
    /// The time of the step handed out last, for the sink to read.
    clock: Arc<AtomicI64>,
}

impl FrameSource for Scripted {
    fn next(&mut self, stats: &mut CaptureCounters) -> Next<'_> {
        let Some((ts_ns, data)) = self.steps.pop_front() else {
            return Next::End;
        };
        self.clock.store(ts_ns, Ordering::SeqCst);
        match data {
            None => Next::Quiet { now_ns: ts_ns },
            Some(bytes) => {
                stats.packets_total += 1;
                self.index += 1;
                self.frame = bytes;
                Next::Frame(FrameRef {
                    index: self.index,
                    input: 0,
                    ts_ns,
                    link_type: 1,
                    data: &self.frame,
                    orig_len: u32::try_from(self.frame.len()).unwrap(),
                })
            }
        }
    }

    fn secrets(&self) -> CaptureSecrets {
        CaptureSecrets::default()
    }

    fn bytes_read(&self) -> u64 {
        0
    }

    fn infos(&self) -> Vec<InputInfo> {
        Vec::new()
    }
}

const MS: i64 = 1_000_000;
const T0: i64 = 1_700_000_000_000 * MS;

#[test]
fn quiet_ticks_release_rows_and_time_out_unanswered_calls() {
    let mut conn = Conn::open(1);
    conn.post(1, "tools/call", 5);
    conn.json_response(1, 5, None);
    conn.post(2, "tools/call", 5);
    // Every packet 1 ms apart from T0; then quiet ticks every 100 ms for 20 s.
    let mut steps: VecDeque<(i64, Option<Vec<u8>>)> = conn
        .packets
        .into_iter()
        .enumerate()
        .map(|(i, p)| (T0 + MS * i64::try_from(i).unwrap(), Some(p)))
        .collect();
    let last_packet = steps.back().unwrap().0;
    for tick in 1..=200 {
        steps.push_back((last_packet + 100 * MS * tick, None));
    }
    let end = steps.back().unwrap().0;
    let clock = Arc::new(AtomicI64::new(0));
    let source = Scripted {
        steps,
        frame: Vec::new(),
        index: 0,
        clock: Arc::clone(&clock),
    };
    let mut cfg = Config::default();
    cfg.flow.idle_timeout_ns = 5_000 * MS;
    cfg.mcp.hold_limit_us = 1_000_000;
    let mut arrivals = Vec::new();
    let on_row = |ex: Box<crate::mcp::Exchange>| {
        arrivals.push((
            ex.jsonrpc_id.clone(),
            ex.outcome.name(),
            clock.load(Ordering::SeqCst),
        ));
        Ok::<(), std::io::Error>(())
    };
    analyze_source_into(source, "scripted", &cfg, &mut FnSink(on_row, |_| Ok(()))).unwrap();
    let [(id1, outcome1, at1), (id2, outcome2, at2)] = arrivals.as_slice() else {
        panic!("two rows expected: {arrivals:?}");
    };
    assert_eq!((id1.as_deref(), *outcome1), (Some("1"), "TOOL_SUCCESS"));
    assert_eq!((id2.as_deref(), *outcome2), (Some("2"), "NO_RESPONSE"));
    // The answered call: within about a second of the last packet, long before the end.
    assert!(*at1 - last_packet <= 1_200 * MS, "{arrivals:?}");
    // The unanswered one: once its connection idled out (5 s, swept at most 1 s late).
    let idle = *at2 - last_packet;
    assert!((5_000 * MS..=7_200 * MS).contains(&idle), "{arrivals:?}");
    assert!(*at2 < end, "before the capture ended");
}
