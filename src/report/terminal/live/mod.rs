//! The terminal screen of `mcp-trace live` (stdout a terminal): exchanges as they complete,
//! counters by outcome and layer, retry chains and findings, and capture health.
//!
//! The live command makes a [`ScreenFeed`] on its capture thread (rows offered with
//! `try_send`, so the capture never waits for the screen) and runs [`run_screen`] on a
//! thread of its own with the receiver. [`LiveView`] is the screen's state without a
//! terminal, [`draw`] paints it; both are driven by tests through ratatui's `TestBackend`.

mod details;
mod draw;
mod feed;
mod health;
mod row;
mod run;
mod style;
mod table;
mod view;

pub use draw::draw;
pub use feed::{DEFAULT_FEED_CAPACITY, ScreenFeed, ScreenMsg};
pub use health::CaptureHealth;
pub use row::ScreenRow;
pub use run::run_screen;
pub use view::{DEFAULT_SCREEN_ROWS, KeyOutcome, LiveView, MAX_CHAIN_EVENTS, ScreenHeader};

#[cfg(test)]
mod tests;
