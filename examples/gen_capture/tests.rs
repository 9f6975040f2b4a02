use super::*;
use crate::tcp::*;

#[test]
fn checksums_verify() {
    let a = Dir {
        ip: [127, 0, 0, 2],
        port: 40000,
        seq: 7,
    };
    let b = Dir {
        ip: SERVER_IP,
        port: SERVER_PORT,
        seq: 9,
    };
    let f = frame(&a, &b, 7, 9, ACK | PSH, b"hello");
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
    run(p1.to_str().unwrap(), 1, 7, 20).unwrap();
    run(p2.to_str().unwrap(), 1, 7, 20).unwrap();
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
