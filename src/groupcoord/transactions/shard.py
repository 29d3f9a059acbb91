"""The transaction coordinator as a shard: handlers, timers and replay, returning results.

Sans-I/O and single-threaded, like :class:`~groupcoord.coordinator.shard.GroupCoordinatorShard`.
Each entry point returns a :class:`~groupcoord.transactions.result.CoordinatorResult`; nothing here
answers a client, appends to a log or reads a clock other than the injected one. Names follow
Kafka's ``TransactionCoordinator`` (``handleInitProducerId``, ``handleAddPartitionsToTransaction``,
``handleEndTransaction``, ``abortTimedOutTransactions``) and ``TransactionMetadata``
(``prepareIncrementProducerEpoch``, ``prepareFenceProducerEpoch``, ``prepareAddPartitions``,
``prepareAbortOrCommit``, ``prepareComplete``) for the behaviour a client can observe.

Flow of a committed transaction (Kafka's transaction version 1, which every client in our tests
speaks):

1. ``AddPartitionsToTxn`` / ``AddOffsetsToTxn``: Ongoing is written; the client is answered once
   it is durable, and the transaction's timeout is armed.
2. ``EndTxn``: PrepareCommit (or PrepareAbort) is written; once durable the client is answered
   and the result carries a :class:`~groupcoord.transactions.result.MarkerWrite`.
3. ``complete_markers``: every marker is durable; CompleteCommit (CompleteAbort) is written with
   no partitions. Until it is durable, further requests for the id get CONCURRENT_TRANSACTIONS,
   which clients retry.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from groupcoord.clock import Clock
from groupcoord.constants import OFFSETS_TOPIC
from groupcoord.coordinator.result import CoordinatorResult, PendingWrite, Shard
from groupcoord.errors import ErrorCode, IllegalStateError
from groupcoord.timer import KeyedTimer
from groupcoord.transactions.api import (
    NO_PRODUCER_EPOCH,
    AddOffsetsToTxnRequest,
    AddOffsetsToTxnResponse,
    AddPartitionsToTxnRequest,
    AddPartitionsToTxnResponse,
    DescribeTransactionsResponse,
    EndTxnRequest,
    EndTxnResponse,
    InitProducerIdRequest,
    InitProducerIdResponse,
    ListedTransaction,
    ListTransactionsResponse,
    TransactionDescription,
)
from groupcoord.transactions.metadata import EPOCH_EXHAUSTED_AT, TransactionMetadata
from groupcoord.transactions.records import TransactionLogValue, TxnRecord, partition_for
from groupcoord.transactions.result import MarkerWrite, Reply
from groupcoord.transactions.state import VALID_PREVIOUS_STATES, TransactionState
from groupcoord.transactions.timers import TXN_ID_EXPIRY, MarkerRetry, TxnIdExpiry, TxnTimeout, TxnTimerKey

log = logging.getLogger(__name__)

S = TransactionState
#: The states an idle transactional id may expire from (the table's way into Dead).
EXPIRABLE_STATES = VALID_PREVIOUS_STATES[S.DEAD]


@dataclass(frozen=True, slots=True, kw_only=True)
class TxnConfig:
    #: ``transaction.state.log.num.partitions``
    num_partitions: int = 50
    #: ``transaction.max.timeout.ms``
    max_timeout_ms: int = 900_000
    #: ``offsets.topic.num.partitions`` (AddOffsetsToTxn adds the group's partition)
    offsets_partitions: int = 50
    #: how long a failed marker write waits before it is tried again
    marker_retry_backoff_ms: int = 100
    #: how long a timed-out transaction with a write in flight waits before the next try
    #: (``transaction.abort.timed.out.transaction.cleanup.interval.ms``)
    abort_retry_interval_ms: int = 10_000
    #: ``transactional.id.expiration.ms``: an id whose transaction has ended (Empty,
    #: CompleteCommit, CompleteAbort) and that saw no update for this long is removed
    transactional_id_expiration_ms: int = 604_800_000
    #: ``transaction.remove.expired.transaction.cleanup.interval.ms``: how often ids are checked
    remove_expired_interval_ms: int = 3_600_000


# ----------------------------------------------------------------------- write completions
@dataclass(frozen=True, slots=True, eq=False)
class InitWrite:
    meta: TransactionMetadata
    reply: Reply


@dataclass(frozen=True, slots=True, eq=False)
class AddWrite:
    meta: TransactionMetadata
    reply: Reply
    #: the response to send once durable: AddPartitionsToTxn's partitions, or None (AddOffsets)
    partitions: tuple[tuple[str, tuple[int, ...]], ...] | None


@dataclass(frozen=True, slots=True, eq=False)
class PrepareWrite:
    """PrepareCommit / PrepareAbort; ``reply`` is EndTxn's, or InitProducerId's after a fence."""

    meta: TransactionMetadata
    reply: Reply | None
    fence_reply: bool
    #: what to put back when the write fails after a fence bumped the epoch in memory
    fenced_from_epoch: int | None


@dataclass(frozen=True, slots=True, eq=False)
class ExpireWrite:
    """The tombstone of an expired transactional id (Kafka's ``prepareDead`` then removal)."""

    meta: TransactionMetadata


@dataclass(frozen=True, slots=True, eq=False)
class CompleteWrite:
    meta: TransactionMetadata


def _map_append_error(error: ErrorCode) -> ErrorCode:
    """Kafka's mapping of a failed ``__transaction_state`` append (``appendTransactionToLog``)."""
    if error in (
        ErrorCode.UNKNOWN_TOPIC_OR_PARTITION,
        ErrorCode.NOT_ENOUGH_REPLICAS,
        ErrorCode.NOT_ENOUGH_REPLICAS_AFTER_APPEND,
        ErrorCode.REQUEST_TIMED_OUT,
    ):
        return ErrorCode.COORDINATOR_NOT_AVAILABLE
    if error in (ErrorCode.NOT_LEADER_OR_FOLLOWER, ErrorCode.KAFKA_STORAGE_ERROR):
        return ErrorCode.NOT_COORDINATOR
    return ErrorCode.UNKNOWN_SERVER_ERROR


class TransactionCoordinatorShard(Shard):
    def __init__(
        self,
        *,
        clock: Clock,
        allocate_producer_id: Callable[[], int],
        config: TxnConfig | None = None,
    ) -> None:
        self._clock = clock
        self._allocate = allocate_producer_id
        self._config = config or TxnConfig()
        self._txns: dict[str, TransactionMetadata] = {}
        self._owned: dict[int, int] = {}  # partition -> coordinator epoch
        self._loading: set[int] = set()
        self.timer: KeyedTimer[TxnTimerKey, None] = KeyedTimer()
        #: none of this shard's writes carries its own answer, so this stays empty
        self.durable = []
        self._markers: dict[str, MarkerWrite] = {}  # markers waiting for a retry
        self._out = CoordinatorResult()
        self.timer.schedule(
            TXN_ID_EXPIRY, self._clock.now_ms() + self._config.remove_expired_interval_ms, None
        )

    # ------------------------------------------------------------------ inspection
    @property
    def config(self) -> TxnConfig:
        return self._config

    def transaction(self, transactional_id: str) -> TransactionMetadata | None:
        return self._txns.get(transactional_id)

    def timer_deadline(self, key: TxnTimerKey) -> int | None:
        return self.timer.deadline(key)

    def partition_for(self, transactional_id: str) -> int:
        return partition_for(transactional_id, self._config.num_partitions)

    def verify_partition(
        self, transactional_id: str, producer_id: int, producer_epoch: int, partition: tuple[str, int]
    ) -> ErrorCode:
        """Whether ``partition`` is in the producer's ongoing transaction (KIP-890 part 1, Kafka's
        ``TransactionCoordinator.handleVerifyPartitionsInTransaction``), a query with no effect.

        Codes as a client of TxnOffsetCommit v0-4 sees them (``AddPartitionsToTxnManager``
        turns PRODUCER_FENCED into INVALID_PRODUCER_EPOCH and TRANSACTION_ABORTABLE, "not in
        the transaction", into INVALID_TXN_STATE for those versions).
        """
        error, meta = self._owned_transaction(transactional_id, producer_id, producer_epoch)
        if meta is None:
            return ErrorCode.INVALID_PRODUCER_EPOCH if error is ErrorCode.PRODUCER_FENCED else error
        if meta.state in (S.PREPARE_COMMIT, S.PREPARE_ABORT):
            return ErrorCode.CONCURRENT_TRANSACTIONS
        if meta.state is S.ONGOING and partition in meta.partitions:
            return ErrorCode.NONE
        return ErrorCode.INVALID_TXN_STATE

    # ------------------------------------------------------------------ entry points
    def _begin(self) -> CoordinatorResult:
        out = self._out = CoordinatorResult()
        return out

    def init_producer_id(
        self, req: InitProducerIdRequest, reply: Callable[[InitProducerIdResponse], None]
    ) -> CoordinatorResult:
        out = self._begin()
        self._handle_init_producer_id(req, reply)
        return out

    def add_partitions_to_txn(
        self, req: AddPartitionsToTxnRequest, reply: Callable[[AddPartitionsToTxnResponse], None]
    ) -> CoordinatorResult:
        out = self._begin()
        self._handle_add_partitions(
            req.transactional_id,
            req.producer_id,
            req.producer_epoch,
            req.partitions,
            reply,
            for_offsets=False,
        )
        return out

    def add_offsets_to_txn(
        self, req: AddOffsetsToTxnRequest, reply: Callable[[AddOffsetsToTxnResponse], None]
    ) -> CoordinatorResult:
        out = self._begin()
        p = partition_for(req.group_id, self._config.offsets_partitions)
        self._handle_add_partitions(
            req.transactional_id,
            req.producer_id,
            req.producer_epoch,
            ((OFFSETS_TOPIC, (p,)),),
            reply,
            for_offsets=True,
        )
        return out

    def end_txn(self, req: EndTxnRequest, reply: Callable[[EndTxnResponse], None]) -> CoordinatorResult:
        out = self._begin()
        self._handle_end_txn(req, reply)
        return out

    def describe_transactions(
        self, ids: Sequence[str], reply: Callable[[DescribeTransactionsResponse], None]
    ) -> CoordinatorResult:
        out = self._begin()
        descs = tuple(self.describe(tid) for tid in ids)
        out.responses.append((reply, DescribeTransactionsResponse(transactions=descs)))
        return out

    def list_transactions(
        self,
        state_filters: Sequence[str],
        producer_id_filters: Sequence[int],
        reply: Callable[[ListTransactionsResponse], None],
    ) -> CoordinatorResult:
        out = self._begin()
        out.responses.append((reply, self.list_now(state_filters, producer_id_filters)))
        return out

    def poll(self) -> CoordinatorResult:
        """Run every timer due at the clock's current time."""
        out = self._begin()
        now = self._clock.now_ms()
        for key, _ in self.timer.expire(now):
            if type(key) is TxnTimeout:
                self._on_txn_timeout(key.transactional_id)
            elif type(key) is MarkerRetry:
                mw = self._markers.pop(key.transactional_id, None)
                if mw is not None:
                    out.events.append(mw)
            elif type(key) is TxnIdExpiry:
                self.timer.schedule(TXN_ID_EXPIRY, now + self._config.remove_expired_interval_ms, None)
                self._expire_transactional_ids(now)
            else:  # pragma: no cover - keys are all created here
                raise IllegalStateError(f"unknown timer key {key!r}")
        return out

    def complete_write(self, write: PendingWrite, error: ErrorCode) -> CoordinatorResult:
        """The runtime's report that ``write`` is durable (``NONE``) or failed with ``error``."""
        out = self._begin()
        self._complete_write(write, error)
        return out

    def complete_markers(self, write: MarkerWrite, error: ErrorCode) -> CoordinatorResult:
        """Every marker of ``write`` is durable (``NONE``), or one failed with ``error``."""
        out = self._begin()
        self._markers_written(write, error)
        return out

    def replay(self, record: TxnRecord) -> CoordinatorResult:
        """Apply one ``__transaction_state`` record (loading, and tests)."""
        out = self._begin()
        self._replay(record)
        return out

    def begin_loading(self, partition: int) -> CoordinatorResult:
        out = self._begin()
        self._loading.add(partition)
        return out

    def complete_loading(self, partition: int, coordinator_epoch: int = 0) -> CoordinatorResult:
        """Loading done: finish transactions the log left half-way (Kafka's load completion).

        PrepareCommit / PrepareAbort get their markers written again and then complete;
        an Ongoing transaction gets its timeout armed (from its recorded start).
        """
        out = self._begin()
        self._complete_loading(partition, coordinator_epoch)
        return out

    def _complete_loading(self, partition: int, coordinator_epoch: int) -> None:
        self._loading.discard(partition)
        self._owned[partition] = coordinator_epoch
        for meta in list(self._txns.values()):
            if self.partition_for(meta.transactional_id) != partition:
                continue
            if meta.state in (S.PREPARE_COMMIT, S.PREPARE_ABORT):
                self._out.events.append(self._marker_write(meta))
            elif meta.state is S.ONGOING:
                self._arm_timeout(meta)

    def on_loaded(self) -> CoordinatorResult:
        """The runtime's report that the shard's partitions are replayed."""
        out = self._begin()
        for partition in sorted(self._loading):
            self._complete_loading(partition, 0)
        return out

    def on_unloaded(self) -> CoordinatorResult:
        """The runtime's report that the shard's partitions are led elsewhere now."""
        out = self._begin()
        for partition in sorted({*self._owned, *self._loading}):
            self._unload(partition)
        return out

    def unload_partition(self, partition: int) -> CoordinatorResult:
        out = self._begin()
        self._unload(partition)
        return out

    def _unload(self, partition: int) -> None:
        self._owned.pop(partition, None)
        self._loading.discard(partition)
        for tid in [t for t in self._txns if self.partition_for(t) == partition]:
            del self._txns[tid]
            self.timer.cancel(TxnTimeout(tid))
            self.timer.cancel(MarkerRetry(tid))
            self._markers.pop(tid, None)

    # ------------------------------------------------------------------ helpers
    def _partition_error(self, transactional_id: str) -> ErrorCode:
        p = self.partition_for(transactional_id)
        if p in self._loading:
            return ErrorCode.COORDINATOR_LOAD_IN_PROGRESS
        if p not in self._owned:
            return ErrorCode.NOT_COORDINATOR
        return ErrorCode.NONE

    def _owned_transaction(
        self, tid: str, producer_id: int, producer_epoch: int
    ) -> tuple[ErrorCode, TransactionMetadata | None]:
        """``tid``'s transaction if this producer id and epoch own it, else the error: the checks
        Kafka's coordinator makes, in this order, before AddPartitions/AddOffsets, EndTxn and a
        partition verification (its partition served and loaded, the id, then the epoch: any
        other epoch is PRODUCER_FENCED)."""
        error = self._partition_error(tid)
        if error is not ErrorCode.NONE:
            return error, None
        meta = self._txns.get(tid)
        if meta is None or meta.producer_id != producer_id:
            return ErrorCode.INVALID_PRODUCER_ID_MAPPING, None
        if meta.producer_epoch != producer_epoch:
            return ErrorCode.PRODUCER_FENCED, None
        return ErrorCode.NONE, meta

    def _write(self, meta: TransactionMetadata, value: TransactionLogValue, completion: object) -> None:
        meta.pending = value.state
        self._out.writes.append(
            PendingWrite(
                self.partition_for(meta.transactional_id),
                (TxnRecord(transactional_id=meta.transactional_id, value=value),),
                completion,
            )
        )

    def _arm_timeout(self, meta: TransactionMetadata) -> None:
        self.timer.schedule(TxnTimeout(meta.transactional_id), meta.start_ms + meta.timeout_ms, None)

    def _marker_write(self, meta: TransactionMetadata) -> MarkerWrite:
        return MarkerWrite(
            transactional_id=meta.transactional_id,
            producer_id=meta.producer_id,
            producer_epoch=meta.producer_epoch,
            commit=meta.state is S.PREPARE_COMMIT,
            coordinator_epoch=self._owned.get(self.partition_for(meta.transactional_id), 0),
            partitions=tuple(sorted(meta.partitions)),
        )

    # ------------------------------------------------------------------ InitProducerId
    def _handle_init_producer_id(
        self, req: InitProducerIdRequest, reply: Callable[[InitProducerIdResponse], None]
    ) -> None:
        out = self._out
        tid = req.transactional_id
        if not tid:
            out.responses.append((reply, InitProducerIdResponse(error=ErrorCode.INVALID_REQUEST)))
            return
        if not 0 < req.transaction_timeout_ms <= self._config.max_timeout_ms:
            out.responses.append((reply, InitProducerIdResponse(error=ErrorCode.INVALID_TRANSACTION_TIMEOUT)))
            return
        error = self._partition_error(tid)
        if error is not ErrorCode.NONE:
            out.responses.append((reply, InitProducerIdResponse(error=error)))
            return
        meta = self._txns.get(tid)
        if meta is None:
            meta = TransactionMetadata(
                transactional_id=tid,
                producer_id=self._allocate(),
                timeout_ms=req.transaction_timeout_ms,
            )
            self._txns[tid] = meta
        if meta.pending is not None:
            out.responses.append((reply, InitProducerIdResponse(error=ErrorCode.CONCURRENT_TRANSACTIONS)))
            return
        state = meta.state
        if state in (S.PREPARE_COMMIT, S.PREPARE_ABORT):
            out.responses.append((reply, InitProducerIdResponse(error=ErrorCode.CONCURRENT_TRANSACTIONS)))
            return
        if state is S.ONGOING:
            # A new producer instance: fence the current one by bumping the epoch and abort its
            # transaction; the client is told to retry, and its retry bumps the epoch again.
            self._fence_and_abort(meta, reply)
            return
        if state not in (S.EMPTY, S.COMPLETE_COMMIT, S.COMPLETE_ABORT):
            raise IllegalStateError(f"transaction {tid!r} found in state {state.display_name}")
        expected_pid, expected_epoch = req.producer_id, req.producer_epoch
        has_expected = expected_pid >= 0
        if has_expected and not (
            meta.producer_epoch == NO_PRODUCER_EPOCH
            or expected_pid == meta.producer_id
            or (expected_pid == meta.last_producer_id and expected_epoch >= EPOCH_EXHAUSTED_AT)
        ):
            out.responses.append((reply, InitProducerIdResponse(error=ErrorCode.PRODUCER_FENCED)))
            return
        now = self._clock.now_ms()
        if meta.producer_epoch >= EPOCH_EXHAUSTED_AT:
            # prepareProducerIdRotation: a new id, epoch 0
            value = meta.value(
                state=S.EMPTY,
                producer_id=self._allocate(),
                producer_epoch=0,
                last_producer_id=meta.producer_id,
                timeout_ms=req.transaction_timeout_ms,
                partitions=set(),
                start_ms=now,
                now_ms=now,
            )
        else:
            if not has_expected or expected_epoch in (NO_PRODUCER_EPOCH, meta.producer_epoch):
                epoch = meta.producer_epoch + 1
            elif expected_epoch == meta.last_producer_epoch:
                epoch = meta.producer_epoch  # a retry of a bump whose answer was lost
            else:
                out.responses.append((reply, InitProducerIdResponse(error=ErrorCode.PRODUCER_FENCED)))
                return
            value = meta.value(
                state=S.EMPTY,
                producer_epoch=epoch,
                timeout_ms=req.transaction_timeout_ms,
                partitions=set(),
                start_ms=now,
                now_ms=now,
            )
        self._write(meta, value, InitWrite(meta, reply))

    def _fence_and_abort(self, meta: TransactionMetadata, reply: Reply | None) -> None:
        """``prepareFenceProducerEpoch`` then an abort on the coordinator's behalf."""
        old_epoch = meta.producer_epoch
        meta.transition(S.PREPARE_EPOCH_FENCE)
        if meta.producer_epoch < EPOCH_EXHAUSTED_AT:
            meta.producer_epoch += 1  # in memory at once: the old producer is fenced from now on
        now = self._clock.now_ms()
        self.timer.cancel(TxnTimeout(meta.transactional_id))
        value = meta.value(state=S.PREPARE_ABORT, now_ms=now)
        log.info(
            "transaction %r: fencing producer %d epoch %d and aborting its transaction",
            meta.transactional_id,
            meta.producer_id,
            old_epoch,
        )
        self._write(meta, value, PrepareWrite(meta, reply, fence_reply=True, fenced_from_epoch=old_epoch))

    # ------------------------------------------------------------------ AddPartitions / AddOffsets
    def _handle_add_partitions(
        self,
        tid: str,
        producer_id: int,
        producer_epoch: int,
        partitions: tuple[tuple[str, tuple[int, ...]], ...],
        reply: Reply,
        *,
        for_offsets: bool,
    ) -> None:
        def answer(error: ErrorCode) -> None:
            resp: object
            if for_offsets:
                resp = AddOffsetsToTxnResponse(error=error)
            else:
                resp = AddPartitionsToTxnResponse(error=error, partitions=partitions)
            self._out.responses.append((reply, resp))

        if not tid:
            answer(ErrorCode.INVALID_REQUEST)
            return
        error, meta = self._owned_transaction(tid, producer_id, producer_epoch)
        if meta is None:
            answer(error)
            return
        if meta.pending is not None or meta.state in (S.PREPARE_COMMIT, S.PREPARE_ABORT):
            answer(ErrorCode.CONCURRENT_TRANSACTIONS)
            return
        wanted = {(t, p) for t, ps in partitions for p in ps}
        if meta.state is S.ONGOING and wanted <= meta.partitions:
            answer(ErrorCode.NONE)
            return
        now = self._clock.now_ms()
        start = meta.start_ms if meta.state is S.ONGOING else now
        value = meta.value(state=S.ONGOING, partitions=meta.partitions | wanted, start_ms=start, now_ms=now)
        self._write(meta, value, AddWrite(meta, reply, None if for_offsets else partitions))

    # ------------------------------------------------------------------ EndTxn
    def _handle_end_txn(self, req: EndTxnRequest, reply: Callable[[EndTxnResponse], None]) -> None:
        out = self._out

        def answer(error: ErrorCode) -> None:
            out.responses.append((reply, EndTxnResponse(error=error)))

        tid = req.transactional_id
        if not tid:
            answer(ErrorCode.INVALID_REQUEST)
            return
        error, meta = self._owned_transaction(tid, req.producer_id, req.producer_epoch)
        if meta is None:
            answer(error)
            return
        if meta.pending is not None:
            answer(ErrorCode.CONCURRENT_TRANSACTIONS)
            return
        commit = req.committed
        state = meta.state
        if state is S.ONGOING:
            self.timer.cancel(TxnTimeout(tid))
            target = S.PREPARE_COMMIT if commit else S.PREPARE_ABORT
            value = meta.value(state=target, now_ms=self._clock.now_ms())
            self._write(meta, value, PrepareWrite(meta, reply, fence_reply=False, fenced_from_epoch=None))
        elif state is S.COMPLETE_COMMIT:
            answer(ErrorCode.NONE if commit else ErrorCode.INVALID_TXN_STATE)
        elif state is S.COMPLETE_ABORT:
            answer(ErrorCode.INVALID_TXN_STATE if commit else ErrorCode.NONE)
        elif state is S.PREPARE_COMMIT:
            answer(ErrorCode.CONCURRENT_TRANSACTIONS if commit else ErrorCode.INVALID_TXN_STATE)
        elif state is S.PREPARE_ABORT:
            answer(ErrorCode.INVALID_TXN_STATE if commit else ErrorCode.CONCURRENT_TRANSACTIONS)
        else:  # Empty (and Dead, never reached)
            answer(ErrorCode.INVALID_TXN_STATE)

    # ------------------------------------------------------------------ timeout
    def _on_txn_timeout(self, tid: str) -> None:
        meta = self._txns.get(tid)
        if meta is None or meta.state is not S.ONGOING:
            return
        if meta.pending is not None:
            self.timer.schedule(
                TxnTimeout(tid), self._clock.now_ms() + self._config.abort_retry_interval_ms, None
            )
            return
        log.info("transaction %r timed out after %d ms: aborting", tid, meta.timeout_ms)
        self._fence_and_abort(meta, None)

    def _expire_transactional_ids(self, now: int) -> None:
        """Kafka's ``TransactionStateManager.removeExpiredTransactionalIds``: an id whose last
        transaction ended (Empty, CompleteCommit, CompleteAbort), with no write in flight and
        no update for ``transactional.id.expiration.ms``, gets a tombstone in
        ``__transaction_state``; once it is durable the id is forgotten (Dead), and its next
        InitProducerId starts afresh with a new producer id."""
        horizon = now - self._config.transactional_id_expiration_ms
        for meta in list(self._txns.values()):
            p = self.partition_for(meta.transactional_id)
            if p in self._loading or p not in self._owned or meta.pending is not None:
                continue
            if meta.state in EXPIRABLE_STATES and meta.last_update_ms <= horizon:
                log.info(
                    "transactional id %r unused since %d: expiring it",
                    meta.transactional_id,
                    meta.last_update_ms,
                )
                meta.pending = S.DEAD
                self._out.writes.append(
                    PendingWrite(
                        p, (TxnRecord(transactional_id=meta.transactional_id, value=None),), ExpireWrite(meta)
                    )
                )

    # ------------------------------------------------------------------ completions
    def _complete_write(self, write: PendingWrite, error: ErrorCode) -> None:
        done = write.completion
        if not isinstance(
            done, InitWrite | AddWrite | PrepareWrite | CompleteWrite | ExpireWrite
        ):  # pragma: no cover
            raise IllegalStateError(f"unknown write completion {done!r}")
        meta = done.meta
        stale = self._txns.get(meta.transactional_id) is not meta
        meta.pending = None
        if error is ErrorCode.NONE and not stale:
            for rec in write.records:
                self._replay(rec)
        mapped = (
            ErrorCode.NOT_COORDINATOR
            if stale
            else (ErrorCode.NONE if error is ErrorCode.NONE else _map_append_error(error))
        )
        out = self._out
        if isinstance(done, InitWrite):
            if mapped is ErrorCode.NONE:
                resp = InitProducerIdResponse(
                    error=ErrorCode.NONE, producer_id=meta.producer_id, producer_epoch=meta.producer_epoch
                )
            else:
                resp = InitProducerIdResponse(error=mapped)
            out.responses.append((done.reply, resp))
        elif isinstance(done, AddWrite):
            if mapped is ErrorCode.NONE:
                self._arm_timeout(meta)
            if done.partitions is None:
                out.responses.append((done.reply, AddOffsetsToTxnResponse(error=mapped)))
            else:
                out.responses.append(
                    (done.reply, AddPartitionsToTxnResponse(error=mapped, partitions=done.partitions))
                )
        elif isinstance(done, PrepareWrite):
            if mapped is ErrorCode.NONE:
                out.events.append(self._marker_write(meta))
            elif not stale:
                # Nothing durable changed: back to Ongoing, with the epoch the log still has.
                if done.fenced_from_epoch is not None:
                    meta.producer_epoch = done.fenced_from_epoch
                meta.state = S.ONGOING
                self._arm_timeout(meta)
            if done.reply is not None:
                if done.fence_reply:
                    code = ErrorCode.CONCURRENT_TRANSACTIONS if mapped is ErrorCode.NONE else mapped
                    out.responses.append((done.reply, InitProducerIdResponse(error=code)))
                else:
                    out.responses.append((done.reply, EndTxnResponse(error=mapped)))
        elif isinstance(done, ExpireWrite):
            if mapped is not ErrorCode.NONE:
                log.warning(
                    "transactional id %r not expired (%s); retried next cycle",
                    meta.transactional_id,
                    error.name,
                )
        elif mapped is not ErrorCode.NONE and not stale:
            # CompleteWrite failed: the markers are durable, so try recording completion again.
            self._markers_written(self._marker_write(meta), ErrorCode.NONE)

    def _markers_written(self, write: MarkerWrite, error: ErrorCode) -> None:
        meta = self._txns.get(write.transactional_id)
        if meta is None or meta.state not in (S.PREPARE_COMMIT, S.PREPARE_ABORT) or meta.pending:
            return
        if meta.producer_id != write.producer_id or meta.producer_epoch != write.producer_epoch:
            return
        if error is not ErrorCode.NONE:
            log.warning(
                "transaction %r: writing %s markers failed (%s); retrying",
                write.transactional_id,
                "COMMIT" if write.commit else "ABORT",
                error.name,
            )
            self._markers[write.transactional_id] = write
            self.timer.schedule(
                MarkerRetry(write.transactional_id),
                self._clock.now_ms() + self._config.marker_retry_backoff_ms,
                None,
            )
            return
        target = S.COMPLETE_COMMIT if meta.state is S.PREPARE_COMMIT else S.COMPLETE_ABORT
        value = meta.value(state=target, partitions=set(), now_ms=self._clock.now_ms())
        self._write(meta, value, CompleteWrite(meta))

    # ------------------------------------------------------------------ replay
    def _replay(self, record: TxnRecord) -> None:
        tid = record.transactional_id
        v = record.value
        if v is None:
            self._txns.pop(tid, None)
            self.timer.cancel(TxnTimeout(tid))
            return
        meta = self._txns.get(tid)
        if meta is None:
            self._txns[tid] = TransactionMetadata.loaded(tid, v)
            return
        if self.partition_for(tid) not in self._loading:
            # Live path: the table must allow it. While loading, the log's latest value wins.
            meta.transition(v.state)
        meta.apply(v)

    # ------------------------------------------------------------------ admin
    def describe(self, tid: str) -> TransactionDescription:
        error = self._partition_error(tid)
        if error is not ErrorCode.NONE:
            return TransactionDescription(transactional_id=tid, error=error)
        meta = self._txns.get(tid)
        if meta is None:
            return TransactionDescription(transactional_id=tid, error=ErrorCode.TRANSACTIONAL_ID_NOT_FOUND)
        by_topic: dict[str, list[int]] = {}
        for t, p in sorted(meta.partitions):
            by_topic.setdefault(t, []).append(p)
        return TransactionDescription(
            transactional_id=tid,
            error=ErrorCode.NONE,
            state=meta.state.display_name,
            timeout_ms=meta.timeout_ms,
            start_ms=meta.start_ms,
            producer_id=meta.producer_id,
            producer_epoch=meta.producer_epoch,
            topics=tuple((t, tuple(ps)) for t, ps in by_topic.items()),
        )

    def list_now(self, state_filters: Sequence[str], pid_filters: Sequence[int]) -> ListTransactionsResponse:
        if self._loading:
            return ListTransactionsResponse(
                error=ErrorCode.COORDINATOR_LOAD_IN_PROGRESS, unknown_state_filters=(), transactions=()
            )
        states: set[TransactionState] = set()
        unknown: list[str] = []
        for name in state_filters:
            st = TransactionState.from_name(name)
            if st is None:
                unknown.append(name)
            else:
                states.add(st)
        pids = set(pid_filters)
        listed = [
            ListedTransaction(
                transactional_id=m.transactional_id, producer_id=m.producer_id, state=m.state.display_name
            )
            for m in sorted(self._txns.values(), key=lambda m: m.transactional_id)
            if (not state_filters or m.state in states) and (not pids or m.producer_id in pids)
        ]
        return ListTransactionsResponse(
            error=ErrorCode.NONE, unknown_state_filters=tuple(unknown), transactions=tuple(listed)
        )
