//! Malformed and hostile blocks: every one gives a named error (or a bounded list), never a
//! panic, and a failed decoder refuses what follows.

use super::{appendix_c_blocks, decode_all, hex};
use crate::http::h2::hpack::*;
use proptest::prelude::*;

/// Decodes `block` with a fresh decoder (4096 table, no list bound).
fn fresh(block: &[u8]) -> Result<Vec<(String, String)>, HpackError> {
    decode_all(&mut Decoder::new(4096, usize::MAX), block)
}

/// An integer with an `n`-bit prefix under `first`'s high bits (RFC 7541 5.1), for building
/// blocks by hand.
pub(super) fn int(first: u8, n: u32, mut value: u64) -> Vec<u8> {
    let max = (1u64 << n) - 1;
    if value < max {
        return vec![first | value as u8];
    }
    let mut out = vec![first | max as u8];
    value -= max;
    while value >= 128 {
        out.push((value % 128) as u8 | 0x80);
        value /= 128;
    }
    out.push(value as u8);
    out
}

#[test]
fn every_truncation_of_every_appendix_c_block() {
    for (table_size, blocks) in appendix_c_blocks() {
        for i in 0..blocks.len() {
            let mut whole = Decoder::new(table_size, usize::MAX);
            for earlier in &blocks[..i] {
                decode_all(&mut whole, earlier).unwrap();
            }
            let full = decode_all(&mut whole, &blocks[i]).unwrap();
            let mut ok_cuts = 0;
            for cut in 0..blocks[i].len() {
                let mut d = Decoder::new(table_size, usize::MAX);
                for earlier in &blocks[..i] {
                    decode_all(&mut d, earlier).unwrap();
                }
                match decode_all(&mut d, &blocks[i][..cut]) {
                    // A cut between two fields is a shorter valid block.
                    Ok(fields) => {
                        assert_eq!(fields[..], full[..fields.len()], "block {i} cut {cut}");
                        ok_cuts += 1;
                    }
                    Err(e) => {
                        assert_eq!(e, HpackError::Truncated, "block {i} cut {cut}");
                        assert!(d.is_broken());
                    }
                }
            }
            // One valid cut before each field: 0 and after every field but the last.
            assert_eq!(ok_cuts, full.len(), "block {i}");
        }
    }
}

#[test]
fn short_and_overlong_integers() {
    // RUSTSEC-2023-0085's input: a size update whose integer never ends.
    assert_eq!(fresh(&[0x3f]), Err(HpackError::Truncated));
    // 0xff runs: an index whose continuation bytes never end, then one too long.
    for n in 1..=5 {
        assert_eq!(
            fresh(&vec![0xff; n]),
            Err(HpackError::Truncated),
            "{n} bytes"
        );
    }
    for n in [6, 7, 100, 10_000] {
        assert_eq!(
            fresh(&vec![0xff; n]),
            Err(HpackError::IntegerOverflow),
            "{n} bytes"
        );
    }
    // The largest accepted integer is a valid (if absent) index; one more overflows.
    assert_eq!(
        fresh(&int(0x80, 7, u32::MAX.into())),
        Err(HpackError::BadIndex)
    );
    assert_eq!(
        fresh(&int(0x80, 7, u64::from(u32::MAX) + 1)),
        Err(HpackError::IntegerOverflow)
    );
    // A string length far past the block.
    let mut block = vec![0x00];
    block.extend(int(0x00, 7, 1 << 30));
    assert_eq!(fresh(&block), Err(HpackError::Truncated));
    // A length one byte past the block.
    assert_eq!(
        fresh(&hex("00 03 616263 04 646566")),
        Err(HpackError::Truncated)
    );
    assert_eq!(fresh(&hex("00 03 616263 03 646566")).unwrap().len(), 1);
}

#[test]
fn indices_outside_the_tables() {
    assert_eq!(fresh(&[0x80]), Err(HpackError::BadIndex), "index 0");
    assert_eq!(
        fresh(&[0xbe]),
        Err(HpackError::BadIndex),
        "62 with an empty table"
    );
    assert_eq!(
        fresh(&hex("7e 01 61")),
        Err(HpackError::BadIndex),
        "literal naming 62"
    );
    assert_eq!(
        fresh(&hex("0f 2f 01 61")),
        Err(HpackError::BadIndex),
        "literal naming 62"
    );
    // One entry: 62 exists, 63 does not.
    let mut d = Decoder::new(4096, usize::MAX);
    decode_all(&mut d, &hex("40 01 61 01 62")).unwrap();
    assert_eq!(
        decode_all(&mut d, &[0xbe]).unwrap(),
        [("a".into(), "b".into())]
    );
    assert_eq!(decode_all(&mut d, &[0xbf]), Err(HpackError::BadIndex));
}

#[test]
fn huffman_eos_and_padding() {
    // Literal without indexing, new name Huffman-coded; value raw "v".
    let lit = |name: &str| hex(&format!("00 {:02x} {name} 01 76", 0x80 + name.len() / 2));
    assert_eq!(fresh(&lit("1f")).unwrap(), [("a".into(), "v".into())]);
    assert_eq!(fresh(&lit("ffffffff")), Err(HpackError::HuffmanEos));
    assert_eq!(
        fresh(&lit("1fffffffff")),
        Err(HpackError::HuffmanEos),
        "EOS after a symbol"
    );
    assert_eq!(
        fresh(&lit("1fff")),
        Err(HpackError::HuffmanPadding),
        "11 bits of padding"
    );
    assert_eq!(
        fresh(&lit("18")),
        Err(HpackError::HuffmanPadding),
        "padding of 0 bits"
    );
    assert_eq!(
        fresh(&lit("ff")),
        Err(HpackError::HuffmanPadding),
        "8 one bits"
    );
    // The same rules hold for values.
    assert_eq!(fresh(&hex("01 84 ffffffff")), Err(HpackError::HuffmanEos));
}

#[test]
fn size_updates_only_at_the_start_and_within_the_ceiling() {
    assert_eq!(
        fresh(&hex("3fe11f 82")).unwrap().len(),
        1,
        "4096 is the ceiling"
    );
    assert_eq!(
        fresh(&hex("3fe21f 82")),
        Err(HpackError::SizeUpdateTooLarge),
        "4097"
    );
    assert_eq!(fresh(&hex("82 20")), Err(HpackError::SizeUpdateNotAtStart));
    assert_eq!(
        fresh(&hex("20 3f00 3fe11f 82")).unwrap().len(),
        1,
        "several at the start"
    );
    let mut d = Decoder::new(0, usize::MAX);
    assert_eq!(
        decode_all(&mut d, &hex("21")),
        Err(HpackError::SizeUpdateTooLarge)
    );
    // With no table, literals with indexing decode and leave nothing behind.
    let mut d = Decoder::new(0, usize::MAX);
    assert_eq!(
        decode_all(&mut d, &hex("40 01 61 01 62 be")),
        Err(HpackError::BadIndex)
    );
}

#[test]
fn a_failed_decoder_refuses_what_follows() {
    let mut d = Decoder::new(4096, usize::MAX);
    assert_eq!(decode_all(&mut d, &[0x80]), Err(HpackError::BadIndex));
    assert!(d.is_broken());
    assert_eq!(decode_all(&mut d, &[0x82]), Err(HpackError::Broken));
    // A list over the bound is not a failure: the next block decodes.
    let mut d = Decoder::new(4096, 10);
    assert_eq!(decode_all(&mut d, &[0x82]), Err(HpackError::ListTooLarge));
    assert!(!d.is_broken());
    let mut big = Decoder::new(4096, 100);
    assert_eq!(decode_all(&mut big, &[0x82]).unwrap().len(), 1);
}

#[test]
fn every_anomaly_name_is_distinct_and_in_the_h2_stage() {
    let all = [
        HpackError::ListTooLarge,
        HpackError::Broken,
        HpackError::BadIndex,
        HpackError::IntegerOverflow,
        HpackError::Truncated,
        HpackError::HuffmanEos,
        HpackError::HuffmanPadding,
        HpackError::SizeUpdateTooLarge,
        HpackError::SizeUpdateNotAtStart,
        HpackError::SizeUpdateMissing,
    ];
    let names: std::collections::BTreeSet<_> = all.iter().map(|e| e.anomaly().name()).collect();
    assert_eq!(names.len(), all.len());
    assert!(names.iter().all(|n| {
        n.strip_prefix("h2.")
            .is_some_and(|rest| rest.starts_with("hpack_"))
    }));
}

/// A block that inserts one entry of `name_len` + `value_len` bytes.
fn insert_big(name_len: usize, value_len: usize) -> Vec<u8> {
    let mut block = vec![0x40];
    block.extend(int(0x00, 7, name_len as u64));
    block.extend(std::iter::repeat_n(b'n', name_len));
    block.extend(int(0x00, 7, value_len as u64));
    block.extend(std::iter::repeat_n(b'v', value_len));
    block
}

#[test]
fn hpack_bomb_stops_at_the_list_bound() {
    // One 4033-byte entry, then a 16 KiB block naming it 16384 times: 66 MB of fields.
    let mut d = Decoder::new(4096, 65_536);
    decode_all(&mut d, &insert_big(1, 4000)).unwrap();
    assert_eq!(d.table_size(), 4033);
    let bomb = vec![0xbe; 16_384];
    let mut emitted = 0usize;
    let r = d.decode(&bomb, &mut |_, v| {
        assert_eq!(v.len(), 4000);
        emitted += 1;
    });
    assert_eq!(r, Err(HpackError::ListTooLarge));
    assert_eq!(emitted, 65_536 / 4033, "fields up to the bound, none after");
    // The block was still read to its end: the table is intact and the next block decodes.
    assert!(!d.is_broken());
    assert_eq!(decode_all(&mut d, &[0xbe]).unwrap()[0].1.len(), 4000);

    // Literals with indexing that copy a large entry's name again and again: each evicts the
    // one before, the table never grows past its size.
    let mut d = Decoder::new(4096, 65_536);
    decode_all(&mut d, &insert_big(4000, 0)).unwrap();
    let copies: Vec<u8> = std::iter::repeat_n([0x7e, 0x00], 8192).flatten().collect();
    assert_eq!(decode_all(&mut d, &copies), Err(HpackError::ListTooLarge));
    assert_eq!(d.table_size(), 4032);
    assert_eq!(d.table.len(), 1);
}

#[test]
fn an_entry_larger_than_the_table_empties_it() {
    let mut d = Decoder::new(256, usize::MAX);
    decode_all(&mut d, &insert_big(1, 10)).unwrap();
    assert_eq!(d.table_size(), 43);
    // Emitted, but not kept (RFC 7541 4.4), and the old entry is gone too.
    assert_eq!(decode_all(&mut d, &insert_big(1, 300)).unwrap().len(), 1);
    assert_eq!(d.table_size(), 0);
    assert_eq!(decode_all(&mut d, &[0xbe]), Err(HpackError::BadIndex));
}

/// Decodes `block`, checking the invariants every outcome keeps.
fn check_any(d: &mut Decoder, block: &[u8]) {
    let mut list = 0usize;
    let r = d.decode(block, &mut |n, v| list += n.len() + v.len() + 32);
    assert!(d.table_size() <= d.table.capacity());
    assert!(d.table.capacity() <= d.max_table_size);
    match r {
        Ok(()) => assert!(list <= d.max_list_size),
        Err(HpackError::ListTooLarge) => assert!(!d.is_broken()),
        Err(_) => assert!(d.is_broken()),
    }
}

proptest! {
    #![proptest_config(crate::testing::proptest_cases(2048))]

    #[test]
    fn random_bytes_never_panic(
        block in proptest::collection::vec(any::<u8>(), 0..600),
        table in prop_oneof![Just(0usize), Just(256), Just(4096)],
        bound in prop_oneof![Just(64usize), Just(1 << 20)],
    ) {
        check_any(&mut Decoder::new(table, bound), &block);
        // The same bytes against a populated table.
        let mut d = Decoder::new(4096, bound);
        for b in &appendix_c_blocks()[2].1 {
            let _ = d.decode(b, &mut |_, _| {});
        }
        check_any(&mut d, &block);
    }

    #[test]
    fn mutated_appendix_c_blocks_never_panic(
        seq in 0usize..3,
        edits in proptest::collection::vec((any::<usize>(), any::<u8>()), 1..6),
    ) {
        let (table, blocks) = appendix_c_blocks().swap_remove(seq);
        let mut d = Decoder::new(table, 1 << 20);
        for block in blocks {
            let mut block = block;
            for &(at, byte) in &edits {
                let at = at % block.len();
                block[at] = byte;
            }
            if d.is_broken() {
                break;
            }
            check_any(&mut d, &block);
        }
    }
}

#[test]
fn a_smaller_ceiling_than_the_encoders_fails_rather_than_decodes_wrong() {
    // C.3 encoded with a 4096 table, decoded with room for 100 bytes: the third block names an
    // entry this decoder evicted, and gets an error, not another entry's field.
    let blocks = &appendix_c_blocks()[0].1;
    let mut d = Decoder::new(100, usize::MAX);
    assert_eq!(decode_all(&mut d, &blocks[0]).unwrap().len(), 4);
    assert_eq!(decode_all(&mut d, &blocks[1]).unwrap().len(), 5);
    assert_eq!(decode_all(&mut d, &blocks[2]), Err(HpackError::BadIndex));
}
