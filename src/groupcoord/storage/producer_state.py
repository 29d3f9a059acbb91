"""Per-partition producer state: epochs, sequences, open transactions, the last stable offset.

Kafka's ``ProducerStateManager`` in small. For every producer id that wrote to the partition it
keeps the epoch, the last sequence and offset of its latest data batch, the coordinator epoch of
its latest marker, and the first offset of its open transaction, if any. From the open
transactions follows the **last stable offset** (LSO): the first offset of the earliest open
transaction, or the log end when none is open (a single node: the high watermark is the log
end). A read_committed consumer reads only below it.

A COMMIT or ABORT marker closes the producer's open transaction and yields a
:class:`CompletedTxn`; an aborted one becomes an :class:`~.txnindex.AbortedTxn` entry of the
segment holding the marker. The state is not snapshotted (Kafka writes ``.snapshot`` files): the
log rebuilds it by reading the partition's batch headers once (and decoding its markers).
"""

from __future__ import annotations

from dataclasses import dataclass

from groupcoord.errors import ErrorCode

from .batch import BatchHeader
from .control import ControlType, EndTxnMarker
from .txnindex import AbortedTxn

__all__ = ["CompletedTxn", "ProducerEntry", "ProducerStateManager"]

_SEQ_WRAP = 1 << 31


@dataclass(slots=True, kw_only=True)
class ProducerEntry:
    producer_id: int
    epoch: int
    last_sequence: int = -1
    last_offset: int = -1
    last_timestamp: int = -1
    coordinator_epoch: int = -1
    #: first offset of the producer's open transaction on this partition
    current_txn_first_offset: int | None = None


@dataclass(frozen=True, slots=True, kw_only=True)
class CompletedTxn:
    producer_id: int
    first_offset: int
    last_offset: int
    aborted: bool


class ProducerStateManager:
    __slots__ = ("_aborted", "_ongoing", "_producers")

    def __init__(self) -> None:
        self._producers: dict[int, ProducerEntry] = {}
        self._ongoing: dict[int, int] = {}  # producer id -> first offset of its open transaction
        self._aborted: list[AbortedTxn] = []  # in marker order

    # -- queries -------------------------------------------------------------------------------
    def producer(self, producer_id: int) -> ProducerEntry | None:
        return self._producers.get(producer_id)

    def producers(self) -> list[ProducerEntry]:
        return list(self._producers.values())

    def first_unstable_offset(self) -> int | None:
        return min(self._ongoing.values()) if self._ongoing else None

    def last_stable_offset(self, log_end_offset: int) -> int:
        first = self.first_unstable_offset()
        return log_end_offset if first is None else min(first, log_end_offset)

    def ongoing(self) -> dict[int, int]:
        return dict(self._ongoing)

    def aborted(self) -> list[AbortedTxn]:
        return list(self._aborted)

    def collect_aborted(self, fetch_offset: int, upper_bound: int) -> list[AbortedTxn]:
        """Aborted transactions overlapping ``[fetch_offset, upper_bound)`` (Kafka's
        ``collectAbortedTxns``): the marker at or past the fetch offset, the first offset below
        the bound."""
        return [a for a in self._aborted if a.last_offset >= fetch_offset and a.first_offset < upper_bound]

    # -- validation ----------------------------------------------------------------------------
    def check(self, h: BatchHeader) -> ErrorCode:
        """Whether a batch may be appended as far as epochs go (Kafka's ``ProducerAppendInfo``).

        A batch (data or marker) from an epoch older than the producer's current one is
        INVALID_PRODUCER_EPOCH: its producer has been fenced. Sequence numbers of idempotent
        producers are checked by the broker before the append.
        """
        if h.producer_id < 0:
            return ErrorCode.NONE
        entry = self._producers.get(h.producer_id)
        if entry is not None and h.producer_epoch < entry.epoch:
            return ErrorCode.INVALID_PRODUCER_EPOCH
        return ErrorCode.NONE

    # -- updates -------------------------------------------------------------------------------
    def update(self, h: BatchHeader, marker: EndTxnMarker | None = None) -> CompletedTxn | None:
        """Account for a batch appended at ``h.base_offset`` (``marker``: its control record)."""
        pid = h.producer_id
        if pid < 0:
            return None
        entry = self._producers.get(pid)
        if entry is None:
            entry = self._producers[pid] = ProducerEntry(producer_id=pid, epoch=h.producer_epoch)
        elif h.producer_epoch > entry.epoch:
            entry.epoch = h.producer_epoch
            entry.last_sequence = -1  # a new epoch starts its sequences again
        entry.last_timestamp = h.max_timestamp
        if h.is_control:
            if marker is None:
                return None
            entry.coordinator_epoch = marker.coordinator_epoch
            first = entry.current_txn_first_offset
            entry.current_txn_first_offset = None
            if first is None:
                return None
            del self._ongoing[pid]
            done = CompletedTxn(
                producer_id=pid,
                first_offset=first,
                last_offset=h.base_offset,
                aborted=marker.type is ControlType.ABORT,
            )
            if done.aborted:
                lso = self.first_unstable_offset()
                self._aborted.append(
                    AbortedTxn(
                        producer_id=pid,
                        first_offset=first,
                        last_offset=h.base_offset,
                        last_stable_offset=h.base_offset + 1 if lso is None else lso,
                    )
                )
            return done
        if h.base_sequence >= 0:
            entry.last_sequence = (h.base_sequence + h.last_offset_delta) % _SEQ_WRAP
        entry.last_offset = h.last_offset
        if h.is_transactional and entry.current_txn_first_offset is None:
            entry.current_txn_first_offset = h.base_offset
            self._ongoing[pid] = h.base_offset
        return None
