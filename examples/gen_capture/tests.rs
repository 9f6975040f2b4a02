use super::*;
use crate::tcp::*;
use mcp_trace::capture::{self, Source};
use mcp_trace::decode::{Decoded, Decoder};
use mcp_trace::flow::{FlowLimits, FlowTable};
use mcp_trace::report::RunStats;
use mcp_trace::stream::{Decryption, Side, StreamEvent, StreamEventKind, TlsSummary};
use mcp_trace::tls::{KeyLog, TlsCounters, TlsStage};

#[test]
fn checksums_verify() {
    let a = Dir {
        ip: [127, 0, 0, 2],
        port: 40000,
        seq: 7,
        shift: 0,
    };
    let b = Dir {
        ip: SERVER_IP,
        port: SERVER_PORT,
        seq: 9,
        shift: 0,
    };
    let f = frame(&a, &b, 7, 9, ACK | PSH, b"hello", MSS);
    // A header with its checksum in place sums to 0xffff (RFC 1071).
    assert_eq!(checksum_fold(checksum_add(0, &f[14..34])), 0);
    let mut pseudo = Vec::from([127, 0, 0, 2, 127, 0, 0, 1, 0, 6, 0, 25]);
    pseudo.extend_from_slice(&f[34..]);
    assert_eq!(checksum_fold(checksum_add(0, &pseudo)), 0);
    assert_eq!(f.len(), 14 + 20 + 20 + 5);
}

#[test]
fn same_seed_same_bytes_and_truth() {
    let dir = tempfile::tempdir().unwrap();
    let p1 = dir.path().join("a.pcap");
    let p2 = dir.path().join("b.pcap");
    run(p1.to_str().unwrap(), 1, 7, 20, false).unwrap();
    run(p2.to_str().unwrap(), 1, 7, 20, false).unwrap();
    assert_eq!(std::fs::read(&p1).unwrap(), std::fs::read(&p2).unwrap());
    let t: serde_json::Value =
        serde_json::from_slice(&std::fs::read(dir.path().join("a.truth.json")).unwrap()).unwrap();
    let outcomes = t["mcp_exchanges"].as_object().unwrap();
    let sum: u64 = outcomes.values().map(|v| v.as_u64().unwrap()).sum();
    assert_eq!(sum, t["requests"].as_u64().unwrap());
    assert!(t["bytes"].as_u64().unwrap() >= 1_000_000);
    // One `notifications/initialized` per session at most (the run may stop
    // between a client's initialize and its notification); one resend per error at most.
    let sessions = t["sessions"].as_u64().unwrap();
    assert!(sessions >= 10, "{t}");
    assert!(outcomes["ACCEPTED"].as_u64().unwrap() <= sessions);
    assert!(t["retries"]["sdk"].as_u64().unwrap() <= outcomes["HTTP_ERROR"].as_u64().unwrap());
}

/// Bytes each stream hands on, per side ([client, server]), after the flow stage and,
/// with a key log, the TLS stage; with the TLS part of each connection's record and the run's
/// counters.
struct Streams {
    bytes: BTreeMap<u64, [Vec<u8>; 2]>,
    gaps: u64,
    records: BTreeMap<u64, TlsSummary>,
    stats: RunStats,
}

fn through_stages(path: &std::path::Path, keys: Option<&std::path::Path>) -> Streams {
    let Source::Packets(reader) = capture::open(path.to_str().unwrap(), 0).unwrap() else {
        panic!("{} is not a packet capture", path.display());
    };
    let mut stage = keys.map(|k| {
        let mut log = KeyLog::new();
        log.read_from("keys", std::io::BufReader::new(File::open(k).unwrap()))
            .unwrap();
        TlsStage::new(log)
    });
    let mut stats = RunStats::default();
    let mut frames = capture::Merger::new(vec![reader]);
    let mut decoder = Decoder::new();
    let mut table = FlowTable::new(FlowLimits::default());
    let (mut flow_out, mut out) = (Vec::new(), Vec::new());
    let mut pass =
        |flow_out: &mut Vec<StreamEvent>, out: &mut Vec<StreamEvent>, stats: &mut TlsCounters| {
            for ev in flow_out.drain(..) {
                match stage.as_mut() {
                    Some(s) => s.push(ev, stats, out),
                    None => out.push(ev),
                }
            }
        };
    while let Some(frame) = frames.next_frame(&mut stats.capture) {
        if let Decoded::Segment(seg) = decoder.decode(&frame) {
            table.push(seg, &mut stats.flow, &mut flow_out);
            pass(&mut flow_out, &mut out, &mut stats.tls);
        }
    }
    table.finish(&mut stats.flow, &mut flow_out);
    pass(&mut flow_out, &mut out, &mut stats.tls);
    if let Some(s) = stage.as_mut() {
        s.finish(&mut stats.tls, &mut out);
    }
    let mut streams = Streams {
        bytes: BTreeMap::new(),
        gaps: 0,
        records: BTreeMap::new(),
        stats,
    };
    for ev in out {
        let sides = streams.bytes.entry(ev.stream).or_default();
        match ev.kind {
            StreamEventKind::Data { side, bytes } => {
                sides[usize::from(side == Side::Server)].extend_from_slice(&bytes);
            }
            StreamEventKind::Gap { .. } => streams.gaps += 1,
            StreamEventKind::Closed { record, .. } => {
                streams.records.insert(ev.stream, record.tls);
            }
            _ => {}
        }
    }
    streams
}

/// The TLS capture decrypts, connection by connection, to the plaintext capture's bytes.
#[test]
fn tls_capture_decrypts_to_the_plaintext_capture() {
    let dir = tempfile::tempdir().unwrap();
    let (plain, tls) = (dir.path().join("p.pcap"), dir.path().join("t.pcap"));
    run(plain.to_str().unwrap(), 2, 11, 30, false).unwrap();
    run(tls.to_str().unwrap(), 2, 11, 30, true).unwrap();
    let keys = dir.path().join("t.keys");

    let want = through_stages(&plain, None);
    let got = through_stages(&tls, Some(&keys));
    assert_eq!((want.gaps, got.gaps), (0, 0));
    assert!(want.bytes.len() >= 30, "{} streams", want.bytes.len());
    assert_eq!(
        want.bytes.keys().collect::<Vec<_>>(),
        got.bytes.keys().collect::<Vec<_>>()
    );
    for (stream, sides) in &want.bytes {
        assert!(
            got.bytes[stream] == *sides,
            "stream {stream}: decrypted bytes differ from the plaintext capture's"
        );
    }
    // Every connection with traffic is TLS 1.3 as generated, decrypted, its bytes
    // accounted for; the stage reports nothing wrong.
    let with_data = want.bytes.values().filter(|s| !s[0].is_empty()).count();
    assert_eq!(got.records.len(), want.bytes.len());
    let mut decrypted = 0;
    for (stream, r) in &got.records {
        if want.bytes[stream][0].is_empty() {
            continue;
        }
        assert_eq!(r.decryption, Decryption::Decrypted, "stream {stream}");
        assert!(
            r.bytes.adds_up() && r.bytes.undecrypted.is_empty(),
            "{:?}",
            r.bytes
        );
        assert_eq!(
            (
                r.version.as_deref(),
                r.cipher.as_deref(),
                r.sni.as_deref(),
                r.alpn.as_deref()
            ),
            (
                Some("TLS 1.3"),
                Some("TLS_AES_128_GCM_SHA256"),
                Some("bench.local"),
                Some("http/1.1")
            )
        );
        decrypted += 1;
    }
    assert_eq!(decrypted, with_data);
    assert!(
        !got.stats.anomalies().keys().any(|k| k.starts_with("tls.")),
        "{:?}",
        got.stats.anomalies()
    );
    // The two captures carry the same packets but for the TLS-only ones.
    assert_eq!(
        want.stats.flow.tcp_payload_bytes,
        want.bytes
            .values()
            .map(|s| (s[0].len() + s[1].len()) as u64)
            .sum::<u64>()
    );
    assert!(got.stats.capture.packets_total > want.stats.capture.packets_total);
}

#[test]
fn tls_truth_is_the_plaintext_truth_and_the_run_repeats() {
    let dir = tempfile::tempdir().unwrap();
    let path = |name: &str| dir.path().join(name).to_str().unwrap().to_string();
    run(&path("p.pcap"), 1, 4, 12, false).unwrap();
    run(&path("t.pcap"), 1, 4, 12, true).unwrap();
    run(&path("u.pcap"), 1, 4, 12, true).unwrap();
    let read = |name: &str| std::fs::read(path(name)).unwrap();
    assert_eq!(read("t.pcap"), read("u.pcap"));
    assert_eq!(read("t.keys"), read("u.keys"));
    let truth = |name: &str| {
        let mut t: serde_json::Value = serde_json::from_slice(&read(name)).unwrap();
        let t = t.as_object_mut().unwrap();
        let sizes = (t.remove("bytes").unwrap(), t.remove("packets").unwrap());
        (t.remove("tls"), sizes, t.clone())
    };
    let (plain_tls, plain_sizes, plain) = truth("p.truth.json");
    let (tls_tls, tls_sizes, tls) = truth("t.truth.json");
    assert_eq!(plain, tls);
    assert_eq!(plain_tls, None);
    assert_eq!(tls_tls.unwrap(), "TLS 1.3 TLS_AES_128_GCM_SHA256");
    assert!(tls_sizes.0.as_u64() > plain_sizes.0.as_u64());
    // Four secrets per TCP connection.
    let keys = String::from_utf8(read("t.keys")).unwrap();
    assert_eq!(
        keys.lines().count() as u64,
        4 * plain["tcp_connections"].as_u64().unwrap()
    );
}

/// A header block decoder for the test (RFC 7541 without Huffman, which the
/// generator never uses): indexed fields, the three literal forms, size updates.
struct TestDecoder {
    table: VecDeque<(Vec<u8>, Vec<u8>)>,
    size: usize,
    /// References to the dynamic table (indexed fields and indexed names).
    dynamic_refs: u64,
}

fn hpack_int(b: &[u8], i: &mut usize, prefix: u32) -> usize {
    let limit = (1usize << prefix) - 1;
    let mut v = usize::from(b[*i]) & limit;
    *i += 1;
    if v == limit {
        let mut shift = 0;
        loop {
            let byte = b[*i];
            *i += 1;
            v += usize::from(byte & 0x7f) << shift;
            shift += 7;
            if byte & 0x80 == 0 {
                break;
            }
        }
    }
    v
}

fn hpack_str(b: &[u8], i: &mut usize) -> Vec<u8> {
    assert_eq!(b[*i] & 0x80, 0, "Huffman-coded string");
    let n = hpack_int(b, i, 7);
    let s = b[*i..*i + n].to_vec();
    *i += n;
    s
}

impl TestDecoder {
    fn entry(&mut self, index: usize) -> (Vec<u8>, Vec<u8>) {
        assert!(index >= 1, "index 0");
        if index >= 62 {
            self.dynamic_refs += 1;
        }
        match h2::STATIC_TABLE.get(index - 1) {
            Some((n, v)) => (n.as_bytes().to_vec(), v.as_bytes().to_vec()),
            None => self.table[index - 62].clone(),
        }
    }

    fn decode(&mut self, b: &[u8]) -> Vec<(Vec<u8>, Vec<u8>)> {
        let mut out = Vec::new();
        let mut i = 0;
        while i < b.len() {
            let first = b[i];
            if first & 0x80 != 0 {
                let idx = hpack_int(b, &mut i, 7);
                out.push(self.entry(idx));
            } else if first & 0xe0 == 0x20 {
                let _ = hpack_int(b, &mut i, 5); // table size update
            } else {
                let (prefix, index_it) = if first & 0x40 != 0 {
                    (6, true)
                } else {
                    (4, false)
                };
                let idx = hpack_int(b, &mut i, prefix);
                let name = if idx == 0 {
                    hpack_str(b, &mut i)
                } else {
                    self.entry(idx).0
                };
                let value = hpack_str(b, &mut i);
                if index_it {
                    let size = name.len() + value.len() + 32;
                    self.table.push_front((name.clone(), value.clone()));
                    self.size += size;
                    while self.size > 4096 {
                        let (n, v) = self.table.pop_back().unwrap();
                        self.size -= n.len() + v.len() + 32;
                    }
                }
                out.push((name, value));
            }
        }
        out
    }
}

/// One stream of an h2c connection as the test reads it.
#[derive(Default)]
struct TestStream {
    request: Vec<(Vec<u8>, Vec<u8>)>,
    request_body: Vec<u8>,
    request_ended: bool,
    response: Vec<(Vec<u8>, Vec<u8>)>,
    response_body: Vec<u8>,
    response_ended: bool,
}

/// Frames of one side of a connection: (type, flags, stream, payload without padding).
fn test_frames(mut b: &[u8]) -> Vec<(u8, u8, u32, Vec<u8>)> {
    let mut out = Vec::new();
    while !b.is_empty() {
        assert!(b.len() >= 9, "frame header cut");
        let len = usize::from(b[0]) << 16 | usize::from(b[1]) << 8 | usize::from(b[2]);
        let (ty, flags) = (b[3], b[4]);
        let stream = u32::from_be_bytes([b[5], b[6], b[7], b[8]]) & 0x7fff_ffff;
        let mut payload = &b[9..9 + len];
        if ty == 0 && flags & 0x8 != 0 {
            let pad = usize::from(payload[0]);
            payload = &payload[1..payload.len() - pad];
        }
        out.push((ty, flags, stream, payload.to_vec()));
        b = &b[9 + len..];
    }
    out
}

fn header<'a>(h: &'a [(Vec<u8>, Vec<u8>)], name: &str) -> Option<&'a [u8]> {
    h.iter()
        .find(|(n, _)| n == name.as_bytes())
        .map(|(_, v)| v.as_slice())
}

/// The request bodies of an HTTP/1.1 client stream (the generator always sends Content-Length).
fn h1_request_bodies(mut b: &[u8], out: &mut Vec<Vec<u8>>) {
    while let Some(end) = b.windows(4).position(|w| w == b"\r\n\r\n") {
        let head = std::str::from_utf8(&b[..end]).unwrap();
        let len: usize = head
            .lines()
            .find_map(|l| l.strip_prefix("content-length: "))
            .unwrap()
            .parse()
            .unwrap();
        out.push(b[end + 4..end + 4 + len].to_vec());
        b = &b[end + 4 + len..];
    }
}

/// The h2c capture, read back through the flow stage and decoded with an HPACK
/// decoder of the test's own, carries the HTTP/1.1 capture's requests (same bodies),
/// one stream each, with one response each whose JSON-RPC id is the request's;
/// several clients' streams interleave on each connection, and the truth is the
/// HTTP/1.1 truth but for sizes and connections.
#[test]
fn h2c_capture_carries_the_http1_requests_on_interleaved_streams() {
    let dir = tempfile::tempdir().unwrap();
    let (plain, h2c) = (dir.path().join("p.pcap"), dir.path().join("h.pcap"));
    run(plain.to_str().unwrap(), 2, 5, 24, false).unwrap();
    run_variant(h2c.to_str().unwrap(), 2, 5, 24, false, true).unwrap();
    let read_truth = |p: &std::path::Path| {
        let t: serde_json::Value =
            serde_json::from_slice(&std::fs::read(p.with_extension("truth.json")).unwrap())
                .unwrap();
        t.as_object().unwrap().clone()
    };
    let (mut t1, mut t2) = (read_truth(&plain), read_truth(&h2c));
    let exchanges = t1["http_exchanges"].as_u64().unwrap();
    assert_eq!(t2["h2_streams"].as_u64(), Some(exchanges));
    assert_eq!(t2["h2_header_blocks"].as_u64(), Some(2 * exchanges));
    assert_eq!(t2["tcp_connections"].as_u64(), Some(3)); // 24 clients, 8 per connection
    for k in ["bytes", "packets", "tcp_connections"] {
        t1.remove(k);
        t2.remove(k);
    }
    for k in ["http2", "h2_streams", "h2_header_blocks"] {
        assert!(t2.remove(k).is_some(), "{k}");
    }
    assert_eq!(t1, t2);

    let mut want = Vec::new();
    let plain_streams = through_stages(&plain, None);
    for sides in plain_streams.bytes.values() {
        h1_request_bodies(&sides[0], &mut want);
    }
    let got_streams = through_stages(&h2c, None);
    assert_eq!(got_streams.gaps, 0);
    assert_eq!(got_streams.bytes.len(), 3);
    let mut got = Vec::new();
    let mut statuses = BTreeMap::new();
    let mut dynamic_hits = 0;
    let mut interleaved = 0;
    for sides in got_streams.bytes.values() {
        let client = sides[0]
            .strip_prefix(b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n".as_slice())
            .expect("client preface");
        let mut streams: BTreeMap<u32, TestStream> = BTreeMap::new();
        let mut open_order = Vec::new();
        let mut server_frames = Vec::new();
        for (side, bytes) in [(0, client), (1, sides[1].as_slice())] {
            let mut dec = TestDecoder {
                table: VecDeque::new(),
                size: 0,
                dynamic_refs: 0,
            };
            for (ty, flags, id, payload) in test_frames(bytes) {
                match ty {
                    0 | 1 => {
                        let s = streams.entry(id).or_default();
                        if ty == 1 {
                            assert_eq!(flags & 0x4, 0x4, "header blocks fit one frame here");
                            let h = dec.decode(&payload);
                            if side == 0 {
                                open_order.push(id);
                                s.request = h;
                            } else {
                                s.response = h;
                            }
                        }
                        if side == 1 {
                            server_frames.push(id);
                        }
                        if ty == 0 && side == 0 {
                            s.request_body.extend_from_slice(&payload);
                        } else if ty == 0 {
                            s.response_body.extend_from_slice(&payload);
                        }
                        if flags & 0x1 != 0 {
                            if side == 0 {
                                s.request_ended = true;
                            } else {
                                s.response_ended = true;
                            }
                        }
                    }
                    4 | 7 | 8 => assert_eq!(id, 0, "connection-level frame on a stream"),
                    other => panic!("unexpected frame type {other}"),
                }
            }
            dynamic_hits += dec.dynamic_refs;
        }
        // Client streams are odd and opened in increasing order.
        assert!(open_order.windows(2).all(|w| w[1] == w[0] + 2) && open_order[0] == 1);
        for (id, s) in &streams {
            assert!(s.request_ended && s.response_ended, "stream {id} not ended");
            assert_eq!(header(&s.request, ":method"), Some(b"POST".as_slice()));
            assert_eq!(header(&s.request, ":path"), Some(b"/mcp".as_slice()));
            assert_eq!(header(&s.request, ":scheme"), Some(b"http".as_slice()));
            let len = header(&s.request, "content-length").unwrap();
            assert_eq!(
                std::str::from_utf8(len).unwrap(),
                s.request_body.len().to_string()
            );
            let status = std::str::from_utf8(header(&s.response, ":status").unwrap()).unwrap();
            *statuses.entry(status.to_string()).or_insert(0u64) += 1;
            let req: serde_json::Value = serde_json::from_slice(&s.request_body).unwrap();
            if status == "200" {
                let body = String::from_utf8(s.response_body.clone()).unwrap();
                let json = match body.strip_prefix("event: message\ndata: ") {
                    // SSE: the last event is the answer
                    Some(_) => body.rsplit("data: ").next().unwrap().trim_end().to_string(),
                    None => body,
                };
                let resp: serde_json::Value = serde_json::from_str(&json).unwrap();
                assert_eq!(resp["id"], req["id"], "stream {id}");
            }
            got.push(s.request_body.clone());
        }
        // Interleaving: frames of other streams between a response's first and last frame.
        for id in streams.keys() {
            let first = server_frames.iter().position(|x| x == id).unwrap();
            let last = server_frames.iter().rposition(|x| x == id).unwrap();
            if server_frames[first..last].iter().any(|x| x != id) {
                interleaved += 1;
            }
        }
    }
    want.sort();
    got.sort();
    assert_eq!(got.len() as u64, exchanges);
    assert!(
        got == want,
        "the h2c requests are not the HTTP/1.1 requests"
    );
    let errors = t1["mcp_exchanges"]["HTTP_ERROR"].as_u64().unwrap();
    let not_200: u64 = statuses
        .iter()
        .filter(|(s, _)| *s != "200" && *s != "202")
        .map(|(_, n)| n)
        .sum();
    assert_eq!(not_200, errors, "{statuses:?}");
    assert!(
        dynamic_hits > 100,
        "dynamic table used {dynamic_hits} times"
    );
    assert!(
        interleaved > 10,
        "{interleaved} responses interleaved with others"
    );
}

/// RFC 7541 Appendix C.3: three requests on one connection, without Huffman coding.
#[test]
fn hpack_encoder_matches_the_rfc_examples() {
    let h = |pairs: &[(&str, &str)]| -> Vec<h2::Header> {
        pairs
            .iter()
            .map(|(n, v)| (n.as_bytes().to_vec(), v.as_bytes().to_vec()))
            .collect()
    };
    let hex = |s: &str| -> Vec<u8> {
        let s: String = s.split_whitespace().collect();
        (0..s.len())
            .step_by(2)
            .map(|i| u8::from_str_radix(&s[i..i + 2], 16).unwrap())
            .collect()
    };
    let mut enc = h2::Encoder::new();
    let base = [(":method", "GET"), (":scheme", "http"), (":path", "/")];
    let mut out = Vec::new();
    let mut first = base.to_vec();
    first.push((":authority", "www.example.com"));
    enc.encode(&h(&first), &mut out);
    assert_eq!(
        out,
        hex("8286 8441 0f77 7777 2e65 7861 6d70 6c65 2e63 6f6d")
    );
    out.clear();
    let mut second = first.clone();
    second.push(("cache-control", "no-cache"));
    enc.encode(&h(&second), &mut out);
    assert_eq!(out, hex("8286 84be 5808 6e6f 2d63 6163 6865"));
    out.clear();
    let third = [
        (":method", "GET"),
        (":scheme", "https"),
        (":path", "/index.html"),
        (":authority", "www.example.com"),
        ("custom-key", "custom-value"),
    ];
    enc.encode(&h(&third), &mut out);
    assert_eq!(
        out,
        hex("8287 85bf 400a 6375 7374 6f6d 2d6b 6579 0c63 7573 746f 6d2d 7661 6c75 65")
    );
    // content-length is sent without indexing: the table does not grow.
    out.clear();
    enc.encode(&h(&[("content-length", "1234")]), &mut out);
    assert_eq!(out, hex("0f0d 0431 3233 34"));
    out.clear();
    enc.encode(&h(&[("content-length", "1234")]), &mut out);
    assert_eq!(out, hex("0f0d 0431 3233 34"));
}

/// Entries beyond the 4096-byte table are evicted oldest first; the decoder of the
/// test, which evicts by the same rule, reads every block back.
#[test]
fn hpack_dynamic_table_evicts_and_decodes_back() {
    let mut enc = h2::Encoder::new();
    let mut dec = TestDecoder {
        table: VecDeque::new(),
        size: 0,
        dynamic_refs: 0,
    };
    for round in 0..3 {
        for i in 0..200u32 {
            let headers = vec![
                (b":status".to_vec(), b"200".to_vec()),
                (
                    b"mcp-session-id".to_vec(),
                    format!("{:032x}", i % 60).into_bytes(),
                ),
                (
                    b"content-length".to_vec(),
                    (i * 7 + round).to_string().into_bytes(),
                ),
            ];
            let mut block = Vec::new();
            enc.encode(&headers, &mut block);
            assert_eq!(dec.decode(&block), headers, "round {round} block {i}");
        }
    }
    // 60 ids of 78 bytes + 32 each do not fit 4096 bytes: ids were evicted and sent again,
    // yet recent ones were still referenced from the table.
    assert!(dec.dynamic_refs > 0);
    assert!(dec.size <= 4096);
}

#[test]
fn h2c_same_seed_same_bytes() {
    let dir = tempfile::tempdir().unwrap();
    let p = |n: &str| dir.path().join(n).to_str().unwrap().to_string();
    run_variant(&p("a.pcap"), 1, 9, 16, false, true).unwrap();
    run_variant(&p("b.pcap"), 1, 9, 16, false, true).unwrap();
    assert_eq!(
        std::fs::read(p("a.pcap")).unwrap(),
        std::fs::read(p("b.pcap")).unwrap()
    );
}
