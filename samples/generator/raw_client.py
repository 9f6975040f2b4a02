#!/usr/bin/env python3
"""A raw client (http.client, no SDK) that sends 2026-07-28-style requests to raw_server.py.

usage: python raw_client.py --port N --calls a,b,c [--log FILE]
Each call is a tools/call of that tool name (see raw_server.py). `approve` does the full MRTR
round trip: the input_required call, then the follow-up with inputResponses + requestState and
a new id. `retry_invalid:NAME` calls NAME and, when the answer is not a usable JSON-RPC result (not
JSON, not a valid envelope, content not an array), waits 300 ms and sends the same call again with a
new id (an application replaying after an invalid response). Ids start at 1 and increase. One
keep-alive connection, reopened when the server closes it.
"""

import argparse
import http.client
import json
import time

META = {"io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientInfo": {"name": "samples-raw-client", "version": "1.0"},
        "io.modelcontextprotocol/clientCapabilities": {"elicitation": {"form": {}}}}


class Raw:
    def __init__(self, host, port, logf):
        self.host, self.port, self.logf = host, port, logf
        self.conn = None
        self.next_id = 1

    def log(self, **kw):
        with open(self.logf, "a") if self.logf else open("/dev/stdout", "w") as f:
            f.write(json.dumps({"t": time.time(), **kw}) + "\n")

    def post(self, msg, headers):
        if self.conn is None:
            self.conn = http.client.HTTPConnection(self.host, self.port, timeout=10)
        body = json.dumps(msg, separators=(",", ":"))
        h = {"Content-Type": "application/json", "Accept": "application/json, text/event-stream",
             "User-Agent": "samples-raw-client/1.0", "MCP-Protocol-Version": "2026-07-28", **headers}
        try:
            self.conn.request("POST", "/mcp", body=body, headers=h)
            resp = self.conn.getresponse()
            try:
                data = resp.read()
            except http.client.IncompleteRead as e:
                data = e.partial
                self.conn.close()
                self.conn = None
            self.log(sent=msg, status=resp.status, body=data.decode("utf-8", "replace"))
            if resp.will_close and self.conn is not None:
                self.conn.close()
                self.conn = None
            return resp.status, data
        except (http.client.HTTPException, ConnectionError, OSError) as e:
            self.log(sent=msg, status=None, error=repr(e))
            self.conn.close()
            self.conn = None
            return None, b""

    def request(self, method, params, name=None):
        rid = self.next_id
        self.next_id += 1
        headers = {"Mcp-Method": method}
        if name:
            headers["Mcp-Name"] = name
        return self.post({"jsonrpc": "2.0", "id": rid, "method": method, "params": {**params, "_meta": META}}, headers)

    def call(self, name, args):
        return self.request("tools/call", {"name": name, "arguments": args}, name)


def usable(data):
    """A JSON-RPC 2.0 result object with a content array, as a client would need it."""
    try:
        msg = json.loads(data)
    except ValueError:
        return False
    return (isinstance(msg, dict) and msg.get("jsonrpc") == "2.0" and ("result" in msg) != ("error" in msg)
            and isinstance(msg.get("result", {}).get("content", []), list))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--port", type=int, required=True)
    ap.add_argument("--host", default="127.0.0.1")
    ap.add_argument("--calls", required=True)
    ap.add_argument("--log")
    args = ap.parse_args()
    c = Raw(args.host, args.port, args.log)
    c.request("server/discover", {})
    for name in [x for x in args.calls.split(",") if x]:
        if name == "approve":
            _, data = c.call("approve", {"item": "deploy"})
            res = json.loads(data)["result"]
            time.sleep(0.2)  # the "user" answers
            c.request("tools/call", {"name": "approve", "arguments": {"item": "deploy"},
                                     "inputResponses": {"reason": {"action": "accept", "content": {"reason": "tested"}}},
                                     "requestState": res["requestState"]}, "approve")
        elif name.startswith("retry_invalid:"):
            tool = name.partition(":")[2]
            _, data = c.call(tool, {})
            if not usable(data):
                c.log(step="app_retry", tool=tool, after_ms=300, reason="invalid response")
                time.sleep(0.3)
                c.call(tool, {})
        elif name == "notify":
            c.post({"jsonrpc": "2.0", "method": "notifications/progress",
                    "params": {"progressToken": "x", "progress": 1}}, {"Mcp-Method": "notifications/progress"})
        else:
            c.call(name, {"text": "x"} if name == "echo" else {})
        time.sleep(0.05)


if __name__ == "__main__":
    main()
