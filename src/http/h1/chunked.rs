//! Incremental chunked transfer coding (RFC 9112 §7.1): chunk sizes,
//! extensions (skipped), data, and trailer fields (skipped).
//!
//! Input may be cut anywhere; the decoder keeps its place. Never panics; a
//! malformed or hostile size (e.g. one that overflows 64 bits) is an error.

use super::HttpError;

/// Most bytes of chunk extensions accepted per message (hyper uses 16 KiB).
pub const CHUNK_EXTENSIONS_LIMIT: u64 = 16 * 1024;

/// Most bytes of trailer section accepted per message.
pub const TRAILERS_LIMIT: u64 = 64 * 1024;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum State {
    /// Reading hex digits of the size.
    Size {
        digits: u8,
    },
    /// Whitespace after the size (lenient: `BWS` before `;` or CRLF).
    SizeWs,
    /// Inside `;ext` until LF.
    Extension,
    /// Saw CR after size/extension; expecting LF.
    SizeLf,
    Data,
    /// After data: expecting CR or LF.
    DataCr,
    DataLf,
    /// At the start of a trailer line (or the final empty line).
    TrailerStart,
    /// Inside a trailer field line.
    Trailer,
    /// Saw CR at a trailer line start; expecting LF.
    TrailerLf,
    Done,
}

/// Chunked body decoder.
#[derive(Debug, Clone)]
pub struct ChunkedDecoder {
    state: State,
    size: u64,
    remaining: u64,
    ext_bytes: u64,
    trailer_bytes: u64,
    /// Trailer section present (at least one field line).
    pub saw_trailers: bool,
    /// Chunk extensions present.
    pub saw_extensions: bool,
}

impl Default for ChunkedDecoder {
    fn default() -> Self {
        Self::new()
    }
}

impl ChunkedDecoder {
    pub fn new() -> Self {
        ChunkedDecoder {
            state: State::Size { digits: 0 },
            size: 0,
            remaining: 0,
            ext_bytes: 0,
            trailer_bytes: 0,
            saw_trailers: false,
            saw_extensions: false,
        }
    }

    /// True once the last chunk and the trailer section have been read.
    pub fn is_done(&self) -> bool {
        self.state == State::Done
    }

    /// Feeds `input`, appending chunk data (framing removed) to `out`. Returns
    /// the bytes consumed (all of `input`, or fewer when the body ended inside
    /// it) and, on malformed framing, the error (consumed then counts the
    /// bytes before the offending one).
    pub fn feed(&mut self, input: &[u8], out: &mut Vec<u8>) -> (usize, Result<(), HttpError>) {
        let mut i = 0usize;
        while i < input.len() && self.state != State::Done {
            if self.state == State::Data {
                let avail = input.len().saturating_sub(i);
                let take = usize::try_from(self.remaining)
                    .unwrap_or(usize::MAX)
                    .min(avail);
                let end = i.saturating_add(take);
                out.extend_from_slice(input.get(i..end).unwrap_or_default());
                i = end;
                self.remaining = self.remaining.saturating_sub(take as u64);
                if self.remaining == 0 {
                    self.state = State::DataCr;
                }
                continue;
            }
            let b = input.get(i).copied().unwrap_or_default();
            if let Err(e) = self.step(b) {
                return (i, Err(e));
            }
            i = i.saturating_add(1);
        }
        (i, Ok(()))
    }

    /// Skips `len` bytes of chunk data lost in a gap. Returns how many of them
    /// fell inside the current chunk; the caller must stop if that is less
    /// than `len` (framing is lost).
    pub fn skip_data(&mut self, len: u64) -> u64 {
        if self.state != State::Data {
            return 0;
        }
        let take = self.remaining.min(len);
        self.remaining = self.remaining.saturating_sub(take);
        if self.remaining == 0 {
            self.state = State::DataCr;
        }
        take
    }

    fn step(&mut self, b: u8) -> Result<(), HttpError> {
        match self.state {
            State::Size { digits } => {
                if let Some(v) = hex_value(b) {
                    // RFC 9112 §7.1: recipients must guard against overflow.
                    self.size = self
                        .size
                        .checked_mul(16)
                        .and_then(|s| s.checked_add(u64::from(v)))
                        .ok_or(HttpError::ChunkSizeOverflow)?;
                    self.state = State::Size {
                        digits: digits.saturating_add(1),
                    };
                } else if digits == 0 {
                    return Err(HttpError::BadChunk { byte: b });
                } else {
                    self.after_size(b)?;
                }
            }
            State::SizeWs => self.after_size(b)?,
            State::Extension => {
                self.ext_bytes = self.ext_bytes.saturating_add(1);
                if self.ext_bytes > CHUNK_EXTENSIONS_LIMIT {
                    return Err(HttpError::ChunkExtensionsTooLong);
                }
                if b == b'\n' {
                    self.end_size_line();
                }
            }
            State::SizeLf => {
                if b == b'\n' {
                    self.end_size_line();
                } else {
                    return Err(HttpError::BadChunk { byte: b });
                }
            }
            State::Data | State::Done => {}
            State::DataCr => match b {
                b'\r' => self.state = State::DataLf,
                // Lenient: a bare LF ends the data line.
                b'\n' => self.next_chunk(),
                _ => return Err(HttpError::BadChunk { byte: b }),
            },
            State::DataLf => {
                if b == b'\n' {
                    self.next_chunk();
                } else {
                    return Err(HttpError::BadChunk { byte: b });
                }
            }
            State::TrailerStart => match b {
                b'\r' => self.state = State::TrailerLf,
                b'\n' => self.state = State::Done,
                _ => {
                    self.saw_trailers = true;
                    self.count_trailer()?;
                    self.state = State::Trailer;
                }
            },
            State::Trailer => {
                self.count_trailer()?;
                if b == b'\n' {
                    self.state = State::TrailerStart;
                }
            }
            State::TrailerLf => {
                if b == b'\n' {
                    self.state = State::Done;
                } else {
                    return Err(HttpError::BadChunk { byte: b });
                }
            }
        }
        Ok(())
    }

    fn after_size(&mut self, b: u8) -> Result<(), HttpError> {
        match b {
            b' ' | b'\t' => self.state = State::SizeWs,
            b';' => {
                self.saw_extensions = true;
                self.state = State::Extension;
            }
            b'\r' => self.state = State::SizeLf,
            b'\n' => self.end_size_line(),
            _ => return Err(HttpError::BadChunk { byte: b }),
        }
        Ok(())
    }

    fn count_trailer(&mut self) -> Result<(), HttpError> {
        self.trailer_bytes = self.trailer_bytes.saturating_add(1);
        if self.trailer_bytes > TRAILERS_LIMIT {
            return Err(HttpError::TrailersTooLong);
        }
        Ok(())
    }

    fn end_size_line(&mut self) {
        if self.size == 0 {
            self.state = State::TrailerStart;
        } else {
            self.remaining = self.size;
            self.state = State::Data;
        }
    }

    fn next_chunk(&mut self) {
        self.size = 0;
        self.state = State::Size { digits: 0 };
    }
}

fn hex_value(b: u8) -> Option<u8> {
    match b {
        b'0'..=b'9' => Some(b - b'0'),
        b'a'..=b'f' => Some(b - b'a' + 10),
        b'A'..=b'F' => Some(b - b'A' + 10),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Decodes `input` cut at `cuts`; returns (data, consumed, done) or the error text.
    fn run(input: &[u8], cuts: &[usize]) -> Result<(Vec<u8>, usize, bool), String> {
        let mut d = ChunkedDecoder::new();
        let mut out = Vec::new();
        let mut consumed = 0;
        let mut prev = 0;
        for &c in cuts.iter().chain(std::iter::once(&input.len())) {
            if d.is_done() {
                break;
            }
            let (n, r) = d.feed(&input[prev..c], &mut out);
            r.map_err(|e| e.to_string())?;
            consumed += n;
            prev = c;
        }
        Ok((out, consumed, d.is_done()))
    }

    const BODY: &[u8] =
        b"5;name=val;x\r\nhello\r\n6\r\n world\r\n0\r\nExpires: never\r\nX-T: 1\r\n\r\nNEXT";

    #[test]
    fn chunked_with_extensions_and_trailers() {
        let (data, consumed, done) = run(BODY, &[]).unwrap();
        assert_eq!(data, b"hello world");
        assert_eq!(consumed, BODY.len() - 4);
        assert!(done);
    }

    #[test]
    fn chunked_split_at_every_byte() {
        let whole = run(BODY, &[]).unwrap();
        for cut in 0..=BODY.len() {
            assert_eq!(run(BODY, &[cut]).unwrap(), whole, "cut {cut}");
        }
        for a in 0..BODY.len() {
            for b in a..BODY.len() {
                assert_eq!(run(BODY, &[a, b]).unwrap(), whole, "cuts {a} {b}");
            }
        }
        let every: Vec<usize> = (1..BODY.len()).collect();
        assert_eq!(run(BODY, &every).unwrap(), whole);
    }

    #[test]
    fn chunk_size_overflow_is_error() {
        assert!(run(b"10000000000000000\r\n", &[]).is_err());
        assert!(run(b"ffffffffffffffff\r\n", &[]).is_ok());
    }

    #[test]
    fn bare_lf_tolerated() {
        let (data, _, done) = run(b"3\nabc\n0\n\n", &[]).unwrap();
        assert_eq!((data.as_slice(), done), (&b"abc"[..], true));
    }

    #[test]
    fn garbage_is_error() {
        assert!(run(b"zz\r\n", &[]).is_err());
        assert!(run(b"3\r\nabcX", &[]).is_err());
    }
}
