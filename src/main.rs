//! `mcp-trace` binary: parse arguments, run, map errors to exit status 2.

use std::process::ExitCode;

// The pipeline makes many short-lived allocations (JSON values, payload pieces); mimalloc
// serves them at a fraction of glibc malloc's cost (bench/README.md has the figures).
#[cfg(feature = "mimalloc")]
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

fn main() -> ExitCode {
    match mcp_trace::cli::run() {
        Ok(code) => code,
        Err(err) => {
            eprintln!("mcp-trace: {err:#}");
            ExitCode::from(2)
        }
    }
}
