"""The member core's requests carried to the coordinator core in-process, and the answers back.

:func:`call_coordinator` translates one version-neutral ``client.messages`` request into the
coordinator's ``protocol.group_messages`` request, hands it to a :class:`GroupCoordinator` and maps the
answer back to the ``client.messages`` response the member core reads. :func:`error_response`
builds the response a request gets when it fails with one error code. No sockets, no wire
encoding: the simulator (``pipeline.simulate``) and the in-process member tests
(``tests/client/member_world.py``) both drive real member cores against the real coordinator
core through this one mapping; :func:`call_consumer_group_heartbeat` does the same for the
KIP-848 member's ConsumerGroupHeartbeat.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import replace

from groupcoord.client import consumer_group_messages as cgm
from groupcoord.client import messages as m
from groupcoord.client.types import TopicPartition
from groupcoord.coordinator.consumer import api as capi
from groupcoord.errors import ErrorCode
from groupcoord.protocol import group_messages as api
from groupcoord.runtime.group_coordinator import GroupCoordinator

log = logging.getLogger(__name__)

Reply = Callable[[m.Response], None]


def error_response(req: m.Request, err: ErrorCode) -> m.Response:
    """The response to ``req`` that carries ``err`` (every partition of a commit fails with it)."""
    if isinstance(req, m.FindCoordinatorRequest):
        return m.FindCoordinatorResponse(error=err, node=None)
    if isinstance(req, m.JoinGroupRequest):
        return m.JoinGroupResponse(error=err, member_id=req.member_id)
    if isinstance(req, m.SyncGroupRequest):
        return m.SyncGroupResponse(error=err)
    if isinstance(req, m.HeartbeatRequest):
        return m.HeartbeatResponse(error=err)
    if isinstance(req, m.LeaveGroupRequest):
        return m.LeaveGroupResponse(error=err)
    if isinstance(req, m.OffsetCommitRequest):
        return m.OffsetCommitResponse(errors=tuple((tp, err) for tp, _ in req.offsets))
    if isinstance(req, m.OffsetFetchRequest):
        return m.OffsetFetchResponse(error=err)
    raise ValueError(f"no error response for {type(req).__name__}")


def call_coordinator(
    c: GroupCoordinator,
    req: m.Request,
    reply: Reply,
    *,
    client_id: str,
    client_host: str = "/127.0.0.1",
) -> None:
    """Hand a group request to the coordinator core; ``reply`` gets the member-side response
    (at once, or later for a parked JoinGroup/SyncGroup or a commit awaiting its append)."""
    if isinstance(req, m.JoinGroupRequest):
        # the header's client id and the peer, as the broker's decoder attaches them
        c.join_group(replace(req, client_id=client_id, client_host=client_host), reply)
    elif isinstance(req, m.SyncGroupRequest):
        c.sync_group(req, reply)
    elif isinstance(req, m.HeartbeatRequest):
        c.heartbeat(req, reply)
    elif isinstance(req, m.LeaveGroupRequest):
        c.leave_group(req, reply)
    elif isinstance(req, m.OffsetCommitRequest):
        _commit(c, req, reply)
    elif isinstance(req, m.OffsetFetchRequest):
        _fetch(c, req, reply)
    else:
        raise ValueError(f"not a group request: {type(req).__name__}")


def call_consumer_group_heartbeat(
    c: GroupCoordinator,
    req: cgm.ConsumerGroupHeartbeatRequest,
    reply: Callable[[cgm.ConsumerGroupHeartbeatResponse], None],
    *,
    client_id: str,
    client_host: str = "/127.0.0.1",
) -> None:
    """KIP-848's ConsumerGroupHeartbeat to the coordinator core and back (the consumer-protocol
    member's one group request besides commits). Topic ids pass as they are; the assignment
    comes back as ``TopicIdPartitions`` sorted by topic id, partitions ascending."""

    def heartbeat_reply(r: capi.ConsumerGroupHeartbeatResponse) -> None:
        assignment = None
        if r.assignment is not None:
            assignment = tuple(
                cgm.TopicIdPartitions(topic_id=t, partitions=tuple(sorted(ps)))
                for t, ps in sorted(r.assignment.items(), key=lambda kv: str(kv[0]))
            )
        reply(
            cgm.ConsumerGroupHeartbeatResponse(
                error=ErrorCode(r.error_code),
                error_message=r.error_message,
                member_id=r.member_id,
                member_epoch=r.member_epoch,
                heartbeat_interval_ms=r.heartbeat_interval_ms,
                assignment=assignment,
            )
        )

    c.consumer_group_heartbeat(
        capi.ConsumerGroupHeartbeatRequest(
            group_id=req.group_id,
            member_id=req.member_id,
            member_epoch=req.member_epoch,
            instance_id=req.instance_id,
            rack_id=req.rack_id,
            rebalance_timeout_ms=req.rebalance_timeout_ms,
            subscribed_topic_names=req.subscribed_topic_names,
            subscribed_topic_regex=req.subscribed_topic_regex,
            server_assignor=req.server_assignor,
            topic_partitions=None
            if req.topic_partitions is None
            else tuple((t.topic_id, t.partitions) for t in req.topic_partitions),
            client_id=client_id,
            client_host=client_host,
        ),
        heartbeat_reply,
    )


def _commit(c: GroupCoordinator, req: m.OffsetCommitRequest, reply: Reply) -> None:
    by_topic: dict[str, list[api.OffsetCommitPartition]] = {}
    for tp, om in req.offsets:
        by_topic.setdefault(tp.topic, []).append(
            api.OffsetCommitPartition(
                partition=tp.partition,
                offset=om.offset,
                leader_epoch=om.leader_epoch,
                metadata=om.metadata,
            )
        )
    c.offset_commit(
        api.OffsetCommitRequest(
            group_id=req.group_id,
            generation_id=req.generation_id,
            member_id=req.member_id,
            group_instance_id=req.group_instance_id,
            retention_time_ms=-1,
            topics=tuple(api.OffsetCommitTopic(name=t, partitions=tuple(ps)) for t, ps in by_topic.items()),
        ),
        lambda r: reply(
            m.OffsetCommitResponse(
                errors=tuple(
                    (TopicPartition(t.name, p.partition), p.error) for t in r.topics for p in t.partitions
                )
            )
        ),
    )


def _fetch(c: GroupCoordinator, req: m.OffsetFetchRequest, reply: Reply) -> None:
    topics: tuple[api.OffsetFetchTopic, ...] | None = None
    if req.partitions is not None:
        grouped: dict[str, list[int]] = {}
        for tp in req.partitions:
            grouped.setdefault(tp.topic, []).append(tp.partition)
        topics = tuple(api.OffsetFetchTopic(name=t, partitions=tuple(ps)) for t, ps in grouped.items())

    def fetch_reply(r: api.OffsetFetchResponse) -> None:
        (g,) = r.groups
        reply(
            m.OffsetFetchResponse(
                error=g.error,
                offsets=tuple(
                    (
                        TopicPartition(t.name, p.partition),
                        m.FetchedOffset(
                            offset=p.offset,
                            leader_epoch=p.leader_epoch,
                            metadata=p.metadata,
                            error=p.error,
                        ),
                    )
                    for t in g.topics
                    for p in t.partitions
                ),
            )
        )

    c.offset_fetch(
        api.OffsetFetchRequest(
            groups=(api.OffsetFetchGroup(group_id=req.group_id, topics=topics),),
            require_stable=req.require_stable,
        ),
        fetch_reply,
    )
