"""CreateTopics (19), DeleteTopics (20), CreatePartitions (37).

Single-broker rules: replication factor -1 or 1; manual assignments may only name this
broker. ``num_partitions = -1`` takes ``num.partitions``. Topic configs are checked against
the topic config table before anything is created; ``validate_only`` checks everything and
creates nothing.
"""

from __future__ import annotations

import datetime
import logging
import uuid
from typing import Any

from groupcoord.broker.cluster import ClusterMetadata
from groupcoord.broker.state import Broker
from groupcoord.errors import ErrorCode
from groupcoord.handling import RequestContext
from groupcoord.protocol.entities import NO_THROTTLE, child, err, has_field, make
from groupcoord.storage.log_config import (
    InvalidConfigError,
    describe_topic_configs,
    log_config_for,
    validate_topic_configs,
)
from groupcoord.storage.manager import InvalidTopicError, PartitionFilesError, TopicExistsError

log = logging.getLogger(__name__)

CREATE_TOPICS_KEY = 19
DELETE_TOPICS_KEY = 20
CREATE_PARTITIONS_KEY = 37

_ZERO_UUID = uuid.UUID(int=0)

#: One directory and open files per partition, created synchronously on the event loop: a single
#: request asking for millions would stall every client, so requests above this are refused.
MAX_PARTITIONS_PER_TOPIC = 10_000


#: ThrottlingQuotaExceededException's message (Errors.THROTTLING_QUOTA_EXCEEDED)
THROTTLED_MESSAGE = "The throttling quota has been exceeded."


class _NoQuota:
    """No controller_mutation_rate applies (Kafka's ``UnboundedControllerMutationQuota``)."""

    def record(self, permits: float) -> bool:
        return True

    def throttle_ms(self) -> int:
        return 0


def _mutation_quota(broker: Broker, ctx: RequestContext) -> Any:
    """The request's controller mutation quota (``server.client_quotas.MutationQuota``)."""
    new = broker.mutation_quota
    return _NoQuota() if new is None else new(ctx)


def _throttle_time(quota: Any) -> datetime.timedelta:
    ms = quota.throttle_ms()
    return datetime.timedelta(milliseconds=ms) if ms else NO_THROTTLE


class _Fail(Exception):
    def __init__(self, code: ErrorCode, message: str) -> None:
        super().__init__(message)
        self.code = code
        self.message = message


def _check_new_topic(broker: Broker, t: Any) -> tuple[int, dict[str, str]]:
    """(partition count, configs) for a valid CreateTopics entry; raises :class:`_Fail`.
    With several brokers (``broker.cluster``) the replication factor may be up to their number,
    and an explicit assignment names live brokers (Kafka's ``ReplicationControlManager``)."""
    cluster = broker.cluster
    nodes = cluster.node_ids if cluster is not None else (broker.node_id,)
    name: str = t.name
    assignments = tuple(t.assignments or ())
    num_partitions = int(t.num_partitions)
    replication = int(t.replication_factor)
    if assignments:
        if num_partitions != -1 or replication != -1:
            raise _Fail(
                ErrorCode.INVALID_REQUEST,
                "Both numPartitions or replicationFactor and replicasAssignments were set.",
            )
        indexes = sorted(int(a.partition_index) for a in assignments)
        if indexes != list(range(len(indexes))):
            raise _Fail(ErrorCode.INVALID_REPLICA_ASSIGNMENT, "Partitions must be numbered 0..n-1.")
        for a in assignments:
            ids = [int(b) for b in a.broker_ids]
            if cluster is None and ids != [broker.node_id]:
                raise _Fail(
                    ErrorCode.INVALID_REPLICA_ASSIGNMENT,
                    f"Partition {a.partition_index} must be assigned to broker {broker.node_id} only.",
                )
            if cluster is not None and (not ids or len(set(ids)) != len(ids) or not set(ids) <= set(nodes)):
                raise _Fail(
                    ErrorCode.INVALID_REPLICA_ASSIGNMENT,
                    f"Partition {a.partition_index} has an invalid replica assignment {ids}: "
                    f"brokers are {list(nodes)}.",
                )
        num_partitions = len(assignments)
    else:
        if num_partitions == -1:
            num_partitions = broker.config.num_partitions
        if num_partitions < 1:
            raise _Fail(ErrorCode.INVALID_PARTITIONS, "Number of partitions must be larger than 0.")
        if num_partitions > MAX_PARTITIONS_PER_TOPIC:
            raise _Fail(
                ErrorCode.INVALID_PARTITIONS,
                f"groupcoord supports at most {MAX_PARTITIONS_PER_TOPIC} partitions per topic.",
            )
        alive = len(cluster.alive) if cluster is not None else 1
        if replication == 0 or replication < -1:
            raise _Fail(
                ErrorCode.INVALID_REPLICATION_FACTOR,
                "Replication factor must be larger than 0, or -1 to use the default value.",
            )
        if replication > alive:
            raise _Fail(
                ErrorCode.INVALID_REPLICATION_FACTOR,
                f"Unable to replicate the partition {replication} time(s): The target replication factor "
                f"of {replication} cannot be reached because only {alive} broker(s) are registered.",
            )
    configs: dict[str, str] = {}
    for c in t.configs:
        if c.value is None:
            raise _Fail(ErrorCode.INVALID_CONFIG, f"Null value not supported for topic config {c.name}")
        configs[c.name] = c.value
    bad = validate_topic_configs(configs)
    if bad is not None:
        raise _Fail(ErrorCode.INVALID_CONFIG, bad[1])
    try:
        log_config_for(broker.config).with_overrides(configs)
    except InvalidConfigError as exc:
        raise _Fail(ErrorCode.INVALID_CONFIG, exc.message or str(exc)) from None
    if name in broker.logs.topics_view:
        raise _Fail(ErrorCode.TOPIC_ALREADY_EXISTS, f"Topic '{name}' already exists.")
    return num_partitions, configs


def _replication(broker: Broker, t: Any) -> int:
    """The replication factor a valid CreateTopics entry gets (1 with one broker)."""
    cluster = broker.cluster
    if cluster is None:
        return 1
    if t.assignments:
        return len(next(iter(t.assignments)).broker_ids)
    rf = int(t.replication_factor)
    return rf if rf > 0 else cluster.replication_factor(t.name)


def create_topics(broker: Broker, ctx: RequestContext, request: Any) -> Any:
    messages = broker.registry.lookup(ctx.api_key, ctx.api_version)
    resp_t = messages.response_type
    topic_t = child(resp_t, "topics")
    config_t = child(topic_t, "configs") if has_field(topic_t, "configs") else None
    counts: dict[str, int] = {}
    for t in request.topics:
        counts[t.name] = counts.get(t.name, 0) + 1
    quota = _mutation_quota(broker, ctx)
    out = []
    for t in request.topics:
        topic_id: uuid.UUID = _ZERO_UUID
        partitions = -1
        replication = -1
        configs_out: tuple[Any, ...] | None = None
        try:
            if counts[t.name] > 1:
                raise _Fail(
                    ErrorCode.INVALID_REQUEST,
                    f"Create topics request from client contains a duplicate topic {t.name}.",
                )
            num_partitions, configs = _check_new_topic(broker, t)
            replication = _replication(broker, t)
            if getattr(request, "validate_only", False):  # v1+
                meta_configs = configs
            else:
                # the quota is charged only for a topic that would be created, before it is
                # (ReplicationControlManager.createTopic: existence first, then the quota)
                if t.name in broker.logs.topics_view:
                    raise _Fail(ErrorCode.TOPIC_ALREADY_EXISTS, f"Topic '{t.name}' already exists.")
                if not quota.record(num_partitions):
                    raise _Fail(ErrorCode.THROTTLING_QUOTA_EXCEEDED, THROTTLED_MESSAGE)
                if broker.cluster is not None:
                    broker.cluster.forget_topic(t.name)
                    broker.cluster.set_replication_factor(t.name, replication)
                    for a in t.assignments or ():
                        broker.cluster.assign(
                            t.name, int(a.partition_index), tuple(int(b) for b in a.broker_ids)
                        )
                try:
                    meta = broker.logs.create_topic(t.name, num_partitions, configs)
                except TopicExistsError:
                    raise _Fail(ErrorCode.TOPIC_ALREADY_EXISTS, f"Topic '{t.name}' already exists.") from None
                except InvalidTopicError as exc:
                    raise _Fail(ErrorCode.INVALID_TOPIC_EXCEPTION, str(exc)) from None
                except PartitionFilesError as exc:
                    if broker.cluster is not None:
                        broker.cluster.forget_topic(t.name)
                    log.error("topic %s not created: %s", t.name, exc.message)
                    raise _Fail(exc.code, f"Topic '{t.name}' not created: {exc.message}") from None
                log.info("created topic %s (%d partitions, configs %s)", t.name, num_partitions, configs)
                topic_id = meta.topic_id
                meta_configs = dict(meta.configs)
            partitions = num_partitions
            if config_t is not None:
                configs_out = tuple(
                    make(
                        config_t,
                        name=e.name,
                        value=e.value,
                        read_only=e.read_only,
                        config_source=e.source,
                        is_sensitive=e.is_sensitive,
                    )
                    for e in describe_topic_configs(broker.config, meta_configs)
                )
            code, message = ErrorCode.NONE, None
        except _Fail as fail:
            code, message = fail.code, fail.message
            if code == ErrorCode.TOPIC_ALREADY_EXISTS:
                existing = broker.logs.topics_view.get(t.name)
                topic_id = existing.topic_id if existing is not None else _ZERO_UUID
        except InvalidTopicError as exc:
            code, message = ErrorCode.INVALID_TOPIC_EXCEPTION, str(exc)
        out.append(
            make(
                topic_t,
                name=t.name,
                topic_id=topic_id,
                error_code=err(code),
                error_message=message,
                topic_config_error_code=0,
                num_partitions=partitions,
                replication_factor=replication,
                configs=configs_out,
            )
        )
    return make(resp_t, throttle_time=_throttle_time(quota), topics=tuple(out))


def delete_topics(broker: Broker, ctx: RequestContext, request: Any) -> Any:
    messages = broker.registry.lookup(ctx.api_key, ctx.api_version)
    resp_t = messages.response_type
    result_t = child(resp_t, "responses")
    wanted: list[tuple[str | None, uuid.UUID | None]]
    if has_field(type(request), "topics"):
        wanted = [(t.name, t.topic_id) for t in request.topics]
    else:
        wanted = [(name, None) for name in request.topic_names]
    quota = _mutation_quota(broker, ctx)
    out = []
    for name, topic_id in wanted:
        code, message = ErrorCode.NONE, None
        meta = None
        if name is None:
            meta = broker.topic_by_id(topic_id)
            if meta is None:
                code, message = ErrorCode.UNKNOWN_TOPIC_ID, "This server does not host this topic ID."
        else:
            meta = broker.logs.topics_view.get(name)
            if meta is None:
                code, message = (
                    ErrorCode.UNKNOWN_TOPIC_OR_PARTITION,
                    "This server does not host this topic-partition.",
                )
        if meta is not None:
            if not broker.config.delete_topic_enable:
                # before v3 Kafka answers INVALID_REQUEST (ControllerApis.deleteTopics)
                old = ctx.api_version < 3
                code = ErrorCode.INVALID_REQUEST if old else ErrorCode.TOPIC_DELETION_DISABLED
                message = "Topic deletion is disabled."
            elif meta.internal:
                code, message = (
                    ErrorCode.INVALID_TOPIC_EXCEPTION,
                    f"Internal topic {meta.name} cannot be deleted.",
                )
            elif not quota.record(meta.partitions):
                code, message = ErrorCode.THROTTLING_QUOTA_EXCEEDED, THROTTLED_MESSAGE
            else:
                broker.logs.delete_topic(meta.name)
                broker.forget_topic(meta.name)
                log.info("deleted topic %s", meta.name)
        out.append(
            make(
                result_t,
                name=meta.name if meta is not None else name,
                topic_id=meta.topic_id if meta is not None else (topic_id or _ZERO_UUID),
                error_code=err(code),
                error_message=message,
            )
        )
    return make(resp_t, throttle_time=_throttle_time(quota), responses=tuple(out))


def _bad_new_assignments(cluster: ClusterMetadata, topic: str, new: int, assignments: Any) -> str | None:
    """Why CreatePartitions' assignments of the ``new`` partitions are refused (Kafka's
    ``ReplicationControlManager.createPartitions``), with several brokers; None if they are not."""
    if len(assignments) != new:
        return (
            f"Attempted to add {new} additional partition(s), but only {len(assignments)} "
            "assignment(s) were specified."
        )
    rf = len(cluster.partition(topic, 0).replicas)
    for a in assignments:
        ids = [int(b) for b in a.broker_ids]
        if len(set(ids)) != len(ids) or not set(ids) <= set(cluster.node_ids):
            return f"The manual partition assignment includes an unknown or duplicate broker: {ids}."
        if len(ids) != rf:
            return (
                f"The manual partition assignment includes a partition with {len(ids)} replica(s), "
                f"but this is not consistent with previous partitions, which have {rf} replica(s)."
            )
    return None


def create_partitions(broker: Broker, ctx: RequestContext, request: Any) -> Any:
    messages = broker.registry.lookup(ctx.api_key, ctx.api_version)
    resp_t = messages.response_type
    result_t = child(resp_t, "results")
    quota = _mutation_quota(broker, ctx)
    out = []
    for t in request.topics:
        code, message = ErrorCode.NONE, None
        meta = broker.logs.topics_view.get(t.name)
        count = int(t.count)
        if meta is None:
            code, message = (
                ErrorCode.UNKNOWN_TOPIC_OR_PARTITION,
                "This server does not host this topic-partition.",
            )
        elif meta.internal:
            code, message = ErrorCode.INVALID_REQUEST, f"Cannot add partitions to internal topic {t.name}."
        elif count < meta.partitions:
            code, message = (
                ErrorCode.INVALID_PARTITIONS,
                f"Topic currently has {meta.partitions} partitions, "
                f"which is higher than the requested {count}.",
            )
        elif count == meta.partitions:
            code, message = ErrorCode.INVALID_PARTITIONS, f"Topic already has {meta.partitions} partitions."
        elif count > MAX_PARTITIONS_PER_TOPIC:
            code, message = (
                ErrorCode.INVALID_PARTITIONS,
                f"groupcoord supports at most {MAX_PARTITIONS_PER_TOPIC} partitions per topic.",
            )
        elif (
            broker.cluster is not None
            and t.assignments is not None
            and (bad := _bad_new_assignments(broker.cluster, t.name, count - meta.partitions, t.assignments))
        ):
            code, message = ErrorCode.INVALID_REPLICA_ASSIGNMENT, bad
        elif (
            broker.cluster is None
            and t.assignments is not None
            and (
                len(t.assignments) != count - meta.partitions
                or any([int(b) for b in a.broker_ids] != [broker.node_id] for a in t.assignments)
            )
        ):
            code, message = (
                ErrorCode.INVALID_REPLICA_ASSIGNMENT,
                f"Each new partition must be assigned to broker {broker.node_id} only.",
            )
        elif not request.validate_only and not quota.record(count - meta.partitions):
            code, message = ErrorCode.THROTTLING_QUOTA_EXCEEDED, THROTTLED_MESSAGE
        elif not request.validate_only:
            if broker.cluster is not None:
                for i, a in enumerate(t.assignments or ()):
                    broker.cluster.assign(t.name, meta.partitions + i, tuple(int(b) for b in a.broker_ids))
            try:
                broker.logs.create_partitions(t.name, count)
                log.info("topic %s now has %d partitions", t.name, count)
            except PartitionFilesError as exc:
                log.error("topic %s not grown to %d partitions: %s", t.name, count, exc.message)
                code, message = exc.code, f"Topic '{t.name}' not grown: {exc.message}"
        out.append(make(result_t, name=t.name, error_code=err(code), error_message=message))
    return make(resp_t, throttle_time=_throttle_time(quota), results=tuple(out))
