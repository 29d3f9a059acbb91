"""The types every layer shares about handling one request on the event loop.

This package is a leaf: it imports nothing of groupcoord but the :class:`ApiKey` enum and the
keyed timer (both leaves). Beside the types below, :mod:`groupcoord.handling.loop_timers` drives
the keyed timer from the event loop (fetch long-polls, idle connections, the log cleaner).
The server (framing, ordering, transport), the broker's and the coordinator runtime's
handlers, and the composition root (:mod:`groupcoord.app`) all meet here:

* :class:`RequestContext` (:mod:`groupcoord.handling.context`, compiled): what a handler knows
  about the request and its connection;
* :class:`Route`: one line of the route table, an API's version range and handler;
* :class:`PreEncoded`: a response body a handler encoded itself, possibly with
  :class:`FileRegion` pieces the connection sends with ``sendfile``;
* :data:`Interceptor`: a hook the composition root may put in front of every handler
  (``groupcoord.testing`` uses it to inject faults);
* :class:`Later`: an answer completed later by a callback (a cheaper future).

A handler is called as ``handler(state, ctx, request)`` and returns the response entity (of
the request's version), ``None`` for "no response on the wire" (Produce with acks=0), or an
awaitable of either; ``state`` is what the composition root gave the route table (the
broker). The ordering rules a route's ``overlap`` class relaxes are in ``server.dispatch``.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
from collections.abc import Awaitable, Callable, Generator
from dataclasses import dataclass
from typing import Any, Generic, TypeVar

from groupcoord.handling.context import RequestContext as RequestContext
from groupcoord.protocol.api_keys import ApiKey

log = logging.getLogger(__name__)

S = TypeVar("S")

HandlerResult = Any | None | Awaitable[Any | None]
Handler = Callable[[S, "RequestContext", Any], HandlerResult]
#: ``interceptor(ctx, request, proceed)``: called instead of the handler; ``proceed(ctx, request)``
#: runs the handler. It may answer itself (an error entity, an awaitable that never resolves).
Proceed = Callable[["RequestContext", Any], HandlerResult]
Interceptor = Callable[["RequestContext", Any, Proceed], HandlerResult]


@dataclass(frozen=True, slots=True, kw_only=True)
class Route(Generic[S]):
    """One API of the route table: the versions served and the handler that serves them."""

    api_key: ApiKey
    min_version: int
    max_version: int
    handler: Handler[S]
    #: requests of one overlap class may wait alongside each other (``server.dispatch``)
    overlap: str | None = None


class FileRegion:
    """A byte range of a segment file, held open on its own descriptor until :meth:`close`.

    The log (``storage.log``) makes them; the connection sends and closes them. The
    descriptor is a duplicate taken under the log's lock, so the range stays readable after
    retention deletes the file or compaction swaps it; an in-place truncation of the active
    segment (``truncate_to``) can still shorten it, which a sender detects as a short read.
    Positional I/O only: the duplicate shares the file offset with the segment's own
    descriptor, which the log never uses.
    """

    __slots__ = ("_fd", "length", "position")

    def __init__(self, fd: int, position: int, length: int) -> None:
        self._fd = fd
        self.position = position
        self.length = length

    @property
    def fd(self) -> int:
        if self._fd < 0:
            raise ValueError("file region is closed")
        return self._fd

    @property
    def closed(self) -> bool:
        return self._fd < 0

    def advance(self, n: int) -> None:
        """Drop the first ``n`` bytes of the range (they were sent)."""
        if not 0 <= n <= self.length:
            raise ValueError(f"cannot advance {n} bytes in a region of {self.length}")
        self.position += n
        self.length -= n

    def read(self) -> bytes:
        """The bytes of the range (a copy); short if the file was truncated meanwhile."""
        parts: list[bytes] = []
        pos, left = self.position, self.length
        while left > 0:
            chunk = os.pread(self.fd, left, pos)
            if not chunk:
                break
            parts.append(chunk)
            pos += len(chunk)
            left -= len(chunk)
        return parts[0] if len(parts) == 1 else b"".join(parts)

    def close(self) -> None:
        fd, self._fd = self._fd, -1
        if fd >= 0:
            with contextlib.suppress(OSError):
                os.close(fd)

    def __del__(self) -> None:
        self.close()

    def __repr__(self) -> str:
        return f"FileRegion(fd={self._fd}, position={self.position}, length={self.length})"


#: A piece of a pre-encoded body: bytes, or a file region sent with ``sendfile``.
Piece = bytes | FileRegion


@dataclass(frozen=True, slots=True, kw_only=True)
class PreEncoded:
    """A response body encoded by its handler: pieces written in order after the response
    header. The connection owns the file regions from then on and closes each one once it is
    sent or dropped."""

    pieces: tuple[Piece, ...]


class Later:
    """An answer a handler gives later, completed by a callback instead of through the event
    loop: what the coordinators' handlers return for a commit waiting for its write or a
    parked join (``runtime.answers``).

    It behaves as much of an :class:`asyncio.Future` as the connection uses (``done``,
    ``cancelled``, ``cancel``, ``result``, ``exception``, ``add_done_callback``), with one
    difference: callbacks run at once when it completes (or at once when added to one that
    is complete), not from the next turn of the loop. A future costs a loop callback per
    answer; these answers come in batches (one flush round confirms many commits), and the
    connection defers its writing to the end of the batch anyway. Awaiting one (an
    interceptor may) awaits an :class:`asyncio.Future` made for it on demand.
    """

    __slots__ = ("_callbacks", "_cancelled", "_done", "_exception", "_result")

    def __init__(self) -> None:
        self._done = False
        self._cancelled = False
        self._result: Any = None
        self._exception: BaseException | None = None
        self._callbacks: list[Callable[[Later], object]] = []

    def done(self) -> bool:
        return self._done

    def cancelled(self) -> bool:
        return self._cancelled

    def result(self) -> Any:
        if self._cancelled:
            raise asyncio.CancelledError()
        if not self._done:
            raise asyncio.InvalidStateError("result is not set")
        if self._exception is not None:
            raise self._exception
        return self._result

    def exception(self) -> BaseException | None:
        if self._cancelled:
            raise asyncio.CancelledError()
        if not self._done:
            raise asyncio.InvalidStateError("exception is not set")
        return self._exception

    def set_result(self, result: Any) -> None:
        if self._done:
            raise asyncio.InvalidStateError("already done")
        self._result = result
        self._complete()

    def set_exception(self, exception: BaseException) -> None:
        if self._done:
            raise asyncio.InvalidStateError("already done")
        self._exception = exception
        self._complete()

    def cancel(self) -> bool:
        if self._done:
            return False
        self._cancelled = True
        self._complete()
        return True

    def add_done_callback(self, callback: Callable[[Later], object]) -> None:
        if self._done:
            callback(self)
        else:
            self._callbacks.append(callback)

    def _complete(self) -> None:
        self._done = True
        callbacks, self._callbacks = self._callbacks, []
        for callback in callbacks:
            try:
                callback(self)
            except Exception:  # as the event loop does for a future's callback: log, go on
                log.exception("a callback of an answer given later failed")

    def __await__(self) -> Generator[Any, None, Any]:
        future: asyncio.Future[Any] = asyncio.get_running_loop().create_future()

        def copy(later: Later) -> None:
            if future.done():
                return  # the awaiting task was cancelled meanwhile
            if later._cancelled:
                future.cancel()
            elif later._exception is not None:
                future.set_exception(later._exception)
            else:
                future.set_result(later._result)

        self.add_done_callback(copy)
        return (yield from future.__await__())
