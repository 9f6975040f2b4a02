//! Classic pcap files for tests: the one writer that unit tests (`crate::capture::testing`)
//! and integration tests (`tests/support`, which includes this file by `#[path]`) build
//! their captures with. Plain `std`, so it compiles in either crate.

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
