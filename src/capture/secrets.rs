//! The capture's own secrets (pcapng Decryption Secrets Blocks), shared append-only: the
//! capture reader appends each block as it reads it, and every stage that decrypts reads
//! them from the same handle, whatever thread it runs on, so no driver forwards them.
//!
//! A block applies to the packets after it: it is stamped with the number of the first
//! frame read after it ([`SecretsBlock::from_frame`]), and a reader takes it for the stream
//! events of that frame and later ones. Blocks are never removed or changed, so a reader
//! only keeps how many it has taken. A handle whose inputs cannot carry blocks (classic pcap
//! only) says so ([`CaptureSecrets::may_grow`]): a TLS connection then waits for none.

use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, PoisonError};

/// One Decryption Secrets Block.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SecretsBlock {
    /// The number of the first frame after the block ([`crate::capture::Frame::index`]);
    /// one past the last frame for a block after every packet.
    pub from_frame: u64,
    /// The block's secrets type (`TLSK` for a TLS key log).
    pub secrets_type: u32,
    pub data: Vec<u8>,
}

/// A handle on the capture's secrets; clones share them.
#[derive(Debug, Clone, Default)]
pub struct CaptureSecrets {
    shared: Arc<Shared>,
}

#[derive(Debug, Default)]
struct Shared {
    /// Blocks appended so far: read without the lock, so that a reader with nothing new to
    /// take costs one atomic load per event.
    len: AtomicUsize,
    blocks: Mutex<Vec<SecretsBlock>>,
    /// No block can come: no input can carry one.
    none_to_come: AtomicBool,
}

impl CaptureSecrets {
    /// Appends a block (the capture reader does, as it reads one).
    pub fn append(&self, block: SecretsBlock) {
        let mut blocks = self
            .shared
            .blocks
            .lock()
            .unwrap_or_else(PoisonError::into_inner);
        blocks.push(block);
        self.shared.len.store(blocks.len(), Ordering::Release);
    }

    /// How many blocks were appended so far.
    pub fn len(&self) -> usize {
        self.shared.len.load(Ordering::Acquire)
    }

    /// Says that no block will be appended (the inputs cannot carry any).
    pub fn none_to_come(&self) {
        self.shared.none_to_come.store(true, Ordering::Release);
    }

    /// Whether blocks may still be appended (a pcapng input, a live capture; unknown: yes).
    pub fn may_grow(&self) -> bool {
        !self.shared.none_to_come.load(Ordering::Acquire)
    }

    /// Whether no block was appended yet.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Hands the blocks from position `taken` on that apply to `frame` (stamped at or before
    /// it) to `take`, in order, stopping at the first that does not; returns the new count
    /// taken. `u64::MAX` takes every block appended so far.
    pub fn take_from(
        &self,
        taken: usize,
        frame: u64,
        mut take: impl FnMut(&SecretsBlock),
    ) -> usize {
        if self.len() <= taken {
            return taken;
        }
        let blocks = self
            .shared
            .blocks
            .lock()
            .unwrap_or_else(PoisonError::into_inner);
        let mut next = taken;
        for block in blocks.get(taken..).unwrap_or_default() {
            if block.from_frame > frame {
                break;
            }
            take(block);
            next += 1;
        }
        next
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn block(from_frame: u64, byte: u8) -> SecretsBlock {
        SecretsBlock {
            from_frame,
            secrets_type: 1,
            data: vec![byte],
        }
    }

    #[test]
    fn a_reader_takes_the_blocks_of_its_frame_in_order_and_each_once() {
        let secrets = CaptureSecrets::default();
        let reader = secrets.clone();
        secrets.append(block(1, 0));
        secrets.append(block(5, 1));
        let mut seen = Vec::new();
        let taken = reader.take_from(0, 4, |b| seen.push(b.data[0]));
        assert_eq!((taken, seen.as_slice()), (1, [0].as_slice()));
        let taken = reader.take_from(taken, 4, |b| seen.push(b.data[0]));
        assert_eq!(taken, 1);
        let taken = reader.take_from(taken, 5, |b| seen.push(b.data[0]));
        assert_eq!((taken, seen.as_slice()), (2, [0, 1].as_slice()));
        secrets.append(block(9, 2));
        let taken = reader.take_from(taken, u64::MAX, |b| seen.push(b.data[0]));
        assert_eq!((taken, seen.as_slice()), (3, [0, 1, 2].as_slice()));
    }

    #[test]
    fn every_handle_knows_when_no_block_can_come() {
        let secrets = CaptureSecrets::default();
        let reader = secrets.clone();
        assert!(reader.may_grow(), "unknown: blocks may come");
        secrets.none_to_come();
        assert!(!reader.may_grow());
    }
}
