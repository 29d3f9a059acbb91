"""OffsetForLeaderEpoch (key 23): where a leader epoch ended, so that a consumer can check its
position after a leader change (KIP-320, KIP-101).

Served when several brokers run in one process (``broker.cluster``), from each partition's
leader-epoch history there. Per partition, as Kafka's ``Partition.lastOffsetForLeaderEpoch``:
DESCRIBE on the topic (TOPIC_AUTHORIZATION_FAILED), an unknown partition
(UNKNOWN_TOPIC_OR_PARTITION), the stated current leader epoch (FENCED_LEADER_EPOCH /
UNKNOWN_LEADER_EPOCH), the leader only (NOT_LEADER_OR_FOLLOWER); then the epoch asked for and
its end offset from ``LeaderEpochFileCache.endOffsetFor``
(:meth:`~groupcoord.broker.cluster.ClusterMetadata.end_offset_for`).
"""

from __future__ import annotations

from typing import Any

from groupcoord.broker.acl import Op, Resource
from groupcoord.broker.cluster import NO_EPOCH, UNDEFINED_EPOCH_OFFSET
from groupcoord.broker.state import Broker
from groupcoord.errors import ErrorCode
from groupcoord.handling import RequestContext
from groupcoord.protocol.entities import NO_THROTTLE, child, err, make


def handle(broker: Broker, ctx: RequestContext, request: Any) -> Any:
    resp_t = broker.registry.lookup(ctx.api_key, ctx.api_version).response_type
    topic_t = child(resp_t, "topics")
    part_t = child(topic_t, "partitions")
    cluster = broker.cluster
    known = broker.logs.topics_view
    topics = []
    for t in request.topics:
        allowed = broker.allowed(ctx, Op.DESCRIBE, Resource.TOPIC, t.topic)
        meta = known.get(t.topic)
        parts = []
        for p in t.partitions:
            index = int(p.partition)
            epoch, end = NO_EPOCH, UNDEFINED_EPOCH_OFFSET
            if not allowed:
                code = ErrorCode.TOPIC_AUTHORIZATION_FAILED
            elif meta is None or not 0 <= index < meta.partitions or cluster is None:
                code = ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
            else:
                code = cluster.check(t.topic, index, ctx.node_id, int(getattr(p, "current_leader_epoch", -1)))
                if code is ErrorCode.NONE:
                    epoch, end = cluster.end_offset_for(t.topic, index, int(p.leader_epoch))
            parts.append(
                make(part_t, error_code=err(code), partition=index, leader_epoch=epoch, end_offset=end)
            )
        topics.append(make(topic_t, topic=t.topic, partitions=tuple(parts)))
    return make(resp_t, throttle_time=NO_THROTTLE, topics=tuple(topics))
