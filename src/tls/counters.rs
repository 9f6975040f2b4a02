//! What the TLS stage counts: connections by `decryption`, the stream bytes of TLS
//! connections by what became of them, malformed key log lines, and the stage's anomalies.

use crate::anomaly::Anomaly;
use crate::counters::{AnomalyCounts, counters};
use std::collections::BTreeMap;

counters! {
    /// The TLS stage's counters.
    pub struct TlsCounters {
        /// TCP connections by the stage's `decryption` value (`plaintext` included).
        pub tls_connections: BTreeMap<&'static str, u64>,
        /// Stream bytes of TLS connections given to the stage.
        pub tls_bytes_received: u64,
        /// Of those, TLS protocol records (handshake, change cipher spec, alerts).
        pub tls_bytes_handshake: u64,
        /// Of those, application data records decrypted.
        pub tls_bytes_application: u64,
        /// Of those, bytes not decrypted, by reason.
        pub tls_bytes_undecrypted: BTreeMap<&'static str, u64>,
        /// Key log lines that are not `LABEL <hex> <hex>` (skipped).
        pub keylog_malformed_lines: u64,
        /// Where the first of them are, as `file:line` (never the line itself).
        pub keylog_malformed_at: Vec<String>,
        pub anomalies: AnomalyCounts,
    }
}

impl TlsCounters {
    pub fn anomaly(&mut self, key: Anomaly) {
        self.anomalies.add(key);
    }
}
