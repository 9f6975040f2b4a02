//! Keys of a connection from the ServerHello: TLS 1.3 traffic secrets and TLS 1.2
//! master secrets (from the key log, or from an earlier session), and the 0-RTT
//! keys tried before the ServerHello names the suite.

use super::super::cipher::{Aead, Protection};
use super::super::decrypt::Decryptor;
use super::super::handshake::{ClientHello, ServerHello};
use super::super::keylog::{Label, Secret};
use super::super::schedule::{HashAlg, KeyBytes, tls12_key_block};
use super::{APPLICATION, EARLY, HANDSHAKE, KeyState, TlsConnection, TlsContext};

impl TlsConnection {
    pub(super) fn tls13_keys(
        &mut self,
        aead: Aead,
        hash: HashAlg,
        hello: &ClientHello,
        ctx: &TlsContext,
    ) -> KeyState {
        let Some(secrets) = ctx.keylog.get(&hello.random) else {
            return KeyState::Missing;
        };
        let draft = self.draft;
        let derive = |label| {
            secrets
                .get(label)
                .and_then(|s: &Secret| Decryptor::tls13(aead, hash, s.expose(), draft).ok())
        };
        self.client.keys[HANDSHAKE] = derive(Label::ClientHandshake);
        self.client.keys[APPLICATION] = derive(Label::ClientTraffic0);
        self.server.keys[HANDSHAKE] = derive(Label::ServerHandshake);
        self.server.keys[APPLICATION] = derive(Label::ServerTraffic0);
        self.server.phase = HANDSHAKE;
        if hello.early_data && self.client.keys[EARLY].is_none() {
            self.client.keys[EARLY] = derive(Label::ClientEarly);
        }
        let any = self
            .client
            .keys
            .iter()
            .chain(self.server.keys.iter())
            .any(Option::is_some);
        if any {
            KeyState::Ready
        } else {
            KeyState::Missing
        }
    }

    pub(super) fn tls12_keys(
        &mut self,
        protection: Protection,
        client_hello: &ClientHello,
        server_hello: &ServerHello,
        ctx: &mut TlsContext,
    ) -> KeyState {
        let Some(master) = self.tls12_master(client_hello, server_hello, ctx) else {
            return KeyState::Missing;
        };
        let echoed = !server_hello.session_id.is_empty()
            && server_hello.session_id == client_hello.session_id;
        let (hash, mac_len, key_len, iv_len) = match protection {
            Protection::Tls12Aead(aead, hash) => {
                (hash, 0, aead.key_len(), Decryptor::tls12_iv_len(aead))
            }
            Protection::Tls12Cbc(key_len, mac, hash) => (hash, mac.output_len(), key_len, 0),
            Protection::Tls13(..) | Protection::Unsupported => return KeyState::Unsupported,
        };
        let block = tls12_key_block(
            hash,
            master.expose(),
            &client_hello.random,
            &server_hello.random,
            mac_len,
            key_len,
            iv_len,
        );
        let etm = client_hello.encrypt_then_mac && server_hello.encrypt_then_mac;
        let make = |key: &KeyBytes, mac_key: &KeyBytes, iv: &KeyBytes| match protection {
            Protection::Tls12Aead(aead, _) => Decryptor::tls12(aead, &key.0, &iv.0).ok(),
            Protection::Tls12Cbc(_, mac, _) => {
                Decryptor::tls12_cbc(&key.0, mac, &mac_key.0, etm).ok()
            }
            Protection::Tls13(..) | Protection::Unsupported => None,
        };
        self.client.pending = make(&block.client_key, &block.client_mac, &block.client_iv);
        self.server.pending = make(&block.server_key, &block.server_mac, &block.server_iv);
        if !echoed {
            ctx.sessions.insert_id(&server_hello.session_id, &master);
        }
        self.master = Some(master);
        KeyState::Ready
    }
}

impl TlsConnection {
    /// The TLS 1.2 master secret: logged for the client random, or the resumed session's.
    pub(super) fn tls12_master(
        &self,
        client_hello: &ClientHello,
        server_hello: &ServerHello,
        ctx: &TlsContext,
    ) -> Option<Secret> {
        let by_random = ctx
            .keylog
            .get(&client_hello.random)
            .and_then(|s| s.get(Label::ClientRandom));
        let echoed = !server_hello.session_id.is_empty()
            && server_hello.session_id == client_hello.session_id;
        let by_session = || {
            echoed
                .then(|| ctx.sessions.by_id(&server_hello.session_id))
                .flatten()
                .or_else(|| {
                    client_hello
                        .session_ticket
                        .as_ref()
                        .and_then(|t| ctx.sessions.by_ticket(t))
                })
        };
        by_random.or_else(by_session).cloned()
    }
}

pub(super) fn early_candidates(secret: &Secret) -> Vec<Decryptor> {
    let suites: &[(Aead, HashAlg)] = match secret.len() {
        48 => &[(Aead::Aes256Gcm, HashAlg::Sha384)],
        _ => &[
            (Aead::Aes128Gcm, HashAlg::Sha256),
            (Aead::ChaCha20Poly1305, HashAlg::Sha256),
        ],
    };
    suites
        .iter()
        .filter_map(|(aead, hash)| Decryptor::tls13(*aead, *hash, secret.expose(), None).ok())
        .collect()
}
