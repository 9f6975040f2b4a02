//! Counters a stage owns: each stage declares its own with [`counters!`] (capture, flow,
//! tls, http, mcp), keyed by the names of `crate::anomaly`, and a run's totals are their sum
//! by the one [`Merge`] the macro derives, so a new counter cannot be left out of it.

use crate::anomaly::Anomaly;
use crate::contract::{Counts, Named};
use std::collections::BTreeMap;

/// Adds another value's counts to this one (a worker thread's counters into the run's).
pub trait Merge {
    fn merge(&mut self, other: &Self);
}

impl Merge for u64 {
    fn merge(&mut self, other: &u64) {
        *self = self.saturating_add(*other);
    }
}

impl<K: Named> Merge for Counts<K> {
    fn merge(&mut self, other: &Counts<K>) {
        Counts::merge(self, other);
    }
}

/// Counts keyed by a name from a fixed set (`&'static`, so counting never allocates).
impl Merge for BTreeMap<&'static str, u64> {
    fn merge(&mut self, other: &Self) {
        for (name, n) in other {
            Merge::merge(self.entry(name).or_default(), n);
        }
    }
}

/// Lines of a list kept in order (the first malformed key log lines).
impl Merge for Vec<String> {
    fn merge(&mut self, other: &Self) {
        self.extend(other.iter().cloned());
    }
}

/// Declares a struct of counters (every field `pub`, `Default`, serialized by field) and its
/// [`Merge`], field by field.
macro_rules! counters {
    (
        $(#[$meta:meta])*
        pub struct $ty:ident {
            $($(#[$fmeta:meta])* pub $field:ident: $fty:ty,)+
        }
    ) => {
        $(#[$meta])*
        #[derive(Debug, Default, Clone, PartialEq, Eq, serde::Serialize)]
        pub struct $ty {
            $($(#[$fmeta])* pub $field: $fty,)+
        }

        impl $crate::counters::Merge for $ty {
            fn merge(&mut self, other: &Self) {
                $($crate::counters::Merge::merge(&mut self.$field, &other.$field);)+
            }
        }
    };
}

pub(crate) use counters;

/// Anomalies by [`Anomaly`]. A pattern entry's names (`h2.rst_stream_cancel`) are kept by
/// their full name, each allocated once when first counted. Equal, and serialized, as the
/// names counted (the order they were first seen in aside).
#[derive(Debug, Default, Clone)]
pub struct AnomalyCounts {
    fixed: Counts<Anomaly>,
    /// Names of pattern entries, and (in a release build) any name not registered.
    named: Vec<(Box<str>, u64)>,
}

impl AnomalyCounts {
    /// Counts one `key` (not a pattern entry: see [`AnomalyCounts::add_pattern`]).
    pub fn add(&mut self, key: Anomaly) {
        self.add_many(key, 1);
    }

    /// Counts `n` of `key`.
    pub fn add_many(&mut self, key: Anomaly, n: u64) {
        debug_assert!(key.pattern_prefix().is_none(), "{key} needs its value");
        self.fixed.add(key, n);
    }

    /// Counts `n` of the pattern entry `key` with `value` appended (`h2.goaway_` +
    /// `no_error`).
    pub fn add_pattern(&mut self, key: Anomaly, value: &str, n: u64) {
        let prefix = key.pattern_prefix().unwrap_or(key.name());
        let found = self
            .named
            .iter_mut()
            .find(|(name, _)| name.strip_prefix(prefix).is_some_and(|rest| rest == value));
        match found {
            Some((_, count)) => *count = count.saturating_add(n),
            None => self.named.push((format!("{prefix}{value}").into(), n)),
        }
    }

    /// Counts `n` of the anomaly `name` (a name a message carries, from the registry).
    pub fn add_name(&mut self, name: &str, n: u64) {
        debug_assert!(
            crate::anomaly::is_registered(name),
            "anomaly `{name}` is not in ANOMALIES"
        );
        match Anomaly::from_name(name) {
            Some(key) if key.pattern_prefix().is_none() => self.fixed.add(key, n),
            _ => self.add_named(name, n),
        }
    }

    /// The count of `name`, `None` at 0 (as a map of the names reads).
    pub fn get(&self, name: &str) -> Option<&u64> {
        match Anomaly::from_name(name) {
            Some(key) if key.pattern_prefix().is_none() => self.fixed.get_nonzero(key),
            _ => self
                .named
                .iter()
                .find(|(known, n)| **known == *name && *n > 0)
                .map(|(_, n)| n),
        }
    }

    /// Whether nothing was counted.
    pub fn is_empty(&self) -> bool {
        self.fixed.total() == 0 && self.named.iter().all(|(_, n)| *n == 0)
    }

    /// Every name counted at least once, in name order.
    pub fn by_name(&self) -> BTreeMap<&str, u64> {
        let mut out: BTreeMap<&str, u64> = self.fixed.by_name().into_iter().collect();
        for (name, n) in &self.named {
            if *n > 0 {
                Merge::merge(out.entry(name).or_default(), n);
            }
        }
        out
    }
}

impl PartialEq for AnomalyCounts {
    fn eq(&self, other: &AnomalyCounts) -> bool {
        self.by_name() == other.by_name()
    }
}

impl Eq for AnomalyCounts {}

impl serde::Serialize for AnomalyCounts {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        self.by_name().serialize(s)
    }
}

impl Merge for AnomalyCounts {
    fn merge(&mut self, other: &AnomalyCounts) {
        self.fixed.merge(&other.fixed);
        for (name, n) in &other.named {
            self.add_named(name, *n);
        }
    }
}

impl AnomalyCounts {
    fn add_named(&mut self, name: &str, n: u64) {
        match self.named.iter_mut().find(|(known, _)| **known == *name) {
            Some((_, count)) => *count = count.saturating_add(n),
            None => self.named.push((name.into(), n)),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::anomaly::{SkipReason, UnusedBytes};

    counters! {
        /// Two stages' worth of counters, for the test.
        pub struct Example {
            pub packets: u64,
            pub skipped: Counts<SkipReason>,
            pub unused: Counts<UnusedBytes>,
            pub anomalies: AnomalyCounts,
        }
    }

    #[test]
    fn merge_adds_every_field() {
        let mut a = Example::default();
        a.skipped.add(SkipReason::NotTcp, 1);
        a.unused.add(UnusedBytes::AfterFin, 0);
        a.unused.add(UnusedBytes::AfterClose, 3);
        a.anomalies.add(Anomaly::FlowEvicted);
        a.anomalies.add_pattern(Anomaly::H2RstStream, "cancel", 1);
        let mut b = Example {
            packets: 4,
            ..Example::default()
        };
        b.skipped.add(SkipReason::Malformed, 1);
        b.skipped.add(SkipReason::NotTcp, 1);
        b.anomalies.add_name("h2.rst_stream_cancel", 1);
        b.anomalies.add_name("flow.evicted", 1);
        b.anomalies.add_name("h2.goaway_no_error", 1);
        a.merge(&b);
        assert_eq!(a.packets, 4);
        assert_eq!(a.skipped.get(SkipReason::NotTcp), 2);
        assert_eq!(a.skipped.total(), 3);
        assert_eq!(
            serde_json::to_string(&a.skipped).unwrap(),
            r#"{"malformed":1,"not_tcp":2}"#
        );
        assert_eq!(
            serde_json::to_string(&a.unused).unwrap(),
            r#"{"after_close":3}"#
        );
        let names: Vec<_> = a.anomalies.by_name().into_iter().collect();
        assert_eq!(
            names,
            [
                ("flow.evicted", 2),
                ("h2.goaway_no_error", 1),
                ("h2.rst_stream_cancel", 2)
            ]
        );
    }
}
