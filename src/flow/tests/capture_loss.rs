//! The capture-loss estimate: advancing ACKs (`ack_events`) and those of them that
//! acknowledge sequence space the capture never showed (`ack_gap_events`).

use super::*;

#[test]
fn ack_for_a_lost_segment_is_one_gap_event() {
    // Client data at offsets 0..3, 3..6 (lost), 6..9; the server acknowledges after each.
    let mut t = Cap::new();
    t.handshake(); // the SYNs' ACKs acknowledge offset 0: not an advance
    t.c("PA", 101, 501, b"aaa");
    t.s("A", 501, 104, b""); // acks 0..3, seen: ack event 1
    t.s("A", 501, 107, b""); // acks 3..6, never captured: ack event 2, gap event 1
    t.c("PA", 107, 501, b"ccc");
    t.s("A", 501, 110, b""); // acks 6..9, buffered: ack event 3
    t.s("A", 501, 110, b""); // no advance: not counted (and the hole becomes a gap)
    t.finish();
    assert_eq!(t.stats.ack_events, 3);
    assert_eq!(t.stats.ack_gap_events, 1);
    assert_eq!(t.render(0, Side::Client), "aaa[gap 3]ccc");
}

#[test]
fn complete_conversation_has_no_gap_event_and_fin_is_seen() {
    let mut t = Cap::new();
    t.handshake();
    t.c("PA", 101, 501, b"req");
    t.s("PA", 501, 104, b"response"); // client direction: ack event 1
    t.c("A", 104, 509, b""); // server direction: ack event 2
    t.c("FA", 104, 509, b"");
    t.s("FA", 509, 105, b""); // acks the client's FIN: ack event 3
    t.finish();
    assert_eq!(t.stats.ack_events, 3);
    assert_eq!(t.stats.ack_gap_events, 0);
}

#[test]
fn truncated_tail_is_not_capture_loss_but_missing_data_before_fin_is() {
    // The snap length cut 7 of 10 bytes: seen on the wire, not lost by the capture.
    let mut t = Cap::new();
    t.handshake();
    t.pkt_wire(true, "PA", 101, 501, b"abc", 10);
    t.s("A", 501, 111, b"");
    assert_eq!((t.stats.ack_events, t.stats.ack_gap_events), (1, 0));
    // A FIN whose data before it was never captured: the ACK of the FIN covers the hole.
    t.c("FA", 116, 501, b"");
    t.s("A", 501, 117, b"");
    assert_eq!((t.stats.ack_events, t.stats.ack_gap_events), (2, 1));
}

#[test]
fn acks_beyond_all_data_seen_count_and_implausible_ones_do_not() {
    let mut t = Cap::new();
    t.handshake();
    t.c("PA", 101, 501, b"x");
    t.s("A", 501, 102 + 1000, b""); // 1000 bytes after the one seen were never captured
    assert_eq!((t.stats.ack_events, t.stats.ack_gap_events), (1, 1));
    // Far beyond the data seen (MAX_ACK_AHEAD_BYTES): a bogus number, not counted.
    t.s("A", 501, 102 + (8 << 20), b"");
    assert_eq!((t.stats.ack_events, t.stats.ack_gap_events), (1, 1));
}
