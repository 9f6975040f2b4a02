//! k-way merge of several packet inputs into one capture, in timestamp order.
//!
//! Like `mergecap`: each input contributes only its next frame, so frames of
//! one input keep their file order even when its timestamps go backwards;
//! equal timestamps keep input order (the heap key is `(ts_ns, position)`).

use super::reader::{PacketReader, UNKNOWN_INTERFACE_LINK_TYPE};
use super::secrets::CaptureSecrets;
use super::{Frame, FrameRef, InputInfo};
use crate::anomaly::Anomaly;
use crate::capture::CaptureCounters;
use std::cmp::Reverse;
use std::collections::BinaryHeap;

/// Merges [`PacketReader`]s and numbers their frames as one capture.
pub struct Merger {
    readers: Vec<PacketReader>,
    /// Next frame of each reader, if it has one.
    heads: Vec<Option<Frame>>,
    /// `(ts_ns, reader position)` of every present head.
    queue: BinaryHeap<Reverse<(i64, usize)>>,
    primed: bool,
    /// The only input ended (one input is read without the heap).
    single_ended: bool,
    /// The frame [`Merger::next_frame_ref`] lent last, when it came through the heap.
    current: Option<Frame>,
    next_index: u64,
    /// Every input's Decryption Secrets Blocks, as they are read.
    secrets: CaptureSecrets,
}

/// The next frame's number (counted in `stats`), from `next_index`.
fn number(next_index: &mut u64, link_type: u32, stats: &mut CaptureCounters) -> u64 {
    let index = *next_index;
    *next_index = next_index.saturating_add(1);
    stats.packets_total = stats.packets_total.saturating_add(1);
    if link_type == UNKNOWN_INTERFACE_LINK_TYPE {
        stats.anomaly(Anomaly::CaptureUnknownInterface);
    }
    index
}

impl Merger {
    /// Merge `readers`; their position in the vector breaks timestamp ties.
    pub fn new(mut readers: Vec<PacketReader>) -> Merger {
        let heads = readers.iter().map(|_| None).collect();
        let secrets = CaptureSecrets::default();
        if !readers.iter().any(PacketReader::may_carry_secrets) {
            secrets.none_to_come();
        }
        for reader in &mut readers {
            reader.share_secrets(secrets.clone());
        }
        Merger {
            readers,
            heads,
            queue: BinaryHeap::new(),
            primed: false,
            single_ended: false,
            current: None,
            next_index: 1,
            secrets,
        }
    }

    /// The capture's Decryption Secrets Blocks, each stamped with the number of the frame
    /// after it, appended as the inputs are read.
    pub fn secrets(&self) -> CaptureSecrets {
        self.secrets.clone()
    }

    /// Pull reader `i`'s next frame into its head slot. Damage ends that reader
    /// only: it is already in its `InputInfo.error`, here it becomes an anomaly.
    fn pull(&mut self, i: usize, stats: &mut CaptureCounters) {
        let Some(reader) = self.readers.get_mut(i) else {
            return;
        };
        // Blocks read on the way precede the frame numbered next.
        reader.set_next_frame(self.next_index);
        match reader.next() {
            Some(Ok(frame)) => {
                self.queue.push(Reverse((frame.ts_ns, i)));
                if let Some(slot) = self.heads.get_mut(i) {
                    *slot = Some(frame);
                }
            }
            Some(Err(_)) => stats.anomaly(Anomaly::CaptureDamagedInput),
            None => {}
        }
    }

    /// The next frame in timestamp order, with `index` set (1-based across inputs).
    /// Counts `stats.packets_total`.
    pub fn next_frame(&mut self, stats: &mut CaptureCounters) -> Option<Frame> {
        if self.readers.len() == 1 {
            return self.next_frame_ref(stats).map(|f| f.to_frame());
        }
        if !self.primed {
            self.primed = true;
            for i in 0..self.readers.len() {
                self.pull(i, stats);
            }
        }
        let Reverse((_, i)) = self.queue.pop()?;
        let mut frame = self.heads.get_mut(i)?.take()?;
        self.pull(i, stats);
        frame.index = number(&mut self.next_index, frame.link_type, stats);
        Some(frame)
    }

    /// [`Merger::next_frame`] with the bytes borrowed until the next call: one input is
    /// decoded straight from its read buffer, without the heap or a copy of each record.
    pub fn next_frame_ref(&mut self, stats: &mut CaptureCounters) -> Option<FrameRef<'_>> {
        if self.readers.len() != 1 {
            let frame = self.next_frame(stats)?;
            if let Some(old) = self.current.replace(frame) {
                crate::buffers::recycle(old.data);
            }
            return self.current.as_ref().map(Frame::as_ref);
        }
        if self.single_ended {
            return None;
        }
        let Merger {
            readers,
            next_index,
            single_ended,
            ..
        } = self;
        let reader = readers.first_mut()?;
        reader.set_next_frame(*next_index);
        match reader.next_ref() {
            Some(Ok(mut frame)) => {
                frame.index = number(next_index, frame.link_type, stats);
                Some(frame)
            }
            Some(Err(_)) => {
                stats.anomaly(Anomaly::CaptureDamagedInput);
                *single_ended = true;
                None
            }
            None => {
                *single_ended = true;
                None
            }
        }
    }

    /// Bytes read from all inputs so far (compressed bytes for gzip), for progress.
    pub fn bytes_read(&self) -> u64 {
        self.readers
            .iter()
            .map(PacketReader::bytes_read)
            .fold(0u64, u64::saturating_add)
    }

    /// Facts about every input, in input order.
    pub fn infos(&self) -> Vec<InputInfo> {
        self.readers.iter().map(|r| r.info().clone()).collect()
    }
}
