//! Opening an input: file or stdin, gzip by magic, format by content.

use super::reader::{CountingReader, Layout, PacketReader};
use super::{CaptureError, InputFormat, InputInfo};
use flate2::read::MultiGzDecoder;
use pcap_parser::nom;
use std::io::{Cursor, ErrorKind, Read};
use std::sync::Arc;
use std::sync::atomic::AtomicU64;

/// Leading whitespace we scan for a HAR's `{` before giving up on the format.
pub const MAX_HAR_LEADING_WHITESPACE: usize = 64 * 1024;

/// Bytes of a zlib stream inflated to decide whether it holds a HAR
/// ([`super::is_compressed_har`] asks for at least 512).
const ZHAR_PROBE_BYTES: usize = 4096;

/// Largest pcapng Section Header Block we read at open time.
const MAX_SHB_BYTES: usize = 1024 * 1024;

/// Classic pcap global header size (pcap spec: magic, versions, thiszone,
/// sigfigs, snaplen, linktype).
const PCAP_HEADER_BYTES: usize = 24;

/// An opened input: a packet capture to stream, or a HAR document read whole.
pub enum Source {
    /// pcap or pcapng, read frame by frame.
    Packets(PacketReader),
    /// A HAR export (JSON), the whole (decompressed) text.
    Har {
        name: String,
        data: Vec<u8>,
        info: InputInfo,
    },
}

impl std::fmt::Debug for Source {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Source::Packets(r) => f.debug_tuple("Packets").field(r.info()).finish(),
            Source::Har { name, data, .. } => f
                .debug_struct("Har")
                .field("name", name)
                .field("bytes", &data.len())
                .finish(),
        }
    }
}

impl std::fmt::Debug for PacketReader {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PacketReader")
            .field("info", self.info())
            .finish()
    }
}

/// Open `path` (`-` = standard input) as input number `input`.
///
/// The format is recognised by content, never by name: gzip (`1f 8b`) is
/// decompressed on the fly (concatenated members too, as `gzip -c a b` writes),
/// then classic pcap (either byte order, µs or ns, Kuznetzov's modified
/// format), pcapng, or a HAR export (optional UTF-8 BOM, whitespace, `{`).
pub fn open(path: &str, input: usize) -> Result<Source, CaptureError> {
    let raw: Box<dyn Read + Send> = if path == "-" {
        Box::new(std::io::stdin())
    } else {
        let f = std::fs::File::open(path).map_err(|error| CaptureError::Open {
            path: path.to_string(),
            error,
        })?;
        Box::new(f)
    };
    open_reader(path, input, raw)
}

/// Like [`open`], over any reader (used for stdin and in tests).
pub fn open_reader(
    name: &str,
    input: usize,
    raw: Box<dyn Read + Send>,
) -> Result<Source, CaptureError> {
    let counter = Arc::new(AtomicU64::new(0));
    let mut reader: Box<dyn Read + Send> = Box::new(CountingReader {
        inner: raw,
        count: Arc::clone(&counter),
    });
    let io_err = |error| CaptureError::Io {
        path: name.to_string(),
        error,
    };
    let mut head = Vec::new();
    fill_to(&mut reader, &mut head, 4).map_err(io_err)?;
    if head.is_empty() {
        return Err(CaptureError::Empty {
            path: name.to_string(),
        });
    }
    let gzip = head.starts_with(&[0x1f, 0x8b]);
    if gzip {
        let prefix = Cursor::new(std::mem::take(&mut head));
        reader = Box::new(MultiGzDecoder::new(prefix.chain(reader)));
        fill_to(&mut reader, &mut head, 4).map_err(|e| CaptureError::Malformed {
            path: name.to_string(),
            reason: format!("gzip stream: {e}"),
        })?;
        if head.is_empty() {
            return Err(CaptureError::Empty {
                path: name.to_string(),
            });
        }
    }
    // Made once the format is known, with the bytes read so far.
    let info_of = |format: InputFormat| InputInfo {
        name: name.to_string(),
        bytes: counter.load(std::sync::atomic::Ordering::Relaxed),
        format,
        link_types: Vec::new(),
        gzip,
        error: None,
        drops: super::CaptureDrops::default(),
    };
    let malformed = |reason: String| CaptureError::Malformed {
        path: name.to_string(),
        reason,
    };
    match head.get(..4) {
        // a1b2c3d4 µs, a1b23c4d ns, a1b2cd34 modified; little- or big-endian on disk.
        Some(
            [0xd4, 0xc3, 0xb2, 0xa1]
            | [0xa1, 0xb2, 0xc3, 0xd4]
            | [0x4d, 0x3c, 0xb2, 0xa1]
            | [0xa1, 0xb2, 0x3c, 0x4d]
            | [0x34, 0xcd, 0xb2, 0xa1],
        ) => {
            fill_to(&mut reader, &mut head, PCAP_HEADER_BYTES).map_err(io_err)?;
            if head.len() < PCAP_HEADER_BYTES {
                return Err(malformed(format!(
                    "truncated pcap file header: {} of {PCAP_HEADER_BYTES} bytes",
                    head.len()
                )));
            }
            let (_, hdr) = pcap_parser::parse_pcap_header(&head)
                .map_err(|e| malformed(format!("invalid pcap file header: {e:?}")))?;
            // The upper bits of the link type field carry FCS flags (pcap spec §"LinkType and additional information").
            let link_type = u32::from(hdr.network.0 as u16);
            let mut info = info_of(InputFormat::Pcap);
            info.link_types.push(link_type);
            let layout = Layout::Pcap {
                big_endian: hdr.is_bigendian(),
                nanos: hdr.is_nanosecond_precision(),
                modified: hdr.is_modified_format(),
                link_type,
            };
            Ok(Source::Packets(PacketReader::new(
                input,
                reader,
                head,
                PCAP_HEADER_BYTES,
                layout,
                info,
                counter,
            )))
        }
        Some([0x0a, 0x0d, 0x0d, 0x0a]) => {
            // Validate the first Section Header Block now so that a non-pcapng file
            // that happens to start with these bytes fails at open time.
            let big_endian = loop {
                match pcap_parser::pcapng::parse_sectionheaderblock(&head) {
                    Ok((_, shb)) => break shb.big_endian(),
                    Err(nom::Err::Incomplete(needed)) => {
                        let more = match needed {
                            nom::Needed::Size(n) => n.get(),
                            nom::Needed::Unknown => 1,
                        };
                        let want = head.len().saturating_add(more);
                        if want > MAX_SHB_BYTES {
                            return Err(malformed(format!(
                                "pcapng section header larger than {MAX_SHB_BYTES} bytes"
                            )));
                        }
                        let before = head.len();
                        fill_to(&mut reader, &mut head, want).map_err(io_err)?;
                        if head.len() == before {
                            return Err(malformed(format!(
                                "truncated pcapng section header ({before} bytes)"
                            )));
                        }
                    }
                    Err(_) => return Err(malformed("invalid pcapng section header".to_string())),
                }
            };
            let info = info_of(InputFormat::PcapNg);
            Ok(Source::Packets(PacketReader::new(
                input,
                reader,
                head,
                0,
                Layout::pcapng(big_endian),
                info,
                counter,
            )))
        }
        _ => {
            // mitmproxy's `.zhar`: a zlib stream (RFC 1950) holding HAR JSON,
            // handed over compressed; the HAR reader inflates it within its limit.
            if super::has_zlib_header(&head) {
                fill_to(&mut reader, &mut head, ZHAR_PROBE_BYTES).map_err(io_err)?;
                if super::is_compressed_har(&head) {
                    reader.read_to_end(&mut head).map_err(io_err)?;
                    let info = info_of(InputFormat::Har);
                    return Ok(Source::Har {
                        name: name.to_string(),
                        data: head,
                        info,
                    });
                }
            }
            if looks_like_har(&mut reader, &mut head).map_err(io_err)? {
                reader.read_to_end(&mut head).map_err(io_err)?;
                let info = info_of(InputFormat::Har);
                return Ok(Source::Har {
                    name: name.to_string(),
                    data: head,
                    info,
                });
            }
            let magic = head
                .iter()
                .take(4)
                .map(|b| format!("{b:02x}"))
                .collect::<Vec<_>>()
                .join(" ");
            Err(CaptureError::UnknownFormat {
                path: name.to_string(),
                magic,
            })
        }
    }
}

/// Read until `buf` holds `n` bytes or the input ends.
fn fill_to(r: &mut dyn Read, buf: &mut Vec<u8>, n: usize) -> std::io::Result<()> {
    while buf.len() < n {
        let mut chunk = vec![0u8; n.saturating_sub(buf.len())];
        match r.read(&mut chunk) {
            Ok(0) => break,
            Ok(k) => buf.extend_from_slice(chunk.get(..k).unwrap_or_default()),
            Err(e) if e.kind() == ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
    Ok(())
}

/// JSON text whose first value is an object: optional UTF-8 BOM, JSON
/// whitespace (RFC 8259 §2), then `{`. Reads more of the input as needed.
fn looks_like_har(r: &mut dyn Read, buf: &mut Vec<u8>) -> std::io::Result<bool> {
    let start = if buf.starts_with(&[0xef, 0xbb, 0xbf]) {
        3
    } else {
        0
    };
    let mut i = start;
    loop {
        if i >= buf.len() {
            if i >= MAX_HAR_LEADING_WHITESPACE {
                return Ok(false);
            }
            let before = buf.len();
            fill_to(r, buf, before.saturating_add(4096))?;
            if buf.len() == before {
                return Ok(false);
            }
        }
        match buf.get(i) {
            Some(b' ' | b'\t' | b'\r' | b'\n') => i += 1,
            Some(b'{') => return Ok(true),
            _ => return Ok(false),
        }
    }
}
