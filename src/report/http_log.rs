//! `mcp-trace http`'s writers: the HTTP stage's rows ([`HttpRow`]) as an aligned table, CSV
//! or JSON lines.
//!
//! CSV goes through the report's writer with one difference kept from the start: an empty
//! text is an empty field, as a missing one is (`Host:` with no value and no `Host` at all
//! look alike), where the exchanges table writes `""`. The table keeps its own cells: 60
//! characters at most and control characters as `\xHH`, narrower than the MCP report's.

use super::csv;
use super::row::{Cell, ColType, ColumnSpec, Table};
use crate::display::{self, Cut, Escape};
use crate::http::HttpRow;
use crate::timestamp::format_rfc3339_us;
use std::io::Write;

/// Output format of [`write_http_rows`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum HttpFormat {
    /// Readable aligned table.
    Table,
    /// RFC 4180 CSV with a header line.
    Csv,
    /// One JSON object per line; `ts` as RFC 3339 UTC with microseconds.
    Jsonl,
}

const fn col(name: &'static str, ty: ColType, nullable: bool) -> ColumnSpec {
    ColumnSpec { name, ty, nullable }
}

impl Table for HttpRow {
    const COLUMNS: &'static [ColumnSpec] = &[
        col("ts", ColType::Timestamp, false),
        col("tcp_stream", ColType::U64, true),
        col("client_addr", ColType::Str, false),
        col("server_addr", ColType::Str, false),
        col("trans_depth", ColType::U32, false),
        col("h2_stream", ColType::U32, true),
        col("method", ColType::Str, true),
        col("host", ColType::Str, true),
        col("uri", ColType::Str, true),
        col("version", ColType::Str, true),
        col("status_code", ColType::U16, true),
        col("request_body_len", ColType::U64, false),
        col("response_body_len", ColType::U64, false),
        col("request_wire_len", ColType::U64, false),
        col("response_wire_len", ColType::U64, false),
        col("complete", ColType::Bool, false),
        col("anomalies", ColType::Str, true),
    ];

    fn cells(&self) -> Vec<Cell<'_>> {
        vec![
            Cell::Timestamp(self.ts),
            self.tcp_stream.map_or(Cell::Null, Cell::U64),
            text(&self.client_addr),
            text(&self.server_addr),
            Cell::U32(self.trans_depth),
            self.h2_stream.map_or(Cell::Null, Cell::U32),
            opt(&self.method),
            opt(&self.host),
            opt(&self.uri),
            opt(&self.version),
            self.status_code.map_or(Cell::Null, Cell::U16),
            Cell::U64(self.request_body_len),
            Cell::U64(self.response_body_len),
            Cell::U64(self.request_wire_len),
            Cell::U64(self.response_wire_len),
            Cell::Bool(self.complete),
            self.anomalies.text().map_or(Cell::Null, Cell::Str),
        ]
    }
}

/// An empty text is written as a missing one (see the module docs).
fn text(s: &str) -> Cell<'_> {
    if s.is_empty() {
        Cell::Null
    } else {
        Cell::Str(s)
    }
}

/// An optional text, empty or missing alike.
fn opt(o: &Option<String>) -> Cell<'_> {
    o.as_deref().map_or(Cell::Null, text)
}

/// A cell as the table shows it, before [`table_cell`]: null is empty.
fn cell_text(cell: &Cell<'_>) -> String {
    match *cell {
        Cell::Null => String::new(),
        Cell::Str(s) => s.to_string(),
        Cell::Timestamp(us) => format_rfc3339_us(us),
        Cell::U64(n) => n.to_string(),
        Cell::U32(n) => n.to_string(),
        Cell::U16(n) => n.to_string(),
        Cell::U8(n) => n.to_string(),
        Cell::I64(n) => n.to_string(),
        Cell::F64(x) => x.to_string(),
        Cell::Bool(b) => b.to_string(),
    }
}

/// Writes rows in `format`.
pub fn write_http_rows(
    rows: &[HttpRow],
    out: &mut dyn Write,
    format: HttpFormat,
) -> std::io::Result<()> {
    match format {
        HttpFormat::Csv => {
            let mut out = &mut *out;
            csv::write_header::<HttpRow>(&mut out)?;
            for r in rows {
                csv::write_cells(&mut out, &r.cells())?;
            }
        }
        HttpFormat::Jsonl => {
            for r in rows {
                // Serialized from the struct, so keys keep the column order.
                serde_json::to_writer(&mut *out, r).map_err(std::io::Error::other)?;
                writeln!(out)?;
            }
        }
        HttpFormat::Table => {
            // Long values are shortened so the table stays readable.
            const MAX_CELL: usize = 60;
            let table: Vec<Vec<String>> = rows
                .iter()
                .map(|r| {
                    r.cells()
                        .iter()
                        .map(|c| table_cell(&cell_text(c), MAX_CELL))
                        .collect()
                })
                .collect();
            let names = HttpRow::COLUMNS.iter().map(|c| c.name);
            let mut widths: Vec<usize> = names.clone().map(str::len).collect();
            for row in &table {
                for (w, c) in widths.iter_mut().zip(row) {
                    *w = (*w).max(c.chars().count());
                }
            }
            let line = |cols: &mut dyn Iterator<Item = &str>| -> String {
                cols.zip(&widths)
                    .map(|(c, w)| format!("{c:<w$}"))
                    .collect::<Vec<_>>()
                    .join("  ")
                    .trim_end()
                    .to_string()
            };
            writeln!(out, "{}", line(&mut names.clone()))?;
            for row in &table {
                writeln!(out, "{}", line(&mut row.iter().map(String::as_str)))?;
            }
        }
    }
    out.flush()
}

/// Control characters shown as `\xHH`; long cells cut with `…`.
fn table_cell(s: &str, max: usize) -> String {
    display::clip(s, Escape::Hex, Cut::Shown(max))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::anomaly::AnomalySet;

    fn row() -> HttpRow {
        HttpRow {
            ts: 1_700_000_000_123_456,
            tcp_stream: Some(3),
            client_addr: "10.0.0.1:5000".into(),
            server_addr: "[::1]:80".into(),
            trans_depth: 1,
            h2_stream: None,
            method: Some("POST".into()),
            host: Some("h".into()),
            uri: Some("/a,\"b\"".into()),
            version: Some("1.1".into()),
            status_code: Some(200),
            request_body_len: 5,
            response_body_len: 7,
            request_wire_len: 5,
            response_wire_len: 9,
            complete: true,
            anomalies: AnomalySet::default(),
        }
    }

    #[test]
    fn csv_quotes() {
        let mut out = Vec::new();
        write_http_rows(&[row()], &mut out, HttpFormat::Csv).unwrap();
        let text = String::from_utf8(out).unwrap();
        let mut lines = text.lines();
        let names: Vec<&str> = HttpRow::COLUMNS.iter().map(|c| c.name).collect();
        assert_eq!(lines.next().unwrap(), names.join(","));
        assert_eq!(
            lines.next().unwrap(),
            "2023-11-14T22:13:20.123456Z,3,10.0.0.1:5000,[::1]:80,1,,POST,h,\"/a,\"\"b\"\"\",1.1,200,5,7,5,9,true,"
        );
    }

    #[test]
    fn jsonl_ts_is_rfc3339() {
        let mut out = Vec::new();
        write_http_rows(&[row()], &mut out, HttpFormat::Jsonl).unwrap();
        let v: serde_json::Value = serde_json::from_slice(&out).unwrap();
        assert_eq!(v["ts"], "2023-11-14T22:13:20.123456Z");
        assert_eq!(v["status_code"], 200);
        assert_eq!(v["anomalies"], serde_json::Value::Null);
    }

    #[test]
    fn table_aligned() {
        let mut out = Vec::new();
        write_http_rows(&[row(), row()], &mut out, HttpFormat::Table).unwrap();
        let text = String::from_utf8(out).unwrap();
        let lines: Vec<&str> = text.lines().collect();
        assert_eq!(lines.len(), 3);
        let col = lines[0].find("tcp_stream").unwrap();
        assert_eq!(&lines[1][col..col + 1], "3");
    }

    #[test]
    fn csv_writes_an_empty_text_as_a_missing_one() {
        let mut r = row();
        r.host = Some(String::new());
        r.tcp_stream = None;
        r.method = None;
        let mut out = Vec::new();
        write_http_rows(&[r], &mut out, HttpFormat::Csv).unwrap();
        let text = String::from_utf8(out).unwrap();
        assert_eq!(
            text.lines().nth(1).unwrap(),
            "2023-11-14T22:13:20.123456Z,,10.0.0.1:5000,[::1]:80,1,,,,\"/a,\"\"b\"\"\",1.1,200,5,7,5,9,true,"
        );
    }

    #[test]
    fn table_escapes_control_characters_and_cuts_long_cells() {
        let mut r = row();
        r.uri = Some(format!("/\u{1b}[31m{}", "x".repeat(80)));
        let mut out = Vec::new();
        write_http_rows(&[r], &mut out, HttpFormat::Table).unwrap();
        let text = String::from_utf8(out).unwrap();
        let line = text.lines().nth(1).unwrap();
        let uri = line
            .split_whitespace()
            .find(|c| c.starts_with('/'))
            .unwrap();
        assert_eq!(uri, format!("/\\x1b[31m{}…", "x".repeat(50)));
        assert_eq!(uri.chars().count(), 60);
    }
}
