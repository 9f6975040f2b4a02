//! The schema of the written tables: one [`ColumnSpec`] list per table and the typed
//! [`Cell`]s of a row, in contract order (report-schema.md sections 2 and 5).
//!
//! Every writer (JSONL, CSV, Parquet) walks these lists, so the three formats cannot disagree
//! on names, order, types or nulls. Column names are stable: add, never rename.

use crate::mcp::Exchange;

/// The type of a column, as the contract names it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ColType {
    U64,
    U32,
    U16,
    U8,
    I64,
    F64,
    Bool,
    Str,
    /// Microseconds since the Unix epoch, UTC.
    Timestamp,
}

/// One column: name, type, and whether null is allowed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ColumnSpec {
    pub name: &'static str,
    pub ty: ColType,
    pub nullable: bool,
}

/// One value of a row, borrowed from the row.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Cell<'a> {
    Null,
    U64(u64),
    U32(u32),
    U16(u16),
    U8(u8),
    I64(i64),
    F64(f64),
    Bool(bool),
    Str(&'a str),
    /// Microseconds since the Unix epoch, UTC.
    Timestamp(i64),
}

impl Cell<'_> {
    /// Whether this value may stand in a column of type `ty` (null is checked separately).
    pub fn fits(&self, ty: ColType) -> bool {
        matches!(
            (self, ty),
            (Cell::Null, _)
                | (Cell::U64(_), ColType::U64)
                | (Cell::U32(_), ColType::U32)
                | (Cell::U16(_), ColType::U16)
                | (Cell::U8(_), ColType::U8)
                | (Cell::I64(_), ColType::I64)
                | (Cell::F64(_), ColType::F64)
                | (Cell::Bool(_), ColType::Bool)
                | (Cell::Str(_), ColType::Str)
                | (Cell::Timestamp(_), ColType::Timestamp)
        )
    }
}

/// A table row type: its columns and its values in the same order.
///
/// Invariant: `cells().len() == COLUMNS.len()`, each cell fits its column's type, and a
/// null appears only in a nullable column (checked by tests for both tables).
pub trait Table {
    /// Columns in contract order.
    const COLUMNS: &'static [ColumnSpec];
    /// Values in the order of [`Table::COLUMNS`].
    fn cells(&self) -> Vec<Cell<'_>>;
}

/// A boxed row is written as the row: the analyzer hands rows on boxed, so a release moves a
/// pointer rather than the whole row through every stage to the writer.
impl<T: Table> Table for Box<T> {
    const COLUMNS: &'static [ColumnSpec] = T::COLUMNS;
    fn cells(&self) -> Vec<Cell<'_>> {
        T::cells(self)
    }
}

const fn col(name: &'static str, ty: ColType, nullable: bool) -> ColumnSpec {
    ColumnSpec { name, ty, nullable }
}

use ColType::{Bool, F64, I64, Str, Timestamp, U8, U16, U32, U64};

/// The exchanges table (report-schema.md section 2), in contract order.
pub const EXCHANGE_COLUMNS: &[ColumnSpec] = &[
    col("exchange_id", U64, false),
    col("capture", Str, false),
    col("ts_request", Timestamp, false),
    col("ts_response", Timestamp, true),
    col("latency_ms", F64, true),
    col("client_addr", Str, false),
    col("server_addr", Str, false),
    col("tcp_stream", U64, true),
    col("http_version", Str, true),
    col("h2_stream", U32, true),
    col("tls_version", Str, true),
    col("tls_sni", Str, true),
    col("transport", Str, false),
    col("session_key", Str, false),
    col("session_id", Str, true),
    col("protocol_version", Str, true),
    col("client_name", Str, true),
    col("client_version", Str, true),
    col("user_agent", Str, true),
    col("kind", Str, false),
    col("http_method", Str, false),
    col("path", Str, false),
    col("http_status", U16, true),
    col("content_type", Str, true),
    col("jsonrpc_id", Str, true),
    col("rpc_method", Str, true),
    col("tool_name", Str, true),
    col("outcome", Str, false),
    col("layer", Str, false),
    col("error_code", I64, true),
    col("error_message", Str, true),
    col("result_type", Str, true),
    col("is_error", Bool, true),
    col("sse_events", U32, false),
    col("final_response", Bool, false),
    col("stream_end", Str, false),
    col("request_bytes", U64, false),
    col("response_bytes", U64, false),
    col("attempt", U32, false),
    col("retry_of", U64, true),
    col("retry_origin", Str, false),
    col("retry_evidence", Str, true),
    col("retry_findings", Str, true),
    col("continuation_of", U64, true),
    col("anomalies", Str, true),
    col("hop", U8, false),
    col("forwarded_from", U64, true),
    col("fault_hop", U8, true),
    col("hop_evidence", Str, true),
];

/// A nullable string cell.
pub(crate) fn opt_str<S: AsRef<str>>(v: &Option<S>) -> Cell<'_> {
    v.as_ref().map_or(Cell::Null, |s| Cell::Str(s.as_ref()))
}

fn opt_u64(v: Option<u64>) -> Cell<'static> {
    v.map_or(Cell::Null, Cell::U64)
}

impl Table for Exchange {
    const COLUMNS: &'static [ColumnSpec] = EXCHANGE_COLUMNS;

    fn cells(&self) -> Vec<Cell<'_>> {
        vec![
            Cell::U64(self.exchange_id),
            Cell::Str(self.capture.as_str()),
            Cell::Timestamp(self.ts_request),
            self.ts_response.map_or(Cell::Null, Cell::Timestamp),
            // JSON has no NaN or infinity; a non-finite latency is written as null everywhere.
            self.latency_ms
                .filter(|v| v.is_finite())
                .map_or(Cell::Null, Cell::F64),
            Cell::Str(self.client_addr.as_str()),
            Cell::Str(self.server_addr.as_str()),
            opt_u64(self.tcp_stream),
            self.http_version.map_or(Cell::Null, Cell::Str),
            self.h2_stream.map_or(Cell::Null, Cell::U32),
            opt_str(&self.tls_version),
            opt_str(&self.tls_sni),
            Cell::Str(self.transport.name()),
            Cell::Str(self.session_key.as_str()),
            opt_str(&self.session_id),
            opt_str(&self.protocol_version),
            opt_str(&self.client_name),
            opt_str(&self.client_version),
            opt_str(&self.user_agent),
            Cell::Str(self.kind.name()),
            Cell::Str(self.http_method.as_str()),
            Cell::Str(self.path.as_str()),
            self.http_status.map_or(Cell::Null, Cell::U16),
            opt_str(&self.content_type),
            opt_str(&self.jsonrpc_id),
            opt_str(&self.rpc_method),
            opt_str(&self.tool_name),
            Cell::Str(self.outcome.name()),
            Cell::Str(self.layer.name()),
            self.error_code.map_or(Cell::Null, Cell::I64),
            opt_str(&self.error_message),
            opt_str(&self.result_type),
            self.is_error.map_or(Cell::Null, Cell::Bool),
            Cell::U32(self.sse_events),
            Cell::Bool(self.final_response),
            Cell::Str(self.stream_end.name()),
            Cell::U64(self.request_bytes),
            Cell::U64(self.response_bytes),
            Cell::U32(self.attempt),
            opt_u64(self.retry_of),
            Cell::Str(self.retry_origin.name()),
            opt_str(&self.retry_evidence),
            self.retry_findings.text().map_or(Cell::Null, Cell::Str),
            opt_u64(self.continuation_of),
            self.anomalies.text().map_or(Cell::Null, Cell::Str),
            Cell::U8(self.hop.0),
            opt_u64(self.forwarded_from),
            self.fault_hop.map_or(Cell::Null, Cell::U8),
            opt_str(&self.hop_evidence),
        ]
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;

    /// Checks the invariant of [`Table`] on one row.
    pub(crate) fn assert_row_fits<T: Table>(row: &T) {
        let cells = row.cells();
        assert_eq!(cells.len(), T::COLUMNS.len());
        for (cell, spec) in cells.iter().zip(T::COLUMNS) {
            assert!(cell.fits(spec.ty), "{} holds {cell:?}", spec.name);
            assert!(
                spec.nullable || *cell != Cell::Null,
                "{} is null but not nullable",
                spec.name
            );
        }
    }

    #[test]
    fn exchange_columns_are_the_struct_fields_in_order() {
        // serde writes struct fields in declaration order; the column list must match it.
        let text = serde_json::to_string(&Exchange::default()).unwrap();
        let value: serde_json::Value = serde_json::from_str(&text).unwrap();
        let n_fields = value.as_object().unwrap().len();
        assert_eq!(n_fields, EXCHANGE_COLUMNS.len());
        let mut last = 0;
        for spec in EXCHANGE_COLUMNS {
            let pos = text
                .find(&format!("\"{}\":", spec.name))
                .unwrap_or_else(|| panic!("{} not a field", spec.name));
            assert!(pos >= last, "{} out of order", spec.name);
            last = pos;
        }
    }

    #[test]
    fn exchange_cells_fit_their_columns() {
        let mut e = Exchange {
            ts_response: Some(5),
            latency_ms: Some(1.5),
            tcp_stream: Some(3),
            session_id: Some("s".into()),
            http_status: Some(200),
            error_code: Some(-32602),
            is_error: Some(false),
            retry_of: Some(1),
            continuation_of: Some(1),
            ..Exchange::default()
        };
        assert_row_fits(&e);
        e.latency_ms = Some(f64::NAN);
        assert_eq!(e.cells().get(4), Some(&Cell::Null));
    }

    #[test]
    fn column_names_are_snake_case() {
        let sessions = crate::report::sessions::SESSION_COLUMNS;
        for spec in EXCHANGE_COLUMNS.iter().chain(sessions) {
            assert!(
                !spec.name.is_empty()
                    && spec
                        .name
                        .bytes()
                        .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'_'),
                "{}",
                spec.name
            );
        }
    }

    #[test]
    fn enum_columns_are_their_contract_names() {
        use crate::mcp::{Kind, Outcome, RetryOrigin, StreamEnd};
        let e = Exchange {
            kind: Kind::SessionEnd,
            outcome: Outcome::JsonrpcError,
            layer: Outcome::JsonrpcError.layer(),
            stream_end: StreamEnd::CaptureEnd,
            retry_origin: RetryOrigin::Manual,
            ..Exchange::default()
        };
        let cells = e.cells();
        let at = |name: &str| {
            EXCHANGE_COLUMNS
                .iter()
                .position(|c| c.name == name)
                .unwrap()
        };
        for (column, want) in [
            ("transport", "unknown"),
            ("kind", "session_end"),
            ("outcome", "JSONRPC_ERROR"),
            ("layer", "protocol"),
            ("stream_end", "capture_end"),
            ("retry_origin", "manual"),
        ] {
            assert_eq!(cells[at(column)], Cell::Str(want), "{column}");
        }
    }
}
