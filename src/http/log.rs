//! `mcp-trace http`: one row per HTTP exchange (like Zeek's http.log), built
//! from [`HttpEvent`]s, and its writers (table, CSV, JSONL).

use super::{BodyEnd, ExchangeRef, HttpEvent};
use crate::timestamp::format_rfc3339_us;
use serde::Serialize;
use std::collections::HashMap;
use std::io::Write;

/// One exchange: a request (answered or not), or a response without request.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct HttpRow {
    /// Time of the request's first byte (the response's when there is no
    /// request), microseconds since the Unix epoch; serialized as RFC 3339 UTC.
    #[serde(serialize_with = "serialize_ts")]
    pub ts: i64,
    /// TCP stream index (`None` for HAR input).
    pub tcp_stream: Option<u64>,
    /// `ip:port` of the client (`[ip]:port` for IPv6).
    pub client_addr: String,
    /// `ip:port` of the server.
    pub server_addr: String,
    /// 1-based position of the exchange on its connection (Zeek's `trans_depth`).
    pub trans_depth: u32,
    /// Request method; `None` for a response without request.
    pub method: Option<String>,
    /// `Host` header of the request.
    pub host: Option<String>,
    /// Request target as sent.
    pub uri: Option<String>,
    /// HTTP version of the request (of the response when there is no request).
    pub version: Option<String>,
    /// Final status code; `None` when no response was seen, `0` for HTTP/0.9.
    pub status_code: Option<u16>,
    /// Request body length after de-chunking and content decoding.
    pub request_body_len: u64,
    /// Response body length after de-chunking and content decoding.
    pub response_body_len: u64,
    /// Request body bytes on the wire (with chunk framing, before decoding).
    pub request_wire_len: u64,
    /// Response body bytes on the wire.
    pub response_wire_len: u64,
    /// Request and response both complete (no gap, cut, or missing response).
    pub complete: bool,
    /// Anomaly names of the exchange, `;`-separated.
    pub anomalies: Option<String>,
}

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

#[derive(Debug)]
struct Entry {
    row: HttpRow,
    anomalies: Vec<String>,
    request_complete: bool,
    response_done: bool,
    response_ok: bool,
}

/// Collects [`HttpEvent`]s into rows.
#[derive(Debug, Default)]
pub struct HttpLog {
    rows: Vec<Entry>,
    /// (connection id, depth) -> index in `rows`.
    index: HashMap<(u64, u32), usize>,
}

impl HttpLog {
    pub fn new() -> Self {
        Self::default()
    }

    fn entry(&mut self, xref: &ExchangeRef, ts: i64) -> Option<&mut Entry> {
        let key = (xref.conn.conn, xref.depth);
        let idx = match self.index.get(&key) {
            Some(&i) => i,
            None => {
                let i = self.rows.len();
                self.rows.push(Entry {
                    row: HttpRow {
                        ts,
                        tcp_stream: xref.conn.tcp_stream,
                        client_addr: xref.conn.client_addr.to_string(),
                        server_addr: xref.conn.server_addr.to_string(),
                        trans_depth: xref.depth,
                        method: None,
                        host: None,
                        uri: None,
                        version: None,
                        status_code: None,
                        request_body_len: 0,
                        response_body_len: 0,
                        request_wire_len: 0,
                        response_wire_len: 0,
                        complete: false,
                        anomalies: None,
                    },
                    anomalies: Vec::new(),
                    request_complete: true,
                    response_done: false,
                    response_ok: false,
                });
                self.index.insert(key, i);
                i
            }
        };
        self.rows.get_mut(idx)
    }

    /// Adds one event.
    pub fn push(&mut self, ev: &HttpEvent) {
        match ev {
            HttpEvent::Request(r) => {
                let Some(e) = self.entry(&r.xref, r.ts_first_us) else {
                    return;
                };
                e.row.ts = r.ts_first_us;
                e.row.method = Some(r.head.method.to_string());
                e.row.host = r.head.headers.get("host").map(str::to_string);
                e.row.uri = Some(super::redact::redact_target(&r.head.uri).into_owned());
                e.row.version = Some(r.head.version.to_string());
                e.row.request_body_len = r.body.len() as u64;
                e.row.request_wire_len = r.wire_len;
                e.request_complete = r.complete;
                add(&mut e.anomalies, &r.anomalies);
            }
            HttpEvent::ResponseHead {
                xref, ts_us, head, ..
            } => {
                let Some(e) = self.entry(xref, *ts_us) else {
                    return;
                };
                e.row.status_code = Some(head.status);
                if e.row.version.is_none() && e.row.method.is_none() {
                    e.row.version = Some(head.version.to_string());
                }
            }
            HttpEvent::ResponseBody { .. } => {}
            HttpEvent::ResponseEnd {
                xref,
                ts_us,
                end,
                wire_len,
                decoded_len,
                anomalies,
                ..
            } => {
                let Some(e) = self.entry(xref, *ts_us) else {
                    return;
                };
                e.row.response_body_len = *decoded_len;
                e.row.response_wire_len = *wire_len;
                e.response_done = true;
                let cut = anomalies
                    .iter()
                    .any(|a| a == "http.truncated_body" || a == "http.gap_in_body");
                e.response_ok = matches!(end, BodyEnd::Complete | BodyEnd::Fin) && !cut;
                add(&mut e.anomalies, anomalies);
            }
            HttpEvent::NoResponse {
                xref, ts_us, end, ..
            } => {
                let Some(e) = self.entry(xref, *ts_us) else {
                    return;
                };
                e.response_done = true;
                e.response_ok = false;
                add(
                    &mut e.anomalies,
                    &[format!("http.no_response_{}", end.name())],
                );
            }
        }
    }

    /// The rows, in order of request first byte (then stream, then depth).
    pub fn finish(self) -> Vec<HttpRow> {
        let mut rows: Vec<HttpRow> = self
            .rows
            .into_iter()
            .map(|mut e| {
                e.row.complete = e.request_complete && e.response_done && e.response_ok;
                e.row.anomalies = (!e.anomalies.is_empty()).then(|| e.anomalies.join(";"));
                e.row
            })
            .collect();
        rows.sort_by(|a, b| {
            (a.ts, a.tcp_stream, &a.client_addr, a.trans_depth).cmp(&(
                b.ts,
                b.tcp_stream,
                &b.client_addr,
                b.trans_depth,
            ))
        });
        rows
    }
}

fn add(into: &mut Vec<String>, names: &[String]) {
    for n in names {
        if !into.contains(n) {
            into.push(n.clone());
        }
    }
}

/// Column names, in output order.
const COLUMNS: [&str; 16] = [
    "ts",
    "tcp_stream",
    "client_addr",
    "server_addr",
    "trans_depth",
    "method",
    "host",
    "uri",
    "version",
    "status_code",
    "request_body_len",
    "response_body_len",
    "request_wire_len",
    "response_wire_len",
    "complete",
    "anomalies",
];

/// Cells of a row as text (`""` for unset), `ts` in RFC 3339.
fn cells(r: &HttpRow) -> [String; 16] {
    let opt = |o: &Option<String>| o.clone().unwrap_or_default();
    [
        format_rfc3339_us(r.ts),
        r.tcp_stream.map(|s| s.to_string()).unwrap_or_default(),
        r.client_addr.clone(),
        r.server_addr.clone(),
        r.trans_depth.to_string(),
        opt(&r.method),
        opt(&r.host),
        opt(&r.uri),
        opt(&r.version),
        r.status_code.map(|s| s.to_string()).unwrap_or_default(),
        r.request_body_len.to_string(),
        r.response_body_len.to_string(),
        r.request_wire_len.to_string(),
        r.response_wire_len.to_string(),
        r.complete.to_string(),
        opt(&r.anomalies),
    ]
}

fn serialize_ts<S: serde::Serializer>(ts_us: &i64, s: S) -> Result<S::Ok, S::Error> {
    s.serialize_str(&format_rfc3339_us(*ts_us))
}

/// Writes rows in `format`.
pub fn write_http_rows(
    rows: &[HttpRow],
    out: &mut dyn Write,
    format: HttpFormat,
) -> std::io::Result<()> {
    match format {
        HttpFormat::Csv => {
            write!(out, "{}\r\n", COLUMNS.join(","))?;
            for r in rows {
                let line: Vec<String> = cells(r).iter().map(|c| csv_field(c)).collect();
                write!(out, "{}\r\n", line.join(","))?;
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
                .map(|r| cells(r).iter().map(|c| table_cell(c, MAX_CELL)).collect())
                .collect();
            let mut widths: Vec<usize> = COLUMNS.iter().map(|c| c.len()).collect();
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
            writeln!(out, "{}", line(&mut COLUMNS.iter().copied()))?;
            for row in &table {
                writeln!(out, "{}", line(&mut row.iter().map(String::as_str)))?;
            }
        }
    }
    out.flush()
}

/// RFC 4180: quote a field holding a comma, quote, CR or LF; double quotes.
fn csv_field(s: &str) -> String {
    if s.contains([',', '"', '\r', '\n']) {
        format!("\"{}\"", s.replace('"', "\"\""))
    } else {
        s.to_string()
    }
}

/// Control characters shown as `\xHH`; long cells cut with `…`.
fn table_cell(s: &str, max: usize) -> String {
    let mut out = String::new();
    for ch in s.chars() {
        if ch.is_control() {
            out.push_str(&format!("\\x{:02x}", u32::from(ch)));
        } else {
            out.push(ch);
        }
    }
    if out.chars().count() > max {
        let cut: String = out.chars().take(max.saturating_sub(1)).collect();
        return format!("{cut}…");
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn row() -> HttpRow {
        HttpRow {
            ts: 1_700_000_000_123_456,
            tcp_stream: Some(3),
            client_addr: "10.0.0.1:5000".into(),
            server_addr: "[::1]:80".into(),
            trans_depth: 1,
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
            anomalies: None,
        }
    }

    #[test]
    fn rfc3339() {
        assert_eq!(format_rfc3339_us(0), "1970-01-01T00:00:00.000000Z");
        assert_eq!(
            format_rfc3339_us(1_700_000_000_123_456),
            "2023-11-14T22:13:20.123456Z"
        );
        assert_eq!(
            format_rfc3339_us(951_782_400_000_001),
            "2000-02-29T00:00:00.000001Z"
        );
        assert_eq!(format_rfc3339_us(-1), "1969-12-31T23:59:59.999999Z");
    }

    #[test]
    fn csv_quotes() {
        let mut out = Vec::new();
        write_http_rows(&[row()], &mut out, HttpFormat::Csv).unwrap();
        let text = String::from_utf8(out).unwrap();
        let mut lines = text.lines();
        assert_eq!(lines.next().unwrap(), COLUMNS.join(","));
        assert_eq!(
            lines.next().unwrap(),
            "2023-11-14T22:13:20.123456Z,3,10.0.0.1:5000,[::1]:80,1,POST,h,\"/a,\"\"b\"\"\",1.1,200,5,7,5,9,true,"
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
}
