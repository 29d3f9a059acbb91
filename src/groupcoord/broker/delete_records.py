"""DeleteRecords (key 21): move a partition's log start offset forward.

As Kafka's ``ReplicaManager.deleteRecords`` and ``Partition.deleteRecordsOnLeader``: offset -1
means the high watermark; an offset above the high watermark (or another negative one) is
OFFSET_OUT_OF_RANGE; an offset at or below the current log start changes nothing. The answer's
``low_watermark`` is the partition's log start offset afterwards. Records of an internal topic
cannot be deleted (INVALID_TOPIC_EXCEPTION), nor those of a topic whose cleanup.policy does not
include ``delete`` (POLICY_VIOLATION).

The new log start offset is written to the partition's log-start checkpoint before the answer
(so it holds across a restart), rolled segments wholly below it are deleted at once, fetches
below it get OFFSET_OUT_OF_RANGE and ListOffsets' earliest answers it.
"""

from __future__ import annotations

import logging
from typing import Any

from groupcoord.broker.state import Broker
from groupcoord.errors import ErrorCode
from groupcoord.handling import RequestContext
from groupcoord.protocol.entities import NO_THROTTLE, child, err, make
from groupcoord.storage.log import OffsetOutOfRangeError
from groupcoord.storage.manager import UnknownTopicOrPartitionError

log = logging.getLogger(__name__)

#: DeleteRecordsRequest.HIGH_WATERMARK: "delete everything up to the high watermark".
HIGH_WATERMARK = -1


def _delete_one(broker: Broker, topic: str, partition: int, offset: int) -> tuple[ErrorCode, int]:
    """(error, low watermark) for one partition."""
    meta = broker.logs.topics_view.get(topic)
    if meta is None:
        return ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, -1
    try:
        plog = broker.logs.partition(topic, partition)
    except UnknownTopicOrPartitionError:
        return ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, -1
    if meta.internal:
        return ErrorCode.INVALID_TOPIC_EXCEPTION, -1
    if not plog.config.delete:
        return ErrorCode.POLICY_VIOLATION, -1
    target = plog.high_watermark if offset == HIGH_WATERMARK else offset
    if target < 0 or target > plog.high_watermark:
        return ErrorCode.OFFSET_OUT_OF_RANGE, -1
    before = plog.log_start_offset
    try:
        start = plog.delete_records_before(target)
    except OffsetOutOfRangeError:
        return ErrorCode.OFFSET_OUT_OF_RANGE, -1
    if start != before:
        log.info(
            "deleted records of %s-%d below offset %d (log start was %d)", topic, partition, start, before
        )
    return ErrorCode.NONE, start


def handle(broker: Broker, ctx: RequestContext, request: Any) -> Any:
    resp_t = broker.registry.lookup(ctx.api_key, ctx.api_version).response_type
    topic_t = child(resp_t, "topics")
    part_t = child(topic_t, "partitions")
    topics = []
    for t in request.topics:
        parts = []
        for p in t.partitions:
            code, low = _delete_one(broker, t.name, int(p.partition_index), int(p.offset))
            parts.append(
                make(part_t, partition_index=p.partition_index, low_watermark=low, error_code=err(code))
            )
        topics.append(make(topic_t, name=t.name, partitions=tuple(parts)))
    return make(resp_t, throttle_time=NO_THROTTLE, topics=tuple(topics))
