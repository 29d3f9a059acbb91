"""Version-independent group requests and responses: the one vocabulary of both sides.

The coordinator's handlers take and return these; the member client's cores send and read the
same types (``client.messages`` re-exports them beside its own FindCoordinator and Metadata), so
in one process (the simulator, the core-pair tests) a member's request goes to the coordinator
as it is. On the broker the wire layer decodes a Kafka request of any version into one of these,
calls the handler, and encodes the response for the version the client used; the client's wire
layer does the reverse. Fields are Kafka's, in snake case. ``version`` is carried because some
coordinator behaviour depends on it (JoinGroup v4 MEMBER_ID_REQUIRED, v9 skip_assignment,
LeaveGroup v0-2 top-level error, ...): the broker's decoder sets the version the request came in;
a member core leaves the default, the newest, and its wire layer picks the version both sides
support. ``client_id`` and ``client_host`` come from the request header and the peer (the
broker's decoder, or whoever hands a member's request to the coordinator in-process).
"""

from __future__ import annotations

from dataclasses import dataclass

from groupcoord.errors import ErrorCode

# --------------------------------------------------------------------------- JoinGroup


@dataclass(frozen=True, kw_only=True, slots=True)
class JoinGroupRequest:
    group_id: str
    session_timeout_ms: int
    rebalance_timeout_ms: int
    member_id: str
    group_instance_id: str | None
    protocol_type: str
    protocols: tuple[tuple[str, bytes], ...]
    reason: str | None = None
    version: int = 9
    client_id: str = ""
    client_host: str = ""


@dataclass(frozen=True, kw_only=True, slots=True)
class JoinGroupResponseMember:
    member_id: str
    group_instance_id: str | None
    metadata: bytes


@dataclass(frozen=True, kw_only=True, slots=True)
class JoinGroupResponse:
    error: ErrorCode
    generation_id: int = -1
    protocol_type: str | None = None
    protocol_name: str | None = None
    leader: str = ""
    skip_assignment: bool = False
    member_id: str = ""
    members: tuple[JoinGroupResponseMember, ...] = ()  # non-empty only for the leader


# --------------------------------------------------------------------------- SyncGroup


@dataclass(frozen=True, kw_only=True, slots=True)
class SyncGroupRequest:
    group_id: str
    generation_id: int
    member_id: str
    group_instance_id: str | None
    protocol_type: str | None
    protocol_name: str | None
    assignments: tuple[tuple[str, bytes], ...]
    version: int = 5


@dataclass(frozen=True, kw_only=True, slots=True)
class SyncGroupResponse:
    error: ErrorCode
    protocol_type: str | None = None
    protocol_name: str | None = None
    assignment: bytes = b""


# --------------------------------------------------------------------------- Heartbeat


@dataclass(kw_only=True, slots=True, init=False)
class HeartbeatRequest:
    # Written-out __init__, as OffsetCommitPartition's: one is built for every heartbeat, and a
    # frozen dataclass's generated __init__ stays interpreted and sets each field through
    # object.__setattr__ (docs/benchmarks.md, session 11).
    group_id: str
    generation_id: int
    member_id: str
    group_instance_id: str | None
    version: int

    def __init__(
        self,
        *,
        group_id: str,
        generation_id: int,
        member_id: str,
        group_instance_id: str | None = None,
        version: int = 4,
    ) -> None:
        self.group_id = group_id
        self.generation_id = generation_id
        self.member_id = member_id
        self.group_instance_id = group_instance_id
        self.version = version


@dataclass(frozen=True, kw_only=True, slots=True)
class HeartbeatResponse:
    error: ErrorCode


# --------------------------------------------------------------------------- LeaveGroup


@dataclass(frozen=True, kw_only=True, slots=True)
class LeaveGroupMember:
    member_id: str
    group_instance_id: str | None = None
    reason: str | None = None


@dataclass(frozen=True, kw_only=True, slots=True)
class LeaveGroupRequest:
    group_id: str
    members: tuple[LeaveGroupMember, ...]
    version: int = 5


@dataclass(frozen=True, kw_only=True, slots=True)
class LeaveGroupMemberResponse:
    member_id: str
    group_instance_id: str | None
    error: ErrorCode


@dataclass(frozen=True, kw_only=True, slots=True)
class LeaveGroupResponse:
    """``error`` is the top-level code; for v0-2 it already is the first member error."""

    error: ErrorCode
    members: tuple[LeaveGroupMemberResponse, ...] = ()


# --------------------------------------------------------------------------- OffsetCommit


@dataclass(kw_only=True, slots=True, init=False)
class OffsetCommitPartition:
    # init=False and a written-out __init__: compiled (setup.py), this __init__ is native, where
    # the one dataclasses generates stays interpreted (docs/benchmarks.md, session 5). Not frozen
    # for the same reason (a frozen __init__ sets each field through object.__setattr__).
    partition: int
    offset: int
    leader_epoch: int | None
    metadata: str | None

    def __init__(
        self, *, partition: int, offset: int, leader_epoch: int | None = None, metadata: str | None = ""
    ) -> None:
        self.partition = partition
        self.offset = offset
        self.leader_epoch = leader_epoch
        self.metadata = metadata


@dataclass(kw_only=True, slots=True, init=False)
class OffsetCommitTopic:
    # Written-out __init__: see OffsetCommitPartition.
    name: str
    partitions: tuple[OffsetCommitPartition, ...]

    def __init__(self, *, name: str, partitions: tuple[OffsetCommitPartition, ...]) -> None:
        self.name = name
        self.partitions = partitions


@dataclass(kw_only=True, slots=True, init=False)
class OffsetCommitRequest:
    # Written-out __init__: see OffsetCommitPartition.
    group_id: str
    generation_id: int
    member_id: str
    group_instance_id: str | None
    retention_time_ms: int
    topics: tuple[OffsetCommitTopic, ...]
    version: int

    def __init__(
        self,
        *,
        group_id: str,
        generation_id: int,
        member_id: str,
        group_instance_id: str | None,
        retention_time_ms: int,
        topics: tuple[OffsetCommitTopic, ...],
        version: int = 8,
    ) -> None:
        self.group_id = group_id
        self.generation_id = generation_id
        self.member_id = member_id
        self.group_instance_id = group_instance_id
        self.retention_time_ms = retention_time_ms
        self.topics = topics
        self.version = version


@dataclass(frozen=True, kw_only=True, slots=True)
class OffsetCommitPartitionResponse:
    partition: int
    error: ErrorCode


@dataclass(frozen=True, kw_only=True, slots=True)
class OffsetCommitTopicResponse:
    name: str
    partitions: tuple[OffsetCommitPartitionResponse, ...]


@dataclass(frozen=True, kw_only=True, slots=True)
class OffsetCommitResponse:
    topics: tuple[OffsetCommitTopicResponse, ...]


# --------------------------------------------------------------------------- OffsetFetch


@dataclass(frozen=True, kw_only=True, slots=True)
class OffsetFetchTopic:
    name: str
    partitions: tuple[int, ...]


@dataclass(frozen=True, kw_only=True, slots=True)
class OffsetFetchGroup:
    group_id: str
    topics: tuple[OffsetFetchTopic, ...] | None  # None = every committed offset
    #: OffsetFetch v9+ (KIP-848): the fetching member of a consumer group; None and -1 for none
    member_id: str | None = None
    member_epoch: int = -1


@dataclass(frozen=True, kw_only=True, slots=True)
class OffsetFetchRequest:
    groups: tuple[OffsetFetchGroup, ...]
    require_stable: bool = False
    version: int = 8


@dataclass(frozen=True, kw_only=True, slots=True)
class OffsetFetchPartitionResponse:
    """One partition's answer; ``offset`` -1 means nothing is committed."""

    partition: int
    offset: int
    leader_epoch: int | None = None
    metadata: str = ""
    error: ErrorCode = ErrorCode.NONE


@dataclass(frozen=True, kw_only=True, slots=True)
class OffsetFetchTopicResponse:
    name: str
    partitions: tuple[OffsetFetchPartitionResponse, ...]


@dataclass(frozen=True, kw_only=True, slots=True)
class OffsetFetchGroupResponse:
    group_id: str
    error: ErrorCode
    topics: tuple[OffsetFetchTopicResponse, ...]


@dataclass(frozen=True, kw_only=True, slots=True)
class OffsetFetchResponse:
    groups: tuple[OffsetFetchGroupResponse, ...]


# --------------------------------------------------------------------------- admin


@dataclass(frozen=True, kw_only=True, slots=True)
class DescribedMember:
    member_id: str
    group_instance_id: str | None
    client_id: str
    client_host: str
    metadata: bytes
    assignment: bytes


@dataclass(frozen=True, kw_only=True, slots=True)
class DescribedGroup:
    group_id: str
    error: ErrorCode
    state: str
    protocol_type: str
    protocol_data: str
    members: tuple[DescribedMember, ...]


@dataclass(frozen=True, kw_only=True, slots=True)
class DescribeGroupsResponse:
    groups: tuple[DescribedGroup, ...]


@dataclass(frozen=True, kw_only=True, slots=True)
class ListedGroup:
    group_id: str
    protocol_type: str
    group_state: str
    #: ListGroups v5: ``classic`` or ``consumer`` (KIP-848)
    group_type: str = "classic"


@dataclass(frozen=True, kw_only=True, slots=True)
class ListGroupsResponse:
    error: ErrorCode
    groups: tuple[ListedGroup, ...]


@dataclass(frozen=True, kw_only=True, slots=True)
class DeleteGroupResult:
    group_id: str
    error: ErrorCode


@dataclass(frozen=True, kw_only=True, slots=True)
class DeleteGroupsResponse:
    results: tuple[DeleteGroupResult, ...]


@dataclass(frozen=True, kw_only=True, slots=True)
class OffsetDeleteTopic:
    name: str
    partitions: tuple[int, ...]


@dataclass(frozen=True, kw_only=True, slots=True)
class OffsetDeleteRequest:
    group_id: str
    topics: tuple[OffsetDeleteTopic, ...]
    version: int = 0


@dataclass(frozen=True, kw_only=True, slots=True)
class OffsetDeletePartitionResponse:
    partition: int
    error: ErrorCode


@dataclass(frozen=True, kw_only=True, slots=True)
class OffsetDeleteTopicResponse:
    name: str
    partitions: tuple[OffsetDeletePartitionResponse, ...]


@dataclass(frozen=True, kw_only=True, slots=True)
class OffsetDeleteResponse:
    error: ErrorCode
    topics: tuple[OffsetDeleteTopicResponse, ...]


# --------------------------------------------------------------------------- TxnOffsetCommit


@dataclass(frozen=True, kw_only=True, slots=True)
class TxnOffsetCommitRequest:
    """TxnOffsetCommit (KIP-98, KIP-447): offsets committed inside a producer's transaction.

    ``generation_id`` -1, ``member_id`` "" and ``group_instance_id`` None (what v0-2 carry)
    commit without the member checks. The response is an :class:`OffsetCommitResponse`.
    """

    transactional_id: str
    group_id: str
    producer_id: int
    producer_epoch: int
    generation_id: int
    member_id: str
    group_instance_id: str | None
    topics: tuple[OffsetCommitTopic, ...]
    version: int = 4
