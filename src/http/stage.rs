//! The HTTP stage: routes [`StreamEvent`]s to one [`Conn`] per TCP stream.

use super::HttpEvent;
use super::conn::Conn;
use crate::anomaly::Stats;
use crate::flow::{CloseReason, StreamEvent, StreamEventKind};
use crate::hashing::HashMap;
use crate::limits::Limits;
use arcstr::ArcStr;

/// StreamEvents in, HttpEvents out. Never panics on any input.
pub struct HttpStage {
    inputs: Vec<ArcStr>,
    limits: Limits,
    /// Boxed: a `Conn` is several hundred bytes, and a table of 100k mostly idle streams
    /// would otherwise hold (and, growing, copy) them all inline.
    conns: HashMap<u64, Box<Conn>>,
}

impl HttpStage {
    /// `inputs`: the file names of the inputs, indexed by
    /// `StreamEventKind::Opened.input` (for `ConnInfo.capture`).
    pub fn new(inputs: Vec<ArcStr>) -> HttpStage {
        Self::with_limits(inputs, Limits::default())
    }

    /// [`HttpStage::new`] with the head, body and decoding bounds of `limits`.
    pub fn with_limits(inputs: Vec<ArcStr>, limits: Limits) -> HttpStage {
        HttpStage {
            inputs,
            limits,
            conns: HashMap::default(),
        }
    }

    /// Feeds one stream event; finished HTTP events are appended to `out`.
    pub fn push(&mut self, ev: StreamEvent, stats: &mut Stats, out: &mut Vec<HttpEvent>) {
        let ts_us = ev.ts_ns.div_euclid(1000);
        let stream = ev.stream;
        match ev.kind {
            StreamEventKind::Opened {
                client,
                server,
                input,
                ..
            } => {
                let capture = self.inputs.get(input).cloned().unwrap_or_default();
                // A stream index is opened once; a repeat replaces a stale entry.
                if let Some(mut old) = self.conns.remove(&stream) {
                    old.on_close(CloseReason::Evicted, ts_us, stats, out);
                }
                self.conns.insert(
                    stream,
                    Box::new(Conn::new(stream, client, server, capture, self.limits)),
                );
            }
            StreamEventKind::Data { side, bytes } => {
                if let Some(c) = self.conns.get_mut(&stream) {
                    c.on_data(side, bytes, ts_us, ev.frame, stats, out);
                }
            }
            StreamEventKind::Gap { side, len } => {
                if let Some(c) = self.conns.get_mut(&stream) {
                    c.on_gap(side, len, ts_us, stats, out);
                }
            }
            StreamEventKind::Fin { side } => {
                if let Some(c) = self.conns.get_mut(&stream) {
                    c.on_fin(side, ts_us, stats, out);
                }
            }
            StreamEventKind::Rst { side } => {
                if let Some(c) = self.conns.get_mut(&stream) {
                    c.on_rst(side, ts_us, stats, out);
                }
            }
            StreamEventKind::Closed { reason } => {
                if let Some(mut c) = self.conns.remove(&stream) {
                    c.on_close(reason, ts_us, stats, out);
                }
            }
        }
    }

    /// Flushes every open connection as at capture end, in stream order.
    pub fn finish(&mut self, stats: &mut Stats, out: &mut Vec<HttpEvent>) {
        let mut streams: Vec<u64> = self.conns.keys().copied().collect();
        streams.sort_unstable();
        for s in streams {
            if let Some(mut c) = self.conns.remove(&s) {
                let ts = c.last_ts_us();
                c.on_close(CloseReason::CaptureEnd, ts, stats, out);
            }
        }
    }
}
