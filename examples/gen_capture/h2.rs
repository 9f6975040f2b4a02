//! `--h2c`: the generator's MCP traffic as HTTP/2 with prior knowledge (RFC 9113
//! section 3.3), many clients per connection.
//!
//! The HTTP/1.1 generator still runs unchanged underneath (same draws, same
//! schedule, same stopping point), so the h2c capture carries exactly the
//! requests, sessions and outcomes of the HTTP/1.1 capture of the same seed and
//! size. Its HTTP/1.1 packets are not written: each message it sends is
//! translated into an HTTP/2 one (pseudo-headers, no chunking, `connection` and
//! `transfer-encoding` dropped) on the stream of that exchange, on one TCP
//! connection shared by [`CLIENTS_PER_CONN`] client slots, like a gateway's.
//! A message's frames (HEADERS, then DATA frames of 1-16 KiB, END_STREAM on the
//! last) go out one per packet its HTTP/1.1 twin would have taken, so streams of
//! different clients interleave frame by frame. Header blocks come from a real
//! HPACK encoder ([`Encoder`]): static-table indexing, literals with incremental
//! indexing into a 4096-byte dynamic table with eviction, and literals without
//! indexing for `content-length`. Each side opens with SETTINGS and a
//! connection WINDOW_UPDATE and refills the window as DATA arrives; the client
//! closes with GOAWAY. Segmentation, padding and duplicated segments draw from a
//! generator of their own.

use super::tcp::{ACK, FIN, PSH, SYN, frame};
use super::{Dir, MSS, Rng, SERVER_IP, SERVER_PORT};
use std::collections::{HashMap, VecDeque};

/// Client slots sharing one HTTP/2 connection.
pub const CLIENTS_PER_CONN: u32 = 8;
/// Seeds segmentation and framing choices apart from the traffic's generator.
pub const H2_SEED_SALT: u64 = 0x6832_6370_7269_6f72;
/// HPACK dynamic table size both sides use (the RFC 9113 default).
const TABLE_SIZE: usize = 4096;
const PREFACE: &[u8] = b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n";
/// SETTINGS_INITIAL_WINDOW_SIZE both sides announce (no stream body comes near it).
const STREAM_WINDOW: u32 = 1 << 20;
/// Connection window each side opens with; refilled once half of it is used.
const CONN_WINDOW: u32 = 1 << 24;
const MAX_FRAME: usize = 16_384;

const DATA: u8 = 0;
const HEADERS: u8 = 1;
const SETTINGS: u8 = 4;
const GOAWAY: u8 = 7;
const WINDOW_UPDATE: u8 = 8;
const CONTINUATION: u8 = 9;
const END_STREAM: u8 = 0x1;
const END_HEADERS: u8 = 0x4;
const PADDED: u8 = 0x8;
/// Chance (per mille) that a DATA frame is padded / a segment is sent twice.
const PADDED_PER_MILLE: u64 = 20;
const DUPLICATE_PER_MILLE: u64 = 20;

/// RFC 7541 Appendix A.
pub const STATIC_TABLE: [(&str, &str); 61] = [
    (":authority", ""),
    (":method", "GET"),
    (":method", "POST"),
    (":path", "/"),
    (":path", "/index.html"),
    (":scheme", "http"),
    (":scheme", "https"),
    (":status", "200"),
    (":status", "204"),
    (":status", "206"),
    (":status", "304"),
    (":status", "400"),
    (":status", "404"),
    (":status", "500"),
    ("accept-charset", ""),
    ("accept-encoding", "gzip, deflate"),
    ("accept-language", ""),
    ("accept-ranges", ""),
    ("accept", ""),
    ("access-control-allow-origin", ""),
    ("age", ""),
    ("allow", ""),
    ("authorization", ""),
    ("cache-control", ""),
    ("content-disposition", ""),
    ("content-encoding", ""),
    ("content-language", ""),
    ("content-length", ""),
    ("content-location", ""),
    ("content-range", ""),
    ("content-type", ""),
    ("cookie", ""),
    ("date", ""),
    ("etag", ""),
    ("expect", ""),
    ("expires", ""),
    ("from", ""),
    ("host", ""),
    ("if-match", ""),
    ("if-modified-since", ""),
    ("if-none-match", ""),
    ("if-range", ""),
    ("if-unmodified-since", ""),
    ("last-modified", ""),
    ("link", ""),
    ("location", ""),
    ("max-forwards", ""),
    ("proxy-authenticate", ""),
    ("proxy-authorization", ""),
    ("range", ""),
    ("referer", ""),
    ("refresh", ""),
    ("retry-after", ""),
    ("server", ""),
    ("set-cookie", ""),
    ("strict-transport-security", ""),
    ("transfer-encoding", ""),
    ("user-agent", ""),
    ("vary", ""),
    ("via", ""),
    ("www-authenticate", ""),
];

pub type Header = (Vec<u8>, Vec<u8>);

/// HPACK encoder of one direction of one connection (RFC 7541).
pub struct Encoder {
    /// Newest first: index 62 is `table[0]`.
    table: VecDeque<Header>,
    size: usize,
    max: usize,
}

/// An integer with an N-bit prefix (RFC 7541 section 5.1); `flags` fills the bits above it.
fn integer(out: &mut Vec<u8>, prefix_bits: u32, flags: u8, mut value: usize) {
    let limit = (1usize << prefix_bits) - 1;
    if value < limit {
        out.push(flags | value as u8);
        return;
    }
    out.push(flags | limit as u8);
    value -= limit;
    while value >= 128 {
        out.push((value % 128) as u8 | 0x80);
        value /= 128;
    }
    out.push(value as u8);
}

/// A string literal without Huffman coding (section 5.2).
fn string(out: &mut Vec<u8>, s: &[u8]) {
    integer(out, 7, 0, s.len());
    out.extend_from_slice(s);
}

impl Encoder {
    pub fn new() -> Encoder {
        Encoder {
            table: VecDeque::new(),
            size: 0,
            max: TABLE_SIZE,
        }
    }

    /// (index of the exact pair, index of the name alone), 1-based across both tables.
    fn find(&self, name: &[u8], value: &[u8]) -> (Option<usize>, Option<usize>) {
        let mut by_name = None;
        for (i, (n, v)) in STATIC_TABLE.iter().enumerate() {
            if n.as_bytes() == name {
                if v.as_bytes() == value {
                    return (Some(i + 1), Some(i + 1));
                }
                by_name.get_or_insert(i + 1);
            }
        }
        for (i, (n, v)) in self.table.iter().enumerate() {
            if n == name {
                if v == value {
                    return (Some(STATIC_TABLE.len() + 1 + i), by_name);
                }
                by_name.get_or_insert(STATIC_TABLE.len() + 1 + i);
            }
        }
        (None, by_name)
    }

    fn insert(&mut self, name: &[u8], value: &[u8]) {
        let entry = name.len() + value.len() + 32;
        while self.size + entry > self.max {
            let Some((n, v)) = self.table.pop_back() else {
                break;
            };
            self.size -= n.len() + v.len() + 32;
        }
        if entry <= self.max {
            self.table.push_front((name.to_vec(), value.to_vec()));
            self.size += entry;
        }
    }

    /// Appends the header block of `headers`.
    pub fn encode(&mut self, headers: &[Header], out: &mut Vec<u8>) {
        for (name, value) in headers {
            match self.find(name, value) {
                (Some(i), _) => integer(out, 7, 0x80, i),
                // Values that change with every message are not worth a table entry.
                (None, name_index) if name.as_slice() == b"content-length" => {
                    match name_index {
                        Some(i) => integer(out, 4, 0x00, i),
                        None => {
                            out.push(0x00);
                            string(out, name);
                        }
                    }
                    string(out, value);
                }
                (None, name_index) => {
                    match name_index {
                        Some(i) => integer(out, 6, 0x40, i),
                        None => {
                            out.push(0x40);
                            string(out, name);
                        }
                    }
                    string(out, value);
                    self.insert(name, value);
                }
            }
        }
    }
}

/// One HTTP/2 message part made from one HTTP/1.1 write.
pub struct Piece {
    from_client: bool,
    headers: Option<Vec<Header>>,
    data: Vec<u8>,
    end: bool,
}

/// Per client slot: its HTTP/1.1 packets popped so far, the writes waiting to be
/// translated at their first packet, and the state of a chunked response.
#[derive(Default)]
pub struct SlotState {
    popped: u64,
    /// (index of the packet, the piece it starts or None, whether it ends a write)
    marks: VecDeque<(u64, Option<Piece>, bool)>,
    chunked_open: bool,
}

impl SlotState {
    /// Records that the write that produced packets `first..end` carried `data`.
    pub fn wrote(&mut self, first: u64, end: u64, from_client: bool, data: &[u8]) {
        let piece = self.translate(from_client, data);
        if end == first {
            return;
        }
        self.marks.push_back((first, Some(piece), end - 1 == first));
        if end - 1 > first {
            self.marks.push_back((end - 1, None, true));
        }
    }

    /// The next packet of this slot is popped: what it starts and whether it ends a write.
    pub fn pop(&mut self) -> (Option<Piece>, bool) {
        let index = self.popped;
        self.popped += 1;
        match self.marks.front() {
            Some((at, _, _)) if *at == index => {
                let (_, piece, flush) = self.marks.pop_front().unwrap_or((0, None, false));
                (piece, flush)
            }
            _ => (None, false),
        }
    }

    fn translate(&mut self, from_client: bool, data: &[u8]) -> Piece {
        if from_client || data.starts_with(b"HTTP/1.1 ") {
            let head_end = data
                .windows(4)
                .position(|w| w == b"\r\n\r\n")
                .map_or(data.len(), |p| p + 4);
            let head = &data[..head_end];
            let body = &data[head_end.min(data.len())..];
            let mut lines = head
                .split(|&b| b == b'\n')
                .map(|l| l.strip_suffix(b"\r").unwrap_or(l));
            let first = lines.next().unwrap_or_default();
            let mut words = first.split(|&b| b == b' ');
            let mut headers: Vec<Header> = Vec::new();
            let mut fields = Vec::new();
            let mut chunked = false;
            for line in lines.filter(|l| !l.is_empty()) {
                let colon = line.iter().position(|&b| b == b':').unwrap_or(line.len());
                let name = line[..colon].to_ascii_lowercase();
                let value = line
                    .get(colon + 1..)
                    .unwrap_or_default()
                    .trim_ascii()
                    .to_vec();
                match name.as_slice() {
                    b"transfer-encoding" => chunked = value == b"chunked",
                    b"connection" | b"keep-alive" | b"host" => {}
                    _ => fields.push((name, value)),
                }
            }
            if from_client {
                let method = words.next().unwrap_or_default().to_vec();
                let path = words.next().unwrap_or_default().to_vec();
                headers.push((b":method".to_vec(), method));
                headers.push((b":scheme".to_vec(), b"http".to_vec()));
                let authority = format!("127.0.0.1:{SERVER_PORT}").into_bytes();
                headers.push((b":authority".to_vec(), authority));
                headers.push((b":path".to_vec(), path));
            } else {
                let status = words.nth(1).unwrap_or_default().to_vec();
                headers.push((b":status".to_vec(), status));
            }
            headers.extend(fields);
            let (data, end) = if chunked {
                self.chunked_open = true;
                self.dechunk(body)
            } else {
                (body.to_vec(), true)
            };
            return Piece {
                from_client,
                headers: Some(headers),
                data,
                end,
            };
        }
        // The rest of a chunked response (SSE events written as they happen).
        let (data, end) = self.dechunk(data);
        Piece {
            from_client,
            headers: None,
            data,
            end,
        }
    }

    /// The data of whole chunks; true when the last chunk was among them.
    fn dechunk(&mut self, mut bytes: &[u8]) -> (Vec<u8>, bool) {
        let mut out = Vec::with_capacity(bytes.len());
        while let Some(eol) = bytes.windows(2).position(|w| w == b"\r\n") {
            let size = std::str::from_utf8(&bytes[..eol])
                .ok()
                .and_then(|s| usize::from_str_radix(s, 16).ok())
                .unwrap_or(0);
            let start = eol + 2;
            if size == 0 {
                self.chunked_open = false;
                return (out, true);
            }
            let end = (start + size).min(bytes.len());
            out.extend_from_slice(&bytes[start..end]);
            bytes = bytes.get(end + 2..).unwrap_or_default();
        }
        (out, !self.chunked_open)
    }
}

enum Pending {
    Headers {
        stream: u32,
        headers: Vec<Header>,
        end: bool,
    },
    Data {
        stream: u32,
        bytes: Vec<u8>,
        end: bool,
    },
}

/// One HTTP/2 connection shared by a group of client slots.
struct H2Conn {
    client: Dir,
    server: Dir,
    started: bool,
    /// [client's encoder, server's encoder]
    encoders: [Encoder; 2],
    next_stream: u32,
    stream_of: HashMap<u32, u32>,
    /// Frames of each slot's current message not yet sent, and from which side.
    pending: HashMap<u32, (bool, VecDeque<Pending>)>,
    /// DATA bytes received by [client, server] since their last WINDOW_UPDATE.
    unacked: [usize; 2],
}

/// Writes the h2c packets: fed every HTTP/1.1 packet the generator pops.
pub struct Writer {
    conns: Vec<H2Conn>,
    rng: Rng,
    last_ts: u64,
    /// Packets ready for the capture: (time, frame).
    pub out: Vec<(u64, Vec<u8>)>,
    pub streams: u64,
    pub header_blocks: u64,
    pub connections: u64,
}

pub fn frame_header(out: &mut Vec<u8>, len: usize, ty: u8, flags: u8, stream: u32) {
    out.extend_from_slice(&(len as u32).to_be_bytes()[1..]);
    out.push(ty);
    out.push(flags);
    out.extend_from_slice(&stream.to_be_bytes());
}

fn settings(out: &mut Vec<u8>, params: &[(u16, u32)]) {
    frame_header(out, params.len() * 6, SETTINGS, 0, 0);
    for (id, v) in params {
        out.extend_from_slice(&id.to_be_bytes());
        out.extend_from_slice(&v.to_be_bytes());
    }
}

fn window_update(out: &mut Vec<u8>, stream: u32, increment: u32) {
    frame_header(out, 4, WINDOW_UPDATE, 0, stream);
    out.extend_from_slice(&increment.to_be_bytes());
}

impl Writer {
    pub fn new(seed: u64, slots: usize) -> Writer {
        let mut rng = Rng(seed ^ H2_SEED_SALT);
        let groups = slots.div_ceil(CLIENTS_PER_CONN as usize);
        let conns = (0..groups)
            .map(|g| H2Conn {
                client: Dir {
                    ip: [127, 0, 1, 2 + (g % 250) as u8],
                    port: 40_000 + g as u16,
                    seq: rng.next() as u32,
                    shift: 0,
                },
                server: Dir {
                    ip: SERVER_IP,
                    port: SERVER_PORT,
                    seq: rng.next() as u32,
                    shift: 0,
                },
                started: false,
                encoders: [Encoder::new(), Encoder::new()],
                next_stream: 1,
                stream_of: HashMap::new(),
                pending: HashMap::new(),
                unacked: [0, 0],
            })
            .collect();
        Writer {
            conns,
            rng,
            last_ts: 0,
            out: Vec::new(),
            streams: 0,
            header_blocks: 0,
            connections: 0,
        }
    }

    /// A packet of `slot`'s HTTP/1.1 twin went out at `ts`: start the message it
    /// began, send the slot's next frame, or all of them when it ended a write.
    pub fn packet(&mut self, slot: u32, ts: u64, piece: Option<Piece>, flush: bool) {
        let g = (slot / CLIENTS_PER_CONN) as usize;
        self.last_ts = self.last_ts.max(ts);
        if let Some(p) = piece {
            if !self.conns[g].started {
                self.open(g);
            }
            self.queue(g, slot, p);
        }
        let n = if flush { usize::MAX } else { 1 };
        for _ in 0..n {
            let Some((from_client, frame, refill)) = self.next_frame(g, slot) else {
                break;
            };
            self.emit(g, from_client, &frame);
            if let Some(wu) = refill {
                self.emit(g, !from_client, &wu);
            }
        }
    }

    fn queue(&mut self, g: usize, slot: u32, p: Piece) {
        let c = &mut self.conns[g];
        let stream = if p.from_client && p.headers.is_some() {
            let s = c.next_stream;
            c.next_stream += 2;
            c.stream_of.insert(slot, s);
            self.streams += 1;
            s
        } else {
            c.stream_of.get(&slot).copied().unwrap_or(1)
        };
        let mut frames = VecDeque::new();
        if let Some(headers) = p.headers {
            frames.push_back(Pending::Headers {
                stream,
                headers,
                end: p.end && p.data.is_empty(),
            });
        }
        let mut rest = p.data.as_slice();
        while !rest.is_empty() {
            // leaves room for the padding a DATA frame may get (at most 8 bytes)
            let n = (self.rng.range(1024, MAX_FRAME as u64 - 8) as usize).min(rest.len());
            let (a, b) = rest.split_at(n);
            frames.push_back(Pending::Data {
                stream,
                bytes: a.to_vec(),
                end: p.end && b.is_empty(),
            });
            rest = b;
        }
        if frames.is_empty() && p.end {
            frames.push_back(Pending::Data {
                stream,
                bytes: Vec::new(),
                end: true,
            });
        }
        let entry = self.conns[g]
            .pending
            .entry(slot)
            .or_insert_with(|| (p.from_client, VecDeque::new()));
        entry.0 = p.from_client;
        entry.1.extend(frames);
    }

    /// The slot's next frame, its side, and the receiver's WINDOW_UPDATE it calls for.
    fn next_frame(&mut self, g: usize, slot: u32) -> Option<(bool, Vec<u8>, Option<Vec<u8>>)> {
        let padded = self.rng.per_mille(PADDED_PER_MILLE);
        let c = &mut self.conns[g];
        let (from_client, q) = c.pending.get_mut(&slot)?;
        let from_client = *from_client;
        let mut out = Vec::new();
        let mut refill = None;
        match q.pop_front()? {
            Pending::Headers {
                stream,
                headers,
                end,
            } => {
                let mut block = Vec::new();
                c.encoders[usize::from(!from_client)].encode(&headers, &mut block);
                self.header_blocks += 1;
                let mut parts = block.chunks(MAX_FRAME).peekable();
                let mut ty = HEADERS;
                let first_flags = if end { END_STREAM } else { 0 };
                let mut flags = first_flags;
                while let Some(part) = parts.next() {
                    let last = parts.peek().is_none();
                    frame_header(
                        &mut out,
                        part.len(),
                        ty,
                        flags | if last { END_HEADERS } else { 0 },
                        stream,
                    );
                    out.extend_from_slice(part);
                    ty = CONTINUATION;
                    flags = 0;
                }
                if block.is_empty() {
                    frame_header(&mut out, 0, HEADERS, first_flags | END_HEADERS, stream);
                }
            }
            Pending::Data { stream, bytes, end } => {
                let flags = if end { END_STREAM } else { 0 };
                if padded && !bytes.is_empty() {
                    let pad = (bytes.len() % 7) + 1;
                    frame_header(
                        &mut out,
                        1 + bytes.len() + pad,
                        DATA,
                        flags | PADDED,
                        stream,
                    );
                    out.push(pad as u8);
                    out.extend_from_slice(&bytes);
                    out.resize(out.len() + pad, 0);
                } else {
                    frame_header(&mut out, bytes.len(), DATA, flags, stream);
                    out.extend_from_slice(&bytes);
                }
                // The receiver refills the connection window once half of it is used.
                let receiver = usize::from(from_client);
                c.unacked[receiver] += bytes.len();
                if c.unacked[receiver] >= CONN_WINDOW as usize / 2 {
                    let mut wu = Vec::new();
                    window_update(&mut wu, 0, c.unacked[receiver] as u32);
                    c.unacked[receiver] = 0;
                    refill = Some(wu);
                }
            }
        }
        Some((from_client, out, refill))
    }

    fn open(&mut self, g: usize) {
        self.conns[g].started = true;
        self.connections += 1;
        self.control(g, true, SYN);
        self.control(g, false, SYN | ACK);
        self.control(g, true, ACK);
        let mut c = PREFACE.to_vec();
        // ENABLE_PUSH 0, INITIAL_WINDOW_SIZE, HEADER_TABLE_SIZE
        settings(
            &mut c,
            &[(2, 0), (4, STREAM_WINDOW), (1, TABLE_SIZE as u32)],
        );
        window_update(&mut c, 0, CONN_WINDOW - 65_535);
        self.emit(g, true, &c);
        let mut s = Vec::new();
        // MAX_CONCURRENT_STREAMS, INITIAL_WINDOW_SIZE
        settings(&mut s, &[(3, 100), (4, STREAM_WINDOW)]);
        window_update(&mut s, 0, CONN_WINDOW - 65_535);
        frame_header(&mut s, 0, SETTINGS, 0x1, 0);
        self.emit(g, false, &s);
        let mut ack = Vec::new();
        frame_header(&mut ack, 0, SETTINGS, 0x1, 0);
        self.emit(g, true, &ack);
    }

    /// GOAWAY from each client and both FINs, after everything else.
    pub fn finish(&mut self) {
        for g in 0..self.conns.len() {
            if !self.conns[g].started {
                continue;
            }
            let mut b = Vec::new();
            frame_header(&mut b, 8, GOAWAY, 0, 0);
            b.extend_from_slice(&0u32.to_be_bytes()); // the client pushes nothing
            b.extend_from_slice(&0u32.to_be_bytes()); // NO_ERROR
            self.emit(g, true, &b);
            self.control(g, true, FIN | ACK);
            self.control(g, false, FIN | ACK);
            self.control(g, true, ACK);
        }
    }

    fn stamp(&mut self) -> u64 {
        let ts = self.last_ts;
        self.last_ts += 1;
        ts
    }

    fn control(&mut self, g: usize, from_client: bool, flags: u8) {
        let ts = self.stamp();
        let c = &mut self.conns[g];
        let (src, dst) = if from_client {
            (&c.client, &c.server)
        } else {
            (&c.server, &c.client)
        };
        let ack = if flags & ACK != 0 { dst.seq } else { 0 };
        self.out
            .push((ts, frame(src, dst, src.seq, ack, flags, &[], MSS)));
        let src = if from_client {
            &mut c.client
        } else {
            &mut c.server
        };
        if flags & (SYN | FIN) != 0 {
            src.seq = src.seq.wrapping_add(1);
        }
    }

    /// `bytes` from one side as TCP segments, each ACKed by the other side every
    /// second segment and at the end; a few segments are sent twice.
    fn emit(&mut self, g: usize, from_client: bool, bytes: &[u8]) {
        let chunks: Vec<&[u8]> = bytes.chunks(MSS).collect();
        for (i, chunk) in chunks.iter().enumerate() {
            let last = i + 1 == chunks.len();
            let dup = self.rng.per_mille(DUPLICATE_PER_MILLE);
            let ts = self.stamp();
            let c = &mut self.conns[g];
            let (src, dst) = if from_client {
                (&mut c.client, &mut c.server)
            } else {
                (&mut c.server, &mut c.client)
            };
            let flags = if last { ACK | PSH } else { ACK };
            let f = frame(src, dst, src.seq, dst.seq, flags, chunk, MSS);
            src.seq = src.seq.wrapping_add(chunk.len() as u32);
            if dup {
                self.out.push((ts, f.clone()));
            }
            self.out.push((ts, f));
            if i % 2 == 1 || last {
                let a = frame(dst, src, dst.seq, src.seq, ACK, &[], MSS);
                let ts = self.stamp();
                self.out.push((ts, a));
            }
        }
    }
}

impl super::Conn {
    /// `Conn::send`, and with `--h2c` a note of which packets carried which message.
    pub fn send_msg(&mut self, rng: &mut Rng, from_client: bool, data: &[u8]) {
        let first = self.h2.as_ref().map(|s| s.popped + self.queue.len() as u64);
        self.send(rng, from_client, data);
        if let (Some(first), Some(state)) = (first, self.h2.as_mut()) {
            let end = state.popped + self.queue.len() as u64;
            state.wrote(first, end, from_client, data);
        }
    }
}
