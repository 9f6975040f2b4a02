//! Baseline loop for the benchmark (issue 9): the least work any HTTP-over-pcap
//! analyzer must do, to compare `mcp-trace analyze` against.
//!
//! ```text
//! cargo run --release --example baseline -- FILE|-
//! ```
//!
//! pcap records (classic pcap only) -> Ethernet/IPv4/TCP header decode ->
//! per-direction in-order payload (out-of-order segments held, duplicates
//! trimmed) -> `httparse` on every message head, bodies skipped by
//! Content-Length or chunked framing. Nothing else: no JSON, no MCP, no output
//! file. Prints one line of counts and throughput.
//!
//! With `--json` (after the file) it also gathers every body (chunked ones
//! decoded) and checks each JSON-RPC message in it with `serde_json` into
//! `IgnoredAny`: a JSON body whole, an event stream data line by data line.
//! That is the least an MCP analyzer adds to the loop (it must read every
//! message), so it bounds from below what `mcp-trace` can cost (bench/README.md).

use std::collections::{BTreeMap, HashMap};
use std::io::{BufReader, Read};
use std::process::ExitCode;
use std::time::Instant;

/// Out-of-order segments held per direction before the direction gives up.
const MAX_HELD: usize = 256;

type Key = ([u8; 4], u16, [u8; 4], u16);

#[derive(Default)]
enum Body {
    #[default]
    Head,
    Length(u64),
    ChunkSize,
    ChunkData(u64),
    ChunkCrlf,
    ChunkTrailer,
    /// Response without framing: everything until FIN.
    UntilClose,
}

#[derive(Default)]
struct Dir {
    next: Option<u32>,
    buf: Vec<u8>,
    held: BTreeMap<u32, Vec<u8>>,
    body: Body,
    /// The current message's body so far (`--json` only), chunked framing removed.
    content: Vec<u8>,
}

#[derive(Default)]
struct Counts {
    packets: u64,
    tcp: u64,
    payload: u64,
    requests: u64,
    responses: u64,
    bad: u64,
    /// `--json`: gather bodies and check every JSON-RPC message.
    json: bool,
    json_messages: u64,
    json_bytes: u64,
    json_bad: u64,
}

impl Counts {
    fn check_json(&mut self, text: &[u8]) {
        self.json_messages += 1;
        self.json_bytes += text.len() as u64;
        if serde_json::from_slice::<serde::de::IgnoredAny>(text).is_err() {
            self.json_bad += 1;
        }
    }
}

/// The end of a message's body: a JSON body is one check, an event stream one per
/// `data:` line (the generator writes one per event).
fn body_done_at(content: &mut Vec<u8>, c: &mut Counts) {
    if !c.json || content.is_empty() {
        content.clear();
        return;
    }
    let first = content.iter().find(|b| !b.is_ascii_whitespace());
    if matches!(first, Some(b'{' | b'[')) {
        c.check_json(content);
    } else {
        for line in content.split(|&b| b == b'\n') {
            if let Some(data) = line.strip_prefix(b"data:") {
                let data = data.strip_suffix(b"\r").unwrap_or(data);
                if data.iter().any(|b| !b.is_ascii_whitespace()) {
                    c.check_json(data);
                }
            }
        }
    }
    content.clear();
}

fn u16_at(b: &[u8], i: usize) -> Option<u16> {
    Some(u16::from_be_bytes([*b.get(i)?, *b.get(i + 1)?]))
}

fn u32_at(b: &[u8], i: usize) -> Option<u32> {
    Some(u32::from_be_bytes([
        *b.get(i)?,
        *b.get(i + 1)?,
        *b.get(i + 2)?,
        *b.get(i + 3)?,
    ]))
}

fn ip4(b: &[u8], i: usize) -> Option<[u8; 4]> {
    b.get(i..i + 4)?.try_into().ok()
}

/// Parses as many complete messages (or body bytes) as `d.buf` holds.
fn parse(d: &mut Dir, c: &mut Counts) {
    let mut pos = 0usize;
    while let Some(rest) = d.buf.get(pos..) {
        if rest.is_empty() {
            break;
        }
        match d.body {
            Body::Head => {
                let mut headers = [httparse::EMPTY_HEADER; 64];
                let (used, framing, is_resp, status) = if rest.starts_with(b"HTTP/") {
                    let mut r = httparse::Response::new(&mut headers);
                    match r.parse(rest) {
                        Ok(httparse::Status::Complete(n)) => {
                            (n, framing(r.headers), true, r.code.unwrap_or(0))
                        }
                        Ok(httparse::Status::Partial) => break,
                        Err(_) => (0, None, true, 0),
                    }
                } else {
                    let mut r = httparse::Request::new(&mut headers);
                    match r.parse(rest) {
                        Ok(httparse::Status::Complete(n)) => (n, framing(r.headers), false, 0),
                        Ok(httparse::Status::Partial) => break,
                        Err(_) => (0, None, false, 0),
                    }
                };
                if used == 0 {
                    // Not HTTP: drop what is buffered and wait for new data.
                    c.bad += 1;
                    pos = d.buf.len();
                    break;
                }
                pos += used;
                if is_resp {
                    c.responses += 1;
                } else {
                    c.requests += 1;
                }
                d.body = match framing {
                    Some(Framing::Chunked) => Body::ChunkSize,
                    Some(Framing::Length(0)) => Body::Head,
                    Some(Framing::Length(n)) => Body::Length(n),
                    None if is_resp && !(status == 204 || status == 304 || status < 200) => {
                        Body::UntilClose
                    }
                    None => Body::Head,
                };
            }
            Body::Length(n) => {
                let take = n.min(rest.len() as u64);
                if c.json {
                    d.content
                        .extend_from_slice(rest.get(..take as usize).unwrap_or_default());
                }
                pos += take as usize;
                d.body = if take == n {
                    body_done_at(&mut d.content, c);
                    Body::Head
                } else {
                    Body::Length(n - take)
                };
            }
            Body::ChunkSize => match httparse::parse_chunk_size(rest) {
                Ok(httparse::Status::Complete((used, 0))) => {
                    pos += used;
                    d.body = Body::ChunkTrailer;
                }
                Ok(httparse::Status::Complete((used, n))) => {
                    pos += used;
                    d.body = Body::ChunkData(n);
                }
                Ok(httparse::Status::Partial) => break,
                Err(_) => {
                    c.bad += 1;
                    pos = d.buf.len();
                    d.body = Body::Head;
                }
            },
            Body::ChunkData(n) => {
                let take = n.min(rest.len() as u64);
                if c.json {
                    d.content
                        .extend_from_slice(rest.get(..take as usize).unwrap_or_default());
                }
                pos += take as usize;
                d.body = if take == n {
                    Body::ChunkCrlf
                } else {
                    Body::ChunkData(n - take)
                };
            }
            Body::ChunkCrlf => {
                if rest.len() < 2 {
                    break;
                }
                pos += 2;
                d.body = Body::ChunkSize;
            }
            Body::ChunkTrailer => {
                // No trailers: CRLF; else skip to the blank line.
                if rest.starts_with(b"\r\n") {
                    pos += 2;
                    d.body = Body::Head;
                    body_done_at(&mut d.content, c);
                } else if let Some(i) = rest.windows(4).position(|w| w == b"\r\n\r\n") {
                    pos += i + 4;
                    d.body = Body::Head;
                    body_done_at(&mut d.content, c);
                } else {
                    break;
                }
            }
            Body::UntilClose => pos = d.buf.len(),
        }
    }
    d.buf.drain(..pos.min(d.buf.len()));
}

enum Framing {
    Length(u64),
    Chunked,
}

fn framing(headers: &[httparse::Header]) -> Option<Framing> {
    let mut out = None;
    for h in headers {
        if h.name.eq_ignore_ascii_case("transfer-encoding") {
            return Some(Framing::Chunked);
        }
        if h.name.eq_ignore_ascii_case("content-length") {
            out = std::str::from_utf8(h.value)
                .ok()
                .and_then(|v| v.trim().parse().ok())
                .map(Framing::Length);
        }
    }
    out
}

/// Feeds one TCP segment into its direction.
fn segment(
    flows: &mut HashMap<Key, Dir>,
    key: Key,
    seq: u32,
    flags: u8,
    data: &[u8],
    c: &mut Counts,
) {
    let syn = flags & 0x02 != 0;
    let fin_rst = flags & 0x05 != 0;
    let d = flows.entry(key).or_default();
    if syn {
        d.next = Some(seq.wrapping_add(1));
    }
    if !data.is_empty() {
        c.payload += data.len() as u64;
        let next = *d.next.get_or_insert(seq);
        let off = seq.wrapping_sub(next) as i32;
        if off <= 0 {
            // In order, or overlapping what we already have: keep the new part.
            let skip = off.unsigned_abs() as usize;
            if let Some(new) = data.get(skip..)
                && !new.is_empty()
            {
                d.buf.extend_from_slice(new);
                d.next = Some(next.wrapping_add(new.len() as u32));
                // Drain held segments that are now in order.
                while let Some(n) = d.next {
                    let Some((&s, _)) = d.held.first_key_value() else {
                        break;
                    };
                    let o = s.wrapping_sub(n) as i32;
                    if o > 0 {
                        break;
                    }
                    if let Some((_, v)) = d.held.pop_first()
                        && let Some(tail) = v.get(o.unsigned_abs() as usize..)
                    {
                        d.buf.extend_from_slice(tail);
                        d.next = Some(n.wrapping_add(tail.len() as u32));
                    }
                }
                parse(d, c);
            }
        } else if d.held.len() < MAX_HELD {
            d.held.entry(seq).or_insert_with(|| data.to_vec());
        }
    }
    if fin_rst {
        flows.remove(&key);
    }
}

fn run(input: Box<dyn Read>, json: bool) -> Result<(Counts, u64), String> {
    let mut r = BufReader::with_capacity(1 << 20, input);
    let mut gh = [0u8; 24];
    r.read_exact(&mut gh).map_err(|e| e.to_string())?;
    let magic = u32_at(&gh, 0).unwrap_or(0);
    let le = match magic {
        0xd4c3_b2a1 | 0x4d3c_b2a1 => true,
        0xa1b2_c3d4 | 0xa1b2_3c4d => false,
        _ => return Err("not a classic pcap file".into()),
    };
    let mut flows: HashMap<Key, Dir> = HashMap::new();
    let mut c = Counts {
        json,
        ..Counts::default()
    };
    let mut bytes = 24u64;
    let mut rec = [0u8; 16];
    let mut pkt = Vec::with_capacity(1 << 16);
    loop {
        match r.read_exact(&mut rec) {
            Ok(()) => {}
            Err(e) if e.kind() == std::io::ErrorKind::UnexpectedEof => break,
            Err(e) => return Err(e.to_string()),
        }
        let raw = [rec[8], rec[9], rec[10], rec[11]];
        let incl = if le {
            u32::from_le_bytes(raw)
        } else {
            u32::from_be_bytes(raw)
        } as usize;
        if incl > 1 << 18 {
            return Err("record larger than 256 KiB".into());
        }
        pkt.resize(incl, 0);
        r.read_exact(&mut pkt).map_err(|e| e.to_string())?;
        bytes += 16 + incl as u64;
        c.packets += 1;
        // Ethernet II, IPv4, TCP, not fragmented.
        if u16_at(&pkt, 12) != Some(0x0800) {
            continue;
        }
        let ip = 14;
        let Some(&vihl) = pkt.get(ip) else { continue };
        let ihl = usize::from(vihl & 0x0f) * 4;
        let total = usize::from(u16_at(&pkt, ip + 2).unwrap_or(0));
        let frag = u16_at(&pkt, ip + 6).unwrap_or(0);
        if vihl >> 4 != 4 || pkt.get(ip + 9) != Some(&6) || frag & 0x3fff != 0 {
            continue;
        }
        let (Some(src), Some(dst)) = (ip4(&pkt, ip + 12), ip4(&pkt, ip + 16)) else {
            continue;
        };
        let tcp = ip + ihl;
        let (Some(sport), Some(dport), Some(seq), Some(&off), Some(&flags)) = (
            u16_at(&pkt, tcp),
            u16_at(&pkt, tcp + 2),
            u32_at(&pkt, tcp + 4),
            pkt.get(tcp + 12),
            pkt.get(tcp + 13),
        ) else {
            continue;
        };
        let data_start = tcp + usize::from(off >> 4) * 4;
        let end = (ip + total).min(pkt.len());
        let data = pkt.get(data_start..end).unwrap_or(&[]);
        c.tcp += 1;
        segment(
            &mut flows,
            (src, sport, dst, dport),
            seq,
            flags,
            data,
            &mut c,
        );
    }
    Ok((c, bytes))
}

fn main() -> ExitCode {
    let Some(path) = std::env::args().nth(1) else {
        eprintln!("usage: baseline FILE|- [--json]");
        return ExitCode::from(2);
    };
    let json = match std::env::args().nth(2).as_deref() {
        None => false,
        Some("--json") => true,
        Some(other) => {
            eprintln!("baseline: unknown option {other} (usage: baseline FILE|- [--json])");
            return ExitCode::from(2);
        }
    };
    let input: Box<dyn Read> = if path == "-" {
        Box::new(std::io::stdin().lock())
    } else {
        match std::fs::File::open(&path) {
            Ok(f) => Box::new(f),
            Err(e) => {
                eprintln!("baseline: {path}: {e}");
                return ExitCode::from(2);
            }
        }
    };
    let started = Instant::now();
    match run(input, json) {
        Ok((c, bytes)) => {
            let s = started.elapsed().as_secs_f64();
            println!(
                "packets={} tcp={} payload_bytes={} requests={} responses={} not_http={} bytes={} elapsed_s={:.3} mb_s={:.1}",
                c.packets,
                c.tcp,
                c.payload,
                c.requests,
                c.responses,
                c.bad,
                bytes,
                s,
                bytes as f64 / 1e6 / s
            );
            if c.json {
                println!(
                    "json_messages={} json_bytes={} json_invalid={}",
                    c.json_messages, c.json_bytes, c.json_bad
                );
            }
            ExitCode::SUCCESS
        }
        Err(e) => {
            eprintln!("baseline: {e}");
            ExitCode::from(1)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const CONVERSATION: &[u8] =
        b"POST /mcp HTTP/1.1\r\ncontent-length: 5\r\n\r\nhelloHTTP/1.1 200 OK\r\n\
transfer-encoding: chunked\r\n\r\n3\r\nabc\r\n2\r\nde\r\n0\r\n\r\nHTTP/1.1 202 Accepted\r\n\
content-length: 0\r\n\r\nPOST /mcp HTTP/1.1\r\ncontent-length: 2\r\n\r\n{}";

    fn feed(pieces: &[&[u8]]) -> Counts {
        let mut d = Dir::default();
        let mut c = Counts::default();
        for p in pieces {
            d.buf.extend_from_slice(p);
            parse(&mut d, &mut c);
        }
        c
    }

    #[test]
    fn whole_conversation() {
        let c = feed(&[CONVERSATION]);
        assert_eq!((c.requests, c.responses, c.bad), (2, 2, 0));
    }

    #[test]
    fn every_split_point() {
        for i in 0..=CONVERSATION.len() {
            let (a, b) = CONVERSATION.split_at(i);
            let c = feed(&[a, b]);
            assert_eq!((c.requests, c.responses, c.bad), (2, 2, 0), "split at {i}");
        }
        let bytes: Vec<&[u8]> = CONVERSATION.chunks(1).collect();
        let c = feed(&bytes);
        assert_eq!((c.requests, c.responses), (2, 2));
    }

    #[test]
    fn json_mode_checks_every_message_of_json_and_event_stream_bodies() {
        let pieces = ["event: message\ndata: {", "}\n\ndat", "a: [1, 2\n"];
        let mut conversation = b"POST /mcp HTTP/1.1\r\ncontent-length: 9\r\n\r\n{\"id\": 1}\
HTTP/1.1 200 OK\r\ntransfer-encoding: chunked\r\n\r\n"
            .to_vec();
        for p in pieces {
            conversation.extend_from_slice(format!("{:x}\r\n{p}\r\n", p.len()).as_bytes());
        }
        conversation.extend_from_slice(b"0\r\n\r\n");
        for i in 0..=conversation.len() {
            let (a, b) = conversation.split_at(i);
            let mut d = Dir::default();
            let mut c = Counts {
                json: true,
                ..Counts::default()
            };
            for p in [a, b] {
                d.buf.extend_from_slice(p);
                parse(&mut d, &mut c);
            }
            // `{"id": 1}`, ` {}`, and the truncated ` [1, 2` (invalid).
            assert_eq!((c.requests, c.responses), (1, 1), "split at {i}");
            assert_eq!((c.json_messages, c.json_bad), (3, 1), "split at {i}");
            assert_eq!(c.json_bytes, 9 + 3 + 6, "split at {i}");
        }
    }

    #[test]
    fn out_of_order_and_duplicate_segments() {
        let mut flows = HashMap::new();
        let mut c = Counts::default();
        let key = ([127, 0, 0, 2], 40000, [127, 0, 0, 1], 3000);
        let msg = b"POST /mcp HTTP/1.1\r\ncontent-length: 4\r\n\r\nabcd";
        let (a, b) = msg.split_at(20);
        segment(&mut flows, key, 99, 0x02, &[], &mut c); // SYN: data starts at 100
        segment(&mut flows, key, 120, 0x10, b, &mut c); // second half first
        assert_eq!(c.requests, 0);
        segment(&mut flows, key, 100, 0x10, a, &mut c);
        segment(&mut flows, key, 100, 0x10, a, &mut c); // retransmission
        assert_eq!((c.requests, c.bad), (1, 0));
    }
}
