//! What the TLS stage reports per connection: handshake facts, the one
//! `decryption` value of the contract, and where every byte went.

use super::cipher::suite_name;
use super::handshake::version_name;
pub use crate::stream::TlsBytes;

/// Handshake facts of a TLS connection (never a secret; the client random is public).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct TlsFacts {
    /// Negotiated version (`supported_versions` for TLS 1.3).
    pub version: Option<u16>,
    /// Chosen cipher suite.
    pub cipher_suite: Option<u16>,
    /// Server name from the ClientHello.
    pub sni: Option<String>,
    /// ALPN protocols the client offered.
    pub alpn_offered: Vec<String>,
    /// ALPN protocol the server chose (TLS 1.3: read from EncryptedExtensions once decrypted).
    pub alpn: Option<String>,
    /// Session resumed (TLS 1.2 session id or ticket; TLS 1.3 PSK).
    pub resumed: Option<bool>,
    /// The client random that keys the key log.
    pub client_random: Option<[u8; 32]>,
    /// The client offered 0-RTT early data.
    pub early_data_offered: bool,
}

impl TlsFacts {
    /// Version as the contract writes it (`TLS 1.3`).
    pub fn version_name(&self) -> Option<String> {
        self.version.map(version_name)
    }

    /// IANA name of the suite.
    pub fn cipher_name(&self) -> Option<String> {
        self.cipher_suite.map(suite_name)
    }

    /// The client random in hex (how key logs name a connection).
    pub fn client_random_hex(&self) -> Option<String> {
        self.client_random
            .map(|r| r.iter().map(|b| format!("{b:02x}")).collect())
    }
}

/// Why TLS bytes were not decrypted (keys of [`TlsBytes::undecrypted`]).
pub mod reason {
    /// No secret for the connection.
    pub const NO_KEY: &str = "no_key";
    /// 0-RTT data whose early secret was not logged.
    pub const NO_EARLY_KEY: &str = "no_early_key";
    /// The suite is not decrypted here.
    pub const UNSUPPORTED_CIPHER: &str = "unsupported_cipher";
    /// The handshake (ClientHello or ServerHello) is not in the capture.
    pub const HANDSHAKE_NOT_CAPTURED: &str = "handshake_not_captured";
    /// Records that failed authentication.
    pub const DECRYPT_FAILED: &str = "decrypt_failed";
    /// Parts of records cut by a TCP gap, and bytes skipped finding the next record.
    pub const CUT_BY_GAP: &str = "cut_by_gap";
    /// Bytes after a header no TLS peer sends, or after resynchronisation failed.
    pub const NOT_RECORDS: &str = "not_records";
    /// A partial record when the stream ended.
    pub const UNFINISHED: &str = "unfinished";
}
