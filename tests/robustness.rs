//! Robustness (issue 10): mutated samples, hostile captures and the run
//! summary's accounting identities, all through the real binary.
//!
//! Every run must exit 0 (analysis finished) or 2 (input refused, one clear
//! line), never panic, never hang ([`HANG_TIMEOUT`]), and stay under
//! [`PEAK_RSS_LIMIT_KB`] of resident memory, measured with GNU time's
//! `%M` (the kernel's `ru_maxrss` of the child) when `/usr/bin/time` exists,
//! else by polling `/proc/<pid>/status` `VmHWM`.
//!
//! `MCP_TRACE_MUTATIONS` sets the variants per file (default
//! [`DEFAULT_MUTATIONS`]); `MCP_TRACE_ROBUST_FULL=1` scales the hostile
//! captures to the sizes of the issue (scripts/fuzz.sh sets both).

use serde_json::Value;
use std::io::{BufWriter, Read, Write};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// A run longer than this is a hang.
const HANG_TIMEOUT: Duration = Duration::from_secs(20);
/// Hostile runs get longer in the full-size mode (a million flows in a debug build).
const HANG_TIMEOUT_FULL: Duration = Duration::from_secs(300);
/// Peak resident memory allowed for one run of the debug binary.
const PEAK_RSS_LIMIT_KB: u64 = 300 * 1024;
/// Mutated variants per input file in `cargo test`.
const DEFAULT_MUTATIONS: usize = 6;
/// Fixed seed of the mutation test.
const MUTATION_SEED: u64 = 0x6d63_702d_7472_6163;

fn repo() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

fn corpus_dir() -> Option<PathBuf> {
    let dir = PathBuf::from(concat!(env!("CARGO_MANIFEST_DIR"), "/../shared/corpus"));
    if dir.is_dir() {
        Some(dir)
    } else {
        eprintln!("notice: {} is absent; corpus files skipped", dir.display());
        None
    }
}

fn full_size() -> bool {
    std::env::var("MCP_TRACE_ROBUST_FULL").is_ok_and(|v| v == "1")
}

/// Every sample and corpus input: pcap, pcapng, gzip'd pcap, HAR.
fn input_files() -> Vec<PathBuf> {
    fn walk(dir: &Path, out: &mut Vec<PathBuf>) {
        let Ok(entries) = std::fs::read_dir(dir) else {
            return;
        };
        for e in entries.flatten() {
            let p = e.path();
            if p.is_dir() {
                walk(&p, out);
            } else {
                let name = p.file_name().unwrap().to_string_lossy().to_string();
                if [".pcap", ".pcapng", ".pcap.gz", ".har"]
                    .iter()
                    .any(|ext| name.ends_with(ext))
                {
                    out.push(p);
                }
            }
        }
    }
    let mut files = Vec::new();
    walk(&repo().join("samples"), &mut files);
    if let Some(c) = corpus_dir() {
        walk(&c, &mut files);
    }
    files.sort();
    files
}

/// Outcome of one `mcp-trace analyze` run.
#[derive(Debug)]
struct Run {
    code: Option<i32>,
    stderr: String,
    summary: Option<Value>,
    peak_rss_kb: u64,
    elapsed: Duration,
    timed_out: bool,
}

fn vm_hwm_kb(pid: u32) -> Option<u64> {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
    let line = status.lines().find(|l| l.starts_with("VmHWM:"))?;
    line.split_whitespace().nth(1)?.parse().ok()
}

/// Run `mcp-trace analyze <input> -o <tmp>/out.jsonl --summary <tmp>/summary.json`.
fn analyze(input: &Path, timeout: Duration) -> Run {
    let dir = tempfile::tempdir().unwrap();
    let summary = dir.path().join("summary.json");
    let out = dir.path().join("out.jsonl");
    let rss_file = dir.path().join("rss");
    let gnu_time = Path::new("/usr/bin/time");
    let bin = env!("CARGO_BIN_EXE_mcp-trace");
    let mut cmd = if gnu_time.exists() {
        let mut c = Command::new(gnu_time);
        c.arg("-f").arg("%M").arg("-o").arg(&rss_file).arg(bin);
        c
    } else {
        Command::new(bin)
    };
    cmd.arg("analyze")
        .arg(input)
        .arg("-o")
        .arg(&out)
        .arg("--summary")
        .arg(&summary)
        .arg("--no-progress")
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped());
    let started = Instant::now();
    let mut child = cmd.spawn().unwrap();
    let mut err_pipe = child.stderr.take().unwrap();
    let reader = std::thread::spawn(move || {
        let mut s = String::new();
        let _ = err_pipe.read_to_string(&mut s);
        s
    });
    let mut peak_polled = 0u64;
    let mut timed_out = false;
    let status = loop {
        if let Some(st) = child.try_wait().unwrap() {
            break st;
        }
        // Under GNU time the child's child is the analyzer; polling is the fallback.
        if let Some(kb) = vm_hwm_kb(child.id()) {
            peak_polled = peak_polled.max(kb);
        }
        if started.elapsed() > timeout {
            timed_out = true;
            let _ = child.kill();
            break child.wait().unwrap();
        }
        std::thread::sleep(Duration::from_millis(2));
    };
    let elapsed = started.elapsed();
    let mut stderr = reader.join().unwrap();
    let mut peak_rss_kb = peak_polled;
    if gnu_time.exists() {
        // GNU time prints "Command exited with non-zero status N" before %M on failure.
        let text = std::fs::read_to_string(&rss_file).unwrap_or_default();
        if let Some(kb) = text.lines().last().and_then(|l| l.trim().parse().ok()) {
            peak_rss_kb = kb;
        }
        if text.contains("Command terminated by signal") {
            stderr.push_str(&text);
        }
    }
    let summary = std::fs::read(&summary)
        .ok()
        .and_then(|b| serde_json::from_slice(&b).ok());
    Run {
        code: status.code(),
        stderr,
        summary,
        peak_rss_kb,
        elapsed,
        timed_out,
    }
}

fn num(v: &Value, key: &str) -> u64 {
    v.get(key).and_then(Value::as_u64).unwrap_or_else(|| panic!("summary lacks {key}: {v}"))
}

fn anomaly(v: &Value, name: &str) -> u64 {
    v.get("anomalies").and_then(|a| a.get(name)).and_then(Value::as_u64).unwrap_or(0)
}

/// `packets_total == packets_decoded + sum(packets_skipped)`; `Err` says how it fails.
fn packet_identity(s: &Value) -> Result<(), String> {
    let skipped: u64 = s
        .get("packets_skipped")
        .and_then(Value::as_object)
        .map(|m| m.values().filter_map(Value::as_u64).sum())
        .unwrap_or(0);
    let (total, decoded) = (num(s, "packets_total"), num(s, "packets_decoded"));
    if total == decoded + skipped && skipped == num(s, "packets_skipped_total") {
        Ok(())
    } else {
        Err(format!("packets_total {total} != decoded {decoded} + skipped {skipped}"))
    }
}

/// The contract of every run: exit 0 or 2, no panic, no hang, bounded memory,
/// and on exit 0 a summary whose packet identity holds. `Err` describes the breach.
fn check_run(what: &str, run: &Run) -> Result<(), String> {
    let fail = |why: String| Err(format!("{what}: {why}\nstderr: {}", run.stderr));
    if run.timed_out {
        return fail(format!("hang: killed after {:?}", run.elapsed));
    }
    if run.stderr.contains("panicked") || run.stderr.contains("overflowed its stack") {
        return fail("panic".to_string());
    }
    match run.code {
        Some(0) => {}
        Some(2) => {
            if !run.stderr.starts_with("mcp-trace: ") {
                return fail("exit 2 without a `mcp-trace:` message".to_string());
            }
        }
        other => return fail(format!("exit status {other:?}")),
    }
    if run.peak_rss_kb > PEAK_RSS_LIMIT_KB {
        return fail(format!("peak RSS {} kB over {PEAK_RSS_LIMIT_KB} kB", run.peak_rss_kb));
    }
    if run.code == Some(0) {
        let Some(s) = &run.summary else {
            return fail("exit 0 without a summary".to_string());
        };
        packet_identity(s).or_else(fail)?;
    }
    Ok(())
}

/// xorshift64*: a fixed-seed generator, enough to pick cut points and bytes.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }

    fn below(&mut self, n: usize) -> usize {
        if n == 0 { 0 } else { (self.next() % n as u64) as usize }
    }
}

/// Variant `k` of `data`: truncated, bytes flipped, or both; flips favour the
/// first 64 bytes (file and record headers) half of the time.
fn mutate(data: &[u8], rng: &mut Rng, k: usize) -> Vec<u8> {
    let mut v = data.to_vec();
    if k % 3 != 1 && !v.is_empty() {
        let cut = rng.below(v.len());
        v.truncate(cut.max(1));
    }
    if k % 3 != 0 && !v.is_empty() {
        for _ in 0..1 + rng.below(8) {
            let span = if rng.next() & 1 == 0 { v.len().min(64) } else { v.len() };
            let at = rng.below(span);
            v[at] ^= 1 << rng.below(8);
        }
    }
    v
}

fn mutations_per_file() -> usize {
    std::env::var("MCP_TRACE_MUTATIONS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(DEFAULT_MUTATIONS)
}

/// Where a failing variant is kept for the report (and for a regression fixture).
fn keep_failure(name: &str, data: &[u8]) -> PathBuf {
    let dir = std::env::temp_dir().join("mcp-trace-robustness-failures");
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join(name);
    std::fs::write(&path, data).unwrap();
    path
}

#[test]
fn mutated_inputs_exit_cleanly() {
    let files = input_files();
    assert!(files.len() >= 20, "samples missing: {files:?}");
    let per_file = mutations_per_file();
    let mut jobs = Vec::new();
    for (i, path) in files.iter().enumerate() {
        let data = std::fs::read(path).unwrap();
        let mut rng = Rng(MUTATION_SEED ^ (i as u64 + 1).wrapping_mul(0x9e37_79b9_7f4a_7c15));
        for k in 0..per_file {
            jobs.push((path.clone(), k, mutate(&data, &mut rng, k)));
        }
    }
    let total = jobs.len();
    let next = std::sync::atomic::AtomicUsize::new(0);
    let failures = std::sync::Mutex::new(Vec::new());
    let codes = std::sync::Mutex::new([0usize; 2]);
    let peak = std::sync::atomic::AtomicU64::new(0);
    std::thread::scope(|s| {
        for _ in 0..3 {
            s.spawn(|| {
                let dir = tempfile::tempdir().unwrap();
                loop {
                    let j = next.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                    let Some((path, k, data)) = jobs.get(j) else { break };
                    let name = path.file_name().unwrap().to_string_lossy().to_string();
                    let input = dir.path().join(format!("v{k}-{name}"));
                    std::fs::write(&input, data).unwrap();
                    let run = analyze(&input, HANG_TIMEOUT);
                    peak.fetch_max(run.peak_rss_kb, std::sync::atomic::Ordering::Relaxed);
                    if let Err(why) = check_run(&format!("{name} variant {k}"), &run) {
                        let kept = keep_failure(&format!("v{k}-{name}"), data);
                        failures.lock().unwrap().push(format!("{why}\nkept: {}", kept.display()));
                    }
                    let mut c = codes.lock().unwrap();
                    c[usize::from(run.code == Some(2))] += 1;
                }
            });
        }
    });
    let codes = codes.into_inner().unwrap();
    eprintln!(
        "mutation: {} files, {total} variants: {} exit 0, {} exit 2; peak RSS {} kB",
        files.len(),
        codes[0],
        codes[1],
        peak.into_inner()
    );
    let failures = failures.into_inner().unwrap();
    assert!(failures.is_empty(), "{} failures:\n{}", failures.len(), failures.join("\n\n"));
}

#[test]
fn identities_hold_on_every_sample_and_corpus_file() {
    let mut broken = Vec::new();
    let mut checked = 0;
    for path in input_files() {
        let run = analyze(&path, HANG_TIMEOUT);
        let name = path.display().to_string();
        if let Err(why) = check_run(&name, &run) {
            broken.push(why);
            continue;
        }
        if run.summary.is_some() {
            checked += 1;
        }
    }
    eprintln!("identities: {checked} inputs checked");
    assert!(broken.is_empty(), "{}", broken.join("\n\n"));
}
