"""A headless Chromium driven over the DevTools protocol on a pipe (``--remote-debugging-pipe``:
JSON messages ending in a NUL byte, the browser reading fd 3 and writing fd 4), with nothing
installed but Debian's ``chromium`` package: no driver, no browser download, no port.

``Page`` opens a file at a given viewport width, evaluates JavaScript in it, collects what the
console and uncaught exceptions report as errors, and takes a screenshot. Used by
tests/test_report_browser.py; also to look at a report by hand::

    python tests/chromium.py reports/RUN/report.html 420 /tmp/report-420.png [HEIGHT [TOP]]
"""
from __future__ import annotations

import base64
import json
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
# flags that work in a container without a display, GPU, sandbox or network
FLAGS = ("--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
         "--disable-background-networking", "--disable-component-update", "--disable-sync",
         "--disable-dev-shm-usage", "--remote-debugging-pipe")


def _above_nine(fd: int) -> int:
    """``fd`` moved to the lowest free number above 9."""
    import fcntl

    moved = fcntl.fcntl(fd, fcntl.F_DUPFD, 10)
    os.close(fd)
    return moved


class Chromium:
    """One browser process; ``with Chromium() as browser: page = browser.open(path, 420)``."""

    def __init__(self, executable: str | None = None, timeout: float = 60.0):
        self.executable, self.timeout = executable or CHROMIUM, timeout
        if self.executable is None:
            raise FileNotFoundError("no chromium executable on PATH (Debian: apt-get install chromium)")
        self.profile = tempfile.mkdtemp(prefix="cflbounds-chromium-")
        to_browser, self._write = os.pipe()
        self._read, from_browser = os.pipe()
        # a small Python puts the pipe ends at fds 3 and 4, where --remote-debugging-pipe expects
        # them, from numbers above 9 (a pipe end at 3 or 4 itself would be overwritten by the other)
        to_browser, from_browser = (_above_nine(fd) for fd in (to_browser, from_browser))
        arguments = [self.executable, *FLAGS, f"--user-data-dir={self.profile}", "about:blank"]
        start = (f"import os; os.dup2({to_browser}, 3); os.dup2({from_browser}, 4); "
                 f"os.execv({self.executable!r}, {arguments!r})")
        self.process = subprocess.Popen([sys.executable, "-c", start], pass_fds=(to_browser, from_browser),
                                        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        os.close(to_browser)
        os.close(from_browser)
        self._buffer, self._next, self.events = b"", 0, []

    def send(self, method: str, params: dict | None = None, session: str | None = None) -> dict:
        """Send one command and return its result (events that arrive meanwhile are kept)."""
        self._next += 1
        message = {"id": self._next, "method": method, "params": params or {}}
        if session:
            message["sessionId"] = session
        os.write(self._write, json.dumps(message).encode() + b"\0")
        while True:
            reply = self._receive()
            if reply.get("id") == self._next:
                if "error" in reply:
                    raise RuntimeError(f"{method}: {reply['error']}")
                return reply.get("result", {})
            self.events.append(reply)

    def wait_for(self, method: str, session: str) -> dict:
        """The first event ``method`` of ``session`` not yet seen (kept events first)."""
        for index, event in enumerate(self.events):
            if event.get("method") == method and event.get("sessionId") == session:
                return self.events.pop(index)
        while True:
            event = self._receive()
            if event.get("method") == method and event.get("sessionId") == session:
                return event
            self.events.append(event)

    def _receive(self) -> dict:
        import select

        while b"\0" not in self._buffer:
            ready, _, _ = select.select([self._read], [], [], self.timeout)
            chunk = os.read(self._read, 1 << 20) if ready else b""
            if not chunk:
                raise RuntimeError("chromium stopped answering")
            self._buffer += chunk
        message, self._buffer = self._buffer.split(b"\0", 1)
        return json.loads(message)

    def open(self, path, width: int, height: int = 900) -> "Page":
        """``path`` in a new tab of ``width`` x ``height`` CSS pixels (a phone's, under 600),
        loaded, with console and exception reporting on from the start."""
        target = self.send("Target.createTarget", {"url": "about:blank"})["targetId"]
        session = self.send("Target.attachToTarget", {"targetId": target, "flatten": True})["sessionId"]
        for domain in ("Page", "Runtime", "Log"):
            self.send(f"{domain}.enable", session=session)
        self.send("Emulation.setDeviceMetricsOverride", {"width": width, "height": height, "deviceScaleFactor": 1,
                                                         "mobile": width < 600}, session=session)
        self.send("Page.navigate", {"url": Path(path).resolve().as_uri()}, session=session)
        self.wait_for("Page.loadEventFired", session)
        return Page(self, session)

    def close(self) -> None:
        try:
            self.send("Browser.close")
        except (RuntimeError, OSError):
            pass
        try:
            self.process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()
        for fd in (self._read, self._write):
            os.close(fd)
        shutil.rmtree(self.profile, ignore_errors=True)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()


class Page:
    """A loaded page of a :class:`Chromium`."""

    def __init__(self, browser: Chromium, session: str):
        self.browser, self.session = browser, session

    def evaluate(self, expression: str, gesture: bool = False):
        """The value of a JavaScript expression (a promise awaited); ``gesture``: as if the user
        had clicked (what a clipboard write needs)."""
        result = self.browser.send("Runtime.evaluate", {"expression": expression, "returnByValue": True,
                                                        "awaitPromise": True, "userGesture": gesture},
                                   session=self.session)
        if "exceptionDetails" in result:
            raise RuntimeError(f"{expression[:80]}: {result['exceptionDetails']}")
        return result["result"].get("value")

    def errors(self) -> list[str]:
        """What the page reported as an error so far: uncaught exceptions, console.error, and
        the browser's own log entries of level error (a failed load, a CSP refusal)."""
        self.evaluate("0")  # events sent before this answer are in
        found = []
        for event in self.browser.events:
            if event.get("sessionId") != self.session:
                continue
            method, params = event.get("method"), event.get("params", {})
            if method == "Runtime.exceptionThrown":
                found.append(json.dumps(params["exceptionDetails"])[:500])
            elif method == "Runtime.consoleAPICalled" and params.get("type") in ("error", "assert"):
                found.append(" ".join(str(a.get("value", a.get("description"))) for a in params.get("args", [])))
            elif method == "Log.entryAdded" and params["entry"].get("level") == "error":
                found.append(params["entry"].get("text", ""))
        return found

    def screenshot(self, path, height: int | None = None, top: int = 0) -> Path:
        """A PNG of the page from ``top``, ``height`` CSS pixels of it (default: to the end)."""
        size = self.browser.send("Page.getLayoutMetrics", session=self.session)["cssContentSize"]
        top = min(top, size["height"] - 1)
        clip = {"x": 0, "y": top, "width": size["width"], "height": min(size["height"] - top, height or size["height"]),
                "scale": 1}
        data = self.browser.send("Page.captureScreenshot", {"format": "png", "clip": clip,
                                                            "captureBeyondViewport": True}, session=self.session)
        Path(path).write_bytes(base64.b64decode(data["data"]))
        return Path(path)


if __name__ == "__main__":  # REPORT WIDTH PNG [HEIGHT [TOP]]
    report, width, out = sys.argv[1], int(sys.argv[2]), sys.argv[3]
    with Chromium() as browser:
        page = browser.open(report, width)
        print(json.dumps({"scrollWidth": page.evaluate("document.documentElement.scrollWidth"),
                          "clientWidth": page.evaluate("document.documentElement.clientWidth"),
                          "errors": page.errors()}))
        page.screenshot(out, int(sys.argv[4]) if len(sys.argv) > 4 else None,
                        int(sys.argv[5]) if len(sys.argv) > 5 else 0)
