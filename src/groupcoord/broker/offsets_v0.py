"""OffsetCommit v0 and OffsetFetch v0: ZooKeeper's offsets, which a broker without ZooKeeper refuses.

In Kafka 3.9 version 0 of both APIs reads and writes the offsets a ZooKeeper-based broker kept
under ``/consumers/<group>/offsets`` (``KafkaApis.commitOffsetsToZookeeper``,
``handleOffsetFetchRequestFromZookeeper``), not the group coordinator's. A KRaft broker, which
groupcoord is (one node, no ZooKeeper), parses the request and answers every partition with
UNSUPPORTED_VERSION (``MetadataSupport.requireZkOrThrow``: "Unsupported when using a
Raft-based metadata quorum"); the connection stays open. An OffsetCommit v0 whose topics are
all unknown is answered UNKNOWN_TOPIC_OR_PARTITION first, as Kafka checks them before.

:func:`old_or` puts these in front of the coordinator's handlers for version 0 only.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from groupcoord.broker.state import Broker
from groupcoord.errors import ErrorCode
from groupcoord.handling import RequestContext
from groupcoord.protocol.entities import child, err, make, offset_commit_entities

Handler = Callable[[Broker, RequestContext, Any], Any]


def offset_commit_v0(broker: Broker, ctx: RequestContext, request: Any) -> Any:
    resp_t = broker.registry.lookup(ctx.api_key, ctx.api_version).response_type
    topics = broker.logs.topics_view

    def known(name: str, index: int) -> bool:
        meta = topics.get(name)
        return meta is not None and 0 <= index < meta.partitions

    any_known = any(known(t.name, int(p.partition_index)) for t in request.topics for p in t.partitions)
    code = ErrorCode.UNSUPPORTED_VERSION if any_known else ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
    return offset_commit_entities(resp_t, request, lambda _t, _p: code)


def offset_fetch_v0(broker: Broker, ctx: RequestContext, request: Any) -> Any:
    resp_t = broker.registry.lookup(ctx.api_key, ctx.api_version).response_type
    topic_t = child(resp_t, "topics")
    part_t = child(topic_t, "partitions")
    return make(
        resp_t,
        topics=tuple(
            make(
                topic_t,
                name=t.name,
                partitions=tuple(
                    make(
                        part_t,
                        partition_index=index,
                        committed_offset=-1,
                        metadata="",
                        error_code=err(ErrorCode.UNSUPPORTED_VERSION),
                    )
                    for index in t.partition_indexes
                ),
            )
            for t in request.topics
        ),
    )


class old_or:  # lower case: called as the function it used to be
    """A handler that answers version 0 with ``v0`` and every other version with ``current``.

    The dispatcher asks :meth:`for_version` once per version, so a request of version 1 or
    later goes straight to ``current``.
    """

    __slots__ = ("current", "v0")

    def __init__(self, v0: Handler, current: Handler) -> None:
        self.v0 = v0
        self.current = current

    def __call__(self, broker: Broker, ctx: RequestContext, request: Any) -> Any:
        if ctx.api_version == 0:
            return self.v0(broker, ctx, request)
        return self.current(broker, ctx, request)

    def for_version(self, version: int) -> Handler:
        return self.v0 if version == 0 else self.current
