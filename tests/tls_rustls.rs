//! TLS made by a real implementation: rustls runs both ends in memory (the certificates
//! of samples/generator/certs, `ring` as the provider), logs its secrets through its
//! `KeyLog` trait, and every byte each end writes becomes a TCP segment of a pcap
//! (tests/support `Capture`). `mcp-trace analyze` on it, with and without the key log,
//! must find the MCP exchanges the client sent, count each connection's `decryption` in
//! the run summary and account for every TLS byte; the TLS stage run in process on the
//! same capture gives each connection's handshake facts. Cases loopback recordings rarely show: KeyUpdate,
//! resumption (TLS 1.3 PSK, TLS 1.2 session id and ticket with the resumed connection's
//! own secret left out of the key log), 0-RTT early data, each TLS 1.3 suite.

use crate::support::{Capture, Conn};
use arcstr::ArcStr;
use mcp_trace::capture;
use mcp_trace::decode::{Decoded, Decoder};
use mcp_trace::flow::{FlowLimits, FlowTable};
use mcp_trace::report::RunStats;
use mcp_trace::stream::{StreamEventKind, TlsSummary};
use mcp_trace::tls::{KeyLog, TlsStage};
use rustls::crypto::{CryptoProvider, ring as provider};
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, PrivateKeyDer, ServerName};
use rustls::{ClientConfig, ClientConnection, RootCertStore, ServerConfig, ServerConnection};
use serde_json::Value;
use std::io::{Read, Write};
use std::path::Path;
use std::process::Command;
use std::sync::{Arc, Mutex};

const CERTS: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/samples/generator/certs");
const SNI: &str = "localhost";

/// One secret as rustls hands it over: (label, client random, secret).
type Logged = (String, Vec<u8>, Vec<u8>);

/// The secrets rustls logged, in order.
#[derive(Debug, Default)]
pub(crate) struct Secrets(Mutex<Vec<Logged>>);

impl rustls::KeyLog for Secrets {
    fn log(&self, label: &str, client_random: &[u8], secret: &[u8]) {
        self.0
            .lock()
            .unwrap()
            .push((label.to_string(), client_random.to_vec(), secret.to_vec()));
    }
}

impl Secrets {
    pub(crate) fn len(&self) -> usize {
        self.0.lock().unwrap().len()
    }

    /// NSS key log text of the secrets logged, but those for which `drop` says true.
    pub(crate) fn nss(&self, drop: impl Fn(usize, &str) -> bool) -> String {
        let hex = |b: &[u8]| b.iter().map(|x| format!("{x:02x}")).collect::<String>();
        let mut text = String::from("# rustls, in memory\n");
        for (i, (label, random, secret)) in self.0.lock().unwrap().iter().enumerate() {
            if !drop(i, label) {
                text.push_str(&format!("{label} {} {}\n", hex(random), hex(secret)));
            }
        }
        text
    }

    fn secret_hex(&self) -> Vec<String> {
        let hex = |b: &[u8]| b.iter().map(|x| format!("{x:02x}")).collect::<String>();
        self.0
            .lock()
            .unwrap()
            .iter()
            .map(|(_, _, s)| hex(s))
            .collect()
    }
}

fn provider_with(suites: Option<Vec<rustls::SupportedCipherSuite>>) -> Arc<CryptoProvider> {
    let mut p = provider::default_provider();
    if let Some(suites) = suites {
        p.cipher_suites = suites;
    }
    Arc::new(p)
}

/// Client and server configurations sharing one key log (the client's).
pub(crate) struct Setup {
    client: Arc<ClientConfig>,
    server: Arc<ServerConfig>,
    pub(crate) secrets: Arc<Secrets>,
}

#[derive(Clone, Copy)]
pub(crate) enum Server {
    /// Session ids / TLS 1.3 tickets from the server's session cache (rustls' default).
    Stateful,
    /// Stateless tickets (RFC 5077 in TLS 1.2, self-contained TLS 1.3 tickets).
    Tickets,
    /// Stateful, accepting 0-RTT early data.
    EarlyData,
}

pub(crate) fn setup(
    versions: &[&'static rustls::SupportedProtocolVersion],
    suites: Option<Vec<rustls::SupportedCipherSuite>>,
    server: Server,
) -> Setup {
    let provider = provider_with(suites);
    let certs: Vec<CertificateDer<'static>> =
        CertificateDer::pem_file_iter(format!("{CERTS}/server.pem"))
            .unwrap()
            .collect::<Result<_, _>>()
            .unwrap();
    let key = PrivateKeyDer::from_pem_file(format!("{CERTS}/server.key")).unwrap();
    let mut roots = RootCertStore::empty();
    for ca in CertificateDer::pem_file_iter(format!("{CERTS}/ca.pem")).unwrap() {
        roots.add(ca.unwrap()).unwrap();
    }
    let secrets = Arc::new(Secrets::default());
    let mut client = ClientConfig::builder_with_provider(provider.clone())
        .with_protocol_versions(versions)
        .unwrap()
        .with_root_certificates(roots)
        .with_no_client_auth();
    client.alpn_protocols = vec![b"http/1.1".to_vec()];
    client.key_log = secrets.clone();
    let mut srv = ServerConfig::builder_with_provider(provider)
        .with_protocol_versions(versions)
        .unwrap()
        .with_no_client_auth()
        .with_single_cert(certs, key)
        .unwrap();
    srv.alpn_protocols = vec![b"http/1.1".to_vec()];
    match server {
        Server::Stateful => {}
        Server::Tickets => srv.ticketer = provider::Ticketer::new().unwrap(),
        Server::EarlyData => {
            srv.max_early_data_size = 16384;
            client.enable_early_data = true;
        }
    }
    Setup {
        client: Arc::new(client),
        server: Arc::new(srv),
        secrets,
    }
}

/// One TLS connection: the two rustls ends and the TCP connection carrying their bytes.
pub(crate) struct Tls {
    client: ClientConnection,
    server: ServerConnection,
    tcp: Conn,
    /// Plaintext the server read (early data included).
    server_read: Vec<u8>,
    client_read: Vec<u8>,
}

impl Tls {
    pub(crate) fn connect(cap: &mut Capture, s: &Setup) -> Tls {
        let name = ServerName::try_from(SNI).unwrap();
        Tls {
            client: ClientConnection::new(s.client.clone(), name).unwrap(),
            server: ServerConnection::new(s.server.clone()).unwrap(),
            tcp: cap.connect(8443),
            server_read: Vec::new(),
            client_read: Vec::new(),
        }
    }

    /// Moves TLS bytes both ways until neither end has more to send; each write of an
    /// end is one TCP send (segmented at the MSS).
    pub(crate) fn pump(&mut self, cap: &mut Capture) {
        loop {
            let mut moved = false;
            while self.client.wants_write() {
                let mut wire = Vec::new();
                self.client.write_tls(&mut wire).unwrap();
                cap.send(&mut self.tcp, true, &wire);
                feed(&mut self.server, &wire);
                moved = true;
                if let Some(mut early) = self.server.early_data() {
                    early.read_to_end(&mut self.server_read).unwrap();
                }
                read_available(self.server.reader(), &mut self.server_read);
            }
            while self.server.wants_write() {
                let mut wire = Vec::new();
                self.server.write_tls(&mut wire).unwrap();
                cap.send(&mut self.tcp, false, &wire);
                feed(&mut self.client, &wire);
                moved = true;
                read_available(self.client.reader(), &mut self.client_read);
            }
            if !moved {
                return;
            }
        }
    }

    /// The client sends `data` as application data, then the server answers `answer`.
    pub(crate) fn exchange(&mut self, cap: &mut Capture, request: &[u8], response: &[u8]) {
        self.client.writer().write_all(request).unwrap();
        self.pump(cap);
        self.server.writer().write_all(response).unwrap();
        self.pump(cap);
    }

    /// close_notify both ways, then FIN both ways.
    pub(crate) fn close(mut self, cap: &mut Capture) -> (Vec<u8>, Vec<u8>) {
        self.client.send_close_notify();
        self.pump(cap);
        self.server.send_close_notify();
        self.pump(cap);
        cap.close(&mut self.tcp, false);
        (self.server_read, self.client_read)
    }
}

/// Hands `wire` to a rustls end, as many reads as it takes.
fn feed(conn: &mut impl std::ops::DerefMut<Target = impl ReadTls>, wire: &[u8]) {
    let mut rest = wire;
    while !rest.is_empty() {
        conn.read_tls(&mut rest).unwrap();
        conn.process().unwrap();
    }
}

/// The two calls of both rustls ends that take bytes from the wire.
trait ReadTls {
    fn read_tls(&mut self, rd: &mut dyn Read) -> std::io::Result<usize>;
    fn process(&mut self) -> Result<(), rustls::Error>;
}

impl<D> ReadTls for rustls::ConnectionCommon<D> {
    fn read_tls(&mut self, rd: &mut dyn Read) -> std::io::Result<usize> {
        rustls::ConnectionCommon::read_tls(self, rd)
    }
    fn process(&mut self) -> Result<(), rustls::Error> {
        rustls::ConnectionCommon::process_new_packets(self).map(|_| ())
    }
}

fn read_available(mut reader: rustls::Reader<'_>, out: &mut Vec<u8>) {
    let mut buf = [0u8; 4096];
    loop {
        match reader.read(&mut buf) {
            Ok(0) => return,
            Ok(n) => out.extend_from_slice(&buf[..n]),
            Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => return,
            Err(e) => panic!("{e}"),
        }
    }
}

pub(crate) fn post(id: u64, method: &str, params: &str) -> Vec<u8> {
    let body = format!(r#"{{"jsonrpc":"2.0","id":{id},"method":"{method}","params":{params}}}"#);
    format!(
        "POST /mcp HTTP/1.1\r\nHost: {SNI}:8443\r\nContent-Type: application/json\r\n\
         Accept: application/json, text/event-stream\r\nMcp-Session-Id: s-1\r\n\
         User-Agent: rustls-test\r\nContent-Length: {}\r\n\r\n{body}",
        body.len()
    )
    .into_bytes()
}

pub(crate) fn reply(id: u64, result: &str) -> Vec<u8> {
    let body = format!(r#"{{"jsonrpc":"2.0","id":{id},"result":{result}}}"#);
    format!(
        "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nMcp-Session-Id: s-1\r\n\
         Content-Length: {}\r\n\r\n{body}",
        body.len()
    )
    .into_bytes()
}

pub(crate) const INIT: &str = r#"{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"rustls-test","version":"1"}}"#;
pub(crate) const INIT_RESULT: &str = r#"{"protocolVersion":"2025-06-18","capabilities":{"tools":{}},"serverInfo":{"name":"s","version":"1"}}"#;

pub(crate) fn tool_call(id: u64) -> (Vec<u8>, Vec<u8>) {
    (
        post(
            id,
            "tools/call",
            &format!(r#"{{"name":"echo","arguments":{{"n":{id}}}}}"#),
        ),
        reply(
            id,
            &format!(r#"{{"content":[{{"type":"text","text":"{id}"}}]}}"#),
        ),
    )
}

/// What `analyze` wrote (exchange rows, run summary, all output text), and the TLS part of
/// each connection's record (handshake facts, `decryption`) on the same capture and key log.
struct Analysis {
    rows: Vec<Value>,
    conns: Vec<TlsSummary>,
    summary: Value,
    all_text: String,
}

/// capture -> decode -> flow -> TLS stage in process: the TLS part of each connection's record
/// (as its `Closed` event carries it), by stream.
fn stage_records(pcap: &Path, keylog: Option<&str>) -> Vec<TlsSummary> {
    let mut keys = KeyLog::new();
    if let Some(text) = keylog {
        keys.add_text("test", text.as_bytes());
    }
    let mut stage = TlsStage::new(keys);
    let Ok(capture::Source::Packets(reader)) = capture::open(pcap.to_str().unwrap(), 0) else {
        panic!("{pcap:?} is not a packet capture");
    };
    let mut stats = RunStats::default();
    let mut frames = capture::Merger::new(vec![reader]);
    let mut decoder = Decoder::new();
    let mut table = FlowTable::new(FlowLimits::default());
    let (mut flow_out, mut out) = (Vec::new(), Vec::new());
    while let Some(frame) = frames.next_frame_ref(&mut stats.capture) {
        if let Decoded::Segment(seg) = decoder.decode_ref(&frame) {
            table.push(seg, &mut stats.flow, &mut flow_out);
        }
    }
    table.finish(&mut stats.flow, &mut flow_out);
    for ev in flow_out {
        stage.push(ev, &mut stats.tls, &mut out);
    }
    stage.finish(&mut stats.tls, &mut out);
    let mut records: Vec<(u64, TlsSummary)> = out
        .into_iter()
        .filter_map(|e| match e.kind {
            StreamEventKind::Closed { record, .. } => Some((e.stream, record.tls)),
            _ => None,
        })
        .collect();
    records.sort_by_key(|(stream, _)| *stream);
    for (stream, r) in &records {
        assert!(r.bytes.adds_up(), "stream {stream}: {:?}", r.bytes);
    }
    records.into_iter().map(|(_, r)| r).collect()
}

fn analyze(cap: &Capture, keylog: Option<&str>) -> Analysis {
    let dir = tempfile::tempdir().unwrap();
    let pcap = cap.write(dir.path(), "rustls.pcap");
    let d = |name: &str| dir.path().join(name);
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_mcp-trace"));
    cmd.arg("analyze")
        .arg(&pcap)
        .arg("-o")
        .arg(d("rows.jsonl"))
        .arg("--summary")
        .arg(d("summary.json"));
    if let Some(text) = keylog {
        std::fs::write(d("keys.log"), text).unwrap();
        cmd.arg("--keylog").arg(d("keys.log"));
    }
    let out = cmd.output().unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
    assert!(out.status.success(), "analyze failed: {stderr}");
    let lines = |p: &Path| -> Vec<Value> {
        std::fs::read_to_string(p)
            .unwrap()
            .lines()
            .filter(|l| !l.trim().is_empty())
            .map(|l| serde_json::from_str(l).unwrap())
            .collect()
    };
    let mut all_text = stderr;
    all_text.push_str(&String::from_utf8_lossy(&out.stdout));
    for f in ["rows.jsonl", "summary.json"] {
        all_text.push_str(&std::fs::read_to_string(d(f)).unwrap());
    }
    Analysis {
        rows: lines(&d("rows.jsonl")),
        conns: stage_records(&pcap, keylog),
        summary: serde_json::from_str(&std::fs::read_to_string(d("summary.json")).unwrap())
            .unwrap(),
        all_text,
    }
}

impl Analysis {
    /// (tcp_stream, rpc_method, jsonrpc_id, http_status, outcome) of every row.
    fn exchanges(&self) -> Vec<(u64, String, String, u64, String)> {
        self.rows
            .iter()
            .map(|r| {
                (
                    r["tcp_stream"].as_u64().unwrap(),
                    r["rpc_method"].as_str().unwrap_or("").to_string(),
                    r["jsonrpc_id"].as_str().unwrap_or("").to_string(),
                    r["http_status"].as_u64().unwrap_or(0),
                    r["outcome"].as_str().unwrap().to_string(),
                )
            })
            .collect()
    }

    /// Each connection's `decryption`; the run summary counts the same.
    fn decryption(&self) -> Vec<&'static str> {
        let values: Vec<&'static str> = self.conns.iter().map(|c| c.decryption.as_str()).collect();
        for (name, n) in self.summary["tls_connections"].as_object().unwrap() {
            let want = values.iter().filter(|v| *v == name).count() as u64;
            assert_eq!(n.as_u64(), Some(want), "{name}: {}", self.summary);
        }
        values
    }

    fn resumed(&self) -> Vec<Option<bool>> {
        self.conns.iter().map(|c| c.resumed).collect()
    }

    /// The TLS byte identity of the run summary, and that no secret is in any output.
    fn check_accounting(&self, secrets: &Secrets) {
        let b = &self.summary["tls_bytes"];
        let undecrypted: u64 = b["undecrypted"]
            .as_object()
            .unwrap()
            .values()
            .map(|v| v.as_u64().unwrap())
            .sum();
        let received = b["received"].as_u64().unwrap();
        assert!(received > 0, "no TLS bytes counted: {b}");
        assert_eq!(
            b["handshake"].as_u64().unwrap() + b["application"].as_u64().unwrap() + undecrypted,
            received,
            "TLS bytes do not add up: {b}"
        );
        // Every TLS byte is TCP payload of the (all TLS) capture.
        assert_eq!(
            received,
            self.summary["tcp_payload_bytes"].as_u64().unwrap(),
            "summary: {}",
            self.summary
        );
        for secret in secrets.secret_hex() {
            assert!(!self.all_text.contains(&secret), "a secret in the outputs");
        }
    }
}

fn ok_rows(
    stream: u64,
    first_id: u64,
    methods: &[&str],
) -> Vec<(u64, String, String, u64, String)> {
    methods
        .iter()
        .enumerate()
        .map(|(i, m)| {
            let outcome = if *m == "initialize" {
                "RPC_SUCCESS"
            } else {
                "TOOL_SUCCESS"
            };
            (
                stream,
                m.to_string(),
                (first_id + i as u64).to_string(),
                200,
                outcome.to_string(),
            )
        })
        .collect()
}

/// One connection: initialize and two tool calls, each the client's request then the
/// server's response; `between` runs after the first tool call (a KeyUpdate, ...).
fn session(cap: &mut Capture, s: &Setup, first_id: u64, between: impl FnOnce(&mut Tls)) {
    let mut tls = Tls::connect(cap, s);
    tls.pump(cap);
    assert!(!tls.client.is_handshaking() && !tls.server.is_handshaking());
    tls.exchange(
        cap,
        &post(first_id, "initialize", INIT),
        &reply(first_id, INIT_RESULT),
    );
    let (req, res) = tool_call(first_id + 1);
    tls.exchange(cap, &req, &res);
    between(&mut tls);
    let (req, res) = tool_call(first_id + 2);
    tls.exchange(cap, &req, &res);
    let (server_read, client_read) = tls.close(cap);
    // rustls itself delivered the plaintext: the traffic is what the test says it is.
    assert!(
        String::from_utf8(server_read)
            .unwrap()
            .contains("tools/call")
    );
    assert!(String::from_utf8(client_read).unwrap().contains("\"text\""));
}

const METHODS: [&str; 3] = ["initialize", "tools/call", "tools/call"];

#[test]
fn tls13_each_suite_decrypted_and_no_key_without_the_log() {
    for suite in [
        provider::cipher_suite::TLS13_AES_128_GCM_SHA256,
        provider::cipher_suite::TLS13_AES_256_GCM_SHA384,
        provider::cipher_suite::TLS13_CHACHA20_POLY1305_SHA256,
    ] {
        let s = setup(
            &[&rustls::version::TLS13],
            Some(vec![suite]),
            Server::Stateful,
        );
        let mut cap = Capture::new();
        session(&mut cap, &s, 1, |_| {});
        // rustls names TLS 1.3 suites `TLS13_...`; the IANA name is `TLS_...`.
        let name = format!("{:?}", suite.suite()).replacen("TLS13_", "TLS_", 1);
        let a = analyze(&cap, Some(&s.secrets.nss(|_, _| false)));
        assert_eq!(a.exchanges(), ok_rows(0, 1, &METHODS), "{name}");
        assert_eq!(a.decryption(), ["decrypted"], "{name}");
        let facts = &a.conns[0];
        assert_eq!(facts.cipher.as_deref(), Some(name.as_str()));
        assert_eq!(facts.version.as_deref(), Some("TLS 1.3"));
        assert_eq!(facts.sni.as_deref(), Some(SNI));
        assert_eq!(facts.alpn_offered, [ArcStr::from("http/1.1")]);
        assert_eq!(
            facts.alpn.as_deref(),
            Some("http/1.1"),
            "chosen ALPN from EncryptedExtensions"
        );
        assert_eq!(a.resumed(), [Some(false)]);
        a.check_accounting(&s.secrets);
        let undecrypted = &a.summary["tls_bytes"]["undecrypted"];
        assert!(
            undecrypted.as_object().unwrap().values().all(|v| v == 0),
            "{name}: {undecrypted}"
        );

        let none = analyze(&cap, None);
        assert!(none.rows.is_empty(), "{name}: rows without keys");
        assert_eq!(none.decryption(), ["no_key"]);
        assert_eq!(none.summary["tls_bytes"]["application"], 0);
        none.check_accounting(&s.secrets);
    }
}

#[test]
fn tls13_key_update_both_ways() {
    let s = setup(&[&rustls::version::TLS13], None, Server::Stateful);
    let mut cap = Capture::new();
    session(&mut cap, &s, 1, |tls| {
        tls.client.refresh_traffic_keys().unwrap();
        tls.server.refresh_traffic_keys().unwrap();
    });
    let a = analyze(&cap, Some(&s.secrets.nss(|_, _| false)));
    // The last tool call travels under the updated keys in both directions.
    assert_eq!(a.exchanges(), ok_rows(0, 1, &METHODS));
    assert_eq!(a.decryption(), ["decrypted"]);
    assert_eq!(a.summary["anomalies"].get("tls.key_update_failed"), None);
    a.check_accounting(&s.secrets);
}

/// Two connections with one client configuration: the second resumes the first's session.
fn resumed_pair(s: &Setup) -> (Capture, usize) {
    let mut cap = Capture::new();
    session(&mut cap, s, 1, |_| {});
    let first_secrets = s.secrets.len();
    cap.wait_ms(10);
    let mut tls = Tls::connect(&mut cap, s);
    tls.pump(&mut cap);
    let (req, res) = tool_call(4);
    tls.exchange(&mut cap, &req, &res);
    let resumed = tls.client.handshake_kind() == Some(rustls::HandshakeKind::Resumed);
    assert!(
        resumed,
        "rustls did not resume: {:?}",
        tls.client.handshake_kind()
    );
    tls.close(&mut cap);
    (cap, first_secrets)
}

#[test]
fn tls13_resumption_with_psk() {
    for server in [Server::Stateful, Server::Tickets] {
        let s = setup(&[&rustls::version::TLS13], None, server);
        let (cap, _) = resumed_pair(&s);
        let a = analyze(&cap, Some(&s.secrets.nss(|_, _| false)));
        let mut want = ok_rows(0, 1, &METHODS);
        want.extend(ok_rows(1, 4, &["tools/call"]));
        assert_eq!(a.exchanges(), want);
        assert_eq!(a.decryption(), ["decrypted", "decrypted"]);
        assert_eq!(a.resumed(), [Some(false), Some(true)], "PSK resumption");
        a.check_accounting(&s.secrets);
    }
}

#[test]
fn tls12_resumption_master_secret_from_the_earlier_handshake() {
    for (server, how) in [
        (Server::Stateful, "session id"),
        (Server::Tickets, "session ticket"),
    ] {
        for suite in [
            provider::cipher_suite::TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256,
            provider::cipher_suite::TLS_ECDHE_RSA_WITH_AES_256_GCM_SHA384,
            provider::cipher_suite::TLS_ECDHE_RSA_WITH_CHACHA20_POLY1305_SHA256,
        ] {
            let s = setup(&[&rustls::version::TLS12], Some(vec![suite]), server);
            let (cap, first) = resumed_pair(&s);
            let name = format!("{how}, {:?}", suite.suite());
            // The resumed connection's CLIENT_RANDOM line left out: its master secret must come
            // from the first handshake, found by session id or ticket.
            let keys = s.secrets.nss(|i, _| i >= first);
            assert_eq!(keys.matches("CLIENT_RANDOM").count(), 1, "{name}");
            let a = analyze(&cap, Some(&keys));
            let mut want = ok_rows(0, 1, &METHODS);
            want.extend(ok_rows(1, 4, &["tools/call"]));
            assert_eq!(a.exchanges(), want, "{name}");
            assert_eq!(a.decryption(), ["decrypted", "decrypted"], "{name}");
            assert_eq!(a.resumed(), [Some(false), Some(true)], "{name}");
            let facts = &a.conns[1];
            assert_eq!(facts.version.as_deref(), Some("TLS 1.2"));
            assert_eq!(facts.alpn.as_deref(), Some("http/1.1"));
            a.check_accounting(&s.secrets);

            // Without the first connection's line neither is decrypted.
            let none = analyze(&cap, Some(&s.secrets.nss(|_, _| true)));
            assert!(none.rows.is_empty(), "{name}");
            assert_eq!(none.decryption(), ["no_key", "no_key"], "{name}");
            none.check_accounting(&s.secrets);
        }
    }
}

#[test]
fn tls13_early_data_with_and_without_its_secret() {
    let s = setup(&[&rustls::version::TLS13], None, Server::EarlyData);
    let mut cap = Capture::new();
    session(&mut cap, &s, 1, |_| {});
    cap.wait_ms(10);
    let first = s.secrets.len();
    let mut tls = Tls::connect(&mut cap, &s);
    let (req, res) = tool_call(4);
    let mut early = tls.client.early_data().expect("0-RTT offered");
    early.write_all(&req).unwrap();
    tls.pump(&mut cap);
    assert!(
        tls.client.is_early_data_accepted(),
        "server took the 0-RTT data"
    );
    assert!(String::from_utf8_lossy(&tls.server_read).contains("tools/call"));
    tls.server.writer().write_all(&res).unwrap();
    tls.pump(&mut cap);
    let (req, res) = tool_call(5);
    tls.exchange(&mut cap, &req, &res);
    tls.close(&mut cap);

    let keys = s.secrets.nss(|_, _| false);
    assert!(keys.contains("CLIENT_EARLY_TRAFFIC_SECRET"));
    let a = analyze(&cap, Some(&keys));
    let mut want = ok_rows(0, 1, &METHODS);
    want.extend(ok_rows(1, 4, &["tools/call", "tools/call"]));
    assert_eq!(a.exchanges(), want, "the 0-RTT request is decrypted");
    assert_eq!(a.decryption(), ["decrypted", "decrypted"]);
    assert_eq!(a.resumed(), [Some(false), Some(true)]);
    assert!(a.conns[1].early_data_offered);
    a.check_accounting(&s.secrets);
    let undecrypted = &a.summary["tls_bytes"]["undecrypted"];
    assert!(
        undecrypted.as_object().unwrap().values().all(|v| v == 0),
        "{undecrypted}"
    );

    // Without the early secret, the 0-RTT bytes are counted as such and the rest decrypted.
    let keys = s
        .secrets
        .nss(|i, label| i >= first && label == "CLIENT_EARLY_TRAFFIC_SECRET");
    let a = analyze(&cap, Some(&keys));
    let rows = a.exchanges();
    assert!(
        rows.contains(&ok_rows(1, 5, &["tools/call"])[0]),
        "{rows:?}"
    );
    assert!(
        !rows.iter().any(|r| r.2 == "4"),
        "no row for the 0-RTT request: {rows:?}"
    );
    let early = a.summary["tls_bytes"]["undecrypted"]["no_early_key"]
        .as_u64()
        .unwrap_or(0);
    assert!(
        early >= req_len(4),
        "0-RTT bytes counted: {}",
        a.summary["tls_bytes"]
    );
    a.check_accounting(&s.secrets);
}

fn req_len(id: u64) -> u64 {
    tool_call(id).0.len() as u64
}
