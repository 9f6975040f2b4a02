#!/usr/bin/env python3
"""Checks every samples/*.truth.json against its capture with tshark (never with mcp-trace).

For each capture: the HTTP requests tshark sees on the server port (method, path, in order of
the request's frame) must equal the truth entries' http_method/path in order, and the status of
each response (matched through http.request_in) must equal the entry's http_status (null when
tshark saw no response). Captures whose truth says order_may_interleave compare the requests as
a multiset (concurrent clients: the frame that completes a request is not always in first-byte
order). When tshark's HTTP dissector disagrees (it stalls on SSE bodies that never end, and a
small snap length hides headers), requests and status lines are read from the first bytes of each
TCP payload (tshark -e tcp.payload) instead, and the line says which reading matched. HAR truth files are checked
against the HAR's entries instead.

TLS captures (a `<stem>.keys` key log beside the capture, named in the truth's `keylog`): tshark
decrypts with `-o tls.keylog_file:` and must list every request and response of the entries on
the connections the truth calls `decrypted` (its `connections` list says which entries travelled on
which tcp.stream); where the HTTP dissector misses one (it waits for a chunked body that a client
cut short), the request/status lines are read per connection from tshark's decrypted stream
(`-z follow,tls,raw,N`) instead. Every `no_key` connection must give tshark no HTTP and no
decrypted bytes at all, and must carry TLS application data (it is not just empty). A truth with
`secrets_embedded` (a pcapng with a Decryption Secrets Block) is checked the same way with no key
log file: tshark uses the embedded secrets.

Gateway captures (a truth with `server_ports`: several legs in one capture, each entry with its
`server_addr`) are checked per port: the entries sent to that port, in order, against tshark's HTTP
dissector restricted to that port (or the TCP payloads, as above); a port in the truth's
`http2_ports` is read per stream with tshark's HTTP/2 dissector (h2_wire.py), decrypted with the
truth's `keylog` when it has one. The links (`forwarded_from`, `retry_of`) must point backwards, and
a copy must be sent to another port than its original. The entries' order across legs must be the order of the
requests' first frames (the request line's segment; for HTTP/2 the stream's first frame).

usage: python check_truth.py [samples dir]     exit 1 on any mismatch
"""

import json
import re
import subprocess
import sys
import tempfile
from collections import Counter
from pathlib import Path

import h2_wire

SAMPLES = Path(sys.argv[1]) if len(sys.argv) > 1 else Path(__file__).resolve().parent.parent


def tshark(capture, port, fields, display, only_port=False):
    if only_port:  # a capture with several legs: this port's packets only
        display = f"({display}) && tcp.port=={port}"
    cmd = ["tshark", "-r", str(capture), "-d", f"tcp.port=={port},http", 
           "-Y", display, "-T", "fields", "-E", "separator=\t", *sum((["-e", f] for f in fields), [])]
    out = subprocess.run(cmd, capture_output=True, text=True, timeout=60, check=True).stdout
    return [line.split("\t") for line in out.splitlines() if line.strip()]


def wire_http(capture, port, only_port=False):
    reqs = tshark(capture, port, ["frame.number", "http.request.method", "http.request.uri"], "http.request", only_port)
    resps = tshark(capture, port, ["http.request_in", "http.response.code"], "http.response", only_port)
    status = {int(r[0]): int(r[1]) for r in resps if r[0]}
    return [(m, u, status.get(int(f))) for f, m, u in reqs]


def wire_raw(capture, port, only_port=False):
    """Snap-length-cut captures: parse request/status lines from TCP payload starts, per stream."""
    rows = tshark(capture, port, ["tcp.stream", "tcp.srcport", "tcp.payload"], "tcp.len > 0", only_port)
    out, pending = [], {}
    for stream, sport, payload in rows:
        text = bytes.fromhex(payload.replace(":", "")).decode("latin-1")
        m = re.match(r"(GET|POST|DELETE|PUT|OPTIONS) (\S+) HTTP/1\.1\r\n", text)
        if m and int(sport) != port:
            out.append([m.group(1), m.group(2), None])
            pending.setdefault(stream, []).append(len(out) - 1)
            continue
        s = re.match(r"HTTP/1\.1 (\d{3}) ", text)
        if s and int(sport) == port and pending.get(stream):
            out[pending[stream].pop(0)][2] = int(s.group(1))
    return [tuple(x) for x in out]


def keylog_opt(keys):
    return ["-o", f"tls.keylog_file:{keys}"] if keys else []


def tls_http(capture, keys):
    """(tcp.stream, method, uri, status) per decrypted request, in request frame order."""
    base = ["tshark", "-r", str(capture), *keylog_opt(keys), "-T", "fields", "-E", "separator=\t"]

    def rows(display, fields):
        out = subprocess.run(base + ["-Y", display, *sum((["-e", f] for f in fields), [])],
                             capture_output=True, text=True, timeout=60, check=True).stdout
        return [line.split("\t") for line in out.splitlines() if line.strip()]
    reqs = rows("http.request", ["frame.number", "tcp.stream", "http.request.method", "http.request.uri"])
    status = {int(f): int(c) for f, c in rows("http.response", ["http.request_in", "http.response.code"]) if f}
    return [(int(st), m, u, status.get(int(f))) for f, st, m, u in reqs]


def tls_follow(capture, keys, stream):
    """Request/status lines from tshark's decrypted TLS stream of one connection, in stream order."""
    out = subprocess.run(["tshark", "-r", str(capture), *keylog_opt(keys), "-q",
                          "-z", f"follow,tls,raw,{stream}"], capture_output=True, text=True, timeout=60, check=True).stdout
    got, blobs = [], [ln.strip() for ln in out.splitlines() if re.fullmatch(r"\s*[0-9a-f]+", ln)]
    for blob in blobs:
        text = bytes.fromhex(blob).decode("latin-1")
        m = re.match(r"(GET|POST|DELETE|PUT|OPTIONS) (\S+) HTTP/1\.1\r\n", text)
        if m:
            got.append([m.group(1), m.group(2), None])
        s = re.match(r"HTTP/1\.1 (\d{3}) ", text)
        if s and got and [g for g in got if g[2] is None]:
            [g for g in got if g[2] is None][0][2] = int(s.group(1))
    return [tuple(g) for g in got], len(blobs)


def check_tls(doc, cap, keys):
    """(ok, how, got, want) for a TLS capture with its key log."""
    by_n = {e["n"]: e for e in doc["entries"]}
    stream_of = {n: c["tcp_stream"] for c in doc["connections"] for n in c["entries"]}
    dec = [c for c in doc["connections"] if c["decryption"] == "decrypted"]
    nokey = [c for c in doc["connections"] if c["decryption"] == "no_key"]
    want = [(stream_of[e["n"]], e["http_method"], e["path"], e["http_status"]) for e in doc["entries"]
            if stream_of[e["n"]] in {c["tcp_stream"] for c in dec}]
    if sorted(stream_of) != sorted(by_n):
        return False, "connections do not cover the entries", [], want
    got = tls_http(cap, keys)
    ok, how = got == want, "tshark http, decrypted"
    if not ok:  # per connection from the decrypted stream
        got = []
        ok = True
        for c in dec:
            lines, _ = tls_follow(cap, keys, c["tcp_stream"])
            got += [(c["tcp_stream"], *x) for x in lines]
            ok &= lines == [tuple(by_n[n][k] for k in ("http_method", "path", "http_status")) for n in c["entries"]]
        want = [(c["tcp_stream"], *(by_n[n][k] for k in ("http_method", "path", "http_status"))) for c in dec for n in c["entries"]]
        how = "tshark follow,tls per connection"
    for c in nokey:
        lines, blobs = tls_follow(cap, keys, c["tcp_stream"])
        leaked = [g for g in tls_http(cap, keys) if g[0] == c["tcp_stream"]]
        has_data = subprocess.run(["tshark", "-r", str(cap), "-Y", f"tcp.stream=={c['tcp_stream']} && (tls.record.opaque_type==23 || tls.record.content_type==23)",
                                   "-T", "fields", "-e", "frame.number"], capture_output=True, text=True, timeout=60).stdout.split()
        if lines or blobs or leaked or not has_data:
            ok = False
        how += f"; no_key stream {c['tcp_stream']}: {blobs} decrypted blobs, {len(has_data)} frames of application data"
    removed = doc.get("missing_key", {}).get("removed_to")
    if removed:  # with the removed lines added back, the no_key connection gives exactly its entries
        both = Path(tempfile.mkdtemp()) / "both.keys"
        both.write_text(Path(keys).read_text() + (cap.parent / removed).read_text())
        for c in nokey:
            lines, _ = tls_follow(cap, both, c["tcp_stream"])
            ok &= lines == [tuple(by_n[n][k] for k in ("http_method", "path", "http_status")) for n in c["entries"]]
            how += f" ({len(lines)} requests with {removed} added)"
    return ok, how, got, want


def check_har(truth_doc, har_path):
    """HAR entries for the MCP endpoint paths, in the HAR's order; status 0 (none) -> None.

    Entries for other paths (the page itself in the Chromium HAR) are not MCP traffic and are
    not in the truth."""
    paths = {e["path"] for e in truth_doc["entries"]}
    entries = json.loads(har_path.read_text())["log"]["entries"]
    # mitmproxy writes entries when flows finish (a long GET stream comes late): use start order
    entries = sorted(entries, key=lambda e: e["startedDateTime"])
    wire = []
    for e in entries:
        path = re.sub(r"^https?://[^/]+", "", e["request"]["url"])
        if path in paths:
            wire.append((e["request"]["method"], path, e["response"]["status"] or None))
    return wire


def check_legs(doc, cap):
    """(ok, how, got, want) for a capture of several legs (gateway recordings): per server port."""
    keys = cap.parent / doc["keylog"] if doc.get("keylog") else None
    ok, how, got_all, want_all = True, [], [], []
    for port in doc["server_ports"]:
        want = [(port, e["http_method"], e["path"], e["http_status"]) for e in doc["entries"]
                if int(e["server_addr"].rsplit(":", 1)[1]) == port]
        if port in doc.get("http2_ports", []):
            got = [(port, w["method"], w["path"], w["status"]) for w in h2_wire.exchanges(cap, port, keys)]
            what = "tshark http2 streams" + (", decrypted with the keylog" if keys else "")
        else:
            got = [(port, *x) for x in wire_http(cap, port, only_port=True)]
            what = "tshark http"
            if got != want:
                got = [(port, *x) for x in wire_raw(cap, port, only_port=True)]
                what = "tshark tcp.payload"
        ok &= got == want
        how.append(f"port {port}: {len(want)} by {what}")
        got_all += got
        want_all += want
    # across legs: the entries' order is the order of the requests' first frames (plaintext ports: the frame
    # whose TCP payload starts with the request line; HTTP/2 ports: the stream's first frame, h2_wire.py)
    firsts = []
    for port in doc["server_ports"]:
        if port in doc.get("http2_ports", []):
            firsts += [(w["first_frame"], port) for w in h2_wire.exchanges(cap, port, keys)]
            continue
        for frame, sport, payload in tshark(cap, port, ["frame.number", "tcp.srcport", "tcp.payload"],
                                            "tcp.len > 0", only_port=True):
            text = bytes.fromhex(payload.replace(":", ""))[:12].decode("latin-1")
            if int(sport) != port and re.match(r"(GET|POST|DELETE|PUT|OPTIONS) ", text):
                firsts.append((int(frame), port))
    order = [p for _, p in sorted(firsts)]
    if order != [int(e["server_addr"].rsplit(":", 1)[1]) for e in doc["entries"]]:
        ok = False
        how.append("order across legs differs from the truth")
    else:
        how.append("order across legs as in the truth")
    by_n = {e["n"]: e for e in doc["entries"]}
    for e in doc["entries"]:
        f = e.get("forwarded_from")
        if f is not None and (not 1 <= f < e["n"] or by_n[f]["server_addr"] == e["server_addr"]):
            ok = False
    return ok, "; ".join(how), got_all, want_all


def main():
    bad = 0
    for tf in sorted(SAMPLES.glob("*.truth.json")):
        doc = json.loads(tf.read_text())
        cap = SAMPLES / doc["capture"]
        want = [(e["http_method"], e["path"], e["http_status"]) for e in doc["entries"]]
        keys = cap.with_suffix(".keys")
        tls = keys.exists() or doc.get("secrets_embedded")
        h2 = doc.get("requires") == "http2"
        legs = "server_ports" in doc
        if legs:
            ok, how, got, want = check_legs(doc, cap)
            tls = True  # (already judged: skip the single-port comparisons below)
            h2 = False
        elif h2:  # per stream from tshark's HTTP/2 dissector (h2_wire.py), decrypted with the key log if any
            got = [(w["method"], w["path"], w["status"])
                   for w in h2_wire.exchanges(cap, doc["server_port"], keys if keys.exists() else None)]
            tls = False
        elif tls:
            ok, how, got, want = check_tls(doc, cap, keys if keys.exists() else None)
            if doc.get("secrets_embedded"):
                how += ", secrets from the pcapng's Decryption Secrets Block"
        elif cap.suffix == ".har":
            got = check_har(doc, cap)
        else:
            got = wire_http(cap, doc["server_port"])
        same = (lambda g: Counter(g) == Counter(want)) if doc.get("order_may_interleave") else (lambda g: g == want)
        if not tls:
            ok = same(got)
            how = "tshark http2 streams" if h2 else "tshark http"
        if not ok and cap.suffix != ".har" and not tls and not h2:
            # tshark's HTTP dissector waits for the end of a chunked SSE body that never ends (cut or
            # still-open streams) and then misses later requests on that connection; snap-length
            # cuts hide headers. Read request/status lines from the TCP payloads instead.
            got = wire_raw(cap, doc["server_port"])
            ok = same(got)
            how = "tshark tcp.payload"
        if cap.suffix == ".har":
            how = "HAR entries by startedDateTime"
        # entry numbers must be 1..n and retry/continuation links must point backwards
        for e in doc["entries"]:
            for link in ("retry_of", "continuation_of"):
                if e[link] is not None and not 1 <= e[link] < e["n"]:
                    ok = False
        print(f"{'ok ' if ok else 'BAD'} {tf.name}: {len(want)} truth entries, {len(got)} on the wire ({how})")
        if not ok:
            bad += 1
            for i in range(max(len(got), len(want))):
                g = got[i] if i < len(got) else None
                w = want[i] if i < len(want) else None
                print(f"   {'  ' if g == w else '!='} wire={g} truth={w}")
    print(f"{len(list(SAMPLES.glob('*.truth.json'))) - bad} passed, {bad} failed")
    sys.exit(1 if bad else 0)


if __name__ == "__main__":
    main()
