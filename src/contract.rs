//! The one way a value with a contract name is defined: every enum whose names reach an
//! output, a flag or a counter key (`outcome`, retry findings, skip reasons, input formats)
//! is declared with [`contract_names!`], so each has the same `name`, `ALL`, `from_name`.

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

        /// Compares with a contract name (as read from a table or a fixture).
        impl PartialEq<&str> for $ty {
            fn eq(&self, other: &&str) -> bool {
                self.name() == *other
            }
        }
    };
}

pub(crate) use contract_names;
