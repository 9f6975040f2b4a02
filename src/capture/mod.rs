//! Capture stage: input files -> [`Frame`]s (pcap, pcapng, gzip, stdin). A HAR export is
//! recognised here ([`Source::Har`]) and read by the `har` stage, which produces HTTP events.
//! The packet loop reads frames through [`FrameSource`], whatever is behind it.
//!
//! The format is recognised by content, never by extension. Several inputs
//! are merged in timestamp order and numbered as one capture.
//! Never panics on any input: unreadable files are a [`CaptureError`];
//! damage after a valid header ends that input and is reported by the caller.

mod counters;
mod drops;
mod frame_source;
mod har_sniff;
#[cfg(feature = "live")]
mod keylog_follow;
#[cfg(feature = "live")]
mod live;
mod merge;
mod pcapng_writer;
mod reader;
mod secrets;
mod source;

pub use counters::CaptureCounters;
pub use drops::{CaptureDrops, DUMPCAP_ISB_COMMENT};
pub use frame_source::{FrameSource, Next};
pub use har_sniff::{UTF8_BOM, has_zlib_header, is_compressed_har};
#[cfg(feature = "live")]
pub use keylog_follow::{KeylogFollower, MAX_KEYLOG_LINE_BYTES};
#[cfg(feature = "live")]
pub use live::{LIVE_TICK, LiveControl, LiveError, LiveOptions, LiveSource};
pub use merge::Merger;
pub use pcapng_writer::{InterfaceStats, PcapngWriter, SECRETS_TLS_KEY_LOG};
pub use reader::{MAX_RECORD_BYTES, PacketReader, READ_CHUNK_BYTES, UNKNOWN_INTERFACE_LINK_TYPE};
pub use secrets::{CaptureSecrets, SecretsBlock};
pub use source::{MAX_HAR_LEADING_WHITESPACE, Source, open, open_reader};

use crate::contract::contract_names;
use std::sync::Arc;

/// One packet record, as read from a capture file.
#[derive(Debug, Clone)]
pub struct Frame {
    /// 1-based frame number across all merged inputs (like tshark's `frame.number`).
    pub index: u64,
    /// Which input it came from (position in the input list).
    pub input: usize,
    /// Capture timestamp, nanoseconds since the Unix epoch.
    pub ts_ns: i64,
    /// LINKTYPE_* value of the interface it was captured on.
    pub link_type: u32,
    /// Captured bytes (may be shorter than `orig_len`).
    pub data: Vec<u8>,
    /// Length of the packet on the wire.
    pub orig_len: u32,
}

impl Frame {
    /// The frame was cut by the capture's snap length.
    pub fn is_truncated(&self) -> bool {
        self.as_ref().is_truncated()
    }

    /// The frame with its bytes borrowed.
    pub fn as_ref(&self) -> FrameRef<'_> {
        FrameRef {
            index: self.index,
            input: self.input,
            ts_ns: self.ts_ns,
            link_type: self.link_type,
            data: &self.data,
            orig_len: self.orig_len,
        }
    }
}

/// A [`Frame`] whose bytes are borrowed, from the reader's buffer until its next record
/// (one input is decoded in place, without copying each record out).
#[derive(Debug, Clone, Copy)]
pub struct FrameRef<'a> {
    pub index: u64,
    pub input: usize,
    pub ts_ns: i64,
    pub link_type: u32,
    pub data: &'a [u8],
    pub orig_len: u32,
}

impl FrameRef<'_> {
    /// The frame was cut by the capture's snap length.
    pub fn is_truncated(&self) -> bool {
        (self.data.len() as u64) < u64::from(self.orig_len)
    }

    /// An owned copy.
    pub fn to_frame(&self) -> Frame {
        Frame {
            index: self.index,
            input: self.input,
            ts_ns: self.ts_ns,
            link_type: self.link_type,
            data: crate::buffers::copy_of(self.data),
            orig_len: self.orig_len,
        }
    }
}

contract_names! {
    /// What an input file turned out to be (the run summary's `format`).
    pub enum InputFormat {
        Pcap => "pcap",
        PcapNg => "pcapng",
        /// A network interface captured live (`mcp-trace live`).
        Live => "live",
        Har => "har",
    }
}

/// Facts about one input for the run summary.
#[derive(Debug, Clone, serde::Serialize)]
pub struct InputInfo {
    /// File name as given (`-` for standard input).
    pub name: String,
    /// Bytes read from the file (compressed size for `.gz`).
    pub bytes: u64,
    pub format: InputFormat,
    /// LINKTYPE values seen (from pcap header or pcapng interfaces).
    pub link_types: Vec<u32>,
    /// The input was gzip-compressed.
    pub gzip: bool,
    /// Damage that ended reading early, if any (the frames before it were used).
    pub error: Option<String>,
    /// Drops its capture statistics report (pcapng Interface Statistics Blocks); unknown
    /// for a classic pcap, a HAR and a pcapng without them.
    pub drops: CaptureDrops,
}

/// Errors that make an input unusable. An I/O error is part of the message, not a
/// `source()`, so that a printed chain shows it once.
#[derive(Debug, thiserror::Error)]
pub enum CaptureError {
    #[error("cannot open {path}: {error}")]
    Open { path: String, error: std::io::Error },
    #[error("{path}: empty file")]
    Empty { path: String },
    #[error("{path}: not a pcap, pcapng or HAR file (first bytes {magic})")]
    UnknownFormat { path: String, magic: String },
    #[error("{path}: {reason}")]
    Malformed { path: String, reason: String },
    #[error("{path}: read error: {error}")]
    Io { path: String, error: std::io::Error },
}

/// Bytes kept of each packet of a live capture (`live --snaplen`): every TCP segment whole,
/// also with offloads that hand the capture 64 KiB segments.
pub const LIVE_SNAPLEN: u32 = 262_144;

/// The kernel's capture buffer of a live capture (`live --buffer-size`). In immediate mode
/// libpcap gives every packet a slot of the largest size the interface can hand over (64 KiB
/// with segmentation offloads), so the buffer holds far fewer packets than its size suggests.
pub const LIVE_BUFFER_BYTES: usize = 128 << 20;

/// Shared name of an input, cheap to clone into every record.
pub type InputName = Arc<str>;

/// The pcap writer of the unit tests (integration tests include the same file).
#[cfg(test)]
pub(crate) mod testing;
