//! Throughput of the HPACK decoder on the stored story corpora.
//!
//! ```text
//! cargo run --release --example hpack_throughput -- [ROUNDS] [DIR...]
//! ```
//!
//! Loads every `story_*.json` (hpack-test-case's format) one level under each DIR (default:
//! `tests/data/hpack-test-case` and `tests/data/hpack-gen`), checks once that every block
//! decodes to its story's headers (exit 1 if not), then decodes the whole corpus ROUNDS times
//! (default 200), one decoder per story as a connection would, and prints blocks/s, MB/s of
//! wire bytes and MB/s of decoded field bytes (the best round and the median).

use mcp_trace::http::h2::hpack::Decoder;
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::time::Instant;

#[cfg(feature = "mimalloc")]
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

struct Case {
    table_size: Option<usize>,
    wire: Vec<u8>,
    headers: Vec<(Vec<u8>, Vec<u8>)>,
}

fn hex(s: &str) -> Option<Vec<u8>> {
    let s = s.as_bytes();
    s.chunks(2)
        .map(|p| u8::from_str_radix(std::str::from_utf8(p).ok()?, 16).ok())
        .collect()
}

fn load(path: &Path) -> Result<Vec<Case>, String> {
    let text = std::fs::read_to_string(path).map_err(|e| e.to_string())?;
    let json: serde_json::Value = serde_json::from_str(&text).map_err(|e| e.to_string())?;
    let cases = json
        .get("cases")
        .and_then(|c| c.as_array())
        .ok_or("no cases")?;
    cases
        .iter()
        .map(|case| {
            let wire = case.get("wire").and_then(|w| w.as_str()).and_then(hex);
            let headers = case.get("headers").and_then(|h| h.as_array());
            let (Some(wire), Some(headers)) = (wire, headers) else {
                return Err("a case without wire or headers".to_string());
            };
            let headers = headers
                .iter()
                .filter_map(|h| h.as_object())
                .flat_map(|h| h.iter())
                .map(|(n, v)| {
                    (
                        n.as_bytes().to_vec(),
                        v.as_str().unwrap_or("").as_bytes().to_vec(),
                    )
                })
                .collect();
            let table_size = case.get("header_table_size").and_then(|n| n.as_u64());
            Ok(Case {
                table_size: table_size.map(|n| n as usize),
                wire,
                headers,
            })
        })
        .collect()
}

fn stories(dir: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    for sub in std::fs::read_dir(dir).into_iter().flatten().flatten() {
        for f in std::fs::read_dir(sub.path())
            .into_iter()
            .flatten()
            .flatten()
        {
            let name = f.file_name().to_string_lossy().into_owned();
            if name.starts_with("story_") && name.ends_with(".json") {
                out.push(f.path());
            }
        }
    }
    out.sort();
    out
}

/// Decodes every story once; the field bytes emitted.
fn round(corpus: &[Vec<Case>]) -> usize {
    let mut bytes = 0usize;
    for story in corpus {
        let mut d = Decoder::new(4096, usize::MAX);
        for case in story {
            if let Some(n) = case.table_size {
                d.set_max_table_size(n);
            }
            let _ = d.decode(&case.wire, &mut |n, v| bytes += n.len() + v.len());
        }
    }
    bytes
}

fn main() -> ExitCode {
    let mut args = std::env::args().skip(1).peekable();
    let rounds: usize = match args.peek().and_then(|a| a.parse().ok()) {
        Some(n) => {
            args.next();
            n
        }
        None => 200,
    };
    let mut dirs: Vec<PathBuf> = args.map(PathBuf::from).collect();
    if dirs.is_empty() {
        let root = Path::new(env!("CARGO_MANIFEST_DIR"));
        dirs = vec![
            root.join("tests/data/hpack-test-case"),
            root.join("tests/data/hpack-gen"),
        ];
    }
    let mut corpus = Vec::new();
    for path in dirs.iter().flat_map(|d| stories(d)) {
        match load(&path) {
            Ok(cases) => corpus.push(cases),
            Err(e) => {
                eprintln!("{}: {e}", path.display());
                return ExitCode::FAILURE;
            }
        }
    }
    let blocks: usize = corpus.iter().map(Vec::len).sum();
    let wire: usize = corpus.iter().flatten().map(|c| c.wire.len()).sum();

    // Correctness first: every block as its story says.
    for (i, story) in corpus.iter().enumerate() {
        let mut d = Decoder::new(4096, usize::MAX);
        for (j, case) in story.iter().enumerate() {
            if let Some(n) = case.table_size {
                d.set_max_table_size(n);
            }
            let mut got = Vec::new();
            let r = d.decode(&case.wire, &mut |n, v| got.push((n.to_vec(), v.to_vec())));
            if r.is_err() || got != case.headers {
                eprintln!(
                    "story {i} case {j}: {r:?}, fields differ: {}",
                    got != case.headers
                );
                return ExitCode::FAILURE;
            }
        }
    }

    let mut times = Vec::with_capacity(rounds);
    let mut fields = 0;
    for _ in 0..rounds.max(1) {
        let start = Instant::now();
        fields = std::hint::black_box(round(&corpus));
        times.push(start.elapsed().as_secs_f64());
    }
    times.sort_by(f64::total_cmp);
    let best = times.first().copied().unwrap_or(0.0);
    let median = times.get(times.len() / 2).copied().unwrap_or(0.0);
    let mb = |bytes: usize, t: f64| bytes as f64 / t / 1e6;
    println!(
        "{} stories, {blocks} blocks, {wire} wire bytes -> {fields} field bytes per round; {} rounds",
        corpus.len(),
        times.len()
    );
    for (label, t) in [("best", best), ("median", median)] {
        println!(
            "{label:>6}: {:.3} ms/round, {:.0} blocks/s, {:.1} MB/s wire, {:.1} MB/s fields",
            t * 1e3,
            blocks as f64 / t,
            mb(wire, t),
            mb(fields, t)
        );
    }
    ExitCode::SUCCESS
}
