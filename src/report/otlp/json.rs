//! The requests in the protobuf JSON mapping (the file's lines and `http/json` bodies),
//! written straight into a buffer: the field names are fixed, so only values need escaping.
//! The bytes are what `serde_json` would write for the same shapes (the JSON mapping's
//! camelCase names, 64-bit integers as strings, enums as integers, ids as lower-case hex),
//! and fields at their default value are left out where the mapping allows it.

use super::model::{AnyValue, Event, ExportRequest, KeyValue, Link, Span, Status};

/// Appends `request` as one JSON object (without a line end) to `out`.
pub fn encode(out: &mut Vec<u8>, request: &ExportRequest<'_>) {
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
            array(out, &ss.spans, |out, span| encode_span(out, span));
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
        out.extend_from_slice(b",\"value\":");
        match &kv.value {
            AnyValue::StringValue(text) => {
                out.extend_from_slice(b"{\"stringValue\":");
                string(out, text.as_str());
            }
            AnyValue::IntValue(n) => {
                out.extend_from_slice(b"{\"intValue\":");
                quoted_int(out, n.0);
            }
            AnyValue::BoolValue(b) => {
                out.extend_from_slice(b"{\"boolValue\":");
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

/// An id as a lower-case hex string.
fn hex(out: &mut Vec<u8>, bytes: &[u8]) {
    out.reserve(2 * bytes.len() + 2);
    out.push(b'"');
    for &b in bytes {
        out.push(hex_digit(b >> 4));
        out.push(hex_digit(b));
    }
    out.push(b'"');
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

/// Whether any byte of `bytes` must be escaped; a reduction without an early exit, so that
/// the common case (nothing to escape) is vectorized.
fn needs_escape(bytes: &[u8]) -> bool {
    bytes.iter().fold(false, |any, &b| {
        any | (b < 0x20) | (b == b'"') | (b == b'\\')
    })
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
    let bytes = text.as_bytes();
    out.reserve(bytes.len() + 2);
    out.push(b'"');
    if !needs_escape(bytes) {
        out.extend_from_slice(bytes);
        out.push(b'"');
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
    out.push(b'"');
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
