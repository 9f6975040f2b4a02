//! The "latest earlier equivalent request" index (report-schema.md section 4).
//!
//! Keyed by a hash of (client host, endpoint, `rpc_method`, canonical params), overall and per
//! session; the fields are compared for real, so a hash collision never links two different
//! calls. Entries older than the repeat window are expired in arrival order, so memory
//! follows the number of requests inside one window, capped by a fixed limit.

use crate::mcp::Exchange;
use std::collections::hash_map::DefaultHasher;
use std::collections::{HashMap, VecDeque};
use std::hash::{Hash, Hasher};

/// The client host: `client_addr` without the port (`[ip]:port` for IPv6).
pub(super) fn client_host(addr: &str) -> &str {
    if let Some(rest) = addr.strip_prefix('[') {
        return rest.split_once(']').map_or(rest, |(host, _)| host);
    }
    match addr.rsplit_once(':') {
        // A bare IPv6 address without brackets has several colons: keep it whole.
        Some((host, port)) if !host.contains(':') && port.bytes().all(|b| b.is_ascii_digit()) => {
            host
        }
        _ => addr,
    }
}

/// Hash of the equivalence key of a request row.
pub(super) fn equivalence_hash(row: &Exchange) -> u64 {
    // DefaultHasher::new() uses fixed keys: the same input hashes the same in every run.
    let mut h = DefaultHasher::new();
    client_host(&row.client_addr).hash(&mut h);
    row.inference.endpoint.hash(&mut h);
    row.rpc_method.hash(&mut h);
    row.inference.params_canonical.hash(&mut h);
    h.finish()
}

/// Same client host, endpoint, method and canonical params.
pub(super) fn equivalent(a: &Exchange, b: &Exchange) -> bool {
    a.inference.endpoint == b.inference.endpoint
        && a.rpc_method == b.rpc_method
        && a.inference.params_canonical == b.inference.params_canonical
        && client_host(&a.client_addr) == client_host(&b.client_addr)
}

/// Hash of (equivalence hash, session key): the bucket of one call within one session.
fn session_hash(call: u64, row: &Exchange) -> u64 {
    let mut h = DefaultHasher::new();
    call.hash(&mut h);
    row.session_key.hash(&mut h);
    h.finish()
}

/// Make `pos` the entry of `bucket` that `same` matches, or add it.
fn replace_or_push(bucket: &mut Vec<usize>, pos: usize, same: impl Fn(usize) -> bool) {
    match bucket.iter_mut().find(|p| same(**p)) {
        Some(slot) => *slot = pos,
        None => bucket.push(pos),
    }
}

/// Drop `pos` from the bucket at `key`, and the bucket once empty.
fn remove_from<K: std::hash::Hash + Eq>(map: &mut HashMap<K, Vec<usize>>, key: K, pos: usize) {
    if let Some(bucket) = map.get_mut(&key) {
        bucket.retain(|&p| p != pos);
        if bucket.is_empty() {
            map.remove(&key);
        }
    }
}

/// Latest indexed request per equivalence key, overall and per session.
///
/// Buckets hold one position per distinct key that hashed alike (almost always one), so a
/// lookup costs O(1) however many sessions made the same call (a load test from one host).
/// Invariant: every position in the maps also appears in `order` (possibly with superseded
/// duplicates there, which expire harmlessly); `order.len() <= limit`.
pub(super) struct RecentRequests {
    /// Equivalence hash -> latest position of each equivalence class.
    any_session: HashMap<u64, Vec<usize>>,
    /// [`session_hash`] -> latest position of each (class, session).
    own_session: HashMap<u64, Vec<usize>>,
    /// (ts_request, equivalence hash, session hash, position) in insertion order, for expiry.
    order: VecDeque<(i64, u64, u64, usize)>,
    limit: usize,
}

impl RecentRequests {
    pub(super) fn new(limit: usize) -> Self {
        RecentRequests {
            any_session: HashMap::new(),
            own_session: HashMap::new(),
            order: VecDeque::new(),
            limit,
        }
    }

    /// Forget requests sent before `oldest_us`.
    pub(super) fn expire(&mut self, oldest_us: i64) {
        while let Some(&(ts, call, session, pos)) = self.order.front() {
            if ts >= oldest_us {
                break;
            }
            self.order.pop_front();
            remove_from(&mut self.any_session, call, pos);
            remove_from(&mut self.own_session, session, pos);
        }
    }

    /// Position of the latest indexed request equivalent to `row`: the latest of `row`'s own
    /// session when there is one, else the latest of any session from the same client host.
    pub(super) fn latest(&self, rows: &[Exchange], call: u64, row: &Exchange) -> Option<usize> {
        let find = |bucket: Option<&Vec<usize>>, same_session: bool| {
            bucket?.iter().copied().find(|&p| {
                rows.get(p).is_some_and(|e| {
                    (!same_session || e.session_key == row.session_key) && equivalent(e, row)
                })
            })
        };
        find(self.own_session.get(&session_hash(call, row)), true)
            .or_else(|| find(self.any_session.get(&call), false))
    }

    /// Make the row at `pos` the latest of its key, overall and in its session. Returns false
    /// (and indexes nothing) when the index already holds `limit` entries.
    pub(super) fn insert(&mut self, rows: &[Exchange], call: u64, pos: usize) -> bool {
        let Some(row) = rows.get(pos) else {
            return false;
        };
        if self.order.len() >= self.limit {
            return false;
        }
        let equal = |p: usize| rows.get(p).is_some_and(|e| equivalent(e, row));
        let equal_here = |p: usize| {
            rows.get(p)
                .is_some_and(|e| e.session_key == row.session_key && equivalent(e, row))
        };
        let session = session_hash(call, row);
        replace_or_push(self.any_session.entry(call).or_default(), pos, equal);
        replace_or_push(
            self.own_session.entry(session).or_default(),
            pos,
            equal_here,
        );
        self.order.push_back((row.ts_request, call, session, pos));
        true
    }

    /// Entries held (live and superseded ones not yet expired).
    #[cfg(test)]
    pub(super) fn len(&self) -> usize {
        self.order.len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn req(addr: &str, params: &str, ts: i64) -> Exchange {
        let mut e = Exchange {
            client_addr: addr.to_string(),
            rpc_method: Some("tools/call".to_string()),
            ts_request: ts,
            ..Default::default()
        };
        e.inference.endpoint = "10.0.0.1:80/mcp".to_string();
        e.inference.params_canonical = Some(params.to_string());
        e
    }

    #[test]
    fn client_host_strips_port() {
        assert_eq!(client_host("10.1.2.3:5555"), "10.1.2.3");
        assert_eq!(client_host("[::1]:8080"), "::1");
        assert_eq!(client_host("[fe80::1"), "fe80::1");
        assert_eq!(client_host("fe80::1"), "fe80::1");
        assert_eq!(client_host("host"), "host");
        assert_eq!(client_host(""), "");
    }

    #[test]
    fn latest_replaces_and_expires() {
        let rows = vec![
            req("10.1.1.1:1000", "{\"a\":1}", 1_000),
            req("10.1.1.1:2000", "{\"a\":1}", 2_000),
            req("10.1.1.1:3000", "{\"a\":2}", 3_000),
        ];
        let mut idx = RecentRequests::new(10);
        for (p, r) in rows.iter().enumerate() {
            assert!(idx.insert(&rows, equivalence_hash(r), p));
        }
        let probe = req("10.1.1.1:9", "{\"a\":1}", 4_000);
        let h = equivalence_hash(&probe);
        assert_eq!(idx.latest(&rows, h, &probe), Some(1));
        idx.expire(2_500);
        assert_eq!(idx.latest(&rows, h, &probe), None);
        assert_eq!(idx.len(), 1);
        let other_host = req("10.9.9.9:1", "{\"a\":2}", 4_000);
        assert_eq!(
            idx.latest(&rows, equivalence_hash(&other_host), &other_host),
            None
        );
    }

    #[test]
    fn latest_prefers_own_session() {
        let mut rows = vec![req("h:1", "1", 1), req("h:2", "1", 2), req("h:3", "1", 3)];
        rows[0].session_key = "A".to_string();
        rows[1].session_key = "B".to_string();
        rows[2].session_key = "C".to_string();
        let mut idx = RecentRequests::new(10);
        assert!(idx.insert(&rows, equivalence_hash(&rows[0]), 0));
        assert!(idx.insert(&rows, equivalence_hash(&rows[1]), 1));
        let h = equivalence_hash(&rows[2]);
        assert_eq!(idx.latest(&rows, h, &rows[0]), Some(0), "own session A");
        assert_eq!(
            idx.latest(&rows, h, &rows[2]),
            Some(1),
            "no own: latest of host"
        );
        assert!(idx.insert(&rows, h, 2));
        assert_eq!(idx.len(), 3);
    }

    #[test]
    fn insert_refuses_beyond_limit() {
        let rows = vec![req("a:1", "1", 1), req("a:1", "2", 2)];
        let mut idx = RecentRequests::new(1);
        assert!(idx.insert(&rows, equivalence_hash(&rows[0]), 0));
        assert!(!idx.insert(&rows, equivalence_hash(&rows[1]), 1));
        assert_eq!(idx.len(), 1);
    }
}
