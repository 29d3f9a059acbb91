"""ListOffsets (key 2): latest (-1), earliest (-2), max timestamp (-3, v7+), or by timestamp."""

from __future__ import annotations

from typing import Any

from groupcoord.broker.state import Broker
from groupcoord.errors import ErrorCode
from groupcoord.handling import RequestContext
from groupcoord.protocol.entities import NO_THROTTLE, child, err, make

LATEST = -1
EARLIEST = -2
MAX_TIMESTAMP = -3


def _lookup(
    broker: Broker, topic: str, partition: int, ts: int, version: int, read_committed: bool = False
) -> tuple[ErrorCode, int, int]:
    """(error, timestamp, offset) for one partition; latest is the last stable offset for a
    read_committed asker (isolation_level 1, v2+), as in Kafka's ``fetchOffsetForTimestamp``."""
    try:
        plog = broker.logs.partition(topic, partition)
    except KeyError:
        return ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, -1, -1
    if ts == LATEST:
        return ErrorCode.NONE, -1, plog.last_stable_offset if read_committed else plog.log_end_offset
    if ts == EARLIEST:
        return ErrorCode.NONE, -1, plog.log_start_offset
    if ts == MAX_TIMESTAMP:
        if version < 7:
            return ErrorCode.UNSUPPORTED_VERSION, -1, -1
        found = plog.max_timestamp_offset()
        if found is None or found[0] < 0:
            return ErrorCode.NONE, -1, -1
        return ErrorCode.NONE, int(found[1]), int(found[0])
    if ts < 0:
        return ErrorCode.INVALID_REQUEST, -1, -1
    hit = plog.offset_for_timestamp(ts)
    if hit is None:
        return ErrorCode.NONE, -1, -1
    offset, found_ts = hit
    return ErrorCode.NONE, int(found_ts), int(offset)


def handle(broker: Broker, ctx: RequestContext, request: Any) -> Any:
    messages = broker.registry.lookup(ctx.api_key, ctx.api_version)
    resp_t = messages.response_type
    topic_t = child(resp_t, "topics")
    part_t = child(topic_t, "partitions")
    read_committed = ctx.api_version >= 2 and int(getattr(request, "isolation_level", 0)) == 1
    topics = []
    for t in request.topics:
        parts = []
        for p in t.partitions:
            code, ts, offset = _lookup(
                broker, t.name, int(p.partition_index), int(p.timestamp), ctx.api_version, read_committed
            )
            parts.append(
                make(
                    part_t,
                    partition_index=p.partition_index,
                    error_code=err(code),
                    timestamp=ts,
                    offset=offset,
                    leader_epoch=-1,
                )
            )
        topics.append(make(topic_t, name=t.name, partitions=tuple(parts)))
    return make(resp_t, throttle_time=NO_THROTTLE, topics=tuple(topics))
