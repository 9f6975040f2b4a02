//! The stage order of `src/lib.rs`, checked on the source: no module imports a module of a
//! later stage, the shared utility modules import no stage, and no two files import each
//! other in a circle. Every violation is listed at once, as `file:line`.
//!
//! An import is a `crate::x` or `super::x` path in code (comments and `#[cfg(test)]` code
//! aside: tests may build their input with any stage). A module's file referring to its own
//! children (a `mod.rs` re-exporting them) is no edge of a circle.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

/// The stages in data-flow order, after `stream`, the words flow, tls and http share: first,
/// so that it imports no stage and every stage may use it.
const STAGES: [&str; 10] = [
    "stream", "capture", "decode", "flow", "tls", "http", "har", "rpc", "mcp", "report",
];
/// Shared utilities: any stage may import them; they import no stage (each other, yes).
const UTILITIES: [&str; 8] = [
    "anomaly",
    "buffers",
    "contract",
    "counters",
    "display",
    "hashing",
    "testing",
    "timestamp",
];
/// Wiring: they import every stage, and no stage or utility imports them.
const WIRING: [&str; 4] = ["cli", "pipeline", "main", "lib"];

/// Known layer violations outside this change, as (file, imported module): being fixed by
/// the seam refactor (issue 21). Each entry must still be a violation, so that a fixed one
/// is taken off the list.
const ALLOWED_IMPORTS: [(&str, &str); 0] = [];
/// Known circles, as the sorted files of each: being fixed by the seam refactor (issue 21).
const ALLOWED_CIRCLES: [&[&str]; 0] = [];

struct SourceFile {
    /// Relative to the crate root, `/`-separated (`src/mcp/analyzer.rs`).
    name: String,
    /// Module path (`["mcp", "analyzer"]`; `src/lib.rs` is `[]`, `src/main.rs` `["main"]`).
    module: Vec<String>,
    /// Code lines (comments blanked), up to the first `#[cfg(test)]` module.
    lines: Vec<String>,
}

fn rust_files(dir: &Path, out: &mut Vec<PathBuf>) {
    let mut entries: Vec<_> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect();
    entries.sort();
    for path in entries {
        if path.is_dir() {
            rust_files(&path, out);
        } else if path.extension().is_some_and(|e| e == "rs") {
            out.push(path);
        }
    }
}

/// Test-only files: their imports are free.
fn is_test_file(name: &str) -> bool {
    let file = name.rsplit('/').next().unwrap_or(name);
    file == "tests.rs"
        || file.ends_with("_tests.rs")
        || file == "proptests.rs"
        || name.contains("/tests/")
}

fn module_of(rel: &str) -> Vec<String> {
    let stem = rel.trim_start_matches("src/").trim_end_matches(".rs");
    let mut parts: Vec<String> = stem.split('/').map(str::to_string).collect();
    if parts.last().is_some_and(|p| p == "mod") {
        parts.pop();
    }
    if parts == ["lib"] {
        parts.clear();
    }
    parts
}

/// The code of a line: `//` comments (docs included) blanked, strings left as they are.
fn code_of(line: &str) -> String {
    match line.find("//") {
        Some(i) if !line[..i].contains('"') => line[..i].to_string(),
        _ => line.to_string(),
    }
}

fn load(root: &Path) -> Vec<SourceFile> {
    let mut paths = Vec::new();
    rust_files(&root.join("src"), &mut paths);
    let mut files = Vec::new();
    for path in paths {
        let name = path
            .strip_prefix(root)
            .unwrap()
            .to_string_lossy()
            .replace('\\', "/");
        if is_test_file(&name) {
            continue;
        }
        let text = std::fs::read_to_string(&path).unwrap();
        let mut lines = Vec::new();
        let raw: Vec<&str> = text.lines().collect();
        for (n, line) in raw.iter().enumerate() {
            let next = raw.get(n + 1).map_or("", |l| l.trim_start());
            let test_mod =
                next.starts_with("#[path") || next.split_whitespace().any(|w| w == "mod");
            if line.trim() == "#[cfg(test)]" && test_mod {
                break;
            }
            lines.push(code_of(line));
        }
        files.push(SourceFile {
            module: module_of(&name),
            name,
            lines,
        });
    }
    files
}

/// The module paths a line refers to, resolved from `module`, the referring file's module
/// (whose `super` is its parent, for a `mod.rs` as for any other file).
fn references(line: &str, module: &[String]) -> Vec<Vec<String>> {
    let mut out = Vec::new();
    let bytes = line.as_bytes();
    let ident = |c: u8| c.is_ascii_alphanumeric() || c == b'_';
    let mut i = 0;
    while i < bytes.len() {
        if !line.is_char_boundary(i) {
            i += 1;
            continue;
        }
        let starts = i == 0 || !ident(bytes[i - 1]) && bytes[i - 1] != b':';
        let rest = &line[i..];
        if starts && (rest.starts_with("crate::") || rest.starts_with("super::")) {
            let mut base: Vec<String> = Vec::new();
            let mut j = i;
            if rest.starts_with("crate::") {
                j += "crate::".len();
            } else {
                base = module.to_vec();
                while line[j..].starts_with("super::") {
                    base.pop();
                    j += "super::".len();
                }
            }
            let tail = &line[j..];
            if let Some(group) = tail.strip_prefix('{') {
                // `crate::{a, b::c}`: the first segment of each member.
                let end = group.find('}').unwrap_or(group.len());
                for member in group[..end].split(',') {
                    let seg: String = member
                        .trim()
                        .chars()
                        .take_while(|c| c.is_ascii_alphanumeric() || *c == '_')
                        .collect();
                    if !seg.is_empty() && seg != "self" {
                        let mut p = base.clone();
                        p.push(seg);
                        out.push(p);
                    }
                }
            } else {
                let mut p = base.clone();
                for seg in tail.split("::") {
                    let s: String = seg
                        .chars()
                        .take_while(|c| c.is_ascii_alphanumeric() || *c == '_')
                        .collect();
                    if s.is_empty() {
                        break;
                    }
                    let whole = s.len() == seg.len();
                    p.push(s);
                    if !whole {
                        break;
                    }
                }
                if p.len() > base.len() {
                    out.push(p);
                }
            }
            i = j;
        } else {
            i += 1;
        }
    }
    out
}

fn rank(top: &str) -> Option<usize> {
    STAGES.iter().position(|s| *s == top)
}

/// Why `from` (a file of top-level module `from_top`) may not import top-level module `to`.
fn layer_violation(from_top: &str, to: &str) -> Option<&'static str> {
    if from_top == to {
        return None;
    }
    if WIRING.contains(&from_top) {
        return None;
    }
    if WIRING.contains(&to) {
        return Some("imports the wiring");
    }
    if UTILITIES.contains(&from_top) {
        return (!UTILITIES.contains(&to)).then_some("a shared utility imports a stage");
    }
    match (rank(from_top), rank(to)) {
        (Some(a), Some(b)) if b > a => Some("imports a later stage"),
        _ => None,
    }
}

/// One import edge: file `line` of `from` refers to `to`.
struct Edge {
    from: usize,
    to: usize,
    line: usize,
}

#[test]
fn stages_import_only_earlier_stages_and_no_file_imports_in_a_circle() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let files = load(root);
    let by_module: BTreeMap<Vec<String>, usize> = files
        .iter()
        .enumerate()
        .map(|(i, f)| (f.module.clone(), i))
        .collect();
    let mut violations: Vec<String> = Vec::new();
    let mut layer_hits: BTreeSet<(String, String)> = BTreeSet::new();
    let mut edges: Vec<Edge> = Vec::new();
    for (fi, f) in files.iter().enumerate() {
        let from_top = f.module.first().map_or("lib", String::as_str);
        for (n, line) in f.lines.iter().enumerate() {
            for path in references(line, &f.module) {
                let Some(to_top) = path.first() else { continue };
                if let Some(why) = layer_violation(from_top, to_top) {
                    let key = (f.name.clone(), to_top.clone());
                    if ALLOWED_IMPORTS
                        .iter()
                        .any(|(a, b)| (*a, *b) == (key.0.as_str(), key.1.as_str()))
                    {
                        layer_hits.insert(key);
                    } else {
                        violations.push(format!("{}:{}: {why}: `{to_top}`", f.name, n + 1));
                    }
                }
                // The file that defines the longest prefix of the path.
                let target = (1..=path.len())
                    .rev()
                    .find_map(|k| by_module.get(&path[..k]).copied());
                if let Some(t) = target
                    && t != fi
                    && !files[t].module.starts_with(&f.module)
                {
                    edges.push(Edge {
                        from: fi,
                        to: t,
                        line: n + 1,
                    });
                }
            }
        }
    }
    for (a, b) in ALLOWED_IMPORTS {
        if !layer_hits.contains(&(a.to_string(), b.to_string())) {
            violations.push(format!(
                "{a}: no longer imports `{b}`: take it off ALLOWED_IMPORTS"
            ));
        }
    }
    // Circles: strongly connected components of the file graph (Tarjan, iterative enough
    // for a few hundred files).
    let mut adj: Vec<Vec<&Edge>> = (0..files.len()).map(|_| Vec::new()).collect();
    for e in &edges {
        adj[e.from].push(e);
    }
    let components = strongly_connected(files.len(), &adj);
    let mut circle_hits: BTreeSet<Vec<String>> = BTreeSet::new();
    for comp in components.into_iter().filter(|c| c.len() > 1) {
        let mut names: Vec<String> = comp.iter().map(|&i| files[i].name.clone()).collect();
        names.sort();
        if ALLOWED_CIRCLES
            .iter()
            .any(|c| c.iter().copied().eq(names.iter().map(String::as_str)))
        {
            circle_hits.insert(names);
            continue;
        }
        let inside: BTreeSet<usize> = comp.iter().copied().collect();
        let mut msg = format!("files import each other in a circle: {}", names.join(", "));
        for e in edges
            .iter()
            .filter(|e| inside.contains(&e.from) && inside.contains(&e.to))
        {
            msg.push_str(&format!(
                "\n    {}:{} -> {}",
                files[e.from].name, e.line, files[e.to].name
            ));
        }
        violations.push(msg);
    }
    for c in ALLOWED_CIRCLES {
        let names: Vec<String> = c.iter().map(|s| s.to_string()).collect();
        if !circle_hits.contains(&names) {
            violations.push(format!(
                "{}: no longer a circle: take it off ALLOWED_CIRCLES",
                names.join(", ")
            ));
        }
    }
    assert!(
        violations.is_empty(),
        "{} layer violation(s) (stage order in src/lib.rs):\n{}",
        violations.len(),
        violations.join("\n")
    );
}

fn strongly_connected(n: usize, adj: &[Vec<&Edge>]) -> Vec<Vec<usize>> {
    struct State {
        index: Vec<Option<usize>>,
        low: Vec<usize>,
        on_stack: Vec<bool>,
        stack: Vec<usize>,
        next: usize,
        out: Vec<Vec<usize>>,
    }
    fn visit(v: usize, adj: &[Vec<&Edge>], s: &mut State) {
        s.index[v] = Some(s.next);
        s.low[v] = s.next;
        s.next += 1;
        s.stack.push(v);
        s.on_stack[v] = true;
        for e in &adj[v] {
            let w = e.to;
            match s.index[w] {
                None => {
                    visit(w, adj, s);
                    s.low[v] = s.low[v].min(s.low[w]);
                }
                Some(iw) if s.on_stack[w] => s.low[v] = s.low[v].min(iw),
                Some(_) => {}
            }
        }
        if Some(s.low[v]) == s.index[v] {
            let mut comp = Vec::new();
            while let Some(w) = s.stack.pop() {
                s.on_stack[w] = false;
                comp.push(w);
                if w == v {
                    break;
                }
            }
            s.out.push(comp);
        }
    }
    let mut s = State {
        index: vec![None; n],
        low: vec![0; n],
        on_stack: vec![false; n],
        stack: Vec::new(),
        next: 0,
        out: Vec::new(),
    };
    for v in 0..n {
        if s.index[v].is_none() {
            visit(v, adj, &mut s);
        }
    }
    s.out
}

#[test]
fn the_checker_sees_imports_and_circles() {
    let m = |s: &[&str]| s.iter().map(|x| x.to_string()).collect::<Vec<_>>();
    let here = m(&["rpc", "digest"]);
    assert_eq!(
        references("use super::jsonrpc::JsonFingerprint;", &here),
        vec![m(&["rpc", "jsonrpc", "JsonFingerprint"])]
    );
    assert_eq!(
        references("use crate::{anomaly::Stats, http};", &here),
        vec![m(&["anomaly"]), m(&["http"])]
    );
    assert_eq!(
        references("let x = crate::mcp::Exchange::default();", &here),
        vec![m(&["mcp", "Exchange", "default"])]
    );
    assert_eq!(
        layer_violation("http", "mcp"),
        Some("imports a later stage")
    );
    assert_eq!(layer_violation("mcp", "http"), None);
    assert_eq!(
        layer_violation("hashing", "flow"),
        Some("a shared utility imports a stage")
    );
    assert_eq!(layer_violation("anomaly", "hashing"), None);
    assert_eq!(
        layer_violation("report", "pipeline"),
        Some("imports the wiring")
    );
    assert_eq!(layer_violation("pipeline", "report"), None);
    assert_eq!(code_of("/// see [`crate::report`]"), "");
}

/// Most lines in a source file (test files aside): past it a file is doing two jobs.
const MAX_SOURCE_LINES: usize = 1_000;

#[test]
fn no_source_file_is_over_the_line_limit() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut paths = Vec::new();
    rust_files(&root.join("src"), &mut paths);
    let mut long = Vec::new();
    for path in paths {
        let name = path
            .strip_prefix(root)
            .unwrap()
            .to_string_lossy()
            .replace('\\', "/");
        if is_test_file(&name) {
            continue;
        }
        let lines = std::fs::read_to_string(&path).unwrap().lines().count();
        if lines > MAX_SOURCE_LINES {
            long.push(format!("{name}: {lines} lines"));
        }
    }
    assert!(
        long.is_empty(),
        "over {MAX_SOURCE_LINES} lines (split by job):\n{}",
        long.join("\n")
    );
}

/// A merge left its conflict markers nowhere: the docs and every tracked text file the
/// repository ships (`git ls-files`; binary captures skipped).
#[test]
fn no_merge_conflict_markers_are_committed() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let Ok(listed) = std::process::Command::new("git")
        .args(["ls-files", "-z"])
        .current_dir(root)
        .output()
    else {
        eprintln!("skipped: git is not available");
        return;
    };
    let mut checked = 0;
    let mut found = Vec::new();
    for name in listed.stdout.split(|&b| b == 0).filter(|n| !n.is_empty()) {
        let rel = String::from_utf8_lossy(name).into_owned();
        let Ok(text) = std::fs::read_to_string(root.join(&rel)) else {
            continue; // binary (captures, Parquet) or gone
        };
        checked += 1;
        for (n, line) in text.lines().enumerate() {
            if line.starts_with("<<<<<<< ") || line.starts_with(">>>>>>> ") {
                found.push(format!("{rel}:{}", n + 1));
            }
        }
    }
    assert!(
        checked > 100 || listed.stdout.is_empty(),
        "only {checked} files read"
    );
    assert!(found.is_empty(), "conflict markers at {found:?}");
}
