#!/usr/bin/env python3
"""Regenerates every recording in samples/ and its truth file.

usage: python run_all.py [SCENARIO ...]     (default: all)

Each scenario starts real SDK servers/clients (or the raw ones) on loopback, puts proxy.py in
front of the server (a byte-exact relay that logs every exchange and injects faults), records
the client-facing port with tcpdump, then writes samples/<name>.truth.json from the proxy log
plus what the scenario knows it did (retries, continuations). Every process has a lifetime and
is stopped at the end of its scenario.
"""

import copy
import json
import os
import signal
import socket
import subprocess
import sys
import threading
import time
from pathlib import Path

import hygiene
import tls_truth
import truth

GEN = Path(__file__).resolve().parent
SAMPLES = GEN.parent
WORK = GEN / "work"
PY = str(GEN / ".venv" / "bin" / "python")
NODE = "node"
CERTS = GEN / "certs"  # test-only CA + localhost certificate (make_certs.sh)


def wait_port(host, port, timeout=15.0):
    end = time.time() + timeout
    fam = socket.AF_INET6 if ":" in host else socket.AF_INET
    while time.time() < end:
        try:
            with socket.socket(fam, socket.SOCK_STREAM) as s:
                s.settimeout(0.5)
                s.connect((host, port))
                return
        except OSError:
            time.sleep(0.1)
    raise RuntimeError(f"port {host}:{port} never opened")


def read_jsonl(path):
    if not Path(path).exists():
        return []
    return [json.loads(line) for line in Path(path).read_text().splitlines() if line.strip()]


class CaptureLoss(RuntimeError):
    """tcpdump missed packets (seen once on a loaded machine): the scenario is recorded again."""


def lost_segments(pcap):
    """Frames where tshark sees a TCP sequence gap (a segment the capture never got)."""
    out = subprocess.run(["tshark", "-r", str(pcap), "-Y", "tcp.analysis.lost_segment || tcp.analysis.ack_lost_segment",
                          "-T", "fields", "-e", "frame.number"], capture_output=True, text=True, timeout=60, check=True)
    return out.stdout.split()


class Run:
    """One scenario: processes, capture, proxy, client windows, truth."""

    all_procs = []  # every process started, so main() can kill leftovers of a failed scenario

    def __init__(self, name, port, ext="pcap", iface="lo", tcpdump_extra=(), listen_host="127.0.0.1", tls=None):
        self.name, self.port, self.ext, self.iface = name, port, ext, iface
        # tls: {"alpn": "http/1.1" or ""}: proxy.py terminates TLS on the captured port (and speaks TLS
        # to the server too), the client writes its key log to samples/<name>.keys
        self.tls = tls
        self.tcpdump_extra = list(tcpdump_extra)
        self.listen_host = listen_host
        self.upstream = port + 1
        self.procs = []
        self.windows = []  # (label, t0, t1, logfile)
        self.dir = WORK / name
        self.dir.mkdir(parents=True, exist_ok=True)
        for f in self.dir.iterdir():
            f.unlink()
        self.capture = SAMPLES / f"{name}.{ext}"
        self.proxy_log = self.dir / "proxy.json"
        self.made_by = []
        self.entry_port = port  # where clients connect (a recorder may sit in front of the proxy)
        self.tcpdump = None
        self.recorder = None
        self.pcap = None  # HAR scenarios: tcpdump of the client-facing leg, recorded at the same time
        # what the scenario was built to produce: retry_findings of each entry with retry_of, in order
        self.expect_findings = None
        self.keys = SAMPLES / f"{name}.keys"
        self.conn_log = self.dir / "conns.json"
        self.no_key_streams = ()  # tcp_stream indexes whose key log lines the scenario removed
        if tls and self.keys.exists():
            self.keys.unlink()

    # --- processes -------------------------------------------------------------------------
    def spawn(self, cmd, logname):
        out = open(self.dir / logname, "w")
        p = subprocess.Popen(cmd, cwd=GEN, stdout=out, stderr=subprocess.STDOUT, start_new_session=True)
        self.procs.append(p)
        Run.all_procs.append(p)
        return p

    def server_ts(self, mode="sse", cors=False, auth=False, logname="server.log", hygiene_tools=False):
        cmd = [NODE, "ts/server.mjs", "--port", str(self.upstream), "--mode", mode, "--lifetime", "90"]
        if self.tls:
            cmd += ["--tls-cert", str(CERTS / "server.pem"), "--tls-key", str(CERTS / "server.key")]
        if hygiene_tools:  # send_email {destructiveHint: true}, get_weather {readOnlyHint: true}
            cmd.append("--hygiene-tools")
        if mode != "legacy" and self.name.startswith("har-chromium"):
            cors = True
        if cors:
            cmd.append("--cors")
        if auth:  # OAuth-protected /mcp + a minimal authorization server on auth_port (not captured)
            cmd += ["--auth-port", str(self.auth_port), "--resource", self.url]
        self.server_proc = self.spawn(cmd, logname)
        wait_port("127.0.0.1", self.upstream)
        what = (f"TS SDK server ({mode}{', OAuth-protected' if auth else ''}{', --hygiene-tools' if hygiene_tools else ''}"
                f"{', node:https' if self.tls else ''})")
        if what not in self.made_by:
            self.made_by.append(what)

    @property
    def auth_port(self):
        return self.port + 5

    @property
    def auth_issuer(self):
        return f"http://127.0.0.1:{self.auth_port}"

    def restart_server_ts(self, mode="sse"):
        """Stops the TS server process and starts a new one on the same port: every session is gone."""
        os.killpg(self.server_proc.pid, signal.SIGTERM)
        self.server_proc.wait(10)
        self.t_restart = time.time()
        self.server_ts(mode, logname="server-2.log")
        self.t_restarted = time.time()

    def server_py(self):
        cmd = [PY, "py/server.py", "--port", str(self.upstream), "--lifetime", "90"]
        if self.tls:
            cmd += ["--ssl-certfile", str(CERTS / "server.pem"), "--ssl-keyfile", str(CERTS / "server.key")]
        self.spawn(cmd, "server.log")
        wait_port("127.0.0.1", self.upstream)
        self.made_by.append("Python SDK server (MCPServer, streamable HTTP" + (", uvicorn --ssl-certfile)" if self.tls else ")"))

    def server_raw(self):
        self.spawn([PY, "raw_server.py", "--port", str(self.upstream), "--lifetime", "90"], "server.log")
        wait_port("127.0.0.1", self.upstream)
        self.made_by.append("raw_server.py (plain http.server)")

    def proxy(self, *extra):
        tls = []
        if self.tls:
            tls = ["--tls-cert", str(CERTS / "server.pem"), "--tls-key", str(CERTS / "server.key"),
                   "--tls-alpn", self.tls["alpn"], "--upstream-tls", str(CERTS / "ca.pem"), "--conn-log", str(self.conn_log)]
            alpn = f"ALPN {self.tls['alpn']}" if self.tls["alpn"] else "no ALPN"
            self.made_by.append(f"proxy.py terminating TLS on the captured port (Python ssl, OpenSSL; {alpn}) "
                                "and speaking TLS to the server")
        self.proxy_proc = self.spawn([PY, "proxy.py", "--listen-host", self.listen_host, "--listen-port", str(self.port),
                                      "--upstream-port", str(self.upstream), "--log", str(self.proxy_log),
                                      "--lifetime", "90", *tls, *extra], "proxy.out")
        wait_port(self.listen_host, self.port)
        if extra:
            self.made_by.append("fault proxy " + " ".join(extra))

    @property
    def url(self):
        if self.tls:  # a name, so that the client sends SNI (/etc/hosts: localhost is 127.0.0.1 only)
            return f"https://localhost:{self.entry_port}/mcp"
        host = f"[{self.listen_host}]" if ":" in self.listen_host else self.listen_host
        return f"http://{host}:{self.entry_port}/mcp"

    def mitm_front(self):
        """mitmdump (reverse proxy, HAR export) on entry_port, in front of proxy.py on port+2."""
        self.port = self.entry_port + 2
        self.capture = SAMPLES / f"{self.name}.har"
        self.proxy()
        self.recorder = self.spawn([str(GEN / ".venv-mitm" / "bin" / "mitmdump"), "-q", "--listen-host", "127.0.0.1",
                                    "-p", str(self.entry_port), "--mode", f"reverse:http://127.0.0.1:{self.port}",
                                    "--set", f"hardump={self.capture}"], "mitmdump.out")
        wait_port("127.0.0.1", self.entry_port, 30)
        self.made_by.append("recorded by mitmdump (reverse proxy, hardump)")

    # --- capture ---------------------------------------------------------------------------
    def wire_capture(self):
        """For a HAR scenario: also record the port the client talks to (entry_port) with tcpdump,
        so one run yields <name>.har and <name>.wire.pcap of the same traffic. Not <name>.pcap:
        its truth would be <name>.truth.json (tests pair X.pcap with X.truth.json), the HAR's."""
        self.pcap = SAMPLES / f"{self.name}.wire.pcap"
        self.capture_start(self.pcap, self.entry_port)

    def capture_start(self, path=None, port=None):
        path, port = path or self.capture, port or self.port
        cmd = ["tcpdump", "-i", self.iface, "--immediate-mode", "-w", str(path), "-U", *self.tcpdump_extra, f"tcp port {port}"]
        if self.ext == "pcapng":  # tcpdump 4.99 has no --pcapng: dumpcap (from tshark) writes pcapng
            cmd = ["dumpcap", "-q", "-i", self.iface, "-w", str(self.capture), "-f", f"tcp port {self.port}"]
        self.tcpdump = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True,
                                        start_new_session=True)
        Run.all_procs.append(self.tcpdump)
        ready = threading.Event()
        self.tcpdump_err = []

        def reader():
            for line in self.tcpdump.stderr:
                self.tcpdump_err.append(line)
                if "listening on" in line or "Capturing on" in line:
                    ready.set()

        threading.Thread(target=reader, daemon=True).start()
        if not ready.wait(10):
            raise RuntimeError("tcpdump did not start: " + "".join(self.tcpdump_err))
        time.sleep(0.3)

    def capture_stop(self):
        time.sleep(1.0)
        self.t_capture_end = time.time()
        if self.tcpdump is not None:
            self.tcpdump.send_signal(signal.SIGINT)
            self.tcpdump.wait(10)
            time.sleep(0.2)  # let the stderr reader take tcpdump's closing counts
            (self.dir / "tcpdump.err").write_text("".join(self.tcpdump_err))
        if self.recorder is not None:  # mitmdump writes the HAR when it exits
            self.recorder.send_signal(signal.SIGINT)
            self.recorder.wait(20)

    # --- clients ---------------------------------------------------------------------------
    def client_ts(self, label, steps, legacy=False, wait=True, url=None, auth=False, plans=None, headers=None):
        logf = self.dir / f"{label}.jsonl"
        cmd = [NODE, "ts/client.mjs", "--url", (url or self.url).replace("/mcp", "/sse") if legacy else (url or self.url),
               "--steps", steps, "--log", str(logf), "--lifetime", "40"]
        if plans:  # the application's retry policies (ts/client.mjs step plan:I)
            cmd += ["--plans", json.dumps(plans)]
        if headers:
            cmd += ["--headers", json.dumps(headers)]
        if legacy:
            cmd.append("--legacy")
        if auth:
            cmd += ["--auth-issuer", self.auth_issuer]
        what = "TS SDK client" + (" with the SDK's ClientCredentialsProvider" if auth else "")
        env = None
        if self.tls:
            env = {**os.environ, "NODE_OPTIONS": f"--tls-keylog={self.keys}", "NODE_EXTRA_CA_CERTS": str(CERTS / "ca.pem")}
            cmd += ["--exit-delay", "500"]  # the key log is written asynchronously (see ts/client.mjs)
            what += " (NODE_OPTIONS=--tls-keylog)"
        return self._client(label, cmd, logf, wait, what, env)

    def client_py(self, label, steps, mode="auto", wait=True, tls_max=None, tls_ciphers=None, otel_spans=None):
        logf = self.dir / f"{label}.jsonl"
        cmd = [PY, "py/client.py", "--url", self.url, "--steps", steps, "--mode", mode, "--log", str(logf),
               "--lifetime", "40"]
        what = f"Python SDK client (mode={mode})"
        if otel_spans:  # the OpenTelemetry SDK in the client process, every finished span to this file
            cmd += ["--otel-spans", str(otel_spans)]
            what = (f"Python SDK client (mode={mode}) with the OpenTelemetry SDK (TracerProvider, "
                    "SimpleSpanProcessor, JSON-lines span exporter)")
        if self.tls:
            cmd += ["--tls-ca", str(CERTS / "ca.pem"), "--keylog", str(self.keys)]
            if tls_max:
                cmd += ["--tls-max", tls_max]
            if tls_ciphers:
                cmd += ["--tls-ciphers", tls_ciphers]
            what = (f"Python SDK client (mode={mode}, httpx2 client with an ssl.SSLContext: max TLS {tls_max or '1.3'}, "
                    f"ciphers {tls_ciphers or 'default'}, keylog_filename)")
        return self._client(label, cmd, logf, wait, what)

    def client_browser(self, label):
        logf = self.dir / f"{label}.jsonl"
        self.capture = SAMPLES / f"{self.name}.har"
        cmd = [NODE, "ts/browser.mjs", "--mcp", self.url, "--page-port", str(self.entry_port + 3),
               "--har", str(self.capture), "--log", str(logf), "--lifetime", "60"]
        return self._client(label, cmd, logf, True, "headless Chromium (Debian chromium) via playwright-core recordHar, page using fetch")

    def client_raw(self, label, calls):
        logf = self.dir / f"{label}.jsonl"
        cmd = [PY, "raw_client.py", "--host", self.listen_host, "--port", str(self.entry_port), "--calls", calls, "--log", str(logf)]
        return self._client(label, cmd, logf, True, "raw_client.py (http.client)")

    def _client(self, label, cmd, logf, wait, what, env=None):
        if what not in self.made_by:
            self.made_by.append(what)
        t0 = time.time()
        p = subprocess.Popen(cmd, cwd=GEN, stdout=open(self.dir / f"{label}.out", "w"), stderr=subprocess.STDOUT,
                             start_new_session=True, env=env)
        self.procs.append(p)
        Run.all_procs.append(p)
        win = [label, t0, None, logf, p]
        self.windows.append(win)
        if wait:
            self.wait_client(win)
        return win

    def wait_client(self, win):
        win[4].wait(60)
        win[2] = time.time()

    def manual(self, label, cmd, env=None):
        """A command run by hand (curl)."""
        t0 = time.time()
        out = subprocess.run(cmd, capture_output=True, text=True, timeout=20, env=env)
        self.windows.append([label, t0, time.time(), None, None])
        (self.dir / f"{label}.out").write_text(out.stdout + out.stderr)
        return out

    # --- truth -----------------------------------------------------------------------------
    def finish(self, description, annotate=None, extra=None, har_annotate=None, wire_annotate=None):
        """Writes the truth file(s). annotate: scenario knowledge true on both legs; for a HAR scenario
        har_annotate adjusts the HAR's truth to what the recorder kept, and (with wire_capture)
        wire_annotate adjusts the pcap's truth to what the client-facing leg carried."""
        self.capture_stop()
        self.proxy_proc.send_signal(signal.SIGTERM)
        self.proxy_proc.wait(10)
        for p in self.procs:
            if p.poll() is None:
                os.killpg(p.pid, signal.SIGTERM)
        for p in self.procs:
            try:
                p.wait(5)
            except subprocess.TimeoutExpired:
                os.killpg(p.pid, signal.SIGKILL)
        records = json.loads(self.proxy_log.read_text())
        sid_client = {}
        for label, _, _, logf, _ in self.windows:
            for line in read_jsonl(logf) if logf else []:
                if line.get("step") == "connected" and line.get("sessionId"):
                    sid_client[line["sessionId"]] = label

        def client_of(rec, sid):
            if sid and sid in sid_client:
                return sid_client[sid]
            hits = [w[0] for w in self.windows if w[1] <= rec["t_req"] <= (w[2] or 1e12)]
            if len(hits) != 1:
                raise RuntimeError(f"{self.name}: cannot tell which client sent seq {rec['seq']}: {hits}")
            return hits[0]

        entries = truth.build_entries(records, self.t_capture_end, client_of, {})
        client_logs = {w[0]: (read_jsonl(w[3]) if w[3] else []) for w in self.windows}
        if annotate:
            annotate(entries, records, client_logs)
        # report-schema 4b from the retry links just set and the relay's log (before the HAR/wire
        # adjustments, which never touch a retry chain)
        self.attempts = hygiene.judge_records(entries, records, f"{self.listen_host}:{self.port}")
        if self.expect_findings is not None:
            got = [e["retry_findings"] for e in entries if e["retry_of"] is not None]
            if got != self.expect_findings:
                raise RuntimeError(f"{self.name}: findings {got}, the scenario meant {self.expect_findings}")
        wire_entries = copy.deepcopy(entries)
        if har_annotate:
            har_annotate(entries, records, client_logs)
        doc = {"capture": self.capture.name, "description": description, "made_by": ", ".join(self.made_by),
               "server_port": self.port, "link": "har" if self.capture.suffix == ".har" else self.iface,
               "entries": entries}
        if extra:
            doc.update(extra)
        if self.tls:
            lost = lost_segments(self.capture)
            if lost:  # one missing segment and nothing after it on that connection decrypts
                raise CaptureLoss(f"{self.capture.name}: tcpdump missed segments (tshark flags frames {lost})")
            doc["keylog"] = self.keys.name
            for e, rec in zip(entries, records):
                if rec["status"] is not None and not rec["resp_complete"] and "body incomplete" not in e["reason"]:
                    # seen on 202s: the TS SDK cancels a 202's body and undici closes the connection
                    e["reason"] += ("; response body incomplete on the wire: the client closed the connection "
                                    "before the body's end (terminating chunk) was relayed")
            try:
                doc["connections"] = tls_truth.connections(self.capture, self.port, self.conn_log, records, entries,
                                                           self.keys, self.no_key_streams)
            except tls_truth.MissingSecrets as e:
                raise CaptureLoss(str(e)) from e
        if self.pcap is not None:
            doc["paired_capture"] = self.pcap.name
        self.write_truth(SAMPLES / f"{self.name}.truth.json", doc)
        if self.pcap is None:
            return
        lost = lost_segments(self.pcap)
        if lost:  # a pcap with holes would not be the same traffic as the HAR
            raise CaptureLoss(f"{self.pcap.name}: tcpdump missed segments (tshark flags frames {lost})")
        # the same run seen by tcpdump on the client-facing port: truth from the same relay log,
        # without the recorder's changes, plus what only the client leg carried
        if wire_annotate:
            wire_annotate(wire_entries, records, client_logs)
        wdoc = {"capture": self.pcap.name,
                "description": description + " The same run captured by tcpdump on the port the client talks to.",
                "made_by": ", ".join(self.made_by) + f", captured by tcpdump -i {self.iface} on port {self.entry_port}",
                "server_port": self.entry_port, "link": self.iface, "entries": wire_entries,
                "paired_capture": self.capture.name}
        self.write_truth(self.pcap.with_suffix(".truth.json"), wdoc)

    def write_truth(self, path, doc):
        entries = doc["entries"]
        path.write_text(json.dumps(doc, indent=1) + "\n")
        print(f"{doc['capture']}: {len(entries)} entries, {(SAMPLES / doc['capture']).stat().st_size} bytes", flush=True)
        for e in entries:
            print(f"  {e['n']:>2} {e['client']:<10} {e['session']:<22} {e['http_method']:<6} {e['kind']:<12} "
                  f"{str(e['jsonrpc_id']):<4} {str(e['rpc_method']):<26} {str(e['http_status']):<4} {e['outcome']:<18} "
                  f"retry_of={e['retry_of']} {e['retry_origin']} cont={e['continuation_of']} {e['retry_findings'] or ''}", flush=True)


def find(entries, **kw):
    return [e for e in entries if all(e.get(k) == v for k, v in kw.items())]


# --- scenarios -----------------------------------------------------------------------------

def ts_streamable_sse(port):
    r = Run("ts-streamable-sse", port)
    r.server_ts("sse")
    r.proxy()
    r.capture_start()
    r.client_ts("ts-client", "list,echo:hello,fail,unknown,badargs,prompt_unknown,slow:2,delete")
    r.finish("TS client -> TS server, Streamable HTTP (2025-11-25), SSE responses with event-store ids and "
             "priming events: initialize, notifications/initialized (202), standalone GET stream, tools/list, "
             "echo (success), fail (isError), unknown tool and bad arguments (isError results, not JSON-RPC "
             "errors), prompts/get of an unknown prompt (JSON-RPC error -32602 on 200), slow (progress "
             "notifications on the SSE stream), DELETE.")


def ts_streamable_json(port):
    r = Run("ts-streamable-json", port)
    r.server_ts("json")
    r.proxy()
    r.capture_start()
    r.client_ts("ts-client", "list,echo:hello,fail,unknown,prompt_unknown,delete")
    r.finish("TS client -> TS server with enableJsonResponse: application/json responses; the standalone GET "
             "is still SSE.")


def py_default(port):
    r = Run("py-default", port)
    r.server_py()
    r.proxy()
    r.capture_start()
    r.client_py("py-client", "list,echo:hello,fail,unknown,slow:2")
    r.finish("Python client -> Python server, both mcp 2.3.0 defaults: 2026-07-28 (server/discover, no "
             "initialize, no session id, Mcp-Method/Mcp-Name headers, resultType complete). slow answers "
             "with SSE (progress then result); everything else is JSON.")


def py_legacy_handshake(port):
    r = Run("py-legacy-handshake", port)
    r.server_py()
    r.proxy()
    r.capture_start()
    r.client_py("py-client", "list,echo:hello,fail", mode="legacy")
    r.finish("Python client with mode='legacy' -> Python server: the older initialize handshake (2025-11-25) "
             "with a session id.")


def ts_client_py_server(port):
    r = Run("ts-client-py-server", port)
    r.server_py()
    r.proxy()
    r.capture_start()
    r.client_ts("ts-client", "list,echo:hello,fail,unknown,delete")
    r.finish("TS client (2025-11-25 initialize) -> Python server.")


def py_client_ts_server(port):
    r = Run("py-client-ts-server", port)
    r.server_ts("sse")
    r.proxy()
    r.capture_start()
    r.client_py("py-client", "list,echo:hello,fail,unknown")

    def annotate(entries, records, logs):
        first = entries[0]
        if first["rpc_method"] == "server/discover" and first["http_status"] == 400:
            first["reason"] += "; era probe: the 2026-07-28 client falls back to initialize (not a retry)"
    r.finish("Python client (auto mode) -> TS server: server/discover is refused with 400, the client falls "
             "back to initialize (era negotiation).", annotate)


def legacy_sse(port):
    r = Run("legacy-sse", port)
    r.server_ts("legacy")
    r.proxy()
    r.capture_start()
    r.client_ts("ts-client", "list,echo:hello,fail", legacy=True)
    r.finish("TS client SSEClientTransport -> TS server SSEServerTransport (deprecated HTTP+SSE, 2024-11-05 "
             "style): GET /sse then POST /messages?sessionId=...; POSTs get 202 and answers arrive on /sse.")


def fault_503(port):
    r = Run("fault-503-app-retry", port)
    r.server_ts("sse")
    r.proxy("--fail-post", "3")
    r.capture_start()
    r.client_ts("ts-client", "retry_echo:retry me,delete")

    def annotate(entries, records, logs):
        calls = find(entries, rpc_method="tools/call", tool_name="echo")
        assert calls[0]["http_status"] == 503 and any(l.get("step") == "app_retry" for l in logs["ts-client"])
        calls[1]["retry_of"] = calls[0]["n"]
        calls[1]["retry_origin"] = "application"
        calls[1]["reason"] += "; the application called echo again with a new id 300 ms after the 503"
    r.finish("The fault proxy answers the 3rd POST (tools/call echo) with 503 and an empty body; the TS SDK "
             "does not retry, the application waits 300 ms and calls the tool again (new JSON-RPC id).", annotate)


def sse_resume(port):
    r = Run("sse-resume", port)
    r.server_ts("sse")
    r.proxy("--cut-sse-after-id", "--cut-match", '"tools/call"')
    r.capture_start()
    r.client_ts("ts-client", "slow:3,delete")

    def annotate(entries, records, logs):
        call = find(entries, rpc_method="tools/call")[0]
        for e, rec in zip(entries, records):
            if e["http_method"] == "GET" and truth.hget(rec["req_headers"], "last-event-id"):
                e["retry_of"] = call["n"]
                e["retry_origin"] = "sdk"
        call["reason"] += "; the first SSE stream was cut by the proxy after the first id'd progress event"
    r.finish("TS client -> fault proxy -> TS server with event store: the proxy closes the tools/call SSE "
             "response right after the first event with an id: and data (a progress notification); the TS SDK "
             "resumes with GET + Last-Event-ID and the server replays the rest, including the result.", annotate)


def curl_replay(port):
    r = Run("curl-replay", port)
    r.server_ts("sse")
    r.proxy()
    r.capture_start()
    r.client_ts("ts-client", "echo:replay me")
    time.sleep(3)
    live = [x for x in read_jsonl(str(r.proxy_log) + ".live.jsonl") if '"tools/call"' in x["req_body"]][0]
    hdrs = {k.lower(): v for k, v in live["req_headers"]}
    r.manual("curl", ["curl", "-sS", "-m", "10", r.url, "-H", f"mcp-session-id: {hdrs['mcp-session-id']}",
                      "-H", f"mcp-protocol-version: {hdrs['mcp-protocol-version']}",
                      "-H", "content-type: application/json", "-H", "accept: application/json, text/event-stream",
                      "--data-raw", live["req_body"]])

    def annotate(entries, records, logs):
        orig, replay = find(entries, rpc_method="tools/call")
        replay["retry_of"] = orig["n"]
        replay["retry_origin"] = "manual"
        replay["reason"] += "; curl replay ~3 s later: same session header, id and body, User-Agent curl"
    r.finish("TS client calls echo and exits without DELETE; ~3 s later the same POST (same session header, "
             "same id, same body) is replayed with curl (different User-Agent).", annotate)


def second_client(port):
    r = Run("second-client", port)
    r.server_ts("sse")
    r.proxy()
    r.capture_start()
    r.client_ts("ts-client-1", "echo:same args,delete")
    time.sleep(2)
    r.client_ts("ts-client-2", "echo:same args,delete")

    def annotate(entries, records, logs):
        a, b = find(entries, rpc_method="tools/call")
        b["retry_of"] = a["n"]
        b["retry_origin"] = "manual"
        b["reason"] += ("; a second client process run ~2 s later: new session, same id (ids restart at 0) and "
                        "same body -> report-schema rule 2, different session and gap >= 1 s: manual")
    r.finish("Two TS client processes, one after the other (~2 s apart), each in its own session, calling echo "
             "with the same arguments.", annotate)


def concurrent(port):
    r = Run("concurrent", port)
    r.server_ts("sse")
    r.proxy()
    r.capture_start()
    wins = [r.client_ts(f"ts-client-{i}", "echo:same args,delete", wait=False) for i in range(1, 5)]
    for w in wins:
        r.wait_client(w)

    def annotate(entries, records, logs):
        for e in find(entries, rpc_method="tools/call"):
            e["reason"] += "; concurrent workers (same id and body in other sessions < 1 s apart): not a repeat"
    r.finish("Four TS client processes started at once, each initializing its own session and calling echo "
             "with the same arguments (same id 1, same body).", annotate, {"order_may_interleave": True})


def raw_shapes(port):
    r = Run("raw-shapes", port)
    r.server_raw()
    r.proxy()
    r.capture_start()
    r.client_raw("raw-client", "echo,notify,rpc_error_200,http500_success,malformed,both,wrong_id,content_not_array,"
                 "sse_cut,accepted_request,no_response,echo")
    r.finish("raw_client.py -> raw_server.py (2026-07-28 style, no SDK): one tools/call per response shape no "
             "SDK produces: JSON-RPC error on 200, 500 with a success body, cut JSON, both result and error, "
             "wrong id, content not an array, SSE cut before the answer, 202 to a request, connection closed "
             "without a response; plus a notification (202).")


def mrtr(port):
    r = Run("mrtr", port)
    r.server_raw()
    r.proxy()
    r.capture_start()
    r.client_raw("raw-client", "approve")

    def annotate(entries, records, logs):
        first, follow = find(entries, rpc_method="tools/call")
        follow["continuation_of"] = first["n"]
        follow["reason"] += "; MRTR follow-up: new id, inputResponses + requestState echoed"
    r.finish("Raw MRTR round trip: tools/call -> resultType input_required (inputRequests + requestState), "
             "then the follow-up tools/call with a new id carrying inputResponses and the requestState.", annotate)


def mrtr_py(port):
    r = Run("mrtr-py", port)
    r.server_py()
    r.proxy()
    r.capture_start()
    r.client_py("py-client", "approve:deploy")

    def annotate(entries, records, logs):
        first, follow = find(entries, rpc_method="tools/call")
        follow["continuation_of"] = first["n"]
        follow["reason"] += "; MRTR follow-up sent by the Python SDK: new id, inputResponses + sealed requestState"
    r.finish("Real SDK MRTR: Python client -> Python server (2026-07-28); the tool asks for a reason through an "
             "elicitation, which the server returns as input_required; the client SDK answers it and re-sends.",
             annotate)


def ipv6(port):
    r = Run("ipv6", port, listen_host="::1")
    r.server_ts("sse")
    r.proxy()
    r.capture_start()
    r.client_ts("ts-client", "list,echo:over ipv6,delete")
    r.finish("TS client -> TS server over IPv6 loopback [::1].")


def any_iface(port):
    r = Run("any-iface", port, iface="any")
    r.server_py()
    r.proxy()
    r.capture_start()
    r.client_py("py-client", "echo:cooked,fail")
    r.finish("Python client -> Python server, captured with tcpdump -i any (Linux cooked capture).")


def pcapng(port):
    r = Run("pcapng", port, ext="pcapng")
    r.server_ts("json")
    r.proxy()
    r.capture_start()
    r.client_ts("ts-client", "echo:pcapng,fail,delete")
    r.finish("TS client -> TS server (JSON responses), written as pcapng by dumpcap (tcpdump 4.99.3 has no --pcapng).")


def snaplen(port):
    r = Run("snaplen-200", port, tcpdump_extra=["-s", "200"])
    r.server_ts("sse")
    r.proxy()
    r.capture_start()
    r.client_ts("ts-client", "list,echo:truncated,delete")
    r.finish("TS client -> TS server captured with snap length 200: every packet is cut to 200 bytes, so "
             "bodies and most headers are missing (the truth still lists what was sent).",
             extra={"snaplen": 200})


def stream_open(port):
    r = Run("stream-open", port)
    r.server_ts("sse")
    r.proxy()
    r.capture_start()
    win = r.client_ts("ts-client", "echo:still here,hold:8000", wait=False)
    end = time.time() + 15
    while time.time() < end and not any(x.get("step") == "tools/call" for x in read_jsonl(win[3])):
        time.sleep(0.1)
    r.finish("TS client calls echo and stays connected; the capture stops while its standalone GET stream is "
             "still open (STREAM_OPEN); the client is stopped after the capture.")


def har_mitm_ts(port):
    r = Run("har-mitmproxy-ts", port)
    r.server_ts("sse")
    r.mitm_front()
    r.wire_capture()
    r.client_ts("ts-client", "list,echo:via mitmproxy,fail,slow:2,delete")
    r.finish("HAR from mitmdump in reverse-proxy mode: TS client -> mitmdump -> TS server (SSE responses, "
             "standalone GET stream, progress on SSE, DELETE).", extra={"recorder": "mitmproxy"})


def har_mitm_raw(port):
    r = Run("har-mitmproxy-raw", port)
    r.server_raw()
    r.mitm_front()
    r.wire_capture()
    r.client_raw("raw-client", "echo,gzip_json,rpc_error_200,http500_success,malformed,sse_cut,no_response,echo")

    def client_status(logs):
        return {x["sent"].get("params", {}).get("name"): x.get("status") for x in logs["raw-client"]}

    def annotate(entries, records, logs):
        for e, rec in zip(entries, records):
            if rec.get("resp_decoded_from") == "gzip":
                e["reason"] += "; body sent gzip-compressed (Content-Encoding: gzip)"

    def har_annotate(entries, records, logs):
        got = client_status(logs)
        for e in entries:
            name = e["tool_name"]
            if name in ("sse_cut", "no_response") and got.get(name) != e["http_status"]:
                e["reason"] += (f"; the client itself got HTTP {got.get(name)} from mitmproxy, the HAR keeps the "
                                f"server side (status {e['http_status'] or 0}, empty body)")

    def wire_annotate(entries, records, logs):
        # the client-facing leg carries what mitmproxy answered, not what the server did
        got = client_status(logs)
        for e in entries:
            status = got.get(e["tool_name"])
            if e["kind"] == "request" and status != e["http_status"]:
                if status is None or 200 <= status < 300:
                    raise RuntimeError(f"har-mitmproxy-raw: unexpected client status {status} for {e['tool_name']}")
                e["reason"] = (f"HTTP {status} from mitmproxy (Bad Gateway page) to the client; upstream: "
                               f"{e['reason']} (status {e['http_status'] or 'none'})")
                e.update(http_status=status, outcome="HTTP_ERROR", final_response=False)

    r.finish("HAR from mitmdump in reverse-proxy mode: raw client -> mitmdump -> raw server: a gzip-compressed "
             "response, error shapes, an SSE body cut by the server and a connection closed without a response.",
             annotate, extra={"recorder": "mitmproxy"}, har_annotate=har_annotate, wire_annotate=wire_annotate)


def har_chromium_ts(port):
    r = Run("har-chromium-ts", port)
    r.server_ts("sse")
    r.proxy()
    r.wire_capture()
    r.client_browser("chromium")

    def annotate(entries, records, logs):
        for e in entries:
            if e["jsonrpc_id"] == "4" and e["tool_name"] == "slow":
                e["reason"] += ("; the page aborted this fetch after 250 ms (AbortController) - no "
                                "notifications/cancelled and revision 2025-11-25, so not CANCELLED")
            if e["http_method"] == "OPTIONS":
                e["reason"] += "; CORS preflight sent by Chromium before the first POST with custom headers"

    def har_annotate(entries, records, logs):
        dropped = [f"{e['http_method']} {e['path']} -> {e['http_status']}" for e in entries if e["http_method"] == "OPTIONS"]
        entries[:] = [e for e in entries if e["http_method"] != "OPTIONS"]
        for i, e in enumerate(entries, 1):
            e["n"] = i
            if e["http_method"] == "DELETE":
                e["reason"] += "; the HAR marks it net::ERR_ABORTED (the context closed right after) but keeps status 200"
        doc_extra["omitted_from_recording"] = [d + " (CORS preflight: on the wire, but Chromium's HAR has no entry)"
                                               for d in dropped]
    doc_extra = {"recorder": "chromium"}
    r.finish("HAR from headless Chromium (playwright-core recordHar): a page on another localhost origin calls "
             "the TS server with fetch (CORS): initialize, initialized, echo, fail, slow (SSE progress), a slow "
             "call aborted by the page after 250 ms, DELETE.", annotate, extra=doc_extra, har_annotate=har_annotate)


def auth_401(port):
    r = Run("auth-401-sdk-retry", port)
    r.server_ts("sse", auth=True)
    r.proxy()
    r.capture_start()
    r.client_ts("ts-client", "echo:fresh token,sleep:2000,echo:after expiry,delete", auth=True)

    def annotate(entries, records, logs):
        posts = [(e, rec) for e, rec in zip(entries, records) if e["kind"] == "request"]
        for (a, ra), (b, rb) in zip(posts, posts[1:]):
            if a["http_status"] != 401:
                continue
            # the SDK re-sent the very same message after auth(): same id, same bytes, new Authorization
            assert (a["jsonrpc_id"], ra["req_body"]) == (b["jsonrpc_id"], rb["req_body"]), (a, b)
            assert truth.hget(ra["req_headers"], "authorization") != truth.hget(rb["req_headers"], "authorization")
            www = truth.hget(ra["resp_headers"], "www-authenticate")
            a["reason"] += f" (WWW-Authenticate: {www.split(',')[0]}, {www.split(',')[1].strip()})"
            if b["rpc_method"] == "initialize":
                # report-schema section 4: lifecycle requests are never linked as repeats
                b["reason"] += ("; the SDK re-sent this initialize (same id 0, same body) after the 401 and a "
                                "client_credentials token, but initialize is never linked as a repeat (report-schema 4)")
            else:
                b["retry_of"] = a["n"]
                b["retry_origin"] = "sdk"
                b["reason"] += ("; the SDK re-sent the same message (same id, same body, new Bearer token) right "
                                "after the 401 and a new client_credentials token: auth retry")
        assert sum(e["retry_origin"] == "sdk" for e in entries) == 1
    r.finish("TS client with the SDK's own ClientCredentialsProvider -> OAuth-protected TS server. The first "
             "initialize carries no token: 401 + WWW-Authenticate (resource_metadata on a local authorization "
             "server, not captured); the SDK discovers it, gets a client_credentials token and re-sends the same "
             "initialize. Tokens live 1.5 s: after a 2 s pause tools/call echo gets 401 (Token has expired), the "
             "SDK gets a new token and re-sends the same message (same id and body).", annotate)


def session_expired(port):
    r = Run("session-expired-reinit", port)
    r.server_ts("sse")
    r.proxy()
    r.capture_start()
    win = r.client_ts("ts-client", "echo:before restart,sleep:3000,reinit_echo:after restart,delete", wait=False)
    end = time.time() + 15
    while time.time() < end and not any(x.get("step") == "tools/call" for x in read_jsonl(win[3])):
        time.sleep(0.05)
    r.restart_server_ts("sse")
    r.wait_client(win)

    def annotate(entries, records, logs):
        log = logs["ts-client"]
        assert any(x.get("step") == "app_reinit" for x in log), "the client did not re-initialize"
        calls = find(entries, rpc_method="tools/call")
        before, expired, again = calls
        assert expired["http_status"] == 404 and before["session"] == expired["session"] != again["session"]
        expired["reason"] += ("; the server was restarted ~3 s earlier and no longer knows the session; the TS SDK "
                              "throws StreamableHTTPError 404 and does not re-initialize by itself")
        again["retry_of"] = expired["n"]
        again["retry_origin"] = "application"
        again["reason"] += ("; after the 404 the application closed the client, connected a new transport "
                            "(initialize without session id -> new Mcp-Session-Id) and called echo again with a new "
                            "id: report-schema 4 rule 4")
        for e in entries:
            if e["http_method"] == "GET" and e["http_status"] == 404:
                e["reason"] += ("; the SDK reconnecting its standalone GET stream (no Last-Event-ID) after the "
                                "restart cut it, with the old session id")
            elif e["http_method"] == "GET" and e["session"] == before["session"]:
                e["reason"] += "; cut when the server process was stopped (no terminating chunk)"
    r.finish("TS client -> TS server (SSE): echo, then the server process is stopped and started again on the "
             "same port (all sessions forgotten). The SDK retries its standalone GET stream (404 twice); the next "
             "tools/call gets 404 Session not found; the application re-initializes (new session) and calls echo "
             "again with a new id.", annotate)


# --- retry hygiene (issue 24) and credentials in requests (issue 25) ----------------------------

def link_app_retries(entries, records, logs, label="ts-client"):
    """Links each tools/call to the latest earlier one with equivalent params (report-schema 4, rule 3:
    a new id in the same session after a failure: application). Checks the client log agrees: one
    app_retry step per link."""
    last = {}
    links = 0
    for e, rec in zip(entries, records):
        if e["rpc_method"] != "tools/call":
            continue
        body = json.loads(rec["req_body"])
        key = json.dumps(hygiene.normalise_params(body["params"]), sort_keys=True)
        prev = last.get(key)
        if prev is not None and prev["outcome"] not in ("TOOL_SUCCESS", "RPC_SUCCESS"):
            assert prev["session"] == e["session"] and prev["jsonrpc_id"] != e["jsonrpc_id"], (prev, e)
            e["retry_of"] = prev["n"]
            e["retry_origin"] = "application"
            e["reason"] += (f"; the application called it again with a new id after entry {prev['n']} "
                            f"ended {prev['outcome']}")
            links += 1
        last[key] = e
    retries = sum(x.get("step") == "app_retry" for x in logs[label])
    assert links == retries, f"{links} retry links, but the client logged {retries} app_retry steps"


WEATHER = {"city": "Paris"}
EMAIL = {"to": "ops@example.com", "subject": "deploy finished"}


def hygiene_unsafe_retry(port):
    r = Run("hygiene-unsafe-retry", port)
    r.server_ts("json", hygiene_tools=True)
    r.proxy("--inject", "status=503&match=send_email", "--inject", "status=503&match=get_weather",
            "--inject", "status=503&match=set_status")
    r.capture_start()
    r.client_ts("ts-client", "list,plan:0,plan:1,plan:2,delete", plans=[
        {"tool": "send_email", "args": EMAIL, "attempts": 2, "delays_ms": [300]},
        {"tool": "get_weather", "args": WEATHER, "attempts": 2, "delays_ms": [300]},
        {"tool": "set_status", "args": {"status": "green"}, "attempts": 2, "delays_ms": [300]}])
    r.expect_findings = ["unsafe_retry", None, None]
    r.finish("TS client -> TS server (JSON responses) with send_email (annotations {destructiveHint: true}), "
             "get_weather (annotations {readOnlyHint: true}) and set_status (annotations {idempotentHint: true}); "
             "the client lists the tools first. The fault proxy answers the first call of each with 503 (empty "
             "body); the application calls each again with a new id 300 ms later. Retrying send_email after a 503 "
             "(it may have run) is unsafe_retry; retrying the read-only get_weather or the idempotent set_status "
             "is fine.",
             lambda e, rec, logs: link_app_retries(e, rec, logs))


def hygiene_unsafe_uncertain(port):
    r = Run("hygiene-unsafe-uncertain", port)
    r.server_ts("json", hygiene_tools=True)
    r.proxy("--inject", "status=close&match=ops@example.com&count=2", "--inject", "delay=1000&match=oncall@example.com")
    r.capture_start()
    r.client_ts("ts-client", "list,plan:0,plan:1,sleep:1000,delete", plans=[
        {"tool": "send_email", "args": EMAIL, "attempts": 3, "delays_ms": [300]},
        {"tool": "send_email", "args": {"to": "oncall@example.com", "subject": "disk full"}, "attempts": 2,
         "delays_ms": [300], "timeout_ms": 300}])
    r.expect_findings = ["unsafe_retry", "unsafe_retry;no_backoff", "unsafe_retry"]

    def annotate(entries, records, logs):
        link_app_retries(entries, records, logs)
        sent = [x["text"] for x in logs["ts-client"] if x.get("step") == "tools/call" and x.get("ok")]
        cancelled = find(entries, outcome="CANCELLED")
        assert len(cancelled) == 1 and len(find(entries, outcome="NO_RESPONSE")) == 2, entries
        cancelled[0]["reason"] += ("; the SDK's 300 ms request timeout fired while the proxy held the request "
                                   "(forwarded 1 s late): the server still ran the tool")
        for e in find(entries, rpc_method="tools/call", outcome="NO_RESPONSE"):
            e["reason"] += "; the proxy closed the connection after reading the request (never forwarded)"
        assert sent == ["sent email #1 to ops@example.com: deploy finished",
                        "sent email #2 to oncall@example.com: disk full"], sent
    r.finish("TS client -> TS server (JSON), send_email (annotations {destructiveHint: true}), listed first. The "
             "proxy closes the connection on the first two send_email(ops) calls without a response (NO_RESPONSE; "
             "never forwarded); the application retries 300 ms after each failure, the third attempt succeeds. "
             "Then send_email(oncall) with the SDK's 300 ms request timeout: the proxy forwards it 1 s late, the "
             "SDK times out and sends notifications/cancelled (CANCELLED; the server still sent that email and "
             "answered later), the application calls again 300 ms later (a second email).", annotate)


def hygiene_retry_after(port):
    r = Run("hygiene-retry-after", port)
    r.server_ts("json", hygiene_tools=True)
    r.proxy("--inject", "status=429&match=Paris&retry_after=2", "--inject", "status=503&match=Oslo&retry_after=date:2")
    r.capture_start()
    r.client_ts("ts-client", "list,plan:0,plan:1,delete", plans=[
        {"tool": "get_weather", "args": {"city": "Paris"}, "attempts": 2, "delays_ms": [300], "retry_after": "ignore"},
        {"tool": "get_weather", "args": {"city": "Oslo"}, "attempts": 2, "delays_ms": [300], "retry_after": "honour"}])
    r.expect_findings = ["retry_after_ignored", None]
    r.finish("TS client -> TS server (JSON), read-only get_weather. The fault proxy answers get_weather Paris with "
             "429 + Retry-After: 2 (delay-seconds); the application ignores it and calls again 300 ms later. Then "
             "get_weather Oslo gets 503 + Retry-After as an HTTP-date 2-3 s ahead (+ a Date header); the "
             "application reads the header (its own fetch wrapper: the SDK does not expose it) and calls again "
             "300 ms after the date.", lambda e, rec, logs: link_app_retries(e, rec, logs))


def hygiene_invalid_params(port):
    r = Run("hygiene-invalid-params", port)
    r.server_py()
    r.proxy()
    r.capture_start()
    r.client_ts("ts-client", "list,invalid_args_resend,delete")

    def annotate(entries, records, logs):
        bad = [(e, rec) for e, rec in zip(entries, records) if e["rpc_method"] == "tools/call"
               and isinstance(json.loads(rec["req_body"])["params"].get("arguments"), str)]
        assert len(bad) == 2, bad
        (a, _), (b, _) = bad
        codes = [x.get("code") for x in logs["ts-client"] if x.get("step") == "invalid_args"]
        assert codes == [-32602, -32602], codes
        for e, rec in bad:
            err = hygiene.final_message(rec)["error"]
            e["reason"] += f"; arguments is a string, the server answered error {json.dumps(err)} on HTTP 200"
        b["retry_of"] = a["n"]
        b["retry_origin"] = "application"
        b["reason"] += "; the application sent the same params again with a new id 300 ms after the -32602"
        fixed = [e for e in entries if e["rpc_method"] == "tools/call" and e not in (a, b)]
        assert len(fixed) == 1 and fixed[0]["outcome"] == "TOOL_SUCCESS"
        fixed[0]["reason"] += "; arguments fixed: not equivalent to the failed calls, so not a repeat"
    r.expect_findings = ["unchanged_after_invalid_params"]
    r.finish("TS client -> Python server (2025-11-25 initialize). The application sends tools/call echo with "
             "`arguments` a string through the SDK's low-level client.request: the Python server answers JSON-RPC "
             "-32602; the application sends the very same params again with a new id (-32602 again), then calls "
             "echo with proper arguments.", annotate)


def hygiene_invalid_response(port):
    r = Run("hygiene-invalid-response", port)
    r.server_raw()
    r.proxy()
    r.capture_start()
    r.client_raw("raw-client", "retry_invalid:malformed,retry_invalid:both,retry_invalid:content_not_array")
    r.expect_findings = ["replay_after_invalid_response"] * 3
    r.finish("raw_client.py -> raw_server.py (2026-07-28 style, stateless): tools/call malformed (cut JSON), both "
             "(result and error) and content_not_array (invalid tool result); after each invalid answer the "
             "client waits 300 ms and sends the same call again with a new id. None of these outcomes is "
             "uncertain, so no unsafe_retry although the tools were never listed.",
             lambda e, rec, logs: link_app_retries(e, rec, logs, "raw-client"))


def hygiene_no_backoff(port):
    r = Run("hygiene-no-backoff", port)
    r.server_ts("json", hygiene_tools=True)
    r.proxy("--inject", "status=503&match=get_weather&count=5")
    r.capture_start()
    r.client_ts("ts-client", "list,plan:0,delete", plans=[
        {"tool": "get_weather", "args": {"city": "Berlin"}, "attempts": 5, "delays_ms": [100]}])
    r.expect_findings = [None, "no_backoff", "no_backoff;too_many_attempts", "no_backoff;too_many_attempts"]
    r.finish("TS client -> TS server (JSON), read-only get_weather (so no unsafe_retry). The fault proxy answers "
             "five get_weather calls with 503; the application retries with a fixed 100 ms delay, 5 attempts in "
             "all, then gives up: attempts 3-5 do not back off, attempts 4 and 5 exceed 3.",
             lambda e, rec, logs: link_app_retries(e, rec, logs))


def hygiene_backoff_ok(port):
    r = Run("hygiene-backoff-ok", port)
    r.server_ts("json", hygiene_tools=True)
    r.proxy("--inject", "status=503&match=get_weather&count=2")
    r.capture_start()
    r.client_ts("ts-client", "list,plan:0,delete", plans=[
        {"tool": "get_weather", "args": {"city": "Madrid"}, "attempts": 3, "delays_ms": [200, 400, 800]}])
    r.expect_findings = [None, None]
    r.finish("TS client -> TS server (JSON), read-only get_weather. The fault proxy answers the first two calls "
             "with 503; the application backs off exponentially (200 ms, then 400 ms) and the third attempt "
             "succeeds: no findings.", lambda e, rec, logs: link_app_retries(e, rec, logs))


# fake credentials: each a string that must never appear in any mcp-trace output
SECRETS = {"bearer": "fake-bearer-8c1f4e2a9b7d6035", "access_token": "fake-access-tok-3e9a1c7b5d20",
           "api_key": "fake-api-key-q7w8e9r0t1y2", "x_api_key": "fake-x-api-key-h5j6k7l8",
           "cookie": "fake-cookie-z1x2c3v4b5", "token": "fake-query-token-p0o9i8u7",
           "code": "fake-oauth-code-a1s2d3f4", "basic_password": "fake-basic-pass-m4n5b6"}


def secrets_in_request(port):
    import base64
    r = Run("secrets-in-request", port)
    r.server_ts("sse")
    r.proxy()
    r.capture_start()
    q = f"?access_token={SECRETS['access_token']}&api_key={SECRETS['api_key']}"
    r.client_ts("ts-client", "list,echo:with credentials,delete", url=r.url + q, headers={
        "Authorization": f"Bearer {SECRETS['bearer']}", "X-Api-Key": SECRETS["x_api_key"],
        "Cookie": f"sid={SECRETS['cookie']}"})
    init = {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "curl", "version": "7.88.1"}}}
    r.manual("curl", ["curl", "-sS", "-m", "10", r.url + f"?token={SECRETS['token']}&code={SECRETS['code']}",
                      "--user", f"samples:{SECRETS['basic_password']}", "-H", f"X-Api-Key: {SECRETS['x_api_key']}",
                      "-H", "content-type: application/json", "-H", "accept: application/json, text/event-stream",
                      "--data-raw", json.dumps(init)])
    basic = base64.b64encode(f"samples:{SECRETS['basic_password']}".encode()).decode()
    secrets = list(SECRETS.values()) + [basic]

    def annotate(entries, records, logs):
        raw = r.capture.read_bytes()
        for sec in secrets:  # every secret really is on the wire (the Basic password only base64-encoded)
            assert sec == SECRETS["basic_password"] or sec.encode() in raw, sec
        for e, rec in zip(entries, records):
            h = {k.lower(): v for k, v in rec["req_headers"]}
            carried = [k for k in ("authorization", "x-api-key", "cookie") if k in h]
            e["reason"] += f"; request carries {', '.join(carried) or 'no credential header'}" + (
                " and credentials in the query" if "token=" in e["path"] else "")
    r.finish("TS client with fixed credentials (requestInit headers Authorization: Bearer, X-Api-Key, Cookie) and "
             "a URL with ?access_token=&api_key= -> TS server (which ignores them); then curl sends an initialize "
             "with Basic auth (--user), X-Api-Key and ?token=&code=. All credentials are fake; `secrets` lists "
             "every one as it appears on the wire: none may appear in any mcp-trace output (report-schema 1b).",
             annotate, extra={"secrets": secrets})


# --- TLS (issue 22) ------------------------------------------------------------------------
# proxy.py terminates TLS on the captured port with the test-only certificate for localhost and
# speaks TLS to the real server (node:https / uvicorn --ssl-*), so the relay log is the plaintext
# truth and the capture is the client's real TLS. The key log is the client's own.

def tls_ts_https(port):
    r = Run("tls-ts-https", port, tls={"alpn": "http/1.1"})
    r.server_ts("json")
    r.proxy()
    r.capture_start()
    r.client_ts("ts-client", "list,echo:over tls,fail,delete")
    r.finish("TS client (undici fetch, NODE_OPTIONS=--tls-keylog) -> https://localhost (TLS 1.3, the relay selects ALPN "
             "http/1.1) -> TS server over node:https, JSON responses: initialize, notifications/initialized, "
             "standalone GET stream, tools/list, echo, fail (isError), DELETE.")
    # what users do with a key log and Wireshark's tools: the same capture, secrets embedded in a pcapng
    # Decryption Secrets Block (editcap --inject-secrets), no key log beside it
    dsb = SAMPLES / "tls-dsb.pcapng"
    subprocess.run(["editcap", "--inject-secrets", f"tls,{r.keys}", str(r.capture), str(dsb)], check=True, timeout=60)
    doc = json.loads((SAMPLES / "tls-ts-https.truth.json").read_text())
    doc.update(capture=dsb.name, keylog=None, secrets_embedded=True,
               description="tls-ts-https.pcap with its key log embedded by `editcap --inject-secrets tls,tls-ts-https.keys` "
                           "(pcapng Decryption Secrets Block): decrypts without --keylog. " + doc["description"],
               made_by=doc["made_by"] + ", then editcap --inject-secrets (pcapng with a Decryption Secrets Block)")
    r.write_truth(SAMPLES / "tls-dsb.truth.json", doc)


def tls_py_tls12(name, ciphers, alpn):
    def scenario(port):
        r = Run(name, port, tls={"alpn": alpn})
        r.server_py()
        r.proxy()
        r.capture_start()
        r.client_py("py-client", "list,echo:over tls 1.2,fail", tls_max="1.2", tls_ciphers=ciphers)
        r.finish(f"Python client whose httpx2 client has an ssl.SSLContext capped at TLS 1.2 and limited to {ciphers} "
                 f"(keylog_filename) -> https://localhost ({'ALPN ' + alpn if alpn else 'no ALPN selected'}) -> Python "
                 "server (uvicorn --ssl-certfile), 2026-07-28 defaults: server/discover, tools/list, echo, fail.")
    return scenario


def tls_curl(port):
    r = Run("tls-curl", port, tls={"alpn": "http/1.1"})
    r.server_ts("json")
    r.proxy()
    r.capture_start()
    env = {**os.environ, "SSLKEYLOGFILE": str(r.keys)}
    base = ["curl", "--http1.1", "-sS", "-m", "10", "--cacert", str(CERTS / "ca.pem"), "-D", "-",
            "-H", "content-type: application/json", "-H", "accept: application/json, text/event-stream"]
    init = {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "curl", "version": "7.88.1"}}}
    out = r.manual("curl-init", base + [r.url, "--data-raw", json.dumps(init)], env)
    sid = [ln.split(":", 1)[1].strip() for ln in out.stdout.splitlines() if ln.lower().startswith("mcp-session-id:")][0]
    call = {"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {"name": "echo", "arguments": {"text": "curl over tls"}}}
    r.manual("curl-call", base + ["-H", f"mcp-session-id: {sid}", "-H", "mcp-protocol-version: 2025-11-25",
                                  r.url, "--data-raw", json.dumps(call)], env)
    r.made_by.append("curl --http1.1 with SSLKEYLOGFILE (two invocations, one connection each)")
    r.finish("curl --http1.1 (SSLKEYLOGFILE) POSTs initialize, then tools/call echo with the session id, to "
             "https://localhost (relay selects ALPN http/1.1) -> TS server over node:https (JSON responses).")


def tls_missing_key(port):
    r = Run("tls-missing-key", port, tls={"alpn": "http/1.1"})
    r.server_ts("json")
    r.proxy()
    r.capture_start()
    r.client_ts("ts-client", "list,echo:first run,delete")
    time.sleep(0.5)
    r.client_ts("ts-client-2", "list,echo:second run,delete")
    extra = {}

    def annotate(entries, records, logs):
        conns = tls_truth.wire_connections(r.capture, r.port)
        assert len(conns) >= 2, conns
        # the second run's connection that carried its initialize loses its secrets
        init2 = [rec for e, rec in zip(entries, records) if e["client"] == "ts-client-2" and e["rpc_method"] == "initialize"][0]
        victim = [c for c in conns if c["client_port"] == init2["client_port"]][0]
        removed_keys = SAMPLES / "tls-missing-key.removed.keys"
        removed = tls_truth.drop_secrets(r.keys, victim["client_random"], removed_keys)
        assert removed >= 1, "no key log line for the victim's client random"
        r.no_key_streams = (victim["tcp_stream"],)
        extra["missing_key"] = {"tcp_stream": victim["tcp_stream"], "client_addr": victim["client"],
                                "client_random": victim["client_random"], "removed_keylog_lines": removed,
                                "removed_to": removed_keys.name}
        for e, rec in zip(entries, records):
            if rec["client_port"] == victim["client_port"]:
                e["reason"] += (f"; on tcp_stream {victim['tcp_stream']}, whose secrets were removed from the key log: "
                                "not decryptable (no_key)")
    r.finish("Two TS client runs (NODE_OPTIONS=--tls-keylog, one key log) -> https://localhost (TLS 1.3, ALPN http/1.1) "
             "-> TS server over node:https. After the recording, the key log lines of the connection that carried the "
             "second run's initialize were removed (see connections: its client_random): that connection is no_key, "
             "its exchanges are in entries (they happened) but cannot be decrypted; the others decrypt.", annotate,
             extra=extra)


# --- OpenTelemetry trace context in _meta (SEP-414) -------------------------------------------
# With an OpenTelemetry SDK TracerProvider installed, mcp 2.3.0's JSONRPCDispatcher.send_raw_request
# (mcp/shared/jsonrpc_dispatcher.py) wraps every outgoing request in a CLIENT span "MCP send <method>
# [<name>]" and injects that span's W3C traceparent into params._meta (mcp/shared/_otel.py
# inject_trace_context -> opentelemetry.propagate.inject); notifications (JSONRPCDispatcher.notify) get
# none. Without an SDK the API's no-op span has an invalid context and the propagator writes nothing.

def parse_traceparent(tp):
    version, trace_id, span_id, flags = tp.split("-")
    assert version == "00" and len(trace_id) == 32 and len(span_id) == 16 and len(flags) == 2, tp
    return trace_id, span_id


def otel_py_client(port):
    r = Run("otel-py-client", port)
    spans_path = SAMPLES / "otel-py-client.spans.json"
    if spans_path.exists():
        spans_path.unlink()
    r.server_ts("sse")
    r.proxy("--inject", "status=503&match=retried-after-503")
    r.capture_start()
    r.client_py("py-otel-client", "list,echo:traced,fail,prompt_unknown,retry_echo:retried-after-503",
                otel_spans=spans_path)
    r.client_ts("ts-client", "list,echo:not traced,delete")

    def annotate(entries, records, logs):
        link_app_retries(entries, records, logs, "py-otel-client")
        spans = read_jsonl(spans_path)
        by_ids = {(s["trace_id"], s["span_id"]): s for s in spans}
        assert len(by_ids) == len(spans), "span ids repeat"
        sent = set()
        for e, rec in zip(entries, records):
            body = truth.parse_body(rec)
            meta = (body.get("params") or {}).get("_meta") if isinstance(body, dict) else None
            tp = (meta or {}).get("traceparent")
            e["traceparent"] = tp
            if e["client"] == "ts-client" or e["kind"] != "request":
                # the TS SDK 1.32.2 has no OpenTelemetry; the Python SDK injects into requests only
                assert tp is None, (e, tp)
                if e["kind"] in ("request", "notification"):
                    e["reason"] += "; no _meta.traceparent"
                continue
            assert tp, f"Python client request without traceparent: {e}"
            assert (meta or {}).get("tracestate") is None, meta
            span = by_ids[parse_traceparent(tp)]
            sent.add(parse_traceparent(tp))
            # the traceparent is the SDK's own CLIENT span of this very request
            assert span["kind"] == "CLIENT" and span["scope"] == "mcp-python-sdk", span
            assert span["attributes"]["jsonrpc.request.id"] == e["jsonrpc_id"], (span, e)
            assert span["attributes"]["mcp.method.name"] == e["rpc_method"], (span, e)
            # flags 03 seen: sampled + random trace id (W3C Trace Context level 2), as the span has them
            assert tp.split("-")[3] == span["trace_flags"], (tp, span)
            e["reason"] += f"; _meta.traceparent = the SDK's CLIENT span {span['name']!r} of this request"
            if span["parent_span_id"]:
                parent = by_ids[(span["trace_id"], span["parent_span_id"])]
                e["reason"] += f" (child of the application span {parent['name']!r})"
        # every CLIENT span the SDK made went out as one request's traceparent, and nothing else did
        client_spans = {(s["trace_id"], s["span_id"]) for s in spans if s["kind"] == "CLIENT"}
        assert client_spans == sent, (client_spans, sent)
        first = entries[0]
        if first["rpc_method"] == "server/discover" and first["http_status"] == 400:
            first["reason"] += "; era probe: the 2026-07-28 client falls back to initialize (not a retry)"
        failed = find(entries, rpc_method="tools/call", http_status=503)
        assert len(failed) == 1 and failed[0]["client"] == "py-otel-client", failed
        retry = [e for e in entries if e["retry_of"] == failed[0]["n"]]
        assert len(retry) == 1 and retry[0]["outcome"] == "TOOL_SUCCESS", retry
        a, b = parse_traceparent(failed[0]["traceparent"]), parse_traceparent(retry[0]["traceparent"])
        assert a[0] == b[0] and a[1] != b[1], (a, b)
        retry[0]["reason"] += " (same trace as the 503'd attempt, its own span)"
        prompt = find(entries, rpc_method="prompts/get")
        assert len(prompt) == 1 and prompt[0]["outcome"] == "JSONRPC_ERROR", prompt
    r.expect_findings = ["unsafe_retry"]
    r.finish("Python SDK client with the OpenTelemetry SDK configured (TracerProvider + SimpleSpanProcessor + a "
             "JSON-lines exporter writing otel-py-client.spans.json) -> TS server (SSE). mcp 2.3.0 opens a CLIENT "
             "span per outgoing request and injects its W3C traceparent into params._meta: server/discover (400, "
             "era fallback), initialize, tools/list, echo (success), fail (isError), prompts/get of an unknown "
             "prompt (JSON-RPC -32602 on 200), then echo answered 503 by the fault proxy and called again by the "
             "application 300 ms later with a new id; both echo attempts run inside one application span "
             "(retry_echo), so they share a trace id. Notifications carry no traceparent. Then a TS SDK client "
             "(no OpenTelemetry: no _meta at all) lists the tools and calls echo in its own session. Each entry's "
             "`traceparent` is the value sent in params._meta (null when none); the spans file (JSON lines, "
             "one finished span per line) is the client process's own span export.",
             annotate, extra={"spans": spans_path.name, "spans_format": "jsonl"})


SCENARIOS = {
    "ts-streamable-sse": ts_streamable_sse, "ts-streamable-json": ts_streamable_json, "py-default": py_default,
    "py-legacy-handshake": py_legacy_handshake, "ts-client-py-server": ts_client_py_server,
    "py-client-ts-server": py_client_ts_server, "legacy-sse": legacy_sse, "fault-503-app-retry": fault_503,
    "sse-resume": sse_resume, "curl-replay": curl_replay, "second-client": second_client,
    "concurrent": concurrent, "raw-shapes": raw_shapes, "mrtr": mrtr, "mrtr-py": mrtr_py, "ipv6": ipv6,
    "any-iface": any_iface, "pcapng": pcapng, "snaplen-200": snaplen, "stream-open": stream_open,
    "har-mitmproxy-ts": har_mitm_ts, "har-mitmproxy-raw": har_mitm_raw, "har-chromium-ts": har_chromium_ts,
    "auth-401-sdk-retry": auth_401, "session-expired-reinit": session_expired,
    "hygiene-unsafe-retry": hygiene_unsafe_retry, "hygiene-retry-after": hygiene_retry_after,
    "hygiene-unsafe-uncertain": hygiene_unsafe_uncertain,
    "hygiene-invalid-params": hygiene_invalid_params, "hygiene-invalid-response": hygiene_invalid_response,
    "hygiene-no-backoff": hygiene_no_backoff, "hygiene-backoff-ok": hygiene_backoff_ok,
    "secrets-in-request": secrets_in_request,
    "tls-ts-https": tls_ts_https,
    "tls-py-tls12-gcm": tls_py_tls12("tls-py-tls12-gcm", "ECDHE-RSA-AES256-GCM-SHA384", "http/1.1"),
    "tls-py-tls12-chacha": tls_py_tls12("tls-py-tls12-chacha", "ECDHE-RSA-CHACHA20-POLY1305", ""),
    "tls-curl": tls_curl, "tls-missing-key": tls_missing_key,
    "otel-py-client": otel_py_client,
}


def main():
    names = sys.argv[1:] or list(SCENARIOS)
    failed = []
    for i, name in enumerate(SCENARIOS):
        if name in names:
            for attempt in (1, 2, 3):
                try:
                    SCENARIOS[name](18400 + 10 * i)
                    break
                except CaptureLoss as e:
                    print(f"{name}: attempt {attempt}: {e}", flush=True)
                    if attempt == 3:
                        failed.append(name)
                except Exception as e:  # noqa: BLE001 - report and go on; leftovers are killed below
                    failed.append(name)
                    print(f"{name}: FAILED {e!r}", flush=True)
                    break
                finally:
                    for p in Run.all_procs:
                        if p.poll() is None:
                            os.killpg(p.pid, signal.SIGKILL)
                    Run.all_procs.clear()
    if failed:
        sys.exit(f"failed scenarios: {failed}")


if __name__ == "__main__":
    main()
