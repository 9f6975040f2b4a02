#!/usr/bin/env python3
"""Size and time-to-ready of the HTML report (`analyze --html`) of a capture, in headless
Chromium (driven over the DevTools pipe, tests/python/cdp.py). See bench/README.md.

    bench/html.py [-r ROUNDS] [--max-rows N] CAPTURE

Prints the report's size, the exchanges it lists, and per round: the page's own time from
navigation start to `document.body.dataset.ready = "1"` (performance.now() at that point),
the wall time seen by the driver from Page.navigate to the ready flag, and the time one
outcome filter takes to redraw the table. Binary: $MCP_TRACE, default the `quick` profile
build in ${CARGO_TARGET_DIR:-target}.
"""

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests" / "python"))
import cdp  # noqa: E402


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("capture")
    ap.add_argument("-r", "--rounds", type=int, default=3)
    ap.add_argument("--max-rows", type=int, default=None, help="--html-max-rows")
    args = ap.parse_args()
    target = Path(os.environ.get("CARGO_TARGET_DIR", ROOT / "target"))
    binary = os.environ.get("MCP_TRACE", str(target / "quick" / "mcp-trace"))
    if not Path(binary).exists():
        sys.exit(f"missing {binary} (cargo build --profile quick --bin mcp-trace)")
    exe = cdp.find_chromium()
    if exe is None:
        sys.exit("no chromium on PATH")

    with tempfile.TemporaryDirectory(prefix="mcp-html-bench-") as tmp:
        html = Path(tmp) / "report.html"
        cmd = [binary, "analyze", args.capture, "--html", str(html), "--no-progress"]
        if args.max_rows is not None:
            cmd += ["--html-max-rows", str(args.max_rows)]
        t = time.perf_counter()
        subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL)
        write_s = time.perf_counter() - t
        size = html.stat().st_size
        print(f"report: {size / 1e6:.2f} MB ({size} bytes), written in {write_s:.2f} s (whole analyze run)")

        page_ms, wall_ms, filter_ms = [], [], []
        with cdp.Browser(exe) as b:
            for i in range(args.rounds):
                b.events.clear()
                b.call("Page.navigate", url="about:blank")
                time.sleep(0.2)
                t = time.perf_counter()
                b.open(html.as_uri(), ready_timeout=60)
                wall_ms.append((time.perf_counter() - t) * 1000)
                page_ms.append(float(b.evaluate("document.body.dataset.readyMs")))
                facts = b.evaluate("""(() => { const d = JSON.parse(document.getElementById('mcp-trace-data').textContent);
                    return {kept: d.rows_kept, omitted: d.rows_omitted, sessions: d.sessions.length,
                            rows_drawn: document.querySelectorAll('[data-exchange-id]').length}; })()""")
                outcome = b.evaluate("[...document.querySelectorAll('select[data-filter=outcome] option')].map(o => o.value).filter(v => v)[0] || ''")
                ms = b.evaluate(f"""(() => {{ const s = document.querySelector('select[data-filter=outcome]');
                    const t = performance.now(); s.value = {json.dumps(outcome)}; s.dispatchEvent(new Event('change'));
                    const n = document.getElementById('row-count').textContent;
                    return [performance.now() - t, n]; }})()""")
                filter_ms.append(ms[0])
                errors = b.errors()
                print(f"  round {i + 1}: ready {page_ms[-1]:.0f} ms after navigation start "
                      f"(driver saw {wall_ms[-1]:.0f} ms); filter {outcome} -> {ms[1]} in {ms[0]:.0f} ms"
                      + (f"; console errors: {errors}" if errors else ""))
        print(f"exchanges listed: {facts['kept']} ({facts['omitted']} past --html-max-rows), "
              f"sessions: {facts['sessions']}, table rows drawn at once: {facts['rows_drawn']}")
        print(f"time to ready: best {min(page_ms):.0f} ms, median {statistics.median(page_ms):.0f} ms; "
              f"outcome filter: median {statistics.median(filter_ms):.0f} ms")
        ok = size < 20e6 and min(page_ms) < 2000
        print("targets (< 20 MB, ready < 2 s):", "met" if ok else "NOT met")
        return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
