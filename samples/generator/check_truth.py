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

usage: python check_truth.py [samples dir]     exit 1 on any mismatch
"""

import json
import re
import subprocess
import sys
from collections import Counter
from pathlib import Path

SAMPLES = Path(sys.argv[1]) if len(sys.argv) > 1 else Path(__file__).resolve().parent.parent


def tshark(capture, port, fields, display):
    cmd = ["tshark", "-r", str(capture), "-d", f"tcp.port=={port},http", 
           "-Y", display, "-T", "fields", "-E", "separator=\t", *sum((["-e", f] for f in fields), [])]
    out = subprocess.run(cmd, capture_output=True, text=True, timeout=60, check=True).stdout
    return [line.split("\t") for line in out.splitlines() if line.strip()]


def wire_http(capture, port):
    reqs = tshark(capture, port, ["frame.number", "http.request.method", "http.request.uri"], "http.request")
    resps = tshark(capture, port, ["http.request_in", "http.response.code"], "http.response")
    status = {int(r[0]): int(r[1]) for r in resps if r[0]}
    return [(m, u, status.get(int(f))) for f, m, u in reqs]


def wire_raw(capture, port):
    """Snap-length-cut captures: parse request/status lines from TCP payload starts, per stream."""
    rows = tshark(capture, port, ["tcp.stream", "tcp.srcport", "tcp.payload"], "tcp.len > 0")
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


def main():
    bad = 0
    for tf in sorted(SAMPLES.glob("*.truth.json")):
        doc = json.loads(tf.read_text())
        cap = SAMPLES / doc["capture"]
        want = [(e["http_method"], e["path"], e["http_status"]) for e in doc["entries"]]
        if cap.suffix == ".har":
            got = check_har(doc, cap)
        else:
            got = wire_http(cap, doc["server_port"])
        same = (lambda g: Counter(g) == Counter(want)) if doc.get("order_may_interleave") else (lambda g: g == want)
        ok = same(got)
        how = "tshark http"
        if not ok and cap.suffix != ".har":
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
