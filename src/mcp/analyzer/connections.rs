//! The MCP stage's column of the connections table: how many exchange rows each TCP
//! connection produced. A connection's record arrives when the connection closes, but its
//! rows may still be waiting for release (or be dropped as tentative), so the record waits
//! here until the last of its rows has left, then goes out with the count, behind the
//! records of connections that closed before it. State: one entry per connection with rows
//! still in the analyzer (HAR connections never close: theirs are dropped at the end), and
//! the records of the connections that closed while rows of theirs or of an earlier closed
//! one were still held (held rows are bounded by the release rules of `release.rs`).

use crate::hashing::HashMap;
use crate::stream::ConnectionRecord;
use std::collections::VecDeque;

#[derive(Debug, Default)]
struct Tally {
    /// Rows made and not yet released or dropped.
    live: u64,
    /// Rows released.
    released: u64,
}

/// Rows per connection, and the records of closed connections, which leave in the order the
/// connections closed: the order of the HTTP events, the same with any number of threads.
#[derive(Debug, Default)]
pub(super) struct ConnectionRows {
    tallies: HashMap<u64, Tally>,
    /// Closed connections, oldest first, each waiting until it and those before it have no
    /// live rows.
    closing: VecDeque<(u64, Box<ConnectionRecord>)>,
    ready: Vec<ConnectionRecord>,
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
        self.release_closed(false);
    }

    /// Connection `conn` closed (every HTTP event of it has been pushed).
    pub fn closed(&mut self, conn: u64, record: Box<ConnectionRecord>) {
        self.closing.push_back((conn, record));
        self.release_closed(false);
    }

    /// Moves the oldest closed connections whose rows have all left to `ready` (with
    /// `all`, every one: the end of input).
    fn release_closed(&mut self, all: bool) {
        while let Some((conn, _)) = self.closing.front() {
            let live = self.tallies.get(conn).map_or(0, |t| t.live);
            if live > 0 && !all {
                return;
            }
            let Some((conn, mut record)) = self.closing.pop_front() else {
                return;
            };
            let released = self.tallies.remove(&conn).map_or(0, |t| t.released);
            record.mcp.exchanges = Some(released);
            self.ready.push(*record);
        }
    }

    /// The records ready to go out, in closing order.
    pub fn take_ready(&mut self) -> Vec<ConnectionRecord> {
        std::mem::take(&mut self.ready)
    }

    /// End of input, every row released: the records still waiting go out too.
    pub fn finish(&mut self) -> Vec<ConnectionRecord> {
        self.release_closed(true);
        self.tallies.clear();
        self.take_ready()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn record(stream: u64) -> Box<ConnectionRecord> {
        let mut record = ConnectionRecord::default();
        record.flow.tcp_stream = stream;
        Box::new(record)
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
        assert_eq!(ready[0].mcp.exchanges, Some(2));
        assert!(c.tallies.is_empty());
    }

    #[test]
    fn records_leave_in_closing_order_even_when_a_later_one_is_done_first() {
        let mut c = ConnectionRows::default();
        c.made(1);
        c.closed(1, record(1));
        c.closed(2, record(2));
        // Connection 2 has no rows, but waits for connection 1's last row.
        assert!(c.take_ready().is_empty());
        c.left(1, true);
        let streams: Vec<u64> = c.take_ready().iter().map(|r| r.flow.tcp_stream).collect();
        assert_eq!(streams, [1, 2]);
    }

    #[test]
    fn the_end_of_input_lets_every_closed_record_go() {
        let mut c = ConnectionRows::default();
        c.made(9);
        c.closed(9, record(9));
        c.made(77);
        let out = c.finish();
        assert_eq!(out.len(), 1);
        assert_eq!(out[0].mcp.exchanges, Some(0));
        assert!(c.tallies.is_empty() && c.closing.is_empty());
    }

    #[test]
    fn a_connection_without_rows_goes_out_at_once_with_zero() {
        let mut c = ConnectionRows::default();
        c.closed(4, record(4));
        let ready = c.take_ready();
        assert_eq!(ready[0].mcp.exchanges, Some(0));
        assert!(c.tallies.is_empty());
    }
}
