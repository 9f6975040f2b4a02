//! MCP stage: [`HttpEvent`]s -> [`Exchange`]s.
//!
//! Finds MCP traffic by content, groups it into sessions, pairs each JSON-RPC
//! request with its response by (direction, id) within the session wherever
//! the response travels, classifies each exchange (report-schema.md section 3)
//! and infers retries (section 4).

mod exchange;
pub mod retry;

pub use exchange::{Exchange, InferenceInputs};

/// Thresholds of retry and session inference (report-schema.md section 4).
#[derive(Debug, Clone, Copy)]
pub struct InferenceConfig {
    pub repeat_window_ms: i64,
    pub sdk_max_gap_ms: i64,
    pub manual_min_gap_ms: i64,
    pub session_gap_ms: i64,
}

impl Default for InferenceConfig {
    fn default() -> Self {
        InferenceConfig {
            repeat_window_ms: 10 * 60 * 1000,
            sdk_max_gap_ms: 2000,
            manual_min_gap_ms: 1000,
            session_gap_ms: 5 * 60 * 1000,
        }
    }
}
