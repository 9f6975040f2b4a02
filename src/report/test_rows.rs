//! Hand-made exchanges shared by the report tests.

use crate::mcp::Exchange;
use crate::mcp::retry::Finding;
use crate::mcp::{Kind, Layer, Outcome, RetryOrigin, StreamEnd, Transport};

/// A plain successful `tools/call` row; tests change the fields they care about.
pub(crate) fn ex(id: u64, ts_request: i64) -> Exchange {
    Exchange {
        exchange_id: id,
        capture: "cap.pcap".into(),
        ts_request,
        client_addr: "10.0.0.1:50000".into(),
        server_addr: "10.0.0.2:8080".into(),
        tcp_stream: Some(0),
        http_version: Some("HTTP/1.1"),
        transport: Transport::StreamableHttp,
        session_key: "s1".into(),
        kind: Kind::Request,
        http_method: "POST".into(),
        path: "/mcp".into(),
        outcome: Outcome::ToolSuccess,
        layer: Layer::Application,
        stream_end: StreamEnd::None,
        attempt: 1,
        retry_origin: RetryOrigin::None,
        ..Exchange::default()
    }
}

/// Three rows covering values, nulls, quoting and timestamp edges.
pub(crate) fn rows() -> Vec<Exchange> {
    let first = Exchange {
        ts_response: Some(1_795_982_048_535_456),
        latency_ms: Some(412.0),
        http_status: Some(200),
        content_type: Some("application/json".into()),
        jsonrpc_id: Some("1".into()),
        rpc_method: Some("tools/call".into()),
        tool_name: Some("search, \"quoted\"\nline".into()),
        is_error: Some(false),
        final_response: true,
        request_bytes: 120,
        response_bytes: 340,
        user_agent: Some("node".into()),
        tls_version: Some("TLS 1.3".into()),
        tls_sni: Some("mcp.example.com".into()),
        ..ex(1, 1_795_982_048_123_456)
    };
    let second = Exchange {
        tcp_stream: None,
        http_version: Some("HTTP/2"),
        h2_stream: Some(u32::MAX),
        session_id: Some(arcstr::ArcStr::new()),
        jsonrpc_id: Some("\"abc\"".into()),
        rpc_method: Some("tools/list".into()),
        outcome: Outcome::JsonrpcError,
        layer: Layer::Protocol,
        error_code: Some(-32602),
        error_message: Some("Invalid params: \"x\", y\r\nz".into()),
        anomalies: "http.gap_in_body;rpc.bad".split(';').collect(),
        sse_events: 3,
        stream_end: StreamEnd::CaptureEnd,
        ..ex(2, -1)
    };
    let third = Exchange {
        request_bytes: u64::MAX,
        attempt: 2,
        retry_of: Some(1),
        retry_origin: RetryOrigin::Sdk,
        retry_evidence: Some("same id+body 412ms after HTTP 503, same user-agent".into()),
        retry_findings: [Finding::UnsafeRetry, Finding::NoBackoff]
            .into_iter()
            .collect(),
        http_status: Some(u16::MAX),
        error_code: Some(i64::MIN),
        latency_ms: Some(0.1),
        ts_response: Some(100),
        ..ex(3, 0)
    };
    vec![first, second, third]
}
