//! TLS 1.2 sessions seen in the capture: master secrets by session id and by
//! ticket, so that a resumed handshake whose client random is not in the key
//! log is still decrypted (as Wireshark does). Bounded by
//! [`MAX_CACHED_SESSIONS`]; the oldest entry goes first.

use super::keylog::Secret;
use crate::hashing::HashMap;
use std::collections::VecDeque;

/// Most sessions remembered (ids and tickets together).
pub const MAX_CACHED_SESSIONS: usize = 65_536;

/// Longest session id or ticket remembered (ids are at most 32 bytes; tickets a few hundred).
pub const MAX_SESSION_KEY_LEN: usize = 2048;

#[derive(Debug, Clone, PartialEq, Eq, Hash)]
enum SessionKey {
    Id(Vec<u8>),
    Ticket(Vec<u8>),
}

/// Master secrets of full TLS 1.2 handshakes, by session id and ticket.
#[derive(Debug, Default)]
pub struct SessionCache {
    by_key: HashMap<SessionKey, Secret>,
    order: VecDeque<SessionKey>,
}

impl SessionCache {
    /// Remembers the master secret of a session id.
    pub fn insert_id(&mut self, id: &[u8], master: &Secret) {
        self.insert(SessionKey::Id(id.to_vec()), master);
    }

    /// Remembers the master secret of a ticket.
    pub fn insert_ticket(&mut self, ticket: &[u8], master: &Secret) {
        self.insert(SessionKey::Ticket(ticket.to_vec()), master);
    }

    /// The master secret of a session id.
    pub fn by_id(&self, id: &[u8]) -> Option<&Secret> {
        self.by_key.get(&SessionKey::Id(id.to_vec()))
    }

    /// The master secret of a ticket.
    pub fn by_ticket(&self, ticket: &[u8]) -> Option<&Secret> {
        self.by_key.get(&SessionKey::Ticket(ticket.to_vec()))
    }

    /// Sessions remembered.
    pub fn len(&self) -> usize {
        self.by_key.len()
    }

    /// Whether none is remembered.
    pub fn is_empty(&self) -> bool {
        self.by_key.is_empty()
    }

    fn insert(&mut self, key: SessionKey, master: &Secret) {
        let len = match &key {
            SessionKey::Id(b) | SessionKey::Ticket(b) => b.len(),
        };
        if len == 0 || len > MAX_SESSION_KEY_LEN {
            return;
        }
        if self.by_key.insert(key.clone(), master.clone()).is_none() {
            self.order.push_back(key);
        }
        while self.by_key.len() > MAX_CACHED_SESSIONS {
            match self.order.pop_front() {
                Some(old) => {
                    self.by_key.remove(&old);
                }
                None => break,
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ids_and_tickets_are_separate_and_bounded() {
        let master = Secret::new(&[1u8; 48]).expect("secret");
        let mut cache = SessionCache::default();
        cache.insert_id(b"abc", &master);
        assert!(cache.by_id(b"abc").is_some());
        assert!(cache.by_ticket(b"abc").is_none());
        cache.insert_id(b"", &master);
        assert_eq!(cache.len(), 1, "an empty id is no session");
        for i in 0..(MAX_CACHED_SESSIONS as u32 + 10) {
            cache.insert_ticket(&i.to_be_bytes(), &master);
        }
        assert_eq!(cache.len(), MAX_CACHED_SESSIONS);
        assert!(cache.by_id(b"abc").is_none(), "oldest evicted first");
        assert!(
            cache
                .by_ticket(&(MAX_CACHED_SESSIONS as u32 + 9).to_be_bytes())
                .is_some()
        );
    }
}
