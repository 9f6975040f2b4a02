//! Behaviour tests of the flow stage through its public API, one case per rule.

mod capture_loss;
mod corpus;
mod proptests;

use super::*;
use crate::anomaly::UnusedBytes;
use crate::decode::{Segment, TcpFlags};
use crate::flow::FlowCounters;
use crate::stream::*;

const SEC: i64 = 1_000_000_000;

/// A capture being built: client 10.0.0.1:40000 talks to 10.0.0.2:80.
struct Cap {
    table: FlowTable,
    stats: FlowCounters,
    out: Vec<StreamEvent>,
    frame: u64,
    ts_ns: i64,
    port: u16,
}

fn flags(f: &str) -> TcpFlags {
    TcpFlags {
        syn: f.contains('S'),
        ack: f.contains('A'),
        fin: f.contains('F'),
        rst: f.contains('R'),
    }
}

impl Cap {
    fn new() -> Cap {
        Cap::with_limits(FlowLimits::default())
    }

    fn with_limits(limits: FlowLimits) -> Cap {
        Cap {
            table: FlowTable::new(limits),
            stats: FlowCounters::default(),
            out: Vec::new(),
            frame: 0,
            ts_ns: 1_000 * SEC,
            port: 40000,
        }
    }

    fn client(&self) -> std::net::SocketAddr {
        std::net::SocketAddr::from(([10, 0, 0, 1], self.port))
    }

    fn server(&self) -> std::net::SocketAddr {
        std::net::SocketAddr::from(([10, 0, 0, 2], 80))
    }

    /// One packet; `from_client` picks the direction. `wire` > payload len truncates.
    fn pkt_wire(
        &mut self,
        from_client: bool,
        f: &str,
        seq: u32,
        ack: u32,
        payload: &[u8],
        wire: u32,
    ) {
        self.frame += 1;
        let (src, dst) = if from_client {
            (self.client(), self.server())
        } else {
            (self.server(), self.client())
        };
        let seg = Segment {
            frame: self.frame,
            input: 0,
            ts_ns: self.ts_ns,
            src,
            dst,
            seq,
            ack,
            flags: flags(f),
            payload: payload.to_vec(),
            wire_payload_len: wire,
        };
        self.table.push(seg, &mut self.stats, &mut self.out);
    }

    fn c(&mut self, f: &str, seq: u32, ack: u32, payload: &[u8]) {
        self.pkt_wire(true, f, seq, ack, payload, payload.len() as u32);
    }

    fn s(&mut self, f: &str, seq: u32, ack: u32, payload: &[u8]) {
        self.pkt_wire(false, f, seq, ack, payload, payload.len() as u32);
    }

    fn finish(&mut self) {
        self.table.finish(&mut self.stats, &mut self.out);
    }

    /// One direction of one stream as text: data, `[gap N]`, `[fin]`, `[rst]`.
    fn render(&self, stream: u64, side: Side) -> String {
        let mut s = String::new();
        for ev in self.out.iter().filter(|e| e.stream == stream) {
            match &ev.kind {
                StreamEventKind::Data { side: d, bytes } if *d == side => {
                    s.push_str(&String::from_utf8_lossy(bytes))
                }
                StreamEventKind::Gap {
                    side: d,
                    len: GapLen::Bytes(len),
                } if *d == side => s.push_str(&format!("[gap {len}]")),
                StreamEventKind::Fin { side: d } if *d == side => s.push_str("[fin]"),
                StreamEventKind::Rst { side: d } if *d == side => s.push_str("[rst]"),
                _ => {}
            }
        }
        s
    }

    fn closes(&self) -> Vec<(u64, CloseReason)> {
        self.out
            .iter()
            .filter_map(|e| match e.kind {
                StreamEventKind::Closed { reason, .. } => Some((e.stream, reason)),
                _ => None,
            })
            .collect()
    }

    fn anomaly(&self, name: &str) -> u64 {
        self.stats.anomalies.get(name).copied().unwrap_or(0)
    }

    /// Handshake with client ISN 100 and server ISN 500: data starts at 101 / 501.
    fn handshake(&mut self) {
        self.c("S", 100, 0, b"");
        self.s("SA", 500, 101, b"");
        self.c("A", 101, 501, b"");
    }
}

/// Every stream starts with Opened and ends with exactly one Closed.
fn assert_well_formed(out: &[StreamEvent]) {
    let max = out.iter().map(|e| e.stream).max();
    for stream in 0..=max.unwrap_or(0) {
        let evs: Vec<_> = out.iter().filter(|e| e.stream == stream).collect();
        if max.is_none() {
            break;
        }
        assert!(
            matches!(evs[0].kind, StreamEventKind::Opened { .. }),
            "stream {stream}"
        );
        let closes = evs
            .iter()
            .filter(|e| matches!(e.kind, StreamEventKind::Closed { .. }))
            .count();
        assert_eq!(closes, 1, "stream {stream}: {evs:?}");
        assert!(matches!(
            evs.last().unwrap().kind,
            StreamEventKind::Closed { .. }
        ));
    }
}

#[test]
fn in_order_conversation_closes_finished() {
    let mut t = Cap::new();
    t.handshake();
    t.c("PA", 101, 501, b"GET / HTTP/1.1\r\n\r\n");
    t.s("PA", 501, 119, b"HTTP/1.1 200 OK\r\n\r\n");
    t.c("FA", 119, 520, b"");
    t.s("FA", 520, 120, b"");
    t.c("A", 120, 521, b"");
    t.finish();
    let StreamEventKind::Opened {
        client,
        server,
        saw_syn,
        input,
    } = &t.out[0].kind
    else {
        panic!("{:?}", t.out[0])
    };
    assert_eq!(
        (*client, *server, *saw_syn, *input),
        (t.client(), t.server(), true, 0)
    );
    assert_eq!(t.render(0, Side::Client), "GET / HTTP/1.1\r\n\r\n[fin]");
    assert_eq!(t.render(0, Side::Server), "HTTP/1.1 200 OK\r\n\r\n[fin]");
    assert_eq!(t.closes(), vec![(0, CloseReason::Finished)]);
    // Closed at the second FIN (frame 7), not at the last ACK.
    assert_eq!(t.out.last().unwrap().frame, 7);
    assert_eq!(t.stats.tcp_streams, 1);
    assert_eq!(t.stats.tcp_payload_bytes, 37);
    assert_eq!((t.stats.gap_bytes, t.stats.duplicate_bytes), (0, 0));
    assert!(t.stats.anomalies.is_empty(), "{:?}", t.stats.anomalies);
    assert_well_formed(&t.out);
}

#[test]
fn out_of_order_is_buffered_and_delivered_in_order() {
    let mut t = Cap::new();
    t.handshake();
    t.c("PA", 107, 501, b"world");
    assert_eq!(t.render(0, Side::Client), "");
    assert_eq!(t.table.buffered_bytes(), 5);
    t.c("PA", 101, 501, b"hello ");
    assert_eq!(t.render(0, Side::Client), "hello world");
    assert_eq!(t.table.buffered_bytes(), 0);
    // The buffered bytes come out with the packet that filled the hole.
    let frames: Vec<u64> = t
        .out
        .iter()
        .filter(|e| matches!(e.kind, StreamEventKind::Data { .. }))
        .map(|e| e.frame)
        .collect();
    assert_eq!(frames, vec![5, 5]);
    t.finish();
    assert_eq!(t.closes(), vec![(0, CloseReason::CaptureEnd)]);
    assert_eq!(t.stats.gap_bytes, 0);
}

#[test]
fn identical_retransmission_is_counted_not_delivered() {
    let mut t = Cap::new();
    t.handshake();
    t.c("PA", 101, 501, b"abcdef");
    t.c("PA", 101, 501, b"abcdef");
    t.c("PA", 104, 501, b"defghi");
    t.finish();
    assert_eq!(t.render(0, Side::Client), "abcdefghi");
    assert_eq!(t.stats.duplicate_bytes, 9);
    assert_eq!(t.anomaly("flow.overlap_mismatch"), 0);
}

#[test]
fn overlap_with_different_bytes_keeps_first_copy() {
    let mut t = Cap::new();
    t.handshake();
    // Against delivered data (Quantum Insert: injected reply arrives first).
    t.s("PA", 501, 101, b"BANG!");
    t.s("PA", 501, 101, b"real reply");
    // Against buffered out-of-order data.
    t.c("PA", 111, 501, b"XYZ");
    t.c("PA", 101, 501, b"0123456789abc");
    t.finish();
    assert_eq!(t.render(0, Side::Server), "BANG!reply");
    assert_eq!(t.render(0, Side::Client), "0123456789XYZ");
    assert_eq!(t.anomaly("flow.overlap_mismatch"), 2);
    assert_eq!(t.stats.duplicate_bytes, 5 + 3);
}

#[test]
fn sequence_numbers_wrap_around() {
    let mut t = Cap::new();
    let isn = u32::MAX - 3; // data starts at MAX-2 and wraps after 3 bytes
    t.c("S", isn, 0, b"");
    t.s("SA", 7, isn.wrapping_add(1), b"");
    t.c("PA", 3, 8, b"world"); // offset 6: after the wrap, out of order
    t.c("PA", u32::MAX - 2, 8, b"hello "); // spans the wrap
    t.c("PA", u32::MAX, 8, b"llo"); // retransmission across the wrap
    t.finish();
    assert_eq!(t.render(0, Side::Client), "hello world");
    assert_eq!(t.stats.duplicate_bytes, 3);
    assert_eq!(t.stats.gap_bytes, 0);
}

#[test]
fn hole_becomes_gap_at_finish() {
    let mut t = Cap::new();
    t.handshake();
    t.c("PA", 101, 501, b"abc");
    t.c("PA", 110, 501, b"xyz");
    t.finish();
    assert_eq!(t.render(0, Side::Client), "abc[gap 6]xyz");
    assert_eq!(t.stats.gap_bytes, 6);
    assert_eq!(t.stats.tcp_payload_bytes, 6);
    assert_eq!(
        t.out.last().unwrap().frame,
        5,
        "finish events carry the stream's last frame"
    );
    assert_well_formed(&t.out);
}

#[test]
fn hole_before_fin_waits_for_retransmission() {
    // As in Zeek's tcp/reassembly.pcap: FIN overtakes a lost segment that is
    // then retransmitted; no gap may be declared.
    let mut t = Cap::new();
    t.handshake();
    t.s("FA", 501, 101, b"");
    t.c("PA", 101, 502, b"abc");
    t.c("FA", 107, 502, b"ghi");
    assert_eq!(t.closes(), vec![]);
    t.c("PA", 104, 502, b"def");
    assert_eq!(t.render(0, Side::Client), "abcdefghi[fin]");
    assert_eq!(t.closes(), vec![(0, CloseReason::Finished)]);
    assert_eq!(t.stats.gap_bytes, 0);
}

#[test]
fn hole_before_fin_becomes_gap_when_peer_acks_the_fin() {
    let mut t = Cap::new();
    t.handshake();
    t.c("PA", 101, 501, b"abc");
    t.c("FA", 107, 501, b"ghi");
    t.s("FA", 501, 111, b""); // acks everything including the FIN
    assert_eq!(t.render(0, Side::Client), "abc[gap 3]ghi[fin]");
    assert_eq!(t.render(0, Side::Server), "[fin]");
    assert_eq!(t.closes(), vec![(0, CloseReason::Finished)]);
    assert_eq!(t.stats.gap_bytes, 3);
}

#[test]
fn hole_acked_by_peer_twice_becomes_gap() {
    let mut t = Cap::new();
    t.handshake();
    t.c("PA", 101, 501, b"abc");
    t.c("PA", 107, 501, b"ghi");
    t.s("A", 501, 110, b""); // receiver has bytes we never saw
    assert_eq!(t.render(0, Side::Client), "abc", "one ACK is not enough");
    t.s("PA", 501, 110, b"ok");
    assert_eq!(t.render(0, Side::Client), "abc[gap 3]ghi");
    // An ACK that covers only part of a hole proves nothing about the rest.
    t.c("PA", 113, 503, b"mno");
    t.s("A", 503, 111, b"");
    t.s("A", 503, 111, b"");
    assert_eq!(t.render(0, Side::Client), "abc[gap 3]ghi");
    t.finish();
    assert_eq!(t.render(0, Side::Client), "abc[gap 3]ghi[gap 3]mno");
}

#[test]
fn trailing_hole_acked_by_peer_is_a_gap_at_close() {
    let mut t = Cap::new();
    t.handshake();
    t.c("PA", 101, 501, b"abc");
    t.s("A", 501, 110, b""); // 6 more bytes were received, not captured
    t.finish();
    assert_eq!(t.render(0, Side::Client), "abc[gap 6]");
}

#[test]
fn mid_stream_pickup_still_delivers() {
    let mut t = Cap::new();
    // No handshake; the first packet's sender is the client.
    t.c("PA", 5_000, 9_000, b"POST /mcp");
    t.s("PA", 9_000, 5_009, b"HTTP/1.1 202");
    t.c("PA", 5_009, 9_012, b" HTTP/1.1");
    t.finish();
    let StreamEventKind::Opened {
        client, saw_syn, ..
    } = &t.out[0].kind
    else {
        panic!()
    };
    assert_eq!((*client, *saw_syn), (t.client(), false));
    assert_eq!(t.render(0, Side::Client), "POST /mcp HTTP/1.1");
    assert_eq!(t.render(0, Side::Server), "HTTP/1.1 202");
    assert_eq!(t.stats.gap_bytes, 0);
}

#[test]
fn lone_syn_ack_makes_its_receiver_the_client() {
    let mut t = Cap::new();
    t.s("SA", 500, 101, b"");
    t.c("PA", 101, 501, b"hi");
    t.finish();
    let StreamEventKind::Opened {
        client, saw_syn, ..
    } = &t.out[0].kind
    else {
        panic!()
    };
    assert_eq!((*client, *saw_syn), (t.client(), true));
    assert_eq!(t.render(0, Side::Client), "hi");
}

#[test]
fn port_reuse_starts_a_new_stream() {
    let mut t = Cap::new();
    t.handshake();
    t.c("PA", 101, 501, b"one");
    t.c("FA", 104, 501, b"");
    t.s("FA", 501, 105, b"");
    t.c("A", 105, 502, b""); // last ACK: absorbed by the closed stream
    t.c("S", 9_000, 0, b""); // same 4-tuple, new connection
    t.s("SA", 7_000, 9_001, b"");
    t.c("PA", 9_001, 7_001, b"two");
    // New SYN while the previous connection saw only a FIN: also reuse.
    t.c("FA", 9_004, 7_001, b"");
    t.c("S", 20_000, 0, b"");
    t.c("PA", 20_001, 0, b"three");
    t.finish();
    assert_eq!(t.stats.tcp_streams, 3);
    assert_eq!(t.render(0, Side::Client), "one[fin]");
    assert_eq!(t.render(1, Side::Client), "two[fin]");
    assert_eq!(t.render(2, Side::Client), "three");
    assert_eq!(
        t.closes(),
        vec![
            (0, CloseReason::Finished),
            (1, CloseReason::Finished),
            (2, CloseReason::CaptureEnd)
        ]
    );
    assert_well_formed(&t.out);
}

#[test]
fn retransmitted_syn_is_not_port_reuse() {
    let mut t = Cap::new();
    t.c("S", 100, 0, b"");
    t.c("S", 100, 0, b"");
    t.s("SA", 500, 101, b"");
    t.c("PA", 101, 501, b"x");
    t.finish();
    assert_eq!(t.stats.tcp_streams, 1);
    assert_eq!(t.render(0, Side::Client), "x");
}

#[test]
fn late_packets_after_close_are_accounted() {
    let mut t = Cap::new();
    t.handshake();
    t.c("PA", 101, 501, b"abc");
    t.c("FA", 104, 501, b"");
    t.s("FA", 501, 105, b"");
    t.c("PA", 101, 502, b"abc"); // retransmission after close
    t.c("PA", 200, 502, b"zzz"); // new bytes after close
    t.finish();
    assert_eq!(t.stats.tcp_streams, 1);
    assert_eq!(t.stats.duplicate_bytes, 3);
    assert_eq!(t.anomaly("flow.data_after_close"), 1);
    assert_eq!(t.stats.tcp_bytes_unused.get(UnusedBytes::AfterClose), 3);
    assert_eq!(t.stats.tcp_payload_bytes_seen, 9);
    assert_well_formed(&t.out);
}

#[test]
fn rst_flushes_then_closes() {
    let mut t = Cap::new();
    t.handshake();
    t.c("PA", 101, 501, b"abc");
    t.c("PA", 107, 501, b"ghi");
    t.s("PA", 501, 104, b"resp");
    t.s("R", 505, 0, b"");
    assert_eq!(t.render(0, Side::Client), "abc[gap 3]ghi");
    assert_eq!(t.render(0, Side::Server), "resp[rst]");
    assert_eq!(t.closes(), vec![(0, CloseReason::Finished)]);
    let kinds: Vec<_> = t.out.iter().rev().take(2).map(|e| e.kind.clone()).collect();
    let StreamEventKind::Closed { record, .. } = &kinds[0] else {
        panic!("{kinds:?}");
    };
    // The RST names how it ended; both sides' delivered bytes and the gap are counted.
    assert_eq!(record.flow.ended_by, EndedBy::Rst);
    assert_eq!(
        (
            record.flow.client_bytes,
            record.flow.server_bytes,
            record.flow.gap_bytes
        ),
        (6, 4, 3)
    );
    assert_eq!(record.flow.packets, 7);
    assert_eq!(
        kinds,
        vec![
            StreamEventKind::Closed {
                reason: CloseReason::Finished,
                record: record.clone(),
            },
            StreamEventKind::Data {
                side: Side::Client,
                bytes: b"ghi".to_vec()
            },
        ]
    );
    t.finish();
    assert_eq!(t.closes().len(), 1);
}

#[test]
fn idle_flow_expires_lazily() {
    let limits = FlowLimits {
        idle_timeout_ns: 30 * SEC,
        ..FlowLimits::default()
    };
    let mut t = Cap::with_limits(limits);
    t.handshake();
    t.c("PA", 101, 501, b"abc");
    t.c("PA", 110, 501, b"xyz");
    t.ts_ns += 20 * SEC;
    t.port = 40001;
    t.c("S", 1, 0, b""); // stream 1 keeps time moving
    assert_eq!(t.closes(), vec![]);
    t.ts_ns += 15 * SEC; // stream 0 silent for 35 s now
    t.c("A", 2, 0, b"");
    assert_eq!(t.closes(), vec![(0, CloseReason::Idle)]);
    assert_eq!(t.render(0, Side::Client), "abc[gap 6]xyz");
    // The Idle close carries stream 0's last packet.
    assert_eq!(t.out.iter().rev().find(|e| e.stream == 0).unwrap().frame, 5);
    t.port = 40000;
    t.c("PA", 113, 501, b"more"); // the forgotten tuple starts a new stream
    t.finish();
    assert_eq!(t.stats.tcp_streams, 3);
    assert_eq!(t.render(2, Side::Client), "more");
    assert_well_formed(&t.out);
}

#[test]
fn least_recently_active_flow_is_evicted() {
    let limits = FlowLimits {
        max_open_flows: 2,
        ..FlowLimits::default()
    };
    let mut t = Cap::with_limits(limits);
    for port in [1, 2] {
        t.port = port;
        t.c("PA", 10, 0, b"a");
    }
    t.port = 1;
    t.c("PA", 11, 0, b"b"); // flow 0 is now more recent than flow 1
    t.port = 3;
    t.c("PA", 10, 0, b"c");
    assert_eq!(t.closes(), vec![(1, CloseReason::Evicted)]);
    assert_eq!(t.anomaly("flow.evicted"), 1);
    assert_eq!(t.table.open_flows(), 2);
    t.finish();
    assert_eq!(t.render(0, Side::Client), "ab");
    assert_well_formed(&t.out);
}

#[test]
fn truncated_segment_tail_is_a_gap() {
    let mut t = Cap::new();
    t.handshake();
    t.pkt_wire(true, "PA", 101, 501, b"abcd", 10);
    t.c("PA", 111, 501, b"klm");
    assert_eq!(t.render(0, Side::Client), "abcd[gap 6]klm");
    assert_eq!(t.anomaly("flow.truncated_segment"), 1);
    assert_eq!(t.stats.gap_bytes, 6);
}

#[test]
fn truncated_tail_filled_by_retransmission_before_delivery() {
    let mut t = Cap::new();
    t.handshake();
    t.pkt_wire(true, "PA", 104, 501, b"de", 6); // out of order, truncated
    t.c("PA", 104, 501, b"defghi"); // full retransmission replaces the marker
    t.c("PA", 101, 501, b"abc");
    t.finish();
    assert_eq!(t.render(0, Side::Client), "abcdefghi");
    assert_eq!(t.stats.gap_bytes, 0);
    assert_eq!(t.stats.duplicate_bytes, 2);
}

#[test]
fn buffer_limit_declares_gap() {
    let limits = FlowLimits {
        max_buffered_bytes_per_direction: 8,
        ..FlowLimits::default()
    };
    let mut t = Cap::with_limits(limits);
    t.handshake();
    t.c("PA", 101, 501, b"ab");
    t.c("PA", 105, 501, b"efgh");
    t.c("PA", 111, 501, b"klmno");
    assert_eq!(t.render(0, Side::Client), "ab[gap 2]efgh");
    assert_eq!(t.table.buffered_bytes(), 5);
    assert_eq!(t.anomaly("flow.buffer_limit"), 1);
    t.c("PA", 103, 501, b"cd"); // too late: already declared lost
    t.finish();
    assert_eq!(t.render(0, Side::Client), "ab[gap 2]efgh[gap 2]klmno");
    assert_eq!(t.stats.duplicate_bytes, 2);
}

#[test]
fn data_past_fin_is_dropped() {
    let mut t = Cap::new();
    t.handshake();
    t.c("FA", 101, 501, b"abc");
    t.c("PA", 103, 501, b"cdef");
    t.finish();
    assert_eq!(t.render(0, Side::Client), "abc[fin]");
    assert_eq!(t.anomaly("flow.data_after_fin"), 1);
    // "c" re-sent is a duplicate; "def" lies past the FIN.
    assert_eq!(t.stats.duplicate_bytes, 1);
    assert_eq!(t.stats.tcp_bytes_unused.get(UnusedBytes::AfterFin), 3);
}

#[test]
fn syn_payload_starts_after_isn() {
    let mut t = Cap::new();
    t.c("S", 100, 0, b"early"); // TCP Fast Open data
    t.c("PA", 106, 0, b"!");
    t.finish();
    assert_eq!(t.render(0, Side::Client), "early!");
}

#[test]
fn implausible_ack_or_fin_invents_no_gap() {
    let mut t = Cap::new();
    t.handshake();
    t.c("PA", 101, 501, b"abc");
    t.s("A", 501, 101 + 50_000_000, b""); // acks 50 MB never sent
    t.c("FA", 2_000_000_000, 501, b""); // FIN 2 GB ahead
    t.finish();
    assert_eq!(t.render(0, Side::Client), "abc");
    assert_eq!(t.stats.gap_bytes, 0);
    assert_eq!(t.anomaly("flow.seq_out_of_window"), 1);
}

#[test]
fn keepalive_probe_is_a_duplicate_not_a_conflict() {
    let mut t = Cap::new();
    t.handshake();
    t.c("PA", 101, 501, b"abc");
    t.c("A", 103, 501, b"\0"); // keep-alive: seq = next - 1, one garbage byte
    t.c("PA", 104, 501, b"d");
    t.finish();
    assert_eq!(t.render(0, Side::Client), "abcd");
    assert_eq!(t.stats.duplicate_bytes, 1);
    assert_eq!(t.anomaly("flow.overlap_mismatch"), 0);
}

#[test]
fn rst_as_first_packet_is_a_complete_stream() {
    let mut t = Cap::new();
    t.s("RA", 0, 101, b"");
    assert_eq!(t.closes(), vec![(0, CloseReason::Finished)]);
    assert_eq!(t.render(0, Side::Client), "[rst]");
    t.finish();
    assert_eq!(t.stats.tcp_streams, 1);
    assert_well_formed(&t.out);
}
