//! HTTP stage: [`StreamEvent`](crate::stream::StreamEvent)s -> [`HttpEvent`]s.
//!
//! Requests are delivered whole; responses as a head, zero or more decoded
//! body pieces (in arrival order, each with its time, so `text/event-stream`
//! bodies can be read incrementally), and an end that says how the body ended.
//! Every request gets exactly one `ResponseEnd` or `NoResponse`.
//! Never panics on any input: malformed HTTP becomes an anomaly, a skipped
//! count, or an incomplete message.
//!
//! ```text
//! stage.rs       StreamEvents of every stream -> one Router per stream (the release watermark)
//! router.rs      which side is the client, is this HTTP at all, bytes held until then;
//!                hands the connection to its version's reader, and to the next on an upgrade
//! reader.rs      what the router asks of a reader (`ConnReader`), directions, `Upgrade`
//! h1/            HTTP/1.x: heads, framing, chunked bodies, gaps and ends (RFC 9112)
//! h2/            HTTP/2: frames, HPACK, streams as exchanges (RFC 9113, RFC 7541)
//! exchanges.rs   version-neutral bookkeeping: exchange numbers, requests awaiting a
//!                response, a request before any of its response events, one end each
//! event.rs       HttpEvent and the types it carries
//! decompress.rs  content decoding (gzip, deflate, br), shared by every version
//! pseudo.rs      HTTP/2 pseudo-header fields (`:authority` to `Host`), for HAR and HTTP/2
//! log.rs         `mcp-trace http`'s rows
//! ```

mod counters;
mod decompress;
mod event;
mod exchanges;
mod h1;
pub mod h2;
mod limits;
mod log;
pub mod pseudo;
mod reader;
pub mod redact;
pub mod retry_after;
mod router;
mod stage;
#[cfg(test)]
mod tests;

pub use counters::HttpCounters;
pub use decompress::DECODED_BODY_LIMIT;
pub use event::{
    BodyEnd, ConnInfo, ExchangeRef, Headers, HttpEvent, HttpRequest, RequestHead, ResponseHead,
    http_version_name,
};
pub use exchanges::{DEFERRED_RESPONSE_LIMIT, PENDING_LIMIT};
pub use h1::{
    CHUNK_EXTENSIONS_LIMIT, HEAD_LIMIT, HttpError, REQUEST_BODY_LIMIT, START_LINE_LIMIT,
    TRAILERS_LIMIT,
};
pub use h2::H2_STREAM_LIMIT;
pub use limits::{BODY_RESERVE_MAX, HttpLimits};
pub use log::{HttpLog, HttpRow};
pub use stage::HttpStage;
