"""Headless Chromium driven over the DevTools protocol, for pages that change while they are open.

The report's browser test (``tests/pipeline/test_report_browser.py``) loads a file with
``chromium --dump-dom``: one load, one dump. A live page must stay open while clients join and
leave, so here the same Debian ``/usr/bin/chromium`` runs with ``--remote-debugging-pipe``: the
DevTools protocol's JSON messages, each ended by a NUL byte, on file descriptors 3 (to the
browser) and 4 (from it). That needs no WebSocket library and no downloaded browser (Playwright
and pyppeteer fetch their own); the protocol is small enough to speak directly: send a command
with an id, read its answer with that id, keep the events.

Also used by ``scripts/console_screenshots.py``.
"""

from __future__ import annotations

import base64
import contextlib
import fcntl
import json
import os
import shutil
import subprocess
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

CHROMIUM = Path("/usr/bin/chromium")


class BrowserError(RuntimeError):
    pass


def _above_4(fd: int) -> int:
    moved = fcntl.fcntl(fd, fcntl.F_DUPFD_CLOEXEC, 10)
    os.close(fd)
    return moved


class Chromium:
    """One headless browser process; :meth:`page` opens a tab. Close it (or use ``with``)."""

    def __init__(self, *, width: int = 1400, height: int = 900) -> None:
        if not CHROMIUM.exists():
            raise BrowserError("headless Chromium is needed: apt-get install -y chromium")
        self._profile = tempfile.mkdtemp(prefix="groupcoord-chromium-")
        # The browser's ends go to fds 3 and 4 by the shell's redirections, so first move them
        # above 4: redirecting ``3<&4 4>&3`` in order would lose one.
        to_child_r, self._to_child = (_above_4(fd) for fd in os.pipe())
        self._from_child, from_child_w = (_above_4(fd) for fd in os.pipe())
        argv = [
            "bash",  # dash takes single-digit fds only in redirections
            "-c",
            f'exec "$0" "$@" 3<&{to_child_r} 4>&{from_child_w}',
            str(CHROMIUM),
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--no-first-run",
            "--disable-extensions",
            "--disable-background-networking",
            "--remote-debugging-pipe",
            f"--user-data-dir={self._profile}",
            f"--window-size={width},{height}",
            "about:blank",
        ]
        self.proc = subprocess.Popen(
            argv,
            pass_fds=(to_child_r, from_child_w),
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        os.close(to_child_r)
        os.close(from_child_w)
        self._next_id = 0
        self._lock = threading.Lock()
        self._cond = threading.Condition()
        self._answers: dict[int, dict[str, Any]] = {}
        #: every event received: (session id, method, params)
        self.events: list[tuple[str | None, str, dict[str, Any]]] = []
        self._reader = threading.Thread(target=self._read, name="chromium-devtools", daemon=True)
        self._reader.start()

    # ------------------------------------------------------------------ protocol
    def _read(self) -> None:
        buf = b""
        while True:
            try:
                chunk = os.read(self._from_child, 1 << 16)
            except OSError:
                chunk = b""
            if not chunk:
                with self._cond:
                    self._answers[-1] = {"error": {"message": "the browser closed its pipe"}}
                    self._cond.notify_all()
                return
            buf += chunk
            while b"\0" in buf:
                raw, buf = buf.split(b"\0", 1)
                message = json.loads(raw)
                with self._cond:
                    if "id" in message:
                        self._answers[message["id"]] = message
                    else:
                        self.events.append(
                            (message.get("sessionId"), message["method"], message.get("params", {}))
                        )
                    self._cond.notify_all()

    def send(self, method: str, params: dict[str, Any] | None = None, *, session: str | None = None,
             timeout: float = 60.0) -> dict[str, Any]:  # fmt: skip
        with self._lock:
            self._next_id += 1
            ident = self._next_id
        message: dict[str, Any] = {"id": ident, "method": method, "params": params or {}}
        if session is not None:
            message["sessionId"] = session
        os.write(self._to_child, json.dumps(message).encode() + b"\0")
        deadline = time.monotonic() + timeout
        with self._cond:
            while ident not in self._answers:
                if -1 in self._answers:
                    raise BrowserError(self._answers[-1]["error"]["message"])
                left = deadline - time.monotonic()
                if left <= 0:
                    raise BrowserError(f"{method}: no answer within {timeout} s")
                self._cond.wait(left)
            answer = self._answers.pop(ident)
        if "error" in answer:
            raise BrowserError(f"{method}: {answer['error']}")
        result: dict[str, Any] = answer.get("result", {})
        return result

    def wait_event(
        self, method: str, *, session: str | None, after: int, timeout: float = 60.0
    ) -> dict[str, Any]:
        """The first event ``method`` of ``session`` at index ``after`` or later of :attr:`events`."""
        deadline = time.monotonic() + timeout
        with self._cond:
            while True:
                for sid, name, params in self.events[after:]:
                    if name == method and sid == session:
                        return params
                left = deadline - time.monotonic()
                if left <= 0:
                    raise BrowserError(f"no {method} within {timeout} s")
                self._cond.wait(left)

    def page(self) -> Page:
        target = self.send("Target.createTarget", {"url": "about:blank"})["targetId"]
        session = self.send("Target.attachToTarget", {"targetId": target, "flatten": True})["sessionId"]
        page = Page(self, session, target)
        for domain in ("Page", "Runtime", "Log"):
            self.send(f"{domain}.enable", session=session)
        return page

    # ------------------------------------------------------------------ lifecycle
    def close(self) -> None:
        with contextlib.suppress(BrowserError, OSError):
            self.send("Browser.close", timeout=10)
        try:
            self.proc.wait(10)
        except subprocess.TimeoutExpired:
            self.proc.kill()  # by its PID (Popen), ours alone
            self.proc.wait(10)
        for fd in (self._to_child, self._from_child):
            with contextlib.suppress(OSError):
                os.close(fd)
        shutil.rmtree(self._profile, ignore_errors=True)

    def __enter__(self) -> Chromium:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


class Page:
    """One tab: navigate, evaluate, wait for a condition, screenshot, and what it logged."""

    def __init__(self, browser: Chromium, session: str, target: str) -> None:
        self.browser = browser
        self.session = session
        self.target = target

    def close(self) -> None:
        self.browser.send("Target.closeTarget", {"targetId": self.target})

    def goto(self, url: str, timeout: float = 60.0) -> None:
        mark = len(self.browser.events)
        self.browser.send("Page.navigate", {"url": url}, session=self.session)
        self.browser.wait_event("Page.loadEventFired", session=self.session, after=mark, timeout=timeout)

    def eval(self, expression: str) -> Any:
        result = self.browser.send(
            "Runtime.evaluate",
            {"expression": expression, "returnByValue": True, "awaitPromise": True},
            session=self.session,
        )
        if "exceptionDetails" in result:
            raise BrowserError(f"{expression!r}: {result['exceptionDetails']}")
        return result["result"].get("value")

    def wait_for(self, expression: str, timeout: float = 60.0, poll: float = 0.1) -> Any:
        """The value of ``expression`` once it is truthy (polled; BrowserError after ``timeout``)."""
        deadline = time.monotonic() + timeout
        while True:
            value = self.eval(expression)
            if value:
                return value
            if time.monotonic() > deadline:
                raise BrowserError(f"still false after {timeout} s: {expression}")
            time.sleep(poll)

    def problems(self) -> list[str]:
        """What the page logged as an error or warning, threw, or tried to show in a dialog
        (an ``alert`` would be one), including what the Content-Security-Policy blocked."""
        out = []
        for sid, method, params in list(self.browser.events):
            if sid != self.session:
                continue
            if method == "Runtime.exceptionThrown":
                out.append(
                    f"exception: {params['exceptionDetails'].get('text')} {params['exceptionDetails']}"
                )
            elif method == "Runtime.consoleAPICalled" and params.get("type") in (
                "error",
                "warning",
                "assert",
            ):
                out.append(f"console.{params['type']}: {params.get('args')}")
            elif method == "Log.entryAdded" and params["entry"].get("level") in ("error", "warning"):
                entry = params["entry"]
                if entry.get("url", "").endswith("/favicon.ico"):
                    continue
                out.append(f"log {entry.get('source')}: {entry.get('text')}")
            elif method == "Page.javascriptDialogOpening":
                out.append(f"dialog {params.get('type')}: {params.get('message')}")
        return out

    def screenshot(self, path: Path, *, width: int = 1400, height: int = 900) -> None:
        self.browser.send(
            "Emulation.setDeviceMetricsOverride",
            {"width": width, "height": height, "deviceScaleFactor": 1, "mobile": False},
            session=self.session,
        )
        shot = self.browser.send("Page.captureScreenshot", {"format": "png"}, session=self.session)
        path.write_bytes(base64.b64decode(shot["data"]))
