//! HTTP/2 (RFC 9113): header compression so far.

pub mod hpack;
