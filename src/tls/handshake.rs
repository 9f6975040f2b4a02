//! Handshake messages: reassembly across records and the few messages whose
//! contents matter to a passive reader (ClientHello, ServerHello,
//! EncryptedExtensions, NewSessionTicket, KeyUpdate).
//!
//! In: the plaintext of handshake records (cleartext or decrypted) of one
//! direction. Out: whole messages, and parsed facts. A message announcing more
//! than [`MAX_HANDSHAKE_MESSAGE`] bytes is refused (`tls.handshake_too_long`)
//! without being buffered, and the direction's handshake is no longer read.
//! Never panics: every read is bounds-checked.

/// Largest handshake message reassembled. Certificate chains are the largest
/// real messages (a few KiB to tens of KiB); they are skipped, not parsed,
/// but their size still counts against this bound.
pub const MAX_HANDSHAKE_MESSAGE: usize = 64 * 1024;

/// ClientHello.
pub const HS_CLIENT_HELLO: u8 = 1;
/// ServerHello (and HelloRetryRequest in TLS 1.3).
pub const HS_SERVER_HELLO: u8 = 2;
/// NewSessionTicket.
pub const HS_NEW_SESSION_TICKET: u8 = 4;
/// EndOfEarlyData (TLS 1.3).
pub const HS_END_OF_EARLY_DATA: u8 = 5;
/// EncryptedExtensions (TLS 1.3).
pub const HS_ENCRYPTED_EXTENSIONS: u8 = 8;
/// Certificate.
pub const HS_CERTIFICATE: u8 = 11;
/// ServerHelloDone (TLS 1.2).
pub const HS_SERVER_HELLO_DONE: u8 = 14;
/// Finished.
pub const HS_FINISHED: u8 = 20;
/// KeyUpdate (TLS 1.3).
pub const HS_KEY_UPDATE: u8 = 24;

/// The ServerHello random that marks a HelloRetryRequest (RFC 8446 section 4.1.3).
pub const HELLO_RETRY_RANDOM: [u8; 32] = [
    0xCF, 0x21, 0xAD, 0x74, 0xE5, 0x9A, 0x61, 0x11, 0xBE, 0x1D, 0x8C, 0x02, 0x1E, 0x65, 0xB8, 0x91,
    0xC2, 0xA2, 0x11, 0x16, 0x7A, 0xBB, 0x8C, 0x5E, 0x07, 0x9E, 0x09, 0xE2, 0xC8, 0xA8, 0x33, 0x9C,
];

const EXT_SERVER_NAME: u16 = 0;
const EXT_ALPN: u16 = 16;
const EXT_ENCRYPT_THEN_MAC: u16 = 22;
const EXT_EXTENDED_MASTER_SECRET: u16 = 23;
const EXT_SESSION_TICKET: u16 = 35;
const EXT_PRE_SHARED_KEY: u16 = 41;
const EXT_EARLY_DATA: u16 = 42;
const EXT_SUPPORTED_VERSIONS: u16 = 43;

/// A handshake message that could not be used.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum HandshakeError {
    /// Announced length over [`MAX_HANDSHAKE_MESSAGE`] (`tls.handshake_too_long`).
    TooLong,
    /// The message's fields do not fit its length (`tls.bad_handshake`).
    Malformed,
}

impl HandshakeError {
    /// The anomaly name.
    pub fn anomaly(self) -> crate::anomaly::Anomaly {
        match self {
            HandshakeError::TooLong => super::anomaly::HANDSHAKE_TOO_LONG,
            HandshakeError::Malformed => super::anomaly::BAD_HANDSHAKE,
        }
    }
}

/// A whole handshake message.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Message {
    /// Handshake type.
    pub msg_type: u8,
    /// Body (without the 4-byte header).
    pub body: Vec<u8>,
}

/// Reassembles one direction's handshake messages from record fragments.
#[derive(Debug, Default)]
pub struct HandshakeReader {
    buf: Vec<u8>,
    refused: bool,
}

impl HandshakeReader {
    /// Adds one record's handshake plaintext; returns the messages it completed.
    /// After [`HandshakeError::TooLong`] (returned once) the reader ignores everything.
    pub fn push(&mut self, fragment: &[u8], out: &mut Vec<Message>) -> Result<(), HandshakeError> {
        if self.refused {
            return Ok(());
        }
        self.buf.extend_from_slice(fragment);
        let mut at = 0;
        let result = loop {
            let Some(header) = self.buf.get(at..at + 4) else {
                break Ok(());
            };
            let (msg_type, len) = match header {
                [t, a, b, c] => (
                    *t,
                    usize::from(*a) << 16 | usize::from(*b) << 8 | usize::from(*c),
                ),
                _ => break Ok(()),
            };
            if len > MAX_HANDSHAKE_MESSAGE {
                self.refused = true;
                break Err(HandshakeError::TooLong);
            }
            let Some(body) = self.buf.get(at + 4..at + 4 + len) else {
                break Ok(());
            };
            out.push(Message {
                msg_type,
                body: body.to_vec(),
            });
            at += 4 + len;
        };
        if self.refused {
            self.buf = Vec::new();
        } else {
            self.buf.drain(..at.min(self.buf.len()));
        }
        result
    }

    /// Whether a message over the bound stopped the reader.
    pub fn is_refused(&self) -> bool {
        self.refused
    }

    /// Bytes of an unfinished message held.
    pub fn held(&self) -> usize {
        self.buf.len()
    }
}

/// Bounds-checked reader over a message body.
struct Cursor<'a> {
    rest: &'a [u8],
}

impl<'a> Cursor<'a> {
    fn new(rest: &'a [u8]) -> Self {
        Cursor { rest }
    }

    fn take(&mut self, n: usize) -> Result<&'a [u8], HandshakeError> {
        if n > self.rest.len() {
            return Err(HandshakeError::Malformed);
        }
        let (head, tail) = self.rest.split_at(n);
        self.rest = tail;
        Ok(head)
    }

    fn u8(&mut self) -> Result<u8, HandshakeError> {
        self.take(1)?
            .first()
            .copied()
            .ok_or(HandshakeError::Malformed)
    }

    fn u16(&mut self) -> Result<u16, HandshakeError> {
        let b = self.take(2)?;
        Ok(u16::from_be_bytes([
            *b.first().ok_or(HandshakeError::Malformed)?,
            *b.get(1).ok_or(HandshakeError::Malformed)?,
        ]))
    }

    fn vec8(&mut self) -> Result<&'a [u8], HandshakeError> {
        let n = usize::from(self.u8()?);
        self.take(n)
    }

    fn vec16(&mut self) -> Result<&'a [u8], HandshakeError> {
        let n = usize::from(self.u16()?);
        self.take(n)
    }

    fn random(&mut self) -> Result<[u8; 32], HandshakeError> {
        self.take(32)?
            .try_into()
            .map_err(|_| HandshakeError::Malformed)
    }

    fn is_empty(&self) -> bool {
        self.rest.is_empty()
    }
}

/// Facts from a ClientHello.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ClientHello {
    /// `legacy_version` (0x0303 for TLS 1.2 and 1.3).
    pub legacy_version: u16,
    /// The client random that keys the key log.
    pub random: [u8; 32],
    /// Legacy session id (TLS 1.2 resumption by session id).
    pub session_id: Vec<u8>,
    /// Offered suites, in the client's order.
    pub cipher_suites: Vec<u16>,
    /// Server name (SNI host name).
    pub sni: Option<String>,
    /// Offered ALPN protocols.
    pub alpn: Vec<String>,
    /// `supported_versions` list.
    pub supported_versions: Vec<u16>,
    /// A non-empty session ticket was presented (TLS 1.2 resumption by ticket).
    pub session_ticket: Option<Vec<u8>>,
    /// `pre_shared_key` offered (TLS 1.3 resumption or external PSK).
    pub pre_shared_key: bool,
    /// `early_data` offered (TLS 1.3 0-RTT).
    pub early_data: bool,
    /// `encrypt_then_mac` offered.
    pub encrypt_then_mac: bool,
    /// `extended_master_secret` offered.
    pub extended_master_secret: bool,
}

/// Parses a ClientHello body.
pub fn parse_client_hello(body: &[u8]) -> Result<ClientHello, HandshakeError> {
    let mut c = Cursor::new(body);
    let mut hello = ClientHello {
        legacy_version: c.u16()?,
        random: c.random()?,
        session_id: c.vec8()?.to_vec(),
        ..ClientHello::default()
    };
    let mut suites = Cursor::new(c.vec16()?);
    while !suites.is_empty() {
        hello.cipher_suites.push(suites.u16()?);
    }
    c.vec8()?; // compression methods
    if c.is_empty() {
        return Ok(hello);
    }
    let mut exts = Cursor::new(c.vec16()?);
    while !exts.is_empty() {
        let ty = exts.u16()?;
        let data = exts.vec16()?;
        let mut d = Cursor::new(data);
        match ty {
            EXT_SERVER_NAME if !data.is_empty() => {
                let mut names = Cursor::new(d.vec16()?);
                while !names.is_empty() {
                    let kind = names.u8()?;
                    let name = names.vec16()?;
                    if kind == 0 && hello.sni.is_none() {
                        hello.sni = Some(String::from_utf8_lossy(name).into_owned());
                    }
                }
            }
            EXT_ALPN => hello.alpn = parse_alpn_list(data)?,
            EXT_SUPPORTED_VERSIONS => {
                let mut list = Cursor::new(d.vec8()?);
                while !list.is_empty() {
                    hello.supported_versions.push(list.u16()?);
                }
            }
            EXT_SESSION_TICKET if !data.is_empty() => hello.session_ticket = Some(data.to_vec()),
            EXT_PRE_SHARED_KEY => hello.pre_shared_key = true,
            EXT_EARLY_DATA => hello.early_data = true,
            EXT_ENCRYPT_THEN_MAC => hello.encrypt_then_mac = true,
            EXT_EXTENDED_MASTER_SECRET => hello.extended_master_secret = true,
            _ => {}
        }
    }
    Ok(hello)
}

fn parse_alpn_list(data: &[u8]) -> Result<Vec<String>, HandshakeError> {
    let mut list = Cursor::new(Cursor::new(data).vec16()?);
    let mut out = Vec::new();
    while !list.is_empty() {
        out.push(String::from_utf8_lossy(list.vec8()?).into_owned());
    }
    Ok(out)
}

/// Parses an SSL 2.0-compatible ClientHello (RFC 5246 appendix E.2): the body after
/// its 2-byte length. The challenge, padded with leading zeros, is the client random.
pub fn parse_sslv2_client_hello(body: &[u8]) -> Result<ClientHello, HandshakeError> {
    let mut c = Cursor::new(body);
    if c.u8()? != HS_CLIENT_HELLO {
        return Err(HandshakeError::Malformed);
    }
    let legacy_version = c.u16()?;
    let specs_len = usize::from(c.u16()?);
    let session_len = usize::from(c.u16()?);
    let challenge_len = usize::from(c.u16()?);
    if specs_len % 3 != 0 || !(16..=32).contains(&challenge_len) {
        return Err(HandshakeError::Malformed);
    }
    let mut specs = Cursor::new(c.take(specs_len)?);
    let mut cipher_suites = Vec::new();
    while !specs.is_empty() {
        // TLS suites are the 3-byte specs whose first byte is zero.
        let kind = specs.u8()?;
        let id = specs.u16()?;
        if kind == 0 {
            cipher_suites.push(id);
        }
    }
    let session_id = c.take(session_len)?.to_vec();
    let challenge = c.take(challenge_len)?;
    let mut random = [0u8; 32];
    for (slot, b) in random.iter_mut().skip(32 - challenge_len).zip(challenge) {
        *slot = *b;
    }
    Ok(ClientHello {
        legacy_version,
        random,
        session_id,
        cipher_suites,
        ..ClientHello::default()
    })
}

/// Facts from a ServerHello.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ServerHello {
    /// `legacy_version`.
    pub legacy_version: u16,
    /// Server random.
    pub random: [u8; 32],
    /// Session id (echoes the client's when a TLS 1.2 session is resumed).
    pub session_id: Vec<u8>,
    /// The chosen suite.
    pub cipher_suite: u16,
    /// `supported_versions` (TLS 1.3 and its drafts).
    pub selected_version: Option<u16>,
    /// ALPN chosen (TLS 1.2; in TLS 1.3 it is in EncryptedExtensions).
    pub alpn: Option<String>,
    /// `pre_shared_key` accepted (TLS 1.3 resumption).
    pub pre_shared_key: bool,
    /// The server will send a NewSessionTicket (TLS 1.2).
    pub session_ticket: bool,
    /// `encrypt_then_mac` accepted.
    pub encrypt_then_mac: bool,
    /// `extended_master_secret` accepted.
    pub extended_master_secret: bool,
}

impl ServerHello {
    /// The version in effect: `supported_versions` if present, else `legacy_version`.
    pub fn version(&self) -> u16 {
        self.selected_version.unwrap_or(self.legacy_version)
    }

    /// A HelloRetryRequest (TLS 1.3), not a real ServerHello.
    pub fn is_hello_retry_request(&self) -> bool {
        self.random == HELLO_RETRY_RANDOM
    }
}

/// Parses a ServerHello body.
pub fn parse_server_hello(body: &[u8]) -> Result<ServerHello, HandshakeError> {
    let mut c = Cursor::new(body);
    let version = c.u16()?;
    let random = c.random()?;
    let mut hello = if version >> 8 == 0x7F {
        // TLS 1.3 drafts before 22: version, random, suite, extensions.
        ServerHello {
            legacy_version: version,
            random,
            cipher_suite: c.u16()?,
            selected_version: Some(version),
            ..ServerHello::default()
        }
    } else {
        let hello = ServerHello {
            legacy_version: version,
            random,
            session_id: c.vec8()?.to_vec(),
            cipher_suite: c.u16()?,
            ..ServerHello::default()
        };
        c.u8()?; // compression method
        hello
    };
    if c.is_empty() {
        return Ok(hello);
    }
    let mut exts = Cursor::new(c.vec16()?);
    while !exts.is_empty() {
        let ty = exts.u16()?;
        let data = exts.vec16()?;
        match ty {
            EXT_SUPPORTED_VERSIONS => hello.selected_version = Some(Cursor::new(data).u16()?),
            EXT_ALPN => hello.alpn = parse_alpn_list(data)?.into_iter().next(),
            EXT_PRE_SHARED_KEY => hello.pre_shared_key = true,
            EXT_SESSION_TICKET => hello.session_ticket = true,
            EXT_ENCRYPT_THEN_MAC => hello.encrypt_then_mac = true,
            EXT_EXTENDED_MASTER_SECRET => hello.extended_master_secret = true,
            _ => {}
        }
    }
    Ok(hello)
}

/// Facts from TLS 1.3 EncryptedExtensions.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct EncryptedExtensions {
    /// The chosen ALPN protocol.
    pub alpn: Option<String>,
    /// The server accepted 0-RTT data.
    pub early_data: bool,
}

/// Parses an EncryptedExtensions body.
pub fn parse_encrypted_extensions(body: &[u8]) -> Result<EncryptedExtensions, HandshakeError> {
    let mut exts = Cursor::new(Cursor::new(body).vec16()?);
    let mut out = EncryptedExtensions::default();
    while !exts.is_empty() {
        let ty = exts.u16()?;
        let data = exts.vec16()?;
        match ty {
            EXT_ALPN => out.alpn = parse_alpn_list(data)?.into_iter().next(),
            EXT_EARLY_DATA => out.early_data = true,
            _ => {}
        }
    }
    Ok(out)
}

/// Parses a NewSessionTicket body; returns the ticket.
pub fn parse_new_session_ticket(body: &[u8], tls13: bool) -> Result<Vec<u8>, HandshakeError> {
    let mut c = Cursor::new(body);
    c.take(4)?; // lifetime
    if tls13 {
        c.take(4)?; // age add
        c.vec8()?; // nonce
    }
    Ok(c.vec16()?.to_vec())
}

/// The name of a protocol version as the contract writes it (`TLS 1.3`).
pub fn version_name(version: u16) -> String {
    match version {
        0x0300 => "SSL 3.0".into(),
        0x0301 => "TLS 1.0".into(),
        0x0302 => "TLS 1.1".into(),
        0x0303 => "TLS 1.2".into(),
        0x0304 => "TLS 1.3".into(),
        v if v >> 8 == 0x7F => format!("TLS 1.3 (draft {})", v & 0xFF),
        v => format!("0x{v:04X}"),
    }
}

/// TLS 1.3 or one of its drafts.
pub fn is_tls13(version: u16) -> bool {
    version == 0x0304 || version >> 8 == 0x7F
}

#[cfg(test)]
pub(crate) mod tests {
    use super::super::decrypt::tests::RFC8448_EE;
    use super::super::schedule::tests::hex;
    use super::*;

    // RFC 8448 section 3 ClientHello and ServerHello messages (with their 4-byte headers).
    pub(crate) const CH: &str = "010000c00303cb34ecb1e78163ba1c38c6dacb196a6dffa21a8d9912ec18a2ef6283024dece7000006130113031302010000910000000b0009000006736572766572ff01000100000a00140012001d0017001800190100010101020103010400230000003300260024001d002099381de560e4bd43d23d8e435a7dbafeb3c06e51c13cae4d5413691e529aaf2c002b0003020304000d0020001e040305030603020308040805080604010501060102010402050206020202002d00020101001c00024001";
    pub(crate) const SH: &str = "020000560303a6af06a4121860dc5e6e60249cd34c95930c8ac5cb1434dac155772ed3e2692800130100002e00330024001d0020c9828876112095fe66762bdbf7c672e156d6cc253b833df1dd69b1b04e751f0f002b00020304";

    fn messages(wire: &[u8]) -> Vec<Message> {
        let mut out = Vec::new();
        HandshakeReader::default()
            .push(wire, &mut out)
            .expect("push");
        out
    }

    #[test]
    fn rfc8448_client_hello() {
        let msgs = messages(&hex(CH));
        assert_eq!(msgs.len(), 1);
        let ch = parse_client_hello(&msgs[0].body).expect("parse");
        assert_eq!(ch.legacy_version, 0x0303);
        assert_eq!(ch.random[..4], [0xcb, 0x34, 0xec, 0xb1]);
        assert_eq!(ch.cipher_suites, vec![0x1301, 0x1303, 0x1302]);
        assert_eq!(ch.sni.as_deref(), Some("server"));
        assert_eq!(ch.supported_versions, vec![0x0304]);
        assert!(
            ch.session_id.is_empty() && ch.alpn.is_empty() && !ch.early_data && !ch.pre_shared_key
        );
        assert_eq!(
            ch.session_ticket, None,
            "empty session_ticket extension is no ticket"
        );
    }

    #[test]
    fn rfc8448_server_hello_and_encrypted_extensions() {
        let sh = parse_server_hello(&messages(&hex(SH))[0].body).expect("parse");
        assert_eq!(
            (sh.version(), sh.cipher_suite, sh.legacy_version),
            (0x0304, 0x1301, 0x0303)
        );
        assert!(!sh.is_hello_retry_request());
        let ee = parse_encrypted_extensions(&messages(&hex(RFC8448_EE))[0].body).expect("ee");
        assert_eq!(ee, EncryptedExtensions::default());
    }

    fn client_hello_with(exts: &[(u16, Vec<u8>)]) -> Vec<u8> {
        let mut body = vec![3, 3];
        body.extend([7u8; 32]);
        body.push(3);
        body.extend([1, 2, 3]);
        body.extend([0, 4, 0x13, 0x02, 0xC0, 0x2F]);
        body.extend([1, 0]);
        let mut ext_bytes = Vec::new();
        for (ty, data) in exts {
            ext_bytes.extend(ty.to_be_bytes());
            ext_bytes.extend((data.len() as u16).to_be_bytes());
            ext_bytes.extend(data);
        }
        body.extend((ext_bytes.len() as u16).to_be_bytes());
        body.extend(ext_bytes);
        body
    }

    fn alpn(names: &[&str]) -> Vec<u8> {
        let mut list = Vec::new();
        for n in names {
            list.push(n.len() as u8);
            list.extend(n.as_bytes());
        }
        let mut v = (list.len() as u16).to_be_bytes().to_vec();
        v.extend(list);
        v
    }

    #[test]
    fn client_hello_extensions() {
        let body = client_hello_with(&[
            (EXT_ALPN, alpn(&["h2", "http/1.1"])),
            (EXT_SESSION_TICKET, vec![9; 10]),
            (EXT_PRE_SHARED_KEY, vec![0; 4]),
            (EXT_EARLY_DATA, vec![]),
            (EXT_ENCRYPT_THEN_MAC, vec![]),
            (EXT_EXTENDED_MASTER_SECRET, vec![]),
            (EXT_SUPPORTED_VERSIONS, vec![4, 3, 4, 3, 3]),
        ]);
        let ch = parse_client_hello(&body).expect("parse");
        assert_eq!(ch.alpn, vec!["h2".to_string(), "http/1.1".into()]);
        assert_eq!(ch.session_id, vec![1, 2, 3]);
        assert_eq!(ch.session_ticket, Some(vec![9; 10]));
        assert!(
            ch.pre_shared_key && ch.early_data && ch.encrypt_then_mac && ch.extended_master_secret
        );
        assert_eq!(ch.supported_versions, vec![0x0304, 0x0303]);
        assert_eq!(ch.cipher_suites, vec![0x1302, 0xC02F]);
    }

    #[test]
    fn truncated_client_hello_at_every_length_is_an_error_not_a_panic() {
        let body = client_hello_with(&[
            (EXT_ALPN, alpn(&["h2"])),
            (EXT_SERVER_NAME, vec![0, 4, 0, 0, 1, b'x']),
        ]);
        assert_eq!(
            parse_client_hello(&body).map(|c| c.sni),
            Ok(Some("x".into()))
        );
        for len in 0..body.len() {
            // Cutting at the extensions' start is a valid hello without extensions.
            if len == 2 + 32 + 4 + 6 + 2 {
                continue;
            }
            assert_eq!(
                parse_client_hello(&body[..len]),
                Err(HandshakeError::Malformed),
                "len {len}"
            );
        }
        for len in 0..hex(SH).len() - 4 {
            let _ = parse_server_hello(&hex(SH)[4..4 + len]);
        }
    }

    #[test]
    fn tls12_server_hello_alpn_and_hrr() {
        let mut body = vec![3, 3];
        body.extend(HELLO_RETRY_RANDOM);
        body.extend([0, 0x13, 0x02, 0]);
        let ext = alpn(&["http/1.1"]);
        let mut exts = EXT_ALPN.to_be_bytes().to_vec();
        exts.extend((ext.len() as u16).to_be_bytes());
        exts.extend(ext);
        body.extend((exts.len() as u16).to_be_bytes());
        body.extend(exts);
        let sh = parse_server_hello(&body).expect("parse");
        assert!(sh.is_hello_retry_request());
        assert_eq!(sh.alpn.as_deref(), Some("http/1.1"));
        assert_eq!(sh.version(), 0x0303);
    }

    #[test]
    fn message_across_records_at_every_split() {
        let mut wire = hex(CH);
        wire.extend(hex(SH));
        for cut in 0..wire.len() {
            let mut r = HandshakeReader::default();
            let mut out = Vec::new();
            r.push(&wire[..cut], &mut out).expect("a");
            r.push(&wire[cut..], &mut out).expect("b");
            assert_eq!(
                out.iter().map(|m| m.msg_type).collect::<Vec<_>>(),
                vec![1, 2],
                "cut {cut}"
            );
            assert_eq!(r.held(), 0);
        }
        // Three records of one byte-range each.
        let mut r = HandshakeReader::default();
        let mut out = Vec::new();
        for chunk in wire.chunks(50) {
            r.push(chunk, &mut out).expect("push");
        }
        assert_eq!(out.len(), 2);
        assert_eq!(
            parse_client_hello(&out[0].body).map(|c| c.sni),
            Ok(Some("server".into()))
        );
    }

    #[test]
    fn sixteen_megabyte_message_is_refused_unbuffered() {
        let mut r = HandshakeReader::default();
        let mut out = Vec::new();
        assert_eq!(
            r.push(&[11, 0xFF, 0xFF, 0xFF, 1, 2, 3], &mut out),
            Err(HandshakeError::TooLong)
        );
        assert_eq!(r.held(), 0);
        assert_eq!(r.push(&[0u8; 1000], &mut out), Ok(()));
        assert!(r.is_refused());
        assert_eq!(r.held(), 0);
        assert!(out.is_empty());
        assert_eq!(HandshakeError::TooLong.anomaly(), "tls.handshake_too_long");
        // The bound itself is accepted.
        let mut r = HandshakeReader::default();
        let len = MAX_HANDSHAKE_MESSAGE as u32;
        let mut msg = vec![11, (len >> 16) as u8, (len >> 8) as u8, len as u8];
        msg.resize(4 + MAX_HANDSHAKE_MESSAGE, 0);
        r.push(&msg, &mut out).expect("at the bound");
        assert_eq!(out.len(), 1);
    }

    #[test]
    fn new_session_ticket_both_versions() {
        let mut v12 = vec![0, 0, 0, 1, 0, 3];
        v12.extend([5, 6, 7]);
        assert_eq!(parse_new_session_ticket(&v12, false), Ok(vec![5, 6, 7]));
        let mut v13 = vec![0, 0, 0, 1, 9, 9, 9, 9, 1, 0, 0, 2, 8, 8, 0, 0];
        assert_eq!(parse_new_session_ticket(&v13, true), Ok(vec![8, 8]));
        v13.truncate(11);
        assert_eq!(
            parse_new_session_ticket(&v13, true),
            Err(HandshakeError::Malformed)
        );
    }

    #[test]
    fn sslv2_client_hello() {
        let mut body = vec![1, 3, 0, 0, 6, 0, 0, 0, 16];
        body.extend([0, 0, 0x35, 0x07, 0x00, 0xC0]);
        body.extend([9u8; 16]);
        let ch = parse_sslv2_client_hello(&body).expect("parse");
        assert_eq!(ch.legacy_version, 0x0300);
        assert_eq!(ch.cipher_suites, vec![0x0035]);
        assert_eq!(ch.random[..16], [0u8; 16]);
        assert_eq!(ch.random[16..], [9u8; 16]);
        for len in 0..body.len() {
            assert!(parse_sslv2_client_hello(&body[..len]).is_err(), "len {len}");
        }
    }

    #[test]
    fn draft_server_hello() {
        // TLS 1.3 draft 20: no session id echo, no compression byte, the version up front.
        let mut body = vec![0x7F, 0x14];
        body.extend([5u8; 32]);
        body.extend([0x13, 0x03, 0, 0]);
        let sh = parse_server_hello(&body).expect("parse");
        assert_eq!((sh.version(), sh.cipher_suite), (0x7F14, 0x1303));
        assert!(is_tls13(sh.version()));
    }

    #[test]
    fn version_names() {
        assert_eq!(version_name(0x0304), "TLS 1.3");
        assert_eq!(version_name(0x0303), "TLS 1.2");
        assert_eq!(version_name(0x7F14), "TLS 1.3 (draft 20)");
        assert!(is_tls13(0x7F14) && !is_tls13(0x0303));
    }
}
