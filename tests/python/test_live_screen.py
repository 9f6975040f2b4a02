"""The live screen in a real terminal: tmux runs `mcp-trace live -i lo` in a network namespace
of its own (`unshare -n`), where tcpreplay replays two samples onto the loopback a few times
(fault-503-app-retry: a 503 and the application's retry; hygiene-unsafe-retry: send_email,
get_weather and set_status each answered 503, then resent). `send-keys` presses `f`, `/`
with a tool name and Enter, Enter on a row, Esc and `q`; `capture-pane` reads the screen:

1. the header names the interface with its packets and drops, and rows come as calls complete;
2. `f` leaves only failures; `/get_weather` Enter leaves only get_weather's rows;
3. Enter opens the details of the selected row (its fields by name), Esc closes them;
4. `q` ends the capture: the terminal comes back, the terminal summary of the same rows is
   printed, and the exit status is 0.

Needs tmux, tcpreplay, unshare and a binary built with `--features live` (MCP_TRACE); without
them the test skips, unless MCP_TRACE_REQUIRE_LIVE=1 (CI), where that is a failure."""

import os
import re
import shutil
import subprocess
import time
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
BIN = Path(os.environ.get("MCP_TRACE", ROOT / "target" / "debug" / "mcp-trace"))
REQUIRE = os.environ.get("MCP_TRACE_REQUIRE_LIVE") == "1"
SESSION = "mcp-trace-live-screen-test"


def missing_requirement():
    for tool in ("tmux", "tcpreplay", "unshare"):
        if shutil.which(tool) is None:
            return f"{tool} missing"
    if not BIN.exists():
        return f"{BIN} not built"
    probe = subprocess.run([str(BIN), "live", "-i", "lo", "--count", "0"], capture_output=True, text=True)
    if "without live capture" in probe.stderr:
        return f"{BIN} was built without the live feature"
    if subprocess.run(["unshare", "-n", "true"]).returncode != 0:
        return "cannot make a network namespace (unshare -n)"
    return None


def pane(history=False):
    args = ["tmux", "capture-pane", "-p", "-t", SESSION]
    if history:
        args += ["-S", "-"]
    return subprocess.run(args, capture_output=True, text=True, check=True).stdout


def wait_for(predicate, what, timeout=30.0):
    end = time.time() + timeout
    text = ""
    while time.time() < end:
        text = pane()
        if predicate(text):
            return text
        time.sleep(0.2)
    raise AssertionError(f"{what} never showed; the screen:\n{text}")


def table_rows(text):
    """The table's rows: lines that start with an exchange id."""
    return [line for line in text.splitlines() if re.match(r"\s*#\d+ \d\d:\d\d:\d\d\.\d{3} ", line)]


def keys(*k):
    subprocess.run(["tmux", "send-keys", "-t", SESSION, *k], check=True)
    time.sleep(0.6)  # the screen redraws at most 10 times a second


@pytest.fixture
def screen(tmp_path):
    why = missing_requirement()
    if why:
        if REQUIRE:
            pytest.fail(f"live screen test required but: {why}")
        pytest.skip(why)
    samples = ROOT / "samples"
    script = tmp_path / "pane.sh"
    script.write_text(f"""ip link set lo up
( sleep 1; for i in 1 2 3 4 5 6 7 8; do
    tcpreplay -q -i lo {samples / 'fault-503-app-retry.pcap'} >/dev/null 2>&1
    tcpreplay -q -t -i lo {samples / 'hygiene-unsafe-retry.pcap'} >/dev/null 2>&1
    sleep 1; done ) &
{BIN} live -i lo --duration 120s --color never
echo "EXIT=$?"
sleep 60
""")
    subprocess.run(["tmux", "kill-session", "-t", SESSION], capture_output=True)
    subprocess.run(["tmux", "new-session", "-d", "-s", SESSION, "-x", "130", "-y", "40",
                    f"unshare -n bash {script}"], check=True)
    yield
    subprocess.run(["tmux", "kill-session", "-t", SESSION], capture_output=True)


def test_the_live_screen_in_tmux(screen):
    text = wait_for(lambda t: len(table_rows(t)) >= 12, "a dozen rows")
    header = text.splitlines()[0]
    assert header.startswith("lo "), header
    assert re.search(r"\d+ pkts", header) and "drops kernel 0 iface 0" in header, header
    assert any("TOOL_SUCCESS" in r for r in table_rows(text))

    keys("f")
    rows = table_rows(pane())
    assert rows and all("HTTP_ERROR" in r for r in rows), rows
    assert "showing failures only" in pane()

    keys("/", "get_weather", "Enter")
    text = pane()
    rows = table_rows(text)
    assert rows and all("get_weather" in r and "HTTP_ERROR" in r for r in rows), rows
    assert "filter: get_weather" in text

    keys("Enter")
    text = pane()
    assert re.search(r"tool_name\s+get_weather", text), text
    assert re.search(r"http_status\s+503", text), text
    assert "Esc closes" in text

    keys("Escape")
    assert "Esc closes" not in pane()

    keys("q")
    text = wait_for(lambda t: "EXIT=" in t, "the end of the run", timeout=30)
    assert "EXIT=0" in text, text
    whole = pane(history=True)
    assert "mcp-trace summary" in whole, whole
    assert re.search(r"HTTP_ERROR\s+transport\s+\d+", whole), whole
