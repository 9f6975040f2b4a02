//! One row of the connections table (report-schema.md section 5), built up stage by stage
//! as the connection's `Closed` event travels down the chain: the flow stage counts packets
//! and bytes ([`FlowFacts`]), a TLS stage adds its handshake facts and `decryption`
//! ([`TlsSummary`]), the HTTP stage the HTTP version and exchanges ([`HttpFacts`]), the MCP
//! stage its rows ([`McpCounts`]). Each stage fills only its own part and leaves the others
//! as it found them.

use super::CloseReason;
use crate::timestamp::CaptureTime;
use arcstr::ArcStr;
use std::collections::BTreeMap;
use std::net::SocketAddr;

/// How a connection ended, as the `ended_by` column names it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum EndedBy {
    /// Both sides finished with FIN (or a new connection reused the 4-tuple after a FIN).
    #[default]
    Fin,
    /// A RST aborted it.
    Rst,
    /// Silent past the idle timeout, or evicted under the open-flow limit (the least
    /// recently active connection: idle the longest).
    Idle,
    /// Still open when the capture ended.
    CaptureEnd,
}

impl EndedBy {
    /// The flow stage's close reason, with whether a RST was seen.
    pub fn from_close(reason: CloseReason, rst: bool) -> EndedBy {
        match reason {
            CloseReason::Finished if rst => EndedBy::Rst,
            CloseReason::Finished => EndedBy::Fin,
            CloseReason::Idle | CloseReason::Evicted => EndedBy::Idle,
            CloseReason::CaptureEnd => EndedBy::CaptureEnd,
        }
    }

    /// The contract name.
    pub fn as_str(self) -> &'static str {
        match self {
            EndedBy::Fin => "fin",
            EndedBy::Rst => "rst",
            EndedBy::Idle => "idle",
            EndedBy::CaptureEnd => "capture_end",
        }
    }
}

/// The contract's `decryption` value of a connection (report-schema section 5).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Default)]
pub enum Decryption {
    /// Never TLS: the bytes passed through untouched.
    #[default]
    Plaintext,
    /// TLS, and its records were decrypted.
    Decrypted,
    /// TLS, no secret for its client random (nor its session) in any key log.
    NoKey,
    /// TLS with a suite this stage does not decrypt.
    UnsupportedCipher,
    /// TLS whose ClientHello or ServerHello is not in the capture.
    HandshakeNotCaptured,
    /// TLS with keys, but its records did not authenticate.
    DecryptFailed,
}

impl Decryption {
    /// Every value, in the contract's order.
    pub const ALL: [Decryption; 6] = [
        Decryption::Plaintext,
        Decryption::Decrypted,
        Decryption::NoKey,
        Decryption::UnsupportedCipher,
        Decryption::HandshakeNotCaptured,
        Decryption::DecryptFailed,
    ];

    /// The contract name.
    pub fn as_str(self) -> &'static str {
        match self {
            Decryption::Plaintext => "plaintext",
            Decryption::Decrypted => "decrypted",
            Decryption::NoKey => "no_key",
            Decryption::UnsupportedCipher => "unsupported_cipher",
            Decryption::HandshakeNotCaptured => "handshake_not_captured",
            Decryption::DecryptFailed => "decrypt_failed",
        }
    }
}

/// An HTTP version as the `http_version` columns write it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum HttpVersion {
    Http09,
    Http10,
    Http11,
    Http2,
    Http3,
}

impl HttpVersion {
    /// The version of a head as the HTTP stage keeps it (`1.1`, `2`); `None` for a version
    /// left blank (a HAR recorder's) or unknown.
    pub fn from_head(version: &str) -> Option<HttpVersion> {
        match version {
            "1.1" => Some(HttpVersion::Http11),
            "1.0" => Some(HttpVersion::Http10),
            "2" => Some(HttpVersion::Http2),
            "0.9" => Some(HttpVersion::Http09),
            "3" => Some(HttpVersion::Http3),
            _ => None,
        }
    }

    /// The contract name (`HTTP/1.1`).
    pub fn as_str(self) -> &'static str {
        match self {
            HttpVersion::Http09 => "HTTP/0.9",
            HttpVersion::Http10 => "HTTP/1.0",
            HttpVersion::Http11 => "HTTP/1.1",
            HttpVersion::Http2 => "HTTP/2",
            HttpVersion::Http3 => "HTTP/3",
        }
    }
}

/// What the stages know of one TCP connection when it closes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ConnectionRecord {
    pub flow: FlowFacts,
    pub tls: TlsSummary,
    pub http: HttpFacts,
    pub mcp: McpCounts,
}

/// The flow stage's part: the connection's packets and bytes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FlowFacts {
    /// The stream index (`tcp_stream`).
    pub tcp_stream: u64,
    /// Input (position in the input list) of the first packet.
    pub input: usize,
    /// File name of that input (filled by the HTTP stage, which knows the names).
    pub capture: ArcStr,
    /// The client and server as the flow stage saw them (the HTTP stage swaps them when the
    /// content says the other end is the client, as it does for the exchanges).
    pub client: SocketAddr,
    pub server: SocketAddr,
    /// Capture time of the first and the last packet.
    pub first_ts: CaptureTime,
    pub last_ts: CaptureTime,
    /// Packets of the connection up to its close (not the ACKs after it).
    pub packets: u64,
    /// TCP payload delivered in order, per side.
    pub client_bytes: u64,
    pub server_bytes: u64,
    /// Sequence space never seen, both sides.
    pub gap_bytes: u64,
    pub ended_by: EndedBy,
}

/// A TLS stage's part (all `None` and `plaintext` without TLS).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct TlsSummary {
    pub version: Option<ArcStr>,
    /// IANA name of the suite.
    pub cipher: Option<ArcStr>,
    pub sni: Option<ArcStr>,
    /// The chosen ALPN protocol.
    pub alpn: Option<ArcStr>,
    pub resumed: Option<bool>,
    /// `plaintext` until a TLS stage says otherwise.
    pub decryption: Decryption,
    /// ALPN protocols the client offered.
    pub alpn_offered: Vec<ArcStr>,
    /// The client random that keys the key log.
    pub client_random: Option<[u8; 32]>,
    /// The client offered 0-RTT early data.
    pub early_data_offered: bool,
    /// Where the connection's stream bytes went (zero without TLS).
    pub bytes: TlsBytes,
}

/// Where a TLS connection's stream bytes went. Identity, for a TLS connection:
/// `handshake + application + sum(undecrypted) = bytes received` (both directions' `Data`).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct TlsBytes {
    /// Stream bytes received from the flow stage.
    pub received: u64,
    /// Records of the TLS protocol itself: handshake, change cipher spec, alerts.
    pub handshake: u64,
    /// Application data records decrypted (their full wire size).
    pub application: u64,
    /// Bytes not decrypted, by reason (the TLS stage's `facts::reason` names).
    pub undecrypted: BTreeMap<&'static str, u64>,
    /// Plaintext bytes handed on (application data after decryption).
    pub plaintext_out: u64,
}

impl TlsBytes {
    /// Counts `n` undecrypted bytes for `why`.
    pub fn lose(&mut self, why: &'static str, n: usize) {
        if n > 0 {
            let slot = self.undecrypted.entry(why).or_default();
            *slot = slot.saturating_add(n as u64);
        }
    }

    /// Whether the identity holds.
    pub fn adds_up(&self) -> bool {
        let undecrypted: u64 = self.undecrypted.values().sum();
        self.handshake + self.application + undecrypted == self.received
    }
}

/// The HTTP stage's part.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct HttpFacts {
    /// The first version read on the connection (`None`: no HTTP seen).
    pub version: Option<HttpVersion>,
    /// HTTP requests read on the connection.
    pub exchanges: u64,
}

/// The MCP stage's part.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct McpCounts {
    /// Exchange rows of the connection (`None` without an MCP stage).
    pub exchanges: Option<u64>,
}

impl ConnectionRecord {
    /// A record of the flow stage's facts, the later stages' parts empty.
    pub fn new(tcp_stream: u64, input: usize, client: SocketAddr, server: SocketAddr) -> Self {
        ConnectionRecord {
            flow: FlowFacts {
                tcp_stream,
                input,
                capture: ArcStr::new(),
                client,
                server,
                first_ts: CaptureTime::default(),
                last_ts: CaptureTime::default(),
                packets: 0,
                client_bytes: 0,
                server_bytes: 0,
                gap_bytes: 0,
                ended_by: EndedBy::Fin,
            },
            tls: TlsSummary::default(),
            http: HttpFacts::default(),
            mcp: McpCounts::default(),
        }
    }
}

impl Default for ConnectionRecord {
    fn default() -> Self {
        let unspecified = SocketAddr::from(([0, 0, 0, 0], 0));
        ConnectionRecord::new(0, 0, unspecified, unspecified)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ended_by_names_a_reset_apart_from_a_fin() {
        assert_eq!(
            EndedBy::from_close(CloseReason::Finished, true),
            EndedBy::Rst
        );
        assert_eq!(
            EndedBy::from_close(CloseReason::Finished, false),
            EndedBy::Fin
        );
        assert_eq!(
            EndedBy::from_close(CloseReason::Evicted, false),
            EndedBy::Idle
        );
        assert_eq!(
            EndedBy::from_close(CloseReason::CaptureEnd, true).as_str(),
            "capture_end"
        );
    }

    #[test]
    fn http_versions_keep_their_contract_names() {
        for (head, name) in [
            ("1.1", "HTTP/1.1"),
            ("1.0", "HTTP/1.0"),
            ("2", "HTTP/2"),
            ("0.9", "HTTP/0.9"),
            ("3", "HTTP/3"),
        ] {
            assert_eq!(
                HttpVersion::from_head(head).map(HttpVersion::as_str),
                Some(name)
            );
        }
        assert_eq!(HttpVersion::from_head(""), None);
    }
}
