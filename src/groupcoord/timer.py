"""One keyed timer service for every protocol deadline.

Scheduling a key replaces whatever timer that key had; cancelling is by key; an expired
entry whose key was rescheduled or cancelled in the meantime is ignored (a stale firing).
The structure is pure: it never reads a clock and never sleeps. Its owner asks for
:meth:`KeyedTimer.next_deadline`, arranges to be woken then (``loop.call_at`` in the
server, a loop over virtual time in tests and the simulator), and calls
:meth:`KeyedTimer.expire` with the current time.

Data structure: a binary heap of ``(deadline, seq, key)`` with lazy deletion, plus a dict
``key -> (deadline, seq, payload)`` holding the live entry. Rescheduling is one dict write
and one heap push (O(log n)); cancelling is one dict delete (O(1)). Superseded heap
entries are skipped when they surface and the heap is rebuilt from the live entries when
garbage outnumbers them, so memory stays proportional to the live timers even under
constant rescheduling (every heartbeat reschedules its member's expiry).
"""

from __future__ import annotations

import heapq
from collections.abc import Hashable, Iterator
from typing import Generic, TypeVar

K = TypeVar("K", bound=Hashable)
T = TypeVar("T")

_COMPACT_MIN = 1024
#: The heap is rebuilt from the live timers when it holds more than this many entries per live
#: timer. Heartbeats supersede a member's entry every few seconds while the old one surfaces
#: only at its own deadline, so with a 30 s session and 10 s heartbeats the heap settles near
#: three entries per member on its own; at a factor of 2 it was rebuilt every 10 s, a 30 ms
#: stall of the event loop at 100,000 members (measured).
_GARBAGE_FACTOR = 4


class KeyedTimer(Generic[K, T]):
    __slots__ = ("_heap", "_live", "_seq")

    def __init__(self) -> None:
        self._heap: list[tuple[int, int, K]] = []
        self._live: dict[K, tuple[int, int, T]] = {}
        self._seq = 0

    def __len__(self) -> int:
        return len(self._live)

    def __contains__(self, key: object) -> bool:
        return key in self._live

    def schedule(self, key: K, deadline_ms: int, payload: T) -> None:
        """Arm ``key`` to fire at ``deadline_ms``, replacing any earlier timer of that key."""
        self._seq += 1
        seq = self._seq
        self._live[key] = (deadline_ms, seq, payload)
        heapq.heappush(self._heap, (deadline_ms, seq, key))
        if len(self._heap) > _COMPACT_MIN and len(self._heap) > _GARBAGE_FACTOR * len(self._live):
            self._compact()

    def schedule_if_absent(self, key: K, deadline_ms: int, payload: T) -> bool:
        if key in self._live:
            return False
        self.schedule(key, deadline_ms, payload)
        return True

    def cancel(self, key: K) -> bool:
        """Disarm ``key``; returns whether it was armed."""
        return self._live.pop(key, None) is not None

    def deadline(self, key: K) -> int | None:
        entry = self._live.get(key)
        return None if entry is None else entry[0]

    def payload(self, key: K) -> T | None:
        entry = self._live.get(key)
        return None if entry is None else entry[2]

    def next_deadline(self) -> int | None:
        """The earliest live deadline, or None when nothing is armed."""
        heap = self._heap
        live = self._live
        while heap:
            deadline, seq, key = heap[0]
            entry = live.get(key)
            if entry is not None and entry[1] == seq:
                return deadline
            heapq.heappop(heap)
        return None

    def expire(self, now_ms: int) -> Iterator[tuple[K, T]]:
        """Yield ``(key, payload)`` for every timer due at ``now_ms``, earliest first.

        Each yielded key is disarmed before it is yielded, so the consumer may reschedule
        the same key (or cancel or schedule others) while iterating; a timer scheduled
        during iteration with a deadline ``<= now_ms`` is yielded in the same pass.
        """
        live = self._live
        # Re-read self._heap on every step: a schedule() made by the consumer while we are
        # suspended may compact, replacing the list.
        while self._heap and self._heap[0][0] <= now_ms:
            _, seq, key = heapq.heappop(self._heap)
            entry = live.get(key)
            if entry is None or entry[1] != seq:
                continue  # superseded or cancelled: a stale firing
            del live[key]
            yield key, entry[2]

    def _compact(self) -> None:
        self._heap = [(d, s, k) for k, (d, s, _) in self._live.items()]
        heapq.heapify(self._heap)
