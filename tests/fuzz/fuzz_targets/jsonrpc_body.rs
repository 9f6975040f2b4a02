//! JSON-RPC envelopes: single messages and batches, any bytes.
#![no_main]
use libfuzzer_sys::fuzz_target;
use mcp_trace::rpc::{canonical_json, parse_body};

fuzz_target!(|data: &[u8]| {
    if let Ok(messages) = parse_body(data) {
        for m in &messages {
            let _ = m.method();
            let _ = m.is_response();
            if let Some(id) = m.id() {
                let _ = id.to_json_text();
            }
        }
    }
    if let Ok(v) = serde_json::from_slice::<serde_json::Value>(data) {
        let _ = canonical_json(&v);
    }
});
