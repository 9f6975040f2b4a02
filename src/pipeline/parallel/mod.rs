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

//!
//! ```text
//! mod.rs     the threads, their messages and what they share (the ledger)
//! reader.rs  the reader thread: rounds of stream events to the workers, or parsed in place
//! worker.rs  an HTTP worker: the stream chain of its streams, a batch out for each batch in
//! merge.rs   the caller's side: one k-way merge by tag rebuilds the one-thread order
//! ```

mod merge;
mod reader;
#[cfg(test)]
mod tests;
mod worker;

use super::RunError;
use super::packets::ChainCounters;
use super::packets::{Event, Item, ReadTotals};
use crate::capture::FrameSource;
use crate::counters::Merge;
use crate::flow::FlowLimits;
use crate::http::HttpEvent;
use crate::mcp::{McpLimits, PreparedEvents};
use crate::report::RunStats;
use crate::stream::{StreamEvent, StreamStage};
use merge::consume;
use reader::{Outbox, read_and_parse, read_and_shard};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::mpsc::sync_channel;
use std::thread::{self, ScopedJoinHandle};
use std::time::Duration;
use worker::http_worker;

/// Frames per round: enough that channel costs vanish, few enough that a round's data is
/// still in cache when the caller reads it (bench/README.md has the figures).
pub const ROUND_FRAMES: u32 = 128;
/// TCP payload bytes (and, from the reader's own HTTP stage, decoded body bytes) after which
/// a round is sent early (loopback captures carry 64 KB segments).
pub const ROUND_BYTES: usize = 256 * 1024;
/// Rounds waiting in each channel; past it the sender blocks. Three threads share two cores,
/// so each runs in time slices of a few milliseconds: the queue must outlast one (about 4 ms
/// of packets at 128 frames a round), or a thread waits while its peer is switched out
/// (bench/README.md has the figures).
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
pub(super) type EventSink<'a, E> = dyn FnMut(Item, &mut RunStats) -> Result<(), RunError<E>> + 'a;

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
    Finished(Vec<(u64, Event)>, Box<RunStats>),
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
pub(super) fn run<E, S, F>(
    source: F,
    flow: FlowLimits,
    stages: Vec<S>,
    progress: Option<indicatif::ProgressBar>,
    prepare: Option<(McpLimits, PreparedEvents)>,
    stats: &mut RunStats,
    sink: &mut EventSink<'_, E>,
) -> Result<ReadTotals, RunError<E>>
where
    E: std::error::Error + 'static,
    S: StreamStage<Output = HttpEvent> + Send,
    S::Counters: ChainCounters,
    F: FrameSource + Send,
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
                    read_and_parse(source, flow, progress.as_ref(), stage, prepare, &out)
                })
            }
            None => reader.spawn_scoped(scope, move || {
                read_and_shard(source, flow, progress.as_ref(), &to_workers)
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

/// The other end of a channel went away.
#[derive(Debug)]
struct Gone;

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
