//! Row filters of `analyze` (`--outcome`, `--tool`, `--method`, `--session`, `--since`,
//! `--until`, `--only-failures`). They select the written rows only; pairing and retry
//! inference always see every exchange, so filtering never changes a row's values.

use crate::mcp::{Exchange, Outcome};

/// Which rows to keep. An empty list places no constraint; all constraints must hold.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct RowFilter {
    /// Keep these outcomes.
    pub outcomes: Vec<Outcome>,
    /// Keep rows whose `tool_name` is one of these.
    pub tools: Vec<String>,
    /// Keep rows whose `rpc_method` is one of these.
    pub methods: Vec<String>,
    /// Keep rows whose `session_key` or `session_id` is one of these.
    pub sessions: Vec<String>,
    /// Keep rows with `ts_request >= since_us` (inclusive).
    pub since_us: Option<i64>,
    /// Keep rows with `ts_request < until_us` (exclusive, so adjacent windows never overlap).
    pub until_us: Option<i64>,
    /// Keep only failures: outcomes other than `TOOL_SUCCESS`, `RPC_SUCCESS`, `ACCEPTED`,
    /// `STREAM_OPEN`.
    pub only_failures: bool,
}

impl RowFilter {
    /// Whether the filter keeps every row.
    pub fn is_empty(&self) -> bool {
        *self == RowFilter::default()
    }

    /// Whether `row` passes.
    pub fn matches(&self, row: &Exchange) -> bool {
        let in_list = |list: &[String], v: Option<&str>| {
            list.is_empty() || v.is_some_and(|v| list.iter().any(|x| x == v))
        };
        (self.outcomes.is_empty() || self.outcomes.contains(&row.outcome))
            && in_list(&self.tools, row.tool_name.as_deref())
            && in_list(&self.methods, row.rpc_method.as_deref())
            && (in_list(&self.sessions, Some(&row.session_key))
                || in_list(&self.sessions, row.session_id.as_deref()))
            && self.since_us.is_none_or(|t| row.ts_request >= t)
            && self.until_us.is_none_or(|t| row.ts_request < t)
            && (!self.only_failures || row.outcome.is_failure())
    }
}

/// The rows of `rows` that pass `f`, in their original order.
pub fn filter_rows<'a>(rows: &'a [Exchange], f: &RowFilter) -> Vec<&'a Exchange> {
    rows.iter().filter(|r| f.matches(r)).collect()
}

#[cfg(test)]
mod tests {
    use super::super::test_rows::ex;
    use super::*;
    use crate::mcp::Exchange;
    use crate::mcp::Kind;

    fn sample() -> Vec<Exchange> {
        let mut a = ex(1, 1_000);
        a.rpc_method = Some("tools/call".into());
        a.tool_name = Some("search".into());
        let mut b = ex(2, 2_000);
        b.rpc_method = Some("tools/call".into());
        b.tool_name = Some("fetch".into());
        b.outcome = Outcome::HttpError;
        b.session_key = "s2".into();
        b.session_id = Some("abc".into());
        let mut c = ex(3, 3_000);
        c.rpc_method = Some("tools/list".into());
        c.outcome = Outcome::RpcSuccess;
        let mut d = ex(4, 4_000);
        d.kind = Kind::Stream;
        d.outcome = Outcome::StreamOpen;
        vec![a, b, c, d]
    }

    fn ids(rows: &[Exchange], f: &RowFilter) -> Vec<u64> {
        filter_rows(rows, f).iter().map(|r| r.exchange_id).collect()
    }

    #[test]
    fn empty_filter_keeps_all() {
        let rows = sample();
        assert!(RowFilter::default().is_empty());
        assert_eq!(ids(&rows, &RowFilter::default()), vec![1, 2, 3, 4]);
    }

    #[test]
    fn each_constraint() {
        let rows = sample();
        let f = |g: fn(&mut RowFilter)| {
            let mut f = RowFilter::default();
            g(&mut f);
            ids(&rows, &f)
        };
        assert_eq!(f(|f| f.outcomes = vec![Outcome::HttpError]), vec![2]);
        assert_eq!(f(|f| f.tools = vec!["search".into(), "x".into()]), vec![1]);
        assert_eq!(f(|f| f.methods = vec!["tools/list".into()]), vec![3]);
        assert_eq!(f(|f| f.sessions = vec!["abc".into()]), vec![2]);
        assert_eq!(f(|f| f.sessions = vec!["s1".into()]), vec![1, 3, 4]);
        assert_eq!(f(|f| f.since_us = Some(2_000)), vec![2, 3, 4]);
        assert_eq!(f(|f| f.until_us = Some(3_000)), vec![1, 2]);
        assert_eq!(f(|f| f.only_failures = true), vec![2]);
    }

    #[test]
    fn constraints_combine() {
        let rows = sample();
        let f = RowFilter {
            methods: vec!["tools/call".into()],
            since_us: Some(1_500),
            ..RowFilter::default()
        };
        assert_eq!(ids(&rows, &f), vec![2]);
        let none = RowFilter {
            tools: vec!["search".into()],
            only_failures: true,
            ..RowFilter::default()
        };
        assert!(ids(&rows, &none).is_empty());
    }
}
