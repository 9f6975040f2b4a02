//! Record decryption for one direction: nonce and additional data of TLS 1.3
//! and TLS 1.2 AEAD suites, the per-direction sequence number, KeyUpdate, and
//! the bounded search for the right sequence number after records were lost.

use super::cbc::{CbcKey, Mac};
use super::cipher::{Aead, AeadKey, OpenError, TAG_LEN};
use super::record::HEADER_LEN;
use super::schedule::{
    DeriveError, HashAlg, KeyBytes, TrafficKeys, tls13_next_secret, tls13_traffic_keys,
};

/// After records were lost, how many further sequence numbers are tried before a record is
/// declared undecryptable.
pub const MAX_SEQ_SEARCH: u64 = 32;

/// TLS 1.2 GCM explicit nonce length.
const EXPLICIT_NONCE_LEN: usize = 8;

/// A record decrypted in place.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct InPlace {
    /// The real content type (TLS 1.3: from the inner plaintext).
    pub content_type: u8,
    /// Where the plaintext is in the fragment (TLS 1.3: padding and content type removed).
    pub plaintext: std::ops::Range<usize>,
}

/// Why a record was not decrypted.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DecryptError {
    /// Authentication failed at every sequence number tried.
    Authentication,
    /// The record is too short for the nonce and tag.
    TooShort,
    /// A TLS 1.3 inner plaintext of only zeros (no content type).
    NoContentType,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Framing {
    /// TLS 1.3: nonce = iv ^ seq, additional data = the record header (empty before draft 25).
    Tls13 { header_aad: bool },
    /// TLS 1.2 GCM: nonce = salt(4) || explicit(8) from the record.
    Tls12Gcm,
    /// TLS 1.2 ChaCha20-Poly1305: nonce = iv ^ seq (RFC 7905).
    Tls12ChaCha,
    /// TLS 1.2 AES-CBC with HMAC (explicit IV).
    Tls12Cbc,
}

#[derive(Debug)]
enum RecordKey {
    // Boxed: ring's key schedule makes the AEAD key several times larger than the rest.
    Aead(Box<AeadKey>),
    Cbc(CbcKey),
}

/// Decrypts one direction's protected records in order.
#[derive(Debug)]
pub struct Decryptor {
    key: RecordKey,
    iv: KeyBytes,
    framing: Framing,
    seq: u64,
    /// TLS 1.3 only: the current traffic secret and its hash, for KeyUpdate.
    secret: Option<(HashAlg, KeyBytes)>,
}

impl Decryptor {
    /// A TLS 1.3 decryptor from a traffic secret. `draft` is the draft number for the
    /// pre-RFC versions (`0x7fNN`); drafts before 25 used no additional data.
    pub fn tls13(
        aead: Aead,
        hash: HashAlg,
        secret: &[u8],
        draft: Option<u8>,
    ) -> Result<Decryptor, DeriveError> {
        let TrafficKeys { key, iv } = tls13_traffic_keys(hash, secret, aead.key_len())?;
        Ok(Decryptor {
            key: RecordKey::Aead(Box::new(
                AeadKey::new(aead, &key.0).map_err(|_| DeriveError)?,
            )),
            iv,
            framing: Framing::Tls13 {
                header_aad: draft.is_none_or(|d| d >= 25),
            },
            seq: 0,
            secret: Some((hash, KeyBytes(secret.to_vec()))),
        })
    }

    /// A TLS 1.2 AEAD decryptor from the key block's key and IV of this direction.
    pub fn tls12(aead: Aead, key: &[u8], iv: &[u8]) -> Result<Decryptor, DeriveError> {
        let framing = match aead {
            Aead::ChaCha20Poly1305 => Framing::Tls12ChaCha,
            Aead::Aes128Gcm | Aead::Aes256Gcm => Framing::Tls12Gcm,
        };
        let iv_len = if framing == Framing::Tls12ChaCha {
            12
        } else {
            4
        };
        if iv.len() != iv_len {
            return Err(DeriveError);
        }
        Ok(Decryptor {
            key: RecordKey::Aead(Box::new(AeadKey::new(aead, key).map_err(|_| DeriveError)?)),
            iv: KeyBytes(iv.to_vec()),
            framing,
            seq: 0,
            secret: None,
        })
    }

    /// A TLS 1.2 AES-CBC decryptor from the key block's cipher and MAC keys of this direction.
    pub fn tls12_cbc(
        key: &[u8],
        mac: Mac,
        mac_key: &[u8],
        encrypt_then_mac: bool,
    ) -> Result<Decryptor, DeriveError> {
        Ok(Decryptor {
            key: RecordKey::Cbc(
                CbcKey::new(key, mac, mac_key, encrypt_then_mac).map_err(|_| DeriveError)?,
            ),
            iv: KeyBytes::default(),
            framing: Framing::Tls12Cbc,
            seq: 0,
            secret: None,
        })
    }

    /// The TLS 1.2 IV length of `aead` (the key block's `iv_len`).
    pub fn tls12_iv_len(aead: Aead) -> usize {
        match aead {
            Aead::ChaCha20Poly1305 => 12,
            Aead::Aes128Gcm | Aead::Aes256Gcm => 4,
        }
    }

    /// Sequence number of the next record expected.
    pub fn seq(&self) -> u64 {
        self.seq
    }

    /// TLS 1.3 KeyUpdate received in this direction: next secret, keys, sequence 0.
    pub fn key_update(&mut self) -> Result<(), DeriveError> {
        let RecordKey::Aead(key) = &self.key else {
            return Err(DeriveError);
        };
        let aead = key.aead();
        let (hash, secret) = self.secret.take().ok_or(DeriveError)?;
        let next = tls13_next_secret(hash, &secret.0)?;
        let draft_aad = match self.framing {
            Framing::Tls13 { header_aad } => header_aad,
            _ => true,
        };
        let mut fresh = Decryptor::tls13(aead, hash, &next.0, None)?;
        fresh.framing = Framing::Tls13 {
            header_aad: draft_aad,
        };
        *self = fresh;
        Ok(())
    }

    /// Decrypts `fragment` (the record's body after `header`) in place. With `search`,
    /// records may have been lost before it: the next [`MAX_SEQ_SEARCH`] sequence numbers
    /// are tried too, each on the fragment as received. On success the sequence number
    /// moves past the record and the plaintext is `fragment[range]`; on failure the
    /// sequence number stays (see [`Decryptor::skip_record`]) and the fragment's bytes
    /// are unspecified.
    pub fn open_in_place(
        &mut self,
        header: &[u8; HEADER_LEN],
        fragment: &mut [u8],
        search: bool,
    ) -> Result<InPlace, DecryptError> {
        if !search {
            let opened = self.open_at(header, fragment, self.seq)?;
            self.seq = self.seq.saturating_add(1);
            return Ok(opened);
        }
        // A failed trial overwrites the fragment: each further one starts from this copy.
        let received = fragment.to_vec();
        let mut result = Err(DecryptError::Authentication);
        for step in 0..=MAX_SEQ_SEARCH {
            if step > 0 {
                fragment.copy_from_slice(&received);
            }
            let seq = self.seq.saturating_add(step);
            result = self.open_at(header, fragment, seq);
            match result {
                Err(DecryptError::Authentication) => continue,
                Err(DecryptError::TooShort) => break,
                _ => {
                    self.seq = seq.saturating_add(1);
                    return result;
                }
            }
        }
        result
    }

    /// A record of this direction was not decrypted: the sender still used a sequence number.
    pub fn skip_record(&mut self) {
        self.seq = self.seq.saturating_add(1);
    }

    fn open_at(
        &self,
        header: &[u8; HEADER_LEN],
        fragment: &mut [u8],
        seq: u64,
    ) -> Result<InPlace, DecryptError> {
        let content_type = header[0];
        let key = match &self.key {
            RecordKey::Aead(key) => key,
            RecordKey::Cbc(key) => {
                let plaintext = key
                    .open(seq, header, fragment)
                    .map_err(|_| DecryptError::Authentication)?;
                let len = plaintext.len();
                fragment
                    .get_mut(..len)
                    .ok_or(DecryptError::TooShort)?
                    .copy_from_slice(&plaintext);
                return Ok(InPlace {
                    content_type,
                    plaintext: 0..len,
                });
            }
        };
        match self.framing {
            Framing::Tls12Cbc => Err(DecryptError::Authentication),
            Framing::Tls13 { header_aad } => {
                let aad: &[u8] = if header_aad { header } else { &[] };
                let plain = key
                    .open_in_place(self.xor_nonce(seq), aad, fragment)
                    .map_err(auth)?;
                // Inner plaintext: content || type || zeros.
                let end = plain
                    .iter()
                    .rposition(|b| *b != 0)
                    .ok_or(DecryptError::NoContentType)?;
                let content_type = plain.get(end).copied().ok_or(DecryptError::NoContentType)?;
                Ok(InPlace {
                    content_type,
                    plaintext: 0..end,
                })
            }
            Framing::Tls12Gcm => {
                if fragment.len() < EXPLICIT_NONCE_LEN + TAG_LEN {
                    return Err(DecryptError::TooShort);
                }
                let (explicit, sealed) = fragment.split_at_mut(EXPLICIT_NONCE_LEN);
                let mut nonce = [0u8; 12];
                for (n, b) in nonce
                    .iter_mut()
                    .zip(self.iv.0.iter().chain(explicit.iter()))
                {
                    *n = *b;
                }
                let aad = tls12_aad(seq, header, sealed.len() - TAG_LEN);
                let len = key.open_in_place(nonce, &aad, sealed).map_err(auth)?.len();
                Ok(InPlace {
                    content_type,
                    plaintext: EXPLICIT_NONCE_LEN..EXPLICIT_NONCE_LEN + len,
                })
            }
            Framing::Tls12ChaCha => {
                if fragment.len() < TAG_LEN {
                    return Err(DecryptError::TooShort);
                }
                let aad = tls12_aad(seq, header, fragment.len() - TAG_LEN);
                let len = key
                    .open_in_place(self.xor_nonce(seq), &aad, fragment)
                    .map_err(auth)?
                    .len();
                Ok(InPlace {
                    content_type,
                    plaintext: 0..len,
                })
            }
        }
    }

    fn xor_nonce(&self, seq: u64) -> [u8; 12] {
        let mut nonce = [0u8; 12];
        for (n, b) in nonce.iter_mut().zip(self.iv.0.iter()) {
            *n = *b;
        }
        for (n, s) in nonce.iter_mut().skip(4).zip(seq.to_be_bytes()) {
            *n ^= s;
        }
        nonce
    }
}

fn auth(_: OpenError) -> DecryptError {
    DecryptError::Authentication
}

/// TLS 1.2 additional data: seq || type || version || plaintext length.
fn tls12_aad(seq: u64, header: &[u8; HEADER_LEN], plain_len: usize) -> [u8; 13] {
    let mut aad = [0u8; 13];
    let len = u16::try_from(plain_len).unwrap_or(u16::MAX).to_be_bytes();
    for (a, b) in aad.iter_mut().zip(
        seq.to_be_bytes()
            .iter()
            .chain(header.iter().take(3))
            .chain(len.iter()),
    ) {
        *a = *b;
    }
    aad
}

#[cfg(test)]
pub(crate) mod tests {
    use super::super::record::Record;
    use super::super::schedule::tests::{
        RFC8448_CLIENT_AP, RFC8448_SERVER_AP, RFC8448_SERVER_HS, hex,
    };
    use super::*;

    /// A decrypted record, copied out (the tests compare whole plaintexts).
    #[derive(Debug, Clone, PartialEq, Eq)]
    pub(crate) struct Opened {
        pub content_type: u8,
        pub plaintext: Vec<u8>,
    }

    impl Decryptor {
        /// [`Decryptor::open_in_place`] on a copy of `record`'s fragment.
        pub(crate) fn open(
            &mut self,
            record: &Record,
            search: bool,
        ) -> Result<Opened, DecryptError> {
            let mut fragment = record.fragment.clone();
            let opened = self.open_in_place(&record.header, &mut fragment, search)?;
            Ok(Opened {
                content_type: opened.content_type,
                plaintext: fragment[opened.plaintext].to_vec(),
            })
        }
    }

    pub(crate) fn record_from(wire: &[u8]) -> Record {
        let mut header = [0u8; HEADER_LEN];
        header.copy_from_slice(&wire[..HEADER_LEN]);
        Record {
            header,
            fragment: wire[HEADER_LEN..].to_vec(),
        }
    }

    /// RFC 8448 section 3: the server's encrypted handshake flight (EncryptedExtensions,
    /// Certificate, CertificateVerify, Finished) under the server handshake keys, seq 0.
    pub(crate) const RFC8448_SERVER_FLIGHT: &str = "17030302a2d1ff334a56f5bff6594a07cc87b580233f500f45e489e7f33af35edf7869fcf40aa40aa2b8ea73f848a7ca07612ef9f945cb960b4068905123ea78b111b429ba9191cd05d2a389280f526134aadc7fc78c4b729df828b5ecf7b13bd9aefb0e57f271585b8ea9bb355c7c79020716cfb9b1183ef3ab20e37d57a6b9d7477609aee6e122a4cf51427325250c7d0e509289444c9b3a648f1d71035d2ed65b0e3cdd0cbae8bf2d0b227812cbb360987255cc744110c453baa4fcd610928d809810e4b7ed1a8fd991f06aa6248204797e36a6a73b70a2559c09ead686945ba246ab66e5edd8044b4c6de3fcf2a89441ac66272fd8fb330ef8190579b3684596c960bd596eea520a56a8d650f563aad27409960dca63d3e688611ea5e22f4415cf9538d51a200c27034272968a264ed6540c84838d89f72c24461aad6d26f59ecaba9acbbb317b66d902f4f292a36ac1b639c637ce343117b659622245317b49eeda0c6258f100d7d961ffb138647e92ea330faeea6dfa31c7a84dc3bd7e1b7a6c7178af36879018e3f252107f243d243dc7339d5684c8b0378bf30244da8c87c843f5e56eb4c5e8280a2b48052cf93b16499a66db7cca71e4599426f7d461e66f99882bd89fc50800becca62d6c74116dbd2972fda1fa80f85df881edbe5a37668936b335583b599186dc5c6918a396fa48a181d6b6fa4f9d62d513afbb992f2b992f67f8afe67f76913fa388cb5630c8ca01e0c65d11c66a1e2ac4c85977b7c7a6999bbf10dc35ae69f5515614636c0b9b68c19ed2e31c0b3b66763038ebba42f3b38edc0399f3a9f23faa63978c317fc9fa66a73f60f0504de93b5b845e275592c12335ee340bbc4fddd502784016e4b3be7ef04dda49f4b440a30cb5d2af939828fd4ae3794e44f94df5a631ede42c1719bfdabf0253fe5175be898e750edc53370d2b";
    /// Its plaintext: EncryptedExtensions, then (after the certificate messages) Finished.
    pub(crate) const RFC8448_EE: &str =
        "080000240022000a00140012001d00170018001901000101010201030104001c0002400100000000";
    const RFC8448_SERVER_FINISHED: &str =
        "140000209b9b141d906337fbd2cbdce71df4deda4ab42c309572cb7fffee5454b78f0718";
    /// Server NewSessionTicket (application keys, seq 0), then 50 bytes of application data (seq 1).
    pub(crate) const RFC8448_SERVER_NST: &str = "17030300de3a6b8f90414a97d6959c3487680de5134a2b240e6cffac116e95d41d6af8f6b580dcf3d11d63c758db289a015940252f55713e061dc13e078891a38efbcf5753ad8ef170ad3c7353d16d9da773b9ca7f2b9fa1b6c0d4a3d03f75e09c30ba1e62972ac46f75f7b981be63439b2999ce13064615139891d5e4c5b406f16e3fc181a77ca475840025db2f0a77f81b5ab05b94c01346755f69232c86519d86cbeeac87aac347d143f9605d64f650db4d023e70e952ca49fe5137121c74bc2697687e248746d6df353005f3bce18696129c8153556b3b6c6779b37bf15985684f";
    pub(crate) const RFC8448_SERVER_DATA: &str = "17030300432e937e11ef4ac740e538ad36005fc4a46932fc3225d05f82aa1b36e30efaf97d90e6dffc602dcb501a59a8fcc49c4bf2e5f0a21c0047c2abf332540dd032e167c2955d";
    pub(crate) const RFC8448_CLIENT_DATA: &str = "1703030043a23f7054b62c94d0affafe8228ba55cbefacea42f914aa66bcab3f2b9819a8a5b46b395bd54a9a20441e2b62974e1f5a6292a2977014bd1e3deae63aeebb21694915e4";

    fn rfc8448(secret: &str) -> Decryptor {
        Decryptor::tls13(Aead::Aes128Gcm, HashAlg::Sha256, &hex(secret), None).expect("keys")
    }

    #[test]
    fn rfc8448_server_handshake_flight() {
        let mut d = rfc8448(RFC8448_SERVER_HS);
        let opened = d
            .open(&record_from(&hex(RFC8448_SERVER_FLIGHT)), false)
            .expect("decrypts");
        assert_eq!(opened.content_type, 22);
        assert_eq!(opened.plaintext.len(), 657);
        assert!(opened.plaintext.starts_with(&hex(RFC8448_EE)));
        assert!(opened.plaintext.ends_with(&hex(RFC8448_SERVER_FINISHED)));
        assert_eq!(d.seq(), 1);
    }

    #[test]
    fn rfc8448_application_data_both_ways() {
        let fifty: Vec<u8> = (0u8..50).collect();
        let mut client = rfc8448(RFC8448_CLIENT_AP);
        let opened = client
            .open(&record_from(&hex(RFC8448_CLIENT_DATA)), false)
            .expect("client data");
        assert_eq!((opened.content_type, opened.plaintext), (23, fifty.clone()));

        let mut server = rfc8448(RFC8448_SERVER_AP);
        let nst = server
            .open(&record_from(&hex(RFC8448_SERVER_NST)), false)
            .expect("ticket");
        assert_eq!(
            (nst.content_type, nst.plaintext.first().copied()),
            (22, Some(4))
        );
        let opened = server
            .open(&record_from(&hex(RFC8448_SERVER_DATA)), false)
            .expect("server data");
        assert_eq!((opened.content_type, opened.plaintext), (23, fifty));
    }

    #[test]
    fn lost_record_found_by_sequence_search_only_when_allowed() {
        // The ticket record (seq 0) is lost: the data record is at seq 1.
        let data = record_from(&hex(RFC8448_SERVER_DATA));
        let mut strict = rfc8448(RFC8448_SERVER_AP);
        assert_eq!(strict.open(&data, false), Err(DecryptError::Authentication));
        assert_eq!(strict.seq(), 0, "a failed trial leaves the sequence number");
        strict.skip_record();
        assert_eq!(strict.open(&data, false).map(|o| o.plaintext.len()), Ok(50));
        let mut searching = rfc8448(RFC8448_SERVER_AP);
        assert_eq!(
            searching.open(&data, true).map(|o| o.plaintext.len()),
            Ok(50)
        );
        assert_eq!(searching.seq(), 2);
    }

    #[test]
    fn tampered_record_fails() {
        let mut wire = hex(RFC8448_CLIENT_DATA);
        *wire.last_mut().expect("byte") ^= 1;
        assert_eq!(
            rfc8448(RFC8448_CLIENT_AP).open(&record_from(&wire), true),
            Err(DecryptError::Authentication)
        );
    }

    fn tls12_record(
        key: &AeadKey,
        nonce: [u8; 12],
        seq: u64,
        explicit: Option<[u8; 8]>,
        plain: &[u8],
    ) -> Record {
        let header = [23, 3, 3, 0, 0];
        let aad = tls12_aad(seq, &header, plain.len());
        let mut fragment = explicit.map(|e| e.to_vec()).unwrap_or_default();
        fragment.extend(key.seal(nonce, &aad, plain));
        let mut header = header;
        header[3..5].copy_from_slice(&(fragment.len() as u16).to_be_bytes());
        Record { header, fragment }
    }

    #[test]
    fn tls12_gcm_uses_salt_and_explicit_nonce() {
        let key_bytes = [0x11u8; 16];
        let salt = [1, 2, 3, 4];
        let seal_key = AeadKey::new(Aead::Aes128Gcm, &key_bytes).expect("key");
        let explicit = 7u64.to_be_bytes();
        let mut nonce = [0u8; 12];
        nonce[..4].copy_from_slice(&salt);
        nonce[4..].copy_from_slice(&explicit);
        let mut d = Decryptor::tls12(Aead::Aes128Gcm, &key_bytes, &salt).expect("keys");
        for seq in 0..3 {
            let rec = tls12_record(&seal_key, nonce, seq, Some(explicit), b"GET / HTTP/1.1\r\n");
            assert_eq!(
                d.open(&rec, false).map(|o| o.plaintext),
                Ok(b"GET / HTTP/1.1\r\n".to_vec()),
                "seq {seq}"
            );
        }
        assert!(Decryptor::tls12(Aead::Aes128Gcm, &key_bytes, &[0; 12]).is_err());
    }

    #[test]
    fn tls12_chacha_xors_the_sequence_number() {
        let key_bytes = [0x22u8; 32];
        let iv = [0x33u8; 12];
        let seal_key = AeadKey::new(Aead::ChaCha20Poly1305, &key_bytes).expect("key");
        let mut d = Decryptor::tls12(Aead::ChaCha20Poly1305, &key_bytes, &iv).expect("keys");
        for seq in 0..3u64 {
            let mut nonce = iv;
            for (n, s) in nonce[4..].iter_mut().zip(seq.to_be_bytes()) {
                *n ^= s;
            }
            let rec = tls12_record(&seal_key, nonce, seq, None, b"hello");
            assert_eq!(
                d.open(&rec, false).map(|o| o.plaintext),
                Ok(b"hello".to_vec()),
                "seq {seq}"
            );
        }
    }

    #[test]
    fn key_update_moves_to_the_next_secret() {
        let secret = hex(RFC8448_CLIENT_AP);
        let next = tls13_next_secret(HashAlg::Sha256, &secret).expect("next");
        let keys = tls13_traffic_keys(HashAlg::Sha256, &next.0, 16).expect("keys");
        let seal_key = AeadKey::new(Aead::Aes128Gcm, &keys.key.0).expect("key");
        let mut nonce = [0u8; 12];
        nonce.copy_from_slice(&keys.iv.0);
        let header = [23, 3, 3, 0, 5 + 1 + 16];
        let fragment = seal_key.seal(nonce, &header, b"after\x17");
        let rec = Record { header, fragment };
        let mut d = rfc8448(RFC8448_CLIENT_AP);
        d.open(&record_from(&hex(RFC8448_CLIENT_DATA)), false)
            .expect("seq 0");
        d.key_update().expect("update");
        assert_eq!(d.seq(), 0);
        assert_eq!(
            d.open(&rec, false).map(|o| o.plaintext),
            Ok(b"after".to_vec())
        );
    }
}
