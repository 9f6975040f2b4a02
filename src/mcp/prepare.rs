//! The JSON work on a POST body that needs no analyzer state: parsing, the retry
//! fingerprints, and cutting `params` down to the members the analyzer reads. It is a pure
//! function of the request, so the pipeline runs it on the thread that produced the HTTP
//! event ([`prepare`]) and the analyzer's thread, the one that cannot be split, does less.
//! [`super::Analyzer::push`] prepares inline when handed nothing.

use crate::http::HttpEvent;
use crate::rpc::digest::{ElementDigest, ParamsKeys, digest_body};
use serde_json::Value;

/// Top-level `params` members retry equivalence ignores (report-schema.md section 4).
pub(super) const PARAMS_KEYS_IGNORED: [&str; 4] =
    ["_meta", "progressToken", "inputResponses", "requestState"];

/// `params` members the analyzer reads; whose value it needs is kept, the others are only
/// tested for presence (kept as `null`).
const PARAMS_KEYS_READ: [&str; 6] = [
    "name",
    "_meta",
    "protocolVersion",
    "clientInfo",
    "requestId",
    "task",
];
const PARAMS_KEYS_PRESENT: [&str; 2] = ["inputResponses", "requestState"];

/// A POST body, parsed, with its fingerprints.
#[derive(Debug)]
pub struct PreparedPost {
    /// The body as JSON with each element's `params` cut down, or serde_json's error text.
    pub(super) parsed: Result<Value, String>,
    /// Per JSON-RPC element (one, or each of a batch): the canonical fingerprint of the whole
    /// element and of its `params` without [`PARAMS_KEYS_IGNORED`], taken before cutting.
    pub(super) fingerprints: Vec<ElementDigest>,
}

/// The preparation of `ev` when it is a POST request (the only event whose body the analyzer
/// parses up front).
pub fn prepare(ev: &HttpEvent) -> Option<Box<PreparedPost>> {
    match ev {
        HttpEvent::Request(req) if req.head.method.eq_ignore_ascii_case("POST") => {
            Some(Box::new(prepare_post(&req.body)))
        }
        _ => None,
    }
}

/// Parses `body` (a leading UTF-8 BOM is skipped) and fingerprints its elements in one pass;
/// object `params` are cut to the members the analyzer reads (tool arguments, the bulk of a
/// request, are hashed as they stream by and never built).
pub(super) fn prepare_post(body: &[u8]) -> PreparedPost {
    let body = body.strip_prefix(b"\xEF\xBB\xBF").unwrap_or(body);
    let keys = ParamsKeys {
        read: &PARAMS_KEYS_READ,
        present: &PARAMS_KEYS_PRESENT,
        ignored: &PARAMS_KEYS_IGNORED,
    };
    match digest_body(body, &keys) {
        Ok((value, fingerprints)) => PreparedPost {
            parsed: Ok(value),
            fingerprints,
        },
        Err(e) => PreparedPost {
            parsed: Err(e.to_string()),
            fingerprints: Vec::new(),
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::rpc::{canonical_fingerprint, canonical_fingerprint_without};

    #[test]
    fn fingerprints_are_taken_before_params_are_cut() {
        let body = br#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"echo","arguments":{"text":"hi"},"_meta":{"progressToken":7},"inputResponses":{"a":1}}}"#;
        let p = prepare_post(body);
        let full: Value = serde_json::from_slice(body).unwrap();
        assert_eq!(p.fingerprints.len(), 1);
        assert_eq!(p.fingerprints[0].body, canonical_fingerprint(&full));
        assert_eq!(
            p.fingerprints[0].params,
            Some(canonical_fingerprint_without(
                &full["params"],
                &PARAMS_KEYS_IGNORED
            ))
        );
        let params = &p.parsed.as_ref().unwrap()["params"];
        assert_eq!(params["name"], "echo");
        assert_eq!(params["_meta"]["progressToken"], 7);
        assert!(params.get("arguments").is_none());
        assert_eq!(params.get("inputResponses"), Some(&Value::Null));
    }

    #[test]
    fn batches_get_one_entry_per_element_and_errors_keep_the_text() {
        let p = prepare_post(br#"[{"jsonrpc":"2.0","method":"a"},{"jsonrpc":"2.0","id":2,"method":"b","params":[1]}]"#);
        assert_eq!(p.fingerprints.len(), 2);
        assert!(p.fingerprints[0].params.is_none());
        assert!(p.fingerprints[1].params.is_some());
        let bad = prepare_post(b"{not json");
        assert!(bad.parsed.is_err() && bad.fingerprints.is_empty());
        let bom = prepare_post(b"\xEF\xBB\xBF{\"jsonrpc\":\"2.0\",\"method\":\"x\"}");
        assert!(bom.parsed.is_ok());
    }
}
