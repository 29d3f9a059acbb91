"""What each API requires of the authorizer, checked in front of its handler, with Kafka's
errors (``KafkaApis``, Kafka 3.9; the line of each check is cited in
``tests/security/test_authorization_matrix.py``).

The composition root wraps a route's handler with :func:`guarded` when ``authorizer.class.name``
is set; without an authorizer nothing is wrapped and nothing is checked, as in Kafka. Produce,
Fetch and ListOffsets check in their own handlers (``broker.produce``, ``broker.fetch``,
``broker.list_offsets``), per topic.

A guard answers a request that is wholly denied itself; a request that is partly denied (some
topics, groups or keys) goes to the handler without the denied parts, and the answer gets
Kafka's error for each of them added. The group APIs' guards are in ``broker.authz_groups``, the
refusals and the split every guard uses in ``broker.authz_answers``; here are the transaction,
topic and cluster guards and the table of all of them.
"""

from __future__ import annotations

import dataclasses
from typing import Any

from groupcoord.broker.acl import CLUSTER_NAME, Op, Resource
from groupcoord.broker.authorized_ops import principal_operations
from groupcoord.broker.authz_answers import (
    C,
    G,
    Guard,
    Handler,
    T,
    X,
    blank,
    replace_fields,
    response_entity,
    response_type,
    split,
    then,
)
from groupcoord.broker.authz_groups import (
    consumer_group_describe,
    consumer_group_heartbeat,
    delete_groups,
    describe_groups,
    find_coordinator,
    group_read,
    list_groups,
    offset_commit,
    offset_delete,
    offset_fetch,
    txn_offset_commit,
)
from groupcoord.broker.state import Broker
from groupcoord.errors import ErrorCode
from groupcoord.handling import RequestContext
from groupcoord.protocol.api_keys import ApiKey
from groupcoord.protocol.entities import child, err, has_field, make

__all__ = ["GUARDED_APIS", "guarded"]


# ---------------------------------------------------------------------- transactions
def _init_producer_id(broker: Broker, ctx: RequestContext, request: Any, proceed: Handler) -> Any:
    """InitProducerId (KafkaApis 2250, 2254): WRITE on the transactional id, else
    TRANSACTIONAL_ID_AUTHORIZATION_FAILED; without one, IDEMPOTENT_WRITE on the cluster or WRITE
    on some topic, else CLUSTER_AUTHORIZATION_FAILED."""
    tid = request.transactional_id
    if tid is not None:
        ok, code = broker.allowed(ctx, Op.WRITE, Resource.TRANSACTIONAL_ID, str(tid)), X
    else:
        authorizer = broker.authorizer
        ok = broker.allowed(
            ctx, Op.IDEMPOTENT_WRITE, Resource.CLUSTER, CLUSTER_NAME
        ) or authorizer.authorize_any(ctx.principal, ctx.client_host, Op.WRITE, Resource.TOPIC)
        code = C
    if ok:
        return proceed(broker, ctx, request)
    return blank(response_type(broker, ctx), error_code=err(code), producer_id=-1, producer_epoch=-1)


def _txn_write(broker: Broker, ctx: RequestContext, request: Any, proceed: Handler) -> Any:
    """EndTxn (KafkaApis 2300) and AddOffsetsToTxn (2626, then READ on the group, 2631): WRITE
    on the transactional id."""
    if not broker.allowed(ctx, Op.WRITE, Resource.TRANSACTIONAL_ID, str(request.transactional_id)):
        return blank(response_type(broker, ctx), error_code=err(X))
    group = getattr(request, "group_id", None)
    if group is not None and not broker.allowed(ctx, Op.READ, Resource.GROUP, str(group)):
        return blank(response_type(broker, ctx), error_code=err(G))
    return proceed(broker, ctx, request)


def _add_partitions_to_txn(broker: Broker, ctx: RequestContext, request: Any, proceed: Handler) -> Any:
    """AddPartitionsToTxn v0-v3 (KafkaApis 2557, 2567-2585): WRITE on the transactional id, else
    every partition TRANSACTIONAL_ID_AUTHORIZATION_FAILED; WRITE on each topic, else its
    partitions TOPIC_AUTHORIZATION_FAILED and every other partition OPERATION_NOT_ATTEMPTED."""
    tid = str(request.v3_and_below_transactional_id)
    topics = list(request.v3_and_below_topics)
    if broker.allowed(ctx, Op.WRITE, Resource.TRANSACTIONAL_ID, tid):
        denied = {
            str(t.name) for t in topics if not broker.allowed(ctx, Op.WRITE, Resource.TOPIC, str(t.name))
        }
        if not denied:
            return proceed(broker, ctx, request)

        def code(name: str) -> ErrorCode:
            return T if name in denied else ErrorCode.OPERATION_NOT_ATTEMPTED
    else:

        def code(name: str) -> ErrorCode:
            return X

    resp_t = response_type(broker, ctx)
    topic_t = child(resp_t, "results_by_topic_v3_and_below")
    part_t = child(topic_t, "results_by_partition")
    results = tuple(
        make(
            topic_t,
            name=t.name,
            results_by_partition=tuple(
                make(part_t, partition_index=p, partition_error_code=err(code(str(t.name))))
                for p in t.partitions
            ),
        )
        for t in topics
    )
    return blank(resp_t, results_by_topic_v3_and_below=results)


def _describe_transactions(broker: Broker, ctx: RequestContext, request: Any, proceed: Handler) -> Any:
    """DescribeTransactions (KafkaApis 3723-3735): DESCRIBE on each transactional id, else
    TRANSACTIONAL_ID_AUTHORIZATION_FAILED; of a transaction's partitions only those of topics the
    principal may DESCRIBE are listed."""
    resp_t = response_type(broker, ctx)
    state_t = child(resp_t, "transaction_states")
    ids = [str(i) for i in request.transactional_ids]
    allowed = [i for i in ids if broker.allowed(ctx, Op.DESCRIBE, Resource.TRANSACTIONAL_ID, i)]
    denied = [blank(state_t, transactional_id=i, error_code=err(X)) for i in ids if i not in allowed]
    if not allowed:
        return blank(resp_t, transaction_states=tuple(denied))

    def patch(r: Any) -> Any:
        states = tuple(
            dataclasses.replace(
                st,
                topics=tuple(
                    t for t in st.topics if broker.allowed(ctx, Op.DESCRIBE, Resource.TOPIC, str(t.topic))
                ),
            )
            for st in r.transaction_states
        )
        return dataclasses.replace(r, transaction_states=(*states, *denied))

    result = proceed(broker, ctx, replace_fields(request, transactional_ids=tuple(allowed)))
    return then(broker, ctx, result, patch)


def _list_transactions(broker: Broker, ctx: RequestContext, request: Any, proceed: Handler) -> Any:
    """ListTransactions (KafkaApis 3758): only the transactional ids the principal may DESCRIBE."""

    def patch(r: Any) -> Any:
        return dataclasses.replace(
            r,
            transaction_states=tuple(
                s
                for s in r.transaction_states
                if broker.allowed(ctx, Op.DESCRIBE, Resource.TRANSACTIONAL_ID, str(s.transactional_id))
            ),
        )

    return then(broker, ctx, proceed(broker, ctx, request), patch)


# ---------------------------------------------------------------------- topics and cluster
def _metadata(
    broker: Broker, ctx: RequestContext, request: Any, proceed: Handler, refused: frozenset[str] = frozenset()
) -> Any:
    """Metadata (KafkaApis 1285-1318, 1337, 1348): only the topics the principal may DESCRIBE
    (named ones it may not: TOPIC_AUTHORIZATION_FAILED); auto-creation needs CREATE on the
    cluster or the topic (else TOPIC_AUTHORIZATION_FAILED); the authorized-operations fields when
    asked."""
    named = request.topics is not None
    auto = bool(getattr(request, "allow_auto_topic_creation", False))
    may_create_all = broker.allowed(ctx, Op.CREATE, Resource.CLUSTER, CLUSTER_NAME)
    create_denied: set[str] = set(refused)  # missing topics the principal may not create
    if named and auto and not may_create_all:
        existing = broker.logs.topics_view
        for t in request.topics:
            name = t.name
            if (
                name is not None
                and name not in existing
                and not broker.allowed(ctx, Op.CREATE, Resource.TOPIC, name)
            ):
                create_denied.add(str(name))
        if create_denied:
            creatable = [t for t in request.topics if t.name is not None and str(t.name) not in create_denied]
            if len(creatable) < len(request.topics) and any(str(t.name) not in existing for t in creatable):
                # the topics it may create are auto-created, the others not: ask for them apart
                return _metadata_split(broker, ctx, request, proceed, creatable)
            request = replace_fields(request, allow_auto_topic_creation=False)
    include_topic_ops = bool(getattr(request, "include_topic_authorized_operations", False))
    include_cluster_ops = bool(getattr(request, "include_cluster_authorized_operations", False))

    def topic_ops(name: str) -> int:
        return principal_operations(broker.authorizer, ctx.principal, ctx.client_host, Resource.TOPIC, name)

    def patch(r: Any) -> Any:
        topics = []
        for t in r.topics:
            name = str(t.name)
            if not broker.allowed(ctx, Op.DESCRIBE, Resource.TOPIC, name):
                if named:
                    topics.append(dataclasses.replace(t, error_code=err(T), partitions=(), is_internal=False))
                continue
            if name in create_denied and int(t.error_code) == ErrorCode.UNKNOWN_TOPIC_OR_PARTITION:
                t = dataclasses.replace(t, error_code=err(T))
            if include_topic_ops and has_field(type(t), "topic_authorized_operations"):
                t = dataclasses.replace(t, topic_authorized_operations=topic_ops(name))
            topics.append(t)
        changes: dict[str, Any] = {"topics": tuple(topics)}
        if include_cluster_ops and has_field(type(r), "cluster_authorized_operations"):
            changes["cluster_authorized_operations"] = (
                principal_operations(
                    broker.authorizer, ctx.principal, ctx.client_host, Resource.CLUSTER, CLUSTER_NAME
                )
                if broker.allowed(ctx, Op.DESCRIBE, Resource.CLUSTER, CLUSTER_NAME)
                else 0
            )
        return dataclasses.replace(r, **changes)

    return then(broker, ctx, proceed(broker, ctx, request), patch)


def _metadata_split(
    broker: Broker, ctx: RequestContext, request: Any, proceed: Handler, creatable: list[Any]
) -> Any:
    """Metadata where some missing topics may be auto-created and others may not: the first
    asked for with auto-creation, the second without, the answer in the request's order."""
    rest = [t for t in request.topics if t not in creatable]
    first = _metadata(broker, ctx, replace_fields(request, topics=tuple(creatable)), proceed)
    refused = frozenset(str(t.name) for t in rest)
    second = _metadata(
        broker,
        ctx,
        replace_fields(request, topics=tuple(rest), allow_auto_topic_creation=False),
        proceed,
        refused,
    )
    first, second = response_entity(broker, ctx, first), response_entity(broker, ctx, second)
    by_name = {str(t.name): t for t in (*first.topics, *second.topics)}
    topics = tuple(by_name[str(t.name)] for t in request.topics if str(t.name) in by_name)
    return dataclasses.replace(first, topics=topics)


def _describe_cluster(broker: Broker, ctx: RequestContext, request: Any, proceed: Handler) -> Any:
    """DescribeCluster (``AuthHelper.computeDescribeClusterResponse``): no error; the cluster's
    authorized operations when asked and DESCRIBE is allowed, else 0."""
    if not getattr(request, "include_cluster_authorized_operations", False):
        return proceed(broker, ctx, request)
    ops = (
        principal_operations(
            broker.authorizer, ctx.principal, ctx.client_host, Resource.CLUSTER, CLUSTER_NAME
        )
        if broker.allowed(ctx, Op.DESCRIBE, Resource.CLUSTER, CLUSTER_NAME)
        else 0
    )
    return then(
        broker,
        ctx,
        proceed(broker, ctx, request),
        lambda r: dataclasses.replace(r, cluster_authorized_operations=ops),
    )


def _create_topics(broker: Broker, ctx: RequestContext, request: Any, proceed: Handler) -> Any:
    """CreateTopics (KafkaApis 1966, 1983, 2001): CREATE on the cluster, else on each topic,
    else TOPIC_AUTHORIZATION_FAILED."""
    if broker.allowed(ctx, Op.CREATE, Resource.CLUSTER, CLUSTER_NAME):
        return proceed(broker, ctx, request)
    allowed = [t for t in request.topics if broker.allowed(ctx, Op.CREATE, Resource.TOPIC, str(t.name))]
    return split(
        broker, ctx, request, proceed, "topics", allowed, "topics",
        lambda topic_t, t: blank(
            topic_t, name=t.name, error_code=err(T), error_message=None, topic_config_error_code=err(T)
        ),
    )  # fmt: skip


def _delete_topics(broker: Broker, ctx: RequestContext, request: Any, proceed: Handler) -> Any:
    """DeleteTopics (KafkaApis 2133-2150): DESCRIBE and DELETE on each topic (by name), else
    TOPIC_AUTHORIZATION_FAILED."""
    by_entity = ctx.api_version >= 6

    def name_of(item: Any) -> str | None:
        if by_entity:
            if item.name is not None:
                return str(item.name)
            meta = broker.topic_by_id(item.topic_id)
            return None if meta is None else meta.name
        return str(item)

    def ok(item: Any) -> bool:
        name = name_of(item)
        return name is None or (
            broker.allowed(ctx, Op.DESCRIBE, Resource.TOPIC, name)
            and broker.allowed(ctx, Op.DELETE, Resource.TOPIC, name)
        )

    asked = "topics" if by_entity else "topic_names"
    return split(
        broker, ctx, request, proceed, asked, [i for i in getattr(request, asked) if ok(i)], "responses",
        lambda result_t, i: blank(result_t, name=name_of(i), error_code=err(T)),
    )  # fmt: skip


def _describe_configs(broker: Broker, ctx: RequestContext, request: Any, proceed: Handler) -> Any:
    """DescribeConfigs (KafkaApis ``handleDescribeConfigsRequest``, 2966): DESCRIBE_CONFIGS on
    the cluster (broker resources), the topic or the group, else CLUSTER_ / TOPIC_ /
    GROUP_AUTHORIZATION_FAILED."""

    def denied(res: Any) -> ErrorCode | None:
        rtype = int(res.resource_type)
        if rtype == 4 and not broker.allowed(ctx, Op.DESCRIBE_CONFIGS, Resource.CLUSTER, CLUSTER_NAME):
            return C
        if rtype == 2 and not broker.allowed(
            ctx, Op.DESCRIBE_CONFIGS, Resource.TOPIC, str(res.resource_name)
        ):
            return T
        if rtype == 32 and not broker.allowed(
            ctx, Op.DESCRIBE_CONFIGS, Resource.GROUP, str(res.resource_name)
        ):
            return ErrorCode.GROUP_AUTHORIZATION_FAILED
        return None

    if all(denied(r) is None for r in request.resources):
        return proceed(broker, ctx, request)

    def patch(r: Any) -> Any:
        out = []
        for asked, got in zip(request.resources, r.results, strict=True):
            code = denied(asked)
            out.append(
                got
                if code is None
                else dataclasses.replace(got, error_code=err(code), error_message=None, configs=())
            )
        return dataclasses.replace(r, results=tuple(out))

    return then(broker, ctx, proceed(broker, ctx, request), patch)


def _alter_configs(broker: Broker, ctx: RequestContext, request: Any, proceed: Handler) -> Any:
    """AlterConfigs / IncrementalAlterConfigs (KafkaApis 2857, 2859, 2966): ALTER_CONFIGS on the
    cluster, the topic or the group, else CLUSTER_ / TOPIC_ / GROUP_AUTHORIZATION_FAILED
    (nothing changed)."""

    def denied(res: Any) -> ErrorCode | None:
        rtype = int(res.resource_type)
        if rtype == 4 and not broker.allowed(ctx, Op.ALTER_CONFIGS, Resource.CLUSTER, CLUSTER_NAME):
            return C
        if rtype == 2 and not broker.allowed(ctx, Op.ALTER_CONFIGS, Resource.TOPIC, str(res.resource_name)):
            return T
        if rtype == 32 and not broker.allowed(ctx, Op.ALTER_CONFIGS, Resource.GROUP, str(res.resource_name)):
            return ErrorCode.GROUP_AUTHORIZATION_FAILED
        return None

    return split(
        broker, ctx, request, proceed,
        "resources", [r for r in request.resources if denied(r) is None], "responses",
        lambda result_t, r: blank(
            result_t,
            error_code=err(denied(r) or C),
            error_message=None,
            resource_type=r.resource_type,
            resource_name=r.resource_name,
        ),
    )  # fmt: skip


def _topic_alter(broker: Broker, ctx: RequestContext, request: Any, proceed: Handler) -> Any:
    """CreatePartitions (KafkaApis 2078): ALTER on each topic, else TOPIC_AUTHORIZATION_FAILED."""
    allowed = [t for t in request.topics if broker.allowed(ctx, Op.ALTER, Resource.TOPIC, str(t.name))]
    return split(
        broker, ctx, request, proceed, "topics", allowed, "results",
        lambda result_t, t: blank(
            result_t, name=t.name, error_code=err(T), error_message="The topic authorization is failed."
        ),
    )  # fmt: skip


def _delete_records(broker: Broker, ctx: RequestContext, request: Any, proceed: Handler) -> Any:
    """DeleteRecords (KafkaApis 2188, 2198): DELETE on each topic, else its partitions
    TOPIC_AUTHORIZATION_FAILED."""

    def refuse(topic_t: type[Any], t: Any) -> Any:
        part_t = child(topic_t, "partitions")
        return make(
            topic_t,
            name=t.name,
            partitions=tuple(
                make(part_t, partition_index=p.partition_index, low_watermark=-1, error_code=err(T))
                for p in t.partitions
            ),
        )

    allowed = [t for t in request.topics if broker.allowed(ctx, Op.DELETE, Resource.TOPIC, str(t.name))]
    return split(broker, ctx, request, proceed, "topics", allowed, "topics", refuse)


def _cluster(op: Op) -> Guard:
    """An API that needs ``op`` on the cluster as a whole (``authorizeClusterOperation``):
    DescribeAcls (AclApis: DESCRIBE), DescribeUserScramCredentials (KafkaApis 3520: DESCRIBE),
    AlterUserScramCredentials (3545: ALTER), DescribeClientQuotas (DESCRIBE_CONFIGS) and
    AlterClientQuotas (ALTER_CONFIGS, every entry answered with the error: the request's
    ``getErrorResponse``), else CLUSTER_AUTHORIZATION_FAILED."""

    def guard(broker: Broker, ctx: RequestContext, request: Any, proceed: Handler) -> Any:
        if broker.allowed(ctx, op, Resource.CLUSTER, CLUSTER_NAME):
            return proceed(broker, ctx, request)
        resp_t = response_type(broker, ctx)
        if has_field(resp_t, "error_code"):
            return blank(resp_t, error_code=err(C), error_message=None)
        if ctx.api_key == ApiKey.ALTER_USER_SCRAM_CREDENTIALS:
            result_t = child(resp_t, "results")
            users = [u.name for u in (*request.deletions, *request.upsertions)]
            return blank(resp_t, results=tuple(blank(result_t, user=u, error_code=err(C)) for u in users))
        if ctx.api_key == ApiKey.CREATE_ACLS:
            result_t = child(resp_t, "results")
            return blank(resp_t, results=tuple(blank(result_t, error_code=err(C)) for _ in request.creations))
        if ctx.api_key == ApiKey.DELETE_ACLS:
            result_t = child(resp_t, "filter_results")
            return blank(
                resp_t, filter_results=tuple(blank(result_t, error_code=err(C)) for _ in request.filters)
            )
        if ctx.api_key == ApiKey.ALTER_CLIENT_QUOTAS:
            entry_t = child(resp_t, "entries")
            entity_t = child(entry_t, "entity")
            return blank(
                resp_t,
                entries=tuple(
                    blank(
                        entry_t,
                        error_code=err(C),
                        error_message=None,
                        entity=tuple(
                            blank(entity_t, entity_type=e.entity_type, entity_name=e.entity_name)
                            for e in entry.entity
                        ),
                    )
                    for entry in request.entries
                ),
            )
        raise AssertionError(f"no cluster-denied answer for API {ctx.api_key}")

    return guard


#: API -> its guard (the APIs whose checks are not in their handlers).
_GUARDS: dict[ApiKey, Guard] = {
    ApiKey.JOIN_GROUP: group_read,
    ApiKey.SYNC_GROUP: group_read,
    ApiKey.HEARTBEAT: group_read,
    ApiKey.LEAVE_GROUP: group_read,
    ApiKey.OFFSET_COMMIT: offset_commit,
    ApiKey.TXN_OFFSET_COMMIT: txn_offset_commit,
    ApiKey.OFFSET_FETCH: offset_fetch,
    ApiKey.FIND_COORDINATOR: find_coordinator,
    ApiKey.DESCRIBE_GROUPS: describe_groups,
    ApiKey.CONSUMER_GROUP_HEARTBEAT: consumer_group_heartbeat,
    ApiKey.CONSUMER_GROUP_DESCRIBE: consumer_group_describe,
    ApiKey.LIST_GROUPS: list_groups,
    ApiKey.DELETE_GROUPS: delete_groups,
    ApiKey.OFFSET_DELETE: offset_delete,
    ApiKey.INIT_PRODUCER_ID: _init_producer_id,
    ApiKey.END_TXN: _txn_write,
    ApiKey.ADD_OFFSETS_TO_TXN: _txn_write,
    ApiKey.ADD_PARTITIONS_TO_TXN: _add_partitions_to_txn,
    ApiKey.DESCRIBE_TRANSACTIONS: _describe_transactions,
    ApiKey.LIST_TRANSACTIONS: _list_transactions,
    ApiKey.METADATA: _metadata,
    ApiKey.DESCRIBE_CLUSTER: _describe_cluster,
    ApiKey.CREATE_TOPICS: _create_topics,
    ApiKey.DELETE_TOPICS: _delete_topics,
    ApiKey.CREATE_PARTITIONS: _topic_alter,
    ApiKey.DELETE_RECORDS: _delete_records,
    ApiKey.DESCRIBE_CONFIGS: _describe_configs,
    ApiKey.ALTER_CONFIGS: _alter_configs,
    ApiKey.INCREMENTAL_ALTER_CONFIGS: _alter_configs,
    ApiKey.DESCRIBE_ACLS: _cluster(Op.DESCRIBE),
    ApiKey.CREATE_ACLS: _cluster(Op.ALTER),
    ApiKey.DELETE_ACLS: _cluster(Op.ALTER),
    ApiKey.DESCRIBE_USER_SCRAM_CREDENTIALS: _cluster(Op.DESCRIBE),
    ApiKey.ALTER_USER_SCRAM_CREDENTIALS: _cluster(Op.ALTER),
    ApiKey.DESCRIBE_CLIENT_QUOTAS: _cluster(Op.DESCRIBE_CONFIGS),
    ApiKey.ALTER_CLIENT_QUOTAS: _cluster(Op.ALTER_CONFIGS),
}

#: Every API checked: by a guard here, or in its handler.
GUARDED_APIS = frozenset({*_GUARDS, ApiKey.PRODUCE, ApiKey.FETCH, ApiKey.LIST_OFFSETS})


class _Guarded:
    """A handler behind its guard; a handler that answers some versions differently
    (``for_version``) keeps doing so behind it."""

    __slots__ = ("guard", "inner")

    def __init__(self, guard: Guard, inner: Handler) -> None:
        self.guard = guard
        self.inner = inner

    def __call__(self, broker: Broker, ctx: RequestContext, request: Any) -> Any:
        return self.guard(broker, ctx, request, self.inner)

    def for_version(self, version: int) -> Handler:
        pick = getattr(self.inner, "for_version", None)
        if pick is None:
            return self
        return _Guarded(self.guard, pick(version))


def guarded(api_key: ApiKey, handler: Handler) -> Handler:
    """``handler`` behind the authorization ``api_key`` needs (itself if none or in-handler)."""
    guard = _GUARDS.get(api_key)
    return handler if guard is None else _Guarded(guard, handler)
