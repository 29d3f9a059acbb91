"""``queued.max.request.bytes``: one broker-wide budget for the bytes of requests being read.

Kafka's socket server gives every request buffer from one ``MemoryPool``
(``SocketServer``: a ``SimpleMemoryPool`` of ``queued.max.request.bytes`` when that is
positive, else none). A channel allocates its request's whole size as soon as the 4-byte size
prefix is read (``NetworkReceive.readFrom``); when the pool refuses, the channel mutes itself
(``KafkaChannel``'s ``MUTED_AND_OUT_OF_MEMORY``) and reads nothing more, and the selector unmutes
every such channel once the pool is no longer out of memory (``Selector.poll``). The buffer goes
back to the pool when the request has been handled. The pool is not strict
(``new SimpleMemoryPool(..., strict = false, ...)``): an allocation succeeds while *any* memory
is available, so what is in use can exceed the size by at most one request
(``socket.request.max.bytes``, which ``queued.max.request.bytes`` may not be smaller than).

Here the connection (``server.connection``) reserves a frame's size from its prefix before it
takes the frame in (the bytes already received are at most one socket read), releases it once
the frame's handler has been called, and waits, not reading, while the pool refuses. The pool
wakes every waiting connection when memory is available again; each tries again on the loop, in
the order they began to wait, and those refused wait again.
"""

from __future__ import annotations

from collections.abc import Callable


class MemoryPool:
    """A non-strict byte budget (Kafka's ``SimpleMemoryPool`` with ``strict = false``)."""

    __slots__ = ("_waiters", "available", "size")

    def __init__(self, size: int) -> None:
        if size <= 0:
            raise ValueError("a memory pool needs a positive size")
        self.size = size
        #: may go negative by up to one allocation
        self.available = size
        self._waiters: dict[int, Callable[[], None]] = {}

    @property
    def used(self) -> int:
        return self.size - self.available

    @property
    def waiting(self) -> int:
        """How many connections wait for memory."""
        return len(self._waiters)

    @property
    def out_of_memory(self) -> bool:
        return self.available <= 0

    def try_allocate(self, n: int) -> bool:
        """Take ``n`` bytes if any memory is available (``tryAllocate``, threshold 1)."""
        if self.available < 1:
            return False
        self.available -= n
        return True

    def release(self, n: int) -> None:
        self.available += n
        if self.available > 0 and self._waiters:
            # as Kafka's selector unmutes every channel muted for memory: each tries again (its
            # wake-up schedules that on the loop) and waits again if the pool refuses it
            waiters = list(self._waiters.values())
            self._waiters.clear()
            for wake in waiters:
                wake()

    def wait(self, key: int, wake: Callable[[], None]) -> None:
        """Call ``wake`` once memory is available again (one registration per ``key``)."""
        self._waiters.setdefault(key, wake)

    def forget(self, key: int) -> None:
        self._waiters.pop(key, None)
