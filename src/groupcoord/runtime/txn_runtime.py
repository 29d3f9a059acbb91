"""The transaction coordinator's host on the broker: its records, markers, timers and load.

:class:`~groupcoord.transactions.shard.TransactionCoordinatorShard` is pure; this applies its
results on the broker's event loop, as :mod:`groupcoord.runtime.group_runtime` does for groups:

* ``log_writes`` go to ``__transaction_state`` (compacted, created on first use as Kafka creates
  it on the first transactional FindCoordinator) and are confirmed once durable (fsynced by the
  broker's flusher, unless an explicit ``log.flush.*`` policy governs);
* ``marker_writes`` become one COMMIT or ABORT control batch per partition of the transaction
  (:func:`groupcoord.storage.control.build_marker_batch`); a partition that no longer exists is
  skipped, as Kafka's marker channel drops markers for deleted partitions;
* the shard's keyed timers ride on one key of the broker's loop timer service;
* at start an existing ``__transaction_state`` is replayed partition by partition.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable, Hashable
from typing import TYPE_CHECKING, Any

from groupcoord.constants import OFFSETS_TOPIC, TRANSACTION_STATE_TOPIC
from groupcoord.errors import ErrorCode
from groupcoord.runtime.answers import now_or_later
from groupcoord.storage.batch import build_batch, decode_records
from groupcoord.storage.control import build_marker_batch
from groupcoord.transactions.records import TxnRecord, decode_key, decode_value, encode_key, encode_value
from groupcoord.transactions.result import MarkerWrite, TxnLogWrite, TxnResult
from groupcoord.transactions.shard import TransactionCoordinatorShard, TxnConfig

if TYPE_CHECKING:
    from groupcoord.broker.state import Broker
    from groupcoord.storage.segment import Flushable

log = logging.getLogger(__name__)

_TIMER_KEY = ("transaction-coordinator",)


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
        self.shard = TransactionCoordinatorShard(
            clock=broker.clock, allocate_producer_id=broker.producer_ids.allocate, config=self.config
        )
        self._armed: int | None = None
        self._closed = False
        self._started = False

    # ------------------------------------------------------------------ lifecycle
    def start(self) -> None:
        """Replay ``__transaction_state`` if this data dir has it; own every partition."""
        self._started = True
        have = TRANSACTION_STATE_TOPIC in self.broker.logs.topics()
        for p in range(self.config.num_partitions):
            self._apply(self.shard.begin_loading(p))
            if have:
                self._load_partition(p)
            self._apply(self.shard.complete_loading(p))

    def _load_partition(self, partition: int) -> None:
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
                self._apply(self.shard.replay(record))

    def ensure_topic(self) -> None:
        logs = self.broker.logs
        if TRANSACTION_STATE_TOPIC not in logs.topics():
            logs.create_topic(
                TRANSACTION_STATE_TOPIC,
                self.config.num_partitions,
                {"cleanup.policy": "compact", "compression.type": "uncompressed"},
                internal=True,
            )
            log.info("created %s with %d partitions", TRANSACTION_STATE_TOPIC, self.config.num_partitions)

    async def close(self) -> None:
        self._closed = True
        self.broker.timers.cancel(_TIMER_KEY)

    # ------------------------------------------------------------------ calls
    def call(self, invoke: Callable[[Callable[[Any], None]], TxnResult], encode: Callable[[Any], Any]) -> Any:
        """Run one shard entry point; the encoded reply now, or a future of it."""
        return now_or_later(lambda reply: self._apply(invoke(reply)), encode)

    def _apply(self, result: TxnResult) -> None:
        for reply, response in result.responses:
            reply(response)
        for w in result.log_writes:
            self._append_records(w)
        for m in result.marker_writes:
            self._append_markers(m)
        self._kick()

    def _kick(self) -> None:
        deadline = self.shard.next_deadline()
        if deadline == self._armed:
            return
        self._armed = deadline
        if deadline is None:
            self.broker.timers.cancel(_TIMER_KEY)
        else:
            self.broker.timers.schedule(_TIMER_KEY, deadline, self._on_timer)

    def _on_timer(self) -> None:
        self._armed = None
        if not self._closed:
            self._apply(self.shard.poll())

    # ------------------------------------------------------------------ writes
    def _append_records(self, w: TxnLogWrite) -> None:
        self.ensure_topic()
        try:
            plog = self.broker.logs.partition(TRANSACTION_STATE_TOPIC, w.partition)
            entries = [(encode_key(r.transactional_id), encode_value(r.value), ()) for r in w.records]
            batch = build_batch(entries, timestamp_ms=self.broker.clock.now_ms())
            plog.append(batch)
        except Exception as exc:
            log.error("%s-%d append failed: %r", TRANSACTION_STATE_TOPIC, w.partition, exc)
            code = getattr(exc, "code", None)
            self._soon(
                lambda: self.shard.complete_write(
                    w, code if isinstance(code, ErrorCode) else ErrorCode.KAFKA_STORAGE_ERROR
                )
            )
            return
        self.broker.notify_append((TRANSACTION_STATE_TOPIC, w.partition), len(batch))
        dirty: dict[Hashable, Flushable] = {(TRANSACTION_STATE_TOPIC, w.partition): plog}
        self._durable(dirty, lambda code: self.shard.complete_write(w, code))

    def _append_markers(self, m: MarkerWrite) -> None:
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
                self._soon(lambda: self.shard.complete_markers(m, ErrorCode.KAFKA_STORAGE_ERROR))
                return
            self.broker.notify_append((topic, partition), len(batch))
            dirty[(topic, partition)] = plog
        self._durable(dirty, lambda code: self._markers_written(m, code))

    def _markers_written(self, m: MarkerWrite, code: ErrorCode) -> TxnResult:
        """The group coordinator applies the markers in ``__consumer_offsets`` first (Kafka's
        ``GroupCoordinator.onTransactionCompleted`` after the marker append), so a commit's
        offsets are visible before EndTxn's transaction completes."""
        if code is ErrorCode.NONE and self._on_offsets_marker is not None:
            for topic, partition in m.partitions:
                if topic == OFFSETS_TOPIC:
                    self._on_offsets_marker(partition, m.producer_id, m.commit)
        return self.shard.complete_markers(m, code)

    def _durable(self, dirty: dict[Hashable, Flushable], then: Callable[[ErrorCode], TxnResult]) -> None:
        if not dirty or self.broker.config.flush_policy_explicit:
            self._soon(lambda: then(ErrorCode.NONE))
            return
        fut = self.broker.flusher.flush(dirty)

        def done(f: asyncio.Future[None]) -> None:
            ok = not f.cancelled() and f.exception() is None
            self._apply(then(ErrorCode.NONE if ok else ErrorCode.KAFKA_STORAGE_ERROR))

        fut.add_done_callback(done)

    def _soon(self, step: Callable[[], TxnResult]) -> None:
        """Complete on the next loop turn (never inside the shard call that asked for it)."""
        try:
            asyncio.get_running_loop().call_soon(lambda: self._apply(step()))
        except RuntimeError:  # no loop: tests driving the runtime synchronously
            self._apply(step())
