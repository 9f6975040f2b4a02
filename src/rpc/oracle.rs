//! Differential oracles: reference readers built on serde_json's `Value`, kept only for the
//! tests and fuzzers that check the one-pass readers against them (same messages, same
//! fingerprints, same errors). Nothing in the pipeline calls them.

use super::RpcError;
use super::digest::{ElementDigest, ParamsKeys, digest_envelopes};
use super::envelope::{EnvelopeBody, response_envelopes};
use super::jsonrpc::{RpcMessage, parse_value};
use serde_json::Value;

/// Parse an HTTP body or SSE `data`: one message or a batch (one entry per element).
pub fn parse_body(bytes: &[u8]) -> Result<Vec<RpcMessage>, RpcError> {
    let bytes = bytes.strip_prefix(b"\xEF\xBB\xBF").unwrap_or(bytes);
    if bytes.iter().all(u8::is_ascii_whitespace) {
        return Err(RpcError::Empty);
    }
    let value: Value =
        serde_json::from_slice(bytes).map_err(|e| RpcError::NotJson(e.to_string()))?;
    parse_value(value)
}

/// Canonical JSON text: object keys sorted at every level, no spacing.
/// Independent of serde_json's `preserve_order` feature.
pub fn canonical_json(v: &Value) -> String {
    let mut out = String::new();
    write_canonical(v, &mut out);
    out
}

fn write_canonical(v: &Value, out: &mut String) {
    match v {
        Value::Object(map) => {
            let mut keys: Vec<&String> = map.keys().collect();
            keys.sort();
            out.push('{');
            for (i, k) in keys.into_iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                out.push_str(&Value::String(k.clone()).to_string());
                out.push(':');
                if let Some(val) = map.get(k) {
                    write_canonical(val, out);
                }
            }
            out.push('}');
        }
        Value::Array(items) => {
            out.push('[');
            for (i, item) in items.iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                write_canonical(item, out);
            }
            out.push(']');
        }
        other => out.push_str(&other.to_string()),
    }
}

/// Parses a body, fingerprinting each element and its `params` (less `ignored` keys). The
/// returned value is the body with every element's object `params` cut to the keys in `read`
/// (values kept) and `present` (kept as `null`). Errors are serde_json's, as
/// `serde_json::from_slice::<Value>` would report them.
pub fn digest_body(
    bytes: &[u8],
    keys: &ParamsKeys<'_>,
) -> Result<(Value, Vec<ElementDigest>), serde_json::Error> {
    digest_envelopes(bytes, keys).map(|(body, digests)| (body.into_value(), digests))
}

/// A response body (or SSE `data`) parsed with each element's object `result` cut to what
/// classification reads: `resultType`, `isError`, `protocolVersion` as they are, `task` as
/// `{}` when an object (else `null`), `content` as its blocks' `type`s (`{"type": t}`, or
/// `null` for a block without a string type; `null` when not an array). Members other than
/// `jsonrpc`, `id`, `method`, `params`, `result` and `error` are skipped unbuilt. Tool
/// results (the bulk of a response) are thus scanned, never built into a tree. Errors are
/// serde_json's, as for `serde_json::from_slice::<Value>`.
pub fn slim_response_body(bytes: &[u8]) -> Result<Value, serde_json::Error> {
    response_envelopes(bytes).map(EnvelopeBody::into_value)
}
