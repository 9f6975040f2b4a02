//! Running a serde seed over a body: the fast reader ([`super::fastjson`]) first, serde_json
//! when it declines, and the visitor plumbing the digest and envelope seeds share.

use serde::de::{self, DeserializeSeed, Deserializer, MapAccess, SeqAccess, Visitor};
use serde_json::Value;
use std::borrow::Cow;
use std::fmt;

/// Runs `seed` over `bytes` and checks that only whitespace follows. A body that is valid
/// UTF-8 as a whole (nearly all) is validated once, with SIMD, and read as `str`: serde_json
/// then skips its per-string validation, a third of its time on long strings. Other bodies go
/// through the byte reader, so errors and verdicts are the same either way.
///
/// A `str` body is first read by [`super::fastjson`], which scans strings with SIMD; whenever
/// it succeeds serde_json would have visited alike, and on any error serde_json reads the body
/// again and decides.
pub(super) fn run_seed<'a, S: DeserializeSeed<'a> + Copy>(
    bytes: &'a [u8],
    seed: S,
) -> Result<S::Value, serde_json::Error> {
    if let Ok(text) = simdutf8::basic::from_utf8(bytes) {
        run_seed_str(text, seed)
    } else {
        serde_json_seed(serde_json::Deserializer::from_slice(bytes), seed)
    }
}

/// [`run_seed`] on text already known to be UTF-8.
pub(super) fn run_seed_str<'a, S: DeserializeSeed<'a> + Copy>(
    text: &'a str,
    seed: S,
) -> Result<S::Value, serde_json::Error> {
    if let Ok(out) = super::fastjson::from_str_seed(text, seed) {
        return Ok(out);
    }
    serde_json_seed(serde_json::Deserializer::from_str(text), seed)
}

/// `seed` read by serde_json, then only whitespace allowed.
pub(super) fn serde_json_seed<'a, R: serde_json::de::Read<'a>, S: DeserializeSeed<'a>>(
    mut de: serde_json::Deserializer<R>,
    seed: S,
) -> Result<S::Value, serde_json::Error> {
    let out = seed.deserialize(&mut de)?;
    de.end()?;
    Ok(out)
}

/// An object key, borrowed from the input when it has no escapes.
pub(super) struct Key<'de>(pub(super) Cow<'de, str>);

impl<'de> de::Deserialize<'de> for Key<'de> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct KeyVisitor;
        impl<'de> Visitor<'de> for KeyVisitor {
            type Value = Key<'de>;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("an object key")
            }
            fn visit_borrowed_str<E: de::Error>(self, v: &'de str) -> Result<Key<'de>, E> {
                Ok(Key(Cow::Borrowed(v)))
            }
            fn visit_str<E: de::Error>(self, v: &str) -> Result<Key<'de>, E> {
                Ok(Key(Cow::Owned(v.to_string())))
            }
            fn visit_string<E: de::Error>(self, v: String) -> Result<Key<'de>, E> {
                Ok(Key(Cow::Owned(v)))
            }
        }
        d.deserialize_str(KeyVisitor)
    }
}

/// An array built as a `Value` (for seeds that only treat objects specially).
pub(super) fn array_of_values<'de, A: SeqAccess<'de>>(mut seq: A) -> Result<Value, A::Error> {
    let mut items = Vec::new();
    while let Some(v) = seq.next_element::<Value>()? {
        items.push(v);
    }
    Ok(Value::Array(items))
}

pub(super) fn skip_seq<'de, A: SeqAccess<'de>>(mut seq: A) -> Result<(), A::Error> {
    while seq.next_element::<de::IgnoredAny>()?.is_some() {}
    Ok(())
}

pub(super) fn skip_map<'de, A: MapAccess<'de>>(mut map: A) -> Result<(), A::Error> {
    while map
        .next_entry::<de::IgnoredAny, de::IgnoredAny>()?
        .is_some()
    {}
    Ok(())
}

/// A seed that is its own visitor, for any JSON value.
macro_rules! seed_via_visitor {
    ($seed:ty, $out:ty) => {
        impl<'de> DeserializeSeed<'de> for $seed {
            type Value = $out;
            fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<$out, D::Error> {
                d.deserialize_any(self)
            }
        }
    };
}

/// Visits of the scalar kinds: each builds its `Value` and hands it to `$done`.
macro_rules! scalar_values {
    ($done:expr) => {
        fn visit_unit<E: de::Error>(self) -> Result<Self::Value, E> {
            Ok($done(Value::Null))
        }
        fn visit_bool<E: de::Error>(self, v: bool) -> Result<Self::Value, E> {
            Ok($done(Value::Bool(v)))
        }
        fn visit_u64<E: de::Error>(self, v: u64) -> Result<Self::Value, E> {
            Ok($done(Value::from(v)))
        }
        fn visit_i64<E: de::Error>(self, v: i64) -> Result<Self::Value, E> {
            Ok($done(Value::from(v)))
        }
        fn visit_f64<E: de::Error>(self, v: f64) -> Result<Self::Value, E> {
            Ok($done(Value::from(v)))
        }
        fn visit_str<E: de::Error>(self, v: &str) -> Result<Self::Value, E> {
            Ok($done(Value::String(v.to_string())))
        }
        fn visit_string<E: de::Error>(self, v: String) -> Result<Self::Value, E> {
            Ok($done(Value::String(v)))
        }
    };
}

/// Every kind but objects built as a `Value` and handed to `$done`.
macro_rules! plain_values {
    ($done:expr) => {
        scalar_values!($done);
        fn visit_seq<A: SeqAccess<'de>>(self, seq: A) -> Result<Self::Value, A::Error> {
            Ok($done(array_of_values(seq)?))
        }
    };
}

/// Visits of the scalar kinds that only answer `$v`.
macro_rules! constant_scalars {
    ($v:expr) => {
        fn visit_unit<E: de::Error>(self) -> Result<Self::Value, E> {
            Ok($v)
        }
        fn visit_bool<E: de::Error>(self, _: bool) -> Result<Self::Value, E> {
            Ok($v)
        }
        fn visit_u64<E: de::Error>(self, _: u64) -> Result<Self::Value, E> {
            Ok($v)
        }
        fn visit_i64<E: de::Error>(self, _: i64) -> Result<Self::Value, E> {
            Ok($v)
        }
        fn visit_f64<E: de::Error>(self, _: f64) -> Result<Self::Value, E> {
            Ok($v)
        }
        fn visit_str<E: de::Error>(self, _: &str) -> Result<Self::Value, E> {
            Ok($v)
        }
    };
}

pub(super) use {constant_scalars, plain_values, scalar_values, seed_via_visitor};
