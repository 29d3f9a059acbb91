"""A real groupcoord broker process for the client's end-to-end tests.

``ClientBroker`` runs ``python -m groupcoord serve --listen 127.0.0.1:0`` with a temporary data
dir, reads the port from its ``groupcoord listening on HOST:PORT`` line, and stops it by PID
(SIGTERM, then SIGKILL). Group timers are kept small through broker settings so tests finish
quickly; tests wait on observable conditions with generous limits.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

LISTENING_PREFIX = "groupcoord listening on "


class ClientBroker:
    def __init__(self, data_dir: Path, settings: tuple[str, ...] = ()) -> None:
        self.data_dir = data_dir
        self.settings = settings
        self.log_path = data_dir.parent / f"{data_dir.name}.log"
        self.port = 0
        self.proc: subprocess.Popen[str] | None = None

    @property
    def bootstrap(self) -> str:
        return f"127.0.0.1:{self.port}"

    def start(self, timeout: float = 30.0) -> None:
        argv = [sys.executable, "-m", "groupcoord", "serve", "--listen", f"127.0.0.1:{self.port}"]
        argv += ["--data-dir", str(self.data_dir)]
        for item in self.settings:
            argv += ["--set", item]
        log_file = open(self.log_path, "a")  # noqa: SIM115 - handed to the child process
        self.proc = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=log_file, text=True)
        log_file.close()
        line: list[str] = []
        proc = self.proc

        def read() -> None:
            assert proc.stdout is not None
            line.append(proc.stdout.readline())

        reader = threading.Thread(target=read, daemon=True)
        reader.start()
        reader.join(timeout)
        if not line or not line[0].startswith(LISTENING_PREFIX):
            self.kill()
            raise RuntimeError(f"broker did not start: {line!r}")
        self.port = int(line[0][len(LISTENING_PREFIX) :].strip().rsplit(":", 1)[1])

    def stop(self, timeout: float = 15.0) -> None:
        proc = self.proc
        if proc is None:
            return
        proc.send_signal(signal.SIGTERM)
        try:
            proc.wait(timeout)
        except subprocess.TimeoutExpired:
            os.kill(proc.pid, signal.SIGKILL)
            proc.wait()
        if proc.stdout is not None:
            proc.stdout.close()
        self.proc = None

    def kill(self) -> None:
        proc = self.proc
        if proc is None:
            return
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait()
        if proc.stdout is not None:
            proc.stdout.close()
        self.proc = None


GROUP_SETTINGS = (
    "group.initial.rebalance.delay.ms=0",
    "group.min.session.timeout.ms=500",
)


@pytest.fixture(scope="module")
def client_broker(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ClientBroker]:
    b = ClientBroker(tmp_path_factory.mktemp("client-broker") / "data", GROUP_SETTINGS)
    b.start()
    try:
        yield b
    finally:
        b.stop()


def wait_for(pred: Callable[[], bool], timeout: float = 60.0, what: str = "condition") -> None:
    """Poll ``pred`` until true; fail after ``timeout`` seconds (a generous bound, not a timing)."""
    deadline = time.monotonic() + timeout
    while not pred():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {what}")
        time.sleep(0.02)
