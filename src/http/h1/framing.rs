//! The framing decision (RFC 9112 §6.3): how long a message body is.
//!
//! Only the decision lives here; reading the body is in `body.rs` and
//! `chunked.rs` (the split hyper makes between `role.rs` and `decode.rs`).

use crate::http::event::{Headers, ResponseHead, push_anomaly};

/// How a body is delimited.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Framing {
    /// No body.
    None,
    /// Exactly this many bytes.
    Length(u64),
    /// Chunked transfer coding.
    Chunked,
    /// Until the server closes the connection (responses only).
    Close,
    /// The connection stops being HTTP after this head (101, CONNECT 2xx).
    Tunnel,
}

/// Transfer-Encoding says chunked: the final coding is `chunked` (§6.3 rule 4).
/// Lenient, as Zeek: `chunked` anywhere in the list counts
/// (`http.bad_transfer_encoding` when it is not last).
fn te_chunked(headers: &Headers, anomalies: &mut Vec<String>) -> Option<bool> {
    let mut seen = false;
    let (mut last_chunked, mut any_chunked) = (false, false);
    for v in headers.get_all("transfer-encoding") {
        seen = true;
        for coding in v.split(',').map(str::trim).filter(|c| !c.is_empty()) {
            last_chunked = coding.eq_ignore_ascii_case("chunked");
            any_chunked |= last_chunked;
        }
    }
    if !seen {
        return None;
    }
    if any_chunked && !last_chunked {
        push_anomaly(anomalies, "http.bad_transfer_encoding");
    }
    Some(any_chunked)
}

/// Content-Length (§6.3 rule 5): one value, or a list of identical values.
fn content_length(headers: &Headers, anomalies: &mut Vec<String>) -> Option<Result<u64, ()>> {
    let mut found: Option<u64> = None;
    let mut any = false;
    for v in headers.get_all("content-length") {
        any = true;
        for part in v.split(',') {
            let part = part.trim();
            let parsed = if !part.is_empty() && part.bytes().all(|b| b.is_ascii_digit()) {
                part.parse::<u64>().ok()
            } else {
                None
            };
            match (parsed, found) {
                (None, _) => {
                    push_anomaly(anomalies, "http.bad_content_length");
                    return Some(Err(()));
                }
                (Some(n), Some(prev)) if n != prev => {
                    push_anomaly(anomalies, "http.bad_content_length");
                    return Some(Err(()));
                }
                (Some(n), _) => found = Some(n),
            }
        }
    }
    if !any {
        return None;
    }
    found.map(Ok).or(Some(Err(())))
}

/// Framing of a request body (RFC 9112 §6.3 rules 3-6).
pub fn request_framing(headers: &Headers, anomalies: &mut Vec<String>) -> Framing {
    let te = te_chunked(headers, anomalies);
    let cl = content_length(headers, anomalies);
    match (te, cl) {
        // Rule 3: Transfer-Encoding overrides Content-Length; a sender doing
        // both may be smuggling, so it is recorded.
        (Some(chunked), Some(_)) => {
            push_anomaly(anomalies, "http.content_length_and_chunked");
            if chunked {
                Framing::Chunked
            } else {
                Framing::None
            }
        }
        (Some(true), None) => Framing::Chunked,
        // Rule 4: a request with a non-chunked final coding is an error (400);
        // nothing can be read reliably, so no body is assumed.
        (Some(false), None) => {
            push_anomaly(anomalies, "http.bad_transfer_encoding");
            Framing::None
        }
        (None, Some(Ok(0))) => Framing::None,
        (None, Some(Ok(n))) => Framing::Length(n),
        // Rule 5: an invalid Content-Length in a request is unrecoverable.
        (None, Some(Err(()))) => Framing::None,
        // Rule 6: a request without either has no body.
        (None, None) => Framing::None,
    }
}

/// Framing of a response body to a request with `method` (`None` when
/// unpaired), RFC 9112 §6.3 rules 1-7.
pub fn response_framing(
    method: Option<&str>,
    head: &ResponseHead,
    anomalies: &mut Vec<String>,
) -> Framing {
    let status = head.status;
    // Rule 1: 101 switches protocols; HEAD, 1xx, 204 and 304 have no body.
    if status == 101 {
        return Framing::Tunnel;
    }
    if method.is_some_and(|m| m.eq_ignore_ascii_case("HEAD"))
        || (100..200).contains(&status)
        || status == 204
        || status == 304
    {
        return Framing::None;
    }
    // Rule 2: a 2xx to CONNECT turns the connection into a tunnel.
    if method.is_some_and(|m| m.eq_ignore_ascii_case("CONNECT")) && (200..300).contains(&status) {
        return Framing::Tunnel;
    }
    let te = te_chunked(&head.headers, anomalies);
    let cl = content_length(&head.headers, anomalies);
    match (te, cl) {
        // Rule 3.
        (Some(chunked), Some(_)) => {
            push_anomaly(anomalies, "http.content_length_and_chunked");
            if chunked {
                Framing::Chunked
            } else {
                Framing::Close
            }
        }
        (Some(true), None) => Framing::Chunked,
        // Rule 4: a response whose final coding is not chunked runs until close.
        (Some(false), None) => Framing::Close,
        (None, Some(Ok(0))) => Framing::None,
        (None, Some(Ok(n))) => Framing::Length(n),
        // Rule 5: an invalid Content-Length; read until close to lose nothing.
        (None, Some(Err(()))) => Framing::Close,
        // Rule 7.
        (None, None) => Framing::Close,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn h(pairs: &[(&str, &str)]) -> Headers {
        pairs.iter().copied().collect()
    }

    fn resp(status: u16, pairs: &[(&str, &str)]) -> ResponseHead {
        ResponseHead {
            status,
            reason: arcstr::ArcStr::new(),
            version: "1.1".into(),
            headers: h(pairs),
        }
    }

    #[test]
    fn request_rules() {
        let mut an = Vec::new();
        assert_eq!(request_framing(&h(&[]), &mut an), Framing::None);
        assert_eq!(
            request_framing(&h(&[("content-length", "5")]), &mut an),
            Framing::Length(5)
        );
        assert_eq!(
            request_framing(&h(&[("Content-Length", "5, 5")]), &mut an),
            Framing::Length(5)
        );
        assert!(an.is_empty());
        assert_eq!(
            request_framing(
                &h(&[("Transfer-Encoding", "chunked"), ("Content-Length", "50")]),
                &mut an
            ),
            Framing::Chunked
        );
        assert_eq!(an, vec!["http.content_length_and_chunked".to_string()]);
        let mut an = Vec::new();
        assert_eq!(
            request_framing(&h(&[("Transfer-Encoding", "chunked, identity")]), &mut an),
            Framing::Chunked
        );
        assert_eq!(an, vec!["http.bad_transfer_encoding".to_string()]);
        let mut an = Vec::new();
        assert_eq!(
            request_framing(&h(&[("Content-Length", "5, 6")]), &mut an),
            Framing::None
        );
        assert_eq!(an, vec!["http.bad_content_length".to_string()]);
    }

    #[test]
    fn response_rules() {
        let mut an = Vec::new();
        let cl = [("Content-Length", "10")];
        assert_eq!(
            response_framing(Some("HEAD"), &resp(200, &cl), &mut an),
            Framing::None
        );
        assert_eq!(
            response_framing(Some("GET"), &resp(204, &cl), &mut an),
            Framing::None
        );
        assert_eq!(
            response_framing(Some("GET"), &resp(304, &cl), &mut an),
            Framing::None
        );
        assert_eq!(
            response_framing(Some("GET"), &resp(101, &[]), &mut an),
            Framing::Tunnel
        );
        assert_eq!(
            response_framing(Some("CONNECT"), &resp(200, &[]), &mut an),
            Framing::Tunnel
        );
        assert_eq!(
            response_framing(Some("CONNECT"), &resp(407, &cl), &mut an),
            Framing::Length(10)
        );
        assert_eq!(
            response_framing(Some("GET"), &resp(200, &cl), &mut an),
            Framing::Length(10)
        );
        assert_eq!(
            response_framing(None, &resp(200, &[]), &mut an),
            Framing::Close
        );
        assert_eq!(
            response_framing(
                Some("GET"),
                &resp(200, &[("transfer-encoding", "gzip")]),
                &mut an
            ),
            Framing::Close
        );
        assert!(an.is_empty());
    }
}
