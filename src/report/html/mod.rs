//! `--html`: one self-contained incident report (a single HTML file, no network).
//!
//! The page is static CSS and JavaScript (`report.css`, `report.js`, inlined) plus the data as
//! one JSON document in a `<script type="application/json">`: the exchanges table and the
//! sessions table exactly as their [`Table`] schemas define them (so a column added to a
//! schema appears in the report without a change here), and the run summary. Strings are
//! stored once in a shared list and cells refer to them by index, which keeps large reports
//! small. Rows past `max_rows` are counted, not kept.

use super::output::PartialFile;
use super::row::{Cell, ColType, ColumnSpec, Table};
use super::sessions::{SessionAggregator, SessionRow};
use super::{ReportError, RowFilter};
use crate::mcp::{Exchange, Layer, Outcome};
use crate::timestamp::format_rfc3339_us;
use serde_json::{Value, json};
use std::collections::HashMap;
use std::io::Write;
use std::path::Path;

/// Default of `--html-max-rows`: exchanges kept in the report's table.
pub const DEFAULT_HTML_MAX_ROWS: usize = 50_000;

const CSS: &str = include_str!("report.css");
const JS: &str = include_str!("report.js");

/// The largest integer a JavaScript number holds exactly; larger ones are written as strings.
const JS_MAX_SAFE_INTEGER: u64 = (1 << 53) - 1;

/// Strings of the report, each stored once; cells hold their index.
#[derive(Default)]
struct Strings {
    index: HashMap<Box<str>, u32>,
    list: Vec<Box<str>>,
}

impl Strings {
    fn id(&mut self, s: &str) -> u32 {
        if let Some(&i) = self.index.get(s) {
            return i;
        }
        let i = u32::try_from(self.list.len()).unwrap_or(u32::MAX);
        self.list.push(s.into());
        self.index.insert(s.into(), i);
        i
    }
}

/// An HTML report being gathered: rows are pushed as they are released, the file is written
/// by [`HtmlReport::finish`]. The output file exists as `<path>.partial` from
/// [`HtmlReport::create`] on, so an unwritable path fails before any input is read.
pub struct HtmlReport {
    out: PartialFile,
    max_rows: usize,
    /// Kept rows as JSON arrays, comma-separated.
    rows: Vec<u8>,
    kept: usize,
    omitted: u64,
    strings: Strings,
    sessions: SessionAggregator,
}

impl HtmlReport {
    /// Creates `<path>.partial`; the report keeps at most `max_rows` exchanges in its table.
    pub fn create(path: &Path, max_rows: usize) -> Result<Self, ReportError> {
        Ok(HtmlReport {
            out: PartialFile::create(path)?,
            max_rows,
            rows: Vec::new(),
            kept: 0,
            omitted: 0,
            strings: Strings::default(),
            sessions: SessionAggregator::default(),
        })
    }

    /// Adds one selected exchange. Every row counts in the sessions; past `max_rows` a row
    /// is only counted.
    pub fn push(&mut self, row: &Exchange) {
        self.sessions.push(row);
        if self.kept >= self.max_rows {
            self.omitted = self.omitted.saturating_add(1);
            return;
        }
        if self.kept > 0 {
            self.rows.push(b',');
        }
        encode_row(&mut self.rows, &mut self.strings, &row.cells());
        self.kept += 1;
    }

    /// Writes the page with the run `summary` (report-schema.md section 5) and the filters
    /// that selected the rows, and moves it to its path.
    pub fn finish(self, summary: &Value, filter: &RowFilter) -> Result<(), ReportError> {
        let HtmlReport {
            mut out,
            max_rows,
            rows,
            kept,
            omitted,
            mut strings,
            sessions,
        } = self;
        let mut session_rows = Vec::new();
        for (i, s) in sessions.finish().iter().enumerate() {
            if i > 0 {
                session_rows.push(b',');
            }
            encode_row(&mut session_rows, &mut strings, &s.cells());
        }
        let data = data_json(
            &rows,
            &session_rows,
            &strings,
            json!({
                "version": env!("CARGO_PKG_VERSION"),
                "rows_kept": kept,
                "rows_omitted": omitted,
                "max_rows": max_rows,
                "filters": describe_filter(filter),
                "outcomes": Outcome::ALL.iter().map(|o| json!({
                    "name": o.name(), "layer": o.layer().name(), "failure": o.is_failure(),
                })).collect::<Vec<_>>(),
                "layers": Layer::ALL,
                "summary": summary,
            }),
        );
        let title = title(summary);
        let result = write_page(&mut out, &title, &data);
        result.map_err(|e| out.io_error(e))?;
        out.commit()
    }
}

fn title(summary: &Value) -> String {
    let names: Vec<&str> = summary["inputs"]
        .as_array()
        .map(|inputs| inputs.iter().filter_map(|i| i["name"].as_str()).collect())
        .unwrap_or_default();
    let base = |n: &&str| n.rsplit('/').next().unwrap_or(n).to_string();
    let list: Vec<String> = names.iter().take(3).map(base).collect();
    let more = if names.len() > 3 { ", ..." } else { "" };
    format!("mcp-trace report: {}{more}", list.join(", "))
}

/// One line per active filter, as given on the command line.
fn describe_filter(f: &RowFilter) -> Vec<String> {
    let mut out = Vec::new();
    let outcomes: Vec<String> = f.outcomes.iter().map(|o| o.name().to_string()).collect();
    for (flag, list) in [
        ("--outcome", &outcomes),
        ("--tool", &f.tools),
        ("--method", &f.methods),
        ("--session", &f.sessions),
    ] {
        if !list.is_empty() {
            out.push(format!("{flag} {}", list.join(",")));
        }
    }
    if let Some(t) = f.since_us {
        out.push(format!("--since {}", format_rfc3339_us(t)));
    }
    if let Some(t) = f.until_us {
        out.push(format!("--until {}", format_rfc3339_us(t)));
    }
    if f.only_failures {
        out.push("--only-failures".into());
    }
    out
}

/// Appends one row as a JSON array: strings as indexes into `strings`, timestamps as
/// microseconds since the epoch.
fn encode_row(out: &mut Vec<u8>, strings: &mut Strings, cells: &[Cell<'_>]) {
    out.push(b'[');
    for (i, cell) in cells.iter().enumerate() {
        if i > 0 {
            out.push(b',');
        }
        // Writing to a Vec cannot fail.
        let _ = match *cell {
            Cell::Null => out.write_all(b"null"),
            Cell::U64(v) if v > JS_MAX_SAFE_INTEGER => write!(out, "\"{v}\""),
            Cell::U64(v) => write!(out, "{v}"),
            Cell::U32(v) => write!(out, "{v}"),
            Cell::U16(v) => write!(out, "{v}"),
            Cell::U8(v) => write!(out, "{v}"),
            Cell::I64(v) => write!(out, "{v}"),
            Cell::F64(v) if v.is_finite() => write!(out, "{v}"),
            Cell::F64(_) => out.write_all(b"null"),
            Cell::Bool(v) => out.write_all(if v { b"true" } else { b"false" }),
            Cell::Str(s) => write!(out, "{}", strings.id(s)),
            Cell::Timestamp(us) => write!(out, "{us}"),
        };
    }
    out.push(b']');
}

fn columns_json(cols: &[ColumnSpec]) -> Value {
    let ty = |t: ColType| match t {
        ColType::U64 => "u64",
        ColType::U32 => "u32",
        ColType::U16 => "u16",
        ColType::U8 => "u8",
        ColType::I64 => "i64",
        ColType::F64 => "f64",
        ColType::Bool => "bool",
        ColType::Str => "str",
        ColType::Timestamp => "timestamp",
    };
    Value::Array(
        cols.iter()
            .map(|c| json!({"name": c.name, "type": ty(c.ty), "nullable": c.nullable}))
            .collect(),
    )
}

/// The data document: `meta`'s keys plus the two tables and the strings.
fn data_json(rows: &[u8], sessions: &[u8], strings: &Strings, meta: Value) -> Vec<u8> {
    let mut out = Vec::with_capacity(rows.len() + sessions.len() + 4096);
    let meta = meta.to_string();
    // `meta` is an object: reopen it to append the tables.
    out.extend_from_slice(meta.trim_end_matches('}').as_bytes());
    let _ = write!(
        out,
        ",\"columns\":{},\"session_columns\":{},\"rows\":[",
        columns_json(<Exchange as Table>::COLUMNS),
        columns_json(<SessionRow as Table>::COLUMNS),
    );
    out.extend_from_slice(rows);
    out.extend_from_slice(b"],\"sessions\":[");
    out.extend_from_slice(sessions);
    out.extend_from_slice(b"],\"strings\":");
    let list: Vec<&str> = strings.list.iter().map(|s| &**s).collect();
    let _ = serde_json::to_writer(&mut out, &list);
    out.push(b'}');
    out
}

/// Writes JSON text so that it cannot end the `<script>` element it sits in: `<`, `>` and `&`
/// become `\u003c`, `\u003e`, `\u0026` (they occur only inside JSON strings, where the escape
/// means the same character).
fn write_script_json(out: &mut impl Write, json: &[u8]) -> std::io::Result<()> {
    let mut start = 0;
    for (i, b) in json.iter().enumerate() {
        let esc: &[u8] = match b {
            b'<' => b"\\u003c",
            b'>' => b"\\u003e",
            b'&' => b"\\u0026",
            _ => continue,
        };
        out.write_all(json.get(start..i).unwrap_or_default())?;
        out.write_all(esc)?;
        start = i + 1;
    }
    out.write_all(json.get(start..).unwrap_or_default())
}

fn escape_html(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        match c {
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '&' => out.push_str("&amp;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&#39;"),
            _ => out.push(c),
        }
    }
    out
}

fn write_page(out: &mut impl Write, title: &str, data: &[u8]) -> std::io::Result<()> {
    write!(
        out,
        "<!doctype html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n\
         <meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n\
         <meta http-equiv=\"Content-Security-Policy\" content=\"default-src 'none'; \
         style-src 'unsafe-inline'; script-src 'unsafe-inline'; img-src data:\">\n\
         <meta name=\"generator\" content=\"mcp-trace {}\">\n<title>{}</title>\n<style>\n",
        env!("CARGO_PKG_VERSION"),
        escape_html(title)
    )?;
    out.write_all(CSS.as_bytes())?;
    write!(
        out,
        "</style>\n</head>\n<body>\n<header><h1>{}</h1></header>\n\
         <main id=\"app\"><noscript>This report draws its content with JavaScript.</noscript></main>\n\
         <script type=\"application/json\" id=\"mcp-trace-data\">",
        escape_html(title)
    )?;
    write_script_json(out, data)?;
    out.write_all(b"</script>\n<script>\n")?;
    out.write_all(JS.as_bytes())?;
    out.write_all(b"</script>\n</body>\n</html>\n")
}

#[cfg(test)]
mod tests;
