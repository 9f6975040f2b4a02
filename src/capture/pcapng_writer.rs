//! A pcapng writer for the raw capture of a live run (`mcp-trace live -w`): one section, one
//! interface with nanosecond timestamps, a packet block per frame, the key log lines seen
//! during the run as Decryption Secrets Blocks (placed before the packets they decrypt, as a
//! capture reader takes them in one pass) and the interface's statistics at the end, so
//! the capture can be analyzed again offline with the same drops and secrets.
//!
//! Little-endian, the layout of pcapng §4 (draft-ietf-opsawg-pcapng). Write errors are
//! returned, never hidden.

use std::io::{self, Write};

const BLOCK_SHB: u32 = 0x0A0D_0D0A;
const BLOCK_IDB: u32 = 0x0000_0001;
const BLOCK_ISB: u32 = 0x0000_0005;
const BLOCK_EPB: u32 = 0x0000_0006;
const BLOCK_DSB: u32 = 0x0000_000A;
const BYTE_ORDER_MAGIC: u32 = 0x1A2B_3C4D;
/// Secrets type of a TLS key log (pcapng §4.7).
pub const SECRETS_TLS_KEY_LOG: u32 = 0x544c_534b;

const OPT_END: u16 = 0;
const SHB_USERAPPL: u16 = 4;
const IF_NAME: u16 = 2;
const IF_TSRESOL: u16 = 9;
const IF_FILTER: u16 = 11;
const ISB_STARTTIME: u16 = 2;
const ISB_ENDTIME: u16 = 3;
const ISB_IFRECV: u16 = 4;
const ISB_IFDROP: u16 = 5;
const ISB_OSDROP: u16 = 7;

/// What the interface's statistics say at the end of the capture (libpcap's `pcap_stats`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct InterfaceStats {
    /// Packets the capture received (`ps_recv`).
    pub received: Option<u64>,
    /// Dropped for want of room in the kernel's buffer (`ps_drop`): written as `isb_osdrop`.
    pub kernel_drops: Option<u64>,
    /// Dropped by the interface or its driver (`ps_ifdrop`): written as `isb_ifdrop`.
    pub interface_drops: Option<u64>,
}

/// Writes one pcapng section with one interface.
pub struct PcapngWriter<W: Write> {
    out: W,
    first_ts_ns: Option<i64>,
    last_ts_ns: i64,
    block: Vec<u8>,
}

impl<W: Write> PcapngWriter<W> {
    /// Writes the section header and the interface description (`link_type`, `snaplen`, the
    /// interface's name and the capture filter).
    pub fn new(
        out: W,
        link_type: u32,
        snaplen: u32,
        interface: &str,
        filter: &str,
    ) -> io::Result<Self> {
        let mut w = PcapngWriter {
            out,
            first_ts_ns: None,
            last_ts_ns: 0,
            block: Vec::with_capacity(2048),
        };
        let mut body = Vec::new();
        body.extend_from_slice(&BYTE_ORDER_MAGIC.to_le_bytes());
        body.extend_from_slice(&1u16.to_le_bytes());
        body.extend_from_slice(&0u16.to_le_bytes());
        body.extend_from_slice(&(-1i64).to_le_bytes());
        let appl = concat!("mcp-trace ", env!("CARGO_PKG_VERSION"));
        option(&mut body, SHB_USERAPPL, appl.as_bytes());
        option(&mut body, OPT_END, &[]);
        w.write_block(BLOCK_SHB, &body)?;

        let mut body = Vec::new();
        let link = u16::try_from(link_type).unwrap_or(u16::MAX);
        body.extend_from_slice(&link.to_le_bytes());
        body.extend_from_slice(&0u16.to_le_bytes());
        body.extend_from_slice(&snaplen.to_le_bytes());
        option(&mut body, IF_NAME, interface.as_bytes());
        option(&mut body, IF_TSRESOL, &[9]);
        if !filter.is_empty() {
            // Code 0: a libpcap filter string.
            let mut value = vec![0u8];
            value.extend_from_slice(filter.as_bytes());
            option(&mut body, IF_FILTER, &value);
        }
        option(&mut body, OPT_END, &[]);
        w.write_block(BLOCK_IDB, &body)?;
        Ok(w)
    }

    /// An Enhanced Packet Block: `data` as captured, `orig_len` on the wire.
    pub fn packet(&mut self, ts_ns: i64, data: &[u8], orig_len: u32) -> io::Result<()> {
        self.first_ts_ns.get_or_insert(ts_ns);
        self.last_ts_ns = self.last_ts_ns.max(ts_ns);
        let mut block = std::mem::take(&mut self.block);
        block.clear();
        block.extend_from_slice(&0u32.to_le_bytes());
        push_ts(&mut block, ts_ns);
        let captured = u32::try_from(data.len()).unwrap_or(u32::MAX);
        block.extend_from_slice(&captured.to_le_bytes());
        block.extend_from_slice(&orig_len.to_le_bytes());
        block.extend_from_slice(data);
        pad(&mut block);
        let result = self.write_block(BLOCK_EPB, &block);
        self.block = block;
        result
    }

    /// A Decryption Secrets Block of key log lines; the packets written after it may use them.
    pub fn secrets(&mut self, key_log_lines: &[u8]) -> io::Result<()> {
        let mut body = Vec::with_capacity(key_log_lines.len() + 12);
        body.extend_from_slice(&SECRETS_TLS_KEY_LOG.to_le_bytes());
        let len = u32::try_from(key_log_lines.len()).unwrap_or(u32::MAX);
        body.extend_from_slice(&len.to_le_bytes());
        body.extend_from_slice(key_log_lines);
        pad(&mut body);
        self.write_block(BLOCK_DSB, &body)
    }

    /// The interface's statistics at `ts_ns` (counters from the start of the capture), then
    /// everything flushed; the writer is handed back.
    pub fn finish(mut self, ts_ns: i64, stats: InterfaceStats) -> io::Result<W> {
        let mut body = Vec::new();
        body.extend_from_slice(&0u32.to_le_bytes());
        push_ts(&mut body, ts_ns);
        if let Some(first) = self.first_ts_ns {
            option(&mut body, ISB_STARTTIME, &ts_parts(first));
            option(&mut body, ISB_ENDTIME, &ts_parts(self.last_ts_ns));
        }
        for (code, value) in [
            (ISB_IFRECV, stats.received),
            (ISB_IFDROP, stats.interface_drops),
            (ISB_OSDROP, stats.kernel_drops),
        ] {
            if let Some(n) = value {
                option(&mut body, code, &n.to_le_bytes());
            }
        }
        option(&mut body, OPT_END, &[]);
        self.write_block(BLOCK_ISB, &body)?;
        self.out.flush()?;
        Ok(self.out)
    }

    /// Pushes what was written so far to the file (a reader may follow it).
    pub fn flush(&mut self) -> io::Result<()> {
        self.out.flush()
    }

    fn write_block(&mut self, block_type: u32, body: &[u8]) -> io::Result<()> {
        let total = u32::try_from(body.len() + 12)
            .map_err(|_| io::Error::new(io::ErrorKind::InvalidInput, "pcapng block too large"))?;
        self.out.write_all(&block_type.to_le_bytes())?;
        self.out.write_all(&total.to_le_bytes())?;
        self.out.write_all(body)?;
        self.out.write_all(&total.to_le_bytes())
    }
}

/// A timestamp in units of 10^-9 s as the two 32-bit halves pcapng stores (high first).
fn ts_parts(ts_ns: i64) -> [u8; 8] {
    let ts = u64::try_from(ts_ns).unwrap_or(0);
    let high = (ts >> 32) as u32;
    let low = ts as u32;
    let mut out = [0u8; 8];
    out[..4].copy_from_slice(&high.to_le_bytes());
    out[4..].copy_from_slice(&low.to_le_bytes());
    out
}

fn push_ts(body: &mut Vec<u8>, ts_ns: i64) {
    body.extend_from_slice(&ts_parts(ts_ns));
}

fn option(body: &mut Vec<u8>, code: u16, value: &[u8]) {
    body.extend_from_slice(&code.to_le_bytes());
    let len = u16::try_from(value.len()).unwrap_or(u16::MAX);
    body.extend_from_slice(&len.to_le_bytes());
    body.extend_from_slice(value.get(..usize::from(len)).unwrap_or(value));
    pad(body);
}

fn pad(body: &mut Vec<u8>) {
    while !body.len().is_multiple_of(4) {
        body.push(0);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::capture::{CaptureCounters, FrameSource, Merger, Next, Source, open_reader};

    #[test]
    fn what_is_written_reads_back_with_its_secrets_and_drops() {
        let mut w = PcapngWriter::new(Vec::new(), 1, 65535, "lo", "tcp").unwrap();
        w.packet(1_700_000_000_123_456_789, &[0xAA; 61], 61)
            .unwrap();
        w.secrets(b"CLIENT_RANDOM 00 11\n").unwrap();
        w.packet(1_700_000_001_000_000_001, &[0xBB; 64], 1500)
            .unwrap();
        let stats = InterfaceStats {
            received: Some(2),
            kernel_drops: Some(7),
            interface_drops: Some(0),
        };
        let bytes = w.finish(1_700_000_002_000_000_000, stats).unwrap();
        assert_eq!(bytes.len() % 4, 0);

        let Source::Packets(reader) =
            open_reader("raw.pcapng", 0, Box::new(std::io::Cursor::new(bytes))).unwrap()
        else {
            panic!("not a packet capture")
        };
        let mut merger = Merger::new(vec![reader]);
        let secrets = FrameSource::secrets(&merger);
        let mut counters = CaptureCounters::default();
        let mut frames = Vec::new();
        while let Next::Frame(f) = merger.next(&mut counters) {
            frames.push((f.index, f.ts_ns, f.link_type, f.data.len(), f.orig_len));
        }
        assert_eq!(
            frames,
            vec![
                (1, 1_700_000_000_123_456_789, 1, 61, 61),
                (2, 1_700_000_001_000_000_001, 1, 64, 1500),
            ]
        );
        let mut blocks = Vec::new();
        secrets.take_from(0, u64::MAX, |b| {
            blocks.push((b.from_frame, b.secrets_type, b.data.clone()))
        });
        assert_eq!(
            blocks,
            vec![(2, SECRETS_TLS_KEY_LOG, b"CLIENT_RANDOM 00 11\n".to_vec())]
        );
        let infos = FrameSource::infos(&merger);
        assert_eq!(infos.len(), 1);
        let drops = infos[0].drops;
        assert_eq!((drops.kernel, drops.interface), (Some(7), Some(0)));
    }

    #[test]
    fn unknown_statistics_stay_unknown() {
        let w = PcapngWriter::new(Vec::new(), 1, 65535, "eth0", "").unwrap();
        let bytes = w.finish(0, InterfaceStats::default()).unwrap();
        let Source::Packets(reader) =
            open_reader("raw.pcapng", 0, Box::new(std::io::Cursor::new(bytes))).unwrap()
        else {
            panic!("not a packet capture")
        };
        let mut merger = Merger::new(vec![reader]);
        let mut counters = CaptureCounters::default();
        assert!(matches!(merger.next(&mut counters), Next::End));
        let drops = FrameSource::infos(&merger)[0].drops;
        assert!(drops.is_unknown());
    }
}
