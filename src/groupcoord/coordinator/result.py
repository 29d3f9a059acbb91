"""What a shard call returns: a coordinator's only way to act on the world.

The type every coordinator shard returns (the group coordinator's
:class:`~groupcoord.coordinator.shard.GroupCoordinatorShard` and the transaction coordinator's
:class:`~groupcoord.transactions.shard.TransactionCoordinatorShard`); it knows no coordinator.
A shard never answers a client, writes a record or publishes an event itself. Every entry point
(a request handler, a timer expiry, a write completion, a load step) returns a
:class:`CoordinatorResult` listing what should happen, and the one runtime
(:mod:`groupcoord.runtime.coordinator_runtime`) does it:

* ``responses``: ``(reply, response)`` pairs to complete now. ``reply`` is the opaque handle
  the caller passed with its request (Kafka's response future); a parked JoinGroup or SyncGroup
  keeps its handle in the member until a later call completes it.
* ``writes``: :class:`PendingWrite` values, each a batch of records for the shard's partition of
  its internal topic (``__consumer_offsets``, ``__transaction_state``) plus a *completion*: a
  small value naming what the write was for (an assignment, an offset commit, ...). The runtime
  appends the records. A write that carries its own answer (``reply`` and ``response``: Kafka
  4.x's write operation returning records *and* a response, as an OffsetCommit's and a
  consumer group heartbeat's do) is
  answered by the runtime once durable, without a call into the shard: the runtime puts the
  write in the shard's :attr:`Shard.durable` and the shard takes it in (its offsets become
  visible) at the start of its next call, as Kafka's shard reads at the runtime's last committed
  offset. Every other outcome goes back to the shard's ``complete_write``: any failed write
  (the shard reverts what the write would have made permanent and answers the mapped error), a
  durable write the shard asked to hear of (``wake``: a require_stable OffsetFetch waits for
  it), and every durable write without an answer of its own (an assignment: the shard replays
  the records if the group has not moved on meanwhile, and answers the requests that waited).
  This is Kafka 4.x's ``CoordinatorResult`` with its append future; the completion value stands
  in for the Java lambda attached to that future.
* ``events``: what else the shard's host does for it: group events to publish
  (:class:`~groupcoord.coordinator.events.GroupEvent`), transaction markers to write
  (:class:`~groupcoord.transactions.result.MarkerWrite`).

Timers are not part of the result: as Kafka 4.x's shard schedules through the
``CoordinatorTimer`` it is given, the shard arms and cancels keyed timers
(:mod:`groupcoord.coordinator.timers`) directly, and the runtime asks for the next deadline and
calls ``poll`` when it is due.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from mypy_extensions import mypyc_attr

from groupcoord.errors import ErrorCode
from groupcoord.timer import KeyedTimer

#: A caller's handle for one response (Kafka's response future).
Reply = Callable[[Any], None]


class PendingWrite:
    """Records to append to one partition of a coordinator's internal topic, and what they were for.

    A plain class, not a dataclass: every write makes one, and compiled (setup.py) a plain
    class's ``__init__`` is native while a dataclass's stays the interpreted one it generates.
    """

    __slots__ = (
        "completion",
        "partition",
        "producer_epoch",
        "producer_id",
        "records",
        "reply",
        "response",
        "wake",
    )

    def __init__(
        self,
        partition: int,
        records: tuple[Any, ...],
        completion: Any,
        producer_id: int = -1,
        producer_epoch: int = -1,
        reply: Reply | None = None,
        response: Any = None,
    ) -> None:
        self.partition = partition
        self.records = records
        #: What the shard needs to take the write in once durable (:attr:`Shard.durable`), or to
        #: finish it in ``complete_write``.
        self.completion = completion
        #: A transactional write (TxnOffsetCommit): the records go in a transactional batch of
        #: this producer id and epoch; -1 for every other write.
        self.producer_id = producer_id
        self.producer_epoch = producer_epoch
        #: The write's own answer (None: the shard answers in ``complete_write``): the runtime
        #: completes ``reply`` with ``response`` once the write is durable.
        self.reply = reply
        self.response = response
        #: Set by the shard while the write is in flight: tell it of the write's success too
        #: (``complete_write``), not only of a failure.
        self.wake = False

    def __repr__(self) -> str:
        return (
            f"PendingWrite(partition={self.partition}, records={self.records!r}, "
            f"completion={self.completion!r}, producer_id={self.producer_id}, "
            f"producer_epoch={self.producer_epoch}, response={self.response!r})"
        )


class CoordinatorResult:
    """The responses, writes and events of one shard call (see the module docstring)."""

    __slots__ = ("events", "responses", "writes")

    def __init__(self) -> None:
        self.responses: list[tuple[Reply, Any]] = []
        self.writes: list[PendingWrite] = []
        self.events: list[Any] = []

    def respond(self, reply: Reply, response: Any) -> None:
        """Complete ``reply`` with ``response`` (in the order the shard answers)."""
        self.responses.append((reply, response))

    def __repr__(self) -> str:
        return (
            f"CoordinatorResult(responses={len(self.responses)}, writes={len(self.writes)}, "
            f"events={len(self.events)})"
        )


@mypyc_attr(allow_interpreted_subclasses=True)
class Shard:
    """What every coordinator shard offers the runtime (Kafka 4.x's ``CoordinatorShard``).

    Request handlers are each shard type's own (the caller calls them and hands the result to
    the runtime); these are the calls the runtime makes itself. A base class, not a protocol:
    compiled (setup.py), the runtime's calls into a shard that derives from it are direct ones.
    """

    #: The shard's timers (Kafka 4.x's ``CoordinatorTimer``, which its runtime hands the shard):
    #: after each call the runtime arms the shard's loop timer at their earliest deadline, read
    #: here rather than by a call back into the shard; the shard expires them in :meth:`poll`.
    timer: KeyedTimer[Any, Any]

    #: The writes that carried their own answer (:attr:`PendingWrite.reply`) and are durable, in
    #: the order they became so: the runtime adds each one here as it answers it (no call into
    #: the shard), and the shard takes them in at the start of its next call, before anything
    #: can read what they changed (Kafka 4.x's runtime advancing the shard's last committed
    #: offset). Starts empty.
    durable: list[PendingWrite]

    def complete_write(self, write: PendingWrite, error: ErrorCode) -> CoordinatorResult:
        """``write`` failed with ``error``, or is durable (``NONE``) and either has no answer of
        its own or asked to be told (:attr:`PendingWrite.wake`)."""
        raise NotImplementedError

    def poll(self) -> CoordinatorResult:
        """Run every timer due at the clock's current time."""
        raise NotImplementedError

    def on_loaded(self) -> CoordinatorResult:
        """Every record of the shard's partition has been replayed."""
        raise NotImplementedError

    def on_unloaded(self) -> CoordinatorResult:
        """The shard's partition is led elsewhere now: answer what waits, drop the state."""
        raise NotImplementedError
