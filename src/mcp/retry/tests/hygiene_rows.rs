//! Retry hygiene (report-schema.md section 4b) on hand-made rows: `call(ts_ms, id)` is a
//! `tools/call` of `send` from one client in session `S` that succeeded 100 ms later; the
//! builder methods change one fact each; `run` numbers the rows 1..n and infers.

use crate::http::retry_after::{RetryAfter, parse};
use crate::mcp::retry::*;
use crate::rpc::text_fingerprint;

const EP: &str = "10.0.0.1:3000/mcp";
const ARGS: &str = r#"{"arguments":{"to":"a@b"},"name":"send"}"#;

fn call(ts_ms: i64, id: &str) -> Exchange {
    let mut e = Exchange {
        ts_request: ts_ms * 1000,
        ts_response: Some((ts_ms + 100) * 1000),
        client_addr: "10.0.0.5:40000".into(),
        server_addr: "10.0.0.1:3000".into(),
        session_key: "S".into(),
        session_id: Some("S".into()),
        user_agent: Some("node".into()),
        kind: Kind::Request,
        http_status: Some(200),
        jsonrpc_id: Some(id.to_string()),
        rpc_method: Some("tools/call".into()),
        tool_name: Some("send".into()),
        outcome: Outcome::ToolSuccess,
        retry_findings: Finding::ALL.into_iter().collect(),
        ..Default::default()
    };
    e.inference.endpoint = EP.into();
    e.inference.params_fingerprint = Some(text_fingerprint(ARGS));
    e.inference.body_fingerprint = Some(text_fingerprint(&format!("{id}{ARGS}")));
    e
}

/// A `tools/list` answered at `done_ms` listing `tools` on `endpoint`.
fn listing(ts_ms: i64, done_ms: i64, endpoint: &str, tools: &[(&str, ToolHints)]) -> Exchange {
    let mut e = call(ts_ms, "90");
    e.rpc_method = Some("tools/list".into());
    e.tool_name = None;
    e.outcome = Outcome::RpcSuccess;
    e.ts_response = Some(done_ms * 1000);
    e.inference.endpoint = endpoint.into();
    e.inference.params_fingerprint = None;
    e.inference.tools_page = Some(Box::new(ToolsPage::of(tools.iter().copied())));
    e
}

trait Make: Sized {
    fn ended(self, outcome: &'static str, status: u16) -> Self;
    fn error(self, code: i64) -> Self;
    fn never_ended(self) -> Self;
    fn wait(self, ra: Option<RetryAfter>) -> Self;
    fn endpoint(self, ep: &str) -> Self;
}

impl Make for Exchange {
    fn ended(mut self, outcome: &'static str, status: u16) -> Self {
        self.outcome = Outcome::from_name(outcome).unwrap();
        self.http_status = Some(status);
        self
    }
    fn error(mut self, code: i64) -> Self {
        self.outcome = Outcome::JsonrpcError;
        self.error_code = Some(code);
        self
    }
    fn never_ended(mut self) -> Self {
        self.outcome = Outcome::NoResponse;
        self.http_status = None;
        self.ts_response = None;
        self
    }
    fn wait(mut self, ra: Option<RetryAfter>) -> Self {
        self.inference.retry_after = ra;
        self
    }
    fn endpoint(mut self, ep: &str) -> Self {
        self.inference.endpoint = ep.into();
        self.server_addr = ep.split('/').next().unwrap_or_default().into();
        self
    }
}

fn run_with(mut rows: Vec<Exchange>, cfg: &InferenceConfig) -> Vec<Exchange> {
    for (i, r) in rows.iter_mut().enumerate() {
        r.exchange_id = i as u64 + 1;
    }
    infer_retries(&mut rows, cfg);
    rows
}

fn run(rows: Vec<Exchange>) -> Vec<Exchange> {
    run_with(rows, &InferenceConfig::default())
}

fn findings(rows: &[Exchange], id: u64) -> Option<&str> {
    rows[id as usize - 1].retry_findings.text()
}

fn evidence(rows: &[Exchange], id: u64) -> &str {
    rows[id as usize - 1]
        .retry_evidence
        .as_deref()
        .unwrap_or_default()
}

const READ_ONLY: ToolHints = ToolHints {
    read_only: Some(true),
    idempotent: None,
    destructive: None,
};
const IDEMPOTENT: ToolHints = ToolHints {
    read_only: Some(false),
    idempotent: Some(true),
    destructive: Some(true),
};
const UNANNOTATED: ToolHints = ToolHints {
    read_only: None,
    idempotent: None,
    destructive: None,
};

// ---- unsafe_retry ---------------------------------------------------------------------------

#[test]
fn an_unlisted_tool_retried_after_a_503_is_unsafe() {
    let rows = run(vec![call(0, "1").ended("HTTP_ERROR", 503), call(500, "2")]);
    assert_eq!(rows[1].retry_origin.name(), "application");
    assert_eq!(findings(&rows, 2), Some("unsafe_retry"));
    assert_eq!(
        evidence(&rows, 2),
        "rule 3 new id 400ms after #1 ended with HTTP_ERROR (503), same session; unsafe_retry: tool send not declared safe (no tools/list of this endpoint seen before this attempt) and #1 ended HTTP_ERROR (503), which may have run it"
    );
    assert_eq!(findings(&rows, 1), None, "first calls are never judged");
}

#[test]
fn a_tool_declared_read_only_or_idempotent_is_safe_to_retry() {
    for hints in [READ_ONLY, IDEMPOTENT] {
        let rows = run(vec![
            listing(0, 10, EP, &[("send", hints)]),
            call(100, "1").ended("HTTP_ERROR", 503),
            call(600, "2"),
        ]);
        assert_eq!(rows[2].retry_of, Some(2));
        assert_eq!(findings(&rows, 3), None, "{hints:?}");
    }
}

#[test]
fn a_listed_tool_without_safe_hints_is_unsafe_and_the_evidence_names_the_listing() {
    let destructive_false = ToolHints {
        destructive: Some(false),
        ..UNANNOTATED
    };
    let rows = run(vec![
        listing(
            0,
            10,
            EP,
            &[("send", destructive_false), ("get", READ_ONLY)],
        ),
        call(100, "1").never_ended(),
        call(5_000, "2"),
    ]);
    assert_eq!(findings(&rows, 3), Some("unsafe_retry"));
    assert!(
        evidence(&rows, 3).contains(
            "unsafe_retry: tool send not declared safe (tools/list #1 gave readOnlyHint false (default), idempotentHint false (default), destructiveHint false) and #2 ended NO_RESPONSE"
        ),
        "{}",
        evidence(&rows, 3)
    );
}

#[test]
fn a_tool_listed_only_after_the_retry_started_is_not_declared_safe() {
    // The tools/list was sent first (smaller id) but answered after the retry started.
    let rows = run(vec![
        call(0, "1").ended("HTTP_ERROR", 502),
        listing(50, 1_000, EP, &[("send", READ_ONLY)]),
        call(500, "2"),
        call(1_500, "3").ended("HTTP_ERROR", 504),
        call(2_000, "4"),
    ]);
    assert_eq!(rows[2].retry_of, Some(1));
    assert_eq!(findings(&rows, 3), Some("unsafe_retry"));
    // Once the listing is complete, later retries see it.
    assert_eq!(rows[4].retry_of, Some(4));
    assert_eq!(findings(&rows, 5), None);
}

#[test]
fn two_servers_with_a_tool_of_the_same_name_are_judged_by_their_own_listing() {
    let other = "10.0.0.2:3000/mcp";
    let rows = run(vec![
        listing(0, 10, EP, &[("send", READ_ONLY)]),
        listing(1, 11, other, &[("send", UNANNOTATED)]),
        call(100, "1").ended("HTTP_ERROR", 500),
        call(110, "1").ended("HTTP_ERROR", 500).endpoint(other),
        call(600, "2"),
        call(610, "2").endpoint(other),
    ]);
    assert_eq!(rows[4].retry_of, Some(3));
    assert_eq!(rows[5].retry_of, Some(4));
    assert_eq!(findings(&rows, 5), None);
    assert_eq!(findings(&rows, 6), Some("unsafe_retry"));
    assert!(evidence(&rows, 6).contains("tools/list #2 gave"));
}

#[test]
fn a_later_listing_replaces_the_earlier_and_a_tool_missing_from_it_is_unsafe() {
    let rows = run(vec![
        listing(0, 10, EP, &[("send", READ_ONLY)]),
        listing(20, 30, EP, &[("other", READ_ONLY)]),
        call(100, "1").ended("STREAM_INCOMPLETE", 200),
        call(600, "2"),
    ]);
    assert_eq!(findings(&rows, 4), Some("unsafe_retry"));
    assert!(
        evidence(&rows, 4).contains("not in the latest tools/list of this endpoint (#2)"),
        "{}",
        evidence(&rows, 4)
    );
}

#[test]
fn only_uncertain_endings_make_a_retry_unsafe() {
    for (outcome, status, unsafe_) in [
        ("NO_RESPONSE", 0, true),
        ("STREAM_INCOMPLETE", 200, true),
        ("CANCELLED", 200, true),
        ("HTTP_ERROR", 500, true),
        ("HTTP_ERROR", 502, true),
        ("HTTP_ERROR", 503, true),
        ("HTTP_ERROR", 504, true),
        ("HTTP_ERROR", 400, false),
        ("HTTP_ERROR", 429, false),
        ("HTTP_ERROR", 501, false),
        ("TOOL_ERROR", 200, false),
        ("JSONRPC_ERROR", 200, false),
    ] {
        let first = call(0, "1").ended(outcome, status);
        let rows = run(vec![first, call(500, "2")]);
        assert_eq!(rows[1].retry_of, Some(1), "{outcome} {status}");
        let got = findings(&rows, 2).is_some_and(|f| f.contains("unsafe_retry"));
        assert_eq!(got, unsafe_, "{outcome} {status}");
    }
}

#[test]
fn only_tool_calls_can_be_unsafe() {
    let mut first = call(0, "1").ended("HTTP_ERROR", 503);
    let mut again = call(500, "2");
    for r in [&mut first, &mut again] {
        r.rpc_method = Some("resources/read".into());
        r.tool_name = None;
    }
    let rows = run(vec![first, again]);
    assert_eq!(rows[1].retry_of, Some(1));
    assert_eq!(findings(&rows, 2), None);
}

// ---- retry_after_ignored --------------------------------------------------------------------

#[test]
fn a_retry_before_retry_after_seconds_elapsed_ignored_it() {
    // The 503's head came at 100 ms and asked for 2 s.
    let asked = parse("2", None, 100_000);
    let early = run(vec![
        listing(0, 1, EP, &[("send", IDEMPOTENT)]),
        call(0, "1").ended("HTTP_ERROR", 503).wait(asked),
        call(1_100, "2"),
    ]);
    assert_eq!(findings(&early, 3), Some("retry_after_ignored"));
    assert!(
        evidence(&early, 3).ends_with(
            "; retry_after_ignored: HTTP 503 of #2 asked Retry-After 2000ms, sent 1000ms after that response"
        ),
        "{}",
        evidence(&early, 3)
    );
    // Honoured: sent after the wait.
    let honoured = run(vec![
        listing(0, 1, EP, &[("send", IDEMPOTENT)]),
        call(0, "1").ended("HTTP_ERROR", 503).wait(asked),
        call(2_100, "2"),
    ]);
    assert_eq!(honoured[2].retry_of, Some(2));
    assert_eq!(findings(&honoured, 3), None);
}

#[test]
fn retry_after_as_a_date_counts_from_the_date_header() {
    // Server clock: Date 08:49:37, Retry-After 08:49:42 -> 5 s from the head at 100 ms.
    let asked = parse(
        "Sun, 06 Nov 1994 08:49:42 GMT",
        crate::http::retry_after::parse_http_date("Sun, 06 Nov 1994 08:49:37 GMT"),
        100_000,
    );
    assert_eq!(asked.map(|a| a.delay_ms), Some(5_000));
    let rows = run(vec![
        call(0, "1").ended("HTTP_ERROR", 429).wait(asked),
        call(3_000, "2"),
        call(9_000, "3").ended("HTTP_ERROR", 429).wait(parse(
            "Sun, 06 Nov 1994 08:49:42 GMT",
            crate::http::retry_after::parse_http_date("Sun, 06 Nov 1994 08:49:37 GMT"),
            9_100_000,
        )),
        call(14_200, "4"),
    ]);
    assert_eq!(findings(&rows, 2), Some("retry_after_ignored"));
    assert!(evidence(&rows, 2).contains("Retry-After 5000ms (HTTP-date), sent 2900ms"));
    assert_eq!(rows[3].retry_of, Some(3));
    assert_eq!(findings(&rows, 4), None);
}

#[test]
fn retry_after_counts_only_on_429_and_503() {
    let asked = parse("60", None, 100_000);
    let rows = run(vec![
        call(0, "1").ended("HTTP_ERROR", 400).wait(asked),
        call(500, "2"),
    ]);
    assert_eq!(rows[1].retry_of, Some(1));
    assert_eq!(findings(&rows, 2), None);
}

// ---- unchanged_after_invalid_params, replay_after_invalid_response --------------------------

#[test]
fn the_same_params_after_invalid_params_is_unchanged() {
    // -32602 on a 2xx, and on an HTTP 400 (2026-07-28).
    let on_200 = run(vec![call(0, "1").error(-32602), call(300, "2")]);
    assert_eq!(findings(&on_200, 2), Some("unchanged_after_invalid_params"));
    assert!(evidence(&on_200, 2).contains(
        "unchanged_after_invalid_params: #1 answered -32602 (invalid params), params equivalent"
    ));
    let on_400 = run(vec![
        call(0, "1").error(-32602).ended("HTTP_ERROR", 400),
        call(300, "2"),
    ]);
    assert_eq!(findings(&on_400, 2), Some("unchanged_after_invalid_params"));
    // Another error code is not invalid params.
    let other = run(vec![call(0, "1").error(-32603), call(300, "2")]);
    assert_eq!(other[1].retry_of, Some(1));
    assert_eq!(findings(&other, 2), None);
    // Changed params are no repeat at all.
    let mut fixed = call(300, "2");
    fixed.inference.params_fingerprint = Some(text_fingerprint(r#"{"name":"send","x":1}"#));
    let changed = run(vec![call(0, "1").error(-32602), fixed]);
    assert_eq!(changed[1].retry_of, None);
    assert_eq!(findings(&changed, 2), None);
}

#[test]
fn replaying_after_an_invalid_response_is_a_finding() {
    for outcome in ["MALFORMED_JSON", "INVALID_ENVELOPE", "INVALID_TOOL_RESULT"] {
        let rows = run(vec![call(0, "1").ended(outcome, 200), call(300, "2")]);
        assert_eq!(
            findings(&rows, 2),
            Some("replay_after_invalid_response"),
            "{outcome}"
        );
        assert!(evidence(&rows, 2).contains(&format!(
            "replay_after_invalid_response: #1 ended {outcome}, params equivalent"
        )));
    }
}

// ---- no_backoff, too_many_attempts ----------------------------------------------------------

/// Attempts of a read-only tool that fail with HTTP 400 (no other finding), sent at `at_ms`;
/// each ends 10 ms after it started.
fn attempts(at_ms: &[i64]) -> Vec<Exchange> {
    let mut rows = vec![listing(0, 1, EP, &[("send", READ_ONLY)])];
    for (n, &t) in at_ms.iter().enumerate() {
        let mut r = call(t, &(n + 1).to_string()).ended("HTTP_ERROR", 400);
        r.ts_response = Some((t + 10) * 1000);
        rows.push(r);
    }
    rows
}

#[test]
fn a_gap_that_does_not_grow_is_no_backoff() {
    // Gaps 100 ms then 100 ms: attempt 3 did not back off.
    let rows = run(attempts(&[10, 120, 230]));
    assert_eq!(
        rows.iter().map(|r| r.attempt).collect::<Vec<_>>(),
        [1, 1, 2, 3]
    );
    assert_eq!(findings(&rows, 3), None, "attempt 2 has no previous gap");
    assert_eq!(findings(&rows, 4), Some("no_backoff"));
    assert!(
        evidence(&rows, 4)
            .ends_with("; no_backoff: gap 100ms after #3 vs 100ms before it (under 1.5x)"),
        "{}",
        evidence(&rows, 4)
    );
    // Exponential backoff (100 ms, then 300 ms) is fine; exactly 1.5x is enough.
    let backoff = run(attempts(&[10, 120, 430]));
    assert_eq!(findings(&backoff, 4), None);
    let exact = run(attempts(&[10, 120, 280]));
    assert_eq!(findings(&exact, 4), None);
}

#[test]
fn two_tiny_gaps_are_no_backoff_whatever_their_ratio() {
    // Gaps 5 ms and 20 ms: 4x, but both under the 50 ms floor.
    let rows = run(attempts(&[10, 25, 55]));
    assert_eq!(findings(&rows, 4), Some("no_backoff"));
    assert!(evidence(&rows, 4).contains("(both under 50ms)"));
    // The floor and factor are options.
    let cfg = InferenceConfig {
        backoff_floor_ms: 1,
        ..InferenceConfig::default()
    };
    assert_eq!(findings(&run_with(attempts(&[10, 25, 55]), &cfg), 4), None);
    let cfg = InferenceConfig {
        backoff_factor: 5.0,
        ..InferenceConfig::default()
    };
    let rows = run_with(attempts(&[10, 120, 430]), &cfg);
    assert_eq!(findings(&rows, 4), Some("no_backoff"));
    assert!(evidence(&rows, 4).contains("(under 5x)"));
}

#[test]
fn an_attempt_that_never_ended_counts_its_gap_from_its_start() {
    let mut rows = attempts(&[10, 120, 0]);
    // Attempt 2 never ended: attempt 3's gap runs from its start (120 ms) -> 1000 ms.
    rows[2] = rows[2].clone().never_ended();
    rows[3] = call(1_120, "3").ended("HTTP_ERROR", 400);
    let rows = run(rows);
    assert_eq!(rows[3].attempt, 3);
    // Gap before: 120 - 20 = 100 ms; gap now 1000 ms (from the start): a backoff.
    assert_eq!(findings(&rows, 4), None);
    let mut rows = attempts(&[10, 120, 0]);
    rows[2] = rows[2].clone().never_ended();
    rows[3] = call(150, "3").ended("HTTP_ERROR", 400);
    let rows = run(rows);
    assert_eq!(findings(&rows, 4), Some("no_backoff"));
    assert!(evidence(&rows, 4).contains("gap 30ms after #3 vs 100ms before it"));
}

#[test]
fn attempts_beyond_max_attempts_are_too_many() {
    let at = [10, 120, 430, 1_500, 5_000];
    let rows = run(attempts(&at));
    let got: Vec<Option<&str>> = (2..=6).map(|id| findings(&rows, id)).collect();
    assert_eq!(
        got,
        [
            None,
            None,
            None,
            Some("too_many_attempts"),
            Some("too_many_attempts")
        ]
    );
    assert!(evidence(&rows, 5).ends_with("; too_many_attempts: attempt 4 of at most 3"));
    let cfg = InferenceConfig {
        max_attempts: 5,
        ..InferenceConfig::default()
    };
    let rows = run_with(attempts(&at), &cfg);
    assert!((2..=6).all(|id| findings(&rows, id).is_none()));
    let cfg = InferenceConfig {
        max_attempts: 1,
        ..InferenceConfig::default()
    };
    let rows = run_with(attempts(&at), &cfg);
    assert_eq!(findings(&rows, 3), Some("too_many_attempts"));
}

// ---- together, and never ---------------------------------------------------------------------

#[test]
fn findings_come_in_contract_order_with_their_evidence_in_the_same_order() {
    let asked = parse("30", None, 100_000);
    let rows = run(vec![
        call(0, "1").ended("HTTP_ERROR", 503),
        call(200, "2").ended("HTTP_ERROR", 503),
        call(400, "3").ended("HTTP_ERROR", 503).wait(asked),
        call(500, "4"),
    ]);
    assert_eq!(rows[3].attempt, 4);
    assert_eq!(
        findings(&rows, 4),
        Some("unsafe_retry;retry_after_ignored;no_backoff;too_many_attempts")
    );
    let ev = evidence(&rows, 4);
    let positions: Vec<usize> = [
        "; unsafe_retry:",
        "; retry_after_ignored:",
        "; no_backoff:",
        "; too_many_attempts:",
    ]
    .iter()
    .map(|n| ev.find(n).unwrap_or_else(|| panic!("{n} in {ev}")))
    .collect();
    assert!(positions.windows(2).all(|w| w[0] < w[1]), "{ev}");
}

#[test]
fn continuations_and_stream_resumptions_are_never_findings() {
    // Rule 1: an MRTR follow-up of an input_required call, however often.
    let mut rows = vec![call(0, "1").ended("INPUT_REQUIRED", 200)];
    rows[0].outcome = Outcome::InputRequired;
    let mut follow = call(100, "2");
    follow.inference.has_mrtr_fields = true;
    rows.push(follow);
    let rows = run(rows);
    assert_eq!(rows[1].continuation_of, Some(1));
    assert_eq!(findings(&rows, 2), None);

    // Rule 5: a GET resuming the stream of a call whose stream broke, several times.
    let mut rows = vec![call(0, "1").ended("STREAM_INCOMPLETE", 200)];
    for (n, t) in [(1u64, 10i64), (2, 20), (3, 30), (4, 40)] {
        let mut g = call(t, "0");
        g.kind = Kind::Stream;
        g.http_method = "GET".into();
        g.jsonrpc_id = None;
        g.rpc_method = None;
        g.tool_name = None;
        g.inference.last_event_id = Some(format!("e{n}"));
        g.inference.resumes = Some(if n == 1 { 1 } else { n });
        rows.push(g);
    }
    let rows = run(rows);
    assert_eq!(rows[4].attempt, 5);
    assert_eq!(rows[4].retry_origin.name(), "sdk");
    assert!(rows.iter().all(|r| r.retry_findings.is_empty()));
}

#[test]
fn a_success_is_not_a_repeat_so_it_is_never_judged() {
    let rows = run(vec![
        call(0, "1"),
        call(10, "2"),
        call(20, "3"),
        call(30, "4"),
    ]);
    assert!(
        rows.iter()
            .all(|r| r.retry_of.is_none() && r.retry_findings.is_empty())
    );
}
