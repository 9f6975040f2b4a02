//! # mcp-trace
//!
//! A passive analyzer for Model Context Protocol traffic. Data flows one way,
//! one module per stage:
//!
//! ```text
//! capture  files (pcap, pcapng, .gz, stdin)  -> Frame
//!          HAR exports                       -> HttpEvent (rejoins at `mcp`)
//! decode   Frame          -> Segment        link, IP (fragments), TCP headers
//! flow     Segment        -> StreamEvent    TCP reassembly: ordered bytes and explicit gaps
//! http     StreamEvent    -> HttpEvent      HTTP/1.x framing, pairing, content decoding
//! rpc      body bytes     -> RpcMessage     JSON-RPC envelopes, incremental SSE
//! mcp      HttpEvent      -> Exchange       sessions, pairing by id, classification, retries
//! report   Exchange       -> files          JSONL, CSV, Parquet, sessions, summaries
//! ```
//!
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
