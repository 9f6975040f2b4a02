//! The indexing tables of RFC 7541 2.3: the static table (Appendix A) and one dynamic table.

use std::collections::VecDeque;

/// RFC 7541 Appendix A: indices 1 to 61.
const STATIC: [(&[u8], &[u8]); 61] = [
    (b":authority", b""),
    (b":method", b"GET"),
    (b":method", b"POST"),
    (b":path", b"/"),
    (b":path", b"/index.html"),
    (b":scheme", b"http"),
    (b":scheme", b"https"),
    (b":status", b"200"),
    (b":status", b"204"),
    (b":status", b"206"),
    (b":status", b"304"),
    (b":status", b"400"),
    (b":status", b"404"),
    (b":status", b"500"),
    (b"accept-charset", b""),
    (b"accept-encoding", b"gzip, deflate"),
    (b"accept-language", b""),
    (b"accept-ranges", b""),
    (b"accept", b""),
    (b"access-control-allow-origin", b""),
    (b"age", b""),
    (b"allow", b""),
    (b"authorization", b""),
    (b"cache-control", b""),
    (b"content-disposition", b""),
    (b"content-encoding", b""),
    (b"content-language", b""),
    (b"content-length", b""),
    (b"content-location", b""),
    (b"content-range", b""),
    (b"content-type", b""),
    (b"cookie", b""),
    (b"date", b""),
    (b"etag", b""),
    (b"expect", b""),
    (b"expires", b""),
    (b"from", b""),
    (b"host", b""),
    (b"if-match", b""),
    (b"if-modified-since", b""),
    (b"if-none-match", b""),
    (b"if-range", b""),
    (b"if-unmodified-since", b""),
    (b"last-modified", b""),
    (b"link", b""),
    (b"location", b""),
    (b"max-forwards", b""),
    (b"proxy-authenticate", b""),
    (b"proxy-authorization", b""),
    (b"range", b""),
    (b"referer", b""),
    (b"refresh", b""),
    (b"retry-after", b""),
    (b"server", b""),
    (b"set-cookie", b""),
    (b"strict-transport-security", b""),
    (b"transfer-encoding", b""),
    (b"user-agent", b""),
    (b"vary", b""),
    (b"via", b""),
    (b"www-authenticate", b""),
];

/// Per-entry overhead in the size rule of RFC 7541 4.1.
pub(super) const ENTRY_OVERHEAD: usize = 32;

/// One dynamic entry: name and value in one allocation.
#[derive(Debug)]
struct Entry {
    bytes: Box<[u8]>,
    name_len: usize,
}

impl Entry {
    fn name(&self) -> &[u8] {
        self.bytes.get(..self.name_len).unwrap_or_default()
    }

    fn value(&self) -> &[u8] {
        self.bytes.get(self.name_len..).unwrap_or_default()
    }

    fn size(&self) -> usize {
        self.bytes.len() + ENTRY_OVERHEAD
    }
}

/// The dynamic table (RFC 7541 2.3.2, 4): newest entry first.
#[derive(Debug, Default)]
pub(super) struct DynamicTable {
    entries: VecDeque<Entry>,
    /// Sum of the entries' sizes.
    size: usize,
    /// The maximum size the encoder chose (its last size update, or the initial setting).
    capacity: usize,
}

impl DynamicTable {
    pub(super) fn new(capacity: usize) -> DynamicTable {
        DynamicTable {
            entries: VecDeque::new(),
            size: 0,
            capacity,
        }
    }

    pub(super) fn size(&self) -> usize {
        self.size
    }

    pub(super) fn capacity(&self) -> usize {
        self.capacity
    }

    #[cfg(test)]
    pub(super) fn len(&self) -> usize {
        self.entries.len()
    }

    /// A size update: evicts the oldest entries until the table fits (RFC 7541 4.3).
    pub(super) fn set_capacity(&mut self, capacity: usize) {
        self.capacity = capacity;
        self.evict_to(capacity);
    }

    fn evict_to(&mut self, limit: usize) {
        while self.size > limit {
            match self.entries.pop_back() {
                Some(old) => self.size -= old.size(),
                None => {
                    self.size = 0;
                    break;
                }
            }
        }
    }

    /// Adds an entry (RFC 7541 4.4): one larger than the whole table empties it and is not kept.
    pub(super) fn insert(&mut self, name: &[u8], value: &[u8]) {
        let size = name.len() + value.len() + ENTRY_OVERHEAD;
        if size > self.capacity {
            self.entries.clear();
            self.size = 0;
            return;
        }
        // The new entry may have been copied out of an entry this evicts: `name` is already
        // a copy by the time it gets here, so evicting first is safe.
        self.evict_to(self.capacity - size);
        let mut bytes = Vec::with_capacity(name.len() + value.len());
        bytes.extend_from_slice(name);
        bytes.extend_from_slice(value);
        self.entries.push_front(Entry {
            bytes: bytes.into_boxed_slice(),
            name_len: name.len(),
        });
        self.size += size;
    }

    /// The entry at a dynamic index counted from 0 (HPACK index 62 and up).
    fn get(&self, index: usize) -> Option<(&[u8], &[u8])> {
        self.entries.get(index).map(|e| (e.name(), e.value()))
    }

    /// The field at an HPACK index (1-based, static then dynamic); `None` past both tables.
    pub(super) fn field(&self, index: usize) -> Option<(&[u8], &[u8])> {
        match index.checked_sub(1) {
            Some(i) if i < STATIC.len() => STATIC.get(i).copied(),
            Some(i) => self.get(i - STATIC.len()),
            None => None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn static_table_ends_where_the_rfc_says() {
        let table = DynamicTable::new(4096);
        assert_eq!(table.field(0), None);
        assert_eq!(table.field(1), Some((&b":authority"[..], &b""[..])));
        assert_eq!(table.field(2), Some((&b":method"[..], &b"GET"[..])));
        assert_eq!(
            table.field(16),
            Some((&b"accept-encoding"[..], &b"gzip, deflate"[..]))
        );
        assert_eq!(table.field(61), Some((&b"www-authenticate"[..], &b""[..])));
        assert_eq!(table.field(62), None);
    }

    #[test]
    fn eviction_keeps_the_size_rule() {
        let mut table = DynamicTable::new(100);
        table.insert(b"a", b"1234567"); // 40
        table.insert(b"b", b"1234567"); // 40
        assert_eq!((table.len(), table.size()), (2, 80));
        table.insert(b"c", b"1234567"); // evicts "a"
        assert_eq!((table.len(), table.size()), (2, 80));
        assert_eq!(table.field(62), Some((&b"c"[..], &b"1234567"[..])));
        assert_eq!(table.field(63), Some((&b"b"[..], &b"1234567"[..])));
        assert_eq!(table.field(64), None);
        // Exactly the capacity fits and empties the rest.
        table.insert(&[b'x'; 60], b"abcdefgh");
        assert_eq!((table.len(), table.size()), (1, 100));
        // Larger than the table: everything goes, nothing is added.
        table.insert(&[b'x'; 61], b"abcdefgh");
        assert_eq!((table.len(), table.size()), (0, 0));
        table.insert(b"d", b"1234567");
        table.set_capacity(39);
        assert_eq!((table.len(), table.size(), table.capacity()), (0, 0, 39));
    }
}
