//! MCP stage: [`HttpEvent`](crate::http::HttpEvent)s -> [`Exchange`]s.
//!
//! Finds MCP traffic by content, groups it into sessions, pairs each JSON-RPC
//! request with its response by (direction, id) within the session wherever
//! the response travels, classifies each exchange (report-schema.md section 3)
//! and infers retries (section 4). Rows are released as they become final
//! (see [`Analyzer`] and the analyzer's "Release" notes), so memory follows
//! live state, not the capture.

mod analyzer;
mod classify;
mod exchange;
mod prepare;
pub mod retry;
mod session;
mod texts;

pub use analyzer::{
    Analyzer, HOLD_LIMIT_US, MAX_BUFFERED_ROWS, MAX_EVENT_IDS_PER_SESSION, MAX_KNOWN_ENDPOINTS,
    MAX_LEGACY_SESSIONS, MAX_ORPHANS_PER_SESSION, MAX_PENDING_PER_SESSION, MAX_PENDING_PREFLIGHTS,
    MAX_RELEASED_IDS, MAX_SERVER_REQUESTS_PER_SESSION, MAX_SESSION_INFOS, ORPHAN_WINDOW_US,
    RELEASE_MARK_MIN_AGE_US, REORDER_SLACK_US, STREAM_RESUME_HOLD_US, TENTATIVE_HOLD_US,
};
pub use exchange::{Exchange, InferenceInputs};
pub use prepare::{
    BodyPiece, PrepareScope, Prepared, PreparedEnd, PreparedPost, PreparedSse, Preparer,
};
pub use session::MAX_DERIVED_CONTEXTS;

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
