"""The package's raw wire client (protocol.client.WireClient) against a scripted peer on 127.0.0.1:
answers are taken in request order and an answer to another request is refused, as Kafka's
NetworkClient.correlate refuses a mismatched correlation id."""

from __future__ import annotations

import socket
import struct
import threading
from collections.abc import Iterator

import pytest

from groupcoord.protocol.client import WireClient, WireError
from groupcoord.protocol.headers import decode_request_header
from groupcoord.protocol.registry import load_messages

API_VERSIONS = 18


def _answer(correlation_id: int) -> bytes:
    """An ApiVersions v0 answer (error 0, no keys) with the given correlation id."""
    body = struct.pack(">ihi", correlation_id, 0, 0)
    return struct.pack(">i", len(body)) + body


@pytest.fixture
def peer() -> Iterator[tuple[int, list[int]]]:
    """A peer that answers each request with the correlation id it is told to use next
    (the request's own by default); yields (port, script of correlation id offsets)."""
    listener = socket.create_server(("127.0.0.1", 0))
    script: list[int] = []

    def serve() -> None:
        conn, _ = listener.accept()
        with conn:
            buf = b""
            while True:
                chunk = conn.recv(65536)
                if not chunk:
                    return
                buf += chunk
                while len(buf) >= 4 and len(buf) >= 4 + struct.unpack(">i", buf[:4])[0]:
                    size = struct.unpack(">i", buf[:4])[0]
                    frame, buf = buf[4 : 4 + size], buf[4 + size :]
                    header = decode_request_header(frame, 1)
                    shift = script.pop(0) if script else 0
                    conn.sendall(_answer(header.correlation_id + shift))

    thread = threading.Thread(target=serve, daemon=True)
    thread.start()
    try:
        yield listener.getsockname()[1], script
    finally:
        listener.close()
        thread.join(timeout=30)


def test_answers_come_back_in_request_order(peer: tuple[int, list[int]]) -> None:
    port, _script = peer
    with WireClient("127.0.0.1", port, client_id="t") as wire:
        first = wire.send(API_VERSIONS, 0)
        second = wire.send(API_VERSIONS, 0)
        assert (first, second) == (1, 2)
        assert int(wire.recv().error_code) == 0
        assert int(wire.recv().error_code) == 0
        assert not wire.pending


def test_an_answer_to_another_request_is_refused(peer: tuple[int, list[int]]) -> None:
    port, script = peer
    script.append(5)
    with WireClient("127.0.0.1", port, client_id="t") as wire:
        wire.send_entity(load_messages(API_VERSIONS, 0), load_messages(API_VERSIONS, 0).request_type())
        with pytest.raises(WireError, match="answer 6 to request 1"):
            wire.recv()


def test_a_refused_connection_names_the_address() -> None:
    listener = socket.create_server(("127.0.0.1", 0))
    port = listener.getsockname()[1]
    listener.close()
    with pytest.raises(WireError, match=f"cannot connect to 127.0.0.1:{port}"):
        WireClient("127.0.0.1", port)
