#!/usr/bin/env python3
"""Logging + fault-injecting HTTP/1.1 relay between an MCP client and server.

Bytes are relayed unchanged (one upstream TCP connection per client connection), so
what tcpdump sees on the listen port is exactly what the client and server sent.
While relaying, requests and responses are parsed (Content-Length, chunked, or
close-delimited bodies) and logged: that log is the ground truth the truth files
are derived from.

Faults (each fires once):
  --fail-post N[,M]    answer the N-th POST (1-based, counted over all connections)
                       with "503 Service Unavailable" and an empty body, never
                       forwarding it.
  --inject SPEC        (repeatable) answer POSTs whose body contains `match` with `status`
                       and an empty body, never forwarding them, for the first `count` such
                       POSTs (default 1). SPEC is a query string: status=429&match=get_weather
                       &count=1&retry_after=2 (delay-seconds) or retry_after=date:2 (an HTTP-date
                       2 s after the next whole second; a Date header is sent with it).
                       status=close closes the client connection (and its upstream one) without
                       any response instead; delay=MS (no status) forwards the request MS later.
                       Bodies of POSTs are then read whole before being forwarded (bytes unchanged).
  --cut-sse-after-id   on the first text/event-stream response (to a request whose
                       body contains --cut-match, if given), close both TCP
                       connections right after relaying the first SSE event that
                       carries an `id:` line and non-empty `data:` (the TS server's
                       priming event has empty data and is relayed as is).

TLS (the tls-* recordings): --tls-cert/--tls-key terminate TLS on the listen port (the client's
key log then decrypts the capture of that port), --tls-alpn selects an ALPN protocol when the
client offers it, --upstream-tls CAFILE speaks TLS to the server as well (verified against
CAFILE, SNI localhost). --conn-log writes one JSON line per client connection with what the TLS
library negotiated (version, cipher, SNI, ALPN, resumption): the truth's connections table.

When the upstream server is not listening (a scenario restarts it), a new client connection
waits up to 10 s for it instead of being closed.

The proxy stops by itself after --lifetime seconds, or on SIGTERM/SIGINT, and writes
its log (a JSON list) to --log then.
"""

import argparse
import asyncio
import email.utils
import gzip
import json
import math
import signal
import socket
import ssl
import time
from urllib.parse import parse_qsl

RECORDS = []
CONNS = []
SNI = {}  # id(SSLObject) -> server name the client sent
STATE = {"seq": 0, "posts": 0, "cut_done": False, "conn": 0}


def parse_head(raw: bytes):
    text = raw.decode("latin-1")
    lines = text.split("\r\n")
    first = lines[0]
    headers = []
    for line in lines[1:]:
        if not line:
            continue
        k, _, v = line.partition(":")
        headers.append([k.strip(), v.strip()])
    return first, headers


def hget(headers, name):
    for k, v in headers:
        if k.lower() == name:
            return v
    return None


async def read_head(reader):
    """Read until CRLFCRLF; returns bytes or None on EOF before any byte."""
    try:
        data = await reader.readuntil(b"\r\n\r\n")
    except asyncio.IncompleteReadError as e:
        return None if not e.partial else e.partial
    return data


async def relay_body(reader, writer, headers, on_data, closable, stop_check=None):
    """Relay a message body; on_data(bytes) gets decoded body bytes.

    Returns (complete: bool, cut: bool)."""
    te = (hget(headers, "transfer-encoding") or "").lower()
    cl = hget(headers, "content-length")
    if "chunked" in te:
        while True:
            try:
                size_line = await reader.readuntil(b"\r\n")
            except asyncio.IncompleteReadError as e:
                if e.partial:
                    writer.write(e.partial)
                return False, False
            size = int(size_line.split(b";")[0].strip() or b"0", 16)
            try:
                chunk = await reader.readexactly(size + 2)
            except asyncio.IncompleteReadError as e:
                writer.write(size_line + e.partial)
                on_data(e.partial[:size])
                return False, False
            if size == 0:
                # last chunk; trailers (assume none) end with the CRLF we read
                writer.write(size_line + chunk)
                await writer.drain()
                return True, False
            writer.write(size_line + chunk)
            await writer.drain()
            on_data(chunk[:size])
            if stop_check is not None and stop_check():
                return False, True
    elif cl is not None:
        remaining = int(cl)
        while remaining > 0:
            data = await reader.read(min(65536, remaining))
            if not data:
                return False, False
            remaining -= len(data)
            writer.write(data)
            await writer.drain()
            on_data(data)
            if stop_check is not None and stop_check():
                return False, True
        return True, False
    elif closable:
        while True:
            data = await reader.read(65536)
            if not data:
                return True, False
            writer.write(data)
            await writer.drain()
            on_data(data)
            if stop_check is not None and stop_check():
                return False, True
    return True, False


class SseWatch:
    """Tracks SSE events in a decoded body; fires when an id'd event with data completes."""

    def __init__(self):
        self.buf = b""
        self.fired = False

    def feed(self, data: bytes):
        self.buf += data
        norm = self.buf.replace(b"\r\n", b"\n")
        while b"\n\n" in norm:
            event, _, norm = norm.partition(b"\n\n")
            has_id = any(l.startswith(b"id:") for l in event.split(b"\n"))
            data_lines = [l[5:].strip() for l in event.split(b"\n") if l.startswith(b"data:")]
            if has_id and any(data_lines):
                self.fired = True
        self.buf = norm


async def handle_client(creader, cwriter, args):
    STATE["conn"] += 1
    conn_id = STATE["conn"]
    peer = cwriter.get_extra_info("peername")
    tls = cwriter.get_extra_info("ssl_object")
    conn = {"conn": conn_id, "client_port": peer[1] if peer else None, "t_accept": time.time(), "tls": None}
    if tls is not None:
        name, _, _ = tls.cipher()
        conn["tls"] = {"version": tls.version(), "cipher_openssl": name, "sni": SNI.pop(id(tls), None),
                       "alpn": tls.selected_alpn_protocol(), "resumed": tls.session_reused}
    CONNS.append(conn)
    # If the server is down (restarted by a scenario), wait for it like a load balancer would, so
    # no request reaches the wire without being relayed and logged.
    deadline = time.time() + 10
    while True:
        try:
            ureader, uwriter = await asyncio.open_connection(args.upstream_host, args.upstream_port, **args.upstream_ssl)
            break
        except OSError:
            if time.time() > deadline:
                cwriter.close()
                return
            await asyncio.sleep(0.05)
    pending = asyncio.Queue()
    closed = asyncio.Event()

    async def client_to_upstream():
        try:
            while not closed.is_set():
                first = await creader.read(1)
                if not first:
                    break
                t0 = time.time()
                STATE["seq"] += 1
                seq = STATE["seq"]
                rest = await read_head(creader)
                head = first + (rest or b"")
                line, headers = parse_head(head[:-4] if head.endswith(b"\r\n\r\n") else head)
                method, _, tail = line.partition(" ")
                path = tail.rsplit(" ", 1)[0]
                rec = {"seq": seq, "conn": conn_id, "client_port": peer[1] if peer else None,
                       "t_req": t0, "method": method, "path": path, "req_headers": headers,
                       "req_body": "", "status": None, "resp_headers": None, "resp_body": "",
                       "t_resp_end": None, "injected": None, "cut": False, "resp_complete": False}
                RECORDS.append(rec)
                body = bytearray()
                inject = False
                if method == "POST":
                    STATE["posts"] += 1
                    inject = STATE["posts"] in args.fail_post
                if method == "POST" and args.inject and not inject:
                    raw = _BufferWriter()
                    await relay_body(creader, raw, headers, body.extend, closable=False)
                    rec["req_body"] = body.decode("utf-8", "replace")
                    rule = match_rule(args.inject, rec["req_body"])
                    if rule is not None and rule.get("status") == "close":
                        rec.update(injected="close", t_resp_end=None)
                        live(args, rec)
                        cwriter.close()
                        uwriter.close()
                        break
                    if rule is None or "status" not in rule:
                        if rule is not None:  # delay=MS: forward late (the server answers late)
                            rec["delayed_ms"] = int(rule["delay"])
                            await asyncio.sleep(int(rule["delay"]) / 1000)
                        await pending.put(rec)
                        uwriter.write(head + bytes(raw.data))
                        await uwriter.drain()
                        continue
                    resp_headers = [["Content-Length", "0"]]
                    now = time.time()
                    if rule.get("retry_after"):
                        ra = rule["retry_after"]
                        if ra.startswith("date:"):
                            # whole seconds only in an HTTP-date: the next whole second + N
                            resp_headers.append(["Date", email.utils.formatdate(math.floor(now), usegmt=True)])
                            ra = email.utils.formatdate(math.ceil(now) + int(ra[5:]), usegmt=True)
                        resp_headers.append(["Retry-After", ra])
                    resp_headers.append(["Connection", "keep-alive"])
                    status = int(rule["status"])
                    cwriter.write(f"HTTP/1.1 {status} {REASONS[status]}\r\n".encode()
                                  + b"".join(f"{k}: {v}\r\n".encode() for k, v in resp_headers) + b"\r\n")
                    await cwriter.drain()
                    rec.update(status=status, resp_headers=resp_headers, injected=str(status),
                               t_resp_end=time.time(), resp_complete=True)
                    live(args, rec)
                    continue
                if inject:
                    sink = _NullWriter()
                    await relay_body(creader, sink, headers, body.extend, closable=False)
                    rec["req_body"] = body.decode("utf-8", "replace")
                    cwriter.write(b"HTTP/1.1 503 Service Unavailable\r\nContent-Length: 0\r\n"
                                  b"Connection: keep-alive\r\n\r\n")
                    await cwriter.drain()
                    rec.update(status=503, resp_headers=[["Content-Length", "0"]], injected="503",
                               t_resp_end=time.time(), resp_complete=True)
                    live(args, rec)
                    continue
                uwriter.write(head)
                await pending.put(rec)
                await relay_body(creader, uwriter, headers, body.extend, closable=False)
                rec["req_body"] = body.decode("utf-8", "replace")
        except (ConnectionError, asyncio.IncompleteReadError):
            pass
        finally:
            closed.set()
            try:
                uwriter.write_eof()
            except (OSError, RuntimeError):
                pass

    async def upstream_to_client():
        try:
            while True:
                head = await read_head(ureader)
                if not head:
                    break
                cwriter.write(head)
                await cwriter.drain()
                line, headers = parse_head(head[:-4])
                status = int(line.split(" ")[1])
                if status < 200:
                    continue
                rec = await asyncio.wait_for(pending.get(), 5)
                rec["status"] = status
                rec["resp_headers"] = headers
                body = bytearray()
                ctype = (hget(headers, "content-type") or "").lower()
                watch = None
                if (args.cut_sse_after_id and not STATE["cut_done"] and "text/event-stream" in ctype
                        and args.cut_match in rec["req_body"]):
                    watch = SseWatch()

                def on_data(d, body=body, watch=watch):
                    body.extend(d)
                    if watch is not None:
                        watch.feed(d)

                nobody = rec["method"] == "HEAD" or status in (204, 304)
                if nobody:
                    complete, cut = True, False
                else:
                    complete, cut = await relay_body(
                        ureader, cwriter, headers, on_data, closable=True,
                        stop_check=(lambda w=watch: w.fired) if watch else None)
                raw = bytes(body)
                if (hget(headers, "content-encoding") or "").lower() == "gzip":
                    try:  # the log keeps the decoded text; the wire keeps the gzip bytes
                        raw = gzip.decompress(raw)
                        rec["resp_decoded_from"] = "gzip"
                    except (OSError, EOFError):
                        pass
                rec["resp_body"] = raw.decode("utf-8", "replace")
                rec["resp_complete"] = complete
                rec["t_resp_end"] = time.time()
                live(args, rec)
                if cut:
                    STATE["cut_done"] = True
                    rec["cut"] = True
                    await asyncio.sleep(0.05)
                    cwriter.close()
                    uwriter.close()
                    break
        except (ConnectionError, asyncio.IncompleteReadError, asyncio.TimeoutError):
            pass
        finally:
            closed.set()
            cwriter.close()
            uwriter.close()

    await asyncio.gather(client_to_upstream(), upstream_to_client())


def live(args, rec):
    """Append a finished exchange to <log>.live.jsonl so the orchestrator can read it mid-run."""
    with open(args.log + ".live.jsonl", "a") as f:
        f.write(json.dumps(rec) + "\n")


REASONS = {429: "Too Many Requests", 500: "Internal Server Error", 502: "Bad Gateway",
           503: "Service Unavailable", 504: "Gateway Timeout"}


def parse_rule(spec):
    rule = dict(parse_qsl(spec, keep_blank_values=True))
    status = rule.get("status")
    ok_status = status == "close" or (status is not None and status.isdigit() and int(status) in REASONS)
    if "match" not in rule or not (ok_status or (status is None and rule.get("delay", "").isdigit())):
        raise SystemExit(f"--inject {spec!r}: needs match, and status in {sorted(REASONS)} or close, or delay=MS")
    rule["left"] = int(rule.get("count", "1"))
    return rule


def match_rule(rules, body):
    """The first rule with injections left whose match is in the body (and use one up)."""
    for rule in rules:
        if rule["left"] > 0 and rule["match"] in body:
            rule["left"] -= 1
            return rule
    return None


class _BufferWriter:
    def __init__(self):
        self.data = bytearray()

    def write(self, b):
        self.data.extend(b)

    async def drain(self):
        pass


class _NullWriter:
    def write(self, _):
        pass

    async def drain(self):
        pass


def dump(path):
    with open(path, "w") as f:
        json.dump(sorted(RECORDS, key=lambda r: r["t_req"]), f, indent=1)


async def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--listen-host", default="127.0.0.1")
    ap.add_argument("--listen-port", type=int, required=True)
    ap.add_argument("--upstream-host", default="127.0.0.1")
    ap.add_argument("--upstream-port", type=int, required=True)
    ap.add_argument("--log", required=True)
    ap.add_argument("--fail-post", default="")
    ap.add_argument("--inject", action="append", default=[])
    ap.add_argument("--cut-sse-after-id", action="store_true")
    ap.add_argument("--cut-match", default="")
    ap.add_argument("--lifetime", type=float, default=120)
    ap.add_argument("--tls-cert")
    ap.add_argument("--tls-key")
    ap.add_argument("--tls-alpn", default="", help="comma-separated ALPN protocols the server accepts")
    ap.add_argument("--upstream-tls", metavar="CAFILE")
    ap.add_argument("--conn-log")
    args = ap.parse_args()
    listen_ssl = None
    if args.tls_cert:
        listen_ssl = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        listen_ssl.load_cert_chain(args.tls_cert, args.tls_key)
        if args.tls_alpn:
            listen_ssl.set_alpn_protocols(args.tls_alpn.split(","))
        listen_ssl.sni_callback = lambda obj, name, _ctx: SNI.__setitem__(id(obj), name)
    args.upstream_ssl = {}
    if args.upstream_tls:
        args.upstream_ssl = {"ssl": ssl.create_default_context(cafile=args.upstream_tls), "server_hostname": "localhost"}
    args.fail_post = {int(x) for x in args.fail_post.split(",") if x}
    args.inject = [parse_rule(x) for x in args.inject]
    family = socket.AF_INET6 if ":" in args.listen_host else socket.AF_INET
    server = await asyncio.start_server(lambda r, w: handle_client(r, w, args),
                                        args.listen_host, args.listen_port, family=family, ssl=listen_ssl)
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(sig, stop.set)
    print("proxy listening", flush=True)
    try:
        await asyncio.wait_for(stop.wait(), args.lifetime)
    except asyncio.TimeoutError:
        pass
    server.close()
    dump(args.log)
    if args.conn_log:
        with open(args.conn_log, "w") as f:
            json.dump(CONNS, f, indent=1)


if __name__ == "__main__":
    asyncio.run(main())
