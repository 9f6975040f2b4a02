//! Report stage: [`crate::mcp::Exchange`]s -> exchanges table, sessions table,
//! run summary, terminal summary (report-schema.md sections 2 and 5) and the HTML report;
//! and `mcp-trace http`'s rows ([`crate::http::HttpRow`]) as a table, CSV or JSON lines.
//!
//! [`row`] is the schema: every writer walks its column lists, so JSON lines, CSV and
//! Parquet agree on names, order, types and nulls. Files are written to `<path>.partial`
//! and renamed only when complete (`output`). Parquet needs the `parquet` feature
//! (polars); JSON lines and CSV are written by this crate in every build.

mod background;
mod connections;
mod csv;
mod filter;
mod hops;
mod html;
mod http_log;
mod jsonl;
pub mod otlp;
mod output;
#[cfg(feature = "parquet")]
mod parquet;
pub mod row;
mod sessions;
mod stats;
mod summary;
mod terminal;
#[cfg(test)]
mod test_rows;

pub use crate::timestamp::{TimestampError, format_rfc3339_us, parse_rfc3339_us};
pub use background::{BackgroundWriter, ROW_BATCH};
pub use connections::{
    CONNECTION_COLUMNS, ConnectionRow, MAX_LISTED_UNDECRYPTED, NO_UNDECRYPTED, Undecrypted,
};
pub use filter::{RowFilter, filter_rows};
pub use hops::{GatewayCounts, HopTally};
pub use html::{DEFAULT_HTML_MAX_ROWS, HtmlReport};
pub use http_log::{HttpFormat, write_http_rows};
pub use jsonl::write_cells as write_jsonl_row;
pub use output::PartialFile;
pub use row::{Cell, ColType, ColumnSpec, Table};
pub use sessions::{SessionAggregator, SessionRow, sessions, sessions_with_idle_gap};
pub use stats::RunStats;
pub use summary::{RunInfo, run_summary};
/// The terminal screen of `mcp-trace live`.
#[cfg(feature = "live")]
pub use terminal::live;
pub use terminal::{
    SummaryRow, session_timeline, sessions_table_text, terminal_summary, terminal_summary_of,
};

use crate::mcp::Exchange;
use std::io::Write;
use std::marker::PhantomData;
use std::path::Path;

/// Errors of the report stage. Each message is one line naming the path.
#[derive(Debug, thiserror::Error)]
pub enum ReportError {
    #[error("unknown output format {flag:?} (expected auto, csv, parquet or jsonl)")]
    UnknownFormatFlag { flag: String },
    #[error(
        "cannot tell the output format of {path} from its extension (use .csv, .parquet, .jsonl or .ndjson, or --format)"
    )]
    UnknownExtension { path: String },
    #[error("{path}: not a file path")]
    NotAFile { path: String },
    // The OS error is part of the message, not a `source`: the CLI prints the whole
    // chain, and the reason would appear twice.
    #[error("cannot create {path}: {error}")]
    Create { path: String, error: std::io::Error },
    // The OS error is part of the message, not a `source`: the CLI prints the whole
    // chain, and the reason would appear twice.
    #[error("cannot write {path}: {error}")]
    Write { path: String, error: std::io::Error },
    #[error("cannot write {path}: output already closed")]
    Closed { path: String },
    #[error("cannot write {path} as Parquet: {message}")]
    Parquet { path: String, message: String },
    #[error(
        "cannot write {path}: Parquet output needs the `parquet` feature, which this build lacks (use CSV or JSON lines)"
    )]
    ParquetUnavailable { path: String },
    #[error("output writer: {message}")]
    Thread { message: String },
    #[error("cannot write {path}: row {row} does not match column {column} of the schema")]
    Schema {
        path: String,
        row: u64,
        column: &'static str,
    },
}

/// Output file format.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Format {
    Csv,
    Parquet,
    Jsonl,
}

impl Format {
    /// The format named by `--format` (`auto`, `csv`, `parquet`, `jsonl`, case-insensitive),
    /// or, for `auto` or no flag, by the extension of `path` (`.csv`, `.parquet`, `.jsonl`,
    /// `.ndjson`; report-schema.md section 1).
    pub fn from_flag_or_path(flag: Option<&str>, path: &Path) -> Result<Format, ReportError> {
        let by_name = |name: &str| match name.to_ascii_lowercase().as_str() {
            "csv" => Some(Format::Csv),
            "parquet" => Some(Format::Parquet),
            "jsonl" | "ndjson" => Some(Format::Jsonl),
            _ => None,
        };
        match flag {
            Some(f) if !f.eq_ignore_ascii_case("auto") => {
                by_name(f).ok_or_else(|| ReportError::UnknownFormatFlag {
                    flag: f.to_string(),
                })
            }
            _ => path
                .extension()
                .and_then(|e| e.to_str())
                .and_then(by_name)
                .ok_or_else(|| ReportError::UnknownExtension {
                    path: path.display().to_string(),
                }),
        }
    }
}

/// Where rows go while a table is being written.
enum Sink {
    /// JSON lines or CSV, streamed row by row.
    /// `buf` holds one encoded row so the file sees one write per row.
    Text {
        out: PartialFile,
        csv: bool,
        buf: Vec<u8>,
    },
    #[cfg(feature = "parquet")]
    Parquet(Box<parquet::ParquetSink>),
}

/// Writes one table to a file, row by row, in bounded memory (Parquet in row groups of
/// [`PARQUET_ROW_GROUP_ROWS`]). Nothing appears at the path until [`TableWriter::finish`]
/// succeeds; dropping the writer unfinished removes the partial file.
pub struct TableWriter<T: Table> {
    sink: Sink,
    rows: u64,
    _table: PhantomData<fn(&T)>,
}

/// Rows per Parquet row group: bounds the memory held before a group is written.
pub const PARQUET_ROW_GROUP_ROWS: usize = 16_384;

impl<T: Table> TableWriter<T> {
    /// Creates `<path>.partial` and writes the header (CSV).
    pub fn create(path: &Path, format: Format) -> Result<Self, ReportError> {
        let sink = match format {
            Format::Jsonl | Format::Csv => {
                let mut out = PartialFile::create(path)?;
                let csv = format == Format::Csv;
                if csv {
                    let result = csv::write_header::<T>(&mut out);
                    result.map_err(|e| out.io_error(e))?;
                }
                Sink::Text {
                    out,
                    csv,
                    buf: Vec::new(),
                }
            }
            #[cfg(feature = "parquet")]
            Format::Parquet => Sink::Parquet(Box::new(parquet::ParquetSink::create::<T>(path)?)),
            #[cfg(not(feature = "parquet"))]
            Format::Parquet => {
                return Err(ReportError::ParquetUnavailable {
                    path: path.display().to_string(),
                });
            }
        };
        Ok(TableWriter {
            sink,
            rows: 0,
            _table: PhantomData,
        })
    }

    /// Appends one row. A row that breaks the schema (wrong type, null in a non-null
    /// column) is refused the same way in every format.
    pub fn push(&mut self, row: &T) -> Result<(), ReportError> {
        let cells = row.cells();
        let bad = if cells.len() == T::COLUMNS.len() {
            T::COLUMNS
                .iter()
                .zip(&cells)
                .find(|(spec, cell)| {
                    !cell.fits(spec.ty) || (!spec.nullable && **cell == Cell::Null)
                })
                .map(|(spec, _)| spec.name)
        } else {
            Some("(column count)")
        };
        if let Some(column) = bad {
            return Err(ReportError::Schema {
                path: self.path(),
                row: self.rows.saturating_add(1),
                column,
            });
        }
        match &mut self.sink {
            Sink::Text { out, csv, buf } => {
                buf.clear();
                let result = if *csv {
                    csv::write_cells(buf, &cells)
                } else {
                    jsonl::write_cells::<T>(buf, &cells)
                };
                result
                    .and_then(|()| out.write_all(buf))
                    .map_err(|e| out.io_error(e))?;
            }
            #[cfg(feature = "parquet")]
            // The cells checked above, not built a second time.
            Sink::Parquet(sink) => sink.push(cells, self.rows.saturating_add(1))?,
        }
        self.rows = self.rows.saturating_add(1);
        Ok(())
    }

    fn path(&self) -> String {
        match &self.sink {
            Sink::Text { out, .. } => out.path().display().to_string(),
            #[cfg(feature = "parquet")]
            Sink::Parquet(sink) => sink.path(),
        }
    }

    /// Writes what is buffered, closes the file and moves it to its path. Returns the row count.
    pub fn finish(self) -> Result<u64, ReportError> {
        match self.sink {
            Sink::Text { mut out, .. } => {
                out.flush().map_err(|e| out.io_error(e))?;
                out.commit()?;
            }
            #[cfg(feature = "parquet")]
            Sink::Parquet(sink) => sink.finish()?,
        }
        Ok(self.rows)
    }
}

/// Writes the exchanges table (report-schema.md section 2) to `path`.
pub fn write_exchanges<'a>(
    rows: impl IntoIterator<Item = &'a Exchange>,
    path: &Path,
    format: Format,
) -> Result<u64, ReportError> {
    let mut w = TableWriter::<Exchange>::create(path, format)?;
    for row in rows {
        w.push(row)?;
    }
    w.finish()
}

/// Aggregates `rows` into sessions and writes the sessions table (section 5) to `path`.
pub fn write_sessions<'a>(
    rows: impl IntoIterator<Item = &'a Exchange>,
    path: &Path,
    format: Format,
) -> Result<u64, ReportError> {
    let mut agg = SessionAggregator::default();
    for row in rows {
        agg.push(row);
    }
    let mut w = TableWriter::<SessionRow>::create(path, format)?;
    for s in agg.finish() {
        w.push(&s)?;
    }
    w.finish()
}

#[cfg(test)]
mod tests {
    use super::test_rows::rows;
    use super::*;
    use std::path::PathBuf;

    fn write_all(format: Format, name: &str) -> (tempfile::TempDir, PathBuf) {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join(name);
        let n = write_exchanges(&rows(), &path, format).unwrap();
        assert_eq!(n, 3);
        (dir, path)
    }

    /// JSON lines parsed back, as text per column (null -> None), for comparisons.
    fn jsonl_as_text(path: &Path) -> Vec<Vec<Option<String>>> {
        let text = std::fs::read_to_string(path).unwrap();
        text.lines()
            .map(|line| {
                let v: serde_json::Value = serde_json::from_str(line).unwrap();
                row::EXCHANGE_COLUMNS
                    .iter()
                    .map(|c| match &v[c.name] {
                        serde_json::Value::Null => None,
                        serde_json::Value::String(s) => Some(s.clone()),
                        other => Some(other.to_string()),
                    })
                    .collect()
            })
            .collect()
    }

    #[test]
    fn format_from_flag_or_extension() {
        let p = Path::new("out.PARQUET");
        assert_eq!(Format::from_flag_or_path(None, p).unwrap(), Format::Parquet);
        assert_eq!(
            Format::from_flag_or_path(Some("auto"), Path::new("a.ndjson")).unwrap(),
            Format::Jsonl
        );
        assert_eq!(
            Format::from_flag_or_path(None, Path::new("a.jsonl")).unwrap(),
            Format::Jsonl
        );
        assert_eq!(
            Format::from_flag_or_path(Some("CSV"), Path::new("a.txt")).unwrap(),
            Format::Csv
        );
        let e = Format::from_flag_or_path(None, Path::new("dir/a.txt")).unwrap_err();
        assert!(e.to_string().contains("dir/a.txt"), "{e}");
        let e = Format::from_flag_or_path(Some("xml"), Path::new("a.csv")).unwrap_err();
        assert!(e.to_string().contains("xml"), "{e}");
    }

    #[test]
    fn csv_reads_back_equal_to_jsonl() {
        let (_d1, jsonl) = write_all(Format::Jsonl, "x.jsonl");
        let (_d2, csv_path) = write_all(Format::Csv, "x.csv");
        let records = csv::parse(&std::fs::read_to_string(&csv_path).unwrap());
        let expected = jsonl_as_text(&jsonl);
        assert_eq!(records.get(1..).unwrap(), expected.as_slice());
    }

    #[test]
    fn unwritable_path_is_one_line_and_leaves_nothing() {
        let dir = tempfile::tempdir().unwrap();
        for format in [Format::Csv, Format::Jsonl, Format::Parquet] {
            let path = dir.path().join("no-such-dir").join("out.x");
            let err = write_exchanges(&rows(), &path, format).unwrap_err();
            let msg = err.to_string();
            assert!(msg.contains("no-such-dir/out.x"), "{msg}");
            assert!(!msg.contains('\n'), "{msg}");
        }
        // A directory where the file should go: creating the partial file works, the
        // rename fails, and the partial file is removed.
        let target = dir.path().join("taken");
        std::fs::create_dir(&target).unwrap();
        std::fs::write(target.join("keep"), b"x").unwrap();
        let err = write_exchanges(&rows(), &target, Format::Jsonl).unwrap_err();
        assert!(err.to_string().contains("taken"), "{err}");
        let left: Vec<_> = std::fs::read_dir(dir.path())
            .unwrap()
            .map(|e| e.unwrap().file_name())
            .collect();
        assert_eq!(left.len(), 1, "{left:?}");
    }

    #[test]
    fn sessions_file_has_one_row_per_session() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("s.csv");
        let mut rs = rows();
        rs[2].session_key = "s2".into();
        assert_eq!(write_sessions(&rs, &path, Format::Csv).unwrap(), 2);
        let records = csv::parse(&std::fs::read_to_string(&path).unwrap());
        assert_eq!(records.len(), 3);
        assert_eq!(records[0].len(), sessions::SESSION_COLUMNS.len());
        assert_eq!(records[0][0].as_deref(), Some("session_key"));
        assert_eq!(records[1][0].as_deref(), Some("s1"));
        assert_eq!(
            records[1][9].as_deref(),
            Some("1969-12-31T23:59:59.999999Z")
        );
    }

    #[test]
    fn filtered_rows_can_be_written() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("f.jsonl");
        let all = rows();
        let f = RowFilter {
            only_failures: true,
            ..RowFilter::default()
        };
        assert_eq!(
            write_exchanges(filter_rows(&all, &f), &path, Format::Jsonl).unwrap(),
            1
        );
        let text = std::fs::read_to_string(&path).unwrap();
        assert!(text.contains("\"outcome\":\"JSONRPC_ERROR\""));
    }

    /// A table whose second row breaks its own schema.
    struct Bad(bool);

    impl Table for Bad {
        const COLUMNS: &'static [ColumnSpec] = &[
            ColumnSpec {
                name: "a",
                ty: ColType::U64,
                nullable: false,
            },
            ColumnSpec {
                name: "b",
                ty: ColType::Str,
                nullable: true,
            },
        ];
        fn cells(&self) -> Vec<Cell<'_>> {
            if self.0 {
                vec![Cell::U64(1), Cell::Str("ok")]
            } else {
                vec![Cell::Null, Cell::Str("bad")]
            }
        }
    }

    #[test]
    fn failed_write_leaves_no_file() {
        let dir = tempfile::tempdir().unwrap();
        let formats: &[Format] = &[
            Format::Csv,
            Format::Jsonl,
            #[cfg(feature = "parquet")]
            Format::Parquet,
        ];
        for &format in formats {
            let path = dir.path().join("bad.out");
            let mut w = TableWriter::<Bad>::create(&path, format).unwrap();
            w.push(&Bad(true)).unwrap();
            let err = w.push(&Bad(false)).unwrap_err();
            assert_eq!(
                err.to_string(),
                format!(
                    "cannot write {}: row 2 does not match column a of the schema",
                    path.display()
                )
            );
            drop(w);
            assert!(
                std::fs::read_dir(dir.path()).unwrap().next().is_none(),
                "{format:?}"
            );
        }
    }

    #[test]
    fn writers_are_send() {
        fn is_send<T: Send>() {}
        is_send::<TableWriter<Exchange>>();
        is_send::<TableWriter<SessionRow>>();
    }

    #[test]
    fn empty_tables() {
        let dir = tempfile::tempdir().unwrap();
        let csv_path = dir.path().join("e.csv");
        assert_eq!(write_exchanges(&[], &csv_path, Format::Csv).unwrap(), 0);
        let text = std::fs::read_to_string(&csv_path).unwrap();
        assert_eq!(csv::parse(&text).len(), 1);
        let jsonl_path = dir.path().join("e.jsonl");
        assert_eq!(write_exchanges(&[], &jsonl_path, Format::Jsonl).unwrap(), 0);
        assert_eq!(std::fs::read(&jsonl_path).unwrap(), b"");
    }

    #[test]
    fn snapshots() {
        let dir = tempfile::tempdir().unwrap();
        let csv_path = dir.path().join("x.csv");
        let jsonl_path = dir.path().join("x.jsonl");
        write_exchanges(&rows(), &csv_path, Format::Csv).unwrap();
        write_exchanges(&rows(), &jsonl_path, Format::Jsonl).unwrap();
        insta::assert_snapshot!("exchanges_csv", std::fs::read_to_string(&csv_path).unwrap());
        insta::assert_snapshot!(
            "exchanges_jsonl",
            std::fs::read_to_string(&jsonl_path).unwrap()
        );
        let sessions_path = dir.path().join("s.csv");
        write_sessions(&rows(), &sessions_path, Format::Csv).unwrap();
        insta::assert_snapshot!(
            "sessions_csv",
            std::fs::read_to_string(&sessions_path).unwrap()
        );
    }

    #[cfg(not(feature = "parquet"))]
    #[test]
    fn parquet_without_feature_is_a_clear_error() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("x.parquet");
        let err = write_exchanges(&rows(), &path, Format::Parquet).unwrap_err();
        assert!(err.to_string().contains("`parquet` feature"), "{err}");
        assert!(std::fs::read_dir(dir.path()).unwrap().next().is_none());
    }

    #[cfg(feature = "parquet")]
    mod with_polars {
        use super::*;
        use polars::prelude::*;

        fn read_parquet(path: &Path) -> DataFrame {
            let file = std::fs::File::open(path).unwrap();
            ParquetReader::new(file).finish().unwrap()
        }

        #[test]
        fn parquet_round_trip_same_rows_and_dtypes() {
            let (_d, path) = write_all(Format::Parquet, "x.parquet");
            let df = read_parquet(&path);
            assert_eq!(df.height(), 3);
            let names: Vec<&str> = df.get_column_names().iter().map(|s| s.as_str()).collect();
            let expected: Vec<&str> = row::EXCHANGE_COLUMNS.iter().map(|c| c.name).collect();
            assert_eq!(names, expected);
            for spec in row::EXCHANGE_COLUMNS {
                let col = df.column(spec.name).unwrap();
                assert_eq!(col.dtype(), &parquet::dtype(spec.ty), "{}", spec.name);
                if !spec.nullable {
                    assert_eq!(col.null_count(), 0, "{}", spec.name);
                }
            }
            // Values, cell by cell, against the rows' own cells.
            let rs = rows();
            for (i, r) in rs.iter().enumerate() {
                for (spec, cell) in row::EXCHANGE_COLUMNS.iter().zip(r.cells()) {
                    let got = df.column(spec.name).unwrap().get(i).unwrap();
                    let same = match (cell, &got) {
                        (Cell::Null, AnyValue::Null) => true,
                        (Cell::U64(v), AnyValue::UInt64(g)) => v == *g,
                        (Cell::U32(v), AnyValue::UInt32(g)) => v == *g,
                        (Cell::U16(v), AnyValue::UInt16(g)) => v == *g,
                        (Cell::U8(v), AnyValue::UInt8(g)) => v == *g,
                        (Cell::I64(v), AnyValue::Int64(g)) => v == *g,
                        (Cell::F64(v), AnyValue::Float64(g)) => v == *g,
                        (Cell::Bool(v), AnyValue::Boolean(g)) => v == *g,
                        (Cell::Str(v), AnyValue::String(g)) => v == *g,
                        (Cell::Str(v), AnyValue::StringOwned(g)) => v == g.as_str(),
                        (Cell::Timestamp(v), AnyValue::Datetime(g, TimeUnit::Microseconds, _))
                        | (
                            Cell::Timestamp(v),
                            AnyValue::DatetimeOwned(g, TimeUnit::Microseconds, _),
                        ) => v == *g,
                        _ => false,
                    };
                    assert!(
                        same,
                        "row {i} column {}: wrote {cell:?}, read {got:?}",
                        spec.name
                    );
                }
            }
        }

        /// `n` rows cycling through the sample rows, numbered 1.., each then given `edit`.
        fn many_rows(n: usize, edit: impl Fn(usize, &mut Exchange)) -> Vec<Exchange> {
            let base = rows();
            (0..n)
                .map(|i| {
                    let mut e = base[i % 3].clone();
                    e.exchange_id = i as u64 + 1;
                    edit(i, &mut e);
                    e
                })
                .collect()
        }

        #[test]
        fn parquet_is_zstd_and_in_row_groups() {
            let dir = tempfile::tempdir().unwrap();
            let path = dir.path().join("big.parquet");
            let n = PARQUET_ROW_GROUP_ROWS * 2 + 5;
            let many = many_rows(n, |_, _| {});
            assert_eq!(
                write_exchanges(&many, &path, Format::Parquet).unwrap(),
                n as u64
            );
            let mut reader = ParquetReader::new(std::fs::File::open(&path).unwrap());
            let meta = reader.get_metadata().unwrap().clone();
            assert_eq!(meta.row_groups.len(), 3);
            let codec = meta.row_groups[0].parquet_columns()[0].compression();
            assert_eq!(format!("{codec:?}"), "Zstd");
            let df = read_parquet(&path);
            assert_eq!(df.height(), n);
            let ids = df.column("exchange_id").unwrap().u64().unwrap().clone();
            assert_eq!(ids.get(n - 1), Some(n as u64));
        }

        /// String columns are dictionary-encoded per row group: values that change between
        /// groups, nulls among them, and a column null in a whole group read back as written.
        #[test]
        fn parquet_string_dictionaries_start_afresh_in_each_row_group() {
            let dir = tempfile::tempdir().unwrap();
            let path = dir.path().join("dict.parquet");
            let n = PARQUET_ROW_GROUP_ROWS * 2 + 300;
            let session = |i: usize| (!i.is_multiple_of(7)).then(|| format!("s{}", i / 1000));
            let tool = |i: usize| (i >= PARQUET_ROW_GROUP_ROWS).then(|| format!("t{}", i % 3));
            let many = many_rows(n, |i, e| {
                e.session_id = session(i).map(Into::into);
                e.tool_name = tool(i).map(Into::into);
            });
            write_exchanges(&many, &path, Format::Parquet).unwrap();
            let mut reader = ParquetReader::new(std::fs::File::open(&path).unwrap());
            let meta = reader.get_metadata().unwrap().clone();
            assert_eq!(meta.row_groups.len(), 3);
            let df = read_parquet(&path);
            assert_eq!(df.column("session_id").unwrap().dtype(), &DataType::String);
            let sessions = df.column("session_id").unwrap().str().unwrap().clone();
            let tools = df.column("tool_name").unwrap().str().unwrap().clone();
            for i in 0..n {
                assert_eq!(sessions.get(i), session(i).as_deref(), "session_id row {i}");
                assert_eq!(tools.get(i), tool(i).as_deref(), "tool_name row {i}");
            }
        }

        #[test]
        fn polars_reads_csv_like_jsonl() {
            let (_d1, jsonl) = write_all(Format::Jsonl, "x.jsonl");
            let (_d2, csv_path) = write_all(Format::Csv, "x.csv");
            // Every column as text: compare what polars reads with the JSON lines.
            let df = CsvReadOptions::default()
                .with_has_header(true)
                .with_infer_schema_length(Some(0))
                .try_into_reader_with_file_path(Some(csv_path))
                .unwrap()
                .finish()
                .unwrap();
            let expected = jsonl_as_text(&jsonl);
            assert_eq!(df.height(), expected.len());
            for (i, exp_row) in expected.iter().enumerate() {
                for (spec, exp) in row::EXCHANGE_COLUMNS.iter().zip(exp_row) {
                    let got = df
                        .column(spec.name)
                        .unwrap()
                        .str()
                        .unwrap()
                        .get(i)
                        .map(str::to_string);
                    // CSV cannot tell an empty string from null to polars' reader; the
                    // file itself keeps them apart (`""` vs nothing), see csv.rs.
                    let exp = exp.clone().filter(|s| !s.is_empty());
                    let got = got.filter(|s| !s.is_empty());
                    assert_eq!(got, exp, "row {i} column {}", spec.name);
                }
            }
        }

        #[test]
        fn empty_parquet_has_the_schema() {
            let dir = tempfile::tempdir().unwrap();
            let path = dir.path().join("e.parquet");
            assert_eq!(write_exchanges(&[], &path, Format::Parquet).unwrap(), 0);
            let df = read_parquet(&path);
            assert_eq!(df.height(), 0);
            assert_eq!(df.width(), row::EXCHANGE_COLUMNS.len());
            assert_eq!(df.column("http_status").unwrap().dtype(), &DataType::UInt16);
        }

        /// Snapshot of the Parquet schema and its CSV rendering (style guide: not the bytes).
        #[test]
        fn parquet_snapshot() {
            let (_d, path) = write_all(Format::Parquet, "x.parquet");
            let mut df = read_parquet(&path);
            let schema: Vec<String> = df
                .schema()
                .iter()
                .map(|(name, dtype)| format!("{name}: {dtype:?}"))
                .collect();
            insta::assert_snapshot!("exchanges_parquet_schema", schema.join("\n"));
            let mut buf = Vec::new();
            CsvWriter::new(&mut buf).finish(&mut df).unwrap();
            insta::assert_snapshot!("exchanges_parquet_as_csv", String::from_utf8(buf).unwrap());
        }

        #[test]
        fn sessions_parquet_types() {
            let dir = tempfile::tempdir().unwrap();
            let path = dir.path().join("s.parquet");
            assert_eq!(write_sessions(&rows(), &path, Format::Parquet).unwrap(), 1);
            let df = read_parquet(&path);
            assert_eq!(df.width(), sessions::SESSION_COLUMNS.len());
            assert_eq!(
                df.column("first_ts").unwrap().dtype(),
                &DataType::Datetime(TimeUnit::Microseconds, Some(TimeZone::UTC))
            );
            assert_eq!(
                df.column("n_tool_success").unwrap().u64().unwrap().get(0),
                Some(2)
            );
        }
    }
}
