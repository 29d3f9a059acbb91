"""One keyed timer service for every protocol deadline.

Scheduling a key replaces whatever timer that key had; cancelling is by key; an expired
entry whose key was rescheduled or cancelled in the meantime is ignored (a stale firing).
The structure is pure: it never reads a clock and never sleeps. Its owner asks for
:meth:`KeyedTimer.next_deadline`, arranges to be woken then (``loop.call_at`` in the
server, a loop over virtual time in tests and the simulator), and calls
:meth:`KeyedTimer.expire` with the current time.

Data structure: a binary heap of integers with lazy deletion. Each heap entry packs a deadline
and a sequence number into one int (``deadline << 40 | seq``), so entries order by deadline and
then by scheduling order; ``_keys`` maps the sequence number of each live timer to its key, and
``_live`` maps a key to the packed entry that is its live timer (payloads, when not ``None``,
sit in ``_payloads``). Rescheduling is dict writes and one heap push (O(log n)); cancelling is
dict deletes (O(1)). A heap entry is live exactly when its sequence number is in ``_keys``, so
telling a superseded entry from a live one hashes an int, never a key: the owner's host reading
:meth:`next_deadline` runs none of the keys' own code (a key's ``__hash__`` is its owner's).
Superseded heap entries are skipped when they surface, and the heap is
rebuilt from the live entries when garbage outnumbers them, so memory stays proportional to the
live timers even under constant rescheduling (every heartbeat reschedules its member's expiry).

Rescheduling creates no container object: ints are not tracked by CPython's cyclic garbage
collector, whereas a tuple per entry was. At 100,000 heartbeating members those tuples, each
living until its deadline and each replacing one that died, piled up in the collector's youngest
generation without ever tripping its allocation counter, so that when a collection finally ran
it walked 100,000+ objects (60-140 ms, measured in ``bench/scale_bench.py``).
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
_SEQ_BITS = 40
_SEQ_MASK = (1 << _SEQ_BITS) - 1


class KeyedTimer(Generic[K, T]):
    __slots__ = ("_head", "_heap", "_keys", "_live", "_payloads", "_seq")

    def __init__(self) -> None:
        self._heap: list[int] = []  # deadline << _SEQ_BITS | seq
        self._keys: dict[int, K] = {}  # seq of every live entry -> its key
        self._live: dict[K, int] = {}  # key -> its live entry
        self._payloads: dict[K, T] = {}  # key -> payload, for live timers with one
        self._seq = 0
        #: the earliest live entry, as :meth:`next_deadline` last found it; -1: not known.
        #: Every caller asks for the next deadline after each request (to re-arm its wake-up),
        #: and most requests push out a deadline that is not the earliest: this spares them
        #: the look-ups of the heap's top.
        self._head = -1

    def __len__(self) -> int:
        return len(self._live)

    def __contains__(self, key: object) -> bool:
        return key in self._live

    def schedule(self, key: K, deadline_ms: int, payload: T) -> None:
        """Arm ``key`` to fire at ``deadline_ms``, replacing any earlier timer of that key."""
        seq = self._seq = self._seq + 1
        if seq > _SEQ_MASK:
            seq = self._renumber()
        entry = (deadline_ms << _SEQ_BITS) | seq
        live = self._live
        old = live.get(key)
        if old is not None:
            del self._keys[old & _SEQ_MASK]  # its heap entry is stale from now on
        head = self._head
        if head >= 0:
            if entry < head:
                self._head = entry
            elif old == head:
                self._head = -1  # the earliest timer moved later
        live[key] = entry
        if payload is None:
            if self._payloads:
                self._payloads.pop(key, None)
        else:
            self._payloads[key] = payload
        self._keys[seq] = key
        heapq.heappush(self._heap, entry)
        if len(self._heap) > _COMPACT_MIN and len(self._heap) > _GARBAGE_FACTOR * len(self._live):
            self._compact()

    def schedule_if_absent(self, key: K, deadline_ms: int, payload: T) -> bool:
        if key in self._live:
            return False
        self.schedule(key, deadline_ms, payload)
        return True

    def cancel(self, key: K) -> bool:
        """Disarm ``key``; returns whether it was armed."""
        self._payloads.pop(key, None)
        entry = self._live.pop(key, None)
        if entry is None:
            return False
        del self._keys[entry & _SEQ_MASK]
        if entry == self._head:
            self._head = -1
        return True

    def deadline(self, key: K) -> int | None:
        entry = self._live.get(key)
        return None if entry is None else entry >> _SEQ_BITS

    def payload(self, key: K) -> T | None:
        return self._payloads.get(key)  # a key leaves _payloads whenever it leaves _live

    def next_deadline(self) -> int | None:
        """The earliest live deadline, or None when nothing is armed."""
        head = self._head
        if head >= 0:
            return head >> _SEQ_BITS
        heap = self._heap
        keys = self._keys
        while heap:
            entry = heap[0]
            if entry & _SEQ_MASK in keys:
                self._head = entry
                return entry >> _SEQ_BITS
            heapq.heappop(heap)  # superseded or cancelled
        return None

    def expire(self, now_ms: int) -> Iterator[tuple[K, T]]:
        """Yield ``(key, payload)`` for every timer due at ``now_ms``, earliest first.

        Each yielded key is disarmed before it is yielded, so the consumer may reschedule
        the same key (or cancel or schedule others) while iterating; a timer scheduled
        during iteration with a deadline ``<= now_ms`` is yielded in the same pass.
        """
        live = self._live
        keys = self._keys
        payloads = self._payloads
        heap = self._heap
        # Every entry with a deadline <= now_ms is below this bound, whatever its sequence number.
        bound = (now_ms + 1) << _SEQ_BITS
        self._head = -1
        # A schedule() made by the consumer while we are suspended may compact or renumber:
        # both rebuild the heap and the key index in place, so these names stay valid.
        while heap and heap[0] < bound:
            entry = heapq.heappop(heap)
            key = keys.pop(entry & _SEQ_MASK, None)
            if key is None:
                continue  # superseded or cancelled: a stale firing
            del live[key]
            self._head = -1
            yield key, payloads.pop(key, None)  # type: ignore[misc]

    def _compact(self) -> None:
        """Drop the superseded entries: the heap and the key index keep only live timers."""
        self._head = -1
        self._heap[:] = self._live.values()
        heapq.heapify(self._heap)
        self._keys.clear()
        self._keys.update((entry & _SEQ_MASK, key) for key, entry in self._live.items())

    def _renumber(self) -> int:
        """Give the live timers fresh sequence numbers 1..n, in their firing order, once the
        numbers run out (after 2**40 schedules); returns the next free one."""
        self._head = -1
        order = sorted(self._live.items(), key=lambda item: item[1])
        self._live.clear()
        self._keys.clear()
        self._heap.clear()
        for seq, (key, entry) in enumerate(order, 1):
            renumbered = (entry >> _SEQ_BITS << _SEQ_BITS) | seq
            self._live[key] = renumbered
            self._keys[seq] = key
            self._heap.append(renumbered)  # ascending, hence already a heap
        self._seq = len(order) + 1
        return self._seq
