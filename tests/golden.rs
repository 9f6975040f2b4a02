//! Golden tests: every output format of the real binary on bundled samples (issue 8).
//!
//! Each sample is run through `analyze` (JSON lines, CSV, sessions table, run summary,
//! terminal summary), `sessions`, `show` and `http`. Only stable content is snapshotted:
//! table rows are sorted by their key (output order may vary once rows are streamed),
//! `elapsed_s`/`throughput_mb_s` are dropped and the terminal's "read in X s (Y MB/s)" is
//! redacted. Times are capture times in UTC, so they stay. Inputs are given relative to
//! the crate root, so their names do not depend on where the repository lives.
//! Besides the snapshots, every CSV is read back and compared with its JSON lines value by
//! value (issue 8 "Round trip"), and the Parquet output (feature `parquet`) likewise.

use serde_json::Value;
use std::collections::BTreeMap;
use std::path::Path;
use std::process::{Command, Output, Stdio};

/// Exchanges table columns, in the order of report-schema.md section 2.
pub(crate) const EXCHANGE_COLUMNS: &[&str] = &[
    "exchange_id",
    "capture",
    "ts_request",
    "ts_response",
    "latency_ms",
    "client_addr",
    "server_addr",
    "tcp_stream",
    "http_version",
    "h2_stream",
    "tls_version",
    "tls_sni",
    "transport",
    "session_key",
    "session_id",
    "protocol_version",
    "client_name",
    "client_version",
    "user_agent",
    "kind",
    "http_method",
    "path",
    "http_status",
    "content_type",
    "jsonrpc_id",
    "rpc_method",
    "tool_name",
    "outcome",
    "layer",
    "error_code",
    "error_message",
    "result_type",
    "is_error",
    "sse_events",
    "final_response",
    "stream_end",
    "request_bytes",
    "response_bytes",
    "attempt",
    "retry_of",
    "retry_origin",
    "retry_evidence",
    "retry_findings",
    "continuation_of",
    "anomalies",
    "hop",
    "forwarded_from",
    "fault_hop",
    "hop_evidence",
];

/// Sessions table columns that report-schema.md section 5 requires (more may follow).
const SESSION_COLUMNS: &[&str] = &[
    "session_key",
    "session_id",
    "transport",
    "protocol_version",
    "client_name",
    "client_version",
    "user_agent",
    "client_addr",
    "server_addr",
    "first_ts",
    "last_ts",
    "requests",
    "retries_sdk",
    "retries_application",
    "retries_manual",
    "n_unsafe_retry",
    "n_retry_after_ignored",
    "n_unchanged_after_invalid_params",
    "n_replay_after_invalid_response",
    "n_no_backoff",
    "n_too_many_attempts",
    "ended_by",
];

/// Run summary keys that vary from run to run.
const UNSTABLE_SUMMARY_KEYS: &[&str] = &["elapsed_s", "throughput_mb_s"];

/// Runs the binary from the crate root (so `samples/x.pcap` is a stable name).
pub(crate) fn run(args: &[&str]) -> Output {
    run_with_stdin(args, None)
}

/// Like [`run`], with `stdin` fed to the process when given.
pub(crate) fn run_with_stdin(args: &[&str], stdin: Option<&[u8]>) -> Output {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_mcp-trace"));
    cmd.current_dir(env!("CARGO_MANIFEST_DIR"))
        .args(args)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    cmd.stdin(if stdin.is_some() {
        Stdio::piped()
    } else {
        Stdio::null()
    });
    let mut child = cmd.spawn().expect("run mcp-trace");
    if let Some(bytes) = stdin {
        use std::io::Write;
        let mut pipe = child.stdin.take().unwrap();
        let bytes = bytes.to_vec();
        // Write from a thread: a large input must not dead-lock against a full stdout pipe.
        let writer = std::thread::spawn(move || pipe.write_all(&bytes));
        let out = child.wait_with_output().unwrap();
        writer.join().unwrap().unwrap();
        return out;
    }
    child.wait_with_output().unwrap()
}

/// Runs the binary, asserts exit 0 and a silent stderr, returns stdout.
pub(crate) fn run_ok(args: &[&str]) -> String {
    let out = run(args);
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{args:?}: {err}");
    assert!(err.is_empty(), "{args:?} wrote to stderr: {err}");
    String::from_utf8(out.stdout).unwrap()
}

pub(crate) fn path_str(p: &Path) -> &str {
    p.to_str().unwrap()
}

/// The keys of a JSON object in the order they appear in the text.
fn ordered_keys(line: &str) -> Vec<String> {
    use serde::de::{Deserializer, IgnoredAny, MapAccess, Visitor};
    struct Keys;
    impl<'de> Visitor<'de> for Keys {
        type Value = Vec<String>;
        fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
            f.write_str("a JSON object")
        }
        fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Vec<String>, A::Error> {
            let mut keys = Vec::new();
            while let Some(k) = map.next_key::<String>()? {
                map.next_value::<IgnoredAny>()?;
                keys.push(k);
            }
            Ok(keys)
        }
    }
    let mut de = serde_json::Deserializer::from_str(line);
    de.deserialize_map(Keys).unwrap()
}

/// One JSON line of a table: its raw text and its parsed object.
#[derive(Debug, Clone)]
pub(crate) struct JsonRow {
    pub raw: String,
    pub value: Value,
}

impl JsonRow {
    pub fn get(&self, column: &str) -> &Value {
        self.value
            .get(column)
            .unwrap_or_else(|| panic!("no column {column} in {}", self.raw))
    }

    pub fn id(&self) -> u64 {
        self.get("exchange_id").as_u64().unwrap()
    }
}

/// Parses JSON lines; every line is an object with exactly `columns`, in that order.
pub(crate) fn parse_jsonl(text: &str, columns: Option<&[&str]>) -> Vec<JsonRow> {
    assert!(text.is_empty() || text.ends_with('\n'), "unterminated line");
    text.lines()
        .map(|line| {
            if let Some(columns) = columns {
                assert_eq!(ordered_keys(line), columns, "column order of {line}");
            }
            JsonRow {
                raw: line.to_owned(),
                value: serde_json::from_str(line).unwrap(),
            }
        })
        .collect()
}

/// Reads an exchanges JSON lines file, sorted by `exchange_id` (ids unique).
pub(crate) fn read_exchanges_jsonl(path: &Path) -> Vec<JsonRow> {
    let mut rows = parse_jsonl(
        &std::fs::read_to_string(path).unwrap(),
        Some(EXCHANGE_COLUMNS),
    );
    rows.sort_by_key(JsonRow::id);
    let mut ids: Vec<u64> = rows.iter().map(JsonRow::id).collect();
    ids.dedup();
    assert_eq!(ids.len(), rows.len(), "duplicate exchange_id");
    rows
}

/// One CSV record: its raw text (without the line break) and its fields
/// (`None` for an unquoted empty field, which is how the writer spells null).
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct CsvRecord {
    pub raw: String,
    pub fields: Vec<Option<String>>,
}

/// A strict RFC 4180 reader: CRLF record ends, `"` quoting with doubled quotes inside.
pub(crate) fn parse_csv(text: &str) -> Vec<CsvRecord> {
    let bytes = text.as_bytes();
    let mut records = Vec::new();
    let mut i = 0;
    while i < bytes.len() {
        let start = i;
        let mut fields = Vec::new();
        loop {
            let mut field = String::new();
            let quoted = bytes[i..].first() == Some(&b'"');
            if quoted {
                i += 1;
                loop {
                    let Some(pos) = text[i..].find('"') else {
                        panic!("unterminated quoted field at byte {start}");
                    };
                    field.push_str(&text[i..i + pos]);
                    i += pos + 1;
                    if bytes.get(i) == Some(&b'"') {
                        field.push('"');
                        i += 1;
                    } else {
                        break;
                    }
                }
            } else {
                let end = text[i..]
                    .find([',', '\r', '\n', '"'])
                    .map_or(bytes.len(), |p| i + p);
                assert_ne!(bytes.get(end), Some(&b'"'), "bare quote at byte {end}");
                field.push_str(&text[i..end]);
                i = end;
            }
            fields.push(if quoted || !field.is_empty() {
                Some(field)
            } else {
                None
            });
            match bytes.get(i) {
                Some(b',') => i += 1,
                Some(b'\r') if bytes.get(i + 1) == Some(&b'\n') => {
                    records.push(CsvRecord {
                        raw: text[start..i].to_owned(),
                        fields,
                    });
                    i += 2;
                    break;
                }
                other => panic!("record not ended by CRLF at byte {i}: {other:?}"),
            }
        }
    }
    records
}

/// How the CSV writer spells a JSON value: null is an empty unquoted field,
/// numbers and booleans share JSON's text.
fn json_as_csv(v: &Value) -> Option<String> {
    match v {
        Value::Null => None,
        Value::String(s) => Some(s.clone()),
        Value::Bool(b) => Some(b.to_string()),
        Value::Number(n) => Some(n.to_string()),
        other => panic!("nested value in a table: {other}"),
    }
}

/// How null and empty strings are written in a CSV.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) enum EmptyField {
    /// Null is an empty field, an empty string is `""` (the report tables, report/csv.rs).
    Distinct,
    /// Both are an empty field (the `http` log, whose CSV follows Zeek's looser habit).
    Same,
}

/// Asserts that a CSV table holds the same rows as the JSON lines, value by value,
/// matched by `key`. Returns the CSV records, header first, then sorted like `json`.
pub(crate) fn assert_csv_equals_jsonl(
    csv: &str,
    json: &[JsonRow],
    key: &str,
    what: &str,
    empty: EmptyField,
) -> Vec<String> {
    let records = parse_csv(csv);
    let (header, body) = records.split_first().expect("CSV header");
    let columns: Vec<&str> = header
        .fields
        .iter()
        .map(|f| f.as_deref().unwrap())
        .collect();
    let key_col = columns.iter().position(|c| *c == key).unwrap();
    assert_eq!(body.len(), json.len(), "{what}: row count");
    let mut by_key: BTreeMap<String, &CsvRecord> = BTreeMap::new();
    for r in body {
        assert_eq!(r.fields.len(), columns.len(), "{what}: {}", r.raw);
        let k = r.fields[key_col].clone().unwrap();
        assert!(by_key.insert(k, r).is_none(), "{what}: duplicate {key}");
    }
    let mut sorted = vec![header.raw.clone()];
    for row in json {
        let k = json_as_csv(row.get(key)).unwrap();
        let rec = by_key
            .get(&k)
            .unwrap_or_else(|| panic!("{what}: {key} {k} missing from CSV"));
        let obj = row.value.as_object().unwrap();
        assert_eq!(obj.len(), columns.len(), "{what}: column count");
        for (col, field) in columns.iter().zip(&rec.fields) {
            let mut want = json_as_csv(row.get(col));
            if empty == EmptyField::Same && want.as_deref() == Some("") {
                want = None;
            }
            assert_eq!(field, &want, "{what}: {key} {k}, column {col}");
        }
        sorted.push(rec.raw.clone());
    }
    sorted
}

/// The run summary without its unstable keys, keys sorted, pretty.
fn stable_summary(text: &str) -> String {
    let mut v: Value = serde_json::from_str(text).unwrap();
    let obj = v.as_object_mut().unwrap();
    for k in UNSTABLE_SUMMARY_KEYS {
        let removed = obj
            .remove(*k)
            .unwrap_or_else(|| panic!("summary lacks {k}"));
        assert!(removed.as_f64().unwrap() >= 0.0, "{k}: {removed}");
    }
    // The contract's identity: every packet is accounted for.
    let skipped: u64 = obj["packets_skipped"]
        .as_object()
        .unwrap()
        .values()
        .map(|n| n.as_u64().unwrap())
        .sum();
    assert_eq!(
        obj["packets_total"].as_u64().unwrap(),
        obj["packets_decoded"].as_u64().unwrap() + skipped,
        "{text}"
    );
    // serde_json's default map is ordered by key, so this is canonical.
    serde_json::to_string_pretty(&v).unwrap()
}

/// A timestamp is RFC 3339 in UTC with microseconds: `2026-11-29T20:17:45.396450Z`.
pub(crate) fn assert_utc_us(v: &Value) {
    let s = v.as_str().unwrap_or_else(|| panic!("not a timestamp: {v}"));
    let shape: String = s
        .chars()
        .map(|c| if c.is_ascii_digit() { '9' } else { c })
        .collect();
    assert_eq!(shape, "9999-99-99T99:99:99.999999Z", "{s}");
}

/// Replaces the timing of "N kB read in X s (Y MB/s)" in the terminal summary.
fn redact_timing(text: &str) -> String {
    let mut out = String::new();
    for line in text.split_inclusive('\n') {
        match (line.find(" read in "), line.find(" MB/s)")) {
            (Some(a), Some(b)) if a < b => {
                out.push_str(&line[..a]);
                out.push_str(" read in [elapsed]");
                out.push_str(&line[b + " MB/s)".len()..]);
            }
            _ => out.push_str(line),
        }
    }
    out
}

/// Sorts the data records of an `http` JSON lines output by (ts, tcp_stream, trans_depth).
fn sorted_http_rows(text: &str) -> Vec<JsonRow> {
    let mut rows = parse_jsonl(text, None);
    rows.sort_by_key(|r| {
        (
            r.get("ts").as_str().unwrap().to_owned(),
            r.get("tcp_stream").as_u64(),
            r.get("trans_depth").as_u64(),
        )
    });
    rows
}

/// Snapshot names: `fault-503-app-retry.pcap` -> `fault_503_app_retry_pcap`.
fn snap_prefix(sample: &str) -> String {
    sample.replace(['-', '.'], "_")
}

/// Every output of every command on one sample.
fn golden(sample: &str) {
    let input = format!("samples/{sample}");
    let name = snap_prefix(sample);
    let dir = tempfile::tempdir().unwrap();
    let p = |f: &str| dir.path().join(f);

    // analyze: exchanges (JSON lines), sessions (CSV), run summary.
    let stdout = run_ok(&[
        "analyze",
        &input,
        "-o",
        path_str(&p("x.jsonl")),
        "--sessions",
        path_str(&p("s.csv")),
        "--summary",
        path_str(&p("run.json")),
    ]);
    assert_eq!(stdout, "", "with -o nothing goes to stdout");
    let rows = read_exchanges_jsonl(&p("x.jsonl"));
    assert!(!rows.is_empty());
    for r in &rows {
        assert_eq!(r.get("capture"), sample, "capture is the file name");
        assert_utc_us(r.get("ts_request"));
        if !r.get("ts_response").is_null() {
            assert_utc_us(r.get("ts_response"));
        }
    }
    let raw: Vec<&str> = rows.iter().map(|r| r.raw.as_str()).collect();
    insta::assert_snapshot!(format!("{name}__exchanges_jsonl"), raw.join("\n"));

    // Exchanges as CSV: same rows, value by value.
    run_ok(&["analyze", &input, "-o", path_str(&p("x.csv"))]);
    let csv = std::fs::read_to_string(p("x.csv")).unwrap();
    let csv_sorted = assert_csv_equals_jsonl(
        &csv,
        &rows,
        "exchange_id",
        "exchanges CSV",
        EmptyField::Distinct,
    );
    assert_eq!(
        csv_sorted[0].split(',').collect::<Vec<_>>(),
        EXCHANGE_COLUMNS
    );
    insta::assert_snapshot!(format!("{name}__exchanges_csv"), csv_sorted.join("\n"));

    // Sessions table: CSV snapshot (sorted by session_key), JSON lines equal to it.
    run_ok(&[
        "analyze",
        &input,
        "-o",
        path_str(&p("y.jsonl")),
        "--sessions",
        path_str(&p("s.jsonl")),
    ]);
    let mut sessions = parse_jsonl(&std::fs::read_to_string(p("s.jsonl")).unwrap(), None);
    sessions.sort_by_key(|r| r.get("session_key").as_str().unwrap().to_owned());
    let s_csv = std::fs::read_to_string(p("s.csv")).unwrap();
    let s_sorted = assert_csv_equals_jsonl(
        &s_csv,
        &sessions,
        "session_key",
        "sessions CSV",
        EmptyField::Distinct,
    );
    let s_header: Vec<&str> = s_sorted[0].split(',').collect();
    for col in SESSION_COLUMNS {
        assert!(s_header.contains(col), "sessions table lacks {col}");
    }
    insta::assert_snapshot!(format!("{name}__sessions_csv"), s_sorted.join("\n"));
    // Every row's session is in the sessions table, with the right count.
    for s in &sessions {
        let key = s.get("session_key").as_str().unwrap();
        let n = rows.iter().filter(|r| r.get("session_key") == key).count();
        assert!(n > 0, "session {key} has no rows");
        assert_eq!(s.get("exchanges").as_u64(), Some(n as u64), "{key}");
    }
    let mut keys: Vec<&str> = rows
        .iter()
        .map(|r| r.get("session_key").as_str().unwrap())
        .collect();
    keys.sort_unstable();
    keys.dedup();
    let session_keys: Vec<&str> = sessions
        .iter()
        .map(|s| s.get("session_key").as_str().unwrap())
        .collect();
    assert_eq!(keys, session_keys, "one sessions row per session_key");

    // Run summary.
    let summary = std::fs::read_to_string(p("run.json")).unwrap();
    let summary_v: Value = serde_json::from_str(&summary).unwrap();
    assert_eq!(
        summary_v["mcp_exchanges_total"].as_u64(),
        Some(rows.len() as u64)
    );
    insta::assert_snapshot!(format!("{name}__summary_json"), stable_summary(&summary));

    // Terminal summary.
    let text = run_ok(&["analyze", &input, "--color", "never"]);
    assert!(!text.contains('\x1b'), "no color with --color never");
    assert!(text.contains(" read in "), "{text}");
    insta::assert_snapshot!(format!("{name}__terminal"), redact_timing(&text));

    // `sessions` and `show` for every session.
    let text = run_ok(&["sessions", &input, "--color", "never"]);
    for key in &session_keys {
        assert!(text.contains(key), "{key} missing from `sessions`");
    }
    insta::assert_snapshot!(format!("{name}__sessions_cmd"), text);
    for (i, key) in session_keys.iter().enumerate() {
        let text = run_ok(&["show", &input, "--session", key, "--color", "never"]);
        assert!(text.contains(key), "{text}");
        insta::assert_snapshot!(format!("{name}__show_{i}"), text);
    }

    // `http`: the table on stdout, JSON lines and CSV (equal value by value).
    let table = run_ok(&["http", &input]);
    insta::assert_snapshot!(format!("{name}__http_table"), table);
    run_ok(&["http", &input, "-o", path_str(&p("h.jsonl"))]);
    run_ok(&["http", &input, "-o", path_str(&p("h.csv"))]);
    let http = sorted_http_rows(&std::fs::read_to_string(p("h.jsonl")).unwrap());
    assert_eq!(
        summary_v["http_exchanges"].as_u64(),
        Some(http.len() as u64),
        "summary http_exchanges = rows of `http`"
    );
    assert_eq!(
        table.lines().count(),
        http.len() + 1,
        "table: header + one line per exchange"
    );
    // The CSV has no unique single column; compare with a composite key column added.
    let keyed: Vec<JsonRow> = http
        .iter()
        .map(|r| {
            let mut v = r.value.clone();
            v.as_object_mut().unwrap().insert(
                "__key".into(),
                Value::String(format!(
                    "{}/{}/{}",
                    r.get("ts").as_str().unwrap(),
                    r.get("tcp_stream"),
                    r.get("trans_depth")
                )),
            );
            JsonRow {
                raw: r.raw.clone(),
                value: v,
            }
        })
        .collect();
    let h_csv = add_http_key_column(&std::fs::read_to_string(p("h.csv")).unwrap());
    assert_csv_equals_jsonl(&h_csv, &keyed, "__key", "http CSV", EmptyField::Same);
    let raw: Vec<&str> = http.iter().map(|r| r.raw.as_str()).collect();
    insta::assert_snapshot!(format!("{name}__http_jsonl"), raw.join("\n"));
}

/// Appends a `__key` column (ts/tcp_stream/trans_depth) to the `http` CSV.
fn add_http_key_column(csv: &str) -> String {
    let records = parse_csv(csv);
    let (header, body) = records.split_first().unwrap();
    let col = |name: &str| {
        header
            .fields
            .iter()
            .position(|f| f.as_deref() == Some(name))
            .unwrap()
    };
    let (ts, stream, depth) = (col("ts"), col("tcp_stream"), col("trans_depth"));
    let mut out = format!("{},__key\r\n", header.raw);
    for r in body {
        let f = |i: usize| r.fields[i].clone().unwrap_or_else(|| "null".into());
        out.push_str(&format!(
            "{},{}/{}/{}\r\n",
            r.raw,
            f(ts),
            f(stream),
            f(depth)
        ));
    }
    out
}

#[test]
fn golden_fault_503_app_retry() {
    golden("fault-503-app-retry.pcap");
}

#[test]
fn golden_raw_shapes() {
    golden("raw-shapes.pcap");
}

#[test]
fn golden_sse_resume() {
    golden("sse-resume.pcap");
}

#[test]
fn golden_legacy_sse() {
    golden("legacy-sse.pcap");
}

#[test]
fn golden_har_mitmproxy_ts() {
    golden("har-mitmproxy-ts.har");
}

#[test]
fn csv_reader_is_strict() {
    let recs = parse_csv("a,b,c\r\n1,\"x,\"\"y\"\"\r\nz\",\r\n,\"\",2\r\n");
    let fields: Vec<_> = recs.iter().map(|r| r.fields.clone()).collect();
    let s = |x: &str| Some(x.to_owned());
    assert_eq!(
        fields,
        vec![
            vec![s("a"), s("b"), s("c")],
            vec![s("1"), s("x,\"y\"\r\nz"), None],
            vec![None, s(""), s("2")],
        ]
    );
    assert_eq!(recs[1].raw, "1,\"x,\"\"y\"\"\r\nz\",");
    assert!(std::panic::catch_unwind(|| parse_csv("a\n")).is_err());
    assert!(std::panic::catch_unwind(|| parse_csv("a\"b\r\n")).is_err());
}

#[test]
fn utc_shape() {
    assert_utc_us(&Value::from("2026-11-29T20:17:45.396450Z"));
    for bad in ["2026-11-29T21:17:45.396450+01:00", "2026-11-29T20:17:45Z"] {
        let v = Value::from(bad);
        assert!(
            std::panic::catch_unwind(|| assert_utc_us(&v)).is_err(),
            "{bad}"
        );
    }
}

#[test]
fn timing_redaction() {
    let t = "  6 MCP exchanges; 8.9 kB read in 0.00 s (6.6 MB/s)\nnext\n";
    assert_eq!(
        redact_timing(t),
        "  6 MCP exchanges; 8.9 kB read in [elapsed]\nnext\n"
    );
}

/// Parquet read back with polars: schema snapshot, and the same rows as the JSON lines.
#[cfg(feature = "parquet")]
mod parquet {
    use super::*;
    use polars::prelude::*;

    fn read(path: &Path) -> DataFrame {
        ParquetReader::new(std::fs::File::open(path).unwrap())
            .finish()
            .unwrap()
    }

    fn schema(df: &DataFrame) -> String {
        df.columns()
            .iter()
            .map(|c| format!("{}: {:?}", c.name(), c.dtype()))
            .collect::<Vec<_>>()
            .join("\n")
    }

    /// Asserts one Parquet cell equals one JSON value (timestamps: RFC 3339 text vs µs).
    fn same(got: &AnyValue<'_>, want: &Value) -> bool {
        match (got, want) {
            (AnyValue::Null, Value::Null) => true,
            (AnyValue::UInt64(g), Value::Number(n)) => n.as_u64() == Some(*g),
            (AnyValue::UInt32(g), Value::Number(n)) => n.as_u64() == Some(u64::from(*g)),
            (AnyValue::UInt16(g), Value::Number(n)) => n.as_u64() == Some(u64::from(*g)),
            (AnyValue::UInt8(g), Value::Number(n)) => n.as_u64() == Some(u64::from(*g)),
            (AnyValue::Int64(g), Value::Number(n)) => n.as_i64() == Some(*g),
            (AnyValue::Float64(g), Value::Number(n)) => n.as_f64() == Some(*g),
            (AnyValue::Boolean(g), Value::Bool(b)) => g == b,
            (AnyValue::String(g), Value::String(s)) => g == s,
            (AnyValue::StringOwned(g), Value::String(s)) => g.as_str() == s,
            (AnyValue::Datetime(us, TimeUnit::Microseconds, _), Value::String(s))
            | (AnyValue::DatetimeOwned(us, TimeUnit::Microseconds, _), Value::String(s)) => {
                mcp_trace::timestamp::parse_rfc3339_us(s).ok() == Some(*us)
            }
            _ => false,
        }
    }

    /// Every Parquet row equals the JSON row with the same `key`, column by column.
    fn assert_same_rows(df: &DataFrame, json: &[JsonRow], key: &str, what: &str) {
        assert_eq!(df.height(), json.len(), "{what}: rows");
        let by_key: BTreeMap<String, &JsonRow> =
            json.iter().map(|r| (r.get(key).to_string(), r)).collect();
        let names: Vec<String> = df
            .get_column_names()
            .iter()
            .map(|s| s.to_string())
            .collect();
        assert_eq!(
            names.len(),
            json[0].value.as_object().unwrap().len(),
            "{what}: same columns"
        );
        let key_col = df.column(key).unwrap();
        for i in 0..df.height() {
            let k = match key_col.get(i).unwrap() {
                AnyValue::UInt64(v) => v.to_string(),
                AnyValue::String(s) => Value::String(s.into()).to_string(),
                AnyValue::StringOwned(s) => Value::String(s.to_string()).to_string(),
                other => panic!("{what}: key {other:?}"),
            };
            let row = by_key
                .get(&k)
                .unwrap_or_else(|| panic!("{what}: {k} not in JSON lines"));
            for name in &names {
                let got = df.column(name).unwrap().get(i).unwrap();
                let want = row.get(name);
                assert!(
                    same(&got, want),
                    "{what}: {key} {k}, column {name}: parquet {got:?} vs json {want}"
                );
            }
        }
    }

    fn round_trip(sample: &str) -> (String, String) {
        let input = format!("samples/{sample}");
        let dir = tempfile::tempdir().unwrap();
        let p = |f: &str| dir.path().join(f);
        for (x, s) in [("x.parquet", "s.parquet"), ("x.jsonl", "s.jsonl")] {
            run_ok(&[
                "analyze",
                &input,
                "-o",
                path_str(&p(x)),
                "--sessions",
                path_str(&p(s)),
            ]);
        }
        let rows = read_exchanges_jsonl(&p("x.jsonl"));
        let df = read(&p("x.parquet"));
        let names: Vec<&str> = df.get_column_names().iter().map(|s| s.as_str()).collect();
        assert_eq!(names, EXCHANGE_COLUMNS);
        assert_same_rows(&df, &rows, "exchange_id", "exchanges");
        let sessions = parse_jsonl(&std::fs::read_to_string(p("s.jsonl")).unwrap(), None);
        let sdf = read(&p("s.parquet"));
        assert_same_rows(&sdf, &sessions, "session_key", "sessions");
        (schema(&df), schema(&sdf))
    }

    /// Filters select the Parquet rows exactly as they select JSON lines.
    #[test]
    fn parquet_filtered_rows() {
        let dir = tempfile::tempdir().unwrap();
        let p = |f: &str| dir.path().join(f);
        let sample = "samples/fault-503-app-retry.pcap";
        for f in ["x.parquet", "x.jsonl"] {
            run_ok(&[
                "analyze",
                sample,
                "-o",
                path_str(&p(f)),
                "--outcome",
                "TOOL_SUCCESS",
            ]);
        }
        let rows = read_exchanges_jsonl(&p("x.jsonl"));
        let df = read(&p("x.parquet"));
        assert_same_rows(&df, &rows, "exchange_id", "filtered");
        let col = |c: &str| df.column(c).unwrap().get(0).unwrap().into_static();
        assert_eq!(col("exchange_id"), AnyValue::UInt64(5));
        assert_eq!(col("retry_of"), AnyValue::UInt64(4));
        // An empty selection is still a typed table.
        run_ok(&[
            "analyze",
            sample,
            "-o",
            path_str(&p("e.parquet")),
            "--tool",
            "nope",
        ]);
        let empty = read(&p("e.parquet"));
        assert_eq!(empty.height(), 0);
        assert_eq!(schema(&empty), schema(&df));
    }

    #[test]
    fn parquet_round_trip_on_samples() {
        let mut schemas = Vec::new();
        for sample in [
            "fault-503-app-retry.pcap",
            "raw-shapes.pcap",
            "sse-resume.pcap",
            "legacy-sse.pcap",
            "har-mitmproxy-ts.har",
        ] {
            schemas.push((sample, round_trip(sample)));
        }
        // The schema does not depend on the data (all-null columns keep their type).
        let (_, first) = &schemas[0];
        for (sample, s) in &schemas {
            assert_eq!(s, first, "schema of {sample}");
        }
        insta::assert_snapshot!("parquet_exchanges_schema", first.0);
        insta::assert_snapshot!("parquet_sessions_schema", first.1);
    }
}
