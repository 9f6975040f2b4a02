//! `--threads N` gives exactly the one-thread output: every sample, and a built capture of
//! many interleaved connections, compared row by row (in streaming order) and stat by stat.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::indexing_slicing)]

mod clock;

use super::{Config, FnSink, RunError, RunTotals, analyze_into};
use crate::capture::testing::TcpConn;
use serde_json::Value;
use std::convert::Infallible;
use std::path::{Path, PathBuf};

/// The run's config: `threads`, and the key log recorded beside a TLS sample (`X.keys`).
fn config(paths: &[String], threads: usize) -> Config {
    let mut keylog = crate::tls::KeyLog::new();
    for p in paths {
        let keys = Path::new(p).with_extension("keys");
        if let Ok(file) = std::fs::File::open(&keys) {
            keylog
                .read_from("keys", std::io::BufReader::new(file))
                .unwrap();
        }
    }
    Config {
        threads,
        keylog: std::sync::Arc::new(keylog),
        ..Config::default()
    }
}

/// Rows as the sink received them (not sorted), the run's stats as JSON, and the connection
/// records in the order they were handed on (Debug form).
fn run_with_connections(paths: &[String], threads: usize) -> (Vec<Value>, Value, Vec<String>) {
    let cfg = config(paths, threads);
    let mut rows = Vec::new();
    let mut connections = Vec::new();
    let on_row = |ex| {
        rows.push(serde_json::to_value(&ex).unwrap());
        Ok::<(), std::io::Error>(())
    };
    let on_connection = |record| {
        connections.push(format!("{record:?}"));
        Ok(())
    };
    let totals: RunTotals = analyze_into(paths, &cfg, &mut FnSink(on_row, on_connection))
        .unwrap_or_else(|e| panic!("{paths:?} threads={threads}: {e}"));
    (
        rows,
        serde_json::to_value(&totals.stats).unwrap(),
        connections,
    )
}

/// The HTTP events the sink received, in order (Debug form), and the stats.
fn http_events(paths: &[String], threads: usize) -> (Vec<String>, Value) {
    let cfg = config(paths, threads);
    let mut events = Vec::new();
    let totals = super::run_http(
        paths,
        &cfg,
        Some((cfg.mcp, crate::mcp::PreparedEvents::All)),
        &mut |item, _, _| {
            // Marks come as often as rounds, which differ with the thread count.
            if let super::packets::Item::Event(ev) = item {
                events.push(format!("{ev:?}"));
            }
            Ok::<(), RunError<Infallible>>(())
        },
    )
    .unwrap_or_else(|e| panic!("{paths:?} threads={threads}: {e}"));
    (events, serde_json::to_value(&totals.stats).unwrap())
}

/// Runs `paths` with 1 thread and with `more`, requires the same HTTP events and rows in the
/// same order and the same stats; returns the one-thread result.
fn same_as_one_thread(paths: &[String], more: &[usize]) -> (Vec<Value>, Value) {
    let (one_rows, one_stats, one_connections) = run_with_connections(paths, 1);
    let one = (one_rows, one_stats);
    if !paths.iter().all(|p| p.ends_with(".har")) {
        assert!(
            !one_connections.is_empty(),
            "{paths:?}: no connection records"
        );
    }
    let one_events = http_events(paths, 1);
    for &threads in more {
        let (events, stats) = http_events(paths, threads);
        assert_eq!(
            events.len(),
            one_events.0.len(),
            "{paths:?}: HTTP event count with {threads} threads"
        );
        for (i, (got, want)) in events.iter().zip(&one_events.0).enumerate() {
            assert_eq!(
                got, want,
                "{paths:?}: HTTP event {i} with {threads} threads"
            );
        }
        assert_eq!(
            stats, one_events.1,
            "{paths:?}: HTTP stats with {threads} threads"
        );
        let (rows, stats, connections) = run_with_connections(paths, threads);
        // The connections table too: the same records in the same (closing) order.
        assert_eq!(
            connections, one_connections,
            "{paths:?}: connection records with {threads} threads"
        );
        assert_eq!(
            rows.len(),
            one.0.len(),
            "{paths:?}: row count with {threads} threads"
        );
        for (i, (got, want)) in rows.iter().zip(&one.0).enumerate() {
            assert_eq!(got, want, "{paths:?}: row {i} with {threads} threads");
        }
        assert_eq!(stats, one.1, "{paths:?}: stats with {threads} threads");
    }
    one
}

fn samples() -> Vec<PathBuf> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("samples");
    let mut files: Vec<PathBuf> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| {
            p.extension()
                .is_some_and(|e| e == "pcap" || e == "pcapng" || e == "har")
        })
        .collect();
    files.sort();
    files
}

#[test]
fn every_sample_same_with_threads() {
    let files = samples();
    assert!(files.len() >= 20, "samples/ has {} captures", files.len());
    let mut with_rows = 0;
    for f in &files {
        let path = f.to_string_lossy().into_owned();
        let (rows, stats) = same_as_one_thread(std::slice::from_ref(&path), &[2, 3]);
        with_rows += usize::from(!rows.is_empty());
        if !path.ends_with(".har") {
            assert!(
                stats["capture"]["packets_total"].as_u64().unwrap() > 0,
                "{path}"
            );
        }
    }
    // Every sample is MCP traffic.
    assert_eq!(with_rows, files.len());
}

#[test]
fn all_packet_samples_in_one_run_same_with_threads() {
    // Several inputs merged by time: stream numbers and ids span files.
    let paths: Vec<String> = samples()
        .iter()
        .filter(|p| !p.to_string_lossy().ends_with(".har"))
        .map(|p| p.to_string_lossy().into_owned())
        .collect();
    let (rows, stats) = same_as_one_thread(&paths, &[2, 4]);
    assert!(rows.len() > 100, "{} rows", rows.len());
    assert!(stats["flow"]["tcp_streams"].as_u64().unwrap() > 50);
}

pub(super) const T0_US: i64 = 1_700_000_000_000_000;

/// One TCP connection of the built capture: its packets, in its own order.
pub(super) struct Conn {
    tcp: TcpConn,
    pub(super) packets: Vec<Vec<u8>>,
}

impl Conn {
    /// Connection `n`: its handshake; data in 300-byte segments, each acknowledged.
    pub(super) fn open(n: u16) -> Conn {
        let hi = u8::try_from(n / 200).unwrap();
        let lo = u8::try_from(n % 200).unwrap();
        let mut packets = Vec::new();
        let mut tcp = TcpConn::open(
            &mut packets,
            ([10, 1, hi, lo + 1], 40000 + n),
            ([10, 2, 0, 1 + u8::from(n.is_multiple_of(3))], 8080),
            (1000 * u32::from(n), 7000 * u32::from(n)),
        );
        tcp.mss = 300;
        tcp.ack_each = true;
        Conn { tcp, packets }
    }

    /// Bytes from one side; `drop` loses one segment (the ACK after it covers it, so the
    /// flow stage reports a gap).
    pub(super) fn send(&mut self, from_client: bool, data: &[u8], drop: Option<usize>) {
        self.tcp
            .send_losing(&mut self.packets, from_client, data, drop);
    }

    pub(super) fn post(&mut self, id: u32, method: &str, text_len: usize) {
        let body = format!(
            r#"{{"jsonrpc":"2.0","id":{id},"method":"{method}","params":{{"name":"echo","arguments":{{"text":"{}"}}}}}}"#,
            "x".repeat(text_len)
        );
        let req = format!(
            "POST /mcp HTTP/1.1\r\nHost: s\r\nContent-Type: application/json\r\n\
             Accept: application/json, text/event-stream\r\nMcp-Session-Id: s{}\r\n\
             Content-Length: {}\r\n\r\n{body}",
            self.tcp.client.1,
            body.len()
        );
        self.send(true, req.as_bytes(), None);
    }

    pub(super) fn json_response(&mut self, id: u32, text_len: usize, drop: Option<usize>) {
        let body = format!(
            r#"{{"jsonrpc":"2.0","id":{id},"result":{{"content":[{{"type":"text","text":"{}"}}]}}}}"#,
            "y".repeat(text_len)
        );
        let resp = format!(
            "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: {}\r\n\r\n{body}",
            body.len()
        );
        self.send(false, resp.as_bytes(), drop);
    }

    fn sse_response(&mut self, id: u32, progress_events: u32) {
        self.send(
            false,
            b"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nTransfer-Encoding: chunked\r\n\r\n",
            None,
        );
        for p in 0..progress_events {
            let ev = format!(
                "data: {{\"jsonrpc\":\"2.0\",\"method\":\"notifications/progress\",\"params\":{{\"progressToken\":{id},\"progress\":{p}}}}}\n\n"
            );
            self.send(
                false,
                format!("{:x}\r\n{ev}\r\n", ev.len()).as_bytes(),
                None,
            );
        }
        let ev =
            format!("data: {{\"jsonrpc\":\"2.0\",\"id\":{id},\"result\":{{\"content\":[]}}}}\n\n");
        self.send(
            false,
            format!("{:x}\r\n{ev}\r\n0\r\n\r\n", ev.len()).as_bytes(),
            None,
        );
    }

    fn close(&mut self) {
        self.tcp.close(&mut self.packets, false);
    }
}

/// `conns` connections, their packets interleaved one by one (connection c's packet i at
/// T0 + i ms + c µs), with every kind of ending: FIN, RST mid-response, open at the
/// end of the capture with a request unanswered, a gap in a response; plus a retransmitted
/// segment, a swapped pair and one frame whose clock steps back. Returns the pcap, the
/// number of requests in it and the number of segments lost.
fn built_capture(conns: u16) -> (Vec<u8>, usize, u64) {
    let mut requests = 0;
    let mut lost = 0;
    let mut all: Vec<(i64, Vec<u8>)> = Vec::new();
    for n in 0..conns {
        let mut c = Conn::open(n);
        c.post(1, "initialize", 10);
        c.json_response(1, 20, None);
        requests += 1;
        for k in 0..(2 + u32::from(n % 5)) {
            let id = 2 + k;
            c.post(id, "tools/call", 50 + 200 * usize::from(n % 4));
            requests += 1;
            if k % 2 == 0 {
                c.sse_response(id, k % 3);
            } else {
                let drop = (n % 7 == 3).then_some(1);
                lost += u64::from(drop.is_some());
                c.json_response(id, 700, drop);
            }
        }
        match n % 4 {
            0 | 3 => c.close(),
            1 => {
                c.post(99, "tools/call", 10);
                requests += 1;
                c.send(
                    false,
                    b"HTTP/1.1 200 OK\r\nContent-Length: 500\r\n\r\n{\"jsonrpc\"",
                    None,
                );
                c.tcp.reset(&mut c.packets, true);
            }
            _ => {
                c.post(98, "resources/read", 10);
                requests += 1;
            }
        }
        if n % 6 == 2 {
            // A retransmission of the request head's first segment.
            let copy = c.packets[3].clone();
            c.packets.insert(8, copy);
        }
        if n % 5 == 4 {
            c.packets.swap(5, 6);
        }
        let base = T0_US + i64::from(n);
        for (i, p) in c.packets.into_iter().enumerate() {
            all.push((base + 1000 * i64::try_from(i).unwrap(), p));
        }
    }
    all.sort_by_key(|(ts, _)| *ts);
    // A clock step back (capture.time_went_backwards).
    let mid = all.len() / 2;
    all.swap(mid, mid + 1);

    (pcap_of(&all), requests, lost)
}

/// A classic pcap (Ethernet, µs) of `(time in µs, frame)` in the order given.
pub(super) fn pcap_of(frames: &[(i64, Vec<u8>)]) -> Vec<u8> {
    crate::capture::testing::pcap(frames.iter().map(|(ts, data)| (*ts, data.as_slice())))
}

#[test]
fn interleaved_connections_same_with_threads() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("interleaved.pcap");
    let (pcap, requests, lost) = built_capture(120);
    std::fs::write(&path, pcap).unwrap();
    let paths = [path.to_string_lossy().into_owned()];
    let (rows, stats) = same_as_one_thread(&paths, &[2, 3, 5]);
    assert_eq!(rows.len(), requests);
    assert_eq!(stats["flow"]["tcp_streams"], 120);
    assert_eq!(
        stats["capture"]["anomalies"]["capture.time_went_backwards"],
        1
    );
    // Every lost segment is a full 300-byte one, cutting a response body.
    assert_eq!(lost, 30);
    assert_eq!(stats["flow"]["gap_bytes"], 300 * lost);
    assert_eq!(stats["http"]["anomalies"]["http.gap_in_body"], lost);
    assert!(stats["flow"]["duplicate_bytes"].as_u64().unwrap() > 0);
    // More than one round of frames went to the workers.
    assert!(
        stats["capture"]["packets_total"].as_u64().unwrap()
            > 4 * u64::from(super::parallel::ROUND_FRAMES)
    );
}

/// Gzip responses that inflate to 1 MiB each, their segments interleaved across connections:
/// nearly every 300-byte segment inflates past `ROUND_BYTES`, so HTTP workers send their
/// rounds in parts and the caller merges them as they come (`parallel::FromWorker::Part`).
/// The events, rows and counts must be those of one thread.
#[test]
fn inflating_bodies_sent_in_parts_same_with_threads() {
    use std::io::Write;
    let conns = 6u16;
    let mut per_conn: Vec<Vec<Vec<u8>>> = Vec::new();
    for n in 0..conns {
        let mut c = Conn::open(n);
        c.post(1, "tools/call", 20);
        let text = "z".repeat(1 << 20);
        let body = format!(
            r#"{{"jsonrpc":"2.0","id":1,"result":{{"content":[{{"type":"text","text":"{text}"}}]}}}}"#
        );
        let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::best());
        gz.write_all(body.as_bytes()).unwrap();
        let gz = gz.finish().unwrap();
        let head = format!(
            "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Encoding: gzip\r\n\
             Content-Length: {}\r\n\r\n",
            gz.len()
        );
        c.send(false, head.as_bytes(), None);
        c.send(false, &gz, None);
        c.close();
        per_conn.push(c.packets);
    }
    // Round robin: every connection's body is inflating at once.
    let mut all: Vec<(i64, Vec<u8>)> = Vec::new();
    let longest = per_conn.iter().map(Vec::len).max().unwrap();
    for i in 0..longest {
        for packets in &per_conn {
            if let Some(p) = packets.get(i) {
                let ts = T0_US + 100 * i64::try_from(all.len()).unwrap();
                all.push((ts, p.clone()));
            }
        }
    }
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("inflating.pcap");
    std::fs::write(&path, pcap_of(&all)).unwrap();
    let paths = [path.to_string_lossy().into_owned()];
    let (rows, stats) = same_as_one_thread(&paths, &[2, 3, 4]);
    assert_eq!(rows.len(), usize::from(conns));
    assert!(
        rows.iter().all(|r| r["outcome"] == "TOOL_SUCCESS"),
        "{rows:?}"
    );
    assert_eq!(stats["flow"]["tcp_streams"], u64::from(conns));
}

#[test]
fn sink_error_stops_a_threaded_run() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("interleaved.pcap");
    std::fs::write(&path, built_capture(60).0).unwrap();
    // Reader-only (2) and sharded (3) runs.
    for threads in [2, 3] {
        let cfg = Config {
            threads,
            ..Config::default()
        };
        let mut seen = 0;
        let on_row = |_| {
            seen += 1;
            if seen == 3 {
                return Err(std::io::Error::other("disk full"));
            }
            Ok(())
        };
        let res = analyze_into(
            &[path.to_string_lossy().into_owned()],
            &cfg,
            &mut FnSink(on_row, |_| Ok(())),
        );
        match res {
            Err(RunError::Sink(e)) => assert_eq!(e.to_string(), "disk full"),
            other => panic!("expected the sink's error, got {other:?}"),
        }
        assert_eq!(seen, 3);
    }
}

#[test]
fn missing_input_fails_before_threads_start() {
    let cfg = Config {
        threads: 2,
        ..Config::default()
    };
    let res = analyze_into(
        &["/nonexistent/x.pcap".to_string()],
        &cfg,
        &mut FnSink(|_| Ok::<(), std::io::Error>(()), |_| Ok(())),
    );
    assert!(matches!(res, Err(RunError::Capture(_))), "{res:?}");
}

/// A request uploaded over 600 ms keeps the first `exchange_id` although 40 exchanges on other
/// connections start and end meanwhile: the HTTP stage reports it under way, so the release
/// marks that let rows leave before the 1 s reorder slack hold every row that started after
/// it. With 1, 2 and 3 threads alike.
#[test]
fn a_slow_upload_keeps_its_place_ahead_of_quicker_exchanges() {
    let mut all: Vec<(i64, Vec<u8>)> = Vec::new();
    let mut slow = Conn::open(0);
    slow.post(1, "tools/call", 1500);
    slow.json_response(1, 20, None);
    slow.close();
    // Handshake at T0 µs apart, then a packet every 50 ms: the upload spans 600 ms.
    let mut slow_start = None;
    for (i, p) in slow.packets.into_iter().enumerate() {
        let i = i64::try_from(i).unwrap();
        let ts = if i < 3 {
            T0_US + i
        } else {
            T0_US + 50_000 * (i - 2)
        };
        if i == 3 {
            slow_start = Some(ts);
        }
        all.push((ts, p));
    }
    for n in 1..=40u16 {
        let mut c = Conn::open(n);
        c.post(2, "tools/call", 10);
        c.json_response(2, 10, None);
        c.close();
        let base = T0_US + 60_000 + 12_000 * i64::from(n);
        for (i, p) in c.packets.into_iter().enumerate() {
            all.push((base + 1000 * i64::try_from(i).unwrap(), p));
        }
    }
    all.sort_by_key(|(ts, _)| *ts);
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("slow-upload.pcap");
    std::fs::write(&path, pcap_of(&all)).unwrap();
    let paths = [path.to_string_lossy().into_owned()];
    let (rows, _) = same_as_one_thread(&paths, &[2, 3]);
    assert_eq!(rows.len(), 41);
    assert!(all.len() > 3 * usize::try_from(super::parallel::ROUND_FRAMES).unwrap());
    let slow_start = slow_start.unwrap();
    let first = rows.iter().find(|r| r["exchange_id"] == 1).unwrap();
    assert_eq!(first["jsonrpc_id"], "1", "{first}");
    assert_eq!(first["outcome"], "TOOL_SUCCESS");
    let mut by_id: Vec<&Value> = rows.iter().collect();
    by_id.sort_by_key(|r| r["exchange_id"].as_u64().unwrap());
    let starts: Vec<i64> = by_id
        .iter()
        .map(|r| r["ts_request"].as_i64().unwrap())
        .collect();
    assert_eq!(starts[0], slow_start);
    assert!(starts.windows(2).all(|w| w[0] <= w[1]), "{starts:?}");
    // The slow request ends about 550 ms after its first byte, well after the others began.
    let others_begin = T0_US + 60_000 + 12_000;
    assert!(slow_start < others_begin && others_begin + 500_000 < slow_start + 600_000);
}
