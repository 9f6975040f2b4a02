//! The sessions table (report-schema.md section 5): one row per `session_key`, aggregated
//! incrementally from exchanges in any order, so memory grows with sessions, not rows.

use super::row::{Cell, ColType, ColumnSpec, Table};
use crate::hashing::HashMap;
use crate::mcp::retry::Finding;
use crate::mcp::{Exchange, InferenceConfig, Kind, Outcome, RetryOrigin, StreamEnd, Transport};

/// One session.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct SessionRow {
    /// The analyzer's grouping key (section 4).
    pub session_key: String,
    /// `Mcp-Session-Id` or legacy session id (first one seen).
    pub session_id: Option<String>,
    /// Transport of the session's first exchange.
    pub transport: Transport,
    /// First protocol version seen.
    pub protocol_version: Option<String>,
    pub client_name: Option<String>,
    pub client_version: Option<String>,
    pub user_agent: Option<String>,
    /// Client address of the session's first exchange.
    pub client_addr: String,
    /// Server address of the session's first exchange.
    pub server_addr: String,
    /// Earliest `ts_request` (µs).
    pub first_ts: i64,
    /// Latest `ts_request` or `ts_response` (µs).
    pub last_ts: i64,
    /// Rows of kind `request` (JSON-RPC requests from the client).
    pub requests: u64,
    /// Rows per outcome, indexed like [`Outcome::ALL`].
    pub outcome_counts: [u64; Outcome::ALL.len()],
    /// Rows whose `retry_origin` is `sdk`.
    pub retries_sdk: u64,
    pub retries_application: u64,
    pub retries_manual: u64,
    /// Rows a gateway resent (section 4c).
    pub retries_gateway: u64,
    /// Rows per retry-hygiene finding, indexed like [`Finding::ALL`] (`n_unsafe_retry`, ...).
    pub finding_counts: [u64; Finding::ALL.len()],
    /// `delete`, `404`, `capture_end` or `idle`.
    pub ended_by: String,
    /// All rows of the session (extra column, after the contract's).
    pub exchanges: u64,
    /// Rows whose outcome is not a section 3 name (extra column): always 0, as outcomes are
    /// typed; kept so the table's columns stay stable.
    pub other_outcomes: u64,
    /// The lowest hop of the session's rows (section 4c): 1 for a client's session, 2 for a
    /// gateway's session towards a server.
    pub hop: u8,
}

impl SessionRow {
    /// Count of rows with `outcome`.
    pub fn count(&self, outcome: Outcome) -> u64 {
        self.outcome_counts
            .get(outcome.index())
            .copied()
            .unwrap_or(0)
    }
}

const fn col(name: &'static str, ty: ColType, nullable: bool) -> ColumnSpec {
    ColumnSpec { name, ty, nullable }
}

/// Sessions table columns, in contract order; the count columns follow [`Outcome::ALL`].
pub const SESSION_COLUMNS: &[ColumnSpec] = &[
    col("session_key", ColType::Str, false),
    col("session_id", ColType::Str, true),
    col("transport", ColType::Str, false),
    col("protocol_version", ColType::Str, true),
    col("client_name", ColType::Str, true),
    col("client_version", ColType::Str, true),
    col("user_agent", ColType::Str, true),
    col("client_addr", ColType::Str, false),
    col("server_addr", ColType::Str, false),
    col("first_ts", ColType::Timestamp, false),
    col("last_ts", ColType::Timestamp, false),
    col("requests", ColType::U64, false),
    col("n_cancelled", ColType::U64, false),
    col("n_no_response", ColType::U64, false),
    col("n_http_error", ColType::U64, false),
    col("n_accepted", ColType::U64, false),
    col("n_unexpected_response", ColType::U64, false),
    col("n_malformed_json", ColType::U64, false),
    col("n_invalid_envelope", ColType::U64, false),
    col("n_stream_incomplete", ColType::U64, false),
    col("n_jsonrpc_error", ColType::U64, false),
    col("n_input_required", ColType::U64, false),
    col("n_task_created", ColType::U64, false),
    col("n_invalid_tool_result", ColType::U64, false),
    col("n_tool_error", ColType::U64, false),
    col("n_tool_success", ColType::U64, false),
    col("n_rpc_success", ColType::U64, false),
    col("n_stream_open", ColType::U64, false),
    col("retries_sdk", ColType::U64, false),
    col("retries_application", ColType::U64, false),
    col("retries_manual", ColType::U64, false),
    col("retries_gateway", ColType::U64, false),
    col("n_unsafe_retry", ColType::U64, false),
    col("n_retry_after_ignored", ColType::U64, false),
    col("n_unchanged_after_invalid_params", ColType::U64, false),
    col("n_replay_after_invalid_response", ColType::U64, false),
    col("n_no_backoff", ColType::U64, false),
    col("n_too_many_attempts", ColType::U64, false),
    col("ended_by", ColType::Str, false),
    col("exchanges", ColType::U64, false),
    col("other_outcomes", ColType::U64, false),
    col("hop", ColType::U8, false),
];

impl Table for SessionRow {
    const COLUMNS: &'static [ColumnSpec] = SESSION_COLUMNS;

    fn cells(&self) -> Vec<Cell<'_>> {
        let opt = super::row::opt_str;
        let mut cells = vec![
            Cell::Str(&self.session_key),
            opt(&self.session_id),
            Cell::Str(self.transport.name()),
            opt(&self.protocol_version),
            opt(&self.client_name),
            opt(&self.client_version),
            opt(&self.user_agent),
            Cell::Str(&self.client_addr),
            Cell::Str(&self.server_addr),
            Cell::Timestamp(self.first_ts),
            Cell::Timestamp(self.last_ts),
            Cell::U64(self.requests),
        ];
        cells.extend(self.outcome_counts.iter().map(|&n| Cell::U64(n)));
        cells.extend([
            Cell::U64(self.retries_sdk),
            Cell::U64(self.retries_application),
            Cell::U64(self.retries_manual),
            Cell::U64(self.retries_gateway),
        ]);
        cells.extend(self.finding_counts.iter().map(|&n| Cell::U64(n)));
        cells.extend([
            Cell::Str(&self.ended_by),
            Cell::U64(self.exchanges),
            Cell::U64(self.other_outcomes),
            Cell::U8(self.hop),
        ]);
        cells
    }
}

/// How a session ended, as far as its own exchanges tell.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum End {
    /// The client sent DELETE (a `session_end` row).
    Delete,
    /// The server answered 404 to a request carrying the session id: expired or unknown
    /// (mcp-wire.md "404 with session id"), unless the body was -32601 "method not found".
    NotFound,
}

/// One session being aggregated, with the exchange id and time of its terminal event so
/// that out-of-order input still picks the earliest one.
#[derive(Debug, Default)]
struct Acc {
    row: SessionRow,
    first_id: u64,
    end: Option<(u64, End)>,
    open_stream: bool,
}

fn fill<S: AsRef<str>>(slot: &mut Option<String>, v: &Option<S>) {
    if slot.is_none() {
        *slot = v.as_ref().map(|s| s.as_ref().to_string());
    }
}

/// Builds the sessions table one exchange at a time.
#[derive(Debug, Default)]
pub struct SessionAggregator {
    sessions: HashMap<String, Acc>,
    /// Latest time seen in the whole capture: the capture's end.
    capture_end_us: Option<i64>,
}

impl SessionAggregator {
    /// Adds one exchange.
    pub fn push(&mut self, e: &Exchange) {
        let last = e.ts_response.map_or(e.ts_request, |r| r.max(e.ts_request));
        self.capture_end_us = Some(self.capture_end_us.map_or(last, |c| c.max(last)));
        let acc = self
            .sessions
            .entry(e.session_key.to_string())
            .or_insert_with(|| Acc {
                row: SessionRow {
                    session_key: e.session_key.to_string(),
                    first_ts: e.ts_request,
                    last_ts: last,
                    hop: e.hop.0,
                    ..SessionRow::default()
                },
                first_id: e.exchange_id,
                ..Acc::default()
            });
        let row = &mut acc.row;
        // Addresses and transport come from the session's first exchange by id (order of
        // first byte), whatever order rows arrive in.
        if e.exchange_id <= acc.first_id || row.client_addr.is_empty() {
            acc.first_id = e.exchange_id;
            row.transport = e.transport;
            e.client_addr.as_str().clone_into(&mut row.client_addr);
            e.server_addr.as_str().clone_into(&mut row.server_addr);
        }
        fill(&mut row.session_id, &e.session_id);
        fill(&mut row.protocol_version, &e.protocol_version);
        fill(&mut row.client_name, &e.client_name);
        fill(&mut row.client_version, &e.client_version);
        fill(&mut row.user_agent, &e.user_agent);
        row.first_ts = row.first_ts.min(e.ts_request);
        row.last_ts = row.last_ts.max(last);
        row.exchanges = row.exchanges.saturating_add(1);
        row.hop = row.hop.min(e.hop.0);
        if e.kind == Kind::Request {
            row.requests = row.requests.saturating_add(1);
        }
        if let Some(n) = row.outcome_counts.get_mut(e.outcome.index()) {
            *n = n.saturating_add(1);
        }
        let retries = match e.retry_origin {
            RetryOrigin::Sdk => Some(&mut row.retries_sdk),
            RetryOrigin::Application => Some(&mut row.retries_application),
            RetryOrigin::Manual => Some(&mut row.retries_manual),
            RetryOrigin::Gateway => Some(&mut row.retries_gateway),
            RetryOrigin::None => None,
        };
        if let Some(n) = retries {
            *n = n.saturating_add(1);
        }
        for f in e.retry_findings.iter() {
            if let Some(n) = row.finding_counts.get_mut(f.index()) {
                *n = n.saturating_add(1);
            }
        }
        let end = if e.kind == Kind::SessionEnd {
            Some(End::Delete)
        } else if e.http_status == Some(404)
            && e.session_id.is_some()
            && e.error_code != Some(-32601)
        {
            Some(End::NotFound)
        } else {
            None
        };
        if let Some(end) = end
            && acc.end.is_none_or(|(id, _)| e.exchange_id < id)
        {
            acc.end = Some((e.exchange_id, end));
        }
        if e.outcome == Outcome::StreamOpen
            || (e.kind == Kind::Stream && e.stream_end == StreamEnd::CaptureEnd)
        {
            acc.open_stream = true;
        }
    }

    /// The sessions, ordered by first request time then key. A session neither deleted nor
    /// 404'd ended at `capture_end` when it was active within `idle_gap_us` of the capture's
    /// last timestamp or still held an open stream, and by `idle` otherwise.
    pub fn finish_with_idle_gap(self, idle_gap_us: i64) -> Vec<SessionRow> {
        let capture_end = self.capture_end_us.unwrap_or(0);
        let mut rows: Vec<SessionRow> = self
            .sessions
            .into_values()
            .map(|mut acc| {
                acc.row.ended_by = match acc.end {
                    Some((_, End::Delete)) => "delete",
                    Some((_, End::NotFound)) => "404",
                    None if acc.open_stream
                        || capture_end.saturating_sub(acc.row.last_ts) <= idle_gap_us =>
                    {
                        "capture_end"
                    }
                    None => "idle",
                }
                .to_string();
                acc.row
            })
            .collect();
        rows.sort_by(|a, b| (a.first_ts, &a.session_key).cmp(&(b.first_ts, &b.session_key)));
        rows
    }

    /// [`SessionAggregator::finish_with_idle_gap`] with the default `--session-gap`.
    pub fn finish(self) -> Vec<SessionRow> {
        self.finish_with_idle_gap(default_idle_gap_us())
    }
}

fn default_idle_gap_us() -> i64 {
    InferenceConfig::default()
        .session_gap_ms
        .saturating_mul(1000)
}

/// The sessions of `rows` (default idle gap: `--session-gap`, 5 min).
pub fn sessions(rows: &[Exchange]) -> Vec<SessionRow> {
    sessions_with_idle_gap(rows, default_idle_gap_us())
}

/// The sessions of `rows`; a session silent for more than `idle_gap_us` before the capture's
/// end ended by `idle`.
pub fn sessions_with_idle_gap(rows: &[Exchange], idle_gap_us: i64) -> Vec<SessionRow> {
    let mut agg = SessionAggregator::default();
    for r in rows {
        agg.push(r);
    }
    agg.finish_with_idle_gap(idle_gap_us)
}

#[cfg(test)]
mod tests {
    use super::super::row::tests::assert_row_fits;
    use super::super::test_rows::ex;
    use super::*;

    const MIN_US: i64 = 60_000_000;

    #[test]
    fn finding_columns_follow_the_findings() {
        let at = SESSION_COLUMNS
            .iter()
            .position(|c| c.name == "retries_gateway")
            .unwrap();
        for (i, f) in Finding::ALL.iter().enumerate() {
            assert_eq!(SESSION_COLUMNS[at + 1 + i].name, format!("n_{}", f.name()));
        }
        let mut a = ex(1, 0);
        a.retry_findings = [Finding::UnsafeRetry, Finding::TooManyAttempts]
            .into_iter()
            .collect();
        let mut b = ex(2, 1);
        b.retry_findings = [Finding::UnsafeRetry].into_iter().collect();
        let s = sessions(&[a, b]);
        assert_eq!(s[0].finding_counts, [2, 0, 0, 0, 0, 1]);
        let cells = s[0].cells();
        assert_eq!(cells[at + 1], Cell::U64(2));
        assert_eq!(cells[at + 6], Cell::U64(1));
        assert_row_fits(&s[0]);
    }

    #[test]
    fn count_columns_follow_outcomes() {
        for (i, outcome) in Outcome::ALL.iter().enumerate() {
            let spec = SESSION_COLUMNS.get(12 + i).unwrap();
            assert_eq!(
                spec.name,
                format!("n_{}", outcome.name().to_ascii_lowercase())
            );
        }
        assert_eq!(SESSION_COLUMNS.get(28).unwrap().name, "retries_sdk");
    }

    fn scenario() -> Vec<Exchange> {
        // s1: initialize, a failed call, its sdk retry, an application retry, then DELETE.
        let mut init = ex(1, 0);
        init.rpc_method = Some("initialize".into());
        init.outcome = Outcome::RpcSuccess;
        init.client_name = Some("cli".into());
        init.protocol_version = Some("2025-06-18".into());
        init.ts_response = Some(5_000);
        let mut fail = ex(2, 10_000);
        fail.session_id = Some("abc".into());
        fail.outcome = Outcome::HttpError;
        fail.http_status = Some(503);
        let mut sdk = ex(3, 20_000);
        sdk.session_id = Some("abc".into());
        sdk.retry_of = Some(2);
        sdk.retry_origin = RetryOrigin::Sdk;
        sdk.attempt = 2;
        sdk.outcome = Outcome::ToolError;
        let mut app = ex(4, 30_000);
        app.retry_of = Some(3);
        app.retry_origin = RetryOrigin::Application;
        app.attempt = 3;
        let mut del = ex(5, 40_000);
        del.kind = Kind::SessionEnd;
        del.http_method = "DELETE".into();
        del.outcome = Outcome::RpcSuccess;
        del.ts_response = Some(41_000);
        // s2: one call answered 404 with the session id.
        let mut gone = ex(6, 50_000);
        gone.session_key = "s2".into();
        gone.session_id = Some("old".into());
        gone.http_status = Some(404);
        gone.outcome = Outcome::HttpError;
        gone.client_addr = "10.0.0.9:1".into();
        // s3: silent for 10 minutes before the capture ends.
        let mut quiet = ex(7, 60_000);
        quiet.session_key = "s3".into();
        // s4: active at the end.
        let mut late = ex(8, 60_000 + 10 * MIN_US);
        late.session_key = "s4".into();
        late.kind = Kind::Notification;
        late.outcome = Outcome::Accepted;
        vec![init, fail, sdk, app, del, gone, quiet, late]
    }

    #[test]
    fn aggregates_per_session() {
        let s = sessions(&scenario());
        let keys: Vec<&str> = s.iter().map(|r| r.session_key.as_str()).collect();
        assert_eq!(keys, ["s1", "s2", "s3", "s4"]);
        let s1 = &s[0];
        assert_eq!(s1.session_id.as_deref(), Some("abc"));
        assert_eq!(s1.client_name.as_deref(), Some("cli"));
        assert_eq!(s1.protocol_version.as_deref(), Some("2025-06-18"));
        assert_eq!((s1.first_ts, s1.last_ts), (0, 41_000));
        assert_eq!(s1.requests, 4);
        assert_eq!(s1.exchanges, 5);
        assert_eq!(s1.count(Outcome::RpcSuccess), 2);
        assert_eq!(s1.count(Outcome::HttpError), 1);
        assert_eq!(s1.count(Outcome::ToolError), 1);
        assert_eq!(s1.count(Outcome::ToolSuccess), 1);
        assert_eq!(s1.outcome_counts.iter().sum::<u64>(), 5);
        assert_eq!(
            (s1.retries_sdk, s1.retries_application, s1.retries_manual),
            (1, 1, 0)
        );
        assert_eq!(s1.ended_by, "delete");
        assert_eq!(s[1].ended_by, "404");
        assert_eq!(s[1].client_addr, "10.0.0.9:1");
        assert_eq!(s[2].ended_by, "idle");
        assert_eq!(s[3].ended_by, "capture_end");
        assert_eq!(s[3].requests, 0);
        for row in &s {
            assert_row_fits(row);
        }
    }

    #[test]
    fn order_of_rows_does_not_matter() {
        let mut rows = scenario();
        let forward = sessions(&rows);
        rows.reverse();
        assert_eq!(sessions(&rows), forward);
    }

    #[test]
    fn method_not_found_404_does_not_end_session() {
        let mut r = ex(1, 0);
        r.session_id = Some("abc".into());
        r.http_status = Some(404);
        r.error_code = Some(-32601);
        assert_eq!(sessions(&[r])[0].ended_by, "capture_end");
    }
}
