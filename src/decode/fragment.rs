//! IP fragment reassembly (RFC 791 §3.2 for IPv4, RFC 8200 §4.5 for IPv6).
//!
//! Datagrams are keyed on (source, destination, protocol, identification).
//! Overlapping fragments keep the bytes seen first (like Zeek; the copy that
//! arrived first is the one a receiver with the same policy would keep).
//! Memory is bounded by [`MAX_FRAGMENTED_DATAGRAMS`] × [`MAX_DATAGRAM_BYTES`].

use crate::hashing::HashMap;
use std::net::IpAddr;

/// Most datagrams held in reassembly at once; a fragment of a new datagram
/// beyond this (after expiring stale ones) is not held.
pub const MAX_FRAGMENTED_DATAGRAMS: usize = 1024;

/// Largest reassembled datagram payload: the IPv4 total length field is 16 bits
/// (RFC 791); a fragment reaching past it is invalid (the "ping of death").
pub const MAX_DATAGRAM_BYTES: usize = 65_535;

/// A datagram not completed within this capture time is dropped when room is
/// needed (Linux `ipfrag_time` defaults to 30 s).
pub const FRAGMENT_TIMEOUT_NS: i64 = 30_000_000_000;

/// Identifies one fragmented datagram.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct FragKey {
    pub src: IpAddr,
    pub dst: IpAddr,
    pub protocol: u8,
    pub id: u32,
}

/// One fragment's position in its datagram.
#[derive(Debug, Clone, Copy)]
pub struct FragPos {
    /// Byte offset of this fragment's data in the datagram payload.
    pub offset: usize,
    /// More fragments follow (MF flag).
    pub more: bool,
}

/// What happened to a fragment.
#[derive(Debug, PartialEq, Eq)]
pub enum FragOutcome {
    /// Stored; the datagram is not complete yet.
    Held,
    /// This fragment completed the datagram: its whole payload.
    Complete(Vec<u8>),
    /// Not held: table full, datagram too large or inconsistent.
    Rejected,
}

/// Invariant: `covered` is sorted, non-overlapping, non-adjacent `[start, end)`
/// ranges, all within `data.len()`.
#[derive(Debug)]
struct Datagram {
    data: Vec<u8>,
    covered: Vec<(usize, usize)>,
    /// Payload length, known once the last fragment (MF = 0) is seen.
    total: Option<usize>,
    /// Fragments stored so far.
    held: u64,
    first_ts_ns: i64,
}

impl Datagram {
    /// Copy the parts of `[start, start + bytes.len())` not yet covered, then mark it covered.
    fn add(&mut self, start: usize, bytes: &[u8]) {
        let end = start.saturating_add(bytes.len());
        if end > self.data.len() {
            self.data.resize(end, 0);
        }
        let mut cursor = start;
        let mut gaps = Vec::new();
        for &(s, e) in &self.covered {
            if e <= cursor {
                continue;
            }
            if s >= end {
                break;
            }
            if s > cursor {
                gaps.push((cursor, s));
            }
            cursor = cursor.max(e);
        }
        if cursor < end {
            gaps.push((cursor, end));
        }
        for (s, e) in gaps {
            let src = bytes.get(s.saturating_sub(start)..e.saturating_sub(start));
            if let (Some(dst), Some(src)) = (self.data.get_mut(s..e), src) {
                dst.copy_from_slice(src);
            }
        }
        // Merge [start, end) into the covered ranges.
        let mut merged = Vec::with_capacity(self.covered.len().saturating_add(1));
        let (mut ns, mut ne) = (start, end);
        for &(s, e) in &self.covered {
            if e < ns || s > ne {
                merged.push((s, e));
            } else {
                ns = ns.min(s);
                ne = ne.max(e);
            }
        }
        merged.push((ns, ne));
        merged.sort_unstable();
        self.covered = merged;
    }

    fn is_complete(&self) -> bool {
        match self.total {
            Some(total) => self.covered.first() == Some(&(0, total)),
            None => false,
        }
    }
}

/// Reassembles fragmented datagrams, within the limits above.
#[derive(Debug, Default)]
pub struct Reassembler {
    pending: HashMap<FragKey, Datagram>,
    /// Fragments held for datagrams that were dropped before completing.
    abandoned: u64,
}

impl Reassembler {
    /// Store one fragment (`bytes` is its payload) captured at `ts_ns`.
    pub fn push(&mut self, key: FragKey, pos: FragPos, bytes: &[u8], ts_ns: i64) -> FragOutcome {
        let end = pos.offset.saturating_add(bytes.len());
        if end > MAX_DATAGRAM_BYTES {
            self.drop_datagram(&key);
            return FragOutcome::Rejected;
        }
        if !self.pending.contains_key(&key) {
            if self.pending.len() >= MAX_FRAGMENTED_DATAGRAMS {
                self.expire(ts_ns);
            }
            if self.pending.len() >= MAX_FRAGMENTED_DATAGRAMS {
                return FragOutcome::Rejected;
            }
            self.pending.insert(
                key,
                Datagram {
                    data: Vec::new(),
                    covered: Vec::new(),
                    total: None,
                    held: 0,
                    first_ts_ns: ts_ns,
                },
            );
        }
        let Some(dg) = self.pending.get_mut(&key) else {
            return FragOutcome::Rejected;
        };
        // Two different "last fragment" lengths, or data past the end: the
        // datagram cannot be rebuilt consistently.
        let beyond_total = dg.total.is_some_and(|t| end > t);
        let conflicting_last = !pos.more && dg.total.is_some_and(|t| t != end);
        let last_before_data = !pos.more && dg.covered.last().is_some_and(|&(_, e)| e > end);
        if beyond_total || conflicting_last || last_before_data {
            self.drop_datagram(&key);
            return FragOutcome::Rejected;
        }
        if !pos.more {
            dg.total = Some(end);
        }
        dg.add(pos.offset, bytes);
        dg.held = dg.held.saturating_add(1);
        if dg.is_complete() {
            let total = dg.total.unwrap_or(0);
            if let Some(mut done) = self.pending.remove(&key) {
                done.data.truncate(total);
                return FragOutcome::Complete(done.data);
            }
        }
        FragOutcome::Held
    }

    fn drop_datagram(&mut self, key: &FragKey) {
        if let Some(dg) = self.pending.remove(key) {
            self.abandoned = self.abandoned.saturating_add(dg.held);
        }
    }

    /// Drop datagrams older than [`FRAGMENT_TIMEOUT_NS`] at capture time `now_ns`.
    fn expire(&mut self, now_ns: i64) {
        let cutoff = now_ns.saturating_sub(FRAGMENT_TIMEOUT_NS);
        let mut dropped = 0u64;
        self.pending.retain(|_, dg| {
            let keep = dg.first_ts_ns >= cutoff;
            if !keep {
                dropped = dropped.saturating_add(dg.held);
            }
            keep
        });
        self.abandoned = self.abandoned.saturating_add(dropped);
    }

    /// Datagrams currently in progress.
    pub fn in_progress(&self) -> usize {
        self.pending.len()
    }

    /// End of input: every fragment held for a datagram that never completed.
    pub fn finish(&mut self) -> u64 {
        let left: u64 = self.pending.drain().map(|(_, dg)| dg.held).sum();
        let total = self.abandoned.saturating_add(left);
        self.abandoned = 0;
        total
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::net::Ipv4Addr;

    fn key(id: u32) -> FragKey {
        FragKey {
            src: IpAddr::V4(Ipv4Addr::new(10, 0, 0, 1)),
            dst: IpAddr::V4(Ipv4Addr::new(10, 0, 0, 2)),
            protocol: 6,
            id,
        }
    }

    fn pos(offset: usize, more: bool) -> FragPos {
        FragPos { offset, more }
    }

    #[test]
    fn out_of_order_fragments_complete() {
        let mut r = Reassembler::default();
        let data: Vec<u8> = (0..40u8).collect();
        assert_eq!(
            r.push(key(1), pos(24, false), &data[24..], 0),
            FragOutcome::Held
        );
        assert_eq!(
            r.push(key(1), pos(0, true), &data[..8], 0),
            FragOutcome::Held
        );
        assert_eq!(
            r.push(key(1), pos(8, true), &data[8..24], 0),
            FragOutcome::Complete(data.clone())
        );
        assert_eq!(r.finish(), 0);
    }

    #[test]
    fn overlap_keeps_first_bytes() {
        let mut r = Reassembler::default();
        assert_eq!(r.push(key(2), pos(0, true), &[1; 16], 0), FragOutcome::Held);
        assert_eq!(
            r.push(key(2), pos(8, false), &[2; 16], 0),
            FragOutcome::Complete([[1u8; 16].as_slice(), [2u8; 8].as_slice()].concat())
        );
    }

    #[test]
    fn oversize_and_conflicting_last_are_rejected() {
        let mut r = Reassembler::default();
        assert_eq!(r.push(key(3), pos(0, true), &[0; 8], 0), FragOutcome::Held);
        assert_eq!(
            r.push(key(3), pos(65_528, true), &[0; 16], 0),
            FragOutcome::Rejected
        );
        assert_eq!(r.in_progress(), 0);
        assert_eq!(
            r.push(key(4), pos(16, false), &[0; 8], 0),
            FragOutcome::Held
        );
        assert_eq!(
            r.push(key(4), pos(8, false), &[0; 8], 0),
            FragOutcome::Rejected
        );
        assert_eq!(r.finish(), 2);
    }

    #[test]
    fn table_limit_then_expiry_makes_room() {
        let mut r = Reassembler::default();
        for id in 0..MAX_FRAGMENTED_DATAGRAMS as u32 {
            assert_eq!(r.push(key(id), pos(0, true), &[0; 8], 0), FragOutcome::Held);
        }
        let extra = key(u32::MAX);
        assert_eq!(
            r.push(extra, pos(0, true), &[0; 8], 1),
            FragOutcome::Rejected
        );
        assert_eq!(
            r.push(extra, pos(0, true), &[0; 8], FRAGMENT_TIMEOUT_NS + 1),
            FragOutcome::Held
        );
        assert_eq!(r.in_progress(), 1);
        assert_eq!(r.finish(), MAX_FRAGMENTED_DATAGRAMS as u64 + 1);
    }
}
