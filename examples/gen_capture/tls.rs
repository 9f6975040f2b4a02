//! `--tls`: every connection of the generator as TLS 1.3 with
//! TLS_AES_128_GCM_SHA256, and the NSS key log that decrypts it.
//!
//! The handshake is real in its shape and its key schedule (RFC 8446 section
//! 7.1): ClientHello (SNI `bench.local`, ALPN `http/1.1`, x25519 key share),
//! ServerHello, ChangeCipherSpec on both sides, the server's EncryptedExtensions
//! and Finished under its handshake traffic secret, the client's Finished under
//! its own. Only the key exchange is not: the key shares are random bytes and
//! the (EC)DHE shared secret is drawn from the seed. There is no Certificate or
//! CertificateVerify. Finished values verify; application traffic secrets
//! follow from the transcript. Every TCP write is one application data record
//! (more when it is over 16 KiB), as TLS stacks write them.

use super::Rng;
use mcp_trace::tls::schedule::{HashAlg, hkdf_expand_label};
use ring::{aead, digest, hmac};
use std::fmt::Write as _;

/// Most plaintext per record (RFC 8446 section 5.1).
pub const MAX_FRAGMENT: usize = 16_384;
/// Header, inner content type and GCM tag of one protected record.
pub const RECORD_OVERHEAD: usize = 5 + 1 + aead::MAX_TAG_LEN;
/// Server name the clients ask for.
pub const SNI: &str = "bench.local";
const ALPN: &[u8] = b"http/1.1";

const CONTENT_CCS: u8 = 20;
const CONTENT_ALERT: u8 = 21;
const CONTENT_HANDSHAKE: u8 = 22;
const CONTENT_APPLICATION: u8 = 23;
const TLS_AES_128_GCM_SHA256: u16 = 0x1301;
const X25519: u16 = 0x001d;
const SHA256_LEN: usize = 32;

/// Record protection of one direction: key, static IV, sequence number.
struct RecordKeys {
    key: aead::LessSafeKey,
    iv: [u8; 12],
    seq: u64,
}

impl RecordKeys {
    // The secret has SHA-256's length and the lengths asked for are the suite's:
    // derivation cannot fail.
    #[allow(clippy::expect_used)]
    fn new(secret: &[u8; SHA256_LEN]) -> RecordKeys {
        let key = hkdf_expand_label(HashAlg::Sha256, secret, b"key", b"", 16).expect("key");
        let iv = hkdf_expand_label(HashAlg::Sha256, secret, b"iv", b"", 12).expect("iv");
        let unbound = aead::UnboundKey::new(&aead::AES_128_GCM, &key.0).expect("AES-128 key");
        let mut iv_bytes = [0u8; 12];
        iv_bytes.copy_from_slice(&iv.0);
        RecordKeys {
            key: aead::LessSafeKey::new(unbound),
            iv: iv_bytes,
            seq: 0,
        }
    }

    /// Appends one protected record: `content` with inner content type `inner`.
    // A fragment of at most 16 KiB is far under the AEAD's limit: sealing cannot fail.
    #[allow(clippy::expect_used)]
    fn seal(&mut self, inner: u8, content: &[u8], out: &mut Vec<u8>) {
        let header_at = out.len();
        let len = (content.len() + 1 + aead::MAX_TAG_LEN) as u16;
        out.extend_from_slice(&[CONTENT_APPLICATION, 3, 3]);
        out.extend_from_slice(&len.to_be_bytes());
        let mut header = [0u8; 5];
        header.copy_from_slice(&out[header_at..]);
        out.extend_from_slice(content);
        out.push(inner);
        let mut nonce = self.iv;
        for (n, s) in nonce[4..].iter_mut().zip(self.seq.to_be_bytes()) {
            *n ^= s;
        }
        let tag = self
            .key
            .seal_in_place_separate_tag(
                aead::Nonce::assume_unique_for_key(nonce),
                aead::Aad::from(header),
                &mut out[header_at + 5..],
            )
            .expect("seal");
        out.extend_from_slice(tag.as_ref());
        self.seq += 1;
    }
}

/// One TCP write as records, and where each plaintext offset went.
pub struct SealedWrite {
    pub wire: Vec<u8>,
    plain_len: usize,
}

impl SealedWrite {
    /// Wire offset of plaintext offset `at` (`0..=len`). At a record boundary it is the
    /// record's header, so a segment that starts a record carries the header and one
    /// that ends it the inner type and tag.
    pub fn offset(&self, at: usize) -> usize {
        let before = at / MAX_FRAGMENT; // records wholly before `at`, or starting at it
        if at == self.plain_len {
            self.wire.len()
        } else if at.is_multiple_of(MAX_FRAGMENT) {
            at + before * RECORD_OVERHEAD
        } else {
            at + before * RECORD_OVERHEAD + 5
        }
    }
}

/// The handshake bytes of one connection, in the order they are sent.
pub struct Handshake {
    /// ClientHello.
    pub client_hello: Vec<u8>,
    /// ServerHello, ChangeCipherSpec, {EncryptedExtensions, Finished}.
    pub server_flight: Vec<u8>,
    /// ChangeCipherSpec, {Finished}.
    pub client_finished: Vec<u8>,
}

/// TLS state of one connection.
pub struct ConnTls {
    /// Not yet sent (sent before the first request).
    pub handshake: Option<Handshake>,
    client: RecordKeys,
    server: RecordKeys,
}

impl ConnTls {
    /// A connection whose randoms and secrets come from `rng`; appends its key log lines.
    pub fn new(rng: &mut Rng, keylog: &mut String) -> ConnTls {
        let mut bytes32 = || {
            let mut b = [0u8; 32];
            for w in b.chunks_exact_mut(8) {
                w.copy_from_slice(&rng.next().to_le_bytes());
            }
            b
        };
        let (client_random, server_random, session_id) = (bytes32(), bytes32(), bytes32());
        let (client_share, server_share, shared_secret) = (bytes32(), bytes32(), bytes32());

        let client_hello = client_hello(&client_random, &session_id, &client_share);
        let server_hello = server_hello(&server_random, &session_id, &server_share);
        let mut transcript = digest::Context::new(&digest::SHA256);
        transcript.update(&client_hello);
        transcript.update(&server_hello);

        // RFC 8446 section 7.1, without a PSK.
        let early = extract(&[0; SHA256_LEN], &[0; SHA256_LEN]);
        let handshake_secret = extract(&derive(&early, b"derived", &empty_hash()), &shared_secret);
        let hello_hash = transcript.clone().finish();
        let client_hs = derive(&handshake_secret, b"c hs traffic", hello_hash.as_ref());
        let server_hs = derive(&handshake_secret, b"s hs traffic", hello_hash.as_ref());
        let master = extract(
            &derive(&handshake_secret, b"derived", &empty_hash()),
            &[0; SHA256_LEN],
        );

        let mut ee_body = Vec::new();
        vec16(&mut ee_body, |exts| extension(exts, 16, alpn_list));
        let encrypted_extensions = message(8, &ee_body);
        transcript.update(&encrypted_extensions);
        let server_finished = message(20, &finished(&server_hs, &transcript));
        transcript.update(&server_finished);
        let full_hash = transcript.clone().finish();
        let client_ap = derive(&master, b"c ap traffic", full_hash.as_ref());
        let server_ap = derive(&master, b"s ap traffic", full_hash.as_ref());
        let client_finished = message(20, &finished(&client_hs, &transcript));

        let mut server_flight = plain_record(CONTENT_HANDSHAKE, 0x0303, &server_hello);
        server_flight.extend_from_slice(&change_cipher_spec());
        let mut flight = encrypted_extensions;
        flight.extend_from_slice(&server_finished);
        RecordKeys::new(&server_hs).seal(CONTENT_HANDSHAKE, &flight, &mut server_flight);
        let mut client_second = change_cipher_spec();
        RecordKeys::new(&client_hs).seal(CONTENT_HANDSHAKE, &client_finished, &mut client_second);

        let random = hex(&client_random);
        for (label, secret) in [
            ("CLIENT_HANDSHAKE_TRAFFIC_SECRET", &client_hs),
            ("SERVER_HANDSHAKE_TRAFFIC_SECRET", &server_hs),
            ("CLIENT_TRAFFIC_SECRET_0", &client_ap),
            ("SERVER_TRAFFIC_SECRET_0", &server_ap),
        ] {
            let _ = writeln!(keylog, "{label} {random} {}", hex(secret));
        }
        ConnTls {
            handshake: Some(Handshake {
                // Clients write 1.0 as the version of the record carrying the ClientHello.
                client_hello: plain_record(CONTENT_HANDSHAKE, 0x0301, &client_hello),
                server_flight,
                client_finished: client_second,
            }),
            client: RecordKeys::new(&client_ap),
            server: RecordKeys::new(&server_ap),
        }
    }

    fn keys(&mut self, from_client: bool) -> &mut RecordKeys {
        if from_client {
            &mut self.client
        } else {
            &mut self.server
        }
    }

    /// One TCP write of application data, as records of up to 16 KiB.
    pub fn seal_write(&mut self, from_client: bool, data: &[u8]) -> SealedWrite {
        let keys = self.keys(from_client);
        let records = data.len().div_ceil(MAX_FRAGMENT);
        let mut wire = Vec::with_capacity(data.len() + records * RECORD_OVERHEAD);
        for fragment in data.chunks(MAX_FRAGMENT) {
            keys.seal(CONTENT_APPLICATION, fragment, &mut wire);
        }
        SealedWrite {
            wire,
            plain_len: data.len(),
        }
    }

    /// A close_notify alert, sent before the FIN.
    pub fn close_notify(&mut self, from_client: bool) -> Vec<u8> {
        let mut wire = Vec::with_capacity(2 + RECORD_OVERHEAD);
        self.keys(from_client)
            .seal(CONTENT_ALERT, &[1, 0], &mut wire);
        wire
    }
}

fn client_hello(random: &[u8; 32], session_id: &[u8; 32], share: &[u8; 32]) -> Vec<u8> {
    let mut b = Vec::with_capacity(256);
    b.extend_from_slice(&[3, 3]);
    b.extend_from_slice(random);
    vec8(&mut b, |v| v.extend_from_slice(session_id));
    vec16(&mut b, |v| {
        for suite in [TLS_AES_128_GCM_SHA256, 0x1302, 0x1303] {
            v.extend_from_slice(&suite.to_be_bytes());
        }
    });
    vec8(&mut b, |v| v.push(0)); // null compression
    vec16(&mut b, |exts| {
        extension(exts, 0, |d| {
            vec16(d, |names| {
                names.push(0); // host_name
                vec16(names, |n| n.extend_from_slice(SNI.as_bytes()));
            });
        });
        extension(exts, 10, |d| {
            vec16(d, |g| g.extend_from_slice(&X25519.to_be_bytes()))
        });
        extension(exts, 13, |d| {
            vec16(d, |s| {
                for alg in [0x0403u16, 0x0804, 0x0401] {
                    s.extend_from_slice(&alg.to_be_bytes());
                }
            });
        });
        extension(exts, 16, alpn_list);
        extension(exts, 43, |d| vec8(d, |v| v.extend_from_slice(&[3, 4])));
        extension(exts, 45, |d| vec8(d, |m| m.push(1))); // psk_dhe_ke
        extension(exts, 51, |d| vec16(d, |shares| key_share(shares, share)));
    });
    message(1, &b)
}

fn server_hello(random: &[u8; 32], session_id: &[u8; 32], share: &[u8; 32]) -> Vec<u8> {
    let mut b = Vec::with_capacity(128);
    b.extend_from_slice(&[3, 3]);
    b.extend_from_slice(random);
    vec8(&mut b, |v| v.extend_from_slice(session_id));
    b.extend_from_slice(&TLS_AES_128_GCM_SHA256.to_be_bytes());
    b.push(0);
    vec16(&mut b, |exts| {
        extension(exts, 43, |d| d.extend_from_slice(&[3, 4]));
        extension(exts, 51, |d| key_share(d, share));
    });
    message(2, &b)
}

fn key_share(out: &mut Vec<u8>, share: &[u8; 32]) {
    out.extend_from_slice(&X25519.to_be_bytes());
    vec16(out, |k| k.extend_from_slice(share));
}

fn alpn_list(out: &mut Vec<u8>) {
    vec16(out, |list| vec8(list, |p| p.extend_from_slice(ALPN)));
}

fn extension(out: &mut Vec<u8>, ty: u16, body: impl FnOnce(&mut Vec<u8>)) {
    out.extend_from_slice(&ty.to_be_bytes());
    vec16(out, body);
}

/// Appends what `body` writes, after its one-byte length.
fn vec8(out: &mut Vec<u8>, body: impl FnOnce(&mut Vec<u8>)) {
    let at = out.len();
    out.push(0);
    body(out);
    out[at] = (out.len() - at - 1) as u8;
}

/// Appends what `body` writes, after its two-byte length.
fn vec16(out: &mut Vec<u8>, body: impl FnOnce(&mut Vec<u8>)) {
    let at = out.len();
    out.extend_from_slice(&[0, 0]);
    body(out);
    let len = (out.len() - at - 2) as u16;
    out[at..at + 2].copy_from_slice(&len.to_be_bytes());
}

/// A handshake message: type, 24-bit length, body.
fn message(ty: u8, body: &[u8]) -> Vec<u8> {
    let mut m = Vec::with_capacity(4 + body.len());
    m.push(ty);
    m.extend_from_slice(&(body.len() as u32).to_be_bytes()[1..]);
    m.extend_from_slice(body);
    m
}

fn plain_record(content: u8, version: u16, fragment: &[u8]) -> Vec<u8> {
    let mut r = Vec::with_capacity(5 + fragment.len());
    r.push(content);
    r.extend_from_slice(&version.to_be_bytes());
    r.extend_from_slice(&(fragment.len() as u16).to_be_bytes());
    r.extend_from_slice(fragment);
    r
}

/// The middlebox-compatibility ChangeCipherSpec (RFC 8446 appendix D.4).
fn change_cipher_spec() -> Vec<u8> {
    plain_record(CONTENT_CCS, 0x0303, &[1])
}

/// HKDF-Extract(salt, ikm) = HMAC-SHA256(salt, ikm).
fn extract(salt: &[u8], ikm: &[u8]) -> [u8; SHA256_LEN] {
    let tag = hmac::sign(&hmac::Key::new(hmac::HMAC_SHA256, salt), ikm);
    let mut out = [0u8; SHA256_LEN];
    out.copy_from_slice(tag.as_ref());
    out
}

/// Derive-Secret with the transcript hash already taken.
// A 32-byte secret and a 32-byte output: derivation cannot fail.
#[allow(clippy::expect_used)]
fn derive(secret: &[u8; SHA256_LEN], label: &[u8], hash: &[u8]) -> [u8; SHA256_LEN] {
    let k = hkdf_expand_label(HashAlg::Sha256, secret, label, hash, SHA256_LEN).expect("derive");
    let mut out = [0u8; SHA256_LEN];
    out.copy_from_slice(&k.0);
    out
}

fn empty_hash() -> [u8; SHA256_LEN] {
    let mut out = [0u8; SHA256_LEN];
    out.copy_from_slice(digest::digest(&digest::SHA256, b"").as_ref());
    out
}

/// Finished verify_data over the transcript so far (RFC 8446 section 4.4.4).
fn finished(traffic_secret: &[u8; SHA256_LEN], transcript: &digest::Context) -> Vec<u8> {
    let key = derive(traffic_secret, b"finished", b"");
    let hash = transcript.clone().finish();
    hmac::sign(&hmac::Key::new(hmac::HMAC_SHA256, &key), hash.as_ref())
        .as_ref()
        .to_vec()
}

fn hex(bytes: &[u8]) -> String {
    bytes
        .iter()
        .fold(String::with_capacity(2 * bytes.len()), |mut s, b| {
            let _ = write!(s, "{b:02x}");
            s
        })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn offsets_follow_records() {
        let mut tls = ConnTls::new(&mut Rng(5), &mut String::new());
        let short = tls.seal_write(true, &[b'x'; 100]);
        assert_eq!(short.wire.len(), 100 + RECORD_OVERHEAD);
        assert_eq!(
            (short.offset(0), short.offset(1), short.offset(100)),
            (0, 6, 122)
        );
        let long = tls.seal_write(true, &vec![b'y'; MAX_FRAGMENT + 10]);
        assert_eq!(long.wire.len(), MAX_FRAGMENT + 10 + 2 * RECORD_OVERHEAD);
        assert_eq!(long.offset(MAX_FRAGMENT), MAX_FRAGMENT + RECORD_OVERHEAD);
        assert_eq!(
            long.wire[MAX_FRAGMENT + RECORD_OVERHEAD],
            CONTENT_APPLICATION
        );
        assert_eq!(
            long.offset(MAX_FRAGMENT + 1),
            MAX_FRAGMENT + RECORD_OVERHEAD + 6
        );
    }

    #[test]
    fn keylog_has_four_secrets_per_client_random() {
        let mut log = String::new();
        let tls = ConnTls::new(&mut Rng(9), &mut log);
        let hs = tls.handshake.as_ref().unwrap();
        let random = hex(&hs.client_hello[11..43]);
        let lines: Vec<&str> = log.lines().collect();
        assert_eq!(lines.len(), 4);
        for line in &lines {
            let f: Vec<&str> = line.split(' ').collect();
            assert_eq!(
                (f.len(), f[1], f[2].len()),
                (3, random.as_str(), 64),
                "{line}"
            );
        }
        assert!(lines[3].starts_with("SERVER_TRAFFIC_SECRET_0 "));
    }
}
