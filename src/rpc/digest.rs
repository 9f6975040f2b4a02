//! A request body digested in one pass: the canonical fingerprints of each JSON-RPC element
//! and of its `params` are computed while parsing, and only the members the analyzer reads
//! become `serde_json::Value`s. Tool arguments (the bulk of a request) are hashed as they
//! stream by and never built into a tree.
//!
//! Fingerprints are Merkle-style (see [`value_fingerprint`]), so an object's fingerprint is
//! made from its members' fingerprints in key order without keeping the members.
//!
//! Request and response bodies are read into [`Envelope`]s: the JSON-RPC members as fields,
//! so classification needs no map per element. [`digest_body`] and [`slim_response_body`] give
//! the same bodies as `Value`s, for the tests and fuzzers that compare them with serde_json.

use super::jsonrpc::JsonFingerprint;
use serde::de::{self, DeserializeSeed, Deserializer, MapAccess, SeqAccess, Visitor};
use serde_json::{Map, Value};
use std::borrow::Cow;
use std::fmt;
use xxhash_rust::xxh3::xxh3_128_with_seed;

// One seed per kind of node: distinct kinds never hash alike by construction.
const T_NULL: u64 = 1;
const T_TRUE: u64 = 2;
const T_FALSE: u64 = 3;
const T_NUMBER: u64 = 4;
const T_STRING: u64 = 5;
const T_ARRAY: u64 = 6;
const T_OBJECT: u64 = 7;
const T_KEY: u64 = 8;

/// 128-bit fingerprint of a JSON value, equal exactly when the canonical texts are equal
/// (object keys sorted, no spacing; numbers by serde_json's number text). A leaf is XXH3-128
/// of its text seeded by its kind; an array hashes its items' fingerprints in order; an object
/// hashes (key fingerprint, value fingerprint) pairs in key order.
pub fn value_fingerprint(v: &Value) -> u128 {
    match v {
        Value::Null => leaf(T_NULL, b""),
        Value::Bool(true) => leaf(T_TRUE, b""),
        Value::Bool(false) => leaf(T_FALSE, b""),
        Value::Number(n) => match (n.as_u64(), n.as_i64()) {
            (Some(u), _) => integer_leaf(u),
            (None, Some(i)) => integer_leaf(i),
            _ => leaf(T_NUMBER, n.to_string().as_bytes()),
        },
        Value::String(s) => leaf(T_STRING, s.as_bytes()),
        Value::Array(items) => {
            let mut buf = Vec::with_capacity(items.len().saturating_mul(16));
            for item in items {
                buf.extend_from_slice(&value_fingerprint(item).to_le_bytes());
            }
            leaf(T_ARRAY, &buf)
        }
        Value::Object(map) => object_fingerprint(map, |_| true),
    }
}

/// [`value_fingerprint`] of an object's members that `keep` accepts.
pub fn object_fingerprint(map: &Map<String, Value>, keep: impl Fn(&str) -> bool) -> u128 {
    let mut members: Vec<(Cow<'_, str>, u128)> = map
        .iter()
        .filter(|(k, _)| keep(k))
        .map(|(k, v)| (Cow::Borrowed(k.as_str()), value_fingerprint(v)))
        .collect();
    members_fingerprint(&mut members)
}

/// Splits a fingerprint into the two halves [`JsonFingerprint`] holds.
pub fn split(fp: u128) -> JsonFingerprint {
    ((fp >> 64) as u64, fp as u64)
}

/// An integer's leaf: its decimal text, as serde_json's `Number` writes it (with `itoa`),
/// without allocating it.
fn integer_leaf(v: impl itoa::Integer) -> u128 {
    leaf(T_NUMBER, itoa::Buffer::new().format(v).as_bytes())
}

fn leaf(kind: u64, bytes: &[u8]) -> u128 {
    xxh3_128_with_seed(bytes, kind)
}

/// Object fingerprint from (key, value fingerprint) pairs in any order; for a repeated key the
/// last one counts, as in `serde_json::Value`.
fn members_fingerprint(members: &mut [(Cow<'_, str>, u128)]) -> u128 {
    sort_members(members);
    sorted_members_fingerprint(members, |_| true)
}

/// Stable: among equal keys the document order survives, so the last one can be kept.
fn sort_members(members: &mut [(Cow<'_, str>, u128)]) {
    members.sort_by(|a, b| a.0.cmp(&b.0));
}

/// [`members_fingerprint`] of members already sorted by [`sort_members`], those `keep`
/// accepts.
fn sorted_members_fingerprint(
    members: &[(Cow<'_, str>, u128)],
    keep: impl Fn(&str) -> bool,
) -> u128 {
    let mut buf = Vec::with_capacity(members.len().saturating_mul(32));
    let mut iter = members.iter().filter(|(k, _)| keep(k)).peekable();
    while let Some((k, fp)) = iter.next() {
        if iter.peek().is_some_and(|(next, _)| next == k) {
            continue;
        }
        buf.extend_from_slice(&leaf(T_KEY, k.as_bytes()).to_le_bytes());
        buf.extend_from_slice(&fp.to_le_bytes());
    }
    leaf(T_OBJECT, &buf)
}

/// What [`digest_body`] gives for one JSON-RPC element (the body, or an item of a batch).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ElementDigest {
    /// Fingerprint of the whole element.
    pub body: JsonFingerprint,
    /// Fingerprint of its `params` without the `ignored` top-level keys, when it has params.
    pub params: Option<JsonFingerprint>,
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

/// [`digest_body`] with each object element left as its [`Envelope`] (every member kept,
/// `params` cut alike), so no element map is built.
pub fn digest_envelopes(
    bytes: &[u8],
    keys: &ParamsKeys<'_>,
) -> Result<(EnvelopeBody, Vec<ElementDigest>), serde_json::Error> {
    run_seed(bytes, BodySeed { keys })
}

/// Runs `seed` over `bytes` and checks that only whitespace follows. A body that is valid
/// UTF-8 as a whole (nearly all) is validated once, with SIMD, and read as `str`: serde_json
/// then skips its per-string validation, a third of its time on long strings. Other bodies go
/// through the byte reader, so errors and verdicts are the same either way.
///
/// A `str` body is first read by [`super::fastjson`], which scans strings with SIMD; whenever
/// it succeeds serde_json would have visited alike, and on any error serde_json reads the body
/// again and decides.
fn run_seed<'a, S: DeserializeSeed<'a> + Copy>(
    bytes: &'a [u8],
    seed: S,
) -> Result<S::Value, serde_json::Error> {
    if let Ok(text) = simdutf8::basic::from_utf8(bytes) {
        run_seed_str(text, seed)
    } else {
        serde_json_seed(serde_json::Deserializer::from_slice(bytes), seed)
    }
}

/// [`run_seed`] on text already known to be UTF-8.
fn run_seed_str<'a, S: DeserializeSeed<'a> + Copy>(
    text: &'a str,
    seed: S,
) -> Result<S::Value, serde_json::Error> {
    if let Ok(out) = super::fastjson::from_str_seed(text, seed) {
        return Ok(out);
    }
    serde_json_seed(serde_json::Deserializer::from_str(text), seed)
}

/// `seed` read by serde_json, then only whitespace allowed.
fn serde_json_seed<'a, R: serde_json::de::Read<'a>, S: DeserializeSeed<'a>>(
    mut de: serde_json::Deserializer<R>,
    seed: S,
) -> Result<S::Value, serde_json::Error> {
    let out = seed.deserialize(&mut de)?;
    de.end()?;
    Ok(out)
}

/// Which `params` members [`digest_body`] keeps and which the params fingerprint ignores.
#[derive(Debug, Clone, Copy)]
pub struct ParamsKeys<'a> {
    pub read: &'a [&'a str],
    pub present: &'a [&'a str],
    pub ignored: &'a [&'a str],
}

/// An object key, borrowed from the input when it has no escapes.
struct Key<'de>(Cow<'de, str>);

impl<'de> de::Deserialize<'de> for Key<'de> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct KeyVisitor;
        impl<'de> Visitor<'de> for KeyVisitor {
            type Value = Key<'de>;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("an object key")
            }
            fn visit_borrowed_str<E: de::Error>(self, v: &'de str) -> Result<Key<'de>, E> {
                Ok(Key(Cow::Borrowed(v)))
            }
            fn visit_str<E: de::Error>(self, v: &str) -> Result<Key<'de>, E> {
                Ok(Key(Cow::Owned(v.to_string())))
            }
            fn visit_string<E: de::Error>(self, v: String) -> Result<Key<'de>, E> {
                Ok(Key(Cow::Owned(v)))
            }
        }
        d.deserialize_str(KeyVisitor)
    }
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

/// An array built as a `Value` (for seeds that only treat objects specially).
fn array_of_values<'de, A: SeqAccess<'de>>(mut seq: A) -> Result<Value, A::Error> {
    let mut items = Vec::new();
    while let Some(v) = seq.next_element::<Value>()? {
        items.push(v);
    }
    Ok(Value::Array(items))
}

fn skip_seq<'de, A: SeqAccess<'de>>(mut seq: A) -> Result<(), A::Error> {
    while seq.next_element::<de::IgnoredAny>()?.is_some() {}
    Ok(())
}

fn skip_map<'de, A: MapAccess<'de>>(mut map: A) -> Result<(), A::Error> {
    while map
        .next_entry::<de::IgnoredAny, de::IgnoredAny>()?
        .is_some()
    {}
    Ok(())
}

/// A seed that is its own visitor, for any JSON value.
macro_rules! seed_via_visitor {
    ($seed:ty, $out:ty) => {
        impl<'de> DeserializeSeed<'de> for $seed {
            type Value = $out;
            fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<$out, D::Error> {
                d.deserialize_any(self)
            }
        }
    };
}

/// Visits of the scalar kinds: each builds its `Value` and hands it to `$done`.
macro_rules! scalar_values {
    ($done:expr) => {
        fn visit_unit<E: de::Error>(self) -> Result<Self::Value, E> {
            Ok($done(Value::Null))
        }
        fn visit_bool<E: de::Error>(self, v: bool) -> Result<Self::Value, E> {
            Ok($done(Value::Bool(v)))
        }
        fn visit_u64<E: de::Error>(self, v: u64) -> Result<Self::Value, E> {
            Ok($done(Value::from(v)))
        }
        fn visit_i64<E: de::Error>(self, v: i64) -> Result<Self::Value, E> {
            Ok($done(Value::from(v)))
        }
        fn visit_f64<E: de::Error>(self, v: f64) -> Result<Self::Value, E> {
            Ok($done(Value::from(v)))
        }
        fn visit_str<E: de::Error>(self, v: &str) -> Result<Self::Value, E> {
            Ok($done(Value::String(v.to_string())))
        }
        fn visit_string<E: de::Error>(self, v: String) -> Result<Self::Value, E> {
            Ok($done(Value::String(v)))
        }
    };
}

/// Every kind but objects built as a `Value` and handed to `$done`.
macro_rules! plain_values {
    ($done:expr) => {
        scalar_values!($done);
        fn visit_seq<A: SeqAccess<'de>>(self, seq: A) -> Result<Self::Value, A::Error> {
            Ok($done(array_of_values(seq)?))
        }
    };
}

/// Visits of the scalar kinds that only answer `$v`.
macro_rules! constant_scalars {
    ($v:expr) => {
        fn visit_unit<E: de::Error>(self) -> Result<Self::Value, E> {
            Ok($v)
        }
        fn visit_bool<E: de::Error>(self, _: bool) -> Result<Self::Value, E> {
            Ok($v)
        }
        fn visit_u64<E: de::Error>(self, _: u64) -> Result<Self::Value, E> {
            Ok($v)
        }
        fn visit_i64<E: de::Error>(self, _: i64) -> Result<Self::Value, E> {
            Ok($v)
        }
        fn visit_f64<E: de::Error>(self, _: f64) -> Result<Self::Value, E> {
            Ok($v)
        }
        fn visit_str<E: de::Error>(self, _: &str) -> Result<Self::Value, E> {
            Ok($v)
        }
    };
}

/// `params`: (cut value, fingerprint of all of it, fingerprint without the ignored keys).
struct ParamsSeed<'k> {
    keys: &'k ParamsKeys<'k>,
}

type ParamsOut = (Value, u128, u128);

fn plain_params(v: Value) -> ParamsOut {
    let fp = value_fingerprint(&v);
    (v, fp, fp)
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
        let without = sorted_members_fingerprint(&members, |k| !self.keys.ignored.contains(&k));
        Ok((Value::Object(cut), all, without))
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
        ElementDigest { body, params: None },
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
        while let Some(Key(k)) = map.next_key()? {
            if k == "params" {
                let (cut, all, without) = map.next_value_seed(ParamsSeed { keys: self.keys })?;
                env.params = Some(cut);
                members.push((k, all));
                params = Some(split(without));
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
            ElementDigest { body, params },
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
        vec![ElementDigest { body, params: None }],
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

/// The parts of a result classification and session facts read (`resultType`, `isError`,
/// `task`, `protocolVersion`, each content block's `type`, and for the tool catalog each
/// listed tool's string `name` and boolean `annotations` hints), so a row waiting for release
/// does not hold a whole tool result. Every verdict is the same as on the full result. The
/// reference for what response parsing keeps while it reads (tests and the `jsonrpc_body`
/// fuzzer compare the two).
pub fn slim_result(result: &Value) -> Value {
    let Some(o) = result.as_object() else {
        return result.clone();
    };
    let mut slim = serde_json::Map::new();
    for key in ["resultType", "isError", "protocolVersion"] {
        if let Some(v) = o.get(key) {
            slim.insert(key.to_string(), v.clone());
        }
    }
    if let Some(task) = o.get("task") {
        // Only whether it is an object counts.
        let kept = if task.is_object() {
            Value::Object(serde_json::Map::new())
        } else {
            Value::Null
        };
        slim.insert("task".to_string(), kept);
    }
    if let Some(content) = o.get("content") {
        // Only whether it is an array of blocks with a string `type` counts.
        let kept = match content.as_array() {
            Some(blocks) => Value::Array(
                blocks
                    .iter()
                    .map(|b| match b.get("type") {
                        Some(t @ Value::String(_)) => {
                            let mut m = serde_json::Map::new();
                            m.insert("type".to_string(), t.clone());
                            Value::Object(m)
                        }
                        _ => Value::Null,
                    })
                    .collect(),
            ),
            None => Value::Null,
        };
        slim.insert("content".to_string(), kept);
    }
    if let Some(tools) = o.get("tools") {
        let kept = match tools.as_array() {
            Some(items) => Value::Array(items.iter().map(slim_tool).collect()),
            None => Value::Null,
        };
        slim.insert("tools".to_string(), kept);
    }
    Value::Object(slim)
}

/// The `annotations` hints the tool catalog reads.
const TOOL_HINTS: [&str; 3] = ["readOnlyHint", "idempotentHint", "destructiveHint"];

/// A listed tool: its string `name`, and `annotations` as its boolean hints (`null` when not
/// an object); `null` when the tool is not an object.
fn slim_tool(tool: &Value) -> Value {
    let Some(o) = tool.as_object() else {
        return Value::Null;
    };
    let mut slim = Map::new();
    if let Some(name @ Value::String(_)) = o.get("name") {
        slim.insert("name".to_string(), name.clone());
    }
    if let Some(a) = o.get("annotations") {
        let kept = match a.as_object() {
            Some(a) => Value::Object(
                TOOL_HINTS
                    .iter()
                    .filter_map(|&k| match a.get(k) {
                        Some(b @ Value::Bool(_)) => Some((k.to_string(), b.clone())),
                        _ => None,
                    })
                    .collect(),
            ),
            None => Value::Null,
        };
        slim.insert("annotations".to_string(), kept);
    }
    Value::Object(slim)
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

fn same(v: Value) -> Value {
    v
}

/// The members of one JSON-RPC element, as [`slim_response_body`] or [`digest_body`] keep
/// them, without building the element's map (a repeated key: the last one counts, as in a
/// map).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Envelope {
    pub jsonrpc: Option<Value>,
    pub id: Option<Value>,
    pub method: Option<Value>,
    pub params: Option<Value>,
    pub result: Option<Value>,
    pub error: Option<Value>,
    /// Other members, when kept (request bodies keep them; response bodies skip them).
    pub rest: Option<Box<Map<String, Value>>>,
}

impl Envelope {
    /// The JSON-RPC members an envelope holds as fields.
    const MEMBERS: [&'static str; 6] = ["jsonrpc", "id", "method", "params", "result", "error"];

    /// The field for member `key`, if it is one of [`Envelope::MEMBERS`].
    fn member_mut(&mut self, key: &str) -> Option<&mut Option<Value>> {
        Some(match key {
            "jsonrpc" => &mut self.jsonrpc,
            "id" => &mut self.id,
            "method" => &mut self.method,
            "params" => &mut self.params,
            "result" => &mut self.result,
            "error" => &mut self.error,
            _ => return None,
        })
    }

    /// The envelope of a parsed object: its six members taken out, the others kept aside.
    pub fn from_map(mut map: Map<String, Value>) -> Envelope {
        let mut env = Envelope::default();
        for key in Envelope::MEMBERS {
            if let Some(slot) = env.member_mut(key) {
                *slot = map.remove(key);
            }
        }
        env.rest = (!map.is_empty()).then(|| Box::new(map));
        env
    }

    /// The element as an object: [`slim_response_body`]'s, or [`digest_body`]'s.
    pub fn into_value(mut self) -> Value {
        let mut map = self.rest.take().map(|r| *r).unwrap_or_default();
        for key in Envelope::MEMBERS {
            if let Some(v) = self.member_mut(key).and_then(Option::take) {
                map.insert(key.to_string(), v);
            }
        }
        Value::Object(map)
    }
}

/// A body read straight into envelopes: each object element left as its [`Envelope`] (other
/// elements built as values).
#[derive(Debug, Clone, PartialEq)]
pub enum EnvelopeBody {
    One(Envelope),
    Batch(Vec<EnvelopeElement>),
    /// Neither an object nor an array.
    Other(Value),
}

impl EnvelopeBody {
    /// The body as the `Value` it stands for.
    pub fn into_value(self) -> Value {
        match self {
            EnvelopeBody::One(env) => env.into_value(),
            EnvelopeBody::Batch(items) => {
                Value::Array(items.into_iter().map(EnvelopeElement::into_value).collect())
            }
            EnvelopeBody::Other(v) => v,
        }
    }
}

impl EnvelopeElement {
    pub fn into_value(self) -> Value {
        match self {
            EnvelopeElement::Envelope(env) => env.into_value(),
            EnvelopeElement::Other(v) => v,
        }
    }
}

/// An element of a batch body.
#[derive(Debug, Clone, PartialEq)]
pub enum EnvelopeElement {
    Envelope(Envelope),
    Other(Value),
}

/// [`slim_response_body`] without the envelope maps: same verdicts and errors.
pub fn response_envelopes(bytes: &[u8]) -> Result<EnvelopeBody, serde_json::Error> {
    run_seed(bytes, EnvelopeBodySeed)
}

/// [`response_envelopes`] of text (an SSE event's data, already a `String`): not validated
/// as UTF-8 a second time.
pub fn response_envelopes_str(text: &str) -> Result<EnvelopeBody, serde_json::Error> {
    run_seed_str(text, EnvelopeBodySeed)
}

#[derive(Clone, Copy)]
struct EnvelopeBodySeed;

seed_via_visitor!(EnvelopeBodySeed, EnvelopeBody);

impl<'de> Visitor<'de> for EnvelopeBodySeed {
    type Value = EnvelopeBody;
    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a JSON-RPC body")
    }
    scalar_values!(EnvelopeBody::Other);
    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<EnvelopeBody, A::Error> {
        let mut items = Vec::new();
        while let Some(v) = seq.next_element_seed(EnvelopeElementSeed)? {
            items.push(v);
        }
        Ok(EnvelopeBody::Batch(items))
    }
    fn visit_map<A: MapAccess<'de>>(self, map: A) -> Result<EnvelopeBody, A::Error> {
        envelope_of(map).map(EnvelopeBody::One)
    }
}

struct EnvelopeElementSeed;

seed_via_visitor!(EnvelopeElementSeed, EnvelopeElement);

impl<'de> Visitor<'de> for EnvelopeElementSeed {
    type Value = EnvelopeElement;
    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a JSON-RPC message")
    }
    plain_values!(EnvelopeElement::Other);
    fn visit_map<A: MapAccess<'de>>(self, map: A) -> Result<EnvelopeElement, A::Error> {
        envelope_of(map).map(EnvelopeElement::Envelope)
    }
}

/// An object element: its envelope members kept (`result` cut by [`SlimResultSeed`]), the
/// others skipped unbuilt.
fn envelope_of<'de, A: MapAccess<'de>>(mut map: A) -> Result<Envelope, A::Error> {
    let mut env = Envelope::default();
    while let Some(Key(k)) = map.next_key()? {
        if k == "result" {
            env.result = Some(map.next_value_seed(SlimResultSeed)?);
            continue;
        }
        match env.member_mut(&k) {
            Some(slot) => *slot = Some(map.next_value()?),
            None => {
                map.next_value::<de::IgnoredAny>()?;
            }
        }
    }
    Ok(env)
}

/// `result`: an object is cut (see [`slim_response_body`]); anything else is kept whole.
struct SlimResultSeed;

seed_via_visitor!(SlimResultSeed, Value);

impl<'de> Visitor<'de> for SlimResultSeed {
    type Value = Value;
    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a JSON-RPC result")
    }
    plain_values!(same);
    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Value, A::Error> {
        let mut slim = Map::new();
        while let Some(Key(k)) = map.next_key()? {
            match k.as_ref() {
                "resultType" | "isError" | "protocolVersion" => {
                    let v: Value = map.next_value()?;
                    slim.insert(k.into_owned(), v);
                }
                "task" => {
                    let is_object = map.next_value_seed(IsObjectSeed)?;
                    let kept = if is_object {
                        Value::Object(Map::new())
                    } else {
                        Value::Null
                    };
                    slim.insert(k.into_owned(), kept);
                }
                "content" => {
                    let v = map.next_value_seed(ContentTypesSeed)?;
                    slim.insert(k.into_owned(), v);
                }
                "tools" => {
                    let v = map.next_value_seed(ToolsSeed)?;
                    slim.insert(k.into_owned(), v);
                }
                _ => {
                    map.next_value::<de::IgnoredAny>()?;
                }
            }
        }
        Ok(Value::Object(slim))
    }
}

/// `tools`: an array becomes its tools cut by [`ToolSeed`]; anything else `null`. Input
/// schemas (the bulk of a listing) are skipped unbuilt.
struct ToolsSeed;

seed_via_visitor!(ToolsSeed, Value);

impl<'de> Visitor<'de> for ToolsSeed {
    type Value = Value;
    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a tools array")
    }
    constant_scalars!(Value::Null);
    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Value, A::Error> {
        let mut tools = Vec::new();
        while let Some(t) = seq.next_element_seed(ToolSeed)? {
            tools.push(t);
        }
        Ok(Value::Array(tools))
    }
    fn visit_map<A: MapAccess<'de>>(self, map: A) -> Result<Value, A::Error> {
        skip_map(map).map(|()| Value::Null)
    }
}

/// A listed tool, as [`slim_tool`] cuts it (a repeated key: the last one counts).
struct ToolSeed;

seed_via_visitor!(ToolSeed, Value);

impl<'de> Visitor<'de> for ToolSeed {
    type Value = Value;
    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a tool")
    }
    constant_scalars!(Value::Null);
    fn visit_seq<A: SeqAccess<'de>>(self, seq: A) -> Result<Value, A::Error> {
        skip_seq(seq).map(|()| Value::Null)
    }
    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Value, A::Error> {
        let mut slim = Map::new();
        while let Some(Key(k)) = map.next_key()? {
            match k.as_ref() {
                "name" => match map.next_value_seed(ScalarSeed)? {
                    Some(v @ Value::String(_)) => {
                        slim.insert(k.into_owned(), v);
                    }
                    _ => {
                        slim.remove("name");
                    }
                },
                "annotations" => {
                    let v = map.next_value_seed(HintsSeed)?;
                    slim.insert(k.into_owned(), v);
                }
                _ => {
                    map.next_value::<de::IgnoredAny>()?;
                }
            }
        }
        Ok(Value::Object(slim))
    }
}

/// `annotations`: an object becomes its boolean [`TOOL_HINTS`]; anything else `null`.
struct HintsSeed;

seed_via_visitor!(HintsSeed, Value);

impl<'de> Visitor<'de> for HintsSeed {
    type Value = Value;
    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("tool annotations")
    }
    constant_scalars!(Value::Null);
    fn visit_seq<A: SeqAccess<'de>>(self, seq: A) -> Result<Value, A::Error> {
        skip_seq(seq).map(|()| Value::Null)
    }
    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Value, A::Error> {
        let mut slim = Map::new();
        while let Some(Key(k)) = map.next_key()? {
            if !TOOL_HINTS.contains(&k.as_ref()) {
                map.next_value::<de::IgnoredAny>()?;
                continue;
            }
            match map.next_value_seed(ScalarSeed)? {
                Some(v @ Value::Bool(_)) => {
                    slim.insert(k.into_owned(), v);
                }
                _ => {
                    slim.remove(k.as_ref());
                }
            }
        }
        Ok(Value::Object(slim))
    }
}

/// A scalar built as a `Value`; an array or object is skipped (`None`).
struct ScalarSeed;

seed_via_visitor!(ScalarSeed, Option<Value>);

impl<'de> Visitor<'de> for ScalarSeed {
    type Value = Option<Value>;
    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("any JSON value")
    }
    scalar_values!(Some);
    fn visit_seq<A: SeqAccess<'de>>(self, seq: A) -> Result<Option<Value>, A::Error> {
        skip_seq(seq).map(|()| None)
    }
    fn visit_map<A: MapAccess<'de>>(self, map: A) -> Result<Option<Value>, A::Error> {
        skip_map(map).map(|()| None)
    }
}

/// Whether a value is an object, skipping it.
struct IsObjectSeed;

seed_via_visitor!(IsObjectSeed, bool);

impl<'de> Visitor<'de> for IsObjectSeed {
    type Value = bool;
    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("any JSON value")
    }
    constant_scalars!(false);
    fn visit_seq<A: SeqAccess<'de>>(self, seq: A) -> Result<bool, A::Error> {
        skip_seq(seq).map(|()| false)
    }
    fn visit_map<A: MapAccess<'de>>(self, map: A) -> Result<bool, A::Error> {
        skip_map(map).map(|()| true)
    }
}

/// `content`: an array becomes its blocks' string `type`s; anything else `null`.
struct ContentTypesSeed;

seed_via_visitor!(ContentTypesSeed, Value);

impl<'de> Visitor<'de> for ContentTypesSeed {
    type Value = Value;
    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a content array")
    }
    constant_scalars!(Value::Null);
    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Value, A::Error> {
        let mut blocks = Vec::new();
        while let Some(b) = seq.next_element_seed(BlockTypeSeed)? {
            blocks.push(b);
        }
        Ok(Value::Array(blocks))
    }
    fn visit_map<A: MapAccess<'de>>(self, map: A) -> Result<Value, A::Error> {
        skip_map(map).map(|()| Value::Null)
    }
}

/// A content block: `{"type": t}` when it is an object with a string `type` (the last one
/// given), else `null`.
struct BlockTypeSeed;

seed_via_visitor!(BlockTypeSeed, Value);

impl<'de> Visitor<'de> for BlockTypeSeed {
    type Value = Value;
    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a content block")
    }
    constant_scalars!(Value::Null);
    fn visit_seq<A: SeqAccess<'de>>(self, seq: A) -> Result<Value, A::Error> {
        skip_seq(seq).map(|()| Value::Null)
    }
    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Value, A::Error> {
        let mut ty: Option<Value> = None;
        while let Some(Key(k)) = map.next_key()? {
            if k == "type" {
                ty = Some(map.next_value()?);
            } else {
                map.next_value::<de::IgnoredAny>()?;
            }
        }
        Ok(match ty {
            Some(t @ Value::String(_)) => {
                let mut m = Map::new();
                m.insert("type".to_string(), t);
                Value::Object(m)
            }
            _ => Value::Null,
        })
    }
}

#[cfg(test)]
mod tests {
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
        let ours = digest_body(deep.as_bytes(), &KEYS).unwrap_err().to_string();
        assert!(ours.starts_with("recursion limit exceeded"), "{ours}");
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
