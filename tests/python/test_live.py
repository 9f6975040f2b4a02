"""`mcp-trace live -i lo` end to end, in a network namespace of its own (`unshare -n`, as root).

tests/python/live_scenario.py runs the TypeScript SDK server and two runs of the TypeScript SDK
client from samples/generator (the steps of the ts-streamable-sse recording, with a 2 s pause) on the
namespace's loopback while `mcp-trace live -i lo -w raw.pcapng --jsonl -` captures them. Then:

1. the JSON lines equal `mcp-trace analyze raw.pcapng` row for row (every column but
   `capture`, which names the interface live and the file offline), and the exchanges table
   written with `-o` holds the same rows;
2. the first row reached the reader while the client was still running, and every call's row
   within 1.5 s of its response although the session's GET stream stays open (rows come as
   calls complete, not at the end);
3. each client run's rows agree with samples/ts-streamable-sse.truth.json, the ground truth the
   generator wrote when it recorded the same steps: per session, the same (rpc_method,
   tool_name, http_status, outcome) in the same order;
4. the run summary names the input `lo` (format `live`) with known kernel and interface drops
   (0 on an idle loopback), and the raw capture's Interface Statistics Block gives the same.

Needs a binary built with `--features live` (MCP_TRACE, default target/debug/mcp-trace), root
(or unshare's user namespace), node and samples/generator/node_modules (`npm ci` there). Without
them the test skips, unless MCP_TRACE_REQUIRE_LIVE=1 (as CI sets), where that is a failure."""

import json
import re
import os
import shutil
import subprocess
import sys
from collections import defaultdict
from datetime import datetime
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
BIN = Path(os.environ.get("MCP_TRACE", ROOT / "target" / "debug" / "mcp-trace"))
GEN = ROOT / "samples" / "generator"
REQUIRE = os.environ.get("MCP_TRACE_REQUIRE_LIVE") == "1"
TRUTH = ROOT / "samples" / "ts-streamable-sse.truth.json"


def missing_requirement():
    if not BIN.exists():
        return f"{BIN} not built"
    probe = subprocess.run([str(BIN), "live", "-i", "lo", "--count", "0"],
                           capture_output=True, text=True)
    if "without live capture" in probe.stderr:
        return f"{BIN} was built without the live feature"
    if shutil.which("unshare") is None or shutil.which("node") is None:
        return "unshare or node missing"
    if not (GEN / "node_modules" / "@modelcontextprotocol").exists():
        return "samples/generator/node_modules missing (npm ci there)"
    if subprocess.run(["unshare", "-n", "true"]).returncode != 0:
        return "cannot make a network namespace (unshare -n)"
    return None


def run_scenario(tmp_path_factory, *flags):
    why = missing_requirement()
    if why:
        if REQUIRE:
            pytest.fail(f"live test required but: {why}")
        pytest.skip(why)
    work = tmp_path_factory.mktemp("live")
    subprocess.run(["unshare", "-n", sys.executable, str(ROOT / "tests" / "python" / "live_scenario.py"),
                    str(BIN), str(work), *flags], check=True, timeout=300)
    result = json.loads((work / "scenario.json").read_text())
    result["work"] = work
    return result


@pytest.fixture(scope="module")
def scenario(tmp_path_factory):
    return run_scenario(tmp_path_factory)


@pytest.fixture(scope="module")
def tls_scenario(tmp_path_factory):
    return run_scenario(tmp_path_factory, "--tls")


def analyze_rows(path):
    out = path.parent / "offline.jsonl"
    # Live holds an open row (the GET stream) back 1 s, not 60 s: the same for the file.
    subprocess.run([str(BIN), "analyze", str(path), "--max-row-hold", "1s", "-o", str(out)],
                   check=True, capture_output=True)
    # Rows set aside while open are written when they end, in either run: compare in id order.
    return sorted((json.loads(line) for line in out.read_text().splitlines()), key=lambda r: r["exchange_id"])


def without_capture(row):
    return {k: v for k, v in row.items() if k != "capture"}


def test_live_rows_equal_the_offline_analysis_of_the_raw_capture(scenario):
    assert scenario["status"] == 0, scenario["stderr"]
    live = sorted(scenario["rows"], key=lambda r: r["exchange_id"])
    offline = analyze_rows(scenario["work"] / "raw.pcapng")
    assert len(live) == len(offline) >= 20
    for a, b in zip(live, offline):
        assert a["capture"] == "lo" and b["capture"] == "raw.pcapng"
        assert without_capture(a) == without_capture(b)
    table = [json.loads(line) for line in (scenario["work"] / "live-table.jsonl").read_text().splitlines()]
    assert [without_capture(r) for r in sorted(table, key=lambda r: r["exchange_id"])] == \
        [without_capture(r) for r in offline]


def test_rows_come_while_the_traffic_runs(scenario):
    first_run = scenario["runs"][0]
    assert scenario["arrivals"], "no row came"
    # The first client run pauses 2 s after its echo: the rows before it come during the pause.
    assert scenario["arrivals"][0] < first_run["end"] - 1.0, (scenario["arrivals"][0], first_run)
    # Each call's row within a second or so of its response (the reorder slack is 1 s of
    # capture time, the clock ticks every 100 ms), while the session's GET stream stays open.
    for arrival, row in zip(scenario["arrivals"], scenario["rows"]):
        if row["kind"] == "stream":
            continue
        done = datetime.fromisoformat(row["ts_response"].replace("Z", "+00:00")).timestamp()
        assert arrival - done < 1.5, (row["exchange_id"], row["rpc_method"], arrival - done)


def test_each_client_run_agrees_with_the_recorded_ground_truth(scenario):
    truth = json.loads(TRUTH.read_text())
    by_label = defaultdict(list)
    for e in truth["entries"]:
        by_label[e["session"]].append((e["rpc_method"], e["tool_name"], e["http_status"], e["outcome"]))
    expected = sorted(by_label.values())
    rows = sorted(scenario["rows"], key=lambda r: r["exchange_id"])
    sessions = defaultdict(list)
    order = []
    for r in rows:
        if r["session_key"] not in sessions:
            order.append(r["session_key"])
        sessions[r["session_key"]].append((r["rpc_method"], r["tool_name"], r["http_status"], r["outcome"]))
    got = [sessions[k] for k in order]
    # Two client runs of the same steps: the recording's sessions, twice.
    assert sorted(got) == sorted(expected * 2), (got, expected)


def test_https_with_a_key_log_that_grows_during_the_capture(tls_scenario):
    """The client writes its key log as it connects; live follows it, its connections wait for
    their secrets, and every call is decrypted: the same rows as plaintext, and the raw capture
    (its secrets as Decryption Secrets Blocks) gives the same rows offline without --keylog."""
    s = tls_scenario
    assert s["status"] == 0, s["stderr"]
    rows = sorted(s["rows"], key=lambda r: r["exchange_id"])
    assert len(rows) >= 20 and all(r["tls_version"] == "TLS 1.3" for r in rows), rows[:2]
    summary = json.loads((s["work"] / "live-summary.json").read_text())
    # The connections that carried TLS were all decrypted (the others: the scenario's port probes).
    tls = {k: n for k, n in summary["tls_connections"].items() if n and k != "plaintext"}
    assert list(tls) == ["decrypted"] and tls["decrypted"] >= 6, summary["tls_connections"]
    offline = analyze_rows(s["work"] / "raw.pcapng")
    assert [without_capture(r) for r in rows] == [without_capture(r) for r in offline]
    truth = json.loads(TRUTH.read_text())
    calls = [(e["rpc_method"] or "", e["outcome"]) for e in truth["entries"]] * 2
    assert sorted((r["rpc_method"] or "", r["outcome"]) for r in rows) == sorted(calls)


def test_the_summary_and_the_raw_capture_report_the_drops(scenario):
    summary = json.loads((scenario["work"] / "live-summary.json").read_text())
    assert [(i["name"], i["format"]) for i in summary["inputs"]] == [("lo", "live")]
    assert summary["capture_drops"] == {"kernel": 0, "interface": 0}
    offline = scenario["work"] / "offline-summary.json"
    subprocess.run([str(BIN), "analyze", str(scenario["work"] / "raw.pcapng"), "--summary", str(offline)],
                   check=True, capture_output=True)
    raw = json.loads(offline.read_text())
    assert raw["capture_drops"] == {"kernel": 0, "interface": 0}
    assert raw["packets_total"] == summary["packets_total"] > 0


def test_a_tiny_kernel_buffer_drops_and_the_drops_are_reported(tmp_path):
    """A deliberately tiny kernel buffer (--buffer-size 64KiB) under a burst (tcpreplay at top
    speed, 300 loops of a sample): the kernel drops packets, and the run says so, in the run
    summary, in the terminal summary's "Not analyzed" part and in the raw capture's statistics."""
    why = missing_requirement() or (None if shutil.which("tcpreplay") else "tcpreplay missing")
    if why:
        if REQUIRE:
            pytest.fail(f"live test required but: {why}")
        pytest.skip(why)
    sample = ROOT / "samples" / "concurrent.pcap"
    script = f"""ip link set lo up
{BIN} live -i lo --buffer-size 64KiB --duration 6s -w {tmp_path / 'raw.pcapng'} \\
    --summary {tmp_path / 'summary.json'} --jsonl {tmp_path / 'rows.jsonl'} \\
    > {tmp_path / 'out.txt'} 2> {tmp_path / 'err.txt'} &
sleep 1
tcpreplay -q -t -l 300 -i lo {sample} > /dev/null 2>&1
wait
"""
    subprocess.run(["unshare", "-n", "bash", "-c", script], check=True, timeout=120)
    summary = json.loads((tmp_path / "summary.json").read_text())
    kernel = summary["capture_drops"]["kernel"]
    assert kernel > 0, summary["capture_drops"]
    terminal = (tmp_path / "out.txt").read_text()
    assert re.search(rf"dropped by the kernel \(capture statistics\)\s+{kernel}\s+packets", terminal), terminal
    offline = tmp_path / "offline.json"
    subprocess.run([str(BIN), "analyze", str(tmp_path / "raw.pcapng"), "--summary", str(offline)],
                   check=True, capture_output=True)
    assert json.loads(offline.read_text())["capture_drops"]["kernel"] == kernel
