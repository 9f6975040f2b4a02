//! Body bytes from HAR text fields: `encoding: "base64"`, bodies a recorder
//! stored still compressed, and the SSE end-of-event check.
//!
//! Recorders normally store the *decoded* body in `content.text` even when the
//! response carried `Content-Encoding` (HAR 1.2 §content: "text ... decoded
//! from its original format"); a few store the compressed bytes (base64).
//! Decoding is attempted only when the bytes carry the coding's signature, so
//! a decoded body is never decoded twice. Output is bounded by
//! [`MAX_DECODED_BODY_BYTES`].

use base64::Engine as _;
use base64::engine::{DecodePaddingMode, GeneralPurpose, GeneralPurposeConfig};
use std::io::Read;

/// Largest body a compressed HAR field may expand to (a decompression-bomb
/// guard); beyond it the raw bytes are delivered and `har.body_limit` counted.
pub const MAX_DECODED_BODY_BYTES: u64 = 64 * 1024 * 1024;

const LENIENT: GeneralPurposeConfig = GeneralPurposeConfig::new()
    .with_decode_padding_mode(DecodePaddingMode::Indifferent)
    .with_decode_allow_trailing_bits(true);
const STANDARD_LENIENT: GeneralPurpose = GeneralPurpose::new(&base64::alphabet::STANDARD, LENIENT);
const URL_SAFE_LENIENT: GeneralPurpose = GeneralPurpose::new(&base64::alphabet::URL_SAFE, LENIENT);

/// Bytes of a HAR text field with its `encoding`.
///
/// `None`/empty encoding: the text as UTF-8. `base64`: decoded, tolerating
/// line breaks, missing padding and the URL-safe alphabet. Err(anomaly) when
/// the encoding is unknown or the base64 is bad; the caller then uses the text.
pub(super) fn decode_text(text: &str, encoding: Option<&str>) -> Result<Vec<u8>, &'static str> {
    match encoding.map(str::trim) {
        None | Some("") => Ok(text.as_bytes().to_vec()),
        Some(e) if e.eq_ignore_ascii_case("base64") => {
            let compact: Vec<u8> = text.bytes().filter(|c| !c.is_ascii_whitespace()).collect();
            STANDARD_LENIENT
                .decode(&compact)
                .or_else(|_| URL_SAFE_LENIENT.decode(&compact))
                .map_err(|_| "har.bad_base64")
        }
        Some(_) => Err("har.unknown_text_encoding"),
    }
}

/// Result of undoing `Content-Encoding` on a recorded body.
#[derive(Debug, PartialEq, Eq)]
pub(super) struct Decoded {
    pub body: Vec<u8>,
    /// Anomalies met (`har.bad_content_encoding`, `har.body_limit`, ...).
    pub anomalies: Vec<&'static str>,
}

/// Undo the codings of `content_encoding` (a list, applied in order by the
/// sender, so undone in reverse: RFC 9110 §8.4) where the body still carries
/// them. A coding whose signature is absent means the recorder stored the
/// decoded body, and decoding stops there.
pub(super) fn undo_content_encoding(body: Vec<u8>, content_encoding: Option<&str>) -> Decoded {
    let mut out = Decoded {
        body,
        anomalies: Vec::new(),
    };
    let Some(list) = content_encoding else {
        return out;
    };
    let codings: Vec<String> = list
        .split(',')
        .map(|c| c.trim().to_ascii_lowercase())
        .filter(|c| !c.is_empty() && c != "identity")
        .collect();
    for coding in codings.iter().rev() {
        let attempt = match coding.as_str() {
            "gzip" | "x-gzip" if out.body.starts_with(&[0x1f, 0x8b]) => Some(inflate(
                flate2::read::MultiGzDecoder::new(out.body.as_slice()),
            )),
            "deflate" if looks_zlib(&out.body) => {
                Some(inflate(flate2::read::ZlibDecoder::new(out.body.as_slice())))
            }
            // Brotli has no signature: only bytes that are not text are tried.
            "br" if std::str::from_utf8(&out.body).is_err() => Some(inflate(
                brotli::Decompressor::new(out.body.as_slice(), 4096),
            )),
            "zstd" if out.body.starts_with(&[0x28, 0xb5, 0x2f, 0xfd]) => {
                out.anomalies.push("har.unsupported_content_encoding");
                return out;
            }
            _ => None,
        };
        match attempt {
            None => return out,
            Some(Ok(decoded)) => out.body = decoded,
            Some(Err(anomaly)) => {
                out.anomalies.push(anomaly);
                return out;
            }
        }
    }
    out
}

/// A zlib header (RFC 1950 §2.2): CM = 8 and the FCHECK multiple of 31.
fn looks_zlib(b: &[u8]) -> bool {
    match (b.first(), b.get(1)) {
        (Some(&cmf), Some(&flg)) => {
            cmf & 0x0f == 8 && (u16::from(cmf) << 8 | u16::from(flg)) % 31 == 0
        }
        _ => false,
    }
}

/// Read a decoder to the end within [`MAX_DECODED_BODY_BYTES`].
fn inflate(reader: impl Read) -> Result<Vec<u8>, &'static str> {
    let mut out = Vec::new();
    let mut limited = reader.take(MAX_DECODED_BODY_BYTES.saturating_add(1));
    match limited.read_to_end(&mut out) {
        Ok(n) if (n as u64) > MAX_DECODED_BODY_BYTES => Err("har.body_limit"),
        Ok(_) => Ok(out),
        Err(_) => Err("har.bad_content_encoding"),
    }
}

/// The body ends at an event boundary: its last line is empty
/// (WHATWG HTML §9.2.6: an event is dispatched on a blank line; lines end in
/// CRLF, LF or CR). A body cut inside an event does not.
pub(super) fn sse_ends_with_blank_line(body: &[u8]) -> bool {
    [b"\n\n".as_slice(), b"\r\r", b"\n\r\n", b"\n\r"]
        .iter()
        .any(|end| body.ends_with(end))
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Write;

    fn gzip(data: &[u8]) -> Vec<u8> {
        let mut e = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
        e.write_all(data).unwrap();
        e.finish().unwrap()
    }

    #[test]
    fn base64_variants() {
        assert_eq!(
            decode_text("aGVsbG8=", Some("base64")),
            Ok(b"hello".to_vec())
        );
        assert_eq!(
            decode_text("aGVs\nbG8", Some("Base64")),
            Ok(b"hello".to_vec())
        );
        assert_eq!(decode_text("__8", Some("base64")), Ok(vec![0xff, 0xff]));
        assert_eq!(decode_text("@@@", Some("base64")), Err("har.bad_base64"));
        assert_eq!(
            decode_text("x", Some("uu")),
            Err("har.unknown_text_encoding")
        );
        assert_eq!(decode_text("é", None), Ok("é".as_bytes().to_vec()));
    }

    #[test]
    fn gzip_still_compressed_is_decoded() {
        let d = undo_content_encoding(gzip(b"{\"a\":1}"), Some("gzip"));
        assert_eq!(d.body, b"{\"a\":1}");
        assert!(d.anomalies.is_empty());
    }

    #[test]
    fn already_decoded_body_is_kept() {
        for coding in ["gzip", "deflate", "br", "zstd", "gzip, br", "compress"] {
            let d = undo_content_encoding(b"{\"a\":1}".to_vec(), Some(coding));
            assert_eq!(d.body, b"{\"a\":1}", "{coding}");
            assert!(d.anomalies.is_empty(), "{coding}");
        }
    }

    #[test]
    fn corrupt_gzip_is_reported_and_raw() {
        // The body of mitmproxy's corrupted_gzip_body.har.
        let raw = decode_text("H4sIAAAAAAAAAyE+EjNBD/iT6u4EAAAA", Some("base64")).unwrap();
        let d = undo_content_encoding(raw.clone(), Some("gzip"));
        assert_eq!(d.body, raw);
        assert_eq!(d.anomalies, vec!["har.bad_content_encoding"]);
    }

    #[test]
    fn deflate_and_brotli() {
        let mut z = flate2::write::ZlibEncoder::new(Vec::new(), flate2::Compression::default());
        z.write_all(b"deflated").unwrap();
        assert_eq!(
            undo_content_encoding(z.finish().unwrap(), Some("deflate")).body,
            b"deflated"
        );
        let mut br = Vec::new();
        {
            let mut w = brotli::CompressorWriter::new(&mut br, 4096, 5, 22);
            w.write_all(&[0xffu8; 1000]).unwrap();
        }
        assert_eq!(
            undo_content_encoding(br, Some("br")).body,
            vec![0xffu8; 1000]
        );
    }

    #[test]
    fn stacked_codings_undone_in_reverse() {
        let twice = gzip(&gzip(b"inner"));
        assert_eq!(
            undo_content_encoding(twice, Some("gzip, gzip")).body,
            b"inner"
        );
    }

    #[test]
    fn sse_boundary() {
        assert!(sse_ends_with_blank_line(b"data: 1\n\n"));
        assert!(sse_ends_with_blank_line(b"data: 1\r\n\r\n"));
        assert!(sse_ends_with_blank_line(b"data: 1\r\r"));
        assert!(!sse_ends_with_blank_line(b"data: 1\n"));
        assert!(!sse_ends_with_blank_line(b"data: {\"jsonrpc\""));
        assert!(!sse_ends_with_blank_line(b""));
    }
}
