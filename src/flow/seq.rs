//! TCP sequence numbers (RFC 9293 §3.4): 32-bit values compared modulo 2^32.
//!
//! The reassembler does not work on raw sequence numbers. Each direction maps
//! them onto 64-bit stream offsets relative to a known point (the next byte
//! to deliver), so ordering is plain integer ordering and streams longer than
//! 4 GiB keep counting. Nothing here can panic or overflow.

/// A TCP sequence (or acknowledgement) number.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct SeqNum(pub u32);

impl SeqNum {
    /// The sequence number `n` bytes later (wraps at 2^32).
    pub fn wrapping_add(self, n: u32) -> SeqNum {
        SeqNum(self.0.wrapping_add(n))
    }

    /// Signed distance from `origin` to `self`, in (-2^31, 2^31]: positive when
    /// `self` is after `origin` in sequence space (RFC 9293 §3.4 comparisons).
    pub fn distance_from(self, origin: SeqNum) -> i64 {
        // Reinterpreting the wrapped difference as i32 is the modular comparison.
        i64::from(self.0.wrapping_sub(origin.0) as i32)
    }
}

/// Maps sequence numbers to stream offsets, anchored at a known (offset, seq) pair.
///
/// Invariant: `anchor_seq` is the sequence number of byte `anchor_offset`
/// (mod 2^32). Mapping is exact for numbers within ±2^31 of the anchor, which
/// covers the largest possible TCP window (2^30, RFC 7323 §2.3).
#[derive(Debug, Clone, Copy)]
pub struct SeqMap {
    /// Sequence number of stream offset 0.
    base: SeqNum,
}

impl SeqMap {
    /// Offset 0 of the stream has sequence number `base`.
    pub fn new(base: SeqNum) -> SeqMap {
        SeqMap { base }
    }

    /// Sequence number of stream offset 0.
    pub fn base(self) -> SeqNum {
        self.base
    }

    /// Sequence number of stream offset `offset` (mod 2^32).
    pub fn seq_of(self, offset: u64) -> SeqNum {
        // Truncation to the low 32 bits is the modular reduction we want.
        self.base.wrapping_add(offset as u32)
    }

    /// Stream offset of `seq`, resolved to the candidate nearest `anchor`
    /// (a known offset, usually the next byte to deliver). Negative when the
    /// number lies before the start of the stream.
    pub fn offset_of(self, seq: SeqNum, anchor: u64) -> i64 {
        let anchor_i = i64::try_from(anchor).unwrap_or(i64::MAX);
        anchor_i.saturating_add(seq.distance_from(self.seq_of(anchor)))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn distance_wraps() {
        assert_eq!(SeqNum(5).distance_from(SeqNum(u32::MAX - 4)), 10);
        assert_eq!(SeqNum(u32::MAX - 4).distance_from(SeqNum(5)), -10);
        assert_eq!(SeqNum(7).distance_from(SeqNum(7)), 0);
        assert_eq!(SeqNum(0x8000_0000).distance_from(SeqNum(0)), -(1 << 31));
    }

    #[test]
    fn offsets_across_the_wrap() {
        let map = SeqMap::new(SeqNum(u32::MAX - 9));
        assert_eq!(map.offset_of(SeqNum(u32::MAX - 9), 0), 0);
        assert_eq!(map.offset_of(SeqNum(0), 0), 10);
        assert_eq!(map.offset_of(SeqNum(100), 50), 110);
        assert_eq!(map.offset_of(SeqNum(u32::MAX - 19), 0), -10);
        assert_eq!(map.seq_of(10), SeqNum(0));
    }

    #[test]
    fn offsets_beyond_four_gib() {
        let map = SeqMap::new(SeqNum(1000));
        let far: u64 = (1 << 32) * 3 + 500;
        let seq = map.seq_of(far);
        assert_eq!(map.offset_of(seq, far - 100), i64::try_from(far).unwrap());
        assert_eq!(
            map.offset_of(seq.wrapping_add(20), far),
            i64::try_from(far + 20).unwrap()
        );
    }
}
