//! Throughput of the TLS stage: capture -> decode -> flow -> TLS on a TLS capture
//! against capture -> decode -> flow on the plaintext capture of the same traffic.
//!
//! ```text
//! cargo build --release --example gen_capture --example tls_throughput
//! gen_capture /tmp/p.pcap 100 --seed 1; gen_capture /tmp/t.pcap 100 --seed 1 --tls
//! tls_throughput /tmp/p.pcap /tmp/t.pcap [ROUNDS]     # key log: /tmp/t.keys
//! ```
//!
//! Runs, alternating, ROUNDS times (default 5): the plaintext capture through the
//! flow stage; the TLS capture through the flow stage only; the TLS capture through
//! the flow and TLS stages. Prints the best and median wall time of each, MB/s of
//! capture file and of the TCP payload handed on, and the TLS stage's own rate
//! (the third run's time less the second's, over the TLS payload). Then, untimed,
//! hashes what each connection hands on per direction: exits 1 when the TLS stage
//! hands on other bytes than the plaintext capture's flow stage, or reports a
//! connection with data not decrypted.

use mcp_trace::capture::{self, Source};
use mcp_trace::decode::{Decoded, Decoder};
use mcp_trace::flow::{FlowLimits, FlowTable};
use mcp_trace::report::RunStats;
use mcp_trace::stream::Decryption;
use mcp_trace::stream::{Side, StreamEvent, StreamEventKind};
use mcp_trace::tls::{KeyLog, TlsCounters, TlsStage};
use std::collections::BTreeMap;
use std::process::ExitCode;
use std::time::Instant;

#[cfg(feature = "mimalloc")]
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

/// What one run handed on.
#[derive(Default, PartialEq, Eq, Debug)]
struct Handed {
    /// Payload bytes in `Data` events.
    bytes: u64,
    /// FNV-1a of each stream's bytes per side, whatever the events' sizes.
    digests: BTreeMap<(u64, bool), u64>,
    /// Connections closed (their records), and those the TLS stage did not decrypt though
    /// they carried TLS bytes.
    connections: u64,
    not_decrypted: u64,
}

/// Counts (and with `verify` hashes) the bytes of `events`, emptying it.
fn count(events: &mut Vec<StreamEvent>, handed: &mut Handed, verify: bool) {
    for ev in events.drain(..) {
        if let StreamEventKind::Closed { record, .. } = &ev.kind {
            handed.connections += 1;
            let tls = &record.tls;
            if tls.decryption != Decryption::Decrypted && tls.bytes.received > 0 {
                handed.not_decrypted += 1;
            }
        }
        if let StreamEventKind::Data { side, bytes } = &ev.kind {
            handed.bytes += bytes.len() as u64;
            if !verify {
                continue;
            }
            let h = handed
                .digests
                .entry((ev.stream, *side == Side::Client))
                .or_insert(0xcbf2_9ce4_8422_2325);
            for b in bytes {
                *h = (*h ^ u64::from(*b)).wrapping_mul(0x100_0000_01b3);
            }
        }
    }
}

/// One run over `path`; with `keys`, the key log is read (as `analyze --keylog` would) and
/// the TLS stage runs. Timed runs do not hash the bytes (`verify`): that would cost more
/// than the stages.
fn pass(path: &str, keys: Option<&str>, verify: bool) -> Result<(f64, Handed), String> {
    let start = Instant::now();
    let mut stage = match keys {
        Some(keys) => Some(TlsStage::new(read_keylog(keys)?)),
        None => None,
    };
    let Source::Packets(reader) = capture::open(path, 0).map_err(|e| format!("{path}: {e}"))?
    else {
        return Err(format!("{path}: not a packet capture"));
    };
    let mut stats = RunStats::default();
    let mut frames = capture::Merger::new(vec![reader]);
    let mut decoder = Decoder::new();
    let mut table = FlowTable::new(FlowLimits::default());
    let (mut flow_out, mut out) = (Vec::new(), Vec::new());
    let mut handed = Handed::default();
    let mut step = |flow_out: &mut Vec<StreamEvent>,
                    stats: &mut TlsCounters,
                    handed: &mut Handed| match stage.as_mut() {
        Some(s) => {
            for ev in flow_out.drain(..) {
                s.push(ev, stats, &mut out);
            }
            count(&mut out, handed, verify);
        }
        None => count(flow_out, handed, verify),
    };
    while let Some(frame) = frames.next_frame_ref(&mut stats.capture) {
        if let Decoded::Segment(seg) = decoder.decode_ref(&frame) {
            table.push(seg, &mut stats.flow, &mut flow_out);
            step(&mut flow_out, &mut stats.tls, &mut handed);
        }
    }
    table.finish(&mut stats.flow, &mut flow_out);
    step(&mut flow_out, &mut stats.tls, &mut handed);
    if let Some(s) = stage.as_mut() {
        let mut rest = Vec::new();
        s.finish(&mut stats.tls, &mut rest);
        count(&mut rest, &mut handed, verify);
    }
    Ok((start.elapsed().as_secs_f64(), handed))
}

fn read_keylog(keys: &str) -> Result<KeyLog, String> {
    let mut keylog = KeyLog::new();
    let file = std::fs::File::open(keys).map_err(|e| format!("{keys}: {e}"))?;
    keylog
        .read_from(keys, std::io::BufReader::new(file))
        .map_err(|e| format!("{keys}: {e}"))?;
    Ok(keylog)
}

/// One of the three runs of a round, and what its rounds gave.
struct Run<'a> {
    name: &'static str,
    path: &'a str,
    keys: Option<&'a str>,
    walls: Vec<f64>,
    handed: Handed,
}

impl Run<'_> {
    fn best(&self) -> f64 {
        self.walls.iter().copied().fold(f64::INFINITY, f64::min)
    }

    fn median(&self) -> f64 {
        let mut w = self.walls.clone();
        w.sort_by(f64::total_cmp);
        let n = w.len();
        let mid = |i: usize| w.get(i).copied().unwrap_or(f64::NAN);
        if n % 2 == 1 {
            mid(n / 2)
        } else {
            (mid(n / 2 - 1) + mid(n / 2)) / 2.0
        }
    }
}

fn run(plain: &str, tls: &str, rounds: usize) -> Result<bool, String> {
    let keys = match tls.strip_suffix(".pcap") {
        Some(stem) => format!("{stem}.keys"),
        None => format!("{tls}.keys"),
    };
    let new = |name, path, keys| Run {
        name,
        path,
        keys,
        walls: Vec::new(),
        handed: Handed::default(),
    };
    let mut runs = [
        new("plaintext: capture -> decode -> flow", plain, None),
        new("TLS: capture -> decode -> flow", tls, None),
        new(
            "TLS: capture -> decode -> flow -> TLS stage",
            tls,
            Some(keys.as_str()),
        ),
    ];
    for round in 1..=rounds {
        let mut line = format!("round {round}:");
        for r in runs.iter_mut() {
            let (wall, handed) = pass(r.path, r.keys, false)?;
            r.walls.push(wall);
            r.handed = handed;
            line.push_str(&format!(" {:.3} s", wall));
        }
        eprintln!("{line}");
    }
    println!("| run | capture MB | best s | median s | capture MB/s | payload out MB/s |");
    println!("|---|---:|---:|---:|---:|---:|");
    for r in &runs {
        let mb = std::fs::metadata(r.path)
            .map_err(|e| format!("{}: {e}", r.path))?
            .len() as f64
            / 1e6;
        let b = r.best();
        println!(
            "| {} | {mb:.1} | {b:.3} | {:.3} | {:.1} | {:.1} |",
            r.name,
            r.median(),
            mb / b,
            r.handed.bytes as f64 / 1e6 / b
        );
    }
    let [plain_run, tls_flow, tls_stage] = &runs;
    let stage_s = tls_stage.best() - tls_flow.best();
    let tls_mb = tls_flow.handed.bytes as f64 / 1e6;
    println!(
        "\nTLS stage alone (best less best): {stage_s:.3} s for {tls_mb:.1} MB of TLS payload: {:.0} MB/s",
        tls_mb / stage_s.max(1e-6)
    );
    println!(
        "same traffic, TLS through the TLS stage against plaintext: {:.2}x the time, {:.0}% of the throughput",
        tls_stage.best() / plain_run.best(),
        100.0 * plain_run.best() / tls_stage.best()
    );
    // Untimed: the decrypted bytes against the plaintext capture's, stream by stream.
    let (_, plain_check) = pass(plain, None, true)?;
    let (_, tls_check) = pass(tls, Some(&keys), true)?;
    let same = tls_check.digests == plain_check.digests
        && tls_stage.handed.bytes == plain_run.handed.bytes;
    println!(
        "decrypted bytes {} the plaintext capture's ({} bytes); {} connections, {} with data not decrypted",
        if same { "equal" } else { "DIFFER from" },
        plain_run.handed.bytes,
        tls_stage.handed.connections,
        tls_stage.handed.not_decrypted
    );
    Ok(same && tls_stage.handed.not_decrypted == 0)
}

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let (Some(plain), Some(tls)) = (args.first(), args.get(1)) else {
        eprintln!("usage: tls_throughput PLAIN.pcap TLS.pcap [ROUNDS]  (key log: TLS.keys)");
        return ExitCode::from(2);
    };
    let rounds = match args.get(2).map(|r| r.parse::<usize>()) {
        None => 5,
        Some(Ok(n)) if n > 0 => n,
        Some(_) => {
            eprintln!("tls_throughput: ROUNDS must be a positive integer");
            return ExitCode::from(2);
        }
    };
    match run(plain, tls, rounds) {
        Ok(true) => ExitCode::SUCCESS,
        Ok(false) => ExitCode::from(1),
        Err(e) => {
            eprintln!("tls_throughput: {e}");
            ExitCode::from(1)
        }
    }
}
