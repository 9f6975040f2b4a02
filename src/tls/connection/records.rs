//! A delivery's records: those whole in it read where they lie, one cut between deliveries
//! through the record reader. A wait for secrets that begins on a record stops the reading
//! there: the rest of the delivery waits with the connection (`wait.rs`).

use super::super::facts::reason;
use super::super::handshake::parse_sslv2_client_hello;
use super::super::record::{HEADER_LEN, Step, split_record};
use super::{TlsConnection, TlsContext};
use crate::stream::Side;
use crate::timestamp::CaptureTime;
use crate::tls::TlsCounters;

impl TlsConnection {
    /// Reads a delivery's records; the application data decrypted goes to the direction's
    /// `out`. Records that lie whole in the delivery are decrypted where they lie and
    /// their plaintext moved to its front, so that the delivery's buffer carries it on;
    /// only a record cut between deliveries is copied into the record reader. `at` is the
    /// delivery's time and frame.
    pub(super) fn on_data(
        &mut self,
        side: Side,
        bytes: Vec<u8>,
        at: (CaptureTime, u64),
        ctx: &mut TlsContext,
        stats: &mut TlsCounters,
    ) {
        self.bytes.received += bytes.len() as u64;
        self.read_delivery(side, bytes, at, ctx, stats);
    }

    /// [`TlsConnection::on_data`] for bytes already counted as received.
    pub(super) fn read_delivery(
        &mut self,
        side: Side,
        mut bytes: Vec<u8>,
        at: (CaptureTime, u64),
        ctx: &mut TlsContext,
        stats: &mut TlsCounters,
    ) {
        let delivered = bytes.len();
        let dir = self.dir(side);
        if dir.records.is_dead() {
            self.bytes.lose(reason::NOT_RECORDS, delivered);
            crate::buffers::recycle(bytes);
            return;
        }
        let mut from = 0;
        if !dir.records.at_boundary() {
            from = dir.records.wanted(&bytes);
            dir.records.push(bytes.get(..from).unwrap_or_default());
            self.read_held(side, ctx, stats);
        }
        let mut rest = Vec::new();
        if self.wait.is_some() {
            // The record just completed began a wait: the other bytes wait with it.
            rest = bytes.get(from..).unwrap_or_default().to_vec();
            bytes.clear();
        } else if from < delivered && self.dir(side).records.at_boundary() {
            rest = self.read_in_place(side, &mut bytes, from, ctx, stats);
        } else {
            let rest = bytes.get(from..).unwrap_or_default();
            if !rest.is_empty() {
                if self.dir(side).records.push(rest) {
                    self.read_held(side, ctx, stats);
                } else {
                    self.bytes.lose(reason::NOT_RECORDS, rest.len());
                }
            }
            // Every byte went to the record reader: none is plaintext.
            bytes.clear();
        }
        if self.wait.as_ref().is_some_and(|w| w.split.is_none()) {
            self.hold_rest(side, rest, at, ctx);
        }
        let dir = self.dir(side);
        if dir.out.is_empty() && !bytes.is_empty() {
            dir.out = bytes;
        } else {
            dir.out.extend_from_slice(&bytes);
            crate::buffers::recycle(bytes);
        }
        let held = dir.records.held();
        if held == 0 {
            dir.held_since = None;
        } else if held <= delivered || dir.held_since.is_none() {
            dir.held_since = Some(at.0);
        }
    }

    /// The records the record reader holds whole (until one begins a wait).
    pub(super) fn read_held(&mut self, side: Side, ctx: &mut TlsContext, stats: &mut TlsCounters) {
        while self.wait.is_none()
            && let Some(step) = self.dir(side).records.next_step()
        {
            match step {
                Step::Record(mut record) => {
                    let header = record.header;
                    let Some(plain) =
                        self.on_record(side, &header, &mut record.fragment, ctx, stats)
                    else {
                        continue;
                    };
                    let dir = self.dir(side);
                    if dir.out.is_empty() && plain.start == 0 {
                        record.fragment.truncate(plain.end);
                        dir.out = record.fragment;
                    } else {
                        dir.out
                            .extend_from_slice(record.fragment.get(plain).unwrap_or_default());
                    }
                }
                Step::Sslv2Hello(body) => {
                    self.bytes.handshake += body.len() as u64 + 2;
                    match parse_sslv2_client_hello(&body) {
                        Ok(hello) => self.on_client_hello(hello, ctx),
                        Err(e) => stats.anomaly(e.anomaly()),
                    }
                }
                Step::Skipped(n) => self.bytes.lose(reason::CUT_BY_GAP, n),
                Step::Failed(e, n) => {
                    stats.anomaly(e.anomaly());
                    self.bytes.lose(reason::NOT_RECORDS, n);
                }
            }
        }
    }

    /// The records of `bytes[from..]`, read where they lie: each one's application data
    /// is moved to the front of `bytes`, which keeps only that; a record cut at the end
    /// goes to the record reader. Returns the bytes after a record that began a wait.
    fn read_in_place(
        &mut self,
        side: Side,
        bytes: &mut Vec<u8>,
        from: usize,
        ctx: &mut TlsContext,
        stats: &mut TlsCounters,
    ) -> Vec<u8> {
        let mut at = from;
        let mut kept = 0;
        let mut rest = Vec::new();
        while let Some(tail) = bytes.get_mut(at..) {
            match split_record(tail) {
                Ok(Some(len)) => {
                    let (head, body) = tail.split_at_mut(HEADER_LEN);
                    let mut header = [0u8; HEADER_LEN];
                    header.copy_from_slice(head);
                    let fragment = body.get_mut(..len).unwrap_or_default();
                    if let Some(plain) = self.on_record(side, &header, fragment, ctx, stats) {
                        let plain = at + HEADER_LEN + plain.start..at + HEADER_LEN + plain.end;
                        let n = plain.len();
                        bytes.copy_within(plain, kept);
                        kept += n;
                    }
                    at += HEADER_LEN + len;
                    if self.wait.is_some() {
                        rest = bytes.get(at..).unwrap_or_default().to_vec();
                        break;
                    }
                }
                Ok(None) => {
                    self.dir(side).records.push(tail);
                    break;
                }
                Err(e) => {
                    self.dir(side).records.fail();
                    stats.anomaly(e.anomaly());
                    self.bytes.lose(reason::NOT_RECORDS, tail.len());
                    break;
                }
            }
        }
        bytes.truncate(kept);
        rest
    }
}
