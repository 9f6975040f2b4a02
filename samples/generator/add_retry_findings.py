#!/usr/bin/env python3
"""Adds `retry_findings` (report-schema 4b) to truth files recorded before it existed.

usage: python add_retry_findings.py [samples dir]

The recordings stay as they are (byte-identical); only their truth files gain the field, placed
right after `retry_origin`. The findings come from hygiene.judge (the rules the new recordings use)
fed with what the older truth entries and the generator's servers say, since the relay logs of
those runs are gone:
- tool safety: no tool of ts/server.mjs (echo, fail, slow, boom) or py/server.py (echo, fail, slow,
  approve) was registered with annotations, and raw_server.py has no tools/list, so no tool is
  declared safe; checked: no capture contains the bytes `"annotations"`;
- Retry-After: the older proxy never sent one and no server does; checked: no capture contains
  `retry-after` in any case;
- error codes of earlier attempts: the JSON-RPC code named in the entry's reason, none for the
  proxy's injected empty-bodied 503s and the OAuth 401s (body {"error","error_description"}), and
  KNOWN_CODES below for the rest;
- params: every linked pair is equivalent by construction (report-schema 4 links only equivalent
  requests), so they compare equal here;
- timing: none is needed as long as no chain reaches attempt 3 (asserted); entry order stands in for
  time where the rules ask whether a tools/list came before an attempt.
Files that already carry `retry_findings` on every entry (the recordings made since) are left alone.
"""

import json
import re
import sys
from pathlib import Path

import hygiene

SAMPLES = Path(sys.argv[1]) if len(sys.argv) > 1 else Path(__file__).resolve().parent.parent
# ts/server.mjs answers a POST with an unknown Mcp-Session-Id with 404 and JSON-RPC error -32001
KNOWN_CODES = {("session-expired-reinit.truth.json", 7): -32001}


def error_code(name, e):
    m = re.search(r"JSON-RPC error (-?\d+)", e["reason"])
    if m:
        return int(m.group(1))
    if e["outcome"] not in ("HTTP_ERROR", "JSONRPC_ERROR"):
        return None
    if (name, e["n"]) in KNOWN_CODES:
        return KNOWN_CODES[(name, e["n"])]
    if "injected by the fault proxy (empty body)" in e["reason"] or e["http_status"] == 401:
        return None
    raise SystemExit(f"{name} entry {e['n']}: error code of an earlier attempt unknown; add it to KNOWN_CODES")


class EveryToolUnannotated(dict):
    """A tools/list result of these servers: whatever tool is asked for, it was listed without annotations."""

    def __contains__(self, name):
        return True

    def __getitem__(self, name):
        return {}


def with_findings(entry, findings):
    out = {}
    for k, v in entry.items():
        if k != "retry_findings":
            out[k] = v
        if k == "retry_origin":
            out["retry_findings"] = findings
    return out


def main():
    for tf in sorted(SAMPLES.glob("*.truth.json")):
        text = tf.read_text()
        doc = json.loads(text)
        if all("retry_findings" in e for e in doc["entries"]):
            print(f"{tf.name}: has retry_findings, left alone")
            continue
        assert json.dumps(doc, indent=1) + "\n" == text, f"{tf.name}: not in the generator's format"
        raw = (SAMPLES / doc["capture"]).read_bytes()
        if b'"annotations"' in raw or re.search(rb"retry-after", raw, re.I):
            raise SystemExit(f"{tf.name}: the capture has annotations or Retry-After: record it again instead")
        linked = {e["retry_of"] for e in doc["entries"] if e["retry_of"]}
        attempts = [hygiene.Attempt(
            n=e["n"], retry_of=e["retry_of"], rpc_method=e["rpc_method"], tool=e["tool_name"], endpoint="mcp",
            outcome=e["outcome"], http_status=e["http_status"], t_req=float(e["n"]),  # order only, not time
            error_code=error_code(tf.name, e) if e["n"] in linked else None,
            continuation=e["continuation_of"] is not None,
            resumption=e["http_method"] == "GET" and e["retry_of"] is not None) for e in doc["entries"]]
        by_n = {a.n: a for a in attempts}
        for a in attempts:
            if a.retry_of and by_n[a.retry_of].retry_of and not a.resumption:
                raise SystemExit(f"{tf.name} entry {a.n}: attempt 3 or later needs the relay log's timing")
        # entry order stands in for time: only "was a tools/list before this attempt" is asked of it
        listings = [hygiene.Listing(t=float(e["n"]), endpoint="mcp", tools=EveryToolUnannotated(), n=e["n"])
                    for e in doc["entries"] if e["rpc_method"] == "tools/list" and e["outcome"] == "RPC_SUCCESS"]
        hygiene.judge(attempts, listings)
        hygiene.apply(doc["entries"], attempts)
        doc["entries"] = [with_findings(e, e["retry_findings"]) for e in doc["entries"]]
        tf.write_text(json.dumps(doc, indent=1) + "\n")
        found = {e["n"]: e["retry_findings"] for e in doc["entries"] if e["retry_findings"]}
        print(f"{tf.name}: retry_findings added, {found or 'none'}")


if __name__ == "__main__":
    main()
