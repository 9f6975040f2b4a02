//! The parts of a request URL the exchange model needs: authority, port and
//! origin-form target (RFC 9110 §4.2, RFC 9112 §3.2.1). Hand-written on
//! purpose: only absolute `scheme://authority/path?query#fragment` URLs occur
//! in HAR `request.url`, and anything else is reported, never a panic.

/// A request URL split for the HTTP model.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct UrlParts {
    /// Lower-cased scheme (`http`, `https`, `ws`, ...).
    pub scheme: String,
    /// Host without brackets (IPv6 literals bare).
    pub host: String,
    /// Explicit port, or the scheme's default.
    pub port: u16,
    /// `host[:port]` as written (userinfo removed): the value of a `Host` header.
    pub authority: String,
    /// Path and query (`/` when the URL has no path); never the fragment.
    pub target: String,
}

/// Default port of a scheme (RFC 9110 §4.2.1-2; RFC 6455 §3 for ws/wss).
fn default_port(scheme: &str) -> u16 {
    match scheme {
        "https" | "wss" => 443,
        _ => 80,
    }
}

/// Split an absolute URL; `None` when it has no `scheme://` or a bad port.
pub(super) fn parse_url(url: &str) -> Option<UrlParts> {
    let (scheme, rest) = url.trim().split_once("://")?;
    if scheme.is_empty()
        || !scheme
            .bytes()
            .all(|c| c.is_ascii_alphanumeric() || b"+-.".contains(&c))
    {
        return None;
    }
    let scheme = scheme.to_ascii_lowercase();
    let auth_end = rest.find(['/', '?', '#']).unwrap_or(rest.len());
    let (authority_raw, tail) = rest.split_at(auth_end);
    // Userinfo never reaches the Host header (RFC 9110 §4.2.4).
    let authority = authority_raw
        .rsplit_once('@')
        .map_or(authority_raw, |(_, a)| a);
    let (host, port_str) = if let Some(v6) = authority.strip_prefix('[') {
        let (h, after) = v6.split_once(']')?;
        (h, after.strip_prefix(':'))
    } else {
        match authority.rsplit_once(':') {
            Some((h, p)) => (h, Some(p)),
            None => (authority, None),
        }
    };
    let port = match port_str {
        // "http://host:/" is allowed and means the default port (RFC 3986 §3.2.3).
        None | Some("") => default_port(&scheme),
        Some(p) => p.parse::<u16>().ok()?,
    };
    let without_fragment = tail.split_once('#').map_or(tail, |(t, _)| t);
    let target = if without_fragment.starts_with('/') {
        without_fragment.to_string()
    } else {
        format!("/{without_fragment}")
    };
    Some(UrlParts {
        scheme,
        host: host.to_string(),
        port,
        authority: authority.to_string(),
        target,
    })
}

/// `ip:port`, IPv6 as `[ip]:port` (the `ConnInfo` address format).
pub(super) fn socket_addr(host: &str, port: u16) -> String {
    let bare = host.trim().trim_start_matches('[').trim_end_matches(']');
    if bare.contains(':') {
        format!("[{bare}]:{port}")
    } else {
        format!("{bare}:{port}")
    }
}

/// The server address of an entry: `serverIPAddress` with the URL's port.
/// Lenient: a value that already carries a port (`1.2.3.4:8080`,
/// `[::1]:8080`) is kept as written, since it names the socket exactly.
pub(super) fn server_addr(ip_field: &str, url_port: u16) -> String {
    match ip_field.trim().parse::<std::net::SocketAddr>() {
        Ok(sa) => sa.to_string(),
        Err(_) => socket_addr(ip_field, url_port),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn https_default_port_and_query() {
        let u = parse_url("https://mitmproxy.org/github-btn.html?user=mhils#x").unwrap();
        assert_eq!(u.scheme, "https");
        assert_eq!(u.host, "mitmproxy.org");
        assert_eq!(u.port, 443);
        assert_eq!(u.authority, "mitmproxy.org");
        assert_eq!(u.target, "/github-btn.html?user=mhils");
    }

    #[test]
    fn explicit_port_userinfo_empty_path() {
        let u = parse_url("HTTP://user:pw@127.0.0.1:5000?a=1").unwrap();
        assert_eq!(
            (u.scheme.as_str(), u.host.as_str(), u.port),
            ("http", "127.0.0.1", 5000)
        );
        assert_eq!(u.authority, "127.0.0.1:5000");
        assert_eq!(u.target, "/?a=1");
    }

    #[test]
    fn ipv6_literal() {
        let u = parse_url("http://[::1]:8080/mcp").unwrap();
        assert_eq!(
            (u.host.as_str(), u.port, u.target.as_str()),
            ("::1", 8080, "/mcp")
        );
        assert_eq!(socket_addr(&u.host, u.port), "[::1]:8080");
        assert_eq!(socket_addr("[2001:db8::1]", 443), "[2001:db8::1]:443");
        assert_eq!(socket_addr("10.0.0.1", 80), "10.0.0.1:80");
        assert_eq!(server_addr("10.0.0.1", 80), "10.0.0.1:80");
        assert_eq!(server_addr(" 10.0.0.1:8080", 80), "10.0.0.1:8080");
        assert_eq!(server_addr("[::1]:8080", 80), "[::1]:8080");
        assert_eq!(server_addr("::1", 80), "[::1]:80");
    }

    #[test]
    fn rejects_relative_and_bad_port() {
        assert_eq!(parse_url("/mcp"), None);
        assert_eq!(parse_url("http://host:99999/"), None);
        assert_eq!(parse_url("http://[::1/"), None);
        assert_eq!(parse_url("://host/"), None);
    }
}
