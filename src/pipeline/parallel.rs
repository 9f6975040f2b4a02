//! `--threads N` (N >= 2): the packet stages on a reader thread, the HTTP stage sharded over
//! `N - 1` worker threads (on the reader thread itself when N = 2), the sink on the caller's
//! thread; the sink gets the same events in the same order as with one thread.
//!
//! ```text
//! reader:   capture -> decode -> FlowTable --(StreamEvents, numbered)--> worker stream % (N-1)
//! worker w: stream chain of its streams --(HttpEvents, tagged with the stream event's number)--> caller
//! caller:   merge the workers' batches of each round by tag -> sink (the MCP analyzer)
//! ```
//!
//! The single [`crate::flow::FlowTable`] numbers the streams and applies the flow limits,
//! so both are exactly those of a one-thread run. Work moves in rounds: every worker gets
//! one batch per round (maybe empty) and answers with one batch, so the caller takes round
//! r from every worker and merges those batches by tag, which rebuilds the one-thread
//! order. The end of input is a last round in which each worker flushes its open
//! connections (in stream order, as [`StreamStage::finish`] does), merged by stream id. With
//! one stream chain there is nothing to merge and it runs on the reader thread: a separate
//! worker costs a hop per stream event and more CPU for the same wall time (bench/README.md).
//! That reader also parses POST bodies, but only while the caller lags behind it
//! ([`BACKLOG_TO_PREPARE`]); otherwise the caller's analyzer parses them, so the JSON work goes
//! to whichever thread has room.
//!
//! Channels are bounded ([`QUEUED_ROUNDS`] per worker each way) and a round holds at most
//! [`ROUND_FRAMES`] frames or about [`ROUND_BYTES`] payload bytes (with the reader's own HTTP
//! stage, decoded body bytes too), so memory stays bounded. Decoded bodies can still be far
//! larger than their packets, so each thread sending rounds to the caller also waits while its
//! rounds not yet taken hold over [`HELD_BYTES`] of bodies, and an HTTP worker sends a round
//! in parts once it holds [`ROUND_BYTES`] of them ([`FromWorker::Part`]); the caller feeds a
//! part on as soon as no other worker can still send an event that precedes it.
//! A thread that stops early (a panic) closes its channels: the others see the disconnect
//! and stop, and the run ends with [`RunError::Worker`]. A sink error drops the caller's
//! receivers, which stops the workers and then the reader the same way.

use super::{Event, Item, ReadTotals, RunError, read_streams};
use crate::anomaly::Stats;
use crate::capture::Merger;
use crate::flow::{FlowLimits, StreamEvent, StreamEventKind, StreamStage};
use crate::http::HttpEvent;
use crate::limits::Limits;
use crate::mcp::{PrepareScope, Preparer};
use std::collections::VecDeque;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::mpsc::{Receiver, SyncSender, sync_channel};
use std::thread::{self, ScopedJoinHandle};
use std::time::Duration;

/// Frames per round: enough that channel costs vanish, few enough that a round's data is
/// still in cache when the caller reads it (512 cost 5-8% more CPU than 128 on 100 MB).
pub const ROUND_FRAMES: u32 = 128;
/// TCP payload bytes (and, from the reader's own HTTP stage, decoded body bytes) after which
/// a round is sent early (loopback captures carry 64 KB segments).
pub const ROUND_BYTES: usize = 256 * 1024;
/// Rounds waiting in each channel; past it the sender blocks. Three threads share two cores,
/// so each runs in time slices of a few milliseconds: the queue must outlast one (about 4 ms
/// of packets at 128 frames a round), or a thread waits while its peer is switched out. With
/// 4 rounds the cores were busy 1.77 of 2 on 100 MB, with 32 about 1.85 (bench/README.md,
/// session 9).
pub const QUEUED_ROUNDS: usize = 32;
/// Body bytes one producer may have in rounds the caller has not taken yet; past it the
/// producer waits. Ordinary traffic stays far below it (32 rounds of a few hundred KB), while
/// bodies that inflate at once (decompression bombs on several connections) no longer pile
/// up between the threads.
pub const HELD_BYTES: usize = 16 << 20;
/// How long a producer over [`HELD_BYTES`] sleeps before it looks again.
const HELD_WAIT: Duration = Duration::from_micros(200);
/// With the HTTP stage on the reader thread, the reader parses POST bodies only while at
/// least this many rounds wait for the caller: the caller is then behind and the reader has
/// time to spare. Otherwise the POSTs go unparsed and the caller's analyzer parses them, so
/// neither thread idles while the other is the bottleneck. Either way the result is the same.
pub const BACKLOG_TO_PREPARE: usize = 2;

/// Receives each item, in one-thread order, with the caller's stats.
pub(super) type EventSink<'a, E> = dyn FnMut(Item, &mut Stats) -> Result<(), RunError<E>> + 'a;

/// Reader -> worker.
enum ToWorker {
    /// This worker's stream events of one round, each with its number.
    Round(Vec<(u64, StreamEvent)>),
    /// End of input: flush the open connections.
    Finish,
}

/// Worker -> caller. Events are tagged with their merge key within the round.
enum FromWorker {
    /// Part of a round's events, sent early because they hold [`ROUND_BYTES`] of bodies
    /// (a round of packets that inflate would otherwise be held whole), the body bytes they
    /// hold, and the tag of the last stream event read: the worker's later events of the
    /// round all have greater tags. Only HTTP workers send parts.
    Part(Vec<(u64, Event)>, usize, u64),
    /// A round's events, the earliest request under way in the worker's HTTP stage after it
    /// ([`StreamStage::held_since_us`]), and the body bytes the events hold.
    Round(Vec<(u64, Event)>, Option<i64>, usize),
    /// The flushed connections' events keyed by stream id, and the worker's counts.
    Finished(Vec<(u64, Event)>, Stats),
}

/// Why the caller stopped taking rounds.
enum Stop<E: std::error::Error + 'static> {
    Sink(RunError<E>),
    /// A worker's channel closed before its last round.
    Disconnected,
}

/// Runs the packet and HTTP stages on `stages.len()` workers plus a reader thread; each HTTP
/// event goes to `sink` on this thread, in one-thread order. Counts of every thread are
/// added to `stats`.
pub(super) fn run<E, S>(
    merger: Merger,
    flow: FlowLimits,
    stages: Vec<S>,
    progress: Option<indicatif::ProgressBar>,
    prepare: Option<(Limits, PrepareScope)>,
    stats: &mut Stats,
    sink: &mut EventSink<'_, E>,
) -> Result<ReadTotals, RunError<E>>
where
    E: std::error::Error + 'static,
    S: StreamStage<Output = HttpEvent> + Send,
{
    let mut stages = stages;
    if stages.is_empty() {
        return Err(RunError::Worker("no HTTP stage to run".into()));
    }
    // A single HTTP stage runs on the reader thread: one hop fewer for every event.
    let inline = if stages.len() == 1 {
        stages.pop()
    } else {
        None
    };
    let ledger = Ledger::new(if inline.is_some() { 1 } else { stages.len() });
    thread::scope(|scope| {
        let ledger = &ledger;
        let mut to_workers = Vec::with_capacity(stages.len());
        let mut from_workers = Vec::with_capacity(stages.len());
        let mut workers = Vec::with_capacity(stages.len());
        for (w, stage) in stages.into_iter().enumerate() {
            let (tx_in, rx_in) = sync_channel(QUEUED_ROUNDS);
            let (tx_out, rx_out) = sync_channel(QUEUED_ROUNDS);
            let handle = thread::Builder::new()
                .name(format!("mcp-trace-http-{w}"))
                .spawn_scoped(scope, move || {
                    http_worker(stage, prepare, rx_in, tx_out, (ledger, w))
                })
                .map_err(|e| RunError::Worker(format!("cannot start an HTTP worker: {e}")))?;
            workers.push(handle);
            to_workers.push(tx_in);
            from_workers.push(rx_out);
        }
        let reader = thread::Builder::new().name("mcp-trace-reader".into());
        let reader = match inline {
            Some(stage) => {
                let (tx_out, rx_out) = sync_channel(QUEUED_ROUNDS);
                from_workers.push(rx_out);
                reader.spawn_scoped(scope, move || {
                    let out = Outbox {
                        tx: &tx_out,
                        ledger,
                    };
                    read_and_parse(merger, flow, progress.as_ref(), stage, prepare, &out)
                })
            }
            None => reader.spawn_scoped(scope, move || {
                read_and_shard(merger, flow, progress.as_ref(), &to_workers)
            }),
        }
        .map_err(|e| RunError::Worker(format!("cannot start the reader: {e}")))?;

        let consumed = consume(&from_workers, ledger, stats, sink);
        ledger.caller_done.store(true, Ordering::Release);
        // Closing the receivers unblocks workers (and through them the reader) after a sink error.
        drop(from_workers);
        let read = joined(reader, "reader");
        let mut ends = Vec::with_capacity(workers.len());
        for (w, handle) in workers.into_iter().enumerate() {
            ends.push(joined(handle, &format!("HTTP worker {w}")));
        }
        match (consumed, read) {
            (Err(Stop::Sink(e)), _) => Err(e),
            (Ok(()), Ok((read_stats, totals))) => {
                stats.merge(&read_stats);
                Ok(totals)
            }
            (_, read) => {
                // A panic explains the others' early stops: report it first.
                let ends = std::iter::once(read.map(|_| ())).chain(ends);
                let mut why = "a worker thread stopped before the end of input".to_string();
                for end in ends {
                    match end {
                        Err(Ended::Panicked(msg)) => {
                            why = msg;
                            break;
                        }
                        Err(Ended::Stopped(msg)) => why = msg,
                        Ok(()) => {}
                    }
                }
                Err(RunError::Worker(why))
            }
        }
    })
}

/// The reader thread: read, decode, reassemble, and deal the stream events to the workers
/// by stream id. `Gone` when a worker went away (the caller reports why).
fn read_and_shard(
    merger: Merger,
    flow: FlowLimits,
    progress: Option<&indicatif::ProgressBar>,
    to_workers: &[SyncSender<ToWorker>],
) -> Result<(Stats, ReadTotals), Gone> {
    let mut stats = Stats::default();
    let mut seq = 0u64;
    let mut round = Round::new(to_workers.len());
    let totals = read_streams(merger, flow, progress, &mut stats, &mut |events, _| {
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

/// The other end of a channel went away.
#[derive(Debug)]
struct Gone;

/// The reader thread with the only HTTP stage: read, decode, reassemble, parse HTTP, and send
/// the events to the caller in rounds.
fn read_and_parse<S: StreamStage<Output = HttpEvent>>(
    merger: Merger,
    flow: FlowLimits,
    progress: Option<&indicatif::ProgressBar>,
    mut stage: S,
    prepare: Option<(Limits, PrepareScope)>,
    tx: &Outbox<'_>,
) -> Result<(Stats, ReadTotals), Gone> {
    let mut stats = Stats::default();
    let mut out: Vec<HttpEvent> = Vec::new();
    let mut preparer = prepare.map(Preparer::from);
    let adaptive = prepare.is_some_and(|(_, scope)| scope == PrepareScope::Posts);
    let mut batch: Vec<(u64, Event)> = Vec::new();
    let mut frames = 0u32;
    let mut bytes = 0usize;
    // Body bytes of the events in `batch`.
    let mut held = 0usize;
    let totals = read_streams(merger, flow, progress, &mut stats, &mut |events, stats| {
        for ev in events.drain(..) {
            if let StreamEventKind::Data { bytes: b, .. } = &ev.kind {
                bytes = bytes.saturating_add(b.len());
            }
            stage.push(ev, stats, &mut out);
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
    stage.finish(&mut stats, &mut out);
    batch.extend(out.drain(..).map(|h| (0, Event::new(h, preparer.as_mut()))));
    tx.send(FromWorker::Finished(batch, Stats::default()))?;
    Ok((stats, totals))
}

/// The reader's channel to the caller (the reader is the only producer, number 0).
struct Outbox<'a> {
    tx: &'a SyncSender<FromWorker>,
    ledger: &'a Ledger,
}

impl Outbox<'_> {
    fn send(&self, msg: FromWorker) -> Result<(), Gone> {
        if let FromWorker::Round(_, _, held) = &msg {
            self.ledger.reserve(0, *held);
        }
        self.ledger.backlog.fetch_add(1, Ordering::Relaxed);
        self.tx.send(msg).map_err(|_| Gone)
    }

    /// Enough rounds wait for the caller that the reader may take on its work.
    fn caller_is_behind(&self) -> bool {
        self.ledger.backlog.load(Ordering::Relaxed) >= BACKLOG_TO_PREPARE
    }
}

/// What the caller shares with the threads that send it rounds, besides the channels.
struct Ledger {
    /// Rounds the reader (running the only HTTP stage) sent and the caller has not taken.
    backlog: AtomicUsize,
    /// Per producer, in the order of the caller's receivers: body bytes in rounds sent and
    /// not yet taken.
    held: Vec<AtomicUsize>,
    /// The caller takes no more rounds: nobody waits for room any more.
    caller_done: AtomicBool,
}

impl Ledger {
    fn new(producers: usize) -> Ledger {
        Ledger {
            backlog: AtomicUsize::new(0),
            held: (0..producers).map(|_| AtomicUsize::new(0)).collect(),
            caller_done: AtomicBool::new(false),
        }
    }

    /// Waits while `producer`'s rounds in flight hold more than [`HELD_BYTES`] (until the
    /// caller takes some or stops), then counts `bytes` more. A producer waits only for its
    /// own rounds, which the caller can always take: no producer waits for another.
    fn reserve(&self, producer: usize, bytes: usize) {
        let Some(held) = self.held.get(producer) else {
            return;
        };
        while held.load(Ordering::Acquire) > HELD_BYTES && !self.caller_done.load(Ordering::Acquire)
        {
            thread::sleep(HELD_WAIT);
        }
        held.fetch_add(bytes, Ordering::AcqRel);
    }

    /// The caller took a round holding `bytes` from `producer`.
    fn taken(&self, producer: usize, bytes: usize) {
        if let Some(held) = self.held.get(producer) {
            let _ = held.fetch_update(Ordering::AcqRel, Ordering::Acquire, |n| {
                Some(n.saturating_sub(bytes))
            });
        }
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
fn shard(stream: u64, workers: usize) -> usize {
    let n = u64::try_from(workers.max(1)).unwrap_or(1);
    usize::try_from(stream % n).unwrap_or(0)
}

/// One HTTP worker: a batch out for each batch in, tagged with the stream event's number.
fn http_worker<S: StreamStage<Output = HttpEvent>>(
    mut stage: S,
    prepare: Option<(Limits, PrepareScope)>,
    rx: Receiver<ToWorker>,
    tx: SyncSender<FromWorker>,
    (ledger, producer): (&Ledger, usize),
) -> Result<(), Gone> {
    let mut stats = Stats::default();
    let mut out: Vec<HttpEvent> = Vec::new();
    let mut preparer = prepare.map(Preparer::from);
    while let Ok(msg) = rx.recv() {
        match msg {
            ToWorker::Round(events) => {
                let mut batch = Vec::with_capacity(events.len());
                let mut held = 0usize;
                let count = events.len();
                for (i, (seq, ev)) in events.into_iter().enumerate() {
                    stage.push(ev, &mut stats, &mut out);
                    for h in out.drain(..) {
                        held = held.saturating_add(body_bytes(&h));
                        batch.push((seq, Event::new(h, preparer.as_mut())));
                    }
                    if held >= ROUND_BYTES && i + 1 < count {
                        ledger.reserve(producer, held);
                        let part = std::mem::take(&mut batch);
                        tx.send(FromWorker::Part(part, held, seq))
                            .map_err(|_| Gone)?;
                        held = 0;
                    }
                }
                let unfinished = stage.held_since_us();
                ledger.reserve(producer, held);
                tx.send(FromWorker::Round(batch, unfinished, held))
                    .map_err(|_| Gone)?;
            }
            ToWorker::Finish => {
                stage.finish(&mut stats, &mut out);
                // `finish` flushes in stream order; the stream id orders them across workers.
                let batch = out
                    .drain(..)
                    .map(|h| (conn_of(&h), Event::new(h, preparer.as_mut())))
                    .collect();
                return tx
                    .send(FromWorker::Finished(batch, stats))
                    .map_err(|_| Gone);
            }
        }
    }
    Err(Gone)
}

/// Body bytes an event carries (a decompressed piece may be far larger than its packet).
fn body_bytes(ev: &HttpEvent) -> usize {
    match ev {
        HttpEvent::Request(r) => r.body.len(),
        HttpEvent::ResponseBody { data, .. } => data.len(),
        _ => 0,
    }
}

/// Connection (= TCP stream) id of an event.
fn conn_of(ev: &HttpEvent) -> u64 {
    let xref = match ev {
        HttpEvent::Request(r) => &r.xref,
        HttpEvent::ResponseHead { xref, .. }
        | HttpEvent::ResponseBody { xref, .. }
        | HttpEvent::ResponseEnd { xref, .. }
        | HttpEvent::NoResponse { xref, .. } => xref,
    };
    xref.conn.conn
}

/// The caller's side: takes round after round from every worker, merges each round by tag
/// and feeds the sink, until every worker has finished. Within a round it listens to the
/// worker that has read least far (see [`laggard`]) and feeds early parts on as soon as no
/// other worker can still send an event with a smaller tag, so parts do not pile up here.
fn consume<E: std::error::Error + 'static>(
    from_workers: &[Receiver<FromWorker>],
    ledger: &Ledger,
    stats: &mut Stats,
    sink: &mut EventSink<'_, E>,
) -> Result<(), Stop<E>> {
    let n = from_workers.len();
    // Per producer, this round: events not yet fed on, the tag of the last stream event it
    // has read (`None`: nothing heard yet), and whether its last part came.
    let mut pending: Vec<VecDeque<std::vec::IntoIter<(u64, Event)>>> =
        (0..n).map(|_| VecDeque::new()).collect();
    let mut read_through: Vec<Option<u64>> = vec![None; n];
    let mut done = vec![false; n];
    let mut flushed: Vec<std::vec::IntoIter<(u64, Event)>> = Vec::with_capacity(n);
    loop {
        read_through.fill(None);
        done.fill(false);
        flushed.clear();
        let mut finished = 0usize;
        let mut unfinished_from_us: Option<i64> = None;
        while let Some(producer) = laggard(&read_through, &done) {
            let rx = from_workers.get(producer).ok_or(Stop::Disconnected)?;
            let received = rx.recv().map_err(|_| Stop::Disconnected)?;
            // Only the reader's outbox counts; the workers' rounds leave the count at 0.
            let _ = ledger
                .backlog
                .fetch_update(Ordering::Relaxed, Ordering::Relaxed, |n| n.checked_sub(1));
            let (Some(queue), Some(through), Some(last)) = (
                pending.get_mut(producer),
                read_through.get_mut(producer),
                done.get_mut(producer),
            ) else {
                return Err(Stop::Disconnected);
            };
            match received {
                FromWorker::Part(batch, held, tag) => {
                    ledger.taken(producer, held);
                    queue.push_back(batch.into_iter());
                    *through = Some(tag);
                    if let Some(bound) = safe_bound(&read_through, &done) {
                        feed_through(&mut pending, bound, &mut |ev| sink(Item::Event(ev), stats))
                            .map_err(Stop::Sink)?;
                    }
                }
                FromWorker::Round(batch, unfinished, held) => {
                    ledger.taken(producer, held);
                    queue.push_back(batch.into_iter());
                    *last = true;
                    unfinished_from_us = match (unfinished_from_us, unfinished) {
                        (Some(a), Some(b)) => Some(a.min(b)),
                        (a, b) => a.or(b),
                    };
                }
                FromWorker::Finished(batch, worker_stats) => {
                    stats.merge(&worker_stats);
                    finished += 1;
                    *last = true;
                    flushed.push(batch.into_iter());
                }
            }
        }
        feed_through(&mut pending, u64::MAX, &mut |ev| {
            sink(Item::Event(ev), stats)
        })
        .map_err(Stop::Sink)?;
        merge_round(&mut flushed, &mut |ev| sink(Item::Event(ev), stats)).map_err(Stop::Sink)?;
        if finished == n {
            return Ok(());
        }
        if finished == 0 {
            sink(Item::Mark { unfinished_from_us }, stats).map_err(Stop::Sink)?;
        }
        if finished > 0 {
            // The reader ends every worker in the same round; anything else is a lost round.
            return Err(Stop::Disconnected);
        }
    }
}

/// The producer to hear from next: of those whose last part of the round has not come, the
/// one that has read least far (nothing heard counts as least). Only its events can hold the
/// others' back, and it can always go on: what it waits for was sent to it first.
fn laggard(read_through: &[Option<u64>], done: &[bool]) -> Option<usize> {
    read_through
        .iter()
        .zip(done)
        .enumerate()
        .filter(|(_, (_, last))| !**last)
        .min_by_key(|(_, (through, _))| through.map_or(0, |t| t.saturating_add(1)))
        .map(|(i, _)| i)
}

/// The greatest tag no producer still to be heard from this round can send an event at or
/// below: the least tag read among them. `None` while one of them has sent nothing.
fn safe_bound(read_through: &[Option<u64>], done: &[bool]) -> Option<u64> {
    let mut bound = u64::MAX;
    for (through, last) in read_through.iter().zip(done) {
        if !last {
            bound = bound.min((*through)?);
        }
    }
    Some(bound)
}

/// Feeds `f`, in ascending tag order, the pending events tagged at most `bound`. Each
/// producer's parts are in order and a tag lives with one producer only: a k-way merge.
fn feed_through<X>(
    pending: &mut [VecDeque<std::vec::IntoIter<(u64, Event)>>],
    bound: u64,
    f: &mut dyn FnMut(Event) -> Result<(), X>,
) -> Result<(), X> {
    if let [only] = pending
        && bound == u64::MAX
    {
        for part in only.drain(..) {
            for (_, ev) in part {
                f(ev)?;
            }
        }
        return Ok(());
    }
    loop {
        let mut best: Option<(usize, u64)> = None;
        for (i, parts) in pending.iter_mut().enumerate() {
            while parts.front().is_some_and(|p| p.as_slice().is_empty()) {
                parts.pop_front();
            }
            if let Some(&(tag, _)) = parts.front().and_then(|p| p.as_slice().first())
                && tag <= bound
                && best.is_none_or(|(_, b)| tag < b)
            {
                best = Some((i, tag));
            }
        }
        let Some((i, _)) = best else { return Ok(()) };
        if let Some((_, ev)) = pending
            .get_mut(i)
            .and_then(VecDeque::front_mut)
            .and_then(Iterator::next)
        {
            f(ev)?;
        }
    }
}

/// Feeds the events of one round to `f` in ascending tag order. Each batch is already in
/// order, and a tag lives in one batch only, so this is a plain k-way merge.
fn merge_round<X>(
    batches: &mut [std::vec::IntoIter<(u64, Event)>],
    f: &mut dyn FnMut(Event) -> Result<(), X>,
) -> Result<(), X> {
    if let [only] = batches {
        for (_, ev) in only {
            f(ev)?;
        }
        return Ok(());
    }
    let mut heads: Vec<Option<(u64, Event)>> = batches.iter_mut().map(Iterator::next).collect();
    loop {
        let mut best: Option<(usize, u64)> = None;
        for (i, head) in heads.iter().enumerate() {
            if let Some((tag, _)) = head
                && best.is_none_or(|(_, b)| *tag < b)
            {
                best = Some((i, *tag));
            }
        }
        let Some((i, _)) = best else { return Ok(()) };
        let (Some(head), Some(batch)) = (heads.get_mut(i), batches.get_mut(i)) else {
            return Ok(());
        };
        if let Some((_, ev)) = std::mem::replace(head, batch.next()) {
            f(ev)?;
        }
    }
}

/// How a thread ended without its result.
#[derive(Debug, PartialEq)]
enum Ended {
    /// A channel closed under it (another thread stopped first).
    Stopped(String),
    Panicked(String),
}

/// A thread's result, or how it ended without one.
fn joined<T>(handle: ScopedJoinHandle<'_, Result<T, Gone>>, what: &str) -> Result<T, Ended> {
    match handle.join() {
        Ok(Ok(v)) => Ok(v),
        Ok(Err(Gone)) => Err(Ended::Stopped(format!("the {what} stopped early"))),
        Err(panic) => {
            let msg = panic
                .downcast_ref::<&str>()
                .map(|s| s.to_string())
                .or_else(|| panic.downcast_ref::<String>().cloned())
                .unwrap_or_else(|| "no message".into());
            Err(Ended::Panicked(format!("the {what} panicked: {msg}")))
        }
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::indexing_slicing)]
    use super::*;
    use std::convert::Infallible;

    #[test]
    fn shard_spreads_consecutive_streams() {
        let counts = (0..300u64).fold([0; 3], |mut c, s| {
            c[shard(s, 3)] += 1;
            c
        });
        assert_eq!(counts, [100, 100, 100]);
        assert_eq!(shard(u64::MAX, 1), 0);
        assert_eq!(shard(7, 0), 0);
    }

    #[test]
    fn a_panicking_thread_becomes_an_error() {
        thread::scope(|s| {
            let h = s.spawn(|| -> Result<(), Gone> { panic!("boom") });
            assert_eq!(
                joined(h, "HTTP worker 1"),
                Err(Ended::Panicked("the HTTP worker 1 panicked: boom".into()))
            );
            let h = s.spawn(|| -> Result<(), Gone> { Err(Gone) });
            assert_eq!(
                joined(h, "reader"),
                Err(Ended::Stopped("the reader stopped early".into()))
            );
        });
    }

    #[test]
    fn a_worker_gone_mid_run_is_reported_not_awaited() {
        let (tx0, rx0) = sync_channel(QUEUED_ROUNDS);
        let (tx1, rx1) = sync_channel::<FromWorker>(QUEUED_ROUNDS);
        tx0.send(FromWorker::Round(Vec::new(), None, 0)).unwrap();
        drop(tx1);
        let mut stats = Stats::default();
        let mut sink = |_: Item, _: &mut Stats| Ok::<(), RunError<Infallible>>(());
        let res = consume(&[rx0, rx1], &Ledger::new(2), &mut stats, &mut sink);
        assert!(matches!(res, Err(Stop::Disconnected)));
        drop(tx0);
    }

    #[test]
    fn the_backlog_counts_rounds_sent_and_not_yet_taken() {
        let (tx, rx) = sync_channel(QUEUED_ROUNDS);
        let ledger = Ledger::new(1);
        let out = Outbox {
            tx: &tx,
            ledger: &ledger,
        };
        out.send(FromWorker::Round(Vec::new(), None, 0)).unwrap();
        assert!(!out.caller_is_behind(), "one round waiting");
        out.send(FromWorker::Round(Vec::new(), None, 0)).unwrap();
        assert!(out.caller_is_behind(), "two rounds waiting");
        out.send(FromWorker::Finished(Vec::new(), Stats::default()))
            .unwrap();
        assert_eq!(ledger.backlog.load(Ordering::Relaxed), 3);
        let mut stats = Stats::default();
        let mut sink = |_: Item, _: &mut Stats| Ok::<(), RunError<Infallible>>(());
        assert!(consume(&[rx], &ledger, &mut stats, &mut sink).is_ok());
        assert_eq!(ledger.backlog.load(Ordering::Relaxed), 0);
        assert!(!out.caller_is_behind());
    }

    /// A gzip response of 2 MiB of zeros arrives in a handful of packets: far fewer than
    /// ROUND_FRAMES and ROUND_BYTES of payload, but its pieces inflate to over ROUND_BYTES.
    /// The reader closes a round once its events carry that much, so the queued rounds hold
    /// what ROUND_BYTES promises, not what a compressor makes of it.
    #[test]
    fn a_round_closes_on_decoded_body_bytes_too() {
        use crate::pipeline::tests::{Conn, T0_US, pcap_of};
        use std::io::Write;
        let zeros = vec![0u8; 2 << 20];
        let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::best());
        gz.write_all(&zeros).unwrap();
        let body = gz.finish().unwrap();
        let mut c = Conn::open(0);
        c.send(true, b"GET /x HTTP/1.1\r\nHost: s\r\n\r\n", None);
        let head = format!(
            "HTTP/1.1 200 OK\r\nContent-Encoding: gzip\r\nContent-Length: {}\r\n\r\n",
            body.len()
        );
        c.send(false, head.as_bytes(), None);
        c.send(false, &body, None);
        let frames: Vec<(i64, Vec<u8>)> = (0i64..)
            .zip(c.packets)
            .map(|(i, p)| (T0_US + i * 100, p))
            .collect();
        assert!(
            frames.len() < ROUND_FRAMES as usize,
            "{} frames",
            frames.len()
        );
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("gzip.pcap");
        std::fs::write(&path, pcap_of(&frames)).unwrap();
        let crate::capture::Source::Packets(reader) =
            crate::capture::open(&path.to_string_lossy(), 0).unwrap()
        else {
            panic!("not a packet capture")
        };
        let (tx, rx) = sync_channel(1024);
        let ledger = Ledger::new(1);
        let out = Outbox {
            tx: &tx,
            ledger: &ledger,
        };
        let stage = crate::http::HttpStage::new(vec!["gzip.pcap".into()]);
        let merger = Merger::new(vec![reader]);
        assert!(read_and_parse(merger, FlowLimits::default(), None, stage, None, &out).is_ok());
        drop(tx);
        let mut per_round = Vec::new();
        let mut largest_piece = 0;
        for msg in rx.iter() {
            let (FromWorker::Round(batch, ..)
            | FromWorker::Finished(batch, _)
            | FromWorker::Part(batch, ..)) = msg;
            let sizes: Vec<usize> = batch.iter().map(|(_, ev)| body_bytes(&ev.http)).collect();
            largest_piece = sizes.iter().copied().fold(largest_piece, usize::max);
            per_round.push(sizes.iter().sum::<usize>());
        }
        assert_eq!(
            per_round.iter().sum::<usize>(),
            zeros.len(),
            "{per_round:?}"
        );
        assert!(per_round.len() >= 2, "{per_round:?}");
        for n in per_round {
            assert!(n < ROUND_BYTES + largest_piece, "{n} bytes in one round");
        }
    }

    #[test]
    fn a_producer_over_its_held_bytes_waits_until_the_caller_takes_some() {
        let ledger = Ledger::new(2);
        ledger.reserve(1, HELD_BYTES + 1);
        thread::scope(|s| {
            let waiting = s.spawn(|| ledger.reserve(1, 10));
            // The other producer is not held up by producer 1's bytes.
            ledger.reserve(0, 5);
            thread::sleep(Duration::from_millis(30));
            assert!(!waiting.is_finished(), "over HELD_BYTES: must wait");
            assert_eq!(ledger.held[1].load(Ordering::Acquire), HELD_BYTES + 1);
            ledger.taken(1, HELD_BYTES);
            waiting.join().unwrap();
        });
        assert_eq!(ledger.held[1].load(Ordering::Acquire), 11);
        assert_eq!(ledger.held[0].load(Ordering::Acquire), 5);
        // Taking more than is counted (never happens) leaves zero, not a wrapped count.
        ledger.taken(0, 6);
        assert_eq!(ledger.held[0].load(Ordering::Acquire), 0);
    }

    #[test]
    fn a_stopped_caller_releases_a_waiting_producer() {
        let ledger = Ledger::new(1);
        ledger.reserve(0, HELD_BYTES + 1);
        thread::scope(|s| {
            let waiting = s.spawn(|| ledger.reserve(0, 1));
            thread::sleep(Duration::from_millis(30));
            assert!(!waiting.is_finished());
            ledger.caller_done.store(true, Ordering::Release);
            waiting.join().unwrap();
        });
    }

    /// An event whose time stamp names it.
    fn tagged(us: i64) -> Event {
        let conn = std::sync::Arc::new(crate::http::ConnInfo {
            conn: 0,
            tcp_stream: None,
            client_addr: Default::default(),
            server_addr: Default::default(),
            capture: Default::default(),
        });
        Event {
            http: HttpEvent::NoResponse {
                xref: crate::http::ExchangeRef { conn, depth: 1 },
                ts_us: us,
                end: crate::http::BodyEnd::CaptureEnd,
                client_closed: false,
            },
            prepared: None,
        }
    }

    fn stamp(item: &Item) -> Option<i64> {
        match item {
            Item::Event(Event {
                http: HttpEvent::NoResponse { ts_us, .. },
                ..
            }) => Some(*ts_us),
            _ => None,
        }
    }

    #[test]
    fn parts_are_merged_by_tag_and_fed_once_no_worker_can_precede_them() {
        // Worker 0 reads tags 1, 3, 5 and sends 1 and 3 early; worker 1 reads 2, 4, 6 and
        // sends 2 early; both then end the round, then finish.
        let (tx0, rx0) = sync_channel(QUEUED_ROUNDS);
        let (tx1, rx1) = sync_channel(QUEUED_ROUNDS);
        let ledger = Ledger::new(2);
        let part = |tags: &[u64]| tags.iter().map(|&t| (t, tagged(t as i64))).collect();
        ledger.reserve(0, 300);
        tx0.send(FromWorker::Part(part(&[1, 3]), 300, 3)).unwrap();
        tx0.send(FromWorker::Round(part(&[5]), Some(7), 0)).unwrap();
        tx1.send(FromWorker::Part(part(&[2]), 0, 2)).unwrap();
        tx1.send(FromWorker::Round(part(&[4, 6]), None, 0)).unwrap();
        for tx in [&tx0, &tx1] {
            tx.send(FromWorker::Finished(Vec::new(), Stats::default()))
                .unwrap();
        }
        let mut stats = Stats::default();
        let mut seen = Vec::new();
        let mut sink = |item: Item, _: &mut Stats| {
            seen.push(stamp(&item).ok_or(item));
            Ok::<(), RunError<Infallible>>(())
        };
        assert!(consume(&[rx0, rx1], &ledger, &mut stats, &mut sink).is_ok());
        let tags: Vec<i64> = seen
            .iter()
            .filter_map(|s| s.as_ref().ok().copied())
            .collect();
        assert_eq!(tags, [1, 2, 3, 4, 5, 6]);
        // One mark, after the round's last event, with the least time any worker reported.
        assert_eq!(seen.len(), 7);
        assert!(matches!(
            seen.last(),
            Some(Err(Item::Mark {
                unfinished_from_us: Some(7)
            }))
        ));
        assert_eq!(ledger.held[0].load(Ordering::Acquire), 0, "parts taken");
    }

    #[test]
    fn the_laggard_is_heard_first_and_bounds_what_is_fed() {
        let done = [false, false, true];
        // Nothing heard from worker 1 yet: it goes first, and nothing is safe.
        assert_eq!(laggard(&[Some(9), None, None], &done), Some(1));
        assert_eq!(safe_bound(&[Some(9), None, None], &done), None);
        // Worker 2 is done: its tag does not count.
        assert_eq!(laggard(&[Some(9), Some(4), Some(1)], &done), Some(1));
        assert_eq!(safe_bound(&[Some(9), Some(4), Some(1)], &done), Some(4));
        assert_eq!(laggard(&[None, None], &[true, true]), None);
        assert_eq!(safe_bound(&[None], &[true]), Some(u64::MAX));
        // Feeding stops at the bound, in tag order across producers.
        let mut pending: Vec<VecDeque<std::vec::IntoIter<(u64, Event)>>> = vec![
            VecDeque::from([vec![(1, tagged(1)), (4, tagged(4))].into_iter()]),
            VecDeque::from([
                vec![(2, tagged(2))].into_iter(),
                vec![(5, tagged(5))].into_iter(),
            ]),
        ];
        let mut feed = |bound: u64| {
            let mut fed = Vec::new();
            feed_through(&mut pending, bound, &mut |ev: Event| {
                fed.push(stamp(&Item::Event(ev)).unwrap());
                Ok::<(), ()>(())
            })
            .unwrap();
            fed
        };
        assert_eq!(feed(4), [1, 2, 4]);
        assert_eq!(feed(u64::MAX), [5]);
    }

    #[test]
    fn workers_finishing_in_different_rounds_is_an_error() {
        let (tx0, rx0) = sync_channel(QUEUED_ROUNDS);
        let (tx1, rx1) = sync_channel(QUEUED_ROUNDS);
        tx0.send(FromWorker::Finished(Vec::new(), Stats::default()))
            .unwrap();
        tx1.send(FromWorker::Round(Vec::new(), None, 0)).unwrap();
        let mut stats = Stats::default();
        let mut sink = |_: Item, _: &mut Stats| Ok::<(), RunError<Infallible>>(());
        let res = consume(&[rx0, rx1], &Ledger::new(2), &mut stats, &mut sink);
        assert!(matches!(res, Err(Stop::Disconnected)));
    }
}
