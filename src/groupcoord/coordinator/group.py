"""A classic group and its members: the in-memory state the coordinator mutates.

Durable parts (generation, protocol type and name, leader, members with their metadata
and assignments, the state timestamp, committed offsets) are exactly what the records in
``__consumer_offsets`` carry. Soft parts (parked JoinGroup/SyncGroup replies, pending
members, the pending-sync set, ``is_new``, the initial-delay flag) are rebuilt empty on
load.
"""

from __future__ import annotations

import logging
from collections import Counter
from collections.abc import Callable, Container
from dataclasses import dataclass
from typing import Any

from groupcoord.coordinator.state import GroupState, check_loaded_state, check_transition
from groupcoord.coordinator.timers import DelayedHeartbeat
from groupcoord.errors import ErrorCode, IllegalStateError
from groupcoord.gcutil import track, untrack

log = logging.getLogger(__name__)

#: A group's (state, previous state, state timestamp), see :meth:`ClassicGroup.state_snapshot`.
StateSnapshot = tuple[GroupState, GroupState | None, int | None]

JoinReply = Callable[[Any], None]
SyncReply = Callable[[Any], None]

CONSUMER_PROTOCOL_TYPE = "consumer"


@dataclass(kw_only=True, slots=True, init=False, unsafe_hash=True)
class CommittedOffset:
    # Written-out __init__, hashable by value: see records.OffsetCommitValue.
    offset: int
    leader_epoch: int | None
    metadata: str
    commit_timestamp: int
    expire_timestamp: int | None

    def __init__(
        self,
        *,
        offset: int,
        leader_epoch: int | None,
        metadata: str,
        commit_timestamp: int,
        expire_timestamp: int | None,
    ) -> None:
        self.offset = offset
        self.leader_epoch = leader_epoch
        self.metadata = metadata
        self.commit_timestamp = commit_timestamp
        self.expire_timestamp = expire_timestamp


class Member:
    """One member of a classic group (Kafka's ``MemberMetadata``)."""

    __slots__ = (
        "_awaiting_join",
        "_awaiting_sync",
        "assignment",
        "client_host",
        "client_id",
        "group_instance_id",
        "heartbeat_key",
        "is_new",
        "join_reason",
        "join_version",
        "member_id",
        "protocol_type",
        "protocols",
        "rebalance_timeout_ms",
        "session_timeout_ms",
    )

    def __init__(
        self,
        *,
        member_id: str,
        group_instance_id: str | None,
        client_id: str,
        client_host: str,
        rebalance_timeout_ms: int,
        session_timeout_ms: int,
        protocol_type: str,
        protocols: tuple[tuple[str, bytes], ...],
        assignment: bytes = b"",
    ) -> None:
        self.member_id = member_id
        self.group_instance_id = group_instance_id
        self.client_id = client_id
        self.client_host = client_host
        self.rebalance_timeout_ms = rebalance_timeout_ms
        self.session_timeout_ms = session_timeout_ms
        self.protocol_type = protocol_type
        self.protocols = protocols
        self.assignment = assignment
        self._awaiting_join: JoinReply | None = None
        self.join_version = 0
        self.join_reason: str | None = None
        self._awaiting_sync: SyncReply | None = None
        self.is_new = False
        #: The coordinator's session-timer key for this member, made once (see
        #: ClassicRebalance._heartbeat_key): a fresh key per heartbeat would outlive the
        #: request, in the timer, until its deadline.
        self.heartbeat_key: DelayedHeartbeat | None = None
        # A member lives as long as its group and, between rebalances, holds only strings,
        # numbers, bytes and tuples of those: no cycle can pass through it, so the cyclic
        # collector need not walk it (see groupcoord.gcutil). It is tracked again while it
        # holds a reply callback, which could lead back to it.
        untrack(self)

    @property
    def awaiting_join(self) -> JoinReply | None:
        """The reply callback of the member's parked JoinGroup, if any."""
        return self._awaiting_join

    @awaiting_join.setter
    def awaiting_join(self, reply: JoinReply | None) -> None:
        self._awaiting_join = reply
        self._retrack()

    @property
    def awaiting_sync(self) -> SyncReply | None:
        """The reply callback of the member's parked SyncGroup, if any."""
        return self._awaiting_sync

    @awaiting_sync.setter
    def awaiting_sync(self, reply: SyncReply | None) -> None:
        self._awaiting_sync = reply
        self._retrack()

    def _retrack(self) -> None:
        if self._awaiting_join is None and self._awaiting_sync is None:
            untrack(self)
        else:
            track(self)

    @property
    def is_static(self) -> bool:
        return self.group_instance_id is not None

    def protocol_names(self) -> list[str]:
        return [name for name, _ in self.protocols]

    def metadata(self, protocol: str) -> bytes:
        for name, data in self.protocols:
            if name == protocol:
                return data
        raise IllegalStateError(f"member {self.member_id} does not support protocol {protocol}")

    def matches(self, protocols: tuple[tuple[str, bytes], ...]) -> bool:
        return self.protocols == protocols

    def vote(self, candidates: set[str]) -> str:
        for name, _ in self.protocols:
            if name in candidates:
                return name
        raise IllegalStateError(f"member {self.member_id} supports none of {sorted(candidates)}")


class ClassicGroup:
    """Kafka's ``GroupMetadata`` / ``ClassicGroup``."""

    def __init__(self, group_id: str, now_ms: int) -> None:
        self.group_id = group_id
        self.state = GroupState.EMPTY
        self.previous_state: GroupState | None = None
        self.state_timestamp: int | None = now_ms
        self.generation = 0
        self.protocol_type: str | None = None
        self.protocol_name: str | None = None
        self.leader_id: str | None = None
        self.members: dict[str, Member] = {}  # insertion order = join order
        self.pending_members: dict[str, int] = {}  # member id -> session timeout (ordered set)
        # Member ids only, so never part of a cycle: kept away from the cyclic collector
        # (groupcoord.gcutil), as are protocol_counts (a plain dict of str -> int, which
        # CPython leaves untracked by itself) and subscribed_topics.
        self.pending_sync: set[str] = untrack(set())
        self.static_members: dict[str, str] = {}  # group.instance.id -> member id
        self.protocol_counts: dict[str, int] = {}  # protocol name -> members supporting it
        self.num_awaiting_join = 0
        self.new_member_added = False
        self.subscribed_topics: frozenset[str] | None = None
        self.offsets: dict[tuple[str, int], CommittedOffset] = {}

    # ------------------------------------------------------------------ state
    def transition_to(self, target: GroupState, now_ms: int) -> GroupState:
        check_transition(self.state, target)
        source = self.state
        self.previous_state = source
        self.state = target
        self.state_timestamp = now_ms
        return source

    def start_loaded(self, target: GroupState) -> None:
        """A group read back from the log starts in ``target`` (see ``state.LOADED_STATES``)."""
        if self.previous_state is not None or self.state is not GroupState.EMPTY:
            raise IllegalStateError(f"group {self.group_id} is live ({self.state.value}), not loaded")
        check_loaded_state(target)
        self.state = target

    def state_snapshot(self) -> StateSnapshot:
        """What :meth:`revert_state` needs to undo transitions whose records were not written."""
        return (self.state, self.previous_state, self.state_timestamp)

    def revert_state(self, snapshot: StateSnapshot) -> None:
        """Undo transitions made in anticipation of a write that failed or was overtaken.

        Not a transition: the group goes back to where it was, as Kafka 4.x's runtime reverts
        its timeline state to the last committed offset when an append fails.
        """
        self.state, self.previous_state, self.state_timestamp = snapshot

    # ------------------------------------------------------------------ members
    def is_leader(self, member_id: str) -> bool:
        return self.leader_id == member_id

    def add(self, member: Member) -> None:
        if member.member_id in self.members:
            raise IllegalStateError(f"member {member.member_id} already in group {self.group_id}")
        if not self.members:
            self.protocol_type = member.protocol_type
        if self.leader_id is None:
            self.leader_id = member.member_id
        self.members[member.member_id] = member
        self.pending_members.pop(member.member_id, None)
        if member.group_instance_id is not None:
            mapped = self.static_members.get(member.group_instance_id)
            if mapped is not None and mapped != member.member_id:
                raise IllegalStateError(f"instance {member.group_instance_id} already mapped to {mapped}")
            self.static_members[member.group_instance_id] = member.member_id
        self._count_protocols(member.protocols, 1)
        if member.awaiting_join is not None:
            self.num_awaiting_join += 1

    def remove(self, member_id: str) -> Member | None:
        member = self.members.pop(member_id, None)
        if member is None:
            return None
        self._count_protocols(member.protocols, -1)
        if member.awaiting_join is not None:
            self.num_awaiting_join -= 1
        self.pending_sync.discard(member_id)
        if (
            member.group_instance_id is not None
            and self.static_members.get(member.group_instance_id) == member_id
        ):
            del self.static_members[member.group_instance_id]
        if self.leader_id == member_id:
            self.leader_id = next(iter(self.members), None)
        return member

    def update_protocols(self, member: Member, protocols: tuple[tuple[str, bytes], ...]) -> None:
        self._count_protocols(member.protocols, -1)
        member.protocols = protocols
        self._count_protocols(protocols, 1)

    def _count_protocols(self, protocols: tuple[tuple[str, bytes], ...], delta: int) -> None:
        """Add ``delta`` to the count of every protocol named; a count that reaches 0 is dropped."""
        counts = self.protocol_counts
        for name, _ in protocols:
            n = counts.get(name, 0) + delta
            if n > 0:
                counts[name] = n
            else:
                counts.pop(name, None)

    def set_awaiting_join(self, member: Member, reply: JoinReply | None) -> None:
        if member.awaiting_join is None and reply is not None:
            self.num_awaiting_join += 1
        elif member.awaiting_join is not None and reply is None:
            self.num_awaiting_join -= 1
        member.awaiting_join = reply

    def replace_static_member(self, instance_id: str, old_id: str, new_id: str) -> Member:
        """Re-key the member of ``instance_id``; keeps its place, assignment and leadership.

        As Kafka's ``replaceStaticMember``, the pending-sync set is left alone: an old id still
        pending stays pending, so the pending-sync timeout starts a rebalance.
        """
        member = self.members.get(old_id)
        if member is None:
            raise IllegalStateError(f"static member {old_id} of instance {instance_id} not in group")
        self.members = {(new_id if k == old_id else k): v for k, v in self.members.items()}
        member.member_id = new_id
        if self.leader_id == old_id:
            self.leader_id = new_id
        self.static_members[instance_id] = new_id
        return member

    def all_members_joined(self) -> bool:
        return len(self.members) == self.num_awaiting_join and not self.pending_members

    def not_yet_rejoined(self) -> list[Member]:
        return [m for m in self.members.values() if m.awaiting_join is None]

    def rebalance_timeout_ms(self) -> int:
        return max((m.rebalance_timeout_ms for m in self.members.values()), default=0)

    # ------------------------------------------------------------------ validation
    def validate_member(self, member_id: str, instance_id: str | None) -> ErrorCode | None:
        """Kafka's ``validateCurrentMember`` (static fencing, then membership)."""
        if instance_id is not None:
            mapped = self.static_members.get(instance_id)
            if mapped is None:
                return ErrorCode.UNKNOWN_MEMBER_ID
            if mapped != member_id:
                return ErrorCode.FENCED_INSTANCE_ID
        if member_id not in self.members:
            return ErrorCode.UNKNOWN_MEMBER_ID
        return None

    def validate_offset_commit(
        self, member_id: str, instance_id: str | None, generation_id: int, transactional: bool
    ) -> ErrorCode | None:
        """Kafka's ``ClassicGroup.validateOffsetCommit``; a transactional commit with no member
        id and no generation is accepted in any state (only plain ones need an Empty group)."""
        if self.state is GroupState.DEAD:
            return ErrorCode.COORDINATOR_NOT_AVAILABLE
        if generation_id < 0 and self.state is GroupState.EMPTY:
            return None  # an admin / simple commit
        if generation_id >= 0 or member_id or instance_id is not None:
            error = self.validate_member(member_id, instance_id)
            if error is not None:
                return error
            if generation_id != self.generation:
                return ErrorCode.ILLEGAL_GENERATION
        elif not transactional:
            return ErrorCode.UNKNOWN_MEMBER_ID
        if self.state is GroupState.COMPLETING_REBALANCE:
            return ErrorCode.REBALANCE_IN_PROGRESS
        return None

    # ------------------------------------------------------------------ offsets
    def expired_offsets(
        self,
        now_ms: int,
        retention_ms: int,
        pending: Container[tuple[str, int]] = (),
    ) -> list[tuple[str, int]]:
        """The (topic, partition) keys whose committed offsets have expired at ``now_ms``.

        Keys in ``pending`` (a commit of the partition is still being written) never expire: the
        tombstone would land behind the commit (Kafka's ``removeExpiredOffsets``:
        ``!pendingOffsetCommits.contains(topicPartition)``).

        * Empty group with a protocol type: retention counts from the time the group became
          Empty (falling back to the commit time).
        * Stable ``consumer`` group with a known subscription: only topics no member
          subscribes to expire, counted from the commit time.
        * Simple group (no protocol type): per commit time.
        * Otherwise nothing expires.
        An explicit expire timestamp (OffsetCommit v2-v4 retention) wins over the rule above.
        """

        def base_commit(o: CommittedOffset) -> int:
            return o.commit_timestamp

        def base_empty(o: CommittedOffset) -> int:
            return self.state_timestamp if self.state_timestamp is not None else o.commit_timestamp

        skip: frozenset[str] = frozenset()
        if self.protocol_type is not None and self.state is GroupState.EMPTY:
            base = base_empty
        elif (
            self.protocol_type == CONSUMER_PROTOCOL_TYPE
            and self.subscribed_topics is not None
            and self.state is GroupState.STABLE
        ):
            base = base_commit
            skip = self.subscribed_topics
        elif self.protocol_type is None:
            base = base_commit
        else:
            return []
        out = []
        for key, o in self.offsets.items():
            if key[0] in skip or key in pending:
                continue
            if o.expire_timestamp is not None:
                if now_ms >= o.expire_timestamp:
                    out.append(key)
            elif now_ms - base(o) >= retention_ms:
                out.append(key)
        return out

    # ------------------------------------------------------------------ protocols
    def compute_subscribed_topics(self) -> frozenset[str] | None:
        """Topics the members of a ``consumer`` group subscribe to, for the selected protocol.

        A consumer group without members subscribes to nothing (an empty set). ``None`` means
        "unknown": the group is not a consumer group, has no selected protocol, or a member's
        subscription bytes do not parse (Kafka's ``computeSubscribedTopics``). As in Kafka, an
        unknown subscription makes OffsetDelete treat every topic of a non-Empty consumer group as
        subscribed (``isSubscribedToTopic``: ``case None => true``), and makes retention keep every
        offset of a group that is not Empty.
        """
        if self.protocol_type != CONSUMER_PROTOCOL_TYPE:
            return None
        if not self.members:
            return frozenset()
        if self.protocol_name is None:
            return None
        from groupcoord.formats.consumer_protocol import decode_subscription

        topics: set[str] = set()
        for member in self.members.values():
            try:
                sub = decode_subscription(member.metadata(self.protocol_name))
            except Exception as exc:  # a client's bytes must never take the coordinator down
                log.warning(
                    "group=%s member=%s unparseable consumer subscription (%s); subscription unknown",
                    self.group_id,
                    member.member_id,
                    exc,
                )
                return None
            topics.update(sub.topics)
        # Strings only, kept as long as the generation: no work for the cyclic collector.
        return untrack(frozenset(topics))

    def supports_protocols(self, protocol_type: str, protocols: tuple[tuple[str, bytes], ...]) -> bool:
        if self.state is GroupState.EMPTY:
            return bool(protocol_type) and bool(protocols)
        n = len(self.members)
        return protocol_type == self.protocol_type and any(
            self.protocol_counts.get(name, 0) == n for name, _ in protocols
        )

    def candidate_protocols(self) -> set[str]:
        n = len(self.members)
        return {name for name, count in self.protocol_counts.items() if count == n and n > 0}

    def select_protocol(self) -> str:
        """The vote of §2.10 with the documented tie-break (leader's preference order)."""
        if not self.members:
            raise IllegalStateError(f"cannot select a protocol for empty group {self.group_id}")
        candidates = self.candidate_protocols()
        if not candidates:
            raise IllegalStateError(f"no protocol supported by every member of {self.group_id}")
        votes: Counter[str] = Counter(m.vote(candidates) for m in self.members.values())
        best = max(votes.values())
        tied = {name for name, count in votes.items() if count == best}
        chooser = self.members.get(self.leader_id or "") or next(iter(self.members.values()))
        for name in chooser.protocol_names():
            if name in tied:
                return name
        raise IllegalStateError("protocol vote found no winner")  # unreachable: chooser supports all

    def current_member_metadata(self) -> list[tuple[Member, bytes]]:
        if self.protocol_name is None:
            raise IllegalStateError(f"group {self.group_id} has no selected protocol")
        return [(m, m.metadata(self.protocol_name)) for m in self.members.values()]
