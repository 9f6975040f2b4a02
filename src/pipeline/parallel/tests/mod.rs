//! Threads, rounds, parts and the merge of a `--threads` run.

#![allow(clippy::unwrap_used, clippy::indexing_slicing)]
use super::merge::{consume, feed_through, laggard, safe_bound};
use super::reader::{Outbox, read_and_parse, shard};
use super::worker::body_bytes;
use super::*;
use crate::capture::Merger;
use crate::flow::FlowLimits;
use std::collections::VecDeque;
use std::convert::Infallible;
use std::sync::mpsc::sync_channel;

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
    let mut stats = RunStats::default();
    let mut sink = |_: Item, _: &mut RunStats| Ok::<(), RunError<Infallible>>(());
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
    out.send(FromWorker::Finished(Vec::new(), Box::default()))
        .unwrap();
    assert_eq!(ledger.backlog.load(Ordering::Relaxed), 3);
    let mut stats = RunStats::default();
    let mut sink = |_: Item, _: &mut RunStats| Ok::<(), RunError<Infallible>>(());
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
        tls_version: None,
        tls_sni: None,
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
        tx.send(FromWorker::Finished(Vec::new(), Box::default()))
            .unwrap();
    }
    let mut stats = RunStats::default();
    let mut seen = Vec::new();
    let mut sink = |item: Item, _: &mut RunStats| {
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
    tx0.send(FromWorker::Finished(Vec::new(), Box::default()))
        .unwrap();
    tx1.send(FromWorker::Round(Vec::new(), None, 0)).unwrap();
    let mut stats = RunStats::default();
    let mut sink = |_: Item, _: &mut RunStats| Ok::<(), RunError<Infallible>>(());
    let res = consume(&[rx0, rx1], &Ledger::new(2), &mut stats, &mut sink);
    assert!(matches!(res, Err(Stop::Disconnected)));
}
