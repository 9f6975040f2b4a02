"""MCP client built with the Python SDK (mcp 2.x Client), for the recordings in samples/.

usage: python py/client.py --url URL --steps a,b,c [--mode auto|legacy] [--log FILE]
Steps: list | echo:TEXT | fail | unknown | slow:N | approve:ITEM (answers the elicitation).
TLS (tls-* recordings): [--tls-ca CAFILE] [--tls-max 1.2] [--tls-ciphers OPENSSL-LIST] [--keylog FILE]:
the application passes the SDK an httpx2 client whose ssl.SSLContext trusts CAFILE, is capped at
that version and those suites, and writes the NSS key log (context.keylog_filename).
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
    if LOG:
        with open(LOG, "a") as f:
            f.write(line + "\n")
    else:
        print(line, flush=True)


def summarize(r):
    text = None
    if getattr(r, "content", None):
        text = getattr(r.content[0], "text", None)
    return {"isError": bool(getattr(r, "is_error", False)), "text": text}


async def elicit(context, params):
    from mcp.types import ElicitResult

    log(step="elicitation", message=getattr(params, "message", None))
    return ElicitResult(action="accept", content={"reason": "looks good"})


async def progress(p, total, message):
    log(step="progress", progress=p, total=total)


async def run(args):
    server = args.url
    if args.tls_ca:
        ctx = ssl.create_default_context(cafile=args.tls_ca)
        if args.tls_max == "1.2":
            ctx.maximum_version = ssl.TLSVersion.TLSv1_2
        if args.tls_ciphers:
            ctx.set_ciphers(args.tls_ciphers)
        if args.keylog:
            ctx.keylog_filename = args.keylog
        http = httpx2.AsyncClient(verify=ctx, timeout=httpx2.Timeout(30, read=300))
        server = streamable_http_client(args.url, http_client=http)
    async with Client(server, mode=args.mode, client_info=Implementation(name="samples-py-client", version="1.0.0"),
                      elicitation_callback=elicit) as client:
        log(step="connected", protocolVersion=client.protocol_version)
        for step in [s for s in args.steps.split(",") if s]:
            name, _, arg = step.partition(":")
            try:
                if name == "list":
                    r = await client.list_tools()
                    log(step="tools/list", ok=True, n=len(r.tools))
                elif name == "echo":
                    r = await client.call_tool("echo", {"text": arg or "hello"})
                    log(step="tools/call", tool="echo", ok=True, **summarize(r))
                elif name == "fail":
                    r = await client.call_tool("fail", {"reason": "on purpose"})
                    log(step="tools/call", tool="fail", ok=True, **summarize(r))
                elif name == "unknown":
                    r = await client.call_tool("no_such_tool", {})
                    log(step="tools/call", tool="no_such_tool", ok=True, **summarize(r))
                elif name == "slow":
                    r = await client.call_tool("slow", {"steps": int(arg or 2)}, progress_callback=progress)
                    log(step="tools/call", tool="slow", ok=True, **summarize(r))
                elif name == "approve":
                    r = await client.call_tool("approve", {"item": arg or "deploy"})
                    log(step="tools/call", tool="approve", ok=True, **summarize(r))
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
    ap.add_argument("--mode", default="auto")
    ap.add_argument("--log")
    ap.add_argument("--lifetime", type=float, default=60)
    ap.add_argument("--tls-ca")
    ap.add_argument("--tls-max")
    ap.add_argument("--tls-ciphers")
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
