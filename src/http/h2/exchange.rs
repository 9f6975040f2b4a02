//! One HTTP/2 stream as one exchange: its request (head from the decoded header list, body
//! from DATA frames), its response (final `:status`, body pieces), and how each ended.

use crate::http::decompress::ContentDecoder;
use crate::http::event::push_anomaly;
use crate::http::pseudo::{ensure_host, split_pseudo};
use crate::http::{ExchangeRef, Headers, RequestHead, ResponseHead};
use arcstr::ArcStr;

/// A request whose head has been decoded and whose body is arriving.
pub(super) struct ReqMsg {
    pub ts_first_us: i64,
    pub frame: u64,
    pub head: RequestHead,
    pub body: Vec<u8>,
    pub wire_len: u64,
    pub decoder: ContentDecoder,
    pub anomalies: Vec<String>,
}

/// A response whose final head has gone out and whose body is arriving.
pub(super) struct RespMsg {
    pub wire_len: u64,
    pub decoder: ContentDecoder,
    pub anomalies: Vec<String>,
}

/// Where a stream's response stands.
pub(super) enum Resp {
    /// No final head yet.
    Awaiting,
    Body(RespMsg),
    /// Ended (its `ResponseEnd` or `NoResponse` went out).
    Done,
}

/// One stream with an exchange.
pub(super) struct Stream {
    pub xref: ExchangeRef,
    /// The request being read; `None` once its `Request` went out (or there is none:
    /// a response seen without its request).
    pub req: Option<ReqMsg>,
    pub resp: Resp,
}

impl Stream {
    pub fn finished(&self) -> bool {
        self.req.is_none() && matches!(self.resp, Resp::Done)
    }

    /// The exchange whose `Request` event has not gone out yet, for `Exchanges::emit`.
    pub fn waiting(&self) -> Option<u32> {
        self.req.as_ref().map(|_| self.xref.depth)
    }
}

/// Decoded header fields as text (a value that is not UTF-8 keeps its bytes as `U+FFFD`
/// replacements: the JSON-RPC layer never reads header values as binary).
pub(super) fn field_text(name: &[u8], value: &[u8]) -> (String, String) {
    (
        String::from_utf8_lossy(name).into_owned(),
        String::from_utf8_lossy(value).into_owned(),
    )
}

/// A request head from a decoded header list (RFC 9113 §8.3.1): `:method`, `:path` as the
/// target (`:authority` for CONNECT), `:authority` as `Host` when there is none.
pub(super) fn request_head(
    fields: Vec<(String, String)>,
    anomalies: &mut Vec<String>,
) -> RequestHead {
    let (mut plain, pseudo) = split_pseudo(fields);
    let method = pseudo.method.unwrap_or_default();
    let target = match pseudo.path {
        Some(p) => p,
        None if method.eq_ignore_ascii_case("CONNECT") => pseudo
            .authority
            .as_deref()
            .map(|a| a.rsplit_once('@').map_or(a, |(_, host)| host).to_string())
            .unwrap_or_default(),
        None => String::new(),
    };
    if method.is_empty() || target.is_empty() {
        push_anomaly(anomalies, "h2.missing_pseudo_header");
    }
    // RFC 9113 §8.3.1: `:authority` carries no userinfo; a credential there is never kept.
    let authority = pseudo.authority.map(|a| match a.rsplit_once('@') {
        Some((_, host)) => {
            push_anomaly(anomalies, "h2.userinfo_in_authority");
            host.to_string()
        }
        None => a,
    });
    ensure_host(&mut plain, authority);
    RequestHead {
        method: ArcStr::from(method),
        uri: ArcStr::from(target),
        version: "2".into(),
        headers: Headers::from(plain),
    }
}

/// A response head from a decoded header list, or `None` without a valid `:status`.
pub(super) fn response_head(fields: Vec<(String, String)>) -> Option<ResponseHead> {
    let (plain, pseudo) = split_pseudo(fields);
    let status: u16 = pseudo.status?.trim().parse().ok()?;
    if !(100..1000).contains(&status) {
        return None;
    }
    Some(ResponseHead {
        status,
        reason: ArcStr::new(),
        version: "2".into(),
        headers: Headers::from(plain),
    })
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
    fn request_pseudo_headers_become_an_http1_shaped_head() {
        let mut an = Vec::new();
        let head = request_head(
            fields(&[
                (":method", "POST"),
                (":scheme", "https"),
                (":authority", "mcp.example:8443"),
                (":path", "/mcp?x=1"),
                ("content-type", "application/json"),
            ]),
            &mut an,
        );
        assert!(an.is_empty());
        assert_eq!(&*head.method, "POST");
        assert_eq!(&*head.uri, "/mcp?x=1");
        assert_eq!(head.version, "2");
        assert_eq!(head.headers.get("host"), Some("mcp.example:8443"));
        assert_eq!(head.headers.get("content-type"), Some("application/json"));
        let mut an = Vec::new();
        let head = request_head(
            fields(&[(":method", "CONNECT"), (":authority", "h:1")]),
            &mut an,
        );
        assert_eq!(&*head.uri, "h:1");
        assert!(an.is_empty());
        let mut an = Vec::new();
        let head = request_head(
            fields(&[
                (":method", "GET"),
                (":authority", "user:secret@h.test"),
                (":path", "/"),
            ]),
            &mut an,
        );
        assert_eq!(head.headers.get("host"), Some("h.test"));
        assert_eq!(an, vec!["h2.userinfo_in_authority".to_string()]);
        let mut an = Vec::new();
        request_head(fields(&[(":path", "/")]), &mut an);
        assert_eq!(an, vec!["h2.missing_pseudo_header".to_string()]);
    }

    #[test]
    fn a_response_needs_a_three_digit_status() {
        let head = response_head(fields(&[(":status", "503"), ("retry-after", "2")]));
        assert_eq!(head.as_ref().map(|h| h.status), Some(503));
        assert_eq!(
            head.as_ref().and_then(|h| h.headers.get("retry-after")),
            Some("2")
        );
        assert!(response_head(fields(&[(":status", "abc")])).is_none());
        assert!(response_head(fields(&[(":status", "20")])).is_none());
        assert!(response_head(fields(&[("x", "1")])).is_none());
    }
}
