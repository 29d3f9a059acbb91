"""Raw wire clients over the one request codec (:mod:`groupcoord.protocol.codec`).

The broker never needs these; the admin tool, tests and benchmarks that talk to the broker over
a raw socket do (:class:`WireClient`, :class:`AsyncWireClient`, and for load generators
:class:`PipelinedWireClient`).
"""

from __future__ import annotations

import asyncio
import collections
import selectors
import socket
import struct
import typing
from typing import Any

from groupcoord.protocol.codec import (
    build_request,
    decode_response,
    encode_request,
    peek_correlation_id,
    request_messages,
)
from groupcoord.protocol.framing import FrameDecoder
from groupcoord.protocol.registry import ApiMessages

_SIZE = struct.Struct(">i")


class WireError(ConnectionError):
    """The connection failed, was closed by the broker, or answered out of order."""


class WireClient:
    """One blocking connection to a broker: the one raw wire client of the package.

    Requests go out by API key and version (or as :class:`ApiMessages` and an entity); the broker
    answers in request order, so the requests sent and not yet received form a FIFO, and
    :meth:`recv` checks each answer's correlation id against the oldest one. Used by the admin
    tool, the benchmarks and the tests that drive the wire by hand.

    Error handling: every socket error, a closed connection or an answer to another request
    raises :class:`WireError` naming the broker's address.
    """

    def __init__(
        self, host: str, port: int, *, client_id: str | None = "groupcoord", timeout_s: float = 15.0
    ) -> None:
        self.address = f"{host}:{port}"
        try:
            self.sock = socket.create_connection((host, port), timeout=timeout_s)
        except OSError as exc:
            raise WireError(f"cannot connect to {self.address}: {exc}") from exc
        self.client_id = client_id
        self.correlation = 0
        self.pending: collections.deque[tuple[int, ApiMessages]] = collections.deque()

    def __enter__(self) -> WireClient:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def send_entity(self, messages: ApiMessages, request: Any, *, answered: bool = True) -> int:
        """Send ``request`` (an entity of ``messages.request_type``); its correlation id.

        ``answered=False`` for a request the broker does not answer (a Produce with acks=0)."""
        self.correlation += 1
        frame = encode_request(messages, self.correlation, request, self.client_id)
        try:
            self.sock.sendall(frame)
        except OSError as exc:
            raise WireError(f"{self.address}: {exc}") from exc
        if answered:
            self.pending.append((self.correlation, messages))
        return self.correlation

    def send(self, api_key: int, version: int, **fields: Any) -> int:
        """Send a request built from plain values (see :func:`build_request`)."""
        messages = request_messages(api_key, version)
        return self.send_entity(messages, build_request(messages.request_type, fields))

    def recv(self) -> Any:
        """The answer to the oldest request still pending on this connection."""
        messages = self.pending[0][1]
        return decode_response(messages, self.recv_frame())[1]

    def recv_frame(self) -> bytes:
        """The answer frame (size prefix removed, correlation id checked) to the oldest request
        still pending on this connection, undecoded."""
        correlation, _ = self.pending.popleft()
        (size,) = _SIZE.unpack(self._read(4))
        frame = self._read(size)
        got = peek_correlation_id(frame)
        if got != correlation:
            raise WireError(f"{self.address}: answer {got} to request {correlation}")
        return frame

    def call_entity(self, messages: ApiMessages, request: Any) -> Any:
        self.send_entity(messages, request)
        return self.recv()

    def call(self, api_key: int, version: int, **fields: Any) -> Any:
        self.send(api_key, version, **fields)
        return self.recv()

    def readable(self, timeout_s: float) -> bool:
        """Whether bytes (or the end of the stream) arrive within ``timeout_s``. Through a
        selector (poll/epoll), not ``select.select``, which refuses descriptors above 1023: a
        process holding many partitions' files (three brokers in one test process) has them."""
        with selectors.DefaultSelector() as sel:
            sel.register(self.sock, selectors.EVENT_READ)
            return bool(sel.select(timeout_s))

    def close(self) -> None:
        self.sock.close()

    def _read(self, n: int) -> bytes:
        buf = bytearray()
        while len(buf) < n:
            try:
                chunk = self.sock.recv(n - len(buf))
            except OSError as exc:
                raise WireError(f"{self.address}: {exc}") from exc
            if not chunk:
                raise WireError(f"{self.address} closed the connection")
            buf += chunk
        return bytes(buf)


class AsyncWireClient:
    """:class:`WireClient` over asyncio streams, for tests and benchmarks that run a server in the
    same event loop. Same FIFO and correlation check."""

    def __init__(
        self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter, *, client_id: str | None
    ) -> None:
        self.reader = reader
        self.writer = writer
        self.client_id = client_id
        self.correlation = 0
        self.pending: collections.deque[tuple[int, ApiMessages]] = collections.deque()

    @classmethod
    async def connect(cls, host: str, port: int, *, client_id: str | None = "groupcoord") -> AsyncWireClient:
        reader, writer = await asyncio.open_connection(host, port)
        return cls(reader, writer, client_id=client_id)

    async def send_entity(self, messages: ApiMessages, request: Any, *, answered: bool = True) -> int:
        self.correlation += 1
        self.writer.write(encode_request(messages, self.correlation, request, self.client_id))
        await self.writer.drain()
        if answered:
            self.pending.append((self.correlation, messages))
        return self.correlation

    async def send(self, api_key: int, version: int, **fields: Any) -> int:
        messages = request_messages(api_key, version)
        return await self.send_entity(messages, build_request(messages.request_type, fields))

    async def recv(self) -> Any:
        """The answer to the oldest request still pending on this connection."""
        return (await self.recv_with_id())[1]

    async def recv_with_id(self) -> tuple[int, Any]:
        """(correlation id, answer) of the oldest request still pending on this connection."""
        correlation, messages = self.pending.popleft()
        (size,) = _SIZE.unpack(await self.reader.readexactly(4))
        got, response = decode_response(messages, await self.reader.readexactly(size))
        if got != correlation:
            raise WireError(f"answer {got} to request {correlation}")
        return got, response

    async def call_entity(self, messages: ApiMessages, request: Any) -> Any:
        await self.send_entity(messages, request)
        return await self.recv()

    async def call(self, api_key: int, version: int, **fields: Any) -> Any:
        await self.send(api_key, version, **fields)
        return await self.recv()

    def close(self) -> None:
        self.writer.close()


class PipelinedWireClient(asyncio.Protocol):
    """A connection for load generators: many requests in flight from many coroutines at once,
    each answer matched to its request by correlation id (not by order).

    :meth:`send_frame` writes a complete, pre-encoded frame and returns a future of the answer's
    frame (size prefix removed); :meth:`call` encodes a request, sends it and decodes the answer.
    Open with :meth:`open`. Set ``client_id`` on a subclass to change the header's client id.

    Error handling: when the connection is lost, every pending future fails with
    ``ConnectionError``; a frame sent on a closed connection fails at once.
    """

    client_id: str | None = "groupcoord"

    def __init__(self) -> None:
        self.decoder = FrameDecoder(1 << 30)
        self.waiting: dict[int, asyncio.Future[bytes]] = {}
        self.next_corr = 1
        self.transport: asyncio.Transport | None = None
        self.closed: asyncio.Future[None] = asyncio.get_running_loop().create_future()

    @classmethod
    async def open(cls, host: str, port: int) -> typing.Self:
        loop = asyncio.get_running_loop()
        _, conn = await loop.create_connection(cls, host, port)
        return conn

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        assert isinstance(transport, asyncio.Transport)
        self.transport = transport

    def data_received(self, data: bytes) -> None:
        self.decoder.feed(data)
        while (frame := self.decoder.next_frame()) is not None:
            (corr,) = _SIZE.unpack_from(frame, 0)
            fut = self.waiting.pop(corr, None)
            if fut is not None and not fut.done():
                fut.set_result(frame)

    def connection_lost(self, exc: Exception | None) -> None:
        err = ConnectionError(f"connection lost: {exc!r}")
        for fut in self.waiting.values():
            if not fut.done():
                fut.set_exception(err)
        self.waiting.clear()
        if not self.closed.done():
            self.closed.set_result(None)

    def send_frame(self, frame: bytearray | bytes, corr: int) -> asyncio.Future[bytes]:
        """Send a complete request frame whose correlation id is ``corr``."""
        fut: asyncio.Future[bytes] = asyncio.get_running_loop().create_future()
        if self.transport is None or self.transport.is_closing():
            fut.set_exception(ConnectionError("connection closed"))
            return fut
        self.waiting[corr] = fut
        self.transport.write(frame)
        return fut

    async def call(self, messages: ApiMessages, request: Any) -> Any:
        corr = self.next_corr
        self.next_corr += 1
        frame = await self.send_frame(encode_request(messages, corr, request, client_id=self.client_id), corr)
        return decode_response(messages, frame)[1]

    def close(self) -> None:
        if self.transport is not None:
            self.transport.close()
