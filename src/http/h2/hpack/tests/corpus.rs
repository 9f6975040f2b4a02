//! Story corpora (hpack-test-case's JSON format): every case's `wire` decoded in order by one
//! decoder, `header_table_size` applied before its case, the fields compared to `headers`.
//!
//! `tests/data/hpack-test-case/`: stories of the public corpus (other encoders);
//! `tests/data/hpack-gen/`: stories made by python-hyper's `hpack` encoder (`make.py`).

use super::hex;
use crate::http::h2::hpack::*;
use std::path::{Path, PathBuf};

type Fields = Vec<(Vec<u8>, Vec<u8>)>;

pub(super) struct Case {
    pub table_size: Option<usize>,
    pub wire: Vec<u8>,
    pub headers: Fields,
}

pub(super) fn load_story(path: &Path) -> Vec<Case> {
    let text = std::fs::read_to_string(path).unwrap();
    let json: serde_json::Value = serde_json::from_str(&text).unwrap();
    json["cases"]
        .as_array()
        .unwrap()
        .iter()
        .map(|case| Case {
            table_size: case["header_table_size"].as_u64().map(|n| n as usize),
            wire: hex(case["wire"].as_str().unwrap()),
            headers: case["headers"]
                .as_array()
                .unwrap()
                .iter()
                .flat_map(|h| h.as_object().unwrap().iter())
                .map(|(n, v)| {
                    (
                        n.as_bytes().to_vec(),
                        v.as_str().unwrap().as_bytes().to_vec(),
                    )
                })
                .collect(),
        })
        .collect()
}

/// Every `story_*.json` under `dir`, sorted.
pub(super) fn stories(dir: &str) -> Vec<PathBuf> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join(dir);
    let mut out = Vec::new();
    for sub in std::fs::read_dir(&root).unwrap() {
        let sub = sub.unwrap().path();
        if !sub.is_dir() {
            continue;
        }
        for f in std::fs::read_dir(&sub).unwrap() {
            let f = f.unwrap().path();
            let name = f.file_name().unwrap().to_string_lossy().into_owned();
            if name.starts_with("story_") && name.ends_with(".json") {
                out.push(f);
            }
        }
    }
    out.sort();
    out
}

/// Decodes one story; the first case that differs, if any.
fn run_story(cases: &[Case]) -> Result<(), String> {
    let mut d = Decoder::new(4096, usize::MAX);
    for (i, case) in cases.iter().enumerate() {
        if let Some(n) = case.table_size {
            d.set_max_table_size(n);
        }
        let mut got = Fields::new();
        d.decode(&case.wire, &mut |n, v| got.push((n.to_vec(), v.to_vec())))
            .map_err(|e| format!("case {i}: {e:?}"))?;
        if got != case.headers {
            return Err(format!("case {i}: fields differ"));
        }
        assert!(d.table_size() <= d.table.capacity());
    }
    Ok(())
}

/// Runs every story under `dir`: (stories, blocks), panicking with every failure.
fn run_dir(dir: &str) -> (usize, usize) {
    let (mut stories_n, mut blocks) = (0, 0);
    let mut failures = Vec::new();
    for path in stories(dir) {
        let cases = load_story(&path);
        stories_n += 1;
        blocks += cases.len();
        if let Err(e) = run_story(&cases) {
            failures.push(format!("{}: {e}", path.display()));
        }
    }
    assert!(
        failures.is_empty(),
        "{} failing stories:\n{}",
        failures.len(),
        failures.join("\n")
    );
    (stories_n, blocks)
}

#[test]
fn hpack_test_case_stories_decode() {
    let (stories, blocks) = run_dir("tests/data/hpack-test-case");
    // The sample listed in tests/data/hpack-test-case/README.md.
    assert_eq!((stories, blocks), (12, 59));
}

#[test]
fn python_hpack_generated_stories_decode() {
    let (stories, blocks) = run_dir("tests/data/hpack-gen");
    // make.py's six variants of 39 sequences.
    assert_eq!((stories, blocks), (108, 648));
}
