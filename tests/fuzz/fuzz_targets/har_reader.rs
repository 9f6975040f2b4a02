//! HAR reader: any bytes as a HAR document (JSON, BOM, .zhar).
#![no_main]
use libfuzzer_sys::fuzz_target;
use mcp_trace::http::HttpCounters;
use mcp_trace::http::HttpEvent;

fuzz_target!(|data: &[u8]| {
    let mut stats = HttpCounters::default();
    if let Ok(events) = mcp_trace::har::read_har("fuzz.har", data, 1 << 48, &mut stats) {
        let requests = events
            .iter()
            .filter(|e| matches!(e, HttpEvent::Request(_)))
            .count();
        assert_eq!(requests as u64, stats.http_exchanges);
    }
});
