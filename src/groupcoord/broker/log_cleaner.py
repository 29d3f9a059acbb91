"""The broker's log cleaner: compaction of every partition whose cleanup.policy includes compact.

Kafka's ``LogCleaner`` in small. One :class:`BrokerCleaner` per broker runs a *pass* every
``log.cleaner.backoff.ms`` of broker time: it is armed on the broker's keyed timers
(:class:`~groupcoord.handling.loop_timers.LoopTimers`, driven by the broker clock, so a test's
``Broker.advance()`` or a ManualClock runs it), and the pass itself runs on a thread of its own
(``groupcoord-cleaner``), never on the event loop. A pass walks the partitions that are
compacted *at that moment* (``plog.config.compact``: user topics created or altered with
``cleanup.policy=compact``, ``__consumer_offsets``, ``__transaction_state``) and calls
:meth:`~groupcoord.storage.log.PartitionLog.compact` on each, one after the other. Compaction
touches only rolled segments and takes the log's lock only for short moments (the storage
layer's threading rule, :mod:`groupcoord.storage.log`), so appends and fetches go on meanwhile.
The next pass is armed when one ends, ``log.cleaner.backoff.ms`` after its end.

A partition whose compaction fails (a corrupt batch in a segment, an I/O error) is marked
**uncleanable**, as KIP-346 does it (``LogCleaner``: "Unexpected exception thrown when cleaning
log ... Marking its partition ... as uncleanable"; ``LogCleanerManager.markPartitionUncleanable``):
one WARNING line names the partition and the error, later passes skip it, and
:attr:`BrokerCleaner.uncleanable` (the metrics endpoint's
``groupcoord_log_cleaner_uncleanable_partitions``, Kafka's ``uncleanable-partitions-count``)
counts it. The mark is cleared as Kafka clears it: when the partition is deleted (its log
closes: ``maintainUncleanablePartitions`` at the start of every pass), and on restart (the set
lives in memory). The rest of the log keeps serving appends and fetches meanwhile.

``log.cleaner.enable=false`` turns the cleaner off: no partition is ever compacted (Kafka: the
cleaner does not start).

Closing: :meth:`BrokerCleaner.close` cancels the timer, asks a pass in progress to stop after
the partition it is cleaning (a partition's compaction either swaps each cleaned segment in
under the log's lock or leaves the segment as it was) and waits for it, before the logs close.
:meth:`BrokerCleaner.abandon` (a crash in tests) waits for that partition too, so nothing of
the abandoned broker writes to a data dir a restarted broker has opened.
"""

from __future__ import annotations

import asyncio
import logging
import threading
from collections.abc import Callable, Hashable, Mapping
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass
from typing import Protocol

from groupcoord.clock import Clock
from groupcoord.storage.cleaner import CompactionReport

log = logging.getLogger(__name__)

__all__ = ["BrokerCleaner", "CleanerPass"]

#: The timer key of the next pass.
CLEANER_KEY = ("log", "cleaner")


class _Compactable(Protocol):
    @property
    def closed(self) -> bool: ...

    @property
    def config(self) -> _Config: ...

    def compact(self, now_ms: int) -> CompactionReport: ...


class _Config(Protocol):
    @property
    def compact(self) -> bool: ...


class _Timers(Protocol):
    def schedule(self, key: Hashable, deadline_ms: int, callback: Callable[[], None]) -> None: ...

    def cancel(self, key: Hashable) -> None: ...


@dataclass(frozen=True, slots=True, kw_only=True)
class CleanerPass:
    """What one pass did (kept as :attr:`BrokerCleaner.last_pass`)."""

    started_ms: int
    #: the compacted partitions the pass visited, in order
    partitions: tuple[tuple[str, int], ...]
    segments_cleaned: int
    records_removed: int
    #: partitions whose compaction raised in this pass (each marked uncleanable, one log line)
    failed: tuple[tuple[str, int], ...] = ()
    #: the pass stopped early because the broker is closing
    stopped: bool = False


class BrokerCleaner:
    """Compaction of every compacted partition, every ``log.cleaner.backoff.ms`` (see the module
    docstring). Event-loop side: :meth:`start`, :meth:`close`; the pass runs on its thread."""

    def __init__(
        self,
        *,
        partitions: Callable[[], Mapping[tuple[str, int], _Compactable]],
        clock: Clock,
        timers: _Timers,
        backoff_ms: int,
        enabled: bool = True,
    ) -> None:
        self._partitions = partitions
        self._clock = clock
        self._timers = timers
        self._backoff_ms = max(backoff_ms, 1)
        self.enabled = enabled
        self._stop = threading.Event()
        self._executor: ThreadPoolExecutor | None = None
        self._running: Future[CleanerPass] | None = None
        self._closed = False
        #: partitions marked uncleanable (KIP-346): skipped until deleted or the broker restarts;
        #: written by the cleaner thread, read anywhere (a set swapped whole, never mutated)
        self.uncleanable: frozenset[tuple[str, int]] = frozenset()
        #: Passes completed since start (read by tests).
        self.passes = 0
        self.last_pass: CleanerPass | None = None

    # ------------------------------------------------------------------ event-loop side
    def start(self) -> None:
        """Arm the first pass ``log.cleaner.backoff.ms`` from now (nothing when disabled)."""
        if not self.enabled:
            log.info("log cleaner disabled (log.cleaner.enable=false): no partition is compacted")
            return
        self._arm()

    def _arm(self) -> None:
        if not self._closed:
            self._timers.schedule(CLEANER_KEY, self._clock.now_ms() + self._backoff_ms, self._due)

    def _due(self) -> None:
        """The timer fired: hand a pass over the partitions compacted now to the thread."""
        if self._closed or self._running is not None:
            return
        targets = [(tp, plog) for tp, plog in list(self._partitions().items()) if plog.config.compact]
        if self._executor is None:
            self._executor = ThreadPoolExecutor(max_workers=1, thread_name_prefix="groupcoord-cleaner")
        loop = asyncio.get_running_loop()
        fut = self._executor.submit(self._run_pass, targets, self._clock.now_ms())
        self._running = fut
        fut.add_done_callback(lambda f: loop.call_soon_threadsafe(self._finished, f))

    def _finished(self, fut: Future[CleanerPass]) -> None:
        if self._running is fut:
            self._running = None
        if fut.cancelled():
            return
        exc = fut.exception()
        if exc is not None:  # _run_pass catches per partition: this is a bug
            log.error("log cleaner pass failed: %r", exc)
        else:
            self.last_pass = fut.result()
            self.passes += 1
        self._arm()

    async def close(self) -> None:
        """Stop: no new pass; a pass in progress ends after its current partition (awaited)."""
        self._closed = True
        self._timers.cancel(CLEANER_KEY)
        self._stop.set()
        running = self._running
        if running is not None:
            try:
                await asyncio.wrap_future(running)
            except Exception as exc:
                log.error("log cleaner pass failed while closing: %r", exc)
        if self._executor is not None:
            self._executor.shutdown(wait=True)
            self._executor = None

    def abandon(self, timeout_s: float = 60.0) -> None:
        """As a crash: no close of anything, but a pass in progress is stopped after its current
        partition and waited for (from any thread), so it cannot touch files afterwards."""
        self._closed = True
        self._stop.set()
        running = self._running
        if running is not None:
            try:
                running.result(timeout_s)
            except Exception as exc:
                log.warning("abandoned log cleaner pass ended with %r", exc)
        if self._executor is not None:
            self._executor.shutdown(wait=False)

    # ------------------------------------------------------------------ cleaner thread
    def _run_pass(self, targets: list[tuple[tuple[str, int], _Compactable]], now_ms: int) -> CleanerPass:
        visited: list[tuple[str, int]] = []
        failed: list[tuple[str, int]] = []
        cleaned = removed = 0
        stopped = False
        # maintainUncleanablePartitions: a partition deleted since (its log closed or gone) is
        # forgotten, so one created again under the same name is cleaned
        live = {tp for tp, plog in self._partitions().items() if not plog.closed}
        uncleanable = self.uncleanable & live
        for tp, plog in targets:
            if self._stop.is_set():
                stopped = True
                break
            if plog.closed or tp in uncleanable:  # deleted since the pass began, or uncleanable
                continue
            visited.append(tp)
            try:
                report = plog.compact(now_ms)
            except Exception as exc:
                if plog.closed:
                    continue  # deleted while being cleaned: its files are gone
                log.warning(
                    "Unexpected exception thrown when cleaning log %s-%d. Marking its partition as "
                    "uncleanable: %r",
                    tp[0],
                    tp[1],
                    exc,
                )
                failed.append(tp)
                uncleanable = uncleanable | {tp}
                continue
            cleaned += report.segments_cleaned
            removed += report.records_removed
        self.uncleanable = frozenset(uncleanable)
        return CleanerPass(
            started_ms=now_ms,
            partitions=tuple(visited),
            segments_cleaned=cleaned,
            records_removed=removed,
            failed=tuple(failed),
            stopped=stopped,
        )
