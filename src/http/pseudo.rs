//! HTTP/2 and HTTP/3 pseudo-header fields (RFC 9113 §8.3, RFC 9114 §4.3) in an
//! HTTP/1-shaped header list: HAR recorders write them as ordinary fields, and the HTTP/2
//! reader will meet them in every decoded header block.

/// The pseudo-header fields of one header list (the first value of each).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct PseudoHeaders {
    /// `:method` (requests).
    pub method: Option<String>,
    /// `:scheme` (requests).
    pub scheme: Option<String>,
    /// `:authority` (requests): what HTTP/1.1 sends as `Host` (RFC 9113 §8.3.1).
    pub authority: Option<String>,
    /// `:path` (requests): the request target.
    pub path: Option<String>,
    /// `:status` (responses).
    pub status: Option<String>,
}

/// Splits the pseudo-header fields (names starting with `:`, matched case-insensitively)
/// off `headers`; the others keep their order. Unknown pseudo-headers are dropped: they have
/// no place in an HTTP/1-shaped list.
pub fn split_pseudo(headers: Vec<(String, String)>) -> (Vec<(String, String)>, PseudoHeaders) {
    let mut pseudo = PseudoHeaders::default();
    let mut plain = Vec::with_capacity(headers.len());
    for (n, v) in headers {
        let Some(p) = n.strip_prefix(':') else {
            plain.push((n, v));
            continue;
        };
        let slot = match p.to_ascii_lowercase().as_str() {
            "method" => &mut pseudo.method,
            "scheme" => &mut pseudo.scheme,
            "authority" => &mut pseudo.authority,
            "path" => &mut pseudo.path,
            "status" => &mut pseudo.status,
            _ => continue,
        };
        if slot.is_none() {
            *slot = Some(v);
        }
    }
    (plain, pseudo)
}

/// RFC 9110 §7.2: a request always names its host. When `headers` has no `Host`, the
/// `authority` (HTTP/2's `:authority`, or the one of the request's URL) becomes the first
/// field, as an HTTP/1.1 client would have sent it.
pub fn ensure_host(headers: &mut Vec<(String, String)>, authority: Option<String>) {
    if headers.iter().any(|(n, _)| n.eq_ignore_ascii_case("host")) {
        return;
    }
    if let Some(host) = authority {
        headers.insert(0, ("Host".to_string(), host));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn fields(pairs: &[(&str, &str)]) -> Vec<(String, String)> {
        pairs
            .iter()
            .map(|(n, v)| (n.to_string(), v.to_string()))
            .collect()
    }

    #[test]
    fn pseudo_headers_are_split_off_and_the_rest_keep_their_order() {
        let (plain, pseudo) = split_pseudo(fields(&[
            (":method", "POST"),
            (":authority", "a.example"),
            ("content-type", "application/json"),
            (":Path", "/mcp"),
            (":authority", "second.example"),
            (":scheme", "https"),
            (":protocol", "websocket"),
            ("accept", "*/*"),
        ]));
        assert_eq!(
            plain,
            fields(&[("content-type", "application/json"), ("accept", "*/*")])
        );
        assert_eq!(
            pseudo,
            PseudoHeaders {
                method: Some("POST".into()),
                scheme: Some("https".into()),
                authority: Some("a.example".into()),
                path: Some("/mcp".into()),
                status: None,
            }
        );
        let (_, response) = split_pseudo(fields(&[(":status", "200")]));
        assert_eq!(response.status.as_deref(), Some("200"));
    }

    #[test]
    fn the_authority_becomes_host_only_when_there_is_none() {
        let mut headers = fields(&[("accept", "*/*")]);
        ensure_host(&mut headers, Some("a.example:8080".into()));
        assert_eq!(
            headers,
            fields(&[("Host", "a.example:8080"), ("accept", "*/*")])
        );
        let mut headers = fields(&[("accept", "*/*"), ("HOST", "b.example")]);
        ensure_host(&mut headers, Some("a.example".into()));
        assert_eq!(headers, fields(&[("accept", "*/*"), ("HOST", "b.example")]));
        let mut headers = fields(&[("accept", "*/*")]);
        ensure_host(&mut headers, None);
        assert_eq!(headers, fields(&[("accept", "*/*")]));
    }
}
