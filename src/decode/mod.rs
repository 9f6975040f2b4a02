//! Decode stage: [`Frame`] -> [`Segment`] (link layer, IPv4/IPv6, TCP header).
//!
//! Never panics on any input; a frame that cannot be used is a [`Decoded::Skipped`]
//! with a reason that the caller counts. Bad checksums are ignored on purpose:
//! captures taken on the sending host carry offloaded (unset) checksums.

use crate::capture::Frame;
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

/// Why a frame was not turned into a segment. `name()` is the `packets_skipped` key.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SkipReason {
    /// Link type we do not decode.
    LinkType,
    /// Not IPv4/IPv6 (ARP, LLDP, ...).
    NotIp,
    /// IP but not TCP (UDP, ICMP, ...).
    NotTcp,
    /// Headers that do not parse.
    Malformed,
    /// Cut by the snap length before the TCP header ended.
    Truncated,
    /// An IP fragment whose datagram never completed or could not be reassembled.
    Fragment,
}

impl SkipReason {
    pub fn name(self) -> &'static str {
        match self {
            SkipReason::LinkType => "link_type",
            SkipReason::NotIp => "not_ip",
            SkipReason::NotTcp => "not_tcp",
            SkipReason::Malformed => "malformed",
            SkipReason::Truncated => "truncated",
            SkipReason::Fragment => "ip_fragment",
        }
    }
}

/// Result of decoding one frame.
#[derive(Debug)]
pub enum Decoded {
    Segment(Segment),
    /// An IPv4 fragment held until its datagram completes (counted as decoded).
    Held,
    Skipped(SkipReason),
}
