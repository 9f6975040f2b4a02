//! Hop linking rules (report-schema.md section 4c), one clause at a time.

#![allow(clippy::vec_box, clippy::too_many_arguments)]

use super::*;
use crate::mcp::{Kind, Outcome};

const MS: i64 = 1000;

/// A `tools/call` of `tool` with params `args` from `client` to `server`, sent at `ts` ms;
/// answered `outcome` (head at `head` ms, complete at `end` ms; no response when `head` is
/// `None`, ended at `end`).
fn call(
    id: u64,
    ts: i64,
    client: &str,
    server: &str,
    tool: &str,
    args: u64,
    head: Option<i64>,
    end: i64,
    outcome: Outcome,
) -> Box<Exchange> {
    let mut e = Exchange {
        exchange_id: id,
        ts_request: ts * MS,
        client_addr: client.into(),
        server_addr: server.into(),
        session_key: format!("sid:{server}").into(),
        kind: Kind::Request,
        rpc_method: Some("tools/call".into()),
        tool_name: Some(tool.into()),
        outcome,
        layer: outcome.layer(),
        attempt: 1,
        ..Exchange::default()
    };
    e.inference.endpoint = format!("{server}/mcp").into();
    e.inference.params_fingerprint = Some((args, u64::from(tool.len() as u32)));
    e.inference.params_fingerprint_unnamed = Some((args, 0));
    e.inference.ts_response_start = head.map(|h| h * MS);
    e.inference.ts_ended = Some(end * MS);
    if head.is_some() {
        e.ts_response = Some(end * MS);
        e.http_status = Some(if outcome == Outcome::HttpError {
            503
        } else {
            200
        });
    }
    Box::new(e)
}

fn run(rows: Vec<Box<Exchange>>) -> Vec<Box<Exchange>> {
    run_with(rows, HopConfig::default()).0
}

fn run_with(rows: Vec<Box<Exchange>>, cfg: HopConfig) -> (Vec<Box<Exchange>>, u64) {
    let mut l = Linker::new(cfg);
    let mut out = Vec::new();
    for r in rows {
        l.push(r);
        while let Some(r) = l.pop() {
            out.push(r);
        }
    }
    l.flush();
    while let Some(r) = l.pop() {
        out.push(r);
    }
    let mut stats = McpCounters::default();
    l.record(&mut stats);
    let full = stats.anomalies.get("mcp.hop_waiting_full");
    (out, full.copied().unwrap_or(0))
}

fn hops(rows: &[Box<Exchange>]) -> Vec<(u8, Option<u64>, Option<u8>)> {
    rows.iter()
        .map(|r| (r.hop.0, r.forwarded_from, r.fault_hop))
        .collect()
}

const CLIENT: &str = "10.0.0.1:5000";
const GW: &str = "10.0.0.2:443";
const GW_OUT: &str = "10.0.0.2:6000";
const SERVER: &str = "10.0.0.3:8080";
const SERVER_B: &str = "10.0.0.4:8080";

#[test]
fn a_relayed_call_is_one_call_on_two_hops() {
    use Outcome::ToolSuccess as Ok;
    let out = run(vec![
        call(1, 0, CLIENT, GW, "echo", 1, Some(20), 21, Ok),
        call(2, 5, GW_OUT, SERVER, "echo", 1, Some(15), 16, Ok),
    ]);
    assert_eq!(hops(&out), [(1, None, None), (2, Some(1), None)]);
    assert_eq!(
        out[1].hop_evidence.as_deref(),
        Some("copy of #1 via 10.0.0.2:443 (+5.0 ms)")
    );
    assert!(out[0].inference.has_copies);
    assert_eq!(out[0].inference.gateway.as_deref(), Some(GW));
    assert_eq!(out[0].inference.gateway_added_us, Some(21 * MS - 11 * MS));
}

#[test]
fn each_clause_of_a_copy_must_hold() {
    use Outcome::ToolSuccess as Ok;
    // Other params, the same endpoint, started before the original, after its response
    // started: none is a copy.
    let out = run(vec![
        call(1, 10, CLIENT, GW, "echo", 1, Some(30), 31, Ok),
        call(2, 12, GW_OUT, SERVER, "echo", 2, Some(15), 16, Ok),
        call(3, 13, "10.0.0.9:1", GW, "echo", 1, Some(14), 15, Ok),
        call(4, 30, GW_OUT, SERVER, "echo", 1, Some(32), 33, Ok),
    ]);
    assert_eq!(
        hops(&out),
        [
            (1, None, None),
            (1, None, None),
            (1, None, None),
            (1, None, None)
        ]
    );
    // A started strictly after: equal start times are not a copy.
    let out = run(vec![
        call(1, 10, CLIENT, GW, "echo", 1, Some(30), 31, Ok),
        call(2, 10, GW_OUT, SERVER, "echo", 1, Some(15), 16, Ok),
    ]);
    assert_eq!(hops(&out)[1], (1, None, None));
}

#[test]
fn prefixed_tool_names_match_the_bare_name() {
    for name in [
        "github__create_issue",
        "github.create_issue",
        "github/create_issue",
    ] {
        assert_eq!(bare_tool_name(name), "create_issue");
    }
    assert_eq!(bare_tool_name("send_email"), "send_email");
    assert_eq!(bare_tool_name("trailing/"), "trailing/");
    use Outcome::ToolSuccess as Ok;
    let out = run(vec![
        call(
            1,
            0,
            CLIENT,
            GW,
            "github__create_issue",
            7,
            Some(20),
            21,
            Ok,
        ),
        call(2, 5, GW_OUT, SERVER, "create_issue", 7, Some(15), 16, Ok),
    ]);
    assert_eq!(hops(&out)[1], (2, Some(1), None));
}

#[test]
fn concurrent_equivalent_calls_pair_one_to_one_in_time_order() {
    use Outcome::ToolSuccess as Ok;
    let out = run(vec![
        call(1, 0, CLIENT, GW, "echo", 1, Some(40), 41, Ok),
        call(2, 1, "10.0.0.5:5000", GW, "echo", 1, Some(42), 43, Ok),
        call(3, 5, GW_OUT, SERVER, "echo", 1, Some(30), 31, Ok),
        call(4, 6, GW_OUT, SERVER, "echo", 1, Some(32), 33, Ok),
    ]);
    assert_eq!(
        hops(&out),
        [
            (1, None, None),
            (1, None, None),
            (2, Some(1), None),
            (2, Some(2), None)
        ]
    );
}

#[test]
fn a_chain_of_three_hops_links_each_copy_to_the_nearer_hop() {
    use Outcome::HttpError as Err;
    let gw2 = "10.0.0.7:443";
    let out = run(vec![
        call(1, 0, CLIENT, GW, "echo", 1, Some(50), 51, Err),
        call(2, 5, GW_OUT, gw2, "echo", 1, Some(40), 41, Err),
        call(3, 10, "10.0.0.7:7000", SERVER, "echo", 1, Some(30), 31, Err),
    ]);
    // A relayed 503 arose at the last server.
    assert_eq!(
        hops(&out),
        [
            (1, None, Some(3)),
            (2, Some(1), Some(3)),
            (3, Some(2), Some(3))
        ]
    );
    assert!(
        out[0]
            .hop_evidence
            .as_deref()
            .unwrap()
            .contains("failure arose at hop 3: #3 HTTP 503"),
        "{:?}",
        out[0].hop_evidence
    );
}

#[test]
fn a_copy_never_goes_back_to_an_endpoint_of_its_chain() {
    use Outcome::ToolSuccess as Ok;
    // The client's retry to the gateway while the gateway's copy is open is not a copy of
    // that copy.
    let out = run(vec![
        call(1, 0, CLIENT, GW, "echo", 1, Some(50), 51, Ok),
        call(2, 5, GW_OUT, SERVER, "echo", 1, Some(40), 41, Ok),
        call(3, 10, CLIENT, GW, "echo", 1, Some(60), 61, Ok),
    ]);
    assert_eq!(hops(&out)[2], (1, None, None));
}

#[test]
fn a_gateway_answering_from_cache_has_no_copy() {
    use Outcome::ToolSuccess as Ok;
    let out = run(vec![call(1, 0, CLIENT, GW, "echo", 1, Some(2), 3, Ok)]);
    assert_eq!(hops(&out), [(1, None, None)]);
    assert!(out[0].hop_evidence.is_none());
}

#[test]
fn a_gateway_timeout_is_the_gateway_hop() {
    // Upstream copy silent for 1 s, closed by the gateway, which answers 504.
    let mut copy = call(
        2,
        5,
        GW_OUT,
        SERVER,
        "sleepy",
        1,
        None,
        1005,
        Outcome::NoResponse,
    );
    copy.inference.client_gave_up = true;
    let mut original = call(
        1,
        0,
        CLIENT,
        GW,
        "sleepy",
        1,
        Some(1006),
        1006,
        Outcome::HttpError,
    );
    original.http_status = Some(504);
    let out = run(vec![original, copy]);
    assert_eq!(hops(&out), [(1, None, Some(1)), (2, Some(1), Some(1))]);
    let told = out[0].hop_evidence.as_deref().unwrap();
    assert!(
        told.contains("gateway closed #2 after 1000 ms without a response and answered HTTP 504"),
        "{told}"
    );
}

#[test]
fn a_translated_failure_is_the_servers() {
    let original = call(
        1,
        0,
        CLIENT,
        GW,
        "echo",
        1,
        Some(20),
        21,
        Outcome::ToolError,
    );
    let copy = call(
        2,
        5,
        GW_OUT,
        SERVER,
        "echo",
        1,
        Some(10),
        11,
        Outcome::HttpError,
    );
    let out = run(vec![original, copy]);
    assert_eq!(hops(&out), [(1, None, Some(2)), (2, Some(1), Some(2))]);
    assert!(out[0].inference.translated);
    assert!(!out[1].inference.translated);
    assert!(
        out[0]
            .hop_evidence
            .as_deref()
            .unwrap()
            .contains("translated: HTTP_ERROR at hop 2 (#2) became TOOL_ERROR"),
        "{:?}",
        out[0].hop_evidence
    );
}

#[test]
fn a_gateway_failing_after_upstream_success_is_the_gateway_hop() {
    let original = call(
        1,
        0,
        CLIENT,
        GW,
        "echo",
        1,
        Some(20),
        21,
        Outcome::HttpError,
    );
    let copy = call(
        2,
        5,
        GW_OUT,
        SERVER,
        "echo",
        1,
        Some(10),
        11,
        Outcome::ToolSuccess,
    );
    let out = run(vec![original, copy]);
    assert_eq!(hops(&out), [(1, None, Some(1)), (2, Some(1), None)]);
}

#[test]
fn a_second_copy_after_a_failed_one_is_a_gateway_retry() {
    let original = call(
        1,
        0,
        CLIENT,
        GW,
        "send_email",
        1,
        Some(30),
        31,
        Outcome::ToolSuccess,
    );
    let first = call(
        2,
        2,
        GW_OUT,
        SERVER,
        "send_email",
        1,
        Some(4),
        5,
        Outcome::HttpError,
    );
    let second = call(
        3,
        6,
        GW_OUT,
        SERVER_B,
        "send_email",
        1,
        Some(20),
        21,
        Outcome::ToolSuccess,
    );
    let out = run(vec![original, first, second]);
    assert_eq!(
        hops(&out),
        [(1, None, None), (2, Some(1), Some(2)), (2, Some(1), None)]
    );
    assert_eq!(out[2].inference.gateway_retry_of, Some(2));
    // Still open when the next copy started: not a resend.
    let original = call(
        1,
        0,
        CLIENT,
        GW,
        "echo",
        1,
        Some(30),
        31,
        Outcome::ToolSuccess,
    );
    let first = call(
        2,
        2,
        GW_OUT,
        SERVER,
        "echo",
        1,
        Some(4),
        8,
        Outcome::HttpError,
    );
    let second = call(
        3,
        6,
        GW_OUT,
        SERVER_B,
        "echo",
        1,
        Some(20),
        21,
        Outcome::ToolSuccess,
    );
    let out = run(vec![original, first, second]);
    assert_eq!(hops(&out)[2], (1, None, None));
}

#[test]
fn gateway_retries_that_all_fail_place_the_failure_at_the_last_attempt() {
    let original = call(
        1,
        0,
        CLIENT,
        GW,
        "echo",
        1,
        Some(30),
        31,
        Outcome::HttpError,
    );
    let first = call(
        2,
        2,
        GW_OUT,
        SERVER,
        "echo",
        1,
        Some(4),
        5,
        Outcome::HttpError,
    );
    let second = call(
        3,
        6,
        GW_OUT,
        SERVER_B,
        "echo",
        1,
        Some(20),
        21,
        Outcome::HttpError,
    );
    let out = run(vec![original, first, second]);
    assert_eq!(
        hops(&out),
        [
            (1, None, Some(2)),
            (2, Some(1), Some(2)),
            (2, Some(1), Some(2))
        ]
    );
    assert!(
        out[0]
            .hop_evidence
            .as_deref()
            .unwrap()
            .contains("#3 HTTP 503")
    );
}

#[test]
fn without_a_response_a_copy_may_start_until_the_original_ended_within_the_window() {
    use Outcome::{NoResponse, ToolSuccess};
    let cfg = HopConfig {
        window_us: 100 * MS,
        ..HopConfig::default()
    };
    let out = run_with(
        vec![
            call(1, 0, CLIENT, GW, "echo", 1, None, 500, NoResponse),
            call(
                2,
                101,
                GW_OUT,
                SERVER,
                "echo",
                1,
                Some(110),
                111,
                ToolSuccess,
            ),
        ],
        cfg,
    )
    .0;
    assert_eq!(hops(&out)[1], (1, None, None));
    let out = run_with(
        vec![
            call(1, 0, CLIENT, GW, "echo", 1, None, 50, NoResponse),
            call(2, 60, GW_OUT, SERVER, "echo", 1, Some(70), 71, ToolSuccess),
        ],
        cfg,
    )
    .0;
    assert_eq!(hops(&out)[1], (1, None, None));
    let out = run_with(
        vec![
            call(1, 0, CLIENT, GW, "echo", 1, None, 50, NoResponse),
            call(2, 40, GW_OUT, SERVER, "echo", 1, Some(45), 46, ToolSuccess),
        ],
        cfg,
    )
    .0;
    assert_eq!(hops(&out), [(1, None, Some(1)), (2, Some(1), None)]);
}

#[test]
fn a_pass_through_session_gets_a_key_per_leg() {
    use Outcome::ToolSuccess as Ok;
    let mut a = call(1, 0, CLIENT, GW, "echo", 1, Some(20), 21, Ok);
    let mut b = call(2, 5, GW_OUT, SERVER, "echo", 1, Some(15), 16, Ok);
    let mut c = call(3, 30, GW_OUT, SERVER, "other", 9, Some(31), 32, Ok);
    for r in [&mut a, &mut b, &mut c] {
        r.session_key = "sid:abc".into();
    }
    let out = run(vec![a, b, c]);
    assert_eq!(out[0].session_key.as_str(), "sid:abc");
    assert_eq!(out[1].session_key.as_str(), "sid:abc@10.0.0.3:8080/mcp");
    assert_eq!(out[2].session_key.as_str(), "sid:abc@10.0.0.3:8080/mcp");
}

#[test]
fn rows_leave_in_order_and_only_once_settled() {
    use Outcome::ToolSuccess as Ok;
    let mut l = Linker::new(HopConfig::default());
    l.push(call(1, 0, CLIENT, GW, "echo", 1, Some(20), 21, Ok));
    assert!(l.pop().is_none(), "a copy may still come");
    l.push(call(2, 5, GW_OUT, SERVER, "echo", 1, Some(15), 16, Ok));
    assert!(l.pop().is_none());
    l.advance(20 * MS);
    let ids: Vec<u64> = std::iter::from_fn(|| l.pop())
        .map(|r| r.exchange_id)
        .collect();
    assert_eq!(ids, [1, 2]);
}

#[test]
fn held_rows_are_bounded() {
    use Outcome::NoResponse;
    let cfg = HopConfig {
        max_waiting: 100,
        ..HopConfig::default()
    };
    let mut l = Linker::new(cfg);
    let mut out = 0u64;
    for i in 1..=10_000u64 {
        l.push(call(
            i, i as i64, CLIENT, GW, "echo", 1, None, 1_000_000, NoResponse,
        ));
        while l.pop().is_some() {
            out += 1;
        }
        assert!(l.held() <= 100);
    }
    l.flush();
    while l.pop().is_some() {
        out += 1;
    }
    assert_eq!(out, 10_000);
    let mut stats = McpCounters::default();
    l.record(&mut stats);
    assert_eq!(stats.anomalies.get("mcp.hop_waiting_full"), Some(&9_900));
}

#[test]
fn a_million_equivalent_calls_without_copies_stay_within_the_limit() {
    let mut l = Linker::new(HopConfig::default());
    let mut out = 0u64;
    let mut most = 0;
    for i in 1..=1_000_000u64 {
        // One µs apart, all open for the whole window: every one may still get a copy.
        let mut r = call(
            i,
            0,
            CLIENT,
            GW,
            "echo",
            1,
            None,
            1_000_000,
            Outcome::NoResponse,
        );
        r.ts_request = i as i64;
        l.push(r);
        while l.pop().is_some() {
            out += 1;
        }
        most = most.max(l.held());
    }
    assert_eq!(most, MAX_HOP_WAITING);
    l.flush();
    while l.pop().is_some() {
        out += 1;
    }
    assert_eq!(out, 1_000_000);
    let mut stats = McpCounters::default();
    l.record(&mut stats);
    assert_eq!(
        stats.anomalies.get("mcp.hop_waiting_full"),
        Some(&(1_000_000 - MAX_HOP_WAITING as u64))
    );
}

/// A gateway's traffic: calls through GW, each copied to SERVER (some answered 503 and
/// resent), as (original, copy) rows with times in ms.
fn gateway_calls(n: u64) -> Vec<Box<Exchange>> {
    let mut rows = Vec::new();
    for k in 0..n {
        let t = (k as i64) * 100;
        let failed = k % 3 == 0;
        let (outcome, copy_outcome) = if failed {
            (Outcome::HttpError, Outcome::HttpError)
        } else {
            (Outcome::ToolSuccess, Outcome::ToolSuccess)
        };
        rows.push(call(
            0,
            t,
            CLIENT,
            GW,
            "echo",
            k,
            Some(t + 50),
            t + 51,
            outcome,
        ));
        rows.push(call(
            0,
            t + 5,
            GW_OUT,
            SERVER,
            "echo",
            k,
            Some(t + 40),
            t + 41,
            copy_outcome,
        ));
    }
    rows
}

/// Plain single-leg traffic between other hosts, answered at once.
fn other_calls(times: &[i64]) -> Vec<Box<Exchange>> {
    times
        .iter()
        .enumerate()
        .map(|(k, &t)| {
            let outcome = if k % 2 == 0 {
                Outcome::ToolSuccess
            } else {
                Outcome::HttpError
            };
            call(
                0,
                t,
                "10.9.0.1:4000",
                "10.9.0.2:80",
                "other",
                k as u64,
                Some(t + 3),
                t + 4,
                outcome,
            )
        })
        .collect()
}

/// A row's (hop, forwarded_from as a position, fault_hop).
type HopLink = (u8, Option<usize>, Option<u8>);

/// Merges rows in request order (ties: the first list first), numbers them, links them,
/// and returns each gateway row's (hop, forwarded_from, fault_hop) by its position in
/// `gateway`, with `forwarded_from` as a position too.
fn gateway_links(gateway: Vec<Box<Exchange>>, other: Vec<Box<Exchange>>) -> Vec<HopLink> {
    let mut all: Vec<(bool, usize, Box<Exchange>)> = gateway
        .into_iter()
        .enumerate()
        .map(|(i, r)| (true, i, r))
        .chain(other.into_iter().enumerate().map(|(i, r)| (false, i, r)))
        .collect();
    all.sort_by_key(|(gw, i, r)| (r.ts_request, !*gw, *i));
    let mut position = HashMap::default();
    let rows: Vec<Box<Exchange>> = all
        .into_iter()
        .enumerate()
        .map(|(n, (gw, i, mut r))| {
            r.exchange_id = n as u64 + 1;
            if gw {
                position.insert(r.exchange_id, i);
            }
            r
        })
        .collect();
    let mut links: Vec<(usize, HopLink)> = run(rows)
        .into_iter()
        .filter_map(|r| {
            let at = *position.get(&r.exchange_id)?;
            let from = r.forwarded_from.and_then(|f| position.get(&f).copied());
            Some((at, (r.hop.0, from, r.fault_hop)))
        })
        .collect();
    links.sort_by_key(|(at, _)| *at);
    links.into_iter().map(|(_, l)| l).collect()
}

proptest::proptest! {
    /// Adding single-leg traffic, at any times, never changes a gateway's links.
    #[test]
    fn single_leg_traffic_never_changes_a_link(
        n in 1u64..12,
        times in proptest::collection::vec(0i64..1500, 0..40),
    ) {
        let alone = gateway_links(gateway_calls(n), Vec::new());
        let mixed = gateway_links(gateway_calls(n), other_calls(&times));
        proptest::prop_assert_eq!(&alone, &mixed);
        for (k, link) in alone.iter().enumerate() {
            let call = k / 2;
            let fault = (call % 3 == 0).then_some(2);
            let expected = if k % 2 == 0 { (1, None, fault) } else { (2, Some(k - 1), fault) };
            proptest::prop_assert_eq!(*link, expected);
        }
    }
}

#[test]
fn per_leg_session_keys_are_bounded() {
    use Outcome::ToolSuccess as Ok;
    let mut l = Linker::new(HopConfig::default());
    let n = MAX_LEG_SESSIONS as u64 + 1000;
    for k in 0..n {
        let t = k as i64 * 10;
        let mut a = call(2 * k + 1, t, CLIENT, GW, "echo", k, Some(t + 8), t + 9, Ok);
        let mut b = call(
            2 * k + 2,
            t + 1,
            GW_OUT,
            SERVER,
            "echo",
            k,
            Some(t + 5),
            t + 6,
            Ok,
        );
        let sid: ArcStr = format!("sid:{k}").into();
        a.session_key = sid.clone();
        b.session_key = sid;
        l.push(a);
        l.push(b);
        while l.pop().is_some() {}
        assert!(l.leg_sessions.len() <= MAX_LEG_SESSIONS);
    }
    assert_eq!(l.leg_sessions.len(), MAX_LEG_SESSIONS);
}
