"""A hand-written MCP client on the `h2` library (the HTTP/2 state machine under hypercorn and httpx2)
that abandons calls with RST_STREAM CANCEL, which neither the SDK's httpx2 client nor curl does.

usage: python h2_raw_client.py --port N --log FILE --mode stateless|session
h2c prior knowledge on 127.0.0.1:N/mcp, one connection, blocking socket.
stateless (2026-07-28, the Python SDK's request shape): server/discover, tools/list, then a nap call
and an echo call at once; the nap stream is reset with CANCEL 0.5 s after it was sent, the echo
completes; then another echo. session (2025-11-25): initialize, notifications/initialized, a nap call
reset with CANCEL 0.5 s after its SSE response began, echo, DELETE. The client ends with GOAWAY.
"""

import argparse
import json
import socket
import time

import h2.config
import h2.connection
import h2.errors
import h2.events

LOG = None
VERSION_NEW = "2026-07-28"
VERSION_OLD = "2025-11-25"
INFO = {"name": "samples-h2-raw-client", "version": "1.0.0"}


def log(**kw):
    with open(LOG, "a") as f:
        f.write(json.dumps({"t": time.time(), **kw}) + "\n")


class Client:
    def __init__(self, port):
        self.port = port
        self.sock = socket.create_connection(("127.0.0.1", port))
        self.conn = h2.connection.H2Connection(h2.config.H2Configuration(client_side=True, header_encoding="utf-8"))
        self.conn.initiate_connection()
        self.flush()
        self.streams = {}  # id -> {"status", "headers", "body", "ended", "reset"}
        self.session = None
        self.next_id = 1

    def flush(self):
        data = self.conn.data_to_send()
        if data:
            self.sock.sendall(data)

    def send(self, method, body=None, headers=()):
        sid = self.conn.get_next_available_stream_id()
        h = [(":method", method), (":scheme", "http"), (":authority", f"127.0.0.1:{self.port}"), (":path", "/mcp"),
             ("user-agent", "samples-h2-raw-client/1.0"), ("accept", "application/json, text/event-stream")]
        raw = json.dumps(body, separators=(",", ":")).encode() if body is not None else b""
        if body is not None:
            h += [("content-type", "application/json"), ("content-length", str(len(raw)))]
        if self.session:
            h += [("mcp-session-id", self.session)]
        h += list(headers)
        self.conn.send_headers(sid, h, end_stream=body is None)
        if body is not None:
            self.conn.send_data(sid, raw, end_stream=True)
        self.flush()
        self.streams[sid] = {"status": None, "headers": {}, "body": b"", "ended": False, "reset": False,
                             "request": raw.decode(), "method": method}
        log(step="sent", h2_stream=sid, method=method, body=raw.decode())
        return sid

    def pump(self, until, timeout=10.0):
        """Reads frames until until() is true."""
        end = time.time() + timeout
        while not until():
            left = end - time.time()
            if left <= 0:
                raise TimeoutError("no answer in time")
            self.sock.settimeout(left)
            data = self.sock.recv(65536)
            if not data:
                raise ConnectionError("server closed the connection")
            for ev in self.conn.receive_data(data):
                s = self.streams.get(getattr(ev, "stream_id", None))
                if isinstance(ev, h2.events.ResponseReceived) and s is not None:
                    s["headers"] = dict(ev.headers)
                    s["status"] = int(s["headers"][":status"])
                elif isinstance(ev, h2.events.DataReceived) and s is not None:
                    s["body"] += ev.data
                    self.conn.acknowledge_received_data(ev.flow_controlled_length, ev.stream_id)
                elif isinstance(ev, h2.events.StreamEnded) and s is not None:
                    s["ended"] = True
            self.flush()

    def call(self, method, params=None, version=VERSION_NEW, notification=False):
        body = {"jsonrpc": "2.0", "method": method}
        if not notification:
            body["id"] = self.next_id
            self.next_id += 1
        if version == VERSION_NEW:
            meta = {"io.modelcontextprotocol/protocolVersion": VERSION_NEW, "io.modelcontextprotocol/clientInfo": INFO,
                    "io.modelcontextprotocol/clientCapabilities": {}}
            params = {**(params or {}), "_meta": meta}
        if params is not None:
            body["params"] = params
        headers = [("mcp-protocol-version", version)]
        if version == VERSION_NEW:
            headers.append(("mcp-method", method))
            if method == "tools/call":
                headers.append(("mcp-name", params["name"]))
        return self.send("POST", body, headers)

    def wait(self, sid):
        self.pump(lambda: self.streams[sid]["ended"])
        s = self.streams[sid]
        log(step="answered", h2_stream=sid, status=s["status"], body=s["body"].decode("utf-8", "replace")[:300])
        return s

    def cancel(self, sid):
        self.conn.reset_stream(sid, h2.errors.ErrorCodes.CANCEL)
        self.flush()
        self.streams[sid]["reset"] = True
        log(step="reset", h2_stream=sid, code="CANCEL", had_status=self.streams[sid]["status"])

    def close(self):
        self.conn.close_connection()
        self.flush()
        time.sleep(0.1)
        self.sock.close()
        log(step="closed")


def stateless(c):
    c.wait(c.call("server/discover"))
    c.wait(c.call("tools/list"))
    nap = c.call("tools/call", {"name": "nap", "arguments": {"seconds": 3}})
    t_nap = time.time()
    echo = c.call("tools/call", {"name": "echo", "arguments": {"text": "alongside the nap"}})
    c.wait(echo)
    time.sleep(max(0.0, t_nap + 0.5 - time.time()))
    c.cancel(nap)
    c.wait(c.call("tools/call", {"name": "echo", "arguments": {"text": "after the cancel"}}))


def session(c):
    init = c.wait(c.call("initialize", {"protocolVersion": VERSION_OLD, "capabilities": {}, "clientInfo": INFO},
                         version=VERSION_OLD))
    c.session = init["headers"]["mcp-session-id"]
    c.wait(c.call("notifications/initialized", version=VERSION_OLD, notification=True))
    # Arguments of their own: the same calls as the stateless session's, a second later in a new
    # session, would be manual resends (report-schema section 4, rule 4).
    nap = c.call("tools/call", {"name": "nap", "arguments": {"seconds": 4}}, version=VERSION_OLD)
    c.pump(lambda: c.streams[nap]["status"] is not None)
    time.sleep(0.5)
    c.cancel(nap)
    c.wait(c.call("tools/call", {"name": "echo", "arguments": {"text": "after the stream's cancel"}}, version=VERSION_OLD))
    c.wait(c.send("DELETE", headers=[("mcp-protocol-version", VERSION_OLD)]))


def main():
    global LOG
    ap = argparse.ArgumentParser()
    ap.add_argument("--port", type=int, required=True)
    ap.add_argument("--log", required=True)
    ap.add_argument("--mode", choices=["stateless", "session"], required=True)
    args = ap.parse_args()
    LOG = args.log
    c = Client(args.port)
    (stateless if args.mode == "stateless" else session)(c)
    c.close()


if __name__ == "__main__":
    main()
