"""One client connection: frames in, handlers called, responses out in request order.

Ordering rule (read-your-writes on one connection). Kafka reads one request per connection
at a time: ``SocketServer.Processor`` mutes the channel (``KafkaChannel.mute``) as soon as a
whole request has been read from it, and unmutes it only once that request's response has been
sent (``Processor.processCompletedSends`` -> ``tryUnmuteChannel``). Every request therefore sees
the effects of every earlier request on its connection, and answers leave in request order.
Here:

* A request is handed to its handler only when every earlier request on this connection is
  answered, i.e. its answer is ready. A handler that answers at once (most do) costs nothing:
  the next frame is handled right after it. A handler that returns a pending awaitable (an
  OffsetCommit waiting for its write to be durable, a parked JoinGroup or SyncGroup, a Fetch in
  long-poll) makes the connection stop reading until that awaitable is done, so an OffsetFetch
  pipelined behind an OffsetCommit reads the committed offset, as on Kafka.
* One exception keeps what pipelining gains where nobody can tell the difference: a
  request of a route added with an ``overlap`` class (see ``server.dispatch``: Produce, and
  OffsetCommit) is handed to its handler while earlier requests are still pending, provided
  every one of those is of the same class. For Produce, the handler applies all its effects
  before it returns (the append, readable at the log end at once, and the producer's sequence
  state) and its awaitable only waits for the fsync; for OffsetCommit, the handler validates
  against membership and generation, which no commit changes, and its awaitable waits for its
  own write. A later request of the run therefore sees exactly the state it would see on Kafka,
  and an earlier answer does not depend on a later request (a failed write fails the requests
  whose write it was, whatever came after). What is gained: N pipelined acks=-1 produces, or N
  pipelined commits, share fsync rounds instead of waiting for N rounds one after the other.
  A frame of any other class that arrives behind such a run is held, and the connection stops
  reading, until the whole run is answered; so an OffsetFetch behind commits sees all of them.
* ``RequestContext.mute`` makes a request a barrier even for an overlapping route.
* Answers are written strictly in request order, whatever order they become ready in.

Framing and resources. Anything malformed — a bad size prefix, a frame larger than
``socket.request.max.bytes``, an unknown API, an unsupported version, a body that does not
parse — closes this connection with one log line; other connections and the server are
untouched. Memory for a request is never allocated from its size prefix: a half-received frame
holds only the bytes that actually arrived, and the connection reads no more than the frame in
progress (and one socket read) while it is not handing frames to handlers. A connection that
owes no answer and has had no bytes in or out for longer than ``connections.max.idle.ms`` is
closed by the server's sweep (``server.app``; Kafka's ``Selector`` idle expiry), so stalled
half-frames cannot hold memory indefinitely.

Answers going out — their order, the byte bound on them ("Bounded output") and file regions
sent with ``os.sendfile`` — are :class:`~groupcoord.server.output.AnswerOutput`'s, this class's base
(``server.output``).

Fairness. One connection has at most ``FRAMES_PER_TURN`` frames handed to handlers per turn of
the event loop; the rest stay buffered (and the connection unread) until the next turn, after the
other connections' events, so a client that pipelines requests as fast as they are answered adds
a bounded delay to everyone else (``bench/fairness.py``).

Limits and quotas, each in methods of their own below: ``queued.max.request.bytes`` (a frame's
size is taken from the broker-wide ``server.memory_pool`` when its prefix arrives; while the pool
refuses, the connection waits unread), the acceptor of ``server.connection_quotas`` (a connection
reads nothing until it is admitted), and client quotas (``server.client_quotas``: an answer over
its quota carries the throttle time and the connection reads nothing more for that long).
"""

from __future__ import annotations

import asyncio
import dataclasses
import datetime
import inspect
import io
import logging
import os
import struct
import time
from collections.abc import Callable
from typing import Any, Final, cast

from kio.schema.api_versions.v0.response import ApiVersion as ApiKeysV0
from kio.schema.api_versions.v0.response import ApiVersionsResponse as ApiVersionsResponseV0
from kio.serial import entity_writer
from kio.static.primitive import i16

from groupcoord.errors import ErrorCode
from groupcoord.handling import Later, Piece, PreEncoded, RequestContext
from groupcoord.protocol.entities import err
from groupcoord.protocol.fetch_response import encode_fetch_body
from groupcoord.protocol.framing import FrameDecoder, FrameError, encode_frame
from groupcoord.protocol.headers import (
    MalformedRequestError,
    peek_request,
    read_request_header,
)
from groupcoord.protocol.registry import (
    API_VERSIONS_KEY,
    ApiMessages,
    UnknownApiError,
    UnsupportedVersionError,
)
from groupcoord.server.client_quotas import STRICT_SINCE, ClientQuotas, quota_user
from groupcoord.server.dispatch import Dispatcher
from groupcoord.server.memory_pool import MemoryPool
from groupcoord.server.output import (
    OUTPUT_HIGH_WATER,
    OUTPUT_LOW_WATER,
    AnswerOutput,
    AnswerSlot,
    Traffic,
    frame_pieces,
    ready,
    release_pieces,
)
from groupcoord.server.session import CLOSE, HANDLE, Session

#: ``server.session``'s verdicts the request path tests, as constants the compiled build inlines
_HANDLE: Final = 0
_CLOSE: Final = 3
assert (_HANDLE, _CLOSE) == (HANDLE, CLOSE)

log = logging.getLogger(__name__)

#: Stop reading while this many responses are still owed on one connection.
MAX_IN_FLIGHT = 256

#: Fairness: at most this many frames of one connection are handed to handlers in one turn of
#: the event loop; the rest wait for the next turn, after the other connections' events.
FRAMES_PER_TURN = 16

_write_api_versions_v0 = entity_writer(ApiVersionsResponseV0)
_SIZE = struct.Struct(">i")


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


class KafkaConnection(AnswerOutput):
    def __init__(
        self,
        dispatcher: Dispatcher[Any],
        connection_id: int,
        max_frame_bytes: int,
        on_close: Callable[[KafkaConnection], None] | None = None,
        now_ms: Callable[[], int] | None = None,
        traffic: Traffic | None = None,
        output_high_water: int = OUTPUT_HIGH_WATER,
        output_low_water: int = OUTPUT_LOW_WATER,
        memory_pool: MemoryPool | None = None,
        on_made: Callable[[KafkaConnection], None] | None = None,
        client_quotas: ClientQuotas | None = None,
        session: Session | None = None,
    ) -> None:
        super().__init__(traffic, now_ms or _monotonic_ms, output_high_water, output_low_water)
        self.dispatcher = dispatcher
        #: the listener, principal and SASL state of this connection (``server.session``)
        self.session = session if session is not None else Session()
        self.session.close_after_answers = self.close_after_answers
        # Fixed for the connection's life (its listener's frozen ListenerSecurity), so read once,
        # not from the interpreted Session on every request; the principal is read per request
        # (SASL and re-authentication change it).
        self._listener = self.session.listener
        self._node_id = self.session.security.node_id
        #: queued.max.request.bytes (server.memory_pool): the frame at the head of the decoder
        #: holds ``_reserved`` bytes of it, a held frame ``_held_reserved``
        self._pool = memory_pool
        self._reserved = 0
        self._held_reserved = 0
        self._waiting_memory = False
        self.connection_id = connection_id
        self.client_host = "/unknown"
        self.peer = "?"
        self._decoder = FrameDecoder(max_frame_bytes)
        self._tasks: set[asyncio.Future[Any] | Later] = set()
        #: requests handed to their handler whose answer is not ready yet ...
        self._unanswered = 0
        #: the overlap class of the run of requests unanswered now (None: no such run)
        self._run_class: str | None = None
        #: ... and how many of them forbid handling any later request meanwhile
        self._barriers = 0
        #: a frame read behind a run of overlapping requests, not itself overlapping: handled
        #: once the run is answered
        self._held: bytes | None = None
        self._reading_paused = False
        #: a _pump is due at the end of this batch of completed answers (see _on_done)
        self._pump_scheduled = False
        # The loop the connection runs on, taken once: asyncio.get_running_loop() makes a getpid
        # system call each time (its fork check), and an awaited answer needed it per batch.
        self._loop: asyncio.AbstractEventLoop | None = None
        self._on_close = on_close
        #: the server's acceptor (connection quotas): told when the connection is made; until it
        #: calls :meth:`admit`, the connection reads nothing (as if still in the listen backlog)
        self._on_made = on_made
        self.admitted = on_made is None
        #: counted in the connection quotas' per-address counts (the acceptor's business)
        self.counted = False
        #: client quotas (server.client_quotas) and the channel mute of a throttle; the user they
        #: apply to is the session principal's name (:attr:`user`)
        self._quotas = client_quotas
        self._throttled = False
        self._throttle_until = 0.0
        self._throttle_handle: asyncio.TimerHandle | None = None
        #: fairness: frames handled in this turn of the loop, and whether the rest wait for the next
        self._turn_frames = 0
        self._yielding = False
        #: an awaited answer's request, for its quota accounting once it is ready
        self._quota_of: dict[asyncio.Future[Any] | Later, tuple[RequestContext, int, float]] = {}
        self._drained: asyncio.Future[None] | None = None

    @property
    def user(self) -> str:
        """The user client quotas apply to: the name of the session's principal (ANONYMOUS until
        TLS or SASL authenticates the connection)."""
        return quota_user(self.session.principal)

    @property
    def closed(self) -> bool:
        """True once this connection has given up its socket (closed or closing)."""
        transport = self._transport
        return self._closing and (transport is None or transport.is_closing())

    @property
    def buffered_bytes(self) -> int:
        """Bytes received and not yet handed to a handler (a frame in progress, mostly)."""
        return self._decoder.buffered + (len(self._held) if self._held is not None else 0)

    def idle_since(self) -> int | None:
        """When this connection became idle (the clock's ms), or None while it is not idle:
        it is closing, or owes an answer to a request (parked, waiting, or being sent)."""
        if (
            self._closing
            or not self.admitted
            or self._unanswered
            or self._pending
            or self._out
            or self._sender is not None
        ):
            return None
        return self.last_active_ms

    # ------------------------------------------------------------------ asyncio.Protocol
    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        # A stream transport; uvloop's do not subclass asyncio.Transport, so no isinstance check.
        self._transport = cast(asyncio.Transport, transport)
        self._learn_transport_limits(transport)
        peer = transport.get_extra_info("peername")
        if isinstance(peer, tuple) and peer:
            self.client_host = f"/{peer[0]}"
            self.peer = f"{peer[0]}:{peer[1]}"
        sock = transport.get_extra_info("socket")
        # Under TLS the socket carries ciphertext: file regions go through the transport.
        if sock is not None and hasattr(os, "sendfile") and transport.get_extra_info("ssl_object") is None:
            self._sock_fd = sock.fileno()
        if self._on_made is not None:
            self._transport.pause_reading()
            self._reading_paused = True
            self._on_made(self)

    # ------------------------------------------------------------------ connection quotas
    @property
    def client_ip(self) -> str:
        """The client's address, without the leading slash of :attr:`client_host`."""
        return self.client_host[1:]

    def admit(self) -> None:
        """Start serving a connection the acceptor held back (connection quotas)."""
        if self.admitted or self._closing:
            return
        self.admitted = True
        self.last_active_ms = self._now_ms()
        self._update_reading()

    def refuse(self) -> None:
        """Close a connection the acceptor will not serve (the acceptor logs why)."""
        if self._closing:
            return
        self._closing = True
        if self._transport is not None:
            self._transport.close()

    def data_received(self, data: bytes) -> None:
        if self._closing or self._draining:
            return
        self.last_active_ms = self._now_ms()
        self._traffic.bytes_in += len(data)
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
        self._release_memory()
        self._gate.resume()
        if self._drained is not None and not self._drained.done():
            self._drained.set_result(None)
        if self._on_close is not None:
            self._on_close(self)

    # ------------------------------------------------------------------ queued.max.request.bytes
    def _reserve(self) -> bool:
        """Reserve the next frame's size from the memory pool once its size prefix is in;
        False (and the connection waits, not reading) while the pool refuses it."""
        if self._reserved:
            return True
        size = self._decoder.next_size()
        if size <= 0:
            return True  # an empty frame, or a bad prefix (next_frame reports it)
        pool = self._pool
        assert pool is not None
        if pool.try_allocate(size):
            self._reserved = size
            return True
        self._waiting_memory = True
        pool.wait(self.connection_id, self._memory_available)
        return False

    def _memory_available(self) -> None:
        """The pool has memory again: try again on the loop (not inside the releasing call)."""
        loop = self._loop
        if loop is None:
            loop = self._loop = asyncio.get_running_loop()
        loop.call_soon(self._retry_memory)

    def _retry_memory(self) -> None:
        self._waiting_memory = False
        if not self._closing:
            self._pump()

    def _release_memory(self) -> None:
        """Give back what this connection holds of the pool (it is closing)."""
        pool = self._pool
        if pool is None:
            return
        pool.forget(self.connection_id)
        held, self._reserved, self._held_reserved = self._reserved + self._held_reserved, 0, 0
        if held:
            pool.release(held)

    # ------------------------------------------------------------------ fairness
    def _yield_turn(self) -> None:
        """This connection has had FRAMES_PER_TURN frames handled in one turn of the loop: the
        rest wait (unread) for the next turn, so that other connections are served in between."""
        self._yielding = True
        loop = self._loop
        if loop is None:
            loop = self._loop = asyncio.get_running_loop()
        loop.call_soon(self._next_turn)

    def _next_turn(self) -> None:
        self._yielding = False
        if not self._closing:
            self._pump()

    # ------------------------------------------------------------------ client quotas
    def _throttle(
        self, quotas: ClientQuotas, ctx: RequestContext, request_bytes: int, handler_s: float, response: Any
    ) -> Any:
        """Record a request in the client quotas; over a quota, the answer carries the throttle
        time and the connection reads nothing more for that long (KIP-219)."""
        response_bytes = _response_size(response) if ctx.api_key == _FETCH else 0
        ms = quotas.throttle_ms(
            self.user, ctx.client_id, ctx.api_key, request_bytes, response_bytes, handler_s, self._now_ms()
        )
        if ctx.api_key in STRICT_SINCE and response is not None:
            # a controller_mutation_rate throttle the handler set: the larger one is muted for
            # (sendResponseMaybeThrottleWithControllerQuota)
            ms = max(ms, round(response.throttle_time.total_seconds() * 1000))
        if ms <= 0:
            return response
        self._mute_for(ms)
        if ctx.api_key == _FETCH and response is not None:
            # KafkaApis: a throttled fetch gets an empty answer and its bytes are not counted
            quotas.fetch.unrecord(self.user, ctx.client_id, float(response_bytes), self._now_ms())
            if type(response) is PreEncoded:
                release_pieces(response.pieces)
            return PreEncoded(pieces=tuple(encode_fetch_body(ctx.api_version, [], throttle_ms=ms)))  # type: ignore[arg-type]
        return _with_throttle(ctx.api_key, ctx.api_version, response, ms)

    def _mute_for(self, ms: int) -> None:
        loop = self._loop
        if loop is None:
            loop = self._loop = asyncio.get_running_loop()
        until = loop.time() + ms / 1000.0
        self._throttled = True
        if self._throttle_handle is not None:
            if until <= self._throttle_until:
                return
            self._throttle_handle.cancel()
        self._throttle_until = until
        self._throttle_handle = loop.call_at(until, self._unthrottle)

    def _unthrottle(self) -> None:
        self._throttled = False
        self._throttle_handle = None
        if not self._closing:
            self._pump()

    # ------------------------------------------------------------------ output flow control
    def _blocked(self) -> bool:
        return (
            self._closing
            or self._draining
            or self._barriers > 0
            or self._held is not None
            or self._gate.paused
            or self._sender is not None
            or len(self._pending) >= MAX_IN_FLIGHT
            or self._waiting_memory
            or self._throttled
            or self._yielding
            # the write gate is not paused (checked above): owed bytes alone may show the
            # output is not over (_learn_transport_limits)
            or ((self._output_full or self._owed_bytes > self._owed_fast_limit) and self._output_over())
        )

    def _update_reading(self) -> None:
        transport = self._transport
        if transport is None or self._closing or not self.admitted:
            return
        want_pause = self._blocked()
        if want_pause and not self._reading_paused:
            transport.pause_reading()
            self._reading_paused = True
        elif not want_pause and self._reading_paused:
            transport.resume_reading()
            self._reading_paused = False

    def _pump(self) -> None:
        self._turn_frames = 0
        while self._dispatch():
            # Stopped at MAX_IN_FLIGHT answers owed: write the ready ones, then go on with the
            # frames already buffered (no more bytes may ever come to wake this up).
            self._flush()
            if self._closing:
                return
        # Answers ready after this read leave together: one write for all of them.
        self._flush()
        self._update_reading()

    def _dispatch(self) -> bool:
        """Hand buffered frames to their handlers while the ordering rule allows; True if it
        stopped only because MAX_IN_FLIGHT answers are owed and some of them are ready."""
        while True:
            held = self._held
            if held is not None:
                if self._unanswered:
                    return False  # the run of overlapping requests it waits for is not answered yet
                self._held = None
                if self._blocked():
                    self._held = held
                    return self._only_full()
                frame = held
                reserved, self._held_reserved = self._held_reserved, 0
            else:
                if self._blocked():
                    return self._only_full()
                decoder = self._decoder
                if not decoder.prefixed:
                    return False  # not even a size prefix buffered: next_frame would say None
                if self._pool is not None and not self._reserve():
                    return False
                try:
                    read = decoder.next_frame()
                except FrameError as exc:
                    self.abort(str(exc))
                    return False
                if read is None:
                    return False
                reserved, self._reserved = self._reserved, 0
                if self._unanswered and (
                    self._run_class is None
                    or self.dispatcher.overlap_class(_api_key(read)) != self._run_class
                ):
                    self._held = read
                    self._held_reserved = reserved
                    return False
                frame = read
            self._handle_frame(frame)
            if reserved:
                self._pool.release(reserved)  # type: ignore[union-attr]
            self._turn_frames += 1
            if self._turn_frames >= FRAMES_PER_TURN and not self._yielding:
                self._yield_turn()

    def _only_full(self) -> bool:
        """Whether the one thing stopping the reading is a full queue whose head is ready."""
        return (
            len(self._pending) >= MAX_IN_FLIGHT
            and ready(self._pending[0])
            and not (self._closing or self._draining or self._gate.paused or self._sender is not None)
            and not self._output_full
            and not self._throttled
            and not self._yielding
            and self._barriers == 0
        )

    def _handle_frame(self, frame: bytes) -> None:
        dispatcher = self.dispatcher
        try:
            api_key, api_version, correlation_id = peek_request(frame)
            session = self.session
            verdict = _HANDLE
            if session.guarded:  # a SASL connection authenticating, or whose session can end
                verdict = session.verdict(api_key)
                if verdict == _CLOSE:
                    self.abort(f"request with API key {api_key}: {session.why}")
                    return
            try:
                entry = dispatcher.entry(api_key, api_version)
            except UnsupportedVersionError:
                if api_key != API_VERSIONS_KEY or verdict != _HANDLE:
                    raise
                if session.guarded:  # the client may ask again at a version we serve
                    session.versions_unanswered()
                answer = unsupported_api_versions_answer(correlation_id, dispatcher.registry.ranges())
                self._owed_bytes += len(answer)
                self._pending.append(answer)
                return
            messages = entry.messages
            client_id, body_offset = read_request_header(frame, messages.request_header_version)
            hot = messages.hot_reader
            if hot is not None:  # OffsetCommit, JoinGroup, (ConsumerGroup)Heartbeat: protocol/hot.py
                request = hot(frame, body_offset)
            else:
                request = messages.decode_request(frame, body_offset)
        except (MalformedRequestError, UnknownApiError, UnsupportedVersionError) as refused:
            self.abort(str(refused))
            return
        except Exception as exc:  # a decoder bug must cost one connection, not the server
            self.abort(f"cannot decode request: {exc!r}", exc=exc)
            return

        ctx = RequestContext(
            connection_id=self.connection_id,
            client_id=client_id or "",
            client_host=self.client_host,
            api_key=api_key,
            api_version=api_version,
            correlation_id=correlation_id,
            principal=session.principal,
            listener=self._listener,
            session=session,
            node_id=self._node_id,
        )
        observe = dispatcher.observe
        quotas = self._quotas
        if quotas is not None and not quotas.enabled:
            quotas = None
        started = time.perf_counter() if observe is not None or quotas is not None else 0.0
        try:
            handler = entry.handler
            result: Any
            if verdict != _HANDLE:  # not what the SASL exchange expects (server.session)
                result = session.refuse(verdict, self.connection_id, api_key, request, messages.response_type)
            elif handler is None or dispatcher.interceptor is not None:
                result = dispatcher.call(ctx, request)
            else:
                result = handler(dispatcher.state, ctx, request)
        except Exception as exc:
            self.abort(f"handler for {messages.name} v{api_version} failed: {exc!r}", exc=exc)
            return

        # Cheap tests first: a Later or a plain future (a commit waiting for its write), an
        # answer now.
        if type(result) is Later or isinstance(result, asyncio.Future):
            task: asyncio.Future[Any] | Later | None = result
        elif result is None or type(result) is PreEncoded or not inspect.isawaitable(result):
            task = None
        else:
            task = asyncio.ensure_future(result)
        if task is not None:
            if quotas is not None:  # before _await: a Later already done answers inside it
                self._quota_of[task] = (ctx, len(frame), time.perf_counter() - started)
            self._await(task, ctx.muted, entry.overlap, messages, correlation_id, started)
            return
        if observe is not None:
            observe(api_key, time.perf_counter() - started)
        if quotas is not None:
            result = self._throttle(quotas, ctx, len(frame), time.perf_counter() - started, result)
        if result is not None:
            data = self._encode(messages, correlation_id, result)
            if data is None:
                return
            if type(data) is bytes:
                self._owed_bytes += len(data)  # _owe's plain case, without the call
            else:
                self._owe(data)
            self._pending.append(data)

    def _await(
        self,
        task: asyncio.Future[Any] | Later,
        muted: bool,
        overlap: str | None,
        messages: ApiMessages,
        correlation_id: int,
        started: float,
    ) -> None:
        """Owe the answer ``task`` will give: a slot in the queue of answers, filled when it is
        done (a method of its own, so that the request path's answers given at once build no
        closure cells)."""
        slot = AnswerSlot()
        self._pending.append(slot)
        self._tasks.add(task)
        self._unanswered += 1
        if muted or overlap is None:
            slot.barrier = True
            self._barriers += 1
        else:
            self._run_class = overlap
        task.add_done_callback(lambda t: self._on_done(t, slot, messages, correlation_id, started))

    def _encode(
        self, messages: ApiMessages, correlation_id: int, response: Any
    ) -> bytes | list[Piece] | None:
        try:
            if type(response) is PreEncoded:
                return frame_pieces(messages, correlation_id, response)
            return messages.encode_response(correlation_id, response)
        except Exception as exc:
            if type(response) is PreEncoded:
                release_pieces(response.pieces)
            self.abort(f"cannot encode {messages.name} v{messages.version} response: {exc!r}", exc=exc)
            return None

    def _on_done(
        self,
        task: asyncio.Future[Any] | Later,
        slot: AnswerSlot,
        messages: ApiMessages,
        correlation_id: int,
        started: float,
    ) -> None:
        self._tasks.discard(task)
        if task.cancelled() and self._quota_of:
            self._quota_of.pop(task, None)
        self._unanswered -= 1
        if not self._unanswered:
            self._run_class = None
        if slot.barrier:
            self._barriers -= 1
        if task.cancelled():
            return
        observe = self.dispatcher.observe
        if observe is not None:
            observe(messages.api_key, time.perf_counter() - started)
        exc = task.exception()
        if self._closing:
            if exc is None and type(task.result()) is PreEncoded:
                release_pieces(task.result().pieces)
            return
        if exc is not None:
            self.abort(f"handler for {messages.name} v{messages.version} failed: {exc!r}", exc=exc)
            return
        response = task.result()
        quota = self._quota_of.pop(task, None) if self._quota_of else None
        if quota is not None and self._quotas is not None:
            response = self._throttle(self._quotas, quota[0], quota[1], quota[2], response)
        if response is not None:
            data = self._encode(messages, correlation_id, response)
            if data is None:
                return
            if type(data) is bytes:
                self._owed_bytes += len(data)  # _owe's plain case, without the call
            else:
                self._owe(data)
            slot.data = data
        slot.done = True
        # Awaited answers become ready in batches (a flush round confirms every commit it
        # holds at once): they are written once that batch has run, in one write per
        # connection, instead of one send per answer.
        if not self._pump_scheduled:
            self._pump_scheduled = True
            loop = self._loop
            if loop is None:
                loop = self._loop = asyncio.get_running_loop()
            loop.call_soon(self._deferred_pump)

    def _deferred_pump(self) -> None:
        self._pump_scheduled = False
        if not self._closing:
            self._pump()

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

    def close_after_answers(self) -> None:
        """Read no more; close once every answer owed is written (a failed authentication:
        Kafka sends the failure, then closes the channel)."""
        if self._closing:
            return
        self._draining = True
        self._update_reading()

    def close_idle(self, idle_ms: int) -> None:
        """Close this connection for having been idle ``idle_ms`` (one log line)."""
        if self._closing:
            return
        log.info(
            "closing conn=%d peer=%s: idle for %d ms (connections.max.idle.ms)",
            self.connection_id,
            self.peer,
            idle_ms,
        )
        self._closing = True
        self._drop_output()
        if self._transport is not None:
            self._transport.close()

    def close_now(self) -> None:
        if self._transport is not None and not self._transport.is_closing():
            self._transport.abort()


_FETCH = 1


def _response_size(response: Any) -> int:
    """The bytes of a handler's answer body, when it gives them (a pre-encoded one)."""
    if type(response) is not PreEncoded:
        return 0
    return sum(len(p) if isinstance(p, bytes) else p.length for p in response.pieces)


def _with_throttle(api_key: int, api_version: int, response: Any, ms: int) -> Any:
    """The answer with ``throttle_time_ms`` set: a kio entity's field, or the first int32 of a
    pre-encoded Fetch body (v1+, ``protocol.fetch_response``). Versions without the field
    keep their answer (the mute still applies)."""
    if response is None:
        return None
    if type(response) is PreEncoded:
        pieces = response.pieces
        if (
            api_key == _FETCH
            and api_version >= 1
            and pieces
            and type(pieces[0]) is bytes
            and len(pieces[0]) >= 4
        ):
            first = pieces[0]
            return PreEncoded(pieces=(_SIZE.pack(ms) + first[4:], *pieces[1:]))  # type: ignore[operator]
        return response
    if hasattr(response, "throttle_time") and hasattr(response, "__dataclass_fields__"):
        return dataclasses.replace(response, throttle_time=datetime.timedelta(milliseconds=ms))
    return response


def _monotonic_ms() -> int:
    return time.monotonic_ns() // 1_000_000


def _api_key(frame: bytes) -> int:
    """The API key of a request frame (-1 if too short: the handler path reports that)."""
    return int.from_bytes(frame[:2], "big", signed=True) if len(frame) >= 2 else -1
