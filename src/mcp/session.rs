//! Session keys (report-schema.md section 4) and the per-session facts
//! (protocol version, clientInfo, User-Agent) filled on every row.
//!
//! Keys: `sid:<Mcp-Session-Id>`, `legacy:<sessionId>`, or a derived key for
//! stateless traffic: `derived:<client host>><endpoint>:<hash>:<n>` where the
//! hash covers `Authorization` (never the credential itself), User-Agent and
//! clientInfo, and `n` counts the sessions of that client context (a new one at
//! every `initialize`/`server/discover`, after `session_gap_ms` of silence, or
//! when the declared clientInfo changes).

use crate::hashing::HashMap;
use arcstr::ArcStr;

/// Most client contexts tracked for derived keys; beyond it the least
/// recently used context is forgotten (its next request starts a new session)
/// and `mcp.session_table_full` is counted.
pub const MAX_DERIVED_CONTEXTS: usize = 65_536;

/// FNV-1a 64: a stable hash (same value on every run and platform).
pub(crate) fn fnv1a(parts: &[&[u8]]) -> u64 {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for part in parts {
        for &b in *part {
            h ^= u64::from(b);
            h = h.wrapping_mul(0x0000_0100_0000_01b3);
        }
        // Separator so ("ab","c") and ("a","bc") differ.
        h ^= 0xff;
        h = h.wrapping_mul(0x0000_0100_0000_01b3);
    }
    h
}

/// Client host of `ip:port` / `[ip]:port` (the address without the port).
pub(crate) fn host_of(addr: &str) -> &str {
    if let Some(rest) = addr.strip_prefix('[') {
        return rest.split(']').next().unwrap_or(rest);
    }
    match addr.rsplit_once(':') {
        Some((h, _)) => h,
        None => addr,
    }
}

/// Path of a request target without the query (absolute-form targets lose scheme and authority).
pub(crate) fn path_of(uri: &str) -> &str {
    let no_query = uri.split(['?', '#']).next().unwrap_or(uri);
    for scheme in ["http://", "https://"] {
        if let Some(rest) = no_query.strip_prefix(scheme) {
            return rest.find('/').and_then(|i| rest.get(i..)).unwrap_or("/");
        }
    }
    no_query
}

/// The legacy transport's session query parameter (`sessionId` TS, `session_id` Python).
pub(crate) fn legacy_session_param(uri: &str) -> Option<String> {
    let query = uri.split_once('?')?.1;
    let query = query.split('#').next().unwrap_or(query);
    query.split('&').find_map(|kv| {
        let (k, v) = kv.split_once('=')?;
        (k == "sessionId" || k == "session_id").then(|| percent_decode(v))
    })
}

fn percent_decode(s: &str) -> String {
    let bytes = s.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0usize;
    while let Some(&b) = bytes.get(i) {
        let hex = bytes
            .get(i.saturating_add(1)..i.saturating_add(3))
            .and_then(|h| std::str::from_utf8(h).ok())
            .and_then(|h| u8::from_str_radix(h, 16).ok());
        match (b, hex) {
            (b'%', Some(v)) => {
                out.push(v);
                i = i.saturating_add(3);
            }
            (b'+', _) => {
                out.push(b' ');
                i = i.saturating_add(1);
            }
            _ => {
                out.push(b);
                i = i.saturating_add(1);
            }
        }
    }
    String::from_utf8_lossy(&out).into_owned()
}

/// The client context of a derived session: same host, endpoint, credential and User-Agent.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub(crate) struct ContextKey {
    pub host: String,
    pub endpoint: String,
    pub auth_hash: Option<u64>,
    pub user_agent: Option<ArcStr>,
}

#[derive(Debug)]
struct DerivedState {
    key: String,
    n: u64,
    last_ts_us: i64,
    client_info: Option<(String, String)>,
}

/// Assigns derived session keys.
#[derive(Debug, Default)]
pub(crate) struct DerivedSessions {
    contexts: HashMap<ContextKey, DerivedState>,
}

impl DerivedSessions {
    /// The derived key for a request of `ctx` at `ts_us`. `starts` is true for
    /// `initialize`/`server/discover`; `client_info` is the clientInfo the request declares.
    /// Returns the key and whether the table overflowed.
    pub(crate) fn key_for(
        &mut self,
        ctx: ContextKey,
        ts_us: i64,
        starts: bool,
        client_info: Option<(String, String)>,
        gap_ms: i64,
    ) -> (String, bool) {
        let mut overflow = false;
        if !self.contexts.contains_key(&ctx) && self.contexts.len() >= MAX_DERIVED_CONTEXTS {
            overflow = true;
            let oldest = self
                .contexts
                .iter()
                .min_by_key(|(_, s)| s.last_ts_us)
                .map(|(k, _)| k.clone());
            if let Some(k) = oldest {
                self.contexts.remove(&k);
            }
        }
        let gap_us = gap_ms.saturating_mul(1000);
        let make_key = |n: u64, ci: &Option<(String, String)>| {
            let (name, version) = ci.clone().unwrap_or_default();
            let h = fnv1a(&[
                &ctx.auth_hash.unwrap_or(0).to_le_bytes(),
                ctx.user_agent.as_deref().unwrap_or("").as_bytes(),
                name.as_bytes(),
                version.as_bytes(),
            ]);
            format!("derived:{}>{}:{:08x}:{n}", ctx.host, ctx.endpoint, h >> 32)
        };
        match self.contexts.get_mut(&ctx) {
            Some(st) => {
                let silent = ts_us.saturating_sub(st.last_ts_us) > gap_us;
                // A session that declared no clientInfo yet adopts the first one.
                let changed = client_info.is_some()
                    && st.client_info.is_some()
                    && client_info != st.client_info;
                if starts || silent || changed {
                    st.n = st.n.saturating_add(1);
                    st.client_info = client_info.or(st.client_info.take());
                    st.key = make_key(st.n, &st.client_info);
                } else if st.client_info.is_none() {
                    st.client_info = client_info;
                }
                st.last_ts_us = st.last_ts_us.max(ts_us);
                (st.key.clone(), overflow)
            }
            None => {
                let key = make_key(1, &client_info);
                self.contexts.insert(
                    ctx,
                    DerivedState {
                        key: key.clone(),
                        n: 1,
                        last_ts_us: ts_us,
                        client_info,
                    },
                );
                (key, overflow)
            }
        }
    }
}

/// Facts one row contributes to its session.
#[derive(Debug, Clone, Default)]
pub(crate) struct SessionFacts {
    /// `protocolVersion` of an `initialize` result.
    pub negotiated_version: Option<String>,
    /// `initialize` params, `MCP-Protocol-Version` header or `_meta` protocolVersion.
    pub declared_version: Option<String>,
    pub client_info: Option<(Option<String>, Option<String>)>,
    pub user_agent: Option<ArcStr>,
}

/// Aggregated per session: the first negotiated (else declared) version, the first clientInfo and User-Agent.
#[derive(Debug, Clone, Default)]
pub(crate) struct SessionInfo {
    pub negotiated_version: Option<String>,
    pub declared_version: Option<String>,
    pub client_info: Option<(Option<String>, Option<String>)>,
    pub user_agent: Option<ArcStr>,
}

impl SessionInfo {
    pub(crate) fn absorb(&mut self, f: &SessionFacts) {
        if self.negotiated_version.is_none() {
            self.negotiated_version.clone_from(&f.negotiated_version);
        }
        if self.declared_version.is_none() {
            self.declared_version.clone_from(&f.declared_version);
        }
        if self.client_info.is_none() {
            self.client_info.clone_from(&f.client_info);
        }
        if self.user_agent.is_none() {
            self.user_agent.clone_from(&f.user_agent);
        }
    }

    pub(crate) fn protocol_version(&self) -> Option<String> {
        self.negotiated_version
            .clone()
            .or_else(|| self.declared_version.clone())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ctx() -> ContextKey {
        ContextKey {
            host: "10.0.0.1".into(),
            endpoint: "10.0.0.2:80/mcp".into(),
            auth_hash: None,
            user_agent: Some("node".into()),
        }
    }

    #[test]
    fn derived_sessions_split_at_initialize_gap_and_client_info() {
        let mut d = DerivedSessions::default();
        let (k1, _) = d.key_for(ctx(), 0, true, None, 1000);
        let (k1b, _) = d.key_for(ctx(), 500_000, false, None, 1000);
        assert_eq!(k1, k1b);
        let (k2, _) = d.key_for(ctx(), 2_000_000, false, None, 1000);
        assert_ne!(k1, k2, "silence longer than the gap");
        let (k3, _) = d.key_for(ctx(), 2_100_000, true, None, 1000);
        assert_ne!(k2, k3, "initialize starts a session");
        let ci = Some(("a".to_string(), "1".to_string()));
        let (k4, _) = d.key_for(ctx(), 2_200_000, false, ci.clone(), 1000);
        assert_eq!(k3, k4, "the first clientInfo is adopted");
        let other_ci = Some(("b".to_string(), "1".to_string()));
        let (k5, _) = d.key_for(ctx(), 2_300_000, false, other_ci, 1000);
        assert_ne!(k4, k5, "another clientInfo is another client");
        let mut other = ctx();
        other.user_agent = Some("curl/8".into());
        assert_ne!(d.key_for(other, 2_300_000, false, None, 1000).0, k5);
        assert!(k1.starts_with("derived:10.0.0.1>10.0.0.2:80/mcp:"));
    }

    #[test]
    fn uri_helpers() {
        assert_eq!(host_of("[::1]:8080"), "::1");
        assert_eq!(host_of("10.0.0.1:5"), "10.0.0.1");
        assert_eq!(path_of("/mcp?x=1"), "/mcp");
        assert_eq!(path_of("http://h:1/messages/?session_id=ab"), "/messages/");
        assert_eq!(
            legacy_session_param("/messages?sessionId=a%2Db"),
            Some("a-b".into())
        );
        assert_eq!(
            legacy_session_param("/messages/?x=1&session_id=ff"),
            Some("ff".into())
        );
        assert_eq!(legacy_session_param("/messages?x=1"), None);
        assert_eq!(
            legacy_session_param("/m?sessionId=%zz%"),
            Some("%zz%".into())
        );
    }

    #[test]
    fn fnv_is_stable() {
        assert_eq!(fnv1a(&[b"ab", b"c"]), fnv1a(&[b"ab", b"c"]));
        assert_ne!(fnv1a(&[b"ab", b"c"]), fnv1a(&[b"a", b"bc"]));
    }
}
