//! Capture health for the screen's header: what the capture says about itself, and the rate
//! derived from successive reports.

use crate::report::terminal::paint::fmt_bytes;

/// The capture's counters as the live command last read them. Cumulative since the capture
/// started; `None` where the source does not say (shown as `n/a`, never as 0).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct CaptureHealth {
    pub interface: String,
    /// Packets read from the capture.
    pub packets: u64,
    /// Bytes of those packets as captured.
    pub bytes: u64,
    /// Seconds since the capture started.
    pub elapsed_s: f64,
    /// libpcap `ps_drop`: no room in the kernel's buffer.
    pub kernel_drops: Option<u64>,
    /// libpcap `ps_ifdrop`: dropped by the interface or its driver.
    pub interface_drops: Option<u64>,
    /// Share (0..1) of TCP data the capture missed: ACKs for bytes never seen.
    pub capture_loss: Option<f64>,
    /// Rows the capture thread could not hand to the screen (its channel was full): missing
    /// from the table and the counters.
    pub rows_not_shown: u64,
}

/// A rate is measured over at least this many seconds, so that it does not jump with every
/// report.
const RATE_WINDOW_S: f64 = 1.0;

/// The latest health and the rates over the last window.
#[derive(Debug, Clone, Default)]
pub(super) struct HealthState {
    pub(super) latest: Option<CaptureHealth>,
    /// (elapsed_s, bytes, packets) at the start of the current window.
    base: Option<(f64, u64, u64)>,
    /// Bytes and packets per second over the last complete window.
    rate: Option<(f64, f64)>,
}

impl HealthState {
    pub(super) fn set(&mut self, h: CaptureHealth) {
        let sample = (h.elapsed_s, h.bytes, h.packets);
        match self.base {
            // Counters that went back are another capture's: start again.
            Some((t, b, p)) if h.elapsed_s < t || h.bytes < b || h.packets < p => {
                self.base = Some(sample);
                self.rate = None;
            }
            Some((t, b, p)) if h.elapsed_s - t >= RATE_WINDOW_S => {
                let dt = h.elapsed_s - t;
                self.rate = Some((
                    h.bytes.saturating_sub(b) as f64 / dt,
                    h.packets.saturating_sub(p) as f64 / dt,
                ));
                self.base = Some(sample);
            }
            Some(_) => {}
            None => self.base = Some(sample),
        }
        self.latest = Some(h);
    }

    /// Bytes and packets per second: over the last window, or the average until a window
    /// has passed. `None` before any time has passed.
    pub(super) fn rate(&self) -> Option<(f64, f64)> {
        self.rate.or_else(|| {
            let h = self.latest.as_ref()?;
            (h.elapsed_s > 0.0)
                .then(|| (h.bytes as f64 / h.elapsed_s, h.packets as f64 / h.elapsed_s))
        })
    }
}

/// `1.2 MB/s`.
pub(super) fn fmt_rate(bytes_per_s: f64) -> String {
    let n = if bytes_per_s.is_finite() && bytes_per_s > 0.0 {
        bytes_per_s.round() as u64 // saturating cast
    } else {
        0
    };
    format!("{}/s", fmt_bytes(n))
}

/// A count that may be unknown: `n/a`, never 0.
pub(super) fn fmt_known(n: Option<u64>) -> String {
    n.map_or_else(|| "n/a".to_string(), |n| n.to_string())
}

/// A share as a percentage, `n/a` when unknown.
pub(super) fn fmt_share(share: Option<f64>) -> String {
    share
        .filter(|s| s.is_finite())
        .map_or_else(|| "n/a".to_string(), |s| format!("{:.2}%", s * 100.0))
}

/// `1:02:03` or `02:03`.
pub(super) fn fmt_elapsed(s: f64) -> String {
    let total = if s.is_finite() && s > 0.0 {
        s as u64
    } else {
        0
    };
    let (h, m, s) = (total / 3600, total / 60 % 60, total % 60);
    if h > 0 {
        format!("{h}:{m:02}:{s:02}")
    } else {
        format!("{m:02}:{s:02}")
    }
}
