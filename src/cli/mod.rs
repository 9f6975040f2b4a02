//! Command line: clap arguments -> validated [`pipeline::Config`] -> run the stages -> reports.
//!
//! Everything is validated before any input is read, so a bad flag fails at
//! once with one clear line and exit status 2.

mod args;
mod live;
mod otlp;
#[cfg(test)]
mod tests;
mod values;

use crate::flow::FlowLimits;
use crate::http::HttpLimits;
use crate::mcp::McpLimits;
use crate::mcp::retry::Finding;
use crate::mcp::{Exchange, InferenceConfig, Layer, Outcome, RetryOrigin};
use crate::pipeline::{self, Analysis, Config};
use crate::report::{self, Format, RowFilter, RunInfo, SessionAggregator, SessionRow, TableWriter};
use crate::report::{ConnectionRow, HttpFormat, Undecrypted, write_http_rows};
use crate::rpc::RpcLimits;
use crate::stream::ConnectionRecord;
use crate::tls::{KeyLog, TlsLimits};
use anyhow::{Result, bail};
use args::{
    AnalyzeArgs, ColorChoice, Command, CommonArgs, HttpArgs, InputArgs, OutputArgs, ShowArgs,
};
use clap::Parser;
use std::collections::{BTreeMap, HashSet};
use std::io::{IsTerminal, Write};
use std::path::Path;
use std::process::ExitCode;

pub use args::Cli;

/// The outcome named `name` in any case (`tool_error` is `TOOL_ERROR`).
fn outcome_named(name: &str) -> Option<Outcome> {
    Outcome::from_name(&name.trim().to_ascii_uppercase())
}

/// Every outcome name, for error messages.
fn outcome_names() -> String {
    Outcome::ALL.map(Outcome::name).join(", ")
}

/// Parse the process arguments and run. Errors are for `main` to print (exit 2).
pub fn run() -> Result<ExitCode> {
    let cli = Cli::parse();
    match cli.command {
        Command::Analyze(args) => analyze(args),
        Command::Http(args) => http(args),
        Command::Sessions(args) => sessions(args),
        Command::Show(args) => show(args),
        Command::Live(args) => live::live(args),
    }
}

fn inference_config(common: &CommonArgs) -> Result<InferenceConfig> {
    let ms = |flag: &str, text: &str| {
        values::parse_duration_ms(text).map_err(|e| anyhow::anyhow!("--{flag}: {e}"))
    };
    Ok(InferenceConfig {
        repeat_window_ms: ms("repeat-window", &common.inference.repeat_window)?,
        sdk_max_gap_ms: ms("sdk-max-gap", &common.inference.sdk_max_gap)?,
        manual_min_gap_ms: ms("manual-min-gap", &common.inference.manual_min_gap)?,
        session_gap_ms: ms("session-gap", &common.inference.session_gap)?,
        max_attempts: common.inference.max_attempts,
        backoff_factor: common.inference.backoff_factor,
        backoff_floor_ms: ms("backoff-floor", &common.inference.backoff_floor)?,
        hop_window_ms: ms("hop-window", &common.inference.hop_window)?,
    })
}

fn pipeline_config(input: &InputArgs) -> Result<Config> {
    let threads = match input.threads {
        0 => std::thread::available_parallelism().map_or(1, |n| n.get()),
        n => n,
    };
    let progress = !input.no_progress && std::io::stderr().is_terminal();
    let keylog = read_keylogs(&input.common.keylog)?;
    stage_config(
        &input.common,
        threads,
        progress,
        keylog,
        crate::mcp::HOLD_LIMIT_US,
    )
}

/// The stages' settings from the options every analyzing command takes.
fn stage_config(
    common: &CommonArgs,
    threads: usize,
    progress: bool,
    keylog: KeyLog,
    default_hold_us: i64,
) -> Result<Config> {
    let limits = &common.limits;
    let hold_limit_us = match &limits.max_row_hold {
        Some(text) => values::parse_duration_ms(text)
            .map_err(|e| anyhow::anyhow!("--max-row-hold: {e}"))?
            .saturating_mul(1000),
        None => default_hold_us,
    };
    Ok(Config {
        inference: inference_config(common)?,
        flow: FlowLimits {
            max_open_flows: limits.max_open_flows.max(1),
            max_buffered_bytes_per_direction: limits.max_flow_buffer,
            idle_timeout_ns: values::parse_duration_ms(&limits.flow_idle_timeout)
                .map_err(|e| anyhow::anyhow!("--flow-idle-timeout: {e}"))?
                .saturating_mul(1_000_000),
        },
        tls: TlsLimits {
            wait_bytes_per_connection: limits.max_tls_wait,
            wait_bytes_total: limits.max_tls_wait_total,
        },
        http: HttpLimits {
            head_bytes: limits.max_header,
            body_bytes: limits.max_body,
            decoded_bytes: limits.max_decoded as u64,
            h2_streams: limits.max_h2_streams.max(1),
        },
        mcp: McpLimits {
            body_bytes: limits.max_body,
            pending_per_session: limits.max_pending.max(1),
            retry_rows: limits.max_retry_rows,
            catalog_tools: limits.max_catalog_tools,
            hop_waiting: limits.max_hop_waiting,
            rpc: RpcLimits {
                sse_event_bytes: limits.max_sse_event,
            },
            sse_marks_per_row: 0,
            hold_limit_us,
        },
        progress,
        threads,
        keylog: std::sync::Arc::new(keylog),
    })
}

/// Every `--keylog` file, read before any input. An unreadable file ends the run (exit 2);
/// a malformed line is counted in the key log's stats. No message carries a secret.
fn read_keylogs(paths: &[std::path::PathBuf]) -> Result<KeyLog> {
    let mut keylog = KeyLog::new();
    for path in paths {
        let file = std::fs::File::open(path)
            .map_err(|e| anyhow::anyhow!("--keylog {}: {e}", path.display()))?;
        let name = path.file_name().map_or_else(
            || path.display().to_string(),
            |n| n.to_string_lossy().into_owned(),
        );
        keylog
            .read_from(&name, std::io::BufReader::new(file))
            .map_err(|e| anyhow::anyhow!("--keylog {}: {e}", path.display()))?;
    }
    Ok(keylog)
}

fn use_color(choice: ColorChoice) -> bool {
    match choice {
        ColorChoice::Always => true,
        ColorChoice::Never => false,
        ColorChoice::Auto => {
            std::io::stdout().is_terminal() && std::env::var_os("NO_COLOR").is_none()
        }
    }
}

fn check_outcomes(flag: &str, names: &[String]) -> Result<Vec<Outcome>> {
    names
        .iter()
        .map(|n| match outcome_named(n) {
            Some(o) => Ok(o),
            None => bail!(
                "--{flag}: unknown outcome `{n}` (one of {})",
                outcome_names()
            ),
        })
        .collect()
}

/// `--fail-on`: outcome names (any case) and retry-hygiene finding names (report-schema.md
/// section 4b).
#[derive(Debug, Default, PartialEq)]
struct FailOn {
    outcomes: Vec<Outcome>,
    findings: Vec<Finding>,
}

impl FailOn {
    fn parse(names: &[String]) -> Result<FailOn> {
        let mut out = FailOn::default();
        for n in names {
            let name = n.trim();
            if let Some(o) = outcome_named(name) {
                out.outcomes.push(o);
            } else if let Some(f) = Finding::from_name(&name.to_ascii_lowercase()) {
                out.findings.push(f);
            } else {
                bail!(
                    "--fail-on: unknown outcome or finding `{n}` (outcomes: {}; findings: {})",
                    outcome_names(),
                    Finding::ALL.map(Finding::name).join(", ")
                )
            }
        }
        Ok(out)
    }

    fn matches(&self, row: &Exchange) -> bool {
        self.outcomes.contains(&row.outcome)
            || (!self.findings.is_empty()
                && row
                    .retry_findings
                    .iter()
                    .any(|f| self.findings.contains(&f)))
    }
}

fn run_analysis(input: &InputArgs, cfg: &Config) -> Result<Analysis> {
    Ok(pipeline::analyze(&input.inputs, cfg)?)
}

fn analyze(args: AnalyzeArgs) -> Result<ExitCode> {
    // Validate everything before touching input.
    let cfg = pipeline_config(&args.input)?;
    let color = use_color(args.input.common.color);
    let source = RowSource::Files(&args.input.inputs);
    analyze_rows(
        &args.out,
        &args.input.inputs,
        cfg,
        color,
        source,
        RowHooks {
            summary_to: SummaryTo::Stdout,
            kept: &mut |_| Ok(()),
            rows_end: &mut || {},
        },
    )
}

/// Where the rows of [`analyze_rows`] come from.
enum RowSource<'a> {
    /// Capture files and standard input.
    Files(&'a [String]),
    /// A live interface, named in the `capture` column.
    #[cfg(feature = "live")]
    Live(Box<crate::capture::LiveSource>, String),
}

/// Where the terminal summary goes when no `-o` file takes the rows.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum SummaryTo {
    Stdout,
    /// Standard output carries the rows themselves (`live`'s JSON lines).
    #[cfg_attr(not(feature = "live"), allow(dead_code))]
    Stderr,
}

/// What a live run adds to `analyze`'s outputs: where the terminal summary goes, a look at
/// every row the filters keep as it is released (`kept`), and a call once the last row went,
/// before the summaries (`rows_end`).
struct RowHooks<'a> {
    summary_to: SummaryTo,
    kept: &'a mut dyn FnMut(&Exchange) -> Result<(), report::ReportError>,
    rows_end: &'a mut dyn FnMut(),
}

/// The analysis of `source` with the outputs of `out` and the hooks of `hooks`.
/// `input_names` name the inputs in the OTLP resource.
fn analyze_rows(
    out: &OutputArgs,
    input_names: &[String],
    mut cfg: Config,
    color: bool,
    source: RowSource<'_>,
    hooks: RowHooks<'_>,
) -> Result<ExitCode> {
    let RowHooks {
        summary_to,
        kept: on_kept,
        rows_end: on_rows_end,
    } = hooks;
    let args = out;
    let otlp_options = otlp::otlp_options(&args.otlp, input_names)?;
    if otlp_options.is_some() {
        // Each span carries the SSE events of its exchange.
        cfg.mcp.sse_marks_per_row = args.otlp.otlp_max_events;
    }
    let filter = RowFilter {
        outcomes: check_outcomes("outcome", &args.outcome)?,
        tools: args.tool.clone(),
        methods: args.method.clone(),
        sessions: args.session.clone(),
        since_us: args
            .since
            .as_deref()
            .map(crate::timestamp::parse_rfc3339_us)
            .transpose()
            .map_err(|e| anyhow::anyhow!("--since: {e}"))?,
        until_us: args
            .until
            .as_deref()
            .map(crate::timestamp::parse_rfc3339_us)
            .transpose()
            .map_err(|e| anyhow::anyhow!("--until: {e}"))?,
        only_failures: args.only_failures,
    };
    let fail_on = FailOn::parse(&args.fail_on)?;
    let output_format = match &args.output {
        Some(path) => Some(Format::from_flag_or_path(Some(&args.format), path)?),
        None => None,
    };
    let sessions_format = match &args.sessions {
        Some(path) => Some(Format::from_flag_or_path(None, path)?),
        None => None,
    };
    let mut connections = ConnectionsOut::create(args.connections.as_deref())?;

    // The output file is created before any input is read and written as rows are released;
    // a failed run drops the writer, which removes the partial file.
    let mut writer = match (&args.output, output_format) {
        (Some(path), Some(format)) => {
            let table: TableWriter<Box<Exchange>> = TableWriter::create(path, format)?;
            Some(report::BackgroundWriter::spawn(table)?)
        }
        _ => None,
    };
    let mut html = match &args.html {
        Some(path) => Some(report::HtmlReport::create(path, args.html_max_rows)?),
        None => None,
    };
    let mut spans = match otlp_options {
        Some(options) => Some(report::otlp::OtlpSink::create(options)?),
        None => None,
    };
    let mut tally = Tally::new(args.sessions.is_some());
    // Without -o the terminal summary needs what it reads of the selected rows: kept as they
    // come, the rest of each row freed at once.
    let mut selected: Vec<report::SummaryRow> = Vec::new();
    let mut failed = false;
    let on_connection = |record: ConnectionRecord| connections.push(&record);
    let on_row = |row: Box<Exchange>| {
        tally.push(&row);
        failed |= fail_on.matches(&row);
        let keep = filter.matches(&row);
        if let Some(s) = spans.as_mut() {
            s.push(&row, keep)?;
        }
        if !keep {
            return Ok(());
        }
        if let Some(h) = html.as_mut() {
            h.push(&row);
        }
        on_kept(&row)?;
        match writer.as_mut() {
            Some(w) => w.push(row),
            None => {
                selected.push(report::SummaryRow::from(*row));
                Ok(())
            }
        }
    };
    let mut sink = pipeline::FnSink(on_row, on_connection);
    let totals = match source {
        RowSource::Files(paths) => pipeline::analyze_into(paths, &cfg, &mut sink)?,
        #[cfg(feature = "live")]
        RowSource::Live(live, name) => {
            pipeline::analyze_source_into(*live, &name, &cfg, &mut sink)?
        }
    };
    on_rows_end();
    let undecrypted = connections.finish()?;
    // The encoder finishes its last spans while the terminal summary is made.
    let otlp_closing = spans.map(report::otlp::OtlpSink::close).transpose()?;
    let info = RunInfo {
        inputs: &totals.inputs,
        stats: &totals.stats,
        rows: &[],
        elapsed_s: totals.elapsed_s,
        bytes_read: totals.bytes_read,
        undecrypted: &undecrypted,
    };
    let summary_text = match writer {
        Some(w) => {
            w.finish()?;
            None
        }
        None => {
            // Rows set aside while open arrive when they end: put them back in id order.
            selected.sort_by_key(|r| r.exchange_id);
            let text = report::terminal_summary_of(&info, &selected, color);
            // Freed while the encoder finishes, not after.
            drop(selected);
            Some(text)
        }
    };
    let otlp_report = otlp_closing
        .map(report::otlp::OtlpClosing::finish)
        .transpose()?;
    if let Some(mut text) = summary_text {
        if let Some(r) = &otlp_report {
            text.push_str(&r.text());
        }
        match summary_to {
            SummaryTo::Stdout => print_stdout(&text)?,
            SummaryTo::Stderr => eprint!("{text}"),
        }
    }
    if let Some((url, stats)) = otlp_report.as_ref().and_then(|r| r.endpoint.as_ref()) {
        let lost = stats.not_delivered_spans();
        if lost > 0 {
            eprintln!(
                "mcp-trace: {lost} spans were not delivered to {url} (see the run summary's otlp)"
            );
        }
    }
    if let (Some(path), Some(format), Some(agg)) = (&args.sessions, sessions_format, tally.sessions)
    {
        let mut w = TableWriter::<SessionRow>::create(path, format)?;
        for s in agg.finish() {
            w.push(&s)?;
        }
        w.finish()?;
    }
    if args.summary.is_some() || html.is_some() {
        let mut summary = report::run_summary(&info);
        tally.counts.fill(&mut summary);
        if let (Some(r), Some(m)) = (&otlp_report, summary.as_object_mut()) {
            m.insert("otlp".into(), r.to_json());
        }
        if let Some(path) = &args.summary {
            write_json(path, &summary)?;
        }
        if let Some(h) = html {
            h.finish(&summary, &filter)?;
        }
    }
    Ok(if failed {
        ExitCode::from(1)
    } else {
        ExitCode::SUCCESS
    })
}

/// `--connections`: the connections table written as connections close, and the TLS
/// connections not decrypted, for the terminal summary.
struct ConnectionsOut {
    table: Option<TableWriter<ConnectionRow>>,
    undecrypted: Undecrypted,
}

impl ConnectionsOut {
    /// The table is created before any input is read, like the exchanges table.
    fn create(path: Option<&Path>) -> Result<ConnectionsOut> {
        let table = match path {
            Some(path) => Some(TableWriter::create(
                path,
                Format::from_flag_or_path(None, path)?,
            )?),
            None => None,
        };
        Ok(ConnectionsOut {
            table,
            undecrypted: Undecrypted::default(),
        })
    }

    fn push(&mut self, record: &ConnectionRecord) -> Result<(), report::ReportError> {
        let row = ConnectionRow::from(record);
        self.undecrypted.push(&row);
        match self.table.as_mut() {
            Some(t) => t.push(&row),
            None => Ok(()),
        }
    }

    fn finish(self) -> Result<Undecrypted> {
        if let Some(t) = self.table {
            t.finish()?;
        }
        Ok(self.undecrypted)
    }
}

/// What the run summary and the sessions table need of every row, gathered as rows pass so
/// no row is kept.
struct Tally {
    counts: Counts,
    sessions: Option<SessionAggregator>,
}

impl Tally {
    fn new(sessions_table: bool) -> Self {
        Tally {
            counts: Counts::default(),
            sessions: sessions_table.then(SessionAggregator::default),
        }
    }

    fn push(&mut self, row: &Exchange) {
        self.counts.push(row);
        if let Some(agg) = self.sessions.as_mut() {
            agg.push(row);
        }
    }
}

/// The run summary's per-row counts (report-schema.md section 5): `report::run_summary`
/// counts them from rows; here they are counted as rows pass and written over its output.
#[derive(Default)]
struct Counts {
    total: u64,
    /// Rows per outcome, layer and retry origin, indexed like their `ALL`.
    outcomes: [u64; Outcome::ALL.len()],
    layers: [u64; Layer::ALL.len()],
    retries: [u64; RetryOrigin::ALL.len()],
    /// Rows per retry-hygiene finding, indexed like [`Finding::ALL`].
    findings: [u64; Finding::ALL.len()],
    /// Distinct session keys (one entry per session, not per row).
    sessions: HashSet<String>,
    hops: report::HopTally,
}

impl Counts {
    fn push(&mut self, row: &Exchange) {
        self.total = self.total.saturating_add(1);
        let counts = [
            self.outcomes.get_mut(row.outcome.index()),
            self.layers.get_mut(row.layer.index()),
            self.retries.get_mut(row.retry_origin.index()),
        ];
        for n in counts.into_iter().flatten() {
            *n = n.saturating_add(1);
        }
        for f in row.retry_findings.iter() {
            if let Some(n) = self.findings.get_mut(f.index()) {
                *n = n.saturating_add(1);
            }
        }
        if !self.sessions.contains(row.session_key.as_str()) {
            self.sessions.insert(row.session_key.to_string());
        }
        self.hops.push(row);
    }

    /// Writes the counts into a summary made from no rows (whose count maps list every key at 0).
    fn fill(&self, summary: &mut serde_json::Value) {
        let Some(m) = summary.as_object_mut() else {
            return;
        };
        let add = |m: &mut serde_json::Map<String, serde_json::Value>,
                   key: &str,
                   counts: &BTreeMap<String, u64>,
                   any_key: bool| {
            if let Some(obj) = m.get_mut(key).and_then(|v| v.as_object_mut()) {
                for (k, n) in counts {
                    // `retries` lists the three origins only (not `none`).
                    if any_key || obj.contains_key(k) {
                        obj.insert(k.clone(), serde_json::json!(n));
                    }
                }
            }
        };
        fn named<const N: usize>(names: [&str; N], counts: [u64; N]) -> BTreeMap<String, u64> {
            names
                .into_iter()
                .zip(counts)
                .map(|(name, n)| (name.to_string(), n))
                .collect()
        }
        add(
            m,
            "mcp_exchanges",
            &named(Outcome::ALL.map(Outcome::name), self.outcomes),
            true,
        );
        add(
            m,
            "layers",
            &named(Layer::ALL.map(Layer::name), self.layers),
            true,
        );
        add(
            m,
            "retries",
            &named(RetryOrigin::ALL.map(RetryOrigin::name), self.retries),
            false,
        );
        add(
            m,
            "retry_findings",
            &named(Finding::ALL.map(Finding::name), self.findings),
            true,
        );
        m.insert("mcp_exchanges_total".into(), serde_json::json!(self.total));
        self.hops.fill(m);
        m.insert("sessions".into(), serde_json::json!(self.sessions.len()));
    }
}

fn http(args: HttpArgs) -> Result<ExitCode> {
    let format = match (&args.output, args.format.as_str()) {
        (_, "csv") => HttpFormat::Csv,
        (_, "jsonl") => HttpFormat::Jsonl,
        (None, "auto") => HttpFormat::Table,
        (Some(path), "auto") => match path.extension().and_then(|e| e.to_str()) {
            Some("csv") => HttpFormat::Csv,
            Some("jsonl" | "ndjson") => HttpFormat::Jsonl,
            _ => bail!(
                "cannot tell the format of {} from its extension; use --format csv|jsonl",
                path.display()
            ),
        },
        (_, other) => bail!("--format: `{other}` is not one of auto, csv, jsonl"),
    };
    let cfg = Config {
        keylog: std::sync::Arc::new(read_keylogs(&args.keylog)?),
        ..Config::default()
    };
    let mut connections = ConnectionsOut::create(args.connections.as_deref())?;
    let mut rows = Vec::new();
    let on_row = |row| {
        rows.push(row);
        Ok(())
    };
    let on_connection = |record: ConnectionRecord| connections.push(&record);
    pipeline::http_into(
        &args.inputs,
        &cfg,
        &mut pipeline::FnSink(on_row, on_connection),
    )?;
    connections.finish()?;
    match &args.output {
        Some(path) => {
            write_atomically(path, |out| write_http_rows(&rows, out, format))?;
        }
        None => {
            let mut text = Vec::new();
            write_http_rows(&rows, &mut text, format)?;
            print_stdout(&String::from_utf8_lossy(&text))?;
        }
    }
    Ok(ExitCode::SUCCESS)
}

fn sessions(args: InputArgs) -> Result<ExitCode> {
    let cfg = pipeline_config(&args)?;
    let color = use_color(args.common.color);
    let analysis = run_analysis(&args, &cfg)?;
    print_stdout(&report::sessions_table_text(&analysis.rows, color))?;
    Ok(ExitCode::SUCCESS)
}

fn show(args: ShowArgs) -> Result<ExitCode> {
    let cfg = pipeline_config(&args.input)?;
    let color = use_color(args.input.common.color);
    let analysis = run_analysis(&args.input, &cfg)?;
    match report::session_timeline(&analysis.rows, &args.session, color) {
        Some(text) => print_stdout(&text)?,
        None => bail!(
            "no session `{}` in the input (see `mcp-trace sessions`)",
            args.session
        ),
    }
    Ok(ExitCode::SUCCESS)
}

fn write_json(path: &Path, value: &serde_json::Value) -> Result<()> {
    let text = serde_json::to_string_pretty(value)? + "\n";
    write_atomically(path, |out| out.write_all(text.as_bytes()))
}

/// Write through `PATH.partial` and rename it when complete, so a failed run never leaves a
/// file that looks finished (a device or a pipe is written in place; see
/// [`report::PartialFile`]).
fn write_atomically(
    path: &Path,
    write: impl FnOnce(&mut dyn Write) -> std::io::Result<()>,
) -> Result<()> {
    let mut out = report::PartialFile::create(path)?;
    if let Err(error) = write(&mut out) {
        bail!("cannot write {}: {error}", path.display());
    }
    out.commit()?;
    Ok(())
}

/// Print to stdout; a closed pipe (`| head`) is not an error.
fn print_stdout(text: &str) -> Result<()> {
    let mut out = std::io::stdout().lock();
    match out.write_all(text.as_bytes()).and_then(|()| out.flush()) {
        Err(e) if e.kind() == std::io::ErrorKind::BrokenPipe => Ok(()),
        other => Ok(other?),
    }
}
