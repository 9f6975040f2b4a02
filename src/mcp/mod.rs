//! MCP stage: [`HttpEvent`](crate::http::HttpEvent)s -> [`Exchange`]s.
//!
//! Finds MCP traffic by content, groups it into sessions, pairs each JSON-RPC
//! request with its response by (direction, id) within the session wherever
//! the response travels, classifies each exchange (report-schema.md section 3),
//! infers retries (section 4) and judges each repeat's hygiene (section 4b). Rows are released as they become final
//! (see [`Analyzer`] and the analyzer's "Release" notes), so memory follows
//! live state, not the capture.

mod analyzer;
mod classify;
mod counters;
mod exchange;
pub mod hops;
mod limits;
mod names;
mod prepare;
pub mod retry;
mod session;
mod texts;
mod trace_context;

pub use analyzer::{
    Analyzer, HOLD_LIMIT_US, MAX_BUFFERED_ROWS, MAX_EVENT_IDS_PER_SESSION, MAX_KNOWN_ENDPOINTS,
    MAX_LEGACY_SESSIONS, MAX_ORPHANS_PER_SESSION, MAX_PENDING_PER_SESSION, MAX_PENDING_PREFLIGHTS,
    MAX_RELEASED_IDS, MAX_SERVER_REQUESTS_PER_SESSION, MAX_SESSION_INFOS, ORPHAN_WINDOW_US,
    RELEASE_MARK_MIN_AGE_US, REORDER_SLACK_US, STREAM_RESUME_HOLD_US, TENTATIVE_HOLD_US,
};
pub use counters::McpCounters;
pub use exchange::{Exchange, Hop, InferenceInputs, SseMark};
pub use limits::McpLimits;
pub use names::{Kind, Layer, Outcome, RetryOrigin, StreamEnd, Transport};
pub use prepare::{
    BodyPiece, Prepared, PreparedEnd, PreparedEvents, PreparedPost, PreparedSse, Preparer,
};
pub use session::MAX_DERIVED_CONTEXTS;
pub use trace_context::TraceParent;

/// `--max-attempts` default: one call and two retries.
pub const DEFAULT_MAX_ATTEMPTS: u32 = 3;
/// `--backoff-factor` default.
pub const DEFAULT_BACKOFF_FACTOR: f64 = 1.5;
/// `--backoff-floor` default (ms).
pub const DEFAULT_BACKOFF_FLOOR_MS: i64 = 50;

/// Thresholds of retry and session inference (report-schema.md sections 4 and 4b).
#[derive(Debug, Clone, Copy)]
pub struct InferenceConfig {
    pub repeat_window_ms: i64,
    pub sdk_max_gap_ms: i64,
    pub manual_min_gap_ms: i64,
    pub session_gap_ms: i64,
    /// Attempts of one call beyond which `too_many_attempts` fires (section 4b).
    pub max_attempts: u32,
    /// `no_backoff`: each gap should be at least this many times the previous one...
    pub backoff_factor: f64,
    /// ...unless both are under this floor (ms), which is no backoff either way.
    pub backoff_floor_ms: i64,
    /// `--hop-window`: how long after an original without a response a gateway's copy may
    /// start (section 4c).
    pub hop_window_ms: i64,
}

impl Default for InferenceConfig {
    fn default() -> Self {
        InferenceConfig {
            repeat_window_ms: 10 * 60 * 1000,
            sdk_max_gap_ms: 2000,
            manual_min_gap_ms: 1000,
            session_gap_ms: 5 * 60 * 1000,
            max_attempts: DEFAULT_MAX_ATTEMPTS,
            backoff_factor: DEFAULT_BACKOFF_FACTOR,
            backoff_floor_ms: DEFAULT_BACKOFF_FLOOR_MS,
            hop_window_ms: hops::DEFAULT_HOP_WINDOW_MS,
        }
    }
}
