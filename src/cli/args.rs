//! clap definitions. Every threshold shows its default in `--help`.

use super::values::{duration_text, size_text};
use clap::{Args, Parser, Subcommand, ValueEnum};
use std::sync::LazyLock;

/// Passive analyzer for Model Context Protocol traffic in pcap, pcapng and HAR files.
#[derive(Debug, Parser)]
#[command(name = "mcp-trace", version, about, long_about = None)]
pub struct Cli {
    #[command(subcommand)]
    pub command: Command,
}

// Parsed once per run, so the size of the largest variant does not matter.
#[allow(clippy::large_enum_variant)]
#[derive(Debug, Subcommand)]
pub enum Command {
    /// Find MCP exchanges, classify them and infer retries.
    Analyze(AnalyzeArgs),
    /// List every HTTP/1.x and HTTP/2 exchange, MCP or not.
    Http(HttpArgs),
    /// List the MCP sessions.
    Sessions(InputArgs),
    /// Print one session as a timeline.
    Show(ShowArgs),
    /// Capture on a network interface and analyze as calls complete (feature `live`).
    Live(LiveArgs),
}

#[derive(Debug, Args)]
pub struct InputArgs {
    /// Capture files (pcap, pcapng, HAR; .gz decompressed; `-` for stdin), merged in time order.
    #[arg(required = true, value_name = "INPUT")]
    pub inputs: Vec<String>,
    /// Never show the progress bar.
    #[arg(long)]
    pub no_progress: bool,
    /// Threads: 2 or more read, decode and reassemble on one, parse HTTP and JSON bodies on the
    /// others (streams sharded by id) and analyze MCP on the main one; 1 = one thread; 0 = every core.
    #[arg(long, value_name = "N", default_value_t = 0)]
    pub threads: usize,
    #[command(flatten)]
    pub common: CommonArgs,
}

/// What every analyzing command takes, whatever it reads.
#[derive(Debug, Args)]
pub struct CommonArgs {
    /// Color: auto (only on a terminal), always, never.
    #[arg(long, value_enum, default_value_t = ColorChoice::Auto)]
    pub color: ColorChoice,
    /// TLS key log (NSS format, as `SSLKEYLOGFILE` writes it); repeatable.
    #[arg(long, value_name = "FILE")]
    pub keylog: Vec<std::path::PathBuf>,
    #[command(flatten)]
    pub inference: InferenceArgs,
    #[command(flatten)]
    pub limits: LimitArgs,
}

// The defaults of the size and duration limits as `--help` shows them (clap takes text
// there), made from the stages' constants.
static MAX_FLOW_BUFFER: LazyLock<String> =
    LazyLock::new(|| size_text(crate::flow::MAX_BUFFERED_BYTES_PER_DIRECTION));
static FLOW_IDLE_TIMEOUT: LazyLock<String> =
    LazyLock::new(|| duration_text(crate::flow::IDLE_TIMEOUT_NS / 1_000_000));
static MAX_HEADER: LazyLock<String> = LazyLock::new(|| size_text(crate::http::HEAD_LIMIT));
static MAX_BODY: LazyLock<String> = LazyLock::new(|| size_text(crate::http::REQUEST_BODY_LIMIT));
static MAX_DECODED: LazyLock<String> =
    LazyLock::new(|| size_text(crate::http::DECODED_BODY_LIMIT as usize));
static MAX_TLS_WAIT: LazyLock<String> =
    LazyLock::new(|| size_text(crate::tls::waiting::MAX_WAITING_BYTES_PER_CONNECTION));
static MAX_TLS_WAIT_TOTAL: LazyLock<String> =
    LazyLock::new(|| size_text(crate::tls::waiting::MAX_WAITING_BYTES));
static MAX_SSE_EVENT: LazyLock<String> =
    LazyLock::new(|| size_text(crate::rpc::MAX_SSE_EVENT_BYTES));

/// Bounds on reassembly state; hitting one records an anomaly and a gap, never OOM.
#[derive(Debug, Args)]
pub struct LimitArgs {
    /// Most TCP flows kept open at once; the least recently active is evicted past it.
    #[arg(long, value_name = "N", default_value_t = crate::flow::MAX_OPEN_FLOWS)]
    pub max_open_flows: usize,
    /// Most out-of-order bytes buffered per flow direction before a gap is declared.
    #[arg(long, value_name = "SIZE", default_value = MAX_FLOW_BUFFER.as_str(), value_parser = super::values::parse_size)]
    pub max_flow_buffer: usize,
    /// A flow with no packet for this long (capture time) is closed.
    #[arg(long, value_name = "DURATION", default_value = FLOW_IDLE_TIMEOUT.as_str())]
    pub flow_idle_timeout: String,
    /// Most bytes a TLS connection holds while its secrets may still come (a pcapng's later
    /// Decryption Secrets Block); past it, read without them (`tls.key_wait_limit`). 0: none waits.
    #[arg(long, value_name = "SIZE", default_value = MAX_TLS_WAIT.as_str(), value_parser = super::values::parse_size)]
    pub max_tls_wait: usize,
    /// Most bytes all TLS connections hold while their secrets may still come (`tls.key_wait_limit`).
    #[arg(long, value_name = "SIZE", default_value = MAX_TLS_WAIT_TOTAL.as_str(), value_parser = super::values::parse_size)]
    pub max_tls_wait_total: usize,
    /// Largest HTTP head (start line and headers); a larger one is skipped (`http.head_too_large`).
    #[arg(long, value_name = "SIZE", default_value = MAX_HEADER.as_str(), value_parser = super::values::positive_size)]
    pub max_header: usize,
    /// Most body bytes kept per message for JSON parsing; the rest is counted, not parsed.
    #[arg(long, value_name = "SIZE", default_value = MAX_BODY.as_str(), value_parser = super::values::parse_size)]
    pub max_body: usize,
    /// Most bytes decompressed (gzip, deflate, br) per body (`http.decompression_limit`).
    #[arg(long, value_name = "SIZE", default_value = MAX_DECODED.as_str(), value_parser = super::values::parse_size)]
    pub max_decoded: usize,
    /// Most HTTP/2 streams open at once per connection; one opened past it is not read (`h2.stream_limit`).
    #[arg(long, value_name = "N", default_value_t = crate::http::H2_STREAM_LIMIT)]
    pub max_h2_streams: usize,
    /// Largest SSE event; a larger one is skipped (`rpc.sse_event_too_large`).
    #[arg(long, value_name = "SIZE", default_value = MAX_SSE_EVENT.as_str(), value_parser = super::values::parse_size)]
    pub max_sse_event: usize,
    /// Most requests awaiting a response per session (`mcp.pending_limit` past it).
    #[arg(long, value_name = "N", default_value_t = crate::mcp::MAX_PENDING_PER_SESSION)]
    pub max_pending: usize,
    /// Most requests held for retry inference (`mcp.retry_index_full` past it).
    #[arg(long, value_name = "N", default_value_t = crate::mcp::retry::MAX_INDEXED_REQUESTS)]
    pub max_retry_rows: usize,
    /// Most tool catalog entries (tools/list listings plus their tools; `mcp.tool_catalog_full` past it).
    #[arg(long, value_name = "N", default_value_t = crate::mcp::retry::MAX_CATALOG_TOOLS)]
    pub max_catalog_tools: usize,
    /// An open row (a GET stream, an unanswered call) holds back the rows behind it at most
    /// this long, then is written when it ends [default: 60s; live: 1s].
    #[arg(long, value_name = "DURATION")]
    pub max_row_hold: Option<String>,
    /// Most rows held while a gateway's copy of them may still come (`mcp.hop_waiting_full` past it).
    #[arg(long, value_name = "N", default_value_t = crate::mcp::hops::MAX_HOP_WAITING)]
    pub max_hop_waiting: usize,
}

#[derive(Debug, Args)]
pub struct InferenceArgs {
    /// Look for an earlier equivalent request this far back.
    #[arg(long, value_name = "DURATION", default_value = "10m")]
    pub repeat_window: String,
    /// Same id and body re-sent within this gap, same session and user agent: an SDK retry.
    #[arg(long, value_name = "DURATION", default_value = "2s")]
    pub sdk_max_gap: String,
    /// A resend at least this long after the earlier attempt can be manual.
    #[arg(long, value_name = "DURATION", default_value = "1s")]
    pub manual_min_gap: String,
    /// Silence after which a derived (stateless) session ends.
    #[arg(long, value_name = "DURATION", default_value = "5m")]
    pub session_gap: String,
    /// Retry hygiene: an attempt numbered above this is `too_many_attempts` (3: a call and two retries).
    #[arg(long, value_name = "N", default_value_t = crate::mcp::DEFAULT_MAX_ATTEMPTS,
          value_parser = clap::value_parser!(u32).range(1..))]
    pub max_attempts: u32,
    /// Retry hygiene: from the third attempt on, each gap should be at least this times the previous (`no_backoff`).
    #[arg(long, value_name = "FACTOR", default_value_t = crate::mcp::DEFAULT_BACKOFF_FACTOR,
          value_parser = super::values::parse_factor)]
    pub backoff_factor: f64,
    /// Retry hygiene: two gaps both under this are `no_backoff` whatever their ratio.
    #[arg(long, value_name = "DURATION", default_value = "50ms")]
    pub backoff_floor: String,
    /// Hops: a gateway's copy of a request that got no response may start this long after it.
    #[arg(long, value_name = "DURATION", default_value = "30s")]
    pub hop_window: String,
}

#[derive(Debug, Args)]
pub struct AnalyzeArgs {
    #[command(flatten)]
    pub input: InputArgs,
    #[command(flatten)]
    pub out: OutputArgs,
}

/// `mcp-trace live`: the same analysis on a live interface (feature `live`).
#[derive(Debug, Args)]
pub struct LiveArgs {
    /// Interface to capture on (`lo`, `eth0`, `any`).
    #[arg(short, long, value_name = "IFACE")]
    pub interface: String,
    /// Capture filter (BPF, tcpdump's syntax).
    #[arg(
        short = 'f',
        long = "filter",
        value_name = "BPF",
        default_value = "tcp"
    )]
    pub bpf: String,
    /// Stop after this long (`10m`, `30s`); otherwise at Ctrl-C or `q`.
    #[arg(long, value_name = "DURATION")]
    pub duration: Option<String>,
    /// Stop after this many packets.
    #[arg(long, value_name = "N")]
    pub count: Option<u64>,
    /// Keep the raw capture here (pcapng: the interface's statistics and, with --keylog, the
    /// key log lines seen as Decryption Secrets Blocks), to analyze it again offline.
    #[arg(short = 'w', long = "write", value_name = "PATH")]
    pub write: Option<std::path::PathBuf>,
    /// Kernel capture buffer; packets that do not fit are dropped (and counted).
    #[arg(long, value_name = "SIZE", default_value = LIVE_BUFFER.as_str(), value_parser = super::values::positive_size)]
    pub buffer_size: usize,
    /// Bytes kept of each packet.
    #[arg(long, value_name = "BYTES", default_value_t = crate::capture::LIVE_SNAPLEN)]
    pub snaplen: u32,
    /// Write each exchange as a JSON line as it completes (`-`: stdout, the default when
    /// stdout is not a terminal; otherwise the screen shows them).
    #[arg(long, value_name = "PATH")]
    pub jsonl: Option<String>,
    #[command(flatten)]
    pub common: CommonArgs,
    #[command(flatten)]
    pub out: OutputArgs,
}

static LIVE_BUFFER: LazyLock<String> =
    LazyLock::new(|| size_text(crate::capture::LIVE_BUFFER_BYTES));

/// The outputs and row filters of `analyze` and `live`.
#[derive(Debug, Args)]
pub struct OutputArgs {
    /// Write the exchanges table here (format from --format or the extension).
    #[arg(short, long, value_name = "PATH")]
    pub output: Option<std::path::PathBuf>,
    /// Output format: auto (from the extension), csv, parquet, jsonl.
    #[arg(long, default_value = "auto")]
    pub format: String,
    /// Write the sessions table here (format from the extension).
    #[arg(long, value_name = "PATH")]
    pub sessions: Option<std::path::PathBuf>,
    /// Write the connections table here: one row per TCP connection (format from the extension).
    #[arg(long, value_name = "PATH")]
    pub connections: Option<std::path::PathBuf>,
    /// Write the run summary (JSON) here.
    #[arg(long, value_name = "PATH")]
    pub summary: Option<std::path::PathBuf>,
    /// Write a self-contained HTML incident report here (one file, nothing fetched).
    #[arg(long, value_name = "PATH")]
    pub html: Option<std::path::PathBuf>,
    /// Most exchanges listed in the HTML report; the rest are counted (Parquet has them all).
    #[arg(long, value_name = "N", default_value_t = crate::report::DEFAULT_HTML_MAX_ROWS)]
    pub html_max_rows: usize,
    /// Keep only rows with these outcomes (comma-separated).
    #[arg(long, value_delimiter = ',')]
    pub outcome: Vec<String>,
    /// Keep only rows calling these tools.
    #[arg(long, value_delimiter = ',')]
    pub tool: Vec<String>,
    /// Keep only rows with these JSON-RPC methods.
    #[arg(long, value_delimiter = ',')]
    pub method: Vec<String>,
    /// Keep only rows of these session keys.
    #[arg(long, value_delimiter = ',')]
    pub session: Vec<String>,
    /// Keep only rows whose request started at or after this time (RFC 3339).
    #[arg(long, value_name = "RFC3339")]
    pub since: Option<String>,
    /// Keep only rows whose request started before this time (RFC 3339).
    #[arg(long, value_name = "RFC3339")]
    pub until: Option<String>,
    /// Keep only failed rows.
    #[arg(long)]
    pub only_failures: bool,
    /// Exit with status 1 when any row has one of these outcomes or retry-hygiene findings.
    #[arg(long, value_delimiter = ',', value_name = "OUTCOME|FINDING")]
    pub fail_on: Vec<String>,
    #[command(flatten)]
    pub otlp: OtlpArgs,
}

/// OpenTelemetry traces: every exchange as a span (report-schema.md section 6).
#[derive(Debug, Args)]
pub struct OtlpArgs {
    /// Write the spans here as OTLP/JSON lines (one ExportTraceServiceRequest per line).
    #[arg(long, value_name = "PATH")]
    pub otlp: Option<std::path::PathBuf>,
    /// Send the spans to this OTLP/HTTP receiver (`URL/v1/traces`, JSON).
    #[arg(long, value_name = "URL")]
    pub otlp_endpoint: Option<String>,
    /// The receiver's encoding: http/protobuf (every receiver takes it) or http/json.
    #[arg(
        long,
        value_name = "PROTOCOL",
        default_value = "http/protobuf",
        requires = "otlp_endpoint"
    )]
    pub otlp_protocol: String,
    /// A header sent with every OTLP request (authentication); repeatable; never printed.
    #[arg(long, value_name = "NAME=VALUE", requires = "otlp_endpoint")]
    pub otlp_header: Vec<String>,
    /// Most SSE events written as span events per span; the rest are counted on the span.
    #[arg(long, value_name = "N", default_value_t = crate::report::otlp::DEFAULT_MAX_EVENTS)]
    pub otlp_max_events: usize,
    /// Most recent exchanges whose trace is kept for the links of later retries.
    #[arg(long, value_name = "N", default_value_t = crate::report::otlp::MAX_LINK_TARGETS)]
    pub otlp_max_link_targets: usize,
    /// Most spans held until the exchange they link to is released.
    #[arg(long, value_name = "N", default_value_t = crate::report::otlp::MAX_HELD_SPANS)]
    pub otlp_max_held_spans: usize,
    /// Most session root spans held until the end of the run.
    #[arg(long, value_name = "N", default_value_t = crate::report::otlp::MAX_SESSION_ROOTS)]
    pub otlp_max_session_roots: usize,
    /// How long the end of the run waits for spans still queued for the receiver.
    #[arg(
        long,
        value_name = "DURATION",
        default_value = "15s",
        requires = "otlp_endpoint"
    )]
    pub otlp_timeout: String,
}

#[derive(Debug, Args)]
pub struct HttpArgs {
    #[arg(required = true, value_name = "INPUT")]
    pub inputs: Vec<String>,
    /// TLS key log (NSS format, as `SSLKEYLOGFILE` writes it); repeatable.
    #[arg(long, value_name = "FILE")]
    pub keylog: Vec<std::path::PathBuf>,
    /// Write the table here instead of printing it.
    #[arg(short, long, value_name = "PATH")]
    pub output: Option<std::path::PathBuf>,
    /// Output format: auto (from the extension), csv, jsonl.
    #[arg(long, default_value = "auto")]
    pub format: String,
    /// Write the connections table here: one row per TCP connection (format from the extension).
    #[arg(long, value_name = "PATH")]
    pub connections: Option<std::path::PathBuf>,
}

#[derive(Debug, Args)]
pub struct ShowArgs {
    #[command(flatten)]
    pub input: InputArgs,
    /// Session key (see `mcp-trace sessions`).
    #[arg(long, required = true)]
    pub session: String,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum ColorChoice {
    Auto,
    Always,
    Never,
}
