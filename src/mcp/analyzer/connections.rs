//! The MCP stage's column of the connections table: how many exchange rows each TCP
//! connection produced. A connection's record arrives when the connection closes, but its
//! rows may still be waiting for release (or be dropped as tentative), so the record waits
//! here until the last of its rows has left, then goes out with the count. State: one entry
//! per connection with rows still in the analyzer, and the records waiting for them.

use crate::flow::ConnectionRecord;
use crate::hashing::HashMap;

#[derive(Debug, Default)]
struct Tally {
    /// Rows made and not yet released or dropped.
    live: u64,
    /// Rows released.
    released: u64,
    /// The connection closed: its record waits for the live rows.
    closed: Option<Box<ConnectionRecord>>,
}

/// Rows per connection, and the records of closed connections ready to go out.
#[derive(Debug, Default)]
pub(super) struct ConnectionRows {
    tallies: HashMap<u64, Tally>,
    ready: Vec<Box<ConnectionRecord>>,
}

impl ConnectionRows {
    /// A row of connection `conn` was made.
    pub fn made(&mut self, conn: u64) {
        let t = self.tallies.entry(conn).or_default();
        t.live = t.live.saturating_add(1);
    }

    /// A row of `conn` left: released as an exchange, or dropped.
    pub fn left(&mut self, conn: u64, released: bool) {
        let Some(t) = self.tallies.get_mut(&conn) else {
            return;
        };
        t.live = t.live.saturating_sub(1);
        if released {
            t.released = t.released.saturating_add(1);
        }
        if t.live == 0 && t.closed.is_some() {
            self.close(conn);
        }
    }

    /// Connection `conn` closed (every HTTP event of it has been pushed).
    pub fn closed(&mut self, conn: u64, record: Box<ConnectionRecord>) {
        let t = self.tallies.entry(conn).or_default();
        t.closed = Some(record);
        if t.live == 0 {
            self.close(conn);
        }
    }

    fn close(&mut self, conn: u64) {
        if let Some(t) = self.tallies.remove(&conn)
            && let Some(mut record) = t.closed
        {
            record.mcp_exchanges = Some(t.released);
            self.ready.push(record);
        }
    }

    /// The records whose rows have all left, in the order that happened.
    pub fn take_ready(&mut self) -> Vec<Box<ConnectionRecord>> {
        std::mem::take(&mut self.ready)
    }

    /// End of input, every row released: records still waiting go out as they are.
    pub fn finish(&mut self) -> Vec<Box<ConnectionRecord>> {
        let mut waiting: Vec<u64> = self
            .tallies
            .iter()
            .filter(|(_, t)| t.closed.is_some())
            .map(|(&c, _)| c)
            .collect();
        waiting.sort_unstable();
        for conn in waiting {
            self.close(conn);
        }
        self.tallies.clear();
        self.take_ready()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn record(stream: u64) -> Box<ConnectionRecord> {
        Box::new(ConnectionRecord {
            tcp_stream: stream,
            ..ConnectionRecord::default()
        })
    }

    #[test]
    fn a_record_waits_for_its_last_row_and_counts_only_released_rows() {
        let mut c = ConnectionRows::default();
        c.made(1);
        c.made(1);
        c.made(1);
        c.left(1, true);
        c.closed(1, record(1));
        assert!(c.take_ready().is_empty());
        c.left(1, false);
        assert!(c.take_ready().is_empty());
        c.left(1, true);
        let ready = c.take_ready();
        assert_eq!(ready.len(), 1);
        assert_eq!(ready[0].mcp_exchanges, Some(2));
        assert!(c.tallies.is_empty());
    }

    #[test]
    fn a_connection_without_rows_goes_out_at_once_with_zero() {
        let mut c = ConnectionRows::default();
        c.closed(4, record(4));
        let ready = c.take_ready();
        assert_eq!(ready[0].mcp_exchanges, Some(0));
        assert!(c.tallies.is_empty());
    }
}
