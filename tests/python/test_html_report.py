"""The HTML report (`analyze --html`) in real headless Chromium, driven over the DevTools
protocol (tests/python/cdp.py): it draws without a console error, fetches nothing, lists one
row per exchange of the JSON lines output and one diagram per session, its filters narrow
the table, rows take keyboard focus. Screenshots go to target/html-screenshots/.

Without a browser the tests skip, unless MCP_TRACE_REQUIRE_BROWSER=1 (set by .ci/run), where
a browser that cannot start is a failure."""

import json
import os
import subprocess
from pathlib import Path

import pytest

import cdp

ROOT = Path(__file__).resolve().parents[2]
BIN = Path(os.environ.get("MCP_TRACE", ROOT / "target" / "debug" / "mcp-trace"))
SHOTS = ROOT / "target" / "html-screenshots"
SAMPLES = [
    "fault-503-app-retry.pcap",
    "sse-resume.pcap",
    "concurrent.pcap",
    "har-chromium-ts.har",
    "raw-shapes.pcap",
    "auth-401-sdk-retry.pcap",
]
SCREENSHOTS = {"fault-503-app-retry.pcap", "concurrent.pcap"}
REQUIRE = os.environ.get("MCP_TRACE_REQUIRE_BROWSER") == "1"


def unavailable(reason):
    if REQUIRE:
        pytest.fail(f"{reason} (MCP_TRACE_REQUIRE_BROWSER=1)")
    pytest.skip(reason)


@pytest.fixture(scope="module")
def browser():
    if not BIN.exists():
        pytest.skip(f"{BIN} not built (run cargo build first)")
    exe = cdp.find_chromium()
    if exe is None:
        unavailable("no chromium on PATH (apt-get install chromium)")
    try:
        b = cdp.Browser(exe)
    except (OSError, cdp.CdpError) as e:
        unavailable(f"chromium does not start: {e}")
    yield b
    b.close()


def analyze(sample, tmp):
    out = tmp / (sample + ".jsonl")
    sessions = tmp / (sample + ".sessions.jsonl")
    html = tmp / (sample + ".html")
    subprocess.run([str(BIN), "analyze", str(ROOT / "samples" / sample), "-o", str(out),
                    "--sessions", str(sessions), "--html", str(html)], check=True)
    rows = [json.loads(line) for line in out.read_text().splitlines()]
    keys = [json.loads(line)["session_key"] for line in sessions.read_text().splitlines()]
    return rows, keys, html


def count(b, selector):
    return b.evaluate(f"document.querySelectorAll({json.dumps(selector)}).length")


def select(b, name, value):
    b.evaluate(f"""(() => {{ const s = document.querySelector('select[data-filter="{name}"]');
        s.value = {json.dumps(value)}; s.dispatchEvent(new Event('change')); }})()""")


def settle(b):
    b.evaluate("new Promise(r => setTimeout(r, 50))")


def click(b, selector):
    """A real mouse click at the centre of the first element matching `selector`."""
    box = b.evaluate(f"""(() => {{ const e = document.querySelector({json.dumps(selector)});
        e.scrollIntoView({{block: 'center'}}); const r = e.getBoundingClientRect();
        return [r.left + r.width / 2, r.top + r.height / 2]; }})()""")
    for kind in ("mousePressed", "mouseReleased"):
        b.call("Input.dispatchMouseEvent", type=kind, x=box[0], y=box[1], button="left", clickCount=1)


@pytest.mark.parametrize("sample", SAMPLES)
def test_report_in_chromium(browser, sample, tmp_path):
    rows, keys, html = analyze(sample, tmp_path)
    assert rows, sample
    b = browser
    b.events.clear()
    url = html.as_uri()
    b.open(url)
    assert b.evaluate("document.body.dataset.ready") == "1"
    assert b.errors() == [], b.errors()
    # Nothing fetched but the page itself.
    assert b.requests() == [url], b.requests()

    # One row per exchange, in exchange_id order; one diagram per session.
    ids = b.evaluate("[...document.querySelectorAll('[data-exchange-id]')].map(e => e.dataset.exchangeId)")
    assert ids == [str(r["exchange_id"]) for r in rows]
    shown_keys = b.evaluate("[...document.querySelectorAll('[data-session-key]')].map(e => e.dataset.sessionKey)")
    assert sorted(shown_keys) == sorted(keys)
    assert count(b, "details.session[open]") == 0  # collapsed by default

    # Every column of the table is a header.
    headers = b.evaluate("[...document.querySelectorAll('#exchanges thead th')].map(e => e.textContent.replace(/ [\\u25b2\\u25bc]$/, ''))")
    assert headers == list(rows[0].keys())

    # The outcome filter narrows the table to that outcome's rows.
    by_outcome = {}
    for r in rows:
        by_outcome.setdefault(r["outcome"], []).append(str(r["exchange_id"]))
    outcome = min(by_outcome, key=lambda o: len(by_outcome[o]))
    select(b, "outcome", outcome)
    assert b.evaluate("[...document.querySelectorAll('[data-exchange-id]')].map(e => e.dataset.exchangeId)") == by_outcome[outcome]
    # The session filter as well.
    select(b, "outcome", "")
    key = keys[0]
    select(b, "session", key)
    assert count(b, "[data-exchange-id]") == sum(r["session_key"] == key for r in rows)
    click(b, "#f-clear")
    assert count(b, "[data-exchange-id]") == len(rows)

    # Sorting by a column: descending exchange ids after two clicks on its header.
    click(b, 'button[data-sort="exchange_id"]')
    first = b.evaluate("document.querySelector('[data-exchange-id]').dataset.exchangeId")
    assert first == str(max(r["exchange_id"] for r in rows))
    click(b, 'button[data-sort="exchange_id"]')

    # Keyboard: a row takes focus, Enter opens its details, Escape closes and returns focus.
    b.evaluate("document.querySelector('[data-exchange-id]').focus()")
    assert b.evaluate("document.activeElement.dataset.exchangeId") == str(rows[0]["exchange_id"])
    b.key("Enter", "Enter", 13)
    assert b.evaluate("document.getElementById('details').hidden") is False
    heading = b.evaluate("document.querySelector('#details h2').textContent")
    assert heading.startswith(f"Exchange #{rows[0]['exchange_id']}"), heading
    b.key("Escape", "Escape", 27)
    assert b.evaluate("document.getElementById('details').hidden") is True
    assert b.evaluate("document.activeElement.dataset.exchangeId") == str(rows[0]["exchange_id"])

    # A session opened draws its diagram: one request arrow per exchange of the session.
    b.evaluate(f"""document.querySelector('details[data-session-key="{key}"]').open = true""")
    settle(b)  # the toggle event comes in a later task
    arrows = count(b, f'details[data-session-key="{key}"] svg g.arrow')
    assert arrows == min(400, sum(r["session_key"] == key for r in rows))

    # A click on the timeline narrows the table to that time slice.
    click(b, "#tl-chart svg rect[data-bin]")
    narrowed = count(b, "[data-exchange-id]")
    assert 0 < narrowed <= len(rows)
    span = b.evaluate("document.getElementById('tl-range').textContent")
    assert span.startswith("Narrowed to"), span
    click(b, "#tl-clear")
    assert count(b, "[data-exchange-id]") == len(rows)

    # Drops and capture loss: a classic pcap says nothing of its drops (unknown, never 0).
    run = b.evaluate("document.getElementById('run').textContent")
    assert "packets dropped by the capture" in run and "capture loss (estimate)" in run, run
    if sample.endswith(".pcap"):
        assert "kernel unknown, interface unknown" in run, run

    assert b.errors() == [], b.errors()
    assert b.requests() == [url], b.requests()
    if sample in SCREENSHOTS:
        SHOTS.mkdir(parents=True, exist_ok=True)
        b.evaluate("document.querySelectorAll('details.session').forEach(d => d.open = true)")
        b.screenshot(str(SHOTS / (sample.rsplit(".", 1)[0] + ".png")))
        assert (SHOTS / (sample.rsplit(".", 1)[0] + ".png")).stat().st_size > 10_000


def test_captured_markup_stays_text(browser, tmp_path):
    """A request whose path carries markup shows it as text: no element, no script run."""
    har = {"log": {"version": "1.2", "creator": {"name": "t", "version": "1"}, "entries": [{
        "startedDateTime": "2026-01-01T00:00:00.000Z", "time": 5,
        "request": {"method": "POST", "url": "http://127.0.0.1:1/mcp?q=</script><img src=x onerror=alert(1)>",
                    "httpVersion": "HTTP/1.1", "headers": [{"name": "Content-Type", "value": "application/json"}],
                    "queryString": [], "cookies": [], "headersSize": -1, "bodySize": 58,
                    "postData": {"mimeType": "application/json",
                                 "text": '{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"<b>x</b>"}}'}},
        "response": {"status": 200, "statusText": "OK", "httpVersion": "HTTP/1.1",
                     "headers": [{"name": "Content-Type", "value": "application/json"}], "cookies": [],
                     "content": {"size": 40, "mimeType": "application/json",
                                 "text": '{"jsonrpc":"2.0","id":1,"result":{"content":[]}}'},
                     "redirectURL": "", "headersSize": -1, "bodySize": 40},
        "cache": {}, "timings": {"send": 0, "wait": 5, "receive": 0}}]}}
    src = tmp_path / "markup.har"
    src.write_text(json.dumps(har))
    html = tmp_path / "markup.html"
    subprocess.run([str(BIN), "analyze", str(src), "--html", str(html)], check=True,
                   stdout=subprocess.DEVNULL)
    b = browser
    b.events.clear()
    b.open(html.as_uri())
    assert b.errors() == []
    assert count(b, "#app img") == 0 and count(b, "#app b") == 0
    assert "<b>x</b>" in b.evaluate("document.getElementById('exchanges').textContent")
    assert b.requests() == [html.as_uri()]


def test_rows_past_the_limit_are_counted(browser, tmp_path):
    """--html-max-rows: the table lists that many and says how many are left out."""
    rows, _, _ = analyze("raw-shapes.pcap", tmp_path)
    html = tmp_path / "limited.html"
    subprocess.run([str(BIN), "analyze", str(ROOT / "samples" / "raw-shapes.pcap"), "--html", str(html),
                    "--html-max-rows", "5"], check=True, stdout=subprocess.DEVNULL)
    b = browser
    b.events.clear()
    b.open(html.as_uri())
    assert b.errors() == []
    ids = b.evaluate("[...document.querySelectorAll('[data-exchange-id]')].map(e => e.dataset.exchangeId)")
    assert ids == [str(r["exchange_id"]) for r in rows[:5]]
    banner = b.evaluate("document.querySelector('#table .banner').textContent")
    assert f"{len(rows) - 5} more exchanges" in banner and "Parquet" in banner, banner


def test_new_columns_appear(browser, tmp_path):
    """The page draws whatever columns the data's schema lists: a `retry_findings` column
    (report-schema.md section 4b) shows in the table and in the retry chains."""
    rows, _, html = analyze("fault-503-app-retry.pcap", tmp_path)
    page = html.read_text()
    open_tag = '<script type="application/json" id="mcp-trace-data">'
    start = page.index(open_tag) + len(open_tag)
    end = page.index("</script>", start)
    data = json.loads(page[start:end])
    data["columns"].append({"name": "retry_findings", "type": "str", "nullable": True})
    data["strings"].append("unsafe_retry;retry_after_ignored")
    finding = len(data["strings"]) - 1
    retry_col = [c["name"] for c in data["columns"]].index("retry_of")
    for r in data["rows"]:
        r.append(finding if r[retry_col] is not None else None)
    text = json.dumps(data).replace("<", "\\u003c").replace(">", "\\u003e").replace("&", "\\u0026")
    edited = tmp_path / "edited.html"
    edited.write_text(page[:start] + text + page[end:])
    b = browser
    b.events.clear()
    b.open(edited.as_uri())
    assert b.errors() == []
    headers = b.evaluate("[...document.querySelectorAll('#exchanges thead th')].map(e => e.textContent)")
    assert headers[-1] == "retry_findings"
    retries = b.evaluate("document.getElementById('retries').textContent")
    assert "findings" in retries and "unsafe_retry" in retries and "retry_after_ignored" in retries
    assert count(b, "[data-exchange-id]") == len(rows)


def test_print_layout(browser, tmp_path):
    """Printed, the controls are hidden and the table is not cut to a scroll box."""
    _, _, html = analyze("fault-503-app-retry.pcap", tmp_path)
    b = browser
    b.events.clear()
    b.open(html.as_uri())
    b.call("Emulation.setEmulatedMedia", media="print")
    try:
        assert b.evaluate("getComputedStyle(document.querySelector('.controls')).display") == "none"
        assert b.evaluate("getComputedStyle(document.querySelector('.scroll')).overflow") == "visible"
        pdf = b.call("Page.printToPDF")["data"]
        assert len(pdf) > 10_000
    finally:
        b.call("Emulation.setEmulatedMedia", media="")
    assert b.errors() == []


def test_empty_capture(browser, tmp_path):
    """A capture without MCP traffic still gives a page that draws and says so."""
    src = tmp_path / "empty.har"
    src.write_text(json.dumps({"log": {"version": "1.2", "creator": {"name": "t", "version": "1"}, "entries": []}}))
    html = tmp_path / "empty.html"
    subprocess.run([str(BIN), "analyze", str(src), "--html", str(html)], check=True, stdout=subprocess.DEVNULL)
    b = browser
    b.events.clear()
    b.open(html.as_uri())
    assert b.errors() == []
    assert count(b, "[data-exchange-id]") == 0 and count(b, "[data-session-key]") == 0
    assert b.evaluate("document.getElementById('row-count').textContent") == "0 of 0 exchanges"


def test_gateway_copies_draw_one_lifeline_per_hop(browser, tmp_path):
    """A gateway recording (report-schema.md 4c): the client's session diagram draws client,
    gateway and server lifelines, each call's copies between gateway and server."""
    rows, keys, html = analyze("gw-nginx-next-upstream.pcap", tmp_path)
    b = browser
    b.open(html.as_uri())
    assert b.evaluate("document.body.dataset.ready") == "1"
    calls = [r for r in rows if r["hop"] == 1]
    copies = [r for r in rows if r["hop"] == 2]
    assert len(calls) == 12 and len(copies) == 15, (len(calls), len(copies))
    key = calls[0]["session_key"]
    assert all(r["session_key"] == key for r in calls)
    b.evaluate(f"""document.querySelector('details[data-session-key="{key}"]').open = true""")
    settle(b)
    names = b.evaluate(f"""[...document.querySelectorAll('details[data-session-key="{key}"] svg .lifeline-name')].map(e => e.textContent)""")
    assert names == ["client", "gateway", "server"], names
    arrows = count(b, f'details[data-session-key="{key}"] svg g.arrow')
    assert arrows == len(calls) + len(copies)
    labels = b.evaluate(f"""[...document.querySelectorAll('details[data-session-key="{key}"] svg g.arrow text')].map(e => e.textContent)""")
    copy = copies[0]
    assert any(f"#{copy['exchange_id']} " in t and f"(copy of #{copy['forwarded_from']})" in t for t in labels), labels
    assert b.errors() == [], b.errors()
    SHOTS.mkdir(parents=True, exist_ok=True)
    b.screenshot(str(SHOTS / "gw-nginx-next-upstream.png"))
