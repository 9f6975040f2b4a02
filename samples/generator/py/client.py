"""MCP client built with the Python SDK (mcp 2.x Client), for the recordings in samples/.

usage: python py/client.py --url URL --steps a,b,c [--mode auto|legacy] [--log FILE]
Steps: list | echo:TEXT | fail | unknown | slow:N | approve:ITEM (answers the elicitation) |
       prompt_unknown (prompts/get of a prompt the server does not have: a JSON-RPC error) |
       retry_echo:TEXT (call echo; when it raises, wait 300 ms and call it again: an application retry,
                        a new JSON-RPC id; with --otel-spans both attempts run inside one application span)
TLS (tls-* recordings): [--tls-ca CAFILE] [--tls-max 1.2] [--tls-ciphers OPENSSL-LIST] [--keylog FILE]:
the application passes the SDK an httpx2 client whose ssl.SSLContext trusts CAFILE, is capped at
that version and those suites, and writes the NSS key log (context.keylog_filename).
OpenTelemetry (otel-py-client recording): [--otel-spans FILE] installs the OpenTelemetry SDK's
TracerProvider (service.name samples-py-client) with a SimpleSpanProcessor and a small exporter that
appends every finished span of this process to FILE as one JSON object per line (JSON lines):
trace_id / span_id / parent_span_id as 32 / 16 / 16 lowercase hex, name, kind, start/end in ns since
the epoch, attributes, status, events, instrumentation scope. With a real TracerProvider the SDK's
JSONRPCDispatcher.send_raw_request opens a CLIENT span per request and injects its W3C traceparent
into the request's params._meta (mcp/shared/_otel.py inject_trace_context); without one, nothing is
injected.
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
from mcp.shared.exceptions import MCPError
from mcp.types import Implementation

LOG = None


def setup_otel(path):
    """OpenTelemetry SDK: every finished span of this process is appended to `path` (JSON lines)."""
    from opentelemetry import trace
    from opentelemetry.sdk.resources import Resource
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import SimpleSpanProcessor, SpanExporter, SpanExportResult

    class JsonLinesExporter(SpanExporter):
        def export(self, spans):
            with open(path, "a") as f:
                for sp in spans:
                    ctx, parent = sp.get_span_context(), sp.parent
                    f.write(json.dumps({
                        "trace_id": format(ctx.trace_id, "032x"), "span_id": format(ctx.span_id, "016x"),
                        "parent_span_id": format(parent.span_id, "016x") if parent is not None else None,
                        "trace_flags": format(int(ctx.trace_flags), "02x"),
                        "name": sp.name, "kind": sp.kind.name,
                        "start_time_unix_nano": sp.start_time, "end_time_unix_nano": sp.end_time,
                        "attributes": dict(sp.attributes or {}),
                        "status": {"code": sp.status.status_code.name, "description": sp.status.description},
                        "events": [{"name": ev.name, "time_unix_nano": ev.timestamp,
                                    "attributes": dict(ev.attributes or {})} for ev in sp.events],
                        "scope": sp.instrumentation_scope.name if sp.instrumentation_scope else None,
                        "service_name": sp.resource.attributes.get("service.name"),
                    }) + "\n")
            return SpanExportResult.SUCCESS

        def shutdown(self):
            pass

    provider = TracerProvider(resource=Resource.create({"service.name": "samples-py-client"}))
    provider.add_span_processor(SimpleSpanProcessor(JsonLinesExporter()))
    trace.set_tracer_provider(provider)
    return provider


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
                elif name == "prompt_unknown":
                    try:
                        await client.get_prompt("no_such_prompt", {})
                        log(step="prompts/get", ok=True)
                    except MCPError as e:
                        log(step="prompts/get", ok=False, code=e.error.code, error=e.error.message)
                elif name == "retry_echo":
                    from opentelemetry import trace

                    # an application operation: both attempts are children of this span (one trace)
                    with trace.get_tracer("samples-py-client").start_as_current_span("retry_echo"):
                        try:
                            r = await client.call_tool("echo", {"text": arg or "retry me"})
                        except MCPError as e:
                            log(step="app_retry", after_ms=300, code=e.error.code, reason=e.error.message)
                            await asyncio.sleep(0.3)
                            r = await client.call_tool("echo", {"text": arg or "retry me"})
                    log(step="tools/call", tool="echo", ok=True, **summarize(r))
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
    ap.add_argument("--otel-spans")
    args = ap.parse_args()
    LOG = args.log
    provider = setup_otel(args.otel_spans) if args.otel_spans else None
    try:
        asyncio.run(asyncio.wait_for(run(args), args.lifetime))
    except Exception as e:  # noqa: BLE001
        log(step="fatal", error=repr(e))
        sys.exit(1)
    finally:
        if provider is not None:
            provider.shutdown()


if __name__ == "__main__":
    main()
