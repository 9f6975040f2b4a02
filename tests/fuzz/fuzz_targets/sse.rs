//! SSE parser: the same stream fed whole and cut at fuzz-chosen points
//! must dispatch the same events (first byte: the cut step).
#![no_main]
use libfuzzer_sys::fuzz_target;
use mcp_trace::rpc::SseParser;

fuzz_target!(|data: &[u8]| {
    let Some((&step, body)) = data.split_first() else {
        return;
    };
    let mut whole = SseParser::new();
    let mut a = Vec::new();
    whole.feed(body, 1, &mut a);
    whole.finish(&mut a);
    let mut pieces = SseParser::new();
    let mut b = Vec::new();
    for piece in body.chunks(usize::from(step).max(1)) {
        pieces.feed(piece, 1, &mut b);
    }
    pieces.finish(&mut b);
    assert_eq!(a, b);
    assert_eq!(whole.events(), a.len() as u64);
    assert_eq!(whole.take_anomalies(), pieces.take_anomalies());
});
