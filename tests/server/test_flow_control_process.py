"""Bounded memory under clients that write and never read, measured on a broker process.

Kafka's network layer never buffers more than one answer per connection: ``SocketServer.
Processor`` mutes a channel once a request is read (``KafkaChannel.mute``) and unmutes it only
after the response is sent (``processCompletedSends`` -> ``tryUnmuteChannel``), so a client that
does not read stops being read (``SocketServerTest.testSendActionResponseWithThrottledChannel
WhichStaysMuted`` and the mute-state tests). Here a connection may pipeline, but the bytes of
answers the client has not taken are bounded (``server.output``, "Bounded output").

Each scenario runs on the stock asyncio loop and on uvloop (what ``groupcoord serve`` runs when
uvloop is installed; before the bound, the Fetch flood took a uvloop broker from ~60 MB to
~900 MB in under a second and on to 12.5 GB). The stated bounds, on the growth of the broker's
peak resident memory (``VmHWM``) over what it was before the flood: less than one maximal 50 MB
answer when answers go from the segment files (measured: a few MB), and less than
:data:`FLOOD_RSS_BOUND`, four maximal answers, when they are built in memory (building one
down-converted Fetch v3 answer holds about three copies of it at its peak: read, converted,
framed; measured ~160 MB). Meanwhile another client's Heartbeats and OffsetCommits are
answered, each within the socket timeout.
"""

from __future__ import annotations

import socket
import struct
import threading
from pathlib import Path

import pytest

from flood_harness import (
    Flood,
    api_versions_frame,
    big_produce_frame,
    broker_process,
    create_topic,
    fetch_frame,
    fill_topic,
    probe,
)
from groupcoord.protocol.client import WireClient

LOOPS = [
    "asyncio",
    pytest.param(
        "uvloop",
        marks=pytest.mark.skipif(
            __import__("importlib").util.find_spec("uvloop") is None, reason="uvloop not installed"
        ),
    ),
]

MAX_ANSWER = 50 << 20
FLOOD_RSS_BOUND = 4 * MAX_ANSWER
PROBES = 40


def _read_answer_head(sock: socket.socket) -> tuple[int, int]:
    """(size, correlation id) of the next answer on a blocking socket."""
    head = b""
    while len(head) < 8:
        chunk = sock.recv(8 - len(head))
        assert chunk, "connection closed"
        head += chunk
    size, correlation = struct.unpack(">ii", head)
    return size, correlation


@pytest.mark.parametrize("version", [12, 3], ids=["sendfile", "in-memory"])
@pytest.mark.parametrize("loop", LOOPS)
def test_fetch_flood_without_reading_keeps_the_broker_within_its_bound(
    tmp_path: Path, loop: str, version: int
) -> None:
    """10,000 Fetch requests, each allowing 50 MB of a 60 MB partition, written and never read:
    at v12 the answers are file regions, at v3 down-converted bytes in memory."""
    with (
        broker_process(tmp_path, loop) as broker,
        WireClient("127.0.0.1", broker.port, timeout_s=30) as other,
    ):
        create_topic(other, "big")
        fill_topic(other, "big", 60 << 20)
        before = broker.status("VmRSS")
        bound = MAX_ANSWER if version >= 4 else FLOOD_RSS_BOUND
        flood = Flood(broker.port)
        try:
            for _ in range(PROBES):
                flood.push(lambda c: fetch_frame(c, "big", MAX_ANSWER, version), 10_000)
                probe(other, "g", "big")
            assert broker.status("VmHWM") - before < bound
            # the flood was being served: its first answer is a whole 50 MB Fetch answer
            flood.sock.setblocking(True)
            size, correlation = _read_answer_head(flood.sock)
            assert correlation == 1 and size > 40 << 20
        finally:
            flood.close()
        probe(other, "g", "big")
        assert broker.status("VmHWM") - before < bound


@pytest.mark.parametrize("loop", LOOPS)
def test_api_versions_flood_without_reading_keeps_the_broker_within_its_bound(
    tmp_path: Path, loop: str
) -> None:
    """ApiVersions written until the broker stops taking bytes, never read."""
    with (
        broker_process(tmp_path, loop) as broker,
        WireClient("127.0.0.1", broker.port, timeout_s=30) as other,
    ):
        create_topic(other, "t")
        before = broker.status("VmRSS")
        flood = Flood(broker.port)
        try:
            for _ in range(PROBES):
                flood.push(api_versions_frame, 10_000_000)
                probe(other, "g", "t")
            assert flood.sent_frames < 10_000_000  # the broker stopped reading it
            assert broker.status("VmHWM") - before < FLOOD_RSS_BOUND
            flood.sock.setblocking(True)
            assert _read_answer_head(flood.sock)[1] == 1
        finally:
            flood.close()


REQUEST_MAX = 104_857_600  # socket.request.max.bytes' default (Kafka's too)


@pytest.mark.parametrize("loop", LOOPS)
def test_concurrent_large_frames_are_bounded_by_queued_max_request_bytes(tmp_path: Path, loop: str) -> None:
    """Eight connections each send a 100 MB request at once. With ``queued.max.request.bytes``
    at its smallest allowed value (``socket.request.max.bytes``: KafkaConfig requires it to be
    at least that), the pool, which is not strict (``SimpleMemoryPool`` with ``strict = false``:
    an allocation succeeds while any memory is available), lets at most two frames be read at
    once; the others wait unread. A frame being read and handled costs up to about three times
    its size at its peak (the bytes received, the frame taken out of them, the record set the
    decoder copies out of the frame), so the broker's peak memory grows by less than three times
    (pool + one frame), ~615 MB: measured 410-465 MB, against ~1,040 MB without the bound. Every
    request is still answered (MESSAGE_TOO_LARGE: the record is over max.message.bytes)."""
    payload = big_produce_frame(1, "t", 100_000_000)
    assert len(payload) - 4 <= REQUEST_MAX
    with (
        broker_process(tmp_path, loop, f"queued.max.request.bytes={REQUEST_MAX}") as broker,
        WireClient("127.0.0.1", broker.port, timeout_s=30) as other,
    ):
        create_topic(other, "t")
        before = broker.status("VmRSS")
        answers: list[tuple[int, int]] = []

        def send() -> None:
            with socket.create_connection(("127.0.0.1", broker.port), timeout=120) as sock:
                sock.sendall(payload)
                answers.append(_read_answer_head(sock))

        threads = [threading.Thread(target=send) for _ in range(8)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(timeout=300)
        assert len(answers) == 8 and {corr for _, corr in answers} == {1}
        assert broker.status("VmHWM") - before < 3 * (REQUEST_MAX + len(payload))
        probe(other, "g", "t")
