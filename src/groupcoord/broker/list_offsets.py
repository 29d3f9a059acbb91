"""ListOffsets (key 2): latest (-1), earliest (-2), max timestamp (-3, v7+), or by timestamp.

Version 0 is answered as Kafka 3.9 answers it (``KafkaApis.handleListOffsetRequestV0``,
``UnifiedLog.legacyFetchOffsetsBefore``): up to ``max_num_offsets`` offsets, newest first,
taken from the segments' base offsets plus the log end offset when the active segment holds
data; by timestamp, from the segments whose file was last modified at or before it.
"""

from __future__ import annotations

import os
from typing import Any

from groupcoord.broker.acl import Op, Resource
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


def legacy_offsets(
    broker: Broker, topic: str, partition: int, ts: int, max_num: int, consumer: bool
) -> list[int]:
    """The ``old_style_offsets`` of a v0 answer (raises KeyError for an unknown partition)."""
    plog = broker.logs.partition(topic, partition)
    start, end = plog.log_start_offset, plog.log_end_offset
    bases = plog.segment_base_offsets()
    files = plog.segment_files()
    # (offset, last modified ms) per segment, plus the log end "now" when the active segment has data
    points: list[tuple[int, int]] = []
    for base, path in zip(bases, files, strict=True):
        try:
            modified = os.stat(path).st_mtime_ns // 1_000_000
        except OSError:
            modified = 0
        points.append((max(base, start), modified))
    if end > bases[-1]:
        points.append((end, broker.clock.now_ms()))
    if ts == LATEST:
        index = len(points) - 1
    elif ts == EARLIEST:
        index = 0
    else:
        index = len(points) - 1
        while index >= 0 and points[index][1] > ts:
            index -= 1
    count = min(max_num, index + 1)
    found = sorted((points[index - j][0] for j in range(count)), reverse=True)
    if consumer:
        # a consumer never sees an offset above the high watermark (Partition.legacyFetchOffsetsForTimestamp)
        hw = plog.high_watermark
        if any(o > hw for o in found):
            found = [hw, *(o for o in found if o <= hw)]
    return found


def _handle_v0(broker: Broker, request: Any, resp_t: type[Any]) -> Any:
    topic_t = child(resp_t, "topics")
    part_t = child(topic_t, "partitions")
    consumer = int(request.replica_id) == -1
    topics = []
    for t in request.topics:
        parts = []
        for p in t.partitions:
            ts = int(p.timestamp)
            offsets: list[int] = []
            if ts < EARLIEST:
                # v0 knows only latest (-1) and earliest (-2) among the negative timestamps
                code = ErrorCode.UNSUPPORTED_VERSION
            else:
                try:
                    offsets = legacy_offsets(
                        broker, t.name, int(p.partition_index), ts, int(p.max_num_offsets), consumer
                    )
                    code = ErrorCode.NONE
                except KeyError:
                    code = ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
            parts.append(
                make(
                    part_t,
                    partition_index=p.partition_index,
                    error_code=err(code),
                    old_style_offsets=tuple(offsets),
                )
            )
        topics.append(make(topic_t, name=t.name, partitions=tuple(parts)))
    return make(resp_t, topics=tuple(topics))


def handle(broker: Broker, ctx: RequestContext, request: Any) -> Any:
    if ctx.api_version == 0:
        return _handle_v0(broker, request, broker.registry.lookup(ctx.api_key, 0).response_type)
    messages = broker.registry.lookup(ctx.api_key, ctx.api_version)
    resp_t = messages.response_type
    topic_t = child(resp_t, "topics")
    part_t = child(topic_t, "partitions")
    read_committed = ctx.api_version >= 2 and int(getattr(request, "isolation_level", 0)) == 1
    topics = []
    for t in request.topics:
        parts = []
        # KafkaApis.handleListOffsetRequestV1AndAbove: DESCRIBE on each topic
        allowed = broker.allowed(ctx, Op.DESCRIBE, Resource.TOPIC, t.name)
        for p in t.partitions:
            index = int(p.partition_index)
            # several brokers in one process: the leader answers, at the leader epoch the client
            # states (v4+; Partition.fetchOffsetForTimestamp); not a follower (only the
            # debugging replica id may ask one, which clients never use)
            led = broker.leadership(ctx.node_id, t.name, index, int(getattr(p, "current_leader_epoch", -1)))
            if not allowed:
                code, ts, offset = ErrorCode.TOPIC_AUTHORIZATION_FAILED, -1, -1
            elif led is not ErrorCode.NONE:
                code, ts, offset = led, -1, -1
            else:
                code, ts, offset = _lookup(
                    broker, t.name, index, int(p.timestamp), ctx.api_version, read_committed
                )
            epoch = -1
            if broker.cluster is not None and code is ErrorCode.NONE and offset >= 0:
                epoch = broker.cluster.epoch_of(t.name, index, offset)
            parts.append(
                make(
                    part_t,
                    partition_index=p.partition_index,
                    error_code=err(code),
                    timestamp=ts,
                    offset=offset,
                    leader_epoch=epoch,
                )
            )
        topics.append(make(topic_t, name=t.name, partitions=tuple(parts)))
    return make(resp_t, throttle_time=NO_THROTTLE, topics=tuple(topics))
