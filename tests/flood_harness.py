"""A broker subprocess and hostile raw-socket clients, for the flow-control tests
(``test_flow_control_process.py``) and ``bench/fairness.py``.

The broker runs in its own process so that its resident memory can be read from
``/proc/<pid>/status`` (``VmRSS``, ``VmHWM``), set up as ``groupcoord serve`` sets it up
(``app.run_blocking``: malloc tuned, ``app.run``) on the loop chosen: ``uvloop`` (what
``groupcoord serve`` runs when uvloop is installed) or ``asyncio`` (the stock loop).
"""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from groupcoord.formats.batch import build_batch
from groupcoord.protocol.client import WireClient, build_request, encode_request
from groupcoord.protocol.registry import load_messages
from wire_testing import FETCH, PRODUCE, fetch_fields, produce, produce_fields

OFFSET_COMMIT, HEARTBEAT, API_VERSIONS, CREATE_TOPICS = 8, 12, 18, 19

_SERVE = """
import asyncio, sys
from pathlib import Path
from groupcoord.app import run
from groupcoord.config import BrokerConfig
from groupcoord.server.serve import event_loop_runner, tune_malloc
loop, data_dir, *sets = sys.argv[1:]
tune_malloc()  # as groupcoord serve does (app.run_blocking)
config = BrokerConfig.load(None, ["listeners=PLAINTEXT://127.0.0.1:0", *sets])
def listening(host, port):
    print(f"listening {port}", flush=True)
runner = event_loop_runner() if loop == "uvloop" else asyncio.run
runner(run(config, Path(data_dir), on_listening=listening))
"""


class BrokerProcess:
    """``groupcoord.app.run`` in a subprocess on the given loop; stopped by PID."""

    def __init__(self, tmp: Path, loop: str, *sets: str) -> None:
        self.stderr_path = tmp / "broker.err"
        self._err = open(self.stderr_path, "w")  # noqa: SIM115 - closed in stop()
        self.proc = subprocess.Popen(
            [sys.executable, "-c", _SERVE, loop, str(tmp / "data"), *sets],
            stdout=subprocess.PIPE,
            stderr=self._err,
            text=True,
        )
        assert self.proc.stdout is not None
        line = self.proc.stdout.readline()
        assert line.startswith("listening "), (line, self.stderr_path.read_text())
        self.port = int(line.split()[1])

    def status(self, field: str) -> int:
        """A ``/proc/<pid>/status`` field in bytes (``VmRSS``, ``VmHWM``)."""
        for line in Path(f"/proc/{self.proc.pid}/status").read_text().splitlines():
            if line.startswith(field + ":"):
                return int(line.split()[1]) * 1024
        raise KeyError(field)

    def stop(self) -> None:
        if self.proc.poll() is None:
            os.kill(self.proc.pid, 15)
            try:
                self.proc.wait(timeout=30)
            except subprocess.TimeoutExpired:
                os.kill(self.proc.pid, 9)
                self.proc.wait()
        self._err.close()


@contextmanager
def broker_process(tmp: Path, loop: str, *sets: str) -> Iterator[BrokerProcess]:
    broker = BrokerProcess(tmp, loop, *sets)
    try:
        yield broker
    finally:
        broker.stop()


def frame(api_key: int, version: int, correlation: int, **fields: Any) -> bytes:
    """One request frame built from plain values."""
    messages = load_messages(api_key, version)
    return encode_request(messages, correlation, build_request(messages.request_type, fields), "flood")


def create_topic(client: WireClient, topic: str) -> None:
    r = client.call(
        CREATE_TOPICS,
        7,
        topics=[
            {"name": topic, "num_partitions": 1, "replication_factor": 1, "assignments": [], "configs": []}
        ],
        timeout=30_000,
        validate_only=False,
    )
    assert r.topics[0].error_code == 0, r


def fill_topic(client: WireClient, topic: str, total_bytes: int, record_bytes: int = 1 << 19) -> None:
    """Append ``total_bytes`` of record values to partition 0 of ``topic`` (acks=1)."""
    value = b"x" * record_bytes
    for _ in range(max(1, total_bytes // record_bytes)):
        produce(client, topic, build_batch([(None, value, ())], timestamp_ms=int(time.time() * 1000)))


def fetch_frame(correlation: int, topic: str, max_bytes: int, version: int = 12) -> bytes:
    """A Fetch of partition 0 from offset 0, allowing ``max_bytes``, no wait. At v12 the
    broker sends large record sets from the segment file (sendfile); at v3 it down-converts
    them, so every answer is built in memory."""
    return frame(FETCH, version, correlation, **fetch_fields(topic, 0, max_bytes))


def api_versions_frame(correlation: int) -> bytes:
    return frame(API_VERSIONS, 3, correlation, client_software_name="flood", client_software_version="1")


class Flood:
    """A raw socket that writes frames and never reads: sends until the broker stops taking
    bytes (the socket's buffers fill) or ``count`` frames are written."""

    def __init__(self, port: int) -> None:
        self.sock = socket.create_connection(("127.0.0.1", port))
        self.sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 1 << 16)
        self.sock.setblocking(False)
        self.sent_frames = 0
        self._rest = b""

    def push(self, make: Any, count: int) -> bool:
        """Write frames ``make(correlation)`` without blocking; False once the broker stopped
        taking bytes for now (or all ``count`` are written)."""
        progressed = False
        while self.sent_frames < count or self._rest:
            if not self._rest:
                self._rest = make(self.sent_frames + 1)
                self.sent_frames += 1
            try:
                n = self.sock.send(self._rest)
            except BlockingIOError:
                return progressed
            progressed = True
            self._rest = self._rest[n:]
        return progressed

    def close(self) -> None:
        self.sock.close()


def probe(client: WireClient, group: str, topic: str) -> float:
    """One Heartbeat and one OffsetCommit (a simple group's, generation -1) answered; the seconds
    both took."""
    started = time.monotonic()
    hb = client.call(HEARTBEAT, 4, group_id=group, generation_id=1, member_id="m", group_instance_id=None)
    assert hb.error_code != 0  # no such member: answered with an error, which is all a probe needs
    r = client.call(
        OFFSET_COMMIT,
        8,
        group_id=group,
        generation_id_or_member_epoch=-1,
        member_id="",
        group_instance_id=None,
        topics=[
            {
                "name": topic,
                "partitions": [
                    {
                        "partition_index": 0,
                        "committed_offset": 1,
                        "committed_leader_epoch": -1,
                        "committed_metadata": "",
                    }
                ],
            }
        ],
    )
    assert r.topics[0].partitions[0].error_code == 0, r
    return time.monotonic() - started


def big_produce_frame(correlation: int, topic: str, value_bytes: int) -> bytes:
    """A Produce v9 frame carrying one record of ``value_bytes`` (over max.message.bytes: the
    broker reads it whole, then answers MESSAGE_TOO_LARGE)."""
    batch = build_batch([(None, b"\0" * value_bytes, ())], timestamp_ms=int(time.time() * 1000))
    return frame(PRODUCE, 9, correlation, **produce_fields(topic, batch))
