//! Integration tests: capture and decode against the public corpus (its slices in
//! `tests/data/corpus`; the whole of `../shared/corpus`, read in place, for the ignored
//! tests) and against malformed inputs built here.
//!
//! Expected values come from the corpus: tcpdump's own `.out` files (parsed
//! below), MANIFEST.md, and `capinfos`/`tshark` 4.0 runs recorded in the tables.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::indexing_slicing)]

use crate::support::pcap_file::PcapFormat;
use crate::support::{corpus, corpus_slice};
use mcp_trace::capture::CaptureCounters;
use mcp_trace::capture::{
    CaptureError, Frame, InputInfo, MAX_RECORD_BYTES, Merger, PacketReader, Source, open,
    open_reader,
};
use mcp_trace::decode::{Decoded, Decoder, Segment, SkipReason};
use std::collections::HashMap;
use std::io::{Read, Write};
use std::net::SocketAddr;
use std::path::{Path, PathBuf};

fn is_capture(p: &Path) -> bool {
    let n = p.file_name().unwrap().to_string_lossy();
    n.ends_with(".pcap") || n.ends_with(".pcapng") || n.ends_with(".pcap.gz")
}

fn files_in(dir: &Path) -> Vec<PathBuf> {
    let mut v: Vec<PathBuf> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect();
    v.sort();
    v
}

fn reader(path: &Path) -> PacketReader {
    match open(path.to_str().unwrap(), 0) {
        Ok(Source::Packets(r)) => r,
        Ok(other) => panic!("{}: not a capture: {other:?}", path.display()),
        Err(e) => panic!("{}: {e}", path.display()),
    }
}

/// Everything one run over some inputs produced.
struct Run {
    frames: Vec<Frame>,
    decoded: Vec<Decoded>,
    stats: CaptureCounters,
    infos: Vec<InputInfo>,
}

impl Run {
    fn segments(&self) -> Vec<&Segment> {
        self.decoded
            .iter()
            .filter_map(|d| match d {
                Decoded::Segment(s) => Some(s),
                _ => None,
            })
            .collect()
    }
}

fn run(readers: Vec<PacketReader>) -> Run {
    let mut merger = Merger::new(readers);
    let mut stats = CaptureCounters::default();
    let mut decoder = Decoder::new();
    let (mut frames, mut decoded) = (Vec::new(), Vec::new());
    while let Some(f) = merger.next_frame(&mut stats) {
        let d = decoder.decode(&f);
        match &d {
            Decoded::Segment(_) | Decoded::Held => stats.packets_decoded += 1,
            Decoded::Skipped(r) => stats.skip(*r),
        }
        frames.push(f);
        decoded.push(d);
    }
    assert_eq!(decoder.finish(), 0, "fragments left over");
    // The run summary's identity.
    assert_eq!(
        stats.packets_total,
        stats.packets_decoded + stats.packets_skipped.total()
    );
    assert_eq!(stats.packets_total, frames.len() as u64);
    let indexes: Vec<u64> = frames.iter().map(|f| f.index).collect();
    assert_eq!(indexes, (1..=frames.len() as u64).collect::<Vec<_>>());
    Run {
        frames,
        decoded,
        stats,
        infos: merger.infos(),
    }
}

fn run_file(path: &Path) -> Run {
    run(vec![reader(path)])
}

// ---------------------------------------------------------------------------
// pcap-formats/: every file, with counts, link types and formats.

/// (file, format, packets, link types, TCP segments, captured TCP payload bytes).
/// Packets and link types from MANIFEST.md / capinfos; segments and bytes from
/// `tshark -Y "tcp && !icmp && !icmpv6" -T fields -e tcp.len`.
type FormatCase = (
    &'static str,
    &'static str,
    u64,
    &'static [u32],
    usize,
    usize,
);
const PCAP_FORMATS: &[FormatCase] = &[
    (
        "pcap-parser/err-buffertoosmall.pcapng",
        "pcapng",
        27,
        &[1],
        27,
        7199,
    ),
    ("pcap-parser/modified-format.pcap", "pcap", 1, &[1], 0, 0),
    ("pcap-parser/test001-be.pcapng", "pcapng", 4, &[1], 0, 0),
    ("pcap-parser/test001-le.pcapng", "pcapng", 4, &[1], 0, 0),
    ("pcap-parser/test010-le.pcapng", "pcapng", 4, &[1], 0, 0),
    ("pcap-parser/test016-be.pcapng", "pcapng", 4, &[1], 0, 0),
    ("pcap-parser/test017-le.pcapng", "pcapng", 0, &[], 0, 0),
    ("tcpdump/LINKTYPE_IPV4.pcap", "pcap", 1, &[228], 0, 0),
    ("tcpdump/LINKTYPE_IPV6.pcap", "pcap", 1, &[229], 0, 0),
    ("tcpdump/LINKTYPE_RAW_ipv4.pcap", "pcap", 1, &[101], 0, 0),
    ("tcpdump/LINKTYPE_RAW_ipv6.pcap", "pcap", 1, &[101], 0, 0),
    ("tcpdump/ipv4_tcp_http_xml.pcap", "pcap", 1, &[1], 1, 605),
    (
        "tcpdump/ipv4_tcp_http_xml_tso.pcap",
        "pcap",
        1,
        &[1],
        1,
        1976,
    ),
    ("tcpdump/print-flags.pcap", "pcap", 10, &[1], 10, 5761),
    ("tcpdump/tcp-handshake-nano.pcap", "pcap", 3, &[113], 3, 0),
    ("zeek/http-qinq-0.pcap", "pcap", 14, &[1], 14, 5143),
    ("zeek/http-vlan-0.pcap", "pcap", 14, &[1], 14, 5143),
    ("zeek/linux_dlt_sll2.pcap", "pcap", 6, &[276], 0, 0),
];

#[test]
fn every_pcap_formats_file_reads_with_expected_counts() {
    let root = corpus_slice("pcap-formats");
    let mut seen = 0;
    for sub in files_in(&root) {
        for path in files_in(&sub).into_iter().filter(|p| is_capture(p)) {
            let rel = path
                .strip_prefix(&root)
                .unwrap()
                .to_string_lossy()
                .to_string();
            let Some(&(_, format, packets, link_types, segs, bytes)) =
                PCAP_FORMATS.iter().find(|e| e.0 == rel)
            else {
                panic!("{rel}: capture not in the expectation table");
            };
            let r = run_file(&path);
            let info = &r.infos[0];
            assert_eq!(info.format, format, "{rel}");
            assert_eq!(info.error, None, "{rel}");
            assert_eq!(r.stats.packets_total, packets, "{rel}");
            assert_eq!(info.link_types, link_types, "{rel}");
            assert_eq!(info.bytes, std::fs::metadata(&path).unwrap().len(), "{rel}");
            let s = r.segments();
            assert_eq!(s.len(), segs, "{rel}");
            assert_eq!(
                s.iter().map(|s| s.payload.len()).sum::<usize>(),
                bytes,
                "{rel}"
            );
            seen += 1;
        }
    }
    assert_eq!(seen, PCAP_FORMATS.len());
}

#[test]
fn non_tcp_corpus_files_skip_with_the_right_reason() {
    let root = corpus_slice("pcap-formats");
    // DNS over UDP, DHCP, ICMP: all IP but not TCP.
    for f in [
        "tcpdump/LINKTYPE_IPV4.pcap",
        "tcpdump/LINKTYPE_IPV6.pcap",
        "tcpdump/LINKTYPE_RAW_ipv4.pcap",
        "tcpdump/LINKTYPE_RAW_ipv6.pcap",
        "pcap-parser/test001-be.pcapng",
        "pcap-parser/test010-le.pcapng",
        "pcap-parser/test016-be.pcapng",
        "pcap-parser/modified-format.pcap",
    ] {
        let r = run_file(&root.join(f));
        assert_eq!(
            r.stats.packets_skipped.get(SkipReason::NotTcp),
            r.stats.packets_total,
            "{f}"
        );
    }
    // SLL2: ICMP and ICMPv6 echoes (4) plus ARP and RARP (2), per Zeek's baseline.
    let r = run_file(&root.join("zeek/linux_dlt_sll2.pcap"));
    assert_eq!(r.stats.packets_skipped.get(SkipReason::NotTcp), 4);
    assert_eq!(r.stats.packets_skipped.get(SkipReason::NotIp), 2);
}

#[test]
fn big_endian_and_little_endian_pcapng_give_the_same_frames() {
    let dir = corpus_slice("pcap-formats/pcap-parser");
    let be = run_file(&dir.join("test001-be.pcapng"));
    let le = run_file(&dir.join("test001-le.pcapng"));
    assert_eq!(be.frames.len(), 4);
    for (a, b) in be.frames.iter().zip(&le.frames) {
        assert_eq!(
            (a.ts_ns, &a.data, a.orig_len),
            (b.ts_ns, &b.data, b.orig_len)
        );
    }
    // Simple Packet Blocks carry no timestamp.
    let spb = run_file(&dir.join("test010-le.pcapng"));
    assert!(
        spb.frames
            .iter()
            .all(|f| f.ts_ns == 0 && !f.data.is_empty())
    );
}

// ---------------------------------------------------------------------------
// tcpdump .out files: sequence numbers, lengths, addresses, timestamps, bytes.

/// One packet as tcpdump printed it.
#[derive(Debug, Default)]
struct Printed {
    /// Time of day in ns, and the date as days since the epoch when printed.
    tod_ns: u64,
    frac_digits: usize,
    days: Option<i64>,
    src: Option<SocketAddr>,
    dst: Option<SocketAddr>,
    flags: Option<String>,
    seq: Option<(u32, Option<u32>)>,
    ack: Option<u32>,
    length: Option<usize>,
    /// `-x` hex dump of the IP packet.
    hex: Vec<u8>,
}

fn days_from_civil(y: i64, m: i64, d: i64) -> i64 {
    // Howard Hinnant's algorithm.
    let y = if m <= 2 { y - 1 } else { y };
    let era = y.div_euclid(400);
    let yoe = y - era * 400;
    let doy = (153 * (m + if m > 2 { -3 } else { 9 }) + 2) / 5 + d - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    era * 146097 + doe - 719468
}

fn endpoint(s: &str) -> SocketAddr {
    let (ip, port) = s.trim_end_matches(':').rsplit_once('.').unwrap();
    SocketAddr::new(ip.parse().unwrap(), port.parse().unwrap())
}

fn number_after(text: &str, key: &str) -> Option<String> {
    let at = text.find(key)? + key.len();
    Some(
        text[at..]
            .chars()
            .take_while(|c| c.is_ascii_digit() || *c == ':')
            .collect(),
    )
}

fn parse_tcpdump(text: &str) -> Vec<Printed> {
    let mut out: Vec<Printed> = Vec::new();
    let mut joined: Vec<String> = Vec::new();
    for line in text.lines() {
        let t = line.trim_start();
        // tcpdump's `-#` packet number: right-aligned in 5 columns, then two spaces.
        let starts_packet = line.get(5..7) == Some("  ")
            && line
                .get(..5)
                .is_some_and(|n| n.trim_start().parse::<u32>().is_ok());
        if starts_packet {
            out.push(Printed::default());
            joined.push(String::new());
            let rest = t.split_once("  ").unwrap().1;
            let mut words = rest.split_whitespace();
            let mut w = words.next().unwrap();
            let p = out.last_mut().unwrap();
            if w.contains('-') {
                let v: Vec<i64> = w.split('-').map(|x| x.parse().unwrap()).collect();
                p.days = Some(days_from_civil(v[0], v[1], v[2]));
                w = words.next().unwrap();
            }
            let (hms, frac) = w.split_once('.').unwrap();
            let hms: Vec<u64> = hms.split(':').map(|x| x.parse().unwrap()).collect();
            p.frac_digits = frac.len();
            let frac_ns = frac.parse::<u64>().unwrap() * 10u64.pow(9 - frac.len() as u32);
            p.tod_ns = ((hms[0] * 60 + hms[1]) * 60 + hms[2]) * 1_000_000_000 + frac_ns;
        }
        if let (Some(p), Some(j)) = (out.last_mut(), joined.last_mut()) {
            if let Some(hex) = t.strip_prefix("0x").and_then(|h| h.split_once(":  ")) {
                for word in hex.1.split_whitespace() {
                    for i in (0..word.len()).step_by(2) {
                        p.hex.push(u8::from_str_radix(&word[i..i + 2], 16).unwrap());
                    }
                }
            } else if j.len() < 2000 {
                j.push_str(line);
                j.push(' ');
            }
        }
    }
    for (p, j) in out.iter_mut().zip(&joined) {
        // Addresses: the words around the first " > ".
        if let Some(at) = j.find(" > ") {
            let src = j[..at].split_whitespace().last().unwrap();
            let dst = j[at + 3..].split_whitespace().next().unwrap();
            if src.contains('.') && dst.ends_with(':') {
                p.src = Some(endpoint(src));
                p.dst = Some(endpoint(dst));
            }
        }
        let Some(tcp_at) = j.find("Flags [").or_else(|| j.find(": tcp ")) else {
            continue;
        };
        let tcp = &j[tcp_at..];
        if let Some(f) = tcp.strip_prefix("Flags [") {
            p.flags = Some(f.split(']').next().unwrap().to_string());
        }
        if let Some(seq) = number_after(tcp, " seq ") {
            let mut it = seq.split(':');
            let a = it.next().unwrap().parse().unwrap();
            p.seq = Some((a, it.next().map(|b| b.parse().unwrap())));
        }
        p.ack = number_after(tcp, " ack ").map(|a| a.parse().unwrap());
        p.length = number_after(tcp, "length ")
            .or_else(|| number_after(tcp, ": tcp "))
            .map(|l| l.trim_end_matches(':').parse().unwrap());
    }
    out
}

/// tcpdump's relative sequence numbers (print-tcp.c): the first packet with
/// ACK set in a connection records both sides' bases and is printed absolute;
/// later packets print seq/ack relative to them. SYNs without ACK are absolute.
struct Relative {
    conns: HashMap<(SocketAddr, SocketAddr), (u32, u32)>,
}

impl Relative {
    fn apply(&mut self, s: &Segment) -> (u32, u32) {
        if !s.flags.ack {
            return (s.seq, s.ack);
        }
        if let Some(&(seq0, ack0)) = self.conns.get(&(s.src, s.dst)) {
            (s.seq.wrapping_sub(seq0), s.ack.wrapping_sub(ack0))
        } else if let Some(&(seq0, ack0)) = self.conns.get(&(s.dst, s.src)) {
            (s.seq.wrapping_sub(ack0), s.ack.wrapping_sub(seq0))
        } else {
            self.conns
                .insert((s.src, s.dst), (s.seq, s.ack.wrapping_sub(1)));
            (s.seq, s.ack)
        }
    }
}

fn flags_text(s: &Segment) -> String {
    let mut f = String::new();
    if s.flags.syn {
        f.push('S');
    }
    if s.flags.fin {
        f.push('F');
    }
    if s.flags.rst {
        f.push('R');
    }
    f
}

/// (.out file, capture it was produced from, all packets are TCP)
const TCPDUMP_OUTPUTS: &[(&str, &str, bool)] = &[
    ("LINKTYPE_IPV4.out", "LINKTYPE_IPV4.pcap", false),
    ("LINKTYPE_IPV6.out", "LINKTYPE_IPV6.pcap", false),
    ("LINKTYPE_RAW_ipv4.out", "LINKTYPE_RAW_ipv4.pcap", false),
    ("LINKTYPE_RAW_ipv6.out", "LINKTYPE_RAW_ipv6.pcap", false),
    ("ipv4_tcp_http_xml.out", "ipv4_tcp_http_xml.pcap", true),
    (
        "ipv4_tcp_http_xml_tso.out",
        "ipv4_tcp_http_xml_tso.pcap",
        true,
    ),
    ("print-A.out", "print-flags.pcap", true),
    ("print-x.out", "print-flags.pcap", true),
    ("tcp-handshake-micro.out", "tcp-handshake-nano.pcap", true),
    ("tcp-handshake-nano.out", "tcp-handshake-nano.pcap", true),
    (
        "tcp-handshake-nano-tttt.out",
        "tcp-handshake-nano.pcap",
        true,
    ),
];

#[test]
fn tcpdump_outputs_agree_packet_by_packet() {
    let dir = corpus_slice("pcap-formats/tcpdump");
    let outs: Vec<PathBuf> = files_in(&dir)
        .into_iter()
        .filter(|p| p.extension().is_some_and(|e| e == "out"))
        .collect();
    assert_eq!(
        outs.len(),
        TCPDUMP_OUTPUTS.len(),
        "an .out file is not covered"
    );
    let mut checked_seqs = 0;
    for (out, pcap, all_tcp) in TCPDUMP_OUTPUTS {
        let printed = parse_tcpdump(&std::fs::read_to_string(dir.join(out)).unwrap());
        let r = run_file(&dir.join(pcap));
        assert_eq!(printed.len(), r.frames.len(), "{out}: packet count");
        let mut rel = Relative {
            conns: HashMap::new(),
        };
        for (i, (p, (f, d))) in printed
            .iter()
            .zip(r.frames.iter().zip(&r.decoded))
            .enumerate()
        {
            let ctx = format!("{out} packet {}", i + 1);
            // Timestamps, to the digits tcpdump printed (µs or ns).
            let unit = 10i64.pow(9 - p.frac_digits as u32);
            let ts = f.ts_ns - f.ts_ns % unit;
            let day_ns = 86_400 * 1_000_000_000i64;
            assert_eq!(ts.rem_euclid(day_ns) as u64, p.tod_ns, "{ctx}: time of day");
            if let Some(days) = p.days {
                assert_eq!(ts.div_euclid(day_ns), days, "{ctx}: date");
            }
            if !p.hex.is_empty() {
                let ip = mcp_trace::decode::link::ip_slice(f.link_type, &f.data).unwrap();
                assert_eq!(ip, p.hex.as_slice(), "{ctx}: IP bytes (-x)");
            }
            let Decoded::Segment(s) = d else {
                assert!(!all_tcp, "{ctx}: not decoded: {d:?}");
                assert!(matches!(d, Decoded::Skipped(SkipReason::NotTcp)), "{ctx}");
                continue;
            };
            assert!(*all_tcp, "{ctx}");
            assert_eq!(Some(s.src), p.src, "{ctx}: source");
            assert_eq!(Some(s.dst), p.dst, "{ctx}: destination");
            let (seq, ack) = rel.apply(s);
            if let Some(flags) = &p.flags {
                let ours = flags_text(s);
                let theirs: String = flags.chars().filter(|c| "SFR".contains(*c)).collect();
                assert_eq!(ours, theirs, "{ctx}: flags");
                assert_eq!(s.flags.ack, flags.contains('.'), "{ctx}: ACK flag");
            }
            if let Some((a, b)) = p.seq {
                assert_eq!(seq, a, "{ctx}: seq");
                if let Some(b) = b {
                    assert_eq!(
                        s.payload.len() as u32,
                        b.wrapping_sub(a),
                        "{ctx}: seq range"
                    );
                }
                checked_seqs += 1;
            }
            if let Some(a) = p.ack {
                assert_eq!(ack, a, "{ctx}: ack");
            }
            if let Some(len) = p.length {
                assert_eq!(s.payload.len(), len, "{ctx}: payload length");
                assert_eq!(s.wire_payload_len as usize, len, "{ctx}: wire length");
            }
        }
    }
    // print-A/print-x: 6 of 10 packets print a seq each; plus the two -v files.
    assert_eq!(checked_seqs, 14, "seq values compared");
}

#[test]
fn nanosecond_pcap_timestamps_exact() {
    let r = run_file(&corpus_slice(
        "pcap-formats/tcpdump/tcp-handshake-nano.pcap",
    ));
    // tcp-handshake-nano-tttt.out: 2014-12-09 17:16:09.924505488 ...
    let day = days_from_civil(2014, 12, 9) * 86_400;
    let want = [
        (day + 17 * 3600 + 16 * 60 + 9) * 1_000_000_000 + 924_505_488,
        (day + 17 * 3600 + 16 * 60 + 10) * 1_000_000_000 + 52_027_262,
        (day + 17 * 3600 + 16 * 60 + 10) * 1_000_000_000 + 52_115_157,
    ];
    let got: Vec<i64> = r.frames.iter().map(|f| f.ts_ns).collect();
    assert_eq!(got, want);
}

// ---------------------------------------------------------------------------
// zeek-http/ and other/: every capture opens, counts add up, agree with tshark.

/// (case/file, packets (capinfos), TCP segments and captured TCP payload bytes (tshark)).
const ZEEK_CAPTURES: &[(&str, u64, usize, usize)] = &[
    ("zeek-http/100-continue/100-continue.pcap", 66, 66, 63324),
    (
        "zeek-http/1000-requests-one-dropped-response/1000-requests-one-dropped-response.pcap.gz",
        4102,
        4102,
        996757,
    ),
    (
        "zeek-http/261-chunk-2pow64-overflow/variant-01-chunk_2pow64_overflow.pcap",
        8,
        8,
        135,
    ),
    (
        "zeek-http/261-expect-100-cl0/variant-07-expect_100_cl0.pcap",
        8,
        8,
        125,
    ),
    (
        "zeek-http/261-multi-value-te/variant-10-multi_value_te.pcap",
        8,
        8,
        125,
    ),
    (
        "zeek-http/261-te-cl-desync/variant-04-te_cl_desync.pcap",
        8,
        8,
        132,
    ),
    (
        "zeek-http/connect-ipv6-null/connect-with-header.pcap",
        58,
        58,
        59143,
    ),
    (
        "zeek-http/content-length-in-request-body/content-length-in-request-body.pcap",
        21,
        21,
        631,
    ),
    (
        "zeek-http/docker-http-upgrade/docker-http-upgrade.pcap",
        200,
        200,
        4749,
    ),
    (
        "zeek-http/dvwa-pcapng-chunked/cooper-grill-dvwa.pcapng",
        64,
        48,
        16649,
    ),
    ("zeek-http/entity-gap/entity_gap.pcap", 13, 13, 3695),
    ("zeek-http/get-simple/get.pcap", 14, 14, 5143),
    ("zeek-http/http-09/http_09.pcap", 50, 50, 148),
    (
        "zeek-http/http-desync-request-response/http-desync-request-response-5.pcap",
        53,
        53,
        1306,
    ),
    (
        "zeek-http/interleaved-http-entity/interleaved-http-entity.pcap",
        30,
        30,
        186,
    ),
    (
        "zeek-http/ipv6-atomic-frag/ipv6-http-atomic-frag.pcap",
        38,
        36,
        412,
    ),
    (
        "zeek-http/m57-long-49600/m57-long-49600-80.pcap",
        52,
        52,
        37360,
    ),
    ("zeek-http/methods/methods.pcap", 655, 655, 184311),
    (
        "zeek-http/missing-zlib-header/missing-zlib-header.pcap",
        28,
        28,
        12760,
    ),
    (
        "zeek-http/mixed-vlan-mpls/mixed-vlan-mpls.pcap",
        47,
        47,
        12979,
    ),
    (
        "zeek-http/multipart-form-data/multipart-form-data.pcap",
        7,
        7,
        1429,
    ),
    ("zeek-http/nflog-http/nflog-http.pcap", 13, 13, 1682),
    (
        "zeek-http/no-crlf-chunked-posts/no_crlf.pcap",
        1519,
        1519,
        1520294,
    ),
    (
        "zeek-http/non-printable-uri-json/http-non-printable-characters.pcap",
        44,
        44,
        2620,
    ),
    (
        "zeek-http/pipelined-requests/pipelined-requests.pcap",
        49,
        49,
        42362,
    ),
    ("zeek-http/snap-tcp-truncated/snap-tcp.pcap", 8, 8, 114),
    (
        "zeek-http/tcp-padding/tcp-http-with-padding.pcap",
        25,
        25,
        207,
    ),
    (
        "zeek-http/tcp-reassembly-overlap/reassembly.pcap",
        117,
        117,
        34370,
    ),
    // Teredo on relay ports: tshark with `--enable-heuristic teredo_udp` (Zeek decodes it too).
    ("zeek-http/teredo-ipv6/Teredo.pcap", 78, 55, 17488),
    ("zeek-http/websocket-101/websocket.pcap", 27, 27, 1966),
    ("zeek-http/wikipedia/wikipedia.pcap", 136, 78, 13807),
    ("zeek-http/x-gzip/x-gzip.pcap", 7, 7, 420),
    (
        "other/zeek-quantum-insert/qi_internet_SYNACK_curl_jsonip.pcap",
        14,
        14,
        544,
    ),
];

#[test]
#[ignore = "needs ../shared/corpus"]
fn every_zeek_and_other_capture_reads_and_agrees_with_tshark() {
    let corpus = corpus("");
    let mut seen = 0;
    for top in ["zeek-http", "other"] {
        for case in files_in(&corpus.join(top)) {
            for path in files_in(&case).into_iter().filter(|p| is_capture(p)) {
                let rel = path
                    .strip_prefix(&corpus)
                    .unwrap()
                    .to_string_lossy()
                    .to_string();
                let Some(&(_, packets, segs, bytes)) = ZEEK_CAPTURES.iter().find(|e| e.0 == rel)
                else {
                    panic!("{rel}: capture not in the expectation table");
                };
                let r = run_file(&path);
                assert_eq!(r.infos[0].error, None, "{rel}");
                assert_eq!(r.infos[0].gzip, rel.ends_with(".gz"), "{rel}");
                assert_eq!(r.stats.packets_total, packets, "{rel}");
                let s = r.segments();
                assert_eq!(s.len(), segs, "{rel}");
                assert_eq!(
                    s.iter().map(|s| s.payload.len()).sum::<usize>(),
                    bytes,
                    "{rel}"
                );
                seen += 1;
            }
        }
    }
    assert_eq!(seen, ZEEK_CAPTURES.len());
}

/// Every connection Zeek logged (http.log rows, ipv6-atomic-frag's conn list) is
/// found among our segments, in both directions when Zeek saw a response: the
/// decode of VLAN/MPLS, SNAP, NULL, NFLOG, Teredo and IPv6 fragments agrees.
#[test]
#[ignore = "needs ../shared/corpus"]
fn every_connection_zeek_logged_is_decoded() {
    let corpus = corpus("");
    let mut checked = 0;
    for case in files_in(&corpus.join("zeek-http")) {
        let Some(pcap) = files_in(&case).into_iter().find(|p| is_capture(p)) else {
            continue;
        };
        let mut rows = Vec::new();
        for name in ["expected.jsonl", "expected-conns.jsonl"] {
            if let Ok(text) = std::fs::read_to_string(case.join(name)) {
                for line in text.lines().filter(|l| !l.trim().is_empty()) {
                    rows.push(serde_json::from_str::<serde_json::Value>(line).unwrap());
                }
            }
        }
        let r = run_file(&pcap);
        let pairs: std::collections::HashSet<(SocketAddr, SocketAddr)> =
            r.segments().iter().map(|s| (s.src, s.dst)).collect();
        for row in rows {
            let addr = |h: &str, p: &str| -> Option<SocketAddr> {
                let ip = row.get(h)?.as_str()?.parse().ok()?;
                Some(SocketAddr::new(
                    ip,
                    u16::try_from(row.get(p)?.as_u64()?).ok()?,
                ))
            };
            let (Some(orig), Some(resp)) = (addr("orig_h", "orig_p"), addr("resp_h", "resp_p"))
            else {
                continue;
            };
            let ctx = format!("{}: {orig} -> {resp}", case.display());
            assert!(pairs.contains(&(orig, resp)), "{ctx}: no segment");
            if row.get("status_code").and_then(|v| v.as_u64()).is_some() {
                assert!(pairs.contains(&(resp, orig)), "{ctx}: no reverse segment");
            }
            checked += 1;
        }
    }
    assert!(checked >= 100, "only {checked} Zeek connections checked");
}

#[test]
fn link_types_of_the_zeek_cases() {
    for (f, lt) in [
        ("zeek-http/connect-ipv6-null/connect-with-header.pcap", 0),
        ("zeek-http/nflog-http/nflog-http.pcap", 239),
        (
            "zeek-http/261-te-cl-desync/variant-04-te_cl_desync.pcap",
            228,
        ),
        ("zeek-http/dvwa-pcapng-chunked/cooper-grill-dvwa.pcapng", 1),
    ] {
        let r = run_file(&corpus_slice(f));
        assert_eq!(r.infos[0].link_types, [lt], "{f}");
        assert!(r.frames.iter().all(|fr| fr.link_type == lt), "{f}");
    }
    // DLT_NULL + IPv6 loopback: every segment is between ::1 endpoints.
    let r = run_file(&corpus_slice(
        "zeek-http/connect-ipv6-null/connect-with-header.pcap",
    ));
    assert!(
        r.segments()
            .iter()
            .all(|s| s.src.ip().is_loopback() && s.src.is_ipv6())
    );
    // The tcp-reassembly trace has IP packets shorter than their total length
    // (Zeek: truncated_IP_len): captured payload is used, the wire length kept.
    let r = run_file(&corpus_slice(
        "zeek-http/tcp-reassembly-overlap/reassembly.pcap",
    ));
    let short: Vec<u64> = r
        .segments()
        .iter()
        .filter(|s| (s.wire_payload_len as usize) > s.payload.len())
        .map(|s| s.frame)
        .collect();
    assert_eq!(short, [7, 26, 35, 39, 85]);
}

// ---------------------------------------------------------------------------
// Inputs built here: a minimal pcap/pcapng writer.

/// Classic pcap: (ts_sec, ts_frac, data, orig_len).
fn pcap(big_endian: bool, nanos: bool, link_type: u32, recs: &[(u32, u32, &[u8], u32)]) -> Vec<u8> {
    let format = PcapFormat {
        big_endian,
        nanos,
        link_type,
        ..PcapFormat::default()
    };
    let mut f = format.header();
    for (s, frac, data, orig) in recs {
        format.record(&mut f, *s, *frac, data, *orig);
    }
    f
}

/// One pcapng block: type, body, padded to 4 bytes, lengths around it.
fn block(be: bool, kind: u32, body: &[u8]) -> Vec<u8> {
    let w32 = |v: u32| if be { v.to_be_bytes() } else { v.to_le_bytes() };
    let mut body = body.to_vec();
    while !body.len().is_multiple_of(4) {
        body.push(0);
    }
    let len = 12 + body.len() as u32;
    [w32(kind).as_slice(), &w32(len), &body, &w32(len)].concat()
}

fn shb(be: bool) -> Vec<u8> {
    let mut b = Vec::new();
    b.extend(if be {
        0x1a2b3c4du32.to_be_bytes()
    } else {
        0x1a2b3c4du32.to_le_bytes()
    });
    b.extend(if be { [0, 1, 0, 0] } else { [1, 0, 0, 0] });
    b.extend([0xff; 8]); // section length unknown
    block(be, 0x0a0d_0d0a, &b)
}

/// Interface Description Block, with an `if_tsresol` option when given.
fn idb(be: bool, link_type: u16, tsresol: Option<u8>) -> Vec<u8> {
    let w16 = |v: u16| if be { v.to_be_bytes() } else { v.to_le_bytes() };
    let mut b = Vec::new();
    b.extend(w16(link_type));
    b.extend([0, 0]);
    b.extend(if be {
        65535u32.to_be_bytes()
    } else {
        65535u32.to_le_bytes()
    });
    if let Some(r) = tsresol {
        b.extend(w16(9));
        b.extend(w16(1));
        b.extend([r, 0, 0, 0]);
        b.extend(w16(0));
        b.extend(w16(0));
    }
    block(be, 1, &b)
}

fn epb(be: bool, if_id: u32, ts: u64, data: &[u8]) -> Vec<u8> {
    let w32 = |v: u32| if be { v.to_be_bytes() } else { v.to_le_bytes() };
    let mut b = Vec::new();
    b.extend(w32(if_id));
    b.extend(w32((ts >> 32) as u32));
    b.extend(w32(ts as u32));
    b.extend(w32(data.len() as u32));
    b.extend(w32(data.len() as u32));
    b.extend(data);
    block(be, 6, &b)
}

fn spb(be: bool, data: &[u8]) -> Vec<u8> {
    let orig = if be {
        (data.len() as u32).to_be_bytes()
    } else {
        (data.len() as u32).to_le_bytes()
    };
    block(be, 3, &[orig.as_slice(), data].concat())
}

/// IPv4 TCP packet 10.0.0.1:1234 -> 10.0.0.2:80 with `seq`.
fn tcp_packet(seq: u32, payload: &[u8]) -> Vec<u8> {
    let mut v = Vec::new();
    etherparse::PacketBuilder::ipv4([10, 0, 0, 1], [10, 0, 0, 2], 64)
        .tcp(1234, 80, seq, 1000)
        .write(&mut v, payload)
        .unwrap();
    v
}

fn open_bytes(name: &str, input: usize, bytes: Vec<u8>) -> Result<Source, CaptureError> {
    open_reader(name, input, Box::new(std::io::Cursor::new(bytes)))
}

fn packets(name: &str, input: usize, bytes: Vec<u8>) -> PacketReader {
    match open_bytes(name, input, bytes) {
        Ok(Source::Packets(r)) => r,
        other => panic!("{name}: {other:?}"),
    }
}

fn temp_file(bytes: &[u8]) -> tempfile::NamedTempFile {
    let mut f = tempfile::NamedTempFile::new().unwrap();
    f.write_all(bytes).unwrap();
    f
}

#[test]
fn pcap_both_byte_orders_micro_and_nano() {
    let p = tcp_packet(1, b"abc");
    for be in [false, true] {
        for nanos in [false, true] {
            let bytes = pcap(be, nanos, 101, &[(10, 500, &p, p.len() as u32)]);
            let r = run(vec![packets("x", 0, bytes)]);
            let want = 10_000_000_000 + if nanos { 500 } else { 500_000 };
            assert_eq!(r.frames[0].ts_ns, want, "be {be} nanos {nanos}");
            assert_eq!(r.frames[0].link_type, 101);
            assert_eq!(r.segments()[0].payload, b"abc");
        }
    }
}

#[test]
fn pcapng_sections_interfaces_resolutions_and_spb() {
    let p1 = tcp_packet(1, b"one");
    let p2 = tcp_packet(2, b"two");
    let mut eth = vec![0u8; 12];
    eth.extend([0x08, 0x00]);
    eth.extend(&p1);
    let mut f = shb(false);
    f.extend(idb(false, 101, None)); // µs
    f.extend(idb(false, 1, Some(9))); // ns
    f.extend(epb(false, 0, 1_500_000, &p1));
    f.extend(epb(false, 1, 2_000_000_007, &eth));
    f.extend(block(false, 0x0bad, &[1, 2, 3])); // unknown block: skipped
    f.extend(spb(false, &p2));
    // Second section, big-endian, fresh interface table: 2^-10 s units.
    f.extend(shb(true));
    f.extend(idb(true, 228, Some(0x8a)));
    f.extend(epb(true, 0, 3 * 1024 + 512, &p2));
    let r = run(vec![packets("ng", 0, f)]);
    let got: Vec<(u32, i64)> = r.frames.iter().map(|f| (f.link_type, f.ts_ns)).collect();
    assert_eq!(
        got,
        [
            (101, 1_500_000_000),
            (1, 2_000_000_007),
            (101, 0),
            (228, 3_500_000_000)
        ]
    );
    assert_eq!(r.infos[0].link_types, [101, 1, 228]);
    let seqs: Vec<u32> = r.segments().iter().map(|s| s.seq).collect();
    assert_eq!(seqs, [1, 1, 2, 2]);
}

#[test]
fn pcapng_epb_naming_a_missing_interface_is_skipped_by_link_type() {
    let p = tcp_packet(1, b"x");
    let mut f = shb(false);
    f.extend(idb(false, 101, None));
    f.extend(epb(false, 5, 0, &p));
    f.extend(epb(false, 0, 0, &p));
    let r = run(vec![packets("ng", 0, f)]);
    assert_eq!(r.frames[0].link_type, u32::MAX);
    assert!(matches!(
        r.decoded[0],
        Decoded::Skipped(SkipReason::LinkType)
    ));
    assert!(matches!(r.decoded[1], Decoded::Segment(_)));
    assert_eq!(r.stats.packets_skipped.get(SkipReason::LinkType), 1);
    assert_eq!(r.stats.anomalies.get("capture.unknown_interface"), Some(&1));
    assert_eq!(r.infos[0].error, None);
}

#[test]
fn open_errors_are_clear() {
    let cases: Vec<(&str, Vec<u8>, &str)> = vec![
        ("empty", vec![], "empty: empty file"),
        (
            "text",
            b"hello world".to_vec(),
            "text: not a pcap, pcapng or HAR file (first bytes 68 65 6c 6c)",
        ),
        (
            "short",
            pcap(false, false, 1, &[])[..10].to_vec(),
            "short: truncated pcap file header: 10 of 24 bytes",
        ),
        (
            "json-array",
            b"\xef\xbb\xbf  [1]".to_vec(),
            "not a pcap, pcapng or HAR",
        ),
        (
            "ng-short",
            shb(false)[..20].to_vec(),
            "truncated pcapng section header",
        ),
        ("gz-empty", gzip(&[]), "gz-empty: empty file"),
    ];
    for (name, bytes, want) in cases {
        let file = temp_file(&bytes);
        let err = open(file.path().to_str().unwrap(), 0)
            .unwrap_err()
            .to_string();
        assert!(
            err.contains(want.trim_start_matches(&format!("{name}: "))),
            "{name}: {err}"
        );
        let err = open_bytes(name, 0, bytes).unwrap_err().to_string();
        assert!(err.contains(want), "{name}: {err}");
    }
    let missing = open("/nonexistent/dir/x.pcap", 0).unwrap_err();
    assert!(matches!(missing, CaptureError::Open { .. }), "{missing}");
}

/// Frames then damage: the frames before it stand, the error names the offset,
/// the merger records the damage and keeps going with the other inputs.
#[test]
fn damage_after_a_valid_header() {
    let p = tcp_packet(1, b"data");
    let good = pcap(false, false, 101, &[(1, 0, &p, p.len() as u32)]);
    // A record claiming 1000 bytes when 10 remain.
    let mut longer = good.clone();
    longer.extend(pcap(false, false, 101, &[(2, 0, &[0; 10], 1000)])[24..].to_vec());
    longer[24 + 16 + p.len() + 8..][..4].copy_from_slice(&1000u32.to_le_bytes());
    // Garbage shorter than a record header.
    let mut garbage = good.clone();
    garbage.extend(b"garbage");
    // A record length beyond any sane limit.
    let mut huge = good.clone();
    huge.extend([0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff, 0xff, 0x7f, 0, 0, 0, 0]);
    // pcapng cut in the middle of a block.
    let mut ng = shb(false);
    ng.extend(idb(false, 101, None));
    ng.extend(epb(false, 0, 0, &p));
    let cut = epb(false, 0, 0, &p);
    ng.extend(&cut[..cut.len() - 9]);
    let at = (24 + 16 + p.len()) as u64;
    let cases = [
        (
            longer,
            format!("truncated record at byte offset {at}: only 26 of 1016 bytes left"),
        ),
        (
            garbage,
            format!("truncated record at byte offset {at}: only 7 bytes left"),
        ),
        (
            huge,
            format!(
                "record at byte offset {at} claims 2147483663 bytes (limit {MAX_RECORD_BYTES})"
            ),
        ),
        (ng, "truncated record at byte offset".to_string()),
    ];
    for (bytes, want) in cases {
        let mut r = packets("bad", 0, bytes.clone());
        assert!(r.next().unwrap().is_ok());
        let err = r.next().unwrap().unwrap_err().to_string();
        assert!(
            err.starts_with("bad: ") && err.contains(&want),
            "{err} / {want}"
        );
        assert!(r.next().is_none(), "nothing after damage");
        assert_eq!(r.info().error.as_deref(), Some(err.as_str()));
        // Alone (read without the merge heap): the good frame, the damage counted once.
        let alone = run(vec![packets("bad", 0, bytes.clone())]);
        assert_eq!(alone.frames.len(), 1);
        assert_eq!(alone.frames[0].index, 1);
        assert_eq!(alone.stats.packets_total, 1);
        assert_eq!(alone.stats.anomalies.get("capture.damaged_input"), Some(&1));
        // In a merge, the other input goes on.
        let other = packets(
            "ok",
            1,
            pcap(false, false, 101, &[(5, 0, &p, p.len() as u32)]),
        );
        let run = run(vec![packets("bad", 0, bytes), other]);
        assert_eq!(run.frames.len(), 2);
        assert_eq!(run.stats.anomalies.get("capture.damaged_input"), Some(&1));
        assert!(run.infos[0].error.is_some() && run.infos[1].error.is_none());
    }
}

fn gzip(bytes: &[u8]) -> Vec<u8> {
    let mut e = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
    e.write_all(bytes).unwrap();
    e.finish().unwrap()
}

#[test]
fn gzip_single_and_multi_member() {
    let recs: Vec<Vec<u8>> = (0..50).map(|i| tcp_packet(i, &[i as u8; 100])).collect();
    let list: Vec<(u32, u32, &[u8], u32)> = recs
        .iter()
        .enumerate()
        .map(|(i, p)| (i as u32, 0, p.as_slice(), p.len() as u32))
        .collect();
    let plain = pcap(false, false, 101, &list);
    let want = run(vec![packets("plain", 0, plain.clone())]);
    let one = gzip(&plain);
    // `cat a.gz b.gz`: two members, split in the middle of a record.
    let two = [gzip(&plain[..1000]), gzip(&plain[1000..])].concat();
    for (name, bytes) in [("one", one), ("two", two)] {
        let len = bytes.len() as u64;
        let file = temp_file(&bytes);
        let Source::Packets(r) = open(file.path().to_str().unwrap(), 0).unwrap() else {
            panic!()
        };
        let got = run(vec![r]);
        assert!(got.infos[0].gzip, "{name}");
        assert_eq!(got.infos[0].bytes, len, "{name}: compressed bytes read");
        assert_eq!(got.frames.len(), 50, "{name}");
        for (a, b) in got.frames.iter().zip(&want.frames) {
            assert_eq!((a.ts_ns, &a.data), (b.ts_ns, &b.data), "{name}");
        }
    }
}

#[test]
fn har_is_recognised_by_content_with_bom_and_whitespace() {
    let text = b"\xef\xbb\xbf \r\n\t{\"log\": {\"entries\": []}}".to_vec();
    match open_bytes("x.pcap", 0, text.clone()).unwrap() {
        Source::Har { name, data, info } => {
            assert_eq!(name, "x.pcap");
            assert_eq!(data, text);
            assert_eq!((info.format.name(), info.gzip), ("har", false));
        }
        other => panic!("{other:?}"),
    }
    match open_bytes("x.har.gz", 0, gzip(&text)).unwrap() {
        Source::Har { data, info, .. } => assert_eq!((data, info.gzip), (text, true)),
        other => panic!("{other:?}"),
    }
}

#[test]
fn corpus_har_files_open_as_har_including_zhar() {
    let dir = corpus_slice("har/mitmproxy/flows");
    for f in ["compressed.zhar", "successful_log.har", "websocket.har"] {
        let path = dir.join(f);
        match open(path.to_str().unwrap(), 3).unwrap() {
            Source::Har { data, info, .. } => {
                assert_eq!(
                    data.len() as u64,
                    std::fs::metadata(&path).unwrap().len(),
                    "{f}"
                );
                assert_eq!(
                    (info.format.name(), info.bytes),
                    ("har", data.len() as u64),
                    "{f}"
                );
            }
            other => panic!("{f}: {other:?}"),
        }
    }
    // zlib that does not hold JSON is not a HAR.
    let mut z = flate2::write::ZlibEncoder::new(Vec::new(), flate2::Compression::fast());
    z.write_all(b"not json at all").unwrap();
    let err = open_bytes("z", 0, z.finish().unwrap()).unwrap_err();
    assert!(matches!(err, CaptureError::UnknownFormat { .. }), "{err}");
}

proptest::proptest! {
    /// Random bytes after a valid pcap or pcapng header: frames and at most one
    /// damage error, never a panic; every frame decodes to something.
    #[test]
    fn random_bytes_after_valid_headers_never_panic(
        tail in proptest::collection::vec(proptest::prelude::any::<u8>(), 0..600),
        ng in proptest::prelude::any::<bool>(),
        be in proptest::prelude::any::<bool>(),
    ) {
        let mut bytes = if ng {
            let mut f = shb(be);
            f.extend(idb(be, 1, None));
            f
        } else {
            pcap(be, false, 1, &[])
        };
        bytes.extend(&tail);
        let mut r = packets("fuzz", 0, bytes);
        let mut decoder = Decoder::new();
        let mut errors = 0;
        for item in r.by_ref() {
            match item {
                Ok(f) => {
                    let _ = decoder.decode(&f);
                }
                Err(_) => errors += 1,
            }
        }
        proptest::prop_assert!(errors <= 1);
        proptest::prop_assert_eq!(errors == 1, r.info().error.is_some());
    }
}

/// A reader that hands out at most `n` bytes per read, like a pipe.
struct Trickle(std::io::Cursor<Vec<u8>>, usize);

impl Read for Trickle {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        let n = buf.len().min(self.1);
        self.0.read(&mut buf[..n])
    }
}

#[test]
fn reads_split_at_every_size_give_identical_frames() {
    let big: Vec<u8> = (0..200_000u32).map(|i| i as u8).collect(); // larger than one read chunk
    let small = tcp_packet(1, b"x");
    let mut ng = shb(false);
    ng.extend(idb(false, 101, Some(9)));
    ng.extend(epb(false, 0, 5, &small));
    ng.extend(epb(false, 0, 6, &big));
    ng.extend(spb(false, &small));
    let classic = pcap(
        true,
        true,
        101,
        &[
            (1, 2, &small, 60),
            (3, 4, &big, big.len() as u32),
            (5, 6, &small, 41),
        ],
    );
    for bytes in [
        ng,
        classic,
        gzip(&pcap(false, false, 101, &[(1, 2, &big, 9)])),
    ] {
        let want = run(vec![packets("all", 0, bytes.clone())]);
        assert!(!want.frames.is_empty());
        for n in [1, 2, 3, 7, 16, 4096] {
            let src = open_reader(
                "trickle",
                0,
                Box::new(Trickle(std::io::Cursor::new(bytes.clone()), n)),
            );
            let Ok(Source::Packets(r)) = src else {
                panic!("{n}")
            };
            let got = run(vec![r]);
            assert_eq!(got.infos[0].error, None, "{n}");
            assert_eq!(got.frames.len(), want.frames.len(), "{n}");
            for (a, b) in got.frames.iter().zip(&want.frames) {
                assert_eq!(
                    (a.ts_ns, &a.data, a.orig_len),
                    (b.ts_ns, &b.data, b.orig_len),
                    "{n}"
                );
            }
        }
    }
}

#[test]
fn merge_orders_by_timestamp_stably_and_keeps_file_order() {
    let p = tcp_packet(0, b"");
    let pl = p.len() as u32;
    let a = pcap(
        false,
        false,
        101,
        &[(1, 0, &p, pl), (3, 0, &p, pl), (5, 0, &p, pl)],
    );
    // b goes backwards in time (2 after 4): file order is kept within an input.
    let b = pcap(
        false,
        true,
        101,
        &[(3, 0, &p, pl), (4, 0, &p, pl), (2, 0, &p, pl)],
    );
    let c = pcap(true, false, 101, &[(1, 0, &p, pl), (6, 0, &p, pl)]);
    let r = run(vec![
        packets("a", 0, a),
        packets("b", 1, b),
        packets("c", 2, c),
    ]);
    let order: Vec<(usize, i64)> = r
        .frames
        .iter()
        .map(|f| (f.input, f.ts_ns / 1_000_000_000))
        .collect();
    assert_eq!(
        order,
        [
            (0, 1),
            (2, 1),
            (0, 3),
            (1, 3),
            (1, 4),
            (1, 2),
            (0, 5),
            (2, 6)
        ]
    );
    let m = Merger::new(vec![packets("z", 0, pcap(false, false, 1, &[]))]);
    assert_eq!(m.infos()[0].name, "z");
}

#[test]
fn progress_counts_bytes_across_inputs() {
    let p = tcp_packet(0, b"abc");
    let a = pcap(false, false, 101, &[(1, 0, &p, p.len() as u32)]);
    let total = 2 * a.len() as u64;
    let mut m = Merger::new(vec![packets("a", 0, a.clone()), packets("b", 1, a)]);
    let mut stats = CaptureCounters::default();
    while m.next_frame(&mut stats).is_some() {}
    assert_eq!(m.bytes_read(), total);
    assert_eq!(stats.packets_total, 2);
}

/// Frames lent from the read buffer are the records pcap-parser finds parsing the whole file
/// at once (bytes, lengths, timestamps), on every bundled classic pcap; two inputs lent
/// through the merge give the same frames, in pairs.
#[test]
fn borrowed_frames_match_a_whole_file_parse() {
    let mut files: Vec<PathBuf> = std::fs::read_dir("samples")
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|x| x == "pcap"))
        .collect();
    files.sort();
    assert!(files.len() >= 20, "{files:?}");
    for path in files {
        let bytes = std::fs::read(&path).unwrap();
        let whole = pcap_parser::PcapCapture::from_file(&bytes).unwrap();
        let nanos = whole.header.is_nanosecond_precision();
        let expected: Vec<(i64, u32, &[u8])> = whole
            .blocks
            .iter()
            .map(|b| {
                let frac = if nanos {
                    i64::from(b.ts_usec)
                } else {
                    i64::from(b.ts_usec) * 1000
                };
                (
                    i64::from(b.ts_sec) * 1_000_000_000 + frac,
                    b.origlen,
                    b.data,
                )
            })
            .collect();
        assert!(!expected.is_empty(), "{}", path.display());
        let mut alone = Merger::new(vec![packets("x", 0, bytes.clone())]);
        let mut stats = CaptureCounters::default();
        let mut n = 0usize;
        while let Some(f) = alone.next_frame_ref(&mut stats) {
            let (ts, orig, data) = expected[n];
            assert_eq!(
                (f.index, f.ts_ns, f.orig_len, f.data),
                (n as u64 + 1, ts, orig, data)
            );
            n += 1;
        }
        assert_eq!(n, expected.len(), "{}", path.display());
        assert_eq!(stats.packets_total, n as u64);

        let mut both = Merger::new(vec![
            packets("x", 0, bytes.clone()),
            packets("y", 1, bytes.clone()),
        ]);
        let mut stats = CaptureCounters::default();
        let mut k = 0usize;
        while let Some(f) = both.next_frame_ref(&mut stats) {
            // Equal timestamps keep input order: each record twice, input 0 first.
            let (ts, orig, data) = expected[k / 2];
            assert_eq!(
                (f.input, f.ts_ns, f.orig_len, f.data),
                (k % 2, ts, orig, data)
            );
            k += 1;
        }
        assert_eq!(k, 2 * n, "{}", path.display());
    }
}

/// An Interface Statistics Block: interface id, timestamp, then `(code, value)` options.
fn isb(be: bool, if_id: u32, options: &[(u16, Vec<u8>)]) -> Vec<u8> {
    let w16 = |v: u16| if be { v.to_be_bytes() } else { v.to_le_bytes() };
    let w32 = |v: u32| if be { v.to_be_bytes() } else { v.to_le_bytes() };
    let mut b = Vec::new();
    b.extend(w32(if_id));
    b.extend(w32(0));
    b.extend(w32(0));
    for (code, value) in options {
        b.extend(w16(*code));
        b.extend(w16(value.len() as u16));
        b.extend(value);
        while !b.len().is_multiple_of(4) {
            b.push(0);
        }
    }
    b.extend([0, 0, 0, 0]); // opt_endofopt
    block(be, 5, &b)
}

fn u64_opt(be: bool, v: u64) -> Vec<u8> {
    if be {
        v.to_be_bytes().to_vec()
    } else {
        v.to_le_bytes().to_vec()
    }
}

#[test]
fn pcapng_interface_statistics_give_capture_drops() {
    use mcp_trace::capture::{CaptureDrops, DUMPCAP_ISB_COMMENT};
    let p = tcp_packet(1, b"x");
    // Section 1 (little-endian): two interfaces; interface 0 has two ISBs (cumulative: the
    // last stands), written by a tool that follows the spec (osdrop = kernel, ifdrop =
    // interface); interface 1's ISB is dumpcap's (its ifdrop is pcap_stats' ps_drop).
    let mut f = shb(false);
    f.extend(idb(false, 101, None));
    f.extend(idb(false, 101, None));
    f.extend(epb(false, 0, 1, &p));
    f.extend(isb(
        false,
        0,
        &[(7, u64_opt(false, 1)), (5, u64_opt(false, 1))],
    ));
    f.extend(isb(
        false,
        0,
        &[(7, u64_opt(false, 4)), (5, u64_opt(false, 2))],
    ));
    f.extend(isb(
        false,
        1,
        &[
            (1, DUMPCAP_ISB_COMMENT.to_vec()),
            (4, u64_opt(false, 100)),
            (5, u64_opt(false, 10)),
        ],
    ));
    // Section 2 (big-endian): its interface 0 is another interface; ifdrop unknown (all ones).
    f.extend(shb(true));
    f.extend(idb(true, 101, None));
    f.extend(isb(
        true,
        0,
        &[(7, u64_opt(true, 20)), (5, u64_opt(true, u64::MAX))],
    ));
    let r = run(vec![packets("ng", 0, f)]);
    assert_eq!(r.frames.len(), 1);
    assert_eq!(
        r.infos[0].drops,
        CaptureDrops {
            kernel: Some(4 + 10 + 20),
            interface: Some(2)
        }
    );
    // No ISB: unknown, not 0; classic pcap likewise.
    let mut f = shb(false);
    f.extend(idb(false, 101, None));
    f.extend(epb(false, 0, 1, &p));
    let r = run(vec![packets("ng", 0, f)]);
    assert!(r.infos[0].drops.is_unknown());
}

/// dumpcap's ISB in the vendored corpus slice: 64 packets received, isb_ifdrop 0 (checked
/// with a byte dump of the block: comment "Counters provided by dumpcap", ifrecv 64,
/// ifdrop 0), so the kernel dropped none and the interface drops are not said.
#[test]
fn dumpcap_isb_in_corpus_slice() {
    let r = run_file(&corpus_slice(
        "zeek-http/dvwa-pcapng-chunked/cooper-grill-dvwa.pcapng",
    ));
    assert_eq!(r.infos[0].drops.kernel, Some(0));
    assert_eq!(r.infos[0].drops.interface, None);
    let r = run_file(&corpus_slice("pcap-formats/tcpdump/LINKTYPE_IPV4.pcap"));
    assert!(r.infos[0].drops.is_unknown());
}
