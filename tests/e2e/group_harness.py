"""Drive consumer-group members (tests/e2e/consumer_worker.py) as child processes.

Each :class:`Worker` is one real client in its own process; its stdout events are collected
by a reader thread. Tests wait for outcomes with bounded waits (a deadline on an observable
condition, never a fixed sleep standing in for a protocol timeout) and stop every process they
started, by PID, in teardown.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
from pathlib import Path
from typing import Any

WORKER = Path(__file__).with_name("consumer_worker.py")


class Worker:
    def __init__(
        self,
        client: str,
        bootstrap: str,
        group: str,
        topic: str,
        *,
        instance_id: str | None = None,
        assignor: str | None = None,
        session_timeout_ms: int = 6000,
        heartbeat_interval_ms: int = 500,
    ) -> None:
        self.client = client
        cmd = [
            sys.executable,
            str(WORKER),
            "--client",
            client,
            "--bootstrap",
            bootstrap,
            "--group",
            group,
            "--topic",
            topic,
            "--session-timeout-ms",
            str(session_timeout_ms),
            "--heartbeat-interval-ms",
            str(heartbeat_interval_ms),
        ]
        if instance_id:
            cmd += ["--instance-id", instance_id]
        if assignor:
            cmd += ["--assignor", assignor]
        self.proc = subprocess.Popen(
            cmd, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True
        )
        self.events: list[dict[str, Any]] = []
        self._lock = threading.Lock()
        self._reader = threading.Thread(target=self._read, daemon=True)
        self._reader.start()

    def _read(self) -> None:
        assert self.proc.stdout is not None
        for line in self.proc.stdout:
            try:
                event = json.loads(line)
            except ValueError:
                continue
            with self._lock:
                self.events.append(event)

    def snapshot(self) -> list[dict[str, Any]]:
        with self._lock:
            return list(self.events)

    @property
    def assignment(self) -> list[int] | None:
        """The partitions this member owns now (None before its first assignment)."""
        owned: list[int] | None = None
        for event in self.snapshot():
            if event["e"] == "assigned":
                owned = event["partitions"]
            elif event["e"] in ("revoked", "lost") and owned is not None:
                owned = [p for p in owned if p not in event["partitions"]]
        return owned

    def records(self) -> list[tuple[int, int, str | None]]:
        return [(e["p"], e["o"], e["k"]) for e in self.snapshot() if e["e"] == "rec"]

    def committed(self) -> dict[int, int]:
        out: dict[int, int] = {}
        for event in self.snapshot():
            if event["e"] == "committed":
                out.update({int(p): o for p, o in event["offsets"].items()})
        return out

    def close(self, timeout: float = 30.0) -> None:
        """Graceful close: the client leaves the group."""
        if self.proc.poll() is None and self.proc.stdin is not None:
            try:
                self.proc.stdin.write("close\n")
                self.proc.stdin.flush()
            except BrokenPipeError:
                pass
        try:
            self.proc.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            self.kill()

    def kill(self) -> None:
        if self.proc.poll() is None:
            os.kill(self.proc.pid, signal.SIGKILL)
            self.proc.wait(timeout=10)

    def stop(self) -> None:
        """Teardown: close if alive, kill if it does not go."""
        if self.proc.poll() is None:
            self.close(timeout=15)


def partitions_split(workers: list[Worker], partitions: int) -> bool:
    """True when the workers' current assignments partition range(partitions) exactly."""
    owned: list[int] = []
    for w in workers:
        a = w.assignment
        if a is None:
            return False
        owned.extend(a)
    return sorted(owned) == list(range(partitions))
