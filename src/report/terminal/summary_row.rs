//! What the terminal summary reads of a row. A run without `-o` keeps one of these per
//! selected row, moved out of the row as it is released, instead of the whole row: the
//! row's other parts are freed at once, so memory grows by a small record per row.

use super::paint::Call;
use crate::mcp::retry::{ChainMember, FindingSet};
use crate::mcp::{Exchange, Hop, Kind, Layer, Outcome, RetryOrigin};
use crate::report::hops::HopFacts;
use arcstr::ArcStr;

#[derive(Debug, Clone)]
pub struct SummaryRow {
    pub exchange_id: u64,
    pub session_key: ArcStr,
    pub kind: Kind,
    pub http_method: ArcStr,
    pub path: ArcStr,
    pub jsonrpc_id: Option<String>,
    pub rpc_method: Option<ArcStr>,
    pub tool_name: Option<ArcStr>,
    pub outcome: Outcome,
    pub layer: Layer,
    pub latency_ms: Option<f64>,
    pub attempt: u32,
    pub retry_of: Option<u64>,
    pub retry_origin: RetryOrigin,
    pub retry_evidence: Option<String>,
    pub retry_findings: FindingSet,
    pub hop: Hop,
    pub fault_hop: Option<u8>,
    /// The gateway of a call seen on several hops (section 4c).
    pub gateway: Option<ArcStr>,
    /// A gateway changed the failure's outcome on the way back.
    pub translated: bool,
    /// The time a gateway added to a hop-1 call (µs).
    pub gateway_added_us: Option<i64>,
}

impl From<Exchange> for SummaryRow {
    fn from(row: Exchange) -> SummaryRow {
        SummaryRow {
            exchange_id: row.exchange_id,
            session_key: row.session_key,
            kind: row.kind,
            http_method: row.http_method,
            path: row.path,
            jsonrpc_id: row.jsonrpc_id,
            rpc_method: row.rpc_method,
            tool_name: row.tool_name,
            outcome: row.outcome,
            layer: row.layer,
            latency_ms: row.latency_ms,
            attempt: row.attempt,
            retry_of: row.retry_of,
            retry_origin: row.retry_origin,
            retry_evidence: row.retry_evidence,
            retry_findings: row.retry_findings,
            hop: row.hop,
            fault_hop: row.fault_hop,
            gateway: row.inference.gateway,
            translated: row.inference.translated,
            gateway_added_us: row.inference.gateway_added_us,
        }
    }
}

impl SummaryRow {
    /// What the row asked for: `tools/call id=1 search`, `GET stream`, `DELETE`.
    pub fn describe(&self) -> String {
        Call {
            rpc_method: self.rpc_method.as_deref(),
            kind: self.kind,
            http_method: &self.http_method,
            path: &self.path,
            jsonrpc_id: self.jsonrpc_id.as_deref(),
            tool_name: self.tool_name.as_deref(),
        }
        .describe()
    }

    /// The row's part in the gateways' counts.
    pub fn hop_facts(&self) -> HopFacts<'_> {
        HopFacts {
            hop: self.hop,
            outcome: self.outcome,
            retry_origin: self.retry_origin,
            fault_hop: self.fault_hop,
            gateway: self.gateway.as_deref(),
            translated: self.translated,
            gateway_added_us: self.gateway_added_us,
        }
    }
}

impl ChainMember for SummaryRow {
    fn exchange_id(&self) -> u64 {
        self.exchange_id
    }

    fn retry_of(&self) -> Option<u64> {
        self.retry_of
    }

    fn kind(&self) -> Kind {
        self.kind
    }

    fn outcome(&self) -> Outcome {
        self.outcome
    }

    fn retry_origin(&self) -> RetryOrigin {
        self.retry_origin
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_kept_record_is_small() {
        // What a run without -o keeps per selected row (README's robustness section).
        let size = std::mem::size_of::<SummaryRow>();
        assert!(size <= 200, "{size} bytes");
    }
}
