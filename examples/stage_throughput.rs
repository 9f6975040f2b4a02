//! Throughput of single stages on generated input, each without the stages around it.
//!
//! ```text
//! cargo run --release --example stage_throughput [flow|flows|analyzer|writers]...
//! ```
//!
//! - `flow`: 100,000 full-size segments of one connection through the flow table, in order
//!   and with every pair swapped;
//! - `flows`: 20,000 connections at once against a table of 10,000 (eviction);
//! - `analyzer`: 100,000 `tools/call` exchanges answered on SSE through the MCP analyzer;
//! - `writers`: 200,000 exchange rows to JSON lines, CSV and Parquet, and the sessions table.
//!
//! With no argument it runs all four. Each line gives the work, the time and the rate; it
//! exits 1 when a stage handed on other than what it was given.

use mcp_trace::decode::{Segment, TcpFlags};
use mcp_trace::flow::{FlowCounters, FlowLimits, FlowTable};
use mcp_trace::http::{
    BodyEnd, ConnInfo, ExchangeRef, HttpEvent, HttpRequest, RequestHead, ResponseHead,
};
use mcp_trace::mcp::{Analyzer, Exchange, InferenceConfig, Kind, McpCounters, Outcome};
use mcp_trace::report::{Format, sessions, write_exchanges};
use std::net::SocketAddr;
use std::process::ExitCode;
use std::sync::Arc;
use std::time::Instant;

#[cfg(feature = "mimalloc")]
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

const MSS: u32 = 1448;

fn segment(frame: u64, ts_ns: i64, port: u16, seq: u32, flags: &str, payload: &[u8]) -> Segment {
    Segment {
        frame,
        input: 0,
        ts_ns,
        src: SocketAddr::from(([10, 0, 0, 1], port)),
        dst: SocketAddr::from(([10, 0, 0, 2], 80)),
        seq,
        ack: 1,
        flags: TcpFlags {
            syn: flags.contains('S'),
            ack: flags.contains('A'),
            fin: false,
            rst: false,
        },
        payload: payload.to_vec(),
        wire_payload_len: payload.len() as u32,
    }
}

/// One connection's client side; with `reorder`, every pair of segments swapped.
fn flow(reorder: bool) -> Result<(), String> {
    let mut table = FlowTable::new(FlowLimits::default());
    let mut stats = FlowCounters::default();
    let mut out = Vec::new();
    let payload = vec![b'x'; MSS as usize];
    let n: u32 = 100_000;
    table.push(segment(0, 0, 40000, 100, "S", &[]), &mut stats, &mut out);
    let start = Instant::now();
    let mut events = 0;
    for i in 0..n {
        let k = if reorder { i ^ 1 } else { i };
        let seg = segment(u64::from(i) + 1, 1_000, 40000, 101 + k * MSS, "A", &payload);
        table.push(seg, &mut stats, &mut out);
        events += out.len();
        out.clear();
    }
    table.finish(&mut stats, &mut out);
    let secs = start.elapsed().as_secs_f64();
    let mb = f64::from(n) * f64::from(MSS) / 1e6;
    println!(
        "flow reorder={reorder}: {mb:.0} MB in {secs:.2} s = {:.0} MB/s ({events} events)",
        mb / secs
    );
    let want = u64::from(n) * u64::from(MSS);
    if stats.tcp_payload_bytes != want {
        return Err(format!(
            "flow delivered {} of {want} bytes",
            stats.tcp_payload_bytes
        ));
    }
    Ok(())
}

/// 25 rounds of one small segment on each of 20,000 connections, 10,000 open at most.
fn flows() -> Result<(), String> {
    let limits = FlowLimits {
        max_open_flows: 10_000,
        ..FlowLimits::default()
    };
    let mut table = FlowTable::new(limits);
    let mut stats = FlowCounters::default();
    let mut out = Vec::new();
    let payload = vec![b'y'; 200];
    let connections: u16 = 20_000;
    let rounds: u32 = 25;
    let mut frame = 0;
    let mut ts_ns = 0;
    let start = Instant::now();
    for round in 0..rounds {
        for port in 0..connections {
            frame += 1;
            ts_ns += 1_000;
            let seg = segment(frame, ts_ns, port, 1 + round * 200, "A", &payload);
            table.push(seg, &mut stats, &mut out);
        }
        out.clear();
    }
    table.finish(&mut stats, &mut out);
    let secs = start.elapsed().as_secs_f64();
    let packets = f64::from(connections) * f64::from(rounds);
    let evicted = stats.anomalies.get("flow.evicted").copied().unwrap_or(0);
    println!(
        "flows: {packets} packets over {connections} connections (10,000 open at most) in \
         {secs:.2} s = {:.0} kpkt/s, {evicted} evicted",
        packets / secs / 1e3
    );
    if evicted == 0 {
        return Err("no connection was evicted".into());
    }
    Ok(())
}

/// 100,000 `tools/call` requests, each answered by one SSE event, on one connection.
fn analyzer() -> Result<(), String> {
    let mut a = Analyzer::new(InferenceConfig::default());
    let mut stats = McpCounters::default();
    let conn = Arc::new(ConnInfo {
        conn: 1,
        tcp_stream: Some(0),
        client_addr: "10.0.0.1:40000".into(),
        server_addr: "10.0.0.2:8080".into(),
        capture: "generated".into(),
        tls_version: None,
        tls_sni: None,
    });
    let n = 100_000u32;
    let mut ts = 1_700_000_000_000_000i64;
    let start = Instant::now();
    for id in 0..n {
        let xref = ExchangeRef {
            conn: conn.clone(),
            depth: id + 1,
        };
        let body = format!(
            r#"{{"jsonrpc":"2.0","id":{id},"method":"tools/call","params":{{"name":"echo","arguments":{{"a":1}}}}}}"#
        );
        ts += 1_000;
        let request = HttpRequest {
            xref: xref.clone(),
            ts_first_us: ts,
            ts_last_us: ts + 10,
            frame: 0,
            head: RequestHead {
                method: "POST".into(),
                uri: "/mcp".into(),
                version: "1.1".into(),
                headers: [("mcp-session-id", "S")].into_iter().collect(),
            },
            wire_len: body.len() as u64,
            body: body.into_bytes(),
            complete: true,
            anomalies: vec![],
            h2_stream: None,
        };
        a.push(HttpEvent::Request(request), &mut stats);
        a.push(
            HttpEvent::ResponseHead {
                xref: xref.clone(),
                ts_us: ts + 100,
                frame: 0,
                head: ResponseHead {
                    status: 200,
                    reason: "OK".into(),
                    version: "1.1".into(),
                    headers: [("content-type", "text/event-stream")]
                        .into_iter()
                        .collect(),
                },
            },
            &mut stats,
        );
        let event = format!(
            "event: message\ndata: {{\"jsonrpc\":\"2.0\",\"id\":{id},\"result\":{{\"content\":[{{\"type\":\"text\",\"text\":\"ok\"}}]}}}}\n\n"
        );
        a.push(
            HttpEvent::ResponseBody {
                xref: xref.clone(),
                ts_us: ts + 200,
                data: event.into_bytes(),
            },
            &mut stats,
        );
        a.push(
            HttpEvent::ResponseEnd {
                xref,
                ts_us: ts + 300,
                end: BodyEnd::Complete,
                wire_len: 100,
                decoded_len: 100,
                anomalies: vec![],
                client_closed: false,
            },
            &mut stats,
        );
    }
    let rows = a.finish(&mut stats);
    let secs = start.elapsed().as_secs_f64();
    println!(
        "analyzer: {} SSE exchanges in {secs:.2} s = {:.0}/s",
        rows.len(),
        f64::from(n) / secs
    );
    let successes = rows
        .iter()
        .filter(|r| r.kind == Kind::Request && r.outcome == Outcome::ToolSuccess)
        .count();
    if successes != n as usize || rows.len() != n as usize {
        return Err(format!(
            "{} rows, {successes} TOOL_SUCCESS, want {n}",
            rows.len()
        ));
    }
    Ok(())
}

/// 200,000 rows to each table format, then the sessions table.
fn writers() -> Result<(), String> {
    let dir = tempfile::tempdir().map_err(|e| e.to_string())?;
    let rows: Vec<Exchange> = (0..200_000u64)
        .map(|i| Exchange {
            exchange_id: i + 1,
            capture: "generated".into(),
            ts_request: 1_700_000_000_000_000 + i as i64 * 1_000,
            ts_response: Some(1_700_000_000_000_500 + i as i64 * 1_000),
            latency_ms: Some(0.5),
            client_addr: "10.0.0.1:40000".into(),
            server_addr: "10.0.0.2:8080".into(),
            tcp_stream: Some(i % 7),
            session_key: format!("s{}", i % 100).into(),
            kind: Kind::Request,
            http_method: "POST".into(),
            path: "/mcp".into(),
            http_status: Some(200),
            content_type: Some("application/json".into()),
            jsonrpc_id: Some(i.to_string()),
            rpc_method: Some("tools/call".into()),
            tool_name: Some("search".into()),
            outcome: Outcome::ToolSuccess,
            layer: Outcome::ToolSuccess.layer(),
            final_response: true,
            request_bytes: 120,
            response_bytes: 340,
            attempt: 1,
            ..Exchange::default()
        })
        .collect();
    let mut formats = vec![(Format::Jsonl, "rows.jsonl"), (Format::Csv, "rows.csv")];
    if cfg!(feature = "parquet") {
        formats.push((Format::Parquet, "rows.parquet"));
    }
    for (format, name) in formats {
        let path = dir.path().join(name);
        let start = Instant::now();
        let written = write_exchanges(&rows, &path, format).map_err(|e| e.to_string())?;
        let secs = start.elapsed().as_secs_f64();
        let size = std::fs::metadata(&path).map_err(|e| e.to_string())?.len();
        println!(
            "writers {format:?}: {written} rows in {secs:.2} s = {:.0} rows/s, {size} bytes",
            written as f64 / secs
        );
        if written != rows.len() as u64 {
            return Err(format!("{format:?} wrote {written} of {} rows", rows.len()));
        }
    }
    let start = Instant::now();
    let table = sessions(&rows);
    println!(
        "writers sessions: {} sessions from {} rows in {:.3} s",
        table.len(),
        rows.len(),
        start.elapsed().as_secs_f64()
    );
    Ok(())
}

fn main() -> ExitCode {
    let mut which: Vec<String> = std::env::args().skip(1).collect();
    if which.is_empty() {
        which = ["flow", "flows", "analyzer", "writers"]
            .map(String::from)
            .to_vec();
    }
    for name in &which {
        let result = match name.as_str() {
            "flow" => flow(false).and_then(|()| flow(true)),
            "flows" => flows(),
            "analyzer" => analyzer(),
            "writers" => writers(),
            other => Err(format!(
                "unknown measurement `{other}` (flow, flows, analyzer, writers)"
            )),
        };
        if let Err(e) = result {
            eprintln!("stage_throughput: {e}");
            return ExitCode::FAILURE;
        }
    }
    ExitCode::SUCCESS
}
