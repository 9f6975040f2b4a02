//! `mcp-trace` binary: parse arguments, run, map errors to exit status 2.

use std::process::ExitCode;

// The pipeline makes many short-lived allocations (JSON values, payload pieces); mimalloc
// serves them at a fraction of glibc malloc's cost (bench/README.md has the figures).
#[cfg(feature = "mimalloc")]
#[global_allocator]
static ALLOCATOR: WordAligned = WordAligned;

/// mimalloc, asked through `mi_malloc` when the alignment is at most a word. `MiMalloc` calls
/// `mi_malloc_aligned` for every allocation, whose fast path only covers blocks up to 1 KB:
/// packet buffers and bodies took its slow path (bench/README.md). Every mimalloc
/// block is word-aligned; larger alignments keep the aligned calls.
#[cfg(feature = "mimalloc")]
struct WordAligned;

#[cfg(feature = "mimalloc")]
const WORD: usize = std::mem::size_of::<usize>();

// SAFETY: each call forwards to the mimalloc function for the same contract; `mi_malloc`
// and `mi_realloc` return word-aligned blocks, which serves any `align <= WORD`.
#[cfg(feature = "mimalloc")]
unsafe impl std::alloc::GlobalAlloc for WordAligned {
    unsafe fn alloc(&self, layout: std::alloc::Layout) -> *mut u8 {
        if layout.align() <= WORD {
            // SAFETY: see the impl.
            unsafe { libmimalloc_sys::mi_malloc(layout.size()).cast() }
        } else {
            // SAFETY: see the impl.
            unsafe { mimalloc::MiMalloc.alloc(layout) }
        }
    }

    unsafe fn alloc_zeroed(&self, layout: std::alloc::Layout) -> *mut u8 {
        if layout.align() <= WORD {
            // SAFETY: see the impl.
            unsafe { libmimalloc_sys::mi_zalloc(layout.size()).cast() }
        } else {
            // SAFETY: see the impl.
            unsafe { mimalloc::MiMalloc.alloc_zeroed(layout) }
        }
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: std::alloc::Layout) {
        // SAFETY: see the impl (mimalloc frees aligned and plain blocks alike).
        unsafe { mimalloc::MiMalloc.dealloc(ptr, layout) }
    }

    unsafe fn realloc(&self, ptr: *mut u8, layout: std::alloc::Layout, new_size: usize) -> *mut u8 {
        if layout.align() <= WORD {
            // SAFETY: see the impl.
            unsafe { libmimalloc_sys::mi_realloc(ptr.cast(), new_size).cast() }
        } else {
            // SAFETY: see the impl.
            unsafe { mimalloc::MiMalloc.realloc(ptr, layout, new_size) }
        }
    }
}

/// `mi_option_purge_delay` in mimalloc.h (v3, the version libmimalloc-sys builds); the
/// binding crate has no constant for it.
#[cfg(feature = "mimalloc")]
const MI_OPTION_PURGE_DELAY: libmimalloc_sys::mi_option_t = 15;

/// Freed pages go back to the OS after this many milliseconds instead of mimalloc's default
/// second: polars frees its buffers after every row group, and within a second they still
/// count as resident, raising the peak. A much shorter delay costs CPU: pages given back at
/// once are faulted in and zeroed again (bench/README.md has the figures).
#[cfg(feature = "mimalloc")]
const PURGE_DELAY_MS: std::ffi::c_long = 100;

/// Sets [`PURGE_DELAY_MS`]; `MIMALLOC_PURGE_DELAY` in the environment still wins.
#[cfg(feature = "mimalloc")]
fn tune_allocator() {
    if std::env::var_os("MIMALLOC_PURGE_DELAY").is_none() {
        // SAFETY: sets an integer option, which mimalloc reads atomically at any time.
        unsafe { libmimalloc_sys::mi_option_set(MI_OPTION_PURGE_DELAY, PURGE_DELAY_MS) };
    }
}

/// The run is over and the process exits: mimalloc's exit handler would otherwise give every
/// page still waiting for its purge delay back to the OS one `madvise` at a time, which
/// exiting does anyway.
#[cfg(feature = "mimalloc")]
fn skip_purge_at_exit() {
    // SAFETY: as in `tune_allocator`; -1 is mimalloc's "never purge".
    unsafe { libmimalloc_sys::mi_option_set(MI_OPTION_PURGE_DELAY, -1) };
}

fn main() -> ExitCode {
    #[cfg(feature = "mimalloc")]
    tune_allocator();
    let code = match mcp_trace::cli::run() {
        Ok(code) => code,
        Err(err) => {
            eprintln!("mcp-trace: {err:#}");
            ExitCode::from(2)
        }
    };
    #[cfg(feature = "mimalloc")]
    skip_purge_at_exit();
    code
}

#[cfg(test)]
#[cfg(feature = "mimalloc")]
mod tests {
    use super::*;

    /// Every alignment is honoured, on both sides of the word boundary and of mimalloc's
    /// 1 KB fast-path limit, through allocation, zeroed allocation and growth.
    #[test]
    fn the_allocator_honours_every_alignment() {
        for align in [1usize, 2, 8, 16, 32, 64, 4096] {
            for size in [1usize, 7, 24, 100, 1000, 1500, 70_000] {
                let layout = std::alloc::Layout::from_size_align(size, align).unwrap();
                // SAFETY: non-zero size; each block is freed with its layout.
                unsafe {
                    let p = std::alloc::alloc(layout);
                    assert!(
                        !p.is_null() && p.addr().is_multiple_of(align),
                        "{size} {align}"
                    );
                    p.write_bytes(0xab, size);
                    let q = std::alloc::realloc(p, layout, size * 3);
                    assert!(
                        !q.is_null() && q.addr().is_multiple_of(align),
                        "{size} {align} grown"
                    );
                    assert_eq!(*q.add(size - 1), 0xab, "contents kept by realloc");
                    std::alloc::dealloc(
                        q,
                        std::alloc::Layout::from_size_align(size * 3, align).unwrap(),
                    );
                    let z = std::alloc::alloc_zeroed(layout);
                    assert!(
                        !z.is_null() && z.addr().is_multiple_of(align),
                        "{size} {align} zeroed"
                    );
                    assert!(std::slice::from_raw_parts(z, size).iter().all(|&b| b == 0));
                    std::alloc::dealloc(z, layout);
                }
            }
        }
    }

    /// Option 15 is the purge delay: its default (1000 ms, v3's options.c) before, ours after.
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
        assert_eq!(after, 100);
        assert_eq!(after, PURGE_DELAY_MS);
    }
}
