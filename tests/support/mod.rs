//! Test support: builders for captures and fixtures.
//!
//! [`Capture`] holds a classic pcap (Ethernet/IPv4/TCP, microsecond
//! timestamps) built packet by packet by the shared conversation builder
//! (`pcap_file::TcpConn`): a three-way handshake per connection, correct
//! seq/ack numbers, data split at the connection's MSS, and FIN or RST endings.
//! [`Conn`] is the HTTP conversation DSL on top: `post`, `respond_json`,
//! `sse_head`, `sse_event`...
//! [`run_analyze`] runs the real binary on a capture and returns its JSON lines.
// Test code: a panic is a test failure with a message.
#![allow(
    dead_code,
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::indexing_slicing
)]

// The unit tests' pcap writer, so that one implementation builds every test capture.
#[path = "../../src/capture/testing.rs"]
pub mod pcap_file;

use pcap_file::{Sink, TcpConn};
use std::path::{Path, PathBuf};
use std::process::Command;

/// A file or folder of the reference corpus (`../shared/corpus`, beside the checkout). Only
/// `#[ignore = "needs ../shared/corpus"]` tests call this: run by `cargo test -- --ignored`,
/// where a missing corpus is a failure, not a pass.
pub fn corpus(rel: &str) -> PathBuf {
    let path = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../shared/corpus")
        .join(rel);
    assert!(
        path.exists(),
        "needs ../shared/corpus: {} is absent",
        path.display()
    );
    path
}

/// A file or folder of the corpus slices vendored in `tests/data/corpus` (same layout as the
/// corpus, see its README), which every clone has.
pub fn corpus_slice(rel: &str) -> PathBuf {
    let path = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/data/corpus")
        .join(rel);
    assert!(path.exists(), "{} is absent", path.display());
    path
}

/// Start of every synthetic capture: 2023-11-14T22:13:20Z in µs.
pub const T0_US: i64 = 1_700_000_000_000_000;

/// Packets of one capture, in the order written.
#[derive(Debug)]
pub struct Capture {
    records: Vec<(i64, Vec<u8>)>,
    /// Current time (µs); every packet advances it by 1 µs, `wait_ms` by more.
    pub now_us: i64,
    next_port: u16,
}

impl Default for Capture {
    fn default() -> Self {
        Self::new()
    }
}

impl Capture {
    pub fn new() -> Capture {
        Capture {
            records: Vec::new(),
            now_us: T0_US,
            next_port: 40000,
        }
    }

    /// Let time pass.
    pub fn wait_ms(&mut self, ms: i64) {
        self.now_us += ms * 1000;
    }

    /// Open a TCP connection from 10.0.0.1:<next port> to 10.0.0.2:`server_port` (handshake
    /// included); every data segment is acknowledged by the peer.
    pub fn connect(&mut self, server_port: u16) -> Conn {
        self.next_port += 1;
        let mut tcp = TcpConn::open(
            self,
            ([10, 0, 0, 1], self.next_port),
            ([10, 0, 0, 2], server_port),
            (1000, 5000),
        );
        tcp.ack_each = true;
        Conn { tcp }
    }

    /// Bytes from one side, split at the MSS, each segment acknowledged by the peer.
    pub fn send(&mut self, c: &mut Conn, from_client: bool, data: &[u8]) {
        c.tcp.send(self, from_client, data);
    }

    /// FIN from one side, then FIN from the other (an orderly close).
    pub fn close(&mut self, c: &mut Conn, server_first: bool) {
        c.tcp.close(self, server_first);
    }

    /// RST from one side.
    pub fn reset(&mut self, c: &mut Conn, from_server: bool) {
        c.tcp.reset(self, from_server);
    }

    /// Classic pcap bytes (magic a1b2c3d4, v2.4, LINKTYPE_ETHERNET).
    pub fn to_pcap(&self) -> Vec<u8> {
        pcap_file::pcap(self.records.iter().map(|(ts, data)| (*ts, data.as_slice())))
    }

    /// Frames written so far.
    pub fn frames(&self) -> usize {
        self.records.len()
    }

    /// pcapng bytes (one Ethernet interface, microsecond timestamps); each `(n, text)` of
    /// `secrets` is a TLS key log Decryption Secrets Block after the first `n` packets.
    pub fn to_pcapng(&self, secrets: &[(usize, &str)]) -> Vec<u8> {
        fn block(kind: u32, body: &[u8]) -> Vec<u8> {
            let pad = (4 - body.len() % 4) % 4;
            let len = (12 + body.len() + pad) as u32;
            let mut b = Vec::new();
            b.extend(kind.to_le_bytes());
            b.extend(len.to_le_bytes());
            b.extend(body);
            b.extend(std::iter::repeat_n(0u8, pad));
            b.extend(len.to_le_bytes());
            b
        }
        let dsb = |text: &str| {
            let mut body = 0x544c_534bu32.to_le_bytes().to_vec();
            body.extend((text.len() as u32).to_le_bytes());
            body.extend(text.as_bytes());
            block(0x0000_000a, &body)
        };
        let mut shb = 0x1a2b_3c4du32.to_le_bytes().to_vec();
        shb.extend([1, 0, 0, 0]);
        shb.extend((-1i64).to_le_bytes());
        let mut out = block(0x0a0d_0d0a, &shb);
        out.extend(block(1, &[1, 0, 0, 0, 0, 0, 0, 0]));
        for (i, (ts, frame)) in self.records.iter().enumerate() {
            for (_, text) in secrets.iter().filter(|(n, _)| *n == i) {
                out.extend(dsb(text));
            }
            let mut body = Vec::new();
            let ts = *ts as u64;
            let len = frame.len() as u32;
            for v in [0, (ts >> 32) as u32, ts as u32, len, len] {
                body.extend(v.to_le_bytes());
            }
            body.extend(frame);
            out.extend(block(6, &body));
        }
        for (_, text) in secrets.iter().filter(|(n, _)| *n >= self.records.len()) {
            out.extend(dsb(text));
        }
        out
    }

    /// Write the capture as `name` in `dir`.
    pub fn write(&self, dir: &Path, name: &str) -> PathBuf {
        let path = dir.join(name);
        std::fs::write(&path, self.to_pcap()).unwrap();
        path
    }
}

/// Every frame one µs after the one before.
impl Sink for Capture {
    fn frame(&mut self, frame: Vec<u8>) {
        self.now_us += 1;
        self.records.push((self.now_us, frame));
    }
}

/// One TCP connection of the capture, with the HTTP it carries.
#[derive(Debug, Clone)]
pub struct Conn {
    pub tcp: TcpConn,
}

impl Conn {
    /// An HTTP/1.1 request (Content-Length framing).
    pub fn request(
        &mut self,
        cap: &mut Capture,
        method: &str,
        path: &str,
        headers: &[(&str, &str)],
        body: &str,
    ) {
        let mut s = format!("{method} {path} HTTP/1.1\r\nHost: 10.0.0.2\r\n");
        for (k, v) in headers {
            s.push_str(&format!("{k}: {v}\r\n"));
        }
        if !body.is_empty() || method == "POST" {
            s.push_str(&format!("Content-Length: {}\r\n", body.len()));
        }
        s.push_str("\r\n");
        s.push_str(body);
        cap.send(self, true, s.as_bytes());
    }

    /// A JSON-RPC POST to `/mcp` with the headers real clients send.
    pub fn post(&mut self, cap: &mut Capture, extra: &[(&str, &str)], body: &str) {
        let mut h = vec![
            ("Content-Type", "application/json"),
            ("Accept", "application/json, text/event-stream"),
            ("User-Agent", "node"),
        ];
        h.extend_from_slice(extra);
        self.request(cap, "POST", "/mcp", &h, body);
    }

    /// A complete response with Content-Length (no body and no media type when `media` is empty).
    pub fn respond(&mut self, cap: &mut Capture, status: u16, media: &str, body: &str) {
        let mut s = format!("HTTP/1.1 {status} {}\r\n", reason(status));
        if !media.is_empty() {
            s.push_str(&format!("Content-Type: {media}\r\n"));
        }
        s.push_str(&format!("Content-Length: {}\r\n\r\n{body}", body.len()));
        cap.send(self, false, s.as_bytes());
    }

    pub fn respond_json(&mut self, cap: &mut Capture, status: u16, body: &str) {
        self.respond(cap, status, "application/json", body);
    }

    /// The head of a chunked `text/event-stream` response.
    pub fn sse_head(&mut self, cap: &mut Capture) {
        let s = "HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nCache-Control: no-cache\r\nTransfer-Encoding: chunked\r\n\r\n";
        cap.send(self, false, s.as_bytes());
    }

    /// One chunk carrying raw SSE text.
    pub fn sse_raw(&mut self, cap: &mut Capture, text: &str) {
        let s = format!("{:x}\r\n{text}\r\n", text.len());
        cap.send(self, false, s.as_bytes());
    }

    /// One `event: message` carrying `data`.
    pub fn sse_event(&mut self, cap: &mut Capture, data: &str) {
        self.sse_raw(cap, &format!("event: message\ndata: {data}\n\n"));
    }

    /// The terminating zero-length chunk.
    pub fn sse_end(&mut self, cap: &mut Capture) {
        cap.send(self, false, b"0\r\n\r\n");
    }
}

fn reason(status: u16) -> &'static str {
    match status {
        200 => "OK",
        202 => "Accepted",
        400 => "Bad Request",
        404 => "Not Found",
        500 => "Internal Server Error",
        503 => "Service Unavailable",
        _ => "Status",
    }
}

/// Run `mcp-trace analyze <pcap> -o <pcap's dir>/out.jsonl` and return the rows.
pub fn run_analyze(pcap: &Path) -> Vec<serde_json::Value> {
    run_analyze_into(pcap, pcap.parent().unwrap())
}

/// The key log recorded beside a TLS sample (`X.keys` beside `X.pcap`), if there is one.
pub fn keylog_beside(capture: &Path) -> Option<std::path::PathBuf> {
    let keys = capture.with_extension("keys");
    keys.is_file().then_some(keys)
}

/// Run `mcp-trace analyze <input> -o <out_dir>/out.jsonl` (with `--keylog` when a key log
/// lies beside the input) and return the rows.
pub fn run_analyze_into(pcap: &Path, out_dir: &Path) -> Vec<serde_json::Value> {
    let out = out_dir.join("out.jsonl");
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_mcp-trace"));
    cmd.arg("analyze").arg(pcap).arg("-o").arg(&out);
    if let Some(keys) = keylog_beside(pcap) {
        cmd.arg("--keylog").arg(keys);
    }
    let o = cmd.output().unwrap();
    assert!(
        o.status.success(),
        "mcp-trace analyze failed ({}):\n--- stderr\n{}\n--- stdout\n{}",
        o.status,
        String::from_utf8_lossy(&o.stderr),
        String::from_utf8_lossy(&o.stdout)
    );
    let text = std::fs::read_to_string(&out).unwrap();
    text.lines()
        .filter(|l| !l.trim().is_empty())
        .map(|l| serde_json::from_str(l).unwrap())
        .collect()
}

/// Build a capture with `f`, analyze it, return the rows.
pub fn analyze(f: impl FnOnce(&mut Capture)) -> Vec<serde_json::Value> {
    let mut cap = Capture::new();
    f(&mut cap);
    let dir = tempfile::tempdir().unwrap();
    let path = cap.write(dir.path(), "seed.pcap");
    run_analyze(&path)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pcap_layout_and_tcp_numbers() {
        let mut cap = Capture::new();
        let mut c = cap.connect(8080);
        c.tcp.mss = 10;
        cap.send(&mut c, true, &[b'x'; 25]);
        assert_eq!(c.tcp.client_seq, 1001 + 25);
        cap.close(&mut c, true);
        let bytes = cap.to_pcap();
        assert_eq!(&bytes[..4], &[0xd4, 0xc3, 0xb2, 0xa1]);
        // 3 handshake + 3 data + 3 acks + 2 FIN + 1 ack.
        assert_eq!(cap.records.len(), 12);
        let first = etherparse::SlicedPacket::from_ethernet(&cap.records[3].1).unwrap();
        match first.transport {
            Some(etherparse::TransportSlice::Tcp(t)) => {
                assert_eq!((t.sequence_number(), t.payload().len()), (1001, 10));
                assert!(t.psh() && t.ack());
            }
            other => panic!("{other:?}"),
        }
    }
}
