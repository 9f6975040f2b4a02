//! What the packet loop counts: every packet record read and what became of it (decoded,
//! or skipped by the decode step's reason), and the capture's anomalies.

use crate::anomaly::{Anomaly, SkipReason};
use crate::contract::Counts;
use crate::counters::{AnomalyCounts, counters};

counters! {
    /// The capture stage's counters (the decode step's verdicts among them).
    pub struct CaptureCounters {
        /// Every packet record read from every input.
        pub packets_total: u64,
        /// Packets decoded down to a TCP segment (or an IP fragment held for reassembly).
        pub packets_decoded: u64,
        /// Packets not used, by reason.
        pub packets_skipped: Counts<SkipReason>,
        /// Frames cut short by the snap length (still used as far as they go).
        pub packets_truncated: u64,
        pub anomalies: AnomalyCounts,
    }
}

impl CaptureCounters {
    /// Counts one packet skipped for `reason`.
    pub fn skip(&mut self, reason: SkipReason) {
        self.packets_skipped.add(reason, 1);
    }

    pub fn anomaly(&mut self, key: Anomaly) {
        self.anomalies.add(key);
    }
}
