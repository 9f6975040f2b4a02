"""The Python SDK's MCP server (py/server.py's tools) served by hypercorn, for the h2 recordings.

usage: python py/h2_server.py --port N --log FILE [--certfile F --keyfile F] [--fail-once TEXT] [--lifetime S]
hypercorn speaks HTTP/2 on TLS (ALPN h2) and on plaintext (h2c prior knowledge and Upgrade: h2c).
An ASGI middleware in front of the SDK's app does what proxy.py does for the HTTP/1.1 recordings:
it logs every exchange as the app saw it (proxy.py's record fields, so truth.py reads it), and with
--fail-once it answers the first POST whose body contains TEXT with 503 and an empty body, without
passing it on. Extra tool: `nap` sleeps (for a client that gives up on a call).
"""

import argparse
import asyncio
import json
import os
import sys
import time

from hypercorn.asyncio import serve
from hypercorn.config import Config

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from server import mcp  # noqa: E402  (echo, fail, slow, approve)


@mcp.tool()
async def nap(seconds: float) -> str:
    """Sleeps, then answers."""
    await asyncio.sleep(seconds)
    return f"slept {seconds} s"


class Recorder:
    """ASGI middleware: proxy.py's log records from the app's side, plus a one-time 503."""

    def __init__(self, app, log_path, fail_once):
        self.app, self.log_path, self.fail_once = app, log_path, fail_once
        self.records = []

    def flush(self):
        with open(self.log_path, "w") as f:
            json.dump(sorted(self.records, key=lambda r: r["t_req"]), f, indent=1)

    async def __call__(self, scope, receive, send):
        if scope["type"] != "http":
            return await self.app(scope, receive, send)
        path = scope["path"] + ("?" + scope["query_string"].decode() if scope["query_string"] else "")
        rec = {"seq": len(self.records) + 1, "client_port": scope["client"][1], "t_req": time.time(),
               "http_version": scope["http_version"], "method": scope["method"], "path": path,
               "req_headers": [[k.decode("latin-1"), v.decode("latin-1")] for k, v in scope["headers"]],
               "req_body": "", "status": None, "resp_headers": [], "resp_body": "", "t_resp_end": None,
               "t_disconnect": None, "injected": None, "resp_complete": False}
        self.records.append(rec)
        self.flush()
        # the whole request body first (MCP POSTs are small), so that the fault can look at it
        body = b""
        more = True
        while more:
            msg = await receive()
            if msg["type"] == "http.disconnect":
                rec["t_disconnect"] = time.time()
                self.flush()
                return
            body += msg.get("body", b"")
            more = msg.get("more_body", False)
        rec["req_body"] = body.decode("utf-8", "replace")
        if self.fail_once and scope["method"] == "POST" and self.fail_once in rec["req_body"]:
            self.fail_once = None
            await send({"type": "http.response.start", "status": 503, "headers": [(b"content-length", b"0")]})
            await send({"type": "http.response.body", "body": b""})
            rec.update(status=503, resp_headers=[["content-length", "0"]], injected="503",
                       t_resp_end=time.time(), resp_complete=True)
            self.flush()
            return
        replayed = False

        async def receive_wrapped():
            nonlocal replayed
            if not replayed:
                replayed = True
                return {"type": "http.request", "body": body, "more_body": False}
            msg = await receive()
            if msg["type"] == "http.disconnect" and rec["t_disconnect"] is None:
                rec["t_disconnect"] = time.time()
                self.flush()
            return msg

        resp_body = bytearray()

        async def send_wrapped(msg):
            if msg["type"] == "http.response.start":
                rec["status"] = msg["status"]
                rec["resp_headers"] = [[k.decode("latin-1"), v.decode("latin-1")] for k, v in msg.get("headers", [])]
            elif msg["type"] == "http.response.body":
                resp_body.extend(msg.get("body", b""))
                rec["resp_body"] = resp_body.decode("utf-8", "replace")
                if not msg.get("more_body", False):
                    rec.update(t_resp_end=time.time(), resp_complete=True)
            await send(msg)

        try:
            await self.app(scope, receive_wrapped, send_wrapped)
        finally:
            if rec["t_resp_end"] is None and rec["t_disconnect"] is not None:
                rec["t_resp_end"] = rec["t_disconnect"]
            self.flush()


async def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--port", type=int, required=True)
    ap.add_argument("--host", default="127.0.0.1")
    ap.add_argument("--log", required=True)
    ap.add_argument("--certfile")
    ap.add_argument("--keyfile")
    ap.add_argument("--fail-once")
    ap.add_argument("--lifetime", type=float, default=90)
    args = ap.parse_args()
    app = Recorder(mcp.streamable_http_app(host=args.host), args.log, args.fail_once)
    config = Config()
    config.bind = [f"{args.host}:{args.port}"]
    config.loglevel = "WARNING"
    if args.certfile:
        config.certfile, config.keyfile = args.certfile, args.keyfile
        config.alpn_protocols = ["h2", "http/1.1"]
    stop = asyncio.Event()
    asyncio.get_running_loop().call_later(args.lifetime, stop.set)
    print(f"hypercorn listening on {args.host}:{args.port}", flush=True)
    await serve(app, config, shutdown_trigger=stop.wait)
    app.flush()


if __name__ == "__main__":
    asyncio.run(main())
