//! The last bytes delivered on one direction, kept to compare retransmissions
//! against (RFC 9293 leaves overlap policy to the receiver; we keep the first
//! copy and flag differences, like Zeek with `tcp_max_old_segments`).
//!
//! A ring of [`RETAINED_DELIVERED_BYTES`] bytes: each delivery is copied in once
//! and overwrites the oldest bytes, so nothing is ever shifted (a linear buffer
//! trimmed from the front moved as many bytes again as it copied). It grows to
//! its full size only on a direction that delivers that much. Piece boundaries
//! are kept so a retransmission spanning several earlier segments counts one
//! mismatch per segment it contradicts, as Zeek does.

use std::collections::VecDeque;

/// Bytes of already-delivered data kept per direction: the last ones delivered.
/// Quantum-Insert style injections are caught this way.
pub const RETAINED_DELIVERED_BYTES: usize = 8192;

/// Most piece boundaries remembered; past it the oldest two pieces merge.
const MAX_HISTORY_PIECES: usize = 64;

/// Invariants: the ring holds stream offsets `[start, start + len)`, the byte at
/// `start` in `ring[head]`; `head` is 0 until the ring has its full size;
/// `pieces` are increasing offsets within that range, the first `== start`
/// whenever `len > 0`.
#[derive(Debug, Default)]
pub(crate) struct History {
    start: u64,
    len: usize,
    head: usize,
    ring: Vec<u8>,
    pieces: VecDeque<u64>,
}

impl History {
    fn end(&self) -> u64 {
        self.start.saturating_add(self.len as u64)
    }

    /// Remember `data`, delivered at stream offset `offset`.
    pub fn push(&mut self, offset: u64, data: &[u8]) {
        if data.is_empty() {
            return;
        }
        // Only the last RETAINED_DELIVERED_BYTES of a large delivery can be kept.
        let skip = data.len().saturating_sub(RETAINED_DELIVERED_BYTES);
        if offset != self.end() || skip > 0 {
            // After a gap the old bytes are not adjacent (or all are displaced): restart.
            self.len = 0;
            self.head = 0;
            self.start = offset.saturating_add(skip as u64);
            self.pieces.clear();
        }
        let data = data.get(skip..).unwrap_or_default();
        let piece = self.end();
        let need = self.len + data.len();
        if self.ring.len() < RETAINED_DELIVERED_BYTES {
            if need <= RETAINED_DELIVERED_BYTES {
                // Still growing: head is 0 and the bytes are in order.
                self.ring.truncate(self.len);
                self.ring.extend_from_slice(data);
                self.len = need;
                self.add_piece(piece);
                return;
            }
            self.ring.resize(RETAINED_DELIVERED_BYTES, 0);
        }
        // Full size: the new bytes displace the oldest.
        let evict = need.saturating_sub(RETAINED_DELIVERED_BYTES);
        if evict > 0 {
            self.len -= evict;
            self.head = (self.head + evict) % RETAINED_DELIVERED_BYTES;
            self.start = self.start.saturating_add(evict as u64);
            while self.pieces.get(1).is_some_and(|&p| p <= self.start) {
                self.pieces.pop_front();
            }
            if let Some(first) = self.pieces.front_mut() {
                *first = (*first).max(self.start);
            }
        }
        let at = (self.head + self.len) % RETAINED_DELIVERED_BYTES;
        let (first, second) = data.split_at(data.len().min(RETAINED_DELIVERED_BYTES - at));
        if let Some(dst) = self.ring.get_mut(at..at + first.len()) {
            dst.copy_from_slice(first);
        }
        if let Some(dst) = self.ring.get_mut(..second.len()) {
            dst.copy_from_slice(second);
        }
        self.len += data.len();
        self.add_piece(piece);
    }

    fn add_piece(&mut self, piece: u64) {
        if self.pieces.back() != Some(&piece) {
            self.pieces.push_back(piece);
        }
        if self.pieces.len() > MAX_HISTORY_PIECES {
            // Merge the two oldest pieces: drop the second boundary.
            if let Some(first) = self.pieces.pop_front() {
                self.pieces.pop_front();
                self.pieces.push_front(first);
            }
        }
    }

    /// The kept bytes of stream offsets `[from, to)` (clipped to the kept range), as
    /// one or two slices of the ring.
    fn kept(&self, from: u64, to: u64) -> (&[u8], &[u8]) {
        let (Ok(a), Ok(b)) = (
            usize::try_from(from.saturating_sub(self.start)),
            usize::try_from(to.saturating_sub(self.start)),
        ) else {
            return (&[], &[]);
        };
        let b = b.min(self.len);
        let a = a.min(b);
        let size = self.ring.len().max(1);
        let pa = (self.head + a) % size;
        let n = b - a;
        let first = n.min(size - pa);
        (
            self.ring.get(pa..pa + first).unwrap_or_default(),
            self.ring.get(..n - first).unwrap_or_default(),
        )
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
            let (old1, old2) = self.kept(oa, ob);
            let fresh = slice(new, oa - a, ob - a);
            let same = fresh.len() == old1.len() + old2.len()
                && fresh.get(..old1.len()) == Some(old1)
                && fresh.get(old1.len()..) == Some(old2);
            count += u64::from(!same);
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
    fn keeps_the_last_retained_bytes() {
        let mut h = History::default();
        let chunk = vec![7u8; 1000];
        for i in 0..20u64 {
            h.push(i * 1000, &chunk);
            let total = ((i + 1) * 1000) as usize;
            assert_eq!(h.len, RETAINED_DELIVERED_BYTES.min(total));
            assert!(h.ring.len() <= RETAINED_DELIVERED_BYTES);
            assert_eq!(h.start, total as u64 - h.len as u64);
            assert_eq!(h.pieces.front(), Some(&h.start));
        }
        assert_eq!(h.mismatches(19_000, &[8u8; 10]), 1);
        assert_eq!(h.mismatches(0, &[8u8; 10]), 0, "forgotten");
    }

    #[test]
    fn compares_bytes_across_the_ring_end() {
        let mut h = History::default();
        let first: Vec<u8> = (0..6000u32).map(|i| (i % 251) as u8).collect();
        let second: Vec<u8> = (0..5000u32).map(|i| (i % 241) as u8).collect();
        h.push(0, &first);
        h.push(6000, &second);
        // Offsets 8000..11000 wrap around the ring's end.
        let span = &second[2000..5000];
        assert_eq!(h.mismatches(8000, span), 0);
        let mut changed = span.to_vec();
        changed[2500] ^= 1;
        assert_eq!(h.mismatches(8000, &changed), 1);
        let across = [&first[5000..], &second[..1000]].concat();
        assert_eq!(h.mismatches(5000, &across), 0, "two pieces, both intact");
        let mut both = across.clone();
        both[0] ^= 1;
        both[1999] ^= 1;
        assert_eq!(h.mismatches(5000, &both), 2);
    }

    #[test]
    fn a_delivery_larger_than_the_ring_keeps_its_end() {
        let mut h = History::default();
        h.push(0, b"abc");
        let big: Vec<u8> = (0..20_000u32).map(|i| (i % 253) as u8).collect();
        h.push(3, &big);
        assert_eq!(h.len, RETAINED_DELIVERED_BYTES);
        assert_eq!(h.start, 3 + 20_000 - RETAINED_DELIVERED_BYTES as u64);
        assert_eq!(h.mismatches(19_000, &big[18_997..]), 0);
        assert_eq!(h.mismatches(0, b"xyz"), 0, "displaced");
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

    /// The same history kept linearly: every byte since the last restart.
    #[derive(Default)]
    struct Model {
        start: u64,
        bytes: Vec<u8>,
        pieces: VecDeque<u64>,
    }

    impl Model {
        fn push(&mut self, offset: u64, data: &[u8]) {
            if data.is_empty() {
                return;
            }
            if offset != self.start + self.bytes.len() as u64 {
                self.start = offset;
                self.bytes.clear();
                self.pieces.clear();
            }
            if self.pieces.back() != Some(&offset) {
                self.pieces.push_back(offset);
            }
            self.bytes.extend_from_slice(data);
            let end = self.start + self.bytes.len() as u64;
            let kept = end
                .saturating_sub(RETAINED_DELIVERED_BYTES as u64)
                .max(self.start);
            while self.pieces.get(1).is_some_and(|&p| p <= kept) {
                self.pieces.pop_front();
            }
            if let Some(first) = self.pieces.front_mut() {
                *first = (*first).max(kept);
            }
            if self.pieces.len() > MAX_HISTORY_PIECES {
                let first = self.pieces.pop_front().unwrap();
                self.pieces.pop_front();
                self.pieces.push_front(first);
            }
        }

        fn mismatches(&self, a: u64, new: &[u8]) -> u64 {
            let b = a + new.len() as u64;
            let end = self.start + self.bytes.len() as u64;
            let mut count = 0;
            for (i, &ps) in self.pieces.iter().enumerate() {
                let pe = self.pieces.get(i + 1).copied().unwrap_or(end);
                let (oa, ob) = (a.max(ps), b.min(pe));
                if oa < ob {
                    let old = &self.bytes[(oa - self.start) as usize..(ob - self.start) as usize];
                    let fresh = &new[(oa - a) as usize..(ob - a) as usize];
                    count += u64::from(old != fresh);
                }
            }
            count
        }
    }

    proptest::proptest! {
        /// The ring answers every comparison as the linear model does, through gaps,
        /// wrap-arounds, oversized deliveries and piece merging.
        #[test]
        fn the_ring_matches_a_linear_model(
            steps in proptest::collection::vec(
                (0u8..8, 1usize..12_000, proptest::num::u8::ANY, 0u64..20_000, 1usize..9_000),
                1..60,
            )
        ) {
            let mut ring = History::default();
            let mut model = Model::default();
            let mut next = 0u64;
            for (kind, len, fill, back, probe_len) in steps {
                let len = if kind < 4 { len % 700 + 1 } else { len };
                let data: Vec<u8> = (0..len).map(|i| fill.wrapping_add((i % 7) as u8)).collect();
                let offset = if kind == 0 { next + 5 } else { next };
                ring.push(offset, &data);
                model.push(offset, &data);
                next = offset + len as u64;
                // Probe a range ending near the newest bytes: the delivered bytes, with one
                // byte changed every other step.
                let a = next.saturating_sub(back);
                let mut probe: Vec<u8> = (a..a + probe_len as u64)
                    .map(|o| {
                        if o >= model.start && o < next {
                            model.bytes[(o - model.start) as usize]
                        } else {
                            0
                        }
                    })
                    .collect();
                if kind % 2 == 1 {
                    let at = probe_len / 2;
                    probe[at] ^= 0x55;
                }
                proptest::prop_assert_eq!(ring.mismatches(a, &probe), model.mismatches(a, &probe));
                proptest::prop_assert_eq!(
                    ring.len as u64,
                    (next - model.start).min(RETAINED_DELIVERED_BYTES as u64)
                );
            }
        }
    }
}
