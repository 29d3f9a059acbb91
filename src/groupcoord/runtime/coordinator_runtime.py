"""One runtime for every coordinator shard: it appends, completes on durability, runs timers, loads.

Kafka 4.x's ``CoordinatorRuntime``: a coordinator is a set of shards, one per partition of its
internal topic (``__consumer_offsets`` for groups, ``__transaction_state`` for transactions),
each a sans-I/O state machine (:class:`~groupcoord.coordinator.result.Shard`) that the runtime
drives. The runtime knows no
coordinator: it hosts any shard and applies the
:class:`~groupcoord.coordinator.result.CoordinatorResult` each of its calls returns:

1. events go to the event sink (group events to publish, transaction markers to write: the host
   decides);
2. responses are completed, in the order the shard produced them;
3. each pending write's records go to the record sink (the shard's own partition of the internal
   topic in the broker, a list in tests and the simulator). When the sink reports a write that
   carries its own answer durable (an OffsetCommit's, a consumer group heartbeat's: Kafka 4.x's
   write operation returns its records and its response), the runtime completes that answer
   and puts the write in the shard's ``durable`` list, which the shard takes in at its next
   call: the shard is not entered again. Any other outcome (a failed write, a write with no
   answer of its own, one the shard asked to hear of) goes back to the shard
   (``complete_write``) and that result is applied in turn;
4. the shard's earliest timer is armed on the timer service it was given (the broker's loop
   timers), and a due timer runs the shard's ``poll``.

A response callback may call straight back into the runtime (the next request of a connection, a
client's immediate rejoin). Shards are consistent between calls, so that is safe; responses
produced meanwhile are queued behind the ones being delivered, so every caller sees its responses
in the order the shards produced them.

Loading is by replay: :meth:`CoordinatorRuntime.load` makes the partition's shard (answering
COORDINATOR_LOAD_IN_PROGRESS until loaded), the host replays the partition's records into it, and
:meth:`CoordinatorRuntime.loaded` calls its ``on_loaded``. :meth:`CoordinatorRuntime.unload`
calls ``on_unloaded`` and forgets it.
"""

from __future__ import annotations

import functools
from collections import deque
from collections.abc import Callable, Sequence
from typing import Any, Generic, Protocol, TypeVar

from groupcoord.clock import Clock
from groupcoord.coordinator.result import CoordinatorResult, PendingWrite, Shard
from groupcoord.errors import ErrorCode
from groupcoord.handling.loop_timers import LoopTimers


class RecordSink(Protocol):
    def append(self, partition: int, records: Sequence[Any], done: Callable[[ErrorCode], None]) -> None:
        """Write ``records`` to partition ``partition`` of the coordinator's internal topic.

        Call ``done(ErrorCode.NONE)`` once durable, or ``done(<storage error>)`` on failure;
        ``done`` may be called synchronously inside ``append`` or later.
        """
        ...


class TransactionalRecordSink(Protocol):
    def append_transactional(
        self,
        partition: int,
        records: Sequence[Any],
        producer_id: int,
        producer_epoch: int,
        done: Callable[[ErrorCode], None],
    ) -> None:
        """As :meth:`RecordSink.append`, in a transactional batch of the producer (TxnOffsetCommit).

        A sink without this method takes transactional writes through ``append``.
        """
        ...


#: :meth:`TransactionalRecordSink.append_transactional` as a bound method.
TransactionalAppend = Callable[[int, Sequence[Any], int, int, Callable[[ErrorCode], None]], None]

S = TypeVar("S", bound=Shard)


class CoordinatorRuntime(Generic[S]):
    """The shards of one coordinator, by partition.

    Args:
        new_shard: makes the shard of a partition (loading: see :meth:`load`).
        clock: protocol time (which shards :meth:`poll` runs).
        record_sink: where writes go (see :class:`RecordSink`); a sink with
            ``append_transactional`` takes transactional writes there.
        event_sink: receives every event of every shard.
        timers: the timer service the shards' deadlines are armed on (the broker's loop timers);
            without one, the driver calls :meth:`poll` (tests, the simulator).
        name: the timer keys' prefix.
    """

    def __init__(
        self,
        new_shard: Callable[[int], S],
        clock: Clock,
        *,
        record_sink: RecordSink,
        event_sink: Callable[[Any], None] | None = None,
        timers: LoopTimers | None = None,
        name: str = "coordinator",
    ) -> None:
        self._new_shard = new_shard
        self._clock = clock
        self._sink = record_sink
        # Looked up once, not isinstance-checked: a runtime-checkable protocol is not usable from
        # compiled code (setup.py), and a sink need not declare the protocol it implements.
        self._append_transactional: TransactionalAppend | None = getattr(
            record_sink, "append_transactional", None
        )
        self._event_sink = event_sink
        self._timers = timers
        self._name = name
        self._shards: dict[int, S] = {}
        #: Each shard's loop timer: the deadline it is armed for, and its callback (made once).
        self._armed: dict[int, int] = {}
        self._callbacks: dict[int, Callable[[], None]] = {}
        #: Each shard's earliest deadline as last read, and the shards called since (for
        #: next_deadline and poll: the drivers without loop timers).
        self._deadlines: dict[int, int | None] = {}
        self._stale: set[int] = set()
        self._replies: deque[tuple[Callable[[Any], None], Any]] = deque()
        self._delivering = False
        self._closed = False

    # ------------------------------------------------------------------ shards
    def shard(self, partition: int) -> S | None:
        return self._shards.get(partition)

    def shards(self) -> list[S]:
        return list(self._shards.values())

    def partitions(self) -> list[int]:
        return sorted(self._shards)

    def load(self, partition: int) -> S:
        """Make ``partition``'s shard, loading: the host replays the partition into it, then
        calls :meth:`loaded`."""
        if partition in self._shards:
            raise ValueError(f"partition {partition} already has a shard")
        shard = self._shards[partition] = self._new_shard(partition)
        self._deadlines[partition] = shard.timer.next_deadline()
        return shard

    def loaded(self, partition: int) -> None:
        shard = self._shards[partition]
        self.apply(partition, shard.on_loaded())

    def unload(self, partition: int) -> None:
        """Leadership of ``partition`` moved: its shard answers what waits and is dropped."""
        shard = self._shards.get(partition)
        if shard is None:
            return
        result = shard.on_unloaded()
        del self._shards[partition]
        self._deadlines.pop(partition, None)
        self._disarm(partition)
        self.apply(partition, result)

    # ------------------------------------------------------------------ applying results
    def apply(self, partition: int, result: CoordinatorResult) -> None:
        """Do what a call into ``partition``'s shard asked for (see the module docstring)."""
        if result.events and self._event_sink is not None:
            for event in result.events:
                self._event_sink(event)
        if result.responses:
            self._replies.extend(result.responses)
        owner = self._shards.get(partition) if result.writes else None
        for write in result.writes:
            done = functools.partial(self._written, partition, owner, write)
            if write.producer_id >= 0 and self._append_transactional is not None:
                self._append_transactional(
                    write.partition, write.records, write.producer_id, write.producer_epoch, done
                )
            else:
                self._sink.append(write.partition, write.records, done)
        # The shard's timer is re-armed before its answers go out: a reply may lead straight
        # into the next request, which arms it again. For next_deadline and poll, the shard's
        # deadline is read when the driver asks.
        self._stale.add(partition)
        if self._timers is not None:
            shard = self._shards.get(partition)
            if shard is not None:
                self._arm(partition, shard.timer.next_deadline())
        if self._replies and not self._delivering:
            self._deliver()

    def respond(self, reply: Callable[[Any], None], response: Any) -> None:
        """Complete ``reply`` in order with the shards' responses (an answer no shard made)."""
        self._replies.append((reply, response))
        if not self._delivering:
            self._deliver()

    def _written(self, partition: int, owner: S | None, write: PendingWrite, error: ErrorCode) -> None:
        shard = self._shards.get(partition)
        if shard is None or shard is not owner:
            # unloaded meanwhile (what waited for the write was answered then), perhaps loaded
            # again since (the partition's leadership moved away and back): the new shard did
            # not make this write, and reads it from the log if it is there
            return
        reply = write.reply
        if reply is not None and error is ErrorCode.NONE:
            # Durable, with its answer made when it was written: answered here, and handed to
            # the shard's durable list for it to take in at its next call.
            shard.durable.append(write)
            self._replies.append((reply, write.response))
            if write.wake:  # something in the shard waits for this write (a stable fetch)
                self.apply(partition, shard.complete_write(write, error))
            elif not self._delivering:
                self._deliver()
            return
        self.apply(partition, shard.complete_write(write, error))

    def _deliver(self) -> None:
        self._delivering = True
        try:
            replies = self._replies
            while replies:
                reply, response = replies.popleft()
                reply(response)
        finally:
            self._delivering = False

    # ------------------------------------------------------------------ time
    def next_deadline(self) -> int | None:
        """The earliest deadline of any shard."""
        self._refresh()
        return min((d for d in self._deadlines.values() if d is not None), default=None)

    def _refresh(self) -> None:
        stale, self._stale = self._stale, set()
        for partition in stale:
            shard = self._shards.get(partition)
            if shard is not None:
                self._deadlines[partition] = shard.timer.next_deadline()

    def poll(self) -> None:
        """Run the timers due at the clock's current time, in each shard that has one."""
        self._refresh()
        now = self._clock.now_ms()
        due = [p for p, d in self._deadlines.items() if d is not None and d <= now]
        for partition in sorted(due):
            shard = self._shards.get(partition)
            if shard is not None:
                self.apply(partition, shard.poll())

    def _arm(self, partition: int, deadline: int | None) -> None:
        """Keep one loop timer per shard, armed no later than the shard's earliest deadline.

        Only a deadline earlier than the armed one re-arms it. A deadline that moved later (a
        member's session pushed out by each heartbeat or commit: in a shard of one group, its
        earliest deadline moves on nearly every call) leaves the loop timer where it was: it
        fires early, the shard's ``poll`` finds nothing due, and the timer is armed again at the
        deadline of then. One early wake-up per session instead of a reschedule per request.
        """
        timers = self._timers
        if timers is None or deadline is None or self._closed:
            return
        armed = self._armed.get(partition)
        if armed is not None and armed <= deadline:
            return
        self._armed[partition] = deadline
        callback = self._callbacks.get(partition)
        if callback is None:
            callback = self._callbacks[partition] = functools.partial(self._on_timer, partition)
        timers.schedule((self._name, partition), deadline, callback)

    def _disarm(self, partition: int) -> None:
        self._armed.pop(partition, None)
        self._callbacks.pop(partition, None)
        if self._timers is not None:
            self._timers.cancel((self._name, partition))

    def _on_timer(self, partition: int) -> None:
        self._armed.pop(partition, None)  # the loop timer that called us is spent
        shard = self._shards.get(partition)
        if shard is not None and not self._closed:
            self.apply(partition, shard.poll())

    def close(self) -> None:
        """Stop the timers (the broker is shutting down)."""
        self._closed = True
        if self._timers is not None:
            for partition in list(self._armed):
                self._timers.cancel((self._name, partition))
        self._armed.clear()
