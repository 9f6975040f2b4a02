//! `mcp-trace live -i IFACE`: the analysis of `analyze` on a live interface, its rows shown
//! as calls complete (a JSON line each on a stream, or the terminal screen), then the same
//! files and terminal summary `analyze` writes. Needs the `live` feature (libpcap).

use super::args::LiveArgs;

#[cfg(not(feature = "live"))]
pub fn live(_: LiveArgs) -> anyhow::Result<std::process::ExitCode> {
    anyhow::bail!(
        "this mcp-trace was built without live capture: build it with `cargo build --release --features live` (needs libpcap: apt install libpcap-dev)"
    )
}

#[cfg(feature = "live")]
pub use with_pcap::live;

#[cfg(feature = "live")]
mod with_pcap {
    use super::super::{RowSource, SummaryTo, analyze_rows, stage_config, use_color, values};
    use super::LiveArgs;
    use crate::capture::{LIVE_TICK, LiveControl, LiveOptions, LiveSource};
    use crate::mcp::Exchange;
    use crate::report::{self, ReportError, Table};
    use crate::tls::KeyLog;
    use anyhow::Result;
    use std::io::{IsTerminal, Write};
    use std::process::ExitCode;
    use std::sync::Arc;
    use std::sync::atomic::Ordering;
    use std::time::Duration;

    /// An open row (a session's GET stream, often open for the whole session) holds back the
    /// rows behind it at most this long in live mode (`--max-row-hold`), so a call's row comes
    /// within about a second of its response.
    pub const LIVE_HOLD_LIMIT_US: i64 = 1_000_000;

    /// Where each row goes as it completes.
    enum Stream {
        Stdout(std::io::Stdout),
        File(std::io::BufWriter<std::fs::File>, String),
    }

    impl Stream {
        /// One JSON line, flushed, so `mcp-trace live -i lo | jq` shows each call at once.
        fn write(&mut self, row: &Exchange, control: &LiveControl) -> Result<(), ReportError> {
            let cells = row.cells();
            match self {
                Stream::Stdout(out) => {
                    let mut out = out.lock();
                    let written = report::write_jsonl_row::<Exchange>(&mut out, &cells)
                        .and_then(|()| out.flush());
                    match written {
                        // The reader went away (`| head`): the capture ends as at Ctrl-C.
                        Err(e) if e.kind() == std::io::ErrorKind::BrokenPipe => {
                            control.stop.store(true, Ordering::Relaxed);
                            Ok(())
                        }
                        other => other.map_err(|error| ReportError::Write {
                            path: "stdout".into(),
                            error,
                        }),
                    }
                }
                Stream::File(out, path) => report::write_jsonl_row::<Exchange>(out, &cells)
                    .and_then(|()| out.flush())
                    .map_err(|error| ReportError::Write {
                        path: path.clone(),
                        error,
                    }),
            }
        }
    }

    pub fn live(args: LiveArgs) -> Result<ExitCode> {
        // The key log files are followed as they grow, not read once: the stages start
        // without secrets and the source hands them over.
        let cfg = stage_config(&args.common, 1, false, KeyLog::new(), LIVE_HOLD_LIMIT_US)?;
        let duration = args
            .duration
            .as_deref()
            .map(|text| {
                values::parse_duration_ms(text)
                    .map(|ms| Duration::from_millis(u64::try_from(ms).unwrap_or(0)))
                    .map_err(|e| anyhow::anyhow!("--duration: {e}"))
            })
            .transpose()?;
        let stdout_is_terminal = std::io::stdout().is_terminal();
        let mut stream = match args.jsonl.as_deref() {
            Some("-") => Some(Stream::Stdout(std::io::stdout())),
            Some(path) => {
                let file = std::fs::File::create(path).map_err(|error| ReportError::Create {
                    path: path.to_string(),
                    error,
                })?;
                Some(Stream::File(
                    std::io::BufWriter::new(file),
                    path.to_string(),
                ))
            }
            None => Some(Stream::Stdout(std::io::stdout())),
        };
        let summary_to = match stream {
            Some(Stream::Stdout(_)) => SummaryTo::Stderr,
            _ => SummaryTo::Stdout,
        };
        let color = use_color(args.common.color) && summary_to == SummaryTo::Stdout;
        let control = Arc::new(LiveControl::default());
        {
            let control = Arc::clone(&control);
            ctrlc::set_handler(move || control.stop.store(true, Ordering::Relaxed))
                .map_err(|e| anyhow::anyhow!("cannot handle Ctrl-C: {e}"))?;
        }
        let options = LiveOptions {
            interface: args.interface.clone(),
            filter: args.bpf.clone(),
            snaplen: args.snaplen,
            buffer_bytes: args.buffer_size,
            duration,
            count: args.count,
            keylogs: args.common.keylog.clone(),
            raw: args.write.clone(),
            tick: LIVE_TICK,
        };
        let source = LiveSource::open(options, Arc::clone(&control))?;
        if !stdout_is_terminal || summary_to == SummaryTo::Stderr {
            eprintln!(
                "mcp-trace: capturing on {} ({}); Ctrl-C stops",
                args.interface, args.bpf
            );
        }
        let names = [args.interface.clone()];
        let mut on_kept = |row: &Exchange| match stream.as_mut() {
            Some(s) => s.write(row, &control),
            None => Ok(()),
        };
        analyze_rows(
            &args.out,
            &names,
            cfg,
            color,
            RowSource::Live(source, args.interface.clone()),
            summary_to,
            &mut on_kept,
        )
    }
}
