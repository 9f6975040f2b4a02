//! The flow table: [`Segment`]s in capture order -> [`StreamEvent`]s.
//!
//! Flows are keyed on the 4-tuple regardless of direction. Each stream gets an
//! index in order of first packet (like tshark's `tcp.stream`), starts with
//! `Opened` and ends with exactly one `Closed`.
//!
//! Lifecycle rules, in the order they are applied to a segment:
//! 1. Idle expiry is checked lazily, when capture time has advanced by
//!    [`SWEEP_INTERVAL_NS`] since the last check: flows silent for longer than
//!    `idle_timeout_ns` close with `Closed{Idle}` and are forgotten.
//! 2. A SYN on a closed stream's 4-tuple, or on an open stream that saw a FIN
//!    or whose SYN carried another ISN, starts a new stream (port reuse); the
//!    old open one closes with `Finished`.
//! 3. A new flow past `max_open_flows` evicts the least recently active open
//!    flow (`Closed{Evicted}`, `flow.evicted`).
//! 4. RST: the sender's data is flushed, `Rst`, the peer's data is flushed,
//!    `Closed{Finished}`.
//! 5. Both FINs seen and every byte up to both delivered or gapped:
//!    `Closed{Finished}` at once, without waiting for the last ACK. While a
//!    hole remains below a FIN the stream stays open, since the missing
//!    segment is usually retransmitted; gap rule 1 of the assembler or the
//!    close of the stream resolves it.
//!
//! Closed streams linger as small tombstones (no buffers) for
//! [`CLOSED_LINGER_NS`] so the last ACK or a retransmitted FIN does not start
//! a phantom stream; payload reaching a tombstone counts as duplicate bytes or
//! `flow.data_after_close`.
//!
//! `Closed` events, and those produced when a stream is flushed by expiry,
//! eviction, port reuse or [`FlowTable::finish`], carry the timestamp and
//! frame of that stream's last packet.

use super::FlowLimits;
use super::assembler::{Assembler, Sink};
use super::seq::SeqNum;
use super::slab::{List, Slab};
use crate::anomaly::{Anomaly, UnusedBytes};
use crate::decode::Segment;
use crate::flow::FlowCounters;
use crate::hashing::HashMap;
use crate::stream::{CloseReason, ConnectionRecord, EndedBy, Side, StreamEvent, StreamEventKind};
use crate::timestamp::CaptureTime;
use std::hash::{Hash, Hasher};
use std::net::SocketAddr;

/// Capture time between two idle sweeps (lazy expiry keeps the per-packet cost flat).
pub const SWEEP_INTERVAL_NS: i64 = 1_000_000_000;

/// How long a closed stream's 4-tuple is remembered (capped by the idle
/// timeout); about one TIME-WAIT (2 MSL, RFC 9293 §3.4.2).
pub const CLOSED_LINGER_NS: i64 = 60 * 1_000_000_000;

/// Without a known ISN, a SYN further than this from the sender's current
/// sequence number starts a new stream; nearer, it is taken as belonging to
/// the open one (RFC 5961 §4 in-window SYN).
pub const SYN_REUSE_DISTANCE: i64 = 1 << 24;

/// What a segment does to the table (slab indices of the flow concerned).
enum Action {
    Create,
    ReplaceTombstone(usize),
    ReplaceOpen(usize),
    Process(usize),
}

/// A 4-tuple, same for both directions.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct FlowKey {
    lo: SocketAddr,
    hi: SocketAddr,
}

/// Every packet looks its flow up: an IPv4 pair goes to the hasher as two words instead of
/// field by field (two addresses, two ports and their variants).
impl Hash for FlowKey {
    fn hash<H: Hasher>(&self, state: &mut H) {
        match (self.lo, self.hi) {
            (SocketAddr::V4(lo), SocketAddr::V4(hi)) => {
                state.write_u64(u64::from(lo.ip().to_bits()) << 32 | u64::from(hi.ip().to_bits()));
                state.write_u32(u32::from(lo.port()) << 16 | u32::from(hi.port()));
            }
            (lo, hi) => {
                lo.hash(state);
                hi.hash(state);
            }
        }
    }
}

impl FlowKey {
    fn new(a: SocketAddr, b: SocketAddr) -> FlowKey {
        if a <= b {
            FlowKey { lo: a, hi: b }
        } else {
            FlowKey { lo: b, hi: a }
        }
    }
}

/// One TCP stream. Once `closed`, its assemblers hold no buffers.
#[derive(Debug)]
struct Flow {
    key: FlowKey,
    stream: u64,
    client: SocketAddr,
    server: SocketAddr,
    from_client: Assembler,
    from_server: Assembler,
    last_ts_ns: i64,
    last_frame: u64,
    closed: bool,
    /// For the connection's record: the input and time of the first packet, packets
    /// processed, whether a RST ended it.
    input: usize,
    first_ts_ns: i64,
    packets: u64,
    rst: bool,
}

impl Flow {
    fn side_of(&self, src: SocketAddr) -> Side {
        if src == self.client {
            Side::Client
        } else {
            Side::Server
        }
    }

    /// (sender's assembler, receiver's assembler).
    fn dirs_mut(&mut self, sender: Side) -> (&mut Assembler, &mut Assembler) {
        match sender {
            Side::Client => (&mut self.from_client, &mut self.from_server),
            Side::Server => (&mut self.from_server, &mut self.from_client),
        }
    }

    fn dir(&self, sender: Side) -> &Assembler {
        match sender {
            Side::Client => &self.from_client,
            Side::Server => &self.from_server,
        }
    }

    /// Rule 2: does this SYN open a new connection on the same 4-tuple?
    fn is_reuse(&self, seg: &Segment) -> bool {
        let dir = self.dir(self.side_of(seg.src));
        if self.from_client.fin_seen() || self.from_server.fin_seen() {
            return true;
        }
        let seq = SeqNum(seg.seq);
        match (dir.isn(), dir.next_seq()) {
            (Some(isn), _) => isn != seq,
            // Only a bare SYN is judged by distance: a SYN-ACK alone says too little.
            (None, Some(next)) if !seg.flags.ack => {
                seq.wrapping_add(1).distance_from(next).abs() > SYN_REUSE_DISTANCE
            }
            _ => false,
        }
    }

    fn sink<'a>(&self, out: &'a mut Vec<StreamEvent>, stats: &'a mut FlowCounters) -> Sink<'a> {
        Sink {
            stream: self.stream,
            ts: CaptureTime::from_ns(self.last_ts_ns),
            frame: self.last_frame,
            out,
            stats,
        }
    }

    /// Flush both directions and emit `Closed`.
    fn close(&mut self, reason: CloseReason, stats: &mut FlowCounters, out: &mut Vec<StreamEvent>) {
        let mut sink = Sink {
            stream: self.stream,
            ts: CaptureTime::from_ns(self.last_ts_ns),
            frame: self.last_frame,
            out,
            stats,
        };
        self.from_client.flush(&mut sink);
        self.from_server.flush(&mut sink);
        sink.emit(self.closed_event(reason));
        self.closed = true;
    }

    /// The `Closed` event, with the record of what the flow stage counted (after the flush:
    /// every byte delivered or gapped).
    fn closed_event(&self, reason: CloseReason) -> StreamEventKind {
        let mut record = ConnectionRecord::new(self.stream, self.input, self.client, self.server);
        let facts = &mut record.flow;
        facts.first_ts = CaptureTime::from_ns(self.first_ts_ns);
        facts.last_ts = CaptureTime::from_ns(self.last_ts_ns);
        facts.packets = self.packets;
        facts.client_bytes = self.from_client.delivered_bytes();
        facts.server_bytes = self.from_server.delivered_bytes();
        facts.gap_bytes = self
            .from_client
            .gap_bytes()
            .saturating_add(self.from_server.gap_bytes());
        facts.ended_by = EndedBy::from_close(reason, self.rst);
        StreamEventKind::Closed {
            reason,
            record: Box::new(record),
        }
    }
}

/// Reassembles every TCP stream of a capture. See the module doc for the rules.
///
/// Memory: at most `max_open_flows` open flows, each holding at most
/// `max_buffered_bytes_per_direction` out-of-order bytes per direction plus
/// [`super::RETAINED_DELIVERED_BYTES`] of history, and at most as
/// many buffer-free tombstones. Per packet: one hash lookup and O(1) list
/// updates; the reassembly itself copies a payload only into the history.
#[derive(Debug)]
pub struct FlowTable {
    limits: FlowLimits,
    index: HashMap<FlowKey, usize>,
    /// Open flows by last activity, tombstones by closing order (oldest first).
    /// Boxed: the slab then grows by copying pointers, not 480-byte flows (a SYN flood of
    /// 100k open flows and as many tombstones would double its peak while growing).
    flows: Slab<Box<Flow>>,
    next_stream: u64,
    now_ns: i64,
    last_sweep_ns: Option<i64>,
}

impl FlowTable {
    /// An empty table bounded by `limits`.
    pub fn new(limits: FlowLimits) -> FlowTable {
        FlowTable {
            limits,
            index: HashMap::default(),
            flows: Slab::default(),
            next_stream: 0,
            now_ns: i64::MIN,
            last_sweep_ns: None,
        }
    }

    /// Open (not yet closed) flows.
    pub fn open_flows(&self) -> usize {
        self.flows.len(List::Open)
    }

    /// Out-of-order bytes buffered across all open flows (O(flows); for tests and diagnostics).
    pub fn buffered_bytes(&self) -> usize {
        self.flows
            .values()
            .map(|f| f.from_client.buffered_bytes() + f.from_server.buffered_bytes())
            .sum()
    }

    /// Largest out-of-order buffer of any single direction (O(flows); for
    /// tests and diagnostics). Never above `max_buffered_bytes_per_direction`
    /// between calls.
    pub fn largest_direction_buffer(&self) -> usize {
        self.flows
            .values()
            .map(|f| {
                f.from_client
                    .buffered_bytes()
                    .max(f.from_server.buffered_bytes())
            })
            .max()
            .unwrap_or(0)
    }

    /// Feed one segment (in capture order). Appends events for any stream in `out`.
    pub fn push(&mut self, seg: Segment, stats: &mut FlowCounters, out: &mut Vec<StreamEvent>) {
        stats.tcp_payload_bytes_seen = stats
            .tcp_payload_bytes_seen
            .saturating_add(seg.payload.len() as u64);
        self.advance_clock(seg.ts_ns, stats, out);
        let key = FlowKey::new(seg.src, seg.dst);
        let found = self
            .index
            .get(&key)
            .and_then(|&id| self.flows.get(id).map(|f| (id, f)));
        let action = match found {
            None => Action::Create,
            Some((id, f)) if f.closed && seg.flags.syn => Action::ReplaceTombstone(id),
            Some((_, f)) if f.closed => {
                f.dir(f.side_of(seg.src))
                    .late_segment(SeqNum(seg.seq), seg.payload.len(), stats);
                return;
            }
            Some((id, f)) if seg.flags.syn && f.is_reuse(&seg) => Action::ReplaceOpen(id),
            Some((id, _)) => Action::Process(id),
        };
        match action {
            Action::Create => self.create(key, seg, stats, out),
            Action::ReplaceTombstone(id) => {
                self.remove(id);
                self.create(key, seg, stats, out);
            }
            Action::ReplaceOpen(id) => {
                if let Some(mut old) = self.remove(id) {
                    old.close(CloseReason::Finished, stats, out);
                }
                self.create(key, seg, stats, out);
            }
            Action::Process(id) => self.process(id, seg, stats, out),
        }
    }

    /// Capture time has reached `now_ns` (a packet's time, or the clock of a live capture
    /// while the interface is quiet): flows idle past the timeout close, at most once per
    /// [`SWEEP_INTERVAL_NS`].
    pub fn advance_clock(
        &mut self,
        now_ns: i64,
        stats: &mut FlowCounters,
        out: &mut Vec<StreamEvent>,
    ) {
        self.now_ns = self.now_ns.max(now_ns);
        let due = self
            .last_sweep_ns
            .is_none_or(|t| self.now_ns.saturating_sub(t) >= SWEEP_INTERVAL_NS);
        if due {
            self.sweep(stats, out);
            self.last_sweep_ns = Some(self.now_ns);
        }
    }

    /// End of capture: flush every open stream (buffered data delivered, holes
    /// as gaps, `Closed{CaptureEnd}`), in stream order. The table is empty afterwards.
    pub fn finish(&mut self, stats: &mut FlowCounters, out: &mut Vec<StreamEvent>) {
        let mut open: Vec<Box<Flow>> = self
            .flows
            .drain()
            .into_iter()
            .filter(|f| !f.closed)
            .collect();
        self.index.clear();
        open.sort_unstable_by_key(|f| f.stream);
        for mut flow in open {
            flow.close(CloseReason::CaptureEnd, stats, out);
        }
    }

    /// Start a new stream with `seg` as its first packet.
    fn create(
        &mut self,
        key: FlowKey,
        seg: Segment,
        stats: &mut FlowCounters,
        out: &mut Vec<StreamEvent>,
    ) {
        if self.flows.len(List::Open) >= self.limits.max_open_flows.max(1) {
            self.evict_one(stats, out);
        }
        // Client: the SYN sender; the receiver of a lone SYN-ACK; else the first sender.
        let client = if seg.flags.syn && seg.flags.ack {
            seg.dst
        } else {
            seg.src
        };
        let server = if client == seg.src { seg.dst } else { seg.src };
        let stream = self.next_stream;
        self.next_stream = self.next_stream.saturating_add(1);
        stats.tcp_streams = stats.tcp_streams.saturating_add(1);
        out.push(StreamEvent {
            stream,
            ts: CaptureTime::from_ns(seg.ts_ns),
            frame: seg.frame,
            kind: StreamEventKind::Opened {
                client,
                server,
                saw_syn: seg.flags.syn,
                input: seg.input,
            },
        });
        let flow = Flow {
            key,
            stream,
            client,
            server,
            from_client: Assembler::new(Side::Client),
            from_server: Assembler::new(Side::Server),
            last_ts_ns: seg.ts_ns,
            last_frame: seg.frame,
            closed: false,
            input: seg.input,
            first_ts_ns: seg.ts_ns,
            packets: 0,
            rst: false,
        };
        let id = self.flows.insert(Box::new(flow), List::Open);
        self.index.insert(key, id);
        self.process(id, seg, stats, out);
    }

    /// A segment of an open flow.
    fn process(
        &mut self,
        id: usize,
        seg: Segment,
        stats: &mut FlowCounters,
        out: &mut Vec<StreamEvent>,
    ) {
        let limit = self.limits.max_buffered_bytes_per_direction;
        let Some(flow) = self.flows.get_mut(id) else {
            return;
        };
        flow.last_ts_ns = seg.ts_ns;
        flow.last_frame = seg.frame;
        flow.packets = flow.packets.saturating_add(1);
        flow.rst |= seg.flags.rst;
        let side = flow.side_of(seg.src);
        let mut sink = flow.sink(out, stats);
        let (own, peer) = flow.dirs_mut(side);
        if seg.flags.syn {
            own.syn(SeqNum(seg.seq));
        }
        if seg.flags.rst {
            // RFC 9293 §3.5.3: RST ends the connection; its payload (RFC 1122
            // §4.2.2.12 diagnostic text) is not stream data.
            sink.stats
                .unused_tcp_bytes(UnusedBytes::RstPayload, seg.payload.len() as u64);
            own.flush(&mut sink);
            sink.emit(StreamEventKind::Rst { side });
            peer.flush(&mut sink);
            sink.emit(flow.closed_event(CloseReason::Finished));
            flow.closed = true;
        } else {
            // The SYN occupies one sequence number before the data (RFC 9293 §3.4).
            let data_seq = SeqNum(seg.seq).wrapping_add(u32::from(seg.flags.syn));
            own.segment(
                data_seq,
                seg.payload,
                seg.wire_payload_len,
                seg.flags.fin,
                limit,
                &mut sink,
            );
            if seg.flags.ack {
                peer.peer_ack(SeqNum(seg.ack), &mut sink);
            }
            if own.is_finished() && peer.is_finished() {
                sink.emit(flow.closed_event(CloseReason::Finished));
                flow.closed = true;
            }
        }
        if flow.closed {
            self.flows.move_to_back(id, List::Closed);
            // Keep at most `max_open_flows` tombstones, dropping the oldest.
            while self.flows.len(List::Closed) > self.limits.max_open_flows.max(1) {
                match self.flows.front(List::Closed) {
                    Some(oldest) => {
                        self.remove(oldest);
                    }
                    None => break,
                }
            }
        } else {
            self.flows.move_to_back(id, List::Open);
        }
    }

    /// Rule 1: expire idle open flows and old tombstones (oldest first).
    fn sweep(&mut self, stats: &mut FlowCounters, out: &mut Vec<StreamEvent>) {
        let idle = self.limits.idle_timeout_ns;
        while let Some(id) = self.flows.front(List::Open) {
            let expired = self
                .flows
                .get(id)
                .is_some_and(|f| self.now_ns.saturating_sub(f.last_ts_ns) > idle);
            if !expired {
                break;
            }
            if let Some(mut flow) = self.remove(id) {
                flow.close(CloseReason::Idle, stats, out);
            }
        }
        let linger = idle.min(CLOSED_LINGER_NS);
        while let Some(id) = self.flows.front(List::Closed) {
            let expired = self
                .flows
                .get(id)
                .is_some_and(|f| self.now_ns.saturating_sub(f.last_ts_ns) > linger);
            if !expired {
                break;
            }
            self.remove(id);
        }
    }

    /// Rule 3: close the least recently active open flow.
    fn evict_one(&mut self, stats: &mut FlowCounters, out: &mut Vec<StreamEvent>) {
        if let Some(id) = self.flows.front(List::Open)
            && let Some(mut flow) = self.remove(id)
        {
            stats.anomaly(Anomaly::FlowEvicted);
            flow.close(CloseReason::Evicted, stats, out);
        }
    }

    /// Forget entry `id` (open or tombstone).
    fn remove(&mut self, id: usize) -> Option<Box<Flow>> {
        let flow = self.flows.remove(id)?;
        self.index.remove(&flow.key);
        Some(flow)
    }
}
