//! Release as rows become final, and release marks.

use super::super::release::ASIDE_SCAN_INTERVAL_US;
use super::*;

// ---- release as rows become final (streaming) ----------------------------------------------

impl Run {
    /// Capture time jumps forward by `us`.
    fn advance(&mut self, us: i64) {
        self.t += us;
    }

    /// The rows released as of the current capture time.
    fn drain(&mut self) -> Vec<Exchange> {
        let mut out = Vec::new();
        self.a.drain_ready(self.t, &mut self.stats, &mut out);
        out.into_iter().map(|ex| *ex).collect()
    }

    /// One `tools/call` in session S answered with JSON.
    fn json_call(&mut self, id: u64) {
        let mut c = self.conn();
        self.post(&mut c, &[("mcp-session-id", "S")], &call(id, "echo"));
        self.json(&c, 200, &ok_tool(id));
    }
}

fn ids(rows: &[Exchange]) -> Vec<u64> {
    rows.iter().map(|e| e.exchange_id).collect()
}

/// Every column (JSON) of rows sorted by id, for comparing streamed and batch runs.
fn as_json(rows: &[Exchange]) -> Vec<String> {
    let mut rows = rows.to_vec();
    rows.sort_by_key(|e| e.exchange_id);
    rows.iter()
        .map(|e| serde_json::to_string(e).unwrap())
        .collect()
}

#[test]
fn final_rows_are_released_in_id_order_after_the_slack() {
    let mut r = Run::new();
    for id in 1..=3 {
        r.json_call(id);
    }
    assert!(r.drain().is_empty(), "younger than REORDER_SLACK_US");
    r.advance(REORDER_SLACK_US);
    let first = r.drain();
    assert_eq!(ids(&first), vec![1, 2, 3]);
    assert!(first.iter().all(|e| e.outcome == "TOOL_SUCCESS"));
    r.json_call(4);
    r.advance(REORDER_SLACK_US);
    assert_eq!(ids(&r.drain()), vec![4]);
    let (rest, _) = r.finish();
    assert!(rest.is_empty(), "{rest:#?}");
}

/// A request created late (slow upload) with an earlier first byte than a released row
/// still sorts before rows not yet released.
#[test]
fn rows_are_ordered_by_first_byte_within_the_slack() {
    let mut r = Run::new();
    r.json_call(1);
    let t_late = T0; // first byte before call 1's
    let mut c = r.conn();
    c.depth += 1;
    let req = HttpRequest {
        xref: Run::xref(&c),
        h2_stream: None,
        ts_first_us: t_late,
        ts_last_us: r.t,
        frame: 0,
        head: RequestHead {
            method: "POST".into(),
            uri: "/mcp".into(),
            version: "1.1".into(),
            headers: hdrs(&[("mcp-session-id", "S")]),
        },
        body: call(2, "slow").into_bytes(),
        wire_len: 10,
        complete: true,
        anomalies: vec![],
    };
    r.a.push(HttpEvent::Request(req), &mut r.stats);
    r.json(&c, 200, &ok_tool(2));
    r.advance(REORDER_SLACK_US);
    let rows = r.drain();
    assert_eq!(ids(&rows), vec![1, 2]);
    assert_eq!(rows[0].tool_name.as_deref(), Some("slow"));
}

/// A GET stream open for the whole capture does not hold back the calls behind it: they are
/// released as they end, the stream's id is reserved once it is older than HOLD_LIMIT_US,
/// and the result equals the batch run's.
#[test]
fn long_open_get_stream_does_not_block() {
    let script = |r: &mut Run, stream: bool| -> Vec<Exchange> {
        let mut got = Vec::new();
        let mut g = r.conn();
        let h = [("mcp-session-id", "S"), ("accept", "text/event-stream")];
        r.request(&mut g, "GET", "/mcp", &h, "");
        r.sse_head(&g);
        for id in 1..=100 {
            r.advance(1_500_000);
            r.json_call(id);
            if stream {
                got.extend(r.drain());
            }
        }
        r.end(&g, BodyEnd::Fin);
        got
    };
    let mut batch_run = Run::new();
    script(&mut batch_run, false);
    let (batch, _) = batch_run.finish();
    assert_eq!(batch.len(), 101);
    assert_eq!(batch[0].kind, "stream");

    let mut r = Run::new();
    let early = script(&mut r, true);
    // 150 s of calls: all but the last slack's worth left before the end.
    assert!(early.len() >= 95, "{}", early.len());
    assert!(early.iter().all(|e| e.kind == "request"));
    assert_eq!(early[0].exchange_id, 2, "id 1 is the stream's, reserved");
    assert!(r.a.rows.map.len() < 10, "released rows are not kept");
    let (rest, _) = r.finish();
    assert_eq!(rest.first().map(|e| e.kind), Some("stream"));
    let all: Vec<Exchange> = early.into_iter().chain(rest).collect();
    assert_eq!(as_json(&all), as_json(&batch));
}

fn broken_stream_then_resume(gap_us: i64) -> (Vec<Exchange>, Vec<Exchange>) {
    let mut r = Run::new();
    let sid = [("mcp-session-id", "S"), ("accept", "text/event-stream")];
    let mut c = r.conn();
    r.post(&mut c, &sid, &call(4, "long"));
    r.sse_head(&c);
    r.body(&c, "id: ev-1\ndata: \n\n");
    r.end(&c, BodyEnd::Fin);
    let mut early = Vec::new();
    // Time passes in steps, with other traffic draining.
    let steps = gap_us / 1_000_000;
    for _ in 0..steps {
        r.advance(1_000_000);
        early.extend(r.drain());
    }
    let mut g = r.conn();
    r.request(
        &mut g,
        "GET",
        "/mcp",
        &[
            ("mcp-session-id", "S"),
            ("accept", "text/event-stream"),
            ("last-event-id", "ev-1"),
        ],
        "",
    );
    r.sse_head(&g);
    r.body(&g, &format!("id: ev-2\ndata: {}\n\n", ok_tool(4)));
    r.end(&g, BodyEnd::Complete);
    r.advance(REORDER_SLACK_US);
    early.extend(r.drain());
    let (rest, _) = r.finish();
    (early, rest)
}

#[test]
fn stream_incomplete_completed_by_resume_within_the_hold() {
    let (early, rest) = broken_stream_then_resume(30_000_000);
    assert!(rest.is_empty(), "{rest:#?}");
    assert_eq!(ids(&early), vec![1, 2]);
    assert_eq!(
        early[0].outcome, "TOOL_SUCCESS",
        "completed by the resumed GET"
    );
    assert!(early[0].final_response);
    assert_eq!(early[1].kind, "stream");
    assert_eq!(early[1].retry_of, Some(1));
    assert_eq!(early[1].retry_origin, "sdk");
}

#[test]
fn stream_incomplete_after_the_hold_is_released_as_is() {
    let (early, rest) = broken_stream_then_resume(STREAM_RESUME_HOLD_US + 5_000_000);
    assert!(rest.is_empty(), "{rest:#?}");
    assert_eq!(ids(&early), vec![1, 2]);
    assert_eq!(early[0].outcome, "STREAM_INCOMPLETE");
    // The resumed GET still names the exchange it resumes.
    assert_eq!(early[1].inference.resumes, Some(1));
    assert_eq!(early[1].retry_of, Some(1));
}

#[test]
fn unanswered_request_is_released_at_finish() {
    let mut r = Run::new();
    let mut c = r.conn();
    r.post(&mut c, &[("mcp-session-id", "S")], &call(1, "never"));
    r.advance(10_000_000);
    r.json_call(2);
    r.advance(REORDER_SLACK_US);
    assert!(
        r.drain().is_empty(),
        "the open head holds the rows behind it"
    );
    let (rows, _) = r.finish();
    assert_eq!(ids(&rows), vec![1, 2]);
    assert_eq!(rows[0].outcome, "NO_RESPONSE");
    assert_eq!(rows[0].stream_end, "none");
    assert_eq!(rows[1].outcome, "TOOL_SUCCESS");
}

/// An unanswered request older than HOLD_LIMIT_US is set aside with its id; retry inference
/// sees it as unanswered, so the same call sent again is an application retry of it.
#[test]
fn unanswered_request_set_aside_keeps_its_id() {
    let mut r = Run::new();
    let mut c = r.conn();
    r.post(&mut c, &[("mcp-session-id", "S")], &call(1, "echo"));
    r.advance(HOLD_LIMIT_US + 1_000_000);
    r.json_call(2);
    r.advance(REORDER_SLACK_US);
    let early = r.drain();
    assert_eq!(ids(&early), vec![2]);
    assert_eq!(early[0].retry_of, Some(1));
    assert_eq!(early[0].retry_origin, "application");
    r.no_response(&c, BodyEnd::Rst);
    r.advance(ASIDE_SCAN_INTERVAL_US);
    let late = r.drain();
    assert_eq!(ids(&late), vec![1]);
    assert_eq!(late[0].outcome, "NO_RESPONSE");
    assert_eq!(late[0].stream_end, "none");
    assert!(r.finish().0.is_empty());
}

/// A preflight to an endpoint that never turns out to be MCP is dropped after
/// TENTATIVE_HOLD_US without holding back the rows behind it longer.
#[test]
fn unconfirmed_preflight_is_dropped_after_its_hold() {
    let mut r = Run::new();
    let mut o = r.conn();
    r.request(&mut o, "OPTIONS", "/other", &[], "");
    r.json(&o, 204, "");
    r.json_call(1);
    r.advance(REORDER_SLACK_US);
    assert!(r.drain().is_empty());
    r.advance(TENTATIVE_HOLD_US);
    let rows = r.drain();
    assert_eq!(ids(&rows), vec![1]);
    assert_eq!(rows[0].kind, "request");
}

proptest::proptest! {
    /// Draining after every event, with time jumping, numbers the rows 1..n exactly once, and
    /// with no jump beyond the holds gives exactly the batch rows.
    #[test]
    fn streamed_release_numbers_every_row_once(
        steps in proptest::collection::vec((0u8..8, 0u32..4, 0usize..6, 0u8..4), 0..80),
        jumps in proptest::bool::ANY,
    ) {
        const BODIES: [&str; 6] = [
            r#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"x"}}"#,
            r#"{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"x"}}"#,
            r#"{"jsonrpc":"2.0","id":1,"result":{"content":[]}}"#,
            "id: e1\ndata: {\"jsonrpc\":\"2.0\",\"id\":2,\"result\":{}}\n\n",
            "id: e1\ndata: \n\n",
            r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#,
        ];
        const HEADERS: [&[(&str, &str)]; 4] = [
            &[("mcp-session-id", "S")],
            &[("mcp-session-id", "S"), ("accept", "text/event-stream")],
            &[("mcp-session-id", "S"), ("accept", "text/event-stream"), ("last-event-id", "e1")],
            &[("content-type", "text/event-stream")],
        ];
        let play = |stream: bool| {
            let mut r = Run::new();
            let mut conns = [r.conn(), r.conn(), r.conn(), r.conn()];
            let mut got = Vec::new();
            for &(op, ci, a, b) in &steps {
                let c = &mut conns[ci as usize];
                match op {
                    0 | 1 => r.post(c, HEADERS[usize::from(b) % 2], BODIES[a]),
                    2 => r.request(c, "GET", "/mcp", HEADERS[usize::from(b) % 3], ""),
                    3 => { let c = c.clone(); r.head(&c, [200, 202, 404, 503][usize::from(b)], HEADERS[3]); }
                    4 => { let c = c.clone(); r.body(&c, BODIES[a]); }
                    5 => { let c = c.clone(); r.end(&c, [BodyEnd::Complete, BodyEnd::Fin, BodyEnd::Rst, BodyEnd::Gap][usize::from(b)]); }
                    6 => { let c = c.clone(); r.no_response(&c, BodyEnd::Rst); }
                    _ => r.advance(if jumps { 20_000_000 } else { 300_000 } * i64::from(b)),
                }
                if stream {
                    got.extend(r.drain());
                }
            }
            let (rest, _) = r.finish();
            got.extend(rest);
            got
        };
        let streamed = play(true);
        let mut got = ids(&streamed);
        got.sort_unstable();
        let n = streamed.len() as u64;
        proptest::prop_assert_eq!(got, (1..=n).collect::<Vec<_>>());
        if !jumps {
            proptest::prop_assert_eq!(as_json(&streamed), as_json(&play(false)));
        }
    }
}

// ---- release marks -------------------------------------------------------------------------

impl Run {
    /// The capture time the next `json_call` request starts at.
    fn next_start(&self) -> i64 {
        self.t + 1000
    }
}

#[test]
fn a_release_mark_frees_rows_older_than_the_earliest_request_under_way() {
    let mut r = Run::new();
    for id in 1..=3 {
        r.json_call(id);
    }
    // Nothing under way, but the rows are younger than RELEASE_MARK_MIN_AGE_US.
    r.a.set_release_mark(None);
    assert!(r.drain().is_empty());
    r.advance(RELEASE_MARK_MIN_AGE_US);
    let fourth = r.next_start();
    r.json_call(4);
    r.a.set_release_mark(None);
    assert_eq!(
        ids(&r.drain()),
        vec![1, 2, 3],
        "old enough, long before the slack"
    );
    r.advance(RELEASE_MARK_MIN_AGE_US);
    r.json_call(5);
    // A request that began just before the fourth is still under way: the fourth waits.
    r.a.set_release_mark(Some(fourth - 1));
    assert!(r.drain().is_empty());
    r.a.set_release_mark(None);
    assert_eq!(ids(&r.drain()), vec![4]);
    // Without a new mark the fifth waits out the slack, as rows without marks do.
    r.advance(REORDER_SLACK_US);
    assert_eq!(ids(&r.drain()), vec![5]);
    let (rest, _) = r.finish();
    assert!(rest.is_empty(), "{rest:#?}");
}

#[test]
fn a_step_back_of_the_clock_makes_marks_wait_twice_as_long() {
    let mut r = Run::new();
    r.json_call(1);
    // A request whose packets are stamped about 100 ms before the latest event.
    r.t -= 100_000;
    let stepped_back = r.next_start();
    r.json_call(2);
    r.t += 100_000;
    r.json_call(3);
    r.advance(150_000);
    r.json_call(4);
    r.a.set_release_mark(None);
    // Marks now free rows about 200 ms old: only the stepped-back one (about 255 ms).
    let first = r.drain();
    assert_eq!(ids(&first), vec![1]);
    assert_eq!(first[0].ts_request, stepped_back);
    r.advance(60_000);
    r.json_call(5);
    r.a.set_release_mark(None);
    let second = r.drain();
    assert_eq!(
        ids(&second),
        vec![2, 3],
        "about 215 ms old; the fourth is 60 ms old"
    );
    assert!(second[0].ts_request < second[1].ts_request);
}
