"""FastMCP's proxy (PyPI `fastmcp`, `fastmcp.server.create_proxy`) in front of one MCP server, for gw-fastmcp-proxy.

usage: .venv-fastmcp/bin/python gateway/fastmcp_proxy.py --host H --port P --upstream URL [--lifetime S]
This is FastMCP's recommended proxy setup, unchanged: create_proxy(URL) builds a ProxyClient target, which
makes a fresh upstream client (its own session, its own JSON-RPC ids) for each proxied request, and
`run(transport="http")` serves it as Streamable HTTP under uvicorn. FastMCP's own logging goes to stdout at
DEBUG level (FASTMCP_LOG_LEVEL), kept by the recorder.
"""

import argparse
import os
import signal
import threading

os.environ.setdefault("FASTMCP_LOG_LEVEL", "DEBUG")

from fastmcp.server import create_proxy  # noqa: E402


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--host", required=True)
    ap.add_argument("--port", type=int, required=True)
    ap.add_argument("--upstream", required=True)
    ap.add_argument("--lifetime", type=float, default=120)
    args = ap.parse_args()
    threading.Timer(args.lifetime, lambda: os.kill(os.getpid(), signal.SIGTERM)).start()
    proxy = create_proxy(args.upstream, name="samples-fastmcp-proxy")
    proxy.run(transport="http", host=args.host, port=args.port, path="/mcp", log_level="debug")


if __name__ == "__main__":
    main()
