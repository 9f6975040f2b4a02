//! The "latest earlier equivalent request" index (report-schema.md section 4).
//!
//! Keyed by a fingerprint of (client host, endpoint, `rpc_method`, canonical params), overall
//! and per session. Entries are [`Prior`]s: the few facts the rules read, with texts compared
//! only for equality kept as 128-bit fingerprints (two independent 64-bit hashes), so an entry
//! costs about 200 bytes whatever the body size; an accidental collision is out of reach.
//! Entries older than the repeat window are expired in arrival order, so memory follows the
//! number of distinct requests inside one window, capped by a fixed limit.

use crate::hashing::HashMap;
use crate::http::retry_after::RetryAfter;
use crate::mcp::{Exchange, Outcome};
use arcstr::ArcStr;
use std::collections::VecDeque;
use xxhash_rust::xxh3::{xxh3_64, xxh3_128};

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

/// XXH3-128 of a text, as two halves.
pub(super) type Fingerprint = (u64, u64);

/// Fingerprint of `parts` (each length-prefixed, so ("ab","c") and ("a","bc") differ). XXH3 is
/// unseeded here: the same input hashes the same in every run.
pub(super) fn fingerprint(parts: &[&[u8]]) -> Fingerprint {
    // One-shot XXH3 over the length-prefixed parts (the streaming hasher gives the same
    // value, at several times the cost for inputs this short).
    let total: usize = parts.iter().map(|p| p.len().saturating_add(8)).sum();
    let mut stack = [0u8; 256];
    let mut heap = Vec::new();
    let buf: &mut [u8] = if total <= stack.len() {
        &mut stack
    } else {
        heap.resize(total, 0);
        &mut heap
    };
    let mut at = 0;
    for part in parts {
        for piece in [&(part.len() as u64).to_le_bytes()[..], part] {
            if let Some(dst) = buf.get_mut(at..at + piece.len()) {
                dst.copy_from_slice(piece);
            }
            at += piece.len();
        }
    }
    let full = xxh3_128(buf.get(..at).unwrap_or_default());
    ((full >> 64) as u64, full as u64)
}

/// Hash of a session key (session facts and "same session" compare it).
pub(super) fn session_hash_of(key: &str) -> u64 {
    xxh3_64(key.as_bytes())
}

/// What the rules read of a request, in about 200 bytes: texts that are only compared for
/// equality (params, body, id, session) are kept as hashes, so the index holds a window of
/// requests without their bodies. Equal 128-bit fingerprints stand for equal texts.
#[derive(Debug, Clone)]
pub(super) struct Prior {
    pub exchange_id: u64,
    pub attempt: u32,
    pub ts_request: i64,
    pub ts_response: Option<i64>,
    /// The equivalence key: client host, endpoint, `rpc_method`, canonical params.
    pub call: Fingerprint,
    pub session: u64,
    /// Shared with the row (the analyzer keeps one copy of each user agent).
    pub user_agent: Option<ArcStr>,
    pub jsonrpc_id: Option<u64>,
    pub body: Option<Fingerprint>,
    pub auth_hash: Option<u64>,
    pub has_mrtr_fields: bool,
    pub outcome: Outcome,
    pub http_status: Option<u16>,
    pub error_code: Option<i64>,
    /// The wait its 429 or 503 response asked for, kept in 13 bytes rather than 32: the
    /// deadline (µs; [`NO_WAIT`] for none), the delay (ms, cut to `u32`) and its form.
    pub wait_until_us: i64,
    pub wait_ms: u32,
    pub wait_from_date: bool,
    /// Its own gap to the attempt it repeats (µs, at least 0, see `hygiene::gap_after`);
    /// [`NO_GAP`] when it is no retry.
    pub gap_us: i64,
}

/// [`Prior::wait_until_us`] of a response that asked for no wait.
pub(super) const NO_WAIT: i64 = i64::MIN;
/// [`Prior::gap_us`] of a first attempt.
pub(super) const NO_GAP: i64 = -1;

impl Prior {
    /// The `Retry-After` it was answered with.
    pub(super) fn retry_after(&self) -> Option<RetryAfter> {
        (self.wait_until_us != NO_WAIT).then_some(RetryAfter {
            delay_ms: i64::from(self.wait_ms),
            until_us: self.wait_until_us,
            from_date: self.wait_from_date,
        })
    }

    /// Its gap to the attempt it repeats, when it is a retry.
    pub(super) fn gap(&self) -> Option<i64> {
        (self.gap_us != NO_GAP).then_some(self.gap_us)
    }
}

impl Prior {
    pub(super) fn of(row: &Exchange) -> Prior {
        // Tagged, so None and Some("") differ.
        let (method_tag, method): (&[u8], &[u8]) = match row.rpc_method.as_deref() {
            None => (&[0], &[]),
            Some(m) => (&[1], m.as_bytes()),
        };
        let mut tagged = [1u8; 17];
        let params: &[u8] = match row.inference.params_fingerprint {
            None => &[0],
            Some((a, b)) => {
                for (dst, src) in tagged
                    .iter_mut()
                    .skip(1)
                    .zip(a.to_le_bytes().into_iter().chain(b.to_le_bytes()))
                {
                    *dst = src;
                }
                &tagged
            }
        };
        let call = fingerprint(&[
            client_host(&row.client_addr).as_bytes(),
            row.inference.endpoint.as_bytes(),
            method_tag,
            method,
            params,
        ]);
        Prior {
            exchange_id: row.exchange_id,
            attempt: row.attempt,
            ts_request: row.ts_request,
            ts_response: row.ts_response,
            call,
            session: session_hash_of(&row.session_key),
            user_agent: row.user_agent.clone(),
            jsonrpc_id: row
                .jsonrpc_id
                .as_deref()
                .map(|id| fingerprint(&[id.as_bytes()]).0),
            body: row.inference.body_fingerprint,
            auth_hash: row.inference.auth_hash,
            has_mrtr_fields: row.inference.has_mrtr_fields,
            outcome: row.outcome,
            http_status: row.http_status,
            error_code: row.error_code,
            wait_until_us: row.inference.retry_after.map_or(NO_WAIT, |w| w.until_us),
            wait_ms: row
                .inference
                .retry_after
                .map_or(0, |w| u32::try_from(w.delay_ms).unwrap_or(u32::MAX)),
            wait_from_date: row.inference.retry_after.is_some_and(|w| w.from_date),
            gap_us: NO_GAP,
        }
    }
}

/// Hash of (equivalence key, session): the bucket of one call within one session.
fn session_bucket(p: &Prior) -> u64 {
    let mut bytes = [0u8; 24];
    let (a, b) = p.call;
    for (slot, word) in bytes.chunks_exact_mut(8).zip([a, b, p.session]) {
        slot.copy_from_slice(&word.to_le_bytes());
    }
    xxh3_64(&bytes)
}

/// The positions whose keys hashed alike: almost always one, so it is held inline.
#[derive(Debug)]
enum Bucket {
    One(usize),
    Many(Vec<usize>),
}

impl Bucket {
    fn positions(&self) -> &[usize] {
        match self {
            Bucket::One(p) => std::slice::from_ref(p),
            Bucket::Many(v) => v,
        }
    }
}

/// Make `pos` the entry of the bucket at `key` that `same` matches, or add it. Returns the
/// replaced position.
fn replace_or_push(
    map: &mut HashMap<u64, Bucket>,
    key: u64,
    pos: usize,
    same: impl Fn(usize) -> bool,
) -> Option<usize> {
    let Some(bucket) = map.get_mut(&key) else {
        map.insert(key, Bucket::One(pos));
        return None;
    };
    match bucket {
        Bucket::One(p) if same(*p) => Some(std::mem::replace(p, pos)),
        Bucket::One(p) => {
            *bucket = Bucket::Many(vec![*p, pos]);
            None
        }
        Bucket::Many(v) => match v.iter_mut().find(|p| same(**p)) {
            Some(slot) => Some(std::mem::replace(slot, pos)),
            None => {
                v.push(pos);
                None
            }
        },
    }
}

/// Drop `pos` from the bucket at `key` (and the bucket once empty); true if it was there.
fn take_from(map: &mut HashMap<u64, Bucket>, key: u64, pos: usize) -> bool {
    let Some(bucket) = map.get_mut(&key) else {
        return false;
    };
    let (found, empty) = match bucket {
        Bucket::One(p) => (*p == pos, *p == pos),
        Bucket::Many(v) => {
            let before = v.len();
            v.retain(|&p| p != pos);
            let found = v.len() != before;
            if let [only] = v.as_slice() {
                *bucket = Bucket::One(*only);
            }
            (found, matches!(bucket, Bucket::Many(v) if v.is_empty()))
        }
    };
    if empty {
        map.remove(&key);
    }
    found
}

/// One indexed request; `prior` is `None` once no bucket holds it (superseded), until the
/// entry expires.
#[derive(Debug)]
struct Entry {
    ts_request: i64,
    call: u64,
    session: u64,
    /// Boxed: superseded entries (most of a busy window) then take 8 bytes, not 200.
    prior: Option<Box<Prior>>,
    /// Buckets holding it (0 to 2).
    refs: u8,
}

/// Latest indexed request per equivalence key, overall and per session.
///
/// Requests are kept in insertion order; a request's position is its insertion count.
/// Buckets hold one position per distinct key that hashed alike (almost always one), so a
/// lookup costs O(1) however many sessions made the same call (a load test from one host).
///
/// Invariant: every position in the maps is that of an entry in `entries` whose `prior` is
/// set and whose `refs` counts the maps holding it; `entries.len() <= limit`.
#[derive(Debug)]
pub(super) struct RecentRequests {
    /// Equivalence key (first half) -> latest position of each equivalence class.
    any_session: HashMap<u64, Bucket>,
    /// [`session_bucket`] -> latest position of each (class, session).
    own_session: HashMap<u64, Bucket>,
    /// Indexed requests in insertion order; `entries[i]` has position `first + i`.
    entries: VecDeque<Entry>,
    first: usize,
    /// Entries whose `prior` is still held.
    live: usize,
    limit: usize,
}

/// The request at `pos`, if still held.
fn prior_at(entries: &VecDeque<Entry>, first: usize, pos: usize) -> Option<&Prior> {
    entries.get(pos.checked_sub(first)?)?.prior.as_deref()
}

impl RecentRequests {
    pub(super) fn new(limit: usize) -> Self {
        RecentRequests {
            any_session: HashMap::default(),
            own_session: HashMap::default(),
            entries: VecDeque::new(),
            first: 0,
            live: 0,
            limit,
        }
    }

    /// One bucket let go of `pos`; its request is freed once no bucket holds it.
    fn release(&mut self, pos: usize) {
        let Some(e) = pos
            .checked_sub(self.first)
            .and_then(|i| self.entries.get_mut(i))
        else {
            return;
        };
        e.refs = e.refs.saturating_sub(1);
        if e.refs == 0 && e.prior.take().is_some() {
            self.live = self.live.saturating_sub(1);
        }
    }

    /// Forget requests sent before `oldest_us` (in insertion order).
    pub(super) fn expire(&mut self, oldest_us: i64) {
        while let Some(e) = self.entries.front() {
            if e.ts_request >= oldest_us {
                break;
            }
            let pos = self.first;
            let (call, session, held) = (e.call, e.session, e.prior.is_some());
            self.entries.pop_front();
            self.first = self.first.wrapping_add(1);
            if held {
                self.live = self.live.saturating_sub(1);
            }
            take_from(&mut self.any_session, call, pos);
            take_from(&mut self.own_session, session, pos);
        }
    }

    /// The latest indexed request equivalent to `row`: the latest of `row`'s own session when
    /// there is one, else the latest of any session from the same client host.
    pub(super) fn latest(&self, row: &Prior) -> Option<&Prior> {
        let find = |bucket: Option<&Bucket>, same_session: bool| {
            bucket?.positions().iter().find_map(|&p| {
                prior_at(&self.entries, self.first, p)
                    .filter(|e| (!same_session || e.session == row.session) && e.call == row.call)
            })
        };
        find(self.own_session.get(&session_bucket(row)), true)
            .or_else(|| find(self.any_session.get(&row.call.0), false))
    }

    /// Make `row` the latest of its key, overall and in its session; the requests it
    /// supersedes are freed. Returns false (and indexes nothing) when the index already holds
    /// `limit` entries.
    pub(super) fn insert(&mut self, row: Prior) -> bool {
        if self.entries.len() >= self.limit {
            return false;
        }
        let pos = self.first.wrapping_add(self.entries.len());
        let call = row.call.0;
        let session = session_bucket(&row);
        let (entries, first) = (&self.entries, self.first);
        let equal = |p: usize| prior_at(entries, first, p).is_some_and(|e| e.call == row.call);
        let equal_here = |p: usize| {
            prior_at(entries, first, p)
                .is_some_and(|e| e.session == row.session && e.call == row.call)
        };
        let old_any = replace_or_push(&mut self.any_session, call, pos, equal);
        let old_own = replace_or_push(&mut self.own_session, session, pos, equal_here);
        self.entries.push_back(Entry {
            ts_request: row.ts_request,
            call,
            session,
            prior: Some(Box::new(row)),
            refs: 2,
        });
        self.live = self.live.saturating_add(1);
        for old in [old_any, old_own].into_iter().flatten() {
            self.release(old);
        }
        true
    }

    /// Entries held (live and superseded ones not yet expired).
    #[cfg(test)]
    pub(super) fn len(&self) -> usize {
        self.entries.len()
    }

    /// Requests still held by a bucket.
    #[cfg(test)]
    pub(super) fn live(&self) -> usize {
        self.live
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::rpc::text_fingerprint;

    fn req(addr: &str, params: &str, ts: i64) -> Exchange {
        let mut e = Exchange {
            client_addr: addr.into(),
            rpc_method: Some("tools/call".into()),
            ts_request: ts,
            ..Default::default()
        };
        e.inference.endpoint = "10.0.0.1:80/mcp".into();
        e.inference.params_fingerprint = Some(text_fingerprint(params));
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

    fn prior(addr: &str, params: &str, ts: i64, session: &str) -> Prior {
        let mut r = req(addr, params, ts);
        r.session_key = session.into();
        Prior::of(&r)
    }

    fn ts(p: Option<&Prior>) -> Option<i64> {
        p.map(|p| p.ts_request)
    }

    #[test]
    fn latest_replaces_and_expires() {
        let mut idx = RecentRequests::new(10);
        assert!(idx.insert(prior("10.1.1.1:1000", "{\"a\":1}", 1_000, "")));
        assert!(idx.insert(prior("10.1.1.1:2000", "{\"a\":1}", 2_000, "")));
        assert!(idx.insert(prior("10.1.1.1:3000", "{\"a\":2}", 3_000, "")));
        assert_eq!(idx.live(), 2, "#0 superseded by #1 in both maps");
        assert_eq!(idx.len(), 3);
        let probe = prior("10.1.1.1:9", "{\"a\":1}", 4_000, "");
        assert_eq!(ts(idx.latest(&probe)), Some(2_000));
        idx.expire(2_500);
        assert_eq!(idx.latest(&probe).map(|p| p.ts_request), None);
        assert_eq!((idx.len(), idx.live()), (1, 1));
        let other_host = prior("10.9.9.9:1", "{\"a\":2}", 4_000, "");
        assert!(idx.latest(&other_host).is_none());
    }

    #[test]
    fn latest_prefers_own_session() {
        let mut idx = RecentRequests::new(10);
        assert!(idx.insert(prior("h:1", "1", 1, "A")));
        assert!(idx.insert(prior("h:2", "1", 2, "B")));
        assert_eq!(idx.live(), 2, "#0 is still the latest of session A");
        assert_eq!(ts(idx.latest(&prior("h:9", "1", 9, "A"))), Some(1));
        assert_eq!(
            ts(idx.latest(&prior("h:9", "1", 9, "C"))),
            Some(2),
            "no own: latest of host"
        );
        assert!(idx.insert(prior("h:3", "1", 3, "C")));
        assert_eq!((idx.len(), idx.live()), (3, 3));
        idx.expire(3);
        assert_eq!((idx.len(), idx.live()), (1, 1));
        assert_eq!(ts(idx.latest(&prior("h:9", "1", 9, "A"))), Some(3));
    }

    #[test]
    fn insert_refuses_beyond_limit() {
        let mut idx = RecentRequests::new(1);
        assert!(idx.insert(prior("a:1", "1", 1, "")));
        assert!(!idx.insert(prior("a:1", "2", 2, "")));
        assert_eq!(idx.len(), 1);
    }

    #[test]
    fn fingerprints_tell_long_texts_and_fields_apart() {
        let long = format!("{{\"q\":\"{}\"}}", "x".repeat(9000));
        let mut other = long.clone();
        other.insert(5000, 'y');
        let a = Prior::of(&req("h:1", &long, 1));
        assert_eq!(a.call, Prior::of(&req("h:2", &long, 2)).call);
        assert_ne!(a.call, Prior::of(&req("h:1", &other, 2)).call);
        // Field boundaries count: ("ab", "c") is not ("a", "bc").
        assert_ne!(fingerprint(&[b"ab", b"c"]), fingerprint(&[b"a", b"bc"]));
        let mut none = req("h:1", "", 1);
        none.inference.params_fingerprint = None;
        assert_ne!(Prior::of(&none).call, Prior::of(&req("h:1", "", 1)).call);
    }

    /// Keys that hash alike share a bucket: positions are replaced only where `same` says so.
    #[test]
    fn bucket_holds_colliding_keys_apart() {
        let mut map = HashMap::default();
        assert_eq!(replace_or_push(&mut map, 7, 1, |_| false), None);
        assert_eq!(replace_or_push(&mut map, 7, 2, |p| p == 9), None);
        assert_eq!(map[&7].positions(), &[1, 2]);
        assert_eq!(replace_or_push(&mut map, 7, 3, |p| p == 2), Some(2));
        assert_eq!(map[&7].positions(), &[1, 3]);
        assert!(take_from(&mut map, 7, 1));
        assert!(matches!(map[&7], Bucket::One(3)));
        assert!(!take_from(&mut map, 7, 1));
        assert!(take_from(&mut map, 7, 3));
        assert!(map.is_empty());
    }
}
