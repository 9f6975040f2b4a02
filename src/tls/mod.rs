//! TLS stage (in progress).
pub mod cipher;
pub mod decrypt;
pub mod handshake;
pub mod keylog;
pub mod record;
pub mod schedule;
