//! One connection as HTTP/2 (RFC 9113), once the router knows it is: each stream is one
//! exchange with the same [`HttpEvent`](super::HttpEvent)s as HTTP/1.x, numbered in the
//! order of the requests' HEADERS and carrying the stream id.
//!
//! ```text
//! conn.rs     the connection: two directions (frame reader, HPACK decoder), connection
//!             frames (SETTINGS, PING, GOAWAY), gaps and ends
//! streams.rs  header blocks to heads, DATA to bodies, RST_STREAM, ends of a direction
//! exchange.rs one stream's exchange: its state, heads from decoded header lists
//! frames.rs   frames from bytes in any split; DATA streamed, padding removed
//! flood.rs    per-second rates of SETTINGS, PING and resets (rapid reset)
//! hpack/      HPACK decoder (RFC 7541)
//! tests*.rs   through the stage (with a test-only HPACK encoder), HTTP/1.1 equivalence and
//!             h2c, hostile input
//! ```

mod conn;
mod exchange;
mod flood;
mod frames;
pub mod hpack;
mod streams;
#[cfg(test)]
mod tests;

pub(super) use conn::{Conn, PREFACE};
pub use conn::{H2_STREAM_LIMIT, HEADER_TABLE_LIMIT};
pub use flood::{PING_RATE_LIMIT, RESET_RATE_LIMIT, SETTINGS_RATE_LIMIT};
