#!/usr/bin/env python3
"""Encodes real header lists with python-hyper's HPACK encoder (`pip install hpack`) into
stories in hpack-test-case's JSON format, for the decoder's corpus test.

Header lists: every request and every response of the HAR files under the corpus directory
(default /work/shared/corpus/har, mitmproxy's test HARs; one story per file and direction,
pseudo-header fields added as HTTP/2 sends them, credentials replaced by stand-ins of the
same length), and the header lists of the stories in ../hpack-test-case.
Each list sequence is encoded in several variants (directories):

  huffman-4096     Huffman on, the default 4096-byte table
  raw-4096         Huffman off
  huffman-256      a 256-byte table: constant eviction
  raw-0            a 0-byte table: no dynamic entries at all
  huffman-changes  SETTINGS_HEADER_TABLE_SIZE changed every two blocks (4096, 1024, 0, 8192,
                   512, 65536), some changes signalled twice (the smallest, then the final)
  never-indexed    cookie, authorization and set-cookie as never-indexed literals, 65536 table

Usage: python3 make.py [HAR_DIR]   (run from this directory; rewrites the variant folders)
"""

import glob
import hashlib
import json
import os
import re
import shutil
import sys
from urllib.parse import urlsplit

import hpack

HERE = os.path.dirname(os.path.abspath(__file__))
SENSITIVE = {"cookie", "authorization", "set-cookie"}
# Credentials in the HAR files (tokens, API keys, session cookies) are not copied: every run of
# 8 or more token characters in these fields becomes hex of the same length, derived from it.
CREDENTIALS = {"authorization", "proxy-authorization", "cookie", "set-cookie", "x-goog-api-key",
               "x-api-key", "api-key", "x-auth-token", "x-csrf-token"}
TOKEN = re.compile(r"[A-Za-z0-9+/._~-]{8,}")
# Connection-specific fields HTTP/2 forbids (RFC 9113 8.2.2); HAR files of HTTP/1.1 keep them.
HOP = {"connection", "keep-alive", "proxy-connection", "transfer-encoding", "upgrade", "host"}
CHANGES = [4096, 1024, 0, 8192, 512, 65536]


def har_sequences(har_dir):
    """(name, [header list]) per HAR file and direction."""
    out = []
    for path in sorted(glob.glob(os.path.join(har_dir, "**", "*.har"), recursive=True)):
        try:
            with open(path, encoding="utf-8-sig") as f:
                entries = json.load(f)["log"]["entries"]
        except (ValueError, KeyError):
            continue
        reqs, resps = [], []
        for e in entries:
            req = e.get("request") or {}
            if req.get("url"):
                u = urlsplit(req["url"])
                path_q = (u.path or "/") + ("?" + u.query if u.query else "")
                fields = [(":method", req.get("method", "GET")), (":scheme", u.scheme or "https"),
                          (":authority", u.netloc), (":path", path_q)]
                fields += plain(req.get("headers", []))
                reqs.append(fields)
            resp = e.get("response") or {}
            if resp.get("status"):
                resps.append([(":status", str(resp["status"]))] + plain(resp.get("headers", [])))
        rel = os.path.relpath(path, har_dir)
        if reqs:
            out.append(("har requests " + rel, reqs))
        if resps:
            out.append(("har responses " + rel, resps))
    return out


def plain(headers):
    fields = []
    for h in headers:
        name = h.get("name", "").lower()
        if not name or name.startswith(":") or name in HOP:
            continue
        value = h.get("value", "")
        if name in CREDENTIALS:
            value = TOKEN.sub(stand_in, value)
        fields.append((name, value))
    return fields


def stand_in(match):
    token = match.group(0)
    digest = hashlib.sha256(token.encode()).hexdigest()
    return (digest * (len(token) // 64 + 1))[:len(token)]


def story_sequences():
    out = []
    for path in sorted(glob.glob(os.path.join(HERE, "..", "hpack-test-case", "*", "story_*.json"))):
        with open(path) as f:
            cases = json.load(f)["cases"]
        lists = [[kv for h in c["headers"] for kv in h.items()] for c in cases]
        out.append(("hpack-test-case " + os.path.relpath(path, os.path.join(HERE, "..")), lists))
    return out


def encode(lists, huffman, sizes, sensitive):
    """Cases of one story. `sizes(i)`: the SETTINGS values acknowledged before block i."""
    enc = hpack.Encoder()
    cases = []
    for i, fields in enumerate(lists):
        case = {"seqno": i}
        changes = sizes(i)
        for n in changes:
            enc.header_table_size = n
        if changes:
            case["header_table_size"] = changes[-1]
        wire_fields = [(n, v, sensitive and n in SENSITIVE) for n, v in fields]
        case["wire"] = enc.encode(wire_fields, huffman=huffman).hex()
        case["headers"] = [{n: v} for n, v in fields]
        cases.append(case)
    return cases


def changing(i):
    if i % 2:
        return []
    n = CHANGES[(i // 2) % len(CHANGES)]
    # Every third change is signalled as 0 then the value (RFC 7541 4.2: the smallest first).
    return [0, n] if (i // 2) % 3 == 2 and n else [n]


VARIANTS = {
    "huffman-4096": (True, lambda i: [], False),
    "raw-4096": (False, lambda i: [], False),
    "huffman-256": (True, lambda i: [256] if i == 0 else [], False),
    "raw-0": (False, lambda i: [0] if i == 0 else [], False),
    "huffman-changes": (True, changing, False),
    "never-indexed": (True, lambda i: [65536] if i == 0 else [], True),
}


def main():
    har_dir = sys.argv[1] if len(sys.argv) > 1 else "/work/shared/corpus/har"
    sequences = har_sequences(har_dir) + story_sequences()
    for variant, (huffman, sizes, sensitive) in VARIANTS.items():
        folder = os.path.join(HERE, variant)
        shutil.rmtree(folder, ignore_errors=True)
        os.makedirs(folder)
        for n, (source, lists) in enumerate(sequences):
            story = {
                "description": "python hpack %s, %s: %s" % (hpack.__version__, variant, source),
                "cases": encode(lists, huffman, sizes, sensitive),
            }
            with open(os.path.join(folder, "story_%02d.json" % n), "w") as f:
                json.dump(story, f, indent=0, ensure_ascii=False)
                f.write("\n")


if __name__ == "__main__":
    main()
