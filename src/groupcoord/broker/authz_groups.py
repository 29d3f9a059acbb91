"""The authorization guards of the group APIs (``broker.authz``, which puts them in front of
their handlers): JoinGroup, SyncGroup, Heartbeat, LeaveGroup, OffsetCommit, TxnOffsetCommit,
OffsetFetch, FindCoordinator, DescribeGroups, ListGroups, DeleteGroups, OffsetDelete,
ConsumerGroupHeartbeat and ConsumerGroupDescribe, each with Kafka's checks and errors
(``KafkaApis``: Kafka 3.9, and 4.x for the two consumer-group APIs; the line or handler of each
check is cited in ``tests/security/test_authorization_matrix.py``).
"""

from __future__ import annotations

import dataclasses
from typing import Any

from groupcoord.broker.acl import CLUSTER_NAME, Op, Resource
from groupcoord.broker.authorized_ops import NOT_REQUESTED, principal_operations
from groupcoord.broker.authz_answers import (
    G,
    Handler,
    T,
    X,
    add_entries,
    blank,
    replace_fields,
    response_type,
    split,
    then,
)
from groupcoord.broker.state import Broker
from groupcoord.errors import ErrorCode
from groupcoord.handling import RequestContext
from groupcoord.protocol.entities import NO_THROTTLE, child, err, make, offset_commit_entities


def group_read(broker: Broker, ctx: RequestContext, request: Any, proceed: Handler) -> Any:
    """JoinGroup (KafkaApis 1773), SyncGroup (1807), Heartbeat (1872), LeaveGroup (1892):
    READ on the group, else GROUP_AUTHORIZATION_FAILED."""
    if broker.allowed(ctx, Op.READ, Resource.GROUP, str(request.group_id)):
        return proceed(broker, ctx, request)
    return blank(response_type(broker, ctx), error_code=err(G), member_id=getattr(request, "member_id", ""))


def offset_commit(broker: Broker, ctx: RequestContext, request: Any, proceed: Handler) -> Any:
    """OffsetCommit (KafkaApis 459, 469): READ on the group, else every partition
    GROUP_AUTHORIZATION_FAILED; READ on each topic, else its partitions
    TOPIC_AUTHORIZATION_FAILED."""
    resp_t = response_type(broker, ctx)
    if not broker.allowed(ctx, Op.READ, Resource.GROUP, str(request.group_id)):
        return offset_commit_entities(resp_t, request, lambda _t, _p: G, throttle_time=NO_THROTTLE)
    allowed = [t for t in request.topics if broker.allowed(ctx, Op.READ, Resource.TOPIC, str(t.name))]
    if len(allowed) == len(request.topics):
        return proceed(broker, ctx, request)
    denied = replace_fields(request, topics=tuple(t for t in request.topics if t not in allowed))
    denied_topics = offset_commit_entities(
        resp_t, denied, lambda _t, _p: T, by_partition=True, throttle_time=NO_THROTTLE
    ).topics
    if not allowed:
        return offset_commit_entities(
            resp_t, denied, lambda _t, _p: T, by_partition=True, throttle_time=NO_THROTTLE
        )
    result = proceed(broker, ctx, replace_fields(request, topics=tuple(allowed)))
    return then(broker, ctx, result, lambda r: add_entries(r, "topics", denied_topics))


def txn_offset_commit(broker: Broker, ctx: RequestContext, request: Any, proceed: Handler) -> Any:
    """TxnOffsetCommit (KafkaApis 2697, 2700): WRITE on the transactional id, then READ on the
    group; every partition gets the error."""
    resp_t = response_type(broker, ctx)
    code = None
    if not broker.allowed(ctx, Op.WRITE, Resource.TRANSACTIONAL_ID, str(request.transactional_id)):
        code = X
    elif not broker.allowed(ctx, Op.READ, Resource.GROUP, str(request.group_id)):
        code = G
    if code is None:
        return proceed(broker, ctx, request)
    failed = code
    return offset_commit_entities(resp_t, request, lambda _t, _p: failed, throttle_time=NO_THROTTLE)


def offset_fetch(broker: Broker, ctx: RequestContext, request: Any, proceed: Handler) -> Any:
    """OffsetFetch (KafkaApis 1418, 1465-1559): DESCRIBE on each group, else
    GROUP_AUTHORIZATION_FAILED (for that group of a v8+ batch); of the topics asked for, those the
    principal may not DESCRIBE are answered TOPIC_AUTHORIZATION_FAILED per partition (offset -1)
    after the others; asked for all, only the describable topics are listed."""
    resp_t = response_type(broker, ctx)
    batched = ctx.api_version >= 8
    groups = list(request.groups) if batched else [request]
    denied_groups = {
        str(g.group_id)
        for g in groups
        if not broker.allowed(ctx, Op.DESCRIBE, Resource.GROUP, str(g.group_id))
    }
    unreadable: dict[str, list[Any]] = {}  # group -> topics asked for that it may not DESCRIBE
    for g in groups:
        if g.topics is not None and str(g.group_id) not in denied_groups:
            unreadable[str(g.group_id)] = [
                t for t in g.topics if not broker.allowed(ctx, Op.DESCRIBE, Resource.TOPIC, str(t.name))
            ]
    holder_t = child(resp_t, "groups") if batched else resp_t
    topic_t = child(holder_t, "topics")
    part_t = child(topic_t, "partitions")
    field = "partition_indexes"

    def denied_topic(t: Any, code: ErrorCode) -> Any:
        return make(
            topic_t,
            name=t.name,
            partitions=tuple(
                blank(part_t, partition_index=p, committed_offset=-1, metadata="", error_code=err(code))
                for p in getattr(t, field)
            ),
        )

    def fix(holder: Any, group_id: str, asked_all: bool) -> Any:
        if int(holder.error_code) != 0:
            return holder
        if asked_all:
            keep = tuple(
                t for t in holder.topics if broker.allowed(ctx, Op.DESCRIBE, Resource.TOPIC, str(t.name))
            )
            return dataclasses.replace(holder, topics=keep)
        extra = [denied_topic(t, T) for t in unreadable.get(group_id, [])]
        return add_entries(holder, "topics", extra) if extra else holder

    if not batched:
        group_id = str(request.group_id)
        if group_id in denied_groups:
            topics = tuple(denied_topic(t, G) for t in (request.topics or ()))
            return blank(resp_t, error_code=err(G), topics=topics)
        hidden = {id(t) for t in unreadable.get(group_id, [])}
        if request.topics is not None and hidden:
            kept = tuple(t for t in request.topics if id(t) not in hidden)
            request = replace_fields(request, topics=kept)
        everything = request.topics is None
        return then(broker, ctx, proceed(broker, ctx, request), lambda r: fix(r, group_id, everything))

    group_t = holder_t
    allowed = []
    for g in groups:
        if str(g.group_id) in denied_groups:
            continue
        hidden = {id(t) for t in unreadable.get(str(g.group_id), [])}
        allowed.append(
            replace_fields(g, topics=tuple(t for t in g.topics if id(t) not in hidden)) if hidden else g
        )
    denied = [
        blank(group_t, group_id=g.group_id, error_code=err(G))
        for g in groups
        if str(g.group_id) in denied_groups
    ]
    if not allowed:
        return blank(resp_t, groups=tuple(denied))
    asked_all = {str(g.group_id): g.topics is None for g in groups}

    def patch(r: Any) -> Any:
        fixed = tuple(fix(g, str(g.group_id), asked_all.get(str(g.group_id), False)) for g in r.groups)
        return dataclasses.replace(r, groups=(*fixed, *denied))

    return then(broker, ctx, proceed(broker, ctx, replace_fields(request, groups=tuple(allowed))), patch)


def find_coordinator(broker: Broker, ctx: RequestContext, request: Any, proceed: Handler) -> Any:
    """FindCoordinator (KafkaApis 1634, 1637): DESCRIBE on the group (key type 0) or the
    transactional id (key type 1), else its error with no node."""
    key_type = int(getattr(request, "key_type", 0))
    resource, code = (Resource.GROUP, G) if key_type == 0 else (Resource.TRANSACTIONAL_ID, X)
    keys = [str(k) for k in request.coordinator_keys] if ctx.api_version >= 4 else [str(request.key)]
    denied = {k for k in keys if not broker.allowed(ctx, Op.DESCRIBE, resource, k)}
    if not denied:
        return proceed(broker, ctx, request)

    def patch(r: Any) -> Any:
        if ctx.api_version < 4:
            return dataclasses.replace(r, error_code=err(code), node_id=-1, host="", port=-1)
        coords = tuple(
            dataclasses.replace(c, error_code=err(code), node_id=-1, host="", port=-1, error_message=None)
            if str(c.key) in denied
            else c
            for c in r.coordinators
        )
        return dataclasses.replace(r, coordinators=coords)

    return then(broker, ctx, proceed(broker, ctx, request), patch)


def describe_groups(broker: Broker, ctx: RequestContext, request: Any, proceed: Handler) -> Any:
    """DescribeGroups (KafkaApis 1694, 1714): DESCRIBE on each group, else
    GROUP_AUTHORIZATION_FAILED; ``authorized_operations`` of each group when asked."""
    return _describe_each_group(broker, ctx, request, proceed, "groups")


def consumer_group_heartbeat(broker: Broker, ctx: RequestContext, request: Any, proceed: Handler) -> Any:
    """ConsumerGroupHeartbeat (KafkaApis.handleConsumerGroupHeartbeat, Kafka 4.x): READ on the
    group, else GROUP_AUTHORIZATION_FAILED; then DESCRIBE on every subscribed topic name, else
    TOPIC_AUTHORIZATION_FAILED (a member may not learn of topics it cannot describe)."""
    resp_t = response_type(broker, ctx)
    if not broker.allowed(ctx, Op.READ, Resource.GROUP, str(request.group_id)):
        return blank(resp_t, error_code=err(G))
    names = request.subscribed_topic_names or ()
    if any(not broker.allowed(ctx, Op.DESCRIBE, Resource.TOPIC, str(n)) for n in names):
        return blank(resp_t, error_code=err(T))
    return proceed(broker, ctx, request)


def consumer_group_describe(broker: Broker, ctx: RequestContext, request: Any, proceed: Handler) -> Any:
    """ConsumerGroupDescribe (KafkaApis.handleConsumerGroupDescribe, Kafka 4.x): as DescribeGroups,
    DESCRIBE on each group, else that group GROUP_AUTHORIZATION_FAILED."""
    return _describe_each_group(broker, ctx, request, proceed, "group_ids")


def _describe_each_group(
    broker: Broker, ctx: RequestContext, request: Any, proceed: Handler, ids_field: str
) -> Any:
    """The groups named by ``ids_field`` the principal may DESCRIBE go to the handler; the others
    are answered GROUP_AUTHORIZATION_FAILED; ``authorized_operations`` filled in when asked."""
    resp_t = response_type(broker, ctx)
    groups = [str(g) for g in getattr(request, ids_field)]
    allowed = [g for g in groups if broker.allowed(ctx, Op.DESCRIBE, Resource.GROUP, g)]
    group_t = child(resp_t, "groups")
    denied = [
        blank(group_t, group_id=g, error_code=err(G), authorized_operations=NOT_REQUESTED)
        for g in groups
        if g not in allowed
    ]
    include = bool(getattr(request, "include_authorized_operations", False))

    def patch(r: Any) -> Any:
        out = r
        if include:
            out = dataclasses.replace(
                r,
                groups=tuple(
                    dataclasses.replace(
                        g,
                        authorized_operations=principal_operations(
                            broker.authorizer, ctx.principal, ctx.client_host, Resource.GROUP, str(g.group_id)
                        ),
                    )
                    for g in r.groups
                ),
            )
        return add_entries(out, "groups", denied)

    if not allowed:
        return blank(resp_t, groups=tuple(denied))
    request = replace_fields(request, **{ids_field: tuple(allowed)})
    return then(broker, ctx, proceed(broker, ctx, request), patch)


def list_groups(broker: Broker, ctx: RequestContext, request: Any, proceed: Handler) -> Any:
    """ListGroups (KafkaApis 1737, 1752): DESCRIBE on the cluster lists every group; else only
    the groups the principal may DESCRIBE."""
    if broker.allowed(ctx, Op.DESCRIBE, Resource.CLUSTER, CLUSTER_NAME):
        return proceed(broker, ctx, request)

    def patch(r: Any) -> Any:
        return dataclasses.replace(
            r,
            groups=tuple(
                g for g in r.groups if broker.allowed(ctx, Op.DESCRIBE, Resource.GROUP, str(g.group_id))
            ),
        )

    return then(broker, ctx, proceed(broker, ctx, request), patch)


def delete_groups(broker: Broker, ctx: RequestContext, request: Any, proceed: Handler) -> Any:
    """DeleteGroups (KafkaApis 1856): DELETE on each group, else GROUP_AUTHORIZATION_FAILED."""
    allowed = [g for g in request.groups_names if broker.allowed(ctx, Op.DELETE, Resource.GROUP, str(g))]
    return split(
        broker, ctx, request, proceed, "groups_names", allowed, "results",
        lambda result_t, g: blank(result_t, group_id=g, error_code=err(G)),
    )  # fmt: skip


def offset_delete(broker: Broker, ctx: RequestContext, request: Any, proceed: Handler) -> Any:
    """OffsetDelete (KafkaApis 3383-3439): DELETE on the group, else GROUP_AUTHORIZATION_FAILED;
    READ on each topic, else its partitions TOPIC_AUTHORIZATION_FAILED."""
    resp_t = response_type(broker, ctx)
    if not broker.allowed(ctx, Op.DELETE, Resource.GROUP, str(request.group_id)):
        return blank(resp_t, error_code=err(G))
    allowed = [t for t in request.topics if broker.allowed(ctx, Op.READ, Resource.TOPIC, str(t.name))]
    if len(allowed) == len(request.topics):
        return proceed(broker, ctx, request)
    topic_t = child(resp_t, "topics")
    part_t = child(topic_t, "partitions")
    denied = [
        make(
            topic_t,
            name=t.name,
            partitions=tuple(
                make(part_t, partition_index=p.partition_index, error_code=err(T)) for p in t.partitions
            ),
        )
        for t in request.topics
        if t not in allowed
    ]
    # the coordinator is asked even with no topic left (its group checks still answer), and its
    # answer merged with the refused partitions (OffsetDeleteResponse.Builder.merge)
    result = proceed(broker, ctx, replace_fields(request, topics=tuple(allowed)))
    return then(broker, ctx, result, lambda r: add_entries(r, "topics", denied))
