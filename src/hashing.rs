//! Hash tables keyed by capture data (flow tuples, session ids, JSON-RPC ids).
//!
//! foldhash with a per-process random seed: several times cheaper than std's SipHash on the
//! short keys these tables use, and still seeded, so a capture cannot be crafted offline to
//! collide its keys.

/// `std` `HashMap` with a seeded foldhash; build with `HashMap::default()`.
pub type HashMap<K, V> = std::collections::HashMap<K, V, foldhash::fast::RandomState>;
/// `std` `HashSet` with a seeded foldhash; build with `HashSet::default()`.
pub type HashSet<K> = std::collections::HashSet<K, foldhash::fast::RandomState>;
