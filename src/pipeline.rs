//! Wires the stages together, one way:
//! inputs -> [`Frame`](crate::capture::Frame)s -> [`Segment`](crate::decode::Segment)s
//! -> [`StreamEvent`]s -> [`HttpEvent`]s -> a sink (the MCP analyzer for `analyze`, the HTTP
//! log for `http`).
//!
//! HAR inputs skip the packet stages and join at the sink. Nothing here
//! interprets data; it only moves it and counts it.
//!
//! [`analyze_streaming`] hands each exchange to the caller as the analyzer
//! releases it (every [`DRAIN_EVERY_EVENTS`] HTTP events), so memory follows
//! live state rather than the capture. With a HAR input the analyzer is drained
//! only at the end: HAR entries are read after the packet inputs and may
//! precede them in time, and ids follow time.
//!
//! The stages between flow and the sink are one chain of [`StreamStage`]s, built by
//! `stream_chain` and called the same way on every thread that runs it: push each stream
//! event, finish at the end of input, and ask what it still holds
//! ([`StreamStage::held_since_us`], the release watermark).
//!
//! With [`Config::threads`] >= 2 the packet stages run on a reader thread and the stream
//! chain on workers sharded by stream, or on the reader for 2 (see `parallel/`); the sink
//! still gets the same events in the same order, on the caller's thread.

use crate::anomaly::Stats;
use crate::capture::{self, CaptureError, InputInfo, Merger, Source};
use crate::decode::{Decoded, Decoder};
use crate::flow::{Chain, ConnectionRecord, FlowLimits, FlowTable, StreamEvent, StreamStage};
use crate::har;
use crate::http::HttpLimits;
use crate::http::{HttpEvent, HttpLog, HttpRow, HttpStage};
use crate::mcp::{
    Analyzer, Exchange, InferenceConfig, McpLimits, Prepared, PreparedEvents, Preparer,
};
use crate::tls::{KeyLog, TlsStage};
use arcstr::ArcStr;
use std::convert::Infallible;
use std::sync::Arc;
use std::time::Instant;

mod parallel;
#[cfg(test)]
mod tests;

/// The stream stages after flow, as one [`StreamStage`]: TLS, then HTTP.
type StreamChain = Chain<TlsStage, HttpStage>;

/// Builds the chain of stream stages; every thread that runs them gets its own from here.
/// Streams are dealt to threads by stream id, so a connection's TLS state stays on one
/// thread; the key log is shared read-only. The TLS 1.2 sessions a resumed handshake takes
/// its master secret from are each thread's own: a resumption dealt to another thread than
/// its full handshake finds no key unless its own random is logged.
fn stream_chain(names: &[ArcStr], limits: HttpLimits, keylog: &Arc<KeyLog>) -> StreamChain {
    Chain::new(
        TlsStage::shared(Arc::clone(keylog), false),
        HttpStage::with_limits(names.to_vec(), limits),
    )
}

/// Connection ids for HAR entries start above any TCP stream index.
const HAR_CONN_BASE: u64 = 1 << 48;

/// HTTP events between two [`Analyzer::drain_ready`] calls: often enough that few final rows
/// wait, rarely enough that the check costs nothing.
pub const DRAIN_EVERY_EVENTS: u32 = 256;

/// Most HTTP workers of a `--threads` run; more would only add channels.
pub const MAX_HTTP_WORKERS: usize = 64;

/// Why a streaming run stopped.
#[derive(Debug, thiserror::Error)]
pub enum RunError<E: std::error::Error + 'static> {
    /// An input could not be read.
    #[error(transparent)]
    Capture(#[from] CaptureError),
    /// The caller's row sink failed (e.g. the output file could not be written).
    #[error(transparent)]
    Sink(E),
    /// A thread of a `--threads` run stopped before the end of input (see `parallel`).
    #[error("{0}")]
    Worker(String),
}

/// What a streaming run counted (its rows went to the caller).
#[derive(Debug)]
pub struct RunTotals {
    pub stats: Stats,
    pub inputs: Vec<InputInfo>,
    pub elapsed_s: f64,
    pub bytes_read: u64,
}

/// Settings of one run.
#[derive(Debug, Clone, Default)]
pub struct Config {
    pub inference: InferenceConfig,
    pub flow: FlowLimits,
    pub http: HttpLimits,
    /// Bounds of the MCP stage and of the JSON-RPC parsing it does.
    pub mcp: McpLimits,
    /// Show a progress bar on stderr (the caller decides whether stderr is a terminal).
    pub progress: bool,
    /// Worker threads for the packet and HTTP stages; 0 or 1 runs everything on the caller's thread.
    pub threads: usize,
    /// TLS secrets from `--keylog` files.
    pub keylog: Arc<KeyLog>,
}

/// What one run produced, for the report stage.
#[derive(Debug)]
pub struct Analysis {
    pub rows: Vec<Exchange>,
    pub stats: Stats,
    pub inputs: Vec<InputInfo>,
    pub elapsed_s: f64,
    pub bytes_read: u64,
}

/// Totals of the packet and HTTP stages.
struct Totals {
    stats: Stats,
    inputs: Vec<InputInfo>,
    bytes_read: u64,
}

/// `mcp-trace analyze`: every stage, MCP exchanges out, all kept in memory and sorted by
/// `exchange_id`. [`analyze_streaming`] is the bounded-memory form.
pub fn analyze(paths: &[String], cfg: &Config) -> Result<Analysis, RunError<Infallible>> {
    let mut rows = Vec::new();
    let totals = analyze_streaming(paths, cfg, &mut |ex| {
        rows.push(*ex);
        Ok::<(), Infallible>(())
    })?;
    // Rows set aside while open come when they end (see `mcp::Analyzer`).
    rows.sort_by_key(|r| r.exchange_id);
    Ok(Analysis {
        rows,
        stats: totals.stats,
        inputs: totals.inputs,
        elapsed_s: totals.elapsed_s,
        bytes_read: totals.bytes_read,
    })
}

/// `mcp-trace analyze`, streaming: each exchange goes to `on_row` as soon as it is final, in
/// `exchange_id` order except rows that stayed open long (written when they end; see
/// `mcp::Analyzer`). The first `on_row` error stops the run.
pub fn analyze_streaming<E: std::error::Error + 'static>(
    paths: &[String],
    cfg: &Config,
    on_row: &mut dyn FnMut(Box<Exchange>) -> Result<(), E>,
) -> Result<RunTotals, RunError<E>> {
    analyze_streaming_with_connections(paths, cfg, on_row, &mut |_| Ok(()))
}

/// [`analyze_streaming`], also handing each TCP connection's row of the connections table to
/// `on_connection`: when the connection has closed and every exchange row it produced has
/// been released, so they come in that order, not in `tcp_stream` order (HAR input: none).
pub fn analyze_streaming_with_connections<E: std::error::Error + 'static>(
    paths: &[String],
    cfg: &Config,
    on_row: &mut dyn FnMut(Box<Exchange>) -> Result<(), E>,
    on_connection: &mut dyn FnMut(ConnectionRecord) -> Result<(), E>,
) -> Result<RunTotals, RunError<E>> {
    let started = Instant::now();
    let mut analyzer = Analyzer::with_limits(cfg.inference, cfg.mcp);
    let mut ready: Vec<Box<Exchange>> = Vec::new();
    let mut events = 0u32;
    // Two threads: the reader also runs the HTTP stage, so the analyzer's thread takes the
    // response bodies, and the POST bodies whenever it keeps up with the reader
    // (bench/README.md has the split).
    let reader_prepares = if cfg.threads == 2 {
        analyzer.prepare_responses_here();
        PreparedEvents::Posts
    } else {
        PreparedEvents::All
    };
    let mut totals = run_http(
        paths,
        cfg,
        Some((cfg.mcp, reader_prepares)),
        &mut |item, stats, streaming| {
            let drain = match item {
                Item::Event(ev) => {
                    analyzer.push_prepared(ev.http, ev.prepared, stats);
                    events = events.wrapping_add(1);
                    events.is_multiple_of(DRAIN_EVERY_EVENTS)
                }
                Item::Mark { unfinished_from_us } => {
                    analyzer.set_release_mark(unfinished_from_us);
                    true
                }
            };
            if streaming && drain {
                analyzer.drain_ready(analyzer.last_event_us(), stats, &mut ready);
                for ex in ready.drain(..) {
                    on_row(ex).map_err(RunError::Sink)?;
                }
            }
            for record in analyzer.take_connections() {
                on_connection(record).map_err(RunError::Sink)?;
            }
            Ok(())
        },
    )?;
    let (rows, connections) = analyzer.finish_with_connections(&mut totals.stats);
    for ex in rows {
        on_row(ex).map_err(RunError::Sink)?;
    }
    for record in connections {
        on_connection(record).map_err(RunError::Sink)?;
    }
    Ok(RunTotals {
        stats: totals.stats,
        inputs: totals.inputs,
        elapsed_s: started.elapsed().as_secs_f64(),
        bytes_read: totals.bytes_read,
    })
}

/// `mcp-trace http`: every HTTP exchange, MCP or not.
pub fn http_rows(paths: &[String]) -> Result<(Vec<HttpRow>, Stats), RunError<Infallible>> {
    http_rows_with(paths, &Config::default())
}

/// `mcp-trace http` with the settings of `cfg` (its key log; one thread).
pub fn http_rows_with(
    paths: &[String],
    cfg: &Config,
) -> Result<(Vec<HttpRow>, Stats), RunError<Infallible>> {
    http_rows_with_connections(paths, cfg, &mut |_| Ok(()))
}

/// [`http_rows_with`], also handing each TCP connection's row of the connections table to
/// `on_connection` as the connection closes (`mcp_exchanges` null: no MCP stage runs).
pub fn http_rows_with_connections<E: std::error::Error + 'static>(
    paths: &[String],
    cfg: &Config,
    on_connection: &mut dyn FnMut(ConnectionRecord) -> Result<(), E>,
) -> Result<(Vec<HttpRow>, Stats), RunError<E>> {
    let mut log = HttpLog::new();
    let cfg = Config {
        threads: 1,
        ..cfg.clone()
    };
    let totals = run_http(paths, &cfg, None, &mut |item, _, _| {
        if let Item::Event(ev) = item {
            match ev.http {
                HttpEvent::ConnectionClosed(record) => {
                    on_connection(*record).map_err(RunError::Sink)?;
                }
                http => log.push(&http),
            }
        }
        Ok(())
    })?;
    Ok((log.finish(), totals.stats))
}

/// File name shown in the `capture` column.
pub fn display_name(path: &str) -> ArcStr {
    if path == "-" {
        return arcstr::literal!("-");
    }
    let name = std::path::Path::new(path)
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_else(|| path.to_string());
    ArcStr::from(name)
}

/// An HTTP event and, for `analyze`, the body work on it that needs no analyzer state, done
/// on the thread that produced the event (see [`crate::mcp::Preparer`]).
#[derive(Debug)]
pub struct Event {
    pub http: HttpEvent,
    pub prepared: Option<Prepared>,
}

impl Event {
    fn new(http: HttpEvent, preparer: Option<&mut Preparer>) -> Event {
        let prepared = preparer.and_then(|p| p.prepare(&http));
        Event { http, prepared }
    }
}

/// What the HTTP stages hand on, in one-thread order.
// Items move once, from the HTTP stage to the sink: boxing every event would cost an
// allocation per event for the rare marks' sake.
#[allow(clippy::large_enum_variant)]
#[derive(Debug)]
pub enum Item {
    Event(Event),
    /// Every HTTP request handed on after this started at or after `unfinished_from_us`
    /// (the earliest request under way in the HTTP stages; `None`: none is), or at or after
    /// the packet that completes it ([`crate::mcp::Analyzer::set_release_mark`]). Sent every
    /// round of packets while the inputs are read in time order.
    Mark {
        unfinished_from_us: Option<i64>,
    },
}

/// Receives each item with the stats and whether events are in capture-time order.
type HttpSink<'a, E> = dyn FnMut(Item, &mut Stats, bool) -> Result<(), RunError<E>> + 'a;

/// Runs the packet and HTTP stages, handing each HTTP event to `sink` with the stats and
/// whether the events come in capture-time order across all inputs (false when a HAR input
/// will follow the packet inputs).
fn run_http<E: std::error::Error + 'static>(
    paths: &[String],
    cfg: &Config,
    prepare: Option<(McpLimits, PreparedEvents)>,
    sink: &mut HttpSink<'_, E>,
) -> Result<Totals, RunError<E>> {
    let mut stats = Stats::default();
    let mut readers = Vec::new();
    let mut hars = Vec::new();
    let names: Vec<ArcStr> = paths.iter().map(|p| display_name(p)).collect();
    // Inputs are opened (and their headers checked) before any work starts,
    // so a bad file fails the run at once.
    for (index, path) in paths.iter().enumerate() {
        match capture::open(path, index)? {
            Source::Packets(reader) => readers.push(reader),
            Source::Har {
                name: _,
                data,
                info,
            } => hars.push((index, data, info)),
        }
    }
    let total_bytes: u64 = paths
        .iter()
        .filter_map(|p| std::fs::metadata(p).ok())
        .map(|m| m.len())
        .sum();
    let progress = progress_bar(cfg.progress, total_bytes);
    let in_order = hars.is_empty();

    let merger = Merger::new(readers);
    let read = if cfg.threads >= 2 {
        let chains: Vec<StreamChain> = (1..cfg.threads.min(MAX_HTTP_WORKERS + 1))
            .map(|_| stream_chain(&names, cfg.http, &cfg.keylog))
            .collect();
        parallel::run(
            merger,
            cfg.flow,
            chains,
            progress.clone(),
            prepare,
            &mut stats,
            &mut |item, stats| sink(item, stats, in_order),
        )?
    } else {
        let mut chain = stream_chain(&names, cfg.http, &cfg.keylog);
        let mut http_events: Vec<HttpEvent> = Vec::new();
        let mut preparer = prepare.map(Preparer::from);
        let mut frames = 0u32;
        let read = read_streams::<RunError<E>>(
            merger,
            cfg.flow,
            progress.as_ref(),
            &mut stats,
            &mut |events, secrets, stats| {
                for (ty, data) in secrets {
                    chain.add_capture_secrets(*ty, data);
                }
                for ev in events.drain(..) {
                    chain.push(ev, stats, &mut http_events);
                }
                for ev in http_events.drain(..) {
                    sink(
                        Item::Event(Event::new(ev, preparer.as_mut())),
                        stats,
                        in_order,
                    )?;
                }
                // As often as a `--threads` run's rounds.
                frames += 1;
                if frames >= parallel::ROUND_FRAMES {
                    frames = 0;
                    let unfinished_from_us = chain.held_since_us();
                    sink(Item::Mark { unfinished_from_us }, stats, in_order)?;
                }
                Ok(())
            },
        )?;
        chain.finish(&mut stats, &mut http_events);
        for ev in http_events.drain(..) {
            sink(
                Item::Event(Event::new(ev, preparer.as_mut())),
                &mut stats,
                in_order,
            )?;
        }
        read
    };

    let mut inputs = read.inputs;
    let mut bytes_read = read.bytes_read;
    let mut conn_base = HAR_CONN_BASE;
    for (index, data, info) in hars {
        let name = names
            .get(index)
            .cloned()
            .unwrap_or_else(|| arcstr::literal!("har"));
        bytes_read += data.len() as u64;
        let events = har::read_har(&name, &data, conn_base, &mut stats)?;
        conn_base += events.len() as u64 + 1;
        let mut preparer = prepare.map(Preparer::from);
        for ev in events {
            sink(
                Item::Event(Event::new(ev, preparer.as_mut())),
                &mut stats,
                false,
            )?;
        }
        inputs.push(info);
    }
    if let Some(bar) = progress {
        bar.finish_and_clear();
    }
    // The `--keylog` files' lines first, then those of the capture's blocks, at most
    // `MAX_REPORTED_LINES` named in all (the count is exact).
    let keys = cfg.keylog.stats();
    stats.keylog_malformed_lines = stats.keylog_malformed_lines.saturating_add(keys.malformed);
    let files = keys
        .malformed_lines
        .iter()
        .map(|(file, line)| format!("{file}:{line}"));
    let mut at: Vec<String> = files.chain(stats.keylog_malformed_at.drain(..)).collect();
    at.truncate(crate::tls::keylog::MAX_REPORTED_LINES);
    stats.keylog_malformed_at = at;
    Ok(Totals {
        stats,
        inputs,
        bytes_read,
    })
}

/// Secrets of the capture's Decryption Secrets Blocks: (secrets type, data).
type CaptureSecrets = [(u32, Vec<u8>)];

/// Takes (drains) the stream events of one frame, after the capture secrets read with it
/// (which go to the stream stages first).
type StreamSink<'a, X> =
    dyn FnMut(&mut Vec<StreamEvent>, &CaptureSecrets, &mut Stats) -> Result<(), X> + 'a;

/// Where the packet stages ended.
struct ReadTotals {
    inputs: Vec<InputInfo>,
    bytes_read: u64,
}

/// Capture read, decode and TCP reassembly: `emit` takes (drains) the stream events of each
/// frame, then those of the end of input, in order.
fn read_streams<X>(
    mut merger: Merger,
    flow: FlowLimits,
    progress: Option<&indicatif::ProgressBar>,
    stats: &mut Stats,
    emit: &mut StreamSink<'_, X>,
) -> Result<ReadTotals, X> {
    let mut decoder = Decoder::new();
    let mut flows = FlowTable::new(flow);
    let mut stream_events: Vec<StreamEvent> = Vec::new();
    let mut frames_since_tick = 0u32;
    let mut latest_ts_ns = i64::MIN;
    // Decryption Secrets Blocks read so far.
    let mut blocks = 0u64;

    while let Some(frame) = merger.next_frame_ref(stats) {
        // Inputs are merged by time, so a step back comes from within one file
        // (clock changes, reordered writes): latencies across it are unreliable.
        if frame.ts_ns < latest_ts_ns {
            stats.anomaly("capture.time_went_backwards");
        }
        latest_ts_ns = latest_ts_ns.max(frame.ts_ns);
        if frame.is_truncated() {
            stats.packets_truncated += 1;
        }
        match decoder.decode_ref(&frame) {
            Decoded::Segment(segment) => {
                stats.packets_decoded += 1;
                flows.push(segment, stats, &mut stream_events);
            }
            Decoded::Held => stats.packets_decoded += 1,
            Decoded::Skipped(reason) => stats.skip(reason),
        }
        let secrets = merger.take_secrets();
        count_malformed_secrets(&secrets, &mut blocks, stats);
        emit(&mut stream_events, &secrets, stats)?;
        frames_since_tick += 1;
        if frames_since_tick >= 4096 {
            frames_since_tick = 0;
            if let Some(bar) = progress {
                bar.set_position(merger.bytes_read());
            }
        }
    }
    for _ in 0..decoder.finish() {
        stats.anomaly("decode.ip_fragment_incomplete");
    }
    flows.finish(stats, &mut stream_events);
    let secrets = merger.take_secrets();
    count_malformed_secrets(&secrets, &mut blocks, stats);
    emit(&mut stream_events, &secrets, stats)?;
    Ok(ReadTotals {
        inputs: merger.infos(),
        bytes_read: merger.bytes_read(),
    })
}

/// Counts the malformed key log lines of the capture's TLS Decryption Secrets Blocks in the
/// run summary, as those of `--keylog` files are, each named by the block's place among the
/// run's blocks (`pcapng DSB #1:3`: its third line). Counted here, on the one thread that
/// reads them, because every stream stage that decrypts gets its own copy of each block.
fn count_malformed_secrets(secrets: &CaptureSecrets, blocks: &mut u64, stats: &mut Stats) {
    for (ty, data) in secrets {
        *blocks = blocks.saturating_add(1);
        if *ty != crate::tls::keylog::DSB_TLS_KEY_LOG {
            continue;
        }
        // Nothing is kept: only the lines are checked.
        let mut probe = KeyLog::with_limit(0);
        probe.add_decryption_secrets(&format!("pcapng DSB #{blocks}"), *ty, data);
        let found = probe.stats();
        stats.keylog_malformed_lines = stats.keylog_malformed_lines.saturating_add(found.malformed);
        let room =
            crate::tls::keylog::MAX_REPORTED_LINES.saturating_sub(stats.keylog_malformed_at.len());
        stats.keylog_malformed_at.extend(
            found
                .malformed_lines
                .iter()
                .take(room)
                .map(|(source, line)| format!("{source}:{line}")),
        );
    }
}

fn progress_bar(enabled: bool, total_bytes: u64) -> Option<indicatif::ProgressBar> {
    if !enabled || total_bytes == 0 {
        return None;
    }
    let bar = indicatif::ProgressBar::with_draw_target(
        Some(total_bytes),
        indicatif::ProgressDrawTarget::stderr(),
    );
    if let Ok(style) = indicatif::ProgressStyle::with_template(
        "{spinner} {bytes}/{total_bytes} {bytes_per_sec} {wide_bar} {eta}",
    ) {
        bar.set_style(style);
    }
    Some(bar)
}
