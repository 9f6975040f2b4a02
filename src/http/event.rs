//! What the HTTP stage hands on: [`HttpEvent`]s about exchanges, version-neutral (HTTP/1.x,
//! HTTP/2 and HAR entries alike).
//!
//! The vocabulary: a request whole; a response as its head, decoded body pieces in arrival
//! order and one end that says how the body ended ([`BodyEnd`]); or, for a request never
//! answered, [`HttpEvent::NoResponse`]. An exchange is (connection, 1-based number): with
//! HTTP/2 several are open on one connection at once, and the numbers still say which is
//! which.

use crate::stream::{ConnectionRecord, HttpVersion};
use arcstr::ArcStr;
use std::borrow::Cow;
use std::sync::Arc;

/// One connection (a TCP stream, or a HAR entry's connection).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ConnInfo {
    /// Unique id of the connection within the run.
    pub conn: u64,
    /// TCP stream index; `None` for HAR input without a connection id.
    pub tcp_stream: Option<u64>,
    /// `ip:port`, IPv6 as `[ip]:port`.
    pub client_addr: ArcStr,
    pub server_addr: ArcStr,
    /// File name of the input it came from.
    pub capture: ArcStr,
    /// `TLS 1.2`, `TLS 1.3` when the connection was decrypted TLS (`None`: plaintext).
    pub tls_version: Option<ArcStr>,
    /// Server name from the ClientHello of a decrypted TLS connection.
    pub tls_sni: Option<ArcStr>,
}

#[cfg(test)]
impl ConnInfo {
    /// A plaintext connection 10.0.0.1:1 -> 10.0.0.2:2, stream 1, for the stage tests.
    pub(crate) fn for_tests() -> ConnInfo {
        ConnInfo {
            conn: 1,
            tcp_stream: Some(1),
            client_addr: "10.0.0.1:1".into(),
            server_addr: "10.0.0.2:2".into(),
            capture: "t".into(),
            tls_version: None,
            tls_sni: None,
        }
    }
}

/// Header list in wire order; names compare case-insensitively. All names and values share
/// one text buffer (two allocations per head instead of two per field).
#[derive(Clone, Default, PartialEq, Eq)]
pub struct Headers {
    text: String,
    /// Byte ends of each field's name and value in `text` (each starts where the last ended).
    ends: Vec<(u32, u32)>,
}

impl Headers {
    /// Room for `fields` fields of `text_bytes` bytes of names and values in all.
    pub fn with_capacity(fields: usize, text_bytes: usize) -> Self {
        Headers {
            text: String::with_capacity(text_bytes),
            ends: Vec::with_capacity(fields),
        }
    }

    /// Appends a field. Past 4 GiB of header text (impossible under the head limit) fields
    /// are dropped rather than mis-indexed.
    pub fn push(&mut self, name: &str, value: &str) {
        let room = u32::MAX as usize;
        if self
            .text
            .len()
            .saturating_add(name.len())
            .saturating_add(value.len())
            > room
        {
            return;
        }
        self.text.push_str(name);
        let name_end = self.text.len() as u32;
        self.text.push_str(value);
        self.ends.push((name_end, self.text.len() as u32));
    }

    /// (name, value) in wire order.
    pub fn iter(&self) -> impl Iterator<Item = (&str, &str)> + '_ {
        let mut start = 0usize;
        self.ends.iter().map(move |&(name_end, value_end)| {
            let (n, v) = (name_end as usize, value_end as usize);
            let name = self.text.get(start..n).unwrap_or_default();
            let value = self.text.get(n..v).unwrap_or_default();
            start = v;
            (name, value)
        })
    }

    /// The fields as owned pairs.
    pub fn to_pairs(&self) -> Vec<(String, String)> {
        self.iter()
            .map(|(n, v)| (n.to_string(), v.to_string()))
            .collect()
    }

    /// First value of `name` (case-insensitive).
    pub fn get(&self, name: &str) -> Option<&str> {
        let bytes = self.text.as_bytes();
        let mut start = 0usize;
        for &(name_end, value_end) in &self.ends {
            let (n, v) = (name_end as usize, value_end as usize);
            // Lengths first: most fields are rejected without looking at their text.
            if n.saturating_sub(start) == name.len()
                && bytes
                    .get(start..n)
                    .is_some_and(|f| f.eq_ignore_ascii_case(name.as_bytes()))
            {
                return self.text.get(n..v);
            }
            start = v;
        }
        None
    }

    /// Every value of `name` (case-insensitive), in wire order.
    pub fn get_all<'a, 'n>(&'a self, name: &'n str) -> impl Iterator<Item = &'a str> + use<'a, 'n> {
        let bytes = self.text.as_bytes();
        let mut start = 0usize;
        self.ends.iter().filter_map(move |&(name_end, value_end)| {
            let (n, v) = (name_end as usize, value_end as usize);
            let field = start..n;
            start = v;
            // Lengths first: most fields are rejected without looking at their text.
            let named = field.len() == name.len()
                && bytes
                    .get(field)
                    .is_some_and(|f| f.eq_ignore_ascii_case(name.as_bytes()));
            if named { self.text.get(n..v) } else { None }
        })
    }

    /// Media type of `Content-Type` without parameters, lower-cased.
    pub fn media_type(&self) -> Option<Cow<'_, str>> {
        self.get("content-type").map(|v| {
            let media = v.split(';').next().unwrap_or_default().trim();
            // Nearly always lower case already: borrowed, not copied.
            if media.bytes().any(|b| b.is_ascii_uppercase()) {
                Cow::Owned(media.to_ascii_lowercase())
            } else {
                Cow::Borrowed(media)
            }
        })
    }
}

impl std::fmt::Debug for Headers {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_list().entries(self.iter()).finish()
    }
}

impl<N: AsRef<str>, V: AsRef<str>> FromIterator<(N, V)> for Headers {
    fn from_iter<I: IntoIterator<Item = (N, V)>>(fields: I) -> Self {
        let mut h = Headers::default();
        for (n, v) in fields {
            h.push(n.as_ref(), v.as_ref());
        }
        h
    }
}

impl From<Vec<(String, String)>> for Headers {
    fn from(fields: Vec<(String, String)>) -> Self {
        fields.into_iter().collect()
    }
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RequestHead {
    pub method: ArcStr,
    pub uri: ArcStr,
    /// `1.0` or `1.1`; `2` for HTTP/2 (and HAR entries recorded over it).
    pub version: Cow<'static, str>,
    pub headers: Headers,
}

/// A head's version as the `http_version` columns write it (`HTTP/1.1`, `HTTP/2`); `None`
/// for a version left blank (a HAR recorder's) or unknown.
pub fn http_version_name(version: &str) -> Option<&'static str> {
    HttpVersion::from_head(version).map(HttpVersion::as_str)
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ResponseHead {
    pub status: u16,
    pub reason: ArcStr,
    pub version: Cow<'static, str>,
    pub headers: Headers,
}

/// Identifies one exchange: the connection and its 1-based position on it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ExchangeRef {
    pub conn: Arc<ConnInfo>,
    /// 1-based position of the request on its connection (Zeek's `trans_depth`).
    pub depth: u32,
}

/// A complete request (head and decoded body).
#[derive(Debug, Clone)]
pub struct HttpRequest {
    pub xref: ExchangeRef,
    /// HTTP/2 stream id of the exchange (`None` for HTTP/1.x and HAR).
    pub h2_stream: Option<u32>,
    /// Time of the first and last byte, microseconds since the Unix epoch.
    pub ts_first_us: i64,
    pub ts_last_us: i64,
    /// Frame index of the first byte (0 for HAR).
    pub frame: u64,
    pub head: RequestHead,
    /// Decoded body (de-chunked, content-decoded).
    pub body: Vec<u8>,
    /// Body bytes on the wire, before decoding.
    pub wire_len: u64,
    /// False when a gap or the end of the stream cut the request.
    pub complete: bool,
    /// Anomaly names seen on this request.
    pub anomalies: Vec<String>,
}

/// How a response body ended; the `stream_end` column uses `name()`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum BodyEnd {
    /// Framing said the body was complete (or there was no body).
    Complete,
    /// The server closed (FIN) before the framing completed, or a close-delimited body.
    Fin,
    /// A TCP RST aborted the connection.
    Rst,
    /// The exchange's own stream was reset while the connection lives on (HTTP/2
    /// `RST_STREAM`). The contract's `stream_end` has one name for both resets: `rst`.
    /// HTTP/1.x never ends a body so.
    StreamReset,
    /// A gap in the TCP stream cut the body.
    Gap,
    /// The capture (or HAR record) ended with the body still open.
    CaptureEnd,
}

impl BodyEnd {
    pub fn name(self) -> &'static str {
        match self {
            BodyEnd::Complete => "complete",
            BodyEnd::Fin => "fin",
            BodyEnd::Rst | BodyEnd::StreamReset => "rst",
            BodyEnd::Gap => "gap",
            BodyEnd::CaptureEnd => "capture_end",
        }
    }
}

/// Output of the HTTP stage (and of the HAR reader).
#[derive(Debug, Clone)]
pub enum HttpEvent {
    Request(HttpRequest),
    /// Final (non-1xx) response head for the request at `xref`.
    ResponseHead {
        xref: ExchangeRef,
        ts_us: i64,
        frame: u64,
        head: ResponseHead,
    },
    /// Decoded body bytes, in order.
    ResponseBody {
        xref: ExchangeRef,
        ts_us: i64,
        data: Vec<u8>,
    },
    /// The response ended.
    ResponseEnd {
        xref: ExchangeRef,
        ts_us: i64,
        end: BodyEnd,
        /// Body bytes on the wire and after decoding.
        wire_len: u64,
        decoded_len: u64,
        anomalies: Vec<String>,
        /// The client closed its side (FIN or RST) before the body was
        /// complete: the client, not the server, gave up on the response
        /// (MCP 2026-07-28 reads that as cancellation). Always false when
        /// `end` is `Complete`. HAR: the recorder marked the entry aborted.
        client_closed: bool,
    },
    /// The request never got a response head (connection closed, reset, gap, capture end).
    NoResponse {
        xref: ExchangeRef,
        ts_us: i64,
        end: BodyEnd,
        /// The client closed its side (FIN or RST) before any response head
        /// arrived. HAR: the recorder marked the entry aborted.
        client_closed: bool,
    },
    /// A TCP connection closed, after every other event of it: its row of the connections
    /// table as far as the stages up to HTTP know it (HAR input sends none).
    ConnectionClosed(Box<ConnectionRecord>),
}

/// Adds `name` to an exchange's anomaly list once.
pub fn push_anomaly(anomalies: &mut Vec<String>, name: &str) {
    debug_assert!(
        crate::anomaly::is_registered(name),
        "anomaly `{name}` is not in ANOMALIES"
    );
    if !anomalies.iter().any(|a| a == name) {
        anomalies.push(name.to_string());
    }
}
