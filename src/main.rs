//! `mcp-trace` binary: parse arguments, run, map errors to exit status 2.

use std::process::ExitCode;

// The pipeline makes many short-lived allocations (JSON values, payload pieces); mimalloc
// serves them at a fraction of glibc malloc's cost (bench/README.md has the figures).
#[cfg(feature = "mimalloc")]
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

/// `mi_option_purge_delay` in mimalloc.h (v3, the version libmimalloc-sys builds); the
/// binding crate has no constant for it.
#[cfg(feature = "mimalloc")]
const MI_OPTION_PURGE_DELAY: libmimalloc_sys::mi_option_t = 15;

/// Freed pages go back to the OS after 1 ms instead of mimalloc's default second. Polars
/// frees its buffers after every row group, and within the default delay they still count as
/// resident: about 40 MB of peak RSS on a 1 GB capture written as Parquet (bench/README.md).
/// `MIMALLOC_PURGE_DELAY` in the environment still wins.
#[cfg(feature = "mimalloc")]
fn tune_allocator() {
    if std::env::var_os("MIMALLOC_PURGE_DELAY").is_none() {
        // SAFETY: sets an integer option, which mimalloc reads atomically at any time.
        unsafe { libmimalloc_sys::mi_option_set(MI_OPTION_PURGE_DELAY, 1) };
    }
}

fn main() -> ExitCode {
    #[cfg(feature = "mimalloc")]
    tune_allocator();
    match mcp_trace::cli::run() {
        Ok(code) => code,
        Err(err) => {
            eprintln!("mcp-trace: {err:#}");
            ExitCode::from(2)
        }
    }
}

#[cfg(all(test, feature = "mimalloc"))]
mod tests {
    use super::*;

    /// Option 15 is the purge delay: its default (1000 ms, v3's options.c) before, 1 ms after.
    #[test]
    fn purge_delay_is_option_15_and_set() {
        if std::env::var_os("MIMALLOC_PURGE_DELAY").is_some() {
            eprintln!("MIMALLOC_PURGE_DELAY is set: the default cannot be checked");
            return;
        }
        // SAFETY: reads an integer option.
        let before = unsafe { libmimalloc_sys::mi_option_get(MI_OPTION_PURGE_DELAY) };
        assert_eq!(before, 1000);
        tune_allocator();
        // SAFETY: as above.
        let after = unsafe { libmimalloc_sys::mi_option_get(MI_OPTION_PURGE_DELAY) };
        assert_eq!(after, 1);
    }
}
