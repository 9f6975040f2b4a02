//! HTTP/2 frames (RFC 9113 §4, §6) read from one direction's bytes, which arrive in any
//! split. DATA payloads are streamed (padding removed) and never buffered; other frames are
//! collected up to a cap per type, so no frame length in the 24-bit field makes a reader
//! hold more than that cap.

/// Bytes of a frame header.
pub const FRAME_HEADER_LEN: usize = 9;

/// RFC 9113 §6.5.2: the initial SETTINGS_MAX_FRAME_SIZE.
pub const DEFAULT_MAX_FRAME_SIZE: u32 = 16_384;

/// Frame types (RFC 9113 §6).
pub mod kind {
    pub const DATA: u8 = 0x0;
    pub const HEADERS: u8 = 0x1;
    pub const PRIORITY: u8 = 0x2;
    pub const RST_STREAM: u8 = 0x3;
    pub const SETTINGS: u8 = 0x4;
    pub const PUSH_PROMISE: u8 = 0x5;
    pub const PING: u8 = 0x6;
    pub const GOAWAY: u8 = 0x7;
    pub const WINDOW_UPDATE: u8 = 0x8;
    pub const CONTINUATION: u8 = 0x9;
}

/// Frame flags (RFC 9113 §6).
pub mod flag {
    pub const END_STREAM: u8 = 0x1;
    /// SETTINGS and PING.
    pub const ACK: u8 = 0x1;
    pub const END_HEADERS: u8 = 0x4;
    pub const PADDED: u8 = 0x8;
    pub const PRIORITY: u8 = 0x20;
}

/// Most SETTINGS payload bytes read from one frame (64 settings); the rest is skipped.
const SETTINGS_COLLECT_LIMIT: usize = 6 * 64;
/// GOAWAY: last stream id and error code; the debug data is not read.
const GOAWAY_COLLECT_LIMIT: usize = 8;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FrameHeader {
    pub len: u32,
    pub kind: u8,
    pub flags: u8,
    /// Stream identifier (the reserved bit cleared).
    pub stream: u32,
}

impl FrameHeader {
    pub fn parse(b: &[u8; FRAME_HEADER_LEN]) -> FrameHeader {
        FrameHeader {
            len: u32::from_be_bytes([0, b[0], b[1], b[2]]),
            kind: b[3],
            flags: b[4],
            stream: u32::from_be_bytes([b[5], b[6], b[7], b[8]]) & 0x7fff_ffff,
        }
    }

    pub fn has(&self, flag: u8) -> bool {
        self.flags & flag != 0
    }
}

/// What the reader found in the input it was given.
#[derive(Debug, PartialEq, Eq)]
pub enum Piece {
    /// A whole non-DATA frame. `payload` holds at most the collect cap of its type
    /// (`truncated`: the rest was skipped). `ts_us`/`frame`: where its first byte arrived.
    Frame {
        hdr: FrameHeader,
        payload: Vec<u8>,
        truncated: bool,
        ts_us: i64,
        frame: u64,
    },
    /// DATA payload bytes (padding removed): `range` of the input given to
    /// [`FrameReader::next`]. `last`: the frame ends with them. A frame with no data
    /// gives one piece with an empty range and `last`.
    Data {
        hdr: FrameHeader,
        range: std::ops::Range<usize>,
        last: bool,
        /// The frame's padding length was larger than its payload.
        bad_padding: bool,
    },
}

#[derive(Debug)]
enum State {
    /// Reading a frame header (`head_len` bytes of it so far).
    Header,
    /// Inside a DATA frame.
    Data {
        hdr: FrameHeader,
        /// The pad length byte is still to come.
        need_pad_len: bool,
        data_left: u32,
        pad_left: u32,
        bad_padding: bool,
    },
    /// Inside another frame: collecting up to `cap` bytes of it.
    Collect {
        hdr: FrameHeader,
        left: u32,
        cap: usize,
    },
}

/// One direction's frame reader.
#[derive(Debug)]
pub struct FrameReader {
    state: State,
    head: [u8; FRAME_HEADER_LEN],
    head_len: usize,
    payload: Vec<u8>,
    /// Where the frame being read began.
    start: (i64, u64),
    /// Cap on collected HEADERS / CONTINUATION / PUSH_PROMISE payload bytes.
    header_cap: usize,
}

impl FrameReader {
    /// `header_cap`: most bytes kept of one header-carrying frame (the header block limit).
    pub fn new(header_cap: usize) -> FrameReader {
        FrameReader {
            state: State::Header,
            head: [0; FRAME_HEADER_LEN],
            head_len: 0,
            payload: Vec::new(),
            start: (0, 0),
            header_cap,
        }
    }

    /// The reader is between frames (nothing of the next one read yet).
    pub fn at_boundary(&self) -> bool {
        matches!(self.state, State::Header) && self.head_len == 0
    }

    /// The time and frame where the frame being read began, if one has begun.
    pub fn frame_started(&self) -> Option<(i64, u64)> {
        (!self.at_boundary()).then_some(self.start)
    }

    fn cap_of(&self, hdr: &FrameHeader) -> usize {
        let len = hdr.len as usize;
        let cap = match hdr.kind {
            kind::HEADERS | kind::CONTINUATION | kind::PUSH_PROMISE => self.header_cap,
            kind::SETTINGS => SETTINGS_COLLECT_LIMIT,
            kind::GOAWAY => GOAWAY_COLLECT_LIMIT,
            kind::PRIORITY => 5,
            kind::RST_STREAM | kind::WINDOW_UPDATE => 4,
            kind::PING => 8,
            _ => 0,
        };
        cap.min(len)
    }

    /// Reads from `input` until one piece is found or the input is used up. Returns the
    /// bytes consumed and the piece, if any; call again with the rest.
    pub fn next(&mut self, input: &[u8], ts_us: i64, frame: u64) -> (usize, Option<Piece>) {
        let mut at = 0usize;
        loop {
            match &mut self.state {
                State::Header => {
                    if self.head_len == 0 {
                        if at >= input.len() {
                            return (at, None);
                        }
                        self.start = (ts_us, frame);
                    }
                    let want = FRAME_HEADER_LEN.saturating_sub(self.head_len);
                    let rest = input.get(at..).unwrap_or_default();
                    let take = want.min(rest.len());
                    if let (Some(dst), Some(src)) = (
                        self.head
                            .get_mut(self.head_len..self.head_len.saturating_add(take)),
                        rest.get(..take),
                    ) {
                        dst.copy_from_slice(src);
                    }
                    self.head_len = self.head_len.saturating_add(take);
                    at = at.saturating_add(take);
                    if self.head_len < FRAME_HEADER_LEN {
                        return (at, None);
                    }
                    self.head_len = 0;
                    let hdr = FrameHeader::parse(&self.head);
                    if hdr.kind == kind::DATA {
                        let padded = hdr.has(flag::PADDED);
                        self.state = State::Data {
                            hdr,
                            need_pad_len: padded && hdr.len > 0,
                            data_left: if padded { 0 } else { hdr.len },
                            pad_left: 0,
                            bad_padding: padded && hdr.len == 0,
                        };
                        if !padded && hdr.len == 0 {
                            self.state = State::Header;
                            return (
                                at,
                                Some(Piece::Data {
                                    hdr,
                                    range: at..at,
                                    last: true,
                                    bad_padding: false,
                                }),
                            );
                        }
                    } else {
                        let cap = self.cap_of(&hdr);
                        self.payload = Vec::with_capacity(cap);
                        self.state = State::Collect {
                            hdr,
                            left: hdr.len,
                            cap,
                        };
                    }
                }
                State::Data {
                    hdr,
                    need_pad_len,
                    data_left,
                    pad_left,
                    bad_padding,
                } => {
                    if *need_pad_len {
                        let Some(&pad) = input.get(at) else {
                            return (at, None);
                        };
                        at = at.saturating_add(1);
                        *need_pad_len = false;
                        let room = hdr.len.saturating_sub(1);
                        let pad = u32::from(pad);
                        if pad > room {
                            *bad_padding = true;
                            *pad_left = room;
                        } else {
                            *pad_left = pad;
                            *data_left = room.saturating_sub(pad);
                        }
                    }
                    let rest = input.len().saturating_sub(at);
                    let take = (*data_left as usize).min(rest);
                    let start = at;
                    at = at.saturating_add(take);
                    *data_left = data_left.saturating_sub(take as u32);
                    if *data_left == 0 {
                        let skip = (*pad_left as usize).min(input.len().saturating_sub(at));
                        at = at.saturating_add(skip);
                        *pad_left = pad_left.saturating_sub(skip as u32);
                    }
                    let last = *data_left == 0 && *pad_left == 0;
                    let piece = Piece::Data {
                        hdr: *hdr,
                        range: start..start.saturating_add(take),
                        last,
                        bad_padding: *bad_padding,
                    };
                    if last {
                        self.state = State::Header;
                    }
                    if take > 0 || last {
                        return (at, Some(piece));
                    }
                    return (at, None);
                }
                State::Collect { hdr, left, cap } => {
                    let rest = input.get(at..).unwrap_or_default();
                    let take = (*left as usize).min(rest.len());
                    let keep = cap.saturating_sub(self.payload.len()).min(take);
                    self.payload
                        .extend_from_slice(rest.get(..keep).unwrap_or_default());
                    at = at.saturating_add(take);
                    *left = left.saturating_sub(take as u32);
                    if *left > 0 {
                        return (at, None);
                    }
                    let hdr = *hdr;
                    let payload = std::mem::take(&mut self.payload);
                    let truncated = payload.len() < hdr.len as usize;
                    self.state = State::Header;
                    return (
                        at,
                        Some(Piece::Frame {
                            hdr,
                            payload,
                            truncated,
                            ts_us: self.start.0,
                            frame: self.start.1,
                        }),
                    );
                }
            }
        }
    }
}

/// A HEADERS payload without its padding and priority fields (RFC 9113 §6.2), or `None`
/// when the padding is longer than the payload.
pub fn headers_fragment(hdr: &FrameHeader, payload: &[u8]) -> Option<Vec<u8>> {
    let mut body = payload;
    let mut pad = 0usize;
    if hdr.has(flag::PADDED) {
        let (&p, rest) = body.split_first()?;
        pad = usize::from(p);
        body = rest;
    }
    if hdr.kind == kind::HEADERS && hdr.has(flag::PRIORITY) {
        body = body.get(5..)?;
    }
    if hdr.kind == kind::PUSH_PROMISE {
        body = body.get(4..)?;
    }
    let end = body.len().checked_sub(pad)?;
    body.get(..end).map(<[u8]>::to_vec)
}

/// A big-endian u32 at `at`, if the payload has it.
pub fn be_u32(payload: &[u8], at: usize) -> Option<u32> {
    let b = payload.get(at..)?.first_chunk::<4>()?;
    Some(u32::from_be_bytes(*b))
}

/// RFC 9113 §7: the anomaly naming an error code.
pub fn error_code_name(code: u32) -> &'static str {
    match code {
        0x0 => "no_error",
        0x1 => "protocol_error",
        0x2 => "internal_error",
        0x3 => "flow_control_error",
        0x4 => "settings_timeout",
        0x5 => "stream_closed",
        0x6 => "frame_size_error",
        0x7 => "refused_stream",
        0x8 => "cancel",
        0x9 => "compression_error",
        0xa => "connect_error",
        0xb => "enhance_your_calm",
        0xc => "inadequate_security",
        0xd => "http_1_1_required",
        _ => "unknown_error",
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn frame(kind: u8, flags: u8, stream: u32, payload: &[u8]) -> Vec<u8> {
        let len = payload.len() as u32;
        let mut v = vec![(len >> 16) as u8, (len >> 8) as u8, len as u8, kind, flags];
        v.extend_from_slice(&stream.to_be_bytes());
        v.extend_from_slice(payload);
        v
    }

    /// (type, stream, kept payload) of each frame.
    type Frames = Vec<(u8, u32, Vec<u8>)>;

    /// Feeds `bytes` in pieces of `step`; returns the frames and the DATA bytes.
    fn read_all(bytes: &[u8], step: usize) -> (Frames, Vec<u8>) {
        let mut r = FrameReader::new(1024);
        let mut frames = Vec::new();
        let mut data = Vec::new();
        for chunk in bytes.chunks(step) {
            let mut rest = chunk;
            while !rest.is_empty() {
                let (n, piece) = r.next(rest, 0, 0);
                match piece {
                    Some(Piece::Frame { hdr, payload, .. }) => {
                        frames.push((hdr.kind, hdr.stream, payload))
                    }
                    Some(Piece::Data { range, last, .. }) => {
                        data.extend_from_slice(&rest[range]);
                        if last {
                            frames.push((kind::DATA, 1, vec![]));
                        }
                    }
                    None => {}
                }
                rest = &rest[n..];
            }
        }
        (frames, data)
    }

    #[test]
    fn frames_split_at_every_byte_read_the_same() {
        let mut wire = frame(kind::SETTINGS, 0, 0, &[0, 4, 0, 1, 0, 0]);
        wire.extend(frame(kind::HEADERS, flag::END_HEADERS, 1, b"\x82\x84"));
        // Padded DATA: pad length 3, "hello", 3 padding bytes.
        wire.extend(frame(kind::DATA, flag::PADDED, 1, b"\x03hello\0\0\0"));
        wire.extend(frame(kind::DATA, flag::END_STREAM, 1, b"!"));
        wire.extend(frame(0xfa, 0, 0, b"unknown type"));
        wire.extend(frame(kind::PING, 0, 0, b"12345678"));
        let (whole, whole_data) = read_all(&wire, wire.len());
        assert_eq!(whole_data, b"hello!");
        assert_eq!(
            whole.iter().map(|f| f.0).collect::<Vec<_>>(),
            vec![
                kind::SETTINGS,
                kind::HEADERS,
                kind::DATA,
                kind::DATA,
                0xfa,
                kind::PING
            ]
        );
        assert_eq!(whole[1].2, b"\x82\x84");
        // The unknown frame's payload is skipped, not kept.
        assert!(whole[4].2.is_empty());
        for step in 1..wire.len() {
            assert_eq!(read_all(&wire, step), (whole.clone(), whole_data.clone()));
        }
    }

    #[test]
    fn padding_longer_than_the_frame_is_flagged_and_read_as_padding() {
        let wire = frame(kind::DATA, flag::PADDED, 1, b"\x09abc");
        let mut r = FrameReader::new(16);
        let (n, piece) = r.next(&wire, 0, 0);
        assert_eq!(n, wire.len());
        match piece {
            Some(Piece::Data {
                range,
                last,
                bad_padding,
                ..
            }) => {
                assert!(range.is_empty() && last && bad_padding);
            }
            other => panic!("unexpected {other:?}"),
        }
        assert!(r.at_boundary());
    }

    #[test]
    fn a_huge_header_frame_keeps_only_the_cap() {
        let payload = vec![0u8; 100_000];
        let wire = frame(kind::HEADERS, 0, 1, &payload);
        let mut r = FrameReader::new(1000);
        let mut rest = &wire[..];
        let mut got = None;
        while !rest.is_empty() {
            let (n, p) = r.next(&rest[..rest.len().min(1500)], 0, 0);
            assert!(r.payload.capacity() <= 1000);
            if p.is_some() {
                got = p;
            }
            rest = &rest[n..];
        }
        match got {
            Some(Piece::Frame {
                payload, truncated, ..
            }) => assert!(payload.len() == 1000 && truncated),
            other => panic!("unexpected {other:?}"),
        }
    }

    #[test]
    fn header_fragments_lose_padding_and_priority() {
        let hdr = FrameHeader {
            len: 0,
            kind: kind::HEADERS,
            flags: flag::PADDED | flag::PRIORITY,
            stream: 1,
        };
        assert_eq!(
            headers_fragment(&hdr, b"\x02\0\0\0\x03\x10ab\0\0").as_deref(),
            Some(&b"ab"[..])
        );
        assert_eq!(headers_fragment(&hdr, b"\x09\0\0\0\x03\x10ab"), None);
    }
}
