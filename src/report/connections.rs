//! The connections table (report-schema.md section 5): one row per TCP connection, written as
//! each connection closes (rows come in order of closing, not of `tcp_stream`).

use super::row::{Cell, ColType, ColumnSpec, Table, opt_str};
use crate::stream::{ConnectionRecord, Decryption, EndedBy, HttpVersion};
use arcstr::ArcStr;

/// One connection, as written.
#[derive(Debug, Clone, PartialEq)]
pub struct ConnectionRow {
    pub tcp_stream: u64,
    pub capture: ArcStr,
    pub client_addr: String,
    pub server_addr: String,
    /// First and last packet, µs since the Unix epoch.
    pub first_ts: i64,
    pub last_ts: i64,
    pub packets: u64,
    pub client_bytes: u64,
    pub server_bytes: u64,
    pub gap_bytes: u64,
    pub ended_by: EndedBy,
    pub tls_version: Option<ArcStr>,
    pub tls_cipher: Option<ArcStr>,
    pub tls_sni: Option<ArcStr>,
    pub alpn: Option<ArcStr>,
    pub tls_resumed: Option<bool>,
    pub decryption: Decryption,
    pub http_version: Option<HttpVersion>,
    pub http_exchanges: u64,
    /// Null for `mcp-trace http` (no MCP stage).
    pub mcp_exchanges: Option<u64>,
}

impl From<&ConnectionRecord> for ConnectionRow {
    fn from(r: &ConnectionRecord) -> Self {
        let (flow, tls) = (&r.flow, &r.tls);
        ConnectionRow {
            tcp_stream: flow.tcp_stream,
            capture: flow.capture.clone(),
            client_addr: flow.client.to_string(),
            server_addr: flow.server.to_string(),
            first_ts: flow.first_ts.as_us(),
            last_ts: flow.last_ts.as_us(),
            packets: flow.packets,
            client_bytes: flow.client_bytes,
            server_bytes: flow.server_bytes,
            gap_bytes: flow.gap_bytes,
            ended_by: flow.ended_by,
            tls_version: tls.version.clone(),
            tls_cipher: tls.cipher.clone(),
            tls_sni: tls.sni.clone(),
            alpn: tls.alpn.clone(),
            tls_resumed: tls.resumed,
            decryption: tls.decryption,
            http_version: r.http.version,
            http_exchanges: r.http.exchanges,
            mcp_exchanges: r.mcp.exchanges,
        }
    }
}

/// Most connections the terminal summary lists as not decrypted; the rest are counted.
pub const MAX_LISTED_UNDECRYPTED: usize = 20;

/// The TLS connections that could not be decrypted, for the terminal summary: the first
/// [`MAX_LISTED_UNDECRYPTED`] by `tcp_stream` (whatever order they closed in, so every
/// thread count lists the same ones) and how many there were.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Undecrypted {
    pub listed: Vec<ConnectionRow>,
    pub total: u64,
}

/// No connection listed (a run without the connections, e.g. from tests).
pub static NO_UNDECRYPTED: Undecrypted = Undecrypted {
    listed: Vec::new(),
    total: 0,
};

impl Undecrypted {
    /// Takes note of a connection if it was TLS and not decrypted.
    pub fn push(&mut self, row: &ConnectionRow) {
        if matches!(
            row.decryption,
            Decryption::Plaintext | Decryption::Decrypted
        ) {
            return;
        }
        self.total = self.total.saturating_add(1);
        let at = self
            .listed
            .partition_point(|r| r.tcp_stream < row.tcp_stream);
        if at < MAX_LISTED_UNDECRYPTED {
            self.listed.insert(at, row.clone());
            self.listed.truncate(MAX_LISTED_UNDECRYPTED);
        }
    }

    /// Connections not listed.
    pub fn more(&self) -> u64 {
        self.total.saturating_sub(self.listed.len() as u64)
    }
}

const fn col(name: &'static str, ty: ColType, nullable: bool) -> ColumnSpec {
    ColumnSpec { name, ty, nullable }
}

/// Connections table columns, in contract order.
pub const CONNECTION_COLUMNS: &[ColumnSpec] = &[
    col("tcp_stream", ColType::U64, false),
    col("capture", ColType::Str, false),
    col("client_addr", ColType::Str, false),
    col("server_addr", ColType::Str, false),
    col("first_ts", ColType::Timestamp, false),
    col("last_ts", ColType::Timestamp, false),
    col("packets", ColType::U64, false),
    col("client_bytes", ColType::U64, false),
    col("server_bytes", ColType::U64, false),
    col("gap_bytes", ColType::U64, false),
    col("ended_by", ColType::Str, false),
    col("tls_version", ColType::Str, true),
    col("tls_cipher", ColType::Str, true),
    col("tls_sni", ColType::Str, true),
    col("alpn", ColType::Str, true),
    col("tls_resumed", ColType::Bool, true),
    col("decryption", ColType::Str, false),
    col("http_version", ColType::Str, true),
    col("http_exchanges", ColType::U64, false),
    col("mcp_exchanges", ColType::U64, true),
];

impl Table for ConnectionRow {
    const COLUMNS: &'static [ColumnSpec] = CONNECTION_COLUMNS;

    fn cells(&self) -> Vec<Cell<'_>> {
        vec![
            Cell::U64(self.tcp_stream),
            Cell::Str(&self.capture),
            Cell::Str(&self.client_addr),
            Cell::Str(&self.server_addr),
            Cell::Timestamp(self.first_ts),
            Cell::Timestamp(self.last_ts),
            Cell::U64(self.packets),
            Cell::U64(self.client_bytes),
            Cell::U64(self.server_bytes),
            Cell::U64(self.gap_bytes),
            Cell::Str(self.ended_by.as_str()),
            opt_str(&self.tls_version),
            opt_str(&self.tls_cipher),
            opt_str(&self.tls_sni),
            opt_str(&self.alpn),
            self.tls_resumed.map_or(Cell::Null, Cell::Bool),
            Cell::Str(self.decryption.as_str()),
            self.http_version
                .map_or(Cell::Null, |v| Cell::Str(v.as_str())),
            Cell::U64(self.http_exchanges),
            self.mcp_exchanges.map_or(Cell::Null, Cell::U64),
        ]
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::report::row::tests::assert_row_fits;
    use crate::timestamp::CaptureTime;

    fn record() -> ConnectionRecord {
        let mut r = ConnectionRecord::new(
            7,
            0,
            "[::1]:50000".parse().unwrap(),
            "[::1]:8443".parse().unwrap(),
        );
        r.flow.capture = "a.pcap".into();
        r.flow.first_ts = CaptureTime::from_ns(1_700_000_000_123_456_789);
        r.flow.last_ts = CaptureTime::from_ns(1_700_000_001_000_000_000);
        r.flow.ended_by = EndedBy::Rst;
        r.tls.decryption = Decryption::NoKey;
        r.tls.version = Some("TLS 1.3".into());
        r.tls.resumed = Some(false);
        r
    }

    #[test]
    fn a_row_has_the_contract_columns_in_order_and_fits_them() {
        let names: Vec<&str> = CONNECTION_COLUMNS.iter().map(|c| c.name).collect();
        assert_eq!(
            names,
            [
                "tcp_stream",
                "capture",
                "client_addr",
                "server_addr",
                "first_ts",
                "last_ts",
                "packets",
                "client_bytes",
                "server_bytes",
                "gap_bytes",
                "ended_by",
                "tls_version",
                "tls_cipher",
                "tls_sni",
                "alpn",
                "tls_resumed",
                "decryption",
                "http_version",
                "http_exchanges",
                "mcp_exchanges",
            ]
        );
        let row = ConnectionRow::from(&record());
        assert_row_fits(&row);
        assert_eq!(row.client_addr, "[::1]:50000");
        assert_eq!(row.first_ts, 1_700_000_000_123_456);
        assert_eq!(row.ended_by.as_str(), "rst");
        assert_eq!(row.mcp_exchanges, None);
        assert_eq!(row.cells()[16], Cell::Str("no_key"));
    }

    #[test]
    fn the_undecrypted_list_keeps_the_lowest_streams_and_counts_the_rest() {
        let mut u = Undecrypted::default();
        let mut row = ConnectionRow::from(&record());
        row.decryption = Decryption::Decrypted;
        u.push(&row);
        assert_eq!(u.total, 0);
        row.decryption = Decryption::NoKey;
        for stream in (0..30).rev() {
            row.tcp_stream = stream;
            u.push(&row);
        }
        assert_eq!(u.total, 30);
        assert_eq!(u.more(), 10);
        let streams: Vec<u64> = u.listed.iter().map(|r| r.tcp_stream).collect();
        assert_eq!(streams, (0..20).collect::<Vec<u64>>());
    }
}
