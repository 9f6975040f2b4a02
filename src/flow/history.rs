//! The last bytes delivered on one direction, kept to compare retransmissions
//! against (RFC 9293 leaves overlap policy to the receiver; we keep the first
//! copy and flag differences, like Zeek with `tcp_max_old_segments`).
//!
//! One linear buffer, trimmed from the front only when it holds twice
//! [`RETAINED_DELIVERED_BYTES`], so the per-packet cost is one `memcpy` and
//! the memmove is amortised; no allocation once warm. Piece boundaries are
//! kept so a retransmission spanning several earlier segments counts one
//! mismatch per segment it contradicts, as Zeek does.

use std::collections::VecDeque;

/// Bytes of already-delivered data kept per direction (between this and
/// twice this are held). Quantum-Insert style injections are caught this way.
pub const RETAINED_DELIVERED_BYTES: usize = 4096;

/// Most piece boundaries remembered; past it the oldest two pieces merge.
const MAX_HISTORY_PIECES: usize = 64;

/// Invariants: `bytes` holds stream offsets `[start, start + bytes.len())`;
/// `pieces` are increasing offsets within that range, the first `== start`
/// whenever `bytes` is non-empty.
#[derive(Debug, Default)]
pub(crate) struct History {
    start: u64,
    bytes: Vec<u8>,
    pieces: VecDeque<u64>,
}

impl History {
    fn end(&self) -> u64 {
        self.start.saturating_add(self.bytes.len() as u64)
    }

    /// Remember `data`, delivered at stream offset `offset`.
    pub fn push(&mut self, offset: u64, data: &[u8]) {
        if data.is_empty() {
            return;
        }
        if offset != self.end() || data.len() >= RETAINED_DELIVERED_BYTES {
            // After a gap (or for a huge piece) the old bytes are not adjacent: restart.
            let skip = data.len().saturating_sub(RETAINED_DELIVERED_BYTES);
            self.bytes.clear();
            self.pieces.clear();
            self.start = offset.saturating_add(skip as u64);
            self.bytes
                .extend_from_slice(data.get(skip..).unwrap_or(&[]));
            self.pieces.push_back(self.start);
            return;
        }
        let total = self.bytes.len().saturating_add(data.len());
        if total > 2 * RETAINED_DELIVERED_BYTES {
            let drop = (total - RETAINED_DELIVERED_BYTES).min(self.bytes.len());
            self.bytes.drain(..drop);
            self.start = self.start.saturating_add(drop as u64);
            while self.pieces.get(1).is_some_and(|&p| p <= self.start) {
                self.pieces.pop_front();
            }
            if let Some(first) = self.pieces.front_mut() {
                *first = (*first).max(self.start);
            }
        }
        if self.bytes.is_empty() {
            self.start = offset;
            self.pieces.clear();
        }
        self.bytes.extend_from_slice(data);
        self.pieces.push_back(offset);
        if self.pieces.len() > MAX_HISTORY_PIECES {
            // Merge the two oldest pieces: drop the second boundary.
            if let Some(first) = self.pieces.pop_front() {
                self.pieces.pop_front();
                self.pieces.push_front(first);
            }
        }
    }

    /// How many remembered pieces overlapping `[a, b)` differ from `new`
    /// (the captured bytes of `[a, a + new.len())`; shorter when truncated).
    pub fn mismatches(&self, a: u64, new: &[u8]) -> u64 {
        let b = a.saturating_add(new.len() as u64);
        let end = self.end();
        let mut count = 0;
        for (i, &ps) in self.pieces.iter().enumerate() {
            let pe = self.pieces.get(i + 1).copied().unwrap_or(end);
            let (oa, ob) = (a.max(ps), b.min(pe));
            if oa >= ob {
                continue;
            }
            let old = slice(&self.bytes, oa - self.start, ob - self.start);
            let fresh = slice(new, oa - a, ob - a);
            count += u64::from(old != fresh);
        }
        count
    }

    /// Release the memory (the stream closed).
    pub fn free(&mut self) {
        *self = History::default();
    }
}

fn slice(bytes: &[u8], from: u64, to: u64) -> &[u8] {
    let from = usize::try_from(from).unwrap_or(usize::MAX);
    let to = usize::try_from(to).unwrap_or(usize::MAX);
    bytes.get(from..to).unwrap_or(&[])
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counts_each_contradicted_piece() {
        let mut h = History::default();
        h.push(0, b"aaaa");
        h.push(4, b"bbbb");
        h.push(8, b"cccc");
        assert_eq!(h.mismatches(2, b"aabb"), 0);
        assert_eq!(h.mismatches(2, b"xxbb"), 1);
        assert_eq!(h.mismatches(2, b"xxxxxxx"), 3);
        assert_eq!(h.mismatches(12, b"zz"), 0, "beyond the history");
    }

    #[test]
    fn keeps_at_least_the_retained_bytes() {
        let mut h = History::default();
        let chunk = vec![7u8; 1000];
        for i in 0..20u64 {
            h.push(i * 1000, &chunk);
            assert!(h.bytes.len() >= RETAINED_DELIVERED_BYTES.min(((i + 1) * 1000) as usize));
            assert!(h.bytes.len() <= 2 * RETAINED_DELIVERED_BYTES);
            assert_eq!(h.pieces.front(), Some(&h.start));
        }
        assert_eq!(h.mismatches(19_000, &[8u8; 10]), 1);
        assert_eq!(h.mismatches(0, &[8u8; 10]), 0, "forgotten");
    }

    #[test]
    fn restarts_after_a_gap() {
        let mut h = History::default();
        h.push(0, b"abc");
        h.push(10, b"xyz");
        assert_eq!(h.mismatches(0, b"QQQ"), 0);
        assert_eq!(h.mismatches(10, b"xyQ"), 1);
    }

    #[test]
    fn piece_count_is_bounded() {
        let mut h = History::default();
        for i in 0..500u64 {
            h.push(i, b"k");
        }
        assert!(h.pieces.len() <= MAX_HISTORY_PIECES);
        assert_eq!(h.mismatches(499, b"j"), 1);
    }
}
