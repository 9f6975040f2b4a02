//! Packets the capturing tool says it dropped: the run summary's `capture_drops`, read from
//! pcapng Interface Statistics Blocks (pcapng §4.6).
//!
//! Two members, as libpcap's `pcap_stats` has them: `kernel` (`ps_drop`: no room in the
//! kernel's capture buffer, plus what the capturing program itself dropped) and `interface`
//! (`ps_ifdrop`: dropped by the network interface or its driver). From an ISB:
//!
//! - `isb_osdrop` ("dropped by the operating system") is `kernel`;
//! - `isb_ifdrop` ("dropped by the interface due to lack of resources") is `interface`,
//!   except in an ISB written by dumpcap (Wireshark, tshark; its comment is
//!   [`DUMPCAP_ISB_COMMENT`]): dumpcap writes `ps_drop` plus its own drops into
//!   `isb_ifdrop` and never writes `isb_osdrop`, so there it is `kernel` and `interface` is
//!   unknown;
//! - all ones (`0xffffffffffffffff`, what dumpcap writes when `pcap_stats` failed) and a
//!   value of the wrong length are unknown.
//!
//! ISB counters run from the start of the capture, so the last ISB of an interface stands
//! for it; interfaces and inputs are summed. A member no ISB gives stays unknown (`null`),
//! never 0.

use std::collections::BTreeMap;

/// The comment dumpcap gives the ISBs it writes at the end of a capture.
pub const DUMPCAP_ISB_COMMENT: &[u8] = b"Counters provided by dumpcap";

/// pcapng option codes (pcapng §3.5, §4.6).
const OPT_END: u16 = 0;
const OPT_COMMENT: u16 = 1;
const ISB_IFDROP: u16 = 5;
const ISB_OSDROP: u16 = 7;

/// Packets dropped by the capture, by where; `None` when no input says.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq, serde::Serialize)]
pub struct CaptureDrops {
    /// Dropped for want of room in the kernel's capture buffer (or by the capturing program).
    pub kernel: Option<u64>,
    /// Dropped by the network interface or its driver.
    pub interface: Option<u64>,
}

impl CaptureDrops {
    /// Neither member is known.
    pub fn is_unknown(&self) -> bool {
        self.kernel.is_none() && self.interface.is_none()
    }

    /// Adds `other`'s known members (unknown plus known is the known one).
    pub fn add(&mut self, other: &CaptureDrops) {
        fn sum(a: Option<u64>, b: Option<u64>) -> Option<u64> {
            match (a, b) {
                (Some(a), Some(b)) => Some(a.saturating_add(b)),
                (a, b) => a.or(b),
            }
        }
        self.kernel = sum(self.kernel, other.kernel);
        self.interface = sum(self.interface, other.interface);
    }

    /// The drops one Interface Statistics Block reports, from its raw options (in the
    /// section's byte order).
    pub(crate) fn from_isb_options(options: &[u8], big_endian: bool) -> CaptureDrops {
        let mut ifdrop = None;
        let mut osdrop = None;
        let mut dumpcap = false;
        let mut rest = options;
        while let Some((head, after)) = rest.split_first_chunk::<4>() {
            let [c0, c1, l0, l1] = *head;
            let (code, len) = if big_endian {
                (u16::from_be_bytes([c0, c1]), u16::from_be_bytes([l0, l1]))
            } else {
                (u16::from_le_bytes([c0, c1]), u16::from_le_bytes([l0, l1]))
            };
            if code == OPT_END {
                break;
            }
            let len = usize::from(len);
            let Some(value) = after.get(..len) else { break };
            match code {
                OPT_COMMENT => dumpcap |= value == DUMPCAP_ISB_COMMENT,
                ISB_IFDROP => ifdrop = counter(value, big_endian),
                ISB_OSDROP => osdrop = counter(value, big_endian),
                _ => {}
            }
            // Values are padded to 32 bits.
            let padded = len.div_ceil(4).saturating_mul(4);
            rest = after.get(padded..).unwrap_or_default();
        }
        if dumpcap {
            CaptureDrops {
                kernel: ifdrop.or(osdrop),
                interface: None,
            }
        } else {
            CaptureDrops {
                kernel: osdrop,
                interface: ifdrop,
            }
        }
    }
}

/// A 64-bit ISB counter; all ones (unknown) or a wrong length is `None`.
fn counter(value: &[u8], big_endian: bool) -> Option<u64> {
    let bytes: [u8; 8] = value.try_into().ok()?;
    let n = if big_endian {
        u64::from_be_bytes(bytes)
    } else {
        u64::from_le_bytes(bytes)
    };
    (n != u64::MAX).then_some(n)
}

/// The last ISB of every interface of one input, by (section, interface id).
#[derive(Debug, Default)]
pub(crate) struct IsbTable {
    last: BTreeMap<(u64, u32), CaptureDrops>,
}

impl IsbTable {
    /// Records an ISB; a later one of the same interface replaces it (counters are cumulative).
    pub(crate) fn record(&mut self, section: u64, if_id: u32, drops: CaptureDrops) {
        self.last.insert((section, if_id), drops);
    }

    /// The input's drops: its interfaces summed.
    pub(crate) fn total(&self) -> CaptureDrops {
        let mut all = CaptureDrops::default();
        for d in self.last.values() {
            all.add(d);
        }
        all
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn opt(code: u16, value: &[u8]) -> Vec<u8> {
        let mut v = code.to_le_bytes().to_vec();
        v.extend_from_slice(&(value.len() as u16).to_le_bytes());
        v.extend_from_slice(value);
        while !v.len().is_multiple_of(4) {
            v.push(0);
        }
        v
    }

    #[test]
    fn spec_mapping_without_dumpcap_comment() {
        let mut o = opt(ISB_IFDROP, &3u64.to_le_bytes());
        o.extend(opt(ISB_OSDROP, &5u64.to_le_bytes()));
        o.extend(opt(OPT_END, &[]));
        let d = CaptureDrops::from_isb_options(&o, false);
        assert_eq!(
            d,
            CaptureDrops {
                kernel: Some(5),
                interface: Some(3)
            }
        );
    }

    #[test]
    fn dumpcap_ifdrop_is_kernel() {
        let mut o = opt(OPT_COMMENT, DUMPCAP_ISB_COMMENT);
        o.extend(opt(4, &64u64.to_le_bytes()));
        o.extend(opt(ISB_IFDROP, &7u64.to_le_bytes()));
        let d = CaptureDrops::from_isb_options(&o, false);
        assert_eq!(
            d,
            CaptureDrops {
                kernel: Some(7),
                interface: None
            }
        );
    }

    #[test]
    fn unknown_values_and_damage_are_none() {
        // all ones, a 4-byte value, then a value running past the end
        let mut o = opt(ISB_IFDROP, &u64::MAX.to_le_bytes());
        o.extend(opt(ISB_OSDROP, &9u32.to_le_bytes()));
        o.extend_from_slice(&[ISB_OSDROP as u8, 0, 8, 0, 1, 2]);
        let d = CaptureDrops::from_isb_options(&o, false);
        assert!(d.is_unknown());
        assert!(CaptureDrops::from_isb_options(&[], false).is_unknown());
        assert!(CaptureDrops::from_isb_options(&[5, 0], true).is_unknown());
    }

    #[test]
    fn big_endian_options() {
        let mut o = 7u16.to_be_bytes().to_vec();
        o.extend_from_slice(&8u16.to_be_bytes());
        o.extend_from_slice(&11u64.to_be_bytes());
        let d = CaptureDrops::from_isb_options(&o, true);
        assert_eq!(d.kernel, Some(11));
        assert_eq!(d.interface, None);
    }

    #[test]
    fn last_isb_per_interface_then_summed() {
        let k = |n| CaptureDrops {
            kernel: Some(n),
            interface: None,
        };
        let mut t = IsbTable::default();
        assert!(t.total().is_unknown());
        t.record(0, 0, k(1));
        t.record(0, 0, k(4)); // cumulative: replaces
        t.record(0, 1, k(2));
        t.record(1, 0, k(10)); // next section's interface 0
        assert_eq!(t.total(), k(16));
        let mut all = t.total();
        all.add(&CaptureDrops {
            kernel: None,
            interface: Some(3),
        });
        assert_eq!(
            all,
            CaptureDrops {
                kernel: Some(16),
                interface: Some(3)
            }
        );
    }
}
