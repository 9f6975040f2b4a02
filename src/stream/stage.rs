//! The seam between the flow stage and its consumers: a [`StreamStage`] takes the
//! [`StreamEvent`]s of every stream and turns them into events for the next stage.
//!
//! The stream stages form one chain, built once by the pipeline and called the same way by
//! every thread (the one-thread path, the reader thread, the HTTP workers):
//!
//! ```text
//! FlowTable --StreamEvent--> [TLS: StreamEvent -> StreamEvent] --StreamEvent--> HTTP --HttpEvent-->
//! ```
//!
//! A stage that turns stream events into stream events (TLS does) joins the chain with
//! [`Chain`]. What a chain still holds unfinished is the least of what its stages hold
//! ([`StreamStage::held_since_us`]), which is what the release watermark needs: a stage that
//! buffers bytes before HTTP delays the rows that may still come from them.

use super::StreamEvent;

/// One stage fed with stream events, in flow order (see [`super::StreamEventKind`]).
pub trait StreamStage {
    /// What the stage hands to the next one.
    type Output;

    /// What the stage counts (its own type), kept by the caller: one per thread, summed
    /// at the end of the run.
    type Counters: Default;

    /// Feeds one stream event; finished output is appended to `out`.
    fn push(&mut self, ev: StreamEvent, counters: &mut Self::Counters, out: &mut Vec<Self::Output>);

    /// End of input: flushes every stream still open, in stream order.
    fn finish(&mut self, counters: &mut Self::Counters, out: &mut Vec<Self::Output>);

    /// The earliest capture time (µs since the Unix epoch) of data the stage holds and has
    /// not finished with, `None` when it holds none. Everything the stage hands on later
    /// that begins a unit the next stage times (an HTTP request) starts at or after it, or
    /// at or after the event that completes it.
    fn held_since_us(&self) -> Option<i64>;

    /// A live capture is quiet (no event to carry the time): what waited only for something
    /// outside the streams (secrets from a key log that grew) may be handed on now. Most
    /// stages wait for nothing of the kind.
    fn quiet(&mut self, _counters: &mut Self::Counters, _out: &mut Vec<Self::Output>) {}
}

/// Two stages in a row: `first`'s stream events go to `second`.
pub struct Chain<A, B> {
    first: A,
    second: B,
    /// `first`'s output of the event being pushed, reused between events.
    between: Vec<StreamEvent>,
}

impl<A, B> Chain<A, B>
where
    A: StreamStage<Output = StreamEvent>,
    B: StreamStage,
{
    pub fn new(first: A, second: B) -> Self {
        Chain {
            first,
            second,
            between: Vec::new(),
        }
    }
}

impl<A, B> StreamStage for Chain<A, B>
where
    A: StreamStage<Output = StreamEvent>,
    B: StreamStage,
{
    type Output = B::Output;
    type Counters = (A::Counters, B::Counters);

    fn push(&mut self, ev: StreamEvent, counters: &mut Self::Counters, out: &mut Vec<B::Output>) {
        self.first.push(ev, &mut counters.0, &mut self.between);
        for ev in self.between.drain(..) {
            self.second.push(ev, &mut counters.1, out);
        }
    }

    fn finish(&mut self, counters: &mut Self::Counters, out: &mut Vec<B::Output>) {
        self.first.finish(&mut counters.0, &mut self.between);
        for ev in self.between.drain(..) {
            self.second.push(ev, &mut counters.1, out);
        }
        self.second.finish(&mut counters.1, out);
    }

    fn quiet(&mut self, counters: &mut Self::Counters, out: &mut Vec<B::Output>) {
        self.first.quiet(&mut counters.0, &mut self.between);
        for ev in self.between.drain(..) {
            self.second.push(ev, &mut counters.1, out);
        }
        self.second.quiet(&mut counters.1, out);
    }

    fn held_since_us(&self) -> Option<i64> {
        match (self.first.held_since_us(), self.second.held_since_us()) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        }
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::indexing_slicing)]
    use super::*;
    use crate::stream::{CloseReason, Side, StreamEventKind};
    use crate::timestamp::CaptureTime;

    /// Holds each stream's data until its stream closes, then hands it on as one `Data`
    /// event (the shape of a stage that buffers records before it can decode them).
    #[derive(Default)]
    struct HoldUntilClose {
        held: Vec<(u64, i64, Vec<u8>)>,
    }

    impl StreamStage for HoldUntilClose {
        type Output = StreamEvent;
        type Counters = ();

        fn push(&mut self, ev: StreamEvent, _: &mut (), out: &mut Vec<StreamEvent>) {
            match ev.kind {
                StreamEventKind::Data { bytes, .. } => {
                    match self.held.iter_mut().find(|h| h.0 == ev.stream) {
                        Some(h) => h.2.extend_from_slice(&bytes),
                        None => self.held.push((ev.stream, ev.ts.as_us(), bytes)),
                    }
                }
                StreamEventKind::Closed { .. } => {
                    if let Some(i) = self.held.iter().position(|h| h.0 == ev.stream) {
                        let (stream, _, bytes) = self.held.remove(i);
                        out.push(StreamEvent {
                            stream,
                            ts: ev.ts,
                            frame: ev.frame,
                            kind: StreamEventKind::Data {
                                side: Side::Client,
                                bytes,
                            },
                        });
                    }
                    out.push(ev);
                }
                _ => out.push(ev),
            }
        }

        fn finish(&mut self, _: &mut (), out: &mut Vec<StreamEvent>) {
            for (stream, ts_us, bytes) in self.held.drain(..) {
                out.push(StreamEvent {
                    stream,
                    ts: CaptureTime::from_us(ts_us),
                    frame: 0,
                    kind: StreamEventKind::Data {
                        side: Side::Client,
                        bytes,
                    },
                });
            }
        }

        fn held_since_us(&self) -> Option<i64> {
            self.held.iter().map(|h| h.1).min()
        }
    }

    /// Counts data bytes per event; holds the time of the first data it saw until the end.
    #[derive(Default)]
    struct Count {
        open_since_us: Option<i64>,
    }

    impl StreamStage for Count {
        type Output = (u64, usize);
        type Counters = ();

        fn push(&mut self, ev: StreamEvent, _: &mut (), out: &mut Vec<(u64, usize)>) {
            if let StreamEventKind::Data { bytes, .. } = ev.kind {
                self.open_since_us.get_or_insert(ev.ts.as_us());
                out.push((ev.stream, bytes.len()));
            }
        }

        fn finish(&mut self, _: &mut (), out: &mut Vec<(u64, usize)>) {
            self.open_since_us = None;
            out.push((u64::MAX, 0));
        }

        fn held_since_us(&self) -> Option<i64> {
            self.open_since_us
        }
    }

    fn event(stream: u64, ts_us: i64, kind: StreamEventKind) -> StreamEvent {
        StreamEvent {
            stream,
            ts: CaptureTime::from_us(ts_us),
            frame: 0,
            kind,
        }
    }

    fn data(n: usize) -> StreamEventKind {
        StreamEventKind::Data {
            side: Side::Client,
            bytes: vec![0; n],
        }
    }

    #[test]
    fn the_chain_holds_since_the_earliest_time_any_stage_holds() {
        let mut chain = Chain::new(HoldUntilClose::default(), Count::default());
        let mut stats = ((), ());
        let mut out = Vec::new();
        assert_eq!(chain.held_since_us(), None);
        chain.push(event(1, 10, data(3)), &mut stats, &mut out);
        chain.push(event(2, 20, data(4)), &mut stats, &mut out);
        // Only the first stage holds anything: its earliest time is the chain's.
        assert!(out.is_empty());
        assert_eq!(chain.held_since_us(), Some(10));
        let closed = StreamEventKind::closed(CloseReason::Finished);
        chain.push(event(1, 30, closed.clone()), &mut stats, &mut out);
        // Stream 1 went on at 30 (its close); stream 2 is still held by the first stage.
        assert_eq!(out, [(1, 3)]);
        assert_eq!(chain.held_since_us(), Some(20));
        chain.push(event(2, 40, closed), &mut stats, &mut out);
        // Now only the second stage holds anything.
        assert_eq!(out, [(1, 3), (2, 4)]);
        assert_eq!(chain.held_since_us(), Some(30));
        chain.finish(&mut stats, &mut out);
        assert_eq!(out, [(1, 3), (2, 4), (u64::MAX, 0)]);
        assert_eq!(chain.held_since_us(), None);
    }

    #[test]
    fn finish_flushes_the_first_stage_into_the_second_before_it_finishes() {
        let mut chain = Chain::new(HoldUntilClose::default(), Count::default());
        let mut stats = ((), ());
        let mut out = Vec::new();
        chain.push(event(5, 10, data(7)), &mut stats, &mut out);
        chain.finish(&mut stats, &mut out);
        assert_eq!(out, [(5, 7), (u64::MAX, 0)]);
    }
}
