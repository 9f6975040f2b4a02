//! JSON-RPC envelopes: the members of one element as fields ([`Envelope`]), so
//! classification needs no map per element, and response bodies read into them with each
//! `result` cut to what classification reads ([`response_envelopes`]).

use super::seed::{
    Key, array_of_values, constant_scalars, plain_values, run_seed, run_seed_str, scalar_values,
    seed_via_visitor, skip_map, skip_seq,
};
use serde::de::{self, DeserializeSeed, Deserializer, MapAccess, SeqAccess, Visitor};
use serde_json::{Map, Value};
use std::fmt;

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
    pub(super) fn member_mut(&mut self, key: &str) -> Option<&mut Option<Value>> {
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
pub(super) fn envelope_of<'de, A: MapAccess<'de>>(mut map: A) -> Result<Envelope, A::Error> {
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
