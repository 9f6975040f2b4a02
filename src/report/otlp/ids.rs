//! Deterministic trace and span ids (report-schema.md section 6): the same input analyzed
//! twice gives the same ids, so re-importing a capture does not duplicate its traces.

use sha2::{Digest, Sha256};

/// What every span id of one run is derived from: the names of its inputs, in order.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RunKey([u8; 32]);

impl RunKey {
    /// The key of a run over these inputs (file names, as the `capture` column gives them).
    pub fn of_inputs<S: AsRef<str>>(inputs: &[S]) -> RunKey {
        let mut h = Sha256::new();
        h.update(b"mcp-trace/run");
        for name in inputs {
            let name = name.as_ref().as_bytes();
            h.update((name.len() as u64).to_be_bytes());
            h.update(name);
        }
        RunKey(h.finalize().into())
    }

    /// The span of exchange `exchange_id`.
    pub fn span_id(&self, exchange_id: u64) -> [u8; 8] {
        let mut h = Sha256::new();
        h.update(b"mcp-trace/span");
        h.update(self.0);
        h.update(exchange_id.to_be_bytes());
        nonzero(prefix(&h.finalize()))
    }
}

/// The trace of a session's spans that join no caller's trace: the first 16 bytes of the
/// SHA-256 of its `session_key`.
pub fn session_trace_id(session_key: &str) -> [u8; 16] {
    nonzero(prefix(&Sha256::digest(session_key.as_bytes())))
}

/// The session's root span, under which its spans without a caller's span sit.
pub fn session_root_span_id(session_key: &str) -> [u8; 8] {
    let mut h = Sha256::new();
    h.update(b"mcp-trace/session");
    h.update(session_key.as_bytes());
    nonzero(prefix(&h.finalize()))
}

fn prefix<const N: usize>(digest: &[u8]) -> [u8; N] {
    let mut out = [0u8; N];
    for (o, d) in out.iter_mut().zip(digest) {
        *o = *d;
    }
    out
}

/// An all-zero id is invalid in OTLP; a digest prefix is one with probability 2^-64.
fn nonzero<const N: usize>(mut id: [u8; N]) -> [u8; N] {
    if id.iter().all(|&b| b == 0)
        && let Some(last) = id.last_mut()
    {
        *last = 1;
    }
    id
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ids_are_stable_and_distinct() {
        let run = RunKey::of_inputs(&["a.pcap"]);
        assert_eq!(run, RunKey::of_inputs(&["a.pcap"]));
        assert_ne!(run, RunKey::of_inputs(&["b.pcap"]));
        // Names are length-prefixed: ["ab", "c"] is not ["a", "bc"].
        assert_ne!(
            RunKey::of_inputs(&["ab", "c"]),
            RunKey::of_inputs(&["a", "bc"])
        );
        assert_eq!(run.span_id(7), run.span_id(7));
        assert_ne!(run.span_id(7), run.span_id(8));
        // The contract's session trace: the first 16 bytes of SHA-256(session_key).
        assert_eq!(
            session_trace_id("abc")[..4],
            [0xba, 0x78, 0x16, 0xbf],
            "sha256(\"abc\") starts ba7816bf"
        );
        assert_ne!(session_root_span_id("abc"), session_root_span_id("abd"));
        assert_eq!(nonzero([0u8; 8]), [0, 0, 0, 0, 0, 0, 0, 1]);
    }
}
