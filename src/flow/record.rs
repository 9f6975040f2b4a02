//! One row of the connections table (report-schema.md section 5), built up stage by stage
//! as the connection's `Closed` event travels down the chain: the flow stage counts packets
//! and bytes, a TLS stage adds its handshake facts and `decryption`, the HTTP stage the HTTP
//! version and exchanges, the MCP stage its rows. Each stage fills only its own fields and
//! leaves the others as it found them, so the record lives here, in the first stage.

use super::CloseReason;
use arcstr::ArcStr;
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

/// What the stages know of one TCP connection when it closes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ConnectionRecord {
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
    /// Capture time of the first and the last packet, ns since the Unix epoch.
    pub first_ts_ns: i64,
    pub last_ts_ns: i64,
    /// Packets of the connection up to its close (not the ACKs after it).
    pub packets: u64,
    /// TCP payload delivered in order, per side.
    pub client_bytes: u64,
    pub server_bytes: u64,
    /// Sequence space never seen, both sides.
    pub gap_bytes: u64,
    pub ended_by: EndedBy,
    /// Filled by a TLS stage (all `None` without TLS).
    pub tls_version: Option<ArcStr>,
    /// IANA name of the suite.
    pub tls_cipher: Option<ArcStr>,
    pub tls_sni: Option<ArcStr>,
    /// The chosen ALPN protocol.
    pub alpn: Option<ArcStr>,
    pub tls_resumed: Option<bool>,
    /// The contract's `decryption` value: `plaintext` until a TLS stage says otherwise.
    pub decryption: &'static str,
    /// Filled by the HTTP stage: `HTTP/1.1`, ... (`None`: no HTTP seen).
    pub http_version: Option<&'static str>,
    /// HTTP requests read on the connection.
    pub http_exchanges: u64,
    /// Filled by the MCP stage: exchange rows of the connection (`None` without it).
    pub mcp_exchanges: Option<u64>,
}

impl ConnectionRecord {
    /// A record of the flow stage's facts, the later stages' fields empty.
    pub fn new(tcp_stream: u64, input: usize, client: SocketAddr, server: SocketAddr) -> Self {
        ConnectionRecord {
            tcp_stream,
            input,
            capture: ArcStr::new(),
            client,
            server,
            first_ts_ns: 0,
            last_ts_ns: 0,
            packets: 0,
            client_bytes: 0,
            server_bytes: 0,
            gap_bytes: 0,
            ended_by: EndedBy::Fin,
            tls_version: None,
            tls_cipher: None,
            tls_sni: None,
            alpn: None,
            tls_resumed: None,
            decryption: "plaintext",
            http_version: None,
            http_exchanges: 0,
            mcp_exchanges: None,
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
}
