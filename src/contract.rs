//! The one way a value with a contract name is defined: every enum whose names reach an
//! output, a flag or a counter key (`outcome`, retry findings, skip reasons, input formats)
//! is declared with [`contract_names!`], so each has the same `name`, `ALL`, `from_name`;
//! [`Counts`] counts by such names.

use serde::Serialize;
use std::collections::BTreeMap;
use std::marker::PhantomData;

/// Defines an enum of contract names with `name()`, `ALL` (in the contract's order),
/// `index()` (position in `ALL`), `from_name()` (exact match), `Display` and serialization
/// as the name. Derives go in the attributes given (`#[derive(Default)]` with a `#[default]`
/// value).
macro_rules! contract_names {
    (
        $(#[$meta:meta])*
        pub enum $ty:ident {
            $($(#[$vmeta:meta])* $variant:ident => $name:literal,)+
        }
    ) => {
        $(#[$meta])*
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
        pub enum $ty {
            $($(#[$vmeta])* $variant,)+
        }

        impl $ty {
            /// Every value, in the contract's order.
            pub const ALL: [$ty; [$($name),+].len()] = [$($ty::$variant),+];

            /// The contract name.
            pub const fn name(self) -> &'static str {
                match self {
                    $($ty::$variant => $name,)+
                }
            }

            /// Position in `ALL`.
            pub const fn index(self) -> usize {
                self as usize
            }

            /// The value whose contract name is exactly `name`.
            pub fn from_name(name: &str) -> Option<$ty> {
                $ty::ALL.into_iter().find(|v| v.name() == name)
            }
        }

        impl std::fmt::Display for $ty {
            fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str(self.name())
            }
        }

        impl serde::Serialize for $ty {
            fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
                s.serialize_str(self.name())
            }
        }

        impl $crate::contract::Named for $ty {
            fn all() -> &'static [$ty] {
                &$ty::ALL
            }

            fn name(self) -> &'static str {
                $ty::name(self)
            }

            fn index(self) -> usize {
                $ty::index(self)
            }
        }

        /// Compares with a contract name (as read from a table or a fixture).
        impl PartialEq<&str> for $ty {
            fn eq(&self, other: &&str) -> bool {
                self.name() == *other
            }
        }
    };
}

pub(crate) use contract_names;

/// What [`contract_names!`] gives every enum, for code generic over them (counters keyed
/// by a contract name).
pub trait Named: Copy + 'static {
    /// Every value, in the contract's order.
    fn all() -> &'static [Self];
    /// The contract name.
    fn name(self) -> &'static str;
    /// Position in [`Named::all`].
    fn index(self) -> usize;
}

/// Counts keyed by the values of a contract enum, written as an object of the names with
/// a count above 0, in name order.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Counts<K> {
    n: Vec<u64>,
    key: PhantomData<K>,
}

impl<K: Named> Default for Counts<K> {
    fn default() -> Self {
        Counts {
            n: vec![0; K::all().len()],
            key: PhantomData,
        }
    }
}

impl<K: Named> Counts<K> {
    pub fn add(&mut self, key: K, n: u64) {
        if let Some(c) = self.n.get_mut(key.index()) {
            *c = c.saturating_add(n);
        }
    }

    pub fn get(&self, key: K) -> u64 {
        self.n.get(key.index()).copied().unwrap_or(0)
    }

    /// The count of `key` by reference, `None` at 0 (as a map of the names reads).
    pub fn get_nonzero(&self, key: K) -> Option<&u64> {
        self.n.get(key.index()).filter(|n| **n > 0)
    }

    pub fn total(&self) -> u64 {
        self.n.iter().fold(0u64, |t, n| t.saturating_add(*n))
    }

    /// The names counted at least once, in name order, with their counts.
    pub fn by_name(&self) -> BTreeMap<&'static str, u64> {
        K::all()
            .iter()
            .map(|k| (k.name(), self.get(*k)))
            .filter(|(_, n)| *n > 0)
            .collect()
    }

    /// Adds `other`'s counts to these.
    pub fn merge(&mut self, other: &Counts<K>) {
        for k in K::all() {
            self.add(*k, other.get(*k));
        }
    }
}

impl<K: Named> Serialize for Counts<K> {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        self.by_name().serialize(s)
    }
}
