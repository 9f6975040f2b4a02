//! The seam between the capture stage and the packet loop: where frames come from.
//!
//! The pipeline reads every capture through [`FrameSource`] and never learns what is behind
//! it. Today one implementation, [`Merger`], reads the files and standard input named on the
//! command line (each a [`super::PacketReader`] over any `Read`: a file, gzip, a pipe),
//! merged in time order; a live interface (`live` feature, `super::live`) is another,
//! numbering the packets as they arrive, telling the time while the interface is quiet
//! ([`Next::Quiet`]) and reporting `pcap_stats` drops in its [`InputInfo::drops`].

use super::{CaptureCounters, CaptureSecrets, FrameRef, InputInfo, Merger};

/// What a source hands the packet loop next.
#[derive(Debug)]
pub enum Next<'a> {
    /// A frame, numbered from 1 across the whole capture, its bytes borrowed until the next
    /// call.
    Frame(FrameRef<'a>),
    /// No frame yet, and capture time is now `now_ns` (a live interface that is quiet): the
    /// stages may time out what waited for packets that did not come.
    Quiet { now_ns: i64 },
    /// The end of the capture.
    End,
}

/// A source of numbered frames.
pub trait FrameSource {
    /// The next frame, a quiet moment, or the end. Counts `stats.packets_total` (and the
    /// capture's anomalies: damaged inputs, unknown interfaces).
    fn next(&mut self, stats: &mut CaptureCounters) -> Next<'_>;

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
    fn next(&mut self, stats: &mut CaptureCounters) -> Next<'_> {
        match self.next_frame_ref(stats) {
            Some(frame) => Next::Frame(frame),
            None => Next::End,
        }
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
