//! Message heads (RFC 9112 §2-5): finding where a head ends, parsing it, and
//! probing whether bytes can be the start of a message.
//!
//! Heads are parsed with `httparse` first; when it rejects a head, a lenient
//! parser in the spirit of Zeek's takes over (obsolete line folding, LF-only
//! line ends, a request line without version as HTTP/0.9, `HTTP/1.` as a
//! version) and records what it tolerated. Never panics on any input.

use super::HttpError;
use crate::http::event::push_anomaly;
use crate::http::event::{Headers, RequestHead, ResponseHead};
use arcstr::{ArcStr, literal};
use std::borrow::Cow;
use std::cell::Cell;
use std::mem::MaybeUninit;

/// Longest head (start line, header fields, blank line) accepted; past it the
/// stream is resynchronised (hyper's default buffer is about 400 KiB; real
/// heads are a few KiB).
pub const HEAD_LIMIT: usize = 64 * 1024;

/// Longest start line the probe waits for before deciding the bytes are not HTTP.
pub const START_LINE_LIMIT: usize = 8 * 1024;

/// Longest method token accepted (the longest registered method is 17 bytes).
const METHOD_LIMIT: usize = 32;

/// Most header fields httparse is given room for; more falls back to the lenient parser.
const HTTPARSE_HEADERS: usize = 128;

/// Where a head ends: scans `buf` for the first empty line, resuming at
/// `*scanned` (bytes before it were already searched). Returns the head length
/// including the empty line. LF-only line ends are accepted (RFC 9112 §2.2
/// allows a recipient to treat a bare LF as a line terminator).
pub fn find_head_end(buf: &[u8], scanned: &mut usize) -> Option<usize> {
    let mut i = (*scanned).min(buf.len());
    while let Some(off) = buf.get(i..).and_then(memchr_lf) {
        let lf = i.saturating_add(off);
        // The line ended by this LF is empty when it is preceded by LF or CR LF.
        let prev = lf.checked_sub(1).and_then(|p| buf.get(p)).copied();
        let prev2 = lf.checked_sub(2).and_then(|p| buf.get(p)).copied();
        if prev == Some(b'\n') || (prev == Some(b'\r') && prev2 == Some(b'\n')) {
            *scanned = lf.saturating_add(1);
            return Some(lf.saturating_add(1));
        }
        i = lf.saturating_add(1);
    }
    // Keep the last two bytes for the next scan: they may start the empty line.
    *scanned = buf.len().saturating_sub(2);
    None
}

fn memchr_lf(s: &[u8]) -> Option<usize> {
    memchr::memchr(b'\n', s)
}

/// Number of leading CR/LF bytes (RFC 9112 §2.2: a server SHOULD ignore at
/// least one empty line received before the request-line).
pub fn leading_empty_lines(buf: &[u8]) -> usize {
    buf.iter()
        .take_while(|&&b| b == b'\r' || b == b'\n')
        .count()
}

/// `tchar` of RFC 9110 §5.6.2.
fn is_tchar(b: u8) -> bool {
    // One range test per class (a probe looks at every byte of a method).
    matches!(
        b,
        b'0'..=b'9'
            | b'a'..=b'z'
            | b'A'..=b'Z'
            | b'!'
            | b'#'
            | b'$'
            | b'%'
            | b'&'
            | b'\''
            | b'*'
            | b'+'
            | b'-'
            | b'.'
            | b'^'
            | b'_'
            | b'`'
            | b'|'
            | b'~'
    )
}

/// What a buffer's first bytes look like.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Probe {
    Request,
    Response,
    Neither,
    /// A prefix of a possible start line; more bytes are needed.
    NeedMore,
}

/// How strict the probe is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Strictness {
    /// At the start of a stream or between messages: HTTP/0.9 request lines
    /// (`GET /path`) and odd versions (`HTTP/1.`) count, as Zeek accepts them.
    Lenient,
    /// While resynchronising after garbage or a gap: only `METHOD SP target SP
    /// HTTP/1.x` and `HTTP/1.x SP NNN`, to avoid locking onto body bytes.
    Strict,
}

/// Classifies the start of `buf`. With `at_end`, an unterminated last line is
/// judged as it is (the stream ended).
pub fn probe(buf: &[u8], strictness: Strictness, at_end: bool) -> Probe {
    // Cheap rejection first: resynchronisation probes many positions.
    let name_len = buf.len().min(5);
    let maybe_response = buf.get(..name_len) == b"HTTP/".get(..name_len);
    let token_len = buf
        .iter()
        .take(METHOD_LIMIT + 1)
        .take_while(|&&b| is_tchar(b))
        .count();
    let maybe_request = token_len > 0
        && token_len <= METHOD_LIMIT
        && matches!(buf.get(token_len), None | Some(b' '));
    if !maybe_response && !maybe_request {
        return Probe::Neither;
    }
    let window = buf
        .get(..buf.len().min(START_LINE_LIMIT))
        .unwrap_or_default();
    let line_end = memchr::memchr(b'\n', window);
    if line_end.is_none() && buf.len() >= START_LINE_LIMIT {
        return Probe::Neither;
    }
    let line = match line_end {
        Some(n) => buf.get(..n).unwrap_or_default(),
        None => buf,
    };
    let line = line.strip_suffix(b"\r").unwrap_or(line);
    let complete = line_end.is_some() || at_end;
    if let Some(p) = probe_response(line, complete, strictness) {
        return p;
    }
    if let Some(p) = probe_request(line, complete, strictness) {
        return p;
    }
    Probe::Neither
}

/// `Some(Response)`, `Some(NeedMore)` for a prefix of `HTTP/x.y NNN`, `None` otherwise.
fn probe_response(line: &[u8], complete: bool, strictness: Strictness) -> Option<Probe> {
    const NAME: &[u8] = b"HTTP/";
    let n = line.len().min(NAME.len());
    if line.get(..n) != NAME.get(..n) {
        return None;
    }
    if line.len() < NAME.len() {
        return (!complete).then_some(Probe::NeedMore);
    }
    match split_status_line(line) {
        Some((version, _, _)) => {
            if strictness == Strictness::Strict && !(version == b"1.0" || version == b"1.1") {
                return None;
            }
            Some(Probe::Response)
        }
        // Still short of `HTTP/1.1 200`: wait unless the line is complete or too long.
        None if !complete && line.len() < 16 => Some(Probe::NeedMore),
        None => None,
    }
}

fn probe_request(line: &[u8], complete: bool, strictness: Strictness) -> Option<Probe> {
    let method_len = line.iter().take_while(|&&b| is_tchar(b)).count();
    if method_len == 0 || method_len > METHOD_LIMIT {
        return None;
    }
    match line.get(method_len) {
        None if !complete => return Some(Probe::NeedMore),
        Some(b' ') => {}
        _ => return None,
    }
    if !complete {
        return (line.len() < START_LINE_LIMIT).then_some(Probe::NeedMore);
    }
    let (method, uri, version) = split_request_line(line)?;
    let ok = match strictness {
        Strictness::Strict => version == b"1.0" || version == b"1.1",
        // An HTTP/0.9 line must look like one (`GET /x`), or any text with a
        // space in it (`EHLO host`, `USER x`) would pass as a request.
        Strictness::Lenient => {
            version != b"0.9"
                || (method
                    .iter()
                    .all(|&b| b.is_ascii_uppercase() || b == b'_' || b == b'-')
                    && (uri.starts_with(b"/") || uri.starts_with(b"*")))
        }
    };
    ok.then_some(Probe::Request)
}

/// Lenient request line (RFC 9112 §3): `method SP target SP HTTP-version`.
/// Accepted beyond the grammar, as Zeek does: no version (HTTP/0.9, version
/// `0.9`), an empty target (`OPTIONS HTTP/1.1`), extra spaces, and any
/// version text after `HTTP/`.
pub fn parse_request_line(line: &[u8]) -> Option<(String, String, String)> {
    let (method, uri, version) = split_request_line(line)?;
    Some((text(method), text(uri), text(version)))
}

/// [`parse_request_line`] without copying: (method, target, version) as they are in `line`.
fn split_request_line(line: &[u8]) -> Option<(&[u8], &[u8], &[u8])> {
    let method_len = line.iter().take_while(|&&b| is_tchar(b)).count();
    if method_len == 0 || method_len > METHOD_LIMIT || line.get(method_len) != Some(&b' ') {
        return None;
    }
    let method = line.get(..method_len)?;
    let rest = trim_spaces(line.get(method_len..)?);
    if rest.is_empty() {
        return None;
    }
    let (uri, version) = match rest.iter().rposition(|&b| b == b' ') {
        Some(sp) if rest.get(sp.saturating_add(1)..)?.starts_with(b"HTTP/") => {
            let version = rest.get(sp.saturating_add(6)..)?;
            (trim_spaces(rest.get(..sp)?), version)
        }
        None if rest.starts_with(b"HTTP/") => (&b""[..], rest.get(5..)?),
        _ => (rest, &b"0.9"[..]),
    };
    Some((method, uri, version))
}

fn trim_spaces(s: &[u8]) -> &[u8] {
    let start = s.iter().position(|&b| b != b' ').unwrap_or(s.len());
    let end = s
        .iter()
        .rposition(|&b| b != b' ')
        .map_or(start, |e| e.saturating_add(1));
    s.get(start..end).unwrap_or_default()
}

/// Lenient status line (RFC 9112 §4): `HTTP/x.y SP 3DIGIT [SP reason]`.
pub fn parse_status_line(line: &[u8]) -> Option<(String, u16, String)> {
    let (version, status, reason) = split_status_line(line)?;
    Some((text(version), status, text(reason)))
}

/// [`parse_status_line`] without copies: version and reason are slices of `line`.
fn split_status_line(line: &[u8]) -> Option<(&[u8], u16, &[u8])> {
    let rest = line.strip_prefix(b"HTTP/")?;
    let sp = rest.iter().position(|&b| b == b' ')?;
    let version = rest.get(..sp)?;
    if version.is_empty() || version.len() > 8 {
        return None;
    }
    let after = trim_spaces(rest.get(sp..)?);
    let digits = after.get(..3)?;
    if !digits.iter().all(u8::is_ascii_digit) {
        return None;
    }
    match after.get(3) {
        None | Some(b' ') | Some(b'\t') => {}
        _ => return None,
    }
    let status = digits.iter().fold(0u16, |acc, d| {
        acc.saturating_mul(10).saturating_add(u16::from(d - b'0'))
    });
    let reason = trim_spaces(after.get(3..)?);
    Some((version, status, reason))
}

/// Splits a head into its lines (without CR/LF), dropping the final empty line.
fn head_lines(head: &[u8]) -> Vec<&[u8]> {
    let mut lines: Vec<&[u8]> = head
        .split(|&b| b == b'\n')
        .map(|l| l.strip_suffix(b"\r").unwrap_or(l))
        .collect();
    while lines.last().is_some_and(|l| l.is_empty()) {
        lines.pop();
    }
    lines
}

/// Header fields after the start line (RFC 9112 §5). Lenient: an obs-fold
/// continuation line (§5.2) is joined to the previous value with one space
/// (`http.obs_fold`); a line without a colon is dropped (`http.bad_header_line`).
fn parse_fields(lines: &[&[u8]], anomalies: &mut Vec<String>) -> Headers {
    let mut fields: Vec<(String, String)> = Vec::new();
    for line in lines {
        if line.first().is_some_and(|&b| b == b' ' || b == b'\t') {
            match fields.last_mut() {
                Some((_, value)) => {
                    push_anomaly(anomalies, "http.obs_fold");
                    let cont = String::from_utf8_lossy(trim_ws(line));
                    if !cont.is_empty() {
                        if !value.is_empty() {
                            value.push(' ');
                        }
                        value.push_str(&cont);
                    }
                }
                None => push_anomaly(anomalies, "http.bad_header_line"),
            }
            continue;
        }
        let Some(colon) = line.iter().position(|&b| b == b':') else {
            push_anomaly(anomalies, "http.bad_header_line");
            continue;
        };
        let name = line.get(..colon).unwrap_or_default();
        let value = line.get(colon.saturating_add(1)..).unwrap_or_default();
        // RFC 9112 §5.1: no whitespace between name and colon; tolerated, recorded.
        if name.last().is_some_and(|&b| b == b' ' || b == b'\t') {
            push_anomaly(anomalies, "http.bad_header_line");
        }
        fields.push((text(trim_ws(name)), text(trim_ws(value))));
    }
    Headers::from(fields)
}

fn trim_ws(s: &[u8]) -> &[u8] {
    let ws = |b: &u8| *b == b' ' || *b == b'\t';
    let start = s.iter().position(|b| !ws(b)).unwrap_or(s.len());
    let end = s
        .iter()
        .rposition(|b| !ws(b))
        .map_or(start, |e| e.saturating_add(1));
    s.get(start..end).unwrap_or_default()
}

/// The fields httparse found in `head` (their values are slices of it).
/// Header slots for httparse, left uninitialised: zeroing 128 slots (4 KB) cost more than
/// parsing a typical head.
fn uninit_headers<'b>() -> [MaybeUninit<httparse::Header<'b>>; HTTPARSE_HEADERS] {
    [const { MaybeUninit::uninit() }; HTTPARSE_HEADERS]
}

fn httparse_headers(head: &[u8], headers: &[httparse::Header<'_>]) -> Headers {
    let text_bytes = headers
        .iter()
        .map(|h| h.name.len().saturating_add(h.value.len()))
        .fold(0usize, usize::saturating_add);
    let mut out = Headers::with_capacity(headers.len(), text_bytes);
    // A head that is valid UTF-8 (nearly all) is validated once, with SIMD, and its values
    // are then sliced from it by offset instead of validated one by one.
    let head_text = simdutf8::basic::from_utf8(head).ok();
    for h in headers {
        let value = trim_ws(h.value);
        let offset = (value.as_ptr() as usize).wrapping_sub(head.as_ptr() as usize);
        let in_head = head_text
            .and_then(|t| t.get(offset..offset.saturating_add(value.len())))
            .filter(|v| v.as_ptr() == value.as_ptr());
        match in_head {
            Some(v) => out.push(h.name, v),
            None => match std::str::from_utf8(value) {
                Ok(v) => out.push(h.name, v),
                Err(_) => out.push(h.name, &String::from_utf8_lossy(value)),
            },
        }
    }
    out
}

/// Parses a request head (start line through the empty line; leading empty
/// lines already removed). Anomalies found are appended to `anomalies`.
pub fn parse_request_head(
    head: &[u8],
    anomalies: &mut Vec<String>,
) -> Result<RequestHead, HttpError> {
    let mut storage = uninit_headers();
    let mut req = httparse::Request::new(&mut []);
    if let Ok(httparse::Status::Complete(_)) = req.parse_with_uninit_headers(head, &mut storage)
        && let (Some(method), Some(uri), Some(minor)) = (req.method, req.path, req.version)
    {
        {
            return Ok(RequestHead {
                method: method_text(method),
                uri: uri_text(uri),
                version: http_1_version(minor),
                headers: httparse_headers(head, req.headers),
            });
        }
    }
    let lines = head_lines(head);
    let first = lines.first().copied().unwrap_or_default();
    let (method, uri, version) =
        parse_request_line(first).ok_or_else(|| HttpError::BadRequestLine {
            line: crate::http::redact::redact_target(&String::from_utf8_lossy(
                first.get(..first.len().min(80)).unwrap_or_default(),
            ))
            .into_owned(),
        })?;
    if !(version == "1.0" || version == "1.1") {
        push_anomaly(anomalies, "http.unusual_version");
    }
    let headers = parse_fields(lines.get(1..).unwrap_or_default(), anomalies);
    Ok(RequestHead {
        method: method_text(&method),
        uri: uri_text(&uri),
        version: version.into(),
        headers,
    })
}

/// Parses a response head (status line through the empty line).
pub fn parse_response_head(
    head: &[u8],
    anomalies: &mut Vec<String>,
) -> Result<ResponseHead, HttpError> {
    let mut storage = uninit_headers();
    let mut resp = httparse::Response::new(&mut []);
    let config = httparse::ParserConfig::default();
    if let Ok(httparse::Status::Complete(_)) =
        config.parse_response_with_uninit_headers(&mut resp, head, &mut storage)
        && let (Some(code), Some(minor)) = (resp.code, resp.version)
    {
        {
            return Ok(ResponseHead {
                status: code,
                reason: reason_text(resp.reason.unwrap_or_default()),
                version: http_1_version(minor),
                headers: httparse_headers(head, resp.headers),
            });
        }
    }
    let lines = head_lines(head);
    let first = lines.first().copied().unwrap_or_default();
    let (version, status, reason) =
        parse_status_line(first).ok_or_else(|| HttpError::BadStatusLine {
            line: String::from_utf8_lossy(first.get(..first.len().min(80)).unwrap_or_default())
                .into_owned(),
        })?;
    if !(version == "1.0" || version == "1.1") {
        push_anomaly(anomalies, "http.unusual_version");
    }
    let headers = parse_fields(lines.get(1..).unwrap_or_default(), anomalies);
    Ok(ResponseHead {
        status,
        reason: reason_text(&reason),
        version: version.into(),
        headers,
    })
}

/// Methods and reason phrases common enough to be static: a head naming one allocates none.
const COMMON_METHODS: [ArcStr; 7] = [
    literal!("POST"),
    literal!("GET"),
    literal!("DELETE"),
    literal!("OPTIONS"),
    literal!("HEAD"),
    literal!("PUT"),
    literal!("PATCH"),
];
const COMMON_REASONS: [ArcStr; 11] = [
    literal!(""),
    literal!("OK"),
    literal!("Accepted"),
    literal!("No Content"),
    literal!("Bad Request"),
    literal!("Unauthorized"),
    literal!("Not Found"),
    literal!("Method Not Allowed"),
    literal!("Internal Server Error"),
    literal!("Bad Gateway"),
    literal!("Service Unavailable"),
];

/// `text` as a shared string: the static copy when it is one of `common`.
fn shared_text(text: &str, common: &[ArcStr]) -> ArcStr {
    common
        .iter()
        .find(|c| c.as_str() == text)
        .cloned()
        .unwrap_or_else(|| ArcStr::from(text))
}

/// A request method, shared (no allocation) for the common ones.
pub fn method_text(method: &str) -> ArcStr {
    shared_text(method, &COMMON_METHODS)
}

/// A status reason phrase, shared (no allocation) for the common ones.
pub fn reason_text(reason: &str) -> ArcStr {
    shared_text(reason, &COMMON_REASONS)
}

thread_local! {
    /// The last request target parsed on this thread: a client sends the same one again and
    /// again, and every request then shares one copy.
    static LAST_URI: Cell<ArcStr> = const { Cell::new(ArcStr::new()) };
}

/// A request target, shared with the previous request's when equal (a copy of its own while
/// the thread is being torn down).
pub fn uri_text(uri: &str) -> ArcStr {
    LAST_URI
        .try_with(|last| {
            let prev = last.take();
            let text = if prev.as_str() == uri {
                prev
            } else {
                ArcStr::from(uri)
            };
            last.set(text.clone());
            text
        })
        .unwrap_or_else(|_| ArcStr::from(uri))
}

/// "1.0" or "1.1" from httparse's minor version, without allocating (two per exchange).
fn http_1_version(minor: u8) -> Cow<'static, str> {
    match minor {
        0 => Cow::Borrowed("1.0"),
        1 => Cow::Borrowed("1.1"),
        m => Cow::Owned(format!("1.{m}")),
    }
}

/// Finds the next plausible message start in `buf` (strict probe): at a line
/// start, or (mid-line) at `HTTP/` for responses or an upper-case token
/// after a non-token byte for requests. `want` limits the kind. Returns its
/// offset and whether it is certain (`Request`/`Response`) or a prefix
/// (`NeedMore`).
pub fn find_message_start(
    buf: &[u8],
    want: Option<Probe>,
    line_start: bool,
    at_end: bool,
) -> Option<(usize, Probe)> {
    let mut i = 0usize;
    while i < buf.len() {
        let b = buf.get(i).copied().unwrap_or_default();
        let prev = i.checked_sub(1).and_then(|p| buf.get(p)).copied();
        // The buffer start is a candidate too: it follows a gap, a body, or
        // bytes already rejected (`line_start` only says whether it is known
        // to begin a line).
        let at_line = match prev {
            None => true,
            Some(p) => p == b'\n',
        };
        let _ = line_start;
        let resp_candidate = want != Some(Probe::Request) && b == b'H';
        let req_candidate = want != Some(Probe::Response)
            && b.is_ascii_uppercase()
            && (at_line || prev.is_some_and(|p| !p.is_ascii_alphanumeric()));
        if resp_candidate || req_candidate {
            let rest = buf.get(i..).unwrap_or_default();
            match probe(rest, Strictness::Strict, at_end) {
                Probe::NeedMore => return Some((i, Probe::NeedMore)),
                p @ (Probe::Request | Probe::Response) if want.is_none_or(|w| w == p) => {
                    return Some((i, p));
                }
                _ => {}
            }
        }
        i = i.saturating_add(1);
    }
    None
}

/// Header text as a `String`: valid UTF-8 (nearly always) through the fast validator, other
/// bytes replaced by U+FFFD.
fn text(bytes: &[u8]) -> String {
    match std::str::from_utf8(bytes) {
        Ok(s) => s.to_owned(),
        Err(_) => String::from_utf8_lossy(bytes).into_owned(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn head_texts_are_shared_and_keep_their_value() {
        assert!(ArcStr::is_static(&method_text("POST")));
        assert!(ArcStr::is_static(&reason_text("Service Unavailable")));
        let odd = method_text("PROPFIND");
        assert_eq!(odd, "PROPFIND");
        assert!(!ArcStr::is_static(&odd));
        assert_eq!(reason_text("Teapot"), "Teapot");
        let a = uri_text("/mcp?x=1");
        let b = uri_text("/mcp?x=1");
        assert!(ArcStr::ptr_eq(&a, &b), "a repeated target shares one copy");
        let c = uri_text("/other");
        assert_eq!(c, "/other");
        assert_eq!(uri_text("/mcp?x=1"), "/mcp?x=1");
    }

    #[test]
    fn get_all_finds_every_value_case_insensitively() {
        let h: Headers = [("Content-Length", "1"), ("x", "y"), ("content-length", "2")]
            .into_iter()
            .collect();
        assert_eq!(h.get_all("CONTENT-LENGTH").collect::<Vec<_>>(), ["1", "2"]);
        assert_eq!(h.get_all("content-lengthx").count(), 0);
        assert_eq!(h.get_all("content-lengt").count(), 0);
        assert_eq!(h.get("X"), Some("y"));
    }

    #[test]
    fn tchar_is_rfc_9110_token_char() {
        for b in 0..=u8::MAX {
            let rfc = b.is_ascii_alphanumeric() || b"!#$%&'*+-.^_`|~".contains(&b);
            assert_eq!(is_tchar(b), rfc, "{b:#04x}");
        }
    }

    /// Feeds `input` in pieces cut at `cuts` and returns where the head ends.
    fn head_end_split(input: &[u8], cuts: &[usize]) -> Option<usize> {
        let mut buf = Vec::new();
        let mut scanned = 0;
        let mut prev = 0;
        for &c in cuts.iter().chain(std::iter::once(&input.len())) {
            buf.extend_from_slice(&input[prev..c]);
            prev = c;
            if let Some(end) = find_head_end(&buf, &mut scanned) {
                return Some(end);
            }
        }
        None
    }

    #[test]
    fn head_end_split_at_every_byte() {
        let inputs: [&[u8]; 3] = [
            b"GET / HTTP/1.1\r\nHost: a\r\n\r\nBODY",
            b"GET / HTTP/1.1\nHost: a\n\nBODY",
            b"HTTP/1.1 200 OK\r\nX: y\r\n\r\n",
        ];
        for input in inputs {
            let whole = head_end_split(input, &[]);
            assert!(whole.is_some());
            for cut in 0..=input.len() {
                assert_eq!(head_end_split(input, &[cut]), whole, "cut {cut}");
            }
            let every: Vec<usize> = (1..input.len()).collect();
            assert_eq!(head_end_split(input, &every), whole);
        }
    }

    #[test]
    fn head_end_absent() {
        let mut s = 0;
        assert_eq!(
            find_head_end(b"GET / HTTP/1.1\r\nHost: a\r\n", &mut s),
            None
        );
    }

    #[test]
    fn request_lines_lenient() {
        let p = |l: &[u8]| parse_request_line(l);
        assert_eq!(
            p(b"GET /a HTTP/1.1"),
            Some(("GET".into(), "/a".into(), "1.1".into()))
        );
        assert_eq!(
            p(b"OPTIONS HTTP/1.1"),
            Some(("OPTIONS".into(), "".into(), "1.1".into()))
        );
        assert_eq!(
            p(b"GET /HTTP/1.1"),
            Some(("GET".into(), "/HTTP/1.1".into(), "0.9".into()))
        );
        assert_eq!(
            p(b"CONNECT / HTTP/1."),
            Some(("CONNECT".into(), "/".into(), "1.".into()))
        );
        assert_eq!(p(b"OPTIONSHTTP/1.1"), None);
        assert_eq!(p(b"\x01\x02 / HTTP/1.1"), None);
    }

    #[test]
    fn probes() {
        use Strictness::*;
        assert_eq!(probe(b"GET / HTTP/1.1\r\n", Lenient, false), Probe::Request);
        assert_eq!(probe(b"GE", Lenient, false), Probe::NeedMore);
        assert_eq!(probe(b"HTT", Lenient, false), Probe::NeedMore);
        assert_eq!(
            probe(b"HTTP/1.1 200 OK\r\n", Strict, false),
            Probe::Response
        );
        assert_eq!(probe(b"GET /zeek.html\n", Lenient, false), Probe::Request);
        assert_eq!(probe(b"GET /zeek.html\n", Strict, false), Probe::Neither);
        assert_eq!(
            probe(b"EHLO mail.example\r\n", Lenient, false),
            Probe::Neither
        );
        assert_eq!(probe(b"\x16\x03\x01", Lenient, false), Probe::Neither);
        assert_eq!(probe(b"SSH-2.0-x\r\n", Lenient, false), Probe::Neither);
        assert_eq!(probe(b"GET / HTTP/1.1", Lenient, true), Probe::Request);
    }

    #[test]
    fn obs_fold_joined() {
        let mut an = Vec::new();
        let h = parse_request_head(
            b"GET / HTTP/1.1\r\nX-A: one\r\n two\r\nHost: h\r\n\r\n",
            &mut an,
        )
        .unwrap();
        assert_eq!(h.headers.get("x-a"), Some("one two"));
        assert_eq!(h.headers.get("HOST"), Some("h"));
        assert_eq!(an, vec!["http.obs_fold".to_string()]);
    }

    #[test]
    fn response_head_strict_and_lenient() {
        let mut an = Vec::new();
        let h = parse_response_head(b"HTTP/1.1 204 No Content\r\n\r\n", &mut an).unwrap();
        assert_eq!(
            (h.status, h.version.as_ref(), h.reason.as_str()),
            (204, "1.1", "No Content")
        );
        let h = parse_response_head(b"HTTP/1.0 200\nA: b\n\n", &mut an).unwrap();
        assert_eq!((h.status, h.headers.get("a")), (200, Some("b")));
        assert!(parse_response_head(b"HTTP/1.1 2x0 OK\r\n\r\n", &mut an).is_err());
    }

    #[test]
    fn message_start_after_garbage() {
        let buf = b"xx}{garbage\r\nHTTP/1.1 200 OK\r\n";
        assert_eq!(
            find_message_start(buf, Some(Probe::Response), false, false),
            Some((13, Probe::Response))
        );
        let buf = b"\x00\x01POST /mcp HTTP/1.1\r\n";
        assert_eq!(
            find_message_start(buf, Some(Probe::Request), false, false),
            Some((2, Probe::Request))
        );
        assert_eq!(
            find_message_start(b"zzzz", Some(Probe::Request), false, false),
            None
        );
        assert_eq!(
            find_message_start(b"zz HTT", Some(Probe::Response), false, false),
            Some((3, Probe::NeedMore))
        );
    }
}
