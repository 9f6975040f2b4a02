//! Link layer: strip everything in front of the IP header.
//!
//! Link types follow the tcpdump.org LINKTYPE_* registry. Each parser returns
//! the bytes starting at the IP header (trailing padding is trimmed later by
//! the IP total length). A header cut short returns [`SkipReason::Truncated`];
//! the caller turns it into `Malformed` when the frame was not cut by the snap
//! length.

use super::SkipReason;

/// LINKTYPE_NULL: BSD loopback, 4-byte address family in the capturing host's byte order.
pub const LINKTYPE_NULL: u32 = 0;
/// LINKTYPE_ETHERNET.
pub const LINKTYPE_ETHERNET: u32 = 1;
/// DLT_RAW as written by some systems (12 on most BSDs, 14 on OpenBSD).
pub const LINKTYPE_RAW_12: u32 = 12;
/// DLT_RAW on OpenBSD.
pub const LINKTYPE_RAW_14: u32 = 14;
/// LINKTYPE_RAW: raw IPv4 or IPv6, version from the first nibble.
pub const LINKTYPE_RAW: u32 = 101;
/// LINKTYPE_LOOP: OpenBSD loopback, address family in network byte order.
pub const LINKTYPE_LOOP: u32 = 108;
/// LINKTYPE_LINUX_SLL: Linux cooked capture v1 (16-byte header).
pub const LINKTYPE_LINUX_SLL: u32 = 113;
/// LINKTYPE_IPV4: raw IPv4 only.
pub const LINKTYPE_IPV4: u32 = 228;
/// LINKTYPE_IPV6: raw IPv6 only.
pub const LINKTYPE_IPV6: u32 = 229;
/// LINKTYPE_NFLOG: Linux netfilter log messages (TLVs).
pub const LINKTYPE_NFLOG: u32 = 239;
/// LINKTYPE_LINUX_SLL2: Linux cooked capture v2 (20-byte header).
pub const LINKTYPE_LINUX_SLL2: u32 = 276;

/// Most VLAN tags / PPPoE headers we walk through before calling the frame malformed.
pub const MAX_LINK_TAGS: usize = 8;
/// Most MPLS labels we walk through before calling the frame malformed.
pub const MAX_MPLS_LABELS: usize = 16;

const ETHERTYPE_IPV4: u16 = 0x0800;
const ETHERTYPE_IPV6: u16 = 0x86dd;
const ETHERTYPE_VLAN: u16 = 0x8100;
const ETHERTYPE_QINQ: u16 = 0x88a8;
/// Pre-standard QinQ outer tags still seen in the wild.
const ETHERTYPE_QINQ_OLD: [u16; 2] = [0x9100, 0x9200];
const ETHERTYPE_MPLS_UC: u16 = 0x8847;
const ETHERTYPE_MPLS_MC: u16 = 0x8848;
const ETHERTYPE_PPPOE_SESSION: u16 = 0x8864;

/// NFLOG TLV type carrying the packet (`NFULA_PAYLOAD`, linux/netfilter/nfnetlink_log.h).
const NFULA_PAYLOAD: u16 = 9;

fn short() -> SkipReason {
    SkipReason::Truncated
}

fn be16(b: &[u8], at: usize) -> Option<u16> {
    let s = b.get(at..at.checked_add(2)?)?;
    Some(u16::from_be_bytes([*s.first()?, *s.get(1)?]))
}

/// The bytes from the IP header on, for a frame of `link_type`.
pub fn ip_slice(link_type: u32, data: &[u8]) -> Result<&[u8], SkipReason> {
    match link_type {
        LINKTYPE_ETHERNET => ethernet(data),
        LINKTYPE_RAW | LINKTYPE_RAW_12 | LINKTYPE_RAW_14 | LINKTYPE_IPV4 | LINKTYPE_IPV6 => {
            Ok(data)
        }
        LINKTYPE_NULL | LINKTYPE_LOOP => loopback(data),
        LINKTYPE_LINUX_SLL => {
            // pkttype(2) hatype(2) halen(2) addr(8) protocol(2)
            let hatype = be16(data, 2).ok_or_else(short)?;
            let proto = be16(data, 14).ok_or_else(short)?;
            sll_payload(hatype, proto, data.get(16..).ok_or_else(short)?)
        }
        LINKTYPE_LINUX_SLL2 => {
            // protocol(2) reserved(2) ifindex(4) hatype(2) pkttype(1) halen(1) addr(8)
            let proto = be16(data, 0).ok_or_else(short)?;
            let hatype = be16(data, 8).ok_or_else(short)?;
            sll_payload(hatype, proto, data.get(20..).ok_or_else(short)?)
        }
        LINKTYPE_NFLOG => nflog(data),
        _ => Err(SkipReason::LinkType),
    }
}

/// Ethernet II, or IEEE 802.3 with an LLC/SNAP header when the type field is a length.
fn ethernet(data: &[u8]) -> Result<&[u8], SkipReason> {
    let type_or_len = be16(data, 12).ok_or_else(short)?;
    let rest = data.get(14..).ok_or_else(short)?;
    match type_or_len {
        // IEEE 802.3: the field is the payload length (<= 1500, IEEE 802.3 §3.2.6).
        0..=1500 => {
            let len = usize::from(type_or_len);
            llc(rest.get(..len).unwrap_or(rest))
        }
        // 1501..1535 is neither a length nor an EtherType.
        1501..=1535 => Err(SkipReason::NotIp),
        et => by_ether_type(et, rest),
    }
}

/// IEEE 802.2 LLC: only SNAP (AA AA 03, OUI, EtherType) can carry IP for us (RFC 1042).
fn llc(data: &[u8]) -> Result<&[u8], SkipReason> {
    match data.get(..3) {
        Some([0xaa, 0xaa, 0x03]) => {
            let et = be16(data, 6).ok_or_else(short)?;
            by_ether_type(et, data.get(8..).ok_or_else(short)?)
        }
        Some(_) => Err(SkipReason::NotIp),
        None => Err(short()),
    }
}

/// Walk VLAN tags (802.1Q, 802.1ad and older QinQ types), MPLS and PPPoE to the IP header.
fn by_ether_type(mut et: u16, mut rest: &[u8]) -> Result<&[u8], SkipReason> {
    for _ in 0..MAX_LINK_TAGS {
        match et {
            ETHERTYPE_IPV4 | ETHERTYPE_IPV6 => return Ok(rest),
            // An 802.3 length inside a VLAN tag: LLC follows (IEEE 802.1Q §9.5).
            0..=1500 => return llc(rest.get(..usize::from(et)).unwrap_or(rest)),
            ETHERTYPE_VLAN | ETHERTYPE_QINQ => {}
            t if ETHERTYPE_QINQ_OLD.contains(&t) => {}
            ETHERTYPE_MPLS_UC | ETHERTYPE_MPLS_MC => return mpls(rest),
            ETHERTYPE_PPPOE_SESSION => {
                // ver/type(1) code(1) session(2) length(2), then the PPP protocol (RFC 2516 §5.4).
                return match be16(rest, 6).ok_or_else(short)? {
                    0x0021 | 0x0057 => rest.get(8..).ok_or_else(short),
                    _ => Err(SkipReason::NotIp),
                };
            }
            _ => return Err(SkipReason::NotIp),
        }
        // VLAN tag: TCI(2) then the inner EtherType (IEEE 802.1Q §9.6).
        et = be16(rest, 2).ok_or_else(short)?;
        rest = rest.get(4..).ok_or_else(short)?;
    }
    Err(SkipReason::Malformed)
}

/// MPLS label stack (RFC 3032): 4-byte entries until the bottom-of-stack bit; the
/// payload type is not signalled, so the first nibble after the stack decides (RFC 4385 §2).
fn mpls(mut rest: &[u8]) -> Result<&[u8], SkipReason> {
    for _ in 0..MAX_MPLS_LABELS {
        let entry = rest.get(..4).ok_or_else(short)?;
        let bottom = entry.get(2).is_some_and(|b| b & 1 == 1);
        rest = rest.get(4..).ok_or_else(short)?;
        if bottom {
            return match rest.first().map(|b| b >> 4) {
                Some(4 | 6) => Ok(rest),
                Some(_) => Err(SkipReason::NotIp),
                None => Err(short()),
            };
        }
    }
    Err(SkipReason::Malformed)
}

/// Linux cooked capture payload: the protocol field is an EtherType except for
/// a few ARPHRD/protocol combinations (pcap-linktype(7) LINKTYPE_LINUX_SLL).
fn sll_payload(hatype: u16, proto: u16, rest: &[u8]) -> Result<&[u8], SkipReason> {
    const ARPHRD_NETLINK: u16 = 824;
    const LINUX_SLL_P_802_2: u16 = 0x0004;
    if hatype == ARPHRD_NETLINK {
        return Err(SkipReason::NotIp);
    }
    match proto {
        LINUX_SLL_P_802_2 => llc(rest),
        et => by_ether_type(et, rest),
    }
}

/// BSD loopback: a 4-byte address family. NULL uses the writer's byte order, LOOP
/// network order; we accept either. AF_INET6 is 24 (NetBSD/OpenBSD), 28 (FreeBSD)
/// or 30 (macOS) (pcap-linktype(7) LINKTYPE_NULL).
fn loopback(data: &[u8]) -> Result<&[u8], SkipReason> {
    let af = data.get(..4).ok_or_else(short)?;
    let mut b = [0u8; 4];
    b.copy_from_slice(af);
    let le = u32::from_le_bytes(b);
    // Address families are small: a value with high bytes set is the other byte order.
    let af = if le > 0xffff { le.swap_bytes() } else { le };
    let rest = data.get(4..).ok_or_else(short)?;
    match af {
        2 | 24 | 28 | 30 => Ok(rest),
        _ => Err(SkipReason::NotIp),
    }
}

/// NFLOG: family(1) version(1) resource id(2), then TLVs whose length (header
/// included) and type are in the capturing host's byte order, each padded to 4
/// bytes; the packet is in `NFULA_PAYLOAD` (pcap-linktype(7) LINKTYPE_NFLOG).
fn nflog(data: &[u8]) -> Result<&[u8], SkipReason> {
    let mut rest = data.get(4..).ok_or_else(short)?;
    while rest.len() >= 4 {
        let (len_le, len_be) = match rest.get(..2) {
            Some([a, b]) => (u16::from_le_bytes([*a, *b]), u16::from_be_bytes([*a, *b])),
            _ => return Err(short()),
        };
        let fits = |l: u16| usize::from(l) >= 4 && usize::from(l) <= rest.len();
        let big_endian = !fits(len_le) && fits(len_be);
        let len = usize::from(if big_endian { len_be } else { len_le });
        let tlv_type = match rest.get(2..4) {
            Some([a, b]) if big_endian => u16::from_be_bytes([*a, *b]),
            Some([a, b]) => u16::from_le_bytes([*a, *b]),
            _ => return Err(short()),
        };
        if len < 4 {
            return Err(SkipReason::Malformed);
        }
        // The nested-attribute flag lives in the top bits of the type.
        if tlv_type & 0x7fff == NFULA_PAYLOAD {
            // A payload TLV cut by the snap length still gives what was captured.
            return Ok(rest
                .get(4..len)
                .unwrap_or_else(|| rest.get(4..).unwrap_or_default()));
        }
        let padded = len
            .checked_add(3)
            .map(|l| l & !3)
            .ok_or(SkipReason::Malformed)?;
        rest = match rest.get(padded..) {
            Some(r) => r,
            None => return Err(short()),
        };
    }
    Err(SkipReason::NotIp)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn loopback_both_byte_orders_and_af_inet6_values() {
        let ip = [0x45u8, 0, 0, 20];
        for af in [2u32, 24, 28, 30] {
            for hdr in [af.to_le_bytes(), af.to_be_bytes()] {
                let frame = [hdr.as_slice(), ip.as_slice()].concat();
                assert_eq!(loopback(&frame), Ok(ip.as_slice()), "af {af}");
            }
        }
        // AF_APPLETALK etc.
        assert_eq!(loopback(&[16, 0, 0, 0, 0x45]), Err(SkipReason::NotIp));
        assert_eq!(loopback(&[2, 0]), Err(SkipReason::Truncated));
    }

    #[test]
    fn mpls_stack_then_ipv6_by_nibble() {
        // two labels, bottom-of-stack on the second, then an IPv6 first byte
        let data = [0, 0x10, 0x00, 0x40, 0, 0x20, 0x01, 0x40, 0x60, 0, 0, 0];
        assert_eq!(mpls(&data), Ok(&data[8..]));
        // label stack without bottom-of-stack runs off the end
        assert_eq!(mpls(&[0, 0x10, 0, 0x40]), Err(SkipReason::Truncated));
        // after the stack: an Ethernet pseudowire control word, not IP
        assert_eq!(
            mpls(&[0, 0x10, 0x01, 0x40, 0, 0, 0, 0]),
            Err(SkipReason::NotIp)
        );
    }

    #[test]
    fn nflog_payload_tlv_little_and_big_endian() {
        let ip = [0x45u8, 0, 0, 20, 1, 2];
        for be in [false, true] {
            let enc = |v: u16| if be { v.to_be_bytes() } else { v.to_le_bytes() };
            let mut f = vec![2u8, 0, 0, 1];
            // NFULA_PACKET_HDR (type 1), 8 bytes
            f.extend(enc(8));
            f.extend(enc(1));
            f.extend([0x08, 0x00, 3, 0]);
            // NFULA_PREFIX (type 10), length 5, padded to 8
            f.extend(enc(5));
            f.extend(enc(10));
            f.extend([b'x', 0, 0, 0]);
            // NFULA_PAYLOAD
            f.extend(enc(4 + ip.len() as u16));
            f.extend(enc(NFULA_PAYLOAD));
            f.extend(ip);
            f.extend([0, 0]);
            assert_eq!(nflog(&f), Ok(ip.as_slice()), "big endian {be}");
        }
        // No payload TLV at all.
        assert_eq!(
            nflog(&[2, 0, 0, 1, 8, 0, 1, 0, 0, 0, 0, 0]),
            Err(SkipReason::NotIp)
        );
    }

    #[test]
    fn sll_llc_and_netlink() {
        let mut sll = vec![0u8; 16];
        sll[14..16].copy_from_slice(&0x0800u16.to_be_bytes());
        sll.push(0x45);
        assert_eq!(ip_slice(LINKTYPE_LINUX_SLL, &sll), Ok(&[0x45u8][..]));
        sll[2..4].copy_from_slice(&824u16.to_be_bytes());
        assert_eq!(ip_slice(LINKTYPE_LINUX_SLL, &sll), Err(SkipReason::NotIp));
        assert_eq!(
            ip_slice(LINKTYPE_LINUX_SLL, &sll[..10]),
            Err(SkipReason::Truncated)
        );
    }

    #[test]
    fn ethernet_unusual_lengths_and_unknown_link_type() {
        assert_eq!(
            ip_slice(LINKTYPE_ETHERNET, &[0; 13]),
            Err(SkipReason::Truncated)
        );
        let mut f = vec![0u8; 14];
        f[12..14].copy_from_slice(&1510u16.to_be_bytes());
        assert_eq!(ip_slice(LINKTYPE_ETHERNET, &f), Err(SkipReason::NotIp));
        // 802.3 with a non-SNAP LLC (spanning tree: 42 42 03)
        f[12..14].copy_from_slice(&3u16.to_be_bytes());
        f.extend([0x42, 0x42, 0x03]);
        assert_eq!(ip_slice(LINKTYPE_ETHERNET, &f), Err(SkipReason::NotIp));
        assert_eq!(ip_slice(147, &f), Err(SkipReason::LinkType));
        assert_eq!(ip_slice(u32::MAX, &f), Err(SkipReason::LinkType));
        // ARP
        f[12..14].copy_from_slice(&0x0806u16.to_be_bytes());
        assert_eq!(ip_slice(LINKTYPE_ETHERNET, &f), Err(SkipReason::NotIp));
    }

    #[test]
    fn llc_snap_inside_a_vlan_tag() {
        let mut f = vec![0u8; 12];
        f.extend(0x8100u16.to_be_bytes());
        f.extend([0, 5]);
        let body = [0xaa, 0xaa, 0x03, 0, 0, 0, 0x86, 0xdd, 0x60];
        f.extend((body.len() as u16).to_be_bytes());
        f.extend(body);
        f.extend([0; 4]); // padding past the 802.3 length
        assert_eq!(ip_slice(LINKTYPE_ETHERNET, &f), Ok(&[0x60u8][..]));
    }

    #[test]
    fn too_many_vlan_tags_is_malformed() {
        let mut f = vec![0u8; 12];
        for _ in 0..=MAX_LINK_TAGS {
            f.extend(0x8100u16.to_be_bytes());
            f.extend([0, 1]);
        }
        f.extend(0x0800u16.to_be_bytes());
        f.push(0x45);
        assert_eq!(ip_slice(LINKTYPE_ETHERNET, &f), Err(SkipReason::Malformed));
    }
}
