"""Coalesced fsyncs for acks=-1.

Every acks=-1 produce asks :meth:`Flusher.flush` for the partitions it appended to and waits.
Requests arriving in the same loop tick (or while a flush is running) share one flush round:
each round fsyncs every dirty partition once, in a worker thread so the event loop keeps
serving, and then releases every waiter of that round.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Hashable
from concurrent.futures import ThreadPoolExecutor
from typing import Protocol

log = logging.getLogger(__name__)


class Flushable(Protocol):
    def flush(self) -> object: ...


class Flusher:
    def __init__(self) -> None:
        self.executor = ThreadPoolExecutor(max_workers=1, thread_name_prefix="groupcoord-fsync")
        self._dirty: dict[Hashable, Flushable] = {}
        self._waiters: list[asyncio.Future[None]] = []
        self._task: asyncio.Task[None] | None = None
        self.rounds = 0

    def flush(self, parts: dict[Hashable, Flushable]) -> asyncio.Future[None]:
        """A future that completes once every partition in ``parts`` is fsynced."""
        loop = asyncio.get_running_loop()
        fut: asyncio.Future[None] = loop.create_future()
        self._dirty.update(parts)
        self._waiters.append(fut)
        if self._task is None or self._task.done():
            self._task = loop.create_task(self._run())
        return fut

    async def _run(self) -> None:
        loop = asyncio.get_running_loop()
        while self._waiters:
            dirty, waiters = self._dirty, self._waiters
            self._dirty, self._waiters = {}, []
            error: BaseException | None = None
            try:
                await loop.run_in_executor(self.executor, _flush_all, list(dirty.values()))
            except Exception as exc:
                log.error("fsync round failed: %r", exc)
                error = exc
            self.rounds += 1
            for fut in waiters:
                if fut.done():
                    continue
                if error is None:
                    fut.set_result(None)
                else:
                    fut.set_exception(error)

    def close(self) -> None:
        self.executor.shutdown(wait=True)


def _flush_all(parts: list[Flushable]) -> None:
    for part in parts:
        part.flush()
