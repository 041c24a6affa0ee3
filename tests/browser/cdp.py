"""Headless Chromium driven over the DevTools protocol on a pipe (``--remote-debugging-pipe``).

No websocket and no extra package: Chromium reads NUL-terminated JSON commands on fd 3 and writes
replies and events on fd 4.  Enough for the HTML report's browser test: open a page, read its live
DOM with ``Runtime.evaluate``, collect console and CSP messages, and take full-page screenshots.
"""

from __future__ import annotations

import base64
import contextlib
import fcntl
import json
import os
import select
import shutil
import subprocess
import tempfile
import time
from pathlib import Path
from typing import Any

REQUIRE_ENV = "AICR_REQUIRE_CHROMIUM"
NAMES = ("chromium", "chromium-browser", "chromium-headless-shell")


def artifacts_dir(create: bool = True) -> Path:
    """Where the browser test keeps its screenshots: ``$AICR_TEST_ARTIFACTS/html-report``
    (default ``out/test-artifacts/html-report`` in the checkout)."""
    base = (
        os.environ.get("AICR_TEST_ARTIFACTS")
        or Path(__file__).resolve().parents[2] / "out" / "test-artifacts"
    )
    path = Path(base) / "html-report"
    if create:
        path.mkdir(parents=True, exist_ok=True)
    return path


def find_chromium() -> str | None:
    """``AICR_CHROMIUM``, else the first of :data:`NAMES` on PATH."""
    explicit = os.environ.get("AICR_CHROMIUM")
    if explicit:
        return explicit if os.access(explicit, os.X_OK) else None
    for name in NAMES:
        found = shutil.which(name)
        if found:
            return found
    return None


class CdpError(RuntimeError):
    pass


class Browser:
    """One headless Chromium process; :meth:`open` gives a :class:`Tab`."""

    def __init__(self, binary: str, timeout: float = 30.0) -> None:
        self.timeout = timeout
        self._profile = tempfile.mkdtemp(prefix="aicr-chromium-")
        cmd_r, self._cmd_w = os.pipe()
        self._res_r, res_w = os.pipe()
        # move the child's ends above 100 so that the redirections below cannot clobber them
        cmd_r, res_w = (self._high(fd) for fd in (cmd_r, res_w))
        args = [
            binary,
            "--headless",
            "--no-sandbox",  # root in CI containers
            "--disable-gpu",
            "--disable-dev-shm-usage",
            "--no-first-run",
            "--no-default-browser-check",
            "--disable-extensions",
            "--disable-background-networking",
            "--hide-scrollbars",
            "--mute-audio",
            "--remote-debugging-pipe",
            f"--user-data-dir={self._profile}",
            "about:blank",
        ]
        # fd 3 = commands in, fd 4 = replies out, as --remote-debugging-pipe expects
        self.proc = subprocess.Popen(
            ["bash", "-c", f'exec "$@" 3<&{cmd_r} 4>&{res_w} {cmd_r}<&- {res_w}>&-', "chromium", *args],
            pass_fds=(cmd_r, res_w),
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        os.close(cmd_r)
        os.close(res_w)
        self._buf = b""
        self._next_id = 0
        self.events: list[dict[str, Any]] = []
        self.version = str(self.call("Browser.getVersion")["product"])

    @staticmethod
    def _high(fd: int) -> int:
        high = fcntl.fcntl(fd, fcntl.F_DUPFD_CLOEXEC, 100)
        os.close(fd)
        return high

    # -- protocol -----------------------------------------------------------------------------
    def call(self, method: str, params: dict[str, Any] | None = None, session: str | None = None) -> Any:
        self._next_id += 1
        msg: dict[str, Any] = {"id": self._next_id, "method": method, "params": params or {}}
        if session:
            msg["sessionId"] = session
        os.write(self._cmd_w, json.dumps(msg).encode() + b"\0")
        deadline = time.monotonic() + self.timeout
        while True:
            reply = self._read(deadline)
            if reply.get("id") == self._next_id:
                if "error" in reply:
                    raise CdpError(f"{method}: {reply['error']}")
                return reply.get("result", {})
            self.events.append(reply)

    def wait_event(self, method: str, session: str, since: int) -> dict[str, Any]:
        deadline = time.monotonic() + self.timeout
        while True:
            for event in self.events[since:]:
                if event.get("method") == method and event.get("sessionId") == session:
                    return event
            since = len(self.events)
            self.events.append(self._read(deadline))

    def _read(self, deadline: float) -> dict[str, Any]:
        while b"\0" not in self._buf:
            left = deadline - time.monotonic()
            if left <= 0:
                raise CdpError("timed out waiting for Chromium")
            ready, _, _ = select.select([self._res_r], [], [], left)
            if not ready:
                continue
            chunk = os.read(self._res_r, 1 << 20)
            if not chunk:
                raise CdpError(f"Chromium exited (code {self.proc.poll()})")
            self._buf += chunk
        raw, self._buf = self._buf.split(b"\0", 1)
        data: dict[str, Any] = json.loads(raw)
        return data

    # -- pages ----------------------------------------------------------------------------------
    def open(self, url: str, *, width: int = 1280, height: int = 900) -> Tab:
        target = self.call("Target.createTarget", {"url": "about:blank"})["targetId"]
        session = self.call("Target.attachToTarget", {"targetId": target, "flatten": True})["sessionId"]
        tab = Tab(self, target, session)
        for domain in ("Page", "Runtime", "Log"):
            self.call(f"{domain}.enable", session=session)
        tab.resize(width, height)
        mark = len(self.events)
        self.call("Page.navigate", {"url": url}, session=session)
        self.wait_event("Page.loadEventFired", session, mark)
        tab.first_event = mark
        return tab

    def close(self) -> None:
        with contextlib.suppress(CdpError, OSError):
            self.call("Browser.close")
        try:
            self.proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait(timeout=10)
        for fd in (self._cmd_w, self._res_r):
            with contextlib.suppress(OSError):
                os.close(fd)
        shutil.rmtree(self._profile, ignore_errors=True)


class Tab:
    def __init__(self, browser: Browser, target: str, session: str) -> None:
        self.browser = browser
        self.target = target
        self.session = session
        self.first_event = 0

    def resize(self, width: int, height: int) -> None:
        self.browser.call(
            "Emulation.setDeviceMetricsOverride",
            {"width": width, "height": height, "deviceScaleFactor": 1, "mobile": False},
            session=self.session,
        )

    def evaluate(self, expression: str) -> Any:
        """The value of a JavaScript expression in the page (run by DevTools, not by the page)."""
        result = self.browser.call(
            "Runtime.evaluate", {"expression": expression, "returnByValue": True}, session=self.session
        )
        if "exceptionDetails" in result:
            raise CdpError(f"evaluate failed: {result['exceptionDetails']}")
        return result["result"].get("value")

    def messages(self) -> list[str]:
        """Console messages, log entries (CSP violations among them) and uncaught exceptions."""
        out: list[str] = []
        for event in self.browser.events[self.first_event :]:
            if event.get("sessionId") != self.session:
                continue
            params = event.get("params", {})
            if event.get("method") == "Log.entryAdded":
                out.append(f"log {params['entry'].get('level')}: {params['entry'].get('text')}")
            elif event.get("method") == "Runtime.consoleAPICalled":
                out.append(f"console {params.get('type')}: {params.get('args')}")
            elif event.get("method") == "Runtime.exceptionThrown":
                out.append(f"exception: {params.get('exceptionDetails')}")
        return out

    def screenshot(self, path: Path, width: int) -> Path:
        """A full-page PNG at ``width`` CSS pixels."""
        self.resize(width, 900)
        metrics = self.browser.call("Page.getLayoutMetrics", session=self.session)
        height = int(metrics["cssContentSize"]["height"]) + 1
        self.resize(width, height)
        shot = self.browser.call(
            "Page.captureScreenshot",
            {
                "format": "png",
                "captureBeyondViewport": True,
                "clip": {"x": 0, "y": 0, "width": width, "height": height, "scale": 1},
            },
            session=self.session,
        )
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(base64.b64decode(shot["data"]))
        return path

    def close(self) -> None:
        self.browser.call("Target.closeTarget", {"targetId": self.target})
