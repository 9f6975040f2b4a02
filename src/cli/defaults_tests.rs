//! The CLI's limit defaults are the stages' defaults: an `analyze` run without limit flags
//! gets exactly `FlowLimits::default()` and `Limits::default()`, and `--help` shows each
//! default as the text the flag parses back to that constant.

#![allow(clippy::unwrap_used)]
use super::args::Cli;
use super::pipeline_config;
use crate::flow::FlowLimits;
use crate::limits::Limits;
use clap::{CommandFactory, Parser};

fn analyze_defaults() -> crate::pipeline::Config {
    let cli = Cli::try_parse_from(["mcp-trace", "analyze", "in.pcap"]).unwrap();
    let super::args::Command::Analyze(args) = cli.command else {
        panic!("not analyze")
    };
    pipeline_config(&args.input).unwrap()
}

#[test]
fn limits_without_flags_are_the_stages_defaults() {
    let cfg = analyze_defaults();
    assert_eq!(cfg.limits, Limits::default());
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
    let size = |flag: &str| super::values::parse_size(&default_of(flag)).unwrap();
    let number = |flag: &str| default_of(flag).parse::<usize>().unwrap();
    let (flow, limits) = (FlowLimits::default(), Limits::default());
    assert_eq!(number("max-open-flows"), flow.max_open_flows);
    assert_eq!(
        size("max-flow-buffer"),
        flow.max_buffered_bytes_per_direction
    );
    assert_eq!(
        super::values::parse_duration_ms(&default_of("flow-idle-timeout")).unwrap() * 1_000_000,
        flow.idle_timeout_ns
    );
    assert_eq!(size("max-header"), limits.head_bytes);
    assert_eq!(size("max-body"), limits.body_bytes);
    assert_eq!(size("max-decoded") as u64, limits.decoded_bytes);
    assert_eq!(size("max-sse-event"), limits.sse_event_bytes);
    assert_eq!(number("max-pending"), limits.pending_per_session);
    assert_eq!(number("max-retry-rows"), limits.retry_rows);
}
