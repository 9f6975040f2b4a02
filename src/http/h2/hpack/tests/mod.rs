//! RFC 7541 Appendix C, with and without Huffman, the table checked after every block.

mod corpus;
mod hostile;
mod model;

use super::*;

pub(super) fn hex(s: &str) -> Vec<u8> {
    let s: String = s.chars().filter(|c| !c.is_whitespace()).collect();
    (0..s.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(&s[i..i + 2], 16).unwrap())
        .collect()
}

pub(super) fn decode_all(
    d: &mut Decoder,
    block: &[u8],
) -> Result<Vec<(String, String)>, HpackError> {
    let mut out = Vec::new();
    d.decode(block, &mut |n, v| {
        out.push((
            String::from_utf8_lossy(n).into_owned(),
            String::from_utf8_lossy(v).into_owned(),
        ))
    })?;
    Ok(out)
}

fn pairs(list: &[(&str, &str)]) -> Vec<(String, String)> {
    list.iter()
        .map(|(n, v)| (n.to_string(), v.to_string()))
        .collect()
}

/// The dynamic table, newest first.
pub(super) fn table(d: &Decoder) -> Vec<(String, String)> {
    (62..)
        .map_while(|i| d.table.field(i))
        .map(|(n, v)| {
            (
                String::from_utf8_lossy(n).into_owned(),
                String::from_utf8_lossy(v).into_owned(),
            )
        })
        .collect()
}

struct Step {
    wire: &'static str,
    headers: &'static [(&'static str, &'static str)],
    table: &'static [(&'static str, &'static str)],
    size: usize,
}

fn run(table_size: usize, steps: &[Step]) {
    let mut d = Decoder::new(table_size, 1 << 20);
    for (i, step) in steps.iter().enumerate() {
        let got = decode_all(&mut d, &hex(step.wire)).unwrap();
        assert_eq!(got, pairs(step.headers), "block {i}");
        assert_eq!(table(&d), pairs(step.table), "table after block {i}");
        assert_eq!(d.table_size(), step.size, "size after block {i}");
    }
}

#[test]
fn c2_literal_representations() {
    run(
        4096,
        &[Step {
            wire: "400a 6375 7374 6f6d 2d6b 6579 0d63 7573 746f 6d2d 6865 6164 6572",
            headers: &[("custom-key", "custom-header")],
            table: &[("custom-key", "custom-header")],
            size: 55,
        }],
    );
    run(
        4096,
        &[Step {
            wire: "040c 2f73 616d 706c 652f 7061 7468",
            headers: &[(":path", "/sample/path")],
            table: &[],
            size: 0,
        }],
    );
    run(
        4096,
        &[Step {
            wire: "1008 7061 7373 776f 7264 0673 6563 7265 74",
            headers: &[("password", "secret")],
            table: &[],
            size: 0,
        }],
    );
    run(
        4096,
        &[Step {
            wire: "82",
            headers: &[(":method", "GET")],
            table: &[],
            size: 0,
        }],
    );
}

const REQ1: &[(&str, &str)] = &[
    (":method", "GET"),
    (":scheme", "http"),
    (":path", "/"),
    (":authority", "www.example.com"),
];
const REQ2: &[(&str, &str)] = &[
    (":method", "GET"),
    (":scheme", "http"),
    (":path", "/"),
    (":authority", "www.example.com"),
    ("cache-control", "no-cache"),
];
const REQ3: &[(&str, &str)] = &[
    (":method", "GET"),
    (":scheme", "https"),
    (":path", "/index.html"),
    (":authority", "www.example.com"),
    ("custom-key", "custom-value"),
];
const REQ_T1: &[(&str, &str)] = &[(":authority", "www.example.com")];
const REQ_T2: &[(&str, &str)] = &[
    ("cache-control", "no-cache"),
    (":authority", "www.example.com"),
];
const REQ_T3: &[(&str, &str)] = &[
    ("custom-key", "custom-value"),
    ("cache-control", "no-cache"),
    (":authority", "www.example.com"),
];

#[test]
fn c3_requests_without_huffman() {
    run(
        4096,
        &[
            Step {
                wire: "8286 8441 0f77 7777 2e65 7861 6d70 6c65 2e63 6f6d",
                headers: REQ1,
                table: REQ_T1,
                size: 57,
            },
            Step {
                wire: "8286 84be 5808 6e6f 2d63 6163 6865",
                headers: REQ2,
                table: REQ_T2,
                size: 110,
            },
            Step {
                wire: "8287 85bf 400a 6375 7374 6f6d 2d6b 6579 0c63 7573 746f 6d2d 7661 6c75 65",
                headers: REQ3,
                table: REQ_T3,
                size: 164,
            },
        ],
    );
}

#[test]
fn c4_requests_with_huffman() {
    run(
        4096,
        &[
            Step {
                wire: "8286 8441 8cf1 e3c2 e5f2 3a6b a0ab 90f4 ff",
                headers: REQ1,
                table: REQ_T1,
                size: 57,
            },
            Step {
                wire: "8286 84be 5886 a8eb 1064 9cbf",
                headers: REQ2,
                table: REQ_T2,
                size: 110,
            },
            Step {
                wire: "8287 85bf 4088 25a8 49e9 5ba9 7d7f 8925 a849 e95b b8e8 b4bf",
                headers: REQ3,
                table: REQ_T3,
                size: 164,
            },
        ],
    );
}

const DATE1: &str = "Mon, 21 Oct 2013 20:13:21 GMT";
const DATE2: &str = "Mon, 21 Oct 2013 20:13:22 GMT";
const LOC: &str = "https://www.example.com";
const COOKIE: &str = "foo=ASDJKHQKBZXOQWEOPIUAXQWEOIU; max-age=3600; version=1";
const RESP1: &[(&str, &str)] = &[
    (":status", "302"),
    ("cache-control", "private"),
    ("date", DATE1),
    ("location", LOC),
];
const RESP2: &[(&str, &str)] = &[
    (":status", "307"),
    ("cache-control", "private"),
    ("date", DATE1),
    ("location", LOC),
];
const RESP3: &[(&str, &str)] = &[
    (":status", "200"),
    ("cache-control", "private"),
    ("date", DATE2),
    ("location", LOC),
    ("content-encoding", "gzip"),
    ("set-cookie", COOKIE),
];
const RESP_T1: &[(&str, &str)] = &[
    ("location", LOC),
    ("date", DATE1),
    ("cache-control", "private"),
    (":status", "302"),
];
const RESP_T2: &[(&str, &str)] = &[
    (":status", "307"),
    ("location", LOC),
    ("date", DATE1),
    ("cache-control", "private"),
];
const RESP_T3: &[(&str, &str)] = &[
    ("set-cookie", COOKIE),
    ("content-encoding", "gzip"),
    ("date", DATE2),
];

#[test]
fn c5_responses_without_huffman_evict() {
    run(
        256,
        &[
            Step {
                wire:
                    "4803 3330 3258 0770 7269 7661 7465 611d 4d6f 6e2c 2032 3120 4f63 7420 3230 3133
                   2032 303a 3133 3a32 3120 474d 546e 1768 7474 7073 3a2f 2f77 7777 2e65 7861 6d70
                   6c65 2e63 6f6d",
                headers: RESP1,
                table: RESP_T1,
                size: 222,
            },
            Step {
                wire: "4803 3330 37c1 c0bf",
                headers: RESP2,
                table: RESP_T2,
                size: 222,
            },
            Step {
                wire:
                    "88c1 611d 4d6f 6e2c 2032 3120 4f63 7420 3230 3133 2032 303a 3133 3a32 3220 474d
                   54c0 5a04 677a 6970 7738 666f 6f3d 4153 444a 4b48 514b 425a 584f 5157 454f 5049
                   5541 5851 5745 4f49 553b 206d 6178 2d61 6765 3d33 3630 303b 2076 6572 7369 6f6e
                   3d31",
                headers: RESP3,
                table: RESP_T3,
                size: 215,
            },
        ],
    );
}

pub(super) const C6: [&str; 3] = [
    "4882 6402 5885 aec3 771a 4b61 96d0 7abe 9410 54d4 44a8 2005 9504 0b81 66e0 82a6 2d1b ff6e
     919d 29ad 1718 63c7 8f0b 97c8 e9ae 82ae 43d3",
    "4883 640e ffc1 c0bf",
    "88c1 6196 d07a be94 1054 d444 a820 0595 040b 8166 e084 a62d 1bff c05a 839b d9ab 77ad 94e7
     821d d7f2 e6c7 b335 dfdf cd5b 3960 d5af 2708 7f36 72c1 ab27 0fb5 291f 9587 3160 65c0 03ed
     4ee5 b106 3d50 07",
];

#[test]
fn c6_responses_with_huffman_evict() {
    run(
        256,
        &[
            Step {
                wire: C6[0],
                headers: RESP1,
                table: RESP_T1,
                size: 222,
            },
            Step {
                wire: C6[1],
                headers: RESP2,
                table: RESP_T2,
                size: 222,
            },
            Step {
                wire: C6[2],
                headers: RESP3,
                table: RESP_T3,
                size: 215,
            },
        ],
    );
}

/// Every Appendix C block, in its sequence, for the hostile tests.
pub(super) fn appendix_c_blocks() -> Vec<(usize, Vec<Vec<u8>>)> {
    let c4 = [
        "8286 8441 8cf1 e3c2 e5f2 3a6b a0ab 90f4 ff",
        "8286 84be 5886 a8eb 1064 9cbf",
        "8287 85bf 4088 25a8 49e9 5ba9 7d7f 8925 a849 e95b b8e8 b4bf",
    ];
    let c3 = [
        "8286 8441 0f77 7777 2e65 7861 6d70 6c65 2e63 6f6d",
        "8286 84be 5808 6e6f 2d63 6163 6865",
        "8287 85bf 400a 6375 7374 6f6d 2d6b 6579 0c63 7573 746f 6d2d 7661 6c75 65",
    ];
    vec![
        (4096, c3.iter().map(|s| hex(s)).collect()),
        (4096, c4.iter().map(|s| hex(s)).collect()),
        (256, C6.iter().map(|s| hex(s)).collect()),
    ]
}

#[test]
fn size_updates_at_block_start() {
    let mut d = Decoder::new(4096, 1 << 20);
    decode_all(&mut d, &hex(C6[0])).unwrap();
    assert_eq!(d.table_size(), 222);
    // 0x20: update to 0 empties the table; then 0x3f e1 1f = 4096 restores the capacity.
    assert_eq!(
        decode_all(&mut d, &hex("20 3fe11f 82")).unwrap(),
        pairs(&[(":method", "GET")])
    );
    assert_eq!(d.table_size(), 0);
    assert_eq!(d.table.capacity(), 4096);
    // The ceiling lowered below the capacity: the next block must start with an update.
    d.set_max_table_size(100);
    assert_eq!(d.table.capacity(), 100);
    let mut e = Decoder::new(4096, 1 << 20);
    e.set_max_table_size(100);
    assert_eq!(
        decode_all(&mut e, &hex("82")),
        Err(HpackError::SizeUpdateMissing)
    );
    assert!(e.is_broken());
    assert_eq!(
        decode_all(&mut d, &hex("3f45 82")).unwrap(),
        pairs(&[(":method", "GET")])
    );
    assert_eq!(d.table.capacity(), 100);
    // Raising the ceiling needs no update; the encoder may then grow to it.
    d.set_max_table_size(8192);
    assert_eq!(decode_all(&mut d, &hex("82")).unwrap().len(), 1);
    assert_eq!(decode_all(&mut d, &hex("3fe13f 82")).unwrap().len(), 1);
    assert_eq!(d.table.capacity(), 8192);
}

#[test]
fn list_bound_stops_emitting_but_keeps_the_table() {
    // C.3 with a bound that lets only the first block's four fields through: (7+3+32) +
    // (7+4+32) + (5+1+32) + (10+15+32) = 180.
    let blocks = &appendix_c_blocks()[0].1;
    let mut d = Decoder::new(4096, 180);
    assert_eq!(decode_all(&mut d, &blocks[0]).unwrap(), pairs(REQ1));
    let mut got = Vec::new();
    let r = d.decode(&blocks[1], &mut |n, v| got.push((n.to_vec(), v.to_vec())));
    assert_eq!(r, Err(HpackError::ListTooLarge));
    assert_eq!(got.len(), 4, "the fifth field passes the bound");
    assert!(!d.is_broken());
    assert_eq!(
        table(&d),
        pairs(REQ_T2),
        "the field past the bound still entered the table"
    );
    assert_eq!(
        HpackError::ListTooLarge.anomaly(),
        "h2.hpack_list_too_large"
    );
}
