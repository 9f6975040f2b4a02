//! Random event sequences never panic; a throughput check.

use super::*;

proptest::proptest! {
    /// Random event sequences (bodies from MCP-ish fragments, events in any
    /// order, some for unknown exchanges) never panic, and the rows are
    /// numbered 1..n in request order.
    #[test]
    fn random_event_sequences_never_panic(
        steps in proptest::collection::vec((0u8..7, 0u32..4, 0usize..12, 0usize..12), 0..60)
    ) {
        const BODIES: [&str; 12] = [
            r#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"x"}}"#,
            r#"{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":1}}"#,
            r#"{"jsonrpc":"2.0","id":1,"result":{"content":[]}}"#,
            r#"[{"jsonrpc":"2.0","id":2,"method":"a"},{"jsonrpc":"2.0","id":2,"method":"a"}]"#,
            "event: endpoint\ndata: /m?sessionId=s\n\n",
            "data: {\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{}}\n\n",
            "id: e1\ndata: {\"jsonrpc\":\"2.0\",\"id\":0,\"method\":\"sampling/createMessage\"}\n\n",
            "data: not json\r\n\r\n",
            "{",
            "",
            "[]",
            r#"{"jsonrpc":"2.0","id":null,"error":{"code":1,"message":"m"}}"#,
        ];
        const HEADERS: [&[(&str, &str)]; 4] = [
            &[],
            &[("mcp-session-id", "S"), ("accept", "text/event-stream")],
            &[("accept", "text/event-stream"), ("last-event-id", "e1")],
            &[("content-type", "text/event-stream")],
        ];
        let mut r = Run::new();
        let mut conns = [r.conn(), r.conn(), r.conn(), r.conn()];
        let mut requests = 0usize;
        for (op, ci, a, b) in steps {
            let c = &mut conns[ci as usize];
            match op {
                0 => { r.post(c, HEADERS[b % 4], BODIES[a]); requests += 1; }
                1 => { r.request(c, "GET", if a % 2 == 0 { "/mcp" } else { "/sse" }, HEADERS[b % 4], ""); requests += 1; }
                2 => { let c = c.clone(); r.head(&c, [200, 202, 404, 500][a % 4], HEADERS[b % 4]); }
                3 => { let c = c.clone(); r.body(&c, BODIES[a]); }
                4 => { let c = c.clone(); r.end(&c, [BodyEnd::Complete, BodyEnd::Fin, BodyEnd::Rst, BodyEnd::Gap][a % 4]); }
                5 => { let c = c.clone(); r.no_response(&c, BodyEnd::Rst); }
                _ => { r.request(c, "DELETE", "/mcp", HEADERS[1], ""); requests += 1; }
            }
        }
        let (rows, _) = r.finish();
        proptest::prop_assert!(rows.len() <= requests * 2);
        for (n, e) in rows.iter().enumerate() {
            proptest::prop_assert_eq!(e.exchange_id, n as u64 + 1);
            proptest::prop_assert_eq!(e.layer, e.outcome.layer());
            proptest::prop_assert!(!e.session_key.is_empty());
        }
    }
}
