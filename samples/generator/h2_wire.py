"""tshark's reading of the HTTP/2 exchanges in a capture (the independent half of an h2 truth file).

One exchange per (TCP connection, stream): the request's pseudo-headers and body, the response's
:status and body, and who reset the stream with which code. Prior-knowledge connections (first
client bytes are the preface) are read with `-d tcp.port==P,http2`; upgraded ones (`Upgrade: h2c`
answered 101) with tshark's own HTTP dissector, whose request line is stream 1's request; TLS ones
(ALPN h2) with `-o tls.keylog_file:KEYS`. Never mcp-trace.
"""

import json
import subprocess

PREFACE = b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n"
RST_CODES = {0: "NO_ERROR", 1: "PROTOCOL_ERROR", 2: "INTERNAL_ERROR", 3: "FLOW_CONTROL_ERROR", 5: "STREAM_CLOSED",
             7: "REFUSED_STREAM", 8: "CANCEL"}


def _tshark_json(pcap, args):
    cmd = ["tshark", "-r", str(pcap), *args, "-T", "json", "--no-duplicate-keys"]
    out = subprocess.run(cmd, capture_output=True, text=True, timeout=120, check=True).stdout
    return json.loads(out) if out.strip() else []


def _list(v):
    if v is None:
        return []
    return v if isinstance(v, list) else [v]


def _hex(s):
    return bytes.fromhex(s.replace(":", "")) if s else b""


def _frames(layers):
    """Every HTTP/2 frame of one packet, in order."""
    for h2 in _list(layers.get("http2")):
        for fr in _list(h2.get("http2.stream") if isinstance(h2, dict) else None):
            if isinstance(fr, dict) and "http2.type" in fr:
                yield fr


def _headers(fr):
    out = []
    for h in _list(fr.get("http2.header")):
        out.append((h.get("http2.header.name", ""), h.get("http2.header.value", "")))
    return out


def first_client_bytes(pcap, port):
    """tcp.stream -> the first 24 payload bytes the client sent (to tell the preface from HTTP/1.1)."""
    out = subprocess.run(["tshark", "-r", str(pcap), "--disable-protocol", "http", "--disable-protocol", "http2",
                          "--disable-protocol", "tls", "-Y", f"tcp.dstport=={port} && tcp.len>0", "-T", "fields",
                          "-e", "tcp.stream", "-e", "tcp.payload"], capture_output=True, text=True, timeout=60, check=True)
    first = {}
    for line in out.stdout.splitlines():
        stream, _, payload = line.partition("\t")
        if stream and int(stream) not in first:
            first[int(stream)] = _hex(payload)[:24]
    return first


def exchanges(pcap, port, keys=None):
    """HTTP/2 exchanges in wire order (the request's first HEADERS frame, or the upgraded request)."""
    ex = {}

    def get(stream, sid, frame, client_port):
        key = (stream, sid)
        if key not in ex:
            ex[key] = {"tcp_stream": stream, "h2_stream": sid, "client_port": client_port, "first_frame": frame,
                       "method": None, "path": None, "authority": None, "req_body": b"", "req_end": False,
                       "status": None, "informational": [], "resp_body": b"", "resp_end": False,
                       "rst": [], "upgrade": False}
        return ex[key]

    def walk(packets, want_streams):
        for p in packets:
            l = p["_source"]["layers"]
            stream = int(l["tcp"]["tcp.stream"])
            if want_streams is not None and stream not in want_streams:
                continue
            frame = int(l["frame"]["frame.number"])
            from_server = int(l["tcp"]["tcp.srcport"]) == port
            client_port = int(l["tcp"]["tcp.dstport"] if from_server else l["tcp"]["tcp.srcport"])
            http = l.get("http")
            if isinstance(http, dict) and "http.upgrade" in http and not from_server:
                for k in http:  # the request line's key is the line itself
                    if isinstance(http[k], dict) and "http.request.method" in http[k]:
                        e = get(stream, 1, frame, client_port)
                        e.update(method=http[k]["http.request.method"], path=http[k]["http.request.uri"],
                                 upgrade=True, req_end=True)
            for fr in _frames(l):
                ftype, sid = int(fr["http2.type"]), int(fr["http2.streamid"])
                if sid == 0:
                    continue
                flags = int(fr["http2.flags"], 16)
                e = get(stream, sid, frame, client_port)
                if ftype == 1:  # HEADERS
                    hs = dict(_headers(fr))
                    if from_server:
                        if ":status" in hs:
                            st = int(hs[":status"])
                            if st < 200:
                                e["informational"].append(st)
                            else:
                                e["status"] = st
                        if flags & 1:
                            e["resp_end"] = True
                    else:
                        if ":method" in hs:
                            e.update(method=hs[":method"], path=hs.get(":path"), authority=hs.get(":authority"))
                        if flags & 1:
                            e["req_end"] = True
                elif ftype == 0:  # DATA
                    data = _hex(fr.get("http2.data.data", ""))
                    side = "resp" if from_server else "req"
                    if "http2.body.fragments" in fr:  # tshark's reassembled body so far, this frame's included
                        e[side + "_body"] = data
                    else:
                        e[side + "_body"] += data
                    if flags & 1:
                        e[side + "_end"] = True
                elif ftype == 3:  # RST_STREAM
                    code = int(fr.get("http2.rst_stream.error", "0"))
                    e["rst"].append({"by": "server" if from_server else "client", "code": RST_CODES.get(code, str(code)),
                                     "frame": frame, "after_response_end": e["resp_end"]})

    first = first_client_bytes(pcap, port)
    if keys:
        walk(_tshark_json(pcap, ["-o", f"tls.keylog_file:{keys}", "-Y", "http2 || http"]), None)
    else:
        prior = {s for s, b in first.items() if b.startswith(PREFACE)}
        other = set(first) - prior
        if prior:
            walk(_tshark_json(pcap, ["-d", f"tcp.port=={port},http2", "-Y", "http2"]), prior)
        if other:
            walk(_tshark_json(pcap, ["-Y", "http2 || http"]), other)
    out = [e for e in ex.values() if e["method"] is not None]
    out.sort(key=lambda e: e["first_frame"])
    return out
