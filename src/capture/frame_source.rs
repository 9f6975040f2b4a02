//! The seam between the capture stage and the packet loop: where frames come from.
//!
//! The pipeline reads every capture through [`FrameSource`] and never learns what is behind
//! it. Today one implementation, [`Merger`], reads the files and standard input named on the
//! command line (each a [`super::PacketReader`] over any `Read`: a file, gzip, a pipe),
//! merged in time order; a live interface (libpcap, issue 33) is meant to be another,
//! numbering the packets as they arrive and reporting `pcap_stats` drops in its
//! [`InputInfo::drops`].

use super::{CaptureCounters, CaptureSecrets, FrameRef, InputInfo, Merger};

/// A source of numbered frames.
pub trait FrameSource {
    /// The next frame, numbered from 1 across the whole capture, its bytes borrowed until the
    /// next call; `None` at the end. Counts `stats.packets_total` (and the capture's
    /// anomalies: damaged inputs, unknown interfaces).
    fn next_frame(&mut self, stats: &mut CaptureCounters) -> Option<FrameRef<'_>>;

    /// The capture's own TLS secrets (pcapng Decryption Secrets Blocks), filled as they are
    /// read: the handle is taken before the first frame and shared with the TLS stages.
    fn secrets(&self) -> CaptureSecrets;

    /// Bytes read so far (compressed bytes for gzip), for progress and the run summary.
    fn bytes_read(&self) -> u64;

    /// Facts about every input, in input order: format, link types, damage, drops.
    fn infos(&self) -> Vec<InputInfo>;
}

/// The files and standard input of the command line, merged in time order.
impl FrameSource for Merger {
    #[inline]
    fn next_frame(&mut self, stats: &mut CaptureCounters) -> Option<FrameRef<'_>> {
        self.next_frame_ref(stats)
    }

    fn secrets(&self) -> CaptureSecrets {
        Merger::secrets(self)
    }

    fn bytes_read(&self) -> u64 {
        Merger::bytes_read(self)
    }

    fn infos(&self) -> Vec<InputInfo> {
        Merger::infos(self)
    }
}
