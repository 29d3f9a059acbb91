"""The transaction coordinator on the broker: one shard per ``__transaction_state`` partition.

Each :class:`~groupcoord.transactions.shard.TransactionCoordinatorShard` is pure, and the one
runtime (:class:`~groupcoord.runtime.coordinator_runtime.CoordinatorRuntime`, the group
coordinator's too) applies its results; this module routes each request to the shard of its
transactional id's partition and is the shards' host on the broker's event loop:

* each shard's writes go to its own partition of ``__transaction_state`` (compacted, created on
  first use as Kafka creates it on the first transactional FindCoordinator) and are confirmed
  once durable (fsynced by the broker's flusher, unless an explicit ``log.flush.*`` policy
  governs);
* a shard's :class:`~groupcoord.transactions.result.MarkerWrite` events become one COMMIT or ABORT
  control batch per partition of the transaction
  (:func:`groupcoord.storage.control.build_marker_batch`); a partition that no longer exists is
  skipped, as Kafka's marker channel drops markers for deleted partitions;
* each shard's keyed timers ride on one key of the broker's loop timer service (the runtime);
* at start an existing ``__transaction_state`` is replayed partition by partition, each into its
  own shard.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable, Hashable, Sequence
from typing import TYPE_CHECKING, Any

from groupcoord.constants import OFFSETS_TOPIC, TRANSACTION_STATE_TOPIC
from groupcoord.errors import ErrorCode
from groupcoord.formats.batch import decode_records
from groupcoord.runtime.answers import now_or_later
from groupcoord.runtime.coordinator_runtime import CoordinatorRuntime
from groupcoord.storage.control import build_marker_batch
from groupcoord.transactions.api import (
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
)
from groupcoord.transactions.records import (
    TxnRecord,
    decode_key,
    decode_value,
    encode_key,
    encode_value,
    partition_for,
)
from groupcoord.transactions.result import MarkerWrite
from groupcoord.transactions.shard import TransactionCoordinatorShard, TxnConfig

if TYPE_CHECKING:
    from groupcoord.broker.state import Broker
    from groupcoord.storage.segment import Flushable

log = logging.getLogger(__name__)


class TxnRuntime:
    """Args:
    broker: the broker whose logs and timers it uses.
    config: the coordinator's settings (from the broker's config by default).
    on_offsets_marker: called as ``(partition, producer_id, commit)`` once a marker is durable
        in a ``__consumer_offsets`` partition (the group coordinator's
        ``complete_transaction``: the transaction's offset commits take effect or are dropped).
    """

    def __init__(
        self,
        broker: Broker,
        config: TxnConfig | None = None,
        *,
        on_offsets_marker: Callable[[int, int, bool], None] | None = None,
    ) -> None:
        self.broker = broker
        self._on_offsets_marker = on_offsets_marker
        c = broker.config
        self.config = config or TxnConfig(
            offsets_partitions=c.offsets_topic_num_partitions,
            max_timeout_ms=c.transaction_max_timeout_ms,
            transactional_id_expiration_ms=c.transactional_id_expiration_ms,
            remove_expired_interval_ms=c.transaction_remove_expired_transaction_cleanup_interval_ms,
        )
        self.runtime: CoordinatorRuntime[TransactionCoordinatorShard] = CoordinatorRuntime(
            self._new_shard,
            broker.clock,
            record_sink=self,
            event_sink=self._on_event,
            timers=broker.timers,
            name="transaction-coordinator",
        )
        #: Answers for ids of partitions led elsewhere (before the start, after an unload).
        self._elsewhere = self._new_shard(-1)
        #: Several brokers in one process (``broker.cluster``): the leader of a partition, and the
        #: node the request being handled came to (set by the composition root before each
        #: request); a transactional id of a partition led by another node is answered
        #: NOT_COORDINATOR. None: this node leads every partition.
        self.leader_of: Callable[[int], int] | None = None
        self.node = 0

    def _new_shard(self, partition: int) -> TransactionCoordinatorShard:
        shard = TransactionCoordinatorShard(
            clock=self.broker.clock,
            allocate_producer_id=self.broker.producer_ids.allocate,
            config=self.config,
        )
        if partition >= 0:
            shard.begin_loading(partition)
        return shard

    # ------------------------------------------------------------------ lifecycle
    def start(self) -> None:
        """Replay ``__transaction_state`` if this data dir has it, each partition into its shard."""
        have = TRANSACTION_STATE_TOPIC in self.broker.logs.topics_view
        for p in range(self.config.num_partitions):
            shard = self.runtime.load(p)
            if have:
                self._load_partition(p, shard)
            self.runtime.loaded(p)

    def _load_partition(self, partition: int, shard: TransactionCoordinatorShard) -> None:
        plog = self.broker.logs.partition(TRANSACTION_STATE_TOPIC, partition)
        for header, data in plog.iter_batches_from(plog.log_start_offset):
            if header.is_control:
                continue
            for rec in decode_records(data):
                if rec.key is None:
                    continue
                try:
                    record = TxnRecord(transactional_id=decode_key(rec.key), value=decode_value(rec.value))
                except ValueError as exc:
                    log.warning("%s-%d: skipping a record: %s", TRANSACTION_STATE_TOPIC, partition, exc)
                    continue
                self.runtime.apply(partition, shard.replay(record))

    def ensure_topic(self) -> None:
        logs = self.broker.logs
        if TRANSACTION_STATE_TOPIC not in logs.topics_view:
            logs.create_topic(
                TRANSACTION_STATE_TOPIC,
                self.config.num_partitions,
                {"cleanup.policy": "compact", "compression.type": "uncompressed"},
                internal=True,
            )
            log.info("created %s with %d partitions", TRANSACTION_STATE_TOPIC, self.config.num_partitions)

    async def close(self) -> None:
        self.runtime.close()

    # ------------------------------------------------------------------ requests
    def call(self, invoke: Callable[[Callable[[Any], None]], None], encode: Callable[[Any], Any]) -> Any:
        """Run one request; the encoded reply now, or a future of it."""
        return now_or_later(invoke, encode)

    def _shard(
        self, transactional_id: str, *, any_node: bool = False
    ) -> tuple[int, TransactionCoordinatorShard]:
        p = partition_for(transactional_id, self.config.num_partitions)
        shard = self.runtime.shard(p)
        if shard is None:
            return p, self._elsewhere
        leader_of = self.leader_of
        if not any_node and leader_of is not None and leader_of(p) != self.node:
            return p, self._elsewhere
        return p, shard

    def transaction_shard(self, transactional_id: str) -> TransactionCoordinatorShard:
        """The shard of ``transactional_id``'s partition (inspection: tests)."""
        return self._shard(transactional_id, any_node=True)[1]

    def move_partition(self, partition: int, leader: int) -> None:
        """Leadership of ``partition`` of ``__transaction_state`` moved to ``leader`` (-1: none):
        the old leader's shard unloads, the new one's replays the partition (at once: the
        transaction log is small) and finishes what the log left half-way, as Kafka's
        ``TransactionStateManager`` does on ``onElection``."""
        self.runtime.unload(partition)
        if leader < 0:
            return
        shard = self.runtime.load(partition)
        if TRANSACTION_STATE_TOPIC in self.broker.logs.topics_view:
            self._load_partition(partition, shard)
        self.runtime.loaded(partition)

    def verify_partition(
        self, transactional_id: str, producer_id: int, producer_epoch: int, partition: tuple[str, int]
    ) -> ErrorCode:
        """See :meth:`TransactionCoordinatorShard.verify_partition` (a query; the partition's
        leader asks the coordinator whichever node that is)."""
        shard = self._shard(transactional_id, any_node=True)[1]
        return shard.verify_partition(transactional_id, producer_id, producer_epoch, partition)

    def init_producer_id(
        self, req: InitProducerIdRequest, reply: Callable[[InitProducerIdResponse], None]
    ) -> None:
        p, shard = self._shard(req.transactional_id)
        self.runtime.apply(p, shard.init_producer_id(req, reply))

    def add_partitions_to_txn(
        self, req: AddPartitionsToTxnRequest, reply: Callable[[AddPartitionsToTxnResponse], None]
    ) -> None:
        p, shard = self._shard(req.transactional_id)
        self.runtime.apply(p, shard.add_partitions_to_txn(req, reply))

    def add_offsets_to_txn(
        self, req: AddOffsetsToTxnRequest, reply: Callable[[AddOffsetsToTxnResponse], None]
    ) -> None:
        p, shard = self._shard(req.transactional_id)
        self.runtime.apply(p, shard.add_offsets_to_txn(req, reply))

    def end_txn(self, req: EndTxnRequest, reply: Callable[[EndTxnResponse], None]) -> None:
        p, shard = self._shard(req.transactional_id)
        self.runtime.apply(p, shard.end_txn(req, reply))

    def describe_transactions(
        self, ids: Sequence[str], reply: Callable[[DescribeTransactionsResponse], None]
    ) -> None:
        descs = tuple(self._shard(tid)[1].describe(tid) for tid in ids)
        self.runtime.respond(reply, DescribeTransactionsResponse(transactions=descs))

    def list_transactions(
        self,
        state_filters: Sequence[str],
        producer_id_filters: Sequence[int],
        reply: Callable[[ListTransactionsResponse], None],
    ) -> None:
        """Every shard's transactions, by id; LOAD_IN_PROGRESS while a partition loads."""
        error = ErrorCode.NONE
        unknown: tuple[str, ...] = ()
        listed: list[ListedTransaction] = []
        leader_of = self.leader_of
        here = [
            s
            for p in self.runtime.partitions()
            if (s := self.runtime.shard(p)) is not None and (leader_of is None or leader_of(p) == self.node)
        ]
        for shard in here:
            part = shard.list_now(state_filters, producer_id_filters)
            if part.error is not ErrorCode.NONE:
                error = part.error
                continue
            unknown = part.unknown_state_filters
            listed.extend(part.transactions)
        if error is not ErrorCode.NONE:
            answer = ListTransactionsResponse(error=error, unknown_state_filters=(), transactions=())
        else:
            listed.sort(key=lambda t: t.transactional_id)
            answer = ListTransactionsResponse(
                error=ErrorCode.NONE, unknown_state_filters=unknown, transactions=tuple(listed)
            )
        self.runtime.respond(reply, answer)

    # ------------------------------------------------------------------ writes (RecordSink)
    def append(self, partition: int, records: Sequence[Any], done: Callable[[ErrorCode], None]) -> None:
        """Append a shard's records to its ``__transaction_state`` partition; ``done`` once durable
        (on the next loop turn at the earliest: never inside the shard call that wrote)."""
        self.ensure_topic()
        try:
            plog = self.broker.logs.partition(TRANSACTION_STATE_TOPIC, partition)
            entries = [(encode_key(r.transactional_id), encode_value(r.value), ()) for r in records]
            nbytes = plog.append_records(entries, self.broker.clock.now_ms())
        except Exception as exc:
            log.error("%s-%d append failed: %r", TRANSACTION_STATE_TOPIC, partition, exc)
            code = getattr(exc, "code", None)
            failed = code if isinstance(code, ErrorCode) else ErrorCode.KAFKA_STORAGE_ERROR
            self._soon(lambda: done(failed))
            return
        self.broker.notify_append((TRANSACTION_STATE_TOPIC, partition), nbytes)
        dirty: dict[Hashable, Flushable] = {(TRANSACTION_STATE_TOPIC, partition): plog}
        self._durable(dirty, done)

    # ------------------------------------------------------------------ markers (events)
    def _on_event(self, event: object) -> None:
        if isinstance(event, MarkerWrite):
            self._append_markers(event)

    def _append_markers(self, m: MarkerWrite) -> None:
        owner = self.runtime.shard(partition_for(m.transactional_id, self.config.num_partitions))
        dirty: dict[Hashable, Flushable] = {}
        now = self.broker.clock.now_ms()
        for topic, partition in m.partitions:
            try:
                plog = self.broker.logs.partition(topic, partition)
            except KeyError:
                log.warning("transaction %r: %s-%d is gone; no marker", m.transactional_id, topic, partition)
                continue
            batch = build_marker_batch(
                producer_id=m.producer_id,
                producer_epoch=m.producer_epoch,
                commit=m.commit,
                coordinator_epoch=m.coordinator_epoch,
                timestamp_ms=now,
            )
            try:
                plog.append(batch)
            except Exception as exc:
                log.error(
                    "transaction %r: marker to %s-%d failed: %r", m.transactional_id, topic, partition, exc
                )
                self._soon(lambda: self._markers_written(m, ErrorCode.KAFKA_STORAGE_ERROR, owner))
                return
            self.broker.notify_append((topic, partition), len(batch))
            dirty[(topic, partition)] = plog
        self._durable(dirty, lambda code: self._markers_written(m, code, owner))

    def _markers_written(
        self, m: MarkerWrite, code: ErrorCode, owner: TransactionCoordinatorShard | None = None
    ) -> None:
        """The group coordinator applies the markers in ``__consumer_offsets`` first (Kafka's
        ``GroupCoordinator.onTransactionCompleted`` after the marker append), so a commit's
        offsets are visible before EndTxn's transaction completes."""
        if code is ErrorCode.NONE and self._on_offsets_marker is not None:
            for topic, partition in m.partitions:
                if topic == OFFSETS_TOPIC:
                    self._on_offsets_marker(partition, m.producer_id, m.commit)
        p = partition_for(m.transactional_id, self.config.num_partitions)
        shard = self.runtime.shard(p)
        # a shard loaded since (the partition's leadership moved) writes its own markers
        if shard is not None and (owner is None or shard is owner):
            self.runtime.apply(p, shard.complete_markers(m, code))

    # ------------------------------------------------------------------ durability
    def _durable(self, dirty: dict[Hashable, Flushable], then: Callable[[ErrorCode], None]) -> None:
        if not dirty or self.broker.config.flush_policy_explicit:
            self._soon(lambda: then(ErrorCode.NONE))
            return
        fut = self.broker.flusher.flush(dirty)

        def done(f: asyncio.Future[None]) -> None:
            ok = not f.cancelled() and f.exception() is None
            then(ErrorCode.NONE if ok else ErrorCode.KAFKA_STORAGE_ERROR)

        fut.add_done_callback(done)

    @staticmethod
    def _soon(step: Callable[[], None]) -> None:
        """Complete on the next loop turn (never inside the shard call that asked for it)."""
        try:
            asyncio.get_running_loop().call_soon(step)
        except RuntimeError:  # no loop: tests driving the runtime synchronously
            step()
