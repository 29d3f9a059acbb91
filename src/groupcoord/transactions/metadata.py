"""A transactional id's in-memory metadata (Kafka's ``TransactionMetadata``).

Only the shard mutates it. The durable fields change only by replaying a
:class:`~groupcoord.transactions.records.TransactionLogValue` (:meth:`apply`); ``pending`` names
the state a write in flight will move to (Kafka's ``pendingState``): while it is set, requests
that would transition the id get CONCURRENT_TRANSACTIONS.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from groupcoord.transactions.api import NO_PRODUCER_EPOCH, NO_PRODUCER_ID
from groupcoord.transactions.records import TransactionLogValue
from groupcoord.transactions.state import VALID_PREVIOUS_STATES, TransactionState

#: An epoch this high cannot be bumped: the id is rotated instead (``isEpochExhausted``).
EPOCH_EXHAUSTED_AT = 0x7FFF - 1


class IllegalTransitionError(RuntimeError):
    """A transition the table does not allow (a coordinator bug, never a client error)."""


@dataclass(slots=True, kw_only=True)
class TransactionMetadata:
    transactional_id: str
    producer_id: int
    producer_epoch: int = NO_PRODUCER_EPOCH
    last_producer_id: int = NO_PRODUCER_ID
    last_producer_epoch: int = NO_PRODUCER_EPOCH
    timeout_ms: int
    state: TransactionState = TransactionState.EMPTY
    partitions: set[tuple[str, int]] = field(default_factory=set)
    start_ms: int = -1
    last_update_ms: int = -1
    pending: TransactionState | None = None

    def transition(self, to: TransactionState) -> None:
        if self.state not in VALID_PREVIOUS_STATES[to]:
            raise IllegalTransitionError(
                f"transaction {self.transactional_id!r}: {self.state.display_name} -> "
                f"{to.display_name} is not a valid transition"
            )
        self.state = to

    def value(
        self,
        *,
        state: TransactionState,
        producer_id: int | None = None,
        producer_epoch: int | None = None,
        last_producer_id: int | None = None,
        timeout_ms: int | None = None,
        partitions: set[tuple[str, int]] | None = None,
        start_ms: int | None = None,
        now_ms: int,
    ) -> TransactionLogValue:
        """The record value of a transit from this metadata (fields not given are kept)."""
        parts = self.partitions if partitions is None else partitions
        by_topic: dict[str, list[int]] = {}
        for t, p in sorted(parts):
            by_topic.setdefault(t, []).append(p)
        return TransactionLogValue(
            producer_id=self.producer_id if producer_id is None else producer_id,
            producer_epoch=self.producer_epoch if producer_epoch is None else producer_epoch,
            timeout_ms=self.timeout_ms if timeout_ms is None else timeout_ms,
            state=state,
            partitions=tuple((t, tuple(ps)) for t, ps in by_topic.items()),
            last_update_ms=now_ms,
            start_ms=self.start_ms if start_ms is None else start_ms,
            previous_producer_id=self.last_producer_id if last_producer_id is None else last_producer_id,
        )

    def apply(self, v: TransactionLogValue, *, last_producer_epoch: int | None = None) -> None:
        """Replay a durable value (the one way the durable fields change)."""
        if v.producer_epoch != self.producer_epoch or v.producer_id != self.producer_id:
            self.last_producer_epoch = (
                self.producer_epoch if last_producer_epoch is None else last_producer_epoch
            )
        self.producer_id = v.producer_id
        self.producer_epoch = v.producer_epoch
        self.last_producer_id = v.previous_producer_id
        self.timeout_ms = v.timeout_ms
        self.state = v.state
        self.partitions = {(t, p) for t, ps in v.partitions for p in ps}
        self.start_ms = v.start_ms
        self.last_update_ms = v.last_update_ms

    @classmethod
    def loaded(cls, transactional_id: str, v: TransactionLogValue) -> TransactionMetadata:
        m = cls(transactional_id=transactional_id, producer_id=v.producer_id, timeout_ms=v.timeout_ms)
        m.apply(v, last_producer_epoch=NO_PRODUCER_EPOCH)
        return m
