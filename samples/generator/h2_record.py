#!/usr/bin/env python3
"""Records the HTTP/2 samples (h2-*, h2c-*) and writes their truth files.

usage: ./record_h2.sh [SCENARIO ...]   (default: all; installs requirements-h2.txt, records, checks)

proxy.py relays HTTP/1.1 only, so here the server itself keeps the log: py/h2_server.py (the Python
SDK's server under hypercorn) records every exchange as the app saw it with an ASGI middleware, which
also makes the one 503. The truth joins three accounts, each checked against the others:
- the server's log: requests, statuses, bodies, times, the injected fault (truth.py reads it as it
  reads proxy.py's);
- the client's: what the scenario did (retries, give-ups) and, for the Python client, what httpx2
  says of each response (HTTP version, stream id, local port, TLS version/suite/ALPN);
- tshark's reading of the capture (h2_wire.py): connection, stream id, method, path, status, bodies,
  RST_STREAM. Entries are in wire order (the request's first frame).
"""

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import h2_wire
import hygiene
import tls_truth
import truth
from run_all import CERTS, GEN, PY, SAMPLES, WORK, CaptureLoss, lost_segments, read_jsonl, wait_port

# Until the analyzer has its HTTP/2 stage these live apart: every test that walks samples/ expects rows.
OUT = SAMPLES


class H2Run:
    all_procs = []  # every process started, so main() can kill leftovers of a failed scenario

    def __init__(self, name, port, tls=False):
        self.name, self.port, self.tls = name, port, tls
        self.dir = WORK / name
        self.dir.mkdir(parents=True, exist_ok=True)
        for f in self.dir.iterdir():
            f.unlink()
        OUT.mkdir(exist_ok=True)
        self.capture = OUT / f"{name}.pcap"
        self.keys = OUT / f"{name}.keys"
        if self.keys.exists():
            self.keys.unlink()
        self.server_log = self.dir / "server.json"
        self.procs, self.windows, self.made_by = [], [], []

    @property
    def url(self):
        return f"https://localhost:{self.port}/mcp" if self.tls else f"http://127.0.0.1:{self.port}/mcp"

    def spawn(self, cmd, logname):
        p = subprocess.Popen(cmd, cwd=GEN, stdout=open(self.dir / logname, "w"), stderr=subprocess.STDOUT,
                             start_new_session=True)
        self.procs.append(p)
        H2Run.all_procs.append(p)
        return p

    def server(self, fail_once=None):
        cmd = [PY, "py/h2_server.py", "--port", str(self.port), "--log", str(self.server_log), "--lifetime", "90"]
        if self.tls:
            cmd += ["--certfile", str(CERTS / "server.pem"), "--keyfile", str(CERTS / "server.key")]
        if fail_once:
            cmd += ["--fail-once", fail_once]
        self.spawn(cmd, "server.out")
        wait_port("127.0.0.1", self.port)
        self.made_by.append("Python SDK server (MCPServer, streamable HTTP) under hypercorn 0.18.0"
                            + (" (TLS, ALPN h2, http/1.1)" if self.tls else " (h2c)")
                            + (f", ASGI middleware answering the first POST containing {fail_once} with 503" if fail_once else ""))

    def capture_start(self):
        self.tcpdump = subprocess.Popen(["tcpdump", "-i", "lo", "--immediate-mode", "-w", str(self.capture), "-U",
                                         f"tcp port {self.port}"], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                                        text=True, start_new_session=True)
        self.procs.append(self.tcpdump)
        H2Run.all_procs.append(self.tcpdump)
        line = self.tcpdump.stderr.readline()
        if "listening on" not in line:
            raise RuntimeError("tcpdump did not start: " + line)
        time.sleep(0.3)

    def client_py(self, label, steps, mode):
        logf = self.dir / f"{label}.jsonl"
        cmd = [PY, "py/h2_client.py", "--url", self.url, "--h2", "tls" if self.tls else "h2c", "--steps", steps,
               "--mode", mode, "--log", str(logf), "--lifetime", "40"]
        if self.tls:
            cmd += ["--tls-ca", str(CERTS / "ca.pem"), "--keylog", str(self.keys)]
        t0 = time.time()
        subprocess.run(cmd, cwd=GEN, stdout=open(self.dir / f"{label}.out", "w"), stderr=subprocess.STDOUT,
                       timeout=60, check=True)
        self.windows.append((label, t0, time.time(), logf))
        self.made_by.append(f"Python SDK client (mode={mode}, httpx2.AsyncClient("
                            + ("http2=True, verify=ssl context with keylog_filename)" if self.tls else "http1=False, http2=True)"))

    def client_raw(self, label, mode):
        logf = self.dir / f"{label}.jsonl"
        t0 = time.time()
        subprocess.run([PY, "h2_raw_client.py", "--port", str(self.port), "--log", str(logf), "--mode", mode],
                       cwd=GEN, stdout=open(self.dir / f"{label}.out", "w"), stderr=subprocess.STDOUT, timeout=30,
                       check=True)
        self.windows.append((label, t0, time.time(), logf))
        self.made_by.append(f"h2_raw_client.py --mode {mode} (the h2 library, h2c prior knowledge, RST_STREAM CANCEL)")

    def manual(self, label, cmd):
        t0 = time.time()
        out = subprocess.run(cmd, capture_output=True, text=True, timeout=30)
        self.windows.append((label, t0, time.time(), None))
        (self.dir / f"{label}.out").write_text(" ".join(cmd) + "\n" + out.stdout + out.stderr)
        return out

    def stop(self):
        time.sleep(1.0)
        self.t_capture_end = time.time()
        self.tcpdump.send_signal(signal.SIGINT)
        self.tcpdump.wait(10)
        for p in self.procs:
            if p.poll() is None:
                os.killpg(p.pid, signal.SIGTERM)
        for p in self.procs:
            try:
                p.wait(5)
            except subprocess.TimeoutExpired:
                os.killpg(p.pid, signal.SIGKILL)

    def finish(self, description, annotate=None, expect_findings=None):
        self.stop()
        if lost_segments(self.capture):
            raise CaptureLoss(f"{self.capture.name}: tcpdump missed segments")
        server = json.loads(self.server_log.read_text())
        wire = h2_wire.exchanges(self.capture, self.port, self.keys if self.tls else None)
        records = match(server, wire, self.name)
        clients = {label: read_jsonl(logf) if logf else [] for label, _, _, logf in self.windows}

        def client_of(rec, sid):
            hits = [w[0] for w in self.windows if w[1] <= rec["t_req"] <= w[2]]
            if len(hits) != 1:
                raise RuntimeError(f"{self.name}: cannot tell which client sent {rec['method']} at {rec['t_req']}")
            return hits[0]

        entries = truth.build_entries(records, self.t_capture_end, client_of, {})
        for e, rec in zip(entries, records):
            w = rec["wire"]
            e["http_version"] = "HTTP/2"
            e["h2_stream"] = w["h2_stream"]
            e["tcp_stream"] = w["tcp_stream"]
            e["reason"] = e["reason"].replace("injected by the fault proxy", "injected by the server's ASGI middleware")
            if w["upgrade"]:
                e["reason"] += "; sent as HTTP/1.1 with Upgrade: h2c, answered 101: the upgraded request is stream 1"
            for r in w["rst"]:
                if not r["after_response_end"]:
                    e["reason"] += f"; RST_STREAM {r['code']} from the {r['by']} before the response's END_STREAM"
        check_client_view(entries, records, clients, self.name)
        if annotate:
            annotate(entries, records, clients)
        hygiene.judge_records(entries, records, f"127.0.0.1:{self.port}")
        if expect_findings is not None:
            got = [e["retry_findings"] for e in entries if e["retry_of"] is not None]
            if got != expect_findings:
                raise RuntimeError(f"{self.name}: findings {got}, the scenario meant {expect_findings}")
        doc = {"capture": self.capture.name, "description": description, "made_by": ", ".join(self.made_by),
               "server_port": self.port, "link": "lo", "requires": "http2", "entries": entries}
        if self.tls:
            doc["keylog"] = self.keys.name
            doc["connections"] = tls_connections(self.capture, self.port, entries, records, clients, self.keys)
        (OUT / f"{self.name}.truth.json").write_text(json.dumps(doc, indent=1) + "\n")
        print(f"{self.capture.name}: {len(entries)} entries, {self.capture.stat().st_size} bytes", flush=True)
        for e in entries:
            print(f"  {e['n']:>2} tcp {e['tcp_stream']} h2 {e['h2_stream']:>2} {e['client']:<10} {e['session']:<26} "
                  f"{e['http_method']:<6} {str(e['jsonrpc_id']):<4} {str(e['rpc_method']):<26} {str(e['http_status']):<4} "
                  f"{e['outcome']:<18} retry_of={e['retry_of']} {e['retry_origin']} {e['retry_findings'] or ''}", flush=True)


def match(server, wire, name):
    """Pairs each wire exchange (tshark) with the server's record of it; returns the records in wire
    order, each with its wire reading under "wire". Request method, path and body must be equal; a
    response whose END_STREAM is on the wire must have the body the server sent."""
    left = list(server)
    out = []
    for w in wire:
        body = w["req_body"].decode("utf-8", "replace")
        cands = [r for r in left if r["client_port"] == w["client_port"] and r["method"] == w["method"]
                 and r["path"] == w["path"] and r["req_body"] == body]
        if not cands:
            raise RuntimeError(f"{name}: wire stream {w['tcp_stream']}/{w['h2_stream']} {w['method']} {body[:80]!r} "
                               "is not in the server's log")
        rec = min(cands, key=lambda r: r["t_req"])
        left.remove(rec)
        if rec["http_version"] != "2":
            raise RuntimeError(f"{name}: the server saw HTTP/{rec['http_version']} for {w}")
        reset_early = any(r["by"] == "client" and not r["after_response_end"] for r in w["rst"])
        if reset_early and w["status"] != rec["status"]:
            # the app answered after the client had reset the stream: hypercorn dropped it
            rec = {**rec, "status": w["status"], "resp_headers": [] if w["status"] is None else rec["resp_headers"],
                   "written_after_reset": True}
        if w["status"] != rec["status"]:
            raise RuntimeError(f"{name}: stream {w['h2_stream']}: status {w['status']} on the wire, {rec['status']} logged")
        resp = w["resp_body"].decode("utf-8", "replace")
        if w["resp_end"] and resp != rec["resp_body"]:
            raise RuntimeError(f"{name}: stream {w['h2_stream']}: response body on the wire differs from the server's")
        if not w["resp_end"]:
            # the capture holds what the client could have read: that decides the outcome
            rec = {**rec, "resp_body": resp, "resp_complete": False}
        out.append({**rec, "wire": w})
    if left:
        raise RuntimeError(f"{name}: {len(left)} logged exchanges not found on the wire: {[r['req_body'][:60] for r in left]}")
    return out


def check_client_view(entries, records, clients, name):
    """The Python client's own account (httpx2: HTTP version, stream id, status) agrees with the wire."""
    seen = [l for log in clients.values() for l in log if l.get("step") == "http_response"]
    for e, rec in zip(entries, records):
        mine = [l for l in seen if l["method"] == rec["method"] and l["body"] == rec["req_body"]
                and l.get("client_port") == rec["client_port"]]
        if not mine:
            continue  # curl, or a response httpx2 never got (no headers on the wire)
        got = mine[0]
        if (got["http_version"], got["h2_stream"], got["status"]) != ("HTTP/2", e["h2_stream"], e["http_status"]):
            raise RuntimeError(f"{name}: entry {e['n']}: httpx2 says {got}, the wire stream {e['h2_stream']}")


def tls_connections(pcap, port, entries, records, clients, keys):
    """The connections list: TLS facts from the client's ssl (logged per response), checked with tshark."""
    tls_of = {}
    for log in clients.values():
        for l in log:
            if l.get("step") == "http_response" and l.get("tls"):
                tls_of.setdefault(l["client_port"], l["tls"])
    logged = keys.read_text().lower()
    sni = {int(s): n for s, n in (ln.split("\t") for ln in subprocess.run(
        ["tshark", "-r", str(pcap), "-Y", "tls.handshake.type==1", "-T", "fields", "-e", "tcp.stream",
         "-e", "tls.handshake.extensions_server_name"], capture_output=True, text=True, check=True).stdout.splitlines())}
    out = []
    for w in tls_truth.wire_connections(pcap, port):
        t = tls_of.get(w["client_port"])
        if t is None:
            raise RuntimeError(f"{pcap.name}: no TLS facts from the client for port {w['client_port']}")
        iana, code = tls_truth.SUITES[t["cipher_openssl"]]
        if w["suite_on_wire"] != code:
            raise RuntimeError(f"{pcap.name}: ServerHello suite {w['suite_on_wire']:#x}, the client's ssl said {iana}")
        if w["client_random"] not in logged:
            raise CaptureLoss(f"{pcap.name}: the key log lacks tcp_stream {w['tcp_stream']}")
        ns = [e["n"] for e, rec in zip(entries, records) if rec["client_port"] == w["client_port"]]
        out.append({"tcp_stream": w["tcp_stream"], "client_addr": w["client"], "server_addr": w["server"],
                    "decryption": "decrypted", "tls_version": tls_truth.VERSIONS[t["version"]], "tls_cipher": iana,
                    "tls_sni": sni.get(w["tcp_stream"]) or None, "alpn": t["alpn"], "alpn_offered": w["alpn_offered"],
                    "tls_resumed": t["resumed"], "client_random": w["client_random"], "http_version": "HTTP/2",
                    "http_exchanges": len(ns), "entries": ns})
    return out


def find(entries, **kw):
    return [e for e in entries if all(e.get(k) == v for k, v in kw.items())]


def link_app_retry(entries, clients, label):
    calls = find(entries, rpc_method="tools/call", tool_name="echo", http_status=503)
    assert len(calls) == 1 and any(l.get("step") == "app_retry" for l in clients[label]), "no 503 + app retry"
    first = calls[0]
    again = [e for e in entries if e["n"] > first["n"] and e["tool_name"] == "echo" and e["session"] == first["session"]][0]
    again["retry_of"] = first["n"]
    again["retry_origin"] = "application"
    again["reason"] += "; the application called echo again with a new id 300 ms after the 503"


# --- scenarios -----------------------------------------------------------------------------

def h2_tls_py(port):
    r = H2Run("h2-tls-py", port, tls=True)
    r.server(fail_once='"retry me over h2"')
    r.capture_start()
    r.client_py("py-client", "list,gather:4,retry503:retry me over h2,fail", mode="legacy")
    r.finish("Python client (mode=legacy: the initialize handshake, a session id, the standalone GET stream, DELETE at "
             "the end) with httpx2.AsyncClient(http2=True) over TLS (ALPN h2, key log from keylog_filename) -> hypercorn "
             "serving the Python SDK's server. One connection carries everything: tools/list, four concurrent echo calls "
             "(asyncio.gather: interleaved streams), an echo the server's middleware answers 503 (empty body) which the "
             "application calls again 300 ms later with a new id, fail (isError).",
             lambda e, rec, c: link_app_retry(e, c, "py-client"), expect_findings=["unsafe_retry"])


def h2c_py(port):
    r = H2Run("h2c-py", port)
    r.server(fail_once='"retry me over h2c"')
    r.capture_start()
    r.client_py("py-client", "list,gather:5,retry503:retry me over h2c,echo:last", mode="auto")
    r.finish("Python client (mcp 2.3.0 defaults: 2026-07-28, server/discover, no session) with "
             "httpx2.AsyncClient(http1=False, http2=True) on http:// (h2c prior knowledge) -> hypercorn serving the "
             "Python SDK's server. One connection: tools/list, five concurrent echo calls (asyncio.gather), an echo "
             "answered 503 by the server's middleware and called again by the application 300 ms later (new id), echo.",
             lambda e, rec, c: link_app_retry(e, c, "py-client"), expect_findings=["unsafe_retry"])


def h2c_curl(port):
    r = H2Run("h2c-curl", port)
    r.server()
    r.capture_start()
    base = ["curl", "-sS", "-m", "10", "-H", "content-type: application/json",
            "-H", "accept: application/json, text/event-stream"]
    init = {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "curl", "version": "7.88.1"}}}
    out = r.manual("curl-init", base + ["--http2-prior-knowledge", "-D", "-", r.url, "--data-raw", json.dumps(init)])
    sid = [ln.split(":", 1)[1].strip() for ln in out.stdout.splitlines() if ln.lower().startswith("mcp-session-id:")][0]
    sess = ["-H", f"mcp-session-id: {sid}", "-H", "mcp-protocol-version: 2025-11-25"]
    # GET with --http2 on http://: Upgrade: h2c, 101, the SSE stream is stream 1; curl gives up after 1.5 s
    r.manual("curl-get-upgrade", ["curl", "-sS", "--http2", "-m", "1.5", "-H", "accept: text/event-stream", *sess, r.url])

    def post(body, *extra):
        return [*base[3:], *sess, *extra, "--data-raw", json.dumps(body), r.url]
    # three POSTs on one prior-knowledge connection (--next keeps it): streams 1, 3, 5
    r.manual("curl-three", ["curl", "-sS", "--http2-prior-knowledge", "-m", "10",
                            *post({"jsonrpc": "2.0", "method": "notifications/initialized"}), "--next",
                            *post({"jsonrpc": "2.0", "id": 2, "method": "tools/list"}), "--next",
                            *post({"jsonrpc": "2.0", "id": 3, "method": "tools/call",
                                   "params": {"name": "echo", "arguments": {"text": "curl h2c"}}})])
    # two transfers at once on one connection (-Z); the first gives up after 1 s (-m 1)
    r.manual("curl-parallel", ["curl", "-sS", "--http2-prior-knowledge", "-Z",
                               *post({"jsonrpc": "2.0", "id": 4, "method": "tools/call",
                                      "params": {"name": "nap", "arguments": {"seconds": 3}}}, "-m", "1"), "--next",
                               *post({"jsonrpc": "2.0", "id": 5, "method": "tools/call",
                                      "params": {"name": "nap", "arguments": {"seconds": 2}}}, "-m", "10")])
    r.manual("curl-delete", ["curl", "-sS", "--http2-prior-knowledge", "-m", "10", "-X", "DELETE", *sess, r.url])
    r.made_by.append("curl 7.88.1 --http2-prior-knowledge / --http2 (Upgrade: h2c), five invocations")

    def annotate(entries, records, clients):
        for e in entries:
            if e["jsonrpc_id"] == "4":
                assert e["outcome"] == "STREAM_INCOMPLETE", e
                e["reason"] += ("; curl's -m 1 expired while the SSE stream was open, curl reset the stream only when "
                                "the connection's other transfer ended")
    r.finish("curl against hypercorn serving the Python SDK's server, all HTTP/2 without TLS: initialize "
             "(--http2-prior-knowledge); a GET stream with --http2 (HTTP/1.1 Upgrade: h2c, 101, the upgraded GET is "
             "stream 1, curl gives up after 1.5 s); notifications/initialized, tools/list and tools/call echo on one "
             "connection (streams 1, 3, 5; curl resets each finished stream with RST_STREAM STREAM_CLOSED); two nap calls "
             "at once on one connection, the first abandoned by curl's timeout; DELETE.", annotate)


def h2c_cancel(port):
    r = H2Run("h2c-cancel", port)
    r.server()
    r.capture_start()
    r.client_raw("raw-stateless", "stateless")
    r.client_raw("raw-session", "session")

    def annotate(entries, records, clients):
        resets = {(label, l["h2_stream"]) for label, log in clients.items() for l in log if l.get("step") == "reset"}
        assert len(resets) == 2, resets
        for e, rec in zip(entries, records):
            w = rec["wire"]
            if (e["client"], w["h2_stream"]) not in resets:
                assert not [x for x in w["rst"] if not x["after_response_end"]], e
                continue
            assert [x["code"] for x in w["rst"]] == ["CANCEL"] and w["rst"][0]["by"] == "client", w["rst"]
            if e["session"].endswith("/no-session-id"):  # 2026-07-28: closing the stream is the cancel
                e["outcome"] = "CANCELLED"
                e["final_response"] = False
                e["reason"] = ("client RST_STREAM CANCEL before any response (2026-07-28: the client closed the "
                               "response stream first, report-schema 3 and 4)")
            else:
                assert e["outcome"] == "STREAM_INCOMPLETE", e
                e["reason"] += ("; 2025-11-25 session: RST_STREAM CANCEL is the client closing the stream "
                                "(anomaly mcp.client_closed_stream), not a cancellation")
            if rec.get("written_after_reset"):
                e["reason"] += "; the server's answer came after the reset and never reached the wire"
    r.finish("A client on the h2 library (h2c prior knowledge) against hypercorn serving the Python SDK's server, two "
             "connections. First, 2026-07-28 requests shaped like the Python SDK's: server/discover, tools/list, then nap "
             "(3 s) and echo at once; the echo completes and the nap stream is reset with RST_STREAM CANCEL 0.5 s after "
             "it was sent (before any response: CANCELLED); another echo. Second, a 2025-11-25 session: initialize, "
             "notifications/initialized, nap whose SSE response has begun when the client resets it with CANCEL "
             "(STREAM_INCOMPLETE, the client closed the stream), echo, DELETE. Each connection ends with GOAWAY.",
             annotate)


SCENARIOS = {"h2-tls-py": h2_tls_py, "h2c-py": h2c_py, "h2c-curl": h2c_curl, "h2c-cancel": h2c_cancel}


def main():
    names = sys.argv[1:] or list(SCENARIOS)
    failed = []
    for i, name in enumerate(SCENARIOS):
        if name not in names:
            continue
        for attempt in (1, 2, 3):
            try:
                SCENARIOS[name](18800 + 10 * i)
                break
            except CaptureLoss as e:
                print(f"{name}: attempt {attempt}: {e}", flush=True)
                if attempt == 3:
                    failed.append(name)
            except Exception as e:  # noqa: BLE001 - report and go on
                failed.append(name)
                print(f"{name}: FAILED {e!r}", flush=True)
                break
            finally:
                for p in H2Run.all_procs:
                    if p.poll() is None:
                        os.killpg(p.pid, signal.SIGKILL)
                H2Run.all_procs.clear()
    if failed:
        sys.exit(f"failed scenarios: {failed}")


if __name__ == "__main__":
    main()
