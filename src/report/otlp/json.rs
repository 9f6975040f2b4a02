//! The requests in the protobuf JSON mapping (the file's lines and `http/json` bodies),
//! written straight into a buffer: the field names are fixed, so only values need escaping.
//! The bytes are what `serde_json` would write for the same shapes (the JSON mapping's
//! camelCase names, 64-bit integers as strings, enums as integers, ids as lower-case hex),
//! and fields at their default value are left out where the mapping allows it.

use super::model::{
    AnyValue, Event, ExportRequest, KeyValue, Link, SPAN_KIND_CLIENT, Span, Status,
};
use super::span::{AttributeSink, Key, SpanDraft, SpanName, us_to_ns};

/// A span as one JSON object.
pub trait JsonSpan {
    fn write_json(&self, out: &mut Vec<u8>);
}

impl JsonSpan for Span {
    fn write_json(&self, out: &mut Vec<u8>) {
        encode_span(out, self);
    }
}

impl JsonSpan for SpanDraft {
    fn write_json(&self, out: &mut Vec<u8>) {
        encode_draft(out, self);
    }
}

/// Appends `request` as one JSON object (without a line end) to `out`.
pub fn encode<S: JsonSpan>(out: &mut Vec<u8>, request: &ExportRequest<'_, S>) {
    out.extend_from_slice(b"{\"resourceSpans\":[");
    for (i, rs) in request.resource_spans.iter().enumerate() {
        comma(out, i);
        out.extend_from_slice(b"{\"resource\":{\"attributes\":");
        attributes(out, &rs.resource.attributes);
        out.extend_from_slice(b"},\"scopeSpans\":[");
        for (j, ss) in rs.scope_spans.iter().enumerate() {
            comma(out, j);
            out.extend_from_slice(b"{\"scope\":{\"name\":");
            string(out, ss.scope.name);
            out.extend_from_slice(b",\"version\":");
            string(out, ss.scope.version);
            out.extend_from_slice(b"},\"spans\":");
            array(out, &ss.spans, |out, span| span.write_json(out));
            out.push(b'}');
        }
        out.extend_from_slice(b"]}");
    }
    out.extend_from_slice(b"]}");
}

/// One span as a JSON object.
pub fn encode_span(out: &mut Vec<u8>, span: &Span) {
    out.extend_from_slice(b"{\"traceId\":");
    hex(out, &span.trace_id.0);
    out.extend_from_slice(b",\"spanId\":");
    hex(out, &span.span_id.0);
    if let Some(parent) = &span.parent_span_id {
        out.extend_from_slice(b",\"parentSpanId\":");
        hex(out, &parent.0);
    }
    out.extend_from_slice(b",\"name\":");
    string(out, &span.name);
    out.extend_from_slice(b",\"kind\":");
    out.extend_from_slice(itoa::Buffer::new().format(span.kind).as_bytes());
    out.extend_from_slice(b",\"startTimeUnixNano\":");
    quoted_int(out, span.start_time_unix_nano.0);
    out.extend_from_slice(b",\"endTimeUnixNano\":");
    quoted_int(out, span.end_time_unix_nano.0);
    out.extend_from_slice(b",\"attributes\":");
    attributes(out, &span.attributes);
    if !span.events.is_empty() {
        out.extend_from_slice(b",\"events\":");
        array(out, &span.events, event);
    }
    if span.dropped_events_count != 0 {
        out.extend_from_slice(b",\"droppedEventsCount\":");
        out.extend_from_slice(
            itoa::Buffer::new()
                .format(span.dropped_events_count)
                .as_bytes(),
        );
    }
    if !span.links.is_empty() {
        out.extend_from_slice(b",\"links\":");
        array(out, &span.links, link);
    }
    out.extend_from_slice(b",\"status\":");
    status(out, &span.status);
    out.push(b'}');
}

/// An exchange's span as one JSON object, written from its draft: the same bytes as
/// [`encode_span`] of [`SpanDraft::to_span`], without making the span first.
pub fn encode_draft(out: &mut Vec<u8>, d: &SpanDraft) {
    out.extend_from_slice(b"{\"traceId\":");
    hex(out, &d.trace_id);
    out.extend_from_slice(b",\"spanId\":");
    hex(out, &d.span_id);
    out.extend_from_slice(b",\"parentSpanId\":");
    hex(out, &d.parent);
    out.extend_from_slice(b",\"name\":");
    let SpanName { head, tail } = d.name();
    match tail {
        None => string(out, head),
        Some(tail) => {
            out.push(b'"');
            string_body(out, head);
            out.push(b' ');
            string_body(out, tail);
            out.push(b'"');
        }
    }
    out.extend_from_slice(b",\"kind\":");
    out.extend_from_slice(itoa::Buffer::new().format(SPAN_KIND_CLIENT).as_bytes());
    out.extend_from_slice(b",\"startTimeUnixNano\":");
    quoted_int(out, d.start_ns);
    out.extend_from_slice(b",\"endTimeUnixNano\":");
    quoted_int(out, d.end_ns);
    out.extend_from_slice(b",\"attributes\":[");
    d.write_attributes(&mut JsonAttributes { out, count: 0 });
    out.push(b']');
    if !d.sse_marks().is_empty() {
        out.extend_from_slice(b",\"events\":");
        array(out, d.sse_marks(), |out, m| {
            out.extend_from_slice(b"{\"timeUnixNano\":");
            quoted_int(out, us_to_ns(m.ts_us));
            out.extend_from_slice(b",\"name\":");
            string(out, &m.name);
            out.push(b'}');
        });
    }
    if d.sse_marks_dropped() != 0 {
        out.extend_from_slice(b",\"droppedEventsCount\":");
        out.extend_from_slice(itoa::Buffer::new().format(d.sse_marks_dropped()).as_bytes());
    }
    if !d.links.is_empty() {
        out.extend_from_slice(b",\"links\":");
        array(out, &d.links, link);
    }
    out.extend_from_slice(b",\"status\":{\"code\":");
    out.extend_from_slice(itoa::Buffer::new().format(d.status_code()).as_bytes());
    if let Some(text) = d.status_message() {
        out.extend_from_slice(b",\"message\":");
        string(out, text);
    }
    out.extend_from_slice(b"}}");
}

/// Attributes written as the members of a JSON array.
struct JsonAttributes<'a> {
    out: &'a mut Vec<u8>,
    count: usize,
}

impl JsonAttributes<'_> {
    /// `{"key":KEY,"value":{"MEMBER":`, after a comma unless first.
    fn head(&mut self, key: Key, member: &[u8]) {
        debug_assert!(!needs_escape(key.name.as_bytes()));
        comma(self.out, self.count);
        self.count += 1;
        self.out.extend_from_slice(key.json_head.as_bytes());
        self.out.extend_from_slice(member);
    }
}

impl AttributeSink for JsonAttributes<'_> {
    fn str(&mut self, key: Key, value: &str) {
        self.head(key, b"\"stringValue\":");
        string(self.out, value);
        self.out.extend_from_slice(b"}}");
    }

    fn int(&mut self, key: Key, value: i64) {
        self.head(key, b"\"intValue\":");
        quoted_int(self.out, value);
        self.out.extend_from_slice(b"}}");
    }

    fn bool(&mut self, key: Key, value: bool) {
        self.head(key, b"\"boolValue\":");
        self.out
            .extend_from_slice(if value { b"true" } else { b"false" });
        self.out.extend_from_slice(b"}}");
    }
}

fn event(out: &mut Vec<u8>, e: &Event) {
    out.extend_from_slice(b"{\"timeUnixNano\":");
    quoted_int(out, e.time_unix_nano.0);
    out.extend_from_slice(b",\"name\":");
    string(out, &e.name);
    out.push(b'}');
}

fn link(out: &mut Vec<u8>, l: &Link) {
    out.extend_from_slice(b"{\"traceId\":");
    hex(out, &l.trace_id.0);
    out.extend_from_slice(b",\"spanId\":");
    hex(out, &l.span_id.0);
    out.extend_from_slice(b",\"attributes\":");
    attributes(out, &l.attributes);
    out.push(b'}');
}

fn status(out: &mut Vec<u8>, s: &Status) {
    out.extend_from_slice(b"{\"code\":");
    out.extend_from_slice(itoa::Buffer::new().format(s.code).as_bytes());
    if let Some(text) = &s.message {
        out.extend_from_slice(b",\"message\":");
        string(out, text);
    }
    out.push(b'}');
}

fn attributes(out: &mut Vec<u8>, kvs: &[KeyValue]) {
    out.push(b'[');
    for (i, kv) in kvs.iter().enumerate() {
        comma(out, i);
        out.extend_from_slice(b"{\"key\":");
        name(out, kv.key);
        out.extend_from_slice(b",\"value\":{");
        match &kv.value {
            AnyValue::StringValue(text) => {
                out.extend_from_slice(b"\"stringValue\":");
                string(out, text.as_str());
            }
            AnyValue::IntValue(n) => {
                out.extend_from_slice(b"\"intValue\":");
                quoted_int(out, n.0);
            }
            AnyValue::BoolValue(b) => {
                out.extend_from_slice(b"\"boolValue\":");
                out.extend_from_slice(if *b { b"true" } else { b"false" });
            }
        }
        out.extend_from_slice(b"}}");
    }
    out.push(b']');
}

/// `items` as a JSON array, each written by `each`.
fn array<T>(out: &mut Vec<u8>, items: &[T], each: impl Fn(&mut Vec<u8>, &T)) {
    out.push(b'[');
    for (i, item) in items.iter().enumerate() {
        comma(out, i);
        each(out, item);
    }
    out.push(b']');
}

fn comma(out: &mut Vec<u8>, index: usize) {
    if index > 0 {
        out.push(b',');
    }
}

/// A 64-bit integer as the mapping writes it: a decimal string.
fn quoted_int(out: &mut Vec<u8>, n: impl itoa::Integer) {
    out.push(b'"');
    out.extend_from_slice(itoa::Buffer::new().format(n).as_bytes());
    out.push(b'"');
}

/// The lower-case hex digit of a nibble.
fn hex_digit(nibble: u8) -> u8 {
    match nibble & 0xf {
        n @ 0..=9 => b'0' + n,
        n => b'a' + (n - 10),
    }
}

/// An id (at most 16 bytes) as a lower-case hex string.
fn hex(out: &mut Vec<u8>, bytes: &[u8]) {
    let mut text = [b'"'; 34];
    let digits = text.get_mut(1..).unwrap_or_default();
    for (pair, &b) in digits.chunks_exact_mut(2).zip(bytes) {
        if let [hi, lo] = pair {
            *hi = hex_digit(b >> 4);
            *lo = hex_digit(b);
        }
    }
    let len = 2 * bytes.len().min(16);
    let quote_at = len + 1;
    if let Some(end) = text.get_mut(quote_at) {
        *end = b'"';
    }
    out.extend_from_slice(text.get(..=quote_at).unwrap_or_default());
}

/// How a byte is written inside a JSON string: as itself (0), as a short escape (its
/// letter), or as `\u00XX` (`u`); the same choices as `serde_json`.
fn escape_of(b: u8) -> u8 {
    match b {
        0x08 => b'b',
        0x09 => b't',
        0x0a => b'n',
        0x0c => b'f',
        0x0d => b'r',
        0x00..=0x1f => b'u',
        b'"' | b'\\' => b,
        _ => 0,
    }
}

/// Whether any byte of `bytes` must be escaped: eight bytes at a time, each word tested
/// for a byte below 0x20, a quote or a backslash with the bit tricks of "Bit Twiddling
/// Hacks" (`haszero`, `hasless`), which are exact as a yes/no answer.
fn needs_escape(bytes: &[u8]) -> bool {
    const ONES: u64 = u64::from_ne_bytes([0x01; 8]);
    const HIGHS: u64 = u64::from_ne_bytes([0x80; 8]);
    const QUOTES: u64 = u64::from_ne_bytes([b'"'; 8]);
    const BACKSLASHES: u64 = u64::from_ne_bytes([b'\\'; 8]);
    let has_zero = |v: u64| v.wrapping_sub(ONES) & !v & HIGHS != 0;
    let mut words = bytes.chunks_exact(8);
    for word in &mut words {
        let mut w = [0u8; 8];
        w.copy_from_slice(word);
        let v = u64::from_ne_bytes(w);
        if v.wrapping_sub(ONES * 0x20) & !v & HIGHS != 0
            || has_zero(v ^ QUOTES)
            || has_zero(v ^ BACKSLASHES)
        {
            return true;
        }
    }
    words
        .remainder()
        .iter()
        .any(|&b| b < 0x20 || b == b'"' || b == b'\\')
}

/// A key of the fixed vocabulary (no byte to escape), quotes included.
fn name(out: &mut Vec<u8>, key: &'static str) {
    debug_assert!(!needs_escape(key.as_bytes()));
    out.push(b'"');
    out.extend_from_slice(key.as_bytes());
    out.push(b'"');
}

/// `text` as a JSON string, quotes included.
fn string(out: &mut Vec<u8>, text: &str) {
    out.reserve(text.len() + 2);
    out.push(b'"');
    string_body(out, text);
    out.push(b'"');
}

/// `text` escaped for the inside of a JSON string.
fn string_body(out: &mut Vec<u8>, text: &str) {
    let bytes = text.as_bytes();
    if !needs_escape(bytes) {
        out.extend_from_slice(bytes);
        return;
    }
    let mut start = 0;
    for (i, &b) in bytes.iter().enumerate() {
        let escape = escape_of(b);
        if escape == 0 {
            continue;
        }
        out.extend_from_slice(bytes.get(start..i).unwrap_or_default());
        match escape {
            b'u' => {
                out.extend_from_slice(&[b'\\', b'u', b'0', b'0', hex_digit(b >> 4), hex_digit(b)])
            }
            letter => out.extend_from_slice(&[b'\\', letter]),
        }
        start = i + 1;
    }
    out.extend_from_slice(bytes.get(start..).unwrap_or_default());
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::report::otlp::model::{Hex, SPAN_KIND_CLIENT, STATUS_ERROR, Status, Text, U64Text};

    fn text(span: &Span) -> String {
        let mut out = Vec::new();
        encode_span(&mut out, span);
        String::from_utf8(out).unwrap()
    }

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
        assert_eq!(
            text(&span),
            concat!(
                r#"{"traceId":"abababababababababababababababab","spanId":"01020304050607ff","#,
                r#""name":"tools/call echo","kind":3,"startTimeUnixNano":"18446744073709551615","#,
                r#""endTimeUnixNano":"2","attributes":[{"key":"server.port","value":{"intValue":"-3"}},"#,
                r#"{"key":"b","value":{"boolValue":true}},{"key":"s","value":{"stringValue":"x\"y"}}],"#,
                r#""status":{"code":2,"message":"HTTP_ERROR"}}"#
            )
        );
    }

    proptest::proptest! {
        #![proptest_config(crate::testing::proptest_cases(512))]

        /// The word-at-a-time test agrees with the byte-at-a-time one, whatever the bytes
        /// and wherever the one to escape lies (first word, last word, remainder).
        #[test]
        fn escape_check_agrees_with_bytes(
            bytes in proptest::collection::vec(
                proptest::prop_oneof![
                    proptest::num::u8::ANY,
                    proptest::sample::select(vec![b'"', b'\\', 0x1f, 0x20, 0x7f, 0x80, 0xff, b'a']),
                ],
                0..40,
            )
        ) {
            let plain = bytes.iter().any(|&b| b < 0x20 || b == b'"' || b == b'\\');
            proptest::prop_assert_eq!(needs_escape(&bytes), plain);
        }
    }

    #[test]
    fn escape_check_on_each_byte_at_each_place() {
        for len in 1..=24 {
            for at in 0..len {
                for b in 0..=255u8 {
                    let mut bytes = vec![b'x'; len];
                    bytes[at] = b;
                    let plain = b < 0x20 || b == b'"' || b == b'\\';
                    assert_eq!(needs_escape(&bytes), plain, "byte {b:#x} at {at} of {len}");
                }
            }
        }
    }

    #[test]
    fn strings_escape_as_serde_json_does() {
        let mut all = String::new();
        for c in (0u8..0x80)
            .map(char::from)
            .chain(['é', '€', '😀', '\u{7f}', '\u{2028}'])
        {
            all.push(c);
        }
        for sample in [all.as_str(), "", "plain", "\\\"", "tail\u{1}"] {
            let mut out = Vec::new();
            string(&mut out, sample);
            assert_eq!(
                String::from_utf8(out).unwrap(),
                serde_json::to_string(sample).unwrap(),
                "{sample:?}"
            );
        }
    }

    #[test]
    fn optional_members_and_every_value_kind_parse_back() {
        let span = Span {
            trace_id: Hex([0; 16]),
            span_id: Hex([0xff; 8]),
            parent_span_id: Some(Hex([0x10; 8])),
            name: "n\n".into(),
            kind: 1,
            start_time_unix_nano: U64Text(0),
            end_time_unix_nano: U64Text(1),
            attributes: vec![KeyValue::str("k", Text::Owned("v\u{0}".into()))],
            events: vec![Event {
                time_unix_nano: U64Text(5),
                name: "response".into(),
            }],
            dropped_events_count: 7,
            links: vec![Link {
                trace_id: Hex([1; 16]),
                span_id: Hex([2; 8]),
                attributes: vec![KeyValue::bool("x", false)],
            }],
            status: Status {
                code: 0,
                message: None,
            },
        };
        let v: serde_json::Value = serde_json::from_str(&text(&span)).unwrap();
        assert_eq!(v["parentSpanId"], "1010101010101010");
        assert_eq!(v["name"], "n\n");
        assert_eq!(v["attributes"][0]["value"]["stringValue"], "v\u{0}");
        assert_eq!(v["events"][0]["timeUnixNano"], "5");
        assert_eq!(v["droppedEventsCount"], 7);
        assert_eq!(v["links"][0]["attributes"][0]["value"]["boolValue"], false);
        assert_eq!(v["status"], serde_json::json!({"code": 0}));
    }
}
