"""Drive group members (tests/e2e/consumer_worker.py) as child processes and read what they report.

Each :class:`Member` is one real client in its own process; a reader thread collects its
JSON events. Tests wait on observable conditions (bounded waits) and stop every process they
started by PID.
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import sys
import threading
import time
import uuid
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

import groupcoord

#: the one worker of the end-to-end tests (also tests/e2e/group_harness.py's)
WORKER = Path(__file__).resolve().parents[2] / "e2e" / "consumer_worker.py"
# the workers import the same groupcoord as the test process
SRC = Path(groupcoord.__file__).resolve().parents[1]


class Member:
    def __init__(
        self,
        client: str,
        bootstrap: str,
        group: str,
        topic: str,
        assignor: str,
        *,
        session_timeout_ms: int = 6000,
        heartbeat_interval_ms: int = 300,
        max_poll_interval_ms: int = 300000,
    ) -> None:
        self.client = client
        cmd = [sys.executable, str(WORKER), "--client", client, "--bootstrap", bootstrap]
        cmd += ["--group", group, "--topic", topic, "--assignor", assignor]
        cmd += ["--session-timeout-ms", str(session_timeout_ms)]
        cmd += ["--heartbeat-interval-ms", str(heartbeat_interval_ms)]
        cmd += ["--max-poll-interval-ms", str(max_poll_interval_ms)]
        env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(SRC), os.environ.get("PYTHONPATH", "")])}
        self.proc = subprocess.Popen(
            cmd,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            env=env,
        )
        self.events: list[dict[str, Any]] = []
        self.stderr: list[str] = []
        self._lock = threading.Lock()
        self._reader = threading.Thread(target=self._read, daemon=True)
        self._reader.start()
        self._err_reader = threading.Thread(target=self._read_err, daemon=True)
        self._err_reader.start()

    def _read(self) -> None:
        assert self.proc.stdout is not None
        for line in self.proc.stdout:
            line = line.strip()
            if not line.startswith("{"):
                continue
            event = json.loads(line)
            with self._lock:
                self.events.append(event)

    def _read_err(self) -> None:
        assert self.proc.stderr is not None
        for line in self.proc.stderr:
            with self._lock:
                self.stderr.append(line)
                del self.stderr[:-2000]

    # -- what it saw --------------------------------------------------------------------------

    def snapshot(self) -> list[dict[str, Any]]:
        with self._lock:
            return list(self.events)

    def owned(self) -> set[int]:
        """Partitions owned now: assigned increments minus revoked / lost ones, in order."""
        owned: set[int] = set()
        for e in self.snapshot():
            if e["e"] == "assigned":
                owned |= set(e["partitions"])
            elif e["e"] in ("revoked", "lost"):
                owned -= set(e["partitions"])
        return owned

    def records(self) -> list[tuple[int, int]]:
        return [(e["p"], e["o"]) for e in self.snapshot() if e["e"] == "rec"]

    def saw(self, kind: str) -> bool:
        return any(e["e"] == kind for e in self.snapshot())

    def count(self, kind: str) -> int:
        return sum(1 for e in self.snapshot() if e["e"] == kind)

    def first(self, kind: str) -> dict[str, Any] | None:
        for e in self.snapshot():
            if e["e"] == kind:
                return e
        return None

    def tail(self) -> str:
        with self._lock:
            return "".join(self.stderr[-60:])

    # -- control ------------------------------------------------------------------------------

    def send(self, command: str) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.write(command + "\n")
        self.proc.stdin.flush()

    def close(self, timeout: float = 60.0) -> int:
        if self.proc.poll() is None:
            with contextlib.suppress(BrokenPipeError, OSError):
                self.send("close")
        try:
            return self.proc.wait(timeout)
        except subprocess.TimeoutExpired:
            self.kill()
            return -9

    def kill(self) -> None:
        if self.proc.poll() is None:
            os.kill(self.proc.pid, signal.SIGKILL)
            self.proc.wait()


def new_name(prefix: str) -> str:
    return f"{prefix}-{uuid.uuid4().hex[:8]}"


def wait_for(
    pred: Callable[[], bool], timeout: float = 90.0, what: str | Callable[[], str] = "condition"
) -> None:
    """Poll ``pred`` until true; ``what`` (or what it returns) explains a timeout."""
    deadline = time.monotonic() + timeout
    while not pred():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {what() if callable(what) else what}")
        time.sleep(0.05)


def partitioned_exactly(members: Iterable[Member], partitions: int) -> bool:
    """Every partition owned by exactly one member."""
    seen: list[int] = []
    for m in members:
        seen += sorted(m.owned())
    return sorted(seen) == list(range(partitions))


def describe(members: Iterable[Member]) -> str:
    return "; ".join(f"{m.client}: owned={sorted(m.owned())} recs={len(m.records())}" for m in members)
