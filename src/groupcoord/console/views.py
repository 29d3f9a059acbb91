"""What the console shows, as plain values: taken on the broker's loop, rendered on an HTTP thread.

Nothing here refers to a live coordinator object, so a page can be rendered off the loop while
the groups change. The shapes cover both kinds of group Kafka has:

* **classic** groups (JoinGroup / SyncGroup): members with their client id, host, instance id
  and the assignment the leader gave them; a generation.
* **consumer** groups (KIP-848, ConsumerGroupHeartbeat): the same, and per member its epoch,
  the assignment it owns now (``assignment``) and the one the coordinator wants it to reach
  (``target_assignment``); per group the group epoch and the target assignment's epoch. These
  are the fields of Kafka's ConsumerGroupDescribe response, and the partitions a member still
  owns pending revocation. For a classic group these fields are None, and the pages leave their
  columns out.
"""

from __future__ import annotations

from dataclasses import dataclass

#: (topic, partition) pairs, sorted
Partitions = tuple[tuple[str, int], ...]


@dataclass(frozen=True, slots=True, kw_only=True)
class Move:
    """A partition whose owner changed in a rebalance (None: unassigned)."""

    topic: str
    partition: int
    before: str | None
    after: str | None


@dataclass(frozen=True, slots=True, kw_only=True)
class RebalanceView:
    """One rebalance: from a classic group's move to PreparingRebalance until it is Stable again
    (or Empty / Dead), as ``docs/group-events.md`` defines it; from a consumer group's (KIP-848)
    epoch bump until its members have reconciled (Stable), or until the next bump supersedes it."""

    started_ms: int
    #: the reason of the move to PreparingRebalance (``member_left``, ``session_timeout``, ...)
    cause: str
    #: the member whose action caused it, if any (member id, client id, instance id, host)
    member_id: str | None
    client_id: str | None
    instance_id: str | None
    client_host: str | None
    #: the reason string the client sent (JoinGroup v8+, LeaveGroup v5+)
    client_reason: str | None
    generation_before: int
    members_before: int
    #: causes of later moves back to PreparingRebalance before it ended
    restarts: tuple[str, ...]
    #: None while it runs
    ended_ms: int | None
    #: ``Stable``, ``Empty``, ``Dead`` or (a consumer group's) ``Superseded``; None while it runs
    outcome: str | None
    generation_after: int | None
    members_after: int | None
    #: partitions whose owner changed (consumer-protocol assignments; empty when unknown)
    moved: tuple[Move, ...]
    #: ``classic``, or ``consumer`` for a KIP-848 group's epoch bump (its members do not stop:
    #: only the partitions that move pause)
    protocol: str = "classic"

    def stood_still_ms(self, now_ms: int) -> int:
        """How long the group stood still: until it ended, or until now while it runs."""
        return max((self.ended_ms if self.ended_ms is not None else now_ms) - self.started_ms, 0)


@dataclass(frozen=True, slots=True, kw_only=True)
class EventView:
    """One group event (``__group_events``' fields, ``docs/group-events.md``)."""

    time_ms: int
    type: str
    reason: str
    from_state: str | None
    to_state: str | None
    generation: int
    member_id: str | None
    client_id: str | None
    instance_id: str | None
    client_host: str | None
    client_reason: str | None
    member_count: int


@dataclass(frozen=True, slots=True, kw_only=True)
class MemberView:
    member_id: str
    client_id: str
    client_host: str
    instance_id: str | None
    leader: bool
    #: the partitions it owns (a consumer's decoded assignment); None when the group's protocol
    #: is not ``consumer`` or the bytes do not decode
    assignment: Partitions | None
    assignment_bytes: int
    # KIP-848 consumer groups only (None for a classic group's members):
    member_epoch: int | None = None
    target_assignment: Partitions | None = None
    #: partitions it still owns but must give up (revoked, not yet released)
    pending_revocation: Partitions | None = None


@dataclass(frozen=True, slots=True, kw_only=True)
class PartitionLag:
    """A partition the group committed or owns."""

    topic: str
    partition: int
    #: None: assigned but never committed
    committed: int | None
    #: None: the partition does not exist (any more)
    log_end: int | None
    lag: int | None
    time_lag_ms: float | None
    #: the member it is assigned to (None: nobody), and that member's client id
    owner: str | None
    owner_client: str | None


@dataclass(frozen=True, slots=True, kw_only=True)
class GroupSummary:
    """A group's row in the overview."""

    group_id: str
    #: ``classic`` or ``consumer`` (KIP-848)
    group_type: str
    protocol_type: str
    protocol_name: str
    state: str
    generation: int
    members: int
    #: sum over committed partitions (None: no committed partition still exists)
    lag: int | None
    #: the worst partition's time lag
    time_lag_ms: float | None
    last_rebalance: RebalanceView | None


@dataclass(frozen=True, slots=True, kw_only=True)
class LagPoint:
    time_ms: int
    lag: int
    time_lag_ms: float


@dataclass(frozen=True, slots=True, kw_only=True)
class GroupDetail:
    now_ms: int
    summary: GroupSummary
    leader: str | None
    members: tuple[MemberView, ...]
    pending_members: int
    partitions: tuple[PartitionLag, ...]
    #: oldest first
    rebalances: tuple[RebalanceView, ...]
    #: newest first
    events: tuple[EventView, ...]
    lag_history: tuple[LagPoint, ...]
    # KIP-848 consumer groups only:
    group_epoch: int | None = None
    assignment_epoch: int | None = None


@dataclass(frozen=True, slots=True, kw_only=True)
class PartitionEnds:
    partition: int
    log_start: int
    log_end: int
    size_bytes: int


@dataclass(frozen=True, slots=True, kw_only=True)
class TopicView:
    name: str
    internal: bool
    partitions: tuple[PartitionEnds, ...]


@dataclass(frozen=True, slots=True, kw_only=True)
class Overview:
    now_ms: int
    groups: tuple[GroupSummary, ...]
    topics: tuple[TopicView, ...]
