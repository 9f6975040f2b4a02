//! What the HTTP stage counts (and the HAR reader, which produces the same events):
//! message heads by what became of them, exchanges, skipped bytes, and the stage's anomalies.

use crate::anomaly::{Anomaly, HeadSkip};
use crate::contract::Counts;
use crate::counters::{AnomalyCounts, counters};

counters! {
    /// The HTTP stage's counters.
    pub struct HttpCounters {
        /// HTTP message heads the stage began to read (requests and responses, 1xx included).
        pub http_messages: u64,
        /// Heads parsed into a request or a response (some cut short, with an anomaly on the row).
        pub http_messages_parsed: u64,
        /// Heads begun but not usable, by reason.
        pub http_messages_skipped: Counts<HeadSkip>,
        /// HTTP request/response exchanges reconstructed.
        pub http_exchanges: u64,
        /// TCP streams whose payload was not HTTP.
        pub non_http_streams: u64,
        /// Bytes skipped while resynchronising.
        pub http_bytes_skipped: u64,
        pub anomalies: AnomalyCounts,
    }
}

impl HttpCounters {
    pub fn anomaly(&mut self, key: Anomaly) {
        self.anomalies.add(key);
    }

    /// Counts one anomaly a message carries by name (its list is counted when it ends).
    pub fn anomaly_name(&mut self, name: &str) {
        self.anomalies.add_name(name, 1);
    }

    /// Counts one HTTP message head begun but not usable, for `reason`.
    pub fn skip_http_message(&mut self, reason: HeadSkip) {
        self.http_messages_skipped.add(reason, 1);
    }
}
