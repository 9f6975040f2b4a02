//! Recycled byte buffers for what is made once per packet: its TCP payload, and its frame's
//! bytes when several inputs are merged (one input is decoded in the read buffer). Both are
//! usually over a kilobyte, where an allocation leaves the allocator's fast path; a thread
//! that gives its spent buffers back takes them again for the next packets
//! (measured in bench/README.md). Each thread keeps its own few, so nothing is shared and a
//! buffer freed on another thread simply goes back to the allocator.

use std::cell::RefCell;

/// Buffers kept per thread: a frame and its payload are in flight at a time, plus the
/// segments the reassembler holds out of order, which come back later or not at all.
const KEPT: usize = 32;
/// Larger buffers (a 64 KB loopback segment fits) go back to the allocator, so the kept ones
/// stay small: at most `KEPT` × this per thread.
const KEPT_CAPACITY: usize = 128 * 1024;

thread_local! {
    static SPARE: RefCell<Vec<Vec<u8>>> = const { RefCell::new(Vec::new()) };
}

/// An owned copy of `bytes`, in a recycled buffer when this thread has one.
pub fn copy_of(bytes: &[u8]) -> Vec<u8> {
    if bytes.is_empty() {
        // An empty payload (a bare ACK) costs nothing and is seldom given back.
        return Vec::new();
    }
    let mut buf = SPARE
        .try_with(|spare| spare.borrow_mut().pop())
        .ok()
        .flatten()
        .unwrap_or_default();
    buf.extend_from_slice(bytes);
    buf
}

/// Gives a spent buffer back to this thread's spares (or to the allocator when there are
/// enough, or it is too large to keep).
pub fn recycle(mut buf: Vec<u8>) {
    if buf.capacity() == 0 || buf.capacity() > KEPT_CAPACITY {
        return;
    }
    buf.clear();
    let _ = SPARE.try_with(|spare| {
        let mut spare = spare.borrow_mut();
        if spare.len() < KEPT {
            spare.push(buf);
        }
    });
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_recycled_buffer_is_reused_and_holds_only_the_new_bytes() {
        let first = copy_of(&[7u8; 1500]);
        let ptr = first.as_ptr();
        recycle(first);
        let second = copy_of(b"abc");
        assert_eq!(second, b"abc");
        assert_eq!(second.as_ptr(), ptr, "the spare buffer was taken again");
        assert!(second.capacity() >= 1500);
    }

    #[test]
    fn oversized_and_surplus_buffers_are_not_kept() {
        // Runs on its own test thread: the spares start empty.
        recycle(Vec::with_capacity(KEPT_CAPACITY + 1));
        assert_eq!(SPARE.with(|s| s.borrow().len()), 0);
        for _ in 0..KEPT + 5 {
            recycle(vec![1u8; 10]);
        }
        assert_eq!(SPARE.with(|s| s.borrow().len()), KEPT);
        assert!(SPARE.with(|s| s.borrow().iter().all(Vec::is_empty)));
    }
}
