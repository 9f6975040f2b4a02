"""A minimal Chrome DevTools Protocol client over `--remote-debugging-pipe`.

Chromium reads NUL-terminated JSON commands on fd 3 and writes replies and events on fd 4,
so no WebSocket library or driver download is needed: only the browser itself. Used by the
HTML report's browser test and by bench/html.py.
"""

import base64
import json
import os
import select
import shutil
import subprocess
import tempfile
import time

CHROMIUM_FLAGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--disable-extensions",
    "--disable-default-apps",
    # Nothing can leave the machine: every host name fails to resolve, every proxy is closed.
    "--host-resolver-rules=MAP * ~NOTFOUND",
    "--proxy-server=127.0.0.1:9",
    "--remote-debugging-pipe",
]


def find_chromium():
    """The browser to drive: $CHROMIUM, else chromium or chromium-browser on PATH."""
    env = os.environ.get("CHROMIUM")
    if env:
        return env
    for name in ("chromium", "chromium-browser", "google-chrome"):
        path = shutil.which(name)
        if path:
            return path
    return None


class CdpError(RuntimeError):
    pass


class Browser:
    """One headless Chromium with one page attached; events are kept in `self.events`."""

    def __init__(self, executable, width=1280, height=900):
        self.profile = tempfile.mkdtemp(prefix="mcp-trace-chromium-")
        to_child_r, self._to_child = os.pipe()
        self._from_child, from_child_w = os.pipe()

        def wire_fds():
            # Copies first: a pipe end may itself be fd 3 or 4, and non-inheritable.
            r, w = os.dup(to_child_r), os.dup(from_child_w)
            os.dup2(r, 3)
            os.dup2(w, 4)

        self._stderr = open(os.path.join(self.profile, "stderr.log"), "wb")
        self.proc = subprocess.Popen(
            [executable, *CHROMIUM_FLAGS, f"--user-data-dir={self.profile}",
             f"--window-size={width},{height}", "about:blank"],
            stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=self._stderr,
            preexec_fn=wire_fds, close_fds=False,
        )
        os.close(to_child_r)
        os.close(from_child_w)
        self._buf = b""
        self._next_id = 0
        self.events = []
        self.session = None
        # The first reply waits for the browser to start, which is slow on a loaded machine.
        targets = self.call("Target.getTargets", timeout=120)["targetInfos"]
        page = next((t for t in targets if t["type"] == "page"), None)
        target_id = page["targetId"] if page else self.call(
            "Target.createTarget", url="about:blank")["targetId"]
        self.session = self.call("Target.attachToTarget", targetId=target_id, flatten=True)["sessionId"]
        for domain in ("Page", "Runtime", "Log", "Network"):
            self.call(f"{domain}.enable")
        self.call("Emulation.setDeviceMetricsOverride", width=width, height=height,
                  deviceScaleFactor=1, mobile=False)

    def _read_message(self, deadline):
        while b"\0" not in self._buf:
            left = deadline - time.monotonic()
            if left <= 0:
                raise CdpError("timed out waiting for the browser")
            ready, _, _ = select.select([self._from_child], [], [], left)
            if not ready:
                continue
            chunk = os.read(self._from_child, 1 << 20)
            if not chunk:
                with open(os.path.join(self.profile, "stderr.log"), "rb") as f:
                    err = f.read().decode(errors="replace")
                raise CdpError("browser closed the pipe: " + err[-2000:])
            self._buf += chunk
        msg, self._buf = self._buf.split(b"\0", 1)
        return json.loads(msg)

    def call(self, method, timeout=30, **params):
        self._next_id += 1
        msg = {"id": self._next_id, "method": method, "params": params}
        top_level = method.startswith("Target.") or self.session is None
        if not top_level:
            msg["sessionId"] = self.session
        os.write(self._to_child, json.dumps(msg).encode() + b"\0")
        deadline = time.monotonic() + timeout
        while True:
            reply = self._read_message(deadline)
            if reply.get("id") == self._next_id:
                if "error" in reply:
                    raise CdpError(f"{method}: {reply['error']}")
                return reply.get("result", {})
            if "method" in reply:
                self.events.append(reply)

    def evaluate(self, expression, timeout=30):
        result = self.call("Runtime.evaluate", timeout=timeout, expression=expression,
                           returnByValue=True, awaitPromise=True)
        if "exceptionDetails" in result:
            raise CdpError(f"{expression!r}: {result['exceptionDetails']}")
        return result["result"].get("value")

    def open(self, url, ready_timeout=30):
        """Navigates and waits until `document.body.dataset.ready == "1"`."""
        self.call("Page.navigate", url=url)
        deadline = time.monotonic() + ready_timeout
        while time.monotonic() < deadline:
            try:
                if self.evaluate("document.body && document.body.dataset.ready") == "1":
                    return
            except CdpError:
                pass  # the old document went away mid-evaluation
            time.sleep(0.02)
        raise CdpError(f"{url}: never became ready")

    def key(self, key, code, vk):
        for kind in ("keyDown", "keyUp"):
            self.call("Input.dispatchKeyEvent", type=kind, key=key, code=code,
                      windowsVirtualKeyCode=vk, nativeVirtualKeyCode=vk,
                      **({"text": "\r"} if key == "Enter" and kind == "keyDown" else {}))

    def screenshot(self, path, full_page=True):
        params = {"format": "png"}
        if full_page:
            params["captureBeyondViewport"] = True
        data = self.call("Page.captureScreenshot", **params)["data"]
        with open(path, "wb") as f:
            f.write(base64.b64decode(data))

    def errors(self):
        """Console errors, uncaught exceptions and error log entries seen so far."""
        out = []
        for e in self.events:
            m, p = e["method"], e.get("params", {})
            if m == "Runtime.exceptionThrown":
                out.append(json.dumps(p.get("exceptionDetails", {}))[:500])
            elif m == "Runtime.consoleAPICalled" and p.get("type") in ("error", "assert"):
                out.append(json.dumps(p.get("args", []))[:500])
            elif m == "Log.entryAdded" and p.get("entry", {}).get("level") == "error":
                out.append(p["entry"].get("text", "")[:500])
        return out

    def requests(self):
        return [e["params"]["request"]["url"] for e in self.events
                if e["method"] == "Network.requestWillBeSent"]

    def close(self):
        try:
            self.call("Browser.close", timeout=5)
        except (CdpError, OSError):
            pass
        try:
            self.proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
        for fd in (self._to_child, self._from_child):
            try:
                os.close(fd)
            except OSError:
                pass
        self._stderr.close()
        shutil.rmtree(self.profile, ignore_errors=True)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()


def main(argv=None):
    """`python3 tests/python/cdp.py REPORT.html OUT.png [WIDTH HEIGHT]`: a screenshot of the
    report's first WIDTH x HEIGHT pixels (default 1100 x 1000) with every session opened."""
    import sys

    args = sys.argv[1:] if argv is None else argv
    if len(args) not in (2, 4):
        sys.exit(main.__doc__)
    width, height = (int(args[2]), int(args[3])) if len(args) == 4 else (1100, 1000)
    exe = find_chromium()
    if exe is None:
        sys.exit("no chromium on PATH")
    with Browser(exe, width=width, height=height) as b:
        b.open("file://" + os.path.abspath(args[0]))
        b.evaluate("document.querySelectorAll('details.session').forEach(d => d.open = true)")
        b.evaluate("new Promise(r => setTimeout(r, 100))")
        b.screenshot(args[1], full_page=False)


if __name__ == "__main__":
    main()
