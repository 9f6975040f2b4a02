//! Classic pcap files and TCP conversations for tests: the one writer and the one
//! conversation builder that unit tests (`crate::capture::testing`), integration tests
//! (`tests/support`, which includes this file by `#[path]`) and the robustness tests build
//! their captures with. Plain `std`, so it compiles in either crate.
// Each crate that includes this file uses a part of it.
#![allow(dead_code)]

/// `LINKTYPE_ETHERNET`.
pub const LINKTYPE_ETHERNET: u32 = 1;
/// Bytes of the file header and of each record header.
pub const FILE_HEADER_LEN: usize = 24;
pub const RECORD_HEADER_LEN: usize = 16;

/// The shape of a classic pcap file.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PcapFormat {
    pub big_endian: bool,
    /// Nanosecond timestamps (magic `a1b23c4d`) instead of microseconds (`a1b2c3d4`).
    pub nanos: bool,
    pub link_type: u32,
    pub snaplen: u32,
}

impl Default for PcapFormat {
    /// Little-endian, microseconds, Ethernet, snap length 65535: what tcpdump writes.
    fn default() -> Self {
        PcapFormat {
            big_endian: false,
            nanos: false,
            link_type: LINKTYPE_ETHERNET,
            snaplen: 65535,
        }
    }
}

impl PcapFormat {
    fn u32(&self, v: u32) -> [u8; 4] {
        if self.big_endian {
            v.to_be_bytes()
        } else {
            v.to_le_bytes()
        }
    }

    fn u16(&self, v: u16) -> [u8; 2] {
        if self.big_endian {
            v.to_be_bytes()
        } else {
            v.to_le_bytes()
        }
    }

    /// The 24-byte file header (version 2.4).
    pub fn header(&self) -> Vec<u8> {
        let mut out = Vec::with_capacity(FILE_HEADER_LEN);
        out.extend(self.u32(if self.nanos { 0xa1b2_3c4d } else { 0xa1b2_c3d4 }));
        out.extend(self.u16(2));
        out.extend(self.u16(4));
        out.extend(self.u32(0)); // thiszone
        out.extend(self.u32(0)); // sigfigs
        out.extend(self.u32(self.snaplen));
        out.extend(self.u32(self.link_type));
        out
    }

    /// Appends one record: timestamp as (seconds, fraction in the file's unit), the
    /// captured bytes and the length the packet had on the wire.
    pub fn record(&self, out: &mut Vec<u8>, secs: u32, frac: u32, data: &[u8], orig_len: u32) {
        out.extend(self.u32(secs));
        out.extend(self.u32(frac));
        out.extend(self.u32(u32::try_from(data.len()).unwrap_or(u32::MAX)));
        out.extend(self.u32(orig_len));
        out.extend_from_slice(data);
    }

    /// Appends one whole packet at `ts_us` (microseconds since the epoch, not before it).
    pub fn packet(&self, out: &mut Vec<u8>, ts_us: i64, data: &[u8]) {
        let secs = u32::try_from(ts_us.div_euclid(1_000_000)).unwrap_or(u32::MAX);
        let us = ts_us.rem_euclid(1_000_000) as u32;
        let frac = if self.nanos { us * 1000 } else { us };
        let len = u32::try_from(data.len()).unwrap_or(u32::MAX);
        self.record(out, secs, frac, data, len);
    }

    /// A whole file of `(time in µs, frame)` packets, in the order given.
    pub fn file<'a>(&self, packets: impl IntoIterator<Item = (i64, &'a [u8])>) -> Vec<u8> {
        let mut out = self.header();
        for (ts_us, data) in packets {
            self.packet(&mut out, ts_us, data);
        }
        out
    }
}

/// A [`PcapFormat::default`] file of `(time in µs, frame)` packets, in the order given.
pub fn pcap<'a>(packets: impl IntoIterator<Item = (i64, &'a [u8])>) -> Vec<u8> {
    PcapFormat::default().file(packets)
}

/// An IPv4 address and TCP port.
pub type Endpoint = ([u8; 4], u16);

/// TCP flag bits.
pub const FIN: u8 = 0x01;
pub const SYN: u8 = 0x02;
pub const RST: u8 = 0x04;
pub const PSH: u8 = 0x08;
pub const ACK: u8 = 0x10;

/// Ethernet + IPv4 + TCP frame, without options; checksums are left 0, which the decoder
/// ignores on purpose.
pub fn tcp_frame(
    src: Endpoint,
    dst: Endpoint,
    seq: u32,
    ack: u32,
    flags: u8,
    payload: &[u8],
) -> Vec<u8> {
    let mut f = Vec::with_capacity(54 + payload.len());
    f.extend_from_slice(&[2, 0, 0, 0, 0, 2, 2, 0, 0, 0, 0, 1, 0x08, 0x00]);
    let total = u16::try_from(40 + payload.len()).unwrap_or(u16::MAX);
    f.extend_from_slice(&[0x45, 0]);
    f.extend_from_slice(&total.to_be_bytes());
    f.extend_from_slice(&[0, 0, 0x40, 0, 64, 6, 0, 0]);
    f.extend_from_slice(&src.0);
    f.extend_from_slice(&dst.0);
    f.extend_from_slice(&src.1.to_be_bytes());
    f.extend_from_slice(&dst.1.to_be_bytes());
    f.extend_from_slice(&seq.to_be_bytes());
    f.extend_from_slice(&ack.to_be_bytes());
    f.extend_from_slice(&[0x50, flags, 0xff, 0xff, 0, 0, 0, 0]);
    f.extend_from_slice(payload);
    f
}

/// Where a conversation's frames go, one at a time: a list in memory, or a file written as
/// it is built (so that a hostile capture never sits in memory). The sink keeps the clock.
pub trait Sink {
    fn frame(&mut self, frame: Vec<u8>);
}

/// Frames without times, in the order sent (the caller times them).
impl Sink for Vec<Vec<u8>> {
    fn frame(&mut self, frame: Vec<u8>) {
        self.push(frame);
    }
}

/// One TCP connection being built: the next sequence number of each side. Every frame
/// acknowledges everything the peer has sent.
#[derive(Debug, Clone)]
pub struct TcpConn {
    pub client: Endpoint,
    pub server: Endpoint,
    pub client_seq: u32,
    pub server_seq: u32,
    /// Largest payload of one data segment.
    pub mss: usize,
    /// Whether the peer acknowledges every data segment with its own packet.
    pub ack_each: bool,
}

impl TcpConn {
    /// The three-way handshake with the given initial sequence numbers; segments of 1460
    /// bytes, not acknowledged one by one.
    pub fn open(sink: &mut impl Sink, client: Endpoint, server: Endpoint, isn: (u32, u32)) -> Self {
        let mut c = TcpConn {
            client,
            server,
            client_seq: isn.0,
            server_seq: isn.1,
            mss: 1460,
            ack_each: false,
        };
        sink.frame(tcp_frame(client, server, isn.0, 0, SYN, &[]));
        c.client_seq = c.client_seq.wrapping_add(1);
        c.segment(sink, false, SYN | ACK, &[]);
        c.server_seq = c.server_seq.wrapping_add(1);
        c.segment(sink, true, ACK, &[]);
        c
    }

    /// One frame from one side at its next sequence number (which it does not move).
    pub fn segment(&self, sink: &mut impl Sink, from_client: bool, flags: u8, payload: &[u8]) {
        let frame = if from_client {
            tcp_frame(
                self.client,
                self.server,
                self.client_seq,
                self.server_seq,
                flags,
                payload,
            )
        } else {
            tcp_frame(
                self.server,
                self.client,
                self.server_seq,
                self.client_seq,
                flags,
                payload,
            )
        };
        sink.frame(frame);
    }

    /// Moves one side's next sequence number on by `n`.
    pub fn advance(&mut self, from_client: bool, n: usize) {
        let n = u32::try_from(n).unwrap_or(u32::MAX);
        if from_client {
            self.client_seq = self.client_seq.wrapping_add(n);
        } else {
            self.server_seq = self.server_seq.wrapping_add(n);
        }
    }

    /// `data` from one side in segments of at most `mss` bytes.
    pub fn send(&mut self, sink: &mut impl Sink, from_client: bool, data: &[u8]) {
        self.send_losing(sink, from_client, data, None);
    }

    /// [`TcpConn::send`], with segment number `lost` (from 0) not captured: its sequence
    /// space is used, and acknowledged when `ack_each`, so the flow stage reports a gap.
    pub fn send_losing(
        &mut self,
        sink: &mut impl Sink,
        from_client: bool,
        data: &[u8],
        lost: Option<usize>,
    ) {
        for (i, piece) in data.chunks(self.mss.max(1)).enumerate() {
            if lost != Some(i) {
                self.segment(sink, from_client, PSH | ACK, piece);
            }
            self.advance(from_client, piece.len());
            if self.ack_each {
                self.segment(sink, !from_client, ACK, &[]);
            }
        }
    }

    /// FIN from one side, then from the other, then the last ACK (an orderly close).
    pub fn close(&mut self, sink: &mut impl Sink, server_first: bool) {
        for from_client in [!server_first, server_first] {
            self.segment(sink, from_client, FIN | ACK, &[]);
            self.advance(from_client, 1);
        }
        self.segment(sink, !server_first, ACK, &[]);
    }

    /// RST from one side.
    pub fn reset(&self, sink: &mut impl Sink, from_server: bool) {
        self.segment(sink, !from_server, RST | ACK, &[]);
    }
}

/// Streams a classic pcap to a writer, one record per frame. Every record moves the clock
/// by `step_us` (negative: time runs backwards).
pub struct PcapSink<W: std::io::Write> {
    out: W,
    format: PcapFormat,
    record: Vec<u8>,
    pub now_us: i64,
    pub step_us: i64,
    /// The first write error; later frames are dropped.
    pub error: Option<std::io::Error>,
}

impl<W: std::io::Write> PcapSink<W> {
    /// Writes the file header; the first record is at `start_us + step_us`.
    pub fn new(mut out: W, format: PcapFormat, start_us: i64, step_us: i64) -> Self {
        let error = out.write_all(&format.header()).err();
        PcapSink {
            out,
            format,
            record: Vec::new(),
            now_us: start_us,
            step_us,
            error,
        }
    }

    /// A frame as it is, at the next tick of the clock.
    pub fn raw(&mut self, frame: &[u8]) {
        self.now_us += self.step_us;
        self.record.clear();
        self.format.packet(&mut self.record, self.now_us, frame);
        if self.error.is_none() {
            self.error = self.out.write_all(&self.record).err();
        }
    }

    /// Flushes, and gives back the writer or the first error.
    pub fn finish(mut self) -> std::io::Result<W> {
        if let Some(e) = self.error.take() {
            return Err(e);
        }
        self.out.flush()?;
        Ok(self.out)
    }
}

impl<W: std::io::Write> Sink for PcapSink<W> {
    fn frame(&mut self, frame: Vec<u8>) {
        self.raw(&frame);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn layout_is_libpcap_s() {
        let f = pcap([(1_500_000, &b"ab"[..])]);
        assert_eq!(f.len(), FILE_HEADER_LEN + RECORD_HEADER_LEN + 2);
        assert_eq!(&f[..8], &[0xd4, 0xc3, 0xb2, 0xa1, 2, 0, 4, 0]);
        assert_eq!(&f[16..24], &[0xff, 0xff, 0, 0, 1, 0, 0, 0]);
        // 1 s + 500000 µs, captured 2 of 2 bytes.
        assert_eq!(
            &f[24..40],
            &[1, 0, 0, 0, 0x20, 0xa1, 7, 0, 2, 0, 0, 0, 2, 0, 0, 0]
        );
        assert_eq!(&f[40..], b"ab");
        let be = PcapFormat {
            big_endian: true,
            nanos: true,
            link_type: 101,
            snaplen: 9,
        };
        let h = be.header();
        assert_eq!(&h[..4], &[0xa1, 0xb2, 0x3c, 0x4d]);
        assert_eq!(&h[16..], &[0, 0, 0, 9, 0, 0, 0, 101]);
        let mut out = Vec::new();
        be.packet(&mut out, 2_000_001, b"");
        assert_eq!(&out[4..8], &1000u32.to_be_bytes(), "nanoseconds");
    }
}
