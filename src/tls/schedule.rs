//! Key derivation: the TLS 1.3 key schedule from a logged traffic secret
//! (RFC 8446 section 7) and the TLS 1.2 PRF from a logged master secret
//! (RFC 5246 section 5). Pure functions over bytes; outputs are key material
//! and never formatted (their `Debug` is redacted).

use ring::{hkdf, hmac};
use std::fmt;

/// The hash of a cipher suite's key schedule.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum HashAlg {
    /// SHA-256 (every suite except the `_SHA384` ones).
    Sha256,
    /// SHA-384.
    Sha384,
}

impl HashAlg {
    /// Output length in bytes.
    pub fn output_len(self) -> usize {
        match self {
            HashAlg::Sha256 => 32,
            HashAlg::Sha384 => 48,
        }
    }

    fn hkdf(self) -> hkdf::Algorithm {
        match self {
            HashAlg::Sha256 => hkdf::HKDF_SHA256,
            HashAlg::Sha384 => hkdf::HKDF_SHA384,
        }
    }

    fn hmac(self) -> hmac::Algorithm {
        match self {
            HashAlg::Sha256 => hmac::HMAC_SHA256,
            HashAlg::Sha384 => hmac::HMAC_SHA384,
        }
    }
}

/// Key material: bytes that must never be shown.
#[derive(Clone, PartialEq, Eq, Default)]
pub struct KeyBytes(pub Vec<u8>);

impl fmt::Debug for KeyBytes {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "KeyBytes({} bytes, redacted)", self.0.len())
    }
}

struct OutLen(usize);

impl hkdf::KeyType for OutLen {
    fn len(&self) -> usize {
        self.0
    }
}

/// Why derivation failed (a secret of the wrong size for the suite, or an impossible length).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct DeriveError;

/// HKDF-Expand-Label(secret, label, context, len) of RFC 8446 section 7.1.
pub fn hkdf_expand_label(
    hash: HashAlg,
    secret: &[u8],
    label: &[u8],
    context: &[u8],
    len: usize,
) -> Result<KeyBytes, DeriveError> {
    expand_label(&prk(hash, secret)?, label, context, len)
}

/// The secret as HKDF's pseudorandom key (its HMAC key is set up once for every label).
fn prk(hash: HashAlg, secret: &[u8]) -> Result<hkdf::Prk, DeriveError> {
    if secret.len() != hash.output_len() {
        return Err(DeriveError);
    }
    Ok(hkdf::Prk::new_less_safe(hash.hkdf(), secret))
}

fn expand_label(
    prk: &hkdf::Prk,
    label: &[u8],
    context: &[u8],
    len: usize,
) -> Result<KeyBytes, DeriveError> {
    let out_len = u16::try_from(len).map_err(|_| DeriveError)?.to_be_bytes();
    let full_label_len = u8::try_from(6 + label.len()).map_err(|_| DeriveError)?;
    let context_len = u8::try_from(context.len()).map_err(|_| DeriveError)?;
    let info: [&[u8]; 6] = [
        &out_len,
        std::slice::from_ref(&full_label_len),
        b"tls13 ",
        label,
        std::slice::from_ref(&context_len),
        context,
    ];
    let okm = prk.expand(&info, OutLen(len)).map_err(|_| DeriveError)?;
    let mut out = vec![0u8; len];
    okm.fill(&mut out).map_err(|_| DeriveError)?;
    Ok(KeyBytes(out))
}

/// The write key and IV of one direction.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TrafficKeys {
    /// AEAD key.
    pub key: KeyBytes,
    /// Static IV (TLS 1.3: 12 bytes, XORed with the sequence number).
    pub iv: KeyBytes,
}

/// TLS 1.3 key and IV from a traffic secret (RFC 8446 section 7.3).
pub fn tls13_traffic_keys(
    hash: HashAlg,
    secret: &[u8],
    key_len: usize,
) -> Result<TrafficKeys, DeriveError> {
    let prk = prk(hash, secret)?;
    Ok(TrafficKeys {
        key: expand_label(&prk, b"key", b"", key_len)?,
        iv: expand_label(&prk, b"iv", b"", 12)?,
    })
}

/// The next TLS 1.3 application traffic secret after a KeyUpdate (RFC 8446 section 7.2).
pub fn tls13_next_secret(hash: HashAlg, secret: &[u8]) -> Result<KeyBytes, DeriveError> {
    hkdf_expand_label(hash, secret, b"traffic upd", b"", hash.output_len())
}

/// The TLS 1.2 PRF: P_hash(secret, label || seed) truncated to `len` bytes.
pub fn tls12_prf(
    hash: HashAlg,
    secret: &[u8],
    label: &[u8],
    seed: &[&[u8]],
    len: usize,
) -> KeyBytes {
    let key = hmac::Key::new(hash.hmac(), secret);
    let sign_parts = |parts: &[&[u8]]| {
        let mut ctx = hmac::Context::with_key(&key);
        for p in parts {
            ctx.update(p);
        }
        ctx.sign()
    };
    let mut label_seed: Vec<&[u8]> = vec![label];
    label_seed.extend_from_slice(seed);
    let mut out = Vec::with_capacity(len + hash.output_len());
    // A(1) = HMAC(secret, label || seed); A(i+1) = HMAC(secret, A(i)).
    let mut a = sign_parts(&label_seed);
    while out.len() < len {
        let mut parts: Vec<&[u8]> = vec![a.as_ref()];
        parts.extend_from_slice(&label_seed);
        out.extend_from_slice(sign_parts(&parts).as_ref());
        a = sign_parts(&[a.as_ref()]);
    }
    out.truncate(len);
    KeyBytes(out)
}

/// TLS 1.2 connection keys (RFC 5246 section 6.3), in the key block's order.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct KeyBlock {
    /// HMAC key of the client's records (empty for AEAD suites).
    pub client_mac: KeyBytes,
    /// HMAC key of the server's records.
    pub server_mac: KeyBytes,
    /// Cipher key of the client's records.
    pub client_key: KeyBytes,
    /// Cipher key of the server's records.
    pub server_key: KeyBytes,
    /// Client IV (AEAD: the implicit salt; CBC in TLS 1.0: the first IV).
    pub client_iv: KeyBytes,
    /// Server IV.
    pub server_iv: KeyBytes,
}

/// Splits the TLS 1.2 key block derived from the master secret.
pub fn tls12_key_block(
    hash: HashAlg,
    master: &[u8],
    client_random: &[u8; 32],
    server_random: &[u8; 32],
    mac_len: usize,
    key_len: usize,
    iv_len: usize,
) -> KeyBlock {
    let total = 2 * (mac_len + key_len + iv_len);
    let block = tls12_prf(
        hash,
        master,
        b"key expansion",
        &[server_random, client_random],
        total,
    );
    let mut rest: &[u8] = &block.0;
    let mut take = |n: usize| {
        let (head, tail) = rest.split_at(n.min(rest.len()));
        rest = tail;
        KeyBytes(head.to_vec())
    };
    KeyBlock {
        client_mac: take(mac_len),
        server_mac: take(mac_len),
        client_key: take(key_len),
        server_key: take(key_len),
        client_iv: take(iv_len),
        server_iv: take(iv_len),
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;

    pub(crate) fn hex(s: &str) -> Vec<u8> {
        let s: String = s.chars().filter(|c| !c.is_whitespace()).collect();
        (0..s.len() / 2)
            .map(|i| u8::from_str_radix(&s[2 * i..2 * i + 2], 16).expect("hex"))
            .collect()
    }

    // RFC 8448 section 3 (simple 1-RTT, TLS_AES_128_GCM_SHA256): traffic secrets and the
    // keys and IVs the RFC publishes for them.
    pub(crate) const RFC8448_SERVER_HS: &str =
        "b67b7d690cc16c4e75e54213cb2d37b4e9c912bcded9105d42befd59d391ad38";
    pub(crate) const RFC8448_CLIENT_HS: &str =
        "b3eddb126e067f35a780b3abf45e2d8f3b1a950738f52e9600746a0e27a55a21";
    pub(crate) const RFC8448_SERVER_AP: &str =
        "a11af9f05531f856ad47116b45a950328204b4f44bfb6b3a4b4f1f3fcb631643";
    pub(crate) const RFC8448_CLIENT_AP: &str =
        "9e40646ce79a7f9dc05af8889bce6552875afa0b06df0087f792ebb7c17504a5";

    #[test]
    fn rfc8448_traffic_keys() {
        for (secret, key, iv) in [
            (
                RFC8448_SERVER_HS,
                "3fce516009c21727d0f2e4e86ee403bc",
                "5d313eb2671276ee13000b30",
            ),
            (
                RFC8448_CLIENT_HS,
                "dbfaa693d1762c5b666af5d950258d01",
                "5bd3c71b836e0b76bb73265f",
            ),
            (
                RFC8448_SERVER_AP,
                "9f02283b6c9c07efc26bb9f2ac92e356",
                "cf782b88dd83549aadf1e984",
            ),
            (
                RFC8448_CLIENT_AP,
                "17422dda596ed5d9acd890e3c63f5051",
                "5b78923dee08579033e523d9",
            ),
        ] {
            let keys = tls13_traffic_keys(HashAlg::Sha256, &hex(secret), 16).expect("derive");
            assert_eq!(keys.key.0, hex(key));
            assert_eq!(keys.iv.0, hex(iv));
        }
    }

    #[test]
    fn wrong_secret_size_is_an_error() {
        assert_eq!(
            tls13_traffic_keys(HashAlg::Sha384, &hex(RFC8448_CLIENT_AP), 32),
            Err(DeriveError)
        );
    }

    #[test]
    fn key_update_changes_the_secret_deterministically() {
        let s0 = hex(RFC8448_CLIENT_AP);
        let s1 = tls13_next_secret(HashAlg::Sha256, &s0).expect("upd");
        assert_eq!(s1.0.len(), 32);
        assert_ne!(s1.0, s0);
        // HKDF-Expand-Label(s0, "traffic upd", "", 32) written out as HKDF-Expand with its info.
        let info = [&[0u8, 32][..], &[17], b"tls13 traffic upd", &[0]];
        let prk = hkdf::Prk::new_less_safe(hkdf::HKDF_SHA256, &s0);
        let mut want = [0u8; 32];
        prk.expand(&info, OutLen(32))
            .expect("expand")
            .fill(&mut want)
            .expect("fill");
        assert_eq!(s1.0, want);
        let s384 = tls13_next_secret(HashAlg::Sha384, &[7u8; 48]).expect("upd");
        assert_eq!(s384.0.len(), 48);
    }

    #[test]
    fn tls12_prf_sha256_ietf_vector() {
        let out = tls12_prf(
            HashAlg::Sha256,
            &hex("9bbe436ba940f017b17652849a71db35"),
            b"test label",
            &[&hex("a0ba9f936cda311827a6f796ffd5198c")],
            100,
        );
        assert_eq!(
            out.0,
            hex(
                "e3f229ba727be17b8d122620557cd453c2aab21d07c3d495329b52d4e61edb5a6b301791e90d35c9c9a46b4e14baf9af0fa022f7077def17abfd3797c0564bab4fbc91666e9def9b97fce34f796789baa48082d122ee42c5a72e5a5110fff70187347b66"
            )
        );
    }

    #[test]
    fn tls12_prf_sha384_ietf_vector() {
        // https://www.ietf.org/mail-archive/web/tls/current/msg03416.html
        let out = tls12_prf(
            HashAlg::Sha384,
            &hex("b80b733d6ceefcdc71566ea48e5567df"),
            b"test label",
            &[&hex("cd665cf6a8447dd6ff8b27555edb7465")],
            148,
        );
        assert_eq!(
            out.0,
            hex(
                "7b0c18e9ced410ed1804f2cfa34a336a1c14dffb4900bb5fd7942107e81c83cde9ca0faa60be9fe34f82b1233c9146a0e534cb400fed2700884f9dc236f80edd8bfa961144c9e8d792eca722a7b32fc3d416d473ebc2c5fd4abfdad05d9184259b5bf8cd4d90fa0d31e2dec479e4f1a26066f2eea9a69236a3e52655c9e9aee691c8f3a26854308d5eaa3be85e0990703d73e56f"
            )
        );
    }

    #[test]
    fn key_block_splits_in_order() {
        let cr = [1u8; 32];
        let sr = [2u8; 32];
        let master = [3u8; 48];
        let kb = tls12_key_block(HashAlg::Sha256, &master, &cr, &sr, 20, 16, 4);
        let whole = tls12_prf(HashAlg::Sha256, &master, b"key expansion", &[&sr, &cr], 80);
        let joined: Vec<u8> = [
            &kb.client_mac,
            &kb.server_mac,
            &kb.client_key,
            &kb.server_key,
            &kb.client_iv,
            &kb.server_iv,
        ]
        .iter()
        .flat_map(|k| k.0.clone())
        .collect();
        assert_eq!(joined, whole.0);
        assert_eq!(
            (
                kb.client_mac.0.len(),
                kb.server_key.0.len(),
                kb.server_iv.0.len()
            ),
            (20, 16, 4)
        );
        assert!(format!("{kb:?}").contains("redacted"));
    }
}
