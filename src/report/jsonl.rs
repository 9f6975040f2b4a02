//! JSON lines: one object per row, keys in contract order, timestamps as RFC 3339 UTC
//! strings with microseconds, nulls as `null`.
//!
//! Objects are written by hand rather than through a `serde_json::Map` because the map
//! sorts its keys and the contract fixes their order.

use super::row::{Cell, Table};
use crate::timestamp::format_rfc3339_us;
use std::io::{self, Write};

/// Writes one cell as a JSON value.
pub(crate) fn write_json_cell(w: &mut impl Write, cell: &Cell<'_>) -> io::Result<()> {
    match *cell {
        Cell::Null => w.write_all(b"null"),
        Cell::U64(v) => write!(w, "{v}"),
        Cell::U32(v) => write!(w, "{v}"),
        Cell::U16(v) => write!(w, "{v}"),
        Cell::U8(v) => write!(w, "{v}"),
        Cell::I64(v) => write!(w, "{v}"),
        // serde_json's shortest round-trip form; CSV reuses it so both files show the same text.
        Cell::F64(v) => serde_json::to_writer(w, &v).map_err(io::Error::from),
        Cell::Bool(v) => w.write_all(if v { b"true" } else { b"false" }),
        Cell::Str(s) => serde_json::to_writer(w, s).map_err(io::Error::from),
        Cell::Timestamp(us) => write!(w, "\"{}\"", format_rfc3339_us(us)),
    }
}

/// Writes a row of table `T`, given as its cells, as one JSON object followed by `\n`.
pub fn write_cells<T: Table>(w: &mut impl Write, cells: &[Cell<'_>]) -> io::Result<()> {
    w.write_all(b"{")?;
    for (i, (spec, cell)) in T::COLUMNS.iter().zip(cells).enumerate() {
        if i > 0 {
            w.write_all(b",")?;
        }
        // Column names are plain snake_case identifiers (a test checks): no escaping needed.
        w.write_all(b"\"")?;
        w.write_all(spec.name.as_bytes())?;
        w.write_all(b"\":")?;
        write_json_cell(w, cell)?;
    }
    w.write_all(b"}\n")
}

#[cfg(test)]
mod tests {
    use super::super::test_rows::rows;
    use super::*;
    use crate::mcp::Exchange;
    use crate::report::row::EXCHANGE_COLUMNS;

    fn render() -> String {
        let mut out = Vec::new();
        for r in rows() {
            write_cells::<Exchange>(&mut out, &r.cells()).unwrap();
        }
        String::from_utf8(out).unwrap()
    }

    #[test]
    fn one_object_per_line_in_contract_order() {
        let text = render();
        let lines: Vec<&str> = text.lines().collect();
        assert_eq!(lines.len(), rows().len());
        for line in &lines {
            let v: serde_json::Value = serde_json::from_str(line).unwrap();
            assert_eq!(v.as_object().unwrap().len(), EXCHANGE_COLUMNS.len());
            let mut last = 0;
            for spec in EXCHANGE_COLUMNS {
                let pos = line.find(&format!("\"{}\":", spec.name)).unwrap();
                assert!(pos >= last, "{}", spec.name);
                last = pos;
            }
        }
    }

    #[test]
    fn values_nulls_and_timestamps() {
        let text = render();
        let first: serde_json::Value = serde_json::from_str(text.lines().next().unwrap()).unwrap();
        assert_eq!(first["exchange_id"], 1);
        assert_eq!(first["ts_request"], "2026-11-29T19:54:08.123456Z");
        assert_eq!(first["ts_response"], "2026-11-29T19:54:08.535456Z");
        assert_eq!(first["latency_ms"], 412.0);
        assert_eq!(first["http_status"], 200);
        assert_eq!(first["is_error"], false);
        assert_eq!(first["error_code"], serde_json::Value::Null);
        assert_eq!(first["tool_name"], "search, \"quoted\"\nline");
        assert!(
            text.lines()
                .next()
                .unwrap()
                .contains("\"latency_ms\":412.0,")
        );

        let second: serde_json::Value = serde_json::from_str(text.lines().nth(1).unwrap()).unwrap();
        assert_eq!(second["ts_request"], "1969-12-31T23:59:59.999999Z");
        assert_eq!(second["ts_response"], serde_json::Value::Null);
        assert_eq!(second["latency_ms"], serde_json::Value::Null);
        assert_eq!(second["error_code"], -32602);
        assert_eq!(second["tcp_stream"], serde_json::Value::Null);
        assert_eq!(second["session_id"], "");

        let third: serde_json::Value = serde_json::from_str(text.lines().nth(2).unwrap()).unwrap();
        assert_eq!(third["ts_request"], "1970-01-01T00:00:00.000000Z");
        assert_eq!(third["request_bytes"], u64::MAX);
    }
}
