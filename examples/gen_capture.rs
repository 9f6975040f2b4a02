//! Deterministic generator of realistic MCP captures for the benchmark (issue 9).
//!
//! ```text
//! cargo run --release --example gen_capture -- OUT.pcap SIZE_MB [--seed N] [--conns N] [--tls | --h2c]
//! ```
//!
//! Writes a classic pcap (Ethernet, IPv4, 127.0.0.x) of many concurrent keep-alive
//! TCP connections carrying Streamable HTTP MCP traffic (2025-06-18 style), and
//! `OUT.truth.json` beside it: the number of client requests per outcome
//! (report-schema.md section 3). Same seed and size give the same bytes.
//!
//! Each connection slot is one client: `initialize` (new session id), then
//! `notifications/initialized` (202), `tools/list`, and a stream of `tools/call`,
//! `resources/read` and `ping` requests. Responses are JSON with Content-Length,
//! chunked JSON, or SSE (chunked, progress notifications before the result).
//! Faults: 503 then an SDK retry with the same id and body, 404 session expiry
//! then a fresh `initialize`, JSON-RPC errors, `isError` results. A few percent
//! of data segments are retransmitted or delivered out of order.
//!
//! `--tls` (see `gen_capture/tls.rs`) writes the same traffic as TLS 1.3, and
//! `OUT.keys`, its key log. It draws its randoms from a generator of its own and
//! carries the plaintext capture's packets of the same seed and size, in the same
//! order at the same times (a segment carries its plaintext bytes' records, with
//! their headers and tags), plus the TLS handshake and close_notify segments. So
//! the ground truth is the plaintext capture's except for bytes and packets.
//!
//! `--h2c` (see `gen_capture/h2.rs`) writes the same requests as HTTP/2 with
//! prior knowledge: eight clients share each connection, one stream per
//! exchange, frames interleaved, headers HPACK-encoded. Its ground truth is the
//! plaintext capture's except for bytes, packets and connections, plus the
//! number of streams and header blocks.

// Indexing here is over the generator's own buffers, whose shapes it fixes;
// no capture data is read.
#![allow(clippy::indexing_slicing)]

use std::collections::{BTreeMap, BinaryHeap, VecDeque};
use std::fmt::Write as _;
use std::fs::File;
use std::io::{BufWriter, Write};
use std::process::ExitCode;

#[path = "gen_capture/h2.rs"]
mod h2;
#[path = "gen_capture/tcp.rs"]
mod tcp;
#[path = "gen_capture/tls.rs"]
mod tls;

use tcp::{ACK, FIN, SYN};

/// Maximum TCP payload per segment (Ethernet MTU 1500 - 40).
const MSS: usize = 1460;
/// MSS announced with `--tls`: segments carry record overhead beyond 1460 bytes
/// (Linux's loopback MSS).
const TLS_MSS: usize = 65_495;
/// Seeds the TLS randoms and secrets apart from the traffic's generator.
const TLS_SEED_SALT: u64 = 0x746c_7331_3361_6573;
/// Server address and port: every client talks to one MCP endpoint.
const SERVER_IP: [u8; 4] = [127, 0, 0, 1];
const SERVER_PORT: u16 = 3000;
/// Capture start: 2026-03-01T00:00:00Z, in microseconds.
const T0_US: u64 = 1_772_323_200_000_000;
/// Chance (per mille) that a data segment is retransmitted / swapped with the next.
const RETRANSMIT_PER_MILLE: u64 = 20;
const REORDER_PER_MILLE: u64 = 50;

/// SplitMix64: tiny, fast, and identical on every platform.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }
    /// Uniform in `lo..=hi`.
    fn range(&mut self, lo: u64, hi: u64) -> u64 {
        lo + self.next() % (hi - lo + 1)
    }
    fn per_mille(&mut self, p: u64) -> bool {
        self.next() % 1000 < p
    }
    fn pick<'a>(&mut self, items: &[&'a str]) -> &'a str {
        items[(self.next() % items.len() as u64) as usize]
    }
}

const WORDS: &[&str] = &[
    "alpha",
    "bravo",
    "charlie",
    "delta",
    "echo",
    "foxtrot",
    "latency",
    "gateway",
    "weather",
    "invoice",
    "customer",
    "repository",
    "branch",
    "commit",
    "ticket",
    "summary",
    "the",
    "of",
    "and",
    "to",
    "in",
    "is",
    "for",
    "on",
    "with",
    "as",
    "report",
    "quarterly",
    "Seattle",
    "Zürich",
    "naïve",
    "résumé",
    "東京",
    "data",
    "error",
    "value",
    "index",
    "query",
    "result",
];

const TOOLS: &[&str] = &[
    "search_docs",
    "get_weather",
    "create_ticket",
    "run_sql",
    "read_file",
    "summarize",
    "list_commits",
    "send_email",
];

const USER_AGENTS: &[&str] = &[
    "node",
    "python-httpx/0.28.1",
    "ModelContextProtocol/1.0 (.NET)",
    "claude-code/2.1.3",
];

/// Appends roughly `n` bytes of JSON-safe text.
fn words(rng: &mut Rng, out: &mut String, n: usize) {
    let start = out.len();
    while out.len() - start < n {
        if out.len() > start {
            out.push(' ');
        }
        out.push_str(rng.pick(WORDS));
    }
}

/// Ground truth: client requests (rows) per outcome.
#[derive(Default)]
struct Truth {
    outcomes: BTreeMap<&'static str, u64>,
    http_exchanges: u64,
    connections: u64,
    sessions: u64,
    /// Resends with the same id and body right after a 503 (`retry_origin = sdk`),
    /// other than of `ping` and `tools/list`.
    sdk_retries: u64,
}

impl Truth {
    fn count(&mut self, outcome: &'static str) {
        *self.outcomes.entry(outcome).or_default() += 1;
        self.http_exchanges += 1;
    }
}

/// One packet waiting to be written: its time and its full frame.
struct Packet {
    ts_us: u64,
    frame: Vec<u8>,
    /// Length of this packet's frame in the plaintext capture (0: a TLS-only packet).
    plain_len: u32,
}

/// TCP state of one direction.
struct Dir {
    ip: [u8; 4],
    port: u16,
    /// Next sequence number of the plaintext stream.
    seq: u32,
    /// TLS bytes sent beyond the plaintext (handshake, record overhead).
    shift: u32,
}

impl Dir {
    /// Next sequence number on the wire.
    fn wire_seq(&self) -> u32 {
        self.seq.wrapping_add(self.shift)
    }
}

/// What the next exchange of a client is.
enum Next {
    Initialize,
    Initialized,
    ToolsList,
    Work,
    /// Resend of a request that got a 503: same id and body.
    Retry {
        id: u64,
        body: String,
        outcome: &'static str,
    },
}

/// How a successful response travels.
#[derive(Clone, Copy)]
enum Framing {
    Length,
    Chunked,
    Sse,
}

struct Conn {
    index: u64,
    /// Client slot (fixed address 127.0.0.(2 + slot % 250)).
    slot: u32,
    client: Dir,
    server: Dir,
    open: bool,
    /// Exchanges left before this connection is closed.
    left: u32,
    now_us: u64,
    queue: VecDeque<Packet>,
    tls: Option<Box<tls::ConnTls>>,
    /// `--h2c`: which of this connection's packets start and end which message.
    h2: Option<Box<h2::SlotState>>,
    // MCP client state.
    session: Option<String>,
    next: Next,
    next_id: u64,
    user_agent: &'static str,
    calls_before_expiry: u32,
}

struct Gen {
    rng: Rng,
    /// `--tls`: randoms and secrets, and the key log.
    tls: Option<(Rng, String)>,
    /// `--h2c`: the traffic is written as HTTP/2 by `h2::Writer`.
    h2c: bool,
    truth: Truth,
    next_port: u32,
    next_conn: u64,
    stopping: bool,
}

fn session_id(rng: &mut Rng) -> String {
    format!("{:016x}{:016x}", rng.next(), rng.next())
}

fn request_head(c: &Conn, body_len: usize, out: &mut String) {
    let _ = write!(
        out,
        "POST /mcp HTTP/1.1\r\nhost: 127.0.0.1:{SERVER_PORT}\r\nuser-agent: {}\r\n\
         accept: application/json, text/event-stream\r\ncontent-type: application/json\r\n",
        c.user_agent
    );
    if let Some(s) = &c.session {
        let _ = write!(
            out,
            "mcp-session-id: {s}\r\nmcp-protocol-version: 2025-06-18\r\n"
        );
    }
    let _ = write!(out, "content-length: {body_len}\r\n\r\n");
}

/// A `tools/call` body of 0.2-8 KB with varied arguments.
fn tool_call_body(rng: &mut Rng, id: u64, tool: &str) -> String {
    let mut b = String::with_capacity(8300);
    let _ = write!(
        b,
        r#"{{"jsonrpc":"2.0","id":{id},"method":"tools/call","params":{{"name":"{tool}","arguments":{{"query":""#
    );
    let target = match rng.range(0, 9) {
        0..=5 => rng.range(150, 1200),
        6..=8 => rng.range(1200, 4000),
        _ => rng.range(4000, 7800),
    } as usize;
    words(rng, &mut b, target / 2);
    let _ = write!(
        b,
        r#"","limit":{},"filters":{{"lang":"{}","since":"2026-0{}-1{}"}},"tags":["#,
        rng.range(1, 500),
        rng.pick(&["en", "de", "ja", "fr"]),
        rng.range(1, 9),
        rng.range(0, 9)
    );
    for t in 0..rng.range(0, 6) {
        if t > 0 {
            b.push(',');
        }
        let _ = write!(b, r#""{}""#, rng.pick(WORDS));
    }
    b.push_str(r#"],"notes":""#);
    let have = b.len();
    if have < target {
        words(rng, &mut b, target - have);
    }
    let _ = write!(
        b,
        r#"","dryRun":{}}},"_meta":{{"progressToken":{id}}}}}}}"#,
        rng.range(0, 1) == 1
    );
    b
}

fn tool_result(rng: &mut Rng, id: u64, is_error: bool) -> String {
    let mut b = String::with_capacity(8300);
    let _ = write!(
        b,
        r#"{{"jsonrpc":"2.0","id":{id},"result":{{"content":[{{"type":"text","text":""#
    );
    let n = if is_error {
        rng.range(40, 300)
    } else {
        match rng.range(0, 9) {
            0..=6 => rng.range(100, 2000),
            _ => rng.range(2000, 12000),
        }
    } as usize;
    words(rng, &mut b, n);
    let _ = write!(b, r#""}}],"isError":{is_error}}}}}"#);
    b
}

fn response_head(
    status: &str,
    ctype: Option<&str>,
    session: Option<&str>,
    framing: Framing,
    len: usize,
) -> String {
    let mut h = format!("HTTP/1.1 {status}\r\n");
    if let Some(ct) = ctype {
        let _ = write!(h, "content-type: {ct}\r\n");
    }
    if let Some(s) = session {
        let _ = write!(h, "mcp-session-id: {s}\r\n");
    }
    h.push_str("date: Sun, 01 Mar 2026 00:00:00 GMT\r\n");
    match framing {
        Framing::Length => {
            let _ = write!(h, "content-length: {len}\r\n\r\n");
        }
        Framing::Chunked => h.push_str("transfer-encoding: chunked\r\n\r\n"),
        Framing::Sse => h.push_str(
            "cache-control: no-cache\r\nconnection: keep-alive\r\ntransfer-encoding: chunked\r\n\r\n",
        ),
    }
    h
}

fn chunk(out: &mut Vec<u8>, data: &[u8]) {
    let _ = write!(out, "{:x}\r\n", data.len());
    out.extend_from_slice(data);
    out.extend_from_slice(b"\r\n");
}

impl Gen {
    fn new_conn(&mut self, slot: u32, now_us: u64, carry: Option<&mut Conn>) -> Conn {
        let port = 32768 + (self.next_port % 28000) as u16;
        self.next_port += 1;
        let index = self.next_conn;
        self.next_conn += 1;
        self.truth.connections += 1;
        let client = Dir {
            ip: [127, 0, 0, 2 + (slot % 250) as u8],
            port,
            seq: self.rng.next() as u32,
            shift: 0,
        };
        let server = Dir {
            ip: SERVER_IP,
            port: SERVER_PORT,
            seq: self.rng.next() as u32,
            shift: 0,
        };
        let tls = self
            .tls
            .as_mut()
            .map(|(rng, keylog)| Box::new(tls::ConnTls::new(rng, keylog)));
        let mut c = Conn {
            index,
            slot,
            client,
            server,
            open: true,
            left: self.rng.range(20, 300) as u32,
            now_us,
            queue: VecDeque::new(),
            tls,
            h2: self.h2c.then(Box::default),
            session: None,
            next: Next::Initialize,
            next_id: 0,
            user_agent: self.rng.pick(USER_AGENTS),
            calls_before_expiry: self.rng.range(50, 2000) as u32,
        };
        if let Some(prev) = carry {
            // The same client process reconnects: keeps its session and ids.
            c.session = prev.session.take();
            c.next = std::mem::replace(&mut prev.next, Next::Initialize);
            c.next_id = prev.next_id;
            c.user_agent = prev.user_agent;
            c.calls_before_expiry = prev.calls_before_expiry;
        }
        c.control(true, SYN);
        c.now_us += self.rng.range(20, 80);
        c.control(false, SYN | ACK);
        c.control(true, ACK);
        c
    }

    /// Queues the next exchange (or the close) of `c`.
    fn step(&mut self, c: &mut Conn) {
        if c.left == 0 || self.stopping {
            c.tls_close_notify(true);
            c.control(true, FIN | ACK);
            c.now_us += self.rng.range(20, 200);
            c.tls_close_notify(false);
            c.control(false, FIN | ACK);
            c.control(true, ACK);
            c.open = false;
            return;
        }
        c.left -= 1;
        let idle_from = c.now_us;
        c.now_us += self.rng.range(200, 30_000); // think time
        c.tls_handshake(idle_from);
        let rng = &mut self.rng;
        let next = std::mem::replace(&mut c.next, Next::Work);
        let is_retry = matches!(next, Next::Retry { .. });
        if let Next::Retry { body, .. } = &next {
            // `ping` and `*/list` are never linked as repeats (report-schema.md 4).
            let discovery = body.contains(r#""method":"ping""#) || body.contains("/list\"");
            if !discovery {
                self.truth.sdk_retries += 1;
            }
        }
        let (id, body, mut planned) = match next {
            Next::Initialize => {
                let id = c.next_id;
                c.next_id += 1;
                let body = format!(
                    r#"{{"jsonrpc":"2.0","id":{id},"method":"initialize","params":{{"protocolVersion":"2025-06-18","capabilities":{{"roots":{{"listChanged":true}},"sampling":{{}}}},"clientInfo":{{"name":"bench-client-{}","version":"1.{}.0"}}}}}}"#,
                    c.slot,
                    rng.range(0, 9)
                );
                c.session = None;
                c.next = Next::Initialized;
                (Some(id), body, "RPC_SUCCESS")
            }
            Next::Initialized => {
                c.next = Next::ToolsList;
                (
                    None,
                    r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#.to_string(),
                    "ACCEPTED",
                )
            }
            Next::ToolsList => {
                let id = c.next_id;
                c.next_id += 1;
                (
                    Some(id),
                    format!(r#"{{"jsonrpc":"2.0","id":{id},"method":"tools/list","params":{{}}}}"#),
                    "RPC_SUCCESS",
                )
            }
            Next::Retry { id, body, outcome } => (Some(id), body, outcome),
            Next::Work => {
                let id = c.next_id;
                c.next_id += 1;
                match rng.range(0, 99) {
                    0..=79 => {
                        let tool = rng.pick(TOOLS);
                        let outcome = match rng.range(0, 99) {
                            0..=84 => "TOOL_SUCCESS",
                            85..=94 => "TOOL_ERROR",
                            _ => "JSONRPC_ERROR",
                        };
                        (Some(id), tool_call_body(rng, id, tool), outcome)
                    }
                    80..=91 => (
                        Some(id),
                        format!(
                            r#"{{"jsonrpc":"2.0","id":{id},"method":"resources/read","params":{{"uri":"file:///srv/data/{}-{}.md"}}}}"#,
                            rng.pick(WORDS),
                            rng.range(0, 99_999)
                        ),
                        "RPC_SUCCESS",
                    ),
                    _ => (
                        Some(id),
                        format!(r#"{{"jsonrpc":"2.0","id":{id},"method":"ping"}}"#),
                        "RPC_SUCCESS",
                    ),
                }
            }
        };
        // Faults decided by the server for requests in an established session.
        let mut status_fault = None;
        if id.is_some() && c.session.is_some() {
            c.calls_before_expiry = c.calls_before_expiry.saturating_sub(1);
            if c.calls_before_expiry == 0 {
                c.calls_before_expiry = rng.range(50, 2000) as u32;
                status_fault = Some(404);
            } else if !is_retry && rng.per_mille(25) {
                status_fault = Some(503);
            }
        }

        let mut req = String::with_capacity(body.len() + 300);
        request_head(c, body.len(), &mut req);
        req.push_str(&body);
        c.send_msg(rng, true, req.as_bytes());
        c.now_us += rng.range(300, 80_000); // server time

        let sid = c.session.clone();
        let mut resp: Vec<u8> = Vec::with_capacity(16_384);
        let mut sse_gaps: Vec<usize> = Vec::new();
        match (status_fault, id) {
            (Some(503), Some(rid)) => {
                let b = "upstream connect error or disconnect/reset before headers";
                resp.extend_from_slice(
                    response_head(
                        "503 Service Unavailable",
                        Some("text/plain"),
                        None,
                        Framing::Length,
                        b.len(),
                    )
                    .as_bytes(),
                );
                resp.extend_from_slice(b.as_bytes());
                // The SDK resends the same id and body shortly after.
                c.next = Next::Retry {
                    id: rid,
                    body: body.clone(),
                    outcome: planned,
                };
                c.left += 1;
                planned = "HTTP_ERROR";
            }
            (Some(_), _) => {
                let b = r#"{"jsonrpc":"2.0","error":{"code":-32001,"message":"Session not found"},"id":null}"#;
                resp.extend_from_slice(
                    response_head(
                        "404 Not Found",
                        Some("application/json"),
                        None,
                        Framing::Length,
                        b.len(),
                    )
                    .as_bytes(),
                );
                resp.extend_from_slice(b.as_bytes());
                c.session = None;
                c.next = Next::Initialize;
                c.left += 1;
                planned = "HTTP_ERROR";
            }
            (None, None) => {
                resp.extend_from_slice(
                    response_head("202 Accepted", None, sid.as_deref(), Framing::Length, 0)
                        .as_bytes(),
                );
            }
            (None, Some(rid)) => {
                let json = match planned {
                    "TOOL_SUCCESS" => tool_result(rng, rid, false),
                    "TOOL_ERROR" => tool_result(rng, rid, true),
                    "JSONRPC_ERROR" => format!(
                        r#"{{"jsonrpc":"2.0","id":{rid},"error":{{"code":-32602,"message":"Unknown tool: invalid arguments for {}"}}}}"#,
                        rng.pick(TOOLS)
                    ),
                    _ if body.contains(r#""method":"initialize""#) => {
                        let s = session_id(rng);
                        c.session = Some(s);
                        self.truth.sessions += 1;
                        format!(
                            r#"{{"jsonrpc":"2.0","id":{rid},"result":{{"protocolVersion":"2025-06-18","capabilities":{{"tools":{{"listChanged":true}},"resources":{{}},"logging":{{}}}},"serverInfo":{{"name":"bench-server","version":"0.9.1"}},"instructions":"Bench server."}}}}"#
                        )
                    }
                    _ if body.contains(r#""method":"tools/list""#) => {
                        let mut t = format!(r#"{{"jsonrpc":"2.0","id":{rid},"result":{{"tools":["#);
                        for (k, name) in TOOLS.iter().enumerate() {
                            if k > 0 {
                                t.push(',');
                            }
                            let _ = write!(
                                t,
                                r#"{{"name":"{name}","description":"Runs {name} against the backend.","inputSchema":{{"type":"object","properties":{{"query":{{"type":"string"}},"limit":{{"type":"integer"}}}},"required":["query"]}}}}"#
                            );
                        }
                        t.push_str("]}}");
                        t
                    }
                    _ if body.contains(r#""method":"ping""#) => {
                        format!(r#"{{"jsonrpc":"2.0","id":{rid},"result":{{}}}}"#)
                    }
                    _ => {
                        let mut t = format!(
                            r#"{{"jsonrpc":"2.0","id":{rid},"result":{{"contents":[{{"uri":"file:///srv/data/x.md","mimeType":"text/markdown","text":""#
                        );
                        let n = rng.range(200, 6000) as usize;
                        words(rng, &mut t, n);
                        t.push_str(r#""}]}}"#);
                        t
                    }
                };
                // The session id travels on the initialize response itself.
                let sid = c.session.clone();
                let framing = match rng.range(0, 9) {
                    0..=4 => Framing::Length,
                    5..=6 => Framing::Chunked,
                    _ => Framing::Sse,
                };
                match framing {
                    Framing::Length => {
                        resp.extend_from_slice(
                            response_head(
                                "200 OK",
                                Some("application/json"),
                                sid.as_deref(),
                                framing,
                                json.len(),
                            )
                            .as_bytes(),
                        );
                        resp.extend_from_slice(json.as_bytes());
                    }
                    Framing::Chunked => {
                        resp.extend_from_slice(
                            response_head(
                                "200 OK",
                                Some("application/json"),
                                sid.as_deref(),
                                framing,
                                0,
                            )
                            .as_bytes(),
                        );
                        let mut rest = json.as_bytes();
                        while !rest.is_empty() {
                            let n = (rng.range(512, 4096) as usize).min(rest.len());
                            let (a, b) = rest.split_at(n);
                            chunk(&mut resp, a);
                            rest = b;
                        }
                        resp.extend_from_slice(b"0\r\n\r\n");
                    }
                    Framing::Sse => {
                        resp.extend_from_slice(
                            response_head(
                                "200 OK",
                                Some("text/event-stream"),
                                sid.as_deref(),
                                framing,
                                0,
                            )
                            .as_bytes(),
                        );
                        let progress = if body.contains("progressToken") {
                            rng.range(0, 4)
                        } else {
                            0
                        };
                        for k in 1..=progress {
                            let ev = format!(
                                "event: message\ndata: {{\"jsonrpc\":\"2.0\",\"method\":\"notifications/progress\",\"params\":{{\"progressToken\":{rid},\"progress\":{k},\"total\":{progress},\"message\":\"step {k}\"}}}}\n\n"
                            );
                            chunk(&mut resp, ev.as_bytes());
                            sse_gaps.push(resp.len());
                        }
                        let ev = format!("event: message\ndata: {json}\n\n");
                        chunk(&mut resp, ev.as_bytes());
                        resp.extend_from_slice(b"0\r\n\r\n");
                    }
                }
            }
        }
        // SSE events are written as the tool makes progress: separate writes.
        let mut start = 0;
        for end in sse_gaps {
            c.send_msg(rng, false, &resp[start..end]);
            c.now_us += rng.range(1_000, 40_000);
            start = end;
        }
        c.send_msg(rng, false, &resp[start..]);
        self.truth.count(planned);
    }
}

#[derive(PartialEq, Eq, PartialOrd, Ord)]
struct Due {
    neg_ts: std::cmp::Reverse<(u64, u64)>,
    slot: usize,
}

/// `OUT.pcap` -> `OUT.<ext>`.
fn beside(path: &str, ext: &str) -> String {
    match path.strip_suffix(".pcap") {
        Some(stem) => format!("{stem}.{ext}"),
        None => format!("{path}.{ext}"),
    }
}

#[cfg(test)]
fn run(path: &str, size_mb: u64, seed: u64, conns: usize, with_tls: bool) -> std::io::Result<()> {
    run_variant(path, size_mb, seed, conns, with_tls, false)
}

/// `h2c`: the same traffic written as HTTP/2 with prior knowledge (`gen_capture/h2.rs`).
fn run_variant(
    path: &str,
    size_mb: u64,
    seed: u64,
    conns: usize,
    with_tls: bool,
    h2c: bool,
) -> std::io::Result<()> {
    let target = size_mb * 1_000_000;
    let mut out = BufWriter::with_capacity(1 << 20, File::create(path)?);
    // Classic pcap, microsecond timestamps, Ethernet.
    out.write_all(&0xa1b2_c3d4u32.to_le_bytes())?;
    out.write_all(&2u16.to_le_bytes())?;
    out.write_all(&4u16.to_le_bytes())?;
    out.write_all(&[0; 8])?;
    out.write_all(&262_144u32.to_le_bytes())?;
    out.write_all(&1u32.to_le_bytes())?;
    let mut written: u64 = 24;
    // What the plaintext capture has written by now: it decides when to stop.
    let mut plain_written: u64 = 24;
    let mut packets: u64 = 0;

    let mut g = Gen {
        rng: Rng(seed),
        tls: with_tls.then(|| (Rng(seed ^ TLS_SEED_SALT), String::new())),
        h2c,
        truth: Truth::default(),
        next_port: 0,
        next_conn: 0,
        stopping: false,
    };
    let mut writer = h2c.then(|| h2::Writer::new(seed, conns));
    let mut slots: Vec<Conn> = Vec::with_capacity(conns);
    let mut heap = BinaryHeap::new();
    for s in 0..conns {
        let start = T0_US + g.rng.range(0, 2_000_000);
        let c = g.new_conn(s as u32, start, None);
        heap.push(Due {
            neg_ts: std::cmp::Reverse((c.queue.front().map_or(start, |p| p.ts_us), c.index)),
            slot: s,
        });
        slots.push(c);
    }
    while let Some(Due { slot, .. }) = heap.pop() {
        let Some(c) = slots.get_mut(slot) else { break };
        if let Some(p) = c.queue.pop_front() {
            match (writer.as_mut(), c.h2.as_mut()) {
                (Some(w), Some(state)) => {
                    let (piece, flush) = state.pop();
                    w.packet(c.slot, p.ts_us, piece, flush);
                    for (ts, f) in w.out.drain(..) {
                        written += write_packet(&mut out, ts, &f)?;
                        packets += 1;
                    }
                }
                _ => {
                    written += write_packet(&mut out, p.ts_us, &p.frame)?;
                    packets += 1;
                }
            }
            if p.plain_len > 0 {
                plain_written += 16 + u64::from(p.plain_len);
            }
            if plain_written >= target {
                g.stopping = true;
            }
        }
        if c.queue.is_empty() {
            if c.open {
                g.step(c);
            } else if !g.stopping {
                let now = c.now_us + g.rng.range(1_000, 100_000);
                let mut fresh = g.new_conn(c.slot, now, Some(c));
                std::mem::swap(c, &mut fresh);
            } else {
                continue; // closed for good
            }
        }
        if let Some(p) = c.queue.front() {
            heap.push(Due {
                neg_ts: std::cmp::Reverse((p.ts_us, c.index)),
                slot,
            });
        }
    }
    if let Some(w) = writer.as_mut() {
        w.finish();
        for (ts, f) in w.out.drain(..) {
            written += write_packet(&mut out, ts, &f)?;
            packets += 1;
        }
    }
    out.flush()?;

    let mut json = String::from("{\n");
    let _ = writeln!(json, "  \"generator\": \"examples/gen_capture.rs\",");
    let _ = writeln!(json, "  \"seed\": {seed},");
    let _ = writeln!(json, "  \"concurrent_connections\": {conns},");
    if with_tls {
        let _ = writeln!(json, "  \"tls\": \"TLS 1.3 TLS_AES_128_GCM_SHA256\",");
    }
    let _ = writeln!(json, "  \"bytes\": {written},");
    let _ = writeln!(json, "  \"packets\": {packets},");
    match &writer {
        Some(w) => {
            let _ = writeln!(
                json,
                "  \"http2\": \"h2c prior knowledge, {} clients per connection\",",
                h2::CLIENTS_PER_CONN
            );
            let _ = writeln!(json, "  \"tcp_connections\": {},", w.connections);
            let _ = writeln!(json, "  \"h2_streams\": {},", w.streams);
            let _ = writeln!(json, "  \"h2_header_blocks\": {},", w.header_blocks);
        }
        None => {
            let _ = writeln!(json, "  \"tcp_connections\": {},", g.truth.connections);
        }
    }
    let _ = writeln!(json, "  \"sessions\": {},", g.truth.sessions);
    let _ = writeln!(json, "  \"http_exchanges\": {},", g.truth.http_exchanges);
    let _ = writeln!(
        json,
        "  \"retries\": {{\"sdk\": {}, \"application\": 0, \"manual\": 0}},",
        g.truth.sdk_retries
    );
    let total: u64 = g.truth.outcomes.values().sum();
    let _ = writeln!(json, "  \"requests\": {total},");
    json.push_str("  \"mcp_exchanges\": {");
    for (k, (name, n)) in g.truth.outcomes.iter().enumerate() {
        let sep = if k == 0 { "" } else { "," };
        let _ = write!(json, "{sep}\n    \"{name}\": {n}");
    }
    json.push_str("\n  }\n}\n");
    std::fs::write(beside(path, "truth.json"), json)?;
    if let Some((_, keylog)) = &g.tls {
        std::fs::write(beside(path, "keys"), keylog)?;
    }
    eprintln!("wrote {path}: {written} bytes, {packets} packets, {total} requests");
    Ok(())
}

/// One pcap record; returns the bytes written.
fn write_packet(out: &mut impl Write, ts_us: u64, frame: &[u8]) -> std::io::Result<u64> {
    let len = frame.len() as u32;
    out.write_all(&((ts_us / 1_000_000) as u32).to_le_bytes())?;
    out.write_all(&((ts_us % 1_000_000) as u32).to_le_bytes())?;
    out.write_all(&len.to_le_bytes())?;
    out.write_all(&len.to_le_bytes())?;
    out.write_all(frame)?;
    Ok(16 + u64::from(len))
}

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let mut pos = Vec::new();
    let mut seed = 1u64;
    let mut conns = 200usize;
    let mut with_tls = false;
    let mut h2c = false;
    let mut it = args.iter();
    while let Some(a) = it.next() {
        match a.as_str() {
            "--seed" => seed = it.next().and_then(|v| v.parse().ok()).unwrap_or(seed),
            "--conns" => conns = it.next().and_then(|v| v.parse().ok()).unwrap_or(conns),
            "--tls" => with_tls = true,
            "--h2c" => h2c = true,
            _ => pos.push(a.clone()),
        }
    }
    let (Some(path), Some(size)) = (pos.first(), pos.get(1).and_then(|s| s.parse::<u64>().ok()))
    else {
        eprintln!("usage: gen_capture OUT.pcap SIZE_MB [--seed N] [--conns N] [--tls | --h2c]");
        return ExitCode::from(2);
    };
    if with_tls && h2c {
        eprintln!("gen_capture: --tls and --h2c exclude each other (h2c is HTTP/2 without TLS)");
        return ExitCode::from(2);
    }
    match run_variant(path, size, seed, conns.max(1), with_tls, h2c) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("gen_capture: {e}");
            ExitCode::from(1)
        }
    }
}

#[cfg(test)]
#[path = "gen_capture/tests.rs"]
mod tests;
