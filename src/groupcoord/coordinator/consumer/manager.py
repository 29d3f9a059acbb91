"""The consumer groups of one group shard: ConsumerGroupHeartbeat, ConsumerGroupDescribe, their
timers and records (Kafka 4.1 ``GroupMetadataManager``, consumer-group parts, and the request
validation of ``GroupCoordinatorService``).

Every entry point is pure: it takes the request and ``now`` (ms) and returns a
:class:`ConsumerGroupResult`. As in Kafka, a handler first computes its records against the state
as it was, raising a ``KafkaError`` (and writing nothing) on the first failed check, and then
replays the records it produced into the model before returning them; the shard appends them and
releases the response once they are durable.

ConsumerGroupHeartbeat, the order of checks (reference §2.2):

1. request validation (INVALID_REQUEST with Kafka's messages, UNSUPPORTED_ASSIGNOR);
2. leave (epoch -1 / -2): the group (GROUP_ID_NOT_FOUND), the member (UNKNOWN_MEMBER_ID), a static
   member's instance (UNKNOWN_MEMBER_ID, FENCED_INSTANCE_ID); the epoch is not checked;
3. otherwise: the group (GROUP_ID_NOT_FOUND unless joining), its size (GROUP_MAX_SIZE_REACHED),
   the member (UNKNOWN_MEMBER_ID; static: UNRELEASED_INSTANCE_ID, UNKNOWN_MEMBER_ID,
   FENCED_INSTANCE_ID), its epoch (FENCED_MEMBER_EPOCH), a new regex (INVALID_REGULAR_EXPRESSION),
   the assignor (UNKNOWN_SERVER_ERROR), reconciliation of a member in an unknown state
   (FENCED_MEMBER_EPOCH).

Versions: Kafka 4.1 throughout, with Kafka 4.3's assignment batching (KIP-1263, KAFKA-20291): a
heartbeat that bumps the group epoch computes the new target only once
``group.consumer.assignment.interval.ms`` (or the group's ``consumer.assignment.interval.ms``) has
passed since the last computation, and otherwise reconciles with the last target; and two later
fixes the reference lists (§3.11) because they make real clients work better: a member that rejoins
at epoch 0 with its old id is accepted whatever epoch the server holds (KAFKA-19233, 4.2; 4.1
answers FENCED_MEMBER_EPOCH until the session expires, while the Java client rejoins with the same
id), and a member's own pending revocation is not "unreleased" (KAFKA-19449, 4.1 branch). A regex
that changes to "" bumps the epoch only through the subscription-hash check, as in 4.1.0
(KAFKA-19899 is not taken).

Classic-protocol members inside a consumer group are ``classic_members.py``; the online upgrade
and downgrade ``migration.py``; when regexes are resolved, and their resolution, ``regexes.py``.
Not here: topic authorization, reading at the last committed offset.
"""

from __future__ import annotations

import base64
import logging
import uuid
from collections import Counter
from collections.abc import Callable, Iterable, Mapping

from groupcoord.coordinator.consumer.api import (
    Batch,
    ConsumerGroupDescribeRequest,
    ConsumerGroupDescribeResponse,
    ConsumerGroupEvent,
    ConsumerGroupHeartbeatRequest,
    ConsumerGroupHeartbeatResponse,
    ConsumerGroupResult,
    TimerCancel,
    TimerKind,
    TimerSchedule,
    timer_key,
)
from groupcoord.coordinator.consumer.assignment import (
    Assignment,
    PartitionAssignor,
    PartitionAssignorError,
    SubscriptionType,
)
from groupcoord.coordinator.consumer.config import ConsumerGroupConfig, GroupOverrides
from groupcoord.coordinator.consumer.describe import describe_groups
from groupcoord.coordinator.consumer.group import ConsumerGroup, subscription_type
from groupcoord.coordinator.consumer.member import ConsumerGroupMember, MemberState
from groupcoord.coordinator.consumer.metadata import (
    METADATA_REFRESH_INTERVAL_MS,
    TopicsImage,
    group_metadata_hash,
)
from groupcoord.coordinator.consumer.migration import (
    MEMBER_TIMERS,
    downgrade_allowed,
    downgrade_of,
    group_tombstones,
)
from groupcoord.coordinator.consumer.range_assignor import RangeAssignor
from groupcoord.coordinator.consumer.reconcile import reconcile
from groupcoord.coordinator.consumer.records import (
    ConsumerGroupRecord,
    new_current_assignment_record,
    new_current_assignment_tombstone,
    new_group_epoch_record,
    new_member_subscription_record,
    new_member_subscription_tombstone,
    new_partition_metadata_tombstone,
    new_regular_expression_tombstone,
    new_target_assignment_epoch_record,
    new_target_assignment_record,
    new_target_assignment_tombstone,
)
from groupcoord.coordinator.consumer.regexes import RegexResolution
from groupcoord.coordinator.consumer.replay import replay
from groupcoord.coordinator.consumer.static_members import replace_static_member
from groupcoord.coordinator.consumer.target import build_target_assignment, can_compute_next_target
from groupcoord.coordinator.consumer.uniform_assignor import UniformAssignor
from groupcoord.coordinator.consumer.validation import (
    LEAVE_GROUP_MEMBER_EPOCH,
    LEAVE_GROUP_STATIC_MEMBER_EPOCH,
    check_member_epoch,
    validate_heartbeat_request,
)
from groupcoord.errors import ErrorCode, KafkaError

log = logging.getLogger(__name__)

__all__ = ["ConsumerGroupManager"]


#: Why a member's timer fences it.
_TIMER_CAUSES = {
    TimerKind.SESSION: "session-timeout",
    TimerKind.REBALANCE: "rebalance-timeout",
    TimerKind.CLASSIC_JOIN: "join-timeout",
    TimerKind.CLASSIC_SYNC: "sync-timeout",
}


def _java_uuid_string() -> str:
    """A member id as Kafka's ``Uuid.randomUuid().toString()``: 22 URL-safe base64 characters."""
    return base64.urlsafe_b64encode(uuid.uuid4().bytes).decode().rstrip("=")


class ConsumerGroupManager:
    """Every consumer group of one ``__consumer_offsets`` partition (or of a whole shard).

    Args:
        config: the ``group.consumer.*`` configs.
        assignors: name -> assignor; defaults to ``uniform`` and ``range`` as Kafka's.
        image: the topics, replaced later through :meth:`on_metadata_update`.
        member_id_factory: makes the member id of a v0 join with an empty one.
        before_write: called with the ids of the groups a handler's records change, before
            they are replayed.
        is_other_group_type: whether the shard holds a group of another type (classic) under an
            id; such an id answers GROUP_ID_NOT_FOUND "is not a consumer group" here.
    """

    def __init__(
        self,
        *,
        config: ConsumerGroupConfig | None = None,
        assignors: Mapping[str, PartitionAssignor] | None = None,
        image: TopicsImage | None = None,
        member_id_factory: Callable[[], str] = _java_uuid_string,
        is_other_group_type: Callable[[str], bool] = lambda group_id: False,
        before_write: Callable[[Iterable[str]], None] | None = None,
    ) -> None:
        self.config = config or ConsumerGroupConfig()
        known = assignors or {"uniform": UniformAssignor(), "range": RangeAssignor()}
        self.assignors = {name: known[name] for name in self.config.assignors}
        self.image = image or TopicsImage()
        self.groups: dict[str, ConsumerGroup] = {}
        self.overrides: dict[str, GroupOverrides] = {}
        self._member_id_factory = member_id_factory
        self._is_other_group_type = is_other_group_type
        self._before_write = before_write
        #: when the groups' regexes are resolved, and the resolution (``regexes.py``)
        self.regexes = RegexResolution(self.config)

    # ================================================================================ records

    def replay(self, record: ConsumerGroupRecord) -> None:
        """Apply one record (live path and loading)."""
        replay(self.groups, record)

    def on_loaded(self, now: int) -> tuple[TimerSchedule, ...]:
        """After loading a partition: a fresh session timer for every member, a rebalance timer
        for every member in UNREVOKED_PARTITIONS, and every group's subscription metadata due
        for a refresh on its next heartbeat (``GroupMetadataManager.onLoaded``)."""
        timers: list[TimerSchedule] = []
        for group in self.groups.values():
            group.metadata_refresh_deadline = (0, 0)
            for member in group.members.values():
                timers.append(self.session_timer(group.group_id, member, now))
                if member.state is MemberState.UNREVOKED_PARTITIONS and not member.uses_classic_protocol:
                    timers.append(self._rebalance_timer(group.group_id, member, now))
        return tuple(timers)

    def group_timers(self, group_id: str, now: int) -> tuple[TimerSchedule, ...]:
        """What :meth:`on_loaded` gives one group: its members' session timers and the rebalance
        timers of those revoking (the shard's partition loaded, or a failed write undone)."""
        group = self.groups.get(group_id)
        if group is None:
            return ()
        group.metadata_refresh_deadline = (0, 0)
        timers: list[TimerSchedule] = []
        for member in group.members.values():
            timers.append(self.session_timer(group_id, member, now))
            if member.state is MemberState.UNREVOKED_PARTITIONS and not member.uses_classic_protocol:
                timers.append(self._rebalance_timer(group_id, member, now))
        return tuple(timers)

    def on_metadata_update(self, image: TopicsImage) -> None:
        """A new topics image: every group subscribed to a created, deleted or changed topic
        refreshes its subscription metadata on its next heartbeat (``onNewMetadataImage``)."""
        old = self.image
        self.image = image
        changed = {
            name for name in set(old.names()) | set(image.names()) if old.by_name(name) != image.by_name(name)
        }
        if any(old.by_name(name) is None for name in image.names()):
            self.regexes.last_image_with_new_topics = image.version
        if not changed:
            return
        for group in self.groups.values():
            names, by_regex, _ = group.subscription_counts(None, None)
            if changed & (set(names) | set(by_regex)):
                group.metadata_refresh_deadline = (0, 0)

    def set_group_overrides(self, group_id: str, overrides: GroupOverrides | None) -> None:
        """Per-group ``consumer.session.timeout.ms`` / ``consumer.heartbeat.interval.ms``; they
        apply from the next heartbeat (running timers are not touched)."""
        if overrides is None:
            self.overrides.pop(group_id, None)
        else:
            self.overrides[group_id] = overrides

    def session_timeout_ms(self, group_id: str) -> int:
        o = self.overrides.get(group_id)
        return (
            o.session_timeout_ms if o and o.session_timeout_ms is not None else self.config.session_timeout_ms
        )

    def assignment_interval_ms(self, group_id: str) -> int:
        """``consumer.assignment.interval.ms`` of the group, else the broker's (4.3)."""
        o = self.overrides.get(group_id)
        if o and o.assignment_interval_ms is not None:
            return o.assignment_interval_ms
        return self.config.assignment_interval_ms

    def heartbeat_interval_ms(self, group_id: str) -> int:
        o = self.overrides.get(group_id)
        if o and o.heartbeat_interval_ms is not None:
            return o.heartbeat_interval_ms
        return self.config.heartbeat_interval_ms

    # ================================================================================ heartbeat

    def consumer_group_heartbeat(
        self, request: ConsumerGroupHeartbeatRequest, now: int, *, validated: bool = False
    ) -> ConsumerGroupResult:
        """ConsumerGroupHeartbeat (API 68). ``validated``: the caller (the shard, which checks the
        request before its loading and ownership checks, as Kafka's service does) has already
        run :func:`validate_heartbeat_request` on it."""
        batch = Batch()
        try:
            if not validated:
                validate_heartbeat_request(request, self.assignors)
            if request.member_epoch in (LEAVE_GROUP_MEMBER_EPOCH, LEAVE_GROUP_STATIC_MEMBER_EPOCH):
                response = self._leave(request, batch)
            else:
                response = self._heartbeat(request, now, batch)
        except KafkaError as exc:
            message = None if exc.code is ErrorCode.UNKNOWN_SERVER_ERROR else exc.message
            return ConsumerGroupResult(
                response=ConsumerGroupHeartbeatResponse(error_code=exc.code, error_message=message)
            )
        return self.commit(batch, response)

    # The steps the classic-member paths (``classic_members.py``) share with the heartbeat.
    def new_member_id(self) -> str:
        return self._member_id_factory()

    def commit(self, batch: Batch, response: ConsumerGroupHeartbeatResponse | None) -> ConsumerGroupResult:
        """Replay the batch's records (Kafka replays a write's records before it is durable; the
        shard releases ``response`` once they are) and hand everything to the shard. First
        ``before_write`` learns which groups the records change, while they are still as the
        log has them (the shard snapshots them, to undo a write that fails)."""
        if batch.records and self._before_write is not None:
            self._before_write(dict.fromkeys(r.key.group_id for r in batch.records))
        for record in batch.records:
            self.replay(record)
        if batch.regex_refresh is not None:
            self.regexes.pending.add(batch.regex_refresh)
        return ConsumerGroupResult(
            records=tuple(batch.records),
            response=response,
            timers=tuple(batch.timers),
            events=tuple(batch.events),
            downgrade=batch.downgrade,
        )

    def _heartbeat(
        self, r: ConsumerGroupHeartbeatRequest, now: int, batch: Batch
    ) -> ConsumerGroupHeartbeatResponse:
        group_id, epoch = r.group_id, r.member_epoch
        if self._is_other_group_type(group_id):
            raise KafkaError(ErrorCode.GROUP_ID_NOT_FOUND, f"Group {group_id} is not a consumer group.")
        group = self.groups.get(group_id)
        if group is None:
            if epoch != 0:
                raise KafkaError(ErrorCode.GROUP_ID_NOT_FOUND, f"Consumer group {group_id} not found.")
            group = ConsumerGroup(group_id)
        member_id = r.member_id
        if len(group.members) >= self.config.max_size and (not member_id or member_id not in group.members):
            raise KafkaError(
                ErrorCode.GROUP_MAX_SIZE_REACHED,
                f"The consumer group has reached its maximum capacity of {self.config.max_size} members.",
            )
        if not member_id:
            member_id = self._member_id_factory()
        owned = r.owned()
        member, replaced = self._find_member(group, r, member_id, owned, batch)
        is_new = member_id not in group.members and replaced is None

        updated = member.maybe_update(
            instance_id=r.instance_id,
            rack_id=r.rack_id,
            rebalance_timeout_ms=r.rebalance_timeout_ms,
            server_assignor_name=r.server_assignor,
            subscribed_topic_names=r.subscribed_topic_names,
            subscribed_topic_regex=r.subscribed_topic_regex,
        )
        if (
            updated.client_id != r.client_id
            or updated.client_host != r.client_host
            or updated.classic_member_metadata is not None
        ):
            updated = updated.replace(
                client_id=r.client_id, client_host=r.client_host, classic_member_metadata=None
            )
        reconciled = self.update_and_reconcile(group, member, updated, replaced, is_new, owned, now, batch)
        batch.timers.append(self.session_timer(group_id, reconciled, now))
        send_assignment = (
            epoch == 0 or r.is_full() or reconciled.assigned_partitions != member.assigned_partitions
        )
        response = ConsumerGroupHeartbeatResponse(
            member_id=reconciled.member_id,
            member_epoch=reconciled.member_epoch,
            heartbeat_interval_ms=self.heartbeat_interval_ms(group_id),
            assignment=reconciled.assigned_partitions if send_assignment else None,
        )
        if group_id not in self.groups and batch.records:
            self.groups[group_id] = group  # a new group: _commit's replay fills it in
        return response

    def update_and_reconcile(
        self,
        group: ConsumerGroup,
        member: ConsumerGroupMember,
        updated: ConsumerGroupMember,
        replaced: ConsumerGroupMember | None,
        is_new: bool,
        owned: Mapping[uuid.UUID, frozenset[int]] | None,
        now: int,
        batch: Batch,
    ) -> ConsumerGroupMember:
        """Steps 5-8 of a heartbeat (and of a classic member's JoinGroup): write the member if it
        changed, bump the epoch on a new subscription, regex or topic metadata, recompute the
        target at a new epoch, and reconcile the member with it. Returns the reconciled member."""
        group_id, member_id = group.group_id, updated.member_id
        bump = group.group_epoch == 0
        cause = "group-created" if bump else ""
        if updated is not member and updated != member:
            batch.records.append(new_member_subscription_record(group_id, updated))
            if updated.subscribed_topic_names != member.subscribed_topic_names:
                bump = True
                cause = cause or ("member-joined" if is_new else "subscription-changed")
        if self.regexes.maybe_update(group, member, updated, now, batch):
            bump = True
            cause = cause or "regex-changed"

        group_epoch = group.group_epoch
        deadline, deadline_epoch = group.metadata_refresh_deadline
        # The subscriptions with this heartbeat's member counted, only when the metadata or the
        # target needs them (a steady heartbeat needs neither). Kafka 4.1 recomputes the type
        # only with the metadata and otherwise uses the stored one, which does not count a member
        # joining now; we always count it (docs/coordinator-scenarios.md).
        counts = None
        if bump or now >= deadline or group_epoch < deadline_epoch:
            counts = group.subscription_counts(member if not is_new else None, updated)
            names, by_regex, _ = counts
            metadata_hash = group_metadata_hash(set(names) | set(by_regex), self.image)
            if metadata_hash != group.metadata_hash:
                bump = True
                cause = cause or "metadata-changed"
            if bump:
                group_epoch += 1
                batch.records.append(new_group_epoch_record(group_id, group_epoch, metadata_hash))
                batch.events.append(
                    ConsumerGroupEvent(
                        kind="epoch-bump",
                        group_id=group_id,
                        member_id=member_id,
                        group_epoch=group_epoch,
                        cause=cause,
                    )
                )
            group.metadata_refresh_deadline = (now + METADATA_REFRESH_INTERVAL_MS, group_epoch)
            if group.has_partition_metadata_record:
                batch.records.append(new_partition_metadata_tombstone(group_id))

        if group_epoch > group.assignment_epoch and self._can_compute_target(group, now):
            if counts is None:
                counts = group.subscription_counts(member if not is_new else None, updated)
            names, by_regex, regexes = counts
            kind = subscription_type(regexes, names, by_regex, len(group.members) + (1 if is_new else 0))
            target = self._update_target(group, group_epoch, member, updated, replaced, kind, now, batch)
            target_epoch = group_epoch
        else:
            # The target is up to date, or (KIP-1263) the assignment interval since the last
            # computation has not elapsed: the member reconciles with the last target (a new
            # member's is empty) and the group stays ASSIGNING until a heartbeat after it.
            target_epoch = group.assignment_epoch
            holder = replaced.member_id if replaced is not None else member_id
            target = group.target(member_id) if member_id in group.target_assignment else group.target(holder)

        reconciled = updated
        if not updated.is_reconciled_to(target_epoch):
            reconciled = reconcile(updated, target_epoch, target, group.current_partition_epoch, owned)
            if reconciled != updated:
                batch.records.append(new_current_assignment_record(group_id, reconciled))
                if not reconciled.uses_classic_protocol:
                    if reconciled.state is MemberState.UNREVOKED_PARTITIONS:
                        batch.timers.append(self._rebalance_timer(group_id, reconciled, now))
                    else:
                        batch.timers.append(
                            TimerCancel(key=timer_key(TimerKind.REBALANCE, group_id, member_id))
                        )
                if reconciled.is_reconciled_to(target_epoch):
                    batch.events.append(
                        ConsumerGroupEvent(
                            kind="reconciled",
                            group_id=group_id,
                            member_id=member_id,
                            group_epoch=target_epoch,
                        )
                    )
        if is_new:
            batch.events.insert(
                0, ConsumerGroupEvent(kind="member-joined", group_id=group_id, member_id=member_id)
            )
        return reconciled

    def _find_member(
        self,
        group: ConsumerGroup,
        r: ConsumerGroupHeartbeatRequest,
        member_id: str,
        owned: Mapping[uuid.UUID, frozenset[int]] | None,
        batch: Batch,
    ) -> tuple[ConsumerGroupMember, ConsumerGroupMember | None]:
        """The member the heartbeat is for (new, existing, or a static replacement) and, for a
        replacement, the member it replaces (``getOrMaybeSubscribe{Dynamic,Static}ConsumerGroupMember``)."""
        epoch, instance_id = r.member_epoch, r.instance_id
        if instance_id is None:
            member = group.member(member_id)
            if member is None:
                if epoch != 0:
                    raise KafkaError(
                        ErrorCode.UNKNOWN_MEMBER_ID,
                        f"Member {member_id} is not a member of group {group.group_id}.",
                    )
                return ConsumerGroupMember(member_id=member_id), None
            check_member_epoch(member, epoch, owned)
            return member, None
        existing = group.static_member(instance_id)
        if epoch == 0:
            if existing is None:
                return group.member(member_id) or ConsumerGroupMember(member_id=member_id), None
            if (
                not existing.uses_classic_protocol
                and existing.member_epoch != LEAVE_GROUP_STATIC_MEMBER_EPOCH
            ):
                raise KafkaError(
                    ErrorCode.UNRELEASED_INSTANCE_ID,
                    f"Static member {member_id} with instance id {instance_id} cannot join the group "
                    "because the "
                    f"instance id is owned by {existing.member_id} member.",
                )
            member = replace_static_member(group, existing, member_id, batch.records, batch.events)
            return member, existing
        if existing is None:
            raise KafkaError(ErrorCode.UNKNOWN_MEMBER_ID, f"Instance id {instance_id} is unknown.")
        if existing.member_id != member_id:
            raise KafkaError(
                ErrorCode.FENCED_INSTANCE_ID,
                f"Static member {member_id} with instance id {instance_id} was fenced by member "
                f"{existing.member_id}.",
            )
        check_member_epoch(existing, epoch, owned)
        return existing, None

    def _update_target(
        self,
        group: ConsumerGroup,
        group_epoch: int,
        member: ConsumerGroupMember,
        updated: ConsumerGroupMember,
        replaced: ConsumerGroupMember | None,
        kind: SubscriptionType,
        now: int,
        batch: Batch,
    ) -> Assignment:
        name = group.preferred_server_assignor(
            member if member.member_id in group.members or replaced else None, updated, self.config.assignors
        )
        assignor = self.assignors[name if name in self.assignors else self.config.assignors[0]]
        changes: dict[str, ConsumerGroupMember | None] = {updated.member_id: updated}
        if replaced is not None and replaced.member_id != updated.member_id:
            changes[replaced.member_id] = None
        try:
            result = build_target_assignment(group, assignor, self.image, kind, updated=changes)
        except PartitionAssignorError as exc:
            log.warning(
                "group %s: the %s assignor failed at epoch %d: %s",
                group.group_id,
                assignor.name,
                group_epoch,
                exc,
            )
            raise KafkaError(
                ErrorCode.UNKNOWN_SERVER_ERROR,
                f"Failed to compute a new target assignment for epoch {group_epoch}: {exc}",
            ) from None
        for member_id, assignment in result.changed:
            batch.records.append(new_target_assignment_record(group.group_id, member_id, assignment))
        batch.records.append(new_target_assignment_epoch_record(group.group_id, group_epoch, now))
        return result.targets.get(updated.member_id, {})

    def _can_compute_target(self, group: ConsumerGroup, now: int) -> bool:
        """Whether a bumped epoch gets its target now (``target.can_compute_next_target``)."""
        return can_compute_next_target(
            group.assignment_timestamp, self.assignment_interval_ms(group.group_id), now
        )

    # ================================================================================ leave and fence

    def _leave(self, r: ConsumerGroupHeartbeatRequest, batch: Batch) -> ConsumerGroupHeartbeatResponse:
        """``consumerGroupLeave``: epoch -1 removes the member, -2 parks a static member."""
        group_id = r.group_id
        group = self.groups.get(group_id)
        if self._is_other_group_type(group_id):
            raise KafkaError(ErrorCode.GROUP_ID_NOT_FOUND, f"Group {group_id} is not a consumer group.")
        if group is None:
            raise KafkaError(ErrorCode.GROUP_ID_NOT_FOUND, f"Consumer group {group_id} not found.")
        if r.instance_id is None:
            member = group.member(r.member_id)
            if member is None:
                raise KafkaError(
                    ErrorCode.UNKNOWN_MEMBER_ID, f"Member {r.member_id} is not a member of group {group_id}."
                )
        else:
            static = group.static_member(r.instance_id)
            if static is None:
                raise KafkaError(ErrorCode.UNKNOWN_MEMBER_ID, f"Instance id {r.instance_id} is unknown.")
            if static.member_id != r.member_id:
                raise KafkaError(
                    ErrorCode.FENCED_INSTANCE_ID,
                    f"Static member {r.member_id} with instance id {r.instance_id} was fenced by member "
                    f"{static.member_id}.",
                )
            member = static
            if r.member_epoch == LEAVE_GROUP_STATIC_MEMBER_EPOCH:
                parked = member.replace(
                    member_epoch=LEAVE_GROUP_STATIC_MEMBER_EPOCH, partitions_pending_revocation={}
                )
                batch.records.append(new_current_assignment_record(group_id, parked))
                batch.events.append(
                    ConsumerGroupEvent(
                        kind="static-member-left-temporarily", group_id=group_id, member_id=member.member_id
                    )
                )
                return ConsumerGroupHeartbeatResponse(
                    member_id=member.member_id, member_epoch=LEAVE_GROUP_STATIC_MEMBER_EPOCH
                )
        self.fence(group, [member], "member-left", batch)
        return ConsumerGroupHeartbeatResponse(member_id=r.member_id, member_epoch=r.member_epoch)

    def fence(
        self, group: ConsumerGroup, members: list[ConsumerGroupMember], cause: str, batch: Batch
    ) -> None:
        """``consumerGroupFenceMembers``: tombstones, orphaned regexes, one epoch bump; or, when
        only classic-protocol members would remain, the online downgrade instead."""
        gid = group.group_id
        if downgrade_allowed(self.config, group, members):
            self._downgrade(group, members, cause, batch)
            return
        for m in members:
            batch.records += [
                new_current_assignment_tombstone(gid, m.member_id),
                new_target_assignment_tombstone(gid, m.member_id),
                new_member_subscription_tombstone(gid, m.member_id),
            ]
        leaving = Counter(m.subscribed_topic_regex for m in members if m.subscribed_topic_regex)
        deleted = sorted(regex for regex, n in leaving.items() if group.subscribed_regexes.get(regex, 0) <= n)
        for regex in deleted:
            batch.records.append(new_regular_expression_tombstone(gid, regex))
        names, by_regex, _ = group.subscription_counts(None, None, removed=members, deleted_regexes=deleted)
        metadata_hash = group_metadata_hash(set(names) | set(by_regex), self.image)
        epoch = group.group_epoch + 1
        batch.records.append(new_group_epoch_record(gid, epoch, metadata_hash))
        for m in members:
            batch.timers += [TimerCancel(key=timer_key(kind, gid, m.member_id)) for kind in MEMBER_TIMERS]
            kind = "member-left" if cause == "member-left" else "member-fenced"
            batch.events.append(
                ConsumerGroupEvent(kind=kind, group_id=gid, member_id=m.member_id, cause=cause)
            )
        batch.events.append(
            ConsumerGroupEvent(kind="epoch-bump", group_id=gid, group_epoch=epoch, cause=cause)
        )

    # ================================================================================ downgrade

    def _downgrade(
        self, group: ConsumerGroup, leaving: list[ConsumerGroupMember], cause: str, batch: Batch
    ) -> None:
        """``convertToClassicGroup`` triggered by members leaving: the whole group's tombstones
        (``createGroupTombstoneRecords``) and a :class:`Downgrade` for the shard, which builds the
        classic group and writes its GroupMetadata record after them (``migration.py``)."""
        gid = group.group_id
        batch.downgrade = downgrade_of(group, leaving, self.image)
        batch.records += group_tombstones(group)
        for m in group.members.values():
            batch.timers += [TimerCancel(key=timer_key(kind, gid, m.member_id)) for kind in MEMBER_TIMERS]
        for m in leaving:
            kind = "member-left" if cause == "member-left" else "member-fenced"
            batch.events.append(
                ConsumerGroupEvent(kind=kind, group_id=gid, member_id=m.member_id, cause=cause)
            )
        log.info(
            "group %s: downgraded to a classic group at generation %d (%s)", gid, group.group_epoch, cause
        )

    # ================================================================================ timers

    def session_timer(self, group_id: str, member: ConsumerGroupMember, now: int) -> TimerSchedule:
        timeout = (
            member.classic_member_metadata.session_timeout_ms
            if member.classic_member_metadata is not None
            else self.session_timeout_ms(group_id)
        )
        return TimerSchedule(
            key=timer_key(TimerKind.SESSION, group_id, member.member_id),
            deadline_ms=now + timeout,
            kind=TimerKind.SESSION,
            group_id=group_id,
            member_id=member.member_id,
        )

    def _rebalance_timer(self, group_id: str, member: ConsumerGroupMember, now: int) -> TimerSchedule:
        return TimerSchedule(
            key=timer_key(TimerKind.REBALANCE, group_id, member.member_id),
            deadline_ms=now + member.rebalance_timeout_ms,
            kind=TimerKind.REBALANCE,
            group_id=group_id,
            member_id=member.member_id,
            member_epoch=member.member_epoch,
        )

    def on_timer(self, timer: TimerSchedule, now: int) -> ConsumerGroupResult:
        """A timer this manager asked for fired. A member or group that is gone, or a rebalance
        timer whose member moved to another epoch, makes it a no-op."""
        if timer.kind is TimerKind.REGEX_REFRESH:
            batch = Batch()
            self.regexes.refresh(timer.group_id, self.groups.get(timer.group_id), self.image, now, batch)
            return self.commit(batch, None)
        group = self.groups.get(timer.group_id)
        member = group.member(timer.member_id or "") if group is not None else None
        if group is None or member is None:
            return ConsumerGroupResult()
        if timer.kind is TimerKind.REBALANCE and member.member_epoch != timer.member_epoch:
            return ConsumerGroupResult()
        cause = _TIMER_CAUSES[timer.kind]
        log.info("group %s: member %s fenced (%s)", group.group_id, member.member_id, cause)
        batch = Batch()
        self.fence(group, [member], cause, batch)
        return self.commit(batch, None)

    # ================================================================================ describe

    def consumer_group_describe(self, request: ConsumerGroupDescribeRequest) -> ConsumerGroupDescribeResponse:
        """ConsumerGroupDescribe (API 69), against the live state (``describe.py``)."""
        return describe_groups(
            request, self.groups, self.image, self.config.assignors, self._is_other_group_type
        )

    # ================================================================================ for the offsets manager

    def validate_offset_commit(
        self,
        group_id: str,
        member_id: str,
        instance_id: str | None,
        member_epoch: int,
        *,
        transactional: bool = False,
        api_version: int = 9,
    ) -> bool:
        """Check an OffsetCommit / TxnOffsetCommit against a consumer group. Returns False when
        there is no consumer group of that id (the offsets manager applies its classic rules);
        raises KafkaError (UNKNOWN_MEMBER_ID, UNSUPPORTED_VERSION, STALE_MEMBER_EPOCH,
        ILLEGAL_GENERATION) when the commit must be refused."""
        group = self.groups.get(group_id)
        if group is None:
            return False
        group.validate_offset_commit(
            member_id, instance_id, member_epoch, transactional=transactional, api_version=api_version
        )
        return True

    def validate_offset_fetch(self, group_id: str, member_id: str | None, member_epoch: int) -> bool:
        """Check an OffsetFetch v9+ group entry; False when there is no consumer group of that id."""
        group = self.groups.get(group_id)
        if group is None:
            return False
        group.validate_offset_fetch(member_id, member_epoch)
        return True

    def delete_group(self, group_id: str) -> tuple[ConsumerGroupRecord, ...]:
        """DeleteGroups of an Empty consumer group: its tombstones in Kafka's order (the offsets
        manager writes the offset tombstones before them). NON_EMPTY_GROUP otherwise."""
        group = self.groups.get(group_id)
        if group is None:
            raise KafkaError(ErrorCode.GROUP_ID_NOT_FOUND, f"Group {group_id} not found.")
        group.validate_delete_group()
        return group_tombstones(group)
