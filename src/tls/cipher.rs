//! Cipher suites (IANA id -> name and how its records are protected) and the
//! AEAD primitives, via `ring`.

use super::cbc::Mac;
use super::schedule::HashAlg;
use ring::aead;
use std::fmt;

/// The AEADs this stage decrypts.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Aead {
    /// AES-128-GCM.
    Aes128Gcm,
    /// AES-256-GCM.
    Aes256Gcm,
    /// ChaCha20-Poly1305.
    ChaCha20Poly1305,
}

impl Aead {
    /// Key length in bytes.
    pub fn key_len(self) -> usize {
        match self {
            Aead::Aes128Gcm => 16,
            Aead::Aes256Gcm | Aead::ChaCha20Poly1305 => 32,
        }
    }

    fn algorithm(self) -> &'static aead::Algorithm {
        match self {
            Aead::Aes128Gcm => &aead::AES_128_GCM,
            Aead::Aes256Gcm => &aead::AES_256_GCM,
            Aead::ChaCha20Poly1305 => &aead::CHACHA20_POLY1305,
        }
    }
}

/// Authentication tag length of every AEAD here.
pub const TAG_LEN: usize = 16;

/// How a suite protects records, as far as this stage is concerned.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Protection {
    /// TLS 1.3 AEAD suite with its key-schedule hash.
    Tls13(Aead, HashAlg),
    /// TLS 1.2 AEAD suite with its PRF hash.
    Tls12Aead(Aead, HashAlg),
    /// TLS 1.2 AES-CBC suite: key length, record MAC, PRF hash.
    Tls12Cbc(usize, Mac, HashAlg),
    /// Known, but not decrypted here (CCM, RC4, 3DES, NULL).
    Unsupported,
}

/// A cipher suite.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Suite {
    /// IANA code point.
    pub id: u16,
    /// IANA name.
    pub name: &'static str,
    /// How its records are protected.
    pub protection: Protection,
}

use Aead::{Aes128Gcm as A128, Aes256Gcm as A256, ChaCha20Poly1305 as CHACHA};
use HashAlg::{Sha256 as S256, Sha384 as S384};
use Protection::{Tls12Aead as T12, Tls12Cbc as CBC, Tls13 as T13, Unsupported as NO};

const fn s(id: u16, name: &'static str, protection: Protection) -> Suite {
    Suite {
        id,
        name,
        protection,
    }
}

/// The suites named by IANA that clients of the last decade offer.
pub const SUITES: &[Suite] = &[
    s(0x1301, "TLS_AES_128_GCM_SHA256", T13(A128, S256)),
    s(0x1302, "TLS_AES_256_GCM_SHA384", T13(A256, S384)),
    s(0x1303, "TLS_CHACHA20_POLY1305_SHA256", T13(CHACHA, S256)),
    s(0x1304, "TLS_AES_128_CCM_SHA256", NO),
    s(0x1305, "TLS_AES_128_CCM_8_SHA256", NO),
    s(
        0xC02B,
        "TLS_ECDHE_ECDSA_WITH_AES_128_GCM_SHA256",
        T12(A128, S256),
    ),
    s(
        0xC02C,
        "TLS_ECDHE_ECDSA_WITH_AES_256_GCM_SHA384",
        T12(A256, S384),
    ),
    s(
        0xC02F,
        "TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256",
        T12(A128, S256),
    ),
    s(
        0xC030,
        "TLS_ECDHE_RSA_WITH_AES_256_GCM_SHA384",
        T12(A256, S384),
    ),
    s(0x009C, "TLS_RSA_WITH_AES_128_GCM_SHA256", T12(A128, S256)),
    s(0x009D, "TLS_RSA_WITH_AES_256_GCM_SHA384", T12(A256, S384)),
    s(
        0x009E,
        "TLS_DHE_RSA_WITH_AES_128_GCM_SHA256",
        T12(A128, S256),
    ),
    s(
        0x009F,
        "TLS_DHE_RSA_WITH_AES_256_GCM_SHA384",
        T12(A256, S384),
    ),
    s(0x00A8, "TLS_PSK_WITH_AES_128_GCM_SHA256", T12(A128, S256)),
    s(0x00A9, "TLS_PSK_WITH_AES_256_GCM_SHA384", T12(A256, S384)),
    s(
        0x00AA,
        "TLS_DHE_PSK_WITH_AES_128_GCM_SHA256",
        T12(A128, S256),
    ),
    s(
        0x00AB,
        "TLS_DHE_PSK_WITH_AES_256_GCM_SHA384",
        T12(A256, S384),
    ),
    s(
        0x00AC,
        "TLS_RSA_PSK_WITH_AES_128_GCM_SHA256",
        T12(A128, S256),
    ),
    s(
        0x00AD,
        "TLS_RSA_PSK_WITH_AES_256_GCM_SHA384",
        T12(A256, S384),
    ),
    s(
        0xCCA8,
        "TLS_ECDHE_RSA_WITH_CHACHA20_POLY1305_SHA256",
        T12(CHACHA, S256),
    ),
    s(
        0xCCA9,
        "TLS_ECDHE_ECDSA_WITH_CHACHA20_POLY1305_SHA256",
        T12(CHACHA, S256),
    ),
    s(
        0xCCAA,
        "TLS_DHE_RSA_WITH_CHACHA20_POLY1305_SHA256",
        T12(CHACHA, S256),
    ),
    s(
        0xCCAB,
        "TLS_PSK_WITH_CHACHA20_POLY1305_SHA256",
        T12(CHACHA, S256),
    ),
    s(
        0xCCAC,
        "TLS_ECDHE_PSK_WITH_CHACHA20_POLY1305_SHA256",
        T12(CHACHA, S256),
    ),
    s(
        0xCCAD,
        "TLS_DHE_PSK_WITH_CHACHA20_POLY1305_SHA256",
        T12(CHACHA, S256),
    ),
    s(
        0xCCAE,
        "TLS_RSA_PSK_WITH_CHACHA20_POLY1305_SHA256",
        T12(CHACHA, S256),
    ),
    s(
        0xC009,
        "TLS_ECDHE_ECDSA_WITH_AES_128_CBC_SHA",
        CBC(16, Mac::Sha1, S256),
    ),
    s(
        0xC00A,
        "TLS_ECDHE_ECDSA_WITH_AES_256_CBC_SHA",
        CBC(32, Mac::Sha1, S256),
    ),
    s(
        0xC013,
        "TLS_ECDHE_RSA_WITH_AES_128_CBC_SHA",
        CBC(16, Mac::Sha1, S256),
    ),
    s(
        0xC014,
        "TLS_ECDHE_RSA_WITH_AES_256_CBC_SHA",
        CBC(32, Mac::Sha1, S256),
    ),
    s(
        0xC023,
        "TLS_ECDHE_ECDSA_WITH_AES_128_CBC_SHA256",
        CBC(16, Mac::Sha256, S256),
    ),
    s(
        0xC024,
        "TLS_ECDHE_ECDSA_WITH_AES_256_CBC_SHA384",
        CBC(32, Mac::Sha384, S384),
    ),
    s(
        0xC027,
        "TLS_ECDHE_RSA_WITH_AES_128_CBC_SHA256",
        CBC(16, Mac::Sha256, S256),
    ),
    s(
        0xC028,
        "TLS_ECDHE_RSA_WITH_AES_256_CBC_SHA384",
        CBC(32, Mac::Sha384, S384),
    ),
    s(
        0x002F,
        "TLS_RSA_WITH_AES_128_CBC_SHA",
        CBC(16, Mac::Sha1, S256),
    ),
    s(
        0x0035,
        "TLS_RSA_WITH_AES_256_CBC_SHA",
        CBC(32, Mac::Sha1, S256),
    ),
    s(
        0x003C,
        "TLS_RSA_WITH_AES_128_CBC_SHA256",
        CBC(16, Mac::Sha256, S256),
    ),
    s(
        0x003D,
        "TLS_RSA_WITH_AES_256_CBC_SHA256",
        CBC(32, Mac::Sha256, S256),
    ),
    s(
        0x0033,
        "TLS_DHE_RSA_WITH_AES_128_CBC_SHA",
        CBC(16, Mac::Sha1, S256),
    ),
    s(
        0x0039,
        "TLS_DHE_RSA_WITH_AES_256_CBC_SHA",
        CBC(32, Mac::Sha1, S256),
    ),
    s(
        0x0067,
        "TLS_DHE_RSA_WITH_AES_128_CBC_SHA256",
        CBC(16, Mac::Sha256, S256),
    ),
    s(
        0x006B,
        "TLS_DHE_RSA_WITH_AES_256_CBC_SHA256",
        CBC(32, Mac::Sha256, S256),
    ),
    s(
        0x008C,
        "TLS_PSK_WITH_AES_128_CBC_SHA",
        CBC(16, Mac::Sha1, S256),
    ),
    s(
        0x008D,
        "TLS_PSK_WITH_AES_256_CBC_SHA",
        CBC(32, Mac::Sha1, S256),
    ),
    s(
        0x00AE,
        "TLS_PSK_WITH_AES_128_CBC_SHA256",
        CBC(16, Mac::Sha256, S256),
    ),
    s(
        0x00AF,
        "TLS_PSK_WITH_AES_256_CBC_SHA384",
        CBC(32, Mac::Sha384, S384),
    ),
    s(0xC09C, "TLS_RSA_WITH_AES_128_CCM", NO),
    s(0xC09D, "TLS_RSA_WITH_AES_256_CCM", NO),
    s(0xC0A4, "TLS_PSK_WITH_AES_128_CCM", NO),
    s(0xC0A5, "TLS_PSK_WITH_AES_256_CCM", NO),
    s(0xC0AC, "TLS_ECDHE_ECDSA_WITH_AES_128_CCM", NO),
    s(0xC0AD, "TLS_ECDHE_ECDSA_WITH_AES_256_CCM", NO),
    s(0x000A, "TLS_RSA_WITH_3DES_EDE_CBC_SHA", NO),
    s(0x0016, "TLS_DHE_RSA_WITH_3DES_EDE_CBC_SHA", NO),
    s(0x0004, "TLS_RSA_WITH_RC4_128_MD5", NO),
    s(0x0005, "TLS_RSA_WITH_RC4_128_SHA", NO),
    s(0x0001, "TLS_RSA_WITH_NULL_MD5", NO),
    s(0x0002, "TLS_RSA_WITH_NULL_SHA", NO),
    s(0x003B, "TLS_RSA_WITH_NULL_SHA256", NO),
];

/// The suite with IANA code point `id`, if in [`SUITES`].
pub fn suite(id: u16) -> Option<&'static Suite> {
    SUITES.iter().find(|s| s.id == id)
}

/// The IANA name of `id`, or `0xABCD` for a code point not in [`SUITES`].
pub fn suite_name(id: u16) -> String {
    suite(id).map_or_else(|| format!("0x{id:04X}"), |s| s.name.to_string())
}

/// A record key of one direction (never formatted).
pub struct AeadKey {
    key: aead::LessSafeKey,
    aead: Aead,
}

impl fmt::Debug for AeadKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "AeadKey({:?}, redacted)", self.aead)
    }
}

/// The key or the record does not fit the algorithm, or authentication failed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct OpenError;

impl AeadKey {
    /// A key for `aead` (fails when `key` has the wrong length).
    pub fn new(aead: Aead, key: &[u8]) -> Result<AeadKey, OpenError> {
        let unbound = aead::UnboundKey::new(aead.algorithm(), key).map_err(|_| OpenError)?;
        Ok(AeadKey {
            key: aead::LessSafeKey::new(unbound),
            aead,
        })
    }

    /// The algorithm.
    pub fn aead(&self) -> Aead {
        self.aead
    }

    /// Decrypts and authenticates `ciphertext || tag` in place; returns the plaintext,
    /// the front of `sealed`. On failure the bytes of `sealed` are unspecified.
    pub fn open_in_place<'a>(
        &self,
        nonce: [u8; 12],
        aad: &[u8],
        sealed: &'a mut [u8],
    ) -> Result<&'a mut [u8], OpenError> {
        if sealed.len() < TAG_LEN {
            return Err(OpenError);
        }
        self.key
            .open_in_place(
                aead::Nonce::assume_unique_for_key(nonce),
                aead::Aad::from(aad),
                sealed,
            )
            .map_err(|_| OpenError)
    }

    /// Encrypts `plain` (tests build records with it).
    #[cfg(test)]
    pub fn seal(&self, nonce: [u8; 12], aad: &[u8], plain: &[u8]) -> Vec<u8> {
        let mut buf = plain.to_vec();
        self.key
            .seal_in_place_append_tag(
                aead::Nonce::assume_unique_for_key(nonce),
                aead::Aad::from(aad),
                &mut buf,
            )
            .expect("seal");
        buf
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn table_has_unique_ids_and_names() {
        for (i, a) in SUITES.iter().enumerate() {
            for b in SUITES.iter().skip(i + 1) {
                assert_ne!(a.id, b.id, "{}", a.name);
                assert_ne!(a.name, b.name);
            }
            assert!(a.name.starts_with("TLS_"), "{}", a.name);
            let sha384 = a.name.ends_with("SHA384");
            match a.protection {
                Protection::Tls13(_, h) | Protection::Tls12Aead(_, h) => {
                    assert_eq!(h == HashAlg::Sha384, sha384, "{}", a.name);
                    assert!(
                        a.name.contains("GCM") || a.name.contains("CHACHA20"),
                        "{}",
                        a.name
                    );
                }
                Protection::Tls12Cbc(key_len, mac, h) => {
                    assert_eq!(h == HashAlg::Sha384, sha384, "{}", a.name);
                    assert!(
                        a.name.contains(&format!("AES_{}_CBC", key_len * 8)),
                        "{}",
                        a.name
                    );
                    let mac_name = match mac {
                        Mac::Sha1 => "_SHA",
                        Mac::Sha256 => "_SHA256",
                        Mac::Sha384 => "_SHA384",
                    };
                    assert!(a.name.ends_with(mac_name), "{}", a.name);
                }
                Protection::Unsupported => {}
            }
        }
        assert_eq!(suite_name(0x1302), "TLS_AES_256_GCM_SHA384");
        assert_eq!(suite_name(0xC02F), "TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256");
        assert_eq!(suite_name(0xBEEF), "0xBEEF");
    }

    #[test]
    fn key_of_wrong_length_is_refused() {
        assert!(AeadKey::new(Aead::Aes128Gcm, &[0; 32]).is_err());
        assert!(AeadKey::new(Aead::ChaCha20Poly1305, &[0; 32]).is_ok());
        let key = AeadKey::new(Aead::Aes256Gcm, &[0; 32]).expect("key");
        assert!(key.open_in_place([0; 12], b"", &mut [0; 15]).is_err());
        assert_eq!(format!("{key:?}"), "AeadKey(Aes256Gcm, redacted)");
    }
}
