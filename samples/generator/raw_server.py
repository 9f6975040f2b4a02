#!/usr/bin/env python3
"""A raw MCP-over-HTTP server (no SDK) for response shapes no SDK produces.

usage: python raw_server.py --port N [--lifetime S]
POST /mcp, stateless 2026-07-28 style. The tools/call `name` selects the shape:
  echo               normal JSON result (resultType complete)
  approve            MRTR: first call -> resultType input_required (inputRequests + requestState);
                     follow-up carrying inputResponses + the same requestState -> complete result
  rpc_error_200      HTTP 200 with a JSON-RPC error -32602
  http500_success    HTTP 500 whose body looks like a successful result
  malformed          HTTP 200 application/json whose body is cut JSON
  both               a response with both result and error
  wrong_id           a response whose id differs from the request's
  content_not_array  a tools/call result with content: "not-an-array"
  sse_cut            SSE: one progress notification, then the TCP connection is closed
  accepted_request   202 with no body to a request
  no_response        the connection is closed without any HTTP response
  gzip_json          a normal result sent with Content-Encoding: gzip
Notifications get 202; GET gets 405.
"""

import argparse
import gzip
import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

STATE = "opaque-state-7f3a"


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server_version = "raw-mcp/1.0"
    sys_version = ""

    def log_message(self, *_):
        pass

    def send_json(self, status, obj=None, raw=None, ctype="application/json"):
        data = raw if raw is not None else json.dumps(obj, separators=(",", ":")).encode()
        self.send_response(status)
        self.send_header("Content-Type", ctype)
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def do_GET(self):
        self.send_response(405)
        self.send_header("Allow", "POST")
        self.send_header("Content-Length", "0")
        self.end_headers()

    def do_POST(self):
        length = int(self.headers.get("Content-Length", "0"))
        msg = json.loads(self.rfile.read(length))
        if "id" not in msg:
            self.send_response(202)
            self.send_header("Content-Length", "0")
            self.end_headers()
            return
        rid = msg["id"]
        method = msg.get("method")
        params = msg.get("params", {})
        meta = {"_meta": {"io.modelcontextprotocol/serverInfo": {"name": "raw-mcp", "version": "1.0"}}}

        def ok(result):
            self.send_json(200, {"jsonrpc": "2.0", "id": rid, "result": {**result, **meta}})

        if method == "server/discover":
            return ok({"resultType": "complete", "supportedVersions": ["2026-07-28"],
                       "capabilities": {"tools": {}}, "serverInfo": {"name": "raw-mcp", "version": "1.0"}})
        if method != "tools/call":
            return self.send_json(404, {"jsonrpc": "2.0", "id": rid, "error": {"code": -32601, "message": "Method not found"}})
        name = params.get("name")
        text = lambda t: {"resultType": "complete", "content": [{"type": "text", "text": t}]}  # noqa: E731
        if name == "echo":
            return ok(text("echo: " + str(params.get("arguments", {}).get("text"))))
        if name == "approve":
            if params.get("requestState") == STATE and "inputResponses" in params:
                reason = params["inputResponses"]["reason"]["content"]["reason"]
                return ok(text(f"approved: {reason}"))
            return ok({"resultType": "input_required",
                       "inputRequests": {"reason": {"method": "elicitation/create", "params": {
                           "mode": "form", "message": "Why approve?",
                           "requestedSchema": {"type": "object", "properties": {"reason": {"type": "string"}},
                                               "required": ["reason"]}}}},
                       "requestState": STATE})
        if name == "rpc_error_200":
            return self.send_json(200, {"jsonrpc": "2.0", "id": rid, "error": {"code": -32602, "message": "Invalid params: bad argument"}})
        if name == "http500_success":
            return self.send_json(500, {"jsonrpc": "2.0", "id": rid, "result": text("all good (really?)")})
        if name == "malformed":
            return self.send_json(200, raw=b'{"jsonrpc":"2.0","id":%d,"result":{"content":[{"type":"text","te' % rid)
        if name == "both":
            return self.send_json(200, {"jsonrpc": "2.0", "id": rid, "result": text("ok"), "error": {"code": -32603, "message": "also an error"}})
        if name == "wrong_id":
            return self.send_json(200, {"jsonrpc": "2.0", "id": rid + 1000, "result": text("answer for someone else")})
        if name == "content_not_array":
            return ok({"resultType": "complete", "content": "not-an-array"})
        if name == "sse_cut":
            self.send_response(200)
            self.send_header("Content-Type", "text/event-stream")
            self.send_header("Transfer-Encoding", "chunked")
            self.end_headers()
            ev = json.dumps({"jsonrpc": "2.0", "method": "notifications/progress",
                             "params": {"progressToken": rid, "progress": 1, "total": 3}}, separators=(",", ":"))
            data = f"event: message\ndata: {ev}\n\n".encode()
            self.wfile.write(b"%x\r\n%s\r\n" % (len(data), data))
            self.wfile.flush()
            self.close_connection = True
            return
        if name == "accepted_request":
            self.send_response(202)
            self.send_header("Content-Length", "0")
            self.end_headers()
            return
        if name == "gzip_json":
            data = gzip.compress(json.dumps({"jsonrpc": "2.0", "id": rid, "result": {**text("compressed echo"), **meta}},
                                            separators=(",", ":")).encode(), mtime=0)
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Encoding", "gzip")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)
            return
        if name == "no_response":
            self.close_connection = True
            return
        return ok({**text(f"Unknown tool: {name}"), "isError": True})


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--port", type=int, required=True)
    ap.add_argument("--lifetime", type=float, default=60)
    args = ap.parse_args()
    srv = ThreadingHTTPServer(("127.0.0.1", args.port), Handler)
    threading.Timer(args.lifetime, srv.shutdown).start()
    print("raw server listening", flush=True)
    srv.serve_forever()


if __name__ == "__main__":
    main()
