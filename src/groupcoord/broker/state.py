"""The broker's state: the one object every handler is given.

It owns the log manager, the cluster identity (``meta.properties`` in the data dir, like
Kafka's), producer ids and sequence state, the fsync coalescer, the keyed timer service and
the fetch long-poll waiters. Everything here is touched from the event loop only.
"""

from __future__ import annotations

import asyncio
import base64
import logging
import os
import uuid
from collections.abc import Callable, Hashable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from groupcoord.broker.acl import AclStore, Authorizer, Op, Resource
from groupcoord.broker.cluster import ClusterMetadata
from groupcoord.broker.durability import Flusher
from groupcoord.broker.log_cleaner import BrokerCleaner
from groupcoord.broker.producers import PartitionProducers, ProducerIdAllocator
from groupcoord.broker.quota_store import ClientQuotaStore
from groupcoord.broker.scram import ScramStore
from groupcoord.clock import Clock
from groupcoord.config import BrokerConfig
from groupcoord.constants import OFFSETS_TOPIC, TRANSACTION_STATE_TOPIC
from groupcoord.errors import DataDirError, ErrorCode
from groupcoord.handling import RequestContext
from groupcoord.handling.loop_timers import LoopTimers
from groupcoord.protocol.api_keys import ApiKey
from groupcoord.protocol.registry import ApiRegistry
from groupcoord.storage.journal import Journal
from groupcoord.storage.log_config import log_config_for
from groupcoord.storage.manager import LogManager, TopicMeta

log = logging.getLogger(__name__)

TopicPartition = tuple[str, int]


def _read_meta(path: Path) -> dict[str, str]:
    out: dict[str, str] = {}
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        return out
    except UnicodeDecodeError as exc:
        raise DataDirError(f"{path} is not UTF-8 text (invalid byte at offset {exc.start})") from None
    for line in text.splitlines():
        line = line.strip()
        if not line or line.startswith("#") or "=" not in line:
            continue
        key, _, value = line.partition("=")
        out[key.strip()] = value.strip()
    return out


def load_cluster_id(data_dir: Path, node_id: int) -> str:
    """The cluster id stored in ``meta.properties``, created (22-char url-safe base64) on first start."""
    path = data_dir / "meta.properties"
    meta = _read_meta(path)
    cluster_id = meta.get("cluster.id")
    if cluster_id:
        return cluster_id
    cluster_id = base64.urlsafe_b64encode(uuid.uuid4().bytes).decode().rstrip("=")
    tmp = path.with_suffix(".tmp")
    with open(tmp, "w", encoding="utf-8") as f:
        f.write(f"version=1\ncluster.id={cluster_id}\nnode.id={node_id}\n")
        f.flush()
        os.fsync(f.fileno())
    os.replace(tmp, path)
    return cluster_id


@dataclass(slots=True, kw_only=True)
class FetchWaiter:
    """A parked Fetch: woken by appends to any of its partitions, or by its max_wait timer."""

    partitions: frozenset[TopicPartition]
    min_bytes: int
    on_wake: Callable[[], None]
    accumulated: int = 0
    done: bool = False


@dataclass(slots=True)
class FetchWaiters:
    by_partition: dict[TopicPartition, set[int]] = field(default_factory=dict)
    waiters: dict[int, FetchWaiter] = field(default_factory=dict)
    _next: int = 0

    def add(self, waiter: FetchWaiter) -> int:
        self._next += 1
        wid = self._next
        self.waiters[wid] = waiter
        for tp in waiter.partitions:
            self.by_partition.setdefault(tp, set()).add(wid)
        return wid

    def remove(self, wid: int) -> None:
        waiter = self.waiters.pop(wid, None)
        if waiter is None:
            return
        waiter.done = True
        for tp in waiter.partitions:
            ids = self.by_partition.get(tp)
            if ids is not None:
                ids.discard(wid)
                if not ids:
                    del self.by_partition[tp]

    def wake_all(self) -> None:
        """Answer every parked fetch now with what is available (graceful shutdown)."""
        for wid in list(self.waiters):
            waiter = self.waiters.get(wid)
            if waiter is not None:
                self.remove(wid)
                waiter.on_wake()

    def wake(self, tp: TopicPartition) -> None:
        """Answer the fetches parked on ``tp`` now (its leader changed: they find out)."""
        for wid in list(self.by_partition.get(tp, ())):
            waiter = self.waiters.get(wid)
            if waiter is not None:
                self.remove(wid)
                waiter.on_wake()

    def appended(self, tp: TopicPartition, nbytes: int) -> None:
        ids = self.by_partition.get(tp)
        if not ids:
            return
        for wid in list(ids):
            waiter = self.waiters.get(wid)
            if waiter is None:
                continue
            waiter.accumulated += nbytes
            if waiter.accumulated >= waiter.min_bytes:
                self.remove(wid)
                waiter.on_wake()


class Broker:
    def __init__(self, config: BrokerConfig, data_dir: Path, clock: Clock, logs: LogManager) -> None:
        self.config = config
        self.data_dir = data_dir
        self.clock = clock
        self.logs = logs
        self.node_id = config.node_id
        self.cluster_id = load_cluster_id(data_dir, config.node_id)
        listener = config.advertised_listener()
        #: Where clients are told to connect; the server fixes the port after binding port 0.
        self.advertised_host = listener.host
        self.advertised_port = listener.port
        #: listener name -> advertised (host, port) of every other listener (Kafka answers
        #: Metadata, FindCoordinator and DescribeCluster with the endpoint of the listener the
        #: request came in on); the first listener's is ``advertised_host``/``advertised_port``
        self.endpoints: dict[str, tuple[str, int]] = {}
        #: several brokers in one process (``broker.cluster``; set by the composition root when
        #: it serves more than one node); None: this one broker leads every partition
        self.cluster: ClusterMetadata | None = None
        #: SCRAM credentials (``broker.scram``), kept in the data dir
        self.scram = ScramStore(data_dir)
        #: ACL bindings (``acls.json``) and the authorizer over them (``broker.acl``); without
        #: ``authorizer.class.name`` every request is allowed, as in Kafka
        settings = config.security_settings
        self.authorizer = Authorizer.from_settings(
            AclStore(data_dir),
            settings.get("authorizer.class.name"),
            settings.get("super.users"),
            settings.get("allow.everyone.if.no.acl.found"),
        )
        self.timers = LoopTimers(clock)
        self.flusher = Flusher()
        self.producer_ids = ProducerIdAllocator(data_dir / "producer_id_block")
        #: client quotas (broker.quota_store): AlterClientQuotas / DescribeClientQuotas change and
        #: read them; the server enforces them (wired by groupcoord.app)
        self.client_quotas = ClientQuotaStore(data_dir)
        #: the most a Fetch of (principal, client id) may return under its consumer_byte_rate
        #: (Kafka's getMaxValueInQuotaWindow); set by groupcoord.app, None: no cap
        self.fetch_bytes_cap: Callable[[str, str], int] | None = None
        #: the controller mutation quota of a CreateTopics / DeleteTopics / CreatePartitions
        #: (``server.client_quotas.MutationQuota``: ``record(partitions) -> bool``,
        #: ``throttle_ms()``), wired by ``groupcoord.app``; None: unbounded
        self.mutation_quota: Callable[[RequestContext], Any] | None = None
        self.producers: dict[TopicPartition, PartitionProducers] = {}
        self.fetch_waiters = FetchWaiters()
        #: Compaction of every partition whose cleanup.policy includes compact, armed by
        #: :meth:`start_maintenance` every log.cleaner.backoff.ms on :attr:`timers`.
        self.cleaner = BrokerCleaner(
            partitions=logs.partitions,
            clock=clock,
            timers=self.timers,
            backoff_ms=config.log_cleaner_backoff_ms,
            enabled=config.log_cleaner_enable,
        )
        #: What this broker serves (api key -> versions); the composition root's dispatcher
        #: fills it from the route table, and ApiVersions answers from it.
        self.registry = ApiRegistry()

    def allowed(self, ctx: RequestContext, op: Op, resource: Resource, name: str) -> bool:
        """Whether the request's principal may perform ``op`` on the resource (always, without
        an authorizer)."""
        authorizer = self.authorizer
        return not authorizer.enabled or authorizer.authorize(
            ctx.principal, ctx.client_host, op, resource, name
        )

    def endpoint(self, listener: str) -> tuple[str, int]:
        """The advertised (host, port) of ``listener`` (the first listener's if unknown)."""
        found = self.endpoints.get(listener)
        return found if found is not None else (self.advertised_host, self.advertised_port)

    def leadership(
        self, node: int, topic: str, partition: int, current_epoch: int = -1, *, follower_ok: bool = False
    ) -> ErrorCode:
        """Whether node ``node`` may serve a read or write of the partition
        (:meth:`ClusterMetadata.check`); always NONE without a cluster, and for a partition that
        does not exist (the handler answers that itself)."""
        cluster = self.cluster
        if cluster is None:
            return ErrorCode.NONE
        meta = self.logs.topics_view.get(topic)
        if meta is None or not 0 <= partition < meta.partitions:
            return ErrorCode.NONE
        return cluster.check(topic, partition, node, current_epoch, follower_ok=follower_ok)

    def node_endpoint(self, node: int, listener: str) -> tuple[str, int]:
        """The advertised (host, port) of node ``node``'s ``listener`` (this broker's without a
        cluster)."""
        cluster = self.cluster
        if cluster is not None:
            found = cluster.endpoint(node, listener)
            if found is not None:
                return found
        return self.endpoint(listener)

    @property
    def serves_transactions(self) -> bool:
        """Whether a transaction coordinator serves this broker's transactional ids: the
        composition root routes EndTxn (and the other transaction APIs) only where it installs
        one. False: transactional ids and transactional batches are refused."""
        return self.registry.supported(ApiKey.END_TXN) is not None

    @classmethod
    def open(cls, config: BrokerConfig, data_dir: Path, clock: Clock) -> Broker:
        data_dir.mkdir(parents=True, exist_ok=True)
        # The coordinators' partitions are made durable through one shared journal (one sync
        # per flush round instead of one per partition); under an explicit log.flush.* policy
        # nothing waits for a sync, and their segments follow that policy like any other.
        journaled = () if config.flush_policy_explicit else (OFFSETS_TOPIC, TRANSACTION_STATE_TOPIC)
        logs = LogManager.open(data_dir, log_config_for(config), clock, journaled_topics=journaled)
        try:
            return cls(config, data_dir, clock, logs)
        except BaseException:  # e.g. an unreadable meta.properties: leave the logs closed cleanly
            logs.close()
            raise

    def topic_by_id(self, topic_id: uuid.UUID | None) -> TopicMeta | None:
        if topic_id is None or topic_id.int == 0:
            return None
        try:
            meta: TopicMeta | None = self.logs.topic_by_id(topic_id)
        except KeyError:
            return None
        return meta

    def producers_for(self, tp: TopicPartition) -> PartitionProducers:
        table = self.producers.get(tp)
        if table is None:
            table = self.producers[tp] = self._seed_producers(tp)
        return table

    def _seed_producers(self, tp: TopicPartition) -> PartitionProducers:
        """Sequence state of the partition's idempotent producers, from its producer state.

        After a restart a producer retries the batches it had in flight; the ones that reached
        the log before the crash are then recognised as duplicates instead of being appended
        twice. The log loaded its producer state when it was opened (the newest ``.snapshot``
        and the batches after it, :mod:`groupcoord.storage.producer_state`), so nothing is read
        here: each producer's recent batches come from it (after a clean shutdown only the last
        one, which the snapshot holds; after a crash up to five, replayed after the snapshot, as
        Kafka's ``ProducerStateManager``).
        """
        table = PartitionProducers()
        plog = self.logs.partition(*tp)
        log_append_time = plog.config.log_append_time
        for entry in plog.producer_state().producers():
            for b in entry.recent:
                table.record(
                    entry.producer_id,
                    entry.epoch,
                    b.first_seq,
                    b.last_offset - b.base_offset + 1,
                    b.base_offset,
                    b.last_offset,
                    b.max_timestamp if log_append_time else -1,
                )
        return table

    def forget_topic(self, topic: str) -> None:
        for tp in [tp for tp in self.producers if tp[0] == topic]:
            del self.producers[tp]

    def notify_append(self, tp: TopicPartition, nbytes: int) -> None:
        self.fetch_waiters.appended(tp, nbytes)

    def schedule(self, key: Hashable, deadline_ms: int, callback: Callable[[], None]) -> None:
        self.timers.schedule(key, deadline_ms, callback)

    # ------------------------------------------------------------------ background work
    RETENTION_KEY = ("log", "retention")
    FLUSH_KEY = ("log", "flush-check")
    PRODUCER_EXPIRATION_KEY = ("log", "producer-expiration")
    #: How often partitions with a flush.ms policy are checked.
    FLUSH_CHECK_MS = 1000

    def start_maintenance(self) -> None:
        """Retention every log.retention.check.interval.ms, flush.ms checks, the log cleaner
        every log.cleaner.backoff.ms and producer expiration every
        producer.id.expiration.check.interval.ms, on the keyed timers.

        Producers already expired are forgotten at once: Kafka leaves them out when it loads a
        partition's producer snapshot; here the partitions were loaded before the clock was
        read, so the first check runs now (it also forgets expired producers rebuilt from the
        batches after the snapshot, which Kafka keeps until its first periodic check).
        """
        now = self.clock.now_ms()
        self.timers.schedule(
            self.RETENTION_KEY, now + self.config.log_retention_check_interval_ms, self._retention
        )
        self.timers.schedule(self.FLUSH_KEY, now + self.FLUSH_CHECK_MS, self._flush_check)
        self.cleaner.start()
        self._expire_producers()

    def _expire_producers(self) -> None:
        """Kafka's ``PeriodicProducerExpirationCheck``: every partition forgets its producers idle
        for producer.id.expiration.ms (none with an open transaction), and so does the
        partition's sequence table; such a producer's next batch is accepted at any sequence."""
        now = self.clock.now_ms()
        try:
            expired = self.logs.remove_expired_producers(now, self.config.producer_id_expiration_ms)
            for tp, ids in expired.items():
                table = self.producers.get(tp)
                if table is not None:
                    table.forget(ids)
            if expired:
                log.info(
                    "expired %d idle producer ids in %d partitions",
                    sum(len(ids) for ids in expired.values()),
                    len(expired),
                )
        finally:
            self.timers.schedule(
                self.PRODUCER_EXPIRATION_KEY,
                now + self.config.producer_id_expiration_check_interval_ms,
                self._expire_producers,
            )

    def _retention(self) -> None:
        now = self.clock.now_ms()
        try:
            deleted = self.logs.apply_retention(now)
            if deleted:
                log.info("retention deleted %d bytes", deleted)
        finally:
            self.timers.schedule(
                self.RETENTION_KEY, now + self.config.log_retention_check_interval_ms, self._retention
            )

    def _flush_check(self) -> None:
        now = self.clock.now_ms()
        due: list[Any] = [
            plog for plog in self.logs.partitions().values() if plog.config.flush_interval_ms is not None
        ]
        journal = self.logs.journal
        if journal is not None and journal.pending_bytes:
            due.append(_JournalSync(journal))  # appends no flush round waited for (acks=1, say)
        if due:
            loop = asyncio.get_running_loop()
            fut = loop.run_in_executor(self.flusher.executor, _maybe_flush_all, due, now)
            fut.add_done_callback(_log_flush_failure)
        self.timers.schedule(self.FLUSH_KEY, now + self.FLUSH_CHECK_MS, self._flush_check)

    async def close(self) -> None:
        self.timers.close()
        await self.cleaner.close()  # a pass in progress ends after its current partition
        self.flusher.close()  # waits for an fsync round in progress
        self.logs.flush_all()
        self.logs.close()


def _maybe_flush_all(parts: list[Any], now_ms: int) -> None:
    for plog in parts:
        plog.maybe_flush(now_ms)


@dataclass(frozen=True, slots=True)
class _JournalSync:
    """The journal in the periodic flush check, which calls ``maybe_flush`` on what it is given."""

    journal: Journal

    def maybe_flush(self, _now_ms: int) -> bool:
        self.journal.flush()
        return True


def _log_flush_failure(fut: asyncio.Future[None]) -> None:
    if not fut.cancelled() and fut.exception() is not None:
        log.error("periodic flush failed: %r", fut.exception())
