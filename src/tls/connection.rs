//! One connection through the TLS stage: detection, the handshake state of
//! both directions, key selection and decryption, and the byte accounting.
//! See the stage documentation in `mod.rs` for the rules; key derivation is in
//! `connection/keys.rs`, reading a delivery's records in `connection/records.rs`, waiting
//! for secrets that come late in `connection/wait.rs`.

use super::cipher::{Protection, suite};
use super::decrypt::{Decryptor, InPlace};
use super::facts::{TlsBytes, TlsFacts, reason};
use super::handshake::{
    ClientHello, HS_CERTIFICATE, HS_CLIENT_HELLO, HS_ENCRYPTED_EXTENSIONS, HS_END_OF_EARLY_DATA,
    HS_FINISHED, HS_KEY_UPDATE, HS_NEW_SESSION_TICKET, HS_SERVER_HELLO, HS_SERVER_HELLO_DONE,
    HandshakeReader, Message, ServerHello, is_tls13, parse_client_hello,
    parse_encrypted_extensions, parse_new_session_ticket, parse_server_hello,
};
use super::keylog::{KeyLog, Label, Secret};
use super::record::{
    CONTENT_ALERT, CONTENT_APPLICATION_DATA, CONTENT_CHANGE_CIPHER_SPEC, CONTENT_HANDSHAKE,
    HEADER_LEN,
};
use super::session::SessionCache;
use super::waiting::{Held, WaitRoom};
use super::{MAX_FAILURES_IN_ROW, anomaly};
use crate::stream::Decryption;
use std::ops::Range;

mod keys;
mod records;
mod wait;
use crate::stream::{GapLen, Side, StreamEvent, StreamEventKind};
use crate::timestamp::CaptureTime;
use crate::tls::TlsCounters;
use keys::early_candidates;

/// What the stage shares between connections: the secrets and the TLS 1.2 sessions seen.
#[derive(Debug, Default)]
pub struct TlsContext {
    /// Secrets from key logs and Decryption Secrets Blocks, shared by every thread's stage.
    pub keylog: std::sync::Arc<KeyLog>,
    /// Master secrets of earlier full handshakes, for resumption.
    pub sessions: SessionCache,
    /// What the connections waiting for their secrets hold.
    pub wait: WaitRoom,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Mode {
    /// Not yet known whether the stream is TLS (at most four bytes decide).
    Detecting,
    /// Not TLS: every event passes through.
    Plaintext,
    /// TLS.
    Tls,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum KeyState {
    /// No ServerHello yet.
    Pending,
    /// The suite is not decrypted here.
    Unsupported,
    /// No secret for this connection.
    Missing,
    /// Keys derived.
    Ready,
}

/// TLS 1.3 key phases of a direction (TLS 1.2 uses [`APPLICATION`] only).
const EARLY: usize = 0;
const HANDSHAKE: usize = 1;
const APPLICATION: usize = 2;

struct Direction {
    records: super::record::RecordReader,
    handshake: HandshakeReader,
    keys: [Option<Decryptor>; 3],
    phase: usize,
    /// TLS 1.2: keys derived at ServerHello, used from this side's ChangeCipherSpec on.
    pending: Option<Decryptor>,
    /// TLS 1.2: this side's records are protected.
    protected: bool,
    after_gap: bool,
    failures_in_row: u32,
    gave_up: bool,
    /// Capture time of the oldest bytes of the partial record held.
    held_since: Option<CaptureTime>,
    /// Plaintext decrypted from the current delivery.
    out: Vec<u8>,
}

// Sizes and states only: the held plaintext may carry credentials (contract section 1b).
impl std::fmt::Debug for Direction {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Direction")
            .field("held", &self.records.held())
            .field("phase", &self.phase)
            .field(
                "keys",
                &self.keys.iter().map(Option::is_some).collect::<Vec<_>>(),
            )
            .field("protected", &self.protected)
            .field("after_gap", &self.after_gap)
            .field("gave_up", &self.gave_up)
            .field("plaintext_pending", &self.out.len())
            .finish()
    }
}

impl Direction {
    fn new() -> Direction {
        Direction {
            records: Default::default(),
            handshake: HandshakeReader::default(),
            keys: [None, None, None],
            phase: HANDSHAKE,
            pending: None,
            protected: false,
            after_gap: false,
            failures_in_row: 0,
            gave_up: false,
            held_since: None,
            out: Vec::new(),
        }
    }
}

/// The TLS stage's state for one TCP connection.
#[derive(Debug)]
pub struct TlsConnection {
    stream: u64,
    mode: Mode,
    held: Vec<StreamEvent>,
    probe: Vec<u8>,
    probe_side: Option<Side>,
    client: Direction,
    server: Direction,
    facts: TlsFacts,
    bytes: TlsBytes,
    client_hello: Option<ClientHello>,
    server_hello: Option<ServerHello>,
    tls13: bool,
    draft: Option<u8>,
    key_state: KeyState,
    server_full_handshake: bool,
    master: Option<Secret>,
    /// 0-RTT keys to try before the ServerHello names the suite.
    early_candidates: Vec<Decryptor>,
    decrypted_records: u64,
    failed_records: u64,
    /// `Decrypted` and the chosen ALPN as `Negotiated` went on (once, before the first
    /// decrypted `Data`).
    negotiated_sent: bool,
    /// What the connection holds while it waits for its secrets.
    wait: Option<Box<Held>>,
    /// The connection waited already (it waits once).
    waited: bool,
}

impl TlsConnection {
    /// State for stream `stream`, before its first event.
    pub fn new(stream: u64) -> TlsConnection {
        TlsConnection {
            stream,
            mode: Mode::Detecting,
            held: Vec::new(),
            probe: Vec::new(),
            probe_side: None,
            client: Direction::new(),
            server: Direction::new(),
            facts: TlsFacts::default(),
            bytes: TlsBytes::default(),
            client_hello: None,
            server_hello: None,
            tls13: false,
            draft: None,
            key_state: KeyState::Pending,
            server_full_handshake: false,
            master: None,
            early_candidates: Vec::new(),
            decrypted_records: 0,
            failed_records: 0,
            negotiated_sent: false,
            wait: None,
            waited: false,
        }
    }

    /// The flow stage's stream index.
    pub fn stream(&self) -> u64 {
        self.stream
    }

    /// Handshake facts so far (empty for a connection that is not TLS).
    pub fn facts(&self) -> &TlsFacts {
        &self.facts
    }

    /// Where the bytes went so far.
    pub fn bytes(&self) -> &TlsBytes {
        &self.bytes
    }

    /// Whether the connection is TLS (`None` while undecided).
    pub fn is_tls(&self) -> Option<bool> {
        match self.mode {
            Mode::Detecting => None,
            Mode::Plaintext => Some(false),
            Mode::Tls => Some(true),
        }
    }

    /// The connection's `decryption` value, as far as it is known now.
    pub fn decryption(&self) -> Decryption {
        match self.mode {
            Mode::Detecting | Mode::Plaintext => return Decryption::Plaintext,
            Mode::Tls => {}
        }
        if self.client_hello.is_none() || self.server_hello.is_none() {
            return Decryption::HandshakeNotCaptured;
        }
        match self.key_state {
            KeyState::Pending => Decryption::HandshakeNotCaptured,
            KeyState::Unsupported => Decryption::UnsupportedCipher,
            KeyState::Missing => Decryption::NoKey,
            KeyState::Ready => {
                let gave_up = self.client.gave_up || self.server.gave_up;
                if gave_up || (self.decrypted_records == 0 && self.failed_records > 0) {
                    Decryption::DecryptFailed
                } else {
                    Decryption::Decrypted
                }
            }
        }
    }

    /// Capture time of the oldest bytes held and not yet handed on.
    pub fn held_since(&self) -> Option<CaptureTime> {
        match self.mode {
            Mode::Detecting => self.held.first().map(|e| e.ts),
            Mode::Plaintext => None,
            Mode::Tls => [
                self.client.held_since,
                self.server.held_since,
                self.wait.as_ref().and_then(|w| w.since),
            ]
            .into_iter()
            .flatten()
            .min(),
        }
    }

    /// Takes one event of this connection; appends what the next stage gets to `out`.
    pub fn push(
        &mut self,
        event: StreamEvent,
        ctx: &mut TlsContext,
        stats: &mut TlsCounters,
        out: &mut Vec<StreamEvent>,
    ) {
        if self.mode == Mode::Detecting {
            if let StreamEventKind::Opened { .. } = event.kind {
                out.push(event);
                return;
            }
            if let StreamEventKind::Closed { .. } = event.kind {
                self.decide(Mode::Plaintext, ctx, stats, out);
            } else {
                self.probe(&event);
                self.held.push(event);
                if let Some(mode) = self.detected() {
                    self.decide(mode, ctx, stats, out);
                }
                return;
            }
        }
        self.push_decided(event, ctx, stats, out);
    }

    /// The stream ended without `Closed` (end of input): hands on what can be.
    pub fn finish(
        &mut self,
        ctx: &mut TlsContext,
        stats: &mut TlsCounters,
        out: &mut Vec<StreamEvent>,
    ) {
        if self.mode == Mode::Detecting {
            self.decide(Mode::Plaintext, ctx, stats, out);
        }
        if self.wait.is_some() {
            self.end_wait(ctx, stats, out);
        }
        if self.mode == Mode::Tls {
            for side in [Side::Client, Side::Server] {
                let dir = self.dir(side);
                let n = dir.records.drain();
                dir.held_since = None;
                self.bytes.lose(reason::UNFINISHED, n);
            }
        }
    }

    fn probe(&mut self, event: &StreamEvent) {
        if let StreamEventKind::Data { side, bytes } = &event.kind
            && self.probe_side.is_none_or(|s| s == *side)
        {
            self.probe_side = Some(*side);
            let need = 4usize.saturating_sub(self.probe.len());
            self.probe.extend(bytes.iter().take(need));
        }
    }

    /// TLS when the first bytes are a record header's type and version (3, 0..=4).
    /// Also TLS: the start of an SSL 2.0-compatible ClientHello (length with the high bit,
    /// type 1, version 3.x).
    fn detected(&self) -> Option<Mode> {
        let p = &self.probe;
        if p.first().is_some_and(|b| b & 0x80 != 0) && self.probe_side == Some(Side::Client) {
            return match (p.get(2), p.get(3)) {
                (Some(1), Some(3)) => Some(Mode::Tls),
                (Some(_), Some(_)) => Some(Mode::Plaintext),
                _ => None,
            };
        }
        let ty_ok = p
            .first()
            .map(|t| (CONTENT_CHANGE_CIPHER_SPEC..=CONTENT_APPLICATION_DATA).contains(t));
        let major_ok = p.get(1).map(|m| *m == 3);
        let minor_ok = p.get(2).map(|m| *m <= 4);
        match (ty_ok, major_ok, minor_ok) {
            (Some(false), _, _) | (_, Some(false), _) | (_, _, Some(false)) => {
                Some(Mode::Plaintext)
            }
            (Some(true), Some(true), Some(true)) => Some(Mode::Tls),
            _ => None,
        }
    }

    fn decide(
        &mut self,
        mode: Mode,
        ctx: &mut TlsContext,
        stats: &mut TlsCounters,
        out: &mut Vec<StreamEvent>,
    ) {
        self.mode = mode;
        if mode == Mode::Tls && self.probe.first().is_some_and(|b| b & 0x80 != 0) {
            self.client.records.allow_sslv2_hello();
        }
        self.probe = Vec::new();
        for event in std::mem::take(&mut self.held) {
            self.push_decided(event, ctx, stats, out);
        }
    }

    fn push_decided(
        &mut self,
        event: StreamEvent,
        ctx: &mut TlsContext,
        stats: &mut TlsCounters,
        out: &mut Vec<StreamEvent>,
    ) {
        if self.mode != Mode::Tls {
            out.push(event);
            return;
        }
        let event = if self.wait.is_some() {
            match self.hold(event, ctx, stats, out) {
                Some(event) => event,
                None => return,
            }
        } else {
            event
        };
        let StreamEvent {
            stream,
            ts,
            frame,
            kind,
        } = event;
        match kind {
            StreamEventKind::Data { side, bytes } => {
                self.on_data(side, bytes, (ts, frame), ctx, stats);
                self.hand_on_plaintext(side, (ts, frame), out);
                if self.wait.as_ref().is_some_and(|w| w.over) {
                    stats.anomaly(anomaly::KEY_WAIT_LIMIT);
                    self.end_wait(ctx, stats, out);
                }
            }
            StreamEventKind::Gap { side, .. } => {
                let dir = self.dir(side);
                let dropped = dir.records.gap();
                dir.handshake = HandshakeReader::default();
                dir.after_gap = true;
                dir.held_since = None;
                self.bytes.lose(reason::CUT_BY_GAP, dropped);
                if self.key_state == KeyState::Ready {
                    // The plaintext length of lost records is unknown.
                    let kind = StreamEventKind::Gap {
                        side,
                        len: GapLen::Unknown,
                    };
                    out.push(StreamEvent {
                        stream,
                        ts,
                        frame,
                        kind,
                    });
                }
            }
            StreamEventKind::Closed { reason, record } => {
                self.finish(ctx, stats, out);
                out.push(StreamEvent {
                    stream,
                    ts,
                    frame,
                    kind: StreamEventKind::Closed { reason, record },
                });
            }
            kind => out.push(StreamEvent {
                stream,
                ts,
                frame,
                kind,
            }),
        }
    }

    /// The plaintext of the delivery read last (its time and frame): one `Data` event, the
    /// first time after `Decrypted` and the chosen ALPN.
    fn hand_on_plaintext(
        &mut self,
        side: Side,
        (ts, frame): (CaptureTime, u64),
        out: &mut Vec<StreamEvent>,
    ) {
        let stream = self.stream;
        let dir = self.dir(side);
        if dir.out.is_empty() {
            return;
        }
        let bytes = std::mem::take(&mut dir.out);
        self.bytes.plaintext_out += bytes.len() as u64;
        if !self.negotiated_sent {
            self.negotiated_sent = true;
            out.push(StreamEvent {
                stream,
                ts,
                frame,
                kind: StreamEventKind::Decrypted {
                    version: self.facts.version_name().map(Into::into),
                    sni: self.facts.sni.as_deref().map(Into::into),
                },
            });
            if let Some(alpn) = &self.facts.alpn {
                out.push(StreamEvent {
                    stream,
                    ts,
                    frame,
                    kind: StreamEventKind::Negotiated {
                        protocol: alpn.as_bytes().into(),
                    },
                });
            }
        }
        out.push(StreamEvent {
            stream,
            ts,
            frame,
            kind: StreamEventKind::Data { side, bytes },
        });
    }

    fn dir(&mut self, side: Side) -> &mut Direction {
        match side {
            Side::Client => &mut self.client,
            Side::Server => &mut self.server,
        }
    }

    /// One whole record; for application data, where its plaintext is in `fragment`.
    fn on_record(
        &mut self,
        side: Side,
        header: &[u8; HEADER_LEN],
        fragment: &mut [u8],
        ctx: &mut TlsContext,
        stats: &mut TlsCounters,
    ) -> Option<Range<usize>> {
        let ty = header[0];
        let wire = (HEADER_LEN + fragment.len()) as u64;
        let protected = if self.tls13 {
            ty == CONTENT_APPLICATION_DATA
        } else {
            self.dir(side).protected || ty == CONTENT_APPLICATION_DATA
        };
        if !protected {
            self.bytes.handshake += wire;
            match ty {
                CONTENT_HANDSHAKE => self.on_handshake_bytes(side, fragment, ctx, stats),
                // TLS 1.3 middlebox-compatible peers send one before any ServerHello: not a key change.
                CONTENT_CHANGE_CIPHER_SPEC if !self.tls13 && self.server_hello.is_some() => {
                    self.on_change_cipher_spec(side);
                }
                _ => {}
            }
            return None;
        }
        match self.open(side, header, fragment, stats) {
            Ok(InPlace {
                content_type,
                plaintext,
            }) => {
                self.decrypted_records += 1;
                match content_type {
                    CONTENT_APPLICATION_DATA => {
                        self.bytes.application += wire;
                        return Some(plaintext);
                    }
                    CONTENT_HANDSHAKE => {
                        self.bytes.handshake += wire;
                        let plain = fragment.get(plaintext).unwrap_or_default();
                        self.on_handshake_bytes(side, plain, ctx, stats);
                    }
                    CONTENT_ALERT => self.bytes.handshake += wire,
                    // A renegotiation's key change travels under the keys it replaces.
                    CONTENT_CHANGE_CIPHER_SPEC => {
                        self.bytes.handshake += wire;
                        if !self.tls13 {
                            self.on_change_cipher_spec(side);
                        }
                    }
                    _ => {
                        stats.anomaly(anomaly::BAD_INNER_CONTENT_TYPE);
                        self.bytes.handshake += wire;
                    }
                }
            }
            // TLS 1.2 handshake and alert records are the protocol's own, read or not.
            Err(_) if !self.tls13 && ty != CONTENT_APPLICATION_DATA => self.bytes.handshake += wire,
            Err(why) => self.bytes.lose(why, wire as usize),
        }
        None
    }

    /// Decrypts a protected record with the direction's keys; the error is the reason
    /// it stays undecrypted.
    fn open(
        &mut self,
        side: Side,
        header: &[u8; HEADER_LEN],
        fragment: &mut [u8],
        stats: &mut TlsCounters,
    ) -> Result<InPlace, &'static str> {
        let no_key = self.no_key_reason(side);
        let before_server_hello = self.server_hello.is_none();
        let dir = self.dir(side);
        if dir.gave_up {
            return Err(reason::DECRYPT_FAILED);
        }
        let search = dir.after_gap;
        let early = side == Side::Client && dir.phase == EARLY && dir.keys[EARLY].is_none();
        let candidates = if early {
            std::mem::take(&mut self.early_candidates)
        } else {
            Vec::new()
        };
        let dir = self.dir(side);
        let first = if before_server_hello {
            EARLY
        } else {
            dir.phase
        };
        let last = if before_server_hello {
            EARLY
        } else {
            APPLICATION
        };
        let phases = (first..=last).filter(|p| dir.keys.get(*p).is_some_and(Option::is_some));
        // A failed trial overwrites the fragment: when another may follow, each starts from a copy.
        let trials = candidates.len() + phases.count();
        let received = (trials > 1).then(|| fragment.to_vec());
        let mut tried = 0;
        let restore = |fragment: &mut [u8], tried: &mut usize| {
            if *tried > 0
                && let Some(received) = &received
            {
                fragment.copy_from_slice(received);
            }
            *tried += 1;
        };
        for mut keys in candidates {
            restore(fragment, &mut tried);
            if let Ok(opened) = keys.open_in_place(header, fragment, false) {
                self.client.keys[EARLY] = Some(keys);
                self.client.failures_in_row = 0;
                return Ok(opened);
            }
        }
        let dir = self.dir(side);
        for phase in first..=last {
            let Some(keys) = dir.keys.get_mut(phase).and_then(Option::as_mut) else {
                continue;
            };
            restore(fragment, &mut tried);
            if let Ok(opened) = keys.open_in_place(header, fragment, search && phase == dir.phase) {
                dir.phase = phase;
                dir.after_gap = false;
                dir.failures_in_row = 0;
                return Ok(opened);
            }
        }
        let tried = tried > 0;
        if !tried {
            return Err(no_key);
        }
        if let Some(keys) = dir.keys.get_mut(dir.phase).and_then(Option::as_mut) {
            keys.skip_record();
        }
        dir.failures_in_row += 1;
        if dir.failures_in_row >= MAX_FAILURES_IN_ROW {
            dir.gave_up = true;
            stats.anomaly(anomaly::DECRYPT_GAVE_UP);
        }
        self.failed_records += 1;
        Err(reason::DECRYPT_FAILED)
    }

    fn no_key_reason(&self, side: Side) -> &'static str {
        let Some(hello) = &self.client_hello else {
            return reason::HANDSHAKE_NOT_CAPTURED;
        };
        let early = side == Side::Client && hello.early_data && self.client.phase == EARLY;
        if early && self.client.keys.first().is_none_or(Option::is_none) {
            return reason::NO_EARLY_KEY;
        }
        match self.key_state {
            KeyState::Pending => reason::HANDSHAKE_NOT_CAPTURED,
            KeyState::Unsupported => reason::UNSUPPORTED_CIPHER,
            KeyState::Missing | KeyState::Ready => reason::NO_KEY,
        }
    }

    fn on_handshake_bytes(
        &mut self,
        side: Side,
        bytes: &[u8],
        ctx: &mut TlsContext,
        stats: &mut TlsCounters,
    ) {
        let mut messages = Vec::new();
        if let Err(e) = self.dir(side).handshake.push(bytes, &mut messages) {
            stats.anomaly(e.anomaly());
        }
        for message in messages {
            self.on_message(side, message, ctx, stats);
        }
    }

    fn on_message(
        &mut self,
        side: Side,
        message: Message,
        ctx: &mut TlsContext,
        stats: &mut TlsCounters,
    ) {
        let tls13 = self.tls13;
        match (side, message.msg_type) {
            (Side::Client, HS_CLIENT_HELLO) => match parse_client_hello(&message.body) {
                Ok(hello) => self.on_client_hello(hello, ctx),
                Err(e) => stats.anomaly(e.anomaly()),
            },
            (Side::Server, HS_SERVER_HELLO) => match parse_server_hello(&message.body) {
                Ok(hello) if hello.is_hello_retry_request() => {
                    self.facts.version = Some(hello.version());
                }
                Ok(hello) => self.on_server_hello(hello, ctx),
                Err(e) => stats.anomaly(e.anomaly()),
            },
            (Side::Server, HS_ENCRYPTED_EXTENSIONS) => {
                match parse_encrypted_extensions(&message.body) {
                    Ok(ee) => self.facts.alpn = ee.alpn,
                    Err(e) => stats.anomaly(e.anomaly()),
                }
            }
            (Side::Server, HS_CERTIFICATE | HS_SERVER_HELLO_DONE) => {
                self.server_full_handshake = true
            }
            (Side::Server, HS_NEW_SESSION_TICKET) if !tls13 => {
                if let (Ok(ticket), Some(master)) =
                    (parse_new_session_ticket(&message.body, false), &self.master)
                {
                    ctx.sessions.insert_ticket(&ticket, master);
                }
            }
            (Side::Client, HS_END_OF_EARLY_DATA) if tls13 => self.client.phase = HANDSHAKE,
            (_, HS_FINISHED) if tls13 => {
                let dir = self.dir(side);
                dir.phase = dir.phase.max(APPLICATION);
            }
            (_, HS_KEY_UPDATE) if tls13 => {
                let updated = self
                    .dir(side)
                    .keys
                    .get_mut(APPLICATION)
                    .and_then(Option::as_mut)
                    .map(Decryptor::key_update);
                if let Some(Err(_)) = updated {
                    stats.anomaly(anomaly::KEY_UPDATE_FAILED);
                }
            }
            _ => {}
        }
    }

    fn on_client_hello(&mut self, hello: ClientHello, ctx: &TlsContext) {
        if self.client_hello.is_none() {
            self.facts.sni = hello.sni.clone();
            self.facts.alpn_offered = hello.alpn.clone();
            self.facts.client_random = Some(hello.random);
            self.facts.early_data_offered = hello.early_data;
        }
        if hello.early_data && self.server_hello.is_none() {
            self.client.phase = EARLY;
            // The 0-RTT suite is the resumed session's, not yet announced: the secret's
            // length narrows it to one or two.
            let early = ctx
                .keylog
                .get(&hello.random)
                .and_then(|s| s.get(Label::ClientEarly));
            if let Some(secret) = early {
                self.early_candidates = early_candidates(secret);
            }
        }
        self.client_hello = Some(hello);
    }

    fn on_server_hello(&mut self, hello: ServerHello, ctx: &mut TlsContext) {
        let version = hello.version();
        self.facts.version = Some(version);
        self.facts.cipher_suite = Some(hello.cipher_suite);
        self.tls13 = is_tls13(version);
        self.draft = (version >> 8 == 0x7F).then_some((version & 0xFF) as u8);
        self.server_full_handshake = false;
        let Some(client_hello) = self.client_hello.clone() else {
            self.server_hello = Some(hello);
            return;
        };
        if self.tls13 {
            self.facts.resumed = Some(hello.pre_shared_key);
        } else {
            self.facts.alpn = hello.alpn.clone();
            let echoed =
                !hello.session_id.is_empty() && hello.session_id == client_hello.session_id;
            self.facts.resumed = Some(echoed);
        }
        self.key_state = self.derive_keys(&client_hello, &hello, ctx);
        self.server_hello = Some(hello);
        self.wait_if_secrets_may_come(ctx);
    }

    /// The keys of the suite `server_hello` chose, from the secrets known now.
    fn derive_keys(
        &mut self,
        client_hello: &ClientHello,
        server_hello: &ServerHello,
        ctx: &mut TlsContext,
    ) -> KeyState {
        match suite(server_hello.cipher_suite).map(|s| s.protection) {
            Some(Protection::Tls13(aead, hash)) if self.tls13 => {
                self.tls13_keys(aead, hash, client_hello, ctx)
            }
            Some(p @ (Protection::Tls12Aead(..) | Protection::Tls12Cbc(..)))
                if server_hello.version() == 0x0303 =>
            {
                self.tls12_keys(p, client_hello, server_hello, ctx)
            }
            _ => KeyState::Unsupported,
        }
    }

    fn on_change_cipher_spec(&mut self, side: Side) {
        if side == Side::Server && !self.server_full_handshake && self.server_hello.is_some() {
            // No certificate and no ServerHelloDone: an abbreviated (resumed) handshake.
            self.facts.resumed = Some(true);
        }
        let dir = self.dir(side);
        dir.protected = true;
        dir.keys[APPLICATION] = dir.pending.take();
        dir.phase = APPLICATION;
    }
}
