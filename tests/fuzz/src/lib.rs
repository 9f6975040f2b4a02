//! Builders shared by the fuzz targets: they turn fuzz bytes into the input
//! types of each stage (frames, segments, stream events, HTTP events).
//!
//! Every format is a flat list of little-endian records (documented on each
//! builder) so `seeds.py` can write seeds from the samples and fixtures.
//! A record cut short by the end of the input is read as far as it goes.

use mcp_trace::timestamp::CaptureTime;
use mcp_trace::capture::Frame;
use mcp_trace::decode::{Segment, TcpFlags};
use mcp_trace::http::{
    BodyEnd, ConnInfo, ExchangeRef, Headers, HttpEvent, HttpRequest, RequestHead, ResponseHead,
};
use mcp_trace::stream::{CloseReason, Side, StreamEvent, StreamEventKind};
use std::net::{IpAddr, Ipv4Addr, SocketAddr};
use std::sync::Arc;

/// A cursor over the fuzz input; reads past the end yield zeros / short slices.
pub struct Input<'a> {
    data: &'a [u8],
}

impl<'a> Input<'a> {
    pub fn new(data: &'a [u8]) -> Self {
        Input { data }
    }

    pub fn is_empty(&self) -> bool {
        self.data.is_empty()
    }

    /// Up to `n` bytes.
    pub fn take(&mut self, n: usize) -> &'a [u8] {
        let n = n.min(self.data.len());
        let (head, tail) = self.data.split_at(n);
        self.data = tail;
        head
    }

    /// Everything left.
    pub fn rest(&mut self) -> &'a [u8] {
        self.take(self.data.len())
    }

    pub fn u8(&mut self) -> u8 {
        self.take(1).first().copied().unwrap_or(0)
    }

    pub fn u16(&mut self) -> u16 {
        let mut b = [0u8; 2];
        for (d, s) in b.iter_mut().zip(self.take(2)) {
            *d = *s;
        }
        u16::from_le_bytes(b)
    }

    pub fn u32(&mut self) -> u32 {
        let mut b = [0u8; 4];
        for (d, s) in b.iter_mut().zip(self.take(4)) {
            *d = *s;
        }
        u32::from_le_bytes(b)
    }

    /// A length-prefixed (u16) byte string.
    pub fn bytes16(&mut self) -> &'a [u8] {
        let n = usize::from(self.u16());
        self.take(n)
    }
}

/// Link types the decoder knows (plus one it does not), picked by a selector byte.
pub const LINK_TYPES: [u32; 10] = [1, 101, 228, 229, 0, 113, 276, 239, 108, 147];

/// Frames: records `[link selector u8][extra orig_len u8][len u16][bytes]`.
/// Frames are numbered from 1 and 1 ms apart.
pub fn frames(data: &[u8]) -> Vec<Frame> {
    let mut input = Input::new(data);
    let mut out = Vec::new();
    let mut index = 0u64;
    while !input.is_empty() {
        let sel = input.u8();
        let extra = input.u8();
        let bytes = input.bytes16().to_vec();
        index += 1;
        let link_type = LINK_TYPES
            .get(usize::from(sel) % LINK_TYPES.len())
            .copied()
            .unwrap_or(1);
        out.push(Frame {
            index,
            input: 0,
            ts_ns: 1_700_000_000_000_000_000 + (index as i64) * 1_000_000,
            link_type,
            orig_len: bytes.len() as u32 + u32::from(extra),
            data: bytes,
        });
    }
    out
}

/// Address of endpoint `n` (0..16): 10.0.0.(n%4+1):(40000 + n/4) for the clients;
/// the server is 10.0.1.1:80.
fn endpoint(n: u8) -> SocketAddr {
    let n = n % 16;
    SocketAddr::new(
        IpAddr::V4(Ipv4Addr::new(10, 0, 0, n % 4 + 1)),
        40000 + u16::from(n / 4),
    )
}

const SERVER: SocketAddr = SocketAddr::new(IpAddr::V4(Ipv4Addr::new(10, 0, 1, 1)), 80);

/// Segments: records
/// `[flags u8][endpoint u8][seq u32][ack u32][time step i32 µs][len u16][payload]`.
/// flags: bit0 SYN, bit1 ACK, bit2 FIN, bit3 RST, bit4 server-to-client;
/// bit5 the wire length is 100 bytes more than the payload (snap length cut).
/// Time steps may be negative (timestamps going backwards).
pub fn segments(data: &[u8]) -> Vec<Segment> {
    let mut input = Input::new(data);
    let mut out = Vec::new();
    let mut ts_ns: i64 = 1_700_000_000_000_000_000;
    let mut frame = 0u64;
    while !input.is_empty() {
        let f = input.u8();
        let ep = endpoint(input.u8());
        let seq = input.u32();
        let ack = input.u32();
        let step = input.u32() as i32;
        let payload = input.bytes16().to_vec();
        frame += 1;
        ts_ns = ts_ns.saturating_add(i64::from(step).saturating_mul(1000));
        let (src, dst) = if f & 0x10 != 0 {
            (SERVER, ep)
        } else {
            (ep, SERVER)
        };
        let extra = if f & 0x20 != 0 { 100 } else { 0 };
        out.push(Segment {
            frame,
            input: 0,
            ts_ns,
            src,
            dst,
            seq,
            ack,
            flags: TcpFlags {
                syn: f & 1 != 0,
                ack: f & 2 != 0,
                fin: f & 4 != 0,
                rst: f & 8 != 0,
            },
            wire_payload_len: payload.len() as u32 + extra,
            payload,
        });
    }
    out
}

/// A TCP conversation as the flow stage would deliver it, on streams 0 and 1:
/// records `[op u8]...`; op bits 0-2: 0 client data `[len u16][bytes]`,
/// 1 server data, 2 client gap `[len u32]`, 3 server gap, 4 client FIN,
/// 5 server FIN, 6 RST by the side in bit 5; bit 4 picks the stream.
/// Like the flow stage: nothing on a side after its FIN, nothing after a RST;
/// every stream opens first and closes last.
pub fn stream_events(data: &[u8]) -> Vec<StreamEvent> {
    let mut input = Input::new(data);
    let mut out = Vec::new();
    let mut ts_ns: i64 = 1_700_000_000_000_000_000;
    let mut frame = 0u64;
    // Per stream: client FIN, server FIN, reset.
    let mut state = [[false; 3]; 2];
    for stream in 0..2u64 {
        out.push(StreamEvent {
            stream,
            ts: CaptureTime::from_ns(ts_ns),
            frame,
            kind: StreamEventKind::Opened {
                client: endpoint(stream as u8),
                server: SERVER,
                saw_syn: stream == 0,
                input: 0,
            },
        });
    }
    while !input.is_empty() {
        let op = input.u8();
        let stream = usize::from(op >> 4 & 1);
        frame += 1;
        ts_ns += 1_000_000;
        let st = state.get_mut(stream).map(|s| *s).unwrap_or([true; 3]);
        let side_open = |side: Side| {
            !st[2]
                && match side {
                    Side::Client => !st[0],
                    Side::Server => !st[1],
                }
        };
        let kind = match op & 7 {
            0 | 1 => {
                let side = if op & 7 == 0 {
                    Side::Client
                } else {
                    Side::Server
                };
                let bytes = input.bytes16().to_vec();
                if !side_open(side) || bytes.is_empty() {
                    continue;
                }
                StreamEventKind::Data { side, bytes }
            }
            2 | 3 => {
                let side = if op & 7 == 2 {
                    Side::Client
                } else {
                    Side::Server
                };
                let len = u64::from(input.u32());
                if !side_open(side) || len == 0 {
                    continue;
                }
                StreamEventKind::Gap {
                    side,
                    len: mcp_trace::stream::GapLen::Bytes(len),
                }
            }
            4 | 5 => {
                let side = if op & 7 == 4 {
                    Side::Client
                } else {
                    Side::Server
                };
                if !side_open(side) {
                    continue;
                }
                if let Some(s) = state.get_mut(stream) {
                    s[usize::from(op & 7 == 5)] = true;
                }
                StreamEventKind::Fin { side }
            }
            _ => {
                let side = if op & 0x20 != 0 {
                    Side::Server
                } else {
                    Side::Client
                };
                if st[2] {
                    continue;
                }
                if let Some(s) = state.get_mut(stream) {
                    s[2] = true;
                }
                StreamEventKind::Rst { side }
            }
        };
        out.push(StreamEvent {
            stream: stream as u64,
            ts: CaptureTime::from_ns(ts_ns),
            frame,
            kind,
        });
    }
    for stream in 0..2u64 {
        out.push(StreamEvent {
            stream,
            ts: CaptureTime::from_ns(ts_ns),
            frame,
            kind: StreamEventKind::closed(CloseReason::CaptureEnd),
        });
    }
    out
}

const METHODS: [&str; 4] = ["POST", "GET", "DELETE", "OPTIONS"];
const URIS: [&str; 4] = ["/mcp", "/sse", "/messages?session_id=abc", "/"];
const STATUSES: [u16; 8] = [200, 202, 400, 404, 500, 503, 204, 101];
const ENDS: [BodyEnd; 5] = [
    BodyEnd::Complete,
    BodyEnd::Fin,
    BodyEnd::Rst,
    BodyEnd::Gap,
    BodyEnd::CaptureEnd,
];

fn pick<T: Copy>(list: &[T], sel: u8) -> Option<T> {
    list.get(usize::from(sel) % list.len().max(1)).copied()
}

/// HTTP events as the HTTP stage or the HAR reader would produce them, in any
/// order (the MCP analyzer must cope): records `[op u8][conn u8][depth u8][time step i16 ms]...`;
/// op % 5: 0 request `[method][uri][header mask][session][len u16][body]`,
/// 1 response head `[status][header mask][session]`, 2 response body `[len u16][data]`,
/// 3 response end `[end]`, 4 no response `[end]`.
/// Header mask bits: 0 JSON content type, 1 SSE content type, 2 `Mcp-Session-Id`,
/// 3 `Mcp-Protocol-Version`, 4 `Last-Event-ID`, 5 incomplete request, 6 `Accept`.
pub fn http_events(data: &[u8]) -> Vec<HttpEvent> {
    let mut input = Input::new(data);
    let mut out = Vec::new();
    let conns: Vec<Arc<ConnInfo>> = (0..4u64)
        .map(|c| {
            Arc::new(ConnInfo {
                conn: c,
                tcp_stream: Some(c),
                client_addr: endpoint(c as u8).to_string().into(),
                server_addr: SERVER.to_string().into(),
                capture: "fuzz".into(),
                tls_version: None,
                tls_sni: None,
            })
        })
        .collect();
    let mut ts_us: i64 = 1_700_000_000_000_000;
    while !input.is_empty() {
        let op = input.u8();
        let sel = usize::from(input.u8()) % conns.len();
        let conn = Arc::clone(&conns[sel]);
        let depth = u32::from(input.u8() % 8) + 1;
        let step = input.u16() as i16;
        ts_us = ts_us.saturating_add(i64::from(step).saturating_mul(1000));
        let xref = ExchangeRef { conn, depth };
        let headers = |mask: u8, session: u8, response: bool| {
            let mut h = Vec::new();
            if mask & 1 != 0 {
                h.push(("Content-Type".to_string(), "application/json".to_string()));
            }
            if mask & 2 != 0 {
                h.push(("Content-Type".to_string(), "text/event-stream".to_string()));
            }
            if mask & 4 != 0 {
                h.push(("Mcp-Session-Id".to_string(), format!("s{}", session % 4)));
            }
            if mask & 8 != 0 {
                h.push(("Mcp-Protocol-Version".to_string(), "2025-06-18".to_string()));
            }
            if mask & 16 != 0 && !response {
                h.push(("Last-Event-ID".to_string(), format!("{}", session)));
            }
            if mask & 64 != 0 && !response {
                h.push((
                    "Accept".to_string(),
                    "application/json, text/event-stream".to_string(),
                ));
            }
            Headers::from(h)
        };
        let ev = match op % 5 {
            0 => {
                let method = pick(&METHODS, input.u8()).unwrap_or("POST");
                let uri = pick(&URIS, input.u8()).unwrap_or("/mcp");
                let mask = input.u8();
                let session = input.u8();
                let body = input.bytes16().to_vec();
                HttpEvent::Request(HttpRequest {
                    xref,
                    h2_stream: None,
                    ts_first_us: ts_us,
                    ts_last_us: ts_us,
                    frame: 0,
                    head: RequestHead {
                        method: method.into(),
                        uri: uri.into(),
                        version: "1.1".into(),
                        headers: headers(mask, session, false),
                    },
                    wire_len: body.len() as u64,
                    body,
                    complete: mask & 32 == 0,
                    anomalies: Vec::new(),
                })
            }
            1 => {
                let status = pick(&STATUSES, input.u8()).unwrap_or(200);
                let mask = input.u8();
                let session = input.u8();
                HttpEvent::ResponseHead {
                    xref,
                    ts_us,
                    frame: 0,
                    head: ResponseHead {
                        status,
                        reason: Default::default(),
                        version: "1.1".into(),
                        headers: headers(mask, session, true),
                    },
                }
            }
            2 => HttpEvent::ResponseBody {
                xref,
                ts_us,
                data: input.bytes16().to_vec(),
            },
            3 => {
                let end = pick(&ENDS, input.u8()).unwrap_or(BodyEnd::Complete);
                HttpEvent::ResponseEnd {
                    xref,
                    ts_us,
                    end,
                    wire_len: 0,
                    decoded_len: 0,
                    anomalies: Vec::new(),
                    // http/mod.rs: always false when the body completed.
                    client_closed: op & 0x80 != 0 && end != BodyEnd::Complete,
                }
            }
            _ => HttpEvent::NoResponse {
                xref,
                ts_us,
                end: pick(&ENDS, input.u8()).unwrap_or(BodyEnd::Complete),
                client_closed: op & 0x80 != 0,
            },
        };
        out.push(ev);
    }
    out
}

/// Where a fuzz target may write its temporary file: one path per process,
/// in memory when `/dev/shm` exists.
pub fn temp_path(name: &str) -> std::path::PathBuf {
    let dir = std::path::Path::new("/dev/shm");
    let dir = if dir.is_dir() {
        dir.to_path_buf()
    } else {
        std::env::temp_dir()
    };
    dir.join(format!("mcp-trace-fuzz-{}-{name}", std::process::id()))
}

/// The TLS stage's input: `[flags u8][key log length u16][key log text][conversation]`,
/// the conversation in the [`stream_events`] format.
/// flags: bit0 also log secrets made up from the input for every ClientHello random in the
/// client's data (so arbitrary bytes reach the decryption paths, and fail them); bit1 those
/// secrets are 48 bytes (SHA-384 suites, TLS 1.2 master secrets) rather than 32; bit2 the key
/// log arrives as a pcapng Decryption Secrets Block instead of a file.
pub struct TlsInput {
    pub keylog_text: Vec<u8>,
    pub as_capture_secrets: bool,
    pub events: Vec<StreamEvent>,
    /// The secrets made up by bit0, in hex (they must never appear in any output).
    pub made_up_secrets: Vec<String>,
}

/// Key log labels a made-up line is written for.
const TLS_LABELS: [&str; 6] = [
    "CLIENT_RANDOM",
    "CLIENT_EARLY_TRAFFIC_SECRET",
    "CLIENT_HANDSHAKE_TRAFFIC_SECRET",
    "SERVER_HANDSHAKE_TRAFFIC_SECRET",
    "CLIENT_TRAFFIC_SECRET_0",
    "SERVER_TRAFFIC_SECRET_0",
];

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

/// Client randoms of ClientHellos at the start of a record in `bytes`
/// (`16 03 0x len len 01 len len len 03 0x random[32]`).
fn client_hello_randoms(bytes: &[u8]) -> Vec<[u8; 32]> {
    let mut out = Vec::new();
    for at in 0..bytes.len().saturating_sub(43) {
        let Some(w) = bytes.get(at..at + 43) else {
            break;
        };
        if w[0] == 0x16 && w[1] == 3 && w[5] == 1 && w[9] == 3 {
            let mut random = [0u8; 32];
            random.copy_from_slice(&w[11..43]);
            out.push(random);
        }
    }
    out
}

pub fn tls_input(data: &[u8]) -> TlsInput {
    let mut input = Input::new(data);
    let flags = input.u8();
    let mut keylog_text = input.bytes16().to_vec();
    let events = stream_events(input.rest());
    let mut made_up_secrets = Vec::new();
    if flags & 1 != 0 {
        let len = if flags & 2 != 0 { 48 } else { 32 };
        for ev in &events {
            let StreamEventKind::Data {
                side: Side::Client,
                bytes,
            } = &ev.kind
            else {
                continue;
            };
            for random in client_hello_randoms(bytes) {
                for (i, label) in TLS_LABELS.iter().enumerate() {
                    // The master secret is always 48 bytes; distinct secrets per label.
                    let n = if i == 0 { 48 } else { len };
                    let secret: Vec<u8> = (0..n)
                        .map(|k| random[k % 32] ^ (i as u8).wrapping_mul(37) ^ flags)
                        .collect();
                    let secret = hex(&secret);
                    keylog_text.extend_from_slice(
                        format!("\n{label} {} {secret}\n", hex(&random)).as_bytes(),
                    );
                    made_up_secrets.push(secret);
                }
            }
        }
    }
    TlsInput {
        keylog_text,
        as_capture_secrets: flags & 4 != 0,
        events,
        made_up_secrets,
    }
}
