//! Streaming packet reader for classic pcap and pcapng, over any `Read`.
//!
//! We keep our own refillable buffer and call pcap-parser's record/block
//! parsers on it: `Incomplete` means "read more", and the buffer grows for a
//! block larger than one read (cf. pcap-parser's `err-buffertoosmall.pcapng`).
//! Memory is bounded by [`MAX_RECORD_BYTES`] plus one read chunk, whatever the
//! file size. Damage after a valid header ends this input with one
//! [`CaptureError::Malformed`] naming the byte offset; frames before it stand.

use super::drops::{CaptureDrops, IsbTable};
use super::secrets::{CaptureSecrets, SecretsBlock};
use super::{CaptureError, Frame, FrameRef, InputInfo};
use pcap_parser::nom;
use pcap_parser::pcapng::{Block, parse_block_be, parse_block_le};
use pcap_parser::traits::PcapNGPacketBlock;
use pcap_parser::{LegacyPcapBlock, PcapError};
use std::io::{ErrorKind, Read};
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

/// Bytes asked from the underlying reader per refill.
pub const READ_CHUNK_BYTES: usize = 64 * 1024;

/// Largest pcap record or pcapng block we accept. libpcap caps snap lengths at
/// 256 KiB (`MAXIMUM_SNAPLEN`); we allow far more (TSO, USB, big custom blocks)
/// but a length field beyond this is damage, not a reason to buffer gigabytes.
pub const MAX_RECORD_BYTES: usize = 64 * 1024 * 1024;

/// Link type given to frames whose pcapng interface does not exist, so the
/// decoder counts them as skipped by link type.
pub const UNKNOWN_INTERFACE_LINK_TYPE: u32 = u32::MAX;

/// Default pcapng timestamp resolution (microseconds, pcapng spec §4.2 `if_tsresol`).
const DEFAULT_UNITS_PER_SEC: u64 = 1_000_000;

/// Counts bytes pulled from the file (before decompression), shared with the reader.
pub(crate) struct CountingReader<R> {
    pub(crate) inner: R,
    pub(crate) count: Arc<AtomicU64>,
}

impl<R: Read> Read for CountingReader<R> {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        let n = self.inner.read(buf)?;
        self.count.fetch_add(n as u64, Ordering::Relaxed);
        Ok(n)
    }
}

/// A pcapng interface (one Interface Description Block of the current section).
#[derive(Debug, Clone, Copy)]
pub(crate) struct Interface {
    link_type: u32,
    snaplen: u32,
    units_per_sec: u64,
    offset_s: i64,
}

/// Per-format parsing state.
#[derive(Debug)]
pub(crate) enum Layout {
    /// Classic pcap: byte order, timestamp unit and record header size are fixed
    /// by the file header magic.
    Pcap {
        big_endian: bool,
        nanos: bool,
        /// Kuznetzov's patched format (magic 0xa1b2cd34): 24-byte record headers.
        modified: bool,
        link_type: u32,
    },
    /// pcapng: byte order and interface table are per section.
    PcapNg {
        big_endian: bool,
        interfaces: Vec<Interface>,
    },
}

impl Layout {
    pub(crate) fn pcapng(big_endian: bool) -> Layout {
        Layout::PcapNg {
            big_endian,
            interfaces: Vec::new(),
        }
    }
}

/// Reads frames from one pcap or pcapng input, streaming.
///
/// Invariant: `pos <= end <= buf.len()`; `buf[pos..end]` holds the unparsed
/// bytes, which start at file offset `offset` (decompressed offset for gzip
/// inputs); `buf[end..]` is free space.
pub struct PacketReader {
    input: usize,
    reader: Box<dyn Read + Send>,
    buf: Vec<u8>,
    pos: usize,
    end: usize,
    offset: u64,
    eof: bool,
    done: bool,
    layout: Layout,
    info: InputInfo,
    counter: Arc<AtomicU64>,
    /// The last record's bytes when they had to be copied out of the buffer.
    copied: Vec<u8>,
    /// Where Decryption Secrets Blocks go as they are read, stamped with the number of the
    /// frame that follows them (the merger numbers the frames and sets it).
    secrets: CaptureSecrets,
    secrets_from_frame: u64,
    /// pcapng sections begun so far, and the last statistics of each section's interfaces.
    sections: u64,
    isb: IsbTable,
}

/// What one parsed record/block amounts to.
enum Item {
    Frame(FrameAt),
    Skip,
}

/// A packet record: its facts, and where its bytes are.
struct FrameAt {
    input: usize,
    ts_ns: i64,
    link_type: u32,
    orig_len: u32,
    bytes: Located,
}

/// A record's bytes: a range of the read buffer (always, with pcap-parser's borrowed
/// blocks), or a copy if they ever were not.
enum Located {
    At(std::ops::Range<usize>),
    Copied(Vec<u8>),
}

/// Where `part` lies in the read buffer, given `data`, the buffer from offset `pos` on.
fn locate(data: &[u8], pos: usize, part: &[u8]) -> Located {
    let start = (part.as_ptr() as usize).wrapping_sub(data.as_ptr() as usize);
    let inside = start <= data.len() && part.len() <= data.len() - start;
    if inside {
        let at = pos.saturating_add(start);
        Located::At(at..at.saturating_add(part.len()))
    } else {
        Located::Copied(part.to_vec())
    }
}

/// One parse step's outcome, with the bytes it consumed.
enum Step {
    Parsed(usize, Item),
    /// Need more input (at least this many more bytes, 0 = unknown).
    Incomplete(usize),
    Bad(String),
}

impl PacketReader {
    /// `initial` holds bytes already read from `reader` (the file header included);
    /// `skip` of them are consumed (the pcap global header).
    pub(crate) fn new(
        input: usize,
        reader: Box<dyn Read + Send>,
        initial: Vec<u8>,
        skip: usize,
        layout: Layout,
        info: InputInfo,
        counter: Arc<AtomicU64>,
    ) -> PacketReader {
        let skip = skip.min(initial.len());
        PacketReader {
            input,
            reader,
            end: initial.len(),
            buf: initial,
            pos: skip,
            offset: skip as u64,
            eof: false,
            done: false,
            layout,
            info,
            counter,
            copied: Vec::new(),
            secrets: CaptureSecrets::default(),
            secrets_from_frame: 1,
            sections: 0,
            isb: IsbTable::default(),
        }
    }

    /// Sends the Decryption Secrets Blocks read from now on to `secrets` (they precede the
    /// packets they decrypt).
    pub fn share_secrets(&mut self, secrets: CaptureSecrets) {
        self.secrets = secrets;
    }

    /// Whether the input can carry Decryption Secrets Blocks (pcapng can, classic pcap not).
    pub fn may_carry_secrets(&self) -> bool {
        matches!(self.layout, Layout::PcapNg { .. })
    }

    /// The number the next frame read will get: the stamp of the blocks read before it.
    pub fn set_next_frame(&mut self, index: u64) {
        self.secrets_from_frame = index;
    }

    /// Facts about this input so far (link types grow as pcapng interfaces appear).
    pub fn info(&self) -> &InputInfo {
        &self.info
    }

    /// Bytes read from the file so far (compressed bytes for gzip).
    pub fn bytes_read(&self) -> u64 {
        self.counter.load(Ordering::Relaxed)
    }

    fn fail(&mut self, reason: String) -> CaptureError {
        self.done = true;
        let err = CaptureError::Malformed {
            path: self.info.name.clone(),
            reason,
        };
        self.info.error = Some(err.to_string());
        self.info.bytes = self.bytes_read();
        err
    }

    /// Read more input: one read into at least `max(needed, READ_CHUNK_BYTES)` of space.
    /// Unparsed bytes move to the front first; the buffer only grows (amortised),
    /// so a reader that trickles a byte at a time costs O(1) per byte.
    fn refill(&mut self, needed: usize) -> Result<(), CaptureError> {
        if self.pos > 0 && self.pos <= self.end && self.end <= self.buf.len() {
            self.buf.copy_within(self.pos..self.end, 0);
            self.end = self.end.saturating_sub(self.pos);
            self.pos = 0;
        }
        let min_len = self.end.saturating_add(needed.max(READ_CHUNK_BYTES));
        if self.buf.len() < min_len {
            self.buf.resize(min_len, 0);
        }
        let res = loop {
            let space = self.buf.get_mut(self.end..).unwrap_or_default();
            match self.reader.read(space) {
                Err(e) if e.kind() == ErrorKind::Interrupted => continue,
                other => break other,
            }
        };
        match res {
            Ok(n) => {
                self.end = self.end.saturating_add(n).min(self.buf.len());
                self.eof = n == 0;
                self.info.bytes = self.bytes_read();
                Ok(())
            }
            Err(e) => {
                self.done = true;
                let err = CaptureError::Io {
                    path: self.info.name.clone(),
                    error: e,
                };
                self.info.error = Some(err.to_string());
                Err(err)
            }
        }
    }

    /// Length of the record/block starting the buffer, from its header, if known.
    fn pending_len(&self) -> Option<u64> {
        let data = self.buf.get(self.pos..self.end)?;
        match &self.layout {
            Layout::Pcap {
                big_endian,
                modified,
                ..
            } => {
                let caplen = read_u32(data.get(8..12)?, *big_endian);
                let hdr = if *modified { 24 } else { 16 };
                Some(u64::from(caplen) + hdr)
            }
            Layout::PcapNg { big_endian, .. } => {
                let block_type = data.get(0..4)?;
                // A section header announces its own byte order (pcapng §4.1).
                let be = if block_type == [0x0a, 0x0d, 0x0d, 0x0a] {
                    matches!(data.get(8..12)?, [0x1a, 0x2b, 0x3c, 0x4d])
                } else {
                    *big_endian
                };
                Some(u64::from(read_u32(data.get(4..8)?, be)))
            }
        }
    }

    fn step(&mut self) -> Step {
        let Some(data) = self.buf.get(self.pos..self.end) else {
            return Step::Incomplete(0);
        };
        let input = self.input;
        match &mut self.layout {
            Layout::Pcap {
                big_endian,
                nanos,
                modified,
                link_type,
            } => {
                let parsed = if *modified {
                    pcap_parser::parse_pcap_frame_modified(data)
                } else if *big_endian {
                    pcap_parser::parse_pcap_frame_be(data)
                } else {
                    pcap_parser::parse_pcap_frame(data)
                };
                match parsed {
                    Ok((rest, rec)) => {
                        let used = data.len().saturating_sub(rest.len());
                        let bytes = locate(data, self.pos, rec.data);
                        Step::Parsed(
                            used,
                            Item::Frame(pcap_frame(&rec, *nanos, *link_type, input, bytes)),
                        )
                    }
                    Err(e) => nom_step(e),
                }
            }
            Layout::PcapNg {
                big_endian,
                interfaces,
            } => {
                let parsed = if *big_endian {
                    parse_block_be(data)
                } else {
                    parse_block_le(data)
                };
                match parsed {
                    Ok((rest, block)) => {
                        let used = data.len().saturating_sub(rest.len());
                        let item = match block {
                            Block::SectionHeader(shb) => {
                                // A new section resets the interface table (pcapng §4.1).
                                *big_endian = shb.big_endian();
                                interfaces.clear();
                                self.sections = self.sections.saturating_add(1);
                                Item::Skip
                            }
                            Block::InterfaceDescription(idb) => {
                                let link_type = u32::from(idb.linktype.0 as u16);
                                interfaces.push(Interface {
                                    link_type,
                                    snaplen: idb.snaplen,
                                    // An invalid if_tsresol falls back to the default unit.
                                    units_per_sec: units_per_sec(idb.if_tsresol),
                                    offset_s: idb.ts_offset(),
                                });
                                if !self.info.link_types.contains(&link_type) {
                                    self.info.link_types.push(link_type);
                                }
                                Item::Skip
                            }
                            Block::EnhancedPacket(epb) => {
                                let iface = usize::try_from(epb.if_id)
                                    .ok()
                                    .and_then(|i| interfaces.get(i));
                                let (link_type, ts_ns) = match iface {
                                    Some(i) => (
                                        i.link_type,
                                        pcapng_ts_ns(
                                            epb.ts_high,
                                            epb.ts_low,
                                            i.units_per_sec,
                                            i.offset_s,
                                        ),
                                    ),
                                    // Damage confined to this packet: counted by the decoder as
                                    // skipped link type rather than ending the input.
                                    None => (UNKNOWN_INTERFACE_LINK_TYPE, 0),
                                };
                                Item::Frame(FrameAt {
                                    input,
                                    ts_ns,
                                    link_type,
                                    orig_len: epb.origlen,
                                    bytes: locate(data, self.pos, epb.packet_data()),
                                })
                            }
                            Block::SimplePacket(spb) => {
                                // SPBs belong to the section's first interface and carry no
                                // timestamp (pcapng §4.4); captured length is
                                // min(original length, snaplen).
                                let (link_type, snaplen) = match interfaces.first() {
                                    Some(i) => (i.link_type, i.snaplen),
                                    None => (UNKNOWN_INTERFACE_LINK_TYPE, 0),
                                };
                                let mut bytes = spb.packet_data();
                                if snaplen > 0 {
                                    let cap = usize::try_from(snaplen).unwrap_or(usize::MAX);
                                    bytes = bytes.get(..cap).unwrap_or(bytes);
                                }
                                Item::Frame(FrameAt {
                                    input,
                                    ts_ns: 0,
                                    link_type,
                                    orig_len: spb.origlen,
                                    bytes: locate(data, self.pos, bytes),
                                })
                            }
                            Block::DecryptionSecrets(dsb) => {
                                self.secrets.append(SecretsBlock {
                                    from_frame: self.secrets_from_frame,
                                    secrets_type: dsb.secrets_type.0,
                                    data: dsb.data.to_vec(),
                                });
                                Item::Skip
                            }
                            Block::InterfaceStatistics(isb) => {
                                // Options follow the fixed part (type, length, interface id,
                                // timestamp: 20 bytes) up to the trailing length.
                                let options = data
                                    .get(..used)
                                    .and_then(|b| b.get(20..b.len().saturating_sub(4)))
                                    .unwrap_or_default();
                                let drops = CaptureDrops::from_isb_options(options, *big_endian);
                                self.isb.record(self.sections, isb.if_id, drops);
                                self.info.drops = self.isb.total();
                                Item::Skip
                            }
                            // Name resolution, custom, ...: nothing for us.
                            _ => Item::Skip,
                        };
                        Step::Parsed(used, item)
                    }
                    Err(e) => nom_step(e),
                }
            }
        }
    }
}

/// Timestamp units per second from `if_tsresol` (pcapng §4.2): high bit clear =
/// 10^-n s, set = 2^-n s. Out-of-range values fall back to microseconds.
/// (pcap-parser's `build_ts_resolution` rejects every 2^-n value, so not used.)
pub(crate) fn units_per_sec(tsresol: u8) -> u64 {
    let n = u32::from(tsresol & 0x7f);
    let units = if tsresol & 0x80 == 0 {
        10u64.checked_pow(n)
    } else {
        1u64.checked_shl(n).filter(|_| n < 64)
    };
    units.unwrap_or(DEFAULT_UNITS_PER_SEC)
}

fn nom_step(e: nom::Err<PcapError<&[u8]>>) -> Step {
    match e {
        nom::Err::Incomplete(nom::Needed::Size(n)) => Step::Incomplete(n.get()),
        nom::Err::Incomplete(nom::Needed::Unknown) => Step::Incomplete(0),
        nom::Err::Error(e) | nom::Err::Failure(e) => Step::Bad(describe(&e)),
    }
}

fn describe(e: &PcapError<&[u8]>) -> String {
    match e {
        PcapError::NomError(_, kind) | PcapError::OwnedNomError(_, kind) => {
            format!("invalid record ({kind:?})")
        }
        PcapError::HeaderNotRecognized => "unrecognised block header".to_string(),
        other => format!("{other:?}"),
    }
}

fn read_u32(b: &[u8], big_endian: bool) -> u32 {
    let mut a = [0u8; 4];
    for (dst, src) in a.iter_mut().zip(b) {
        *dst = *src;
    }
    if big_endian {
        u32::from_be_bytes(a)
    } else {
        u32::from_le_bytes(a)
    }
}

fn pcap_frame(
    rec: &LegacyPcapBlock<'_>,
    nanos: bool,
    link_type: u32,
    input: usize,
    bytes: Located,
) -> FrameAt {
    let frac_ns = if nanos {
        i64::from(rec.ts_usec)
    } else {
        i64::from(rec.ts_usec).saturating_mul(1000)
    };
    FrameAt {
        input,
        ts_ns: i64::from(rec.ts_sec)
            .saturating_mul(1_000_000_000)
            .saturating_add(frac_ns),
        link_type,
        orig_len: rec.origlen,
        bytes,
    }
}

/// pcapng timestamp (64-bit count of `units_per_sec` units, plus the interface's
/// `if_tsoffset` seconds) in nanoseconds since the epoch, saturating.
pub(crate) fn pcapng_ts_ns(high: u32, low: u32, units_per_sec: u64, offset_s: i64) -> i64 {
    let ts = (u128::from(high) << 32) | u128::from(low);
    let units = u128::from(units_per_sec.max(1));
    let secs = ts / units;
    let frac_ns = (ts % units) * 1_000_000_000 / units;
    let total = i128::try_from(secs)
        .unwrap_or(i128::MAX)
        .saturating_add(i128::from(offset_s))
        .saturating_mul(1_000_000_000)
        .saturating_add(i128::try_from(frac_ns).unwrap_or(0));
    i64::try_from(total).unwrap_or(if total < 0 { i64::MIN } else { i64::MAX })
}

/// Records as owned [`Frame`]s (the merge of several inputs keeps one per input).
impl Iterator for PacketReader {
    type Item = Result<Frame, CaptureError>;

    fn next(&mut self) -> Option<Self::Item> {
        self.next_ref().map(|r| r.map(|f| f.to_frame()))
    }
}

impl PacketReader {
    /// The next record, its bytes borrowed from the read buffer until the next call.
    pub fn next_ref(&mut self) -> Option<Result<FrameRef<'_>, CaptureError>> {
        loop {
            if self.done {
                return None;
            }
            if let Some(len) = self.pending_len()
                && len > MAX_RECORD_BYTES as u64
            {
                let at = self.offset;
                return Some(Err(self.fail(format!(
                    "record at byte offset {at} claims {len} bytes (limit {MAX_RECORD_BYTES}); the rest of the file is skipped"
                ))));
            }
            match self.step() {
                Step::Parsed(used, item) => {
                    self.pos = self.pos.saturating_add(used.max(1)).min(self.end);
                    self.offset = self.offset.saturating_add(used as u64);
                    if let Item::Frame(at) = item {
                        let data: &[u8] = match at.bytes {
                            Located::At(range) => self.buf.get(range).unwrap_or_default(),
                            Located::Copied(bytes) => {
                                self.copied = bytes;
                                &self.copied
                            }
                        };
                        return Some(Ok(FrameRef {
                            index: 0,
                            input: at.input,
                            ts_ns: at.ts_ns,
                            link_type: at.link_type,
                            data,
                            orig_len: at.orig_len,
                        }));
                    }
                }
                Step::Incomplete(needed) => {
                    let left = self.end.saturating_sub(self.pos);
                    // The parser asks for what a length field inside the record claims
                    // (e.g. an EPB captured length larger than its block): never grow
                    // the buffer past the record limit for a damaged field.
                    if left.saturating_add(needed) > MAX_RECORD_BYTES {
                        let at = self.offset;
                        return Some(Err(self.fail(format!(
                            "record at byte offset {at} needs {} bytes (limit {MAX_RECORD_BYTES}): a length field is damaged; the rest of the file is skipped",
                            left.saturating_add(needed)
                        ))));
                    }
                    if self.eof {
                        self.done = true;
                        self.info.bytes = self.bytes_read();
                        if left == 0 {
                            return None;
                        }
                        let at = self.offset;
                        let want = self
                            .pending_len()
                            .map(|l| format!(" of {l}"))
                            .unwrap_or_default();
                        return Some(Err(self.fail(format!(
                            "truncated record at byte offset {at}: only {left}{want} bytes left in the file"
                        ))));
                    }
                    if let Err(e) = self.refill(needed) {
                        return Some(Err(e));
                    }
                }
                Step::Bad(reason) => {
                    let at = self.offset;
                    return Some(Err(self.fail(format!("{reason} at byte offset {at}"))));
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A record inside the buffer is a range of it (offset by where `data` starts); one
    /// that is not (never, with pcap-parser) is copied.
    #[test]
    fn records_are_located_in_the_buffer_or_copied() {
        let buf = b"0123456789".to_vec();
        let data = &buf[4..];
        match locate(data, 4, &buf[6..9]) {
            Located::At(r) => assert_eq!(r, 6..9),
            Located::Copied(_) => panic!("inside the buffer"),
        }
        match locate(data, 4, &buf[4..4]) {
            Located::At(r) => assert_eq!(r, 4..4),
            Located::Copied(_) => panic!("empty, at the start"),
        }
        let elsewhere = b"678".to_vec();
        match locate(data, 4, &elsewhere) {
            Located::Copied(v) => assert_eq!(v, b"678"),
            Located::At(r) => panic!("outside the buffer, located at {r:?}"),
        }
        // Starting inside but running past the end is not inside.
        match locate(&buf[4..8], 4, &buf[6..10]) {
            Located::Copied(v) => assert_eq!(v, b"6789"),
            Located::At(r) => panic!("past the end, located at {r:?}"),
        }
    }

    #[test]
    fn if_tsresol_decimal_and_binary() {
        assert_eq!(units_per_sec(6), 1_000_000);
        assert_eq!(units_per_sec(9), 1_000_000_000);
        assert_eq!(units_per_sec(0), 1);
        assert_eq!(units_per_sec(0x8a), 1024);
        assert_eq!(units_per_sec(0x80 | 63), 1 << 63);
        // 10^20 and 2^64 do not fit: fall back to microseconds
        assert_eq!(units_per_sec(20), DEFAULT_UNITS_PER_SEC);
        assert_eq!(units_per_sec(0x80 | 64), DEFAULT_UNITS_PER_SEC);
    }

    #[test]
    fn pcapng_ts_resolutions() {
        // 1 s + 500 ms in microseconds
        assert_eq!(pcapng_ts_ns(0, 1_500_000, 1_000_000, 0), 1_500_000_000);
        assert_eq!(
            pcapng_ts_ns(0, 1_500_000_123, 1_000_000_000, 0),
            1_500_000_123
        );
        // 2^-10 s units: 1024 units = 1 s, 512 = 0.5 s
        assert_eq!(pcapng_ts_ns(0, 1536, 1024, 0), 1_500_000_000);
        assert_eq!(pcapng_ts_ns(0, 1_000_000, 1_000_000, 10), 11_000_000_000);
        assert_eq!(pcapng_ts_ns(u32::MAX, u32::MAX, 1, 0), i64::MAX);
    }
}
