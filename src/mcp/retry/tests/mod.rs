//! Rules 1-5 on hand-made rows. `req(ts_ms, session, id, params)` builds a `tools/call` from
//! the TS client (`node`) at 10.0.0.5 that succeeded 100 ms later; the `With` methods change
//! one fact each; `run` assigns exchange ids 1..n and infers with the default thresholds.

mod hygiene_rows;

use super::*;
use crate::rpc::text_fingerprint;

const ENDPOINT: &str = "10.0.0.1:3000/mcp";

fn req(ts_ms: i64, session: &str, id: &str, params: &str) -> Exchange {
    let mut e = Exchange {
        ts_request: ts_ms * 1000,
        ts_response: Some((ts_ms + 100) * 1000),
        client_addr: "10.0.0.5:40000".into(),
        session_key: session.into(),
        session_id: Some(session.into()),
        user_agent: Some("node".into()),
        kind: Kind::Request,
        http_status: Some(200),
        jsonrpc_id: Some(id.to_string()),
        rpc_method: Some("tools/call".into()),
        outcome: Outcome::ToolSuccess,
        // Stale values: inference must overwrite them.
        attempt: 9,
        retry_of: Some(77),
        retry_origin: RetryOrigin::Manual,
        ..Default::default()
    };
    e.inference.endpoint = ENDPOINT.into();
    e.inference.params_fingerprint = Some(text_fingerprint(params));
    e.inference.body_fingerprint = Some(text_fingerprint(&format!(
        "{{\"id\":{id},\"jsonrpc\":\"2.0\",\"method\":\"tools/call\",\"params\":{params}}}"
    )));
    e
}

/// A row of another kind with no JSON-RPC id (notification, stream GET).
fn other(ts_ms: i64, session: &str, kind: &'static str, method: Option<&str>) -> Exchange {
    let mut e = req(ts_ms, session, "0", "{}");
    e.kind = Kind::from_name(kind).unwrap();
    e.jsonrpc_id = None;
    e.rpc_method = method.map(Into::into);
    e.inference.body_fingerprint = None;
    e.inference.params_fingerprint = None;
    e
}

trait With: Sized {
    fn failed(self, outcome: &'static str, status: u16) -> Self;
    fn outcome(self, outcome: &'static str) -> Self;
    fn ua(self, ua: &str) -> Self;
    fn addr(self, addr: &str) -> Self;
    fn method(self, m: &str) -> Self;
    fn no_response(self) -> Self;
    fn ends_at(self, ts_ms: i64) -> Self;
    fn mrtr(self) -> Self;
    fn body(self, b: &str) -> Self;
    fn auth(self, h: u64) -> Self;
    fn resumes(self, of: u64, last_event_id: &str) -> Self;
}

impl With for Exchange {
    fn failed(mut self, outcome: &'static str, status: u16) -> Self {
        self.outcome = Outcome::from_name(outcome).unwrap();
        self.http_status = Some(status);
        self
    }
    fn outcome(mut self, outcome: &'static str) -> Self {
        self.outcome = Outcome::from_name(outcome).unwrap();
        self
    }
    fn ua(mut self, ua: &str) -> Self {
        self.user_agent = Some(ua.into());
        self
    }
    fn addr(mut self, addr: &str) -> Self {
        self.client_addr = addr.into();
        self
    }
    fn method(mut self, m: &str) -> Self {
        self.rpc_method = Some(m.into());
        self
    }
    fn no_response(mut self) -> Self {
        self.ts_response = None;
        self.http_status = None;
        self.outcome = Outcome::NoResponse;
        self
    }
    fn ends_at(mut self, ts_ms: i64) -> Self {
        self.ts_response = Some(ts_ms * 1000);
        self
    }
    fn mrtr(mut self) -> Self {
        self.inference.has_mrtr_fields = true;
        self
    }
    fn body(mut self, b: &str) -> Self {
        self.inference.body_fingerprint = Some(text_fingerprint(b));
        self
    }
    fn auth(mut self, h: u64) -> Self {
        self.inference.auth_hash = Some(h);
        self
    }
    fn resumes(mut self, of: u64, last_event_id: &str) -> Self {
        self.inference.resumes = Some(of);
        self.inference.last_event_id = Some(last_event_id.to_string());
        self
    }
}

fn run(mut rows: Vec<Exchange>) -> Vec<Exchange> {
    for (i, r) in rows.iter_mut().enumerate() {
        r.exchange_id = i as u64 + 1;
    }
    let anomalies = infer_retries(&mut rows, &InferenceConfig::default());
    assert_eq!(anomalies, RetryAnomalies::default());
    rows
}

/// (attempt, retry_of, retry_origin, continuation_of) of exchange `id`.
fn link(rows: &[Exchange], id: u64) -> (u32, Option<u64>, &str, Option<u64>) {
    let r = &rows[id as usize - 1];
    (
        r.attempt,
        r.retry_of,
        r.retry_origin.name(),
        r.continuation_of,
    )
}

/// The rule's clause of `retry_evidence` (retry-hygiene clauses follow it after `; `; they
/// are tested in `tests::hygiene_rows`).
fn evidence(rows: &[Exchange], id: u64) -> Option<&str> {
    rows[id as usize - 1]
        .retry_evidence
        .as_deref()
        .and_then(|e| e.split("; ").next())
}

const NOT_A_REPEAT: (u32, Option<u64>, &str, Option<u64>) = (1, None, "none", None);

const P: &str = r#"{"arguments":{"city":"Paris"},"name":"weather"}"#;
const Q: &str = r#"{"arguments":{"city":"Oslo"},"name":"weather"}"#;

// ---- rule 1 ----------------------------------------------------------------------------------

#[test]
fn r1_mrtr_continuation_after_input_required() {
    let rows = run(vec![
        req(0, "S", "1", P).outcome("INPUT_REQUIRED"),
        req(2_000, "S", "2", P).mrtr().outcome("INPUT_REQUIRED"),
        req(4_000, "S", "3", P).mrtr(),
    ]);
    assert_eq!(link(&rows, 1), NOT_A_REPEAT);
    assert_eq!(link(&rows, 2), (1, None, "none", Some(1)));
    assert_eq!(
        link(&rows, 3),
        (1, None, "none", Some(2)),
        "second MRTR round"
    );
    assert_eq!(
        evidence(&rows, 2),
        Some(
            "rule 1 continuation of #1 (input_required), 1900ms after #1 ended with INPUT_REQUIRED"
        )
    );
}

#[test]
fn r1_mrtr_fields_without_input_required_fall_through() {
    // The follow-up itself failed with 503; the application sends it again with a new id.
    let rows = run(vec![
        req(0, "S", "1", P).outcome("INPUT_REQUIRED"),
        req(1_000, "S", "2", P).mrtr().failed("HTTP_ERROR", 503),
        req(1_500, "S", "3", P).mrtr(),
    ]);
    assert_eq!(link(&rows, 2), (1, None, "none", Some(1)));
    assert_eq!(link(&rows, 3), (2, Some(2), "application", None));
}

#[test]
fn input_required_then_new_id_without_mrtr_fields_is_not_a_repeat() {
    // INPUT_REQUIRED is an interim success, not a failure (rule 3).
    let rows = run(vec![
        req(0, "S", "1", P).outcome("INPUT_REQUIRED"),
        req(500, "S", "2", P),
    ]);
    assert_eq!(link(&rows, 2), NOT_A_REPEAT);
}

// ---- rule 2 ----------------------------------------------------------------------------------

#[test]
fn r2_auth_retry_after_401_is_sdk() {
    let rows = run(vec![
        req(0, "S", "3", P).failed("HTTP_ERROR", 401).auth(1),
        req(300, "S", "3", P).auth(2),
    ]);
    assert_eq!(link(&rows, 2), (2, Some(1), "sdk", None));
    assert_eq!(
        evidence(&rows, 2),
        Some(
            "rule 2 same id+body 200ms after #1 ended with HTTP_ERROR (401) (auth refresh), authorization changed"
        )
    );
}

#[test]
fn r2_auth_retry_after_403_is_sdk_even_after_long_gap() {
    // The auth sub-rule comes first: an authorization flow can take seconds.
    let rows = run(vec![
        req(0, "S", "3", P).failed("HTTP_ERROR", 403),
        req(30_000, "S", "3", P),
    ]);
    assert_eq!(link(&rows, 2), (2, Some(1), "sdk", None));
    assert!(
        evidence(&rows, 2)
            .unwrap()
            .ends_with("authorization unchanged")
    );
}

#[test]
fn r2_same_id_body_after_503_within_gap_is_sdk() {
    let rows = run(vec![
        req(0, "S", "7", P).failed("HTTP_ERROR", 503),
        req(512, "S", "7", P),
    ]);
    assert_eq!(link(&rows, 2), (2, Some(1), "sdk", None));
    assert_eq!(
        evidence(&rows, 2),
        Some(
            "rule 2 same id+body 412ms after #1 ended with HTTP_ERROR (503), same user-agent, same session"
        )
    );
}

#[test]
fn r2_retry_while_first_attempt_still_open_is_sdk() {
    let rows = run(vec![
        req(0, "S", "7", P).ends_at(10_000).outcome("CANCELLED"),
        req(5_000, "S", "7", P),
    ]);
    assert_eq!(link(&rows, 2), (2, Some(1), "sdk", None));
    assert_eq!(
        evidence(&rows, 2),
        Some(
            "rule 2 same id+body while #1 was still open (5000ms after it was sent), same user-agent, same session"
        )
    );
}

#[test]
fn r2_earlier_without_response_gap_counts_from_its_start() {
    let rows = run(vec![
        req(0, "S", "7", P).no_response(),
        req(1_500, "S", "7", P),
        req(10_000, "T", "8", Q).no_response(),
        req(13_000, "T", "8", Q),
    ]);
    assert_eq!(link(&rows, 2), (2, Some(1), "sdk", None));
    assert_eq!(
        evidence(&rows, 2),
        Some(
            "rule 2 same id+body 1500ms after #1 was sent, which never ended (NO_RESPONSE), same user-agent, same session"
        )
    );
    // 3000 ms after a request that never ended: over the SDK gap, so a person resent it.
    assert_eq!(link(&rows, 4), (2, Some(3), "manual", None));
    assert!(
        evidence(&rows, 4)
            .unwrap()
            .ends_with("same user-agent, same session, over sdk-max-gap 2000ms")
    );
}

#[test]
fn r2_curl_replay_is_manual() {
    let rows = run(vec![
        req(0, "S", "4", P),
        req(6_000, "S", "4", P)
            .ua("curl/8.5.0")
            .addr("10.0.0.5:51000"),
    ]);
    assert_eq!(link(&rows, 2), (2, Some(1), "manual", None));
    assert_eq!(
        evidence(&rows, 2),
        Some(
            "rule 2 same id+body 5900ms after #1 ended with TOOL_SUCCESS, different user-agent (curl/8.5.0 vs node), same session"
        )
    );
}

#[test]
fn r2_curl_replay_within_gap_is_still_manual() {
    // A different User-Agent is never the client's own HTTP stack.
    let rows = run(vec![
        req(0, "S", "4", P),
        req(300, "S", "4", P).ua("curl/8.5.0"),
    ]);
    assert_eq!(link(&rows, 2), (2, Some(1), "manual", None));
}

#[test]
fn r2_concurrent_workers_in_other_sessions_are_not_repeats() {
    // Three instances of the same client each start at id 0 with the same call.
    let rows = run(vec![
        req(0, "A", "0", P),
        req(300, "B", "0", P),
        req(900, "C", "0", P),
    ]);
    for id in 1..=3 {
        assert_eq!(link(&rows, id), NOT_A_REPEAT, "#{id}");
        assert_eq!(evidence(&rows, id), None);
    }
}

#[test]
fn concurrent_clients_each_compared_within_their_own_session() {
    // Workers A and B on one host call the same tool in turn.
    let rows = run(vec![
        req(0, "A", "2", P).failed("HTTP_ERROR", 503),
        req(100, "B", "2", P),
        req(600, "A", "3", P), // A's application retry of #1, not a non-repeat of #2
        req(2_000, "B", "3", P), // B's next ordinary call, not a manual repeat of #3
        req(2_100, "A", "4", P), // A's next ordinary call
    ]);
    assert_eq!(link(&rows, 2), NOT_A_REPEAT);
    assert_eq!(link(&rows, 3), (2, Some(1), "application", None));
    assert_eq!(link(&rows, 4), NOT_A_REPEAT);
    assert_eq!(link(&rows, 5), NOT_A_REPEAT);
}

#[test]
fn r2_second_process_in_new_session_is_manual() {
    // A re-run TS client restarts its ids at 0: same id and body, new session (mcp-wire 10b).
    let rows = run(vec![req(0, "A", "1", P), req(8_000, "B", "1", P)]);
    assert_eq!(link(&rows, 2), (2, Some(1), "manual", None));
    assert_eq!(
        evidence(&rows, 2),
        Some(
            "rule 2 same id+body 7900ms after #1 ended with TOOL_SUCCESS, same user-agent, different session"
        )
    );
}

#[test]
fn r2_id_reused_after_success_in_same_session() {
    // 2026-07-28 allows reusing an id once answered: id equality alone proves nothing. Same id
    // and body after a completed success: within the SDK gap an HTTP-layer duplicate (sdk),
    // after it a replay (manual). Documented choice, see the module doc.
    let rows = run(vec![
        req(0, "S", "5", P),
        req(1_000, "S", "5", P),
        req(10_000, "S", "5", P),
    ]);
    assert_eq!(link(&rows, 2), (2, Some(1), "sdk", None));
    assert_eq!(link(&rows, 3), (3, Some(2), "manual", None));
}

#[test]
fn r2_id_reused_after_success_in_new_session() {
    let rows = run(vec![
        req(0, "A", "5", P),
        req(500, "B", "5", P),
        req(5_000, "C", "5", P),
    ]);
    assert_eq!(
        link(&rows, 2),
        NOT_A_REPEAT,
        "within manual-min-gap: concurrent"
    );
    assert_eq!(
        link(&rows, 3),
        (2, Some(2), "manual", None),
        "compared with the latest (#2)"
    );
}

#[test]
fn r2_string_ids() {
    let rows = run(vec![
        req(0, "S", "\"abc\"", P).failed("HTTP_ERROR", 502),
        req(200, "S", "\"abc\"", P),
        // "1" and 1 are different ids: a new id after a success.
        req(1_000, "S", "\"1\"", P).failed("HTTP_ERROR", 500),
        req(1_200, "S", "1", P),
    ]);
    assert_eq!(link(&rows, 2), (2, Some(1), "sdk", None));
    assert_eq!(link(&rows, 3), NOT_A_REPEAT);
    assert_eq!(link(&rows, 4), (2, Some(3), "application", None));
    assert!(evidence(&rows, 4).unwrap().starts_with("rule 3 new id"));
}

// ---- rule 3 ----------------------------------------------------------------------------------

#[test]
fn r3_new_id_after_503_is_application() {
    let rows = run(vec![
        req(0, "S", "2", P).failed("HTTP_ERROR", 503),
        req(410, "S", "3", P),
    ]);
    assert_eq!(link(&rows, 2), (2, Some(1), "application", None));
    assert_eq!(
        evidence(&rows, 2),
        Some("rule 3 new id 310ms after #1 ended with HTTP_ERROR (503), same session")
    );
}

#[test]
fn r3_after_every_failure_outcome() {
    for bad in [
        "TOOL_ERROR",
        "JSONRPC_ERROR",
        "STREAM_INCOMPLETE",
        "CANCELLED",
        "MALFORMED_JSON",
        "INVALID_ENVELOPE",
        "UNEXPECTED_RESPONSE",
        "INVALID_TOOL_RESULT",
    ] {
        let rows = run(vec![
            req(0, "S", "2", P).outcome(bad),
            req(3_000, "S", "3", P),
        ]);
        assert_eq!(link(&rows, 2), (2, Some(1), "application", None), "{bad}");
    }
}

#[test]
fn r3_new_id_after_no_response_is_application() {
    let rows = run(vec![
        req(0, "S", "2", P).no_response(),
        req(60_000, "S", "3", P),
    ]);
    assert_eq!(link(&rows, 2), (2, Some(1), "application", None));
    assert_eq!(
        evidence(&rows, 2),
        Some(
            "rule 3 new id 60000ms after #1 was sent, which never ended (NO_RESPONSE), same session"
        )
    );
}

#[test]
fn r3_success_then_same_call_new_id_is_not_a_repeat() {
    for ok in ["TOOL_SUCCESS", "RPC_SUCCESS", "ACCEPTED", "TASK_CREATED"] {
        let rows = run(vec![req(0, "S", "2", P).outcome(ok), req(100, "S", "3", P)]);
        assert_eq!(link(&rows, 2), NOT_A_REPEAT, "{ok}");
    }
}

#[test]
fn r3_same_id_different_body_is_judged_as_new_call() {
    // Same id, same params, but `_meta` differs: no byte resend.
    let rows = run(vec![
        req(0, "S", "2", P).failed("HTTP_ERROR", 500),
        req(100, "S", "2", P).body("{\"other\":1}"),
    ]);
    assert_eq!(link(&rows, 2), (2, Some(1), "application", None));
    assert!(
        evidence(&rows, 2)
            .unwrap()
            .starts_with("rule 3 same id, different body")
    );
}

#[test]
fn r3_application_error_code_in_evidence() {
    let mut first = req(0, "S", "2", P).outcome("JSONRPC_ERROR");
    first.error_code = Some(-32603);
    let rows = run(vec![first, req(250, "S", "3", P)]);
    assert_eq!(
        evidence(&rows, 2),
        Some("rule 3 new id 150ms after #1 ended with JSONRPC_ERROR (-32603), same session")
    );
}

#[test]
fn chain_of_three_attempts() {
    let rows = run(vec![
        req(0, "S", "1", P).failed("HTTP_ERROR", 503),
        req(1_000, "S", "2", P).failed("HTTP_ERROR", 503),
        req(3_000, "S", "3", P),
        req(5_000, "S", "4", P),
    ]);
    assert_eq!(link(&rows, 2), (2, Some(1), "application", None));
    assert_eq!(link(&rows, 3), (3, Some(2), "application", None));
    assert_eq!(
        link(&rows, 4),
        NOT_A_REPEAT,
        "after the successful third attempt"
    );
    let chains = retry_chains(&rows);
    assert_eq!(chains.len(), 1);
    assert_eq!(chains[0].first, 1);
    assert_eq!(
        chains[0].attempts,
        vec![
            (1, RetryOrigin::None, Outcome::HttpError),
            (2, RetryOrigin::Application, Outcome::HttpError),
            (3, RetryOrigin::Application, Outcome::ToolSuccess),
        ]
    );
    assert_eq!(chains[0].final_outcome.name(), "TOOL_SUCCESS");
    assert!(chains[0].after_failure);
}

// ---- rule 4 ----------------------------------------------------------------------------------

#[test]
fn r4_session_ended_by_404_then_reinit_is_application() {
    let rows = run(vec![
        req(0, "A", "4", P),
        req(1_000, "A", "5", P).failed("HTTP_ERROR", 404),
        other(1_200, "B", "request", Some("initialize")),
        other(
            1_300,
            "B",
            "notification",
            Some("notifications/initialized"),
        ),
        req(1_400, "B", "2", P),
    ]);
    assert_eq!(link(&rows, 3), NOT_A_REPEAT);
    assert_eq!(link(&rows, 4), NOT_A_REPEAT);
    assert_eq!(link(&rows, 5), (2, Some(2), "application", None));
    assert_eq!(
        evidence(&rows, 5),
        Some(
            "rule 4 new id in new session 400ms after #2 was sent, earlier session ended by HTTP 404 (#2) and client re-initialized (#3)"
        )
    );
}

#[test]
fn r4_404_without_reinit_or_without_session_id_is_not_application() {
    // New session without an initialize in it: no re-initialization seen.
    let rows = run(vec![
        req(0, "A", "5", P).failed("HTTP_ERROR", 404),
        req(3_000, "B", "2", P),
    ]);
    assert_eq!(link(&rows, 2), (2, Some(1), "manual", None));
    // A 2026-07-28 404 (no session id: method not found) ends no session.
    let mut stateless = req(0, "A", "5", P).failed("HTTP_ERROR", 404);
    stateless.session_id = None;
    let rows = run(vec![
        stateless,
        other(100, "B", "request", Some("server/discover")),
        req(200, "B", "2", P),
    ]);
    assert_eq!(
        link(&rows, 3),
        NOT_A_REPEAT,
        "200ms apart: concurrent, not a person"
    );
}

#[test]
fn r4_reinit_before_the_404_does_not_count() {
    let rows = run(vec![
        other(0, "B", "request", Some("initialize")),
        req(100, "A", "5", P).failed("HTTP_ERROR", 404),
        req(300, "B", "2", P),
    ]);
    assert_eq!(link(&rows, 3), NOT_A_REPEAT);
    // A second initialize in that session after the 404 is a re-initialization.
    let rows = run(vec![
        other(0, "B", "request", Some("initialize")),
        req(100, "A", "5", P).failed("HTTP_ERROR", 404),
        other(200, "B", "request", Some("initialize")),
        req(300, "B", "2", P),
    ]);
    assert_eq!(link(&rows, 4), (2, Some(2), "application", None));
    assert!(
        evidence(&rows, 4)
            .unwrap()
            .ends_with("client re-initialized (#3)")
    );
}

#[test]
fn r4_facts_after_the_candidate_in_request_order_do_not_count() {
    // The candidate #12 (session B) and the earlier #7 (session A) share a timestamp with A's
    // 404 and B's initialize; request order is (ts_request, exchange_id). Facts that come
    // after the candidate cannot have ended the session or re-initialized it, whether or not
    // they are already known when it is judged.
    let mut earlier = req(0, "A", "0", P).failed("HTTP_ERROR", 404);
    earlier.exchange_id = 7;
    let mut candidate = req(0, "B", "1", P);
    candidate.exchange_id = 12;
    let (c, e) = (Prior::of(&candidate), Prior::of(&earlier));
    let facts = |first_404, starts: &[(i64, u64)]| SessionFacts {
        first_404,
        starts: starts.to_vec(),
        last_us: 0,
    };
    let decide_with = |a: SessionFacts, b: SessionFacts| {
        let sessions: HashMap<u64, SessionFacts> =
            [(e.session, a), (c.session, b)].into_iter().collect();
        decide(&c, &e, &InferenceConfig::default(), &sessions)
    };
    // A re-initialize after the candidate (#13): 0 ms after #7, so not a repeat.
    assert_eq!(
        decide_with(facts(Some((0, 7)), &[]), facts(None, &[(0, 13)])),
        Link::None
    );
    // A 404 after the candidate (#14) ended no session before it.
    assert_eq!(
        decide_with(facts(Some((0, 14)), &[]), facts(None, &[(0, 10)])),
        Link::None
    );
    // A start at the 404's time but before it in request order is no re-initialization.
    assert_eq!(
        decide_with(facts(Some((0, 7)), &[]), facts(None, &[(0, 6)])),
        Link::None
    );
    // In order (404 #7, initialize #10, candidate #12): application.
    assert!(matches!(
        decide_with(facts(Some((0, 7)), &[]), facts(None, &[(0, 6), (0, 10)])),
        Link::Retry {
            of: 7,
            origin: RetryOrigin::Application,
            ..
        }
    ));
}

#[test]
fn r4_second_process_new_id_later_is_manual() {
    let rows = run(vec![req(0, "A", "3", P), req(5_012, "B", "1", P)]);
    assert_eq!(link(&rows, 2), (2, Some(1), "manual", None));
    assert_eq!(
        evidence(&rows, 2),
        Some(
            "rule 4 new id in new session 5012ms after #1 was sent, earlier session not ended by 404"
        )
    );
}

#[test]
fn r4_concurrent_clients_new_ids_within_1s_are_not_repeats() {
    let rows = run(vec![
        req(0, "A", "1", P),
        req(200, "B", "7", P),
        req(999, "C", "9", P),
    ]);
    for id in 1..=3 {
        assert_eq!(link(&rows, id), NOT_A_REPEAT, "#{id}");
    }
}

// ---- rule 5 ----------------------------------------------------------------------------------

#[test]
fn r5_resumed_stream_is_sdk() {
    let rows = run(vec![
        req(0, "S", "3", P).outcome("TOOL_SUCCESS"),
        other(1_500, "S", "stream", None)
            .resumes(1, "abc")
            .outcome("STREAM_OPEN"),
        other(3_000, "S", "stream", None).resumes(2, "abd"),
    ]);
    assert_eq!(link(&rows, 2), (2, Some(1), "sdk", None));
    assert_eq!(
        evidence(&rows, 2),
        Some("rule 5 resumes stream of #1 with Last-Event-ID abc")
    );
    assert_eq!(link(&rows, 3), (3, Some(2), "sdk", None));
    let chains = retry_chains(&rows);
    assert_eq!(chains.len(), 1);
    assert_eq!(chains[0].final_outcome.name(), "TOOL_SUCCESS");
    assert!(chains[0].after_failure);
}

#[test]
fn r5_finds_its_target_when_ids_are_not_positions() {
    let mut rows = vec![
        req(0, "S", "3", P),
        req(10, "S", "4", Q),
        other(1_500, "S", "stream", None).resumes(20, "e7"),
    ];
    for (r, id) in rows.iter_mut().zip([10, 20, 30]) {
        r.exchange_id = id;
    }
    let a = infer_retries(&mut rows, &InferenceConfig::default());
    assert_eq!(a.resume_target_missing, 0);
    assert_eq!(rows[2].retry_of, Some(20));
    assert_eq!(rows[2].retry_origin.name(), "sdk");
}

#[test]
fn r5_needs_last_event_id_and_a_known_target() {
    let mut plain = other(100, "S", "stream", None);
    plain.inference.resumes = Some(1);
    let mut rows = vec![
        req(0, "S", "3", P),
        plain,
        other(200, "S", "stream", None).resumes(42, "x"),
        other(300, "S", "stream", None).resumes(4, "x"), // itself: not earlier
    ];
    for (i, r) in rows.iter_mut().enumerate() {
        r.exchange_id = i as u64 + 1;
    }
    let a = infer_retries(&mut rows, &InferenceConfig::default());
    assert_eq!(a.resume_target_missing, 2);
    for id in 2..=4 {
        assert_eq!(link(&rows, id), NOT_A_REPEAT, "#{id}");
    }
}

// ---- candidates, equivalence, window -----------------------------------------------------------

#[test]
fn lifecycle_and_notifications_are_never_linked() {
    for m in [
        "initialize",
        "server/discover",
        "ping",
        "tools/list",
        "resources/templates/list",
        "logging/setLevel",
        "subscriptions/listen",
        "resources/subscribe",
        "resources/unsubscribe",
    ] {
        let rows = run(vec![
            req(0, "S", "1", P).method(m).failed("HTTP_ERROR", 503),
            req(100, "S", "1", P).method(m),
            req(200, "S", "2", P).method(m),
        ]);
        for id in 1..=3 {
            assert_eq!(link(&rows, id), NOT_A_REPEAT, "{m} #{id}");
        }
    }
    let rows = run(vec![
        other(0, "S", "notification", Some("notifications/cancelled")).failed("HTTP_ERROR", 503),
        other(100, "S", "notification", Some("notifications/cancelled")),
    ]);
    assert_eq!(link(&rows, 2), NOT_A_REPEAT);
}

#[test]
fn equivalence_needs_host_endpoint_method_and_params() {
    let mut other_endpoint = req(100, "S", "1", P);
    other_endpoint.inference.endpoint = "10.0.0.1:3000/other".into();
    let rows = run(vec![
        req(0, "S", "1", P).failed("HTTP_ERROR", 503),
        req(100, "S", "1", P).addr("10.0.0.6:40000"),
        other_endpoint,
        req(100, "S", "1", P).method("prompts/get"),
        req(
            100,
            "S",
            "1",
            r#"{"arguments":{"city":"Rome"},"name":"weather"}"#,
        ),
    ]);
    for id in 2..=5 {
        assert_eq!(link(&rows, id), NOT_A_REPEAT, "#{id}");
    }
}

#[test]
fn same_host_other_port_and_ipv6_are_one_client() {
    let rows = run(vec![
        req(0, "S", "1", P)
            .addr("[fd00::5]:40000")
            .failed("HTTP_ERROR", 503),
        req(300, "S", "2", P).addr("[fd00::5]:40001"),
    ]);
    assert_eq!(link(&rows, 2), (2, Some(1), "application", None));
}

#[test]
fn compared_with_the_latest_earlier_equivalent_only() {
    let rows = run(vec![
        req(0, "S", "1", P).failed("HTTP_ERROR", 503),
        req(100, "S", "2", P),   // application retry of #1, succeeds
        req(5_000, "S", "3", P), // after #2 succeeded: another call
    ]);
    assert_eq!(link(&rows, 2), (2, Some(1), "application", None));
    assert_eq!(link(&rows, 3), NOT_A_REPEAT);
}

#[test]
fn repeat_window_bounds_the_search() {
    let ten_min = 10 * 60 * 1000;
    let rows = run(vec![
        req(0, "S", "1", P).failed("HTTP_ERROR", 503),
        req(ten_min, "S", "2", P).failed("HTTP_ERROR", 503),
        req(2 * ten_min + 1, "S", "3", P),
    ]);
    assert_eq!(
        link(&rows, 2),
        (2, Some(1), "application", None),
        "window is inclusive"
    );
    assert_eq!(link(&rows, 3), NOT_A_REPEAT, "1 ms beyond the window");
}

#[test]
fn thresholds_come_from_the_config() {
    let mut rows = vec![
        req(0, "S", "1", P).failed("HTTP_ERROR", 503),
        req(3_100, "S", "1", P),
    ];
    for (i, r) in rows.iter_mut().enumerate() {
        r.exchange_id = i as u64 + 1;
    }
    let cfg = InferenceConfig {
        sdk_max_gap_ms: 5_000,
        ..InferenceConfig::default()
    };
    infer_retries(&mut rows, &cfg);
    assert_eq!(link(&rows, 2), (2, Some(1), "sdk", None));
    let cfg = InferenceConfig {
        repeat_window_ms: 1_000,
        ..InferenceConfig::default()
    };
    infer_retries(&mut rows, &cfg);
    assert_eq!(link(&rows, 2), NOT_A_REPEAT);
}

#[test]
fn index_limit_is_counted_not_exceeded() {
    let mut rows = vec![
        req(0, "S", "1", P).failed("HTTP_ERROR", 503),
        req(100, "S", "1", r#"{"name":"other"}"#).failed("HTTP_ERROR", 503),
        req(200, "S", "2", r#"{"name":"other"}"#),
    ];
    for (i, r) in rows.iter_mut().enumerate() {
        r.exchange_id = i as u64 + 1;
    }
    let a = infer_with_limit(&mut rows, &InferenceConfig::default(), 1);
    assert_eq!(a.index_full, 2);
    assert_eq!(link(&rows, 3), NOT_A_REPEAT, "#2 was never indexed");
    let mut stats = McpCounters::default();
    a.record(&mut stats);
    assert_eq!(stats.anomalies.get("mcp.retry_index_full"), Some(&2));
    assert_eq!(stats.anomalies.get("mcp.resume_target_missing"), None);
}

#[test]
fn hostile_values_do_not_panic() {
    let long_ua = "é".repeat(500);
    let mut rows = vec![
        req(0, "S", "1", P).ends_at(i64::MIN / 1000),
        req(0, "S", "1", P).ua(&long_ua),
        req(-5_000, "S", "1", P), // out of order
        other(0, "S", "stream", None).resumes(u64::MAX, &long_ua),
    ];
    rows[0].ts_request = i64::MAX;
    rows[0].ts_response = Some(i64::MIN);
    for (i, r) in rows.iter_mut().enumerate() {
        r.exchange_id = i as u64 + 1;
    }
    let cfg = InferenceConfig {
        repeat_window_ms: i64::MAX,
        sdk_max_gap_ms: i64::MIN,
        manual_min_gap_ms: i64::MAX,
        session_gap_ms: 0,
        max_attempts: 0,
        backoff_factor: f64::MAX,
        backoff_floor_ms: i64::MAX,
        hop_window_ms: i64::MAX,
    };
    infer_retries(&mut rows, &cfg);
    for r in &rows {
        assert!(r.attempt >= 1);
        if let Some(ev) = &r.retry_evidence {
            // One rule's line plus at most six hygiene clauses, each with clipped values.
            assert!(ev.chars().count() < 1200, "{ev}");
        }
    }
}

#[test]
fn evidence_quotes_are_clipped() {
    let long = "x".repeat(200);
    assert_eq!(clip(&long).chars().count(), EVIDENCE_VALUE_MAX_CHARS + 1);
    assert_eq!(clip("node"), "node");
    assert_eq!(clip("a\nb\u{7}"), "a\\nb\\u{7}");
}

// ---- invariants on random traffic --------------------------------------------------------------

mod prop {
    use super::*;
    use proptest::prelude::*;

    const METHODS: &[&str] = &[
        "tools/call",
        "tools/call",
        "prompts/get",
        "ping",
        "tools/list",
    ];
    const OUTCOMES: &[Outcome] = &[
        Outcome::ToolSuccess,
        Outcome::HttpError,
        Outcome::NoResponse,
        Outcome::InputRequired,
        Outcome::Cancelled,
    ];

    /// ((gap ms, session, id, params, method), (outcome, status, curl ua, kind, mrtr, resumes))
    type Spec = ((u16, u8, u8, u8, usize), (usize, u16, bool, u8, bool, u8));

    /// Small value spaces, so equal calls, ids and sessions happen often.
    fn spec() -> impl Strategy<Value = Spec> {
        (
            (0u16..3000, 0u8..3, 0u8..4, 0u8..3, 0usize..5),
            (
                0usize..5,
                0u16..4,
                any::<bool>(),
                0u8..5,
                any::<bool>(),
                0u8..40,
            ),
        )
    }

    fn build(specs: &[Spec]) -> Vec<Exchange> {
        let mut ts = 0i64;
        let mut rows: Vec<Exchange> = specs
            .iter()
            .map(|&((gap, s, id, p, m), (o, st, ua, kind, mrtr, res))| {
                ts += i64::from(gap);
                let mut e = req(
                    ts,
                    &format!("s{s}"),
                    &id.to_string(),
                    &format!("{{\"p\":{p}}}"),
                );
                e.rpc_method = Some(METHODS[m % METHODS.len()].into());
                e.outcome = OUTCOMES[o % OUTCOMES.len()];
                e.http_status = Some([200, 401, 404, 503][usize::from(st % 4)]);
                if o % OUTCOMES.len() == 2 {
                    e.ts_response = None;
                }
                if ua {
                    e.user_agent = Some("curl/8".into());
                }
                e.inference.has_mrtr_fields = mrtr;
                match kind % 5 {
                    0 => e.kind = Kind::Notification,
                    1 => {
                        e = other(ts, &format!("s{s}"), "stream", None)
                            .resumes(u64::from(res), "ev-1");
                    }
                    _ => {}
                }
                e
            })
            .collect();
        for (i, r) in rows.iter_mut().enumerate() {
            r.exchange_id = i as u64 + 1;
        }
        rows
    }

    proptest! {
        #[test]
        fn links_are_consistent(specs in proptest::collection::vec(spec(), 0..60)) {
            let mut rows = build(&specs);
            infer_retries(&mut rows, &InferenceConfig::default());
            for r in &rows {
                let linked = r.retry_of.is_some() || r.continuation_of.is_some();
                prop_assert_eq!(r.retry_evidence.is_some(), linked);
                prop_assert_eq!(r.retry_origin.name() == "none", r.retry_of.is_none());
                prop_assert!(!(r.retry_of.is_some() && r.continuation_of.is_some()));
                if let Some(of) = r.retry_of.or(r.continuation_of) {
                    prop_assert!(of < r.exchange_id);
                }
                match r.retry_of {
                    Some(of) => {
                        let prev = &rows[of as usize - 1];
                        prop_assert_eq!(r.attempt, prev.attempt + 1);
                    }
                    None => prop_assert_eq!(r.attempt, 1),
                }
                let lifecycle = r.rpc_method.as_deref().is_some_and(is_lifecycle_method);
                if r.kind.name() == "notification" || (r.kind.name() == "request" && lifecycle) {
                    prop_assert!(!linked);
                }
                if r.kind.name() == "stream" {
                    prop_assert!(r.continuation_of.is_none());
                    prop_assert!(r.retry_of.is_none() || r.retry_origin.name() == "sdk");
                }
            }
            // Every repeat appears in exactly one chain.
            let chains = retry_chains(&rows);
            let in_chains: usize = chains.iter().map(|c| c.attempts.len() - 1).sum();
            prop_assert_eq!(in_chains, rows.iter().filter(|r| r.retry_of.is_some()).count());
        }
    }

    /// The whole-slice algorithm this module had before it became incremental: session facts
    /// from every row (later ones included), resumed rows found by scanning the slice.
    fn whole_slice(rows: &mut [Exchange], cfg: &InferenceConfig) -> RetryAnomalies {
        let mut sessions: HashMap<u64, SessionFacts> = HashMap::default();
        for row in rows.iter() {
            let is_404 = row.http_status == Some(404) && row.session_id.is_some();
            let is_start = row.kind.name() == "request"
                && row
                    .rpc_method
                    .as_deref()
                    .is_some_and(|m| SESSION_START_METHODS.contains(&m));
            let f = sessions
                .entry(index::session_hash_of(&row.session_key))
                .or_default();
            if is_404 && f.first_404.is_none() {
                f.first_404 = Some((row.ts_request, row.exchange_id));
            }
            if is_start {
                f.starts.push((row.ts_request, row.exchange_id));
            }
        }
        for f in sessions.values_mut() {
            f.starts.sort_unstable();
        }
        let window_us = cfg.repeat_window_ms * 1000;
        let mut recent = index::RecentRequests::new(MAX_INDEXED_REQUESTS);
        let mut anomalies = RetryAnomalies::default();
        let mut now = i64::MIN;
        for pos in 0..rows.len() {
            let (done, rest) = rows.split_at_mut(pos);
            let row = &mut rest[0];
            now = now.max(row.ts_request);
            recent.expire(now - window_us);
            let c = Prior::of(row);
            let candidate = is_candidate(row);
            let mut earlier = None;
            let link = if candidate {
                match recent
                    .latest(&c)
                    .filter(|e| row.ts_request - e.ts_request <= window_us)
                {
                    Some(e) => {
                        let link = decide(&c, e, cfg, &sessions);
                        if matches!(link, Link::Retry { .. }) {
                            earlier = Some(e.clone());
                        }
                        link
                    }
                    None => Link::None,
                }
            } else if is_resumption(row) {
                match done
                    .iter()
                    .find(|e| Some(e.exchange_id) == row.inference.resumes)
                {
                    Some(e) => resumption(row, e.exchange_id, e.attempt),
                    None => {
                        anomalies.resume_target_missing += 1;
                        Link::None
                    }
                }
            } else {
                Link::None
            };
            apply(row, link);
            let catalog = ToolCatalog::with_limit(1);
            let gap = earlier.map(|e| {
                let gap = hygiene::gap_after(row.ts_request, &e);
                hygiene::apply(row, hygiene::judge(row, &e, gap, &catalog, cfg));
                gap
            });
            if candidate {
                let mut prior = Prior::of(row);
                prior.gap_us = gap.unwrap_or(index::NO_GAP);
                assert!(recent.insert(prior));
            }
        }
        anomalies
    }

    type Columns = (
        u32,
        Option<u64>,
        String,
        Option<String>,
        Option<u64>,
        Option<String>,
    );

    fn columns(rows: &[Exchange]) -> Vec<Columns> {
        rows.iter()
            .map(|r| {
                (
                    r.attempt,
                    r.retry_of,
                    r.retry_origin.name().to_string(),
                    r.retry_evidence.clone(),
                    r.continuation_of,
                    r.retry_findings.text().map(str::to_string),
                )
            })
            .collect()
    }

    proptest! {
        /// Row by row gives what the whole slice gave, with sessions that start, expire by 404
        /// and re-initialize, and a repeat window short enough to expire entries.
        #[test]
        fn incremental_equals_whole_slice(
            specs in proptest::collection::vec(spec(), 0..80),
            starts in proptest::collection::vec(any::<bool>(), 80),
            window_ms in prop_oneof![Just(600_000i64), 1_000i64..20_000],
        ) {
            let mut rows = build(&specs);
            for (r, &start) in rows.iter_mut().zip(&starts) {
                if start && r.kind.name() == "request" && r.rpc_method.as_deref() == Some("ping") {
                    r.rpc_method = Some("initialize".into());
                }
            }
            let cfg = InferenceConfig { repeat_window_ms: window_ms, ..InferenceConfig::default() };
            let mut batch = rows.clone();
            let expected = whole_slice(&mut batch, &cfg);
            let mut inc = RetryInference::new(&cfg);
            for r in rows.iter_mut() {
                inc.push(r);
            }
            prop_assert_eq!(inc.anomalies(), &expected);
            prop_assert_eq!(columns(&rows), columns(&batch));
        }
    }

    #[test]
    fn index_keeps_only_live_snapshots() {
        // 1000 calls of 10 distinct kinds: only the latest of each stays in memory.
        let mut inc = RetryInference::new(&InferenceConfig::default());
        for i in 0..1000u64 {
            let mut r = req(
                i as i64 * 10,
                "S",
                &i.to_string(),
                &format!("{{\"p\":{}}}", i % 10),
            );
            r.exchange_id = i + 1;
            inc.push(&mut r);
        }
        assert_eq!(inc.recent.live(), 10);
        assert!(
            std::mem::size_of::<Prior>() <= 200,
            "{}",
            std::mem::size_of::<Prior>()
        );
        assert_eq!(inc.known_ids, vec![(1, 1000)]);
    }
}
