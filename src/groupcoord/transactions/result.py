"""What a transaction coordinator call returns (the same shape as the group coordinator's result).

The shard never answers, writes or appends itself. Each entry point returns a :class:`TxnResult`:

* ``responses``: ``(reply, response)`` pairs to complete now;
* ``log_writes``: :class:`TxnLogWrite` values, records for one ``__transaction_state`` partition
  and a completion naming what they were for; the runtime appends them and hands each back to
  ``complete_write`` once durable (or failed);
* ``marker_writes``: :class:`MarkerWrite` values, the COMMIT or ABORT control batch to append to
  every partition of a transaction; the runtime hands each back to ``complete_markers`` once
  every marker is durable (or one failed), and the shard then records the transaction complete.

Timers are keyed (:mod:`groupcoord.transactions.timers`); the runtime asks the shard for its
next deadline and calls ``poll`` when it is due.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from groupcoord.transactions.records import TxnRecord

Reply = Callable[[Any], None]


@dataclass(frozen=True, slots=True, eq=False)
class TxnLogWrite:
    """Records to append to one ``__transaction_state`` partition, and what they were for."""

    partition: int
    records: tuple[TxnRecord, ...]
    completion: object


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


class TxnResult:
    __slots__ = ("log_writes", "marker_writes", "responses")

    def __init__(self) -> None:
        self.responses: list[tuple[Reply, Any]] = []
        self.log_writes: list[TxnLogWrite] = []
        self.marker_writes: list[MarkerWrite] = []

    def __repr__(self) -> str:
        return (
            f"TxnResult(responses={len(self.responses)}, log_writes={len(self.log_writes)}, "
            f"marker_writes={len(self.marker_writes)})"
        )
