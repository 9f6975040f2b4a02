//! JSON-RPC envelopes: single messages and batches, any bytes. Also differential checks: the
//! one-pass digest of a body must agree with fingerprints of the fully parsed value, the
//! slim response parse with the full one (results cut alike, same verdicts), and the text
//! parse of SSE data with the byte parse.
#![no_main]
use libfuzzer_sys::fuzz_target;
use mcp_trace::rpc::digest::ParamsKeys;
use mcp_trace::rpc::envelope::slim_result;
use mcp_trace::rpc::oracle::{canonical_json, digest_body, parse_body};
use mcp_trace::rpc::{
    RpcError, RpcMessage, canonical_fingerprint, canonical_fingerprint_without,
    parse_response_body, parse_response_text,
};
use serde_json::Value;

const IGNORED: [&str; 2] = ["_meta", "progressToken"];
const KEYS: ParamsKeys<'static> = ParamsKeys {
    read: &["name", "_meta"],
    present: &["inputResponses"],
    ignored: &IGNORED,
};

fuzz_target!(|data: &[u8]| {
    // SSE data is parsed as text (no second UTF-8 check): it must read as its bytes do.
    if let Ok(text) = std::str::from_utf8(data) {
        assert_eq!(
            format!("{:?}", parse_response_text(text)),
            format!("{:?}", parse_response_body(data))
        );
    }
    match (parse_body(data), parse_response_body(data)) {
        (Ok(full), Ok(slim)) => {
            assert_eq!(full.len(), slim.len());
            for (f, s) in full.iter().zip(&slim) {
                match (f, s) {
                    (RpcMessage::Result { id: a, result: r }, RpcMessage::Result { id: b, result: q }) => {
                        assert_eq!(a, b);
                        assert_eq!(&slim_result(r), q);
                    }
                    (
                        RpcMessage::Invalid { reason: a, id: x, .. },
                        RpcMessage::Invalid { reason: b, id: y, .. },
                    ) => {
                        assert_eq!((a, x), (b, y));
                        assert_eq!(f.method(), s.method());
                        assert_eq!(f.is_response(), s.is_response());
                    }
                    (f, s) => assert_eq!(f, s),
                }
            }
        }
        (Err(a), Err(b)) => assert_eq!(a.to_string(), b.to_string()),
        // Valid JSON inside a skipped member that the full parse cannot build (see
        // `parse_response_body`): deep nesting, lone-surrogate escapes.
        (Err(RpcError::NotJson(e)), Ok(_))
            if e.starts_with("recursion limit exceeded")
                || e.starts_with("invalid unicode code point") => {}
        (a, b) => panic!("full and slim parses disagree: {a:?} vs {b:?}"),
    }
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
