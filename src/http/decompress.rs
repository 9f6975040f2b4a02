//! Incremental Content-Encoding decoding (RFC 9110 §8.4): gzip/x-gzip,
//! deflate (zlib-wrapped, or raw as some servers send it), br.
//!
//! Output is capped at [`DECODED_BODY_LIMIT`] per body: past it decoding stops
//! with `http.decompression_limit` (a decompression bomb never exhausts
//! memory). Input that does not decode records `http.bad_content_encoding`:
//! when nothing was decoded yet the body is delivered raw, otherwise decoding
//! stops there. Never panics.

use super::event::push_anomaly;
use std::io::Write;

/// Most decoded bytes produced per body; past it decoding stops.
pub const DECODED_BODY_LIMIT: u64 = 64 * 1024 * 1024;

/// Compressed bytes fed to a decoder per step. Deflate expands at most about
/// 1032:1, so one step yields at most about 1 MiB before the cap is checked.
const DECODE_STEP: usize = 1024;

/// Raw bytes kept until the first decoded byte, to pass a body through raw
/// when it turns out not to be encoded at all.
const RAW_KEEP_LIMIT: usize = 64 * 1024;

/// Brotli writer buffer size.
const BROTLI_BUFFER: usize = 4096;

enum Inner {
    Gzip(flate2::write::GzDecoder<Vec<u8>>),
    Zlib(flate2::write::ZlibDecoder<Vec<u8>>),
    RawDeflate(flate2::write::DeflateDecoder<Vec<u8>>),
    Brotli(Box<brotli::DecompressorWriter<Vec<u8>>>),
}

impl Inner {
    fn write(&mut self, input: &[u8]) -> std::io::Result<usize> {
        match self {
            Inner::Gzip(d) => d.write(input),
            Inner::Zlib(d) => d.write(input),
            Inner::RawDeflate(d) => d.write(input),
            Inner::Brotli(d) => d.write(input),
        }
    }

    fn take_output(&mut self) -> Vec<u8> {
        let out = match self {
            Inner::Gzip(d) => d.get_mut(),
            Inner::Zlib(d) => d.get_mut(),
            Inner::RawDeflate(d) => d.get_mut(),
            Inner::Brotli(d) => d.get_mut(),
        };
        std::mem::take(out)
    }

    fn finish(&mut self) -> std::io::Result<()> {
        match self {
            Inner::Gzip(d) => d.try_finish(),
            Inner::Zlib(d) => d.try_finish(),
            Inner::RawDeflate(d) => d.try_finish(),
            Inner::Brotli(d) => d.flush(),
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Kind {
    Identity,
    Gzip,
    /// zlib or raw; chosen from the first two bytes.
    Deflate,
    Brotli,
}

enum Mode {
    /// Bytes pass unchanged.
    Raw,
    /// Deflate waiting for its first two bytes to pick zlib or raw.
    Sniffing(Vec<u8>),
    Decoding(Box<Inner>),
    /// Past the cap or after an error mid-body: input is dropped.
    Stopped,
}

/// Decoder for one body's content coding.
pub struct ContentDecoder {
    kind: Kind,
    mode: Mode,
    decoded: u64,
    /// Most bytes this decoder produces ([`DECODED_BODY_LIMIT`] unless configured).
    limit: u64,
    /// Raw input seen while no output was produced yet (bounded).
    raw_prefix: Vec<u8>,
    produced: bool,
}

impl ContentDecoder {
    /// Decoder for a `Content-Encoding` value (`None` = identity). Unsupported
    /// or stacked codings record `http.bad_content_encoding` and pass raw.
    pub fn new(content_encoding: Option<&str>, anomalies: &mut Vec<String>) -> ContentDecoder {
        Self::with_limit(content_encoding, DECODED_BODY_LIMIT, anomalies)
    }

    /// [`ContentDecoder::new`] producing at most `limit` bytes (`http.decompression_limit`).
    pub fn with_limit(
        content_encoding: Option<&str>,
        limit: u64,
        anomalies: &mut Vec<String>,
    ) -> ContentDecoder {
        let codings: Vec<String> = content_encoding
            .unwrap_or_default()
            .split(',')
            .map(|c| c.trim().to_ascii_lowercase())
            .filter(|c| !c.is_empty() && c != "identity")
            .collect();
        let kind = match codings.as_slice() {
            [] => Kind::Identity,
            [one] => match one.as_str() {
                "gzip" | "x-gzip" => Kind::Gzip,
                "deflate" => Kind::Deflate,
                "br" => Kind::Brotli,
                _ => {
                    push_anomaly(anomalies, "http.bad_content_encoding");
                    Kind::Identity
                }
            },
            _ => {
                push_anomaly(anomalies, "http.bad_content_encoding");
                Kind::Identity
            }
        };
        let mode = match kind {
            Kind::Identity => Mode::Raw,
            Kind::Gzip => Mode::Decoding(Box::new(Inner::Gzip(flate2::write::GzDecoder::new(
                Vec::new(),
            )))),
            Kind::Deflate => Mode::Sniffing(Vec::new()),
            Kind::Brotli => Mode::Decoding(Box::new(Inner::Brotli(Box::new(
                brotli::DecompressorWriter::new(Vec::new(), BROTLI_BUFFER),
            )))),
        };
        ContentDecoder {
            kind,
            mode,
            decoded: 0,
            limit,
            raw_prefix: Vec::new(),
            produced: false,
        }
    }

    /// True when the body is content-coded (not identity).
    pub fn is_coded(&self) -> bool {
        self.kind != Kind::Identity
    }

    /// Decoded bytes produced so far.
    pub fn decoded_len(&self) -> u64 {
        self.decoded
    }

    /// Decodes `input`, appending output to `out`.
    pub fn feed(&mut self, input: &[u8], out: &mut Vec<u8>, anomalies: &mut Vec<String>) {
        if input.is_empty() {
            return;
        }
        if let Mode::Sniffing(held) = &mut self.mode {
            held.extend_from_slice(input);
            if held.len() < 2 {
                return;
            }
            let held = std::mem::take(held);
            // RFC 1950 §2.2: CM = 8 and (CMF*256 + FLG) is a multiple of 31.
            let zlib = match (held.first(), held.get(1)) {
                (Some(&cmf), Some(&flg)) => {
                    cmf & 0x0f == 8 && (u16::from(cmf) * 256 + u16::from(flg)) % 31 == 0
                }
                _ => false,
            };
            self.mode = Mode::Decoding(Box::new(if zlib {
                Inner::Zlib(flate2::write::ZlibDecoder::new(Vec::new()))
            } else {
                Inner::RawDeflate(flate2::write::DeflateDecoder::new(Vec::new()))
            }));
            self.feed_decoder(&held, out, anomalies);
            return;
        }
        self.feed_decoder(input, out, anomalies);
    }

    fn feed_decoder(&mut self, input: &[u8], out: &mut Vec<u8>, anomalies: &mut Vec<String>) {
        match &self.mode {
            Mode::Raw => self.emit(input, out, anomalies),
            Mode::Stopped | Mode::Sniffing(_) => {}
            Mode::Decoding(_) => {
                if !self.produced && self.raw_prefix.len() < RAW_KEEP_LIMIT {
                    self.raw_prefix.extend_from_slice(input);
                }
                for step in input.chunks(DECODE_STEP) {
                    let mut rest = step;
                    while !rest.is_empty() {
                        let Mode::Decoding(inner) = &mut self.mode else {
                            return;
                        };
                        match inner.write(rest) {
                            // The coded stream ended; trailing bytes are ignored.
                            Ok(0) => {
                                rest = &[];
                            }
                            Ok(n) => {
                                rest = rest.get(n..).unwrap_or_default();
                            }
                            Err(_) => {
                                let produced = inner.take_output();
                                self.emit(&produced, out, anomalies);
                                self.fail(out, anomalies);
                                return;
                            }
                        }
                        let produced = inner.take_output();
                        self.emit(&produced, out, anomalies);
                    }
                }
            }
        }
    }

    /// The decoder rejected its input: record it and pass the body raw. If
    /// nothing was decoded yet, the raw bytes seen so far are delivered too.
    fn fail(&mut self, out: &mut Vec<u8>, anomalies: &mut Vec<String>) {
        push_anomaly(anomalies, "http.bad_content_encoding");
        let held = std::mem::take(&mut self.raw_prefix);
        let pass_raw = !self.produced && held.len() < RAW_KEEP_LIMIT;
        self.mode = Mode::Raw;
        if pass_raw {
            self.emit(&held, out, anomalies);
        } else {
            self.mode = Mode::Stopped;
        }
    }

    fn emit(&mut self, data: &[u8], out: &mut Vec<u8>, anomalies: &mut Vec<String>) {
        if data.is_empty() {
            return;
        }
        let keep = self.admit(data.len(), anomalies);
        out.extend_from_slice(data.get(..keep).unwrap_or_default());
    }

    /// Counts `len` produced bytes against the limit: how many of them to keep.
    fn admit(&mut self, len: usize, anomalies: &mut Vec<String>) -> usize {
        if !self.produced {
            self.produced = true;
            self.raw_prefix = Vec::new();
        }
        let room = self.limit.saturating_sub(self.decoded);
        if len as u64 > room {
            self.decoded = self.decoded.saturating_add(room);
            push_anomaly(anomalies, "http.decompression_limit");
            self.mode = Mode::Stopped;
            usize::try_from(room).unwrap_or(usize::MAX)
        } else {
            self.decoded = self.decoded.saturating_add(len as u64);
            len
        }
    }

    /// The body has no content coding (yet nothing cut it off): bytes may be written to the
    /// output directly and then passed to [`ContentDecoder::feed_in_place`].
    pub fn is_raw(&self) -> bool {
        matches!(self.mode, Mode::Raw)
    }

    /// [`ContentDecoder::feed`] of the bytes `out[from..]`, already in place: only for a
    /// decoder that [`ContentDecoder::is_raw`]. Spares a copy for chunked bodies.
    pub fn feed_in_place(&mut self, out: &mut Vec<u8>, from: usize, anomalies: &mut Vec<String>) {
        let len = out.len().saturating_sub(from);
        if len == 0 {
            return;
        }
        let keep = self.admit(len, anomalies);
        out.truncate(from.saturating_add(keep));
    }

    /// The body ended (`complete`: its framing completed): flushes the decoder.
    pub fn finish(&mut self, complete: bool, out: &mut Vec<u8>, anomalies: &mut Vec<String>) {
        match std::mem::replace(&mut self.mode, Mode::Stopped) {
            Mode::Decoding(mut inner) => {
                let result = inner.finish();
                let produced = inner.take_output();
                self.mode = Mode::Decoding(inner);
                self.emit(&produced, out, anomalies);
                if result.is_err() && complete {
                    if self.produced {
                        push_anomaly(anomalies, "http.bad_content_encoding");
                    } else {
                        self.fail(out, anomalies);
                    }
                }
            }
            Mode::Sniffing(held) => {
                // One byte cannot be a deflate stream: pass it raw.
                if !held.is_empty() {
                    push_anomaly(anomalies, "http.bad_content_encoding");
                    self.mode = Mode::Raw;
                    self.emit(&held, out, anomalies);
                }
            }
            other => self.mode = other,
        }
        self.mode = Mode::Stopped;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn gzip(data: &[u8]) -> Vec<u8> {
        let mut e = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
        e.write_all(data).unwrap();
        e.finish().unwrap()
    }

    fn decode(coding: &str, input: &[u8], cuts: &[usize]) -> (Vec<u8>, Vec<String>) {
        let mut an = Vec::new();
        let mut d = ContentDecoder::new(Some(coding), &mut an);
        let mut out = Vec::new();
        let mut prev = 0;
        for &c in cuts.iter().chain(std::iter::once(&input.len())) {
            d.feed(&input[prev..c], &mut out, &mut an);
            prev = c;
        }
        d.finish(true, &mut out, &mut an);
        assert_eq!(d.decoded_len(), out.len() as u64);
        (out, an)
    }

    fn text() -> Vec<u8> {
        (0..3000u32)
            .flat_map(|i| format!("line {i}\n").into_bytes())
            .collect()
    }

    #[test]
    fn gzip_split_at_every_byte() {
        let plain = text();
        let coded = gzip(&plain);
        let whole = decode("gzip", &coded, &[]);
        assert_eq!(whole, (plain.clone(), vec![]));
        for cut in 0..=coded.len() {
            assert_eq!(decode("x-gzip", &coded, &[cut]), whole, "cut {cut}");
        }
        let every: Vec<usize> = (1..coded.len()).collect();
        assert_eq!(decode("gzip", &coded, &every), whole);
    }

    #[test]
    fn deflate_zlib_and_raw() {
        let plain = text();
        let mut z = flate2::write::ZlibEncoder::new(Vec::new(), flate2::Compression::default());
        z.write_all(&plain).unwrap();
        let zlib = z.finish().unwrap();
        assert_eq!(decode("deflate", &zlib, &[1]).0, plain);
        let mut r = flate2::write::DeflateEncoder::new(Vec::new(), flate2::Compression::default());
        r.write_all(&plain).unwrap();
        let raw = r.finish().unwrap();
        assert_eq!(decode("deflate", &raw, &[1, 7]).0, plain);
    }

    #[test]
    fn brotli_decodes() {
        let plain = text();
        let mut coded = Vec::new();
        {
            let mut w = brotli::CompressorWriter::new(&mut coded, 4096, 5, 22);
            w.write_all(&plain).unwrap();
        }
        let (out, an) = decode("br", &coded, &[3, 100]);
        assert_eq!(out, plain);
        assert!(an.is_empty());
    }

    #[test]
    fn undecodable_passes_raw() {
        let (out, an) = decode("gzip", b"this is not gzip at all", &[4]);
        assert_eq!(out, b"this is not gzip at all");
        assert_eq!(an, vec!["http.bad_content_encoding".to_string()]);
        let (out, an) = decode("compress", b"abc", &[]);
        assert_eq!((out.as_slice(), an.len()), (&b"abc"[..], 1));
    }

    #[test]
    fn in_place_bytes_count_against_the_limit_like_fed_ones() {
        let mut an = Vec::new();
        let mut d = ContentDecoder::with_limit(None, 5, &mut an);
        assert!(d.is_raw());
        let mut out = b"ab".to_vec();
        d.feed_in_place(&mut out, 1, &mut an);
        assert_eq!((out.as_slice(), an.len()), (&b"ab"[..], 0));
        out.extend_from_slice(b"cdefg");
        d.feed_in_place(&mut out, 2, &mut an);
        // 1 + 4 of the 5 allowed: the rest is cut and the decoder stops, as `feed` does.
        assert_eq!(out, b"abcdef");
        assert_eq!(an, vec!["http.decompression_limit".to_string()]);
        assert!(!d.is_raw());
        let mut fed = Vec::new();
        let mut an2 = Vec::new();
        let mut f = ContentDecoder::with_limit(None, 5, &mut an2);
        f.feed(b"b", &mut fed, &mut an2);
        f.feed(b"cdefg", &mut fed, &mut an2);
        assert_eq!((fed.as_slice(), an2), (&out[1..], an));
    }

    #[test]
    fn bomb_is_capped() {
        let zeros = vec![0u8; 1024 * 1024];
        let mut e = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::best());
        for _ in 0..80 {
            e.write_all(&zeros).unwrap();
        }
        let coded = e.finish().unwrap();
        assert!(coded.len() < 200_000);
        let (out, an) = decode("gzip", &coded, &[]);
        assert_eq!(out.len() as u64, DECODED_BODY_LIMIT);
        assert_eq!(an, vec!["http.decompression_limit".to_string()]);
    }
}
