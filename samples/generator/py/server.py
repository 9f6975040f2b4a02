"""MCP server built with the Python SDK (mcp 2.x MCPServer), for the recordings in samples/.

usage: python py/server.py --port N [--lifetime S] [--ssl-certfile F --ssl-keyfile F]
Streamable HTTP on /mcp with the SDK defaults (speaks 2026-07-28 to modern clients and the
initialize handshake to older ones). Tools: echo, fail (isError), slow (progress), approve
(asks the user through an elicitation: an MRTR input_required round on 2026-07-28).
"""

import argparse
import asyncio
import signal
import threading
from typing import Annotated

import uvicorn
from pydantic import BaseModel

from mcp.server.mcpserver import Context, MCPServer
from mcp.server.mcpserver.resolve import Elicit, Resolve

mcp = MCPServer("samples-py-server")


@mcp.tool()
def echo(text: str) -> str:
    """Echo the text back."""
    return f"echo: {text}"


@mcp.tool()
def fail(reason: str = "on purpose") -> str:
    """Always fails (the SDK turns the exception into an isError result)."""
    raise ValueError(f"failed: {reason}")


@mcp.tool()
async def slow(steps: int, ctx: Context) -> str:
    """Sends progress notifications, then answers."""
    for i in range(1, steps + 1):
        await asyncio.sleep(0.15)
        await ctx.report_progress(i, steps, f"step {i}")
    return f"slow done after {steps} steps"


class Reason(BaseModel):
    reason: str


def ask_reason() -> Elicit[Reason]:
    return Elicit("Why do you want to approve this?", Reason)


@mcp.tool()
def approve(item: str, answer: Annotated[Reason, Resolve(ask_reason)]) -> str:
    """Needs a reason from the user (elicitation / MRTR)."""
    return f"approved {item}: {answer.reason}"


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--port", type=int, required=True)
    ap.add_argument("--host", default="127.0.0.1")
    ap.add_argument("--lifetime", type=float, default=120)
    ap.add_argument("--ssl-certfile")  # uvicorn's own TLS (tls-* recordings)
    ap.add_argument("--ssl-keyfile")
    args = ap.parse_args()
    app = mcp.streamable_http_app(host=args.host)
    config = uvicorn.Config(app, host=args.host, port=args.port, log_level="warning",
                            ssl_certfile=args.ssl_certfile, ssl_keyfile=args.ssl_keyfile)
    server = uvicorn.Server(config)
    threading.Timer(args.lifetime, lambda: setattr(server, "should_exit", True)).start()
    print(f"py server listening on {args.host}:{args.port}", flush=True)
    server.run()
    signal.alarm(0)


if __name__ == "__main__":
    main()
