//! What the flow stage counts: streams, the fate of every captured payload byte, and the
//! stage's anomalies.

use crate::anomaly::{Anomaly, UnusedBytes};
use crate::contract::Counts;
use crate::counters::{AnomalyCounts, counters};

counters! {
    /// The flow stage's counters.
    pub struct FlowCounters {
        /// TCP streams (connections) seen, including port reuse.
        pub tcp_streams: u64,
        /// Captured TCP payload bytes of every segment given to the flow stage.
        pub tcp_payload_bytes_seen: u64,
        /// TCP payload bytes delivered in order to the next stage.
        pub tcp_payload_bytes: u64,
        /// Payload bytes seen more than once (retransmissions, overlaps) and dropped.
        pub duplicate_bytes: u64,
        /// Bytes of sequence space never seen (reported as gaps).
        pub gap_bytes: u64,
        /// ACKs that acknowledged new sequence space of their peer's direction (the
        /// capture-loss estimate's denominator).
        pub ack_events: u64,
        /// Those of them whose newly acknowledged space held bytes the capture never showed
        /// (Zeek's "ACKs above a gap"; the estimate's numerator).
        pub ack_gap_events: u64,
        /// Captured payload bytes that cannot be stream data, by reason.
        pub tcp_bytes_unused: Counts<UnusedBytes>,
        pub anomalies: AnomalyCounts,
    }
}

impl FlowCounters {
    pub fn anomaly(&mut self, key: Anomaly) {
        self.anomalies.add(key);
    }

    /// Counts `n` captured TCP payload bytes that cannot be stream data, for `reason`.
    pub fn unused_tcp_bytes(&mut self, reason: UnusedBytes, n: u64) {
        self.tcp_bytes_unused.add(reason, n);
    }
}
