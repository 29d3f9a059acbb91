"""The transaction state machine, as a table.

A transactional id's metadata is in exactly one :class:`TransactionState`. The byte each state
is stored as in ``__transaction_state`` and the name DescribeTransactions / ListTransactions
report are Kafka's (``TransactionState`` in Kafka's transaction coordinator).

Theory of operation. A producer's ``InitProducerId`` moves its id to **Empty** with a bumped
epoch. The first ``AddPartitionsToTxn`` / ``AddOffsetsToTxn`` starts a transaction
(**Ongoing**); ``EndTxn`` moves it to **PrepareCommit** or **PrepareAbort** (the decision, made
durable before the client is answered), after which the coordinator writes a COMMIT or ABORT
marker to every partition of the transaction and, once those are durable, records
**CompleteCommit** / **CompleteAbort**. A new transaction may start from Empty or either
Complete state. When a transaction must be aborted by the coordinator rather than the client
(a new producer instance called ``InitProducerId``, or the transaction timed out) the epoch is
bumped first, fencing the old producer: **PrepareEpochFence**, an in-memory step Kafka never
writes to the log, which continues at once to PrepareAbort. **Dead** is the state of an id
idle for ``transactional.id.expiration.ms`` in Empty or a Complete state: the coordinator's
timer writes its tombstone and forgets it
(``TransactionCoordinatorShard._expire_transactional_ids``).

:data:`VALID_PREVIOUS_STATES` is the rule every transition checks; :data:`TRANSITION_CAUSES`
says what drives each edge and feeds the generated page (docs/transactions-state-machine.md).
"""

from __future__ import annotations

import enum


class TransactionState(enum.Enum):
    """A transactional id's state; the value is the byte written to ``__transaction_state``."""

    EMPTY = 0
    ONGOING = 1
    PREPARE_COMMIT = 2
    PREPARE_ABORT = 3
    COMPLETE_COMMIT = 4
    COMPLETE_ABORT = 5
    DEAD = 6
    PREPARE_EPOCH_FENCE = 7

    @property
    def display_name(self) -> str:
        """The name DescribeTransactions and ListTransactions report."""
        return _NAMES[self]

    @classmethod
    def from_byte(cls, b: int) -> TransactionState:
        try:
            return cls(b)
        except ValueError:
            raise ValueError(f"unknown transaction state byte {b}") from None

    @classmethod
    def from_name(cls, name: str) -> TransactionState | None:
        return _BY_NAME.get(name)


S = TransactionState

_NAMES: dict[TransactionState, str] = {
    S.EMPTY: "Empty",
    S.ONGOING: "Ongoing",
    S.PREPARE_COMMIT: "PrepareCommit",
    S.PREPARE_ABORT: "PrepareAbort",
    S.COMPLETE_COMMIT: "CompleteCommit",
    S.COMPLETE_ABORT: "CompleteAbort",
    S.DEAD: "Dead",
    S.PREPARE_EPOCH_FENCE: "PrepareEpochFence",
}
_BY_NAME = {v: k for k, v in _NAMES.items()}

#: Display order of the generated page.
STATE_ORDER: tuple[TransactionState, ...] = (
    S.EMPTY,
    S.ONGOING,
    S.PREPARE_COMMIT,
    S.PREPARE_ABORT,
    S.COMPLETE_COMMIT,
    S.COMPLETE_ABORT,
    S.PREPARE_EPOCH_FENCE,
    S.DEAD,
)

#: target state -> the states it may be entered from (Kafka's ``validPreviousStates``).
VALID_PREVIOUS_STATES: dict[TransactionState, frozenset[TransactionState]] = {
    S.EMPTY: frozenset({S.EMPTY, S.COMPLETE_COMMIT, S.COMPLETE_ABORT}),
    S.ONGOING: frozenset({S.ONGOING, S.EMPTY, S.COMPLETE_COMMIT, S.COMPLETE_ABORT}),
    S.PREPARE_COMMIT: frozenset({S.ONGOING}),
    S.PREPARE_ABORT: frozenset({S.ONGOING, S.PREPARE_EPOCH_FENCE}),
    S.COMPLETE_COMMIT: frozenset({S.PREPARE_COMMIT}),
    S.COMPLETE_ABORT: frozenset({S.PREPARE_ABORT}),
    S.DEAD: frozenset({S.EMPTY, S.COMPLETE_COMMIT, S.COMPLETE_ABORT}),
    S.PREPARE_EPOCH_FENCE: frozenset({S.ONGOING}),
}

#: (from, to) -> what drives that edge. Every valid edge is listed (a test checks it).
TRANSITION_CAUSES: dict[tuple[TransactionState, TransactionState], str] = {
    (S.EMPTY, S.EMPTY): "InitProducerId (epoch bump)",
    (S.COMPLETE_COMMIT, S.EMPTY): "InitProducerId (epoch bump)",
    (S.COMPLETE_ABORT, S.EMPTY): "InitProducerId (epoch bump)",
    (S.EMPTY, S.ONGOING): "AddPartitionsToTxn / AddOffsetsToTxn",
    (S.COMPLETE_COMMIT, S.ONGOING): "AddPartitionsToTxn / AddOffsetsToTxn",
    (S.COMPLETE_ABORT, S.ONGOING): "AddPartitionsToTxn / AddOffsetsToTxn",
    (S.ONGOING, S.ONGOING): "AddPartitionsToTxn / AddOffsetsToTxn (new partitions)",
    (S.ONGOING, S.PREPARE_COMMIT): "EndTxn(commit)",
    (S.ONGOING, S.PREPARE_ABORT): "EndTxn(abort)",
    (S.ONGOING, S.PREPARE_EPOCH_FENCE): "InitProducerId of a new instance, or transaction timeout",
    (S.PREPARE_EPOCH_FENCE, S.PREPARE_ABORT): "coordinator abort with the bumped epoch",
    (S.PREPARE_COMMIT, S.COMPLETE_COMMIT): "COMMIT markers durable on every partition",
    (S.PREPARE_ABORT, S.COMPLETE_ABORT): "ABORT markers durable on every partition",
    (S.EMPTY, S.DEAD): "idle for transactional.id.expiration.ms: tombstoned, forgotten",
    (S.COMPLETE_COMMIT, S.DEAD): "idle for transactional.id.expiration.ms: tombstoned, forgotten",
    (S.COMPLETE_ABORT, S.DEAD): "idle for transactional.id.expiration.ms: tombstoned, forgotten",
}

#: States written to ``__transaction_state`` by this coordinator (PrepareEpochFence and Dead
#: are not: the first is an in-memory step, the second is a tombstone, as in Kafka).
LOGGED_STATES: frozenset[TransactionState] = frozenset(
    {S.EMPTY, S.ONGOING, S.PREPARE_COMMIT, S.PREPARE_ABORT, S.COMPLETE_COMMIT, S.COMPLETE_ABORT}
)


def can_transition(src: TransactionState, dst: TransactionState) -> bool:
    return src in VALID_PREVIOUS_STATES[dst]
