"""Retry-hygiene findings for truth entries: the generator's own reading of report-schema 4b.

Independent of mcp-trace: it works on what the generator knows it did (the relay's log: bodies,
headers, times; the tools/list results its servers sent; the retry links the scenario set) and
never on analyzer output. `judge` takes plain facts, so the same rules serve the new recordings
(facts from the proxy log, `facts_from_records`) and the back-fill of older truth files
(`add_retry_findings.py`, facts from the truth entries).

Time-based decisions (Retry-After, backoff) are checked for a clear margin: a truth file must not
depend on a few milliseconds of difference between the relay's clock and the capture's.
"""

import email.utils
import json
from dataclasses import dataclass, field

import truth

# report-schema 4b, in the order of its table
FINDINGS = ("unsafe_retry", "retry_after_ignored", "unchanged_after_invalid_params",
            "replay_after_invalid_response", "no_backoff", "too_many_attempts")
MAX_ATTEMPTS = 3          # --max-attempts default
BACKOFF_FACTOR = 1.5      # a gap must grow at least this much from the previous one
BACKOFF_FLOOR_S = 0.050   # both gaps under this: no backoff whatever the ratio
UNCERTAIN_OUTCOMES = {"NO_RESPONSE", "STREAM_INCOMPLETE", "CANCELLED"}
UNCERTAIN_STATUSES = {500, 502, 503, 504}
INVALID_RESPONSE_OUTCOMES = {"MALFORMED_JSON", "INVALID_ENVELOPE", "INVALID_TOOL_RESULT"}
IGNORED_PARAM_KEYS = ("_meta", "progressToken", "inputResponses", "requestState")
MARGIN_S = 0.040          # minimum distance of a time decision from its threshold
MARGIN_RATIO = 0.15       # minimum relative distance of a gap ratio from BACKOFF_FACTOR
FLOOR_MARGIN_S = 0.010    # minimum distance of a gap from BACKOFF_FLOOR_S when the floor decides


class TooClose(RuntimeError):
    """A timing decision sits too near its threshold for the truth to be trusted."""


@dataclass
class Attempt:
    n: int
    retry_of: int | None
    rpc_method: str | None
    tool: str | None
    endpoint: str
    outcome: str
    http_status: int | None
    t_req: float | None = None
    t_end: float | None = None          # when the final response (or the HTTP response) was complete
    error_code: int | None = None
    params: object = None               # normalised params (see normalise_params)
    retry_after: str | None = None      # header value on a 429/503 response
    resp_date: str | None = None        # the same response's Date header
    continuation: bool = False
    resumption: bool = False            # a GET with Last-Event-ID (report-schema 4 rule 5)
    findings: list = field(default_factory=list)
    evidence: list = field(default_factory=list)


@dataclass
class Listing:
    """One tools/list result: when it was complete, where from, and each tool's annotations."""
    t: float | None
    endpoint: str
    tools: dict                         # name -> annotations dict ({} when absent)
    n: int | None = None                # truth entry number of the tools/list


def normalise_params(params):
    if isinstance(params, dict):
        return {k: v for k, v in params.items() if k not in IGNORED_PARAM_KEYS}
    return params


def declared_safe(att, listings):
    """(safe, why) from the latest tools/list of att's endpoint complete before att started."""
    seen = [li for li in listings if li.endpoint == att.endpoint
            and (li.t is None or att.t_req is None or li.t < att.t_req)]
    if not seen:
        return False, f"{att.tool} not declared safe: no tools/list seen for the endpoint before this attempt"
    latest = max(seen, key=lambda li: li.t or 0)
    where = f"tools/list entry {latest.n}" if latest.n else "tools/list"
    if att.tool not in latest.tools:
        return False, f"{att.tool} not declared safe: not in the latest {where}"
    ann = latest.tools[att.tool]
    ro, idem = ann.get("readOnlyHint", False) is True, ann.get("idempotentHint", False) is True
    shown = json.dumps(ann, separators=(",", ":"), sort_keys=True)
    if ro or idem:
        return True, f"{att.tool} annotations {shown} from {where}"
    return False, (f"{att.tool} not declared safe: annotations {shown} from {where} "
                   f"(readOnlyHint and idempotentHint default to false)")


def retry_deadline(prev):
    """Earliest start the earlier response's Retry-After allowed, or None when it gave none."""
    v = prev.retry_after.strip()
    if v.isdigit():
        return prev.t_end + int(v), f"Retry-After {v} s"
    when = email.utils.parsedate_to_datetime(v).timestamp()
    # HTTP-date is absolute; a reader that goes by the response's own Date header instead
    # (response time + (date - Date)) must come to the same finding, so both are returned
    alt = prev.t_end + (when - email.utils.parsedate_to_datetime(prev.resp_date).timestamp()) if prev.resp_date else when
    return (when, alt), f"Retry-After {v!r}"


def clear(value, threshold, what, margin=MARGIN_S):
    if abs(value - threshold) < margin:
        raise TooClose(f"{what}: {value:.3f} vs {threshold:.3f} is within {margin * 1000:.0f} ms")


def judge(attempts, listings, max_attempts=MAX_ATTEMPTS):
    """Sets findings and evidence on every attempt with retry_of (a list of Attempt, any order)."""
    by_n = {a.n: a for a in attempts}

    def attempt_no(a):
        k = 1
        while a.retry_of is not None:
            a = by_n[a.retry_of]
            k += 1
        return k

    def gap(a):
        prev = by_n[a.retry_of]
        end = prev.t_end if prev.t_end is not None else prev.t_req
        return a.t_req - end

    for a in sorted(attempts, key=lambda x: x.n):
        if a.retry_of is None or a.continuation or a.resumption:
            continue
        prev = by_n[a.retry_of]
        k = attempt_no(a)
        found, ev = [], []
        uncertain = prev.outcome in UNCERTAIN_OUTCOMES or (
            prev.outcome == "HTTP_ERROR" and prev.http_status in UNCERTAIN_STATUSES)
        if a.rpc_method == "tools/call":
            safe, why = declared_safe(a, listings)
            if safe and uncertain:
                ev.append(f"safe to retry: {why}")
            if not safe and uncertain:
                found.append("unsafe_retry")
                ev.append(f"unsafe_retry: {why}; the earlier attempt (entry {prev.n}) ended {prev.outcome}"
                          + (f" {prev.http_status}" if prev.outcome == "HTTP_ERROR" else "") + " (side effects uncertain)")
        if prev.http_status in (429, 503) and prev.retry_after:
            deadline, what = retry_deadline(prev)
            readings = deadline if isinstance(deadline, tuple) else (deadline,)
            verdicts = set()
            for d in readings:
                clear(a.t_req, d, f"entry {a.n} start vs Retry-After deadline")
                verdicts.add(a.t_req < d)
            if len(verdicts) != 1:
                raise TooClose(f"entry {a.n}: the two readings of {what} disagree")
            waited = a.t_req - prev.t_end
            if verdicts.pop():
                found.append("retry_after_ignored")
                ev.append(f"retry_after_ignored: {what} on HTTP {prev.http_status} (entry {prev.n}), "
                          f"sent {waited * 1000:.0f} ms after it")
            else:
                ev.append(f"{what} on HTTP {prev.http_status} (entry {prev.n}) honoured: sent {waited * 1000:.0f} ms after it")
        equivalent = normalise_params(a.params) == normalise_params(prev.params)
        if prev.error_code == -32602 and equivalent:
            found.append("unchanged_after_invalid_params")
            ev.append(f"unchanged_after_invalid_params: entry {prev.n} got -32602, same params again")
        if prev.outcome in INVALID_RESPONSE_OUTCOMES and equivalent:
            found.append("replay_after_invalid_response")
            ev.append(f"replay_after_invalid_response: entry {prev.n} ended {prev.outcome}, same params again")
        if k >= 3:
            g, g_prev = gap(a), gap(prev)
            both_tiny = g < BACKOFF_FLOOR_S and g_prev < BACKOFF_FLOOR_S
            if g_prev > 0 and abs(g / g_prev - BACKOFF_FACTOR) < MARGIN_RATIO:
                raise TooClose(f"entry {a.n}: gap ratio {g / g_prev:.2f} too near {BACKOFF_FACTOR}")
            if not g < BACKOFF_FACTOR * g_prev:  # then only the floor decides
                clear(g, BACKOFF_FLOOR_S, f"entry {a.n} gap vs the floor", FLOOR_MARGIN_S)
                clear(g_prev, BACKOFF_FLOOR_S, f"entry {prev.n} gap vs the floor", FLOOR_MARGIN_S)
            if both_tiny or g < BACKOFF_FACTOR * g_prev:
                found.append("no_backoff")
                ev.append(f"no_backoff: gap {g * 1000:.0f} ms after a gap of {g_prev * 1000:.0f} ms (attempt {k})")
            else:
                ev.append(f"backoff: gap {g * 1000:.0f} ms after {g_prev * 1000:.0f} ms (attempt {k})")
        if k > max_attempts:
            found.append("too_many_attempts")
            ev.append(f"too_many_attempts: attempt {k} > {max_attempts}")
        a.findings = [f for f in FINDINGS if f in found]
        a.evidence = ev


def apply(entries, attempts):
    """Writes retry_findings into the truth entries and the facts into their reason."""
    by_n = {a.n: a for a in attempts}
    for e in entries:
        a = by_n.get(e["n"])
        e["retry_findings"] = ";".join(a.findings) if a and a.findings else None
        if a and a.evidence:
            e["reason"] += "; hygiene: " + "; ".join(a.evidence)


# --- facts from the relay's log (new recordings) -----------------------------------------------

def final_message(rec):
    """The JSON-RPC message answering rec's request (JSON body or SSE event), or None."""
    body = truth.parse_body(rec)
    if not isinstance(body, dict) or "id" not in body:
        return None
    ctype = (truth.hget(rec["resp_headers"], "content-type") or "").lower()
    text = truth.find_in_sse(rec["resp_body"], body["id"]) if "text/event-stream" in ctype else rec["resp_body"]
    try:
        msg = json.loads(text) if text else None
    except ValueError:
        return None
    return msg if isinstance(msg, dict) else None


def endpoint_of(rec, host):
    return f"{host}{rec['path'].split('?')[0]}"


def facts_from_records(entries, records, host):
    """Attempts and tools/list listings for entries built from records (same order, same length)."""
    assert len(entries) == len(records)
    attempts, listings = [], []
    for e, rec in zip(entries, records):
        body = truth.parse_body(rec)
        msg = final_message(rec) if e["kind"] == "request" else None
        err = msg.get("error") if msg else None
        code = err.get("code") if isinstance(err, dict) else None
        status = rec["status"]
        attempts.append(Attempt(
            n=e["n"], retry_of=e["retry_of"], rpc_method=e["rpc_method"], tool=e["tool_name"],
            endpoint=endpoint_of(rec, host), outcome=e["outcome"], http_status=e["http_status"],
            t_req=rec["t_req"], t_end=rec["t_resp_end"], error_code=code,
            params=normalise_params(body.get("params")) if isinstance(body, dict) else None,
            retry_after=truth.hget(rec["resp_headers"], "retry-after") if status in (429, 503) else None,
            resp_date=truth.hget(rec["resp_headers"], "date"),
            continuation=e["continuation_of"] is not None,
            resumption=e["http_method"] == "GET" and truth.hget(rec["req_headers"], "last-event-id") is not None))
        if e["rpc_method"] == "tools/list" and msg and isinstance(msg.get("result"), dict):
            tools = {t["name"]: t.get("annotations") or {} for t in msg["result"].get("tools", [])}
            listings.append(Listing(t=rec["t_resp_end"], endpoint=endpoint_of(rec, host), tools=tools, n=e["n"]))
    return attempts, listings


def judge_records(entries, records, host, max_attempts=MAX_ATTEMPTS):
    attempts, listings = facts_from_records(entries, records, host)
    judge(attempts, listings, max_attempts)
    apply(entries, attempts)
    return attempts
