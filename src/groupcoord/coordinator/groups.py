"""The groups manager: the shard's group table and what every group type shares.

Kafka 4.x's ``GroupMetadataManager``, split by group type: this class owns the table of groups
of its ``__consumer_offsets`` partitions, answers DescribeGroups and ListGroups, applies group
records, and activates or drops the groups of a partition when it is loaded or unloaded; the
protocol of each group type is a part it holds (:attr:`GroupMetadataManager.classic`, the
classic rebalance protocol's handlers, :mod:`groupcoord.coordinator.classic_group`, which drive
:attr:`GroupMetadataManager.rebalance`, its rebalance machinery,
:mod:`groupcoord.coordinator.classic_rebalance`). A second group type
(the consumer groups of KIP-848) is a second such part beside ``classic``, sharing the table.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence

from groupcoord.coordinator.classic_group import ClassicGroupManager
from groupcoord.coordinator.classic_messages import join_error, sync_error
from groupcoord.coordinator.classic_rebalance import ClassicRebalance
from groupcoord.coordinator.consumer.metadata import TopicsImage
from groupcoord.coordinator.consumer_groups import ConsumerGroups, is_offsets_holder
from groupcoord.coordinator.context import DEAD, EMPTY, STABLE, ShardContext
from groupcoord.coordinator.events import EventReason
from groupcoord.coordinator.group import ClassicGroup, Member
from groupcoord.coordinator.records import GroupMetadataKey, GroupMetadataValue
from groupcoord.coordinator.result import CoordinatorResult
from groupcoord.errors import ErrorCode
from groupcoord.protocol.group_messages import (
    DescribedGroup,
    DescribedMember,
    DescribeGroupsResponse,
    ListedGroup,
    ListGroupsResponse,
)

log = logging.getLogger(__name__)


class GroupMetadataManager:
    def __init__(self, ctx: ShardContext, image: TopicsImage | None = None) -> None:
        self._ctx = ctx
        #: group id -> group, for every group of the partitions the shard leads or loads.
        self.groups: dict[str, ClassicGroup] = {}
        #: The classic rebalance protocol (JoinGroup, SyncGroup, Heartbeat, LeaveGroup).
        #: The classic rebalance machinery (phases, member removal, heartbeats, timer expiries),
        #: a part of its own: the classic handlers drive it, and so do the load, the unload, the
        #: consumer groups' conversions, a commit's heartbeat and the shard's timers.
        self.rebalance = ClassicRebalance(ctx, self.groups, self.replay)
        #: The classic rebalance protocol's handlers (JoinGroup, SyncGroup, Heartbeat, LeaveGroup).
        self.classic = ClassicGroupManager(ctx, self.groups, self.rebalance)
        #: The consumer groups of KIP-848 (ConsumerGroupHeartbeat, ConsumerGroupDescribe).
        self.consumer = ConsumerGroups(ctx, self.groups, image or TopicsImage())
        self.consumer.classic_rebalance = self.rebalance

    # ------------------------------------------------------------------ the table
    def group(self, group_id: str) -> ClassicGroup | None:
        return self.groups.get(group_id)

    def all_groups(self) -> list[ClassicGroup]:
        return list(self.groups.values())

    def simple_group(self, out: CoordinatorResult, group_id: str) -> ClassicGroup:
        """A new group that only holds offsets (a commit with no generation creates it)."""
        group = ClassicGroup(group_id, self._ctx.now())
        self.groups[group_id] = group
        self._ctx.emit(out, group, "state_change", EventReason.GROUP_CREATED, to_state=EMPTY)
        return group

    def replayed_group(self, group_id: str, created_ms: int) -> ClassicGroup:
        """The group a replayed offset of an unknown group makes: offsets only, with no state
        timestamp (it was not created now but when the record was written)."""
        group = ClassicGroup(group_id, created_ms)
        group.state_timestamp = None
        self.groups[group_id] = group
        return group

    def drop_group(self, group_id: str) -> None:
        """Forget a group and cancel its timers."""
        group = self.groups.pop(group_id, None)
        if group is not None:
            self.rebalance.cancel_timers(group)

    def remove_group(self, out: CoordinatorResult, group: ClassicGroup, reason: EventReason) -> None:
        """A group whose records are all gone dies (an event) and is forgotten."""
        self._ctx.transition(out, group, DEAD, reason)
        self.drop_group(group.group_id)

    # ------------------------------------------------------------------ records and loading
    def replay(self, out: CoordinatorResult, key: GroupMetadataKey, value: GroupMetadataValue | None) -> None:
        """Apply a group record (or its tombstone): the one way a group's durable state changes.

        Used on the live path (once a write is durable) and while its partition loads: then the
        log's latest record wins and the group stays invisible until the load completes
        (:meth:`activate_loaded_group`).
        """
        loading = self._ctx.partition_for(key.group) in self._ctx.loading
        if value is None:
            group = self.groups.get(key.group)
            if group is not None and (loading or group.state is DEAD):
                self.drop_group(key.group)
                if loading and group.offsets:
                    # As Kafka's loader: offsets outlive a group tombstone; they load as a
                    # simple (offsets-only) group.
                    simple = ClassicGroup(key.group, self._ctx.now())
                    simple.state_timestamp = None
                    simple.offsets = group.offsets
                    self.groups[key.group] = simple
            return
        group = self.groups.get(key.group)
        if group is not None and not loading and group.state is not DEAD:
            self._apply_group_metadata(group, value)
            return
        fresh = self._group_from_record(key.group, value)
        if group is not None:
            fresh.offsets = group.offsets
            self.drop_group(key.group)
        self.groups[key.group] = fresh
        if not loading:
            self.activate_loaded_group(out, fresh)

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
        group = ClassicGroup(group_id, self._ctx.now())
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

    def activate_loaded_group(self, out: CoordinatorResult, group: ClassicGroup) -> None:
        """Loaded groups become Stable (with members) or Empty; members get fresh sessions."""
        target = STABLE if group.members else EMPTY
        group.start_loaded(target)
        self._ctx.emit(out, group, "state_change", EventReason.LOADED, to_state=target)
        for m in group.members.values():
            self.rebalance.complete_and_schedule_next_heartbeat_expiration(group, m)
        if len(group.members) > self._ctx.config.group_max_size:
            log.info(
                "group=%s loaded with %d members > group.max.size: rebalancing",
                group.group_id,
                len(group.members),
            )
            self.rebalance.prepare_rebalance(out, group, EventReason.MAX_SIZE_EXCEEDED)

    def complete_loading(self, out: CoordinatorResult, partition: int) -> None:
        """The groups a load of ``partition`` left behind become visible (Stable or Empty)."""
        ctx = self._ctx
        self.consumer.complete_loading(out, partition)
        for group in list(self.groups.values()):
            if (
                group.previous_state is None
                and group.state is EMPTY
                and ctx.partition_for(group.group_id) == partition
            ):
                self.activate_loaded_group(out, group)

    def unload(self, out: CoordinatorResult, partition: int, was_loading: bool) -> None:
        """Leadership of ``partition`` lost: its groups die and parked requests get NOT_COORDINATOR."""
        for group in list(self.groups.values()):
            if self._ctx.partition_for(group.group_id) == partition:
                self._unload_group(out, group, was_loading)
        self.consumer.unload(partition)

    def _unload_group(self, out: CoordinatorResult, group: ClassicGroup, was_loading: bool) -> None:
        """Leadership of the group's partition is lost: it dies, and its parked requests get
        NOT_COORDINATOR (Kafka's ``onResignation``); a group still loading just goes."""
        if not was_loading:
            for m in list(group.members.values()):
                self.rebalance.reply_join(
                    out, group, m, join_error(m.join_version, ErrorCode.NOT_COORDINATOR, m.member_id)
                )
                self.rebalance.reply_sync(out, m, sync_error(ErrorCode.NOT_COORDINATOR))
            if group.state is not DEAD:
                self._ctx.transition(out, group, DEAD, EventReason.COORDINATOR_UNLOADED)
        self.drop_group(group.group_id)

    # ------------------------------------------------------------------ DescribeGroups, ListGroups
    def describe_groups(self, group_ids: Sequence[str]) -> DescribeGroupsResponse:
        return DescribeGroupsResponse(groups=tuple(self.describe_group(g) for g in group_ids))

    def describe_group(self, group_id: str) -> DescribedGroup:
        def dead(error: ErrorCode) -> DescribedGroup:
            return DescribedGroup(
                group_id=group_id,
                error=error,
                state=DEAD.value,
                protocol_type="",
                protocol_data="",
                members=(),
            )

        status = self._ctx.status(group_id)
        if status is not None:
            return dead(status)
        group = self.groups.get(group_id)
        if group is None or self.consumer.holds(group_id):
            # DescribeGroups v0-5 of a consumer group: no error, Dead, no members, as Kafka 4.x
            # answers (v6 would say GROUP_ID_NOT_FOUND "is not a classic group").
            return dead(ErrorCode.NONE)
        stable = group.state is STABLE
        members = tuple(
            DescribedMember(
                member_id=m.member_id,
                group_instance_id=m.group_instance_id,
                client_id=m.client_id,
                client_host=m.client_host,
                metadata=m.metadata(group.protocol_name) if stable and group.protocol_name else b"",
                assignment=m.assignment if stable else b"",
            )
            for m in group.members.values()
        )
        return DescribedGroup(
            group_id=group_id,
            error=ErrorCode.NONE,
            state=group.state.value,
            protocol_type=group.protocol_type or "",
            protocol_data=(group.protocol_name or "") if stable else "",
            members=members,
        )

    def list_groups(self, states_filter: Sequence[str] | None) -> ListGroupsResponse:
        wanted = {s.lower() for s in states_filter} if states_filter else None
        error = ErrorCode.COORDINATOR_LOAD_IN_PROGRESS if self._ctx.loading else ErrorCode.NONE
        out = []
        consumer = self.consumer
        for group in self.groups.values():
            if not self._ctx.serves(group.group_id) or group.state is DEAD:
                continue
            if consumer.holds(group.group_id) and is_offsets_holder(group):
                continue  # a consumer group's offsets: listed as the consumer group below
            if wanted is not None and group.state.value.lower() not in wanted:
                continue
            out.append(
                ListedGroup(
                    group_id=group.group_id,
                    protocol_type=group.protocol_type or "",
                    group_state=group.state.value,
                )
            )
        out.extend(consumer.listed(wanted))
        return ListGroupsResponse(error=error, groups=tuple(out))
