//! # mcp-trace
//!
//! A passive analyzer for Model Context Protocol traffic. Data flows one way,
//! one module per stage:
//!
//! ```text
//! capture  files (pcap, pcapng, .gz, stdin)  -> Frame      (and "this input is a HAR")
//! decode   Frame          -> Segment        link, IP (fragments), TCP headers
//! flow     Segment        -> StreamEvent    TCP reassembly: ordered bytes and explicit gaps
//! http     StreamEvent    -> HttpEvent      router, HTTP/1.x (h1/), exchanges, content decoding
//! har      HAR entries    -> HttpEvent      a producer at http's level (recorded exchanges)
//! rpc      body bytes     -> RpcMessage     JSON-RPC envelopes, incremental SSE
//! mcp      HttpEvent      -> Exchange       sessions, pairing by id, classification, retries
//! report   Exchange       -> files          JSONL, CSV, Parquet, sessions, summaries
//! ```
//!
//! No module imports one of a later stage. The stages between flow and the sink are
//! [`flow::StreamStage`]s, chained once by `pipeline` (a TLS stage will sit between flow and
//! http there).
//! `pipeline` wires the stages; `cli` turns arguments into a validated config.
//! Every stage counts what it could not use in [`anomaly::Stats`]: nothing is silently lost.
#![forbid(unsafe_code)]

pub mod anomaly;
pub mod buffers;
pub mod capture;
pub mod cli;
pub mod decode;
pub mod flow;
pub mod har;
pub mod hashing;
pub mod http;
pub mod limits;
pub mod mcp;
pub mod pipeline;
pub mod report;
pub mod rpc;
pub mod timestamp;
