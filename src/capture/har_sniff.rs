//! "This input is a HAR": the capture stage's side of HAR input. Reading one is the `har`
//! stage's job ([`crate::har::read_har`]).

use std::io::Read;

/// A UTF-8 byte order mark, which may precede a HAR document.
pub const UTF8_BOM: &[u8] = b"\xEF\xBB\xBF";

/// True when `data` starts a compressed HAR (mitmproxy's `.zhar`): a zlib
/// stream (RFC 1950) or a gzip member whose first inflated non-blank byte is
/// `{`. Give it at least the first 512 bytes (or the whole file): a deflate
/// block header can take a hundred bytes before the first output byte.
pub fn is_compressed_har(data: &[u8]) -> bool {
    let mut head = Vec::new();
    let res = if has_zlib_header(data) {
        flate2::read::ZlibDecoder::new(data)
            .take(256)
            .read_to_end(&mut head)
    } else if data.starts_with(&[0x1f, 0x8b]) {
        flate2::read::MultiGzDecoder::new(data)
            .take(256)
            .read_to_end(&mut head)
    } else {
        return false;
    };
    // A short read error after some output still tells us what the text starts with.
    let _ = res;
    let text = head.strip_prefix(UTF8_BOM).unwrap_or(&head);
    text.iter().find(|c| !c.is_ascii_whitespace()) == Some(&b'{')
}

/// The first two bytes are a zlib header (RFC 1950 §2.2: CM 8, CINFO <= 7,
/// FCHECK makes CMF*256+FLG a multiple of 31). No pcap or pcapng magic
/// (`a1b2c3d4`, `d4c3b2a1`, `a1b23c4d`, `4d3cb2a1`, `0a0d0d0a`) passes, so a
/// format probe can route such input to [`crate::har::read_har`] on two bytes.
pub fn has_zlib_header(b: &[u8]) -> bool {
    match (b.first(), b.get(1)) {
        (Some(&cmf), Some(&flg)) => {
            cmf & 0x0f == 8 && cmf >> 4 <= 7 && (u16::from(cmf) << 8 | u16::from(flg)) % 31 == 0
        }
        _ => false,
    }
}
