//! The CLI's limit defaults are the stages' defaults: an `analyze` run without limit flags
//! gets exactly each stage's `Default` limits, and `--help` shows each default as the text
//! the flag parses back to that constant.

#![allow(clippy::unwrap_used)]
use crate::cli::args::Cli;
use crate::cli::pipeline_config;
use crate::flow::FlowLimits;
use crate::http::HttpLimits;
use crate::mcp::McpLimits;
use crate::tls::TlsLimits;
use clap::{CommandFactory, Parser};

fn analyze_defaults() -> crate::pipeline::Config {
    let cli = Cli::try_parse_from(["mcp-trace", "analyze", "in.pcap"]).unwrap();
    let crate::cli::args::Command::Analyze(args) = cli.command else {
        panic!("not analyze")
    };
    pipeline_config(&args.input).unwrap()
}

#[test]
fn limits_without_flags_are_the_stages_defaults() {
    let cfg = analyze_defaults();
    assert_eq!(cfg.http, HttpLimits::default());
    assert_eq!(cfg.mcp, McpLimits::default());
    assert_eq!(cfg.tls, TlsLimits::default());
    let flow = FlowLimits::default();
    assert_eq!(cfg.flow.max_open_flows, flow.max_open_flows);
    assert_eq!(
        cfg.flow.max_buffered_bytes_per_direction,
        flow.max_buffered_bytes_per_direction
    );
    assert_eq!(cfg.flow.idle_timeout_ns, flow.idle_timeout_ns);
}

#[test]
fn help_shows_the_stages_defaults() {
    let mut cmd = Cli::command();
    let analyze = cmd.find_subcommand_mut("analyze").unwrap();
    let help = analyze.render_long_help().to_string();
    let default_of = |flag: &str| -> String {
        let at = help
            .find(&format!("--{flag} "))
            .unwrap_or_else(|| panic!("--{flag}"));
        let rest = &help[at..];
        let start = rest.find("[default: ").unwrap() + "[default: ".len();
        let end = start + rest[start..].find(']').unwrap();
        rest[start..end].to_string()
    };
    let size = |flag: &str| crate::cli::values::parse_size(&default_of(flag)).unwrap();
    let number = |flag: &str| default_of(flag).parse::<usize>().unwrap();
    let (flow, http, mcp) = (
        FlowLimits::default(),
        HttpLimits::default(),
        McpLimits::default(),
    );
    assert_eq!(number("max-open-flows"), flow.max_open_flows);
    assert_eq!(
        size("max-flow-buffer"),
        flow.max_buffered_bytes_per_direction
    );
    assert_eq!(
        crate::cli::values::parse_duration_ms(&default_of("flow-idle-timeout")).unwrap()
            * 1_000_000,
        flow.idle_timeout_ns
    );
    let tls = TlsLimits::default();
    assert_eq!(size("max-tls-wait"), tls.wait_bytes_per_connection);
    assert_eq!(size("max-tls-wait-total"), tls.wait_bytes_total);
    assert_eq!(size("max-header"), http.head_bytes);
    assert_eq!(size("max-body"), http.body_bytes);
    assert_eq!(size("max-body"), mcp.body_bytes);
    assert_eq!(size("max-decoded") as u64, http.decoded_bytes);
    assert_eq!(number("max-h2-streams"), http.h2_streams);
    assert_eq!(size("max-sse-event"), mcp.rpc.sse_event_bytes);
    assert_eq!(number("max-pending"), mcp.pending_per_session);
    assert_eq!(number("max-retry-rows"), mcp.retry_rows);
    assert_eq!(number("max-catalog-tools"), mcp.catalog_tools);
}

#[test]
fn default_texts_are_in_the_largest_unit_and_parse_back() {
    use crate::cli::values::{duration_text, parse_duration_ms, parse_size, size_text};
    assert_eq!(size_text(64 * 1024), "64KiB");
    assert_eq!(size_text(16 << 20), "16MiB");
    assert_eq!(size_text(2 << 30), "2GiB");
    assert_eq!(size_text(1000), "1000");
    assert_eq!(size_text(0), "0");
    assert_eq!(duration_text(600_000), "10m");
    assert_eq!(duration_text(7_200_000), "2h");
    assert_eq!(duration_text(2_000), "2s");
    assert_eq!(duration_text(50), "50ms");
    for n in [0, 1, 1000, 1024, 65_536, 3 << 20, 5 << 30] {
        assert_eq!(parse_size(&size_text(n)), Ok(n));
    }
    for ms in [0, 50, 1_500, 60_000, 90_000, 3_600_000] {
        assert_eq!(parse_duration_ms(&duration_text(ms)), Ok(ms));
    }
}
