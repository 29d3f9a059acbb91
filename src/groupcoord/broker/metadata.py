"""Metadata (key 3): brokers, cluster id, controller, topics with ids; with several brokers in one
process (``broker.cluster``) each partition's leader, leader epoch, replicas and ISR.

A topic that does not exist is created when the request allows it (v4+ flag; always for
older versions) and ``auto.create.topics.enable`` is on; it is answered at once with its
partitions, since creation here is synchronous.
"""

from __future__ import annotations

import logging
from typing import Any

from groupcoord.broker.acl import Resource
from groupcoord.broker.authorized_ops import NOT_REQUESTED, authorized_operations
from groupcoord.broker.cluster import ClusterMetadata
from groupcoord.broker.state import Broker
from groupcoord.errors import ErrorCode
from groupcoord.handling import RequestContext
from groupcoord.protocol.entities import NO_THROTTLE, child, err, has_field, make
from groupcoord.storage.manager import InvalidTopicError, TopicExistsError, TopicMeta

log = logging.getLogger(__name__)


_NULL_UUID = None


def _topic_entry(broker: Broker, topic_t: type[Any], meta: TopicMeta, ops: int = NOT_REQUESTED) -> Any:
    part_t = child(topic_t, "partitions")
    node = broker.node_id
    cluster = broker.cluster
    if cluster is not None:
        return make(
            topic_t,
            error_code=err(ErrorCode.NONE),
            name=meta.name,
            topic_id=meta.topic_id,
            is_internal=meta.internal,
            partitions=tuple(
                _cluster_partition(cluster, part_t, meta.name, p) for p in range(meta.partitions)
            ),
            topic_authorized_operations=ops,
        )
    partitions = tuple(
        make(
            part_t,
            error_code=err(ErrorCode.NONE),
            partition_index=p,
            leader_id=node,
            leader_epoch=-1,
            replica_nodes=(node,),
            isr_nodes=(node,),
            offline_replicas=(),
        )
        for p in range(meta.partitions)
    )
    return make(
        topic_t,
        error_code=err(ErrorCode.NONE),
        name=meta.name,
        topic_id=meta.topic_id,
        is_internal=meta.internal,
        partitions=partitions,
        topic_authorized_operations=ops,
    )


def _cluster_partition(cluster: ClusterMetadata, part_t: type[Any], topic: str, partition: int) -> Any:
    """One partition as Kafka's metadata cache answers it (``KRaftMetadataCache.partitionMetadata``):
    no leader is LEADER_NOT_AVAILABLE; replicas on stopped nodes are its offline replicas."""
    state = cluster.partition(topic, partition)
    return make(
        part_t,
        error_code=err(ErrorCode.NONE if state.leader >= 0 else ErrorCode.LEADER_NOT_AVAILABLE),
        partition_index=partition,
        leader_id=state.leader,
        leader_epoch=state.leader_epoch,
        replica_nodes=state.replicas,
        isr_nodes=tuple(state.isr),
        offline_replicas=tuple(r for r in state.replicas if not cluster.is_alive(r)),
    )


def brokers_entries(
    broker: Broker, broker_t: type[Any], listener: str, id_field: str = "node_id"
) -> tuple[Any, ...]:
    """The live brokers with their endpoint of ``listener`` and their rack (Metadata,
    DescribeCluster): only this broker without a cluster."""
    cluster = broker.cluster
    if cluster is None:
        host, port = broker.endpoint(listener)
        return (make(broker_t, **{id_field: broker.node_id}, host=host, port=port, rack=None),)
    out = []
    for node in cluster.node_ids:
        if not cluster.is_alive(node):
            continue
        host, port = broker.node_endpoint(node, listener)
        out.append(make(broker_t, **{id_field: node}, host=host, port=port, rack=cluster.racks.get(node)))
    return tuple(out)


def _error_entry(
    topic_t: type[Any], code: ErrorCode, name: str | None, topic_id: Any, ops: int = NOT_REQUESTED
) -> Any:
    import uuid

    return make(
        topic_t,
        error_code=err(code),
        name=name,
        topic_id=topic_id if topic_id is not None else uuid.UUID(int=0),
        is_internal=False,
        partitions=(),
        topic_authorized_operations=ops,
    )


def _by_id(entry: Any) -> bool:
    """Whether a requested topic is given by id (or by nothing) rather than by name."""
    topic_id = getattr(entry, "topic_id", None)
    return entry.name is None or (topic_id is not None and int(topic_id) != 0)


def handle(broker: Broker, ctx: RequestContext, request: Any) -> Any:
    messages = broker.registry.lookup(ctx.api_key, ctx.api_version)
    resp_t = messages.response_type
    topic_t = child(resp_t, "topics")
    broker_t = child(resp_t, "brokers")
    version = ctx.api_version

    requested = request.topics
    all_topics = requested is None or (version == 0 and len(requested) == 0)
    allow_auto = bool(getattr(request, "allow_auto_topic_creation", True))
    # KIP-430 (v8+): Kafka fills a topic's field for every topic named or listed (found, created
    # or not), never for an unknown topic id (KafkaApis.handleTopicMetadataRequest).
    topic_ops = (
        authorized_operations(Resource.TOPIC)
        if version >= 8 and getattr(request, "include_topic_authorized_operations", False)
        else NOT_REQUESTED
    )
    topics_out: list[Any] = []
    known = broker.logs.topics_view
    if not all_topics and version < 12 and any(_by_id(entry) for entry in requested):
        # Before v12 a topic is named, never identified (the response cannot carry a null name):
        # Kafka refuses the whole request (KafkaApis.handleTopicMetadataRequest) with every topic
        # answered INVALID_REQUEST, a null name as "" (MetadataRequest.getErrorResponse).
        invalid = tuple(
            _error_entry(
                topic_t, ErrorCode.INVALID_REQUEST, entry.name or "", getattr(entry, "topic_id", None)
            )
            for entry in requested
        )
        return make(
            resp_t, throttle_time=NO_THROTTLE, brokers=(), cluster_id=None, controller_id=-1, topics=invalid
        )
    if all_topics:
        for topic_name in sorted(known):
            topics_out.append(_topic_entry(broker, topic_t, known[topic_name], topic_ops))
    else:
        for entry in requested:
            name = getattr(entry, "name", None)
            topic_id = getattr(entry, "topic_id", None)
            if name is None and topic_id is not None and int(topic_id) != 0:
                meta = broker.topic_by_id(topic_id)
                if meta is None:
                    topics_out.append(_error_entry(topic_t, ErrorCode.UNKNOWN_TOPIC_ID, None, topic_id))
                else:
                    topics_out.append(_topic_entry(broker, topic_t, meta, topic_ops))
                continue
            if name is None:
                topics_out.append(_error_entry(topic_t, ErrorCode.INVALID_REQUEST, None, None))
                continue
            meta = known.get(name)
            if meta is None and allow_auto and broker.config.auto_create_topics_enable:
                try:
                    meta = broker.logs.create_topic(name, broker.config.num_partitions, {})
                    log.info("auto-created topic %s with %d partitions", name, meta.partitions)
                except TopicExistsError:
                    meta = broker.logs.topics_view.get(name)
                except InvalidTopicError:
                    topics_out.append(
                        _error_entry(topic_t, ErrorCode.INVALID_TOPIC_EXCEPTION, name, None, topic_ops)
                    )
                    continue
            if meta is None:
                topics_out.append(
                    _error_entry(topic_t, ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, name, None, topic_ops)
                )
            else:
                topics_out.append(_topic_entry(broker, topic_t, meta, topic_ops))

    brokers = brokers_entries(broker, broker_t, ctx.listener)
    values: dict[str, Any] = {
        "throttle_time": NO_THROTTLE,
        "brokers": brokers,
        "cluster_id": broker.cluster_id,
        "controller_id": broker.node_id if broker.cluster is None else broker.cluster.controller_id,
        "topics": tuple(topics_out),
    }
    if has_field(resp_t, "cluster_authorized_operations"):  # v8-10 (v11+: DescribeCluster)
        values["cluster_authorized_operations"] = (
            authorized_operations(Resource.CLUSTER)
            if getattr(request, "include_cluster_authorized_operations", False)
            else NOT_REQUESTED
        )
    return make(resp_t, **values)
