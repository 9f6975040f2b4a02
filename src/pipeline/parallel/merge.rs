//! The caller's side of a `--threads` run: rounds from every producer, merged by tag into
//! the one-thread order, fed to the sink.

use super::{EventSink, FromWorker, Ledger, Stop};
use crate::counters::Merge;
use crate::pipeline::packets::{Event, Item};
use crate::report::RunStats;
use std::collections::VecDeque;
use std::sync::atomic::Ordering;
use std::sync::mpsc::Receiver;

/// The caller's side: takes round after round from every worker, merges each round by tag
/// and feeds the sink, until every worker has finished. Within a round it listens to the
/// worker that has read least far (see [`laggard`]) and feeds early parts on as soon as no
/// other worker can still send an event with a smaller tag, so parts do not pile up here.
pub(super) fn consume<E: std::error::Error + 'static>(
    from_workers: &[Receiver<FromWorker>],
    ledger: &Ledger,
    stats: &mut RunStats,
    sink: &mut EventSink<'_, E>,
) -> Result<(), Stop<E>> {
    let n = from_workers.len();
    // Per producer, this round: events not yet fed on, the tag of the last stream event it
    // has read (`None`: nothing heard yet), and whether its last part came.
    let mut pending: Vec<VecDeque<std::vec::IntoIter<(u64, Event)>>> =
        (0..n).map(|_| VecDeque::new()).collect();
    let mut read_through: Vec<Option<u64>> = vec![None; n];
    let mut done = vec![false; n];
    // The last round's flushed connections, one batch per producer, keyed by stream id.
    let mut flushed: Vec<VecDeque<std::vec::IntoIter<(u64, Event)>>> = Vec::with_capacity(n);
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
                    flushed.push(VecDeque::from([batch.into_iter()]));
                }
            }
        }
        feed_through(&mut pending, u64::MAX, &mut |ev| {
            sink(Item::Event(ev), stats)
        })
        .map_err(Stop::Sink)?;
        feed_through(&mut flushed, u64::MAX, &mut |ev| {
            sink(Item::Event(ev), stats)
        })
        .map_err(Stop::Sink)?;
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
pub(super) fn laggard(read_through: &[Option<u64>], done: &[bool]) -> Option<usize> {
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
pub(super) fn safe_bound(read_through: &[Option<u64>], done: &[bool]) -> Option<u64> {
    let mut bound = u64::MAX;
    for (through, last) in read_through.iter().zip(done) {
        if !last {
            bound = bound.min((*through)?);
        }
    }
    Some(bound)
}

/// Feeds `f`, in ascending tag order, the pending events tagged at most `bound`. Each
/// producer's parts are in order and a tag lives with one producer only: a k-way merge (of
/// a round's parts by stream-event number, or of the flushed connections by stream id).
pub(super) fn feed_through<X>(
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
