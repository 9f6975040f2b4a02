//! JSON-RPC 2.0 envelopes (<https://www.jsonrpc.org/specification>, sections
//! 4-6) with the rules MCP adds (mcp-wire.md section 3): request ids are
//! strings or integers, never `null`; results are objects; an error response
//! may carry a `null` or absent id.
//!
//! Never panics. A body that is JSON but not a valid envelope becomes
//! [`RpcMessage::Invalid`] with the reason, so the caller can still pair it by id.

use super::RpcError;
use super::envelope::{Envelope, EnvelopeBody, EnvelopeElement};
use serde_json::Value;
use std::fmt;

/// A JSON-RPC id: a string or a number (kept as its JSON number text).
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum RpcId {
    Number(String),
    String(String),
}

impl RpcId {
    /// The id of `v` when it is a string or a number.
    pub fn from_value(v: &Value) -> Option<RpcId> {
        match v {
            Value::Number(n) => Some(RpcId::Number(number_text(n))),
            Value::String(s) => Some(RpcId::String(s.clone())),
            _ => None,
        }
    }

    /// The id as JSON text (`1`, `"abc"`), the `jsonrpc_id` column.
    pub fn to_json_text(&self) -> String {
        match self {
            RpcId::Number(n) => n.clone(),
            RpcId::String(s) => Value::String(s.clone()).to_string(),
        }
    }
}

/// A number's text as serde_json writes it; integers (nearly every id) through `itoa`
/// directly, without the formatting machinery.
fn number_text(n: &serde_json::Number) -> String {
    if let Some(u) = n.as_u64() {
        itoa::Buffer::new().format(u).to_owned()
    } else if let Some(i) = n.as_i64() {
        itoa::Buffer::new().format(i).to_owned()
    } else {
        n.to_string()
    }
}

impl fmt::Display for RpcId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.to_json_text())
    }
}

/// One JSON-RPC message (an element of a batch counts as one).
#[derive(Debug, Clone, PartialEq)]
pub enum RpcMessage {
    Request {
        id: RpcId,
        method: String,
        params: Option<Value>,
    },
    Notification {
        method: String,
        params: Option<Value>,
    },
    Result {
        id: RpcId,
        result: Value,
    },
    Error {
        id: Option<RpcId>,
        code: i64,
        message: String,
        data: Option<Value>,
    },
    /// JSON, but not a valid JSON-RPC 2.0 envelope.
    Invalid {
        reason: String,
        id: Option<RpcId>,
        raw: Value,
    },
}

impl RpcMessage {
    /// The id of a request, result, error, or invalid message.
    pub fn id(&self) -> Option<&RpcId> {
        match self {
            RpcMessage::Request { id, .. } | RpcMessage::Result { id, .. } => Some(id),
            RpcMessage::Error { id, .. } | RpcMessage::Invalid { id, .. } => id.as_ref(),
            RpcMessage::Notification { .. } => None,
        }
    }

    /// The method of a request or notification (or of an invalid message that names one).
    pub fn method(&self) -> Option<&str> {
        match self {
            RpcMessage::Request { method, .. } | RpcMessage::Notification { method, .. } => {
                Some(method)
            }
            RpcMessage::Invalid { raw, .. } => raw.get("method").and_then(Value::as_str),
            _ => None,
        }
    }

    /// The `params` of a request or notification (or of an invalid message that has them).
    pub fn params(&self) -> Option<&Value> {
        match self {
            RpcMessage::Request { params, .. } | RpcMessage::Notification { params, .. } => {
                params.as_ref()
            }
            RpcMessage::Invalid { raw, .. } => raw.get("params"),
            _ => None,
        }
    }

    /// A response: a result, an error, or an invalid object without a `method`.
    pub fn is_response(&self) -> bool {
        match self {
            RpcMessage::Result { .. } | RpcMessage::Error { .. } => true,
            // Without a method it can only be (a broken) response.
            RpcMessage::Invalid { raw, .. } => raw.is_object() && raw.get("method").is_none(),
            _ => false,
        }
    }
}

/// [`parse_body`] for a response body or SSE `data`: results come cut as by
/// [`super::envelope::slim_result`] and members outside the envelope are skipped unbuilt, so a
/// large tool result is scanned but never built. Same messages, ids, errors and verdicts as
/// [`parse_body`] (an `Invalid` message's `raw` holds only the envelope members), with two
/// differences, both inside skipped members and both valid JSON by RFC 8259's grammar, which
/// [`parse_body`] refuses because it builds Rust strings and recurses: nesting deeper than
/// serde_json's 128 levels (the skipping is iterative, so no stack is at risk) and `\u`
/// escapes of lone surrogates ("invalid unicode code point" there).
pub fn parse_response_body(bytes: &[u8]) -> Result<Vec<RpcMessage>, RpcError> {
    let bytes = bytes.strip_prefix(b"\xEF\xBB\xBF").unwrap_or(bytes);
    match simdutf8::basic::from_utf8(bytes) {
        Ok(text) => parse_unmarked_text(text),
        // Not UTF-8, so not JSON: serde_json's message says where it breaks.
        Err(_) => Err(RpcError::NotJson(
            serde_json::from_slice::<Value>(bytes)
                .map_or_else(|e| e.to_string(), |_| "invalid UTF-8".to_string()),
        )),
    }
}

/// [`parse_response_body`] of text (an SSE event's data), which needs no UTF-8 check.
pub fn parse_response_text(text: &str) -> Result<Vec<RpcMessage>, RpcError> {
    parse_unmarked_text(text.strip_prefix('\u{FEFF}').unwrap_or(text))
}

/// A response body or SSE data without its byte order mark.
fn parse_unmarked_text(text: &str) -> Result<Vec<RpcMessage>, RpcError> {
    if text.bytes().all(|b| b.is_ascii_whitespace()) {
        return Err(RpcError::Empty);
    }
    let body = match super::envelope::response_envelopes_str(text) {
        Ok(v) => v,
        Err(slim) => return Err(not_json(slim, serde_json::from_str::<Value>(text).err())),
    };
    parse_envelopes(body)
}

/// Skipping reports some positions one column off: the full parser's message is the one
/// shown for every other body, so it is the one kept (error path only).
fn not_json(slim: serde_json::Error, full: Option<serde_json::Error>) -> RpcError {
    RpcError::NotJson(full.map_or_else(|| slim.to_string(), |f| f.to_string()))
}

/// [`parse_value`] of a body read as envelopes ([`EnvelopeBody::into_value`]'s value).
pub fn parse_envelopes(body: EnvelopeBody) -> Result<Vec<RpcMessage>, RpcError> {
    match body {
        EnvelopeBody::One(env) => Ok(vec![classify_envelope(env)]),
        EnvelopeBody::Batch(items) if items.is_empty() => Err(RpcError::EmptyBatch),
        EnvelopeBody::Batch(items) => Ok(items
            .into_iter()
            .map(|item| match item {
                EnvelopeElement::Envelope(env) => classify_envelope(env),
                EnvelopeElement::Other(v) => classify(v),
            })
            .collect()),
        EnvelopeBody::Other(v) => Err(RpcError::NotJsonRpc(json_kind(&v))),
    }
}

/// JSON-RPC 2.0 section 4 (request), 4.1 (notification), 5 (response), 5.1 (error object), read
/// from the envelope's fields; an invalid one keeps the object it stands for as `raw`.
pub(crate) fn classify_envelope(env: Envelope) -> RpcMessage {
    if env.jsonrpc.as_ref().and_then(Value::as_str) != Some("2.0") {
        return invalid("jsonrpc is not \"2.0\"", env.into_value());
    }
    if let Some(m) = &env.method {
        let Some(method) = m.as_str().map(str::to_string) else {
            return invalid("method is not a string", env.into_value());
        };
        if env.result.is_some() || env.error.is_some() {
            return invalid("both method and result/error", env.into_value());
        }
        let id = match &env.id {
            None => None,
            // MCP: request ids MUST NOT be null (mcp-wire.md 3.1/3.2).
            Some(Value::Null) => return invalid("request id is null", env.into_value()),
            Some(idv) => match RpcId::from_value(idv) {
                Some(id) => Some(id),
                None => return invalid("request id is not a string or number", env.into_value()),
            },
        };
        let params = env.params;
        return match id {
            None => RpcMessage::Notification { method, params },
            Some(id) => RpcMessage::Request { id, method, params },
        };
    }
    match (&env.result, &env.error) {
        (Some(_), Some(_)) => invalid("both result and error", env.into_value()),
        (None, None) => invalid("neither result nor error", env.into_value()),
        (Some(result), None) => {
            let Some(id) = env.id.as_ref().and_then(RpcId::from_value) else {
                return invalid("result without a string or number id", env.into_value());
            };
            if !result.is_object() {
                return invalid("result is not an object", env.into_value());
            }
            RpcMessage::Result {
                id,
                result: env.result.unwrap_or_default(),
            }
        }
        (None, Some(err)) => {
            let id = match &env.id {
                None | Some(Value::Null) => None,
                Some(idv) => match RpcId::from_value(idv) {
                    Some(id) => Some(id),
                    None => return invalid("error id is not a string or number", env.into_value()),
                },
            };
            let code = err.get("code").and_then(Value::as_i64);
            let message = err.get("message").and_then(Value::as_str);
            match (code, message) {
                (Some(code), Some(message)) => RpcMessage::Error {
                    id,
                    code,
                    message: message.to_string(),
                    data: err.get("data").cloned(),
                },
                _ => invalid(
                    "bad error shape (code must be an integer, message a string)",
                    env.into_value(),
                ),
            }
        }
    }
}

/// Classify an already parsed JSON value (object or batch array).
pub fn parse_value(value: Value) -> Result<Vec<RpcMessage>, RpcError> {
    match value {
        Value::Object(_) => Ok(vec![classify(value)]),
        Value::Array(items) if items.is_empty() => Err(RpcError::EmptyBatch),
        Value::Array(items) => Ok(items.into_iter().map(classify).collect()),
        other => Err(RpcError::NotJsonRpc(json_kind(&other))),
    }
}

fn json_kind(v: &Value) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "an array",
        Value::Object(_) => "an object",
    }
}

fn invalid(reason: impl Into<String>, raw: Value) -> RpcMessage {
    let id = raw.get("id").and_then(RpcId::from_value);
    RpcMessage::Invalid {
        reason: reason.into(),
        id,
        raw,
    }
}

/// One element: an object is judged by its envelope ([`classify_envelope`]); anything else is
/// invalid.
fn classify(v: Value) -> RpcMessage {
    match v {
        Value::Object(map) => classify_envelope(Envelope::from_map(map)),
        other => {
            let kind = json_kind(&other);
            invalid(format!("batch element is {kind}, not an object"), other)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::super::fingerprint::{canonical_fingerprint, canonical_fingerprint_without};
    use super::super::oracle::{canonical_json, parse_body};
    use super::*;

    /// Ids as numbers read as serde_json writes them, through the integer fast path or not.
    #[test]
    fn numeric_ids_keep_serde_json_text() {
        for text in [
            "0",
            "7",
            "18446744073709551615",
            "-1",
            "-9223372036854775808",
            "1.5",
            "1e400",
            "-0.0",
        ] {
            let Ok(v) = serde_json::from_str::<Value>(text) else {
                continue; // out of range for serde_json: no id either way
            };
            let Value::Number(n) = &v else {
                panic!("{text}")
            };
            assert_eq!(
                RpcId::from_value(&v),
                Some(RpcId::Number(n.to_string())),
                "{text}"
            );
        }
    }
    use serde_json::json;

    fn one(s: &str) -> RpcMessage {
        let mut v = parse_body(s.as_bytes()).unwrap();
        assert_eq!(v.len(), 1);
        v.remove(0)
    }

    fn reason(m: &RpcMessage) -> &str {
        match m {
            RpcMessage::Invalid { reason, .. } => reason,
            other => panic!("expected Invalid, got {other:?}"),
        }
    }

    #[test]
    fn request_notification_result_error() {
        assert_eq!(
            one(r#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"x"}}"#),
            RpcMessage::Request {
                id: RpcId::Number("1".into()),
                method: "tools/call".into(),
                params: Some(json!({"name":"x"})),
            }
        );
        assert_eq!(
            one(r#"{"method":"notifications/initialized","jsonrpc":"2.0"}"#),
            RpcMessage::Notification {
                method: "notifications/initialized".into(),
                params: None
            }
        );
        assert_eq!(
            one(r#"{"jsonrpc":"2.0","id":"a","result":{}}"#),
            RpcMessage::Result {
                id: RpcId::String("a".into()),
                result: json!({})
            }
        );
        assert_eq!(
            one(
                r#"{"jsonrpc":"2.0","id":null,"error":{"code":-32602,"message":"Invalid params","data":1}}"#
            ),
            RpcMessage::Error {
                id: None,
                code: -32602,
                message: "Invalid params".into(),
                data: Some(json!(1))
            }
        );
    }

    #[test]
    fn invalid_envelopes() {
        assert_eq!(
            reason(&one(r#"{"jsonrpc":"1.0","id":1,"result":{}}"#)),
            "jsonrpc is not \"2.0\""
        );
        let m = one(r#"{"jsonrpc":"2.0","id":3,"result":{},"error":{"code":1,"message":"x"}}"#);
        assert_eq!(reason(&m), "both result and error");
        assert_eq!(m.id(), Some(&RpcId::Number("3".into())));
        assert!(m.is_response());
        assert_eq!(
            reason(&one(r#"{"jsonrpc":"2.0","id":3}"#)),
            "neither result nor error"
        );
        assert!(
            reason(&one(
                r#"{"jsonrpc":"2.0","id":3,"error":{"code":"x","message":"m"}}"#
            ))
            .starts_with("bad error shape")
        );
        assert!(
            reason(&one(
                r#"{"jsonrpc":"2.0","id":3,"error":{"code":1.5,"message":"m"}}"#
            ))
            .starts_with("bad error shape")
        );
        assert_eq!(
            reason(&one(r#"{"jsonrpc":"2.0","id":null,"method":"x"}"#)),
            "request id is null"
        );
        assert_eq!(
            reason(&one(r#"{"jsonrpc":"2.0","id":1,"result":5}"#)),
            "result is not an object"
        );
        assert_eq!(
            reason(&one(r#"{"jsonrpc":"2.0","id":null,"result":{}}"#)),
            "result without a string or number id"
        );
    }

    #[test]
    fn batches_and_errors() {
        let v = parse_body(
            br#"[{"jsonrpc":"2.0","id":1,"method":"a"},{"jsonrpc":"2.0","method":"b"},7]"#,
        )
        .unwrap();
        assert_eq!(v.len(), 3);
        assert!(matches!(v[0], RpcMessage::Request { .. }));
        assert!(matches!(v[1], RpcMessage::Notification { .. }));
        assert_eq!(reason(&v[2]), "batch element is a number, not an object");
        assert!(matches!(parse_body(b"[]"), Err(RpcError::EmptyBatch)));
        assert!(matches!(parse_body(b"  \n"), Err(RpcError::Empty)));
        assert!(matches!(
            parse_body(b"{\"jsonrpc\":"),
            Err(RpcError::NotJson(_))
        ));
        assert!(matches!(
            parse_body(b"\"x\""),
            Err(RpcError::NotJsonRpc("a string"))
        ));
        assert!(parse_body(b"\xEF\xBB\xBF{\"jsonrpc\":\"2.0\",\"method\":\"x\"}").is_ok());
    }

    #[test]
    fn ids_as_json_text() {
        assert_eq!(RpcId::Number("1".into()).to_json_text(), "1");
        assert_eq!(RpcId::String("a\"b".into()).to_json_text(), "\"a\\\"b\"");
    }

    fn parse(s: &str) -> Value {
        serde_json::from_str(s).unwrap()
    }

    #[test]
    fn fingerprints_agree_exactly_when_canonical_texts_do() {
        // The one-pass fingerprint keeps canonical_json's equivalence: same normalisation.
        let texts = [
            r#"{"b":1, "a":{"y":[1,{"d":2,"c":3}],"x":null}}"#,
            r#"{"a":{"x":null,"y":[1,{"c":3,"d":2}]},"b":1}"#,
            r#"{"a":{"x":null,"y":[1,{"c":3,"d":3}]},"b":1}"#,
            r#"{"s":"q\"u\\o\nte \u00e9 \u0001 \/"}"#,
            r#"{"s":"q\"u\\o\nte é \u0001 /"}"#,
            r#"{"s":"q\"u\\o\nte é \u0002 /"}"#,
            r#"{"n":-0.5,"e":1e300,"t":true,"f":false}"#,
            r#"{"big":18446744073709551615,"neg":-9223372036854775808}"#,
            r#"{"é":1,"Z":2,"a":3,"":4,"aa":[],"ab":{}}"#,
            r#"[1,"1",1.0,null,[],{}]"#,
            r#"[[1],"1",1.0,null,[],{}]"#,
            r#"["a","b"]"#,
            r#"["ab"]"#,
            r#"["a,b"]"#,
            r#"[["a"],"b"]"#,
            r#"{"a":"b"}"#,
            r#"{"a":["b"]}"#,
            r#""plain""#,
            "12",
            "1E1",
            "10.0",
            "10",
            "null",
            "true",
            "false",
            "[]",
            "{}",
            r#""""#,
        ];
        for x in texts {
            for y in texts {
                let (a, b) = (parse(x), parse(y));
                assert_eq!(
                    canonical_fingerprint(&a) == canonical_fingerprint(&b),
                    canonical_json(&a) == canonical_json(&b),
                    "{x} vs {y}"
                );
            }
        }
    }

    #[test]
    fn fingerprint_ignores_key_order_and_spacing_only() {
        let a = parse(r#"{"name":"t","arguments":{"b":[1,2],"a":{"x":1,"y":"z"}}}"#);
        let b = parse(
            "{ \"arguments\" : { \"a\" : { \"y\" : \"z\" , \"x\" : 1 } ,\n \"b\" : [ 1 , 2 ] } , \"name\" : \"t\" }",
        );
        assert_eq!(canonical_fingerprint(&a), canonical_fingerprint(&b));
        // Different values differ, including array order and the number/string forms that
        // canonical_json keeps apart: 1, 1.0, "1" (serde_json number text is not normalised).
        let fp = |s: &str| canonical_fingerprint(&parse(s));
        let forms = [
            r#"{"a":1}"#,
            r#"{"a":1.0}"#,
            r#"{"a":"1"}"#,
            r#"{"a":[1]}"#,
            r#"{"a":true}"#,
            r#"{"a":null}"#,
            r#"{"a":{}}"#,
            r#"{"b":1}"#,
            r#"{"a":1,"b":2}"#,
            r#"{"a":[1,2]}"#,
            r#"{"a":[2,1]}"#,
            r#"{"a":"x,\"b\":1"}"#,
            r#"{}"#,
        ];
        for (i, x) in forms.iter().enumerate() {
            for y in forms.iter().skip(i + 1) {
                assert_ne!(fp(x), fp(y), "{x} vs {y}");
            }
        }
        assert_eq!(canonical_json(&parse("1.0")), "1.0");
        assert_eq!(canonical_json(&parse("1E2")), "100.0");
        assert_eq!(fp("1E2"), fp("100.0"));
    }

    #[test]
    fn fingerprint_without_skips_top_level_keys_only() {
        let skip = ["_meta", "progressToken"];
        let full = parse(r#"{"name":"t","_meta":{"k":1},"progressToken":7,"x":{"_meta":2}}"#);
        let mut stripped = full.clone();
        for k in skip {
            stripped.as_object_mut().unwrap().remove(k);
        }
        assert_eq!(
            canonical_fingerprint_without(&full, &skip),
            canonical_fingerprint(&stripped)
        );
        let fp = |s: &str| canonical_fingerprint(&parse(s));
        assert_eq!(
            canonical_fingerprint_without(&full, &skip),
            fp(r#"{"name":"t","x":{"_meta":2}}"#)
        );
        assert_ne!(
            canonical_fingerprint(&full),
            fp(r#"{"name":"t","x":{"_meta":2}}"#)
        );
        // Skipping the first member or all of them leaves the rest or `{}`.
        assert_eq!(
            canonical_fingerprint_without(&parse(r#"{"_meta":1,"a":2}"#), &skip),
            fp(r#"{"a":2}"#)
        );
        assert_eq!(
            canonical_fingerprint_without(&parse(r#"{"_meta":1}"#), &skip),
            fp("{}")
        );
        // Not an object: nothing to skip.
        assert_eq!(
            canonical_fingerprint_without(&parse("[1]"), &skip),
            fp("[1]")
        );
    }

    /// Small alphabets, so distinct values often share a canonical text (`1E0` and `1.0`)
    /// or come close to it (`1`, `1.0`, `"1"`, `["1"]`).
    fn small_json() -> impl proptest::strategy::Strategy<Value = Value> {
        use proptest::prelude::*;
        let leaf = prop_oneof![
            Just(Value::Null),
            any::<bool>().prop_map(Value::Bool),
            prop::sample::select(vec!["1", "1.0", "1E0", "2", "-0", "0", "0.0"]).prop_map(parse),
            prop::sample::select(vec!["", "1", "a", "a\"", "é", "[]"])
                .prop_map(|t| Value::String(t.to_string())),
        ];
        leaf.prop_recursive(2, 6, 2, |inner| {
            prop_oneof![
                prop::collection::vec(inner.clone(), 0..2).prop_map(Value::Array),
                prop::collection::vec(
                    (
                        prop::sample::select(vec!["a", "b", "_meta", "", "type"]),
                        inner
                    ),
                    0..2
                )
                .prop_map(|kv| Value::Object(
                    kv.into_iter().map(|(k, v)| (k.to_string(), v)).collect()
                )),
            ]
        })
    }

    proptest::proptest! {
        #[test]
        fn fingerprint_equality_is_canonical_text_equality(
            vs in proptest::collection::vec(small_json(), 8)
        ) {
            // Every pair of a small batch, so near-misses (true/false, 1/"1") come up often.
            for a in &vs {
                for b in &vs {
                    proptest::prop_assert_eq!(
                        canonical_fingerprint(a) == canonical_fingerprint(b),
                        canonical_json(a) == canonical_json(b),
                        "{} vs {}", a, b
                    );
                }
                // Whatever is skipped, the result is that of the value with those keys removed.
                let mut stripped = a.clone();
                if let Some(o) = stripped.as_object_mut() {
                    o.remove("_meta");
                }
                proptest::prop_assert_eq!(
                    canonical_fingerprint_without(a, &["_meta"]),
                    canonical_fingerprint(&stripped)
                );
                // Any value as a result, an error's data, a whole element or a batch member.
                let as_result = serde_json::json!({"jsonrpc": "2.0", "id": 1, "result": a});
                let as_content = serde_json::json!(
                    {"jsonrpc": "2.0", "id": 2, "result": {"content": a, "task": a, "isError": a}}
                );
                let as_error = serde_json::json!(
                    {"jsonrpc": "2.0", "id": 3, "error": {"code": 1, "message": "m", "data": a}}
                );
                let as_tools = serde_json::json!({"jsonrpc": "2.0", "id": 4, "result": {"tools": [
                    a,
                    {"name": a, "annotations": a, "inputSchema": a},
                    {"name": "t", "name": a, "annotations": {"readOnlyHint": a, "idempotentHint": true}}
                ]}});
                let as_tools_value = serde_json::json!({"jsonrpc": "2.0", "id": 5, "result": {"tools": a}});
                let batch = Value::Array(vec![as_result.clone(), a.clone(), as_content.clone()]);
                for v in [&as_result, &as_content, &as_error, &batch, &as_tools, &as_tools_value, a] {
                    assert_slim_agrees(&v.to_string());
                }
            }
        }
    }

    /// `parse_response_body` gives `parse_body`'s messages with results cut (and an invalid
    /// message's `raw` limited to the envelope members).
    fn assert_slim_agrees(text: &str) {
        use crate::rpc::envelope::slim_result;
        let full = parse_body(text.as_bytes());
        let slim = parse_response_body(text.as_bytes());
        assert_eq!(
            format!("{:?}", parse_response_text(text)),
            format!("{slim:?}"),
            "text and bytes parse alike: {text}"
        );
        match (full, slim) {
            (Ok(full), Ok(slim)) => {
                assert_eq!(full.len(), slim.len(), "{text}");
                for (f, s) in full.iter().zip(&slim) {
                    match (f, s) {
                        (
                            RpcMessage::Result { id: a, result: r },
                            RpcMessage::Result { id: b, result: q },
                        ) => {
                            assert_eq!(a, b, "{text}");
                            assert_eq!(&slim_result(r), q, "{text}");
                            assert_eq!(&slim_result(q), q, "slim_result is idempotent");
                        }
                        (
                            RpcMessage::Invalid {
                                reason: a, id: x, ..
                            },
                            RpcMessage::Invalid {
                                reason: b, id: y, ..
                            },
                        ) => {
                            assert_eq!((a, x), (b, y), "{text}");
                            assert_eq!(f.method(), s.method(), "{text}");
                            assert_eq!(f.is_response(), s.is_response(), "{text}");
                        }
                        (f, s) => assert_eq!(f, s, "{text}"),
                    }
                }
            }
            (Err(a), Err(b)) => assert_eq!(a.to_string(), b.to_string(), "{text}"),
            // Valid JSON in a skipped member that `parse_body` cannot build.
            (Err(RpcError::NotJson(e)), Ok(_))
                if e.starts_with("recursion limit exceeded")
                    || e.starts_with("invalid unicode code point") => {}
            (a, b) => panic!("{text}: {a:?} vs {b:?}"),
        }
    }

    #[test]
    fn sse_text_parses_as_its_bytes_do() {
        for text in [
            "\u{FEFF}{\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{}}",
            "\u{FEFF}  ",
            " \n\t",
            "{\"jsonrpc\":\"2.0\",\"id\":1,\"result\":",
            "{\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{\"content\":[{\"type\":\"text\",\"text\":\"\\ud800\"}]}}",
            "[]",
            "\"just a string\"",
        ] {
            assert_eq!(
                format!("{:?}", parse_response_text(text)),
                format!("{:?}", parse_response_body(text.as_bytes())),
                "{text:?}"
            );
        }
        assert!(matches!(
            parse_response_text("\u{FEFF} "),
            Err(RpcError::Empty)
        ));
    }

    #[test]
    fn deep_results_are_valid_json_for_the_slim_parse() {
        let deep = "[".repeat(300) + &"]".repeat(300);
        let body = format!(
            r#"{{"jsonrpc":"2.0","id":1,"result":{{"structuredContent":{deep},"isError":false}}}}"#
        );
        assert!(parse_body(body.as_bytes()).is_err());
        let msgs = parse_response_body(body.as_bytes()).unwrap();
        assert!(
            matches!(&msgs[..], [RpcMessage::Result { result, .. }] if result["isError"] == false)
        );
        let surrogate =
            r#"{"jsonrpc":"2.0","id":1,"result":{"content":[{"type":"text","text":"\ud800"}]}}"#;
        assert!(parse_body(surrogate.as_bytes()).is_err());
        assert!(parse_response_body(surrogate.as_bytes()).is_ok());
        // Depth where a member is built (here `error.data`) still meets serde_json's limit.
        let err = format!(
            r#"{{"jsonrpc":"2.0","id":1,"error":{{"code":1,"message":"m","data":{deep}}}}}"#
        );
        assert!(parse_response_body(err.as_bytes()).is_err());
    }

    #[test]
    fn response_bodies_parse_slim_with_the_same_verdicts() {
        for text in [
            r#"{"jsonrpc":"2.0","id":1,"result":{"content":[{"type":"text","text":"hi"},{"type":5},3,{"x":1}],"isError":true,"structuredContent":{"a":[1,2]},"task":{"id":"t"},"_meta":{}}}"#,
            r#"{"jsonrpc":"2.0","id":"a","result":{"resultType":"input_required","content":"nope","task":7}}"#,
            r#"[{"jsonrpc":"2.0","id":1,"result":{}},{"jsonrpc":"2.0","id":2,"error":{"code":-32602,"message":"bad","data":{"x":[1]}}},{"jsonrpc":"2.0","method":"notifications/progress","params":{"progress":1}}]"#,
            r#"{"jsonrpc":"2.0","id":1,"result":5}"#,
            r#"{"jsonrpc":"2.0","id":1,"result":{},"error":{"code":1,"message":"m"}}"#,
            r#"{"jsonrpc":"1.0","id":1,"result":{},"extra":[1,2,3]}"#,
            r#"{"jsonrpc":"2.0","id":1,"method":"elicitation/create","params":{"message":"?"}}"#,
            r#"{"jsonrpc":"2.0","id":1,"result":{"content":[{"type":"a","type":"b"}],"content":[{"type":1}]}}"#,
            r#"{"id":null,"jsonrpc":"2.0","error":{"code":-32700,"message":"Parse error"}}"#,
            // tools/list: names, hints and repeated keys (the last one counts).
            r#"{"jsonrpc":"2.0","id":1,"result":{"tools":[{"name":"a","inputSchema":{"type":"object"},"annotations":{"title":"A","readOnlyHint":true,"idempotentHint":1}},{"name":"b","name":2},{"annotations":{"readOnlyHint":true},"annotations":[1]},{"annotations":{"destructiveHint":false,"destructiveHint":"no"}},7,[1],{"name":{"x":1}}],"nextCursor":"c"}}"#,
            r#"{"jsonrpc":"2.0","id":1,"result":{"tools":[{"name":"a"}],"tools":{"x":1}}}"#,
            r#"[]"#,
            r#"7"#,
            r#"{"jsonrpc":"2.0","id":1,"result":{"#,
            "{\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{\"x\":\"a\u{1}b\"}}",
            "{\"jsonrpc\":\"2.0\",\"id\":1,\"extra\":\"a\u{1}b\",\"result\":{}}",
            "\u{feff}",
            "  ",
        ] {
            assert_slim_agrees(text);
        }
    }

    /// Request bodies read as envelopes classify as their digested `Value` does.
    #[test]
    fn request_envelopes_parse_as_their_values() {
        use crate::rpc::digest::{ParamsKeys, digest_envelopes};
        use crate::rpc::oracle::digest_body;
        let keys = ParamsKeys {
            read: &["name"],
            present: &["requestState"],
            ignored: &["_meta"],
        };
        for text in [
            r#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"t","arguments":{"q":1}},"extra":[1]}"#,
            r#"[{"jsonrpc":"2.0","method":"a"},3,{"jsonrpc":"1.0","id":2,"method":"b"},{"id":null,"method":"c","jsonrpc":"2.0"}]"#,
            r#"{"jsonrpc":"2.0","id":7,"result":{"content":[]},"params":{"name":"x"}}"#,
            r#"{"jsonrpc":"2.0","id":"s","error":{"code":-1,"message":"m","data":{"a":1}},"z":null}"#,
            r#"{"id":1,"id":2,"method":"m","method":"n","jsonrpc":"2.0"}"#,
            r#"[]"#,
            r#""text""#,
            r#"{}"#,
        ] {
            let (value, d1) = digest_body(text.as_bytes(), &keys).unwrap();
            let (body, d2) = digest_envelopes(text.as_bytes(), &keys).unwrap();
            assert_eq!(d1, d2, "{text}");
            assert_eq!(body.clone().into_value(), value, "{text}");
            assert_eq!(parse_envelopes(body), parse_value(value), "{text}");
        }
    }

    proptest::proptest! {
        /// Reading an envelope's fields gives what `classify` gives on the envelope's object,
        /// for every mix of present, absent and ill-typed members.
        #[test]
        fn envelope_classifies_as_its_object(
            picks in proptest::collection::vec(0usize..8, 6),
            extra in proptest::option::of(small_json())
        ) {
            let choices: [&[&str]; 6] = [
                &[r#""2.0""#, r#""1.0""#, "2", "null"],
                &["1", r#""a""#, "null", "1.5", "[]", "{}", "-7"],
                &[r#""m""#, "1", "null", r#""notifications/x""#],
                &["{}", "[]", r#"{"name":"t"}"#],
                &["{}", "5", r#"{"isError":true}"#, "null"],
                &[
                    r#"{"code":1,"message":"m"}"#,
                    r#"{"code":"x","message":"m"}"#,
                    r#"{"code":-32602,"message":"m","data":[1]}"#,
                    "3",
                ],
            ];
            let mut fields = choices.iter().zip(&picks).map(|(c, &p)| {
                // One pick past each list's end leaves the member out.
                c.get(p % (c.len() + 1)).map(|t| parse(t))
            });
            let mut next = || fields.next().flatten();
            let env = Envelope {
                jsonrpc: next(),
                id: next(),
                method: next(),
                params: next(),
                result: next(),
                error: next(),
                // Members outside the envelope (kept by request bodies) change no verdict.
                rest: extra.map(|v| Box::new([("x".to_string(), v)].into_iter().collect())),
            };
            proptest::prop_assert_eq!(
                classify_envelope(env.clone()),
                classify(env.into_value())
            );
        }
    }

    #[test]
    fn canonical_sorts_keys_at_every_level() {
        let a: Value =
            serde_json::from_str(r#"{"b":1, "a":{"y":[1,{"d":2,"c":3}],"x":null}}"#).unwrap();
        assert_eq!(
            canonical_json(&a),
            r#"{"a":{"x":null,"y":[1,{"c":3,"d":2}]},"b":1}"#
        );
    }
}
