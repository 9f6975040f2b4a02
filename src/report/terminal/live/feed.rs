//! The capture side of the screen: what it sends, and [`ScreenFeed`], the sender that never
//! waits for the screen and counts what it could not hand over.

use super::health::CaptureHealth;
use super::row::ScreenRow;
use crate::mcp::Exchange;
use std::sync::mpsc::{Receiver, SyncSender, TrySendError, sync_channel};

/// Messages queued for the screen by default. The screen empties the queue every 50 ms, so
/// a full queue means the screen fell behind, and rows are then counted, not waited for.
pub const DEFAULT_FEED_CAPACITY: usize = 4096;

/// What the capture sends the screen.
// Nearly every message is a row, so a boxed row would only add an allocation per row.
#[allow(clippy::large_enum_variant)]
#[derive(Debug, Clone)]
pub enum ScreenMsg {
    Row(ScreenRow),
    Health(CaptureHealth),
    /// The capture ended: the screen returns.
    Finished,
}

/// The capture thread's handle on the screen: `try_send` only, so a slow screen never slows
/// the capture; rows it could not hand over are counted and sent with the next health.
#[derive(Debug)]
pub struct ScreenFeed {
    tx: SyncSender<ScreenMsg>,
    rows_not_shown: u64,
}

impl ScreenFeed {
    /// A feed and the receiver to give [`super::run_screen`], with room for `capacity`
    /// messages (at least one).
    pub fn new(capacity: usize) -> (ScreenFeed, Receiver<ScreenMsg>) {
        let (tx, rx) = sync_channel(capacity.max(1));
        let feed = ScreenFeed {
            tx,
            rows_not_shown: 0,
        };
        (feed, rx)
    }

    /// Offers `e` to the screen; counts it when the queue is full or the screen is gone.
    pub fn row(&mut self, e: &Exchange) {
        if self
            .tx
            .try_send(ScreenMsg::Row(ScreenRow::from_exchange(e)))
            .is_err()
        {
            self.rows_not_shown = self.rows_not_shown.saturating_add(1);
        }
    }

    /// Offers the capture's health, its `rows_not_shown` set to this feed's count. A health
    /// that does not fit is dropped: the next one carries the same counters, updated.
    pub fn health(&mut self, mut health: CaptureHealth) {
        health.rows_not_shown = self.rows_not_shown;
        let _ = self.tx.try_send(ScreenMsg::Health(health));
    }

    /// Rows not handed to the screen so far.
    pub fn rows_not_shown(&self) -> u64 {
        self.rows_not_shown
    }

    /// Tells the screen the capture ended. Waits for room (at most one screen turn, the
    /// screen empties the queue every 50 ms) unless the screen is already gone.
    pub fn finish(self) {
        match self.tx.try_send(ScreenMsg::Finished) {
            Ok(()) | Err(TrySendError::Disconnected(_)) => {}
            Err(TrySendError::Full(msg)) => {
                let _ = self.tx.send(msg);
            }
        }
    }
}
