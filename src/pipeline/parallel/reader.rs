//! The reader thread: capture, decode and TCP reassembly, then either rounds of stream
//! events dealt to the HTTP workers by stream, or (with one stream chain) the chain run here
//! and its events sent to the caller.

use super::{
    BACKLOG_TO_PREPARE, FromWorker, Gone, Ledger, ROUND_BYTES, ROUND_FRAMES, ToWorker,
    worker::body_bytes,
};
use crate::capture::FrameSource;
use crate::flow::FlowLimits;
use crate::http::HttpEvent;
use crate::mcp::{McpLimits, PreparedEvents, Preparer};
use crate::pipeline::packets::{ChainCounters, Event, ReadTotals, read_streams};
use crate::report::RunStats;
use crate::stream::{StreamEvent, StreamEventKind, StreamStage};
use std::sync::atomic::Ordering;
use std::sync::mpsc::SyncSender;

/// The reader thread: read, decode, reassemble, and deal the stream events to the workers
/// by stream id. `Gone` when a worker went away (the caller reports why).
pub(super) fn read_and_shard<F: FrameSource>(
    source: F,
    flow: FlowLimits,
    progress: Option<&indicatif::ProgressBar>,
    to_workers: &[SyncSender<ToWorker>],
) -> Result<(RunStats, ReadTotals), Gone> {
    let mut stats = RunStats::default();
    let mut seq = 0u64;
    let mut round = Round::new(to_workers.len());
    let totals = read_streams(source, flow, progress, &mut stats, &mut |events, _, _| {
        for ev in events.drain(..) {
            round.add(seq, ev);
            seq = seq.wrapping_add(1);
        }
        round.frames += 1;
        if round.frames >= ROUND_FRAMES || round.bytes >= ROUND_BYTES {
            round.send(to_workers)?;
        }
        Ok(())
    })?;
    round.send(to_workers)?;
    for tx in to_workers {
        tx.send(ToWorker::Finish).map_err(|_| Gone)?;
    }
    Ok((stats, totals))
}

/// The reader thread with the only HTTP stage: read, decode, reassemble, parse HTTP, and send
/// the events to the caller in rounds.
pub(super) fn read_and_parse<S, F: FrameSource>(
    source: F,
    flow: FlowLimits,
    progress: Option<&indicatif::ProgressBar>,
    mut stage: S,
    prepare: Option<(McpLimits, PreparedEvents)>,
    tx: &Outbox<'_>,
) -> Result<(RunStats, ReadTotals), Gone>
where
    S: StreamStage<Output = HttpEvent>,
    S::Counters: ChainCounters,
{
    let mut stats = RunStats::default();
    let mut counters = S::Counters::default();
    let mut out: Vec<HttpEvent> = Vec::new();
    let mut preparer = prepare.map(Preparer::from);
    let adaptive = prepare.is_some_and(|(_, prepares)| prepares == PreparedEvents::Posts);
    let mut batch: Vec<(u64, Event)> = Vec::new();
    let mut frames = 0u32;
    let mut bytes = 0usize;
    // Body bytes of the events in `batch`.
    let mut held = 0usize;
    let totals = read_streams(source, flow, progress, &mut stats, &mut |events, _, _| {
        for ev in events.drain(..) {
            if let StreamEventKind::Data { bytes: b, .. } = &ev.kind {
                bytes = bytes.saturating_add(b.len());
            }
            stage.push(ev, &mut counters, &mut out);
            let body: usize = out.iter().map(body_bytes).sum();
            bytes = bytes.saturating_add(body);
            held = held.saturating_add(body);
            let here = !adaptive || tx.caller_is_behind();
            // One batch per round: the order is already the final one.
            batch.extend(
                out.drain(..)
                    .map(|h| (0, Event::new(h, preparer.as_mut().filter(|_| here)))),
            );
        }
        frames += 1;
        if frames >= ROUND_FRAMES || bytes >= ROUND_BYTES {
            frames = 0;
            bytes = 0;
            if !batch.is_empty() {
                // The next round gets this one's room: growing it moves every event again.
                let cap = batch.capacity();
                let full = std::mem::replace(&mut batch, Vec::with_capacity(cap));
                tx.send(FromWorker::Round(
                    full,
                    stage.held_since_us(),
                    std::mem::take(&mut held),
                ))?;
            }
        }
        Ok(())
    })?;
    stage.finish(&mut counters, &mut out);
    counters.add_to(&mut stats);
    batch.extend(out.drain(..).map(|h| (0, Event::new(h, preparer.as_mut()))));
    tx.send(FromWorker::Finished(batch, Box::default()))?;
    Ok((stats, totals))
}

/// The reader's channel to the caller (the reader is the only producer, number 0).
pub(super) struct Outbox<'a> {
    pub tx: &'a SyncSender<FromWorker>,
    pub ledger: &'a Ledger,
}

impl Outbox<'_> {
    pub fn send(&self, msg: FromWorker) -> Result<(), Gone> {
        if let FromWorker::Round(_, _, held) = &msg {
            self.ledger.reserve(0, *held);
        }
        self.ledger.backlog.fetch_add(1, Ordering::Relaxed);
        self.tx.send(msg).map_err(|_| Gone)
    }

    /// Enough rounds wait for the caller that the reader may take on its work.
    pub fn caller_is_behind(&self) -> bool {
        self.ledger.backlog.load(Ordering::Relaxed) >= BACKLOG_TO_PREPARE
    }
}

/// Stream events gathered for the next round, one batch per worker.
struct Round {
    batches: Vec<Vec<(u64, StreamEvent)>>,
    frames: u32,
    bytes: usize,
}

impl Round {
    fn new(workers: usize) -> Round {
        Round {
            batches: (0..workers).map(|_| Vec::new()).collect(),
            frames: 0,
            bytes: 0,
        }
    }

    fn add(&mut self, seq: u64, ev: StreamEvent) {
        if let StreamEventKind::Data { bytes, .. } = &ev.kind {
            self.bytes = self.bytes.saturating_add(bytes.len());
        }
        let w = shard(ev.stream, self.batches.len());
        if let Some(batch) = self.batches.get_mut(w) {
            batch.push((seq, ev));
        }
    }

    /// Sends one batch to every worker, unless the round is empty for all of them (rounds
    /// stay in step either way).
    fn send(&mut self, to_workers: &[SyncSender<ToWorker>]) -> Result<(), Gone> {
        self.frames = 0;
        self.bytes = 0;
        if self.batches.iter().all(Vec::is_empty) {
            return Ok(());
        }
        for (batch, tx) in self.batches.iter_mut().zip(to_workers) {
            let cap = batch.capacity();
            let events = std::mem::replace(batch, Vec::with_capacity(cap));
            tx.send(ToWorker::Round(events)).map_err(|_| Gone)?;
        }
        Ok(())
    }
}

/// Worker of a stream. Stream ids are consecutive from 0, so the remainder spreads them evenly.
pub(super) fn shard(stream: u64, workers: usize) -> usize {
    let n = u64::try_from(workers.max(1)).unwrap_or(1);
    usize::try_from(stream % n).unwrap_or(0)
}
