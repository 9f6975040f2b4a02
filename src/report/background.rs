//! A [`TableWriter`] on its own thread: formatting and compressing rows (JSON lines, CSV,
//! Parquet with zstd) then overlaps the analysis instead of adding to it. Rows go over a
//! bounded channel in batches, in order, so memory stays at a few batches.

use super::{ReportError, Table, TableWriter};
use std::sync::mpsc::{Receiver, SyncSender, sync_channel};
use std::thread::JoinHandle;

/// Rows handed to the writer thread at a time: the channel costs nothing per row.
pub const ROW_BATCH: usize = 256;

/// Batches in flight before `push` waits for the writer.
const BATCHES_IN_FLIGHT: usize = 8;

enum Msg<T> {
    Rows(Vec<T>),
    /// Everything was sent: finish the file. Without it the file is dropped (removed).
    Commit,
}

/// Writes rows on a background thread. Dropped without [`BackgroundWriter::finish`], the
/// partial file is removed, as with [`TableWriter`].
pub struct BackgroundWriter<T: Table + Send + 'static> {
    tx: Option<SyncSender<Msg<T>>>,
    handle: Option<JoinHandle<Result<(), ReportError>>>,
    batch: Vec<T>,
}

impl<T: Table + Send + 'static> BackgroundWriter<T> {
    /// Moves `writer` to a new thread.
    pub fn spawn(writer: TableWriter<T>) -> Result<Self, ReportError> {
        let (tx, rx) = sync_channel(BATCHES_IN_FLIGHT);
        let handle = std::thread::Builder::new()
            .name("mcp-trace-writer".into())
            .spawn(move || write_all(writer, rx))
            .map_err(|e| ReportError::Thread {
                message: e.to_string(),
            })?;
        Ok(BackgroundWriter {
            tx: Some(tx),
            handle: Some(handle),
            batch: Vec::with_capacity(ROW_BATCH),
        })
    }

    /// Queues one row. An error is the writer's own (the file could not be written).
    pub fn push(&mut self, row: T) -> Result<(), ReportError> {
        self.batch.push(row);
        if self.batch.len() >= ROW_BATCH {
            let rows = std::mem::replace(&mut self.batch, Vec::with_capacity(ROW_BATCH));
            self.send(Msg::Rows(rows))?;
        }
        Ok(())
    }

    /// Writes the remaining rows and completes the file.
    pub fn finish(mut self) -> Result<(), ReportError> {
        let rows = std::mem::take(&mut self.batch);
        self.send(Msg::Rows(rows))?;
        self.send(Msg::Commit)?;
        self.tx = None;
        self.join()
    }

    fn send(&mut self, msg: Msg<T>) -> Result<(), ReportError> {
        let sent = self.tx.as_ref().is_some_and(|tx| tx.send(msg).is_ok());
        if sent {
            return Ok(());
        }
        // The writer stopped on an error: that error is the one to report.
        self.tx = None;
        match self.join() {
            Err(e) => Err(e),
            Ok(()) => Err(ReportError::Thread {
                message: "the writer stopped early".into(),
            }),
        }
    }

    fn join(&mut self) -> Result<(), ReportError> {
        match self.handle.take().map(JoinHandle::join) {
            None => Ok(()),
            Some(Ok(result)) => result,
            Some(Err(panic)) => Err(ReportError::Thread {
                message: panic_message(&panic),
            }),
        }
    }
}

impl<T: Table + Send + 'static> Drop for BackgroundWriter<T> {
    fn drop(&mut self) {
        // Closing the channel without `Commit` makes the thread drop (remove) the partial
        // file; waiting for it means no file is left behind when the process exits.
        self.tx = None;
        let _ = self.join();
    }
}

fn write_all<T: Table>(
    mut writer: TableWriter<T>,
    rx: Receiver<Msg<T>>,
) -> Result<(), ReportError> {
    for msg in rx {
        match msg {
            Msg::Rows(rows) => {
                for row in &rows {
                    writer.push(row)?;
                }
            }
            Msg::Commit => return writer.finish().map(|_| ()),
        }
    }
    Ok(()) // abandoned: `writer` is dropped and its partial file removed
}

fn panic_message(panic: &Box<dyn std::any::Any + Send>) -> String {
    let text = panic
        .downcast_ref::<&str>()
        .map(|s| (*s).to_string())
        .or_else(|| panic.downcast_ref::<String>().cloned())
        .unwrap_or_else(|| "unknown panic".into());
    format!("the writer thread panicked: {text}")
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::mcp::Exchange;
    use crate::report::Format;

    fn row(id: u64) -> Exchange {
        Exchange {
            exchange_id: id,
            ..Exchange::default()
        }
    }

    #[test]
    fn rows_arrive_in_order_and_complete() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("out.jsonl");
        let w = TableWriter::<Exchange>::create(&path, Format::Jsonl).unwrap();
        let mut bg = BackgroundWriter::spawn(w).unwrap();
        let n = ROW_BATCH as u64 * 3 + 7;
        for id in 1..=n {
            bg.push(row(id)).unwrap();
        }
        bg.finish().unwrap();
        let text = std::fs::read_to_string(&path).unwrap();
        let ids: Vec<u64> = text
            .lines()
            .map(|l| {
                serde_json::from_str::<serde_json::Value>(l).unwrap()["exchange_id"]
                    .as_u64()
                    .unwrap()
            })
            .collect();
        assert_eq!(ids, (1..=n).collect::<Vec<_>>());
    }

    #[test]
    fn dropped_unfinished_leaves_no_file() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("out.jsonl");
        let w = TableWriter::<Exchange>::create(&path, Format::Jsonl).unwrap();
        let mut bg = BackgroundWriter::spawn(w).unwrap();
        for id in 1..=1000 {
            bg.push(row(id)).unwrap();
        }
        drop(bg);
        let left: Vec<_> = std::fs::read_dir(dir.path()).unwrap().collect();
        assert!(left.is_empty(), "{left:?}");
    }
}
