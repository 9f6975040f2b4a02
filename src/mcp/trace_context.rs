//! W3C Trace Context carried in a request's `params._meta.traceparent` (SEP-414; the
//! OpenTelemetry conventions for MCP propagate the caller's span there), so that a report
//! can put the exchange under the caller's span.

/// A valid `traceparent`: the caller's trace and the span the request was sent from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct TraceParent {
    pub trace_id: [u8; 16],
    /// The caller's span: the parent of a span for this request.
    pub span_id: [u8; 8],
    pub flags: u8,
}

impl TraceParent {
    /// Parses a `traceparent` value as W3C Trace Context level 1 reads it: `00` followed by
    /// exactly the three fields; a later version (not `ff`) may carry more after a `-`.
    /// Lower-case hex only; an all-zero trace or span id is invalid. `None` when invalid.
    pub fn parse(value: &str) -> Option<TraceParent> {
        let b = value.as_bytes();
        let version = hex_byte(b.get(0..2)?)?;
        if version == 0xff || b.get(2) != Some(&b'-') {
            return None;
        }
        let trace_id: [u8; 16] = hex_array(b.get(3..35)?)?;
        let span_id: [u8; 8] = hex_array(b.get(36..52)?)?;
        if b.get(35) != Some(&b'-') || b.get(52) != Some(&b'-') {
            return None;
        }
        let flags = hex_byte(b.get(53..55)?)?;
        let rest_ok = match b.len() {
            55 => true,
            _ => version != 0 && b.get(55) == Some(&b'-'),
        };
        let zero = |s: &[u8]| s.iter().all(|&x| x == 0);
        (rest_ok && !zero(&trace_id) && !zero(&span_id)).then_some(TraceParent {
            trace_id,
            span_id,
            flags,
        })
    }
}

fn hex_digit(c: u8) -> Option<u8> {
    match c {
        b'0'..=b'9' => Some(c - b'0'),
        b'a'..=b'f' => Some(c - b'a' + 10),
        _ => None,
    }
}

fn hex_byte(pair: &[u8]) -> Option<u8> {
    match pair {
        [hi, lo] => Some(hex_digit(*hi)? << 4 | hex_digit(*lo)?),
        _ => None,
    }
}

fn hex_array<const N: usize>(text: &[u8]) -> Option<[u8; N]> {
    if text.len() != 2 * N {
        return None;
    }
    let mut out = [0u8; N];
    for (byte, pair) in out.iter_mut().zip(text.chunks_exact(2)) {
        *byte = hex_byte(pair)?;
    }
    Some(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    const VALID: &str = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01";

    #[test]
    fn reads_the_three_fields() {
        let tp = TraceParent::parse(VALID).unwrap();
        assert_eq!(tp.trace_id[0], 0x4b);
        assert_eq!(tp.trace_id[15], 0x36);
        assert_eq!(tp.span_id, [0x00, 0xf0, 0x67, 0xaa, 0x0b, 0xa9, 0x02, 0xb7]);
        assert_eq!(tp.flags, 1);
    }

    #[test]
    fn a_later_version_may_carry_more() {
        let later = "01-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01-extra";
        assert!(TraceParent::parse(later).is_some());
        assert!(TraceParent::parse(&format!("{VALID}-extra")).is_none());
    }

    #[test]
    fn rejects_what_the_spec_rejects() {
        for bad in [
            "",
            "00",
            "ff-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01",
            "00-00000000000000000000000000000000-00f067aa0ba902b7-01",
            "00-4bf92f3577b34da6a3ce929d0e0e4736-0000000000000000-01",
            "00-4BF92F3577B34DA6A3CE929D0E0E4736-00f067aa0ba902b7-01",
            "00-4bf92f3577b34da6a3ce929d0e0e473-00f067aa0ba902b7-01",
            "00_4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01",
            "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-0",
            "0x-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01",
            "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01é",
        ] {
            assert_eq!(TraceParent::parse(bad), None, "{bad:?}");
        }
    }
}
