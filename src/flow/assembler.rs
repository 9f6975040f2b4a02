//! One direction of a TCP stream: segments in, in-order `Data` and explicit
//! `Gap` events out.
//!
//! Sequence numbers are mapped to 64-bit stream offsets ([`SeqMap`]), so all
//! ordering below is plain integer ordering. Offset 0 is the byte after the
//! SYN or, without one, the first byte of the first segment seen carrying
//! data or FIN (mid-stream pickup; earlier bytes are `flow.before_stream_start`).
//! Overlaps keep the FIRST copy (like Zeek; RFC 9293 leaves the choice to
//! the receiver) and are counted in `duplicate_bytes`; bytes differing from
//! a buffered or recently delivered copy record `flow.overlap_mismatch`, once
//! per earlier piece contradicted.
//!
//! Gap policy (a hole is sequence space never seen):
//! 1. A hole below buffered data (or below a seen FIN) becomes a gap when the
//!    peer has acknowledged past it on [`ACK_EVIDENCE_SEGMENTS`] segments, or
//!    on one segment that also acknowledges the FIN: the receiver has the
//!    bytes, so only a capture-order glitch could still bring them. Plain
//!    reordering of data segments never triggers this, because the receiver
//!    cannot acknowledge past bytes it lacks.
//! 2. When out-of-order data exceeds the per-direction byte limit or
//!    [`MAX_BUFFERED_CHUNKS`], holes are skipped from the front as gaps until
//!    it fits (`flow.buffer_limit`).
//! 3. The tail of a truncated frame is recorded as missing on arrival and
//!    becomes a gap when delivery reaches it, unless a retransmission fills it.
//! 4. On close ([`Assembler::flush`]) every hole below buffered data becomes a
//!    gap, in order, and so does the trailing hole up to the FIN or, without
//!    FIN, up to the highest offset the peer acknowledged. Without either, a
//!    trailing hole is unknowable and the stream simply ends.
//!
//! ACKs count only within [`MAX_ACK_AHEAD_BYTES`] of the data seen, and data
//! or FINs only within [`MAX_WINDOW_BYTES`] of the next byte
//! (`flow.seq_out_of_window`), so a bogus number cannot invent a huge gap.
//!
//! A FIN alone does not turn holes into gaps: a lost segment is usually
//! retransmitted after the FIN (see the Zeek `tcp/reassembly.pcap` trace).
//! Never panics on any input.

use super::history::History;
use super::seq::{SeqMap, SeqNum};
use crate::anomaly::{Anomaly, UnusedBytes};
use crate::flow::FlowCounters;
use crate::stream::{GapLen, Side, StreamEvent, StreamEventKind};
use crate::timestamp::CaptureTime;
use std::collections::BTreeMap;

/// Most separate out-of-order pieces buffered per direction; bounds the map
/// overhead when many tiny segments (or truncated tails) arrive out of order.
pub const MAX_BUFFERED_CHUNKS: usize = 4096;

/// Largest TCP window (2^30 bytes with window scaling, RFC 7323 §2.3): data or
/// acknowledgements further ahead than this cannot belong to the stream.
pub const MAX_WINDOW_BYTES: u64 = 1 << 30;

/// An acknowledgement is believed only up to this far past the end of the
/// data seen in that direction: it proves bytes were sent that the capture
/// missed, but a bogus ACK (broken stack, injection) must not invent a huge
/// gap. 4 MiB is more than any plausible amount of in-flight data lost from
/// a capture at once.
pub const MAX_ACK_AHEAD_BYTES: u64 = 4 << 20;

/// Peer segments acknowledging past a hole before the hole is declared lost
/// (rule 1 of the gap policy); 2 tolerates one capture-order glitch.
pub const ACK_EVIDENCE_SEGMENTS: u8 = 2;

/// Where events of one stream go, stamped with the packet that caused them.
pub(crate) struct Sink<'a> {
    pub stream: u64,
    pub ts: CaptureTime,
    pub frame: u64,
    pub out: &'a mut Vec<StreamEvent>,
    pub stats: &'a mut FlowCounters,
}

impl Sink<'_> {
    pub fn emit(&mut self, kind: StreamEventKind) {
        self.out.push(StreamEvent {
            stream: self.stream,
            ts: self.ts,
            frame: self.frame,
            kind,
        });
    }
}

/// A buffered piece of sequence space.
#[derive(Debug)]
enum Chunk {
    Data(Vec<u8>),
    /// Bytes known to exist but not captured (truncated frame).
    Missing(u64),
}

impl Chunk {
    fn len(&self) -> u64 {
        match self {
            Chunk::Data(v) => v.len() as u64,
            Chunk::Missing(n) => *n,
        }
    }
}

/// Reassembly state of one direction.
///
/// Invariants (between calls): every key of `chunks` is `> next`; chunks
/// never overlap and are never empty; `buffered` is the sum of `Data`
/// lengths; `history` lies below `next`; `fin`, once set, is `>= next` and no chunk reaches past it.
#[derive(Debug)]
pub(crate) struct Assembler {
    side: Side,
    /// Set by the first SYN or, without one, the first segment carrying data or FIN.
    map: Option<SeqMap>,
    isn: Option<SeqNum>,
    /// Next offset to deliver.
    next: u64,
    chunks: BTreeMap<u64, Chunk>,
    buffered: usize,
    /// Offset of the FIN (one past the last data byte).
    fin: Option<u64>,
    fin_emitted: bool,
    /// Highest offset the peer acknowledged (plausible ones only).
    peer_ack: Option<u64>,
    /// Highest offset an ACK was counted to, for the capture-loss estimate.
    counted_ack: u64,
    /// End of the furthest sequence space seen from this side (data or FIN).
    seen_end: u64,
    evidence: u8,
    evidence_at: u64,
    /// Recently delivered bytes, to check retransmissions against.
    history: History,
    /// Bytes delivered and declared lost, for the connection's record.
    delivered: u64,
    gapped: u64,
}

impl Assembler {
    pub fn new(side: Side) -> Assembler {
        Assembler {
            side,
            map: None,
            isn: None,
            next: 0,
            chunks: BTreeMap::new(),
            buffered: 0,
            fin: None,
            fin_emitted: false,
            peer_ack: None,
            counted_ack: 0,
            seen_end: 0,
            evidence: 0,
            evidence_at: 0,
            history: History::default(),
            delivered: 0,
            gapped: 0,
        }
    }

    /// Payload bytes delivered so far.
    pub fn delivered_bytes(&self) -> u64 {
        self.delivered
    }

    /// Sequence space declared lost so far.
    pub fn gap_bytes(&self) -> u64 {
        self.gapped
    }

    /// Initial sequence number, when this side's SYN was seen.
    pub fn isn(&self) -> Option<SeqNum> {
        self.isn
    }

    /// Sequence number of the next byte to deliver.
    pub fn next_seq(&self) -> Option<SeqNum> {
        self.map.map(|m| m.seq_of(self.next))
    }

    /// A FIN was seen on this direction.
    pub fn fin_seen(&self) -> bool {
        self.fin.is_some()
    }

    /// Everything up to the FIN was delivered (or gapped) and `Fin` emitted.
    pub fn is_finished(&self) -> bool {
        self.fin_emitted
    }

    /// Out-of-order payload bytes held.
    pub fn buffered_bytes(&self) -> usize {
        self.buffered
    }

    /// SYN from this side: the stream's first byte is `isn + 1` (RFC 9293 §3.4).
    pub fn syn(&mut self, isn: SeqNum) {
        match self.map {
            None => {
                self.map = Some(SeqMap::new(isn.wrapping_add(1)));
                self.isn = Some(isn);
            }
            // A SYN captured after data that agrees with it.
            Some(m) if self.isn.is_none() && m.base() == isn.wrapping_add(1) => {
                self.isn = Some(isn)
            }
            Some(_) => {}
        }
    }

    /// One segment from this side. `data_seq` is the sequence number of the
    /// first payload byte; `wire_len >= payload.len()` is its length on the
    /// wire (larger when the frame was truncated).
    pub fn segment(
        &mut self,
        data_seq: SeqNum,
        payload: Vec<u8>,
        wire_len: u32,
        fin: bool,
        limit: usize,
        sink: &mut Sink<'_>,
    ) {
        let captured = payload.len() as u64;
        let wire = u64::from(wire_len).max(captured);
        let map = match self.map {
            Some(m) => m,
            None if wire == 0 && !fin => return,
            // Mid-stream pickup: the first segment with data defines offset 0.
            None => {
                let m = SeqMap::new(data_seq);
                self.map = Some(m);
                m
            }
        };
        let start = map.offset_of(data_seq, self.next);
        let end = start.saturating_add(i64::try_from(wire).unwrap_or(i64::MAX));
        if fin {
            self.note_fin(end, sink);
        }
        if wire > 0 {
            if captured < wire {
                sink.stats.anomaly(Anomaly::FlowTruncatedSegment);
            }
            self.insert_segment(start, payload, wire, sink);
        }
        self.deliver_ready(sink);
        self.enforce_limit(limit, sink);
    }

    /// An acknowledgement from the peer for this direction's data (gap rule 1).
    pub fn peer_ack(&mut self, ack: SeqNum, sink: &mut Sink<'_>) {
        let Some(map) = self.map else { return };
        let Ok(acked) = u64::try_from(map.offset_of(ack, self.next)) else {
            return;
        };
        if acked > self.seen_end.saturating_add(MAX_ACK_AHEAD_BYTES) {
            return;
        }
        self.count_ack(acked, sink.stats);
        if acked <= self.next {
            return;
        }
        self.peer_ack = Some(self.peer_ack.map_or(acked, |p| p.max(acked)));
        match self.hole_end() {
            Some(end) if end <= acked => {}
            _ => return,
        }
        if self.evidence_at != self.next {
            self.evidence_at = self.next;
            self.evidence = 0;
        }
        self.evidence = self.evidence.saturating_add(1);
        let needed = if self.fin.is_some_and(|f| acked > f) {
            1
        } else {
            ACK_EVIDENCE_SEGMENTS
        };
        if self.evidence < needed {
            return;
        }
        while let Some(end) = self.hole_end() {
            if end > acked {
                break;
            }
            self.gap_to(end, sink);
        }
        self.evidence = 0;
    }

    /// The capture-loss estimate (Zeek's `capture-loss`): an ACK that advances past the
    /// highest offset counted so far is one ACK event, and one gap event as well when the
    /// space it newly acknowledges holds sequence numbers the capture never showed.
    fn count_ack(&mut self, acked: u64, stats: &mut FlowCounters) {
        if acked <= self.counted_ack {
            return;
        }
        stats.ack_events = stats.ack_events.saturating_add(1);
        if self.unseen_in(self.counted_ack, acked) {
            stats.ack_gap_events = stats.ack_gap_events.saturating_add(1);
        }
        self.counted_ack = acked;
    }

    /// Whether `[lo, hi)` holds sequence space never captured. Space below `next` was
    /// delivered or already declared a gap (and counted then); buffered chunks (a truncated
    /// tail's `Missing` too: it was seen, only cut) and the FIN's sequence number are seen.
    fn unseen_in(&self, lo: u64, hi: u64) -> bool {
        let mut at = lo.max(self.next);
        if let Some((&start, chunk)) = self.chunks.range(..=at).next_back() {
            at = at.max(start.saturating_add(chunk.len()));
        }
        if at >= hi {
            return false;
        }
        for (&start, chunk) in self.chunks.range(at..hi) {
            if start > at {
                return true;
            }
            at = at.max(start.saturating_add(chunk.len()));
        }
        if at >= hi {
            return false;
        }
        match self.fin {
            Some(f) if f == at => at.saturating_add(1) < hi,
            _ => true,
        }
    }

    /// Close: every hole becomes a gap, buffered data is delivered in order,
    /// then the trailing hole (to the FIN, or to the peer's highest ACK).
    pub fn flush(&mut self, sink: &mut Sink<'_>) {
        while let Some(&start) = self.chunks.keys().next() {
            self.gap_to(start, sink);
        }
        if let Some(end) = self.fin.or(self.peer_ack) {
            self.gap_to(end, sink);
        }
        self.history.free();
    }

    /// A segment arriving after the stream closed: retransmitted bytes count
    /// as duplicates, anything new is an anomaly (no event can carry it).
    pub fn late_segment(&self, data_seq: SeqNum, captured: usize, stats: &mut FlowCounters) {
        let Some(map) = self.map else {
            if captured > 0 {
                stats.anomaly(Anomaly::FlowDataAfterClose);
                stats.unused_tcp_bytes(UnusedBytes::AfterClose, captured as u64);
            }
            return;
        };
        if captured == 0 {
            return;
        }
        let start = map.offset_of(data_seq, self.next);
        let end = start.saturating_add(i64::try_from(captured).unwrap_or(i64::MAX));
        let next = i64::try_from(self.next).unwrap_or(i64::MAX);
        let dup = end.min(next).saturating_sub(start.max(0)).max(0);
        stats.duplicate_bytes = stats.duplicate_bytes.saturating_add(dup.unsigned_abs());
        if end > next {
            stats.anomaly(Anomaly::FlowDataAfterClose);
        }
        let used = dup.unsigned_abs();
        stats.unused_tcp_bytes(
            UnusedBytes::AfterClose,
            (captured as u64).saturating_sub(used),
        );
    }

    /// End of the first hole: the first buffered chunk, or the FIN.
    fn hole_end(&self) -> Option<u64> {
        match self.chunks.keys().next() {
            Some(&k) if k > self.next => Some(k),
            Some(_) => None,
            None => self.fin.filter(|&f| f > self.next),
        }
    }

    fn note_fin(&mut self, end: i64, sink: &mut Sink<'_>) {
        let Ok(end) = u64::try_from(end) else {
            sink.stats.anomaly(Anomaly::FlowBeforeStreamStart);
            return;
        };
        if end > self.next.saturating_add(MAX_WINDOW_BYTES) {
            sink.stats.anomaly(Anomaly::FlowSeqOutOfWindow);
            return;
        }
        self.seen_end = self.seen_end.max(end);
        match self.fin {
            None => {
                // A FIN below delivered data contradicts it; keep what was delivered.
                if end < self.next {
                    sink.stats.anomaly(Anomaly::FlowFinMismatch);
                }
                let at = end.max(self.next);
                self.fin = Some(at);
                self.trim_after_fin(at, sink);
            }
            Some(f) if f != end => sink.stats.anomaly(Anomaly::FlowFinMismatch),
            Some(_) => {}
        }
    }

    /// Drop buffered bytes at or past the FIN: they cannot be stream data.
    fn trim_after_fin(&mut self, fin: u64, sink: &mut Sink<'_>) {
        let mut after = self.chunks.split_off(&fin);
        if let Some(mut last) = self.chunks.last_entry() {
            let start = *last.key();
            let keep = fin.saturating_sub(start);
            if keep < last.get().len() {
                match last.get_mut() {
                    Chunk::Data(v) => {
                        let keep = usize::try_from(keep).unwrap_or(usize::MAX);
                        let tail = v.split_off(keep.min(v.len()));
                        after.insert(fin, Chunk::Data(tail));
                    }
                    Chunk::Missing(n) => *n = keep,
                }
            }
        }
        if after.is_empty() {
            return;
        }
        sink.stats.anomaly(Anomaly::FlowDataAfterFin);
        for chunk in after.values() {
            if let Chunk::Data(v) = chunk {
                self.buffered = self.buffered.saturating_sub(v.len());
                sink.stats
                    .unused_tcp_bytes(UnusedBytes::AfterFin, v.len() as u64);
            }
        }
    }

    fn insert_segment(&mut self, start: i64, payload: Vec<u8>, wire: u64, sink: &mut Sink<'_>) {
        let captured = i64::try_from(payload.len()).unwrap_or(i64::MAX);
        let end = start.saturating_add(i64::try_from(wire).unwrap_or(i64::MAX));
        let cap_end = start.saturating_add(captured).min(end);
        if start < 0 {
            sink.stats.anomaly(Anomaly::FlowBeforeStreamStart);
            let below = cap_end.min(0).saturating_sub(start);
            sink.stats
                .unused_tcp_bytes(UnusedBytes::BeforeStreamStart, below.unsigned_abs());
        }
        // Everything below is in non-negative offsets.
        let clamp = |o: i64| u64::try_from(o.max(0)).unwrap_or(0);
        let (mut s, mut e, mut cap_e) = (clamp(start), clamp(end), clamp(cap_end));
        if s >= e {
            return;
        }
        if s > self.next.saturating_add(MAX_WINDOW_BYTES) {
            sink.stats.anomaly(Anomaly::FlowSeqOutOfWindow);
            sink.stats
                .unused_tcp_bytes(UnusedBytes::OutOfWindow, cap_e.saturating_sub(s));
            return;
        }
        if let Some(f) = self.fin
            && e > f
        {
            sink.stats.anomaly(Anomaly::FlowDataAfterFin);
            e = f.max(s);
            let cut = cap_e.min(e);
            sink.stats
                .unused_tcp_bytes(UnusedBytes::AfterFin, cap_e.saturating_sub(cut));
            cap_e = cut;
        }
        self.seen_end = self.seen_end.max(e);
        let seg = Piece {
            base: start,
            bytes: &payload,
        };
        let mut mismatches = 0;
        if s < self.next {
            let dup_end = e.min(self.next);
            mismatches = self.check_delivered(s, dup_end.min(cap_e).max(s), seg, sink);
            // A keep-alive probe re-sends the last byte with arbitrary content
            // (RFC 1122 §4.2.3.6): a duplicate, never a conflict.
            if wire == 1 && e == self.next {
                mismatches = 0;
            }
            s = dup_end;
        }
        let data_end = cap_e.max(s).min(e);
        if data_end < e {
            self.insert_missing(data_end, e);
        }
        if s < data_end {
            mismatches += self.insert_data(s, data_end, start, payload, sink);
        }
        // One per earlier piece contradicted, as Zeek counts
        // `rexmit_inconsistency` per overlapped block.
        for _ in 0..mismatches {
            sink.stats.anomaly(Anomaly::FlowOverlapMismatch);
        }
    }

    /// Captured bytes `[a, b)` (all at or past `next`): fill free space, keep
    /// the first copy where buffered data overlaps, replace missing markers.
    /// Returns how many buffered pieces it contradicts.
    fn insert_data(
        &mut self,
        a: u64,
        b: u64,
        base: i64,
        payload: Vec<u8>,
        sink: &mut Sink<'_>,
    ) -> u64 {
        let whole =
            u64::try_from(base).ok() == Some(a) && b.checked_sub(a) == Some(payload.len() as u64);
        if whole && a == self.next && self.chunks.is_empty() {
            // Commonest case, the next in-order segment with nothing buffered: straight out.
            self.deliver(payload, sink);
            return 0;
        }
        // Real bytes win over a truncation marker: carve markers out first.
        for (cs, ce, is_data) in self.overlapping(a, b) {
            if is_data {
                continue;
            }
            self.chunks.remove(&cs);
            if cs < a {
                self.chunks.insert(cs, Chunk::Missing(a - cs));
            }
            if ce > b {
                self.chunks.insert(b, Chunk::Missing(ce - b));
            }
        }
        let seg = Piece {
            base,
            bytes: &payload,
        };
        let mut free: Vec<(u64, u64)> = Vec::new();
        let mut cursor = a;
        let mut mismatches: u64 = 0;
        let mut dup: u64 = 0;
        for (cs, ce, _) in self.overlapping(a, b) {
            if cursor < cs {
                free.push((cursor, cs));
            }
            let (oa, ob) = (cursor.max(cs), b.min(ce));
            if oa < ob {
                dup = dup.saturating_add(ob - oa);
                if let Some(Chunk::Data(old)) = self.chunks.get(&cs) {
                    let old = usize::try_from(oa - cs)
                        .ok()
                        .zip(usize::try_from(ob - cs).ok())
                        .and_then(|(x, y)| old.get(x..y));
                    mismatches += u64::from(old != Some(seg.slice(oa, ob)));
                }
            }
            cursor = cursor.max(ce);
        }
        if cursor < b {
            free.push((cursor, b));
        }
        sink.stats.duplicate_bytes = sink.stats.duplicate_bytes.saturating_add(dup);
        let whole = whole && free == [(a, b)];
        if whole && a == self.next {
            // Commonest case, the next in-order segment: straight out.
            self.deliver(payload, sink);
            return mismatches;
        }
        if whole {
            // The segment lands in free space untouched: buffered without a copy.
            self.buffered = self.buffered.saturating_add(payload.len());
            self.chunks.insert(a, Chunk::Data(payload));
            return mismatches;
        }
        for (x, y) in free {
            let bytes = seg.slice(x, y).to_vec();
            self.buffered = self.buffered.saturating_add(bytes.len());
            self.chunks.insert(x, Chunk::Data(bytes));
        }
        mismatches
    }

    /// Bytes `[a, b)` exist on the wire but were not captured: mark the free
    /// parts so delivery turns them into a gap (rule 3).
    fn insert_missing(&mut self, a: u64, b: u64) {
        let mut cursor = a;
        let mut free: Vec<(u64, u64)> = Vec::new();
        for (cs, ce, _) in self.overlapping(a, b) {
            if cursor < cs {
                free.push((cursor, cs));
            }
            cursor = cursor.max(ce);
        }
        if cursor < b {
            free.push((cursor, b));
        }
        for (x, y) in free {
            self.chunks.insert(x, Chunk::Missing(y - x));
        }
    }

    /// Buffered chunks intersecting `[a, b)`, in order: (start, end, is_data).
    fn overlapping(&self, a: u64, b: u64) -> Vec<(u64, u64, bool)> {
        let mut found = Vec::new();
        if self.chunks.is_empty() {
            return found;
        }
        let before = self.chunks.range(..a).next_back();
        for (&cs, chunk) in before.into_iter().chain(self.chunks.range(a..b)) {
            let ce = cs.saturating_add(chunk.len());
            if ce > a && cs < b {
                found.push((cs, ce, matches!(chunk, Chunk::Data(_))));
            }
        }
        found
    }

    /// Deliver chunks contiguous with `next`, then `Fin` once it is reached.
    fn deliver_ready(&mut self, sink: &mut Sink<'_>) {
        while let Some(entry) = self.chunks.first_entry() {
            let start = *entry.key();
            if start > self.next {
                break;
            }
            let chunk = entry.remove();
            if let Chunk::Data(v) = &chunk {
                self.buffered = self.buffered.saturating_sub(v.len());
            }
            // Defensive: a chunk starting below `next` is trimmed, never re-delivered.
            let skip = self.next - start;
            match chunk {
                Chunk::Data(mut v) => {
                    if skip > 0 {
                        let k = usize::try_from(skip).unwrap_or(usize::MAX).min(v.len());
                        v.drain(..k);
                        sink.stats.duplicate_bytes =
                            sink.stats.duplicate_bytes.saturating_add(k as u64);
                    }
                    if !v.is_empty() {
                        self.deliver(v, sink);
                    }
                }
                Chunk::Missing(n) => {
                    if n > skip {
                        self.emit_gap(n - skip, sink);
                    }
                }
            }
        }
        if let Some(f) = self.fin
            && self.next >= f
            && !self.fin_emitted
        {
            self.fin_emitted = true;
            sink.emit(StreamEventKind::Fin { side: self.side });
        }
    }

    fn deliver(&mut self, bytes: Vec<u8>, sink: &mut Sink<'_>) {
        let len = bytes.len();
        self.next = self.next.saturating_add(len as u64);
        sink.stats.tcp_payload_bytes = sink.stats.tcp_payload_bytes.saturating_add(len as u64);
        self.delivered = self.delivered.saturating_add(len as u64);
        self.history.push(self.next - len as u64, &bytes);
        sink.emit(StreamEventKind::Data {
            side: self.side,
            bytes,
        });
    }

    fn emit_gap(&mut self, len: u64, sink: &mut Sink<'_>) {
        self.next = self.next.saturating_add(len);
        sink.stats.gap_bytes = sink.stats.gap_bytes.saturating_add(len);
        self.gapped = self.gapped.saturating_add(len);
        sink.emit(StreamEventKind::Gap {
            side: self.side,
            len: GapLen::Bytes(len),
        });
    }

    /// Declare `[next, offset)` lost, then deliver what became contiguous.
    fn gap_to(&mut self, offset: u64, sink: &mut Sink<'_>) {
        if offset > self.next {
            // Buffered chunks never start inside a hole we declare, but a
            // trailing target could lie past some: cut at the first one.
            let stop = self.chunks.keys().next().map_or(offset, |&k| k.min(offset));
            if stop > self.next {
                self.emit_gap(stop - self.next, sink);
            }
        }
        self.deliver_ready(sink);
        if offset > self.next && self.chunks.is_empty() {
            self.emit_gap(offset - self.next, sink);
            self.deliver_ready(sink);
        }
    }

    /// Gap rule 2: skip holes from the front until the buffer fits.
    fn enforce_limit(&mut self, limit: usize, sink: &mut Sink<'_>) {
        let mut hit = false;
        while self.buffered > limit || self.chunks.len() > MAX_BUFFERED_CHUNKS {
            let Some(&start) = self.chunks.keys().next() else {
                break;
            };
            hit = true;
            self.gap_to(start, sink);
        }
        if hit {
            sink.stats.anomaly(Anomaly::FlowBufferLimit);
        }
    }

    /// Bytes `[a, b)` were already delivered: count duplicates, compare with
    /// the remembered pieces. Returns how many of those pieces differ.
    fn check_delivered(&mut self, a: u64, b: u64, seg: Piece<'_>, sink: &mut Sink<'_>) -> u64 {
        if a >= b {
            return 0;
        }
        let new = seg.slice(a, b);
        sink.stats.duplicate_bytes = sink.stats.duplicate_bytes.saturating_add(new.len() as u64);
        self.history.mismatches(a, new)
    }
}

/// Captured payload bytes of one segment, addressed by stream offset.
#[derive(Clone, Copy)]
struct Piece<'a> {
    /// Offset of `bytes[0]` (negative before the stream start).
    base: i64,
    bytes: &'a [u8],
}

impl<'a> Piece<'a> {
    /// Captured bytes in `[a, b)`, shorter (or empty) where not captured.
    fn slice(&self, a: u64, b: u64) -> &'a [u8] {
        let rel = |o: u64| {
            let r = i64::try_from(o)
                .unwrap_or(i64::MAX)
                .saturating_sub(self.base);
            usize::try_from(r.max(0))
                .unwrap_or(usize::MAX)
                .min(self.bytes.len())
        };
        let (x, y) = (rel(a), rel(b));
        self.bytes.get(x..y.max(x)).unwrap_or(&[])
    }
}
