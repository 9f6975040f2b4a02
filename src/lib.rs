//! # mcp-trace
//!
//! A passive analyzer for Model Context Protocol traffic. Data flows one way,
//! one module per stage:
//!
//! ```text
//! stream   the words flow, tls and http share: StreamEvent, StreamStage + Chain, ConnectionRecord
//! capture  files (pcap, pcapng, .gz, stdin)  -> Frame      (and "this input is a HAR")
//! decode   Frame          -> Segment        link, IP (fragments), TCP headers
//! flow     Segment        -> StreamEvent    TCP reassembly: ordered bytes and explicit gaps
//! tls      StreamEvent    -> StreamEvent    records, handshake, key log, decryption
//! http     StreamEvent    -> HttpEvent      router, HTTP/1.x (h1/), HTTP/2 (h2/), exchanges,
//!                                           content decoding
//! har      HAR entries    -> HttpEvent      a producer at http's level (recorded exchanges)
//! rpc      body bytes     -> RpcMessage     JSON-RPC envelopes, incremental SSE
//! mcp      HttpEvent      -> Exchange       sessions, pairing by id, classification, retries
//! report   Exchange       -> files          JSONL, CSV, Parquet, terminal, HTML, OTLP spans,
//!                                           sessions, summaries
//! ```
//!
//! # Stage order
//!
//! The stages, in order: stream, capture, decode, flow, tls, http, har, rpc, mcp, report
//! (`stream` is a vocabulary, not a step: first, so that it imports no stage). A module
//! of one stage may use the modules of its own and of earlier stages, never of a later one,
//! and no two files import each other in a circle (a `mod.rs` re-exporting its children
//! aside). Outside the order:
//!
//! - `anomaly`, `buffers`, `contract`, `counters`, `display`, `hashing` and `timestamp` (and the test-only
//!   `testing`) are shared utilities: every stage may use them, and they use no stage (only each
//!   other);
//! - `cli` and `pipeline` (and the binary's `main`) wire the stages together: they may use
//!   every module, and no stage or utility uses them.
//!
//! `tests/layers.rs` checks these rules on the source and names every violation.
//!
//! `cli` turns arguments into a validated config; `pipeline` runs the stages on it.
//! The stages between flow and the sink are [`stream::StreamStage`]s, chained once by
//! `pipeline`.
//!
//! Every stage counts what it could not use in counters of its own, keyed by the names of
//! [`anomaly`] and summed into [`report::RunStats`]: nothing is silently lost.
#![forbid(unsafe_code)]

pub mod anomaly;
pub mod buffers;
pub mod capture;
pub mod cli;
pub mod contract;
pub mod counters;
pub mod decode;
pub mod display;
pub mod flow;
pub mod har;
pub mod hashing;
pub mod http;
pub mod mcp;
pub mod pipeline;
pub mod report;
pub mod rpc;
pub mod stream;
#[cfg(test)]
pub mod testing;
pub mod timestamp;
pub mod tls;
