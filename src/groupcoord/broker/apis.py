"""The broker's dispatch table: one line per API.

To add an API: write its handler (``handle(broker, ctx, request) -> response | None |
awaitable``) and add one :class:`ApiRoute` line to :data:`ROUTES` (or pass extra routes to
:func:`build_dispatcher`). ApiVersions then advertises it with exactly that version range.
Version ranges cover what confluent-kafka, kafka-python and aiokafka send (reference §3).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from groupcoord.broker import (
    api_versions,
    describe_cluster,
    describe_configs,
    fetch,
    init_producer_id,
    list_offsets,
    metadata,
    produce,
    topics,
)
from groupcoord.broker.state import Broker
from groupcoord.server.dispatch import Dispatcher, Handler


@dataclass(frozen=True, slots=True, kw_only=True)
class ApiRoute:
    api_key: int
    min_version: int
    max_version: int
    handler: Handler[Any]
    #: requests of one overlap class may wait alongside each other (``server.dispatch``)
    overlap: str | None = None


ROUTES: list[ApiRoute] = [
    # Produce: appends are done (and readable) before the handler returns; only the fsync of
    # acks=-1 is awaited, so pipelined produces may wait for their fsyncs together.
    ApiRoute(api_key=0, min_version=3, max_version=10, handler=produce.handle, overlap="produce"),  # Produce
    ApiRoute(api_key=1, min_version=4, max_version=16, handler=fetch.handle),  # Fetch
    ApiRoute(api_key=2, min_version=1, max_version=9, handler=list_offsets.handle),  # ListOffsets
    ApiRoute(api_key=3, min_version=0, max_version=12, handler=metadata.handle),  # Metadata
    ApiRoute(api_key=18, min_version=0, max_version=4, handler=api_versions.handle),  # ApiVersions
    ApiRoute(api_key=19, min_version=2, max_version=7, handler=topics.create_topics),  # CreateTopics
    ApiRoute(api_key=20, min_version=1, max_version=6, handler=topics.delete_topics),  # DeleteTopics
    ApiRoute(api_key=22, min_version=0, max_version=4, handler=init_producer_id.handle),  # InitProducerId
    ApiRoute(api_key=32, min_version=1, max_version=4, handler=describe_configs.handle),  # DescribeConfigs
    ApiRoute(api_key=37, min_version=0, max_version=3, handler=topics.create_partitions),  # CreatePartitions
    ApiRoute(api_key=60, min_version=0, max_version=1, handler=describe_cluster.handle),  # DescribeCluster
]


def build_dispatcher(broker: Broker, extra: Iterable[ApiRoute] = ()) -> Dispatcher[Broker]:
    dispatcher: Dispatcher[Broker] = Dispatcher(broker)
    for route in [*ROUTES, *extra]:
        dispatcher.add(
            route.api_key, route.min_version, route.max_version, route.handler, overlap=route.overlap
        )
    broker.dispatcher = dispatcher
    return dispatcher
