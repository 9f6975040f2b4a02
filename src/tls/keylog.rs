//! NSS key log (RFC 9850, the `SSLKEYLOGFILE` format Wireshark reads).
//!
//! In: key log text from files (`--keylog`, repeatable) or from pcapng
//! Decryption Secrets Blocks. Out: a [`KeyLog`] of secrets keyed by client
//! random, and [`KeyLogStats`] for the run summary. A bad line is counted
//! with its line number and skipped, never fatal. Secrets never appear in any
//! `Debug` output or message. Memory: at most [`MAX_KEYLOG_ENTRIES`] client
//! randoms, lines longer than [`MAX_KEYLOG_LINE`] are malformed and not kept.

use crate::capture::CaptureSecrets;
use crate::hashing::HashMap;
use crate::tls::TlsCounters;
use std::fmt;
use std::io::BufRead;

/// Most client randoms kept (about 300 bytes each for a TLS 1.3 connection's five
/// secrets); lines for further ones are counted and dropped.
pub const MAX_KEYLOG_ENTRIES: usize = 262_144;

/// Longest line read (the longest valid line is about 230 bytes).
pub const MAX_KEYLOG_LINE: usize = 1024;

/// How many malformed line numbers are kept for the run summary (the count is exact).
pub const MAX_REPORTED_LINES: usize = 20;

/// pcapng Decryption Secrets Block type for a TLS key log (`TLSK`).
pub const DSB_TLS_KEY_LOG: u32 = 0x544c_534b;

/// Largest secret of any label (TLS 1.2 master secret: 48 bytes; SHA-384 traffic secrets: 48).
pub const MAX_SECRET_LEN: usize = 48;

/// A secret from the key log. Its bytes are never formatted.
#[derive(Clone, PartialEq, Eq)]
pub struct Secret {
    bytes: [u8; MAX_SECRET_LEN],
    len: u8,
}

impl Secret {
    /// A secret from bytes (`None` when longer than [`MAX_SECRET_LEN`] or empty).
    pub fn new(bytes: &[u8]) -> Option<Secret> {
        if bytes.is_empty() || bytes.len() > MAX_SECRET_LEN {
            return None;
        }
        let mut buf = [0u8; MAX_SECRET_LEN];
        buf.get_mut(..bytes.len())?.copy_from_slice(bytes);
        Some(Secret {
            bytes: buf,
            len: u8::try_from(bytes.len()).ok()?,
        })
    }

    /// The secret's bytes (for the key schedule only).
    pub fn expose(&self) -> &[u8] {
        self.bytes.get(..usize::from(self.len)).unwrap_or_default()
    }

    /// Its length in bytes.
    pub fn len(&self) -> usize {
        usize::from(self.len)
    }

    /// Never true: a secret has at least one byte.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }
}

impl fmt::Debug for Secret {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Secret({} bytes, redacted)", self.len)
    }
}

/// The labels this reader uses.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Label {
    /// TLS 1.2 and earlier: the 48-byte master secret.
    ClientRandom,
    /// TLS 1.3 `CLIENT_EARLY_TRAFFIC_SECRET` (0-RTT).
    ClientEarly,
    /// TLS 1.3 `CLIENT_HANDSHAKE_TRAFFIC_SECRET`.
    ClientHandshake,
    /// TLS 1.3 `SERVER_HANDSHAKE_TRAFFIC_SECRET`.
    ServerHandshake,
    /// TLS 1.3 `CLIENT_TRAFFIC_SECRET_0`.
    ClientTraffic0,
    /// TLS 1.3 `SERVER_TRAFFIC_SECRET_0`.
    ServerTraffic0,
}

const LABELS: [Label; 6] = [
    Label::ClientRandom,
    Label::ClientEarly,
    Label::ClientHandshake,
    Label::ServerHandshake,
    Label::ClientTraffic0,
    Label::ServerTraffic0,
];

impl Label {
    fn parse(word: &str) -> Option<Label> {
        Some(match word {
            "CLIENT_RANDOM" => Label::ClientRandom,
            "CLIENT_EARLY_TRAFFIC_SECRET" => Label::ClientEarly,
            "CLIENT_HANDSHAKE_TRAFFIC_SECRET" => Label::ClientHandshake,
            "SERVER_HANDSHAKE_TRAFFIC_SECRET" => Label::ServerHandshake,
            "CLIENT_TRAFFIC_SECRET_0" => Label::ClientTraffic0,
            "SERVER_TRAFFIC_SECRET_0" => Label::ServerTraffic0,
            _ => return None,
        })
    }
}

/// Labels of the format that carry nothing this reader needs.
const IGNORED_LABELS: [&str; 2] = ["EXPORTER_SECRET", "EARLY_EXPORTER_SECRET"];

/// The secrets known for one client random.
#[derive(Clone, Default, PartialEq, Eq)]
pub struct Secrets {
    // Few per connection (one for TLS 1.2, up to five for 1.3): a list, not a table.
    known: Vec<(Label, Secret)>,
}

impl Secrets {
    /// The secret of `label`, if logged.
    pub fn get(&self, label: Label) -> Option<&Secret> {
        self.known.iter().find(|(l, _)| *l == label).map(|(_, s)| s)
    }

    fn set(&mut self, label: Label, secret: Secret) {
        match self.known.iter_mut().find(|(l, _)| *l == label) {
            Some(slot) => slot.1 = secret,
            None => self.known.push((label, secret)),
        }
    }
}

impl fmt::Debug for Secrets {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let known: Vec<Label> = LABELS
            .iter()
            .copied()
            .filter(|l| self.get(*l).is_some())
            .collect();
        f.debug_struct("Secrets").field("known", &known).finish()
    }
}

/// What reading key logs found, for the run summary (no secret, no client random).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct KeyLogStats {
    /// Lines read (blank and comment lines included).
    pub lines: u64,
    /// Lines whose secret was stored.
    pub secrets: u64,
    /// Lines with a label this reader does not use (other key log labels, tshark's `RSA ...`).
    pub unknown_labels: u64,
    /// Lines that are not `LABEL <hex> <hex>`.
    pub malformed: u64,
    /// The first [`MAX_REPORTED_LINES`] malformed lines, as (source, 1-based line number).
    pub malformed_lines: Vec<(String, u64)>,
    /// Secrets dropped because [`MAX_KEYLOG_ENTRIES`] client randoms were already kept.
    pub over_limit: u64,
}

/// Secrets by client random, from any number of key logs.
#[derive(Clone)]
pub struct KeyLog {
    entries: HashMap<[u8; 32], Secrets>,
    max_entries: usize,
    stats: KeyLogStats,
}

impl fmt::Debug for KeyLog {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("KeyLog")
            .field("client_randoms", &self.entries.len())
            .field("stats", &self.stats)
            .finish()
    }
}

/// Why a line is not usable.
enum LineError {
    Malformed,
    UnknownLabel,
}

impl Default for KeyLog {
    fn default() -> KeyLog {
        KeyLog::new()
    }
}

impl KeyLog {
    /// An empty key log holding at most [`MAX_KEYLOG_ENTRIES`] client randoms.
    pub fn new() -> KeyLog {
        KeyLog::with_limit(MAX_KEYLOG_ENTRIES)
    }

    /// An empty key log holding at most `max_entries` client randoms.
    pub fn with_limit(max_entries: usize) -> KeyLog {
        KeyLog {
            entries: HashMap::default(),
            max_entries,
            stats: KeyLogStats::default(),
        }
    }

    /// What was read so far.
    pub fn stats(&self) -> &KeyLogStats {
        &self.stats
    }

    /// Number of client randoms with at least one secret.
    pub fn len(&self) -> usize {
        self.entries.len()
    }

    /// Whether no secret is known.
    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    /// The secrets for a client random.
    pub fn get(&self, client_random: &[u8; 32]) -> Option<&Secrets> {
        self.entries.get(client_random)
    }

    /// Reads a key log from `reader`; `source` names it in the malformed-line list.
    /// Only an I/O error fails; bad lines are counted.
    pub fn read_from(&mut self, source: &str, mut reader: impl BufRead) -> std::io::Result<()> {
        let mut line = Vec::with_capacity(256);
        let mut line_no = 0u64;
        loop {
            line.clear();
            let (ended, too_long) = read_bounded_line(&mut reader, &mut line)?;
            if ended && line.is_empty() && !too_long {
                return Ok(());
            }
            line_no += 1;
            if too_long {
                self.count_malformed(source, line_no);
            } else {
                self.add_line(source, line_no, &line);
            }
            if ended {
                return Ok(());
            }
        }
    }

    /// Reads key log text held in memory.
    pub fn add_text(&mut self, source: &str, text: &[u8]) {
        // Reading from a slice cannot fail.
        let _ = self.read_from(source, text);
    }

    /// Reads the secrets of a pcapng Decryption Secrets Block, given its secrets type and
    /// data (as pcap-parser returns them). Returns false for another secrets type.
    pub fn add_decryption_secrets(&mut self, source: &str, secrets_type: u32, data: &[u8]) -> bool {
        if secrets_type != DSB_TLS_KEY_LOG {
            return false;
        }
        self.add_text(source, data);
        true
    }

    /// Reads a whole pcapng Decryption Secrets Block (type 0x0000000A, both byte orders).
    /// Returns false when the bytes are not such a block of TLS secrets.
    pub fn add_decryption_secrets_block(&mut self, source: &str, block: &[u8]) -> bool {
        let word = |at: usize, big: bool| -> Option<u32> {
            let b: [u8; 4] = block.get(at..at + 4)?.try_into().ok()?;
            Some(if big {
                u32::from_be_bytes(b)
            } else {
                u32::from_le_bytes(b)
            })
        };
        let big = match word(0, false) {
            Some(0x0000_000A) => false,
            _ if word(0, true) == Some(0x0000_000A) => true,
            _ => return false,
        };
        let (Some(total), Some(ty), Some(len)) = (word(4, big), word(8, big), word(12, big)) else {
            return false;
        };
        let Ok(len) = usize::try_from(len) else {
            return false;
        };
        let within = usize::try_from(total).is_ok_and(|t| t <= block.len() && 16 + len <= t);
        match block.get(16..16usize.saturating_add(len)) {
            Some(data) if within => self.add_decryption_secrets(source, ty, data),
            _ => false,
        }
    }

    fn count_malformed(&mut self, source: &str, line_no: u64) {
        self.stats.malformed += 1;
        if self.stats.malformed_lines.len() < MAX_REPORTED_LINES {
            self.stats
                .malformed_lines
                .push((source.to_string(), line_no));
        }
    }

    fn add_line(&mut self, source: &str, line_no: u64, line: &[u8]) {
        self.stats.lines += 1;
        let text = match std::str::from_utf8(line) {
            Ok(t) => t.trim(),
            Err(_) => return self.count_malformed(source, line_no),
        };
        if text.is_empty() || text.starts_with('#') {
            return;
        }
        match parse_line(text) {
            Ok((label, random, secret)) => self.store(label, random, secret),
            Err(LineError::UnknownLabel) => self.stats.unknown_labels += 1,
            Err(LineError::Malformed) => self.count_malformed(source, line_no),
        }
    }

    fn store(&mut self, label: Label, random: [u8; 32], secret: Secret) {
        let full = self.entries.len() >= self.max_entries;
        match self.entries.get_mut(&random) {
            Some(secrets) => secrets.set(label, secret),
            None if full => {
                self.stats.over_limit += 1;
                return;
            }
            None => {
                let mut secrets = Secrets::default();
                secrets.set(label, secret);
                self.entries.insert(random, secrets);
            }
        }
        self.stats.secrets += 1;
    }
}

/// Reads one line of at most [`MAX_KEYLOG_LINE`] bytes into `line` (a longer line is consumed
/// and reported as too long). Returns (end of input reached, too long).
fn read_bounded_line(
    reader: &mut impl BufRead,
    line: &mut Vec<u8>,
) -> std::io::Result<(bool, bool)> {
    let mut too_long = false;
    loop {
        let buf = reader.fill_buf()?;
        if buf.is_empty() {
            return Ok((true, too_long));
        }
        let (chunk, found) = match memchr_newline(buf) {
            Some(at) => (buf.get(..at).unwrap_or_default(), Some(at)),
            None => (buf, None),
        };
        if !too_long && line.len() + chunk.len() <= MAX_KEYLOG_LINE {
            line.extend_from_slice(chunk);
        } else {
            too_long = true;
            line.clear();
        }
        let used = found.map_or(buf.len(), |at| at + 1);
        reader.consume(used);
        if found.is_some() {
            return Ok((false, too_long));
        }
    }
}

fn memchr_newline(buf: &[u8]) -> Option<usize> {
    buf.iter().position(|b| *b == b'\n')
}

fn parse_line(text: &str) -> Result<(Label, [u8; 32], Secret), LineError> {
    let mut words = text.split_ascii_whitespace();
    let label_word = words.next().ok_or(LineError::Malformed)?;
    let label = match Label::parse(label_word) {
        Some(l) => l,
        None if IGNORED_LABELS.contains(&label_word) => return Err(LineError::UnknownLabel),
        None if label_word
            .bytes()
            .all(|b| b.is_ascii_uppercase() || b.is_ascii_digit() || b == b'_') =>
        {
            return Err(LineError::UnknownLabel);
        }
        None => return Err(LineError::Malformed),
    };
    let (Some(random_hex), Some(secret_hex), None) = (words.next(), words.next(), words.next())
    else {
        return Err(LineError::Malformed);
    };
    let mut random = [0u8; 32];
    if decode_hex(random_hex, &mut random) != Some(32) {
        return Err(LineError::Malformed);
    }
    let mut secret = [0u8; MAX_SECRET_LEN];
    let n = decode_hex(secret_hex, &mut secret).ok_or(LineError::Malformed)?;
    let expected_ok = match label {
        Label::ClientRandom => n == 48,
        _ => n == 32 || n == 48,
    };
    if !expected_ok {
        return Err(LineError::Malformed);
    }
    let secret = Secret::new(secret.get(..n).unwrap_or_default()).ok_or(LineError::Malformed)?;
    Ok((label, random, secret))
}

/// Decodes hex (either case) into `out`; returns the byte count, `None` for bad hex or overflow.
fn decode_hex(hex: &str, out: &mut [u8]) -> Option<usize> {
    let bytes = hex.as_bytes();
    if !bytes.len().is_multiple_of(2) || bytes.len() / 2 > out.len() {
        return None;
    }
    for (slot, pair) in out.iter_mut().zip(bytes.chunks_exact(2)) {
        let hi = hex_digit(*pair.first()?)?;
        let lo = hex_digit(*pair.get(1)?)?;
        *slot = hi << 4 | lo;
    }
    Some(bytes.len() / 2)
}

fn hex_digit(c: u8) -> Option<u8> {
    match c {
        b'0'..=b'9' => Some(c - b'0'),
        b'a'..=b'f' => Some(c - b'a' + 10),
        b'A'..=b'F' => Some(c - b'A' + 10),
        _ => None,
    }
}

/// The run summary's key log counts: the malformed lines of the `--keylog` files (`files`),
/// then those of the capture's TLS Decryption Secrets Blocks, each named by the block's place
/// among the run's blocks (`pcapng DSB #1:3`: its third line); at most
/// [`MAX_REPORTED_LINES`] named in all (the count is exact). Counted once per run from the
/// shared blocks, because every stage that decrypts reads its own copy of each block.
pub fn count_malformed(files: &KeyLog, capture: &CaptureSecrets, stats: &mut TlsCounters) {
    let keys = files.stats();
    stats.keylog_malformed_lines = stats.keylog_malformed_lines.saturating_add(keys.malformed);
    let named = |(source, line): &(String, u64)| format!("{source}:{line}");
    let mut at: Vec<String> = keys.malformed_lines.iter().map(named).collect();
    at.append(&mut stats.keylog_malformed_at);
    let mut blocks = 0u64;
    capture.take_from(0, u64::MAX, |block| {
        blocks = blocks.saturating_add(1);
        if block.secrets_type != DSB_TLS_KEY_LOG {
            return;
        }
        // Nothing is kept: only the lines are checked.
        let mut probe = KeyLog::with_limit(0);
        probe.add_decryption_secrets(
            &format!("pcapng DSB #{blocks}"),
            block.secrets_type,
            &block.data,
        );
        let found = probe.stats();
        stats.keylog_malformed_lines = stats.keylog_malformed_lines.saturating_add(found.malformed);
        let room = MAX_REPORTED_LINES.saturating_sub(at.len());
        at.extend(found.malformed_lines.iter().take(room).map(named));
    });
    at.truncate(MAX_REPORTED_LINES);
    stats.keylog_malformed_at = at;
}

#[cfg(test)]
mod tests {
    use super::*;

    const RANDOM: &str = "2635fafc16c49a3e997ef714c303806dc8dbf634a2005b0e0186521c4ad6f9df";
    const SECRET32: &str = "3a497c91f6e130fbc18fc9f773b92bb0d538dfedc30e964cde0676396f24d0df";

    fn random() -> [u8; 32] {
        let mut r = [0u8; 32];
        decode_hex(RANDOM, &mut r);
        r
    }

    #[test]
    fn parses_labels_comments_and_counts_the_rest() {
        let master = "AB".repeat(48);
        let text = format!(
            "# comment\n\n\
             CLIENT_HANDSHAKE_TRAFFIC_SECRET {RANDOM} {SECRET32}\n\
             SERVER_TRAFFIC_SECRET_0 {RANDOM} {SECRET32}\r\n\
             EXPORTER_SECRET {RANDOM} {SECRET32}\n\
             RSA Session-ID:00 Master-Key:11\n\
             CLIENT_RANDOM {RANDOM} {master}\n\
             CLIENT_RANDOM {RANDOM} 1234\n\
             CLIENT_RANDOM zz{} {master}\n\
             just words\n\
             CLIENT_TRAFFIC_SECRET_0 {RANDOM} {SECRET32}",
            &RANDOM[2..]
        );
        let mut log = KeyLog::new();
        log.add_text("keys.log", text.as_bytes());
        let s = log.stats();
        assert_eq!(s.lines, 11);
        assert_eq!(s.secrets, 4);
        assert_eq!(s.unknown_labels, 2);
        assert_eq!(s.malformed, 3);
        assert_eq!(
            s.malformed_lines,
            vec![
                ("keys.log".to_string(), 8),
                ("keys.log".into(), 9),
                ("keys.log".into(), 10)
            ]
        );
        let secrets = log.get(&random()).expect("entry");
        assert_eq!(
            secrets.get(Label::ClientHandshake).map(Secret::len),
            Some(32)
        );
        assert_eq!(
            secrets.get(Label::ClientRandom).map(|s| s.expose()[0]),
            Some(0xAB)
        );
        assert!(secrets.get(Label::ServerHandshake).is_none());
        assert!(
            secrets.get(Label::ClientTraffic0).is_some(),
            "last line without newline"
        );
    }

    #[test]
    fn debug_never_shows_secrets() {
        let mut log = KeyLog::new();
        log.add_text(
            "k",
            format!("CLIENT_TRAFFIC_SECRET_0 {RANDOM} {SECRET32}\n").as_bytes(),
        );
        let secrets = log.get(&random()).expect("entry");
        let shown = format!(
            "{log:?} {secrets:?} {:?}",
            secrets.get(Label::ClientTraffic0)
        );
        assert!(!shown.to_lowercase().contains("3a497c"), "{shown}");
        assert!(
            !shown.contains("58"),
            "no decimal byte values either: {shown}"
        );
        assert!(
            shown.contains("redacted") && shown.contains("ClientTraffic0"),
            "{shown}"
        );
    }

    #[test]
    fn several_files_merge_and_limit_holds() {
        let mut log = KeyLog::with_limit(1);
        log.add_text(
            "a",
            format!("CLIENT_HANDSHAKE_TRAFFIC_SECRET {RANDOM} {SECRET32}\n").as_bytes(),
        );
        log.add_text(
            "b",
            format!("SERVER_HANDSHAKE_TRAFFIC_SECRET {RANDOM} {SECRET32}\n").as_bytes(),
        );
        let other = "11".repeat(32);
        log.add_text(
            "b",
            format!("SERVER_HANDSHAKE_TRAFFIC_SECRET {other} {SECRET32}\n").as_bytes(),
        );
        let secrets = log.get(&random()).expect("entry");
        assert!(
            secrets.get(Label::ClientHandshake).is_some()
                && secrets.get(Label::ServerHandshake).is_some()
        );
        assert_eq!(log.len(), 1);
        assert_eq!(log.stats().over_limit, 1);
    }

    #[test]
    fn long_line_is_malformed_not_kept() {
        let mut text = vec![b'A'; 5 * MAX_KEYLOG_LINE];
        text.extend_from_slice(
            format!("\nCLIENT_HANDSHAKE_TRAFFIC_SECRET {RANDOM} {SECRET32}\n").as_bytes(),
        );
        let mut log = KeyLog::new();
        // A tiny buffer makes the long line arrive in many pieces.
        log.read_from("k", std::io::BufReader::with_capacity(7, &text[..]))
            .expect("read");
        assert_eq!(log.stats().malformed_lines, vec![("k".to_string(), 1)]);
        assert_eq!(log.stats().secrets, 1);
    }

    #[test]
    fn decryption_secrets_block() {
        let data = format!("CLIENT_RANDOM {RANDOM} {}\n", "cd".repeat(48));
        let mut block = Vec::new();
        let padded = data.len().div_ceil(4) * 4;
        let total = (16 + padded + 4) as u32;
        block.extend_from_slice(&0x0Au32.to_le_bytes());
        block.extend_from_slice(&total.to_le_bytes());
        block.extend_from_slice(&DSB_TLS_KEY_LOG.to_le_bytes());
        block.extend_from_slice(&(data.len() as u32).to_le_bytes());
        block.extend_from_slice(data.as_bytes());
        block.resize(16 + padded, 0);
        block.extend_from_slice(&total.to_le_bytes());
        let mut log = KeyLog::new();
        assert!(log.add_decryption_secrets_block("dsb", &block));
        assert!(
            log.get(&random())
                .and_then(|s| s.get(Label::ClientRandom))
                .is_some()
        );
        // Another secrets type (WireGuard) is not read.
        assert!(!log.add_decryption_secrets("dsb", 0x5747_4b4c, data.as_bytes()));
        // Truncated block.
        assert!(!KeyLog::new().add_decryption_secrets_block("dsb", &block[..20]));
    }

    #[test]
    fn million_line_key_log_in_bounded_memory() {
        // Hostile: a million distinct client randoms, every tenth line malformed, read as a
        // stream (generated on the fly, never held whole), as a file is.
        struct Lines {
            next: u32,
            line: Vec<u8>,
            at: usize,
        }
        impl std::io::Read for Lines {
            fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
                if self.at == self.line.len() {
                    if self.next == 1_000_000 {
                        return Ok(0);
                    }
                    self.line = if self.next.is_multiple_of(10) {
                        b"CLIENT_RANDOM nothex\n".to_vec()
                    } else {
                        format!("CLIENT_TRAFFIC_SECRET_0 {:064x} {SECRET32}\n", self.next)
                            .into_bytes()
                    };
                    self.at = 0;
                    self.next += 1;
                }
                let n = buf.len().min(self.line.len() - self.at);
                buf[..n].copy_from_slice(&self.line[self.at..self.at + n]);
                self.at += n;
                Ok(n)
            }
        }
        let reader = std::io::BufReader::new(Lines {
            next: 0,
            line: Vec::new(),
            at: 0,
        });
        let mut log = KeyLog::with_limit(500_000);
        log.read_from("big", reader).expect("read");
        let s = log.stats();
        assert_eq!(s.lines, 1_000_000);
        assert_eq!(s.malformed, 100_000);
        assert_eq!(s.malformed_lines.len(), MAX_REPORTED_LINES);
        assert_eq!(s.malformed_lines.get(1), Some(&("big".to_string(), 11)));
        assert_eq!(log.len(), 500_000);
        assert_eq!(s.secrets + s.over_limit, 900_000);
    }

    #[test]
    fn malformed_lines_of_a_decryption_secrets_block_are_counted_with_the_block_named() {
        use crate::capture::SecretsBlock;
        let random = "ab".repeat(32);
        let good = format!("CLIENT_RANDOM {random} {}\n", "cd".repeat(48));
        let block = format!("# comment\n{good}CLIENT_RANDOM nothex\n\nnot a key log line\n");
        let secrets = CaptureSecrets::default();
        secrets.append(SecretsBlock {
            from_frame: 1,
            secrets_type: 7,
            data: b"not TLS at all\n".to_vec(),
        });
        secrets.append(SecretsBlock {
            from_frame: 1,
            secrets_type: DSB_TLS_KEY_LOG,
            data: block.into_bytes(),
        });
        let mut stats = TlsCounters::default();
        count_malformed(&KeyLog::new(), &secrets, &mut stats);
        assert_eq!(stats.keylog_malformed_lines, 2);
        assert_eq!(
            stats.keylog_malformed_at,
            ["pcapng DSB #2:3", "pcapng DSB #2:5"]
        );
        // Nothing of the secrets reaches the stats.
        assert!(!format!("{stats:?}").contains(&random));
    }
}
