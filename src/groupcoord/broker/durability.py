"""Coalesced fsyncs for acks=-1.

Every acks=-1 produce (and every offset commit) asks :meth:`Flusher.flush` for the partitions
it appended to and waits. Requests arriving in the same loop tick, or while a flush round is
running, share one flush round: each round fsyncs every dirty partition once and then releases
every waiter of that round.

The rounds run on one long-lived thread (``groupcoord-fsync``), so the event loop keeps
serving while the disk works. The loop hands it work through a condition variable: the first
:meth:`Flusher.flush` of a tick schedules one wake-up at the end of the tick, so all the
requests of that tick go into the same round; the thread takes everything pending at once,
fsyncs, and completes the round's futures with a single ``call_soon_threadsafe`` per event
loop (not one per waiter). An fsync error fails every future of its round.

A round over several partitions runs their fsyncs at once (up to :data:`FSYNC_PARALLELISM`,
the flusher thread plus helper threads) and ends when the last one returns: ext4, like most
journaling file systems, commits concurrent fsyncs of different files in one journal
transaction, so a round over the 50 partitions of ``__consumer_offsets`` costs about one fsync
instead of 50 in a row (``bench/fsync_bench.py`` on this machine: 50-170 ms in a row, 3-4 ms
at once). The promise is unchanged: no waiter of a round is released before every partition of
the round is fsynced.

A partition with a ``journal`` (the coordinators' partitions, see
:mod:`groupcoord.storage.journal`) is made durable by that journal instead: a round syncs the
journal once, one ``write`` and one ``fdatasync``, for all such partitions it covers.

:attr:`Flusher.executor` runs other disk jobs (the periodic ``log.flush.*`` check) on that
same thread, so no two fsyncs of a partition ever run at once.
"""

from __future__ import annotations

import asyncio
import logging
import threading
from collections import deque
from collections.abc import Callable, Hashable
from concurrent.futures import Executor, Future, ThreadPoolExecutor
from typing import Any, ParamSpec, TypeVar

from groupcoord.storage.segment import Flushable, flush_at_once

log = logging.getLogger(__name__)

P = ParamSpec("P")
#: Most fsyncs one round runs at the same time.
FSYNC_PARALLELISM = 8
T = TypeVar("T")


class Flusher:
    def __init__(self) -> None:
        self._cond = threading.Condition()
        # Everything below is guarded by _cond.
        self._dirty: dict[Hashable, Flushable] = {}
        self._waiters: list[asyncio.Future[None]] = []
        self._ready = False  # the tick that queued the waiters has ended: flush them
        self._wake_scheduled = False
        self._jobs: deque[tuple[Future[Any], Callable[[], Any]]] = deque()
        self._closed = False
        self._worker: threading.Thread | None = None
        self._helpers: ThreadPoolExecutor | None = None  # created and used by the flusher thread only
        #: Flush rounds completed (read by tests and benchmarks).
        self.rounds = 0
        self.executor: Executor = _FlusherExecutor(self)

    # ------------------------------------------------------------------ event-loop side
    def flush(self, parts: dict[Hashable, Flushable]) -> asyncio.Future[None]:
        """A future that completes once every partition in ``parts`` is fsynced."""
        loop = asyncio.get_running_loop()
        fut: asyncio.Future[None] = loop.create_future()
        with self._cond:
            if self._closed:
                fut.set_exception(RuntimeError("the flusher is closed"))
                return fut
            for key, part in parts.items():
                # A partition journaled by the log manager is made durable by syncing the shared
                # journal: the round holds that once, however many such partitions it covers.
                journal = getattr(part, "journal", None)
                if journal is None:
                    self._dirty[key] = part
                else:
                    self._dirty[journal] = journal
            self._waiters.append(fut)
            schedule = not self._wake_scheduled
            self._wake_scheduled = True
        if schedule:
            loop.call_soon(self._wake)
        return fut

    def _wake(self) -> None:
        with self._cond:
            self._wake_scheduled = False
            if self._waiters:
                self._ready = True
                self._start_locked()
                self._cond.notify()

    def close(self) -> None:
        """Finish what is queued (a last round for pending waiters) and join the thread."""
        with self._cond:
            self._closed = True
            if self._waiters:
                self._ready = True
                self._start_locked()
            thread = self._worker
            self._cond.notify()
        self._join(thread)

    def abandon(self) -> None:
        """As in a crash: drop what is queued without flushing it and let the thread end.
        Pending waiters are never completed (their loop is gone); later flushes are refused."""
        with self._cond:
            self._closed = True
            self._ready = False
            self._dirty, self._waiters = {}, []
            self._jobs.clear()
            thread = self._worker
            self._cond.notify()
        self._join(thread)

    def _join(self, thread: threading.Thread | None) -> None:
        """The end of :meth:`close` and :meth:`abandon`, outside the lock: wait for the thread
        they woke, then shut the helpers down."""
        if thread is not None:
            thread.join()
        if self._helpers is not None:
            self._helpers.shutdown()

    # ------------------------------------------------------------------ flusher thread
    def _start_locked(self) -> None:
        if self._worker is None:
            self._worker = threading.Thread(target=self._run, name="groupcoord-fsync", daemon=True)
            self._worker.start()

    def _submit(self, job: Callable[[], T]) -> Future[T]:
        result: Future[T] = Future()
        with self._cond:
            if self._closed:
                raise RuntimeError("cannot schedule new futures after shutdown")
            self._jobs.append((result, job))
            self._start_locked()
            self._cond.notify()
        return result

    def _run(self) -> None:
        while True:
            with self._cond:
                while not (self._ready or self._jobs or self._closed):
                    self._cond.wait()
                if self._jobs:
                    fut, job = self._jobs.popleft()
                    dirty = None
                    waiters: list[asyncio.Future[None]] = []
                elif self._ready:
                    self._ready = False
                    dirty, waiters = self._dirty, self._waiters
                    self._dirty, self._waiters = {}, []
                else:  # closed, nothing left
                    return
            if dirty is None:
                _run_job(fut, job)
                continue
            error: BaseException | None = None
            try:
                self._flush_all(list(dirty.values()))
            except Exception as exc:
                log.error("fsync round failed: %r", exc)
                error = exc
            self.rounds += 1
            _complete_from_thread(waiters, error)

    def _flush_all(self, parts: list[Flushable]) -> None:
        """fsync ``parts`` at once: the first on this thread, the others on helpers; the first error wins.

        One hand-off per partition, not one per lane of several: static lanes were tried
        (issue 16) and were no better in three alternating depth-1 runs (a slow fsync holds up
        the rest of its lane; a free helper takes the next partition here)."""
        if len(parts) > 1 and self._helpers is None:
            self._helpers = ThreadPoolExecutor(FSYNC_PARALLELISM - 1, thread_name_prefix="groupcoord-fsync")
        flush_at_once(parts, self._helpers)


class _FlusherExecutor(Executor):
    """The flusher thread as a ``concurrent.futures`` executor (for ``run_in_executor``)."""

    def __init__(self, flusher: Flusher) -> None:
        self._flusher = flusher

    def submit(self, fn: Callable[P, T], /, *args: P.args, **kwargs: P.kwargs) -> Future[T]:
        return self._flusher._submit(lambda: fn(*args, **kwargs))

    def shutdown(self, wait: bool = True, *, cancel_futures: bool = False) -> None:
        self._flusher.close()


def _run_job(fut: Future[Any], job: Callable[[], Any]) -> None:
    if not fut.set_running_or_notify_cancel():
        return
    try:
        result = job()
    except BaseException as exc:
        fut.set_exception(exc)
    else:
        fut.set_result(result)


def _complete_from_thread(waiters: list[asyncio.Future[None]], error: BaseException | None) -> None:
    """Hand the round's futures back to their loops: one callback per loop."""
    by_loop: dict[asyncio.AbstractEventLoop, list[asyncio.Future[None]]] = {}
    for fut in waiters:
        by_loop.setdefault(fut.get_loop(), []).append(fut)
    for loop, futs in by_loop.items():
        try:
            loop.call_soon_threadsafe(_complete, futs, error)
        except RuntimeError:  # that loop is closed: nobody is waiting any more
            log.debug("fsync round done after its event loop closed (%d waiters)", len(futs))


def _complete(waiters: list[asyncio.Future[None]], error: BaseException | None) -> None:
    for fut in waiters:
        if fut.done():
            continue
        if error is None:
            fut.set_result(None)
        else:
            fut.set_exception(error)
