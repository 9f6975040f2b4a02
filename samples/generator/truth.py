"""Builds truth entries from the proxy's log (what was really sent and received).

The outcome of each request is decided here from the bytes the generator relayed, with the
rules of ../../shared/docs/report-schema.md section 3 (this is the generator's own reading,
never mcp-trace's). Scenario code then adds what only it knows: retries and continuations;
hygiene.py then sets retry_findings (section 4b) from those links and the log.
"""

import json
from urllib.parse import parse_qs, urlsplit

# report-schema section 3 has no row for these two; our reading (see samples/README.md):
# a 2xx that carries no JSON-RPC answer and needs none is ACCEPTED.
DELETE_OK_OUTCOME = "ACCEPTED"
STREAM_CLOSED_OUTCOME = "ACCEPTED"


def hget(headers, name):
    for k, v in headers or []:
        if k.lower() == name:
            return v
    return None


def sse_events(text):
    """Parse an SSE body into a list of {'id', 'event', 'data'} (data lines joined by \\n)."""
    events = []
    norm = text.replace("\r\n", "\n").replace("\r", "\n")
    for block in norm.split("\n\n"):
        if not block.strip():
            continue
        ev = {"id": None, "event": None, "data": None}
        data = []
        for line in block.split("\n"):
            if line.startswith(":"):
                continue
            field, _, value = line.partition(":")
            value = value[1:] if value.startswith(" ") else value
            if field == "data":
                data.append(value)
            elif field in ("id", "event"):
                ev[field] = value
        if data:
            ev["data"] = "\n".join(data)
        if ev["data"] is not None or ev["id"] is not None:
            events.append(ev)
    return events


def parse_body(rec):
    try:
        return json.loads(rec["req_body"]) if rec["req_body"] else None
    except ValueError:
        return ValueError


def kind_of(rec, body):
    m = rec["method"]
    if m == "GET":
        return "stream"
    if m == "DELETE":
        return "session_end"
    if m != "POST" or not isinstance(body, dict):
        return "http"
    if "method" in body and "id" in body:
        return "request"
    if "method" in body:
        return "notification"
    if "result" in body or "error" in body:
        return "response"
    return "http"


def classify_message(text, req_id, rpc_method):
    """Outcome of a request from the text of its final response message."""
    try:
        msg = json.loads(text)
    except ValueError:
        return "MALFORMED_JSON", "response body is not JSON"
    if not isinstance(msg, dict) or msg.get("jsonrpc") != "2.0":
        return "INVALID_ENVELOPE", "not a JSON-RPC 2.0 object"
    if ("result" in msg) == ("error" in msg):
        return "INVALID_ENVELOPE", "both or neither of result/error"
    if msg.get("id") != req_id:
        return "INVALID_ENVELOPE", f"response id {json.dumps(msg.get('id'))} differs from request id {json.dumps(req_id)}"
    if "error" in msg:
        err = msg["error"]
        if not isinstance(err, dict) or not isinstance(err.get("code"), int) or "message" not in err:
            return "INVALID_ENVELOPE", "bad error object"
        return "JSONRPC_ERROR", f"JSON-RPC error {err['code']} on a 2xx"
    res = msg["result"]
    if not isinstance(res, dict):
        return "INVALID_ENVELOPE", "result is not an object"
    rt = res.get("resultType")
    if rt == "input_required":
        return "INPUT_REQUIRED", "resultType input_required"
    if rpc_method == "tools/call":
        if not isinstance(res.get("content"), list):
            return "INVALID_TOOL_RESULT", "content is not an array"
        if "isError" in res and not isinstance(res["isError"], bool):
            return "INVALID_TOOL_RESULT", "isError is not a boolean"
        if rt not in (None, "complete"):
            return "INVALID_TOOL_RESULT", f"unknown resultType {rt}"
        if res.get("isError") is True:
            return "TOOL_ERROR", "tool result with isError: true"
        return "TOOL_SUCCESS", "tool result without isError"
    return "RPC_SUCCESS", f"{rpc_method} result"


def find_in_sse(text, req_id, shared=False):
    """The data of the SSE event that answers req_id, or a malformed data payload.

    On a request's own stream the first response-shaped event is the answer (its id is
    checked later); on a shared stream (legacy /sse) only an event with the same id is."""
    for ev in sse_events(text):
        d = ev["data"]
        if not d or ev["event"] == "endpoint":  # legacy transport's endpoint event is not JSON
            continue
        try:
            msg = json.loads(d)
        except ValueError:
            return d  # unparseable data where the answer should be
        # the first response-shaped event is the answer (its id is checked by classify_message)
        if isinstance(msg, dict) and ("result" in msg or "error" in msg) and "method" not in msg:
            if not shared or msg.get("id") == req_id:
                return d
    return None


def legacy_session_of(rec):
    q = parse_qs(urlsplit(rec["path"]).query)
    for key in ("sessionId", "session_id"):
        if key in q:
            return q[key][0]
    if rec["method"] == "GET":
        for ev in sse_events(rec["resp_body"]):
            if ev["event"] == "endpoint" and ev["data"]:
                return legacy_session_of({"path": ev["data"], "method": "POST"})
    return None


def build_entries(records, t_capture_end, client_of, sid_labels):
    """records: proxy log (sorted by first byte). client_of(rec, sid) -> client label."""
    entries = []
    legacy_streams = {}
    for rec in records:
        if rec["method"] == "GET" and legacy_session_of(rec):
            legacy_streams[legacy_session_of(rec)] = rec
    for n, rec in enumerate(records, 1):
        body = parse_body(rec)
        kind = kind_of(rec, body)
        sid = hget(rec["req_headers"], "mcp-session-id") or hget(rec["resp_headers"], "mcp-session-id")
        lsid = legacy_session_of(rec)
        sid = sid or lsid
        client = client_of(rec, sid)
        if sid:
            session = sid_labels.setdefault(sid, f"s{len(sid_labels) + 1}")
        else:
            session = f"{client}/no-session-id"
        req_id = body.get("id") if isinstance(body, dict) else None
        rpc_method = body.get("method") if isinstance(body, dict) else None
        tool = body.get("params", {}).get("name") if rpc_method == "tools/call" else None
        status = rec["status"]
        ctype = (hget(rec["resp_headers"], "content-type") or "").lower()
        final = False
        reason = ""
        if status is None:
            outcome, reason = "NO_RESPONSE", "connection closed without an HTTP response"
        elif not 200 <= status < 300:
            outcome, reason = "HTTP_ERROR", f"HTTP {status}"
            if rec.get("injected"):
                reason += " injected by the fault proxy (empty body)"
        elif kind in ("notification", "response"):
            outcome, reason = "ACCEPTED", f"HTTP {status} to a {kind}"
        elif kind == "session_end":
            outcome, reason = DELETE_OK_OUTCOME, f"DELETE answered {status} (session ended)"
        elif kind == "stream":
            open_at_end = rec["t_resp_end"] is None or rec["t_resp_end"] > t_capture_end
            if open_at_end:
                outcome, reason = "STREAM_OPEN", "GET stream still open when the capture stopped"
            else:
                outcome, reason = STREAM_CLOSED_OUTCOME, "GET stream opened and later closed (no JSON-RPC answer expected)"
            if hget(rec["req_headers"], "last-event-id"):
                reason = "resumption GET with Last-Event-ID; " + reason
        elif kind == "request":
            outcome, reason, final = request_outcome(rec, body, status, ctype, records, legacy_streams, lsid)
        elif rec["method"] != "POST":
            outcome, reason = "ACCEPTED", f"{rec['method']} answered {status}, no JSON-RPC involved (our reading)"
        else:
            outcome, reason = "INVALID_ENVELOPE", "POST body is not a JSON-RPC message"
            if body is ValueError:
                outcome, reason = "MALFORMED_JSON", "request body is not JSON"
        entries.append({
            "n": n, "client": client, "session": session, "http_method": rec["method"],
            "path": rec["path"], "kind": kind,
            "jsonrpc_id": json.dumps(req_id) if req_id is not None else None,
            "rpc_method": rpc_method, "tool_name": tool, "http_status": status,
            "outcome": outcome, "final_response": final, "retry_of": None, "retry_origin": "none",
            "retry_findings": None, "continuation_of": None, "reason": reason,
        })
    mark_cancelled(entries, records)
    return entries


def mark_cancelled(entries, records):
    """report-schema 3: a request the client cancelled (notifications/cancelled naming its id, in its
    session) before its final response was complete is CANCELLED, whatever came after."""
    for e, rec in zip(entries, records):
        if e["rpc_method"] != "notifications/cancelled":
            continue
        rid = json.dumps((parse_body(rec).get("params") or {}).get("requestId"))
        for r, rrec in zip(entries, records):
            if (r["kind"] == "request" and r["session"] == e["session"] and r["jsonrpc_id"] == rid
                    and rrec["t_req"] < rec["t_req"] and (rrec["t_resp_end"] is None or rec["t_req"] < rrec["t_resp_end"])):
                late = "; its response came later" if r["final_response"] else ""
                r["outcome"] = "CANCELLED"
                r["reason"] = f"cancelled by notifications/cancelled (entry {e['n']}) before its final response{late}"


def request_outcome(rec, body, status, ctype, records, legacy_streams, lsid):
    req_id = body["id"]
    method = body["method"]
    if status == 202 and lsid:
        stream = legacy_streams.get(lsid)
        text = find_in_sse(stream["resp_body"], req_id, shared=True) if stream else None
        if text is None:
            return "NO_RESPONSE", "legacy POST accepted (202) but no answer on the /sse stream", False
        o, r = classify_message(text, req_id, method)
        return o, f"{r} (answer on the legacy /sse stream; the POST got 202)", True
    if status == 202:
        return "UNEXPECTED_RESPONSE", "202 to a request", False
    if "text/event-stream" in ctype:
        text = find_in_sse(rec["resp_body"], req_id)
        if text is not None:
            o, r = classify_message(text, req_id, method)
            return o, r + " (SSE)", o not in ("MALFORMED_JSON",)
        # resumed on a later GET with Last-Event-ID?
        for later in records:
            if later["t_req"] > rec["t_req"] and later["method"] == "GET" and hget(later["req_headers"], "last-event-id"):
                text = find_in_sse(later["resp_body"], req_id)
                if text is not None:
                    o, r = classify_message(text, req_id, method)
                    return o, r + " (delivered on the resumed GET stream after the first stream was cut)", True
        return "STREAM_INCOMPLETE", "SSE stream ended before the final response", False
    if "application/json" in ctype or rec["resp_body"]:
        o, r = classify_message(rec["resp_body"], req_id, method)
        return o, r + " (JSON)", o not in ("MALFORMED_JSON",)
    return "UNEXPECTED_RESPONSE", f"2xx with media type {ctype!r}", False
