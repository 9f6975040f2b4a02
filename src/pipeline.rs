//! Wires the stages together, one way:
//! inputs -> [`Frame`](crate::capture::Frame)s -> [`Segment`](crate::decode::Segment)s
//! -> [`StreamEvent`]s -> [`HttpEvent`]s -> a sink (the MCP analyzer for `analyze`, the HTTP
//! log for `http`).
//!
//! HAR inputs skip the packet stages and join at the sink. Nothing here
//! interprets data; it only moves it and counts it.
//!
//! Every run hands its output to one [`Sink`]: [`analyze_into`] each exchange as the analyzer
//! releases it (every [`DRAIN_EVERY_EVENTS`] HTTP events), so memory follows live state
//! rather than the capture; [`http_into`] the HTTP rows. Both hand it each connection's row
//! of the connections table. [`analyze`] and [`http_rows`] collect the rows in memory. With a HAR input the analyzer is drained
//! only at the end: HAR entries are read after the packet inputs and may
//! precede them in time, and ids follow time.
//!
//! The stages between flow and the sink are one chain of [`StreamStage`]s, built by
//! `stream_chain` and called the same way on every thread that runs it: push each stream
//! event, finish at the end of input, and ask what it still holds
//! ([`StreamStage::held_since_us`], the release watermark).
//!
//! ```text
//! pipeline.rs   the entry points and the wiring: inputs, the stream chain, HAR inputs
//!   packets.rs  the packet loop (capture, decode, flow) every thread count runs
//!   parallel/   --threads >= 2: that loop on a reader thread, the chain on workers
//! ```
//!
//! With [`Config::threads`] >= 2 the packet stages run on a reader thread and the stream
//! chain on workers sharded by stream, or on the reader for 2 (see `parallel/`); the sink
//! still gets the same events in the same order, on the caller's thread.

use crate::capture::{self, CaptureError, CaptureSecrets, FrameSource, InputInfo, Merger, Source};
use crate::flow::FlowLimits;
use crate::har;
use crate::http::HttpLimits;
use crate::http::{HttpEvent, HttpLog, HttpRow, HttpStage};
use crate::mcp::{Analyzer, Exchange, InferenceConfig, McpLimits, PreparedEvents, Preparer};
use crate::report::RunStats;
use crate::stream::{Chain, ConnectionRecord, StreamStage};
use crate::tls::{KeyLog, TlsLimits, TlsStage};
use arcstr::ArcStr;
use packets::{ChainCounters, Event, Item, read_streams};
use std::convert::Infallible;
use std::sync::Arc;
use std::time::Instant;

mod packets;
mod parallel;
#[cfg(test)]
mod tests;

/// The stream stages after flow, as one [`StreamStage`]: TLS, then HTTP.
type StreamChain = Chain<TlsStage, HttpStage>;

/// Builds the chain of stream stages; every thread that runs them gets its own from here.
/// Streams are dealt to threads by stream id, so a connection's TLS state stays on one
/// thread; the key log is shared read-only. The TLS 1.2 sessions a resumed handshake takes
/// its master secret from are each thread's own: a resumption dealt to another thread than
/// its full handshake finds no key unless its own random is logged. The capture's own
/// secrets come to every TLS stage through the handle the capture reader fills; the `chains`
/// TLS stages share the run's bound on bytes held for secrets that may still come.
fn stream_chain(
    names: &[ArcStr],
    cfg: &Config,
    chains: usize,
    secrets: &CaptureSecrets,
) -> StreamChain {
    Chain::new(
        TlsStage::shared(Arc::clone(&cfg.keylog))
            .with_capture_secrets(secrets.clone())
            .with_limits(cfg.tls.shared_by(chains)),
        HttpStage::with_limits(names.to_vec(), cfg.http),
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
    pub stats: RunStats,
    pub inputs: Vec<InputInfo>,
    pub elapsed_s: f64,
    pub bytes_read: u64,
}

/// Settings of one run.
#[derive(Debug, Clone, Default)]
pub struct Config {
    pub inference: InferenceConfig,
    pub flow: FlowLimits,
    /// Bounds of the TLS stage (bytes held while secrets may still come).
    pub tls: TlsLimits,
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
    pub stats: RunStats,
    pub inputs: Vec<InputInfo>,
    pub elapsed_s: f64,
    pub bytes_read: u64,
}

/// Totals of the packet and HTTP stages.
struct Totals {
    stats: RunStats,
    inputs: Vec<InputInfo>,
    bytes_read: u64,
}

impl Totals {
    /// The run's totals, for a run that began at `started`.
    fn since(self, started: Instant) -> RunTotals {
        RunTotals {
            stats: self.stats,
            inputs: self.inputs,
            elapsed_s: started.elapsed().as_secs_f64(),
            bytes_read: self.bytes_read,
        }
    }
}

/// Where a run's output goes as it is released: its rows (`Row`: MCP exchanges for
/// [`analyze_into`], HTTP rows for [`http_into`]) and each TCP connection's row of the
/// connections table. The first error stops the run ([`RunError::Sink`]).
pub trait Sink<Row> {
    type Error: std::error::Error + 'static;

    /// A row, as soon as it is final.
    fn row(&mut self, row: Row) -> Result<(), Self::Error>;

    /// A connection's record, when the connection has closed and every row it produced has
    /// been handed on (HAR input: none).
    fn connection(&mut self, record: ConnectionRecord) -> Result<(), Self::Error>;
}

/// A [`Sink`] of two closures: rows to the first, connection records to the second.
pub struct FnSink<R, C>(pub R, pub C);

impl<Row, R, C, E> Sink<Row> for FnSink<R, C>
where
    R: FnMut(Row) -> Result<(), E>,
    C: FnMut(ConnectionRecord) -> Result<(), E>,
    E: std::error::Error + 'static,
{
    type Error = E;

    fn row(&mut self, row: Row) -> Result<(), E> {
        (self.0)(row)
    }

    fn connection(&mut self, record: ConnectionRecord) -> Result<(), E> {
        (self.1)(record)
    }
}

/// A [`Sink`] that keeps the rows and drops the connection records.
impl<Row> Sink<Row> for Vec<Row> {
    type Error = Infallible;

    fn row(&mut self, row: Row) -> Result<(), Infallible> {
        self.push(row);
        Ok(())
    }

    fn connection(&mut self, _: ConnectionRecord) -> Result<(), Infallible> {
        Ok(())
    }
}

/// `mcp-trace analyze`: every stage, MCP exchanges out, all kept in memory and sorted by
/// `exchange_id`. [`analyze_into`] is the bounded-memory form.
pub fn analyze(paths: &[String], cfg: &Config) -> Result<Analysis, RunError<Infallible>> {
    let mut rows: Vec<Box<Exchange>> = Vec::new();
    let totals = analyze_into(paths, cfg, &mut rows)?;
    // Rows set aside while open come when they end (see `mcp::Analyzer`).
    rows.sort_by_key(|r| r.exchange_id);
    Ok(Analysis {
        rows: rows.into_iter().map(|r| *r).collect(),
        stats: totals.stats,
        inputs: totals.inputs,
        elapsed_s: totals.elapsed_s,
        bytes_read: totals.bytes_read,
    })
}

/// `mcp-trace analyze`, streaming: each exchange goes to `sink` as soon as it is final, in
/// `exchange_id` order except rows that stayed open long (written when they end; see
/// `mcp::Analyzer`); each connection's record once the rows it produced went, so they come
/// in that order, not in `tcp_stream` order.
pub fn analyze_into<S: Sink<Box<Exchange>>>(
    paths: &[String],
    cfg: &Config,
    sink: &mut S,
) -> Result<RunTotals, RunError<S::Error>> {
    analyze_with(cfg, sink, |cfg, prepare, http_sink| {
        run_http(paths, cfg, prepare, http_sink)
    })
}

/// [`analyze_into`] over any [`FrameSource`] (a live interface), named `name` in the
/// `capture` column. The stages run on the caller's thread whatever `cfg.threads` says: a
/// live source hands frames as they arrive, and its quiet moments move the clock of that
/// one chain.
pub fn analyze_source_into<F: FrameSource + Send, S: Sink<Box<Exchange>>>(
    source: F,
    name: &str,
    cfg: &Config,
    sink: &mut S,
) -> Result<RunTotals, RunError<S::Error>> {
    let names = [ArcStr::from(name)];
    let cfg = Config {
        threads: 1,
        progress: false,
        ..cfg.clone()
    };
    analyze_with(&cfg, sink, |cfg, prepare, http_sink| {
        run_source(source, Vec::new(), &names, 0, cfg, prepare, http_sink)
    })
}

/// The MCP stage over the HTTP events of `run`, the rows released to `sink` as they are final.
fn analyze_with<S: Sink<Box<Exchange>>>(
    cfg: &Config,
    sink: &mut S,
    run: impl FnOnce(
        &Config,
        Option<(McpLimits, PreparedEvents)>,
        &mut HttpSink<'_, S::Error>,
    ) -> Result<Totals, RunError<S::Error>>,
) -> Result<RunTotals, RunError<S::Error>> {
    let started = Instant::now();
    let mut analyzer = Analyzer::with_limits(cfg.inference, cfg.mcp);
    let mut ready: Vec<Box<Exchange>> = Vec::new();
    let mut events = 0u32;
    // A live capture's clock while it is quiet (capture time, µs); never moves for files.
    let mut clock_us = i64::MIN;
    // Two threads: the reader also runs the HTTP stage, so the analyzer's thread takes the
    // response bodies, and the POST bodies whenever it keeps up with the reader.
    let reader_prepares = if cfg.threads == 2 {
        analyzer.prepare_responses_here();
        PreparedEvents::Posts
    } else {
        PreparedEvents::All
    };
    let mut totals = run(
        cfg,
        Some((cfg.mcp, reader_prepares)),
        &mut |item, stats, streaming| {
            let drain = match item {
                Item::Event(ev) => {
                    analyzer.push_prepared(ev.http, ev.prepared, &mut stats.mcp);
                    events = events.wrapping_add(1);
                    events.is_multiple_of(DRAIN_EVERY_EVENTS)
                }
                Item::Mark { unfinished_from_us } => {
                    analyzer.set_release_mark(unfinished_from_us);
                    true
                }
                Item::Clock { now_us } => {
                    clock_us = clock_us.max(now_us);
                    true
                }
            };
            if streaming && drain {
                let now_us = analyzer.last_event_us().max(clock_us);
                analyzer.drain_ready(now_us, &mut stats.mcp, &mut ready);
                for ex in ready.drain(..) {
                    sink.row(ex).map_err(RunError::Sink)?;
                }
            }
            for record in analyzer.take_connections() {
                sink.connection(record).map_err(RunError::Sink)?;
            }
            Ok(())
        },
    )?;
    let (rows, connections) = analyzer.finish_with_connections(&mut totals.stats.mcp);
    for ex in rows {
        sink.row(ex).map_err(RunError::Sink)?;
    }
    for record in connections {
        sink.connection(record).map_err(RunError::Sink)?;
    }
    Ok(totals.since(started))
}

/// `mcp-trace http`: every HTTP exchange, MCP or not, kept in memory.
pub fn http_rows(
    paths: &[String],
    cfg: &Config,
) -> Result<(Vec<HttpRow>, RunStats), RunError<Infallible>> {
    let mut rows = Vec::new();
    let totals = http_into(paths, cfg, &mut rows)?;
    Ok((rows, totals.stats))
}

/// `mcp-trace http` with the settings of `cfg` (its key log; always one thread): each
/// connection's record goes to `sink` as the connection closes (`mcp_exchanges` null: no
/// MCP stage runs), the HTTP rows at the end of input.
pub fn http_into<S: Sink<HttpRow>>(
    paths: &[String],
    cfg: &Config,
    sink: &mut S,
) -> Result<RunTotals, RunError<S::Error>> {
    let started = Instant::now();
    let mut log = HttpLog::new();
    let cfg = Config {
        threads: 1,
        ..cfg.clone()
    };
    let totals = run_http(paths, &cfg, None, &mut |item, _, _| {
        if let Item::Event(ev) = item {
            match ev.http {
                HttpEvent::ConnectionClosed(record) => {
                    sink.connection(*record).map_err(RunError::Sink)?;
                }
                http => log.push(&http),
            }
        }
        Ok(())
    })?;
    for row in log.finish() {
        sink.row(row).map_err(RunError::Sink)?;
    }
    Ok(totals.since(started))
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

/// Receives each item with the stats and whether events are in capture-time order.
type HttpSink<'a, E> = dyn FnMut(Item, &mut RunStats, bool) -> Result<(), RunError<E>> + 'a;

/// Runs the packet and HTTP stages, handing each HTTP event to `sink` with the stats and
/// whether the events come in capture-time order across all inputs (false when a HAR input
/// will follow the packet inputs).
fn run_http<E: std::error::Error + 'static>(
    paths: &[String],
    cfg: &Config,
    prepare: Option<(McpLimits, PreparedEvents)>,
    sink: &mut HttpSink<'_, E>,
) -> Result<Totals, RunError<E>> {
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
    run_source(
        Merger::new(readers),
        hars,
        &names,
        total_bytes,
        cfg,
        prepare,
        sink,
    )
}

/// A HAR input: its position among the inputs, its text, its facts.
type HarInput = (usize, Vec<u8>, InputInfo);

/// The run once its inputs are open: the packet stages over `source`, whatever it reads
/// (files and stdin today), then the HAR inputs. `total_bytes` sizes the progress bar (0:
/// none).
fn run_source<E: std::error::Error + 'static, F: FrameSource + Send>(
    source: F,
    hars: Vec<HarInput>,
    names: &[ArcStr],
    total_bytes: u64,
    cfg: &Config,
    prepare: Option<(McpLimits, PreparedEvents)>,
    sink: &mut HttpSink<'_, E>,
) -> Result<Totals, RunError<E>> {
    let mut stats = RunStats::default();
    let progress = progress_bar(cfg.progress, total_bytes);
    let in_order = hars.is_empty();
    let secrets = source.secrets();
    let read = if cfg.threads >= 2 {
        let n = cfg.threads.min(MAX_HTTP_WORKERS + 1) - 1;
        let chains: Vec<StreamChain> = (0..n)
            .map(|_| stream_chain(names, cfg, n, &secrets))
            .collect();
        parallel::run(
            source,
            cfg.flow,
            chains,
            progress.clone(),
            prepare,
            &mut stats,
            &mut |item, stats| sink(item, stats, in_order),
        )?
    } else {
        let mut chain = stream_chain(names, cfg, 1, &secrets);
        let mut counters = <StreamChain as StreamStage>::Counters::default();
        let mut http_events: Vec<HttpEvent> = Vec::new();
        let mut preparer = prepare.map(Preparer::from);
        let mut frames = 0u32;
        let read = read_streams::<RunError<E>, F>(
            source,
            cfg.flow,
            progress.as_ref(),
            &mut stats,
            &mut |events, stats, quiet_now_ns| {
                for ev in events.drain(..) {
                    chain.push(ev, &mut counters, &mut http_events);
                }
                if quiet_now_ns.is_some() {
                    chain.quiet(&mut counters, &mut http_events);
                }
                for ev in http_events.drain(..) {
                    sink(
                        Item::Event(Event::new(ev, preparer.as_mut())),
                        stats,
                        in_order,
                    )?;
                }
                // As often as a `--threads` run's rounds, and whenever a live capture is quiet.
                frames += 1;
                if frames >= parallel::ROUND_FRAMES || quiet_now_ns.is_some() {
                    frames = 0;
                    let unfinished_from_us = chain.held_since_us();
                    sink(Item::Mark { unfinished_from_us }, stats, in_order)?;
                }
                if let Some(now_ns) = quiet_now_ns {
                    let now_us = now_ns.div_euclid(1000);
                    sink(Item::Clock { now_us }, stats, in_order)?;
                }
                Ok(())
            },
        )?;
        chain.finish(&mut counters, &mut http_events);
        counters.add_to(&mut stats);
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
        let events = har::read_har(&name, &data, conn_base, &mut stats.http)?;
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
    crate::tls::keylog::count_malformed(&cfg.keylog, &secrets, &mut stats.tls);
    Ok(Totals {
        stats,
        inputs,
        bytes_read,
    })
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
