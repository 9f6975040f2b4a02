//! JSON-RPC envelopes: single messages and batches, any bytes. Also a differential check:
//! the one-pass digest of a body must agree with fingerprints of the fully parsed value.
#![no_main]
use libfuzzer_sys::fuzz_target;
use mcp_trace::rpc::digest::{ParamsKeys, digest_body};
use mcp_trace::rpc::{canonical_fingerprint, canonical_fingerprint_without, canonical_json, parse_body};
use serde_json::Value;

const IGNORED: [&str; 2] = ["_meta", "progressToken"];
const KEYS: ParamsKeys<'static> = ParamsKeys {
    read: &["name", "_meta"],
    present: &["inputResponses"],
    ignored: &IGNORED,
};

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
    let full = serde_json::from_slice::<Value>(data);
    let digest = digest_body(data, &KEYS);
    match (&full, &digest) {
        (Ok(v), Ok((_, digests))) => {
            let _ = canonical_json(v);
            let elements: Vec<&Value> = match v {
                Value::Array(items) => items.iter().collect(),
                other => vec![other],
            };
            assert_eq!(elements.len(), digests.len());
            for (e, d) in elements.iter().zip(digests) {
                assert_eq!(d.body, canonical_fingerprint(e));
                let params = e.as_object().and_then(|o| o.get("params"));
                assert_eq!(d.params, params.map(|p| canonical_fingerprint_without(p, &IGNORED)));
            }
        }
        (Err(a), Err(b)) => assert_eq!(a.to_string(), b.to_string()),
        _ => panic!("digest and Value disagree on validity: {:?} vs {:?}", full.is_ok(), digest.is_ok()),
    }
});
