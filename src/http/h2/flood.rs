//! Rates of frames that cost a peer nothing to send and a receiver work or state: SETTINGS,
//! PING and streams reset before their response (CVE-2023-44487, rapid reset). None of
//! them grows this reader's state; past a rate each is named once per connection and the
//! excess SETTINGS are not applied.

/// Most SETTINGS frames (not ACKs) per second of capture time from one side.
pub const SETTINGS_RATE_LIMIT: u32 = 100;
/// Most PING frames per second of capture time from one side.
pub const PING_RATE_LIMIT: u32 = 100;
/// Most streams reset before their response head per second of capture time on one
/// connection (`h2.rapid_reset`).
pub const RESET_RATE_LIMIT: u32 = 100;

const WINDOW_US: i64 = 1_000_000;

/// Events in the current one-second window.
#[derive(Debug, Default)]
pub(super) struct Rate {
    window_start: i64,
    count: u32,
    /// The rate was exceeded once on this connection (named once).
    pub tripped: bool,
}

impl Rate {
    /// Counts one event at `ts_us`; true while the window holds more than `limit`.
    pub fn over(&mut self, ts_us: i64, limit: u32) -> bool {
        if self.count == 0 || ts_us.saturating_sub(self.window_start) >= WINDOW_US {
            self.window_start = ts_us;
            self.count = 0;
        }
        self.count = self.count.saturating_add(1);
        self.count > limit
    }

    /// Counts one event; true only the first time the rate is exceeded on the connection.
    pub fn trips(&mut self, ts_us: i64, limit: u32) -> bool {
        self.over(ts_us, limit) && !std::mem::replace(&mut self.tripped, true)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_rate_trips_once_past_its_limit_within_a_second() {
        let mut r = Rate::default();
        for i in 0..10 {
            assert!(!r.trips(i * 1000, 10));
        }
        assert!(r.trips(10_000, 10));
        assert!(!r.trips(11_000, 10));
        assert!(r.over(12_000, 10));
        // A new window starts counting again.
        assert!(!r.over(2_000_000, 10));
    }

    #[test]
    fn spread_out_events_never_trip() {
        let mut r = Rate::default();
        for i in 0..10_000 {
            assert!(!r.trips(i * 200_000, 10));
        }
    }
}
