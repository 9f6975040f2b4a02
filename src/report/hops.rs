//! What the reports say about gateways (report-schema.md sections 4c and 5): calls are the
//! hop-1 rows (`mcp_calls`), and per gateway (the server endpoint of hop-1 rows that have
//! copies) the calls it forwarded, the copies, its retries, where the failures arose, the
//! failures it translated and the time it added. Gathered one row at a time.

use crate::mcp::{Exchange, Hop, Outcome, RetryOrigin};
use serde_json::{Map, Value, json};
use std::collections::BTreeMap;

/// One gateway's counts.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct GatewayCounts {
    /// Hop-1 rows with copies.
    pub calls: u64,
    /// Rows of hop 2 and above of its calls.
    pub copies: u64,
    /// Copies it resent after an earlier copy failed.
    pub gateway_retries: u64,
    /// Failed calls whose failure arose at the gateway (`fault_hop` 1).
    pub faults_at_gateway: u64,
    /// Failed calls whose failure arose further up (`fault_hop` above 1).
    pub faults_upstream: u64,
    /// Failed calls whose outcome changed on the way back.
    pub translated: u64,
    /// Latency the gateway added per call (ms): the call's latency minus its last copy's.
    pub added_ms: Vec<f64>,
}

/// `mcp_calls` and `hops`, row by row.
#[derive(Debug, Clone, Default)]
pub struct HopTally {
    /// Hop-1 rows per outcome, indexed like [`Outcome::ALL`].
    pub calls: [u64; Outcome::ALL.len()],
    /// Per gateway endpoint.
    pub gateways: BTreeMap<String, GatewayCounts>,
    /// Rows of hop 2 and above.
    pub copies: u64,
    /// Keep each call's added latency (`added_ms`, for the terminal summary); the run
    /// summary's streamed counts do not, so they stay the size of the gateways list.
    keep_latency: bool,
}

/// What the counts read of a row.
#[derive(Debug, Clone, Copy)]
pub struct HopFacts<'a> {
    pub hop: Hop,
    pub outcome: Outcome,
    pub retry_origin: RetryOrigin,
    pub fault_hop: Option<u8>,
    pub gateway: Option<&'a str>,
    pub translated: bool,
    pub gateway_added_us: Option<i64>,
}

impl HopFacts<'_> {
    pub fn of(row: &Exchange) -> HopFacts<'_> {
        HopFacts {
            hop: row.hop,
            outcome: row.outcome,
            retry_origin: row.retry_origin,
            fault_hop: row.fault_hop,
            gateway: row.inference.gateway.as_deref(),
            translated: row.inference.translated,
            gateway_added_us: row.inference.gateway_added_us,
        }
    }
}

fn add(n: &mut u64) {
    *n = n.saturating_add(1);
}

impl HopTally {
    pub fn of<'r>(rows: impl IntoIterator<Item = &'r Exchange>) -> HopTally {
        Self::of_facts(rows.into_iter().map(HopFacts::of))
    }

    /// With each call's added latency kept, for the terminal summary.
    pub fn of_facts<'r>(rows: impl IntoIterator<Item = HopFacts<'r>>) -> HopTally {
        let mut t = HopTally {
            keep_latency: true,
            ..HopTally::default()
        };
        for r in rows {
            t.push_facts(&r);
        }
        t
    }

    pub fn push(&mut self, row: &Exchange) {
        self.push_facts(&HopFacts::of(row));
    }

    pub fn push_facts(&mut self, row: &HopFacts<'_>) {
        if row.hop.0 <= 1 {
            if let Some(n) = self.calls.get_mut(row.outcome.index()) {
                add(n);
            }
        } else {
            add(&mut self.copies);
        }
        let Some(gateway) = row.gateway else {
            return;
        };
        let g = match self.gateways.get_mut(gateway) {
            Some(g) => g,
            None => self.gateways.entry(gateway.to_string()).or_default(),
        };
        if row.hop.0 > 1 {
            add(&mut g.copies);
            if row.retry_origin == RetryOrigin::Gateway {
                add(&mut g.gateway_retries);
            }
            return;
        }
        add(&mut g.calls);
        match row.fault_hop {
            Some(1) => add(&mut g.faults_at_gateway),
            Some(_) => add(&mut g.faults_upstream),
            None => {}
        }
        if row.translated {
            add(&mut g.translated);
        }
        if let Some(us) = row.gateway_added_us.filter(|_| self.keep_latency) {
            g.added_ms.push(us as f64 / 1000.0);
        }
    }

    /// Whether any row was a copy: the capture shows calls on several hops.
    pub fn has_hops(&self) -> bool {
        self.copies > 0
    }

    /// `mcp_calls` (every outcome, 0 included) and `hops` for the run summary.
    pub fn fill(&self, m: &mut Map<String, Value>) {
        let calls: Map<String, Value> = Outcome::ALL
            .iter()
            .map(|o| {
                let n = self.calls.get(o.index()).copied().unwrap_or(0);
                (o.name().to_string(), json!(n))
            })
            .collect();
        m.insert("mcp_calls".into(), Value::Object(calls));
        let hops: Map<String, Value> = self
            .gateways
            .iter()
            .map(|(endpoint, g)| {
                (
                    endpoint.clone(),
                    json!({
                        "calls": g.calls,
                        "copies": g.copies,
                        "gateway_retries": g.gateway_retries,
                        "faults_at_gateway": g.faults_at_gateway,
                        "faults_upstream": g.faults_upstream,
                        "translated": g.translated,
                    }),
                )
            })
            .collect();
        m.insert("hops".into(), Value::Object(hops));
    }
}
