"""Drives a TransactionCoordinatorShard under a ManualClock, applying its results as a runtime does.

Writes are kept in ``log`` (partition -> records, in append order) the way the runtime appends
them. By default every write and marker batch completes at once; with ``hold=True`` they wait in
``held_writes`` / ``held_markers`` until the test completes them (or fails them).
"""

from __future__ import annotations

import itertools
from typing import Any

from groupcoord.clock import ManualClock
from groupcoord.coordinator.result import CoordinatorResult, PendingWrite
from groupcoord.errors import ErrorCode
from groupcoord.transactions.api import (
    AddOffsetsToTxnRequest,
    AddPartitionsToTxnRequest,
    EndTxnRequest,
    InitProducerIdRequest,
)
from groupcoord.transactions.records import (
    TxnRecord,
    decode_key,
    decode_value,
    encode_key,
    encode_value,
)
from groupcoord.transactions.result import MarkerWrite
from groupcoord.transactions.shard import TransactionCoordinatorShard, TxnConfig

TIMEOUT = 60_000


class Harness:
    def __init__(self, *, clock: ManualClock | None = None, config: TxnConfig | None = None) -> None:
        self.clock = clock or ManualClock()
        self.config = config or TxnConfig(num_partitions=4)
        self._ids = itertools.count(1000)
        self.log: dict[int, list[tuple[bytes, bytes | None]]] = {}
        self.markers: list[MarkerWrite] = []
        self.hold = False
        self.held_writes: list[PendingWrite] = []
        self.held_markers: list[MarkerWrite] = []
        self.shard = self._new_shard()
        for p in range(self.config.num_partitions):
            self.apply(self.shard.begin_loading(p))
            self.apply(self.shard.complete_loading(p))

    def _new_shard(self) -> TransactionCoordinatorShard:
        return TransactionCoordinatorShard(
            clock=self.clock, allocate_producer_id=lambda: next(self._ids), config=self.config
        )

    # ------------------------------------------------------------------ applying results
    def apply(self, result: CoordinatorResult) -> None:
        for reply, response in result.responses:
            reply(response)
        for w in result.writes:
            if self.hold:
                self.held_writes.append(w)
            else:
                self.finish_write(w)
        for m in result.events:  # the transaction shard's events are its marker writes
            assert isinstance(m, MarkerWrite)
            if self.hold:
                self.held_markers.append(m)
            else:
                self.finish_markers(m)

    def finish_write(self, w: PendingWrite, error: ErrorCode = ErrorCode.NONE) -> None:
        if error is ErrorCode.NONE:
            for rec in w.records:
                self.log.setdefault(w.partition, []).append(
                    (encode_key(rec.transactional_id), encode_value(rec.value))
                )
        self.apply(self.shard.complete_write(w, error))

    def complete_held(self, error: ErrorCode = ErrorCode.NONE) -> CoordinatorResult:
        """Complete the oldest held write and return the shard's result without applying it."""
        w = self.held_writes.pop(0)
        if error is ErrorCode.NONE:
            for rec in w.records:
                self.log.setdefault(w.partition, []).append(
                    (encode_key(rec.transactional_id), encode_value(rec.value))
                )
        return self.shard.complete_write(w, error)

    def finish_markers(self, m: MarkerWrite, error: ErrorCode = ErrorCode.NONE) -> None:
        if error is ErrorCode.NONE:
            self.markers.append(m)
        self.apply(self.shard.complete_markers(m, error))

    def release(self) -> None:
        """Complete everything held, until nothing more is produced."""
        self.hold = False
        while self.held_writes or self.held_markers:
            if self.held_writes:
                self.finish_write(self.held_writes.pop(0))
            else:
                self.finish_markers(self.held_markers.pop(0))

    def advance(self, ms: int) -> None:
        self.clock.advance(ms)
        self.apply(self.shard.poll())

    def restart(self) -> None:
        """A new shard that loads every partition from the records written so far."""
        self.shard = self._new_shard()
        for p in range(self.config.num_partitions):
            self.apply(self.shard.begin_loading(p))
            for key, value in self.log.get(p, []):
                rec = TxnRecord(transactional_id=decode_key(key), value=decode_value(value))
                self.apply(self.shard.replay(rec))
            self.apply(self.shard.complete_loading(p))

    # ------------------------------------------------------------------ requests
    def call(self, method: str, req: Any) -> Any:
        got: list[Any] = []
        self.apply(getattr(self.shard, method)(req, got.append))
        assert len(got) <= 1
        return got[0] if got else None

    def init(self, tid: str, pid: int = -1, epoch: int = -1, timeout_ms: int = TIMEOUT) -> Any:
        return self.call(
            "init_producer_id",
            InitProducerIdRequest(
                transactional_id=tid, transaction_timeout_ms=timeout_ms, producer_id=pid, producer_epoch=epoch
            ),
        )

    def add(self, tid: str, pid: int, epoch: int, *parts: tuple[str, int]) -> Any:
        by: dict[str, list[int]] = {}
        for t, p in parts:
            by.setdefault(t, []).append(p)
        return self.call(
            "add_partitions_to_txn",
            AddPartitionsToTxnRequest(
                transactional_id=tid,
                producer_id=pid,
                producer_epoch=epoch,
                partitions=tuple((t, tuple(ps)) for t, ps in by.items()),
            ),
        )

    def add_offsets(self, tid: str, pid: int, epoch: int, group: str) -> Any:
        return self.call(
            "add_offsets_to_txn",
            AddOffsetsToTxnRequest(
                transactional_id=tid, producer_id=pid, producer_epoch=epoch, group_id=group
            ),
        )

    def end(self, tid: str, pid: int, epoch: int, commit: bool) -> Any:
        return self.call(
            "end_txn",
            EndTxnRequest(transactional_id=tid, producer_id=pid, producer_epoch=epoch, committed=commit),
        )

    def state(self, tid: str) -> str:
        meta = self.shard.transaction(tid)
        assert meta is not None
        return meta.state.display_name
