//! A request body digested in one pass: the canonical fingerprints of each JSON-RPC element
//! and of its `params` are computed while parsing, and only the members the analyzer reads
//! become `serde_json::Value`s. Tool arguments (the bulk of a request) are hashed as they
//! stream by and never built into a tree.
//!
//! Fingerprints are those of [`super::fingerprint`], computed from the members' fingerprints
//! as they stream by. Elements are read into [`Envelope`]s ([`super::envelope`]);
//! [`digest_body`] gives the same body as a `Value`, for the tests and fuzzers that compare it
//! with serde_json.

use super::envelope::{Envelope, EnvelopeBody, EnvelopeElement};
use super::fingerprint::{
    JsonFingerprint, T_ARRAY, T_FALSE, T_NULL, T_STRING, T_TRUE, integer_leaf, leaf,
    members_fingerprint, sort_members, sorted_members_fingerprint, sorted_members_fingerprints,
    split, value_fingerprint,
};
use super::seed::{Key, array_of_values, plain_values, run_seed, scalar_values, seed_via_visitor};
use serde::de::{self, DeserializeSeed, Deserializer, MapAccess, SeqAccess, Visitor};
use serde_json::{Map, Value};
use std::fmt;

/// What [`digest_body`] gives for one JSON-RPC element (the body, or an item of a batch).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ElementDigest {
    /// Fingerprint of the whole element.
    pub body: JsonFingerprint,
    /// Fingerprint of its `params` without the `ignored` top-level keys, when it has params.
    pub params: Option<JsonFingerprint>,
    /// The same without `name` as well, when the params have a `name` member.
    pub params_unnamed: Option<JsonFingerprint>,
}

/// [`digest_body`] with each object element left as its [`Envelope`] (every member kept,
/// `params` cut alike), so no element map is built.
pub fn digest_envelopes(
    bytes: &[u8],
    keys: &ParamsKeys<'_>,
) -> Result<(EnvelopeBody, Vec<ElementDigest>), serde_json::Error> {
    run_seed(bytes, BodySeed { keys })
}

/// Why a body gave no envelopes, as the MCP stage needs to tell.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum DigestError {
    /// Nested deeper than serde_json's 128 levels: such a body may well be JSON-RPC.
    #[error("nested too deep")]
    TooDeep,
    /// Not JSON.
    #[error("not JSON")]
    NotJson,
}

impl From<&serde_json::Error> for DigestError {
    fn from(e: &serde_json::Error) -> DigestError {
        // serde_json names its recursion limit only in the message (the error code is
        // private): this is the one place that reads it.
        if e.is_syntax() && e.to_string().starts_with("recursion limit exceeded") {
            DigestError::TooDeep
        } else {
            DigestError::NotJson
        }
    }
}

/// Which `params` members [`digest_body`] keeps and which the params fingerprint ignores.
#[derive(Debug, Clone, Copy)]
pub struct ParamsKeys<'a> {
    pub read: &'a [&'a str],
    pub present: &'a [&'a str],
    pub ignored: &'a [&'a str],
}

/// The fingerprint of any value, without building it.
struct FingerprintSeed;

impl<'de> DeserializeSeed<'de> for FingerprintSeed {
    type Value = u128;
    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<u128, D::Error> {
        d.deserialize_any(FingerprintVisitor)
    }
}

struct FingerprintVisitor;

impl<'de> Visitor<'de> for FingerprintVisitor {
    type Value = u128;
    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("any JSON value")
    }
    fn visit_unit<E: de::Error>(self) -> Result<u128, E> {
        Ok(leaf(T_NULL, b""))
    }
    fn visit_bool<E: de::Error>(self, v: bool) -> Result<u128, E> {
        Ok(leaf(if v { T_TRUE } else { T_FALSE }, b""))
    }
    fn visit_u64<E: de::Error>(self, v: u64) -> Result<u128, E> {
        Ok(integer_leaf(v))
    }
    fn visit_i64<E: de::Error>(self, v: i64) -> Result<u128, E> {
        Ok(integer_leaf(v))
    }
    fn visit_f64<E: de::Error>(self, v: f64) -> Result<u128, E> {
        // serde_json's Value turns a float into its Number (finite floats only reach here).
        Ok(value_fingerprint(&Value::from(v)))
    }
    fn visit_str<E: de::Error>(self, v: &str) -> Result<u128, E> {
        Ok(leaf(T_STRING, v.as_bytes()))
    }
    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<u128, A::Error> {
        let mut buf = Vec::with_capacity(seq.size_hint().unwrap_or(4).min(64) * 16);
        while let Some(fp) = seq.next_element_seed(FingerprintSeed)? {
            buf.extend_from_slice(&fp.to_le_bytes());
        }
        Ok(leaf(T_ARRAY, &buf))
    }
    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<u128, A::Error> {
        let mut members = Vec::with_capacity(8);
        while let Some(Key(k)) = map.next_key()? {
            let fp = map.next_value_seed(FingerprintSeed)?;
            members.push((k, fp));
        }
        Ok(members_fingerprint(&mut members))
    }
}

/// `params`: (cut value, fingerprint of all of it, fingerprint without the ignored keys, and
/// without `name` too when there is one).
struct ParamsSeed<'k> {
    keys: &'k ParamsKeys<'k>,
}

type ParamsOut = (Value, u128, u128, Option<u128>);

fn plain_params(v: Value) -> ParamsOut {
    let fp = value_fingerprint(&v);
    (v, fp, fp, None)
}

seed_via_visitor!(ParamsSeed<'_>, ParamsOut);

impl<'de> Visitor<'de> for ParamsSeed<'_> {
    type Value = ParamsOut;
    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("JSON-RPC params")
    }
    plain_values!(plain_params);
    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<ParamsOut, A::Error> {
        let mut cut = Map::new();
        let mut members = Vec::with_capacity(8);
        while let Some(Key(k)) = map.next_key()? {
            let fp = if self.keys.read.contains(&k.as_ref()) {
                let v: Value = map.next_value()?;
                let fp = value_fingerprint(&v);
                cut.insert(k.to_string(), v);
                fp
            } else {
                let fp = map.next_value_seed(FingerprintSeed)?;
                if self.keys.present.contains(&k.as_ref()) {
                    cut.insert(k.to_string(), Value::Null);
                }
                fp
            };
            members.push((k, fp));
        }
        sort_members(&mut members);
        let all = sorted_members_fingerprint(&members, |_| true);
        let (without, unnamed) =
            sorted_members_fingerprints(&members, |k| !self.keys.ignored.contains(&k), "name");
        Ok((Value::Object(cut), all, without, unnamed))
    }
}

/// One element: (value with cut params, its digest).
struct ElementSeed<'k> {
    keys: &'k ParamsKeys<'k>,
}

type ElementOut = (EnvelopeElement, ElementDigest);

fn plain_element(v: Value) -> ElementOut {
    let body = split(value_fingerprint(&v));
    (
        EnvelopeElement::Other(v),
        ElementDigest {
            body,
            params: None,
            params_unnamed: None,
        },
    )
}

seed_via_visitor!(ElementSeed<'_>, ElementOut);

impl<'de> Visitor<'de> for ElementSeed<'_> {
    type Value = ElementOut;
    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a JSON-RPC message")
    }
    plain_values!(plain_element);
    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<ElementOut, A::Error> {
        let mut env = Envelope::default();
        let mut members = Vec::with_capacity(8);
        let mut params = None;
        let mut params_unnamed = None;
        while let Some(Key(k)) = map.next_key()? {
            if k == "params" {
                let (cut, all, without, unnamed) =
                    map.next_value_seed(ParamsSeed { keys: self.keys })?;
                env.params = Some(cut);
                members.push((k, all));
                params = Some(split(without));
                params_unnamed = unnamed.map(split);
                continue;
            }
            let v: Value = map.next_value()?;
            let fp = value_fingerprint(&v);
            match env.member_mut(&k) {
                Some(slot) => *slot = Some(v),
                None => {
                    let rest = env.rest.get_or_insert_with(Box::default);
                    rest.insert(k.to_string(), v);
                }
            }
            members.push((k, fp));
        }
        let body = split(members_fingerprint(&mut members));
        Ok((
            EnvelopeElement::Envelope(env),
            ElementDigest {
                body,
                params,
                params_unnamed,
            },
        ))
    }
}

/// The whole body: one element, or a batch of them.
#[derive(Clone, Copy)]
struct BodySeed<'k> {
    keys: &'k ParamsKeys<'k>,
}

type BodyOut = (EnvelopeBody, Vec<ElementDigest>);

seed_via_visitor!(BodySeed<'_>, BodyOut);

fn plain_body(v: Value) -> BodyOut {
    let body = split(value_fingerprint(&v));
    (
        EnvelopeBody::Other(v),
        vec![ElementDigest {
            body,
            params: None,
            params_unnamed: None,
        }],
    )
}

impl<'de> Visitor<'de> for BodySeed<'_> {
    type Value = BodyOut;
    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a JSON-RPC body")
    }
    scalar_values!(plain_body);
    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<BodyOut, A::Error> {
        let mut items = Vec::new();
        let mut digests = Vec::new();
        while let Some((v, d)) = seq.next_element_seed(ElementSeed { keys: self.keys })? {
            items.push(v);
            digests.push(d);
        }
        Ok((EnvelopeBody::Batch(items), digests))
    }
    fn visit_map<A: MapAccess<'de>>(self, map: A) -> Result<BodyOut, A::Error> {
        let (element, d) = ElementSeed { keys: self.keys }.visit_map(map)?;
        let body = match element {
            EnvelopeElement::Envelope(env) => EnvelopeBody::One(env),
            EnvelopeElement::Other(v) => EnvelopeBody::Other(v),
        };
        Ok((body, vec![d]))
    }
}

#[cfg(test)]
mod tests {
    use super::super::oracle::{digest_body, slim_response_body};
    use super::*;
    use crate::rpc::{canonical_fingerprint, canonical_fingerprint_without};

    const IGNORED: [&str; 2] = ["_meta", "progressToken"];
    const KEYS: ParamsKeys<'static> = ParamsKeys {
        read: &["name", "_meta"],
        present: &["big"],
        ignored: &IGNORED,
    };

    /// The digest agrees with fingerprints of the fully parsed value, element by element.
    fn check(text: &str) {
        let (cut, digests) = digest_body(text.as_bytes(), &KEYS).unwrap();
        let full: Value = serde_json::from_str(text).unwrap();
        let elements: Vec<&Value> = match &full {
            Value::Array(items) => items.iter().collect(),
            other => vec![other],
        };
        assert_eq!(digests.len(), elements.len(), "{text}");
        for (i, (d, e)) in digests.iter().zip(&elements).enumerate() {
            assert_eq!(d.body, canonical_fingerprint(e), "element {i} of {text}");
            let want = e
                .as_object()
                .and_then(|o| o.get("params"))
                .map(|p| canonical_fingerprint_without(p, &IGNORED));
            assert_eq!(d.params, want, "params of element {i} of {text}");
            // Without `name` too, when the params have one (a gateway's prefixed tool names).
            let unnamed = e
                .as_object()
                .and_then(|o| o.get("params"))
                .and_then(Value::as_object)
                .filter(|p| p.contains_key("name"))
                .map(|p| {
                    let mut skip = IGNORED.to_vec();
                    skip.push("name");
                    canonical_fingerprint_without(&Value::Object(p.clone()), &skip)
                });
            assert_eq!(
                d.params_unnamed, unnamed,
                "unnamed params of element {i} of {text}"
            );
        }
        // Everything but object params is kept as parsed; params keep only `read`/`present`.
        let cut_elements: Vec<&Value> = match &cut {
            Value::Array(items) => items.iter().collect(),
            other => vec![other],
        };
        for (c, e) in cut_elements.iter().zip(&elements) {
            match (c, e) {
                (Value::Object(c), Value::Object(e)) => {
                    for (k, v) in e {
                        match (k.as_str(), v) {
                            ("params", Value::Object(p)) => {
                                let cp = c.get("params").and_then(Value::as_object).unwrap();
                                for (pk, pv) in p {
                                    let kept = cp.get(pk);
                                    match pk.as_str() {
                                        "name" | "_meta" => assert_eq!(kept, Some(pv)),
                                        "big" => assert_eq!(kept, Some(&Value::Null)),
                                        _ => assert_eq!(kept, None, "{pk} kept"),
                                    }
                                }
                            }
                            _ => assert_eq!(c.get(k), Some(v), "{k} of {text}"),
                        }
                    }
                    assert_eq!(c.len(), e.len());
                }
                (c, e) => assert_eq!(c, e),
            }
        }
    }

    /// Bodies both the digest tests and the fast-reader tests run: escapes, repeated keys,
    /// every number form, batches with non-objects, and bodies that are not objects at all.
    const SAMPLE_BODIES: [&str; 11] = [
        r#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"echo","arguments":{"b":[1,2.5,"x"],"a":null},"_meta":{"progressToken":3},"big":"zzz"}}"#,
        r#"{"params":{"z":1,"name":"n"},"method":"m","jsonrpc":"2.0","id":"s"}"#,
        r#"[{"jsonrpc":"2.0","method":"a"},{"jsonrpc":"2.0","id":2,"method":"b","params":[1,{"k":"v"}]},3,"x",null,[1]]"#,
        r#"{"params":{"a":1,"a":2,"name":"first","name":"second"},"params":{"b":true}}"#,
        r#"{"k\u0061":"\u00e9\n","params":{"n\u0061me":"e\"sc","progressToken":1e2}}"#,
        r#"{"params":{"x":-0,"y":1E300,"z":0.1,"w":18446744073709551615,"v":-9223372036854775808}}"#,
        r#"{"params":"a string","id":1}"#,
        r#"17"#,
        r#""top""#,
        r#"[]"#,
        r#"{}"#,
    ];

    #[test]
    fn agrees_with_the_parsed_value() {
        for text in SAMPLE_BODIES {
            check(text);
        }
    }

    #[test]
    fn errors_are_serde_jsons() {
        for bad in ["{", "[1,]", "{\"a\":1} x", "", "nul"] {
            let ours = digest_body(bad.as_bytes(), &KEYS).unwrap_err().to_string();
            let theirs = serde_json::from_str::<Value>(bad).unwrap_err().to_string();
            assert_eq!(ours, theirs, "{bad}");
        }
        let deep = "[".repeat(200) + &"]".repeat(200);
        let ours = digest_body(deep.as_bytes(), &KEYS).unwrap_err();
        assert!(
            ours.to_string().starts_with("recursion limit exceeded"),
            "{ours}"
        );
        assert_eq!(DigestError::from(&ours), DigestError::TooDeep);
        let cut = digest_body(b"{\"a\":", &KEYS).unwrap_err();
        assert_eq!(DigestError::from(&cut), DigestError::NotJson);
    }

    fn json() -> impl proptest::strategy::Strategy<Value = Value> {
        use proptest::prelude::*;
        let leaf = prop_oneof![
            Just(Value::Null),
            any::<bool>().prop_map(Value::Bool),
            any::<i64>().prop_map(Value::from),
            any::<u64>().prop_map(Value::from),
            (-1e6f64..1e6).prop_map(Value::from),
            "[a-c\"\\\\é\n]{0,4}".prop_map(Value::String),
        ];
        leaf.prop_recursive(3, 24, 4, |inner| {
            prop_oneof![
                prop::collection::vec(inner.clone(), 0..4).prop_map(Value::Array),
                prop::collection::btree_map(
                    prop::sample::select(vec![
                        "name",
                        "_meta",
                        "big",
                        "params",
                        "a",
                        "progressToken"
                    ]),
                    inner,
                    0..4
                )
                .prop_map(|m| Value::Object(
                    m.into_iter().map(|(k, v)| (k.to_string(), v)).collect()
                )),
            ]
        })
    }

    proptest::proptest! {
        #[test]
        fn random_bodies_agree(v in json(), batch in proptest::bool::ANY) {
            let element = serde_json::json!({"jsonrpc": "2.0", "id": 1, "params": v});
            let body = if batch { Value::Array(vec![element, v.clone()]) } else { element };
            check(&body.to_string());
            check(&v.to_string());
        }
    }

    /// Runs `digest_body` and `slim_response_body` with the fast reader and with serde_json
    /// alone: same values, digests and errors. Whether the fast reader answered both.
    fn same_as_serde_json(text: &[u8]) -> bool {
        use crate::rpc::fastjson::test_hooks;
        let before = test_hooks::hits();
        let fast = digest_body(text, &KEYS);
        let digest_fast = test_hooks::hits() > before;
        let slow = test_hooks::serde_json_only(|| digest_body(text, &KEYS));
        let shown = String::from_utf8_lossy(text);
        match (&fast, &slow) {
            (Ok((v, d)), Ok((w, e))) => {
                assert_eq!(v, w, "{shown}");
                assert_eq!(v.to_string(), w.to_string(), "{shown}");
                assert_eq!(d, e, "{shown}");
            }
            (Err(a), Err(b)) => assert_eq!(a.to_string(), b.to_string(), "{shown}"),
            (a, b) => panic!("{shown}: {a:?} vs {b:?}"),
        }
        let before = test_hooks::hits();
        let fast = slim_response_body(text);
        let slim_fast = test_hooks::hits() > before;
        let slow = test_hooks::serde_json_only(|| slim_response_body(text));
        match (&fast, &slow) {
            (Ok(v), Ok(w)) => {
                assert_eq!(v, w, "{shown}");
                assert_eq!(v.to_string(), w.to_string(), "{shown}");
            }
            (Err(a), Err(b)) => assert_eq!(a.to_string(), b.to_string(), "{shown}"),
            (a, b) => panic!("{shown}: {a:?} vs {b:?}"),
        }
        digest_fast && slim_fast
    }

    #[test]
    fn fast_reader_agrees_with_serde_json() {
        for text in SAMPLE_BODIES.into_iter().chain([
            r#"{"jsonrpc":"2.0","id":7,"result":{"content":[{"type":"text","text":"hello \"world\"\n"},{"type":3},{"text":"x"},5],"isError":false,"task":{"id":"t"},"structuredContent":{"deep":[[[{"a":"\ud83d\ude00"}]]]},"protocolVersion":"2025-06-18","_meta":{"k":[1,2]}}}"#,
            r#"[{"jsonrpc":"2.0","id":1,"result":{"content":{"type":"text"},"task":[1]}},{"jsonrpc":"2.0","id":2,"error":{"code":-32600,"message":"bad"}}]"#,
        ]) {
            assert!(same_as_serde_json(text.as_bytes()), "fell back on {text}");
        }
        let deep = "[".repeat(200) + &"]".repeat(200);
        let long = format!(
            r#"{{"jsonrpc":"2.0","id":1,"result":{{"content":[{{"type":"text","text":"{}"}}]}}}}"#,
            "line with \\\"quotes\\\" and \\u00e9\\n".repeat(300)
        );
        assert!(same_as_serde_json(long.as_bytes()));
        for bad in [
            "{",
            "[1,]",
            "{\"a\":1} x",
            "",
            "nul",
            deep.as_str(),
            r#"{"result":{"skipped":"\ud800"}}"#,
            r#"{"result":{"skipped":[1,]}}"#,
            r#"{"result":{"content":[{"type":"text","text":"a\u0001"}]}}"#,
            "{\"result\":{\"content\":[{\"type\":\"text\",\"text\":\"a\u{1}\"}]}}",
            r#"{"params":{"name":01}}"#,
            r#"{"params":{"name":1e999}}"#,
        ] {
            same_as_serde_json(bad.as_bytes());
        }
        // Not UTF-8: serde_json's byte reader alone.
        same_as_serde_json(b"{\"params\":{\"name\":\"\xff\"}}");
    }

    proptest::proptest! {
        #[test]
        fn random_bodies_same_as_serde_json(v in json(), batch in proptest::bool::ANY) {
            let element = serde_json::json!({"jsonrpc": "2.0", "id": 1, "params": v});
            let body = if batch { Value::Array(vec![element, v.clone()]) } else { element };
            proptest::prop_assert!(same_as_serde_json(body.to_string().as_bytes()));
            proptest::prop_assert!(same_as_serde_json(v.to_string().as_bytes()));
            let pretty = serde_json::to_string_pretty(&body).unwrap();
            proptest::prop_assert!(same_as_serde_json(pretty.as_bytes()));
            let response = serde_json::json!({"jsonrpc": "2.0", "id": 1, "result": {
                "content": [{"type": "text", "text": v.to_string()}, v],
                "isError": false, "task": v, "structuredContent": v, "other": v,
            }});
            proptest::prop_assert!(same_as_serde_json(response.to_string().as_bytes()));
        }

        /// Skipped members (`IgnoredAny`) of responses: from valid or nearly valid text the
        /// fast reader never accepts what serde_json rejects.
        #[test]
        fn skipped_members_same_as_serde_json(
            parts in proptest::collection::vec(proptest::sample::select(vec![
                "[", "]", "{", "}", ",", ":", " ", "\"", "\"k\"", "\\", "\\u", "\\uD800", "1",
                "-", ".", "e", "0", "null", "tru", "é", "\u{1}", "\\n", "\\q",
            ]), 0..20),
        ) {
            let soup = parts.concat();
            for text in [
                format!(r#"{{"jsonrpc":"2.0","id":1,"result":{{"skipped":{soup},"isError":true}}}}"#),
                format!(r#"{{"jsonrpc":"2.0","id":1,"extra":[{soup}],"result":{{}}}}"#),
                format!(r#"{{"id":1,"result":{{"content":[{{"type":"text","text":"{soup}","other":{soup}}}]}}}}"#),
                format!(r#"{{"id":1,"result":{{"task":{{"x":{soup}}}}}}}"#),
            ] {
                same_as_serde_json(text.as_bytes());
            }
        }
    }
}
