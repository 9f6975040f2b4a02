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
    use super::super::{
        RowHooks, RowSource, SummaryTo, analyze_rows, stage_config, use_color, values,
    };
    use super::LiveArgs;
    use crate::capture::{LIVE_TICK, LiveControl, LiveOptions, LiveSource};
    use crate::mcp::Exchange;
    use crate::report::live::{
        CaptureHealth, DEFAULT_FEED_CAPACITY, ScreenFeed, ScreenHeader, run_screen,
    };
    use crate::report::{self, ReportError, Table};
    use crate::tls::KeyLog;
    use anyhow::Result;
    use std::io::{IsTerminal, Write};
    use std::process::ExitCode;
    use std::sync::atomic::{AtomicBool, Ordering};
    use std::sync::{Arc, Mutex, PoisonError};
    use std::thread::JoinHandle;
    use std::time::{Duration, Instant};

    /// How often the screen gets the capture's health (packets, bytes, drops).
    const HEALTH_EVERY: Duration = Duration::from_millis(250);

    /// The terminal screen on a thread of its own, fed rows by the analysis and the capture's
    /// health by a second thread. Ending it (or dropping it, on an error) gives the terminal
    /// back before anything else is printed.
    struct Screen {
        feed: Arc<Mutex<Option<ScreenFeed>>>,
        screen: Option<JoinHandle<std::io::Result<()>>>,
        health: Option<JoinHandle<()>>,
        done: Arc<AtomicBool>,
    }

    impl Screen {
        fn start(header: ScreenHeader, control: &Arc<LiveControl>) -> Screen {
            let (feed, rx) = ScreenFeed::new(DEFAULT_FEED_CAPACITY);
            let feed = Arc::new(Mutex::new(Some(feed)));
            let stop = Arc::clone(&control.stop);
            let interface = header.interface.clone();
            let screen = std::thread::spawn(move || run_screen(rx, stop, header));
            let done = Arc::new(AtomicBool::new(false));
            let health = {
                let (feed, done, control) =
                    (Arc::clone(&feed), Arc::clone(&done), Arc::clone(control));
                std::thread::spawn(move || {
                    let started = Instant::now();
                    while !done.load(Ordering::Relaxed) {
                        let drops = control.drops();
                        let health = CaptureHealth {
                            interface: interface.clone(),
                            packets: control.packets.load(Ordering::Relaxed),
                            bytes: control.bytes.load(Ordering::Relaxed),
                            elapsed_s: started.elapsed().as_secs_f64(),
                            kernel_drops: drops.kernel,
                            interface_drops: drops.interface,
                            capture_loss: None,
                            rows_not_shown: 0,
                        };
                        if let Some(f) =
                            feed.lock().unwrap_or_else(PoisonError::into_inner).as_mut()
                        {
                            f.health(health);
                        }
                        std::thread::sleep(HEALTH_EVERY);
                    }
                })
            };
            Screen {
                feed,
                screen: Some(screen),
                health: Some(health),
                done,
            }
        }

        /// Ends the screen: the last rows shown, the terminal restored.
        fn end(&mut self) {
            self.done.store(true, Ordering::Relaxed);
            if let Some(h) = self.health.take() {
                let _ = h.join();
            }
            let feed = self
                .feed
                .lock()
                .unwrap_or_else(PoisonError::into_inner)
                .take();
            if let Some(f) = feed {
                f.finish();
            }
            if let Some(s) = self.screen.take() {
                match s.join() {
                    Ok(Err(e)) => eprintln!("mcp-trace: the live screen failed: {e}"),
                    Err(_) => eprintln!("mcp-trace: the live screen stopped"),
                    Ok(Ok(())) => {}
                }
            }
        }
    }

    impl Drop for Screen {
        fn drop(&mut self) {
            self.end();
        }
    }

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
            None if stdout_is_terminal => None,
            None => Some(Stream::Stdout(std::io::stdout())),
        };
        let show_screen = stdout_is_terminal && !matches!(stream, Some(Stream::Stdout(_)));
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
        let mut screen = if show_screen {
            let mut header = ScreenHeader::new(args.interface.clone());
            header.bpf_filter = Some(args.bpf.clone());
            header.outputs = [
                args.write.as_ref(),
                args.out.output.as_ref(),
                args.out.html.as_ref(),
                args.out.summary.as_ref(),
            ]
            .into_iter()
            .flatten()
            .map(|p| p.display().to_string())
            .collect();
            Some(Screen::start(header, &control))
        } else {
            eprintln!(
                "mcp-trace: capturing on {} ({}); Ctrl-C stops",
                args.interface, args.bpf
            );
            None
        };
        let names = [args.interface.clone()];
        let screen_rows = screen.as_ref().map(|s| Arc::clone(&s.feed));
        let mut on_kept = |row: &Exchange| {
            if let Some(feed) = &screen_rows
                && let Some(f) = feed.lock().unwrap_or_else(PoisonError::into_inner).as_mut()
            {
                f.row(row);
            }
            match stream.as_mut() {
                Some(s) => s.write(row, &control),
                None => Ok(()),
            }
        };
        let mut on_rows_end = || {
            if let Some(s) = screen.as_mut() {
                s.end();
            }
        };
        analyze_rows(
            &args.out,
            &names,
            cfg,
            color,
            RowSource::Live(Box::new(source), args.interface.clone()),
            RowHooks {
                summary_to,
                kept: &mut on_kept,
                rows_end: &mut on_rows_end,
            },
        )
    }
}
