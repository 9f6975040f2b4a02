"""The OpenTelemetry export (`analyze --otlp FILE`, `--otlp-endpoint URL`).

1. Every capture in samples/ (pcap, pcapng, HAR; with its `.keys` key log where there is one)
   written with `--otlp` gives OTLP/JSON lines, one ExportTraceServiceRequest each, that the
   official definitions (opentelemetry-proto's ExportTraceServiceRequest through protobuf's
   json_format) parse with no unknown field, once the hex trace and span ids that OTLP/JSON
   prescribes are turned into the base64 that protobuf's JSON mapping takes for bytes. On top
   of what Parse checks: camelCase field names only, 64-bit integers as strings, enums as
   integers (Parse also takes snake_case, bare numbers and enum names), 16-byte trace ids and
   8-byte span ids, CLIENT exchange spans (the `MCP session` roots that group them are
   INTERNAL), end >= start, a name, `mcp.method.name` on request spans, span ids unique in the
   file; and a second run writes the same bytes. A parent need not be in the file: a request
   that carried a W3C `traceparent` is the child of the client's own span.
2. A real OTLP/HTTP receiver, Arize Phoenix (PyPI arize-phoenix; tests/python/requirements-otlp.txt),
   started on a free loopback port with a temporary working dir, gets the spans of
   fault-503-app-retry.pcap from `--otlp-endpoint`; read back through its REST API they are
   the spans of the file: same (trace id, span id) set, names, parents, status, times (to the
   microsecond Phoenix keeps), event names, and every attribute of the file with its value
   (mcp.method.name, jsonrpc.request.id, http.response.status_code named). Phoenix's /v1/traces takes `Content-Type: application/x-protobuf` only (415 for
   application/json), so this also checks that the endpoint export sends protobuf.

Without Phoenix the receiver test skips, unless MCP_TRACE_REQUIRE_OTLP_RECEIVER=1, where a
receiver that is missing or cannot start is a failure (as MCP_TRACE_REQUIRE_BROWSER for the
HTML report test). MCP_TRACE_PHOENIX may name the `phoenix` executable (e.g. one in its own
venv); otherwise this interpreter's `phoenix.server.main` module, then `phoenix` on PATH."""

import base64
import importlib.util
import json
import os
import re
import shutil
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.parse
import urllib.request
from datetime import datetime, timedelta, timezone
from pathlib import Path

import pytest
from google.protobuf import json_format
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest
from opentelemetry.proto.trace.v1.trace_pb2 import Span, Status

ROOT = Path(__file__).resolve().parents[2]
BIN = Path(os.environ.get("MCP_TRACE", ROOT / "target" / "debug" / "mcp-trace"))
SAMPLES_DIR = ROOT / "samples"
INPUTS = sorted(p.name for p in SAMPLES_DIR.iterdir()
                if p.is_file() and p.suffix in (".pcap", ".pcapng", ".har"))
RECEIVER_SAMPLE = "fault-503-app-retry.pcap"
REQUIRE_RECEIVER = os.environ.get("MCP_TRACE_REQUIRE_OTLP_RECEIVER") == "1"
# Phoenix: seconds to answer /healthz (about 11 s on the 2-core machine), then to store spans.
RECEIVER_START_TIMEOUT = 180
RECEIVER_INGEST_TIMEOUT = 60

HEX = {"traceId": re.compile(r"[0-9a-f]{32}"), "spanId": re.compile(r"[0-9a-f]{16}"),
       "parentSpanId": re.compile(r"[0-9a-f]{16}")}
FIELD_NAME = re.compile(r"[a-z][A-Za-z0-9]*")  # protobuf JSON names: lowerCamelCase
STRING_INTS = ("startTimeUnixNano", "endTimeUnixNano", "timeUnixNano", "intValue")
SESSION_SPAN = "MCP session"
# Every packet cut to 200 bytes: no JSON-RPC body to read a method from.
NO_JSON_BODIES = {"snaplen-200.pcap"}
COMPARED_ATTRIBUTES = ("mcp.method.name", "jsonrpc.request.id", "http.response.status_code")
EPOCH = datetime(1970, 1, 1, tzinfo=timezone.utc)
STATUS_NAMES = {Status.STATUS_CODE_UNSET: "UNSET", Status.STATUS_CODE_OK: "OK",
                Status.STATUS_CODE_ERROR: "ERROR"}


def require_bin():
    if not BIN.exists():
        pytest.skip(f"{BIN} not built (run cargo build first)")


def keylog_args(sample):
    keys = SAMPLES_DIR / (Path(sample).stem + ".keys")
    return ["--keylog", str(keys)] if keys.exists() else []


def analyze(sample, out, *extra):
    cmd = [str(BIN), "analyze", str(SAMPLES_DIR / sample), *keylog_args(sample),
           "--otlp", str(out), *extra]
    subprocess.run(cmd, check=True, stdin=subprocess.DEVNULL, timeout=300)
    return out


# ---------------------------------------------------------------------------------------------
# OTLP/JSON -> the official protobuf message


def check_json_shape(node, where="$"):
    """What protobuf's JSON parser lets through but OTLP/JSON as the file exporter writes it
    does not: snake_case names, 64-bit integers as JSON numbers, enums as names."""
    if isinstance(node, dict):
        for key, value in node.items():
            assert FIELD_NAME.fullmatch(key), f"{where}: field name {key!r} is not lowerCamelCase"
            if key in STRING_INTS:
                assert isinstance(value, str) and re.fullmatch(r"-?[0-9]+", value), \
                    f"{where}.{key}: a 64-bit integer is a JSON string of digits, got {value!r}"
            if key in ("kind", "code"):
                assert isinstance(value, int) and not isinstance(value, bool), \
                    f"{where}.{key}: an enum is an integer, got {value!r}"
            check_json_shape(value, f"{where}.{key}")
    elif isinstance(node, list):
        for i, item in enumerate(node):
            check_json_shape(item, f"{where}[{i}]")


def hex_ids_to_base64(request):
    """OTLP/JSON ids are lowercase hex; protobuf's JSON mapping reads bytes as base64 (and would
    read 32 hex digits, which are valid base64, as 24 bytes). Converts in place, after checking
    the hex; an absent or empty parentSpanId is a root span."""
    def convert(obj, key, where):
        value = obj[key]
        assert isinstance(value, str) and HEX[key].fullmatch(value), \
            f"{where}.{key}: want {HEX[key].pattern}, got {value!r}"
        obj[key] = base64.b64encode(bytes.fromhex(value)).decode("ascii")

    for r, rs in enumerate(request.get("resourceSpans", [])):
        for s, ss in enumerate(rs.get("scopeSpans", [])):
            for i, span in enumerate(ss.get("spans", [])):
                where = f"resourceSpans[{r}].scopeSpans[{s}].spans[{i}]"
                convert(span, "traceId", where)
                convert(span, "spanId", where)
                if span.get("parentSpanId", "") != "":
                    convert(span, "parentSpanId", where)
                for j, link in enumerate(span.get("links", [])):
                    convert(link, "traceId", f"{where}.links[{j}]")
                    convert(link, "spanId", f"{where}.links[{j}]")
    return request


def parse_line(line):
    raw = json.loads(line)
    check_json_shape(raw)
    converted = hex_ids_to_base64(json.loads(line))
    return json_format.Parse(json.dumps(converted), ExportTraceServiceRequest(),
                             ignore_unknown_fields=False)


def parse_file(path):
    text = path.read_text(encoding="utf-8")
    assert text.endswith("\n"), f"{path}: the last line has no newline"
    lines = text.split("\n")[:-1]
    assert all(line.strip() for line in lines), f"{path}: empty line"
    return [parse_line(line) for line in lines]


def spans_of(requests):
    for request in requests:
        for rs in request.resource_spans:
            for ss in rs.scope_spans:
                for span in ss.spans:
                    yield rs, ss, span


def any_value(value):
    """An OTLP AnyValue (protobuf) as a Python value."""
    which = value.WhichOneof("value")
    if which == "array_value":
        return [any_value(v) for v in value.array_value.values]
    if which == "kvlist_value":
        return {kv.key: any_value(kv.value) for kv in value.kvlist_value.values}
    return getattr(value, which) if which else None


def attributes(span):
    keys = [kv.key for kv in span.attributes]
    assert len(keys) == len(set(keys)), f"span {span.name!r}: attribute keys repeat: {keys}"
    return {kv.key: any_value(kv.value) for kv in span.attributes}


def check_span(span):
    """One span against the OTLP rules and the MCP semantic conventions."""
    what = f"span {span.span_id.hex()} {span.name!r}"
    assert len(span.trace_id) == 16 and any(span.trace_id), f"{what}: trace id {span.trace_id.hex()}"
    assert len(span.span_id) == 8 and any(span.span_id), f"{what}: span id {span.span_id.hex()}"
    assert len(span.parent_span_id) in (0, 8), f"{what}: parent span id {span.parent_span_id.hex()}"
    assert span.parent_span_id != span.span_id, f"{what}: its own parent"
    if span.name == SESSION_SPAN:  # the root that groups a session's exchanges
        assert span.kind == Span.SPAN_KIND_INTERNAL, f"{what}: kind {span.kind}"
        assert not span.parent_span_id, f"{what}: a session span is a root"
    else:  # an exchange: the client's side of one HTTP request
        assert span.kind == Span.SPAN_KIND_CLIENT, f"{what}: kind {span.kind}"
    assert span.name, f"{what}: no name"
    assert span.start_time_unix_nano > 0, f"{what}: no start time"
    assert span.end_time_unix_nano >= span.start_time_unix_nano, f"{what}: ends before it starts"
    for link in span.links:
        assert len(link.trace_id) == 16 and len(link.span_id) == 8, f"{what}: link {link}"
    for event in span.events:
        assert event.name, f"{what}: event without a name"
    attrs = attributes(span)
    if "jsonrpc.request.id" in attrs:  # a JSON-RPC request: the MCP span of its method
        assert isinstance(attrs["jsonrpc.request.id"], str), f"{what}: jsonrpc.request.id is a string"
        assert "mcp.method.name" in attrs, f"{what}: request span without mcp.method.name"
    if "mcp.method.name" in attrs:
        method = attrs["mcp.method.name"]
        assert isinstance(method, str) and method, f"{what}: mcp.method.name {method!r}"
        # semconv: the span name is `{mcp.method.name} {target}`, or the method alone
        assert span.name == method or span.name.startswith(method + " "), \
            f"{what}: name does not start with mcp.method.name {method!r}"
    if "http.response.status_code" in attrs:
        assert isinstance(attrs["http.response.status_code"], int), \
            f"{what}: http.response.status_code is an int"
    return attrs


def check_file(path):
    requests = parse_file(path)
    seen = {}
    with_method = 0
    for rs, ss, span in spans_of(requests):
        resource = {kv.key: any_value(kv.value) for kv in rs.resource.attributes}
        assert resource.get("service.name"), f"{path}: resource without service.name"
        assert ss.scope.name == "mcp-trace", f"{path}: scope {ss.scope.name!r}"
        attrs = check_span(span)
        with_method += "mcp.method.name" in attrs
        assert span.span_id not in seen, \
            f"{path}: span id {span.span_id.hex()} used by {seen[span.span_id]!r} and {span.name!r}"
        seen[span.span_id] = span.name
    return requests, len(seen), with_method


# ---------------------------------------------------------------------------------------------
# 1. Schema: every sample, official definitions, deterministic


@pytest.mark.parametrize("sample", INPUTS)
def test_otlp_file_parses_with_official_definitions(sample, tmp_path):
    require_bin()
    first = analyze(sample, tmp_path / "spans.jsonl")
    requests, spans, with_method = check_file(first)
    assert spans >= 1, f"{sample}: no span"
    if sample not in NO_JSON_BODIES:
        assert with_method >= 1, f"{sample}: no span with mcp.method.name"
    second = analyze(sample, tmp_path / "again.jsonl")
    assert first.read_bytes() == second.read_bytes(), f"{sample}: a second run wrote other bytes"


def test_parser_on_hand_made_request():
    """The checks above on a request written by hand in the format of the feature's brief (as
    the Collector's file exporter writes it), and on the mistakes they are there to catch."""
    line = json.dumps(HAND_MADE, separators=(",", ":"))
    request = parse_line(line)
    spans = [span for _, _, span in spans_of([request])]
    assert [s.name for s in spans] == ["initialize", "tools/call echo"]
    for span in spans:
        check_span(span)
    child = spans[1]
    assert child.trace_id.hex() == "5b8efff798038103d269b633813fc60c"
    assert child.parent_span_id.hex() == spans[0].span_id.hex() == "eee19b7ec3c1b174"
    assert child.links[0].span_id.hex() == "eee19b7ec3c1b174"
    assert child.status.code == Status.STATUS_CODE_ERROR and child.status.message == "HTTP_ERROR"
    assert attributes(child)["server.port"] == 3000
    assert child.end_time_unix_nano == 1764000000150000000

    bad = [
        ('"traceId":"5b8efff798038103d269b633813fc60c"', '"traceId":"5B8EFFF798038103D269B633813FC60C"'),
        ('"spanId":"eee19b7ec3c1b175"', '"spanId":"7uGbfsPBsXU="'),  # base64, not hex
        ('"traceId":"5b8e', '"trace_id":"5b8e'),
        ('"kind":3', '"kind":"SPAN_KIND_CLIENT"'),
        ('"startTimeUnixNano":"1764000000100000000"', '"startTimeUnixNano":1764000000100000000'),
        ('"droppedEventsCount":0', '"droppedEventCount":0'),
    ]
    for old, new in bad:
        assert old in line, old
        with pytest.raises((AssertionError, json_format.ParseError)):
            parse_line(line.replace(old, new, 1))
    # kind 2 (SERVER) parses, but a span of mcp-trace is a CLIENT span.
    with pytest.raises(AssertionError):
        check_span([s for _, _, s in spans_of([parse_line(line.replace('"kind":3', '"kind":2'))])][0])


HAND_MADE = {"resourceSpans": [{
    "resource": {"attributes": [{"key": "service.name", "value": {"stringValue": "mcp-server 127.0.0.1:3000"}}]},
    "scopeSpans": [{"scope": {"name": "mcp-trace", "version": "0.1.0"}, "spans": [
        {"traceId": "5b8efff798038103d269b633813fc60c", "spanId": "eee19b7ec3c1b174",
         "name": "initialize", "kind": 3,
         "startTimeUnixNano": "1764000000000000000", "endTimeUnixNano": "1764000000012000000",
         "attributes": [{"key": "mcp.method.name", "value": {"stringValue": "initialize"}},
                        {"key": "jsonrpc.request.id", "value": {"stringValue": "0"}},
                        {"key": "http.response.status_code", "value": {"intValue": "200"}}],
         "events": [{"timeUnixNano": "1764000000012000000", "name": "response", "attributes": []}],
         "droppedEventsCount": 0, "links": [], "status": {"code": 0, "message": ""}},
        {"traceId": "5b8efff798038103d269b633813fc60c", "spanId": "eee19b7ec3c1b175",
         "parentSpanId": "eee19b7ec3c1b174", "name": "tools/call echo", "kind": 3,
         "startTimeUnixNano": "1764000000100000000", "endTimeUnixNano": "1764000000150000000",
         "attributes": [{"key": "mcp.method.name", "value": {"stringValue": "tools/call"}},
                        {"key": "jsonrpc.request.id", "value": {"stringValue": "1"}},
                        {"key": "http.response.status_code", "value": {"intValue": "503"}},
                        {"key": "server.port", "value": {"intValue": "3000"}}],
         "events": [{"timeUnixNano": "1764000000150000000", "name": "response", "attributes": []}],
         "droppedEventsCount": 0,
         "links": [{"traceId": "5b8efff798038103d269b633813fc60c", "spanId": "eee19b7ec3c1b174",
                    "attributes": [{"key": "mcp.link.kind", "value": {"stringValue": "retry_of"}}]}],
         "status": {"code": 2, "message": "HTTP_ERROR"}},
    ]}],
}]}


# ---------------------------------------------------------------------------------------------
# 2. A real receiver: Arize Phoenix


def unavailable(reason):
    if REQUIRE_RECEIVER:
        pytest.fail(f"{reason} (MCP_TRACE_REQUIRE_OTLP_RECEIVER=1)")
    pytest.skip(reason)


def phoenix_command():
    exe = os.environ.get("MCP_TRACE_PHOENIX")
    if exe:
        return [exe]
    spec = importlib.util.find_spec("phoenix")  # finds without importing (phoenix is heavy)
    if spec and any((Path(d) / "server" / "main.py").exists()
                    for d in spec.submodule_search_locations or []):
        return [sys.executable, "-m", "phoenix.server.main"]
    exe = shutil.which("phoenix")
    return [exe] if exe else None


def free_port():
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def http_json(url, timeout=10):
    with urllib.request.urlopen(url, timeout=timeout) as response:
        return json.load(response)


class Phoenix:
    """`phoenix serve` on 127.0.0.1 with its own SQLite database in a temporary dir."""

    def __init__(self, command, workdir):
        self.port, self.grpc_port = free_port(), free_port()
        while self.grpc_port == self.port:
            self.grpc_port = free_port()
        self.base = f"http://127.0.0.1:{self.port}"
        self.log_path = workdir / "phoenix.log"
        env = {k: v for k, v in os.environ.items() if not k.startswith(("PHOENIX_", "OTEL_"))}
        env.update(PHOENIX_WORKING_DIR=str(workdir), PHOENIX_TELEMETRY_ENABLED="false",
                   PHOENIX_ALLOW_EXTERNAL_RESOURCES="false")
        self.log = open(self.log_path, "wb")
        self.proc = subprocess.Popen(
            [*command, "serve", "--host", "127.0.0.1", "--port", str(self.port),
             "--grpc-port", str(self.grpc_port), "--no-ui"],
            env=env, cwd=workdir, stdin=subprocess.DEVNULL, stdout=self.log,
            stderr=subprocess.STDOUT)

    def log_tail(self, lines=40):
        self.log.flush()
        text = self.log_path.read_text(errors="replace").splitlines()
        return "\n".join(text[-lines:])

    def traces_posts(self):
        """Phoenix's access-log lines for the OTLP endpoint: the status it answered."""
        self.log.flush()
        return [l for l in self.log_path.read_text(errors="replace").splitlines() if "/v1/traces" in l]

    def refused_posts(self):
        return [l for l in self.traces_posts() if re.search(r'"POST /v1/traces[^"]*" (?!200 )\d{3}', l)]

    def wait_ready(self, timeout):
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError(f"phoenix exited with {self.proc.returncode}:\n{self.log_tail()}")
            try:
                with urllib.request.urlopen(self.base + "/healthz", timeout=2) as r:
                    if r.status == 200:
                        return
            except (urllib.error.URLError, OSError):
                pass
            time.sleep(0.25)
        raise RuntimeError(f"phoenix not ready after {timeout} s:\n{self.log_tail()}")

    def spans(self):
        """Every stored span of every project, as the REST API gives them."""
        out = []
        for project in http_json(self.base + "/v1/projects?limit=1000")["data"]:
            cursor = None
            while True:
                query = {"limit": 1000, **({"cursor": cursor} if cursor else {})}
                page = http_json(f"{self.base}/v1/projects/{urllib.parse.quote(project['id'])}"
                                 f"/spans?{urllib.parse.urlencode(query)}")
                out.extend(page["data"])
                cursor = page.get("next_cursor")
                if not cursor:
                    break
        return out

    def close(self):
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(timeout=20)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        self.log.close()


@pytest.fixture(scope="module")
def phoenix(tmp_path_factory):
    require_bin()
    command = phoenix_command()
    if command is None:
        unavailable("no OTLP receiver: arize-phoenix not installed "
                    "(pip install -r tests/python/requirements-otlp.txt)")
    try:
        receiver = Phoenix(command, tmp_path_factory.mktemp("phoenix"))
    except OSError as e:
        unavailable(f"OTLP receiver (Phoenix) does not start: {command}: {e}")
    try:
        receiver.wait_ready(RECEIVER_START_TIMEOUT)
    except (RuntimeError, OSError) as e:
        receiver.close()
        unavailable(f"OTLP receiver (Phoenix) does not start: {e}")
    yield receiver
    receiver.close()


def iso_to_ns(text):
    return (datetime.fromisoformat(text) - EPOCH) // timedelta(microseconds=1) * 1000


def test_spans_sent_to_a_real_receiver_come_back(phoenix, tmp_path):
    out = analyze(RECEIVER_SAMPLE, tmp_path / "spans.jsonl",
                  "--otlp-endpoint", phoenix.base)
    requests, count, _ = check_file(out)
    assert count >= 1
    want = {}
    for _, _, span in spans_of(requests):
        want[(span.trace_id.hex(), span.span_id.hex())] = span

    # Phoenix answers the POST before it stores the spans (a background task): wait for them.
    deadline = time.monotonic() + RECEIVER_INGEST_TIMEOUT
    got = []
    while time.monotonic() < deadline:
        got = phoenix.spans()
        if len(got) >= len(want) or phoenix.refused_posts():
            break
        time.sleep(0.5)
    time.sleep(1.0)  # nothing more should arrive
    got = phoenix.spans()
    assert not phoenix.refused_posts(), ("the receiver refused a POST "
                                         "(415 = not application/x-protobuf):\n" + "\n".join(phoenix.traces_posts()))
    assert got, ("the receiver stored no span; its /v1/traces log lines "
                 "(415 = not application/x-protobuf):\n" + "\n".join(phoenix.traces_posts()))

    by_key = {}
    for s in got:
        key = (s["context"]["trace_id"], s["context"]["span_id"])
        assert key not in by_key, f"stored twice: {key}"
        by_key[key] = s
    assert set(by_key) == set(want), (
        f"missing: {sorted(set(want) - set(by_key))}; unexpected: {sorted(set(by_key) - set(want))}")

    for key, span in want.items():
        stored = by_key[key]
        assert stored["name"] == span.name, key
        parent = span.parent_span_id.hex() or None
        assert stored["parent_id"] == parent, (key, stored["parent_id"], parent)
        assert stored["status_code"] == STATUS_NAMES[span.status.code], key
        assert (stored["status_message"] or "") == span.status.message, key
        # Phoenix keeps microseconds (through a float: allow 2 us).
        assert abs(iso_to_ns(stored["start_time"]) - span.start_time_unix_nano) <= 2000, key
        assert abs(iso_to_ns(stored["end_time"]) - span.end_time_unix_nano) <= 2000, key
        attrs = attributes(span)
        for name in COMPARED_ATTRIBUTES:
            assert stored["attributes"].get(name) == attrs.get(name), (key, name)
        # Every attribute comes back with its value and type (Phoenix may add its own, e.g.
        # OpenInference's tool.name from gen_ai.tool.name).
        changed = {k: (v, stored["attributes"].get(k)) for k, v in attrs.items()
                   if stored["attributes"].get(k) != v or type(stored["attributes"].get(k)) is not type(v)}
        assert not changed, (key, changed)
        assert [e["name"] for e in stored["events"]] == [e.name for e in span.events], key
    # The sample's point: a 503 answered to tools/call, then the application's retry.
    statuses = [attributes(s).get("http.response.status_code") for s in want.values()]
    assert 503 in statuses, statuses


# ---------------------------------------------------------------------------------------------
# 3. The endpoint's protobuf body is the file's JSON line, message for message


def test_protobuf_body_is_the_json_line(tmp_path):
    """A loopback receiver keeps what `--otlp-endpoint` POSTs (the default http/protobuf);
    parsed with the official definitions it equals the `--otlp` file's line parsed from JSON."""
    require_bin()
    import http.server
    import threading

    got = []

    class Keep(http.server.BaseHTTPRequestHandler):
        def do_POST(self):
            body = self.rfile.read(int(self.headers["Content-Length"]))
            got.append((self.path, self.headers["Content-Type"], body))
            self.send_response(200)
            self.send_header("Content-Type", "application/x-protobuf")
            self.send_header("Content-Length", "0")
            self.end_headers()

        def log_message(self, *args):
            pass

    server = http.server.HTTPServer(("127.0.0.1", 0), Keep)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        for sample in ("otel-py-client.pcap", "ts-streamable-sse.pcap"):
            got.clear()
            out = analyze(sample, tmp_path / f"{sample}.jsonl",
                          "--otlp-endpoint", f"http://127.0.0.1:{server.server_port}")
            lines = parse_file(out)
            assert len(got) == len(lines) >= 1, sample
            for (path, content_type, body), from_json in zip(got, lines):
                assert path == "/v1/traces"
                assert content_type == "application/x-protobuf"
                from_proto = ExportTraceServiceRequest.FromString(body)
                assert from_proto == from_json, sample
    finally:
        server.shutdown()
