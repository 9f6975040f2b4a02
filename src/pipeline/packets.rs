//! The packet loop every thread count shares: capture read, decode and TCP reassembly,
//! handing on the stream events of each frame ([`read_streams`]), and what the stream
//! stages hand the sink ([`Item`]). `pipeline.rs` runs it with the stream chain on the
//! caller's thread, `parallel/` on its reader thread.

use crate::anomaly::Anomaly;
use crate::capture::{FrameSource, InputInfo, Next};
use crate::counters::Merge;
use crate::decode::{Decoded, Decoder};
use crate::flow::{FlowLimits, FlowTable};
use crate::http::HttpCounters;
use crate::http::HttpEvent;
use crate::mcp::{Prepared, Preparer};
use crate::report::RunStats;
use crate::stream::StreamEvent;
use crate::tls::TlsCounters;

/// An HTTP event and, for `analyze`, the body work on it that needs no analyzer state, done
/// on the thread that produced the event (see [`crate::mcp::Preparer`]).
#[derive(Debug)]
pub struct Event {
    pub http: HttpEvent,
    pub prepared: Option<Prepared>,
}

impl Event {
    pub(super) fn new(http: HttpEvent, preparer: Option<&mut Preparer>) -> Event {
        let prepared = preparer.and_then(|p| p.prepare(&http));
        Event { http, prepared }
    }
}

/// What the HTTP stages hand on, in one-thread order.
// Items move once, from the HTTP stage to the sink: boxing every event would cost an
// allocation per event for the rare marks' sake.
#[allow(clippy::large_enum_variant)]
#[derive(Debug)]
pub enum Item {
    Event(Event),
    /// Every HTTP request handed on after this started at or after `unfinished_from_us`
    /// (the earliest request under way in the HTTP stages; `None`: none is), or at or after
    /// the packet that completes it ([`crate::mcp::Analyzer::set_release_mark`]). Sent every
    /// round of packets while the inputs are read in time order.
    Mark {
        unfinished_from_us: Option<i64>,
    },
    /// A live capture is quiet and capture time is now `now_us`: rows waiting only for time
    /// to pass (the reorder slack, a resumed stream's hold) may go.
    Clock {
        now_us: i64,
    },
}

/// The counters of a chain of stream stages, added into the run's totals at its end.
pub(super) trait ChainCounters: Default {
    fn add_to(&self, stats: &mut RunStats);
}

impl ChainCounters for (TlsCounters, HttpCounters) {
    fn add_to(&self, stats: &mut RunStats) {
        stats.tls.merge(&self.0);
        stats.http.merge(&self.1);
    }
}

/// A chain of the HTTP stage alone (no TLS stage before it).
impl ChainCounters for HttpCounters {
    fn add_to(&self, stats: &mut RunStats) {
        stats.http.merge(self);
    }
}

/// Takes (drains) the stream events of one frame, or of a quiet moment of a live capture
/// (`Some(now_ns)`: the flow table's clock moved to it).
pub(super) type StreamSink<'a, X> =
    dyn FnMut(&mut Vec<StreamEvent>, &mut RunStats, Option<i64>) -> Result<(), X> + 'a;

/// Where the packet stages ended.
pub(super) struct ReadTotals {
    pub inputs: Vec<InputInfo>,
    pub bytes_read: u64,
}

/// Capture read (from any [`FrameSource`]), decode and TCP reassembly: `emit` takes (drains) the stream events of each
/// frame, then those of the end of input, in order.
pub(super) fn read_streams<X, F: FrameSource>(
    mut source: F,
    flow: FlowLimits,
    progress: Option<&indicatif::ProgressBar>,
    stats: &mut RunStats,
    emit: &mut StreamSink<'_, X>,
) -> Result<ReadTotals, X> {
    let mut decoder = Decoder::new();
    let mut flows = FlowTable::new(flow);
    let mut stream_events: Vec<StreamEvent> = Vec::new();
    let mut frames_since_tick = 0u32;
    let mut latest_ts_ns = i64::MIN;

    loop {
        let frame = match source.next(&mut stats.capture) {
            Next::Frame(frame) => frame,
            Next::Quiet { now_ns } => {
                flows.advance_clock(now_ns, &mut stats.flow, &mut stream_events);
                emit(&mut stream_events, stats, Some(now_ns))?;
                continue;
            }
            Next::End => break,
        };
        // Inputs are merged by time, so a step back comes from within one file
        // (clock changes, reordered writes): latencies across it are unreliable.
        if frame.ts_ns < latest_ts_ns {
            stats.capture.anomaly(Anomaly::CaptureTimeWentBackwards);
        }
        latest_ts_ns = latest_ts_ns.max(frame.ts_ns);
        if frame.is_truncated() {
            stats.capture.packets_truncated += 1;
        }
        match decoder.decode_ref(&frame) {
            Decoded::Segment(segment) => {
                stats.capture.packets_decoded += 1;
                flows.push(segment, &mut stats.flow, &mut stream_events);
            }
            Decoded::Held => stats.capture.packets_decoded += 1,
            Decoded::Skipped(reason) => stats.capture.skip(reason),
        }
        emit(&mut stream_events, stats, None)?;
        frames_since_tick += 1;
        if frames_since_tick >= 4096 {
            frames_since_tick = 0;
            if let Some(bar) = progress {
                bar.set_position(source.bytes_read());
            }
        }
    }
    for _ in 0..decoder.finish() {
        stats.capture.anomaly(Anomaly::DecodeIpFragmentIncomplete);
    }
    flows.finish(&mut stats.flow, &mut stream_events);
    emit(&mut stream_events, stats, None)?;
    Ok(ReadTotals {
        inputs: source.infos(),
        bytes_read: source.bytes_read(),
    })
}
