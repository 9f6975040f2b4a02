//! One integration test binary; one module per topic.
mod support;

mod capture_corpus;
mod cli;
mod har_corpus;
mod har_vs_pcap;
mod robustness;
mod samples_truth;
mod seed_cases;
mod zeek_http;
