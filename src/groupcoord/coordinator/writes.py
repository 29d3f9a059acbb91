"""What each coordinator write is for: the completions carried by a ``PendingWrite``.

A handler that writes records says, with one of these values, what must happen when the write
completes; the runtime hands the value back to the shard's ``complete_write`` with the outcome.
Each completion re-checks that its group has not moved on (Kafka's append-future callbacks
check the same: the group is still in the state, and at the generation, the write was made
for) before it replays the records or answers the requests that waited for them, and on a
failed write restores what the write would have made permanent.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from groupcoord.coordinator.group import ClassicGroup, StateSnapshot
from groupcoord.errors import ErrorCode
from groupcoord.protocol.group_messages import (
    OffsetCommitRequest,
    OffsetDeleteRequest,
    TxnOffsetCommitRequest,
)


@dataclass(slots=True, eq=False)
class AssignmentWrite:
    """The leader's SyncGroup assignment (CompletingRebalance -> Stable once durable)."""

    group: ClassicGroup
    generation: int


@dataclass(slots=True, eq=False)
class EmptyGroupWrite:
    """The group record of a join phase that ended with no member (Empty)."""

    group: ClassicGroup
    generation: int


@dataclass(slots=True, eq=False)
class StaticMemberReplacementWrite:
    """A static member's new member id, persisted while the group stays Stable.

    Carries what the replacement changed, to put back if the write fails (Kafka's
    ``updateStaticMemberAndRebalance`` reverts the same on a failed append).
    """

    group: ClassicGroup
    generation: int
    instance_id: str
    old_member_id: str
    new_member_id: str
    current_leader: str | None
    old_protocols: tuple[tuple[str, bytes], ...]
    old_rebalance_timeout_ms: int
    old_session_timeout_ms: int
    join_version: int


class OffsetCommitWrite:
    """An OffsetCommit's records; ``results`` holds each partition's code before the write.

    The write carries its answer (``PendingWrite.reply``, ``response``), completed by the runtime
    once durable; this is what a failed write needs to answer the mapped error instead.
    A plain class for the reason :class:`~groupcoord.coordinator.result.PendingWrite` is one:
    every commit makes one, and only a plain class's ``__init__`` is compiled.
    """

    __slots__ = ("request", "results")

    def __init__(self, request: OffsetCommitRequest, results: dict[tuple[str, int], ErrorCode]) -> None:
        self.request = request
        self.results = results

    def __repr__(self) -> str:
        return f"OffsetCommitWrite(request={self.request!r}, results={self.results!r})"


@dataclass(slots=True, eq=False)
class TxnOffsetCommitWrite:
    """A TxnOffsetCommit's records, written in a transactional batch of the request's producer.

    Once durable they are pending for that producer until its transaction's marker.
    """

    reply: Callable[[Any], None]
    request: TxnOffsetCommitRequest
    results: dict[tuple[str, int], ErrorCode]


@dataclass(slots=True, eq=False)
class OffsetDeleteWrite:
    """An OffsetDelete's tombstones; topics in ``subscribed`` are answered GROUP_SUBSCRIBED_TO_TOPIC."""

    reply: Callable[[Any], None]
    request: OffsetDeleteRequest
    subscribed: frozenset[str] | None


@dataclass(slots=True, eq=False)
class OffsetExpiryWrite:
    """Tombstones of expired offsets; with ``removes_group``, also the group's own tombstone.

    A group whose last offsets expire while it is Empty is removed only once the tombstones are
    durable: if the write fails, the group stays (as the log still has it) and the next
    retention check tries again.
    """

    group: ClassicGroup
    removes_group: bool
    #: The group's state before it was marked Dead for the write (``removes_group`` only).
    restore: StateSnapshot | None


@dataclass(eq=False, slots=True)
class DeleteGroupsInFlight:
    """One DeleteGroups request whose groups' tombstones are being written."""

    reply: Callable[[Any], None]
    order: list[str]
    results: dict[str, ErrorCode] = field(default_factory=dict)
    waiting: set[str] = field(default_factory=set)
    answered: bool = False


@dataclass(slots=True, eq=False)
class GroupDeletionWrite:
    """One group's tombstones for a DeleteGroups request; ``restore`` is its state before."""

    group: ClassicGroup
    restore: StateSnapshot
    request: DeleteGroupsInFlight


@dataclass(slots=True, eq=False)
class ConsumerGroupDeletionWrite:
    """A consumer group's tombstones (its offsets' and its records') for a DeleteGroups request."""

    group_id: str
    request: DeleteGroupsInFlight


@dataclass(slots=True, eq=False)
class ConsumerGroupWrite:
    """The records of one call into the consumer group core (a heartbeat, a timer), already
    replayed into its groups: ``reply`` gets ``response`` once they are durable. ``group_ids``
    are the groups they change (the shard holds their state from before, to undo a failed
    write); ``classic_tombstone`` says the write also ends the empty classic group of that id."""

    group_ids: tuple[str, ...]
    reply: Callable[[Any], None] | None
    response: Any
    classic_tombstone: bool = False
    #: the response a failed write is answered with, from its error (a classic member's request:
    #: a classic response; None: a ConsumerGroupHeartbeat error response)
    error_response: Callable[[Any], Any] | None = None
    #: the write also makes the classic group of a downgrade (undone if it fails)
    downgrade: bool = False
    #: the write upgrades a classic group: this puts it back if the write fails
    undo_upgrade: Callable[[Any], None] | None = None


OffsetWriteKind = (
    OffsetCommitWrite
    | TxnOffsetCommitWrite
    | OffsetDeleteWrite
    | OffsetExpiryWrite
    | GroupDeletionWrite
    | ConsumerGroupDeletionWrite
)


class OffsetWrite:
    """Wraps a write that changes a group's offsets, tracked while it is in flight.

    Meanwhile ``commits`` count as pending commits (Kafka's ``pendingOffsetCommits``) and a
    require_stable OffsetFetch of the group waits for ``token``. A plain class, as
    :class:`OffsetCommitWrite`.
    """

    __slots__ = ("commits", "group_id", "then", "token")

    def __init__(
        self, token: int, group_id: str, commits: tuple[tuple[str, int], ...], then: OffsetWriteKind
    ) -> None:
        self.token = token
        self.group_id = group_id
        self.commits = commits
        self.then = then

    def __repr__(self) -> str:
        return (
            f"OffsetWrite(token={self.token}, group_id={self.group_id!r}, commits={self.commits!r}, "
            f"then={self.then!r})"
        )


WriteCompletion = (
    AssignmentWrite | EmptyGroupWrite | StaticMemberReplacementWrite | OffsetWrite | ConsumerGroupWrite
)
