//! The gateway variant of a benchmark capture (issue 32): every call twice, on two legs.
//!
//! ```text
//! cargo run --release --example gateway_capture -- IN.pcap OUT.pcap
//! ```
//!
//! Reads a classic pcap written by `gen_capture` (Ethernet, IPv4, 127.0.0.x) and writes each
//! packet twice: as it is (the client -> gateway leg, the gateway listening on 127.0.0.1) and
//! as the gateway's upstream copy, 20 µs later, from 127.0.1.x to the server 127.0.2.1 (same
//! ports). A pass-through gateway: same ids, bodies and session ids on both legs. Writes
//! `OUT.truth.json`: `IN.truth.json`'s counts, with `mcp_exchanges` doubled (both legs) and
//! `mcp_calls` the input's (one call per client request). Deterministic: same input, same
//! bytes.

// Indexing is over the frames `gen_capture` wrote, whose layout it fixes.
#![allow(clippy::indexing_slicing)]

use std::collections::VecDeque;
use std::fs::File;
use std::io::{BufReader, BufWriter, Read, Write};
use std::process::ExitCode;

/// How long after the client's packet the gateway's copy of it is on the wire.
const COPY_DELAY_US: u64 = 20;
/// Ethernet header, then IPv4 source and destination.
const IP_SRC: usize = 14 + 12;
const IP_DST: usize = 14 + 16;

/// The upstream leg's address for a client-leg address: the gateway's outbound side
/// (127.0.1.x) for a client, the server (127.0.2.1) for the gateway (127.0.0.1).
fn upstream(ip: &mut [u8]) {
    if ip.len() == 4 && ip[0] == 127 && ip[1] == 0 && ip[2] == 0 {
        ip[2] = if ip[3] == 1 { 2 } else { 1 };
    }
}

fn read_record(r: &mut impl Read) -> std::io::Result<Option<(u64, Vec<u8>)>> {
    let mut head = [0u8; 16];
    match r.read_exact(&mut head) {
        Ok(()) => {}
        Err(e) if e.kind() == std::io::ErrorKind::UnexpectedEof => return Ok(None),
        Err(e) => return Err(e),
    }
    let word = |i: usize| u32::from_le_bytes([head[i], head[i + 1], head[i + 2], head[i + 3]]);
    let ts = u64::from(word(0)) * 1_000_000 + u64::from(word(4));
    let mut frame = vec![0u8; word(8) as usize];
    r.read_exact(&mut frame)?;
    Ok(Some((ts, frame)))
}

fn write_record(w: &mut impl Write, ts: u64, frame: &[u8]) -> std::io::Result<()> {
    let len = frame.len() as u32;
    w.write_all(&((ts / 1_000_000) as u32).to_le_bytes())?;
    w.write_all(&((ts % 1_000_000) as u32).to_le_bytes())?;
    w.write_all(&len.to_le_bytes())?;
    w.write_all(&len.to_le_bytes())?;
    w.write_all(frame)
}

fn run(input: &str, output: &str) -> std::io::Result<u64> {
    let mut r = BufReader::new(File::open(input)?);
    let mut w = BufWriter::new(File::create(output)?);
    let mut header = [0u8; 24];
    r.read_exact(&mut header)?;
    w.write_all(&header)?;
    let mut copies: VecDeque<(u64, Vec<u8>)> = VecDeque::new();
    let mut packets = 0u64;
    while let Some((ts, frame)) = read_record(&mut r)? {
        while let Some((cts, copy)) = copies.front() {
            if *cts > ts {
                break;
            }
            write_record(&mut w, *cts, copy)?;
            copies.pop_front();
            packets += 1;
        }
        write_record(&mut w, ts, &frame)?;
        packets += 1;
        let mut copy = frame;
        if copy.len() >= IP_DST + 4 {
            upstream(&mut copy[IP_SRC..IP_SRC + 4]);
            upstream(&mut copy[IP_DST..IP_DST + 4]);
        }
        copies.push_back((ts + COPY_DELAY_US, copy));
    }
    for (cts, copy) in copies {
        write_record(&mut w, cts, &copy)?;
        packets += 1;
    }
    w.flush()?;
    Ok(packets)
}

/// `IN.truth.json` with `mcp_exchanges` doubled and `mcp_calls` added.
fn truth(input: &str, output: &str) -> Result<(), Box<dyn std::error::Error>> {
    let text = std::fs::read_to_string(input.replace(".pcap", ".truth.json"))?;
    let mut t: serde_json::Value = serde_json::from_str(&text)?;
    let calls = t["mcp_exchanges"].clone();
    let mut both = calls.clone();
    if let Some(m) = both.as_object_mut() {
        for v in m.values_mut() {
            *v = serde_json::json!(v.as_u64().unwrap_or(0) * 2);
        }
    }
    t["mcp_exchanges"] = both;
    t["mcp_calls"] = calls;
    t["gateway"] = serde_json::json!(
        "every packet copied 20 us later from 127.0.1.x to 127.0.2.1 (examples/gateway_capture.rs)"
    );
    std::fs::write(
        output.replace(".pcap", ".truth.json"),
        serde_json::to_string_pretty(&t)? + "\n",
    )?;
    Ok(())
}

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let (Some(input), Some(output)) = (args.first(), args.get(1)) else {
        eprintln!("usage: gateway_capture IN.pcap OUT.pcap");
        return ExitCode::from(2);
    };
    match run(input, output) {
        Ok(packets) => {
            if let Err(e) = truth(input, output) {
                eprintln!("gateway_capture: truth: {e}");
                return ExitCode::from(1);
            }
            eprintln!("wrote {output}: {packets} packets");
            ExitCode::SUCCESS
        }
        Err(e) => {
            eprintln!("gateway_capture: {e}");
            ExitCode::from(1)
        }
    }
}
