//! What the MCP stage counts: its anomalies (its rows are counted by the report).

use crate::anomaly::Anomaly;
use crate::counters::{AnomalyCounts, counters};

counters! {
    /// The MCP stage's counters.
    pub struct McpCounters {
        pub anomalies: AnomalyCounts,
    }
}

impl McpCounters {
    pub fn anomaly(&mut self, key: Anomaly) {
        self.anomalies.add(key);
    }

    /// Counts one anomaly a row carries by name.
    pub fn anomaly_name(&mut self, name: &str) {
        self.anomalies.add_name(name, 1);
    }
}
