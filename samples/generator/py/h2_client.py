"""MCP client (Python SDK mcp 2.x) speaking HTTP/2 through the httpx2 client the application passes it.

usage: python py/h2_client.py --url URL --h2 tls|h2c --steps a,b,c [--mode auto|legacy] [--log FILE]
       [--tls-ca CAFILE --keylog FILE]
--h2 tls: httpx2.AsyncClient(http2=True, verify=ctx) over https (ALPN h2), ctx.keylog_filename writes
the NSS key log; --h2 h2c: httpx2.AsyncClient(http1=False, http2=True) on http:// (prior knowledge).
Steps: list | echo:TEXT | fail | gather:N (N echo calls at once on the one connection) |
retry503:TEXT (echo; after an error waits 300 ms and calls again: the application's retry) |
giveup:S (nap for 5 s with read_timeout_seconds=S: the SDK gives up on the call).
Every HTTP response is logged with what httpx2 knows of it: the HTTP version, the HTTP/2 stream id,
the local port and, over TLS, the version, suite and ALPN the client's ssl negotiated.
"""

import argparse
import asyncio
import json
import ssl
import sys
import time

import httpx2

from mcp import Client
from mcp.client.streamable_http import streamable_http_client
from mcp.types import Implementation

LOG = None


def log(**kw):
    line = json.dumps({"t": time.time(), **kw})
    with open(LOG, "a") as f:
        f.write(line + "\n")


def summarize(r):
    text = getattr(r.content[0], "text", None) if getattr(r, "content", None) else None
    return {"isError": bool(getattr(r, "is_error", False)), "text": text}


async def on_request(request):
    body = request.content.decode("utf-8", "replace") if request.content else ""
    log(step="http_request", method=request.method, path=request.url.raw_path.decode(), body=body)


async def on_response(response):
    ext = response.extensions
    stream = ext.get("network_stream")
    facts = {"step": "http_response", "method": response.request.method, "status": response.status_code,
             "http_version": response.http_version, "h2_stream": ext.get("stream_id"),
             "body": response.request.content.decode("utf-8", "replace") if response.request.content else ""}
    if stream is not None:
        addr = stream.get_extra_info("client_addr")
        facts["client_port"] = addr[1] if addr else None
        sslobj = stream.get_extra_info("ssl_object")
        if sslobj is not None:
            facts["tls"] = {"version": sslobj.version(), "cipher_openssl": sslobj.cipher()[0],
                            "alpn": sslobj.selected_alpn_protocol(), "resumed": sslobj.session_reused}
    log(**facts)


async def call(client, name, args, **kw):
    r = await client.call_tool(name, args, **kw)
    log(step="tools/call", tool=name, ok=True, **summarize(r))
    return r


async def run(args):
    hooks = {"request": [on_request], "response": [on_response]}
    timeout = httpx2.Timeout(30, read=300)
    if args.h2 == "tls":
        ctx = ssl.create_default_context(cafile=args.tls_ca)
        ctx.keylog_filename = args.keylog
        http = httpx2.AsyncClient(http2=True, verify=ctx, timeout=timeout, event_hooks=hooks)
    else:
        http = httpx2.AsyncClient(http1=False, http2=True, timeout=timeout, event_hooks=hooks)
    async with http, Client(streamable_http_client(args.url, http_client=http), mode=args.mode,
                            client_info=Implementation(name="samples-py-h2-client", version="1.0.0")) as client:
        log(step="connected", protocolVersion=client.protocol_version)
        for step in [s for s in args.steps.split(",") if s]:
            name, _, arg = step.partition(":")
            try:
                if name == "list":
                    r = await client.list_tools()
                    log(step="tools/list", ok=True, n=len(r.tools))
                elif name == "echo":
                    await call(client, "echo", {"text": arg or "hello"})
                elif name == "fail":
                    await call(client, "fail", {"reason": "on purpose"})
                elif name == "gather":
                    n = int(arg or 4)
                    log(step="gather", n=n)
                    await asyncio.gather(*(call(client, "echo", {"text": f"concurrent {i}"}) for i in range(n)))
                elif name == "retry503":
                    try:
                        await call(client, "echo", {"text": arg})
                    except Exception as e:  # noqa: BLE001 - the SDK turns the 503 into an exception
                        log(step="tools/call", tool="echo", ok=False, error=repr(e))
                        await asyncio.sleep(0.3)
                        log(step="app_retry", tool="echo")
                        await call(client, "echo", {"text": arg})
                elif name == "giveup":
                    try:
                        await call(client, "nap", {"seconds": 5}, read_timeout_seconds=float(arg or 0.5))
                    except Exception as e:  # noqa: BLE001
                        log(step="tools/call", tool="nap", ok=False, gave_up=True, error=repr(e))
                else:
                    log(step=name, error="unknown step")
            except Exception as e:  # noqa: BLE001 - the log is the point
                log(step=name, ok=False, error=repr(e))
    log(step="closed")


def main():
    global LOG
    ap = argparse.ArgumentParser()
    ap.add_argument("--url", required=True)
    ap.add_argument("--h2", choices=["tls", "h2c"], required=True)
    ap.add_argument("--steps", default="list")
    ap.add_argument("--mode", default="auto")
    ap.add_argument("--log", required=True)
    ap.add_argument("--lifetime", type=float, default=60)
    ap.add_argument("--tls-ca")
    ap.add_argument("--keylog")
    args = ap.parse_args()
    LOG = args.log
    try:
        asyncio.run(asyncio.wait_for(run(args), args.lifetime))
    except Exception as e:  # noqa: BLE001
        log(step="fatal", error=repr(e))
        sys.exit(1)


if __name__ == "__main__":
    main()
