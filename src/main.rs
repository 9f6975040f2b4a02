//! `mcp-trace` binary: parse arguments, run, map errors to exit status 2.

use std::process::ExitCode;

fn main() -> ExitCode {
    match mcp_trace::cli::run() {
        Ok(code) => code,
        Err(err) => {
            eprintln!("mcp-trace: {err:#}");
            ExitCode::from(2)
        }
    }
}
