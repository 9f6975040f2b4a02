//! One integration test binary; one module per topic.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::indexing_slicing)]
mod support;

mod capture_corpus;
mod capture_health;
mod cli;
mod golden;
mod har_corpus;
mod har_vs_pcap;
mod hops;
mod html_report;
mod http2_corpus;
mod http2_mcp;
mod layers;
mod live_cli;
mod otlp;
mod retry_hygiene;
mod robustness;
mod samples_truth;
mod secrets;
mod seed_cases;
mod tls_corpus;
mod tls_rustls;
mod tls_wait;
mod zeek_http;
