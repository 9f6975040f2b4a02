//! What never appears in an output (report-schema.md section 1b): credential values in request
//! targets are replaced by a short hash, so two requests can still be told apart but the value
//! cannot be read back.
//!
//! Every place that shows a request target (the exchanges table's `path`, the `http` log's
//! `uri`, error messages quoting a request line) passes it through [`redact_target`].

use sha2::{Digest, Sha256};
use std::borrow::Cow;

/// Query parameter names whose value is a credential, compared case-insensitively.
pub const SECRET_PARAMS: &[&str] = &[
    "token",
    "access_token",
    "refresh_token",
    "id_token",
    "key",
    "api_key",
    "api-key",
    "apikey",
    "code",
    "password",
    "passwd",
    "pwd",
    "secret",
    "client_secret",
    "signature",
    "sig",
    "auth",
    "authorization",
    "credential",
    "credentials",
];

/// Name endings that also mark a credential (`x_auth_token`, `X-Amz-Signature`, `app_secret`).
pub const SECRET_PARAM_SUFFIXES: &[&str] = &[
    "token",
    "_key",
    "-key",
    "apikey",
    "secret",
    "password",
    "signature",
    "credential",
];

/// Header names whose value is a credential (never shown), compared case-insensitively.
pub const SECRET_HEADERS: &[&str] = &[
    "authorization",
    "proxy-authorization",
    "cookie",
    "set-cookie",
    "x-api-key",
    "api-key",
    "x-auth-token",
    "x-access-token",
];

/// Whether a query parameter named `name` carries a credential.
pub fn is_secret_param(name: &str) -> bool {
    let lower = name.to_ascii_lowercase();
    SECRET_PARAMS.contains(&lower.as_str())
        || SECRET_PARAM_SUFFIXES.iter().any(|s| lower.ends_with(s))
}

/// Whether a header named `name` carries a credential (`X-Api-Key`-style names included).
pub fn is_secret_header(name: &str) -> bool {
    let lower = name.to_ascii_lowercase();
    SECRET_HEADERS.contains(&lower.as_str())
        || lower.ends_with("-api-key")
        || lower.ends_with("-token")
        || lower.ends_with("-secret")
}

/// `sha256:` and the first 12 hex digits of the SHA-256 of `value`.
pub fn short_hash(value: &[u8]) -> String {
    use std::fmt::Write;
    let digest = Sha256::digest(value);
    let mut out = String::with_capacity(19);
    out.push_str("sha256:");
    for b in digest.iter().take(6) {
        // Writing to a String cannot fail.
        let _ = write!(out, "{b:02x}");
    }
    out
}

/// Bytes that end a query (or a userinfo) inside a longer text such as a quoted request line.
fn ends_target(c: char) -> bool {
    c.is_whitespace() || matches!(c, '#' | '"' | '\'' | '<' | '>' | '`')
}

/// `text` with every credential in it replaced by [`short_hash`] of the value: the values of
/// query parameters named by [`is_secret_param`] and the userinfo of an absolute URL
/// (`http://user:pass@host`). `text` may be a bare target (`/mcp?access_token=x`), an absolute
/// URL, or a line that quotes one. Borrowed when nothing needed replacing.
pub fn redact_target(text: &str) -> Cow<'_, str> {
    if !text.contains(['?', '@']) {
        return Cow::Borrowed(text);
    }
    let mut out = String::new();
    let mut copied = 0;
    let mut changed = false;
    let mut i = 0;
    while let Some(pos) = text.get(i..).and_then(|rest| rest.find(['?', '@', '/'])) {
        let at = i + pos;
        let rest = text.get(at..).unwrap_or_default();
        if rest.starts_with("//")
            && let Some((start, end)) = userinfo_span(text, at + 2)
        {
            out.push_str(text.get(copied..start).unwrap_or_default());
            out.push_str(&short_hash(
                text.get(start..end).unwrap_or_default().as_bytes(),
            ));
            copied = end;
            changed = true;
            i = end;
            continue;
        }
        if !rest.starts_with('?') {
            i = at + 1;
            continue;
        }
        // The query: `name=value` pairs separated by `&` or `;` up to the end of the target.
        let qstart = at + 1;
        let qlen = text
            .get(qstart..)
            .unwrap_or_default()
            .find(ends_target)
            .unwrap_or(text.len() - qstart);
        let qend = qstart + qlen;
        let mut p = qstart;
        for pair in text.get(qstart..qend).unwrap_or_default().split(['&', ';']) {
            if let Some((name, value)) = pair.split_once('=')
                && !value.is_empty()
                && is_secret_param(&percent_decoded(name))
            {
                let vstart = p + name.len() + 1;
                out.push_str(text.get(copied..vstart).unwrap_or_default());
                out.push_str(&short_hash(value.as_bytes()));
                copied = vstart + value.len();
                changed = true;
            }
            p += pair.len() + 1;
        }
        i = qend.max(at + 1);
    }
    if !changed {
        return Cow::Borrowed(text);
    }
    out.push_str(text.get(copied..).unwrap_or_default());
    Cow::Owned(out)
}

/// The userinfo (`user:pass`) of an authority starting at `start`, as a byte range, when the
/// authority has one.
fn userinfo_span(text: &str, start: usize) -> Option<(usize, usize)> {
    let authority = text.get(start..)?;
    let len = authority
        .find(|c: char| c == '/' || c == '?' || ends_target(c))
        .unwrap_or(authority.len());
    let at = authority.get(..len)?.rfind('@')?;
    (at > 0).then_some((start, start + at))
}

/// A parameter name with `%XX` escapes decoded (names only; lossy for invalid UTF-8).
fn percent_decoded(name: &str) -> Cow<'_, str> {
    if !name.contains(['%', '+']) {
        return Cow::Borrowed(name);
    }
    let b = name.as_bytes();
    let mut out = Vec::with_capacity(b.len());
    let mut i = 0;
    while let Some(&c) = b.get(i) {
        let hex = |j: usize| b.get(j).and_then(|h| char::from(*h).to_digit(16));
        match (c, hex(i + 1), hex(i + 2)) {
            (b'%', Some(h), Some(l)) => {
                out.push((h * 16 + l) as u8);
                i += 3;
            }
            (b'+', _, _) => {
                out.push(b' ');
                i += 1;
            }
            _ => {
                out.push(c);
                i += 1;
            }
        }
    }
    Cow::Owned(String::from_utf8_lossy(&out).into_owned())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn short_hash_is_sha256_prefix() {
        // sha256("abc") = ba7816bf8f01cfea414140de5dae2223...
        assert_eq!(short_hash(b"abc"), "sha256:ba7816bf8f01");
    }

    #[test]
    fn secret_query_values_are_hashed() {
        let h = short_hash(b"s3cr3t");
        let cases = [
            ("/mcp?access_token=s3cr3t", format!("/mcp?access_token={h}")),
            ("/mcp?Token=s3cr3t&x=1", format!("/mcp?Token={h}&x=1")),
            (
                "/m?a=1&API_KEY=s3cr3t#frag",
                format!("/m?a=1&API_KEY={h}#frag"),
            ),
            ("/m?code=s3cr3t;state=ok", format!("/m?code={h};state=ok")),
            ("/m?x_auth_token=s3cr3t", format!("/m?x_auth_token={h}")),
            (
                "/m?X-Amz-Signature=s3cr3t",
                format!("/m?X-Amz-Signature={h}"),
            ),
            ("/m?client_secret=s3cr3t", format!("/m?client_secret={h}")),
            ("/m?access%5Ftoken=s3cr3t", format!("/m?access%5Ftoken={h}")),
            (
                "http://h:1/mcp?key=s3cr3t&sessionId=abc",
                format!("http://h:1/mcp?key={h}&sessionId=abc"),
            ),
            (
                "POST /mcp?token=s3cr3t HTTP/1.1",
                format!("POST /mcp?token={h} HTTP/1.1"),
            ),
            (
                "GET /a?token=s3cr3t and /b?sig=s3cr3t",
                format!("GET /a?token={h} and /b?sig={h}"),
            ),
        ];
        for (input, want) in cases {
            assert_eq!(redact_target(input), want, "{input}");
        }
    }

    #[test]
    fn userinfo_is_hashed() {
        let h = short_hash(b"bob:hunter2");
        assert_eq!(
            redact_target("https://bob:hunter2@example.com/mcp?x=1"),
            format!("https://{h}@example.com/mcp?x=1")
        );
        // An `@` in a path or query is not userinfo.
        assert_eq!(redact_target("/users/@me?q=a@b"), "/users/@me?q=a@b");
    }

    #[test]
    fn other_targets_are_borrowed_unchanged() {
        for t in [
            "/mcp",
            "/messages/?session_id=0123abcd",
            "/mcp?sessionId=x&monkey=1&keyboard=2",
            "/m?token=",
            "/m?token",
            "?",
            "",
            "/m?é=ü&key",
        ] {
            assert!(
                matches!(redact_target(t), Cow::Borrowed(s) if s == t),
                "{t}"
            );
        }
    }

    #[test]
    fn names_and_headers() {
        for n in ["token", "ACCESS_TOKEN", "apikey", "myApiKey", "sig", "pwd"] {
            assert!(is_secret_param(n), "{n}");
        }
        for n in ["session_id", "sessionId", "monkey", "cursor", "q", "keys"] {
            assert!(!is_secret_param(n), "{n}");
        }
        for n in [
            "Authorization",
            "Cookie",
            "Set-Cookie",
            "X-Api-Key",
            "X-Goog-Api-Key",
        ] {
            assert!(is_secret_header(n), "{n}");
        }
        for n in [
            "Content-Type",
            "Mcp-Session-Id",
            "User-Agent",
            "Last-Event-ID",
        ] {
            assert!(!is_secret_header(n), "{n}");
        }
    }

    #[test]
    fn never_panics_on_odd_text() {
        for t in [
            "?&&=&",
            "//@",
            "a//b@",
            "?%",
            "?%4",
            "?k%zz=1",
            "http://@/?=#",
            "é?é=é",
        ] {
            // Quoted in a line before a secret target, an odd target redacts as it does
            // alone, and the secret is still hashed.
            let line = format!("{t} /x?token=s3cr3t-value");
            let hashed = format!(" /x?token={}", short_hash(b"s3cr3t-value"));
            let redacted = redact_target(&line);
            assert!(!redacted.contains("s3cr3t"), "{line}");
            assert_eq!(
                redacted.strip_suffix(hashed.as_str()),
                Some(redact_target(t).as_ref()),
                "{line}"
            );
        }
    }
}
