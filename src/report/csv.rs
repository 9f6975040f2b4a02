//! CSV: a header row, then one record per row, RFC 4180 quoting, columns in contract order.
//!
//! Written by this module in every build, with or without polars: the bytes must not depend
//! on a feature, and polars' CSV writer formats floats and datetimes its own way.
//! Choices, all within RFC 4180: records end with CRLF (section 2, rule 1); a field is
//! quoted when it holds a comma, a quote, CR or LF, and quotes inside are doubled (rules
//! 5-7); null is an empty field and an empty string is `""`, so the two stay apart;
//! timestamps are RFC 3339 UTC with microseconds; floats use the same text as JSON lines.

use super::jsonl::write_json_cell;
use super::row::{Cell, Table};
use crate::timestamp::format_rfc3339_us;
use std::io::{self, Write};

/// Writes `field` with RFC 4180 quoting.
fn write_field(w: &mut impl Write, field: &str) -> io::Result<()> {
    let needs_quotes = field.is_empty()
        || field
            .bytes()
            .any(|b| matches!(b, b',' | b'"' | b'\r' | b'\n'));
    if !needs_quotes {
        return w.write_all(field.as_bytes());
    }
    w.write_all(b"\"")?;
    for (i, part) in field.split('"').enumerate() {
        if i > 0 {
            w.write_all(b"\"\"")?;
        }
        w.write_all(part.as_bytes())?;
    }
    w.write_all(b"\"")
}

fn write_cell(w: &mut impl Write, cell: &Cell<'_>) -> io::Result<()> {
    match *cell {
        Cell::Null => Ok(()),
        Cell::Str(s) => write_field(w, s),
        Cell::Timestamp(us) => w.write_all(format_rfc3339_us(us).as_bytes()),
        // Numbers and booleans never need quoting; share JSON's text for them.
        Cell::U64(_)
        | Cell::U32(_)
        | Cell::U16(_)
        | Cell::U8(_)
        | Cell::I64(_)
        | Cell::F64(_)
        | Cell::Bool(_) => write_json_cell(w, cell),
    }
}

/// Writes the header record of table `T`.
pub fn write_header<T: Table>(w: &mut impl Write) -> io::Result<()> {
    for (i, spec) in T::COLUMNS.iter().enumerate() {
        if i > 0 {
            w.write_all(b",")?;
        }
        write_field(w, spec.name)?;
    }
    w.write_all(b"\r\n")
}

/// Writes one record, given as its cells.
pub fn write_cells(w: &mut impl Write, cells: &[Cell<'_>]) -> io::Result<()> {
    for (i, cell) in cells.iter().enumerate() {
        if i > 0 {
            w.write_all(b",")?;
        }
        write_cell(w, cell)?;
    }
    w.write_all(b"\r\n")
}

/// A strict RFC 4180 reader for tests: records of fields, `None` for an unquoted empty field.
#[cfg(test)]
pub(crate) fn parse(text: &str) -> Vec<Vec<Option<String>>> {
    let mut records = Vec::new();
    let mut record = Vec::new();
    let mut chars = text.chars().peekable();
    loop {
        let mut field = String::new();
        let mut quoted = false;
        if chars.peek() == Some(&'"') {
            quoted = true;
            chars.next();
            loop {
                match chars.next() {
                    Some('"') if chars.peek() == Some(&'"') => {
                        chars.next();
                        field.push('"');
                    }
                    Some('"') => break,
                    Some(c) => field.push(c),
                    None => panic!("unterminated quote"),
                }
            }
        }
        loop {
            match chars.peek() {
                Some(',') | Some('\r') | None => break,
                Some(c) => {
                    assert!(!quoted, "text after closing quote");
                    assert!(*c != '"' && *c != '\n', "bare quote or LF in field");
                    field.push(*c);
                    chars.next();
                }
            }
        }
        record.push(if field.is_empty() && !quoted {
            None
        } else {
            Some(field)
        });
        match chars.next() {
            Some(',') => {}
            Some('\r') => {
                assert_eq!(chars.next(), Some('\n'));
                records.push(std::mem::take(&mut record));
                if chars.peek().is_none() {
                    return records;
                }
            }
            None => {
                assert!(
                    record.len() == 1 && record[0].is_none(),
                    "missing final CRLF"
                );
                return records;
            }
            Some(c) => panic!("unexpected {c:?}"),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::super::test_rows::rows;
    use super::*;
    use crate::mcp::Exchange;
    use crate::report::row::EXCHANGE_COLUMNS;

    fn render() -> String {
        let mut out = Vec::new();
        write_header::<Exchange>(&mut out).unwrap();
        for r in rows() {
            write_cells(&mut out, &r.cells()).unwrap();
        }
        String::from_utf8(out).unwrap()
    }

    #[test]
    fn quoting() {
        let mut out = Vec::new();
        for f in [
            "plain",
            "a,b",
            "say \"hi\"",
            "two\nlines",
            "cr\rhere",
            "",
            " sp ",
        ] {
            write_field(&mut out, f).unwrap();
            out.push(b'|');
        }
        assert_eq!(
            String::from_utf8(out).unwrap(),
            "plain|\"a,b\"|\"say \"\"hi\"\"\"|\"two\nlines\"|\"cr\rhere\"|\"\"| sp |"
        );
    }

    #[test]
    fn header_and_records() {
        let text = render();
        let records = parse(&text);
        assert_eq!(records.len(), 1 + rows().len());
        let header: Vec<&str> = records[0].iter().map(|f| f.as_deref().unwrap()).collect();
        let names: Vec<&str> = EXCHANGE_COLUMNS.iter().map(|c| c.name).collect();
        assert_eq!(header, names);
        let col = |name: &str| names.iter().position(|n| *n == name).unwrap();
        let first = &records[1];
        assert_eq!(first.len(), names.len());
        assert_eq!(
            first[col("ts_request")].as_deref(),
            Some("2026-11-29T19:54:08.123456Z")
        );
        assert_eq!(first[col("latency_ms")].as_deref(), Some("412.0"));
        assert_eq!(
            first[col("tool_name")].as_deref(),
            Some("search, \"quoted\"\nline")
        );
        assert_eq!(first[col("error_code")], None);
        assert_eq!(first[col("is_error")].as_deref(), Some("false"));
        let second = &records[2];
        assert_eq!(
            second[col("ts_request")].as_deref(),
            Some("1969-12-31T23:59:59.999999Z")
        );
        assert_eq!(second[col("ts_response")], None);
        assert_eq!(second[col("session_id")].as_deref(), Some(""));
        assert_eq!(second[col("error_code")].as_deref(), Some("-32602"));
        assert!(text.starts_with("exchange_id,capture,ts_request,"));
    }
}
