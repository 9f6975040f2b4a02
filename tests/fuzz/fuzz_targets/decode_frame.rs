//! Frame decoding (link layer, IPv4/IPv6 with fragments and tunnels, TCP):
//! a sequence of frames through one decoder.
#![no_main]
use libfuzzer_sys::fuzz_target;
use mcp_trace::decode::{Decoded, Decoder};

fuzz_target!(|data: &[u8]| {
    let mut decoder = Decoder::new();
    for frame in mcp_trace_fuzz::frames(data) {
        if let Decoded::Segment(seg) = decoder.decode(&frame) {
            assert_eq!(seg.frame, frame.index);
        }
    }
    decoder.finish();
});
