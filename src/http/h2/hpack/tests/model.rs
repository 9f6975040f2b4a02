//! Round trips against a model: random field lists, each field sent in a random representation
//! (indexed, literal with, without or never indexing, name indexed or not, Huffman or raw),
//! random size updates; the decoder must give back the list, and its table the model's size.

use super::hostile::int;
use crate::http::h2::hpack::huffman;
use crate::http::h2::hpack::table::DynamicTable;
use crate::http::h2::hpack::*;
use proptest::prelude::*;
use std::collections::VecDeque;

/// The encoder's view of the dynamic table, kept independently of the decoder's.
struct Model {
    entries: VecDeque<(Vec<u8>, Vec<u8>)>,
    size: usize,
    capacity: usize,
}

impl Model {
    fn resize(&mut self, capacity: usize) {
        self.capacity = capacity;
        self.evict(capacity);
    }

    fn evict(&mut self, limit: usize) {
        while self.size > limit {
            let (n, v) = self.entries.pop_back().unwrap();
            self.size -= n.len() + v.len() + 32;
        }
    }

    fn insert(&mut self, name: &[u8], value: &[u8]) {
        let size = name.len() + value.len() + 32;
        if size > self.capacity {
            self.entries.clear();
            self.size = 0;
            return;
        }
        self.evict(self.capacity - size);
        self.entries.push_front((name.to_vec(), value.to_vec()));
        self.size += size;
    }

    /// HPACK index of an exact match, and of a name match.
    fn find(&self, name: &[u8], value: &[u8]) -> (Option<usize>, Option<usize>) {
        let statics = DynamicTable::new(0);
        let all = (1..=61).map(|i| (i, statics.field(i).unwrap())).chain(
            self.entries
                .iter()
                .enumerate()
                .map(|(i, (n, v))| (62 + i, (&n[..], &v[..]))),
        );
        let (mut exact, mut named) = (None, None);
        for (i, (n, v)) in all {
            if n == name {
                named = named.or(Some(i));
                if v == value {
                    exact = exact.or(Some(i));
                }
            }
        }
        (exact, named)
    }
}

fn string(out: &mut Vec<u8>, s: &[u8], huff: bool) {
    if huff {
        let coded = huffman::encode(s);
        out.extend(int(0x80, 7, coded.len() as u64));
        out.extend(coded);
    } else {
        out.extend(int(0x00, 7, s.len() as u64));
        out.extend_from_slice(s);
    }
}

/// One field: (name, value, representation 0..4, use the name's index, Huffman).
type Field = (Vec<u8>, Vec<u8>, u8, bool, bool);

fn encode(model: &mut Model, update: Option<usize>, fields: &[Field]) -> Vec<u8> {
    let mut out = Vec::new();
    if let Some(n) = update {
        out.extend(int(0x20, 5, n as u64));
        model.resize(n);
    }
    for (name, value, repr, by_index, huff) in fields {
        let (exact, named) = model.find(name, value);
        if let (0, Some(i)) = (repr, exact) {
            out.extend(int(0x80, 7, i as u64));
            continue;
        }
        let (first, prefix) = match repr {
            0 | 1 => (0x40, 6),
            2 => (0x00, 4),
            _ => (0x10, 4),
        };
        match named.filter(|_| *by_index) {
            Some(i) => out.extend(int(first, prefix, i as u64)),
            None => {
                out.push(first);
                string(&mut out, name, *huff);
            }
        }
        string(&mut out, value, *huff);
        if first == 0x40 {
            model.insert(name, value);
        }
    }
    out
}

fn field() -> impl Strategy<Value = Field> {
    // Few names and values, so that fields repeat and the tables get used; static names too.
    let name = prop_oneof![
        Just(b":path".to_vec()),
        Just(b"content-type".to_vec()),
        Just(b"mcp-session-id".to_vec()),
        proptest::collection::vec(any::<u8>(), 0..12),
        proptest::collection::vec(b'a'..=b'e', 1..3),
    ];
    let value = prop_oneof![
        Just(b"/".to_vec()),
        Just(b"application/json".to_vec()),
        proptest::collection::vec(any::<u8>(), 0..40),
        proptest::collection::vec(b'0'..=b'2', 0..3),
        proptest::collection::vec(b'x'..=b'x', 100..400),
    ];
    (name, value, 0u8..4, any::<bool>(), any::<bool>())
}

proptest! {
    #![proptest_config(crate::testing::proptest_cases(512))]

    #[test]
    fn random_lists_round_trip(
        ceiling in prop_oneof![Just(0usize), Just(200), Just(4096)],
        blocks in proptest::collection::vec(
            (proptest::option::weighted(0.3, 0usize..5000), proptest::collection::vec(field(), 0..12)),
            1..8,
        ),
    ) {
        let mut model = Model { entries: VecDeque::new(), size: 0, capacity: ceiling };
        let mut d = Decoder::new(ceiling, usize::MAX);
        for (update, fields) in blocks {
            let update = update.map(|n| n % (ceiling + 1));
            let block = encode(&mut model, update, &fields);
            let mut got = Vec::new();
            d.decode(&block, &mut |n, v| got.push((n.to_vec(), v.to_vec()))).unwrap();
            let want: Vec<_> = fields.iter().map(|f| (f.0.clone(), f.1.clone())).collect();
            prop_assert_eq!(got, want);
            prop_assert_eq!(d.table_size(), model.size);
        }
    }
}
