"""Producer ids and idempotent-producer sequence checks.

Producer ids come from a counter persisted in the data dir in blocks (one fsynced write per
1000 ids), so an id is never handed out twice, across restarts included.

Per partition, each producer id keeps its epoch and its last five batches (first/last
sequence and offsets). A retried batch that matches one of them is a duplicate: it is not
appended again and is answered with the offsets it got the first time, as Kafka does. A
sequence that does not follow the last one is OUT_OF_ORDER_SEQUENCE_NUMBER; an older epoch is
INVALID_PRODUCER_EPOCH. The table lives in memory; on a partition's first produce after a
restart it is seeded from the partition's producer state, which the log loaded from its
producer snapshot when it opened (``Broker.producers_for``), so nothing is read then; a
producer the partition has no state for is accepted at whatever sequence it carries, as Kafka
does for an unknown producer id.
"""

from __future__ import annotations

import os
from collections import deque
from dataclasses import dataclass, field
from pathlib import Path

from groupcoord.errors import DataDirError, ErrorCode

INT32_MAX = 2147483647
RETAINED_BATCHES = 5
_BLOCK = 1000


class ProducerIdAllocator:
    def __init__(self, path: Path) -> None:
        self._path = path
        try:
            self._next = int(path.read_text(encoding="utf-8").strip() or "0")
        except FileNotFoundError:
            self._next = 0
        except ValueError:  # not UTF-8, or not a number
            raise DataDirError(f"{path} does not hold a producer id (damaged file)") from None
        self._limit = self._next  # ids below this limit are reserved on disk

    def allocate(self) -> int:
        if self._next >= self._limit:
            self._limit = self._next + _BLOCK
            tmp = self._path.with_suffix(".tmp")
            with open(tmp, "w") as f:
                f.write(f"{self._limit}\n")
                f.flush()
                os.fsync(f.fileno())
            os.replace(tmp, self._path)
        pid = self._next
        self._next += 1
        return pid


@dataclass(frozen=True, slots=True, kw_only=True)
class BatchMeta:
    first_seq: int
    last_seq: int
    base_offset: int
    last_offset: int
    log_append_time: int


@dataclass(slots=True, kw_only=True)
class ProducerEntry:
    epoch: int
    batches: deque[BatchMeta] = field(default_factory=lambda: deque(maxlen=RETAINED_BATCHES))


@dataclass(frozen=True, slots=True, kw_only=True)
class SequenceCheck:
    """The outcome of checking one batch: append it, answer a duplicate, or fail."""

    error: ErrorCode = ErrorCode.NONE
    duplicate: BatchMeta | None = None


def _next_seq(seq: int, count: int) -> int:
    return (seq + count) % (INT32_MAX + 1)


class PartitionProducers:
    """Sequence state of every idempotent producer writing to one partition."""

    def __init__(self) -> None:
        self._entries: dict[int, ProducerEntry] = {}

    def check(self, producer_id: int, epoch: int, base_seq: int, record_count: int) -> SequenceCheck:
        entry = self._entries.get(producer_id)
        if entry is None:
            return SequenceCheck()
        if epoch < entry.epoch:
            return SequenceCheck(error=ErrorCode.INVALID_PRODUCER_EPOCH)
        if epoch > entry.epoch:
            if base_seq != 0:
                return SequenceCheck(error=ErrorCode.OUT_OF_ORDER_SEQUENCE_NUMBER)
            return SequenceCheck()
        last_seq = _next_seq(base_seq, record_count - 1)
        for meta in entry.batches:
            if meta.first_seq == base_seq and meta.last_seq == last_seq:
                return SequenceCheck(duplicate=meta)
        if entry.batches:
            expected = _next_seq(entry.batches[-1].last_seq, 1)
            if base_seq != expected:
                return SequenceCheck(error=ErrorCode.OUT_OF_ORDER_SEQUENCE_NUMBER)
        return SequenceCheck()

    def forget(self, producer_ids: list[int]) -> None:
        """Drop expired producers (their next batch is then checked as an unknown producer's)."""
        for pid in producer_ids:
            self._entries.pop(pid, None)

    def record(
        self,
        producer_id: int,
        epoch: int,
        base_seq: int,
        record_count: int,
        base_offset: int,
        last_offset: int,
        log_append_time: int,
    ) -> None:
        entry = self._entries.get(producer_id)
        if entry is None or entry.epoch != epoch:
            entry = self._entries[producer_id] = ProducerEntry(epoch=epoch)
        entry.batches.append(
            BatchMeta(
                first_seq=base_seq,
                last_seq=_next_seq(base_seq, record_count - 1),
                base_offset=base_offset,
                last_offset=last_offset,
                log_append_time=log_append_time,
            )
        )
