//! The HTTP stage's bounds on the state that grows with input. Each is an `analyze` option;
//! hitting one records a named anomaly and the loss is counted.

use super::decompress::DECODED_BODY_LIMIT;
use super::h1::{HEAD_LIMIT, REQUEST_BODY_LIMIT};
use super::h2::H2_STREAM_LIMIT;

/// Most bytes reserved ahead for one body from its Content-Length: most JSON-RPC bodies fit,
/// while a forged length (many open requests that never send their body) reserves little.
pub const BODY_RESERVE_MAX: usize = 16 * 1024;

/// Per-run limits of the HTTP stage. `Default` gives the documented defaults.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct HttpLimits {
    /// Largest HTTP head (start line + headers) read; past it `http.head_too_large` and the
    /// head's bytes are skipped. For HTTP/2: the largest header block and decoded header
    /// list.
    pub head_bytes: usize,
    /// Most request body bytes kept per message for JSON parsing; the rest is counted, not
    /// kept (`http.request_body_limit`).
    pub body_bytes: usize,
    /// Most bytes produced by content decoding (gzip, deflate, br) per body
    /// (`http.decompression_limit`): a decompression bomb stops here.
    pub decoded_bytes: u64,
    /// Most HTTP/2 streams open at once on one connection; a stream opened past it is not
    /// read (`h2.stream_limit`).
    pub h2_streams: usize,
}

impl Default for HttpLimits {
    fn default() -> Self {
        HttpLimits {
            head_bytes: HEAD_LIMIT,
            body_bytes: REQUEST_BODY_LIMIT,
            decoded_bytes: DECODED_BODY_LIMIT,
            h2_streams: H2_STREAM_LIMIT,
        }
    }
}
