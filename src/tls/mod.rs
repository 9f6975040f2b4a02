//! TLS stage: a connection's two byte streams -> the same streams with TLS
//! removed, as [`StreamEvent`]s, for the HTTP stage.
//!
//! In: the flow stage's [`StreamEvent`]s of each connection, both directions,
//! in capture order; the secrets of key logs and Decryption Secrets Blocks
//! ([`KeyLog`]). Out: for a connection that is not TLS, every event unchanged;
//! for a TLS connection, `Opened`, `Fin`, `Rst` and `Closed` unchanged, and
//! `Data` carrying decrypted application data only. A TLS connection that
//! cannot be decrypted hands on no `Data` at all: nothing is guessed.
//! Per connection it reports handshake facts ([`TlsFacts`]: version, suite,
//! SNI, ALPN offered and chosen, resumption, client random, never a secret),
//! exactly one [`Decryption`] value, and where every byte went ([`TlsBytes`]:
//! handshake, decrypted application data, or undecrypted with a reason; they
//! add up to the bytes received). Memory is bounded by the named limits of
//! each part: [`record::MAX_RECORD_FRAGMENT`], [`handshake::MAX_HANDSHAKE_MESSAGE`],
//! [`keylog::MAX_KEYLOG_ENTRIES`], [`session::MAX_CACHED_SESSIONS`]. Never panics.
//!
//! Rules where decisions are made:
//! 1. A stream is TLS when the first three bytes of the first side that sends
//!    are a record header's content type (20-23) and version (3.0-3.4), or the
//!    client's first four the start of an SSL 2.0-compatible ClientHello; the
//!    events before that decision are held (at most four bytes' worth).
//! 2. Keys come from the key log by the ClientHello's random: TLS 1.3 traffic
//!    secrets, TLS 1.2 `CLIENT_RANDOM` master secrets. A resumed TLS 1.2
//!    session whose random is not logged takes the master secret of the
//!    earlier full handshake with the same session id or ticket in the capture.
//! 3. TLS 1.3 keys of a direction go early -> handshake -> application, moved
//!    on by EndOfEarlyData and Finished; a record that fails under the current
//!    keys is tried under the later ones (a rejected 0-RTT, a handshake whose
//!    secrets were not logged), and KeyUpdate derives the next secret.
//!    0-RTT data before the ServerHello is tried with the suites its secret's
//!    length allows.
//! 4. After a gap the record reader looks for the next plausible header
//!    within [`record::RESYNC_SCAN_LIMIT`] bytes, and the next record is tried
//!    at the next [`decrypt::MAX_SEQ_SEARCH`] sequence numbers. The gap is
//!    handed on as [`GapLen::Unknown`](crate::flow::GapLen): the plaintext length of lost records
//!    is unknown, and no number is made up.
//! 5. A record that fails authentication is counted (`decrypt_failed`) and
//!    skipped; after [`MAX_FAILURES_IN_ROW`] failures in a row the direction is
//!    given up (`tls.decrypt_gave_up`).
//! 6. `decryption` is `plaintext` (never TLS), `handshake_not_captured` (no
//!    ClientHello or ServerHello), `unsupported_cipher` (see [`cipher::SUITES`]:
//!    decrypted are the three TLS 1.3 suites and, in TLS 1.2, AES-GCM,
//!    ChaCha20-Poly1305 and AES-CBC with HMAC; not TLS 1.0/1.1, SSL 3.0, CCM,
//!    RC4, 3DES, NULL),
//!    `no_key`, `decrypt_failed` (a direction given up, or records failed and
//!    none decrypted), else `decrypted`.

pub mod cbc;
pub mod cipher;
mod connection;
#[cfg(test)]
mod corpus_tests;
pub mod decrypt;
pub mod facts;
pub mod handshake;
pub mod keylog;
pub mod record;
pub mod schedule;
pub mod session;
#[cfg(test)]
mod tests;

pub use connection::{TlsConnection, TlsContext};
pub use facts::{Decryption, TlsBytes, TlsFacts};
pub use keylog::{KeyLog, KeyLogStats};

use crate::anomaly::Stats;
use crate::flow::{StreamEvent, StreamEventKind};
use std::collections::HashMap;

/// Records of one direction failing authentication in a row before it is given up.
pub const MAX_FAILURES_IN_ROW: u32 = 4;

/// Anomaly names of this stage.
pub mod anomaly {
    /// A record header announcing more than the protocol allows.
    pub const RECORD_TOO_LONG: &str = "tls.record_too_long";
    /// A record header no TLS peer sends, in a stream that began as TLS.
    pub const BAD_RECORD_HEADER: &str = "tls.bad_record_header";
    /// A handshake message over the reassembly bound.
    pub const HANDSHAKE_TOO_LONG: &str = "tls.handshake_too_long";
    /// A handshake message whose fields do not fit.
    pub const BAD_HANDSHAKE: &str = "tls.bad_handshake";
    /// A direction given up after records failed authentication.
    pub const DECRYPT_GAVE_UP: &str = "tls.decrypt_gave_up";
    /// A decrypted TLS 1.3 record with an unknown inner content type.
    pub const BAD_INNER_CONTENT_TYPE: &str = "tls.bad_inner_content_type";
    /// A KeyUpdate without application keys to update.
    pub const KEY_UPDATE_FAILED: &str = "tls.key_update_failed";
}

/// What the stage reports about one connection when it ends.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ConnectionReport {
    /// The flow stage's stream index.
    pub stream: u64,
    /// The contract's `decryption` value.
    pub decryption: Decryption,
    /// Handshake facts (empty when not TLS).
    pub facts: TlsFacts,
    /// Byte accounting (zero when not TLS).
    pub bytes: TlsBytes,
}

/// The TLS stage for any number of connections: one [`TlsConnection`] per stream.
#[derive(Debug, Default)]
pub struct TlsStage {
    ctx: TlsContext,
    conns: HashMap<u64, TlsConnection>,
    reports: Vec<ConnectionReport>,
}

impl TlsStage {
    /// A stage with the secrets of `keylog`.
    pub fn new(keylog: KeyLog) -> TlsStage {
        TlsStage {
            ctx: TlsContext {
                keylog,
                sessions: Default::default(),
            },
            ..TlsStage::default()
        }
    }

    /// The secrets, to add those of Decryption Secrets Blocks as the capture is read.
    pub fn keylog_mut(&mut self) -> &mut KeyLog {
        &mut self.ctx.keylog
    }

    /// Takes one flow event; appends the events for the next stage to `out`.
    pub fn push(&mut self, event: StreamEvent, stats: &mut Stats, out: &mut Vec<StreamEvent>) {
        let stream = event.stream;
        let closed = matches!(event.kind, StreamEventKind::Closed { .. });
        if let StreamEventKind::Opened { .. } = event.kind
            && let Some(mut old) = self.conns.remove(&stream)
        {
            // A stream index opened again: the stale state ends first.
            old.finish(&mut self.ctx, stats, out);
            self.report(stream, &old);
        }
        let conn = self
            .conns
            .entry(stream)
            .or_insert_with(|| TlsConnection::new(stream));
        conn.push(event, &mut self.ctx, stats, out);
        if closed && let Some(conn) = self.conns.remove(&stream) {
            self.report(stream, &conn);
        }
    }

    /// End of input: every connection still open hands on what it can.
    pub fn finish(&mut self, stats: &mut Stats, out: &mut Vec<StreamEvent>) {
        let mut streams: Vec<u64> = self.conns.keys().copied().collect();
        streams.sort_unstable();
        for stream in streams {
            if let Some(mut conn) = self.conns.remove(&stream) {
                conn.finish(&mut self.ctx, stats, out);
                self.report(stream, &conn);
            }
        }
    }

    /// Capture time of the oldest bytes the stage holds and has not handed on.
    pub fn earliest_held_ts(&self) -> Option<i64> {
        self.conns
            .values()
            .filter_map(TlsConnection::earliest_held_ts)
            .min()
    }

    /// Handshake facts of an open connection (the HTTP stage's router reads the chosen ALPN).
    pub fn facts(&self, stream: u64) -> Option<&TlsFacts> {
        self.conns.get(&stream).map(TlsConnection::facts)
    }

    /// The reports of connections that ended since the last call.
    pub fn take_reports(&mut self) -> Vec<ConnectionReport> {
        std::mem::take(&mut self.reports)
    }

    fn report(&mut self, stream: u64, conn: &TlsConnection) {
        self.reports.push(ConnectionReport {
            stream,
            decryption: conn.decryption(),
            facts: conn.facts().clone(),
            bytes: conn.bytes().clone(),
        });
    }
}
