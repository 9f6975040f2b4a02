//! The OTLP/JSON shapes this writer emits (opentelemetry-proto's `trace/v1` and `common/v1`
//! through the protobuf JSON mapping: camelCase names, 64-bit integers as strings, enums as
//! integers; trace and span ids as lower-case hex, as OTLP/JSON requires instead of base64).

use arcstr::ArcStr;
use serde::{Serialize, Serializer};

/// `SPAN_KIND_INTERNAL`.
pub const SPAN_KIND_INTERNAL: u8 = 1;
/// `SPAN_KIND_CLIENT`.
pub const SPAN_KIND_CLIENT: u8 = 3;
/// `STATUS_CODE_UNSET`.
pub const STATUS_UNSET: u8 = 0;
/// `STATUS_CODE_ERROR`.
pub const STATUS_ERROR: u8 = 2;

/// One line of the output: an `ExportTraceServiceRequest`.
#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ExportRequest<'a> {
    pub resource_spans: Vec<ResourceSpans<'a>>,
}

#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ResourceSpans<'a> {
    pub resource: Resource,
    pub scope_spans: [ScopeSpans<'a>; 1],
}

#[derive(Debug, Serialize)]
pub struct Resource {
    pub attributes: Vec<KeyValue>,
}

#[derive(Debug, Serialize)]
pub struct ScopeSpans<'a> {
    pub scope: Scope,
    pub spans: Vec<&'a Span>,
}

#[derive(Debug, Serialize)]
pub struct Scope {
    pub name: &'static str,
    pub version: &'static str,
}

#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Span {
    pub trace_id: Hex<16>,
    pub span_id: Hex<8>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub parent_span_id: Option<Hex<8>>,
    pub name: String,
    pub kind: u8,
    pub start_time_unix_nano: U64Text,
    pub end_time_unix_nano: U64Text,
    pub attributes: Vec<KeyValue>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub events: Vec<Event>,
    #[serde(skip_serializing_if = "is_zero")]
    pub dropped_events_count: u32,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub links: Vec<Link>,
    pub status: Status,
}

fn is_zero(n: &u32) -> bool {
    *n == 0
}

#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Event {
    pub time_unix_nano: U64Text,
    pub name: String,
}

#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Link {
    pub trace_id: Hex<16>,
    pub span_id: Hex<8>,
    pub attributes: Vec<KeyValue>,
}

#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Status {
    pub code: u8,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub message: Option<String>,
}

#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct KeyValue {
    pub key: &'static str,
    pub value: AnyValue,
}

/// `AnyValue`: exactly one member, named by its type (the proto's names).
#[allow(clippy::enum_variant_names)]
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub enum AnyValue {
    StringValue(Text),
    IntValue(I64Text),
    BoolValue(bool),
}

/// A string value without a copy where the row already holds it (shared) or it is a name
/// (static): most attributes are one of the two.
#[derive(Debug, Clone, PartialEq)]
pub enum Text {
    Static(&'static str),
    Shared(ArcStr),
    Owned(String),
}

impl Text {
    pub fn as_str(&self) -> &str {
        match self {
            Text::Static(s) => s,
            Text::Shared(s) => s,
            Text::Owned(s) => s,
        }
    }
}

impl From<&'static str> for Text {
    fn from(s: &'static str) -> Text {
        Text::Static(s)
    }
}

impl From<ArcStr> for Text {
    fn from(s: ArcStr) -> Text {
        Text::Shared(s)
    }
}

impl From<&ArcStr> for Text {
    fn from(s: &ArcStr) -> Text {
        Text::Shared(s.clone())
    }
}

impl From<String> for Text {
    fn from(s: String) -> Text {
        Text::Owned(s)
    }
}

impl Serialize for Text {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(self.as_str())
    }
}

impl KeyValue {
    pub fn str(key: &'static str, value: impl Into<Text>) -> KeyValue {
        KeyValue {
            key,
            value: AnyValue::StringValue(value.into()),
        }
    }

    pub fn int(key: &'static str, value: i64) -> KeyValue {
        KeyValue {
            key,
            value: AnyValue::IntValue(I64Text(value)),
        }
    }

    pub fn bool(key: &'static str, value: bool) -> KeyValue {
        KeyValue {
            key,
            value: AnyValue::BoolValue(value),
        }
    }
}

/// A trace id (16 bytes) or span id (8 bytes), written as lower-case hex.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Hex<const N: usize>(pub [u8; N]);

impl<const N: usize> Serialize for Hex<N> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let mut text = [0u8; 32];
        for (pair, b) in text.chunks_exact_mut(2).zip(self.0) {
            if let [hi, lo] = pair {
                *hi = hex_digit(b >> 4);
                *lo = hex_digit(b & 0xf);
            }
        }
        let used = text.get(..2 * N).unwrap_or_default();
        s.serialize_str(std::str::from_utf8(used).unwrap_or_default())
    }
}

fn hex_digit(nibble: u8) -> u8 {
    if nibble < 10 {
        b'0' + nibble
    } else {
        b'a' + nibble - 10
    }
}

/// A `fixed64`/`uint64` field: a decimal string in the JSON mapping.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct U64Text(pub u64);

impl Serialize for U64Text {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(itoa::Buffer::new().format(self.0))
    }
}

/// An `int64` field: a decimal string in the JSON mapping.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct I64Text(pub i64);

impl Serialize for I64Text {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(itoa::Buffer::new().format(self.0))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_json_mapping() {
        let span = Span {
            trace_id: Hex([0xab; 16]),
            span_id: Hex([1, 2, 3, 4, 5, 6, 7, 0xff]),
            parent_span_id: None,
            name: "tools/call echo".into(),
            kind: SPAN_KIND_CLIENT,
            start_time_unix_nano: U64Text(u64::MAX),
            end_time_unix_nano: U64Text(2),
            attributes: vec![
                KeyValue::int("server.port", -3),
                KeyValue::bool("b", true),
                KeyValue::str("s", "x\"y"),
            ],
            events: vec![],
            dropped_events_count: 0,
            links: vec![],
            status: Status {
                code: STATUS_ERROR,
                message: Some("HTTP_ERROR".into()),
            },
        };
        let text = serde_json::to_string(&span).unwrap();
        assert_eq!(
            text,
            concat!(
                r#"{"traceId":"abababababababababababababababab","spanId":"01020304050607ff","#,
                r#""name":"tools/call echo","kind":3,"startTimeUnixNano":"18446744073709551615","#,
                r#""endTimeUnixNano":"2","attributes":[{"key":"server.port","value":{"intValue":"-3"}},"#,
                r#"{"key":"b","value":{"boolValue":true}},{"key":"s","value":{"stringValue":"x\"y"}}],"#,
                r#""status":{"code":2,"message":"HTTP_ERROR"}}"#
            )
        );
    }
}
