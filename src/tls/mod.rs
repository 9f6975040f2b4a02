//! TLS stage (in progress).
pub mod keylog;
pub mod record;
pub mod schedule;
