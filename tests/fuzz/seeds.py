#!/usr/bin/env python3
"""Write the seed corpus of every fuzz target from the project's samples,
fixtures and (when present) the shared reference corpus.

Usage: seeds.py REPO_ROOT OUT_DIR   (OUT_DIR/<target>/ is filled)

The structured targets read the record formats documented in
tests/fuzz/src/lib.rs; this script writes the same formats.
"""
import glob
import gzip
import hashlib
import json
import os
import re
import struct
import sys

MAX_SEED = 64 * 1024
LINK_TYPES = [1, 101, 228, 229, 0, 113, 276, 239, 108, 147]


def write(out, target, data):
    d = os.path.join(out, target)
    os.makedirs(d, exist_ok=True)
    name = hashlib.sha1(data).hexdigest()
    with open(os.path.join(d, name), "wb") as f:
        f.write(data)


def capture_files(root):
    pats = ["samples/*.pcap", "samples/*.pcapng"]
    files = [p for pat in pats for p in glob.glob(os.path.join(root, pat))]
    corpus = os.path.join(root, "..", "shared", "corpus")
    for ext in ("*.pcap", "*.pcapng", "*.pcap.gz"):
        files += glob.glob(os.path.join(corpus, "**", ext), recursive=True)
    return sorted(files)


def har_files(root):
    files = glob.glob(os.path.join(root, "samples", "*.har"))
    corpus = os.path.join(root, "..", "shared", "corpus")
    files += glob.glob(os.path.join(corpus, "**", "*.har"), recursive=True)
    return sorted(files)


def read_pcap(path):
    """(link_type, [(ts_us, orig_len, data)]) of a classic pcap, or None."""
    raw = open(path, "rb").read()
    if raw[:2] == b"\x1f\x8b":
        raw = gzip.decompress(raw)
    if len(raw) < 24:
        return None
    magic = raw[:4]
    if magic in (b"\xd4\xc3\xb2\xa1", b"\x4d\x3c\xb2\xa1"):
        e = "<"
    elif magic in (b"\xa1\xb2\xc3\xd4", b"\xa1\xb2\x3c\x4d"):
        e = ">"
    else:
        return None
    nano = magic in (b"\x4d\x3c\xb2\xa1", b"\xa1\xb2\x3c\x4d")
    link = struct.unpack(e + "I", raw[20:24])[0] & 0xFFFF
    pos, recs = 24, []
    while pos + 16 <= len(raw):
        sec, frac, incl, orig = struct.unpack(e + "IIII", raw[pos:pos + 16])
        pos += 16
        data = raw[pos:pos + incl]
        pos += incl
        us = sec * 1_000_000 + (frac // 1000 if nano else frac)
        recs.append((us, orig, data))
    return link, recs


def tcp_of(link, data):
    """(src, dst, seq, ack, flags, payload) of an Ethernet/raw IPv4/IPv6 TCP frame."""
    ip = None
    if link == 1 and len(data) >= 14:
        et, off = struct.unpack(">H", data[12:14])[0], 14
        while et == 0x8100 and len(data) >= off + 4:
            et, off = struct.unpack(">H", data[off + 2:off + 4])[0], off + 4
        if et in (0x0800, 0x86DD):
            ip = data[off:]
    elif link in (101, 228, 229, 12, 14):
        ip = data
    elif link == 113 and len(data) >= 16:
        ip = data[16:]
    elif link == 0 and len(data) >= 4:
        ip = data[4:]
    if not ip:
        return None
    v = ip[0] >> 4
    if v == 4 and len(ip) >= 20 and ip[9] == 6:
        ihl = (ip[0] & 15) * 4
        total = struct.unpack(">H", ip[2:4])[0] or len(ip)
        src, dst, tcp = ip[12:16], ip[16:20], ip[ihl:total]
    elif v == 6 and len(ip) >= 40 and ip[6] == 6:
        src, dst, tcp = ip[8:24], ip[24:40], ip[40:]
    else:
        return None
    if len(tcp) < 20:
        return None
    sp, dp, seq, ack = struct.unpack(">HHII", tcp[:12])
    doff = (tcp[12] >> 4) * 4
    return (src, sp), (dst, dp), seq, ack, tcp[13], tcp[doff:]


def frames_seeds(out, recs, link):
    sel = LINK_TYPES.index(link) if link in LINK_TYPES else 0
    for i in range(0, min(len(recs), 64), 8):
        seed = b""
        for _, orig, data in recs[i:i + 8]:
            data = data[:65535]
            seed += bytes([sel, min(max(orig - len(data), 0), 255)])
            seed += struct.pack("<H", len(data)) + data
        write(out, "decode_frame", seed)


def segment_seed(out, recs, link):
    eps, seed, last = {}, b"", None
    for us, orig, data in recs:
        t = tcp_of(link, data)
        if t is None:
            continue
        src, dst, seq, ack, fl, payload = t
        to_client = src[1] < dst[1]
        client = dst if to_client else src
        ep = eps.setdefault(client, len(eps) % 16)
        f = (fl & 2 and 1) | (fl & 16 and 2) | (fl & 1 and 4) | (fl & 4 and 8)
        f |= 0x10 if to_client else 0
        step = 0 if last is None else max(min(us - last, 2**31 - 1), -(2**31))
        last = us
        payload = payload[:65535]
        seed += struct.pack("<BBIIiH", f, ep, seq, ack, step, len(payload)) + payload
        if len(seed) > MAX_SEED:
            break
    if seed:
        write(out, "flow_segments", seed)


def data_ops(op, data):
    out = b""
    for i in range(0, len(data), 65535):
        piece = data[i:i + 65535]
        out += struct.pack("<BH", op, len(piece)) + piece
    return out


H2_PREFACE = b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n"


def conversation_seed_from_pcap(recs, link, strip_preface=False):
    """Payloads of the first TCP connection in capture order (stream 0); `strip_preface`:
    without the HTTP/2 client preface (the http2_frames target sends its own)."""
    first, seed = None, b""
    for _, _, data in recs:
        t = tcp_of(link, data)
        if t is None or not t[5]:
            continue
        src, dst = t[0], t[1]
        key = frozenset([src, dst])
        if first is None:
            first = key
        if key != first:
            continue
        payload = t[5]
        if strip_preface and H2_PREFACE in payload:
            payload = payload.replace(H2_PREFACE, b"", 1)
            strip_preface = False
        if payload:
            seed += data_ops(1 if src[1] < dst[1] else 0, payload)
        if len(seed) > MAX_SEED:
            break
    return seed


def unescape(line):
    out, i = bytearray(), 0
    while i < len(line):
        if line.startswith("\\x", i) and i + 4 <= len(line):
            out.append(int(line[i + 2:i + 4], 16))
            i += 4
        elif line.startswith("\\\\", i):
            out.append(0x5C)
            i += 2
        else:
            out += line[i].encode()
            i += 1
    return bytes(out)


def conversation_seed_from_t(path):
    seed, block, op, end = b"", None, None, None

    def flush():
        nonlocal seed, block
        if block is not None and block:
            seed += data_ops(op, block)
        block = None

    for line in open(path, encoding="utf-8").read().split("\n"):
        if block is None and line.startswith("#"):
            m = re.match(r"#end (\w+)", line)
            if m:
                end = m.group(1)
            continue
        if line in (">>>", "<<<"):
            flush()
            block, op = b"", 0 if line == ">>>" else 1
            continue
        m = re.match(r"^(><>|<><) (\d+)$", line)
        if m:
            flush()
            seed += struct.pack("<BI", 2 if m.group(1) == "><>" else 3, int(m.group(2)))
            continue
        if block is None:
            continue
        if line.endswith("\\") and not line.endswith("\\\\"):
            block += unescape(line[:-1])
        else:
            block += unescape(line) + b"\r\n"
    flush()
    if end == "fin":
        seed += b"\x04\x05"
    elif end == "rst":
        seed += b"\x06"
    return seed


def mcp_event_seeds(out):
    def req(conn, depth, body, mask=0x4D, session=0, method=0, uri=0):
        return struct.pack("<BBBhBBBBH", 0, conn, depth, 5, method, uri, mask, session, len(body)) + body

    def head(conn, depth, status=0, mask=0x05, session=0):
        return struct.pack("<BBBhBBB", 1, conn, depth, 5, status, mask, session)

    def body(conn, depth, data):
        return struct.pack("<BBBhH", 2, conn, depth, 5, len(data)) + data

    def end(conn, depth, e=0):
        return struct.pack("<BBBhB", 3, conn, depth, 5, e)

    init = b'{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"c","version":"1"}}}'
    init_res = b'{"jsonrpc":"2.0","id":1,"result":{"protocolVersion":"2025-06-18","capabilities":{"tools":{}},"serverInfo":{"name":"s","version":"1"}}}'
    call = b'{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"echo","arguments":{"x":1}}}'
    call_res = b'{"jsonrpc":"2.0","id":2,"result":{"content":[{"type":"text","text":"1"}],"isError":true}}'
    err = b'{"jsonrpc":"2.0","id":2,"error":{"code":-32602,"message":"bad"}}'
    notif = b'{"jsonrpc":"2.0","method":"notifications/initialized"}'
    sse = b"event: message\nid: 7\ndata: " + call_res + b"\n\n"
    seqs = [
        req(0, 1, init) + head(0, 1) + body(0, 1, init_res) + end(0, 1),
        req(0, 1, init) + head(0, 1) + body(0, 1, init_res) + end(0, 1)
        + req(0, 2, notif) + head(0, 2, status=1, mask=4) + end(0, 2)
        + req(0, 3, call) + head(0, 3, mask=0x06) + body(0, 3, sse) + end(0, 3, 1)
        + req(1, 1, call) + head(1, 1, status=5) + end(1, 1)
        + req(1, 2, call) + head(1, 2) + body(1, 2, err) + end(1, 2),
        req(2, 1, b"", mask=0x56, method=1, uri=0) + head(2, 1, mask=0x06) + body(2, 1, sse),
        req(3, 1, b"", method=1, uri=1, mask=0x40) + head(3, 1, mask=0x02)
        + body(3, 1, b"event: endpoint\ndata: /messages?session_id=abc\n\n")
        + req(3, 2, call, uri=2, mask=1) + head(3, 2, status=1, mask=0) + end(3, 2)
        + body(3, 1, b"event: message\ndata: " + call_res + b"\n\n"),
    ]
    for s in seqs:
        write(out, "mcp_events", b"\x00" + s)


def tls_keylog_of(path):
    """Key log text beside a TLS capture: X.keys, or the corpus folder's key log files."""
    base = re.sub(r"\.(pcapng|pcap)(\.gz)?$", "", path)
    if os.path.exists(base + ".keys"):
        return open(base + ".keys", "rb").read()
    d = os.path.dirname(path)
    text = b""
    for f in sorted(os.listdir(d)):
        if (f.endswith(".keys") or "keylog" in f) and ".removed" not in f:
            text += open(os.path.join(d, f), "rb").read() + b"\n"
    return text


def tls_stage_seeds(out, recs, link, keylog):
    """One seed per TCP connection (first 8): its key log, then its payloads on stream 0."""
    conns, order = {}, []
    for _, _, data in recs:
        t = tcp_of(link, data)
        if t is None:
            continue
        src, dst, _, _, fl, payload = t
        key = frozenset([src, dst])
        if key not in conns:
            # The SYN's sender is the client, else the first sender.
            client = dst if fl & 0x12 == 0x12 else src
            conns[key] = (client, b"")
            order.append(key)
        client, ops = conns[key]
        if payload and len(ops) < MAX_SEED:
            ops += data_ops(0 if src == client else 1, payload)
        if fl & 1:
            ops += bytes([4 if src == client else 5])
        conns[key] = (client, ops)
    keylog = keylog[:60000]
    for key in order[:8]:
        ops = conns[key][1]
        if ops:
            for flags in (0, 4):
                write(out, "tls_stage", bytes([flags]) + struct.pack("<H", len(keylog)) + keylog + ops)
            write(out, "tls_stage", b"\x01\x00\x00" + ops)
    for line in keylog.split(b"\n")[:4]:
        write(out, "tls_keylog", b"\x07\x00" + line + b"\n")
    if keylog:
        write(out, "tls_keylog", b"\x07\x10" + keylog[:MAX_SEED])
        pad = (4 - len(keylog) % 4) % 4
        data = keylog + b"\x00" * pad
        dsb = struct.pack("<IIII", 10, 16 + len(data) + 4, 0x544C534B, len(keylog)) + data
        dsb += struct.pack("<I", 16 + len(data) + 4)
        write(out, "tls_keylog", b"\x07\x01" + dsb[:MAX_SEED])


def main():
    root, out = sys.argv[1], sys.argv[2]
    for path in capture_files(root):
        raw = open(path, "rb").read()
        write(out, "capture_pcap", raw[:MAX_SEED])
        write(out, "end_to_end", raw[:MAX_SEED])
        parsed = read_pcap(path)
        if parsed:
            link, recs = parsed
            frames_seeds(out, recs, link)
            segment_seed(out, recs, link)
            if os.path.basename(path).startswith("tls") or os.sep + "tls" + os.sep in path:
                tls_stage_seeds(out, recs, link, tls_keylog_of(path))
            conv = conversation_seed_from_pcap(recs, link)
            if conv:
                write(out, "http_conversation", conv)
                write(out, "mcp_events", b"\x01" + conv)
    # HTTP/2 seeds from the shared corpus, when it is there.
    h2 = os.path.join(root, "..", "shared", "corpus", "http2")
    for path in sorted(glob.glob(os.path.join(h2, "*", "*.pcap"))):
        parsed = read_pcap(path)
        if parsed:
            conv = conversation_seed_from_pcap(parsed[1], parsed[0], strip_preface=True)
            if conv:
                write(out, "http2_frames", conv)
    for path in sorted(glob.glob(os.path.join(root, "tests", "fixtures", "http", "*.t"))):
        conv = conversation_seed_from_t(path)
        write(out, "http_conversation", conv)
        write(out, "mcp_events", b"\x01" + conv)
    bodies = set()
    for path in har_files(root):
        raw = open(path, "rb").read()
        write(out, "har_reader", raw[: 4 * MAX_SEED])
        write(out, "end_to_end", raw[: 4 * MAX_SEED])
        try:
            doc = json.loads(raw.decode("utf-8-sig"))
            for e in doc["log"]["entries"]:
                t = (e.get("request", {}).get("postData") or {}).get("text")
                if t:
                    bodies.add(t.encode())
                c = e.get("response", {}).get("content") or {}
                if c.get("text") and "event-stream" in (c.get("mimeType") or ""):
                    write(out, "sse", b"\x07" + c["text"].encode())
                elif c.get("text"):
                    bodies.add(c["text"].encode())
        except Exception as exc:  # a damaged HAR in the corpus is a seed too
            print(f"seeds: {path}: {exc}", file=sys.stderr)
    for b in sorted(bodies)[:200]:
        write(out, "jsonrpc_body", b[:MAX_SEED])
    for b in [
        b'[{"jsonrpc":"2.0","id":1,"method":"ping"},{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":1}}]',
        b'{"jsonrpc":"2.0","id":"a","result":{}}',
        b'{"jsonrpc":"2.0","id":null,"error":{"code":-32700,"message":"Parse error"}}',
        b'{"jsonrpc":"1.0","id":1.5,"method":7}',
        b"[]",
    ]:
        write(out, "jsonrpc_body", b)
    for b in [
        b"\x01event: message\r\nid: 1\r\ndata: {\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{}}\r\n\r\n",
        b"\x03\xef\xbb\xbfdata: a\ndata: b\n\n: comment\nretry: 3000\n\nid\nevent\ndata\n\n",
        b"\x02data: x\r\rdata: y\r\n\ndata: unterminated",
        b"\x05id: 1\x00\ndata:no space\nfoo: bar\n\n",
    ]:
        write(out, "sse", b)
    mcp_event_seeds(out)


if __name__ == "__main__":
    main()
