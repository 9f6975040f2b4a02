//! The same requests in protobuf's binary encoding (`application/x-protobuf`), which every
//! OTLP/HTTP receiver takes (JSON is optional for them): field numbers from
//! opentelemetry-proto's `collector/trace/v1`, `trace/v1`, `resource/v1` and `common/v1`.
//! Fields at their default value are left out, as protobuf encoders do.

use super::model::{AnyValue, Event, ExportRequest, KeyValue, Link, Span, Status};

/// Wire types.
const VARINT: u64 = 0;
const FIXED64: u64 = 1;
const LEN: u64 = 2;

/// `ExportTraceServiceRequest`.
pub fn encode(request: &ExportRequest<'_>) -> Vec<u8> {
    let mut out = Vec::new();
    for rs in &request.resource_spans {
        message(&mut out, 1, |m| {
            message(m, 1, |r| {
                for kv in &rs.resource.attributes {
                    key_value(r, 1, kv);
                }
            });
            for ss in &rs.scope_spans {
                message(m, 2, |s| {
                    message(s, 1, |scope| {
                        string(scope, 1, ss.scope.name);
                        string(scope, 2, ss.scope.version);
                    });
                    for span in &ss.spans {
                        message(s, 2, |b| encode_span(b, span));
                    }
                });
            }
        });
    }
    out
}

fn encode_span(b: &mut Vec<u8>, span: &Span) {
    bytes(b, 1, &span.trace_id.0);
    bytes(b, 2, &span.span_id.0);
    if let Some(parent) = &span.parent_span_id {
        bytes(b, 4, &parent.0);
    }
    string(b, 5, &span.name);
    varint_field(b, 6, u64::from(span.kind));
    fixed64(b, 7, span.start_time_unix_nano.0);
    fixed64(b, 8, span.end_time_unix_nano.0);
    for kv in &span.attributes {
        key_value(b, 9, kv);
    }
    for e in &span.events {
        message(b, 11, |m| event(m, e));
    }
    varint_field(b, 12, u64::from(span.dropped_events_count));
    for l in &span.links {
        message(b, 13, |m| link(m, l));
    }
    message(b, 15, |m| status(m, &span.status));
}

fn event(m: &mut Vec<u8>, e: &Event) {
    fixed64(m, 1, e.time_unix_nano.0);
    string(m, 2, &e.name);
}

fn link(m: &mut Vec<u8>, l: &Link) {
    bytes(m, 1, &l.trace_id.0);
    bytes(m, 2, &l.span_id.0);
    for kv in &l.attributes {
        key_value(m, 4, kv);
    }
}

fn status(m: &mut Vec<u8>, s: &Status) {
    if let Some(text) = &s.message {
        string(m, 2, text);
    }
    varint_field(m, 3, u64::from(s.code));
}

fn key_value(out: &mut Vec<u8>, field: u64, kv: &KeyValue) {
    message(out, field, |m| {
        string(m, 1, kv.key);
        // The value is always written, even when empty: it says which member is set.
        tag(m, 2, LEN);
        let mut v = Vec::new();
        match &kv.value {
            AnyValue::StringValue(s) => {
                let s = s.as_str();
                tag(&mut v, 1, LEN);
                varint(&mut v, s.len() as u64);
                v.extend_from_slice(s.as_bytes());
            }
            AnyValue::BoolValue(b) => {
                tag(&mut v, 2, VARINT);
                varint(&mut v, u64::from(*b));
            }
            AnyValue::IntValue(i) => {
                tag(&mut v, 3, VARINT);
                // int64: two's complement as a 64-bit varint.
                varint(&mut v, i.0 as u64);
            }
        }
        varint(m, v.len() as u64);
        m.extend_from_slice(&v);
    });
}

/// A length-delimited sub-message, built by `fill`.
fn message(out: &mut Vec<u8>, field: u64, fill: impl FnOnce(&mut Vec<u8>)) {
    let mut body = Vec::new();
    fill(&mut body);
    tag(out, field, LEN);
    varint(out, body.len() as u64);
    out.extend_from_slice(&body);
}

fn string(out: &mut Vec<u8>, field: u64, s: &str) {
    bytes(out, field, s.as_bytes());
}

fn bytes(out: &mut Vec<u8>, field: u64, b: &[u8]) {
    if b.is_empty() {
        return;
    }
    tag(out, field, LEN);
    varint(out, b.len() as u64);
    out.extend_from_slice(b);
}

fn varint_field(out: &mut Vec<u8>, field: u64, v: u64) {
    if v != 0 {
        tag(out, field, VARINT);
        varint(out, v);
    }
}

fn fixed64(out: &mut Vec<u8>, field: u64, v: u64) {
    if v != 0 {
        tag(out, field, FIXED64);
        out.extend_from_slice(&v.to_le_bytes());
    }
}

fn tag(out: &mut Vec<u8>, field: u64, wire: u64) {
    varint(out, field << 3 | wire);
}

fn varint(out: &mut Vec<u8>, mut v: u64) {
    while v >= 0x80 {
        out.push((v as u8 & 0x7f) | 0x80);
        v >>= 7;
    }
    out.push(v as u8);
}

#[cfg(test)]
mod tests {
    use super::super::model::{
        Hex, Resource, ResourceSpans, SPAN_KIND_CLIENT, Scope, ScopeSpans, U64Text,
    };
    use super::*;

    #[test]
    fn varints_and_negative_ints() {
        let mut v = Vec::new();
        varint(&mut v, 300);
        assert_eq!(v, [0xac, 0x02]);
        let mut v = Vec::new();
        varint(&mut v, -1i64 as u64);
        assert_eq!(v.len(), 10);
        assert_eq!(v[9], 0x01);
    }

    #[test]
    fn a_request_in_bytes() {
        let span = Span {
            trace_id: Hex([1; 16]),
            span_id: Hex([2; 8]),
            parent_span_id: None,
            name: "x".into(),
            kind: SPAN_KIND_CLIENT,
            start_time_unix_nano: U64Text(1),
            end_time_unix_nano: U64Text(0),
            attributes: vec![KeyValue::int("k", 5)],
            events: vec![],
            dropped_events_count: 0,
            links: vec![],
            status: Status {
                code: 0,
                message: None,
            },
        };
        let request = ExportRequest {
            resource_spans: vec![ResourceSpans {
                resource: Resource { attributes: vec![] },
                scope_spans: [ScopeSpans {
                    scope: Scope {
                        name: "s",
                        version: "",
                    },
                    spans: vec![&span],
                }],
            }],
        };
        let mut want = vec![0x0a, 0x40, 0x0a, 0x00, 0x12, 0x3c];
        want.extend([0x0a, 0x03, 0x0a, 0x01, b's']); // scope
        want.extend([0x12, 0x35]); // span
        want.extend([0x0a, 0x10]);
        want.extend([1; 16]);
        want.extend([0x12, 0x08]);
        want.extend([2; 8]);
        want.extend([0x2a, 0x01, b'x', 0x30, 0x03, 0x39]);
        want.extend(1u64.to_le_bytes());
        want.extend([0x4a, 0x07, 0x0a, 0x01, b'k', 0x12, 0x02, 0x18, 0x05]);
        want.extend([0x7a, 0x00]); // status, all defaults
        assert_eq!(encode(&request), want);
    }
}
