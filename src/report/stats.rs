//! A run's totals: every stage's counters, summed over the threads by their derived
//! [`Merge`](crate::counters::Merge).

use crate::capture::CaptureCounters;
use crate::counters::counters;
use crate::flow::FlowCounters;
use crate::http::HttpCounters;
use crate::mcp::McpCounters;
use crate::tls::TlsCounters;
use std::collections::BTreeMap;

counters! {
    /// Counters of one run, by the stage that counted them.
    pub struct RunStats {
        pub capture: CaptureCounters,
        pub flow: FlowCounters,
        pub tls: TlsCounters,
        pub http: HttpCounters,
        pub mcp: McpCounters,
    }
}

impl RunStats {
    /// Every stage's anomalies, by name in name order.
    pub fn anomalies(&self) -> BTreeMap<&str, u64> {
        let mut all = BTreeMap::new();
        for stage in [
            &self.capture.anomalies,
            &self.flow.anomalies,
            &self.tls.anomalies,
            &self.http.anomalies,
            &self.mcp.anomalies,
        ] {
            for (name, n) in stage.by_name() {
                let count: &mut u64 = all.entry(name).or_default();
                *count = count.saturating_add(n);
            }
        }
        all
    }

    /// Sum of all skipped packets.
    pub fn packets_skipped_total(&self) -> u64 {
        self.capture.packets_skipped.total()
    }
}
