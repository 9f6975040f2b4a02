//! The HTTP stage: routes [`StreamEvent`]s to one [`Router`] per TCP stream, and keeps the
//! earliest request under way (the release watermark).

use super::HttpEvent;
use super::HttpLimits;
use super::router::Router;
use crate::hashing::HashMap;
use crate::http::HttpCounters;
use crate::stream::{CloseReason, StreamEvent, StreamEventKind, StreamStage};
use arcstr::ArcStr;
use std::collections::BTreeSet;

/// StreamEvents in, HttpEvents out. Never panics on any input.
pub struct HttpStage {
    inputs: Vec<ArcStr>,
    limits: HttpLimits,
    /// Boxed: a `Router` is several hundred bytes, and a table of 100k mostly idle streams
    /// would otherwise hold (and, growing, copy) them all inline.
    conns: HashMap<u64, Box<Router>>,
    /// Streams with a request begun and not yet handed on, with its first-byte time, and the
    /// same ordered by that time: see [`HttpStage::held_since_us`].
    unfinished: HashMap<u64, i64>,
    unfinished_by_start: BTreeSet<(i64, u64)>,
}

impl HttpStage {
    /// `inputs`: the file names of the inputs, indexed by
    /// `StreamEventKind::Opened.input` (for `ConnInfo.capture`).
    pub fn new(inputs: Vec<ArcStr>) -> HttpStage {
        Self::with_limits(inputs, HttpLimits::default())
    }

    /// [`HttpStage::new`] with the head, body and decoding bounds of `limits`.
    pub fn with_limits(inputs: Vec<ArcStr>, limits: HttpLimits) -> HttpStage {
        HttpStage {
            inputs,
            limits,
            conns: HashMap::default(),
            unfinished: HashMap::default(),
            unfinished_by_start: BTreeSet::new(),
        }
    }

    fn track_unfinished(&mut self, stream: u64, started: Option<i64>) {
        if started.is_none() && self.unfinished.is_empty() {
            return;
        }
        let before = self.unfinished.get(&stream).copied();
        if before == started {
            return;
        }
        if let Some(ts) = before {
            self.unfinished.remove(&stream);
            self.unfinished_by_start.remove(&(ts, stream));
        }
        if let Some(ts) = started {
            self.unfinished.insert(stream, ts);
            self.unfinished_by_start.insert((ts, stream));
        }
    }
}

/// Ends a router's connection, counting the exchanges its end completes.
fn close(
    c: &mut Router,
    reason: CloseReason,
    ts_us: i64,
    stats: &mut HttpCounters,
    out: &mut Vec<HttpEvent>,
) {
    let from = out.len();
    c.on_close(reason, ts_us, stats, out);
    c.tally(out.get(from..).unwrap_or_default());
}

impl StreamStage for HttpStage {
    type Output = HttpEvent;
    type Counters = HttpCounters;

    /// Feeds one stream event; finished HTTP events are appended to `out`.
    fn push(&mut self, ev: StreamEvent, stats: &mut HttpCounters, out: &mut Vec<HttpEvent>) {
        let ts_us = ev.ts.as_us();
        let stream = ev.stream;
        // The stream's request under way after the event, if any.
        let started = match ev.kind {
            StreamEventKind::Opened {
                client,
                server,
                input,
                ..
            } => {
                let capture = self.inputs.get(input).cloned().unwrap_or_default();
                // A stream index is opened once; a repeat replaces a stale entry.
                if let Some(mut old) = self.conns.remove(&stream) {
                    close(&mut old, CloseReason::Evicted, ts_us, stats, out);
                }
                self.conns.insert(
                    stream,
                    Box::new(Router::new(stream, client, server, capture, self.limits)),
                );
                None
            }
            StreamEventKind::Data { side, bytes } => self.conns.get_mut(&stream).and_then(|c| {
                let from = out.len();
                c.on_data(side, bytes, ts_us, ev.frame, stats, out);
                c.tally(out.get(from..).unwrap_or_default());
                c.held_since_us()
            }),
            StreamEventKind::Decrypted { version, sni } => {
                self.conns.get_mut(&stream).and_then(|c| {
                    c.on_decrypted(version.as_deref(), sni.as_deref());
                    c.held_since_us()
                })
            }
            StreamEventKind::Negotiated { protocol } => self.conns.get_mut(&stream).and_then(|c| {
                c.on_negotiated(&protocol);
                c.held_since_us()
            }),
            StreamEventKind::Gap { side, len } => self.conns.get_mut(&stream).and_then(|c| {
                let from = out.len();
                c.on_gap(side, len, ts_us, stats, out);
                c.tally(out.get(from..).unwrap_or_default());
                c.held_since_us()
            }),
            StreamEventKind::Fin { side } => self.conns.get_mut(&stream).and_then(|c| {
                let from = out.len();
                c.on_fin(side, ts_us, stats, out);
                c.tally(out.get(from..).unwrap_or_default());
                c.held_since_us()
            }),
            StreamEventKind::Rst { side } => self.conns.get_mut(&stream).and_then(|c| {
                let from = out.len();
                c.on_rst(side, ts_us, stats, out);
                c.tally(out.get(from..).unwrap_or_default());
                c.held_since_us()
            }),
            StreamEventKind::Closed { reason, mut record } => {
                if let Some(mut c) = self.conns.remove(&stream) {
                    close(&mut c, reason, ts_us, stats, out);
                    c.fill_record(&mut record);
                } else {
                    record.flow.capture = self
                        .inputs
                        .get(record.flow.input)
                        .cloned()
                        .unwrap_or_default();
                }
                out.push(HttpEvent::ConnectionClosed(record));
                None
            }
        };
        self.track_unfinished(stream, started);
    }

    /// Flushes every open connection as at capture end, in stream order.
    fn finish(&mut self, stats: &mut HttpCounters, out: &mut Vec<HttpEvent>) {
        let mut streams: Vec<u64> = self.conns.keys().copied().collect();
        streams.sort_unstable();
        for s in streams {
            if let Some(mut c) = self.conns.remove(&s) {
                let ts = c.last_ts_us();
                close(&mut c, CloseReason::CaptureEnd, ts, stats, out);
            }
        }
        self.unfinished.clear();
        self.unfinished_by_start.clear();
    }

    /// The first-byte time of the earliest request begun on any stream and not yet handed on
    /// (`None`: no request is under way). Every [`HttpEvent::Request`] this stage emits later
    /// started at or after it, or at or after the packet that completes it; the analyzer
    /// releases the rows that started before it without waiting longer
    /// (`mcp::Analyzer::set_release_mark`).
    fn held_since_us(&self) -> Option<i64> {
        self.unfinished_by_start.first().map(|&(ts, _)| ts)
    }
}
