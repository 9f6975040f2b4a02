//! TLS 1.2 CBC suites: AES-CBC with HMAC-SHA1, -SHA256 or -SHA384, the record
//! MAC-then-encrypted (RFC 5246 section 6.2.3.2) or encrypted-then-MACed when
//! both ends agreed to `encrypt_then_mac` (RFC 7366). Explicit per-record IVs
//! only: TLS 1.0's chained IVs come with a PRF (MD5 and SHA-1) not supported.

use aes::cipher::{BlockDecrypt, KeyInit};
use ring::hmac;
use std::fmt;

/// AES block size.
const BLOCK: usize = 16;

/// The record MAC of a CBC suite.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Mac {
    /// HMAC-SHA1 (`_SHA` suites).
    Sha1,
    /// HMAC-SHA256.
    Sha256,
    /// HMAC-SHA384.
    Sha384,
}

impl Mac {
    /// MAC length in bytes (also its key length).
    pub fn output_len(self) -> usize {
        match self {
            Mac::Sha1 => 20,
            Mac::Sha256 => 32,
            Mac::Sha384 => 48,
        }
    }

    fn algorithm(self) -> hmac::Algorithm {
        match self {
            Mac::Sha1 => hmac::HMAC_SHA1_FOR_LEGACY_USE_ONLY,
            Mac::Sha256 => hmac::HMAC_SHA256,
            Mac::Sha384 => hmac::HMAC_SHA384,
        }
    }
}

enum Aes {
    Aes128(Box<aes::Aes128>),
    Aes256(Box<aes::Aes256>),
}

/// Keys of one direction of a CBC suite (never formatted).
pub struct CbcKey {
    aes: Aes,
    mac: hmac::Key,
    mac_alg: Mac,
    encrypt_then_mac: bool,
}

impl fmt::Debug for CbcKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "CbcKey({:?}, etm {}, redacted)",
            self.mac_alg, self.encrypt_then_mac
        )
    }
}

/// The record did not decrypt or authenticate.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CbcError;

impl CbcKey {
    /// Keys from the key block (AES-128 or AES-256 by the key's length).
    pub fn new(
        key: &[u8],
        mac_alg: Mac,
        mac_key: &[u8],
        encrypt_then_mac: bool,
    ) -> Result<CbcKey, CbcError> {
        let aes = match key.len() {
            16 => Aes::Aes128(Box::new(
                aes::Aes128::new_from_slice(key).map_err(|_| CbcError)?,
            )),
            32 => Aes::Aes256(Box::new(
                aes::Aes256::new_from_slice(key).map_err(|_| CbcError)?,
            )),
            _ => return Err(CbcError),
        };
        if mac_key.len() != mac_alg.output_len() {
            return Err(CbcError);
        }
        Ok(CbcKey {
            aes,
            mac: hmac::Key::new(mac_alg.algorithm(), mac_key),
            mac_alg,
            encrypt_then_mac,
        })
    }

    /// Decrypts and authenticates one record fragment at sequence number `seq`.
    pub fn open(&self, seq: u64, header: &[u8; 5], fragment: &[u8]) -> Result<Vec<u8>, CbcError> {
        let mac_len = self.mac_alg.output_len();
        if self.encrypt_then_mac {
            let sealed_len = fragment.len().checked_sub(mac_len).ok_or(CbcError)?;
            let (sealed, tag) = fragment.split_at(sealed_len);
            self.verify(seq, header, sealed, tag)?;
            let plain = self.decrypt(sealed)?;
            let len = unpad(&plain, 0)?;
            return Ok(plain.get(..len).ok_or(CbcError)?.to_vec());
        }
        let plain = self.decrypt(fragment)?;
        let len = unpad(&plain, mac_len)?;
        let (content, rest) = plain.split_at(len);
        self.verify(seq, header, content, rest.get(..mac_len).ok_or(CbcError)?)?;
        Ok(content.to_vec())
    }

    /// IV || ciphertext -> padded plaintext.
    fn decrypt(&self, sealed: &[u8]) -> Result<Vec<u8>, CbcError> {
        if sealed.len() < 2 * BLOCK || !sealed.len().is_multiple_of(BLOCK) {
            return Err(CbcError);
        }
        let (iv, ciphertext) = sealed.split_at(BLOCK);
        let mut plain = ciphertext.to_vec();
        let mut previous: &[u8] = iv;
        for (block, cipher_block) in plain
            .chunks_exact_mut(BLOCK)
            .zip(ciphertext.chunks_exact(BLOCK))
        {
            let b = aes::Block::from_mut_slice(block);
            match &self.aes {
                Aes::Aes128(k) => k.decrypt_block(b),
                Aes::Aes256(k) => k.decrypt_block(b),
            }
            for (p, c) in block.iter_mut().zip(previous) {
                *p ^= c;
            }
            previous = cipher_block;
        }
        Ok(plain)
    }

    fn verify(
        &self,
        seq: u64,
        header: &[u8; 5],
        content: &[u8],
        tag: &[u8],
    ) -> Result<(), CbcError> {
        let len = u16::try_from(content.len())
            .map_err(|_| CbcError)?
            .to_be_bytes();
        let mut ctx = hmac::Context::with_key(&self.mac);
        ctx.update(&seq.to_be_bytes());
        ctx.update(header.get(..3).ok_or(CbcError)?);
        ctx.update(&len);
        ctx.update(content);
        // A passive reader has no timing to protect: a plain comparison will do.
        if ctx.sign().as_ref() == tag {
            Ok(())
        } else {
            Err(CbcError)
        }
    }
}

/// Length of the content before the MAC and the padding (`padding_length` byte last,
/// every padding byte equal to it).
fn unpad(plain: &[u8], mac_len: usize) -> Result<usize, CbcError> {
    let pad = usize::from(*plain.last().ok_or(CbcError)?);
    let content = plain.len().checked_sub(pad + 1 + mac_len).ok_or(CbcError)?;
    let padding = plain.get(plain.len() - pad - 1..).ok_or(CbcError)?;
    if padding.iter().all(|b| usize::from(*b) == pad) {
        Ok(content)
    } else {
        Err(CbcError)
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use aes::cipher::BlockEncrypt;

    /// Encrypts a record the way a TLS 1.2 CBC sender does (tests build records with it).
    #[allow(clippy::too_many_arguments)]
    pub(crate) fn seal(
        key: &[u8],
        mac_alg: Mac,
        mac_key: &[u8],
        etm: bool,
        seq: u64,
        header: &[u8; 5],
        content: &[u8],
        iv: [u8; 16],
    ) -> Vec<u8> {
        let mac = |data: &[u8]| {
            let k = hmac::Key::new(mac_alg.algorithm(), mac_key);
            let mut ctx = hmac::Context::with_key(&k);
            ctx.update(&seq.to_be_bytes());
            ctx.update(&header[..3]);
            ctx.update(&(data.len() as u16).to_be_bytes());
            ctx.update(data);
            ctx.sign().as_ref().to_vec()
        };
        let mut plain = content.to_vec();
        if !etm {
            plain.extend(mac(content));
        }
        let pad = BLOCK - (plain.len() + 1) % BLOCK;
        plain.extend(std::iter::repeat_n(pad as u8, pad + 1));
        let mut out = iv.to_vec();
        let mut previous = iv;
        for block in plain.chunks_exact(BLOCK) {
            let mut b = [0u8; BLOCK];
            for (x, (p, c)) in b.iter_mut().zip(block.iter().zip(previous)) {
                *x = p ^ c;
            }
            let ga = aes::Block::from_mut_slice(&mut b);
            match key.len() {
                16 => aes::Aes128::new_from_slice(key)
                    .expect("key")
                    .encrypt_block(ga),
                _ => aes::Aes256::new_from_slice(key)
                    .expect("key")
                    .encrypt_block(ga),
            }
            out.extend(b);
            previous = b;
        }
        if etm {
            let tag = mac(&out);
            out.extend(tag);
        }
        out
    }

    #[test]
    fn aes_block_matches_fips197() {
        // FIPS-197 appendix C.1 (AES-128) and C.3 (AES-256).
        let hex = super::super::schedule::tests::hex;
        for (key, plain, cipher) in [
            (
                "000102030405060708090a0b0c0d0e0f",
                "00112233445566778899aabbccddeeff",
                "69c4e0d86a7b0430d8cdb78070b4c55a",
            ),
            (
                "000102030405060708090a0b0c0d0e0f101112131415161718191a1b1c1d1e1f",
                "00112233445566778899aabbccddeeff",
                "8ea2b7ca516745bfeafc49904b496089",
            ),
        ] {
            let k = CbcKey::new(&hex(key), Mac::Sha1, &[0; 20], false).expect("key");
            // One CBC block with a zero IV is one AES block.
            let mut sealed = vec![0u8; 16];
            sealed.extend(hex(cipher));
            assert_eq!(k.decrypt(&sealed).expect("decrypt"), hex(plain));
        }
    }

    #[test]
    fn mac_then_encrypt_and_encrypt_then_mac_round_trip() {
        let header = [23, 3, 3, 0, 0];
        for (key_len, mac_alg, etm) in [
            (16, Mac::Sha1, false),
            (32, Mac::Sha1, true),
            (16, Mac::Sha256, false),
            (32, Mac::Sha384, true),
        ] {
            let key = vec![7u8; key_len];
            let mac_key = vec![9u8; mac_alg.output_len()];
            for len in [0usize, 1, 15, 16, 17, 100] {
                let content: Vec<u8> = (0..len as u8).collect();
                let wire = seal(&key, mac_alg, &mac_key, etm, 5, &header, &content, [3; 16]);
                let k = CbcKey::new(&key, mac_alg, &mac_key, etm).expect("key");
                assert_eq!(
                    k.open(5, &header, &wire),
                    Ok(content.clone()),
                    "{mac_alg:?} etm {etm} len {len}"
                );
                assert_eq!(
                    k.open(6, &header, &wire),
                    Err(CbcError),
                    "wrong sequence number"
                );
                let mut bad = wire.clone();
                bad[20] ^= 1;
                assert_eq!(k.open(5, &header, &bad), Err(CbcError));
                for cut in 0..wire.len() {
                    assert_eq!(k.open(5, &header, &wire[..cut]), Err(CbcError), "cut {cut}");
                }
            }
        }
        assert!(CbcKey::new(&[0; 24], Mac::Sha1, &[0; 20], false).is_err());
        assert!(CbcKey::new(&[0; 16], Mac::Sha256, &[0; 20], false).is_err());
        let k = CbcKey::new(&[0; 16], Mac::Sha256, &[0; 32], true).expect("key");
        assert_eq!(format!("{k:?}"), "CbcKey(Sha256, etm true, redacted)");
    }
}
