"""The `connections` list of a tls-* truth file, and key-log surgery for tls-missing-key.

What each connection negotiated comes from the TLS library that terminated it (proxy.py's
--conn-log: Python's ssl on the server side of the captured port); the capture is only used for
the order of connections (tshark's tcp.stream = order of first packet), the client random that
keys the secrets, and a cross-check of the cipher suite number in the ServerHello. Never mcp-trace.
"""

import json
import subprocess

# OpenSSL names (ssl.SSLObject.cipher()) -> IANA names and code points
SUITES = {
    "TLS_AES_128_GCM_SHA256": ("TLS_AES_128_GCM_SHA256", 0x1301),
    "TLS_AES_256_GCM_SHA384": ("TLS_AES_256_GCM_SHA384", 0x1302),
    "TLS_CHACHA20_POLY1305_SHA256": ("TLS_CHACHA20_POLY1305_SHA256", 0x1303),
    "ECDHE-RSA-AES128-GCM-SHA256": ("TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256", 0xC02F),
    "ECDHE-RSA-AES256-GCM-SHA384": ("TLS_ECDHE_RSA_WITH_AES_256_GCM_SHA384", 0xC030),
    "ECDHE-RSA-CHACHA20-POLY1305": ("TLS_ECDHE_RSA_WITH_CHACHA20_POLY1305_SHA256", 0xCCA8),
}
VERSIONS = {"TLSv1.2": "TLS 1.2", "TLSv1.3": "TLS 1.3"}


def _tshark(pcap, display, fields):
    cmd = ["tshark", "-r", str(pcap), "-Y", display, "-T", "fields", "-E", "separator=\t",
           *sum((["-e", f] for f in fields), [])]
    out = subprocess.run(cmd, capture_output=True, text=True, timeout=60, check=True).stdout
    return [line.split("\t") for line in out.splitlines() if line.strip()]


def wire_connections(pcap, port):
    """Per TCP connection (tcp.stream order): client port, client random, ServerHello suite, offered ALPN."""
    conns = {}
    for stream, src, sport, dst, dport in _tshark(pcap, "tcp.flags.syn==1 && tcp.flags.ack==0",
                                                  ["tcp.stream", "ip.src", "tcp.srcport", "ip.dst", "tcp.dstport"]):
        conns[int(stream)] = {"tcp_stream": int(stream), "client": f"{src}:{sport}", "server": f"{dst}:{dport}",
                              "client_port": int(sport), "client_random": None, "suite_on_wire": None,
                              "alpn_offered": None}
    for stream, rnd, alpn in _tshark(pcap, "tls.handshake.type==1",
                                     ["tcp.stream", "tls.handshake.random", "tls.handshake.extensions_alpn_str"]):
        c = conns[int(stream)]
        c["client_random"] = rnd.replace(":", "")
        c["alpn_offered"] = alpn.split(",") if alpn else []
    for stream, suite in _tshark(pcap, "tls.handshake.type==2", ["tcp.stream", "tls.handshake.ciphersuite"]):
        conns[int(stream)]["suite_on_wire"] = int(suite, 0)
    return [conns[k] for k in sorted(conns)]


class MissingSecrets(RuntimeError):
    """The client's key log lacks a connection the scenario did not strip (a recording to make again)."""


def connections(pcap, port, conn_log, records, entries, keys_path, no_key=()):
    """The truth's connections list. no_key: tcp_stream indexes whose secrets were removed."""
    by_port = {c["client_port"]: c for c in json.loads(conn_log.read_text())}
    entries_of = {}
    for e, rec in zip(entries, records):
        entries_of.setdefault(rec["client_port"], []).append(e["n"])
    out = []
    logged = keys_path.read_text().lower() if keys_path.exists() else ""
    for w in wire_connections(pcap, port):
        got = by_port.get(w["client_port"])
        if got is None or got["tls"] is None:
            raise RuntimeError(f"{pcap.name}: connection from port {w['client_port']} has no TLS facts in the relay log")
        tls = got["tls"]
        iana, code = SUITES[tls["cipher_openssl"]]
        if w["suite_on_wire"] != code:
            raise RuntimeError(f"{pcap.name}: stream {w['tcp_stream']}: ServerHello suite {w['suite_on_wire']:#x}, ssl said {iana}")
        version = VERSIONS[tls["version"]]
        missing = w["tcp_stream"] in no_key
        if not missing and w["client_random"] not in logged:
            raise MissingSecrets(f"{pcap.name}: the client's key log lacks the secrets of tcp_stream {w['tcp_stream']}")
        ns = entries_of.get(w["client_port"], [])
        row = {"tcp_stream": w["tcp_stream"], "client_addr": w["client"], "server_addr": w["server"],
               "decryption": "no_key" if missing else "decrypted", "tls_version": version, "tls_cipher": iana,
               "tls_sni": tls["sni"], "alpn": tls["alpn"], "alpn_offered": w["alpn_offered"],
               "tls_resumed": tls["resumed"], "client_random": w["client_random"],
               "http_exchanges": len(ns), "entries": ns}
        if missing and version == "TLS 1.3" and tls["alpn"] is not None:
            # TLS 1.3 sends the chosen ALPN in the encrypted EncryptedExtensions: unreadable without keys
            row["alpn"] = None
            row["alpn_negotiated"] = tls["alpn"]
        out.append(row)
    return out


def drop_secrets(keys_path, client_random, removed_path):
    """Moves every key log line of one connection (matched by client random) to removed_path
    (a second key log: with both, everything decrypts); returns how many."""
    lines = keys_path.read_text().splitlines(keepends=True)
    mine = [len(ln.split()) >= 2 and ln.split()[1].lower() == client_random.lower() for ln in lines]
    keys_path.write_text("".join(ln for ln, m in zip(lines, mine) if not m))
    removed_path.write_text("".join(ln for ln, m in zip(lines, mine) if m))
    return sum(mine)
