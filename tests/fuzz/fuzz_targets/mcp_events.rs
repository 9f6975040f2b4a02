//! MCP analyzer (sessions, pairing, classification, retries): first byte even,
//! HTTP events in any order; odd, a conversation through the HTTP stage first.
#![no_main]
use libfuzzer_sys::fuzz_target;
use mcp_trace::http::{HttpCounters, HttpStage};
use mcp_trace::mcp::{Analyzer, InferenceConfig, McpCounters};
use mcp_trace::report::Table;
use mcp_trace::stream::StreamStage;

fuzz_target!(|data: &[u8]| {
    let Some((&mode, rest)) = data.split_first() else {
        return;
    };
    let mut stats = HttpCounters::default();
    let mut mcp = McpCounters::default();
    let events = if mode & 1 == 0 {
        mcp_trace_fuzz::http_events(rest)
    } else {
        let mut stage = HttpStage::new(vec!["fuzz".into()]);
        let mut out = Vec::new();
        for ev in mcp_trace_fuzz::stream_events(rest) {
            stage.push(ev, &mut stats, &mut out);
        }
        stage.finish(&mut stats, &mut out);
        out
    };
    let mut analyzer = Analyzer::new(InferenceConfig::default());
    for ev in events {
        analyzer.push(ev, &mut mcp);
    }
    let rows = analyzer.finish(&mut mcp);
    for row in &rows {
        assert_eq!(
            row.cells().len(),
            <mcp_trace::mcp::Exchange as Table>::COLUMNS.len()
        );
    }
});
