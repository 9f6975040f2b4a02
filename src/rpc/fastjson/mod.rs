//! A fast serde `Deserializer` for JSON text already known to be UTF-8, tried before
//! serde_json's. Bodies are mostly strings; this finds a string's end 64 bytes at a time with
//! vectorized code or memchr (see [`find_special`]) where serde_json steps 8 bytes at a time,
//! and has less overhead per token.
//!
//! Contract: whenever [`from_str_seed`] returns `Ok`, `serde_json::Deserializer::from_str`
//! would have made the same visitor calls and returned `Ok` as well. Where this code is
//! unsure (numbers other than plain integers are handed to serde_json itself; nesting deeper
//! than [`MAX_DEPTH`]; `deserialize_*` methods our seeds do not use) it returns an error, and
//! the caller runs serde_json, whose verdicts and messages stand.

use serde::de::{self, DeserializeSeed, Visitor};
use serde_json::Error;

type Result<T> = std::result::Result<T, Error>;

/// Nesting of visited arrays and objects (serde_json's limit is 128).
const MAX_DEPTH: u32 = 100;
/// Nesting of skipped values: one bit per level of a `u128`.
const MAX_SKIP_DEPTH: u32 = 128;

/// Runs `seed` over `text` and checks that only whitespace follows.
pub(crate) fn from_str_seed<'de, S: DeserializeSeed<'de>>(
    text: &'de str,
    seed: S,
) -> Result<S::Value> {
    #[cfg(test)]
    if test_hooks::disabled() {
        return Err(unsure());
    }
    let mut de = Deserializer {
        text,
        bytes: text.as_bytes(),
        pos: 0,
        depth: 0,
        failed: false,
        scratch: String::new(),
    };
    let out = seed.deserialize(&mut de);
    // A visitor that swallowed one of our errors may have gone on where serde_json would not.
    if de.failed {
        return Err(unsure());
    }
    let out = out?;
    if de.skip_ws().is_some() {
        return Err(unsure());
    }
    #[cfg(test)]
    test_hooks::hit();
    Ok(out)
}

/// The error for "let serde_json decide"; its text is never shown.
#[cold]
fn unsure() -> Error {
    de::Error::custom("fastjson: not sure, serde_json decides")
}

/// Number methods: serde_json's `deserialize_number` is its `deserialize_any` on a number.
macro_rules! numbers {
    ($($method:ident)*) => {
        $(fn $method<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value> {
            self.any_if(b"-0123456789", visitor)
        })*
    };
}

/// Key methods left to serde_json.
macro_rules! key_unsupported {
    ($($method:ident)*) => {
        $(fn $method<V: Visitor<'de>>(self, _visitor: V) -> Result<V::Value> {
            self.de.unsupported()
        })*
    };
}

struct Deserializer<'de> {
    text: &'de str,
    bytes: &'de [u8],
    pos: usize,
    /// Arrays and objects open through `deserialize_*` (not skipped ones).
    depth: u32,
    /// Set by every error that leaves this deserializer.
    failed: bool,
    /// Unescaped contents of the last string with escapes.
    scratch: String,
}

impl<'de> Deserializer<'de> {
    /// The next byte that is not JSON whitespace (serde_json's four), not consumed.
    #[inline]
    fn skip_ws(&mut self) -> Option<u8> {
        while let Some(&b) = self.bytes.get(self.pos) {
            if !matches!(b, b' ' | b'\n' | b'\t' | b'\r') {
                return Some(b);
            }
            self.pos += 1;
        }
        None
    }

    fn track<T>(&mut self, r: Result<T>) -> Result<T> {
        if r.is_err() {
            self.failed = true;
        }
        r
    }

    fn unsupported<T>(&mut self) -> Result<T> {
        self.failed = true;
        Err(unsure())
    }

    fn literal(&mut self, word: &[u8]) -> Result<()> {
        let end = self.pos.saturating_add(word.len());
        if self.bytes.get(self.pos..end) == Some(word) {
            self.pos = end;
            Ok(())
        } else {
            Err(unsure())
        }
    }

    /// serde_json's `deserialize_any`.
    fn any<V: Visitor<'de>>(&mut self, visitor: V) -> Result<V::Value> {
        match self.skip_ws() {
            Some(b'"') => {
                self.pos += 1;
                match self.string()? {
                    Some(s) => visitor.visit_borrowed_str(s),
                    None => visitor.visit_str(&self.scratch),
                }
            }
            Some(b'{') => {
                self.enter()?;
                let v = visitor.visit_map(Map {
                    de: self,
                    first: true,
                })?;
                self.leave(b'}')?;
                Ok(v)
            }
            Some(b'[') => {
                self.enter()?;
                let v = visitor.visit_seq(Seq {
                    de: self,
                    first: true,
                })?;
                self.leave(b']')?;
                Ok(v)
            }
            Some(b'-' | b'0'..=b'9') => self.number(visitor),
            Some(b'n') => {
                self.literal(b"null")?;
                visitor.visit_unit()
            }
            Some(b't') => {
                self.literal(b"true")?;
                visitor.visit_bool(true)
            }
            Some(b'f') => {
                self.literal(b"false")?;
                visitor.visit_bool(false)
            }
            _ => Err(unsure()),
        }
    }

    /// `deserialize_any` when the next byte is one of `first`, else unsure (serde_json would
    /// report a type error).
    fn any_if<V: Visitor<'de>>(&mut self, first: &[u8], visitor: V) -> Result<V::Value> {
        let r = match self.skip_ws() {
            Some(b) if first.contains(&b) => self.any(visitor),
            _ => Err(unsure()),
        };
        self.track(r)
    }

    /// Past an opening bracket or brace.
    fn enter(&mut self) -> Result<()> {
        if self.depth >= MAX_DEPTH {
            return Err(unsure());
        }
        self.depth += 1;
        self.pos += 1;
        Ok(())
    }

    /// Past the closing bracket or brace once the visitor is done (no trailing comma).
    fn leave(&mut self, close: u8) -> Result<()> {
        self.depth = self.depth.saturating_sub(1);
        if self.skip_ws() == Some(close) {
            self.pos += 1;
            Ok(())
        } else {
            Err(unsure())
        }
    }

    /// A string after its opening quote: borrowed when it has no escapes, else `None` with the
    /// unescaped text in `scratch`.
    fn string(&mut self) -> Result<Option<&'de str>> {
        let text = self.text;
        let start = self.pos;
        let mut at = find_special(self.bytes, start);
        if self.bytes.get(at) == Some(&b'"') {
            self.pos = at + 1;
            return text.get(start..at).map(Some).ok_or_else(unsure);
        }
        self.scratch.clear();
        let mut from = start;
        loop {
            self.scratch
                .push_str(text.get(from..at).ok_or_else(unsure)?);
            match self.bytes.get(at) {
                Some(b'"') => {
                    self.pos = at + 1;
                    return Ok(None);
                }
                Some(b'\\') => from = self.unescape(at + 1)?,
                // A control byte or the end of the input.
                _ => return Err(unsure()),
            }
            at = find_special(self.bytes, from);
        }
    }

    /// One escape starting at `i` (after the backslash) onto `scratch`; where it ends. As
    /// serde_json's `parse_escape` with validation: surrogates must come in pairs.
    fn unescape(&mut self, i: usize) -> Result<usize> {
        let c = match self.bytes.get(i) {
            Some(b'"') => '"',
            Some(b'\\') => '\\',
            Some(b'/') => '/',
            Some(b'b') => '\u{8}',
            Some(b'f') => '\u{c}',
            Some(b'n') => '\n',
            Some(b'r') => '\r',
            Some(b't') => '\t',
            Some(b'u') => {
                let n = hex4(self.bytes, i + 1)?;
                let (code, end) = match n {
                    0xD800..=0xDBFF => {
                        if self.bytes.get(i + 5..i + 7) != Some(b"\\u") {
                            return Err(unsure());
                        }
                        let low = hex4(self.bytes, i + 7)?;
                        if !(0xDC00..=0xDFFF).contains(&low) {
                            return Err(unsure());
                        }
                        (0x1_0000 + ((n - 0xD800) << 10 | (low - 0xDC00)), i + 11)
                    }
                    0xDC00..=0xDFFF => return Err(unsure()),
                    _ => (n, i + 5),
                };
                self.scratch.push(char::from_u32(code).ok_or_else(unsure)?);
                return Ok(end);
            }
            _ => return Err(unsure()),
        };
        self.scratch.push(c);
        Ok(i + 1)
    }

    /// Plain integers are read here; any other number text is handed to serde_json, so floats,
    /// `-0`, integers beyond 64 bits and every malformed number are exactly its own.
    fn number<V: Visitor<'de>>(&mut self, visitor: V) -> Result<V::Value> {
        let start = self.pos;
        let negative = self.bytes.get(start) == Some(&b'-');
        let digits = start + usize::from(negative);
        let mut i = digits;
        let mut n: Option<u64> = Some(0);
        while let Some(&b) = self.bytes.get(i) {
            if !b.is_ascii_digit() {
                break;
            }
            n = n
                .and_then(|n| n.checked_mul(10))
                .and_then(|n| n.checked_add(u64::from(b - b'0')));
            i += 1;
        }
        let leading_zero = i - digits > 1 && self.bytes.get(digits) == Some(&b'0');
        let plain =
            i > digits && !leading_zero && !matches!(self.bytes.get(i), Some(b'.' | b'e' | b'E'));
        if plain && let Some(n) = n {
            if !negative {
                self.pos = i;
                return visitor.visit_u64(n);
            }
            // serde_json makes `-0` a float; `0 - n` fits down to i64::MIN.
            if let Some(v) = 0i64.checked_sub_unsigned(n).filter(|_| n != 0) {
                self.pos = i;
                return visitor.visit_i64(v);
            }
        }
        let mut end = i;
        while matches!(
            self.bytes.get(end),
            Some(b'0'..=b'9' | b'.' | b'e' | b'E' | b'+' | b'-')
        ) {
            end += 1;
        }
        let span = self.text.get(start..end).ok_or_else(unsure)?;
        // serde_json stops a number at the first byte that cannot continue it, end of input
        // alike, so reading the whole span as one number is what it would do in place.
        let mut sub = serde_json::Deserializer::from_str(span);
        let v = de::Deserializer::deserialize_any(&mut sub, visitor)?;
        sub.end()?;
        self.pos = end;
        Ok(v)
    }

    /// serde_json's `ignore_value`: grammar checked, nothing built, no recursion limit (ours
    /// is [`MAX_SKIP_DEPTH`]).
    fn skip_value(&mut self) -> Result<()> {
        // Bit d is set when the container at depth d is an object.
        let mut objects: u128 = 0;
        let mut depth: u32 = 0;
        loop {
            match self.skip_ws() {
                Some(b'"') => {
                    self.pos += 1;
                    self.skip_string()?;
                }
                Some(b'-' | b'0'..=b'9') => self.skip_number()?,
                Some(b'n') => self.literal(b"null")?,
                Some(b't') => self.literal(b"true")?,
                Some(b'f') => self.literal(b"false")?,
                Some(open @ (b'[' | b'{')) => {
                    if depth >= MAX_SKIP_DEPTH {
                        return Err(unsure());
                    }
                    self.pos += 1;
                    let object = open == b'{';
                    objects = (objects & !(1 << depth)) | (u128::from(object) << depth);
                    depth += 1;
                    if self.skip_ws() == Some(open + 2) {
                        // `]` and `}` are two after `[` and `{`: an empty container.
                        self.pos += 1;
                        depth -= 1;
                    } else {
                        if object {
                            self.skip_key()?;
                        }
                        continue;
                    }
                }
                _ => return Err(unsure()),
            }
            // After a value: close the containers it ends, or go on to the next member.
            loop {
                let Some(top) = depth.checked_sub(1) else {
                    return Ok(());
                };
                let object = (objects >> top) & 1 == 1;
                match self.skip_ws() {
                    Some(b',') => {
                        self.pos += 1;
                        if object {
                            self.skip_key()?;
                        }
                        break;
                    }
                    Some(b']') if !object => {
                        self.pos += 1;
                        depth = top;
                    }
                    Some(b'}') if object => {
                        self.pos += 1;
                        depth = top;
                    }
                    _ => return Err(unsure()),
                }
            }
        }
    }

    /// A skipped object's key and the colon after it.
    fn skip_key(&mut self) -> Result<()> {
        if self.skip_ws() != Some(b'"') {
            return Err(unsure());
        }
        self.pos += 1;
        self.skip_string()?;
        if self.skip_ws() != Some(b':') {
            return Err(unsure());
        }
        self.pos += 1;
        Ok(())
    }

    /// serde_json's `ignore_str`: escapes' syntax checked, not what `\u` escapes encode.
    fn skip_string(&mut self) -> Result<()> {
        let mut at = find_special(self.bytes, self.pos);
        loop {
            match self.bytes.get(at) {
                Some(b'"') => {
                    self.pos = at + 1;
                    return Ok(());
                }
                Some(b'\\') => match self.bytes.get(at + 1) {
                    Some(b'"' | b'\\' | b'/' | b'b' | b'f' | b'n' | b'r' | b't') => at += 2,
                    Some(b'u') => {
                        hex4(self.bytes, at + 2)?;
                        at += 6;
                    }
                    _ => return Err(unsure()),
                },
                _ => return Err(unsure()),
            }
            at = find_special(self.bytes, at);
        }
    }

    /// serde_json's `ignore_integer` and what follows: number grammar, not range.
    fn skip_number(&mut self) -> Result<()> {
        let b = self.bytes;
        let mut i = self.pos;
        if b.get(i) == Some(&b'-') {
            i += 1;
        }
        match b.get(i) {
            Some(b'0') => i += 1,
            Some(b'1'..=b'9') => i = skip_digits(b, i + 1),
            _ => return Err(unsure()),
        }
        if b.get(i).is_some_and(u8::is_ascii_digit) {
            // A leading zero.
            return Err(unsure());
        }
        if b.get(i) == Some(&b'.') {
            let end = skip_digits(b, i + 1);
            if end == i + 1 {
                return Err(unsure());
            }
            i = end;
        }
        if matches!(b.get(i), Some(b'e' | b'E')) {
            i += 1;
            if matches!(b.get(i), Some(b'+' | b'-')) {
                i += 1;
            }
            let end = skip_digits(b, i);
            if end == i {
                return Err(unsure());
            }
            i = end;
        }
        self.pos = i;
        Ok(())
    }
}

fn skip_digits(b: &[u8], mut i: usize) -> usize {
    while b.get(i).is_some_and(u8::is_ascii_digit) {
        i += 1;
    }
    i
}

/// Four hex digits at `i`, as serde_json's `decode_hex_escape`.
fn hex4(bytes: &[u8], i: usize) -> Result<u32> {
    let digits = bytes.get(i..i + 4).ok_or_else(unsure)?;
    digits.iter().try_fold(0u32, |acc, &d| {
        char::from(d)
            .to_digit(16)
            .map(|v| acc << 4 | v)
            .ok_or_else(unsure)
    })
}

/// Index of the first `"`, `\` or control byte (< 0x20) at or after `from`, or the length.
/// Most strings (keys, ids, short values) end within the first two words, checked inline.
#[inline(always)]
fn find_special(bytes: &[u8], from: usize) -> usize {
    let rest = bytes.get(from..).unwrap_or_default();
    if let ([first, second, ..], _) = rest.as_chunks::<8>() {
        let found = special_bytes(u64::from_le_bytes(*first));
        if found != 0 {
            return from + (found.trailing_zeros() / 8) as usize;
        }
        let found = special_bytes(u64::from_le_bytes(*second));
        if found != 0 {
            return from + 8 + (found.trailing_zeros() / 8) as usize;
        }
        return from + 16 + find_special_long(rest.get(16..).unwrap_or_default());
    }
    from + find_special_short(rest)
}

/// [`find_special`] past the first 16 bytes. Text with an escape every line or so stops in
/// the next 64-byte block, tested branch-free; only longer runs pay for a memchr call (which
/// loses to the block on text with an escape every 80 bytes, and wins on long runs).
#[inline(never)]
fn find_special_long(rest: &[u8]) -> usize {
    let (blocks, _) = rest.as_chunks::<64>();
    let Some(block) = blocks.first() else {
        return find_special_short(rest);
    };
    if has_special(block) {
        let (words, _) = block.as_chunks::<8>();
        return first_in_words(words).unwrap_or(64);
    }
    let long = rest.get(64..).unwrap_or_default();
    let quote = memchr::memchr2(b'"', b'\\', long).unwrap_or(long.len());
    let span = long.get(..quote).unwrap_or_default();
    64 + first_control(span).unwrap_or(quote)
}

/// [`find_special`] on the last bytes of the input.
fn find_special_short(rest: &[u8]) -> usize {
    let (words, bytes) = rest.as_chunks::<8>();
    if let Some(i) = first_in_words(words) {
        return i;
    }
    let seen = words.len() * 8;
    seen + bytes
        .iter()
        .position(|&b| is_special(b))
        .unwrap_or(bytes.len())
}

/// Index of the first byte below 0x20: 64-byte blocks with a branch-free fold the compiler
/// vectorizes, then the rest byte by byte.
fn first_control(s: &[u8]) -> Option<usize> {
    let (blocks, _) = s.as_chunks::<64>();
    let mut seen = 0;
    for block in blocks {
        if block.iter().fold(false, |acc, &b| acc | (b < 0x20)) {
            break;
        }
        seen += 64;
    }
    let tail = s.get(seen..).unwrap_or_default();
    tail.iter().position(|&b| b < 0x20).map(|i| seen + i)
}

fn is_special(b: u8) -> bool {
    b == b'"' || b == b'\\' || b < 0x20
}

/// Offset of the first special byte in `words`.
#[inline]
fn first_in_words(words: &[[u8; 8]]) -> Option<usize> {
    words.iter().enumerate().find_map(|(k, word)| {
        let found = special_bytes(u64::from_le_bytes(*word));
        (found != 0).then(|| k * 8 + (found.trailing_zeros() / 8) as usize)
    })
}

const ONES: u64 = u64::MAX / 255;

/// High bit set in each byte of `w` that is `"`, `\` or a control byte, as serde_json's own
/// scan (Mycroft's trick): only bytes after a real match can be false positives, so the lowest
/// set bit is exact.
#[inline]
fn special_bytes(w: u64) -> u64 {
    let control = w.wrapping_sub(ONES * 0x20) & !w;
    let quote = w ^ (ONES * u64::from(b'"'));
    let quote = quote.wrapping_sub(ONES) & !quote;
    let backslash = w ^ (ONES * u64::from(b'\\'));
    let backslash = backslash.wrapping_sub(ONES) & !backslash;
    (control | quote | backslash) & (ONES << 7)
}

/// Whether a 64-byte block holds a special byte. A byte is special exactly when
/// `min(b ^ '"', b ^ '\\', b -| 0x1f)` is zero; the minimum over the four 16-byte lanes
/// compiles to SSE2 min/xor/subtract, then one zero-byte test on the 16 lane minima.
#[inline]
fn has_special(block: &[u8; 64]) -> bool {
    fn key(b: u8) -> u8 {
        (b ^ b'"').min(b ^ b'\\').min(b.saturating_sub(0x1f))
    }
    let (lanes, _) = block.as_chunks::<16>();
    let [a, b, c, d] = lanes else {
        return true;
    };
    let mut min = [0u8; 16];
    for ((((m, &a), &b), &c), &d) in min.iter_mut().zip(a).zip(b).zip(c).zip(d) {
        *m = key(a).min(key(b)).min(key(c)).min(key(d));
    }
    let x = u128::from_le_bytes(min);
    let ones = u128::MAX / 255;
    x.wrapping_sub(ones) & !x & (ones << 7) != 0
}

impl<'de> de::Deserializer<'de> for &mut Deserializer<'de> {
    type Error = Error;

    fn deserialize_any<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value> {
        let r = self.any(visitor);
        self.track(r)
    }

    fn deserialize_ignored_any<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value> {
        let r = self.skip_value().and_then(|()| visitor.visit_unit());
        self.track(r)
    }

    fn deserialize_option<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value> {
        let r = if self.skip_ws() == Some(b'n') {
            self.literal(b"null").and_then(|()| visitor.visit_none())
        } else {
            visitor.visit_some(&mut *self)
        };
        self.track(r)
    }

    fn deserialize_newtype_struct<V: Visitor<'de>>(
        self,
        name: &'static str,
        visitor: V,
    ) -> Result<V::Value> {
        // serde_json treats its own private names (RawValue) specially.
        if name.starts_with("$serde_json") {
            return self.unsupported();
        }
        let r = visitor.visit_newtype_struct(&mut *self);
        self.track(r)
    }

    fn deserialize_str<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value> {
        self.any_if(b"\"", visitor)
    }
    fn deserialize_string<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value> {
        self.any_if(b"\"", visitor)
    }
    fn deserialize_char<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value> {
        self.any_if(b"\"", visitor)
    }
    fn deserialize_identifier<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value> {
        self.any_if(b"\"", visitor)
    }
    fn deserialize_bool<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value> {
        self.any_if(b"tf", visitor)
    }
    fn deserialize_unit<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value> {
        self.any_if(b"n", visitor)
    }
    fn deserialize_unit_struct<V: Visitor<'de>>(
        self,
        _name: &'static str,
        visitor: V,
    ) -> Result<V::Value> {
        self.any_if(b"n", visitor)
    }
    fn deserialize_seq<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value> {
        self.any_if(b"[", visitor)
    }
    fn deserialize_tuple<V: Visitor<'de>>(self, _len: usize, visitor: V) -> Result<V::Value> {
        self.any_if(b"[", visitor)
    }
    fn deserialize_tuple_struct<V: Visitor<'de>>(
        self,
        _name: &'static str,
        _len: usize,
        visitor: V,
    ) -> Result<V::Value> {
        self.any_if(b"[", visitor)
    }
    fn deserialize_map<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value> {
        self.any_if(b"{", visitor)
    }
    fn deserialize_struct<V: Visitor<'de>>(
        self,
        _name: &'static str,
        _fields: &'static [&'static str],
        visitor: V,
    ) -> Result<V::Value> {
        self.any_if(b"[{", visitor)
    }

    fn deserialize_enum<V: Visitor<'de>>(
        self,
        _name: &'static str,
        _variants: &'static [&'static str],
        _visitor: V,
    ) -> Result<V::Value> {
        self.unsupported()
    }
    fn deserialize_bytes<V: Visitor<'de>>(self, _visitor: V) -> Result<V::Value> {
        self.unsupported()
    }
    fn deserialize_byte_buf<V: Visitor<'de>>(self, _visitor: V) -> Result<V::Value> {
        self.unsupported()
    }
    fn deserialize_i128<V: Visitor<'de>>(self, _visitor: V) -> Result<V::Value> {
        self.unsupported()
    }
    fn deserialize_u128<V: Visitor<'de>>(self, _visitor: V) -> Result<V::Value> {
        self.unsupported()
    }

    numbers! {
        deserialize_i8 deserialize_i16 deserialize_i32 deserialize_i64
        deserialize_u8 deserialize_u16 deserialize_u32 deserialize_u64
        deserialize_f32 deserialize_f64
    }
}

struct Seq<'a, 'de> {
    de: &'a mut Deserializer<'de>,
    first: bool,
}

impl<'de> de::SeqAccess<'de> for Seq<'_, 'de> {
    type Error = Error;

    fn next_element_seed<T: DeserializeSeed<'de>>(&mut self, seed: T) -> Result<Option<T::Value>> {
        let r = self.next(seed);
        self.de.track(r)
    }
}

impl<'de> Seq<'_, 'de> {
    /// serde_json's `has_next_element`, then the element.
    fn next<T: DeserializeSeed<'de>>(&mut self, seed: T) -> Result<Option<T::Value>> {
        match self.de.skip_ws() {
            Some(b']') => return Ok(None),
            Some(b',') if !self.first => {
                self.de.pos += 1;
                if matches!(self.de.skip_ws(), Some(b']') | None) {
                    return Err(unsure());
                }
            }
            Some(_) if self.first => self.first = false,
            _ => return Err(unsure()),
        }
        seed.deserialize(&mut *self.de).map(Some)
    }
}

struct Map<'a, 'de> {
    de: &'a mut Deserializer<'de>,
    first: bool,
}

impl<'de> de::MapAccess<'de> for Map<'_, 'de> {
    type Error = Error;

    fn next_key_seed<K: DeserializeSeed<'de>>(&mut self, seed: K) -> Result<Option<K::Value>> {
        let r = self.next_key(seed);
        self.de.track(r)
    }

    fn next_value_seed<V: DeserializeSeed<'de>>(&mut self, seed: V) -> Result<V::Value> {
        let r = if self.de.skip_ws() == Some(b':') {
            self.de.pos += 1;
            seed.deserialize(&mut *self.de)
        } else {
            Err(unsure())
        };
        self.de.track(r)
    }
}

impl<'de> Map<'_, 'de> {
    /// serde_json's `has_next_key`, then the key.
    fn next_key<K: DeserializeSeed<'de>>(&mut self, seed: K) -> Result<Option<K::Value>> {
        match self.de.skip_ws() {
            Some(b'}') => return Ok(None),
            Some(b'"') if self.first => self.first = false,
            Some(b',') if !self.first => {
                self.de.pos += 1;
                if self.de.skip_ws() != Some(b'"') {
                    return Err(unsure());
                }
            }
            _ => return Err(unsure()),
        }
        self.de.pos += 1;
        seed.deserialize(MapKey { de: &mut *self.de }).map(Some)
    }
}

/// A key, past its opening quote. As serde_json's `MapKey`: the string-like methods read the
/// string; the rest (numeric and bool keys and such) are left to serde_json.
struct MapKey<'a, 'de> {
    de: &'a mut Deserializer<'de>,
}

impl<'de> de::Deserializer<'de> for MapKey<'_, 'de> {
    type Error = Error;

    fn deserialize_any<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value> {
        let r = match self.de.string() {
            Ok(Some(s)) => visitor.visit_borrowed_str(s),
            Ok(None) => visitor.visit_str(&self.de.scratch),
            Err(e) => Err(e),
        };
        self.de.track(r)
    }

    serde::forward_to_deserialize_any! {
        char str string unit unit_struct seq tuple tuple_struct map struct
        identifier ignored_any
    }

    key_unsupported! {
        deserialize_bool deserialize_i8 deserialize_i16 deserialize_i32 deserialize_i64
        deserialize_i128 deserialize_u8 deserialize_u16 deserialize_u32 deserialize_u64
        deserialize_u128 deserialize_f32 deserialize_f64 deserialize_option
        deserialize_bytes deserialize_byte_buf
    }

    fn deserialize_newtype_struct<V: Visitor<'de>>(
        self,
        _name: &'static str,
        _visitor: V,
    ) -> Result<V::Value> {
        self.de.unsupported()
    }

    fn deserialize_enum<V: Visitor<'de>>(
        self,
        _name: &'static str,
        _variants: &'static [&'static str],
        _visitor: V,
    ) -> Result<V::Value> {
        self.de.unsupported()
    }
}

#[cfg(test)]
pub(crate) mod test_hooks {
    //! Per-thread switches so tests can force the serde_json path and see the fast one taken.
    use std::cell::Cell;

    thread_local! {
        static DISABLED: Cell<bool> = const { Cell::new(false) };
        static HITS: Cell<u64> = const { Cell::new(0) };
    }

    pub(crate) fn disabled() -> bool {
        DISABLED.with(Cell::get)
    }

    pub(crate) fn hit() {
        HITS.with(|h| h.set(h.get() + 1));
    }

    /// How many times the fast path returned `Ok` on this thread.
    pub(crate) fn hits() -> u64 {
        HITS.with(Cell::get)
    }

    /// Runs `f` with the fast path off: serde_json alone.
    pub(crate) fn serde_json_only<T>(f: impl FnOnce() -> T) -> T {
        struct Restore(bool);
        impl Drop for Restore {
            fn drop(&mut self) {
                DISABLED.with(|d| d.set(self.0));
            }
        }
        let _restore = Restore(DISABLED.with(|d| d.replace(true)));
        f()
    }
}

#[cfg(test)]
mod tests;
