//! The shapes of an OTLP request (opentelemetry-proto's `collector/trace/v1`, `trace/v1` and
//! `common/v1`), written as JSON by `json.rs` and as protobuf by `proto.rs`.

use arcstr::ArcStr;

/// `SPAN_KIND_INTERNAL`.
pub const SPAN_KIND_INTERNAL: u8 = 1;
/// `SPAN_KIND_CLIENT`.
pub const SPAN_KIND_CLIENT: u8 = 3;
/// `STATUS_CODE_UNSET`.
pub const STATUS_UNSET: u8 = 0;
/// `STATUS_CODE_ERROR`.
pub const STATUS_ERROR: u8 = 2;

/// One line of the output: an `ExportTraceServiceRequest`, of spans `S` (a [`Span`], or
/// what one is made of).
#[derive(Debug)]
pub struct ExportRequest<'a, S = Span> {
    pub resource_spans: Vec<ResourceSpans<'a, S>>,
}

#[derive(Debug)]
pub struct ResourceSpans<'a, S = Span> {
    pub resource: Resource,
    pub scope_spans: [ScopeSpans<'a, S>; 1],
}

#[derive(Debug)]
pub struct Resource {
    pub attributes: Vec<KeyValue>,
}

#[derive(Debug)]
pub struct ScopeSpans<'a, S = Span> {
    pub scope: Scope,
    pub spans: Vec<&'a S>,
}

#[derive(Debug)]
pub struct Scope {
    pub name: &'static str,
    pub version: &'static str,
}

#[derive(Debug, Clone, PartialEq)]
pub struct Span {
    pub trace_id: Hex<16>,
    pub span_id: Hex<8>,
    pub parent_span_id: Option<Hex<8>>,
    pub name: String,
    pub kind: u8,
    pub start_time_unix_nano: U64Text,
    pub end_time_unix_nano: U64Text,
    pub attributes: Vec<KeyValue>,
    pub events: Vec<Event>,
    pub dropped_events_count: u32,
    pub links: Vec<Link>,
    pub status: Status,
}

#[derive(Debug, Clone, PartialEq)]
pub struct Event {
    pub time_unix_nano: U64Text,
    pub name: String,
}

#[derive(Debug, Clone, PartialEq)]
pub struct Link {
    pub trace_id: Hex<16>,
    pub span_id: Hex<8>,
    pub attributes: Vec<KeyValue>,
}

#[derive(Debug, Clone, PartialEq)]
pub struct Status {
    pub code: u8,
    pub message: Option<String>,
}

#[derive(Debug, Clone, PartialEq)]
pub struct KeyValue {
    pub key: &'static str,
    pub value: AnyValue,
}

/// `AnyValue`: exactly one member, named by its type (the proto's names).
#[allow(clippy::enum_variant_names)]
#[derive(Debug, Clone, PartialEq)]
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

/// A `fixed64`/`uint64` field: a decimal string in the JSON mapping.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct U64Text(pub u64);

/// An `int64` field: a decimal string in the JSON mapping.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct I64Text(pub i64);
