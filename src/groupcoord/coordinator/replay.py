"""Replay of ``__consumer_offsets`` records, and loading and unloading partitions.

Records are the only way durable state changes: the live path replays a write's records when
it is durable, and loading replays the log (``replay_offsets`` is the bulk form for runs of
offset commits). Groups of a partition become visible when its load completes: Stable with
their members (fresh sessions) or Empty.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable

from groupcoord.coordinator.admin import AdminHandlers
from groupcoord.coordinator.base import (
    DEAD,
    EMPTY,
    STABLE,
    join_error,
    sync_error,
)
from groupcoord.coordinator.events import EventReason
from groupcoord.coordinator.group import (
    ClassicGroup,
    CommittedOffset,
    Member,
)
from groupcoord.coordinator.offsets import committed_offset
from groupcoord.coordinator.records import (
    CoordinatorRecord,
    GroupMetadataKey,
    GroupMetadataValue,
    OffsetCommitKey,
    OffsetCommitValue,
)
from groupcoord.errors import ErrorCode, IllegalStateError
from groupcoord.gcutil import untrack

log = logging.getLogger(__name__)


class ReplayHandlers(AdminHandlers):
    def _replay(self, record: CoordinatorRecord) -> None:
        """Apply one record to the state: the one way durable state changes.

        Used on the live path (after the sink confirms a write) and while loading a
        partition (between :meth:`begin_loading` and :meth:`complete_loading`).
        """
        key = record.key
        value = record.value
        if isinstance(key, OffsetCommitKey):
            group = self._groups.get(key.group)
            if key.group in self._open_txns:
                self._plain_offset_replayed(key.group, (key.topic, key.partition), value is None)
            if value is None:
                if group is not None:
                    group.offsets.pop((key.topic, key.partition), None)
                return
            if not isinstance(value, OffsetCommitValue):
                raise IllegalStateError(f"offset commit key with value {type(value).__name__}")
            if group is None:
                group = self._replayed_offsets_group(key.group, value)
            # Numbers and a string, alive until the next commit of the partition: the cyclic
            # collector would only walk it (groupcoord.gcutil).
            group.offsets[(key.topic, key.partition)] = untrack(committed_offset(value))
            return
        if not isinstance(key, GroupMetadataKey):
            log.warning("skipping record with unknown key type %s", type(key).__name__)
            return
        loading = self.partition_for(key.group) in self._loading
        if value is None:
            group = self._groups.get(key.group)
            if group is not None and (loading or group.state is DEAD):
                self._drop_group(key.group)
                if loading and group.offsets:
                    # As Kafka's loader: offsets outlive a group tombstone; they load as a
                    # simple (offsets-only) group.
                    simple = ClassicGroup(key.group, self._now())
                    simple.state_timestamp = None
                    simple.offsets = group.offsets
                    self._groups[key.group] = simple
            return
        if not isinstance(value, GroupMetadataValue):
            raise IllegalStateError(f"group metadata key with value {type(value).__name__}")
        group = self._groups.get(key.group)
        if group is not None and not loading and group.state is not DEAD:
            self._apply_group_metadata(group, value)
            return
        fresh = self._group_from_record(key.group, value)
        if group is not None:
            fresh.offsets = group.offsets
            self._drop_group(key.group)
        self._groups[key.group] = fresh
        if not loading:
            self._activate_loaded_group(fresh)

    def replay_offsets(
        self, group_id: str, offsets: Iterable[tuple[tuple[str, int], CommittedOffset]]
    ) -> None:
        """Replay a run of offset commits of ``group_id``, in log order, for a bulk loader.

        The same as replaying each commit record (:meth:`replay`): the offsets-only group a
        commit creates if there is none, then each ``(topic, partition) -> offset`` assigned in
        order. A commit replay produces no responses, writes or events, so nothing is returned.
        """
        group = self._groups.get(group_id)
        if group is None:
            group = ClassicGroup(group_id, 0)
            group.state_timestamp = None  # as replay() of a commit: not a group record's timestamp
            self._groups[group_id] = group
        if group_id in self._open_txns:
            offsets = list(offsets)
            for key, _ in offsets:
                self._plain_offset_replayed(group_id, key, False)
        group.offsets.update(offsets)

    def _complete_transaction(self, partition: int, producer_id: int, commit: bool) -> None:
        """The live path: a marker of ``producer_id`` is durable in ``partition``. While the
        partition loads, it is applied when the load completes (the loader may or may not have
        read it from the log; applying it twice changes nothing)."""
        if partition in self._loading:
            self._deferred_markers.setdefault(partition, []).append((producer_id, commit))
            return
        if partition in self._owned:
            self._end_transaction(partition, producer_id, commit)

    def _apply_group_metadata(self, group: ClassicGroup, value: GroupMetadataValue) -> None:
        """Live path: the record confirms what the in-memory group already decided."""
        if value.generation < group.generation:
            return  # the group has moved past this record while it was being written
        group.generation = value.generation
        group.protocol_type = value.protocol_type or None
        group.protocol_name = value.protocol
        if value.leader is not None:
            group.leader_id = value.leader
        for rec in value.members:
            member = group.members.get(rec.member_id)
            if member is not None:
                member.assignment = rec.assignment

    def _group_from_record(self, group_id: str, value: GroupMetadataValue) -> ClassicGroup:
        group = ClassicGroup(group_id, self._now())
        group.state_timestamp = value.current_state_timestamp
        group.generation = value.generation
        group.protocol_type = value.protocol_type or None
        group.protocol_name = value.protocol
        for rec in value.members:
            protocols = ((value.protocol, rec.subscription),) if value.protocol is not None else ()
            member = Member(
                member_id=rec.member_id,
                group_instance_id=rec.group_instance_id,
                client_id=rec.client_id,
                client_host=rec.client_host,
                rebalance_timeout_ms=rec.rebalance_timeout
                if rec.rebalance_timeout >= 0
                else rec.session_timeout,
                session_timeout_ms=rec.session_timeout,
                protocol_type=value.protocol_type,
                protocols=protocols,
                assignment=rec.assignment,
            )
            group.add(member)
        group.protocol_type = value.protocol_type or None
        group.leader_id = value.leader if value.leader in group.members else next(iter(group.members), None)
        group.subscribed_topics = group.compute_subscribed_topics()
        return group

    def _activate_loaded_group(self, group: ClassicGroup) -> None:
        """Loaded groups become Stable (with members) or Empty; members get fresh sessions."""
        target = STABLE if group.members else EMPTY
        group.start_loaded(target)
        self._emit(group, "state_change", EventReason.LOADED, to_state=target)
        for m in group.members.values():
            self.complete_and_schedule_next_heartbeat_expiration(group, m)
        if len(group.members) > self._config.group_max_size:
            log.info(
                "group=%s loaded with %d members > group.max.size: rebalancing",
                group.group_id,
                len(group.members),
            )
            self.prepare_rebalance(group, EventReason.MAX_SIZE_EXCEEDED)

    def _begin_loading(self, partition: int) -> None:
        """Start loading ``partition``: its groups answer COORDINATOR_LOAD_IN_PROGRESS until done."""
        self._owned.add(partition)
        self._loading.add(partition)

    def _complete_loading(self, partition: int) -> None:
        if partition not in self._loading:
            raise IllegalStateError(f"partition {partition} is not loading")
        self._loading.discard(partition)
        for producer_id, commit in self._deferred_markers.pop(partition, ()):
            self._end_transaction(partition, producer_id, commit)
        cached = self._partition_cache.get  # called once per partition for every group: inline
        for group in list(self._groups.values()):
            if group.previous_state is None and group.state is EMPTY:
                p = cached(group.group_id)
                if p is None:
                    p = self.partition_for(group.group_id)
                if p == partition:
                    self._activate_loaded_group(group)

    def _unload_partition(self, partition: int) -> None:
        """Leadership of ``partition`` lost: its groups die and parked requests get NOT_COORDINATOR."""
        self._owned.discard(partition)
        was_loading = partition in self._loading
        self._loading.discard(partition)
        self._deferred_markers.pop(partition, None)
        for by_group in self._txn_offsets.values():
            for group_id in [g for g in by_group if self.partition_for(g) == partition]:
                del by_group[group_id]
                self._open_txns.pop(group_id, None)
        for producer_id in [pid for pid, by_group in self._txn_offsets.items() if not by_group]:
            del self._txn_offsets[producer_id]
        for group in list(self._groups.values()):
            if self.partition_for(group.group_id) != partition:
                continue
            if was_loading:
                self._drop_group(group.group_id)  # never became visible
                continue
            for m in list(group.members.values()):
                self._reply_join(group, m, join_error(m.join_version, ErrorCode.NOT_COORDINATOR, m.member_id))
                self._reply_sync(m, sync_error(ErrorCode.NOT_COORDINATOR))
            if group.state is not DEAD:
                self._transition(group, DEAD, EventReason.COORDINATOR_UNLOADED)
            self._drop_group(group.group_id)
