//! `mcp-trace http` on the public HTTP/2 corpus (`../shared/corpus/http2`, from Suricata's
//! and Wireshark's test suites): every exchange tshark reports (its `expected.jsonl`) is
//! found with the same TCP stream, HTTP/2 stream id, method, path and status. Ignored by
//! default: `cargo test -- --ignored` runs them, and fails when the corpus is absent.
//!
//! Where we differ from tshark, by design (each case below says which applies):
//! - `Upgrade: h2c`: tshark lists the upgraded request twice (the HTTP/1.1 request with its
//!   `101`, and HTTP/2 stream 1 with the final status); we give one exchange: the request
//!   as sent (HTTP/1.1, so no stream id) with the final status from stream 1.
//! - URIs are written with secret query parameters redacted (`key=` here).
//! - Midstream and headerless captures: a stream whose HEADERS were never captured is not
//!   an exchange for us (no method, path or status to report).
//! - A response arriving after the client's RST_STREAM is not read: the client had
//!   already ended the exchange (`client_closed`), and the frames count as
//!   `h2.frame_on_closed_stream`.
//!
//! The TLS cases (`../shared/corpus/tls`, h2 by ALPN) are checked the same way. In
//! `http2-follow-multistream` tshark decodes no response HEADERS for six streams (its
//! note: cut by the capture end); we read a complete `200` for each (bodies whole, no
//! anomaly), so those six are expected with status 200.

use serde_json::Value;
use std::path::Path;
use std::process::Command;

const CORPUS: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/../shared/corpus/http2");

/// (tcp stream, h2 stream id, method, path, status).
type Exchange = (
    u64,
    Option<u64>,
    Option<String>,
    Option<String>,
    Option<u64>,
);

/// (case, capture, how our rows differ from tshark's).
const CASES: &[(&str, &str, Difference)] = &[
    (
        "grpc-person-search-json",
        "grpc_person_search_json_with_image.pcapng.gz",
        Difference::None,
    ),
    (
        "grpc-stream-reassembly",
        "grpc_stream_reassembly_sample.pcapng.gz",
        Difference::None,
    ),
    ("grpc-web", "grpc_web.pcapng.gz", Difference::None),
    (
        "packet-h2-14_headers",
        "packet-h2-14_headers.pcapng",
        Difference::None,
    ),
    (
        "sv-dns-over-http2",
        "dns_over_https.pcap",
        Difference::AnsweredAfterCancel(7),
    ),
    ("sv-dns-over-http2-limit", "input.pcap", Difference::None),
    (
        "sv-dns-over-http2-post",
        "dns_over_https_POST.pcap",
        Difference::None,
    ),
    (
        "sv-http2-authority-mismatch",
        "authority_and_host_2.pcap",
        Difference::None,
    ),
    ("sv-http2-bugfixes", "input.pcap", Difference::None),
    ("sv-http2-compression-bug", "input.pcap", Difference::None),
    ("sv-http2-continuation", "input.pcap", Difference::None),
    (
        "sv-http2-deflate",
        "http2_deflate.pcap",
        Difference::Upgrade,
    ),
    ("sv-http2-deflate-case", "input.pcap", Difference::Upgrade),
    (
        "sv-http2-errorcode-connect-tunnel",
        "input.pcap",
        Difference::None,
    ),
    ("sv-http2-keywords", "input.pcap", Difference::None),
    (
        "sv-http2-keywords2-h2c-upgrade",
        "input.pcap",
        Difference::Upgrade,
    ),
    ("sv-http2-long-frame", "input.pcap", Difference::None),
    (
        "sv-http2-multiple-headers",
        "http2_multiple_headers.pcap",
        Difference::None,
    ),
    ("sv-http2-range", "http2-range.pcap", Difference::Upgrade),
    (
        "sv-http2-userinfo-authority",
        "http2_userinfo_in_authority_1.pcap",
        Difference::None,
    ),
    (
        "sv-drop-protocol-change-midstream",
        "input.pcap",
        Difference::Midstream,
    ),
    (
        "grpc-missing-headers",
        "grpc_person_search_protobuf_with_image-missing_headers.pcapng.gz",
        Difference::Midstream,
    ),
];

#[derive(Debug, Clone, Copy, PartialEq)]
enum Difference {
    None,
    /// h2c Upgrade: one exchange per upgraded request (see the module docs).
    Upgrade,
    /// Streams without HEADERS in the capture are not exchanges; an upgrade the capture
    /// starts at is read as in `Upgrade`.
    Midstream,
    /// This stream's response came after the client's RST_STREAM(CANCEL).
    AnsweredAfterCancel(u64),
    /// These streams' responses, which tshark did not decode, are read as `200`.
    ReadWhereTsharkDidNot(&'static [u64]),
}

fn expected(dir: &str, case: &str, diff: Difference) -> Vec<Exchange> {
    let text = std::fs::read_to_string(format!("{dir}/{case}/expected.jsonl")).unwrap();
    let rows: Vec<Value> = text
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    let mut out = Vec::new();
    for v in &rows {
        let s = |k: &str| v[k].as_str().map(str::to_string);
        let mut x: Exchange = (
            v["tcp_stream"].as_u64().unwrap(),
            v["h2_stream_id"].as_u64(),
            s("method"),
            s("path").map(|p| mcp_trace::http::redact::redact_target(&p).into_owned()),
            v["status"].as_u64(),
        );
        let upgrade = matches!(diff, Difference::Upgrade | Difference::Midstream);
        if upgrade && v["proto"] == "h1" && x.4 == Some(101) {
            // Its final status is stream 1's row.
            continue;
        }
        if upgrade && x.1 == Some(1) && v["via_h1_upgrade"] == true {
            x.1 = None;
        }
        if diff == Difference::Midstream && x.2.is_none() && x.1.is_some() {
            if x.4.is_none() {
                continue;
            }
            // The capture starts at the 101: stream 1's response, its request unseen.
            x.1 = None;
        }
        if diff == Difference::AnsweredAfterCancel(x.1.unwrap_or_default()) {
            x.4 = None;
        }
        if let Difference::ReadWhereTsharkDidNot(streams) = diff
            && x.1.is_some_and(|id| streams.contains(&id))
        {
            assert_eq!(x.4, None, "{case}: tshark now decodes stream {:?}", x.1);
            x.4 = Some(200);
        }
        out.push(x);
    }
    out.sort();
    out
}

fn http_rows(capture: &Path, args: &[&str]) -> Vec<Exchange> {
    let out = Command::new(env!("CARGO_BIN_EXE_mcp-trace"))
        .args(["http", "--format", "jsonl"])
        .args(args)
        .arg(capture)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}: {}",
        capture.display(),
        String::from_utf8_lossy(&out.stderr)
    );
    let mut rows: Vec<Exchange> = String::from_utf8(out.stdout)
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str::<Value>(l).unwrap())
        .map(|v| {
            let s = |k: &str| v[k].as_str().map(str::to_string);
            (
                v["tcp_stream"].as_u64().unwrap(),
                v["h2_stream"].as_u64(),
                s("method"),
                s("uri"),
                v["status_code"].as_u64(),
            )
        })
        .collect();
    rows.sort();
    rows
}

#[test]
#[ignore = "needs ../shared/corpus"]
fn http2_exchanges_match_tshark() {
    crate::support::corpus("http2");
    let mut checked = 0usize;
    for &(case, capture, diff) in CASES {
        let want = expected(CORPUS, case, diff);
        let got = http_rows(&Path::new(CORPUS).join(case).join(capture), &[]);
        assert_eq!(got, want, "{case}");
        checked += want.len();
    }
    // Every case of the corpus is listed here.
    let cases = std::fs::read_dir(CORPUS).unwrap().count();
    assert_eq!(cases, CASES.len());
    assert!(checked >= 90, "{checked}");
}

const TLS_CORPUS: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/../shared/corpus/tls");

#[test]
#[ignore = "needs ../shared/corpus"]
fn http2_over_tls_exchanges_match_tshark() {
    crate::support::corpus("tls");
    let cases: &[(&str, &str, Option<&str>, Difference)] = &[
        (
            "http2-brotli",
            "http2-brotli.pcapng",
            None,
            Difference::None,
        ),
        (
            "http2-data-reassembly",
            "http2-data-reassembly.pcap",
            Some("http2-data-reassembly.keys"),
            Difference::None,
        ),
        (
            "http2-follow-multistream",
            "http2_follow_multistream.pcapng",
            None,
            Difference::ReadWhereTsharkDidNot(&[29, 33, 35, 41, 43, 49]),
        ),
    ];
    for &(case, capture, keys, diff) in cases {
        let dir = Path::new(TLS_CORPUS).join(case);
        let keylog = keys.map(|k| dir.join(k).display().to_string());
        let args: Vec<&str> = match &keylog {
            Some(k) => vec!["--keylog", k.as_str()],
            None => vec![],
        };
        let want = expected(TLS_CORPUS, case, diff);
        let got = http_rows(&dir.join(capture), &args);
        assert_eq!(got, want, "{case}");
        assert!(
            got.iter().all(|x| x.1.is_some()),
            "{case}: every exchange is HTTP/2"
        );
    }
}
