"""MCP client (Python SDK mcp 2.x) for the gateway recordings: logs every HTTP exchange it makes.

usage: python gateway/gw_client.py --url URL --steps a,b,c --log FILE [--h2 --tls-ca CA --keylog FILE]
       [--mode legacy|auto] [--label NAME]
--h2: httpx2.AsyncClient(http2=True, verify=ctx) over https (ALPN h2 offered), ctx.keylog_filename writes the
NSS key log (SSLKEYLOGFILE format). Without it: httpx2 over HTTP/1.1.
Steps: list | echo:TEXT | fail | sleepy (2 s) | email | weather:CITY | status:TEXT |
       retry:TOOL (call TOOL; if it fails - an exception or an isError result - wait 300 ms and call it again
       once with a new JSON-RPC id: the application's retry) | sleep:MS
The log (JSON lines) has, per HTTP exchange, an http_request line (method, path, headers, body, time when the
request was handed to httpx) and an http_response line (status, headers, HTTP version, h2 stream id, local
port, TLS facts, the whole body of a POST response and the time it was read), linked by `rid`; then one
line per step with what the SDK returned. This log is the truth of the client leg.
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
TOOLS = {"echo": lambda a: {"text": a or "hello"}, "fail": lambda a: {"reason": "on purpose"},
         "sleepy": lambda a: {"seconds": 2}, "email": None, "weather": lambda a: {"city": a or "Paris"},
         "status": lambda a: {"status": a or "green"}}
EMAIL = {"to": "ops@example.com", "subject": "deploy finished"}


def log(**kw):
    with open(LOG, "a") as f:
        f.write(json.dumps({"t": time.time(), **kw}) + "\n")


async def on_request(request):
    body = request.content.decode("utf-8", "replace") if request.content else ""
    log(step="http_request", rid=id(request), method=request.method, path=request.url.raw_path.decode(),
        headers=[[k.decode("latin-1"), v.decode("latin-1")] for k, v in request.headers.raw], body=body)


async def on_response(response):
    ext = response.extensions
    stream = ext.get("network_stream")
    facts = {"step": "http_response", "rid": id(response.request), "method": response.request.method,
             "status": response.status_code, "http_version": response.http_version, "h2_stream": ext.get("stream_id"),
             "headers": [[k.decode("latin-1"), v.decode("latin-1")] for k, v in response.headers.raw]}
    if stream is not None:
        addr = stream.get_extra_info("client_addr")
        facts["client_addr"] = f"{addr[0]}:{addr[1]}" if addr else None
        srv = stream.get_extra_info("server_addr")
        facts["server_addr"] = f"{srv[0]}:{srv[1]}" if srv else None
        sslobj = stream.get_extra_info("ssl_object")
        if sslobj is not None:
            facts["tls"] = {"version": sslobj.version(), "cipher_openssl": sslobj.cipher()[0],
                            "alpn": sslobj.selected_alpn_protocol(), "resumed": sslobj.session_reused}
    if response.request.method != "GET":  # POST/DELETE answers end; the body is read here whole
        await response.aread()
        facts["body"] = response.content.decode("utf-8", "replace")
        facts["t_end"] = time.time()
    log(**facts)


def tool_args(tool, arg):
    return EMAIL if tool == "email" else TOOLS[tool](arg)


def tool_name(tool):
    return {"email": "send_email", "weather": "get_weather", "status": "set_status"}.get(tool, tool)


async def call(client, tool, arg):
    try:
        r = await client.call_tool(tool_name(tool), tool_args(tool, arg))
    except Exception as e:  # noqa: BLE001 - the SDK raises on HTTP errors
        log(step="tools/call", tool=tool_name(tool), ok=False, error=repr(e))
        return False
    text = getattr(r.content[0], "text", None) if getattr(r, "content", None) else None
    err = bool(getattr(r, "is_error", False))
    log(step="tools/call", tool=tool_name(tool), ok=True, isError=err, text=text)
    return not err


async def run(args):
    hooks = {"request": [on_request], "response": [on_response]}
    timeout = httpx2.Timeout(30, read=60)
    if args.h2:
        ctx = ssl.create_default_context(cafile=args.tls_ca)
        ctx.keylog_filename = args.keylog
        http = httpx2.AsyncClient(http2=True, verify=ctx, timeout=timeout, event_hooks=hooks)
    else:
        http = httpx2.AsyncClient(timeout=timeout, event_hooks=hooks)
    async with http, Client(streamable_http_client(args.url, http_client=http), mode=args.mode,
                            client_info=Implementation(name=f"samples-gw-{args.label}", version="1.0.0")) as client:
        log(step="connected", protocolVersion=client.protocol_version)
        for step in [s for s in args.steps.split(",") if s]:
            name, _, arg = step.partition(":")
            try:
                if name == "list":
                    r = await client.list_tools()
                    log(step="tools/list", ok=True, n=len(r.tools), tools=[t.name for t in r.tools])
                elif name == "retry":
                    tool, _, targ = arg.partition(":")
                    if not await call(client, tool, targ):
                        log(step="app_retry", tool=tool_name(tool), after_ms=300)
                        await asyncio.sleep(0.3)
                        await call(client, tool, targ)
                elif name == "sleep":
                    await asyncio.sleep(int(arg) / 1000)
                elif name in TOOLS:
                    await call(client, name, arg)
                else:
                    log(step=name, error="unknown step")
            except Exception as e:  # noqa: BLE001 - the log is the point
                log(step=name, ok=False, error=repr(e))
    log(step="closed")


def main():
    global LOG
    ap = argparse.ArgumentParser()
    ap.add_argument("--url", required=True)
    ap.add_argument("--steps", default="list")
    ap.add_argument("--mode", default="legacy")
    ap.add_argument("--label", default="client")
    ap.add_argument("--log", required=True)
    ap.add_argument("--lifetime", type=float, default=60)
    ap.add_argument("--h2", action="store_true")
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
