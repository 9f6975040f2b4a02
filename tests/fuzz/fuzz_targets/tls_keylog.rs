//! Key log reader (NSS format, RFC 9850) and pcapng Decryption Secrets Blocks:
//! `[limit u8][mode u8][bytes]`. Mode 0: text read whole and through a reader of a
//! small buffer (cut at every few bytes), which must agree; mode 1: the bytes as a
//! Decryption Secrets Block. The limit bounds the client randoms kept.
#![no_main]
use libfuzzer_sys::fuzz_target;
use mcp_trace::tls::KeyLog;
use mcp_trace::tls::keylog::MAX_REPORTED_LINES;
use std::io::BufReader;

/// Longest run of hex digits in `text`.
fn longest_hex_run(text: &str) -> usize {
    let (mut best, mut run) = (0, 0);
    for b in text.bytes() {
        run = if b.is_ascii_hexdigit() { run + 1 } else { 0 };
        best = best.max(run);
    }
    best
}

fuzz_target!(|data: &[u8]| {
    let mut input = mcp_trace_fuzz::Input::new(data);
    let limit = usize::from(input.u8() % 8);
    let mode = input.u8();
    let bytes = input.rest();
    let mut whole = KeyLog::with_limit(limit);
    if mode & 1 == 0 {
        whole.add_text("fuzz", bytes);
        let capacity = usize::from(mode >> 1).max(1);
        let mut pieces = KeyLog::with_limit(limit);
        pieces
            .read_from("fuzz", BufReader::with_capacity(capacity, bytes))
            .expect("a slice reads without error");
        assert_eq!(whole.stats(), pieces.stats(), "buffer of {capacity} bytes");
        assert_eq!(whole.len(), pieces.len());
    } else {
        whole.add_decryption_secrets_block("fuzz", bytes);
    }
    let stats = whole.stats();
    assert!(whole.len() <= limit, "{} client randoms over {limit}", whole.len());
    assert!(stats.malformed_lines.len() <= MAX_REPORTED_LINES);
    assert!(stats.malformed_lines.len() as u64 <= stats.malformed);
    let newlines = bytes.iter().filter(|b| **b == b'\n').count() as u64;
    assert!(stats.lines <= newlines + 1, "{} lines of {newlines} newlines", stats.lines);
    assert!(stats.secrets + stats.unknown_labels <= stats.lines);
    for pair in stats.malformed_lines.windows(2) {
        assert!(pair[0].1 < pair[1].1, "malformed lines out of order");
    }
    // Neither a client random (64 hex digits) nor a secret (64 or 96) in what is printed.
    assert!(longest_hex_run(&format!("{whole:?}")) < 64, "hex in Debug output");
});
