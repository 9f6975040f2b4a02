//! Decode stage: [`Frame`] -> [`Segment`] (link layer, IPv4/IPv6, TCP header).
//!
//! Never panics on any input; a frame that cannot be used is a [`Decoded::Skipped`]
//! with a reason that the caller counts. Bad checksums are ignored on purpose:
//! captures taken on the sending host carry offloaded (unset) checksums.
//!
//! Layers: [`link`] strips the link header (Ethernet with VLAN/QinQ/MPLS/SNAP/PPPoE,
//! Linux SLL/SLL2, raw IP, BSD loopback, NFLOG); etherparse's lax slicers parse
//! IPv4/IPv6 and extension headers, trimming link padding to the IP length and
//! keeping what a snap length left of a cut packet; [`fragment`] reassembles IP
//! fragments within fixed limits; IP-in-IP and Teredo are followed
//! [`MAX_TUNNEL_DEPTH`] deep.

use crate::capture::{Frame, FrameRef};
use std::net::SocketAddr;

/// TCP flags the reassembler needs.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct TcpFlags {
    pub syn: bool,
    pub ack: bool,
    pub fin: bool,
    pub rst: bool,
}

/// One TCP segment with its provenance.
#[derive(Debug, Clone)]
pub struct Segment {
    /// Frame index it came from (the last fragment's frame for reassembled IP).
    pub frame: u64,
    /// Input (position in the input list) the frame came from.
    pub input: usize,
    pub ts_ns: i64,
    pub src: SocketAddr,
    pub dst: SocketAddr,
    pub seq: u32,
    pub ack: u32,
    pub flags: TcpFlags,
    /// TCP payload as captured (shorter than on the wire when truncated).
    pub payload: Vec<u8>,
    /// Payload length on the wire per the IP header; `> payload.len()` when truncated.
    pub wire_payload_len: u32,
}

/// Why a frame was not turned into a segment (the `packets_skipped` keys).
pub use crate::anomaly::SkipReason;

/// Result of decoding one frame.
#[derive(Debug)]
pub enum Decoded {
    Segment(Segment),
    /// An IPv4 fragment held until its datagram completes (counted as decoded).
    Held,
    Skipped(SkipReason),
}

pub mod fragment;
pub mod link;

use etherparse::{IpNumber, LaxIpSlice, TcpSlice, UdpSlice};
use fragment::{FragKey, FragOutcome, FragPos, Reassembler};
use std::net::IpAddr;

/// Most nested IP layers we follow (IP-in-IP, 6in4, Teredo) before giving up.
pub const MAX_TUNNEL_DEPTH: u8 = 2;

/// Teredo (RFC 4380) server/relay port: IPv6 carried in UDP.
const TEREDO_PORT: u16 = 3544;

/// Turns frames into TCP segments; holds IP fragments until their datagram completes.
#[derive(Debug, Default)]
pub struct Decoder {
    fragments: Reassembler,
}

/// The IP layer of a frame, reduced to what TCP decoding needs.
struct Transport<'a> {
    src: IpAddr,
    dst: IpAddr,
    protocol: IpNumber,
    bytes: &'a [u8],
    /// Bytes the IP header promises beyond what was captured.
    missing: usize,
}

impl Decoder {
    /// A decoder with an empty fragment table.
    pub fn new() -> Decoder {
        Decoder::default()
    }

    /// Decode one frame down to its TCP segment.
    pub fn decode(&mut self, frame: &Frame) -> Decoded {
        self.decode_ref(&frame.as_ref())
    }

    /// [`Decoder::decode`] of a frame whose bytes are borrowed.
    pub fn decode_ref(&mut self, frame: &FrameRef<'_>) -> Decoded {
        let ip = match link::ip_slice(frame.link_type, frame.data) {
            Ok(ip) => ip,
            Err(reason) => return Decoded::Skipped(cut_or_malformed(reason, frame)),
        };
        match self.decode_ip(frame, ip, 0) {
            Ok(d) => d,
            Err(reason) => Decoded::Skipped(cut_or_malformed(reason, frame)),
        }
    }

    /// End of input: how many held fragments belong to datagrams that never completed.
    pub fn finish(&mut self) -> u64 {
        self.fragments.finish()
    }

    fn decode_ip(
        &mut self,
        frame: &FrameRef<'_>,
        ip: &[u8],
        depth: u8,
    ) -> Result<Decoded, SkipReason> {
        let (slice, stop) = LaxIpSlice::from_slice(ip).map_err(|e| match e {
            etherparse::err::ip::LaxHeaderSliceError::Len(_) => SkipReason::Truncated,
            etherparse::err::ip::LaxHeaderSliceError::Content(_) => SkipReason::Malformed,
        })?;
        let payload = slice.payload();
        let src = slice.source_addr();
        let dst = slice.destination_addr();
        // How much of the IP payload the capture lost (0 for TSO/jumbo length fields).
        let declared_end = match &slice {
            LaxIpSlice::Ipv4(v4) => usize::from(v4.header().total_len()),
            LaxIpSlice::Ipv6(v6) => match v6.header().payload_length() {
                0 => 0,
                n => usize::from(n).saturating_add(40),
            },
        };
        let missing = if payload.incomplete {
            declared_end.saturating_sub(ip.len())
        } else {
            0
        };
        if payload.fragmented {
            return self.fragment(frame, ip, &slice);
        }
        if let Some((err, _)) = stop {
            // An IPv6 extension header that does not parse: we cannot reach TCP.
            return Err(match err {
                etherparse::err::ipv6_exts::HeaderSliceError::Len(_) => SkipReason::Truncated,
                etherparse::err::ipv6_exts::HeaderSliceError::Content(_) => SkipReason::Malformed,
            });
        }
        let t = Transport {
            src,
            dst,
            protocol: payload.ip_number,
            bytes: payload.payload,
            missing,
        };
        self.transport(frame, t, depth)
    }

    fn transport(
        &mut self,
        frame: &FrameRef<'_>,
        t: Transport<'_>,
        depth: u8,
    ) -> Result<Decoded, SkipReason> {
        match t.protocol {
            IpNumber::TCP => tcp(frame, &t),
            // IP-in-IP (RFC 2003) and IPv6-in-IPv4 (RFC 4213): decode the inner packet.
            IpNumber::IPV4 | IpNumber::IPV6 if depth < MAX_TUNNEL_DEPTH => {
                self.decode_ip(frame, t.bytes, depth.saturating_add(1))
            }
            IpNumber::UDP if depth < MAX_TUNNEL_DEPTH => Ok(self.teredo(frame, t.bytes, depth)),
            _ => Ok(Decoded::Skipped(SkipReason::NotTcp)),
        }
    }

    /// Teredo (RFC 4380 §5.1.1): IPv6 in UDP, optionally behind an authentication
    /// and/or origin indication header. Teredo data flows between clients and
    /// relays on arbitrary ports, not only 3544, so like Zeek we recognise it by
    /// content: an IPv6 header whose payload length fills the UDP payload exactly.
    /// Anything that does not turn out to be TCP inside is plain UDP (`not_tcp`).
    fn teredo(&mut self, frame: &FrameRef<'_>, udp: &[u8], depth: u8) -> Decoded {
        let Ok(udp) = UdpSlice::from_slice_lax(udp) else {
            return Decoded::Skipped(SkipReason::NotTcp);
        };
        let mut inner = udp.payload();
        // Authentication indicator: 00 01, id-len, au-len, id, au, nonce(8), confirmation(1).
        if let Some([0, 1, id_len, au_len]) = inner.get(..4) {
            let skip = 4usize + usize::from(*id_len) + usize::from(*au_len) + 9;
            inner = inner.get(skip..).unwrap_or_default();
        }
        // Origin indication: 00 00, port(2), address(4).
        if let Some([0, 0]) = inner.get(..2) {
            inner = inner.get(8..).unwrap_or_default();
        }
        if !looks_like_teredo_ipv6(inner, udp.source_port(), udp.destination_port()) {
            return Decoded::Skipped(SkipReason::NotTcp);
        }
        match self.decode_ip(frame, inner, depth.saturating_add(1)) {
            Ok(d @ (Decoded::Segment(_) | Decoded::Held)) => d,
            _ => Decoded::Skipped(SkipReason::NotTcp),
        }
    }

    /// A fragment of a larger datagram: hold it, or finish the datagram.
    fn fragment(
        &mut self,
        frame: &FrameRef<'_>,
        ip: &[u8],
        slice: &LaxIpSlice<'_>,
    ) -> Result<Decoded, SkipReason> {
        let payload = slice.payload();
        // A fragment cut by the snap length leaves a hole that can never be filled.
        if payload.incomplete {
            return Err(SkipReason::Truncated);
        }
        let (key, pos, bytes) = match slice {
            LaxIpSlice::Ipv4(v4) => {
                let h = v4.header();
                // Only TCP datagrams are worth holding; the protocol is in every fragment.
                if h.protocol() != IpNumber::TCP {
                    return Ok(Decoded::Skipped(SkipReason::NotTcp));
                }
                let key = FragKey {
                    src: IpAddr::V4(h.source_addr()),
                    dst: IpAddr::V4(h.destination_addr()),
                    protocol: h.protocol().0,
                    id: u32::from(h.identification()),
                };
                let pos = FragPos {
                    offset: usize::from(h.fragments_offset().byte_offset()),
                    more: h.more_fragments(),
                };
                // The fragmentable part starts right after the IPv4 header.
                let start = h.slice().len();
                let end = usize::from(h.total_len()).max(start);
                (key, pos, ip.get(start..end).unwrap_or_default())
            }
            LaxIpSlice::Ipv6(v6) => {
                let frag = v6.extensions().clone().into_iter().find_map(|e| match e {
                    etherparse::Ipv6ExtensionSlice::Fragment(f) => Some(f),
                    _ => None,
                });
                let Some(frag) = frag else {
                    return Err(SkipReason::Malformed);
                };
                // Hold only what can lead to TCP: TCP itself or an extension header
                // that may precede it inside the fragmentable part (RFC 8200 §4.1).
                let first = frag.next_header();
                let may_be_tcp = [
                    IpNumber::TCP,
                    IpNumber::IPV6_ROUTE_HEADER,
                    IpNumber::IPV6_DESTINATION_OPTIONS,
                    IpNumber::AUTHENTICATION_HEADER,
                ]
                .contains(&first);
                if !may_be_tcp {
                    return Ok(Decoded::Skipped(SkipReason::NotTcp));
                }
                // RFC 8200 §4.5: the fragmentable part follows the fragment header; its
                // next header is the first header of that part.
                let start = (frag.slice().as_ptr() as usize)
                    .saturating_sub(ip.as_ptr() as usize)
                    .saturating_add(frag.slice().len());
                let end = match v6.header().payload_length() {
                    0 => ip.len(),
                    n => usize::from(n).saturating_add(40).min(ip.len()),
                };
                let key = FragKey {
                    src: IpAddr::V6(v6.header().source_addr()),
                    dst: IpAddr::V6(v6.header().destination_addr()),
                    protocol: frag.next_header().0,
                    id: frag.identification(),
                };
                let pos = FragPos {
                    offset: usize::from(frag.fragment_offset().byte_offset()),
                    more: frag.more_fragments(),
                };
                (key, pos, ip.get(start..end).unwrap_or_default())
            }
        };
        match self.fragments.push(key, pos, bytes, frame.ts_ns) {
            FragOutcome::Held => Ok(Decoded::Held),
            FragOutcome::Rejected => Ok(Decoded::Skipped(SkipReason::Fragment)),
            FragOutcome::Complete(data) => {
                // IPv6: extension headers may follow inside the fragmentable part.
                let (protocol, bytes) = match key.src {
                    IpAddr::V4(_) => (IpNumber(key.protocol), data.as_slice()),
                    IpAddr::V6(_) => {
                        let (_, n, rest, err) = etherparse::Ipv6ExtensionsSlice::from_slice_lax(
                            IpNumber(key.protocol),
                            &data,
                        );
                        if err.is_some() {
                            return Err(SkipReason::Malformed);
                        }
                        (n, rest)
                    }
                };
                let t = Transport {
                    src: key.src,
                    dst: key.dst,
                    protocol,
                    bytes,
                    missing: 0,
                };
                if t.protocol == IpNumber::TCP {
                    tcp(frame, &t)
                } else {
                    Ok(Decoded::Skipped(SkipReason::NotTcp))
                }
            }
        }
    }
}

/// An IPv6 packet exactly filling a UDP payload (Zeek's Teredo `IsValid`). On the
/// Teredo port a snap-length cut is tolerated: the packet may be longer.
fn looks_like_teredo_ipv6(b: &[u8], sport: u16, dport: u16) -> bool {
    let Some(&[v, _, _, _, l0, l1]) = b.get(..6) else {
        return false;
    };
    if v >> 4 != 6 {
        return false;
    }
    let want = usize::from(u16::from_be_bytes([l0, l1])).saturating_add(40);
    want == b.len() || ((sport == TEREDO_PORT || dport == TEREDO_PORT) && want > b.len())
}

/// A header cut short is `truncated` only when the snap length cut the frame;
/// otherwise the lengths inside the frame lie, which is `malformed`.
fn cut_or_malformed(reason: SkipReason, frame: &FrameRef<'_>) -> SkipReason {
    match reason {
        SkipReason::Truncated if !frame.is_truncated() => SkipReason::Malformed,
        r => r,
    }
}

/// TCP header and payload. The payload is what was captured after the header:
/// for TSO frames (IP length 0) that is all of it; checksums are not checked.
fn tcp(frame: &FrameRef<'_>, t: &Transport<'_>) -> Result<Decoded, SkipReason> {
    let seg = TcpSlice::from_slice(t.bytes).map_err(|e| match e {
        etherparse::err::tcp::HeaderSliceError::Len(_) => SkipReason::Truncated,
        etherparse::err::tcp::HeaderSliceError::Content(_) => SkipReason::Malformed,
    })?;
    let payload = seg.payload();
    let wire = payload.len().saturating_add(t.missing);
    Ok(Decoded::Segment(Segment {
        frame: frame.index,
        input: frame.input,
        ts_ns: frame.ts_ns,
        src: SocketAddr::new(t.src, seg.source_port()),
        dst: SocketAddr::new(t.dst, seg.destination_port()),
        seq: seg.sequence_number(),
        ack: seg.acknowledgment_number(),
        flags: TcpFlags {
            syn: seg.syn(),
            ack: seg.ack(),
            fin: seg.fin(),
            rst: seg.rst(),
        },
        payload: crate::buffers::copy_of(payload),
        wire_payload_len: u32::try_from(wire).unwrap_or(u32::MAX),
    }))
}

#[cfg(test)]
mod tests {
    use super::*;
    use etherparse::PacketBuilder;

    const PAYLOAD: &[u8] = b"GET / HTTP/1.1\r\n\r\n";

    /// IPv4 + TCP 10.0.0.1:1234 -> 10.0.0.2:80, seq 1000, ack 77, PSH|ACK.
    fn ipv4_tcp(payload: &[u8]) -> Vec<u8> {
        let mut v = Vec::new();
        PacketBuilder::ipv4([10, 0, 0, 1], [10, 0, 0, 2], 64)
            .tcp(1234, 80, 1000, 65535)
            .psh()
            .ack(77)
            .write(&mut v, payload)
            .unwrap();
        v
    }

    /// IPv6 + TCP [2001:db8::1]:1234 -> [2001:db8::2]:80, seq 5000, SYN.
    fn ipv6_tcp(payload: &[u8]) -> Vec<u8> {
        let a = [0x20, 0x01, 0x0d, 0xb8, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1];
        let mut b = a;
        b[15] = 2;
        let mut v = Vec::new();
        PacketBuilder::ipv6(a, b, 64)
            .tcp(1234, 80, 5000, 65535)
            .syn()
            .write(&mut v, payload)
            .unwrap();
        v
    }

    fn ether(ether_type: u16, body: &[u8]) -> Vec<u8> {
        let mut f = vec![0x02, 0, 0, 0, 0, 1, 0x02, 0, 0, 0, 0, 2];
        f.extend(ether_type.to_be_bytes());
        f.extend(body);
        f
    }

    fn frame(link_type: u32, data: Vec<u8>) -> Frame {
        let orig_len = data.len() as u32;
        Frame {
            index: 7,
            input: 1,
            ts_ns: 42,
            link_type,
            data,
            orig_len,
        }
    }

    fn segment(link_type: u32, data: Vec<u8>) -> Segment {
        match Decoder::new().decode(&frame(link_type, data)) {
            Decoded::Segment(s) => s,
            other => panic!("expected a segment, got {other:?}"),
        }
    }

    fn assert_v4(s: &Segment, payload: &[u8]) {
        assert_eq!(s.src, "10.0.0.1:1234".parse().unwrap());
        assert_eq!(s.dst, "10.0.0.2:80".parse().unwrap());
        assert_eq!((s.seq, s.ack), (1000, 77));
        assert_eq!(
            s.flags,
            TcpFlags {
                syn: false,
                ack: true,
                fin: false,
                rst: false
            }
        );
        assert_eq!(s.payload, payload);
        assert_eq!(s.wire_payload_len as usize, payload.len());
        assert_eq!((s.frame, s.input, s.ts_ns), (7, 1, 42));
    }

    #[test]
    fn ethernet_ipv4_tcp() {
        assert_v4(&segment(1, ether(0x0800, &ipv4_tcp(PAYLOAD))), PAYLOAD);
    }

    #[test]
    fn ethernet_padding_past_ip_length_is_trimmed() {
        // A bare SYN is padded to the 60-byte Ethernet minimum.
        let mut f = ether(0x0800, &ipv4_tcp(b""));
        f.resize(60, 0xee);
        assert_v4(&segment(1, f), b"");
        let mut f = ether(0x0800, &ipv4_tcp(b"ab"));
        f.extend([0xee; 4]);
        assert_v4(&segment(1, f), b"ab");
    }

    #[test]
    fn vlan_qinq_and_old_qinq_tags() {
        let ip = ipv4_tcp(PAYLOAD);
        // 802.1Q VLAN 0 (priority tag)
        let f = ether(0x8100, &[[0u8, 0, 0x08, 0x00].as_slice(), &ip].concat());
        assert_v4(&segment(1, f), PAYLOAD);
        for outer in [0x88a8u16, 0x9100] {
            let tags = [0u8, 10, 0x81, 0x00, 0, 20, 0x08, 0x00];
            let f = ether(outer, &[tags.as_slice(), &ip].concat());
            assert_v4(&segment(1, f), PAYLOAD);
        }
    }

    #[test]
    fn mpls_label_stack_ipv4_and_ipv6() {
        // labels 16 and 17, bottom of stack on the second (S bit in byte 2)
        let labels = [0u8, 0x01, 0x00, 0x40, 0x00, 0x01, 0x11, 0x40];
        let f = ether(0x8847, &[labels.as_slice(), &ipv4_tcp(PAYLOAD)].concat());
        assert_v4(&segment(1, f), PAYLOAD);
        let f = ether(0x8848, &[labels.as_slice(), &ipv6_tcp(b"x")].concat());
        let s = segment(1, f);
        assert_eq!(
            (s.seq, s.flags.syn, s.payload.as_slice()),
            (5000, true, &b"x"[..])
        );
    }

    #[test]
    fn ieee_802_3_llc_snap() {
        let ip = ipv4_tcp(PAYLOAD);
        let snap = [0xaa, 0xaa, 0x03, 0, 0, 0, 0x08, 0x00];
        let body = [snap.as_slice(), &ip].concat();
        let mut f = ether(body.len() as u16, &body);
        // padding after the 802.3 length is ignored too
        f.extend([0; 6]);
        assert_v4(&segment(1, f), PAYLOAD);
    }

    #[test]
    fn pppoe_session() {
        let hdr = [0x11, 0x00, 0x00, 0x01, 0x00, 0x40, 0x00, 0x21];
        let f = ether(0x8864, &[hdr.as_slice(), &ipv4_tcp(PAYLOAD)].concat());
        assert_v4(&segment(1, f), PAYLOAD);
    }

    #[test]
    fn linux_sll_and_sll2() {
        // SLL: pkttype 0 (to us), ARPHRD_ETHER 1, halen 6, addr, protocol 0x0800
        let mut sll = vec![0, 0, 0, 1, 0, 6, 2, 0, 0, 0, 0, 1, 0, 0, 0x08, 0x00];
        sll.extend(ipv4_tcp(PAYLOAD));
        assert_v4(&segment(113, sll), PAYLOAD);
        // SLL2: protocol 0x86dd, reserved, ifindex 2, ARPHRD_ETHER, pkttype 4 (outgoing), halen 6, addr
        let mut sll2 = vec![
            0x86, 0xdd, 0, 0, 0, 0, 0, 2, 0, 1, 4, 6, 2, 0, 0, 0, 0, 1, 0, 0,
        ];
        sll2.extend(ipv6_tcp(b"hi"));
        let s = segment(276, sll2);
        assert_eq!(s.dst, "[2001:db8::2]:80".parse().unwrap());
        assert_eq!(s.payload, b"hi");
    }

    #[test]
    fn raw_ip_link_types() {
        for lt in [101, 12, 14, 228] {
            assert_v4(&segment(lt, ipv4_tcp(PAYLOAD)), PAYLOAD);
        }
        for lt in [101, 229] {
            assert_eq!(segment(lt, ipv6_tcp(b"")).seq, 5000);
        }
    }

    #[test]
    fn bsd_null_and_loop() {
        let mut null = 2u32.to_le_bytes().to_vec();
        null.extend(ipv4_tcp(PAYLOAD));
        assert_v4(&segment(0, null), PAYLOAD);
        let mut lo = 30u32.to_be_bytes().to_vec();
        lo.extend(ipv6_tcp(b""));
        assert_eq!(segment(108, lo).seq, 5000);
    }

    #[test]
    fn nflog_payload() {
        let ip = ipv4_tcp(PAYLOAD);
        // AF_INET, version 0, resource id 1 (big-endian); TLVs little-endian (x86 host)
        let mut f = vec![2u8, 0, 0, 1];
        f.extend(8u16.to_le_bytes());
        f.extend(1u16.to_le_bytes());
        f.extend([0x08, 0x00, 3, 0]);
        f.extend((4 + ip.len() as u16).to_le_bytes());
        f.extend(9u16.to_le_bytes());
        f.extend(&ip);
        assert_v4(&segment(239, f), PAYLOAD);
    }

    #[test]
    fn ipv6_extension_headers_are_walked() {
        let mut p = ipv6_tcp(b"ext");
        // Insert a hop-by-hop header (next header TCP, PadN option) after the fixed header.
        p[6] = 0;
        let plen = u16::from_be_bytes([p[4], p[5]]) + 8;
        p[4..6].copy_from_slice(&plen.to_be_bytes());
        let hbh = [6u8, 0, 1, 4, 0, 0, 0, 0];
        p.splice(40..40, hbh);
        let s = segment(101, p);
        assert_eq!((s.seq, s.payload.as_slice()), (5000, &b"ext"[..]));
    }

    #[test]
    fn ipv6_atomic_fragment_passes_through() {
        let mut p = ipv6_tcp(b"atomic");
        p[6] = 44;
        let plen = u16::from_be_bytes([p[4], p[5]]) + 8;
        p[4..6].copy_from_slice(&plen.to_be_bytes());
        // fragment header: next TCP, offset 0, M 0, id 0x1234
        p.splice(40..40, [6u8, 0, 0, 0, 0, 0, 0x12, 0x34]);
        assert_eq!(segment(101, p).payload, b"atomic");
    }

    /// One IPv4 fragment of `full` (an unfragmented IPv4 packet with a 20-byte
    /// header) covering IP payload bytes `range`.
    fn ipv4_fragment(full: &[u8], range: std::ops::Range<usize>, more: bool) -> Vec<u8> {
        let mut f = full[..20].to_vec();
        let len = (20 + range.len()) as u16;
        f[2..4].copy_from_slice(&len.to_be_bytes());
        let off = (range.start / 8) as u16 | if more { 0x2000 } else { 0 };
        f[6..8].copy_from_slice(&off.to_be_bytes());
        f.extend(&full[20 + range.start..20 + range.end]);
        f
    }

    #[test]
    fn ipv4_fragments_reassembled_out_of_order() {
        let body: Vec<u8> = (0..100u8).collect();
        let full = ipv4_tcp(&body);
        let mut d = Decoder::new();
        let last = ipv4_fragment(&full, 96..120, false);
        let first = ipv4_fragment(&full, 0..48, true);
        let mid = ipv4_fragment(&full, 48..96, true);
        assert!(matches!(d.decode(&frame(101, last)), Decoded::Held));
        assert!(matches!(d.decode(&frame(101, first)), Decoded::Held));
        let mut f = frame(101, mid);
        f.index = 9;
        match d.decode(&f) {
            Decoded::Segment(s) => {
                assert_eq!(s.payload, body);
                assert_eq!(s.frame, 9, "segment carries the completing frame");
                assert_eq!(s.seq, 1000);
            }
            other => panic!("{other:?}"),
        }
        assert_eq!(d.finish(), 0);
    }

    /// One IPv6 fragment of `full` (an IPv6 packet with no extension headers)
    /// covering payload bytes `range`, fragment id 0xabcd.
    fn ipv6_fragment(full: &[u8], range: std::ops::Range<usize>, more: bool) -> Vec<u8> {
        let mut f = full[..40].to_vec();
        let next = f[6];
        f[6] = 44;
        f[4..6].copy_from_slice(&((8 + range.len()) as u16).to_be_bytes());
        let off = ((range.start / 8) as u16) << 3 | u16::from(more);
        f.extend([next, 0]);
        f.extend(off.to_be_bytes());
        f.extend(0xabcdu32.to_be_bytes());
        f.extend(&full[40 + range.start..40 + range.end]);
        f
    }

    #[test]
    fn ipv6_fragments_reassembled() {
        let body: Vec<u8> = (0..60u8).collect();
        let full = ipv6_tcp(&body);
        let mut d = Decoder::new();
        assert!(matches!(
            d.decode(&frame(101, ipv6_fragment(&full, 32..80, false))),
            Decoded::Held
        ));
        match d.decode(&frame(101, ipv6_fragment(&full, 0..32, true))) {
            Decoded::Segment(s) => {
                assert_eq!((s.seq, s.payload.clone()), (5000, body));
                assert_eq!(s.dst, "[2001:db8::2]:80".parse().unwrap());
            }
            other => panic!("{other:?}"),
        }
        // An IPv6 fragment of UDP is not held.
        let mut udp = Vec::new();
        PacketBuilder::ipv6([1; 16], [2; 16], 9)
            .udp(53, 53)
            .write(&mut udp, &[0; 40])
            .unwrap();
        assert!(matches!(
            d.decode(&frame(101, ipv6_fragment(&udp, 0..24, true))),
            Decoded::Skipped(SkipReason::NotTcp)
        ));
        assert_eq!(d.finish(), 0);
    }

    #[test]
    fn ipv4_fragment_never_completed_is_counted_at_finish() {
        let full = ipv4_tcp(&[7; 40]);
        let mut d = Decoder::new();
        assert!(matches!(
            d.decode(&frame(101, ipv4_fragment(&full, 0..32, true))),
            Decoded::Held
        ));
        assert_eq!(d.finish(), 1);
    }

    #[test]
    fn ipv4_fragment_of_udp_is_not_tcp_and_oversize_is_rejected() {
        let mut udp = Vec::new();
        PacketBuilder::ipv4([1, 1, 1, 1], [2, 2, 2, 2], 9)
            .udp(53, 53)
            .write(&mut udp, &[0; 40])
            .unwrap();
        let mut d = Decoder::new();
        let f = frame(101, ipv4_fragment(&udp, 0..24, true));
        assert!(matches!(d.decode(&f), Decoded::Skipped(SkipReason::NotTcp)));
        // offset 65528 + 24 bytes > 65535
        let mut big = ipv4_fragment(&ipv4_tcp(&[0; 40]), 0..24, true);
        big[6..8].copy_from_slice(&(0x2000u16 | 8191).to_be_bytes());
        assert!(matches!(
            d.decode(&frame(101, big)),
            Decoded::Skipped(SkipReason::Fragment)
        ));
    }

    #[test]
    fn tso_frame_with_zero_ip_length_uses_captured_bytes() {
        let mut p = ipv4_tcp(PAYLOAD);
        p[2..4].copy_from_slice(&[0, 0]);
        assert_v4(&segment(101, p), PAYLOAD);
    }

    #[test]
    fn bad_checksums_are_ignored() {
        let mut p = ipv4_tcp(PAYLOAD);
        p[10] ^= 0xff; // IPv4 header checksum
        p[36] ^= 0xff; // TCP checksum
        assert_v4(&segment(101, p), PAYLOAD);
    }

    #[test]
    fn snap_length_cut_in_payload_and_in_header() {
        let p = ipv4_tcp(PAYLOAD);
        let mut f = frame(101, p[..45].to_vec());
        f.orig_len = p.len() as u32;
        match Decoder::new().decode(&f) {
            Decoded::Segment(s) => {
                assert_eq!(s.payload, &PAYLOAD[..5]);
                assert_eq!(s.wire_payload_len as usize, PAYLOAD.len());
            }
            other => panic!("{other:?}"),
        }
        let mut f = frame(101, p[..30].to_vec());
        f.orig_len = p.len() as u32;
        assert!(matches!(
            Decoder::new().decode(&f),
            Decoded::Skipped(SkipReason::Truncated)
        ));
        // Same cut without the snap length explaining it: the lengths lie.
        assert!(matches!(
            Decoder::new().decode(&frame(101, p[..30].to_vec())),
            Decoded::Skipped(SkipReason::Malformed)
        ));
    }

    #[test]
    fn skip_reasons() {
        let mut d = Decoder::new();
        let arp = ether(0x0806, &[0; 28]);
        assert!(matches!(
            d.decode(&frame(1, arp)),
            Decoded::Skipped(SkipReason::NotIp)
        ));
        assert!(matches!(
            d.decode(&frame(147, ipv4_tcp(b""))),
            Decoded::Skipped(SkipReason::LinkType)
        ));
        assert!(matches!(
            d.decode(&frame(u32::MAX, ipv4_tcp(b""))),
            Decoded::Skipped(SkipReason::LinkType)
        ));
        let mut udp = Vec::new();
        PacketBuilder::ipv4([1, 1, 1, 1], [2, 2, 2, 2], 9)
            .udp(53, 53)
            .write(&mut udp, b"q")
            .unwrap();
        assert!(matches!(
            d.decode(&frame(101, udp)),
            Decoded::Skipped(SkipReason::NotTcp)
        ));
        // IPv4 header length field below 5 words
        let mut bad = ipv4_tcp(b"");
        bad[0] = 0x43;
        assert!(matches!(
            d.decode(&frame(101, bad)),
            Decoded::Skipped(SkipReason::Malformed)
        ));
        assert!(matches!(
            d.decode(&frame(101, vec![])),
            Decoded::Skipped(SkipReason::Malformed)
        ));
        // TCP data offset below 5 words
        let mut bad = ipv4_tcp(b"");
        bad[32] = 0x20;
        assert!(matches!(
            d.decode(&frame(101, bad)),
            Decoded::Skipped(SkipReason::Malformed)
        ));
    }

    #[test]
    fn ip_in_ip_and_teredo_tunnels() {
        // IPv4-in-IPv4 (protocol 4)
        let inner = ipv4_tcp(PAYLOAD);
        let mut outer = Vec::new();
        PacketBuilder::ipv4([9, 9, 9, 9], [8, 8, 8, 8], 64)
            .udp(1, 1)
            .write(&mut outer, &[])
            .unwrap();
        outer.truncate(20);
        outer[9] = 4;
        outer[2..4].copy_from_slice(&((20 + inner.len()) as u16).to_be_bytes());
        outer.extend(&inner);
        assert_v4(&segment(101, outer), PAYLOAD);
        // Teredo: IPv6 in UDP 3544 behind an origin indication
        let mut udp_body = vec![0u8, 0, 0x12, 0x34, 1, 2, 3, 4];
        udp_body.extend(ipv6_tcp(b"teredo"));
        let mut t = Vec::new();
        PacketBuilder::ipv4([9, 9, 9, 9], [8, 8, 8, 8], 64)
            .udp(3544, 40000)
            .write(&mut t, &udp_body)
            .unwrap();
        let s = segment(101, t);
        assert_eq!((s.seq, s.payload.as_slice()), (5000, &b"teredo"[..]));
        // Teredo between client and relay: any port, recognised by the exact IPv6 length.
        let mut t = Vec::new();
        PacketBuilder::ipv4([9, 9, 9, 9], [8, 8, 8, 8], 64)
            .udp(32900, 3797)
            .write(&mut t, &ipv6_tcp(b"relay"))
            .unwrap();
        assert_eq!(segment(101, t).payload, b"relay");
        // Off the Teredo port, a length mismatch means it is not Teredo.
        let mut inner = ipv6_tcp(b"relay");
        inner.push(0);
        let mut t = Vec::new();
        PacketBuilder::ipv4([9, 9, 9, 9], [8, 8, 8, 8], 64)
            .udp(32900, 3797)
            .write(&mut t, &inner)
            .unwrap();
        assert!(matches!(
            Decoder::new().decode(&frame(101, t)),
            Decoded::Skipped(SkipReason::NotTcp)
        ));
        // UDP on 3544 that is not IPv6 inside stays not_tcp
        let mut t = Vec::new();
        PacketBuilder::ipv4([9, 9, 9, 9], [8, 8, 8, 8], 64)
            .udp(3544, 40000)
            .write(&mut t, b"hello")
            .unwrap();
        assert!(matches!(
            Decoder::new().decode(&frame(101, t)),
            Decoded::Skipped(SkipReason::NotTcp)
        ));
    }

    proptest::proptest! {
        /// Arbitrary bytes under every link type we decode: a result, never a panic,
        /// and a segment's payload never exceeds the frame.
        #[test]
        fn arbitrary_frames_never_panic(
            lt in proptest::sample::select(vec![0u32, 1, 12, 14, 101, 108, 113, 228, 229, 239, 276, 147]),
            data in proptest::collection::vec(proptest::prelude::any::<u8>(), 0..200),
            cut in proptest::prelude::any::<bool>(),
        ) {
            let mut f = frame(lt, data.clone());
            if cut {
                f.orig_len = f.orig_len.saturating_add(100);
            }
            let mut d = Decoder::new();
            if let Decoded::Segment(s) = d.decode(&f) {
                proptest::prop_assert!(s.payload.len() <= data.len());
                proptest::prop_assert!(s.wire_payload_len as usize >= s.payload.len());
            }
        }

        /// Valid IPv4/TCP under Ethernet with random IP flag/offset/id bytes: fragments
        /// are held, rejected or completed, and `finish` accounts for what was held.
        #[test]
        fn random_fragment_fields_never_panic(
            frags in proptest::collection::vec((0u16..0x4000, 0u16..4, 0usize..64), 1..40),
        ) {
            let mut d = Decoder::new();
            let mut held = 0u64;
            for (flags_off, id, len) in frags {
                let mut p = ipv4_tcp(&vec![0x41; len]);
                p[4..6].copy_from_slice(&id.to_be_bytes());
                p[6..8].copy_from_slice(&flags_off.to_be_bytes());
                match d.decode(&frame(101, p)) {
                    Decoded::Held => held += 1,
                    Decoded::Segment(_) | Decoded::Skipped(_) => {}
                }
            }
            proptest::prop_assert!(d.finish() <= held);
        }
    }

    #[test]
    fn every_prefix_of_every_link_type_never_panics() {
        let ip4 = ipv4_tcp(PAYLOAD);
        let frames: Vec<(u32, Vec<u8>)> = vec![
            (
                1,
                ether(0x8847, &[[0u8, 1, 1, 0x40].as_slice(), &ip4].concat()),
            ),
            (
                1,
                ether(0x8100, &[[0u8, 0, 0x08, 0x00].as_slice(), &ip4].concat()),
            ),
            (113, [[0u8; 14].as_slice(), &[0x08, 0x00], &ip4].concat()),
            (276, [[0x08u8, 0x00].as_slice(), &[0; 18], &ip4].concat()),
            (0, [[2u8, 0, 0, 0].as_slice(), &ip4].concat()),
            (239, [[2u8, 0, 0, 1, 40, 0, 9, 0].as_slice(), &ip4].concat()),
            (101, ipv6_tcp(PAYLOAD)),
        ];
        for (lt, data) in frames {
            for cut in 0..=data.len() {
                let mut f = frame(lt, data[..cut].to_vec());
                f.orig_len = data.len() as u32;
                // A cut frame yields at most the payload bytes it holds, never others.
                if let Decoded::Segment(seg) = Decoder::new().decode(&f) {
                    assert!(seg.payload.len() <= cut, "link type {lt}, cut {cut}");
                    assert!(
                        PAYLOAD.starts_with(&seg.payload),
                        "link type {lt}, cut {cut}"
                    );
                }
            }
        }
    }
}
