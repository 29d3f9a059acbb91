"""A connection's answers going out: in request order, bounded in bytes, file regions by sendfile.

:class:`AnswerOutput` is the output half of a connection (``server.connection.KafkaConnection``
is the other, the requests coming in and the order they are handled in): the queue of answers
owed, each a slot until its handler's awaitable is done, written strictly in request order in
one write per batch, and the sender task for file regions. The connection reads only while
:meth:`AnswerOutput._output_over` allows, and is told to go on (``_pump``) when the output
moves.

Bounded output. Kafka's network layer holds one answer per connection (the channel is muted
until it is sent), so a client that does not read stops being read. Here pipelining keeps up to
``MAX_IN_FLIGHT`` answers owed, so the bound is on bytes instead: the connection counts the
bytes of its answers that the client has not taken yet — ready answers still queued, pieces
waiting behind a file region, a region by the bytes it will send, and the transport's write
buffer — and stops handing frames to handlers (and reading) above ``OUTPUT_HIGH_WATER``, until
that count is back at ``OUTPUT_LOW_WATER`` or below. Nothing polls: the count falls when the
transport drains (asyncio's ``pause_writing``/``resume_writing``) or the sender task moves on,
and those are the points that re-check it. Every send path waits for the transport: the sender
task writes a piece only while the transport is not paused, and a region that cannot go with
``loop.sendfile`` (uvloop has none) is sent with ``os.sendfile`` when the transport's buffer
is empty, else copied ``COPY_CHUNK`` bytes at a time. A client that writes requests and never
reads therefore costs this connection at most about one high-water mark plus one answer, on
every loop (``tests/server/test_flow_control_process.py`` measures it).

File regions. A handler may return a :class:`PreEncoded` body instead of a response entity:
pieces written in order after the response header, some of them file regions (Fetch record
sets). Bytes go through ``transport.write`` as usual; a region is sent with ``loop.sendfile``
(``os.sendfile`` on plain sockets) once everything before it has left: first with one
``os.sendfile`` call right away when the transport has nothing buffered, and if the socket does
not take it all, by a sender task that waits for the socket. While that task runs the
connection stops reading and every later answer queues behind it, so responses keep their order
and a slow reader still holds the broker back. A region that comes up short (its file was
truncated meanwhile) closes the connection: the frame's size was already promised.
"""

from __future__ import annotations

import asyncio
import os
import struct
from collections import deque
from collections.abc import Callable, Iterable

from groupcoord.handling import FileRegion, Piece, PreEncoded
from groupcoord.protocol.headers import encode_response_header
from groupcoord.protocol.registry import ApiMessages

#: Output flow control (see "Bounded output" above): a connection whose answers not yet taken by
#: the client (ready answers still queued here, file regions by the bytes they will send, and
#: the transport's write buffer) exceed OUTPUT_HIGH_WATER bytes handles no further request until
#: they are back at or below OUTPUT_LOW_WATER.
OUTPUT_HIGH_WATER = 4 * 1024 * 1024
OUTPUT_LOW_WATER = 1024 * 1024
#: A file region copied through the transport (a loop without ``loop.sendfile``) goes in pieces
#: of at most this many bytes, each written once the transport takes more.
COPY_CHUNK = 256 * 1024

_SIZE = struct.Struct(">i")
#: size prefix and response header v0 (correlation id) / v1 (plus no tagged fields)
_HEAD_V0 = struct.Struct(">ii")
_HEAD_V1 = struct.Struct(">iiB")


def release_pieces(pieces: Iterable[Piece]) -> None:
    for piece in pieces:
        if isinstance(piece, FileRegion):
            piece.close()


class Traffic:
    """One server's byte and connection totals, added to on its event loop (read by the
    metrics endpoint: a reader on another thread sees each total at some recent value)."""

    __slots__ = ("accepted", "bytes_in", "bytes_out", "refused")

    def __init__(self) -> None:
        self.bytes_in = 0  #: bytes read from clients
        self.bytes_out = 0  #: bytes of answers handed to the transport (file regions included)
        self.accepted = 0  #: connections accepted
        self.refused = 0  #: connections closed at once: over max.connections.per.ip, or past the backlog


class WriteGate:
    """asyncio's write flow control as something to await: the protocol's ``pause_writing`` and
    ``resume_writing`` call :meth:`pause` and :meth:`resume`; :meth:`wait` returns once the
    transport takes more (at once when it is not paused). :meth:`resume` is also called when
    the connection is lost, so no sender waits forever."""

    __slots__ = ("_waiter", "paused")

    def __init__(self) -> None:
        self.paused = False
        self._waiter: asyncio.Future[None] | None = None

    def pause(self) -> None:
        self.paused = True

    def resume(self) -> None:
        self.paused = False
        waiter, self._waiter = self._waiter, None
        if waiter is not None and not waiter.done():
            waiter.set_result(None)

    async def wait(self) -> None:
        while self.paused:
            if self._waiter is None:
                self._waiter = asyncio.get_running_loop().create_future()
            await self._waiter


class AnswerSlot:
    __slots__ = ("barrier", "data", "done")

    def __init__(self) -> None:
        self.data: bytes | list[Piece] | None = None
        self.done = False
        #: while unanswered, no later request may be handled (no overlap class, or muted)
        self.barrier = False


def ready(entry: AnswerSlot | bytes | list[Piece]) -> bool:
    """Whether an entry of the answers owed is ready to be written."""
    return entry.done if isinstance(entry, AnswerSlot) else True


class AnswerOutput(asyncio.Protocol):
    """The output half of a connection: its answers owed, written in request order, bounded in
    bytes. The connection above fills :attr:`_pending` (an :class:`AnswerSlot` per awaited
    answer, the encoded answer for one ready at once, counted with :meth:`_owe`) and calls
    :meth:`_flush`; it supplies :meth:`_pump` (go on reading and handling), :meth:`_update_reading`
    and :meth:`abort`."""

    def __init__(
        self,
        traffic: Traffic | None,
        now_ms: Callable[[], int],
        output_high_water: int,
        output_low_water: int,
    ) -> None:
        self._high_water = output_high_water
        self._low_water = min(output_low_water, output_high_water)
        self._traffic = traffic if traffic is not None else Traffic()
        self._transport: asyncio.Transport | None = None
        self._closing = False
        self._draining = False
        #: answers owed, in request order: a slot per awaited answer, the encoded answer itself
        #: for one that was ready at once
        self._pending: deque[AnswerSlot | bytes | list[Piece]] = deque()
        #: the transport's write flow control (pause_writing / resume_writing)
        self._gate = WriteGate()
        #: bytes of ready answers not yet handed to the transport (file regions by what they
        #: will still send): with the transport's buffer, what OUTPUT_HIGH_WATER bounds
        self._owed_bytes = 0
        #: stopped for output above OUTPUT_HIGH_WATER, until back at OUTPUT_LOW_WATER
        self._output_full = False
        #: owed bytes up to which the output cannot be over the high-water mark while the
        #: transport is not paused, so _output_over need not ask the transport (see
        #: _learn_transport_limits); -1 (always ask) until it is learnt
        self._owed_fast_limit = -1
        #: pieces waiting behind a file region being sent (or about to be)
        self._out: deque[Piece] = deque()
        self._sender: asyncio.Task[None] | None = None
        #: the socket for ``os.sendfile`` (-1: none, or TLS: regions go through the transport)
        self._sock_fd = -1
        self._now_ms = now_ms
        #: when bytes last came in or went out (the clock's ms), for connections.max.idle.ms
        self.last_active_ms = now_ms()

    # ------------------------------------------------------------------ supplied by the connection
    def _pump(self) -> None:
        raise NotImplementedError

    def _update_reading(self) -> None:
        raise NotImplementedError

    def abort(self, reason: str, exc: BaseException | None = None) -> None:
        raise NotImplementedError

    # ------------------------------------------------------------------ output flow control
    def pause_writing(self) -> None:
        self._gate.pause()
        self._update_reading()

    def resume_writing(self) -> None:
        self._gate.resume()
        self._update_reading()
        self._pump()

    def _learn_transport_limits(self, transport: asyncio.BaseTransport) -> None:
        """An unpaused transport buffers at most its own high-water mark: asyncio (and uvloop, and
        our TLS transport, which forwards the raw one's) pauses the protocol once a write leaves
        more than that. Below ``OUTPUT_HIGH_WATER`` minus that mark, owed bytes alone tell that
        the output is not over, without a call into the transport on every request."""
        try:
            transport_high = int(transport.get_write_buffer_limits()[1])  # type: ignore[attr-defined]
        except (AttributeError, NotImplementedError):
            return
        self._owed_fast_limit = self._high_water - transport_high

    def _output_over(self) -> bool:
        """Whether answers not yet taken by the client hold this connection back: above the
        high-water mark it stops, and it goes on once they are at the low-water mark or below."""
        transport = self._transport
        backlog = self._owed_bytes + (transport.get_write_buffer_size() if transport is not None else 0)
        if self._output_full:
            if backlog <= self._low_water:
                self._output_full = False
        elif backlog > self._high_water:
            self._output_full = True
        return self._output_full

    def _owe(self, data: bytes | list[Piece]) -> None:
        """Count a ready answer as owed until it is handed to the transport."""
        if isinstance(data, bytes):
            self._owed_bytes += len(data)
        else:
            for piece in data:
                self._owed_bytes += len(piece) if isinstance(piece, bytes) else piece.length

    # ------------------------------------------------------------------ writing
    def _flush(self) -> None:
        """Write every answer that is ready and has no unanswered request before it, in one write;
        from the first file region on, the pieces go to the sender task, in order."""
        transport = self._transport
        pending = self._pending
        out = self._out
        chunks: list[bytes] = []
        # While a region is being sent nothing may be written around it: everything queues.
        behind = self._sender is not None
        size = 0
        written = 0
        while pending:
            head = pending[0]
            if isinstance(head, AnswerSlot):
                if not head.done:
                    break
                data = head.data
            else:
                data = head
            pending.popleft()
            if data is None:
                continue
            if isinstance(data, bytes):
                size += len(data)
                if behind or out:
                    out.append(data)
                else:
                    chunks.append(data)
                    written += len(data)
                continue
            for piece in data:
                size += len(piece) if isinstance(piece, bytes) else piece.length
                if not behind and not out and type(piece) is bytes:
                    chunks.append(piece)
                    written += len(piece)
                else:
                    out.append(piece)
        if self._closing or transport is None:
            self._drop_output()
            return
        self._traffic.bytes_out += size
        self._owed_bytes -= written
        if chunks:
            transport.write(chunks[0] if len(chunks) == 1 else b"".join(chunks))
            self.last_active_ms = self._now_ms()
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
                self._owed_bytes -= len(piece)
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
            self._owed_bytes -= sent
            if sent < piece.length:
                # the socket is full, or the file got shorter: the sender task waits or tells
                piece.advance(sent)
                return
            out.popleft()
            piece.close()

    async def _send_out(self, transport: asyncio.Transport) -> None:
        """Write the queued pieces in order, each once the transport takes more, file regions
        with ``loop.sendfile`` (or :func:`send_region`'s fallbacks)."""
        loop = asyncio.get_running_loop()
        out = self._out
        gate = self._gate
        try:
            while out and not self._closing:
                await gate.wait()
                if self._closing:
                    break
                piece = out.popleft()
                if type(piece) is bytes:
                    chunks = [piece]
                    while out and type(out[0]) is bytes:
                        chunks.append(out.popleft())  # type: ignore[arg-type]
                    data = chunks[0] if len(chunks) == 1 else b"".join(chunks)
                    transport.write(data)
                    self._owed_bytes -= len(data)
                    continue
                assert isinstance(piece, FileRegion)
                owed = piece.length
                try:
                    await send_region(loop, transport, piece, gate, self._sock_fd)
                    self._owed_bytes -= owed
                finally:
                    piece.close()
        except asyncio.CancelledError:
            raise
        except Exception as exc:
            self.abort(f"cannot send a file region: {exc!r}")
        finally:
            self._sender = None
            self.last_active_ms = self._now_ms()
            if self._closing:
                self._drop_output()
        if not self._closing:
            self._pump()

    def _drop_output(self) -> None:
        """Forget every answer not yet written, closing their file regions."""
        for entry in self._pending:
            data = entry.data if isinstance(entry, AnswerSlot) else entry
            if isinstance(data, list):
                release_pieces(data)
        self._pending.clear()
        release_pieces(self._out)
        self._out.clear()
        self._owed_bytes = 0


def frame_pieces(messages: ApiMessages, correlation_id: int, response: PreEncoded) -> bytes | list[Piece]:
    """Size prefix and response header in front of a pre-encoded body; plain bytes when the
    body holds no file region."""
    pieces = response.pieces
    if len(pieces) == 1 and type(pieces[0]) is bytes:  # one encoded body: most answers
        body = pieces[0]
        if messages.response_header_version == 1:
            return _HEAD_V1.pack(len(body) + 5, correlation_id, 0) + body
        return _HEAD_V0.pack(len(body) + 4, correlation_id) + body
    header = encode_response_header(correlation_id, messages.response_header_version)
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


async def send_region(
    loop: asyncio.AbstractEventLoop,
    transport: asyncio.Transport,
    region: FileRegion,
    gate: WriteGate,
    sock_fd: int = -1,
) -> None:
    """All ``region.length`` bytes of the region, or an error (the frame cannot be shortened).

    ``loop.sendfile`` where the loop has it (it waits for the transport itself). Otherwise — a
    transport without sendfile support, or a loop without ``loop.sendfile`` (uvloop inherits
    AbstractEventLoop's NotImplementedError, a RuntimeError) — the region goes piece by piece,
    each once ``gate`` says the transport takes more: straight from the file with
    ``os.sendfile`` on ``sock_fd`` while the transport has nothing buffered, else copied
    ``COPY_CHUNK`` bytes at a time. So at most about one chunk and the transport's high-water
    mark of the region are ever in memory, however large it is.
    """
    if region.length == 0:
        return
    with open(region.fd, "rb", buffering=0, closefd=False) as file:
        try:
            sent = await loop.sendfile(transport, file, region.position, region.length)
        except RuntimeError:
            if transport.is_closing():
                raise
            await _send_region_in_pieces(transport, region, gate, sock_fd)
            return
    if sent != region.length:
        raise OSError(f"file region shrank: {sent} of {region.length} bytes available")


async def _send_region_in_pieces(
    transport: asyncio.Transport, region: FileRegion, gate: WriteGate, sock_fd: int
) -> None:
    total = region.length
    while region.length:
        await gate.wait()
        if transport.is_closing():
            raise ConnectionResetError("connection closed while sending a file region")
        if sock_fd >= 0 and not transport.get_write_buffer_size():
            try:
                sent = os.sendfile(sock_fd, region.fd, region.position, region.length)
            except (BlockingIOError, InterruptedError):
                sent = -1  # the socket is full: queue a chunk in the transport, which waits for it
            if sent > 0:
                region.advance(sent)
                continue
            if sent == 0:
                raise OSError(f"file region shrank: {total - region.length} of {total} bytes available")
        chunk = os.pread(region.fd, min(COPY_CHUNK, region.length), region.position)
        if not chunk:
            raise OSError(f"file region shrank: {total - region.length} of {total} bytes available")
        transport.write(chunk)
        region.advance(len(chunk))
