//! Canonical fingerprints of JSON values: Merkle-style (see [`value_fingerprint`]), so an
//! object's fingerprint is made from its members' fingerprints in key order without keeping
//! the members, and [`super::digest`] computes the same while parsing, without the tree.

use serde_json::{Map, Value};
use std::borrow::Cow;
use xxhash_rust::xxh3::xxh3_128_with_seed;

// One seed per kind of node: distinct kinds never hash alike by construction.
pub(super) const T_NULL: u64 = 1;
pub(super) const T_TRUE: u64 = 2;
pub(super) const T_FALSE: u64 = 3;
pub(super) const T_NUMBER: u64 = 4;
pub(super) const T_STRING: u64 = 5;
pub(super) const T_ARRAY: u64 = 6;
pub(super) const T_OBJECT: u64 = 7;
pub(super) const T_KEY: u64 = 8;

/// 128-bit fingerprint of a JSON value, equal exactly when the canonical texts are equal
/// (object keys sorted, no spacing; numbers by serde_json's number text). A leaf is XXH3-128
/// of its text seeded by its kind; an array hashes its items' fingerprints in order; an object
/// hashes (key fingerprint, value fingerprint) pairs in key order.
pub fn value_fingerprint(v: &Value) -> u128 {
    match v {
        Value::Null => leaf(T_NULL, b""),
        Value::Bool(true) => leaf(T_TRUE, b""),
        Value::Bool(false) => leaf(T_FALSE, b""),
        Value::Number(n) => match (n.as_u64(), n.as_i64()) {
            (Some(u), _) => integer_leaf(u),
            (None, Some(i)) => integer_leaf(i),
            _ => leaf(T_NUMBER, n.to_string().as_bytes()),
        },
        Value::String(s) => leaf(T_STRING, s.as_bytes()),
        Value::Array(items) => {
            let mut buf = Vec::with_capacity(items.len().saturating_mul(16));
            for item in items {
                buf.extend_from_slice(&value_fingerprint(item).to_le_bytes());
            }
            leaf(T_ARRAY, &buf)
        }
        Value::Object(map) => object_fingerprint(map, |_| true),
    }
}

/// [`value_fingerprint`] of an object's members that `keep` accepts.
pub fn object_fingerprint(map: &Map<String, Value>, keep: impl Fn(&str) -> bool) -> u128 {
    let mut members: Vec<(Cow<'_, str>, u128)> = map
        .iter()
        .filter(|(k, _)| keep(k))
        .map(|(k, v)| (Cow::Borrowed(k.as_str()), value_fingerprint(v)))
        .collect();
    members_fingerprint(&mut members)
}

/// Splits a fingerprint into the two halves [`JsonFingerprint`] holds.
pub fn split(fp: u128) -> JsonFingerprint {
    ((fp >> 64) as u64, fp as u64)
}

/// An integer's leaf: its decimal text, as serde_json's `Number` writes it (with `itoa`),
/// without allocating it.
pub(super) fn integer_leaf(v: impl itoa::Integer) -> u128 {
    leaf(T_NUMBER, itoa::Buffer::new().format(v).as_bytes())
}

pub(super) fn leaf(kind: u64, bytes: &[u8]) -> u128 {
    xxh3_128_with_seed(bytes, kind)
}

/// Object fingerprint from (key, value fingerprint) pairs in any order; for a repeated key the
/// last one counts, as in `serde_json::Value`.
pub(super) fn members_fingerprint(members: &mut [(Cow<'_, str>, u128)]) -> u128 {
    sort_members(members);
    sorted_members_fingerprint(members, |_| true)
}

/// Stable: among equal keys the document order survives, so the last one can be kept.
pub(super) fn sort_members(members: &mut [(Cow<'_, str>, u128)]) {
    members.sort_by(|a, b| a.0.cmp(&b.0));
}

/// [`members_fingerprint`] of members already sorted by [`sort_members`], those `keep`
/// accepts.
pub(super) fn sorted_members_fingerprint(
    members: &[(Cow<'_, str>, u128)],
    keep: impl Fn(&str) -> bool,
) -> u128 {
    let mut buf = Vec::with_capacity(members.len().saturating_mul(32));
    let mut iter = members.iter().filter(|(k, _)| keep(k)).peekable();
    while let Some((k, fp)) = iter.next() {
        if iter.peek().is_some_and(|(next, _)| next == k) {
            continue;
        }
        buf.extend_from_slice(&leaf(T_KEY, k.as_bytes()).to_le_bytes());
        buf.extend_from_slice(&fp.to_le_bytes());
    }
    leaf(T_OBJECT, &buf)
}

/// [`sorted_members_fingerprint`] of the members `keep` accepts, and of those without `also`
/// when it is one of them: one buffer for both.
pub(super) fn sorted_members_fingerprints(
    members: &[(Cow<'_, str>, u128)],
    keep: impl Fn(&str) -> bool,
    also: &str,
) -> (u128, Option<u128>) {
    let mut buf = Vec::with_capacity(members.len().saturating_mul(32));
    let mut also_at = None;
    let mut iter = members.iter().filter(|(k, _)| keep(k)).peekable();
    while let Some((k, fp)) = iter.next() {
        if iter.peek().is_some_and(|(next, _)| next == k) {
            continue;
        }
        if k == also {
            also_at = Some(buf.len());
        }
        buf.extend_from_slice(&leaf(T_KEY, k.as_bytes()).to_le_bytes());
        buf.extend_from_slice(&fp.to_le_bytes());
    }
    let all = leaf(T_OBJECT, &buf);
    let without = also_at.map(|at| {
        buf.drain(at..at.saturating_add(32).min(buf.len()));
        leaf(T_OBJECT, &buf)
    });
    (all, without)
}

/// 128-bit fingerprint of a JSON value up to [`canonical_json`] equality (see
/// [`value_fingerprint`]). Equal canonical texts give equal fingerprints;
/// different ones collide with odds far below anything a capture can reach.
pub type JsonFingerprint = (u64, u64);

/// [`JsonFingerprint`] of `v`: equal exactly when `canonical_json` texts are equal (key order
/// and spacing ignored; numbers by serde_json's number text, so `1`, `1.0` and `"1"` differ
/// while `1E2` and `100.0` agree). Also what [`super::digest::digest_body`] computes while
/// parsing, without the tree.
pub fn canonical_fingerprint(v: &Value) -> JsonFingerprint {
    split(value_fingerprint(v))
}

/// [`canonical_fingerprint`] of `v` with the top-level object keys in `skip` left out, as if
/// they had been removed first (no effect when `v` is not an object). Retry equivalence
/// ignores `_meta`, `progressToken`, `inputResponses`, `requestState` (report-schema.md
/// section 4) without cloning the params to drop them.
pub fn canonical_fingerprint_without(v: &Value, skip: &[&str]) -> JsonFingerprint {
    match v {
        Value::Object(map) => split(object_fingerprint(map, |k| !skip.contains(&k))),
        other => canonical_fingerprint(other),
    }
}

/// [`JsonFingerprint`] of an opaque text (a stand-in where only a text is at hand); not
/// comparable with [`canonical_fingerprint`].
pub fn text_fingerprint(text: &str) -> JsonFingerprint {
    split(xxhash_rust::xxh3::xxh3_128(text.as_bytes()))
}
