#!/usr/bin/env python3
"""Drives one live capture inside a network namespace of its own (run it under `unshare -n`).

usage: live_scenario.py MCP_TRACE WORKDIR [--tls]

Brings up the namespace's loopback, starts `mcp-trace live -i lo` with the raw capture, the
exchanges table and JSON lines on stdout, then the TypeScript SDK server and two runs of the
TypeScript SDK client from samples/generator (the steps of the ts-streamable-sse recording),
then stops the capture with SIGINT. Writes WORKDIR/scenario.json: when each JSON line reached
this script, when each client run started and ended, the lines themselves and the exit status.
With --tls the server speaks HTTPS (the generator's test-only certificate) and the client
logs its TLS secrets with NODE_OPTIONS=--tls-keylog into WORKDIR/keys.log, a file that does not
exist until the client's first connection: `mcp-trace live --keylog` follows it as it grows.
Nothing leaves the namespace.
"""

import json
import os
import signal
import socket
import subprocess
import sys
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
GEN = ROOT / "samples" / "generator"
PORT = 18601
# The client steps of samples/ts-streamable-sse (see samples/generator/run_all.py), with a pause
# of 2 s (no traffic) after echo, so the traffic is still running when its first rows are due.
STEPS = "list,echo:hello,sleep:2000,fail,unknown,badargs,prompt_unknown,slow:2,delete"


def wait_port(port, timeout=20.0):
    end = time.time() + timeout
    while time.time() < end:
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=0.5):
                return
        except OSError:
            time.sleep(0.1)
    raise RuntimeError(f"port {port} never opened")


def main():
    binary, work = sys.argv[1], Path(sys.argv[2])
    tls = "--tls" in sys.argv[3:]
    work.mkdir(parents=True, exist_ok=True)
    keys = work / "keys.log"
    certs = GEN / "certs"
    subprocess.run(["ip", "link", "set", "lo", "up"], check=True)
    live = subprocess.Popen(
        [binary, "live", "-i", "lo", "-f", f"tcp port {PORT}", "--duration", "120s",
         "-w", str(work / "raw.pcapng"), "-o", str(work / "live-table.jsonl"),
         "--summary", str(work / "live-summary.json"), "--jsonl", "-"]
        + (["--keylog", str(keys)] if tls else []),
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    arrivals = []

    def read_rows():
        for line in live.stdout:
            arrivals.append((time.time(), line))

    reader = threading.Thread(target=read_rows, daemon=True)
    reader.start()
    err_lines = []
    started = threading.Event()

    def read_err():
        for line in live.stderr:
            err_lines.append(line)
            if "capturing on" in line:
                started.set()

    threading.Thread(target=read_err, daemon=True).start()
    if not started.wait(20):
        live.kill()
        raise RuntimeError("mcp-trace live did not start: " + "".join(err_lines))
    server = subprocess.Popen(
        ["node", str(GEN / "ts" / "server.mjs"), "--port", str(PORT), "--mode", "sse",
         "--lifetime", "120"]
        + (["--tls-cert", str(certs / "server.pem"), "--tls-key", str(certs / "server.key")] if tls else []),
        stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True, cwd=GEN)
    runs = []
    try:
        wait_port(PORT)
        for _ in range(2):
            start = time.time()
            url = f"https://localhost:{PORT}/mcp" if tls else f"http://127.0.0.1:{PORT}/mcp"
            env = dict(os.environ)
            if tls:
                env.update(NODE_OPTIONS=f"--tls-keylog={keys}", NODE_EXTRA_CA_CERTS=str(certs / "ca.pem"))
            subprocess.run(
                ["node", str(GEN / "ts" / "client.mjs"), "--url", url, "--steps", STEPS],
                cwd=GEN, check=True, timeout=60, stdout=subprocess.DEVNULL, env=env)
            runs.append({"start": start, "end": time.time()})
        # Rows come within a second of their response; give the last ones that second.
        time.sleep(1.5)
    finally:
        live.send_signal(signal.SIGINT)
        status = live.wait(60)
        server.kill()
        server.wait(10)
    reader.join(10)
    (work / "scenario.json").write_text(json.dumps({
        "runs": runs,
        "arrivals": [t for t, _ in arrivals],
        "rows": [json.loads(line) for _, line in arrivals],
        "status": status,
        "stderr": "".join(err_lines),
    }))


if __name__ == "__main__":
    main()
