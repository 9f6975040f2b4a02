//! TLS stage: a connection's two byte streams -> the same streams with TLS
//! removed, as [`StreamEvent`]s, for the HTTP stage.
//!
//! In: the flow stage's [`StreamEvent`]s of each connection, both directions,
//! in capture order; the secrets of key logs ([`KeyLog`]) and of the capture's
//! Decryption Secrets Blocks ([`CaptureSecrets`], each taken for the packets after it). Out: for a connection that is not TLS, every event unchanged;
//! for a TLS connection, `Opened`, `Fin`, `Rst` and `Closed` unchanged, and
//! `Data` carrying decrypted application data only. A TLS connection that
//! cannot be decrypted hands on no `Data` at all: nothing is guessed. Data that
//! did decrypt stays handed on when the connection fails later (a TLS 1.2
//! renegotiation whose keys are not logged, 0-RTT data before a ServerHello
//! the capture lacks); the connection's one [`Decryption`] value then names
//! the failure.
//! Per connection it fills the `Closed` event's record ([`TlsSummary`](crate::stream::TlsSummary)):
//! handshake facts (version, suite, SNI, ALPN offered and chosen, resumption, client random,
//! never a secret), exactly one [`Decryption`] value, and where every byte went
//! ([`TlsBytes`]: handshake, decrypted application data, or undecrypted with a reason; they
//! add up to the bytes received). Memory is bounded by the named limits of
//! each part: [`record::MAX_RECORD_FRAGMENT`], [`handshake::MAX_HANDSHAKE_MESSAGE`],
//! [`keylog::MAX_KEYLOG_ENTRIES`], [`session::MAX_CACHED_SESSIONS`], and for connections
//! waiting for secrets that come late, [`TlsLimits`] (by default
//! [`waiting::MAX_WAITING_BYTES_PER_CONNECTION`], [`waiting::MAX_WAITING_BYTES`]). Never panics.
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
//!    Secrets missing at the ServerHello may still come from the capture: the
//!    connection then waits for them, within a bound ([`waiting`]).
//! 3. TLS 1.3 keys of a direction go early -> handshake -> application, moved
//!    on by EndOfEarlyData and Finished; a record that fails under the current
//!    keys is tried under the later ones (a rejected 0-RTT, a handshake whose
//!    secrets were not logged), and KeyUpdate derives the next secret.
//!    0-RTT data before the ServerHello is tried with the suites its secret's
//!    length allows.
//! 4. After a gap the record reader looks for the next plausible header
//!    within [`record::RESYNC_SCAN_LIMIT`] bytes, and the next record is tried
//!    at the next [`decrypt::MAX_SEQ_SEARCH`] sequence numbers. The gap is
//!    handed on as [`GapLen::Unknown`](crate::stream::GapLen): the plaintext length of lost records
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
mod counters;
pub mod decrypt;
pub mod facts;
pub mod handshake;
pub mod keylog;
pub mod record;
pub mod schedule;
pub mod session;
#[cfg(test)]
mod tests;
pub mod waiting;

pub use connection::{TlsConnection, TlsContext};
pub use counters::TlsCounters;
pub use facts::{TlsBytes, TlsFacts};
pub use keylog::{KeyLog, KeyLogStats};
pub use waiting::TlsLimits;

use crate::capture::CaptureSecrets;
use crate::counters::Merge;
use crate::hashing::HashMap;
use crate::stream::{ConnectionRecord, Decryption, StreamEvent, StreamEventKind, StreamStage};
use crate::timestamp::CaptureTime;
use arcstr::ArcStr;
use std::sync::Arc;

/// Records of one direction failing authentication in a row before it is given up.
pub const MAX_FAILURES_IN_ROW: u32 = 4;

/// Anomalies of this stage.
pub mod anomaly {
    use crate::anomaly::Anomaly;

    /// A record header announcing more than the protocol allows.
    pub const RECORD_TOO_LONG: Anomaly = Anomaly::TlsRecordTooLong;
    /// A record header no TLS peer sends, in a stream that began as TLS.
    pub const BAD_RECORD_HEADER: Anomaly = Anomaly::TlsBadRecordHeader;
    /// A handshake message over the reassembly bound.
    pub const HANDSHAKE_TOO_LONG: Anomaly = Anomaly::TlsHandshakeTooLong;
    /// A handshake message whose fields do not fit.
    pub const BAD_HANDSHAKE: Anomaly = Anomaly::TlsBadHandshake;
    /// A direction given up after records failed authentication.
    pub const DECRYPT_GAVE_UP: Anomaly = Anomaly::TlsDecryptGaveUp;
    /// A decrypted TLS 1.3 record with an unknown inner content type.
    pub const BAD_INNER_CONTENT_TYPE: Anomaly = Anomaly::TlsBadInnerContentType;
    /// A KeyUpdate without application keys to update.
    pub const KEY_UPDATE_FAILED: Anomaly = Anomaly::TlsKeyUpdateFailed;
    /// A connection waiting for its secrets past the bytes it may hold: read without them.
    pub const KEY_WAIT_LIMIT: Anomaly = Anomaly::TlsKeyWaitLimit;
}

/// The TLS stage for any number of connections: one [`TlsConnection`] per stream that
/// sent data, until it is known to be plaintext.
#[derive(Debug, Default)]
pub struct TlsStage {
    ctx: TlsContext,
    /// Streams with TLS state: TLS, or data seen and not yet decided.
    conns: HashMap<u64, Box<TlsConnection>>,
    /// Open streams without TLS state: `true` when decided plaintext, `false` before any data.
    passing: HashMap<u64, bool>,
    /// The capture's Decryption Secrets Blocks, and how many of them are in the key log.
    capture_secrets: CaptureSecrets,
    secrets_taken: usize,
}

impl TlsStage {
    /// A stage with the secrets of `keylog`.
    pub fn new(keylog: KeyLog) -> TlsStage {
        TlsStage::shared(Arc::new(keylog))
    }

    /// A stage reading the key log every thread shares.
    pub fn shared(keylog: Arc<KeyLog>) -> TlsStage {
        TlsStage {
            ctx: TlsContext {
                keylog,
                ..TlsContext::default()
            },
            ..TlsStage::default()
        }
    }

    /// The stage also reads the capture's Decryption Secrets Blocks from `secrets`, each for
    /// the events of the frames after it; while more may come, a connection whose secrets
    /// are missing waits for them.
    pub fn with_capture_secrets(mut self, secrets: CaptureSecrets) -> TlsStage {
        self.ctx.wait.enabled = secrets.may_grow();
        self.capture_secrets = secrets;
        self
    }

    /// The stage with the bounds of `limits`.
    pub fn with_limits(mut self, limits: TlsLimits) -> TlsStage {
        self.ctx.wait.limits = limits;
        self
    }

    /// Bytes the connections waiting for their secrets hold.
    pub fn waiting_bytes(&self) -> usize {
        self.ctx.wait.held()
    }

    /// Connections waiting for their secrets.
    pub fn waiting_connections(&self) -> usize {
        self.ctx.wait.waiting().count()
    }

    /// Adds the capture's blocks that apply to `frame` to the key log (copied first if
    /// another thread's stage shares it); whether one was a TLS key log.
    fn take_capture_secrets(&mut self, frame: u64) -> bool {
        let TlsStage {
            ctx,
            capture_secrets,
            secrets_taken,
            ..
        } = self;
        let mut added = false;
        *secrets_taken = capture_secrets.take_from(*secrets_taken, frame, |block| {
            // Other types (WireGuard, ZigBee, ...) are not TLS key logs: nothing to add.
            if block.secrets_type == keylog::DSB_TLS_KEY_LOG {
                added |= Arc::make_mut(&mut ctx.keylog).add_decryption_secrets(
                    "capture",
                    block.secrets_type,
                    &block.data,
                );
            }
        });
        added
    }

    /// New secrets came: each waiting connection (in stream order) looks for its own.
    fn retry_waiting(&mut self, stats: &mut TlsCounters, out: &mut Vec<StreamEvent>) {
        let waiting: Vec<u64> = self.ctx.wait.waiting().collect();
        for stream in waiting {
            if let Some(conn) = self.conns.get_mut(&stream) {
                conn.retry_wait(&mut self.ctx, stats, out);
            }
        }
    }

    /// Takes one flow event; appends the events for the next stage to `out`.
    pub fn push(
        &mut self,
        event: StreamEvent,
        stats: &mut TlsCounters,
        out: &mut Vec<StreamEvent>,
    ) {
        if self.capture_secrets.len() > self.secrets_taken
            && self.take_capture_secrets(event.frame)
            && !self.ctx.wait.is_empty()
        {
            self.retry_waiting(stats, out);
        }
        let stream = event.stream;
        match event.kind {
            StreamEventKind::Opened { .. } => {
                // A stream index opened again: the stale state ends first.
                self.end_stream(stream, stats, out);
                self.passing.insert(stream, false);
                out.push(event);
                return;
            }
            StreamEventKind::Closed { .. } => {
                if let Some(mut conn) = self.conns.remove(&stream) {
                    let from = out.len();
                    conn.push(event, &mut self.ctx, stats, out);
                    if let Some(record) = out.get_mut(from..).and_then(closed_record) {
                        fill_record(record, &conn);
                    }
                    count_ended(&conn, stats);
                } else {
                    if self.passing.remove(&stream).is_some() {
                        count_connection(Decryption::Plaintext, stats);
                    }
                    out.push(event);
                }
                return;
            }
            _ => {}
        }
        if let Some(decided) = self.passing.get(&stream) {
            if *decided {
                out.push(event);
                return;
            }
            self.passing.remove(&stream);
            self.conns
                .insert(stream, Box::new(TlsConnection::new(stream)));
        }
        let Some(conn) = self.conns.get_mut(&stream) else {
            // An event of a stream never opened: nothing to decide on.
            out.push(event);
            return;
        };
        conn.push(event, &mut self.ctx, stats, out);
        if conn.is_tls() == Some(false) {
            // Plaintext keeps no state here: every later event passes as it is.
            self.conns.remove(&stream);
            self.passing.insert(stream, true);
        }
    }

    /// Ends what the stage holds of `stream` (as at end of input) and counts it.
    fn end_stream(&mut self, stream: u64, stats: &mut TlsCounters, out: &mut Vec<StreamEvent>) {
        if let Some(mut conn) = self.conns.remove(&stream) {
            conn.finish(&mut self.ctx, stats, out);
            count_ended(&conn, stats);
        } else if self.passing.remove(&stream).is_some() {
            count_connection(Decryption::Plaintext, stats);
        }
    }

    /// End of input: every connection still open hands on what it can (one still waiting
    /// for secrets with those of every block, in stream order).
    pub fn finish(&mut self, stats: &mut TlsCounters, out: &mut Vec<StreamEvent>) {
        self.take_capture_secrets(u64::MAX);
        let mut streams: Vec<u64> = self
            .conns
            .keys()
            .chain(self.passing.keys())
            .copied()
            .collect();
        streams.sort_unstable();
        for stream in streams {
            self.end_stream(stream, stats, out);
        }
    }

    /// Capture time of the oldest bytes the stage holds and has not handed on.
    pub fn held_since(&self) -> Option<CaptureTime> {
        self.conns.values().filter_map(|c| c.held_since()).min()
    }

    /// Handshake facts of an open connection (the HTTP stage's router reads the chosen ALPN).
    pub fn facts(&self, stream: u64) -> Option<&TlsFacts> {
        self.conns.get(&stream).map(|c| c.facts())
    }
}

/// Counts a connection that ended (TLS or not yet decided) in `stats`.
fn count_ended(conn: &TlsConnection, stats: &mut TlsCounters) {
    count_connection(conn.decryption(), stats);
    let bytes = conn.bytes();
    stats.tls_bytes_received = stats.tls_bytes_received.saturating_add(bytes.received);
    stats.tls_bytes_handshake = stats.tls_bytes_handshake.saturating_add(bytes.handshake);
    stats.tls_bytes_application = stats
        .tls_bytes_application
        .saturating_add(bytes.application);
    Merge::merge(&mut stats.tls_bytes_undecrypted, &bytes.undecrypted);
}

/// The record of the `Closed` event among `events`.
fn closed_record(events: &mut [StreamEvent]) -> Option<&mut ConnectionRecord> {
    events.iter_mut().rev().find_map(|e| match &mut e.kind {
        StreamEventKind::Closed { record, .. } => Some(&mut **record),
        _ => None,
    })
}

/// The record's TLS part (the connections table's TLS columns and the facts behind them),
/// from a connection that ended (plaintext ones keep the flow stage's `plaintext` and no
/// facts).
fn fill_record(record: &mut ConnectionRecord, conn: &TlsConnection) {
    let decryption = conn.decryption();
    let tls = &mut record.tls;
    tls.decryption = decryption;
    tls.bytes = conn.bytes().clone();
    if decryption == Decryption::Plaintext {
        return;
    }
    let facts = conn.facts();
    tls.version = facts.version_name().map(ArcStr::from);
    tls.cipher = facts.cipher_name().map(ArcStr::from);
    tls.sni = facts.sni.as_deref().map(ArcStr::from);
    tls.alpn = facts.alpn.as_deref().map(ArcStr::from);
    // Unknown (null) when the ServerHello was not captured.
    tls.resumed = facts.resumed;
    tls.alpn_offered = facts.alpn_offered.iter().map(ArcStr::from).collect();
    tls.client_random = facts.client_random;
    tls.early_data_offered = facts.early_data_offered;
}

fn count_connection(decryption: Decryption, stats: &mut TlsCounters) {
    let count = stats
        .tls_connections
        .entry(decryption.as_str())
        .or_default();
    *count = count.saturating_add(1);
}

/// The stage between flow and HTTP in the pipeline's chain.
impl StreamStage for TlsStage {
    type Output = StreamEvent;
    type Counters = TlsCounters;

    fn push(&mut self, ev: StreamEvent, stats: &mut TlsCounters, out: &mut Vec<StreamEvent>) {
        TlsStage::push(self, ev, stats, out);
    }

    fn finish(&mut self, stats: &mut TlsCounters, out: &mut Vec<StreamEvent>) {
        TlsStage::finish(self, stats, out);
    }

    fn held_since_us(&self) -> Option<i64> {
        self.held_since().map(CaptureTime::as_us)
    }

    /// Secrets a live source appended while no packet came (a key log that grew): every
    /// block appended so far applies, since every frame before it has been read; the
    /// connections waiting for them decrypt what they hold.
    fn quiet(&mut self, stats: &mut TlsCounters, out: &mut Vec<StreamEvent>) {
        if self.capture_secrets.len() > self.secrets_taken
            && self.take_capture_secrets(u64::MAX)
            && !self.ctx.wait.is_empty()
        {
            self.retry_waiting(stats, out);
        }
    }
}
