"""Consumer-group APIs over the wire: decoded requests in (kio entities, or for OffsetCommit,
JoinGroup and Heartbeat what :mod:`groupcoord.protocol.hot` reads), coordinator calls, encoded
responses out.

Each handler takes the group runtime as its first argument (the route table in
:mod:`groupcoord.app` binds it, so the broker carries no reference to the runtime),
translates the request of whatever version arrived into the coordinator's
version-independent request, calls the coordinator with a reply callable, and encodes the
reply for the client's version. A reply given before the handler returns goes out at once;
otherwise (a parked JoinGroup or SyncGroup, an OffsetCommit waiting for its write) the handler
returns an awaitable, and for JoinGroup and SyncGroup mutes the connection until it is
answered, as Kafka does. If the client disconnects meanwhile, the reply finds its future
cancelled and is dropped; the member's own session timer ends its membership.
"""

from __future__ import annotations

import io
from collections.abc import Callable
from typing import Any

from groupcoord.broker.acl import Resource
from groupcoord.broker.authorized_ops import NOT_REQUESTED, authorized_operations
from groupcoord.broker.state import Broker
from groupcoord.constants import TRANSACTION_STATE_TOPIC
from groupcoord.coordinator.consumer import kio_adapter
from groupcoord.coordinator.consumer.api import (
    ConsumerGroupDescribeResponse,
    ConsumerGroupHeartbeatResponse,
)
from groupcoord.coordinator.consumer.api import DescribedGroup as ConsumerDescribedGroup
from groupcoord.coordinator.records import partition_for
from groupcoord.errors import ErrorCode
from groupcoord.handling import PreEncoded, RequestContext
from groupcoord.protocol import group_messages as api
from groupcoord.protocol.entities import NO_THROTTLE, child, err, has_field, make, ms, offset_commit_entities
from groupcoord.protocol.hot import (
    JoinGroupIn,
    join_group_response,
    offset_commit_response,
    sync_group_response,
)
from groupcoord.protocol.registry import ApiMessages
from groupcoord.runtime.answers import call_now_or_later, response_type
from groupcoord.runtime.group_runtime import OFFSETS_TOPIC, GroupRuntime
from groupcoord.runtime.txn_runtime import TxnRuntime
from groupcoord.transactions.records import partition_for as txn_partition_for
from groupcoord.transactions.shard import TxnConfig

#: ``transaction.state.log.num.partitions`` (the transaction runtime's).
TXN_STATE_PARTITIONS = TxnConfig().num_partitions

#: FindCoordinator key types.
KEY_TYPE_GROUP = 0
KEY_TYPE_TRANSACTION = 1


# ------------------------------------------------------------------------ FindCoordinator
def find_coordinator(broker: Broker, ctx: RequestContext, request: Any) -> Any:
    resp_t = response_type(broker, ctx)
    key_type = int(getattr(request, "key_type", KEY_TYPE_GROUP))
    cluster = broker.cluster

    def answer(key: str) -> tuple[ErrorCode, str | None, int]:
        if key_type == KEY_TYPE_TRANSACTION:
            # One broker leads every __transaction_state partition, when transactions are on.
            if not broker.serves_transactions:
                return (
                    ErrorCode.COORDINATOR_NOT_AVAILABLE,
                    "transactions are not supported by this broker",
                    -1,
                )
            topic, partition = TRANSACTION_STATE_TOPIC, txn_partition_for(key, TXN_STATE_PARTITIONS)
        elif key_type != KEY_TYPE_GROUP:
            return ErrorCode.INVALID_REQUEST, f"unknown key type {key_type}", -1
        else:
            topic, partition = OFFSETS_TOPIC, partition_for(key, broker.config.offsets_topic_num_partitions)
        if cluster is None:
            # One broker leads every partition: it is every coordinator (a partition still
            # loading is reported by the group requests themselves).
            return ErrorCode.NONE, None, broker.node_id
        # Any broker answers with the leader of the key's partition (KafkaApis
        # .getCoordinator); a partition without a leader is COORDINATOR_NOT_AVAILABLE.
        leader = cluster.leader(topic, partition)
        if leader < 0:
            return ErrorCode.COORDINATOR_NOT_AVAILABLE, None, -1
        return ErrorCode.NONE, None, leader

    if has_field(resp_t, "coordinators"):  # v4+: batched keys
        coord_t = child(resp_t, "coordinators")
        out = []
        for key in request.coordinator_keys:
            code, message, node = answer(key)
            ok = code is ErrorCode.NONE
            host, port = broker.node_endpoint(node, ctx.listener) if ok else ("", -1)
            out.append(
                make(
                    coord_t,
                    key=key,
                    node_id=node if ok else -1,
                    host=host if ok else "",
                    port=port if ok else -1,
                    error_code=err(code),
                    error_message=message,
                )
            )
        return make(resp_t, throttle_time=NO_THROTTLE, coordinators=tuple(out))
    code, message, node = answer(request.key)
    ok = code is ErrorCode.NONE
    host, port = broker.node_endpoint(node, ctx.listener) if ok else ("", -1)
    return make(
        resp_t,
        throttle_time=NO_THROTTLE,
        error_code=err(code),
        error_message=message,
        node_id=node if ok else -1,
        host=host if ok else "",
        port=port if ok else -1,
    )


# ------------------------------------------------------------------------ JoinGroup
def join_group(runtime: GroupRuntime, broker: Broker, ctx: RequestContext, request: JoinGroupIn) -> Any:
    """``request`` is what :mod:`groupcoord.protocol.hot` reads (every version: no kio entity
    reaches this handler), timeouts already in milliseconds."""
    version = ctx.api_version
    req = api.JoinGroupRequest(
        group_id=request.group_id,
        session_timeout_ms=request.session_timeout_ms,
        rebalance_timeout_ms=request.rebalance_timeout_ms,
        member_id=request.member_id,
        group_instance_id=request.group_instance_id,
        protocol_type=request.protocol_type,
        protocols=request.protocols,
        reason=request.reason,
        version=version,
        client_id=ctx.client_id,
        client_host=ctx.client_host,
    )

    def encode(r: api.JoinGroupResponse) -> PreEncoded:
        body = join_group_response(
            version,
            error=int(r.error),
            generation_id=r.generation_id,
            protocol_type=r.protocol_type,
            protocol_name=r.protocol_name,
            leader=r.leader,
            skip_assignment=r.skip_assignment,
            member_id=r.member_id,
            members=[(m.member_id, m.group_instance_id, m.metadata) for m in r.members],
        )
        return PreEncoded(pieces=(body,))

    return call_now_or_later(runtime.coordinator.join_group, req, encode, ctx=ctx)


# ------------------------------------------------------------------------ SyncGroup
def sync_group(runtime: GroupRuntime, broker: Broker, ctx: RequestContext, request: Any) -> Any:
    resp_t = response_type(broker, ctx)
    version = ctx.api_version
    if version >= 5 and (request.protocol_type is None or request.protocol_name is None):
        # Kafka's request layer: v5+ must name the protocol type and name.
        return make(
            resp_t,
            throttle_time=NO_THROTTLE,
            error_code=err(ErrorCode.INCONSISTENT_GROUP_PROTOCOL),
            protocol_type=None,
            protocol_name=None,
            assignment=b"",
        )
    req = api.SyncGroupRequest(
        group_id=request.group_id,
        generation_id=int(request.generation_id),
        member_id=request.member_id,
        group_instance_id=getattr(request, "group_instance_id", None),
        protocol_type=getattr(request, "protocol_type", None),
        protocol_name=getattr(request, "protocol_name", None),
        assignments=tuple((a.member_id, bytes(a.assignment)) for a in request.assignments),
        version=version,
    )

    def encode(r: api.SyncGroupResponse) -> PreEncoded:
        body = sync_group_response(
            version,
            error=int(r.error),
            protocol_type=r.protocol_type,
            protocol_name=r.protocol_name,
            assignment=r.assignment,
        )
        return PreEncoded(pieces=(body,))

    return call_now_or_later(runtime.coordinator.sync_group, req, encode, ctx=ctx)


# ------------------------------------------------------------------------ Heartbeat
class _HeartbeatAnswers:
    """The encoded bodies of one version's Heartbeat answers: one per error code, made once.

    A heartbeat answer carries nothing but its error code (and a zero throttle time), and
    heartbeats are the most frequent request of a stable group.
    """

    __slots__ = ("_answers", "_messages")

    def __init__(self, messages: ApiMessages) -> None:
        self._messages = messages
        self._answers: dict[ErrorCode, PreEncoded] = {}

    def encode(self, r: api.HeartbeatResponse) -> PreEncoded:
        answer = self._answers.get(r.error)
        if answer is None:
            messages = self._messages
            buf = io.BytesIO()
            messages.writer(
                buf, make(messages.response_type, throttle_time=NO_THROTTLE, error_code=err(r.error))
            )
            answer = self._answers[r.error] = PreEncoded(pieces=(buf.getvalue(),))
        return answer


#: Heartbeat version -> the encoder of its answers (the bytes depend on the version only).
_HEARTBEAT_ENCODERS: dict[int, Callable[[api.HeartbeatResponse], PreEncoded]] = {}


def heartbeat(runtime: GroupRuntime, broker: Broker, ctx: RequestContext, request: Any) -> Any:
    version = ctx.api_version
    encode = _HEARTBEAT_ENCODERS.get(version)
    if encode is None:
        messages = broker.registry.lookup(ctx.api_key, version)
        encode = _HEARTBEAT_ENCODERS[version] = _HeartbeatAnswers(messages).encode
    req = api.HeartbeatRequest(
        group_id=request.group_id,
        generation_id=int(request.generation_id),
        member_id=request.member_id,
        group_instance_id=getattr(request, "group_instance_id", None),
        version=version,
    )
    return call_now_or_later(runtime.coordinator.heartbeat, req, encode)


# ------------------------------------------------------------------------ LeaveGroup
def leave_group(runtime: GroupRuntime, broker: Broker, ctx: RequestContext, request: Any) -> Any:
    resp_t = response_type(broker, ctx)
    if has_field(type(request), "members"):
        members = tuple(
            api.LeaveGroupMember(
                member_id=m.member_id,
                group_instance_id=m.group_instance_id,
                reason=getattr(m, "reason", None),
            )
            for m in request.members
        )
    else:
        members = (api.LeaveGroupMember(member_id=request.member_id),)
    req = api.LeaveGroupRequest(group_id=request.group_id, members=members, version=ctx.api_version)

    def encode(r: api.LeaveGroupResponse) -> Any:
        if not has_field(resp_t, "members"):
            return make(resp_t, throttle_time=NO_THROTTLE, error_code=err(r.error))
        member_t = child(resp_t, "members")
        return make(
            resp_t,
            throttle_time=NO_THROTTLE,
            error_code=err(r.error),
            members=tuple(
                make(
                    member_t,
                    member_id=m.member_id,
                    group_instance_id=m.group_instance_id,
                    error_code=err(m.error),
                )
                for m in r.members
            ),
        )

    return call_now_or_later(runtime.coordinator.leave_group, req, encode)


# ------------------------------------------------------------------------ OffsetCommit
def _committable(
    broker: Broker, request: Any
) -> tuple[list[api.OffsetCommitTopic], dict[tuple[str, int], ErrorCode]]:
    """An (Txn)OffsetCommit's partitions of existing topics, and the others' codes
    (UNKNOWN_TOPIC_OR_PARTITION, as Kafka's request layer answers them)."""
    topics_meta = broker.logs.topics_view
    unknown: dict[tuple[str, int], ErrorCode] = {}
    known_topics: list[api.OffsetCommitTopic] = []
    for t in request.topics:
        meta = topics_meta.get(t.name)
        parts = []
        for p in t.partitions:
            index = int(p.partition_index)
            if meta is None or not 0 <= index < meta.partitions:
                unknown[(t.name, index)] = ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
                continue
            epoch = getattr(p, "committed_leader_epoch", -1)
            parts.append(
                api.OffsetCommitPartition(
                    partition=index,
                    offset=int(p.committed_offset),
                    leader_epoch=None if epoch is None or int(epoch) < 0 else int(epoch),
                    metadata=p.committed_metadata,
                )
            )
        if parts:
            known_topics.append(api.OffsetCommitTopic(name=t.name, partitions=tuple(parts)))
    return known_topics, unknown


def _known_commits(
    broker: Broker, request: api.OffsetCommitRequest
) -> tuple[api.OffsetCommitRequest, dict[tuple[str, int], ErrorCode]]:
    """As :func:`_committable` for an OffsetCommit that ``protocol/hot.py`` read straight into
    the coordinator's request: that request itself when every partition is of a known topic
    (the usual case, nothing rebuilt), else one with only those partitions (a topic left with
    none dropped, as there) and the others' codes."""
    topics_meta = broker.logs.topics_view
    for t in request.topics:
        meta = topics_meta.get(t.name)
        if meta is None or not t.partitions:
            break
        count = meta.partitions
        if any(not 0 <= p.partition < count for p in t.partitions):
            break
    else:
        return request, {}
    unknown: dict[tuple[str, int], ErrorCode] = {}
    known_topics: list[api.OffsetCommitTopic] = []
    for t in request.topics:
        meta = topics_meta.get(t.name)
        count = 0 if meta is None else meta.partitions
        parts = []
        for p in t.partitions:
            if 0 <= p.partition < count:
                parts.append(p)
            else:
                unknown[(t.name, p.partition)] = ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
        if len(parts) == len(t.partitions) and parts:
            known_topics.append(t)
        elif parts:
            known_topics.append(api.OffsetCommitTopic(name=t.name, partitions=tuple(parts)))
    known = api.OffsetCommitRequest(
        group_id=request.group_id,
        generation_id=request.generation_id,
        member_id=request.member_id,
        group_instance_id=request.group_instance_id,
        retention_time_ms=request.retention_time_ms,
        topics=tuple(known_topics),
        version=request.version,
    )
    return known, unknown


def _commit_encoder(
    broker: Broker, ctx: RequestContext, request: Any, unknown: dict[tuple[str, int], ErrorCode]
) -> Callable[[api.OffsetCommitResponse], Any]:
    """Encodes a commit's answer for the request's version, per partition of the request."""
    resp_t = response_type(broker, ctx)

    def encode(r: api.OffsetCommitResponse) -> Any:
        codes = {(t.name, p.partition): p.error for t in r.topics for p in t.partitions}
        codes.update(unknown)
        return offset_commit_entities(
            resp_t,
            request,
            lambda t, p: codes.get((t, p), ErrorCode.NONE),
            by_partition=True,
            throttle_time=NO_THROTTLE,
        )

    return encode


#: (version, topic, partition, code) -> the encoded answer of a one-partition commit.
_ONE_PARTITION_COMMIT_ANSWERS: dict[tuple[int, str, int, ErrorCode], PreEncoded] = {}
#: Entries kept before that cache starts over (bounds it when many partitions commit).
_ANSWER_CACHE_SIZE = 10_000


def _hot_commit_encoder(
    version: int, request: api.OffsetCommitRequest, unknown: dict[tuple[str, int], ErrorCode]
) -> Callable[[api.OffsetCommitResponse], Any]:
    """As :func:`_commit_encoder` for OffsetCommit v2-9 (``request`` as ``protocol/hot.py``
    read it, every partition), written straight to bytes by
    :func:`~groupcoord.protocol.hot.offset_commit_response` (no kio entities per commit)."""

    def encode(r: api.OffsetCommitResponse) -> PreEncoded:
        if not unknown and len(r.topics) == len(request.topics) == 1 and len(r.topics[0].partitions) == 1:
            # One partition of one topic (a consumer committing as it goes): one answer per
            # (version, topic, partition, code), made once.
            t = r.topics[0]
            p = t.partitions[0]
            key = (version, t.name, p.partition, p.error)
            answer = _ONE_PARTITION_COMMIT_ANSWERS.get(key)
            if answer is None:
                if len(_ONE_PARTITION_COMMIT_ANSWERS) >= _ANSWER_CACHE_SIZE:
                    _ONE_PARTITION_COMMIT_ANSWERS.clear()
                body = offset_commit_response(version, [(t.name, [(p.partition, int(p.error))])])
                answer = _ONE_PARTITION_COMMIT_ANSWERS[key] = PreEncoded(pieces=(body,))
            return answer
        if not unknown and len(r.topics) == len(request.topics):
            # Every partition was committable (the usual case): the coordinator answered the
            # request's topics and partitions in the request's order.
            return PreEncoded(
                pieces=(
                    offset_commit_response(
                        version,
                        [(t.name, [(p.partition, int(p.error)) for p in t.partitions]) for t in r.topics],
                    ),
                )
            )
        codes = {(t.name, p.partition): p.error for t in r.topics for p in t.partitions}
        codes.update(unknown)
        topics = [
            (
                t.name,
                [(p.partition, int(codes.get((t.name, p.partition), 0))) for p in t.partitions],
            )
            for t in request.topics
            if t.partitions  # Kafka's response builder adds a topic with its first partition
        ]
        return PreEncoded(pieces=(offset_commit_response(version, topics),))

    return encode


def offset_commit(runtime: GroupRuntime, broker: Broker, ctx: RequestContext, request: Any) -> Any:
    """Partitions of unknown topics get UNKNOWN_TOPIC_OR_PARTITION; the rest go to the core.

    v2-9 arrive as the coordinator's request already (``protocol/hot.py``); v1 as kio's entity,
    translated here."""
    encode: Callable[[api.OffsetCommitResponse], Any]
    if type(request) is api.OffsetCommitRequest:
        req, unknown = _known_commits(broker, request)
        encode = _hot_commit_encoder(request.version, request, unknown)
    else:
        known_topics, unknown = _committable(broker, request)
        retention = getattr(request, "retention_time", None)
        req = api.OffsetCommitRequest(
            group_id=request.group_id,
            generation_id=int(request.generation_id_or_member_epoch),
            member_id=request.member_id,
            group_instance_id=getattr(request, "group_instance_id", None),
            retention_time_ms=-1 if retention is None else ms(retention),
            topics=tuple(known_topics),
            version=ctx.api_version,
        )
        encode = _commit_encoder(broker, ctx, request, unknown)
    if not req.topics:
        # As in Kafka's request layer: with nothing committable the coordinator is not asked,
        # so no group is created and no membership is checked.
        return encode(api.OffsetCommitResponse(topics=()))
    return call_now_or_later(runtime.coordinator.offset_commit, req, encode)


def txn_offset_commit(
    runtime: GroupRuntime, txn: TxnRuntime | None, broker: Broker, ctx: RequestContext, request: Any
) -> Any:
    """TxnOffsetCommit (28) v0-4: offsets committed inside a transaction (KIP-98, KIP-447).

    As Kafka's ``KafkaApis.handleTxnOffsetCommitRequest``: partitions of unknown topics get
    UNKNOWN_TOPIC_OR_PARTITION and the rest go to the group coordinator, which holds them
    pending for the producer until its transaction's marker. v0-2 carry no member fields
    (generation -1, no member id). First, as Kafka 3.6+ (KIP-890 part 1,
    ``GroupCoordinator.handleTxnCommitOffsets`` verifying with the transaction coordinator), the
    group's ``__consumer_offsets`` partition must be in the producer's ongoing transaction
    (AddOffsetsToTxn): otherwise every partition gets the verification's error
    (INVALID_TXN_STATE, INVALID_PRODUCER_EPOCH, INVALID_PRODUCER_ID_MAPPING, ...).
    """
    known_topics, unknown = _committable(broker, request)
    if txn is not None and known_topics and request.group_id:
        verified = txn.verify_partition(
            str(request.transactional_id),
            int(request.producer_id),
            int(request.producer_epoch),
            (OFFSETS_TOPIC, runtime.coordinator.partition_for(str(request.group_id))),
        )
        if verified is not ErrorCode.NONE:
            failed = {(t.name, p.partition): verified for t in known_topics for p in t.partitions}
            encode_failed = _commit_encoder(broker, ctx, request, {**unknown, **failed})
            return encode_failed(api.OffsetCommitResponse(topics=()))
    req = api.TxnOffsetCommitRequest(
        transactional_id=str(request.transactional_id),
        group_id=str(request.group_id),
        producer_id=int(request.producer_id),
        producer_epoch=int(request.producer_epoch),
        generation_id=int(getattr(request, "generation_id", -1)),
        member_id=str(getattr(request, "member_id", "")),
        group_instance_id=getattr(request, "group_instance_id", None),
        topics=tuple(known_topics),
        version=ctx.api_version,
    )
    encode = _commit_encoder(broker, ctx, request, unknown)
    if not known_topics:
        return encode(api.OffsetCommitResponse(topics=()))
    return call_now_or_later(runtime.coordinator.txn_offset_commit, req, encode)


# ------------------------------------------------------------------------ OffsetFetch
def offset_fetch(runtime: GroupRuntime, broker: Broker, ctx: RequestContext, request: Any) -> Any:
    resp_t = response_type(broker, ctx)
    version = ctx.api_version
    multi = has_field(type(request), "groups")
    if multi:
        groups = tuple(
            api.OffsetFetchGroup(
                group_id=g.group_id,
                topics=None
                if g.topics is None
                else tuple(
                    api.OffsetFetchTopic(name=t.name, partitions=tuple(int(i) for i in t.partition_indexes))
                    for t in g.topics
                ),
                member_id=getattr(g, "member_id", None),
                member_epoch=int(getattr(g, "member_epoch", -1)),
            )
            for g in request.groups
        )
    else:
        groups = (
            api.OffsetFetchGroup(
                group_id=request.group_id,
                topics=None
                if request.topics is None
                else tuple(
                    api.OffsetFetchTopic(name=t.name, partitions=tuple(int(i) for i in t.partition_indexes))
                    for t in request.topics
                ),
            ),
        )
    req = api.OffsetFetchRequest(
        groups=groups, require_stable=bool(getattr(request, "require_stable", False)), version=version
    )

    def encode_topics(topic_t: Any, g: api.OffsetFetchGroupResponse) -> tuple[Any, ...]:
        part_t = child(topic_t, "partitions")
        return tuple(
            make(
                topic_t,
                name=t.name,
                partitions=tuple(
                    make(
                        part_t,
                        partition_index=p.partition,
                        committed_offset=p.offset,
                        committed_leader_epoch=-1 if p.leader_epoch is None else p.leader_epoch,
                        metadata=p.metadata,
                        error_code=err(p.error),
                    )
                    for p in t.partitions
                ),
            )
            for t in g.topics
        )

    def encode(r: api.OffsetFetchResponse) -> Any:
        if multi:
            group_t = child(resp_t, "groups")
            topic_t = child(group_t, "topics")
            return make(
                resp_t,
                throttle_time=NO_THROTTLE,
                groups=tuple(
                    make(
                        group_t,
                        group_id=g.group_id,
                        error_code=err(g.error),
                        topics=encode_topics(topic_t, g),
                    )
                    for g in r.groups
                ),
            )
        g = r.groups[0]
        topic_t = child(resp_t, "topics")
        if version < 2 and g.error is not ErrorCode.NONE and request.topics is not None:
            # v0-1 have no top-level error: every requested partition carries the group's.
            g = api.OffsetFetchGroupResponse(
                group_id=g.group_id,
                error=g.error,
                topics=tuple(
                    api.OffsetFetchTopicResponse(
                        name=t.name,
                        partitions=tuple(
                            api.OffsetFetchPartitionResponse(
                                partition=int(i), offset=-1, leader_epoch=None, metadata="", error=g.error
                            )
                            for i in t.partition_indexes
                        ),
                    )
                    for t in request.topics
                ),
            )
        return make(
            resp_t,
            throttle_time=NO_THROTTLE,
            error_code=err(g.error),
            topics=encode_topics(topic_t, g),
        )

    return call_now_or_later(runtime.coordinator.offset_fetch, req, encode)


# ------------------------------------------------------------------------ admin
def describe_groups(runtime: GroupRuntime, broker: Broker, ctx: RequestContext, request: Any) -> Any:
    resp_t = response_type(broker, ctx)
    group_t = child(resp_t, "groups")
    member_t = child(group_t, "members")
    # KIP-430: v3+, for each group answered without error (KafkaApis.handleDescribeGroupsRequest)
    group_ops = (
        authorized_operations(Resource.GROUP)
        if ctx.api_version >= 3 and getattr(request, "include_authorized_operations", False)
        else NOT_REQUESTED
    )

    def encode(r: api.DescribeGroupsResponse) -> Any:
        return make(
            resp_t,
            throttle_time=NO_THROTTLE,
            groups=tuple(
                make(
                    group_t,
                    error_code=err(g.error),
                    group_id=g.group_id,
                    group_state=g.state,
                    protocol_type=g.protocol_type,
                    protocol_data=g.protocol_data,
                    authorized_operations=group_ops if g.error == ErrorCode.NONE else NOT_REQUESTED,
                    members=tuple(
                        make(
                            member_t,
                            member_id=m.member_id,
                            group_instance_id=m.group_instance_id,
                            client_id=m.client_id,
                            client_host=m.client_host,
                            member_metadata=m.metadata,
                            member_assignment=m.assignment,
                        )
                        for m in g.members
                    ),
                )
                for g in r.groups
            ),
        )

    group_ids = tuple(str(g) for g in request.groups)
    return call_now_or_later(runtime.coordinator.describe_groups, group_ids, encode)


def list_groups(runtime: GroupRuntime, broker: Broker, ctx: RequestContext, request: Any) -> Any:
    resp_t = response_type(broker, ctx)
    group_t = child(resp_t, "groups")
    states = tuple(getattr(request, "states_filter", ()) or ())
    types = tuple(getattr(request, "types_filter", ()) or ())

    def encode(r: api.ListGroupsResponse) -> Any:
        listed = r.groups
        if types:  # v5 (KIP-848): group types, matched case-insensitively as Kafka does
            wanted = {t.lower() for t in types}
            listed = tuple(g for g in listed if g.group_type in wanted)
        return make(
            resp_t,
            throttle_time=NO_THROTTLE,
            error_code=err(r.error),
            groups=tuple(
                make(
                    group_t,
                    group_id=g.group_id,
                    protocol_type=g.protocol_type,
                    group_state=g.group_state,
                    group_type=g.group_type,
                )
                for g in listed
            ),
        )

    return call_now_or_later(runtime.coordinator.list_groups, states or None, encode)


def delete_groups(runtime: GroupRuntime, broker: Broker, ctx: RequestContext, request: Any) -> Any:
    resp_t = response_type(broker, ctx)
    result_t = child(resp_t, "results")
    names = tuple(str(g) for g in request.groups_names)

    def encode(r: api.DeleteGroupsResponse) -> Any:
        return make(
            resp_t,
            throttle_time=NO_THROTTLE,
            results=tuple(make(result_t, group_id=x.group_id, error_code=err(x.error)) for x in r.results),
        )

    return call_now_or_later(runtime.coordinator.delete_groups, names, encode)


def offset_delete(runtime: GroupRuntime, broker: Broker, ctx: RequestContext, request: Any) -> Any:
    resp_t = response_type(broker, ctx)
    topic_t = child(resp_t, "topics")
    part_t = child(topic_t, "partitions")
    req = api.OffsetDeleteRequest(
        group_id=request.group_id,
        topics=tuple(
            api.OffsetDeleteTopic(name=t.name, partitions=tuple(int(p.partition_index) for p in t.partitions))
            for t in request.topics
        ),
        version=ctx.api_version,
    )

    def encode(r: api.OffsetDeleteResponse) -> Any:
        return make(
            resp_t,
            throttle_time=NO_THROTTLE,
            error_code=err(r.error),
            topics=tuple(
                make(
                    topic_t,
                    name=t.name,
                    partitions=tuple(
                        make(part_t, partition_index=p.partition, error_code=err(p.error))
                        for p in t.partitions
                    ),
                )
                for t in r.topics
            ),
        )

    return call_now_or_later(runtime.coordinator.offset_delete, req, encode)


__all__ = ["OFFSETS_TOPIC"]


# ------------------------------------------------------------------------ KIP-848
def consumer_group_heartbeat(runtime: GroupRuntime, broker: Broker, ctx: RequestContext, request: Any) -> Any:
    """ConsumerGroupHeartbeat (68) v0-v1: answered once the records it wrote are durable;
    UNSUPPORTED_VERSION where ``group.coordinator.rebalance.protocols`` leaves ``consumer`` out
    (Kafka's ``KafkaApis.isConsumerGroupProtocolEnabled``)."""
    version = ctx.api_version

    def encode(r: ConsumerGroupHeartbeatResponse) -> PreEncoded:
        # Hand-written (protocol/hot.py, checked byte for byte against kio's writer): a steady
        # member's answer, at every heartbeat interval.
        return PreEncoded(pieces=(kio_adapter.heartbeat_response_body(r),))

    if not runtime.coordinator.config.consumer_protocol_enabled:
        return encode(ConsumerGroupHeartbeatResponse(error_code=ErrorCode.UNSUPPORTED_VERSION))
    req = kio_adapter.heartbeat_from_kio(
        request, api_version=version, client_id=ctx.client_id, client_host=ctx.client_host
    )
    return call_now_or_later(runtime.coordinator.consumer_group_heartbeat, req, encode)


def consumer_group_describe(runtime: GroupRuntime, broker: Broker, ctx: RequestContext, request: Any) -> Any:
    """ConsumerGroupDescribe (69) v0-v1, each group from its shard's live state (every group
    UNSUPPORTED_VERSION where the consumer protocol is off)."""
    version = ctx.api_version
    req = kio_adapter.describe_request_from_kio(request)

    def encode(r: ConsumerGroupDescribeResponse) -> Any:
        return kio_adapter.describe_response_to_kio(r, api_version=version)

    if not runtime.coordinator.config.consumer_protocol_enabled:
        code = ErrorCode.UNSUPPORTED_VERSION
        return encode(
            ConsumerGroupDescribeResponse(
                groups=tuple(ConsumerDescribedGroup(group_id=g, error_code=code) for g in req.group_ids)
            )
        )
    return call_now_or_later(runtime.coordinator.consumer_group_describe, req, encode)
