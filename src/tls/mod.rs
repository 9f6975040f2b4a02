//! TLS stage (in progress).
pub mod record;
