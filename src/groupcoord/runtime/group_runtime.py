"""The coordinator runtime inside the broker: the shard's records, events, timers and load.

The group coordinator shards (``groupcoord.coordinator``) are pure: they take requests and time
and return results; :class:`~groupcoord.runtime.group_coordinator.GroupCoordinator` routes each
request to its partition's shard on the generic
:class:`~groupcoord.runtime.coordinator_runtime.CoordinatorRuntime`, which applies the results.
This module gives them a home on the broker's event loop:

* each shard's records go to its own partition of the real internal topic
  ``__consumer_offsets``, and a write is confirmed to the shard only once it is
  durable: fsynced by the broker's coalescing flusher, unless the operator chose an explicit
  ``log.flush.*`` policy, which then governs, exactly as for acks=-1 produces;
* its events are published as JSON to the internal topic ``__group_events`` (keyed by group
  id, partitioned like ``__consumer_offsets``), batched per loop tick;
* each shard's timers are driven by one key on the broker's loop timer service, re-armed by
  the runtime after every call into that shard;
* at start it replays ``__consumer_offsets`` partition by partition, yielding to the loop
  between chunks, so requests for a partition still loading get COORDINATOR_LOAD_IN_PROGRESS;
* ``__consumer_offsets`` is compacted by the broker's log cleaner
  (:mod:`groupcoord.broker.log_cleaner`), like every compacted partition.
"""

from __future__ import annotations

import asyncio
import functools
import gc
import logging
import struct
from collections.abc import Callable, Hashable, Sequence
from typing import TYPE_CHECKING

from groupcoord.constants import GROUP_EVENTS_TOPIC
from groupcoord.constants import OFFSETS_TOPIC as OFFSETS_TOPIC
from groupcoord.coordinator.config import GroupConfig
from groupcoord.coordinator.consumer.config import GroupOverrides
from groupcoord.coordinator.consumer.metadata import TopicMetadata, TopicsImage
from groupcoord.coordinator.events import GroupEvent
from groupcoord.coordinator.records import CoordinatorRecord, SelfEncodingRecord, encode_record
from groupcoord.errors import ErrorCode
from groupcoord.formats.batch import ATTR_TRANSACTIONAL, build_batch
from groupcoord.runtime.group_coordinator import GroupCoordinator
from groupcoord.runtime.loader import OffsetsLoader
from groupcoord.storage.log import PartitionLog, RecordTooLargeError

if TYPE_CHECKING:
    from groupcoord.broker.state import Broker
    from groupcoord.storage.segment import Flushable

log = logging.getLogger(__name__)

#: Batches replayed between two yields to the event loop while loading.
_LOAD_CHUNK = 256

#: one record of a batch: key, value, headers
Entry = tuple[bytes | None, bytes | None, tuple[()]]

_I16 = struct.Struct(">h")
_I32 = struct.Struct(">i")


class GroupRuntime:
    def __init__(self, broker: Broker) -> None:
        self.broker = broker
        self.config = GroupConfig.from_broker(broker.config)
        self.num_partitions = self.config.offsets_topic_num_partitions
        self.coordinator = GroupCoordinator(
            self.config,
            broker.clock,
            record_sink=self,
            event_sink=self._on_event,
            owned_partitions=(),
            timers=broker.timers,
        )
        #: writes queued this loop tick, per partition: (entries, append time, done)
        self._tick: dict[int, list[tuple[list[Entry], int, Callable[[ErrorCode], None]]]] = {}
        self._tick_scheduled = False
        self._events: dict[int, list[GroupEvent]] = {}
        self._events_flush_scheduled = False
        #: the logs of the ``__consumer_offsets`` and ``__group_events`` partitions written, by
        #: partition: looked up at a partition's first write, not at every tick, and forgotten
        #: when its shard moves (``move_partition``) and whenever a topic is created, grown or
        #: deleted (``_topics_changed``): a deleted partition's log is closed, never written
        #: again, and a recreated one is looked up anew
        self._offsets_logs: dict[int, PartitionLog] = {}
        self._events_logs: dict[int, PartitionLog] = {}
        #: called with each event as the coordinator makes it, on the loop (the metrics endpoint)
        self.event_listeners: list[Callable[[GroupEvent], None]] = []
        self._load_task: asyncio.Task[None] | None = None
        #: partitions reloading after their leadership moved here (``move_partition``)
        self._reloads: dict[int, asyncio.Task[None]] = {}
        self.loaded = asyncio.Event()
        self._closed = False
        # The consumer groups' topics image (KIP-848): rebuilt on every topic change.
        broker.logs.topic_listeners.append(self._topics_changed)
        self._topics_changed()
        # Per-group configs (IncrementalAlterConfigs on GROUP resources), stored with the topics.
        broker.logs.group_config_listeners.append(self._group_configs_changed)
        for group_id in broker.logs.group_configs():
            self._group_configs_changed(group_id)

    def _group_configs_changed(self, group_id: str) -> None:
        """A group's dynamic configs changed (or were loaded): its shard applies them from each
        member's next heartbeat (``groupcoord.broker.group_configs``)."""
        stored = self.broker.logs.group_configs().get(group_id, {})
        session = stored.get("consumer.session.timeout.ms")
        interval = stored.get("consumer.heartbeat.interval.ms")
        assignment = stored.get("consumer.assignment.interval.ms")
        overrides = (
            GroupOverrides(
                session_timeout_ms=None if session is None else int(session),
                heartbeat_interval_ms=None if interval is None else int(interval),
                assignment_interval_ms=None if assignment is None else int(assignment),
            )
            if stored
            else None
        )
        self.coordinator.set_group_overrides(group_id, overrides)

    def _topics_changed(self) -> None:
        """Hand the consumer groups a new topics image: every topic (internal ones too: Kafka's
        regexes do not skip them), with its id and partition count (the broker has no racks),
        versioned by the log manager's count of topic changes. Groups subscribed to a changed
        topic reassign on their next heartbeat (Kafka's ``onNewMetadataImage``).

        Every topic change also drops the partition logs the writes keep: the change may have
        deleted or recreated an internal topic's partitions."""
        self._offsets_logs.clear()
        self._events_logs.clear()
        logs = self.broker.logs
        image = TopicsImage(
            (
                TopicMetadata(topic_id=m.topic_id, name=m.name, num_partitions=m.partitions)
                for m in logs.topics_view.values()
            ),
            version=logs.topics_version,
        )
        self.coordinator.on_metadata_update(image)

    # ------------------------------------------------------------------ internal topics
    def ensure_topics(self) -> None:
        """Create ``__consumer_offsets`` and ``__group_events`` if this data dir has none."""
        logs = self.broker.logs
        topics = logs.topics_view
        if OFFSETS_TOPIC not in topics:
            logs.create_topic(
                OFFSETS_TOPIC,
                self.num_partitions,
                {
                    "cleanup.policy": "compact",
                    "segment.bytes": str(self.config.offsets_topic_segment_bytes),
                    "compression.type": "producer",
                },
                internal=True,
            )
            log.info("created %s with %d partitions", OFFSETS_TOPIC, self.num_partitions)
        if GROUP_EVENTS_TOPIC not in topics:
            logs.create_topic(
                GROUP_EVENTS_TOPIC, self.num_partitions, {"cleanup.policy": "delete"}, internal=True
            )
            log.info("created %s with %d partitions", GROUP_EVENTS_TOPIC, self.num_partitions)
        have = logs.topics_view[OFFSETS_TOPIC].partitions
        if have != self.num_partitions:
            log.warning(
                "%s has %d partitions but offsets.topic.num.partitions=%d; using %d",
                OFFSETS_TOPIC,
                have,
                self.num_partitions,
                have,
            )

    # ------------------------------------------------------------------ lifecycle
    def start(self) -> None:
        """Begin loading every partition (answers LOAD_IN_PROGRESS until each is done)."""
        self.ensure_topics()
        for p in range(self.num_partitions):
            self.coordinator.begin_loading(p)
        loop = asyncio.get_running_loop()
        self._load_task = loop.create_task(self._load_all())

    async def _load_all(self) -> None:
        total = 0
        # Loading allocates an object per committed offset and frees almost nothing: the
        # cyclic garbage collector would walk the growing heap again and again for nothing
        # (a fifth of the load time for a million offsets). It is off until the load ends.
        gc_was_enabled = gc.isenabled()
        gc.disable()
        try:
            for p in range(self.num_partitions):
                total += await self._load_partition(p)
                self.coordinator.complete_loading(p)
        finally:
            if gc_was_enabled:
                if gc.get_freeze_count() == 0:
                    # Move what the load allocated straight to the oldest generation (freeze
                    # then unfreeze splices lists), rather than having the next young
                    # collection walk every one of those objects once more.
                    gc.freeze()
                    gc.unfreeze()
                gc.enable()
        log.info(
            "loaded %d records from %s (%d groups)",
            total,
            OFFSETS_TOPIC,
            len(self.coordinator.groups()),
        )
        self.loaded.set()

    async def _load_partition(self, partition: int) -> int:
        """Replay one partition; the number of records it holds (superseded commits included).

        :class:`~groupcoord.runtime.loader.OffsetsLoader` does the work: offset commits
        are gathered between the other records and written straight into the groups' offsets
        (a commit followed by another commit of the same key, with no other record of the
        partition in between, is never decoded); tombstones and group records replay in log
        order. The state is the one a replay of every record gives.
        """
        plog = self.broker.logs.partition(OFFSETS_TOPIC, partition)
        loader = OffsetsLoader(self.coordinator, OFFSETS_TOPIC, partition)
        for batches, (header, data) in enumerate(plog.iter_batches_from(plog.log_start_offset), 1):
            loader.feed(header, data)
            if batches % _LOAD_CHUNK == 0:
                await asyncio.sleep(0)
        return loader.finish()

    def move_partition(self, partition: int, leader: int) -> None:
        """Leadership of ``partition`` moved to node ``leader`` (-1: none): the old leader's shard
        unloads (its parked JoinGroups and SyncGroups answered NOT_COORDINATOR, its timers
        cancelled, its groups gone from memory), and the new leader's loads from the partition,
        answering COORDINATOR_LOAD_IN_PROGRESS until it is replayed: Kafka's
        ``GroupCoordinatorService.onResignation`` / ``onElection``. Before the first load is done
        there is nothing to move: the load under way is the new leader's."""
        if not self.loaded.is_set() or self._closed:
            return
        running = self._reloads.pop(partition, None)
        if running is not None:
            running.cancel()
        self.coordinator.unload_partition(partition)
        self._offsets_logs.pop(partition, None)
        self._events_logs.pop(partition, None)
        if leader < 0:
            return
        self.coordinator.begin_loading(partition)
        task = asyncio.get_running_loop().create_task(self._reload(partition))
        self._reloads[partition] = task

    async def _reload(self, partition: int) -> None:
        records = await self._load_partition(partition)
        if self._reloads.get(partition) is asyncio.current_task():
            del self._reloads[partition]
        self.coordinator.complete_loading(partition)
        log.info("%s-%d: loaded %d records after a leader change", OFFSETS_TOPIC, partition, records)

    def reloading(self) -> bool:
        """Whether a partition whose leadership moved is still loading."""
        return bool(self._reloads)

    async def reloaded(self) -> None:
        """Wait until every partition whose leadership moved has loaded."""
        while self._reloads:
            await asyncio.wait(list(self._reloads.values()))

    def resign(self) -> None:
        """At shutdown: answer every parked JoinGroup and SyncGroup with NOT_COORDINATOR.

        Kafka's coordinator does this when leadership of its partitions moves away (a
        controlled shutdown moves all of them): ``GroupCoordinator.onResignation`` unloads each
        group, answering its parked JoinGroups (PreparingRebalance) and SyncGroups
        (CompletingRebalance, Stable) with NOT_COORDINATOR, on which clients look the
        coordinator up again. Without this the parked requests would hold the server's drain
        until its grace period ran out.

        Only the partitions holding a parked request are unloaded: the server reads no request
        after this (it drains), so for the other groups unloading would change nothing a client
        sees, and would cost a log line and a Dead event per group at every shutdown.
        """
        parked = {
            self.coordinator.partition_for(group.group_id)
            for group in self.coordinator.groups()
            if any(m.awaiting_join is not None or m.awaiting_sync is not None for m in group.members.values())
        }
        for p in sorted(parked):
            self.coordinator.unload_partition(p)

    async def close(self) -> None:
        self._closed = True
        if self._load_task is not None:
            self._load_task.cancel()
        for task in self._reloads.values():
            task.cancel()
        self.coordinator.runtime.close()
        self._write_tick()
        self._flush_events()

    # ------------------------------------------------------------------ RecordSink
    def append(
        self,
        partition: int,
        records: Sequence[CoordinatorRecord | SelfEncodingRecord],
        done: Callable[[ErrorCode], None],
    ) -> None:
        """Queue a write for the end of this loop tick (see :meth:`_write_tick`).

        Each record keeps the time of its own append as its timestamp.
        """
        now = self.broker.clock.now_ms()
        entries: list[Entry] = [(*encode_record(rec), ()) for rec in records]
        pending = self._tick.get(partition)
        if pending is None:
            pending = self._tick[partition] = []
        pending.append((entries, now, done))
        if not self._tick_scheduled:
            self._tick_scheduled = True
            try:
                asyncio.get_running_loop().call_soon(self._write_tick)
            except RuntimeError:  # no loop (closing): write now
                self._write_tick()

    def _write_tick(self) -> None:
        """Write the tick's queued writes: per partition one batch, one ``write``, and for all
        of them one flush round, after which every write of the tick is confirmed at once.

        Many small groups commit to many partitions of ``__consumer_offsets``; commits landing
        on one partition in one tick (pipelined commits, or several groups) then cost one
        append and one fsync, and the whole tick one flush registration instead of one per
        commit. Records keep the order of the appends (per partition, the order the shard made
        its writes), so the log reads as if each had been appended at once; no answer is given
        before the round holding its records is fsynced (or, under an explicit ``log.flush.*``
        policy, before its append). A failed append fails the writes of that partition's batch.
        """
        self._tick_scheduled = False
        tick, self._tick = self._tick, {}
        if not tick:
            return
        dones: list[Callable[[ErrorCode], None]] = []
        dirty: dict[Hashable, Flushable] = {}
        for partition, writes in tick.items():
            try:
                plog = self._log(self._offsets_logs, OFFSETS_TOPIC, partition)
            except KeyError:
                self._confirm([w[2] for w in writes], ErrorCode.UNKNOWN_TOPIC_OR_PARTITION)
                continue
            appended = self._tick_appends(plog, partition, writes)
            if not appended:
                continue
            for nbytes, batch_dones in appended:
                self.broker.notify_append((OFFSETS_TOPIC, partition), nbytes)
                dones.extend(batch_dones)
            dirty[(OFFSETS_TOPIC, partition)] = plog
        if not dones:
            return
        if self.broker.config.flush_policy_explicit:
            self._confirm(dones, ErrorCode.NONE)
            return
        fut = self.broker.flusher.flush(dirty)
        fut.add_done_callback(functools.partial(self._tick_flushed, dones))

    def _tick_appends(
        self,
        plog: PartitionLog,
        partition: int,
        writes: list[tuple[list[Entry], int, Callable[[ErrorCode], None]]],
    ) -> list[tuple[int, list[Callable[[ErrorCode], None]]]]:
        """Append a partition's writes of a tick as one batch; as one batch per write if together
        they pass ``max.message.bytes`` (a write too large alone then fails alone). The bytes and
        completions of each batch appended; a failed write is confirmed with its error here."""
        timestamps = None  # one millisecond (the usual tick): no per-record timestamps
        if len(writes) == 1:  # the usual tick of a partition: its entries as they are
            entries, first, _done = writes[0]
        else:
            entries = [entry for write_entries, _now, _done in writes for entry in write_entries]
            first = writes[0][1]
            if any(now != first for _e, now, _d in writes):
                timestamps = [now for write_entries, now, _done in writes for _ in write_entries]
        all_dones = [w[2] for w in writes]
        try:
            return [(plog.append_records(entries, first, timestamps), all_dones)]
        except Exception as exc:  # the storage layer's errors carry no wire code of their own
            if len(writes) == 1 or not isinstance(exc, RecordTooLargeError):
                self._append_failed(partition, all_dones, exc)
                return []
            # nothing was written: each write alone
        appended: list[tuple[int, list[Callable[[ErrorCode], None]]]] = []
        for write_entries, now, done in writes:
            try:
                appended.append((plog.append_records(write_entries, now), [done]))
            except Exception as exc:
                self._append_failed(partition, [done], exc)
        return appended

    def _log(self, logs: dict[int, PartitionLog], topic: str, partition: int) -> PartitionLog:
        """The log of ``topic``'s ``partition`` kept in ``logs`` (one of the two caches above),
        looked up at its first write; KeyError when the partition does not exist."""
        plog = logs.get(partition)
        if plog is None:
            plog = logs[partition] = self.broker.logs.partition(topic, partition)
        return plog

    def _append_failed(
        self, partition: int, dones: list[Callable[[ErrorCode], None]], exc: Exception
    ) -> None:
        code = getattr(exc, "code", None)
        log.error("%s-%d append failed: %r", OFFSETS_TOPIC, partition, exc)
        self._confirm(dones, code if isinstance(code, ErrorCode) else ErrorCode.KAFKA_STORAGE_ERROR)

    def _tick_flushed(self, dones: list[Callable[[ErrorCode], None]], fut: asyncio.Future[None]) -> None:
        failed = fut.cancelled() or fut.exception() is not None
        self._confirm(dones, ErrorCode.KAFKA_STORAGE_ERROR if failed else ErrorCode.NONE)

    def _confirm(self, dones: list[Callable[[ErrorCode], None]], code: ErrorCode) -> None:
        for done in dones:
            try:
                done(code)
            except Exception:  # one write's completion must not cost the others theirs
                log.exception("%s: completing a write failed", OFFSETS_TOPIC)

    def append_transactional(
        self,
        partition: int,
        records: Sequence[CoordinatorRecord | SelfEncodingRecord],
        producer_id: int,
        producer_epoch: int,
        done: Callable[[ErrorCode], None],
    ) -> None:
        """A TxnOffsetCommit's records as a transactional batch of the producer (as Kafka's
        ``GroupMetadataManager.storeOffsets``); a fenced epoch is INVALID_PRODUCER_EPOCH."""
        try:
            plog = self._log(self._offsets_logs, OFFSETS_TOPIC, partition)
        except KeyError:
            self._finish(done, ErrorCode.UNKNOWN_TOPIC_OR_PARTITION)
            return
        if partition in self._tick:
            self._write_tick()  # the plain writes queued before it go first, as the shard made them
        entry = plog.producer_state().producer(producer_id)
        if entry is not None and producer_epoch < entry.epoch:
            self._finish(done, ErrorCode.INVALID_PRODUCER_EPOCH)
            return
        batch = build_batch(
            [(*encode_record(rec), ()) for rec in records],
            timestamp_ms=self.broker.clock.now_ms(),
            producer_id=producer_id,
            producer_epoch=producer_epoch,
            base_sequence=0,
            attributes=ATTR_TRANSACTIONAL,
        )
        self._append_batch(plog, partition, batch, done)

    def complete_transaction(self, partition: int, producer_id: int, commit: bool) -> None:
        """A COMMIT/ABORT marker of ``producer_id`` is durable in ``partition`` (the transaction
        runtime calls this): the group coordinator applies it to the pending offsets."""
        self.coordinator.complete_transaction(partition, producer_id, commit)

    def _append_batch(
        self, plog: PartitionLog, partition: int, batch: bytes, done: Callable[[ErrorCode], None]
    ) -> None:
        try:
            plog.append(batch)
        except Exception as exc:  # the storage layer's errors carry no wire code of their own
            code = getattr(exc, "code", None)
            log.error("%s-%d append failed: %r", OFFSETS_TOPIC, partition, exc)
            self._finish(done, code if isinstance(code, ErrorCode) else ErrorCode.KAFKA_STORAGE_ERROR)
            return
        self.broker.notify_append((OFFSETS_TOPIC, partition), len(batch))
        if self.broker.config.flush_policy_explicit:
            self._finish(done, ErrorCode.NONE)
            return
        dirty: dict[Hashable, Flushable] = {}
        dirty[(OFFSETS_TOPIC, partition)] = plog
        fut = self.broker.flusher.flush(dirty)
        fut.add_done_callback(lambda f: self._flushed(f, done))

    def _flushed(self, fut: asyncio.Future[None], done: Callable[[ErrorCode], None]) -> None:
        if fut.cancelled() or fut.exception() is not None:
            self._finish(done, ErrorCode.KAFKA_STORAGE_ERROR)
        else:
            self._finish(done, ErrorCode.NONE)

    def _finish(self, done: Callable[[ErrorCode], None], code: ErrorCode) -> None:
        done(code)

    # ------------------------------------------------------------------ events
    def _on_event(self, event: GroupEvent) -> None:
        for listener in self.event_listeners:
            listener(event)
        partition = self.coordinator.partition_for(event.group_id)
        self._events.setdefault(partition, []).append(event)
        if not self._events_flush_scheduled:
            self._events_flush_scheduled = True
            try:
                asyncio.get_running_loop().call_soon(self._flush_events)
            except RuntimeError:  # no loop (closing): write now
                self._flush_events()

    def _flush_events(self) -> None:
        self._events_flush_scheduled = False
        pending, self._events = self._events, {}
        for partition, events in pending.items():
            try:
                plog = self._log(self._events_logs, GROUP_EVENTS_TOPIC, partition)
            except KeyError:
                continue
            entries: list[Entry] = [(e.group_id.encode("utf-8"), e.encoded, ()) for e in events]
            try:
                nbytes = plog.append_records(entries, events[-1].time_ms)
            except Exception:
                log.exception(
                    "%s-%d: could not publish %d events", GROUP_EVENTS_TOPIC, partition, len(events)
                )
                continue
            self.broker.notify_append((GROUP_EVENTS_TOPIC, partition), nbytes)
