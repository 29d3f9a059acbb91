"""One client connection: frames in, handlers called, responses out in request order.

Requests are decoded and handed to their handler as they arrive (pipelining is allowed);
each gets a slot in an ordered queue, and a response is written as soon as it and every
response before it are ready. A handler may mute the connection (stop reading) until its
own answer is out. Anything malformed — a bad size prefix, an oversized frame, an unknown
API, an unsupported version, a body that does not parse — closes this connection with one
log line; other connections and the server are untouched.

A handler may return a :class:`PreEncoded` body instead of a response entity: pieces written
in order after the response header, some of them file regions (Fetch record sets). Bytes go
through ``transport.write`` as usual; a region is sent with ``loop.sendfile`` (``os.sendfile``
on plain sockets) once everything before it has left: first with one ``os.sendfile`` call right
away when the transport has nothing buffered, and if the socket does not take it all, by a
sender task that waits for the socket. While that task runs the connection stops reading and
every later answer queues behind it, so responses keep their order and a slow reader still
holds the broker back. A region that comes up short (its file
was truncated meanwhile) closes the connection: the frame's size was already promised.
"""

from __future__ import annotations

import asyncio
import inspect
import io
import logging
import os
import struct
from collections import deque
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any

from kio.schema.api_versions.v0.response import ApiVersion as ApiKeysV0
from kio.schema.api_versions.v0.response import ApiVersionsResponse as ApiVersionsResponseV0
from kio.serial import entity_writer
from kio.static.primitive import i16

from groupcoord.errors import ErrorCode
from groupcoord.protocol.entities import err
from groupcoord.protocol.framing import FrameDecoder, FrameError, encode_frame
from groupcoord.protocol.headers import (
    MalformedRequestError,
    decode_request_header,
    encode_response_header,
    peek_request,
)
from groupcoord.protocol.registry import (
    API_VERSIONS_KEY,
    ApiMessages,
    UnknownApiError,
    UnsupportedVersionError,
)
from groupcoord.server.context import RequestContext
from groupcoord.server.dispatch import Dispatcher
from groupcoord.storage.log import FileRegion

log = logging.getLogger(__name__)

#: Stop reading while this many responses are still owed on one connection.
MAX_IN_FLIGHT = 256

_write_api_versions_v0 = entity_writer(ApiVersionsResponseV0)
_SIZE = struct.Struct(">i")

Piece = bytes | FileRegion


@dataclass(frozen=True, slots=True, kw_only=True)
class PreEncoded:
    """A response body encoded by its handler: pieces written in order after the response
    header. The connection owns the file regions from then on and closes each one once it is
    sent or dropped."""

    pieces: tuple[Piece, ...]


def _release(pieces: Iterable[Piece]) -> None:
    for piece in pieces:
        if isinstance(piece, FileRegion):
            piece.close()


def unsupported_api_versions_answer(correlation_id: int, ranges: list[tuple[int, int, int]]) -> bytes:
    """ApiVersions v0 UNSUPPORTED_VERSION answer listing our ranges (KIP-511), header v0."""
    body = ApiVersionsResponseV0(
        error_code=err(ErrorCode.UNSUPPORTED_VERSION),
        api_keys=tuple(
            ApiKeysV0(api_key=i16(key), min_version=i16(lo), max_version=i16(hi)) for key, lo, hi in ranges
        ),
    )
    buf = io.BytesIO()
    buf.write(correlation_id.to_bytes(4, "big", signed=True))
    _write_api_versions_v0(buf, body)
    return encode_frame(buf.getvalue())


class _Slot:
    __slots__ = ("data", "done")

    def __init__(self) -> None:
        self.data: bytes | list[Piece] | None = None
        self.done = False


class KafkaConnection(asyncio.Protocol):
    def __init__(
        self,
        dispatcher: Dispatcher[Any],
        connection_id: int,
        max_frame_bytes: int,
        on_close: Callable[[KafkaConnection], None] | None = None,
    ) -> None:
        self.dispatcher = dispatcher
        self.connection_id = connection_id
        self.client_host = "/unknown"
        self.peer = "?"
        self._decoder = FrameDecoder(max_frame_bytes)
        self._transport: asyncio.Transport | None = None
        self._pending: deque[_Slot] = deque()
        self._tasks: set[asyncio.Future[Any]] = set()
        self._muted_by: _Slot | None = None
        self._write_paused = False
        self._reading_paused = False
        self._closing = False
        self._draining = False
        self._on_close = on_close
        self._drained: asyncio.Future[None] | None = None
        #: pieces waiting behind a file region being sent (or about to be)
        self._out: deque[Piece] = deque()
        self._sender: asyncio.Task[None] | None = None
        self._sock_fd = -1

    # ------------------------------------------------------------------ asyncio.Protocol
    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        assert isinstance(transport, asyncio.Transport)
        self._transport = transport
        peer = transport.get_extra_info("peername")
        if isinstance(peer, tuple) and peer:
            self.client_host = f"/{peer[0]}"
            self.peer = f"{peer[0]}:{peer[1]}"
        sock = transport.get_extra_info("socket")
        if sock is not None and hasattr(os, "sendfile"):
            self._sock_fd = sock.fileno()

    def data_received(self, data: bytes) -> None:
        if self._closing or self._draining:
            return
        self._decoder.feed(data)
        self._pump()

    def connection_lost(self, exc: Exception | None) -> None:
        self._closing = True
        for task in list(self._tasks):
            task.cancel()
        self._tasks.clear()
        if self._sender is not None:
            self._sender.cancel()
        self._drop_output()
        if self._drained is not None and not self._drained.done():
            self._drained.set_result(None)
        if self._on_close is not None:
            self._on_close(self)

    def pause_writing(self) -> None:
        self._write_paused = True
        self._update_reading()

    def resume_writing(self) -> None:
        self._write_paused = False
        self._update_reading()
        self._pump()

    # ------------------------------------------------------------------ request path
    def _blocked(self) -> bool:
        return (
            self._closing
            or self._draining
            or self._muted_by is not None
            or self._write_paused
            or self._sender is not None
            or len(self._pending) >= MAX_IN_FLIGHT
        )

    def _update_reading(self) -> None:
        transport = self._transport
        if transport is None or self._closing:
            return
        want_pause = self._blocked()
        if want_pause and not self._reading_paused:
            transport.pause_reading()
            self._reading_paused = True
        elif not want_pause and self._reading_paused:
            transport.resume_reading()
            self._reading_paused = False

    def _pump(self) -> None:
        while not self._blocked():
            try:
                frame = self._decoder.next_frame()
            except FrameError as exc:
                self.abort(str(exc))
                return
            if frame is None:
                break
            self._handle_frame(frame)
        # Answers ready after this read leave together: one write for all of them.
        self._flush()
        self._update_reading()

    def _handle_frame(self, frame: bytes) -> None:
        registry = self.dispatcher.registry
        try:
            api_key, api_version, correlation_id = peek_request(frame)
            try:
                messages = registry.lookup(api_key, api_version)
            except UnsupportedVersionError:
                if api_key != API_VERSIONS_KEY:
                    raise
                slot = _Slot()
                slot.data = unsupported_api_versions_answer(correlation_id, registry.ranges())
                slot.done = True
                self._pending.append(slot)
                return
            header = decode_request_header(frame, messages.request_header_version)
            request = messages.decode_request(frame, header.body_offset)
        except (MalformedRequestError, UnknownApiError, UnsupportedVersionError) as exc:
            self.abort(str(exc))
            return
        except Exception as exc:  # a decoder bug must cost one connection, not the server
            self.abort(f"cannot decode request: {exc!r}", exc=exc)
            return

        ctx = RequestContext(
            connection_id=self.connection_id,
            client_id=header.client_id or "",
            client_host=self.client_host,
            api_key=api_key,
            api_version=api_version,
            correlation_id=correlation_id,
        )
        try:
            result = self.dispatcher.call(ctx, request)
        except Exception as exc:
            self.abort(f"handler for {messages.name} v{api_version} failed: {exc!r}", exc=exc)
            return

        if inspect.isawaitable(result):
            slot = _Slot()
            self._pending.append(slot)
            task = asyncio.ensure_future(result)
            self._tasks.add(task)
            task.add_done_callback(lambda t: self._on_done(t, slot, messages, correlation_id))
            if ctx.muted and not slot.done:
                self._muted_by = slot
        elif result is not None:
            slot = _Slot()
            slot.data = self._encode(messages, correlation_id, result)
            if slot.data is None:
                return
            slot.done = True
            self._pending.append(slot)

    def _encode(
        self, messages: ApiMessages, correlation_id: int, response: Any
    ) -> bytes | list[Piece] | None:
        try:
            if type(response) is PreEncoded:
                return _frame_pieces(messages, correlation_id, response)
            return messages.encode_response(correlation_id, response)
        except Exception as exc:
            if type(response) is PreEncoded:
                _release(response.pieces)
            self.abort(f"cannot encode {messages.name} v{messages.version} response: {exc!r}", exc=exc)
            return None

    def _on_done(
        self, task: asyncio.Future[Any], slot: _Slot, messages: ApiMessages, correlation_id: int
    ) -> None:
        self._tasks.discard(task)
        if task.cancelled():
            return
        exc = task.exception()
        if self._closing:
            if exc is None and type(task.result()) is PreEncoded:
                _release(task.result().pieces)
            return
        if exc is not None:
            self.abort(f"handler for {messages.name} v{messages.version} failed: {exc!r}", exc=exc)
            return
        response = task.result()
        if response is not None:
            data = self._encode(messages, correlation_id, response)
            if data is None:
                return
            slot.data = data
        slot.done = True
        if self._muted_by is slot:
            self._muted_by = None
        self._pump()

    def _flush(self) -> None:
        """Write every answer that is ready and has no unanswered request before it, in one write;
        from the first file region on, the pieces go to the sender task, in order."""
        transport = self._transport
        pending = self._pending
        out = self._out
        chunks: list[bytes] = []
        # While a region is being sent nothing may be written around it: everything queues.
        behind = self._sender is not None
        while pending and pending[0].done:
            data = pending.popleft().data
            if data is None:
                continue
            if isinstance(data, bytes):
                if behind or out:
                    out.append(data)
                else:
                    chunks.append(data)
                continue
            for piece in data:
                if not behind and not out and type(piece) is bytes:
                    chunks.append(piece)
                else:
                    out.append(piece)
        if self._closing or transport is None:
            self._drop_output()
            return
        if chunks:
            transport.write(chunks[0] if len(chunks) == 1 else b"".join(chunks))
        if out and self._sender is None:
            self._send_now(transport)
            if self._closing:
                return
            if out:
                self._sender = asyncio.ensure_future(self._send_out(transport))
        if self._draining and not pending and not out and self._sender is None:
            self._closing = True
            transport.close()

    def _send_now(self, transport: asyncio.Transport) -> None:
        """Send queued pieces as far as the socket takes them without waiting: a region goes
        straight to ``os.sendfile`` when nothing is buffered in the transport before it. What
        is left (a region the socket did not take whole, and everything after it) stays queued
        for the sender task."""
        out = self._out
        sock_fd = self._sock_fd
        while out:
            piece = out[0]
            if type(piece) is bytes:
                out.popleft()
                transport.write(piece)
                continue
            assert isinstance(piece, FileRegion)
            if sock_fd < 0 or transport.get_write_buffer_size() or transport.is_closing():
                return
            try:
                sent = os.sendfile(sock_fd, piece.fd, piece.position, piece.length) if piece.length else 0
            except (BlockingIOError, InterruptedError):
                return
            except OSError as exc:
                self.abort(f"cannot send a file region: {exc!r}")
                return
            if sent < piece.length:
                # the socket is full, or the file got shorter: the sender task waits or tells
                piece.advance(sent)
                return
            out.popleft()
            piece.close()

    async def _send_out(self, transport: asyncio.Transport) -> None:
        """Write the queued pieces in order, file regions with ``loop.sendfile``."""
        loop = asyncio.get_running_loop()
        out = self._out
        try:
            while out and not self._closing:
                piece = out.popleft()
                if type(piece) is bytes:
                    chunks = [piece]
                    while out and type(out[0]) is bytes:
                        chunks.append(out.popleft())  # type: ignore[arg-type]
                    transport.write(chunks[0] if len(chunks) == 1 else b"".join(chunks))
                    continue
                assert isinstance(piece, FileRegion)
                try:
                    await _send_region(loop, transport, piece)
                finally:
                    piece.close()
        except asyncio.CancelledError:
            raise
        except Exception as exc:
            self.abort(f"cannot send a file region: {exc!r}")
        finally:
            self._sender = None
            if self._closing:
                self._drop_output()
        if not self._closing:
            self._pump()

    def _drop_output(self) -> None:
        """Forget every answer not yet written, closing their file regions."""
        for slot in self._pending:
            if isinstance(slot.data, list):
                _release(slot.data)
        self._pending.clear()
        _release(self._out)
        self._out.clear()

    # ------------------------------------------------------------------ closing
    def abort(self, reason: str, exc: BaseException | None = None) -> None:
        """Close this connection; one log record (with the traceback when a handler failed)."""
        if self._closing:
            return
        if exc is None:
            log.warning("closing conn=%d peer=%s: %s", self.connection_id, self.peer, reason)
        else:
            log.error("closing conn=%d peer=%s: %s", self.connection_id, self.peer, reason, exc_info=exc)
        self._closing = True
        for task in list(self._tasks):
            task.cancel()
        if self._sender is not None:
            self._sender.cancel()
        self._drop_output()
        if self._transport is not None:
            self._transport.close()

    def drain(self) -> asyncio.Future[None]:
        """Stop reading, answer what is in flight, then close (graceful shutdown)."""
        loop = asyncio.get_running_loop()
        self._drained = loop.create_future()
        if self._closing:
            self._drained.set_result(None)
            return self._drained
        self._draining = True
        self._update_reading()
        self._flush()
        return self._drained

    def close_now(self) -> None:
        if self._transport is not None and not self._transport.is_closing():
            self._transport.abort()


def _frame_pieces(messages: ApiMessages, correlation_id: int, response: PreEncoded) -> bytes | list[Piece]:
    """Size prefix and response header in front of a pre-encoded body; plain bytes when the
    body holds no file region."""
    header = encode_response_header(correlation_id, messages.response_header_version)
    pieces = response.pieces
    size = len(header)
    regions = False
    for piece in pieces:
        if type(piece) is bytes:
            size += len(piece)
        else:
            assert isinstance(piece, FileRegion)
            size += piece.length
            regions = True
    head = _SIZE.pack(size) + header
    if not regions:
        return head + b"".join(pieces)  # type: ignore[arg-type]
    out: list[Piece] = [head, *pieces]
    return out


async def _send_region(
    loop: asyncio.AbstractEventLoop, transport: asyncio.Transport, region: FileRegion
) -> None:
    """All ``region.length`` bytes of the region, or an error (the frame cannot be shortened)."""
    if region.length == 0:
        return
    with open(region.fd, "rb", buffering=0, closefd=False) as file:
        try:
            sent = await loop.sendfile(transport, file, region.position, region.length)
        except RuntimeError:
            if transport.is_closing():
                raise
            # a transport without sendfile support (not a socket transport): copy
            data = region.read()
            sent = len(data)
            if sent == region.length:
                transport.write(data)
    if sent != region.length:
        raise OSError(f"file region shrank: {sent} of {region.length} bytes available")
