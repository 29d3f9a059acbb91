"""The transaction markers a transaction coordinator shard asks its host to write.

The shard returns the result every shard returns
(:class:`~groupcoord.coordinator.result.CoordinatorResult`): responses, ``writes`` (records for its
``__transaction_state`` partition, each handed back to ``complete_write`` once durable or
failed) and ``events``, here :class:`MarkerWrite` values: the COMMIT or ABORT control batch to
append to every partition of a transaction. The host
(:class:`~groupcoord.runtime.txn_runtime.TxnRuntime`) hands each back to ``complete_markers``
once every marker is durable (or one failed), and the shard then records the transaction
complete.

Timers are keyed (:mod:`groupcoord.transactions.timers`); the runtime asks the shard for its
next deadline and calls ``poll`` when it is due.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

Reply = Callable[[Any], None]


@dataclass(frozen=True, slots=True, kw_only=True, eq=False)
class MarkerWrite:
    """A control batch (COMMIT when ``commit``, else ABORT) for each of ``partitions``.

    Written with the transaction's producer id and epoch and the coordinator epoch, as Kafka's
    ``WriteTxnMarkers`` asks a partition leader to.
    """

    transactional_id: str
    producer_id: int
    producer_epoch: int
    commit: bool
    coordinator_epoch: int
    partitions: tuple[tuple[str, int], ...]
