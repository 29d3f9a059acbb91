"""A real broker process for end-to-end tests.

``BrokerProcess`` runs ``python -m groupcoord serve --listen 127.0.0.1:PORT --data-dir DIR``,
reads the ``groupcoord listening on HOST:PORT`` line for the port, and stops the process by
its PID (SIGTERM, then SIGKILL if it does not exit). ``restart()`` keeps the data dir and the
port, so a client's bootstrap address stays valid across restarts.

Fixtures: ``broker`` (one per test module), ``broker_factory`` (as many as a test wants;
all stopped at teardown).
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


class BrokerProcess:
    def __init__(
        self, data_dir: Path, *, settings: tuple[str, ...] = (), log_path: Path | None = None
    ) -> None:
        self.data_dir = data_dir
        self.settings = settings
        self.log_path = log_path or data_dir.parent / f"{data_dir.name}.log"
        self.port = 0
        self.proc: subprocess.Popen[str] | None = None
        self.starts = 0

    @property
    def bootstrap(self) -> str:
        return f"127.0.0.1:{self.port}"

    def start(self, timeout: float = 20.0) -> None:
        assert self.proc is None, "already running"
        argv = [
            sys.executable,
            "-m",
            "groupcoord",
            "serve",
            "--listen",
            f"127.0.0.1:{self.port}",
            "--data-dir",
            str(self.data_dir),
        ]
        for item in self.settings:
            argv += ["--set", item]
        log_file = open(self.log_path, "a")  # noqa: SIM115 - handed to the child process
        log_file.write(f"---- start #{self.starts + 1}: {' '.join(argv)}\n")
        log_file.flush()
        self.proc = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=log_file, text=True)
        log_file.close()
        self.starts += 1
        line: list[str] = []
        reader = threading.Thread(
            target=lambda: line.append(self.proc.stdout.readline() if self.proc and self.proc.stdout else "")
        )
        reader.start()
        reader.join(timeout)
        if not line or not line[0].startswith(LISTENING_PREFIX):
            self.kill()
            raise RuntimeError(f"broker did not start: {line!r}; log:\n{self.log_tail()}")
        host_port = line[0][len(LISTENING_PREFIX) :].strip()
        self.port = int(host_port.rsplit(":", 1)[1])

    def stop(self, timeout: float = 15.0) -> int:
        """SIGTERM and wait for a graceful exit; returns the exit status."""
        proc = self.proc
        if proc is None:
            return 0
        proc.send_signal(signal.SIGTERM)
        try:
            rc = proc.wait(timeout)
        except subprocess.TimeoutExpired:
            proc.kill()
            rc = proc.wait()
        self._reap()
        return rc

    def kill(self) -> None:
        """SIGKILL: no flush, no clean shutdown marker."""
        proc = self.proc
        if proc is None:
            return
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait()
        self._reap()

    def restart(self) -> None:
        self.stop()
        self.start()

    def _reap(self) -> None:
        if self.proc is not None and self.proc.stdout is not None:
            self.proc.stdout.close()
        self.proc = None

    def log_tail(self, lines: int = 40) -> str:
        try:
            return "\n".join(self.log_path.read_text().splitlines()[-lines:])
        except OSError:
            return "(no log)"


@pytest.fixture(scope="module")
def broker(tmp_path_factory: pytest.TempPathFactory) -> Iterator[BrokerProcess]:
    base = tmp_path_factory.mktemp("broker")
    b = BrokerProcess(base / "data")
    b.start()
    try:
        yield b
    finally:
        b.stop()


@pytest.fixture
def broker_factory(tmp_path: Path) -> Iterator[Callable[..., BrokerProcess]]:
    made: list[BrokerProcess] = []

    def make(*settings: str) -> BrokerProcess:
        b = BrokerProcess(tmp_path / f"data{len(made)}", settings=settings)
        b.start()
        made.append(b)
        return b

    try:
        yield make
    finally:
        for b in made:
            b.stop()


def wait_until(pred: Callable[[], bool], timeout: float = 20.0, what: str = "condition") -> None:
    deadline = time.monotonic() + timeout
    while not pred():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {what}")
        time.sleep(0.05)


def acked_per_partition(
    acked: list[tuple[int, int, bytes]], lock: threading.Lock, partitions: int
) -> list[int]:
    """How many acknowledged ``(partition, offset, value)`` records each partition has so far."""
    with lock:
        counts = [0] * partitions
        for partition, _offset, _value in acked:
            counts[partition] += 1
        return counts


# ---------------------------------------------------------------------- shared workload

Headers = tuple[tuple[str, bytes], ...]


class Rec:
    """One record as produced: where it goes and exactly which bytes it carries."""

    __slots__ = ("headers", "key", "partition", "timestamp", "value")

    def __init__(self, partition: int, key: bytes, value: bytes, headers: Headers, timestamp: int) -> None:
        self.partition = partition
        self.key = key
        self.value = value
        self.headers = headers
        self.timestamp = timestamp

    def content(self) -> tuple[bytes, bytes, Headers, int]:
        return (self.key, self.value, self.headers, self.timestamp)


class Workload:
    @staticmethod
    def records(n: int, partitions: int, seed: int) -> list[Rec]:
        """Keys, headers and values that differ per record (values compress, but not trivially)."""
        import random

        rng = random.Random(seed)
        base_ts = 1_700_000_000_000 + seed * 1_000_000
        out = []
        for i in range(n):
            value = (
                f"value-{seed}-{i}-".encode()
                + rng.randbytes(rng.randrange(0, 48))
                + b"x" * rng.randrange(0, 64)
            )
            headers: Headers = (("idx", str(i).encode()), ("kind", b"e2e"), ("empty", b""))
            out.append(Rec(i % partitions, f"key-{i}".encode(), value, headers, base_ts + i))
        return out

    @staticmethod
    def by_partition(records: list[Rec]) -> dict[int, list[tuple[bytes, bytes, Headers, int]]]:
        out: dict[int, list[tuple[bytes, bytes, Headers, int]]] = {}
        for r in records:
            out.setdefault(r.partition, []).append(r.content())
        return out

    @staticmethod
    def assert_consumed_exactly(
        expected: list[Rec], consumed: dict[int, list[tuple[int, bytes, bytes, Headers, int]]]
    ) -> None:
        """Every partition holds exactly the produced records, in order, at offsets 0..n-1."""
        want = Workload.by_partition(expected)
        assert sorted(consumed) == sorted(want)
        for p, rows in want.items():
            got = consumed[p]
            assert [row[0] for row in got] == list(range(len(rows))), f"offsets of partition {p}"
            assert [row[1:] for row in got] == rows, f"contents of partition {p}"


@pytest.fixture
def workload() -> type[Workload]:
    return Workload
