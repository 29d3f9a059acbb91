"""What each API requires of the authorizer, checked in front of its handler, with Kafka's
errors (``KafkaApis``, Kafka 3.9; the line of each check is cited in
``tests/security/test_authorization_matrix.py``).

The composition root wraps a route's handler with :func:`guarded` when ``authorizer.class.name``
is set; without an authorizer nothing is wrapped and nothing is checked, as in Kafka. Produce,
Fetch and ListOffsets check in their own handlers (``broker.produce``, ``broker.fetch``,
``broker.list_offsets``), per topic.

A guard answers a request that is wholly denied itself; a request that is partly denied (some
topics, groups or keys) goes to the handler without the denied parts, and the answer gets
Kafka's error for each of them added.
"""

from __future__ import annotations

import dataclasses
import datetime
import inspect
import uuid
from collections.abc import Callable, Iterable, Sequence
from typing import Any

from kio.serial import entity_reader

from groupcoord.broker.acl import CLUSTER_NAME, Op, Resource
from groupcoord.broker.authorized_ops import NOT_REQUESTED, principal_operations
from groupcoord.broker.state import Broker
from groupcoord.errors import ErrorCode
from groupcoord.handling import PreEncoded, RequestContext
from groupcoord.protocol.api_keys import ApiKey
from groupcoord.protocol.entities import NO_THROTTLE, child, err, has_field, make, offset_commit_entities

__all__ = ["GUARDED_APIS", "guarded"]

Handler = Callable[[Broker, RequestContext, Any], Any]
Guard = Callable[[Broker, RequestContext, Any, Handler], Any]

G = ErrorCode.GROUP_AUTHORIZATION_FAILED
T = ErrorCode.TOPIC_AUTHORIZATION_FAILED
C = ErrorCode.CLUSTER_AUTHORIZATION_FAILED
X = ErrorCode.TRANSACTIONAL_ID_AUTHORIZATION_FAILED


def _resp_t(broker: Broker, ctx: RequestContext) -> type[Any]:
    return broker.registry.lookup(ctx.api_key, ctx.api_version).response_type


def _entity(broker: Broker, ctx: RequestContext, response: Any) -> Any:
    """A response entity, decoding one its handler encoded itself (no file regions here)."""
    if type(response) is PreEncoded:
        body = b"".join(p for p in response.pieces if isinstance(p, bytes))
        entity, _ = entity_reader(_resp_t(broker, ctx))(body, 0)
        return entity
    return response


def _then(broker: Broker, ctx: RequestContext, result: Any, patch: Callable[[Any], Any]) -> Any:
    """``patch`` applied to the handler's answer, now or when it is ready."""
    if result is None:
        return None
    if inspect.isawaitable(result):

        async def later() -> Any:
            answer = await result
            return None if answer is None else patch(_entity(broker, ctx, answer))

        return later()
    return patch(_entity(broker, ctx, result))


def _blank(cls: type[Any], **values: Any) -> Any:
    """An entity of ``cls`` with ``values`` and Kafka's empty values for every other required
    field (``-1`` ids and generations, empty strings and lists, null optional strings)."""
    out: dict[str, Any] = {}
    for f in dataclasses.fields(cls):
        if f.name in values:
            out[f.name] = values[f.name]
            continue
        if f.default is not dataclasses.MISSING or f.default_factory is not dataclasses.MISSING:
            continue
        kind = str(f.type)
        if f.name == "throttle_time":
            out[f.name] = NO_THROTTLE
        elif f.name == "error_code":
            out[f.name] = err(ErrorCode.NONE)
        elif "None" in kind and ("str" in kind or "bytes" in kind):
            out[f.name] = None
        elif kind.startswith("tuple"):
            out[f.name] = ()
        elif "bytes" in kind:
            out[f.name] = b""
        elif "str" in kind:
            out[f.name] = ""
        elif kind.startswith("bool"):
            out[f.name] = False
        elif "UUID" in kind:
            out[f.name] = uuid.UUID(int=0)
        elif "Timedelta" in kind:
            out[f.name] = NO_THROTTLE
        elif "TZAware" in kind:
            out[f.name] = _MINUS_ONE_MS
        else:
            out[f.name] = -1
    return make(cls, **{k: v for k, v in out.items()})


#: an unset timestamp field: the epoch (kio's readers refuse a negative timestamp)
_MINUS_ONE_MS = datetime.datetime(1970, 1, 1, tzinfo=datetime.UTC)


def _replace(request: Any, **changes: Any) -> Any:
    if hasattr(request, "_replace"):  # a hand-decoded request (protocol.hot) is a NamedTuple
        return request._replace(**changes)
    return dataclasses.replace(request, **changes)


def _add(response: Any, field: str, extra: Iterable[Any]) -> Any:
    return dataclasses.replace(response, **{field: (*getattr(response, field), *extra)})


def _split(
    broker: Broker,
    ctx: RequestContext,
    request: Any,
    proceed: Handler,
    asked: str,
    allowed: Sequence[Any],
    answered: str,
    refuse: Callable[[type[Any], Any], Any],
) -> Any:
    """A request whose items (its field ``asked``) pass the check one by one (Kafka's
    ``filterByAuthorized``), ``allowed`` those that do: all of them, the handler answers the
    request as it is; none, the answer is only the refusals, ``refuse(entry type, item)`` in the
    response's field ``answered``; else the handler answers the allowed ones and the refusals
    follow its answers."""
    items = getattr(request, asked)
    if len(allowed) == len(items):
        return proceed(broker, ctx, request)
    resp_t = _resp_t(broker, ctx)
    entry_t = child(resp_t, answered)
    denied = tuple(refuse(entry_t, i) for i in items if i not in allowed)
    if not allowed:
        return _blank(resp_t, **{answered: denied})
    result = proceed(broker, ctx, _replace(request, **{asked: tuple(allowed)}))
    return _then(broker, ctx, result, lambda r: _add(r, answered, denied))


# ---------------------------------------------------------------------- groups
def _group_read(broker: Broker, ctx: RequestContext, request: Any, proceed: Handler) -> Any:
    """JoinGroup (KafkaApis 1773), SyncGroup (1807), Heartbeat (1872), LeaveGroup (1892):
    READ on the group, else GROUP_AUTHORIZATION_FAILED."""
    if broker.allowed(ctx, Op.READ, Resource.GROUP, str(request.group_id)):
        return proceed(broker, ctx, request)
    return _blank(_resp_t(broker, ctx), error_code=err(G), member_id=getattr(request, "member_id", ""))


def _offset_commit(broker: Broker, ctx: RequestContext, request: Any, proceed: Handler) -> Any:
    """OffsetCommit (KafkaApis 459, 469): READ on the group, else every partition
    GROUP_AUTHORIZATION_FAILED; READ on each topic, else its partitions
    TOPIC_AUTHORIZATION_FAILED."""
    resp_t = _resp_t(broker, ctx)
    if not broker.allowed(ctx, Op.READ, Resource.GROUP, str(request.group_id)):
        return offset_commit_entities(resp_t, request, lambda _t, _p: G, throttle_time=NO_THROTTLE)
    allowed = [t for t in request.topics if broker.allowed(ctx, Op.READ, Resource.TOPIC, str(t.name))]
    if len(allowed) == len(request.topics):
        return proceed(broker, ctx, request)
    denied = _replace(request, topics=tuple(t for t in request.topics if t not in allowed))
    denied_topics = offset_commit_entities(resp_t, denied, lambda _t, _p: T, throttle_time=NO_THROTTLE).topics
    if not allowed:
        return offset_commit_entities(resp_t, denied, lambda _t, _p: T, throttle_time=NO_THROTTLE)
    result = proceed(broker, ctx, _replace(request, topics=tuple(allowed)))
    return _then(broker, ctx, result, lambda r: _add(r, "topics", denied_topics))


def _txn_offset_commit(broker: Broker, ctx: RequestContext, request: Any, proceed: Handler) -> Any:
    """TxnOffsetCommit (KafkaApis 2697, 2700): WRITE on the transactional id, then READ on the
    group; every partition gets the error."""
    resp_t = _resp_t(broker, ctx)
    code = None
    if not broker.allowed(ctx, Op.WRITE, Resource.TRANSACTIONAL_ID, str(request.transactional_id)):
        code = X
    elif not broker.allowed(ctx, Op.READ, Resource.GROUP, str(request.group_id)):
        code = G
    if code is None:
        return proceed(broker, ctx, request)
    failed = code
    return offset_commit_entities(resp_t, request, lambda _t, _p: failed, throttle_time=NO_THROTTLE)


def _offset_fetch(broker: Broker, ctx: RequestContext, request: Any, proceed: Handler) -> Any:
    """OffsetFetch (KafkaApis 1418, 1465-1559): DESCRIBE on each group, else
    GROUP_AUTHORIZATION_FAILED (for that group of a v8+ batch); of the topics asked for, those the
    principal may not DESCRIBE are answered TOPIC_AUTHORIZATION_FAILED per partition (offset -1)
    after the others; asked for all, only the describable topics are listed."""
    resp_t = _resp_t(broker, ctx)
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
                _blank(part_t, partition_index=p, committed_offset=-1, metadata="", error_code=err(code))
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
        return _add(holder, "topics", extra) if extra else holder

    if not batched:
        group_id = str(request.group_id)
        if group_id in denied_groups:
            topics = tuple(denied_topic(t, G) for t in (request.topics or ()))
            return _blank(resp_t, error_code=err(G), topics=topics)
        hidden = {id(t) for t in unreadable.get(group_id, [])}
        if request.topics is not None and hidden:
            kept = tuple(t for t in request.topics if id(t) not in hidden)
            request = _replace(request, topics=kept)
        everything = request.topics is None
        return _then(broker, ctx, proceed(broker, ctx, request), lambda r: fix(r, group_id, everything))

    group_t = holder_t
    allowed = []
    for g in groups:
        if str(g.group_id) in denied_groups:
            continue
        hidden = {id(t) for t in unreadable.get(str(g.group_id), [])}
        allowed.append(_replace(g, topics=tuple(t for t in g.topics if id(t) not in hidden)) if hidden else g)
    denied = [
        _blank(group_t, group_id=g.group_id, error_code=err(G))
        for g in groups
        if str(g.group_id) in denied_groups
    ]
    if not allowed:
        return _blank(resp_t, groups=tuple(denied))
    asked_all = {str(g.group_id): g.topics is None for g in groups}

    def patch(r: Any) -> Any:
        fixed = tuple(fix(g, str(g.group_id), asked_all.get(str(g.group_id), False)) for g in r.groups)
        return dataclasses.replace(r, groups=(*fixed, *denied))

    return _then(broker, ctx, proceed(broker, ctx, _replace(request, groups=tuple(allowed))), patch)


def _find_coordinator(broker: Broker, ctx: RequestContext, request: Any, proceed: Handler) -> Any:
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

    return _then(broker, ctx, proceed(broker, ctx, request), patch)


def _describe_groups(broker: Broker, ctx: RequestContext, request: Any, proceed: Handler) -> Any:
    """DescribeGroups (KafkaApis 1694, 1714): DESCRIBE on each group, else
    GROUP_AUTHORIZATION_FAILED; ``authorized_operations`` of each group when asked."""
    resp_t = _resp_t(broker, ctx)
    groups = [str(g) for g in request.groups]
    allowed = [g for g in groups if broker.allowed(ctx, Op.DESCRIBE, Resource.GROUP, g)]
    group_t = child(resp_t, "groups")
    denied = [
        _blank(group_t, group_id=g, error_code=err(G), authorized_operations=NOT_REQUESTED)
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
        return _add(out, "groups", denied)

    if not allowed:
        return _blank(resp_t, groups=tuple(denied))
    return _then(broker, ctx, proceed(broker, ctx, _replace(request, groups=tuple(allowed))), patch)


def _list_groups(broker: Broker, ctx: RequestContext, request: Any, proceed: Handler) -> Any:
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

    return _then(broker, ctx, proceed(broker, ctx, request), patch)


def _delete_groups(broker: Broker, ctx: RequestContext, request: Any, proceed: Handler) -> Any:
    """DeleteGroups (KafkaApis 1856): DELETE on each group, else GROUP_AUTHORIZATION_FAILED."""
    allowed = [g for g in request.groups_names if broker.allowed(ctx, Op.DELETE, Resource.GROUP, str(g))]
    return _split(
        broker, ctx, request, proceed, "groups_names", allowed, "results",
        lambda result_t, g: _blank(result_t, group_id=g, error_code=err(G)),
    )  # fmt: skip


def _offset_delete(broker: Broker, ctx: RequestContext, request: Any, proceed: Handler) -> Any:
    """OffsetDelete (KafkaApis 3383-3439): DELETE on the group, else GROUP_AUTHORIZATION_FAILED;
    READ on each topic, else its partitions TOPIC_AUTHORIZATION_FAILED."""
    resp_t = _resp_t(broker, ctx)
    if not broker.allowed(ctx, Op.DELETE, Resource.GROUP, str(request.group_id)):
        return _blank(resp_t, error_code=err(G))
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
    result = proceed(broker, ctx, _replace(request, topics=tuple(allowed)))
    return _then(broker, ctx, result, lambda r: _add(r, "topics", denied))


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
    return _blank(_resp_t(broker, ctx), error_code=err(code), producer_id=-1, producer_epoch=-1)


def _txn_write(broker: Broker, ctx: RequestContext, request: Any, proceed: Handler) -> Any:
    """EndTxn (KafkaApis 2300) and AddOffsetsToTxn (2626, then READ on the group, 2631): WRITE
    on the transactional id."""
    if not broker.allowed(ctx, Op.WRITE, Resource.TRANSACTIONAL_ID, str(request.transactional_id)):
        return _blank(_resp_t(broker, ctx), error_code=err(X))
    group = getattr(request, "group_id", None)
    if group is not None and not broker.allowed(ctx, Op.READ, Resource.GROUP, str(group)):
        return _blank(_resp_t(broker, ctx), error_code=err(G))
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

    resp_t = _resp_t(broker, ctx)
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
    return _blank(resp_t, results_by_topic_v3_and_below=results)


def _describe_transactions(broker: Broker, ctx: RequestContext, request: Any, proceed: Handler) -> Any:
    """DescribeTransactions (KafkaApis 3723-3735): DESCRIBE on each transactional id, else
    TRANSACTIONAL_ID_AUTHORIZATION_FAILED; of a transaction's partitions only those of topics the
    principal may DESCRIBE are listed."""
    resp_t = _resp_t(broker, ctx)
    state_t = child(resp_t, "transaction_states")
    ids = [str(i) for i in request.transactional_ids]
    allowed = [i for i in ids if broker.allowed(ctx, Op.DESCRIBE, Resource.TRANSACTIONAL_ID, i)]
    denied = [_blank(state_t, transactional_id=i, error_code=err(X)) for i in ids if i not in allowed]
    if not allowed:
        return _blank(resp_t, transaction_states=tuple(denied))

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

    result = proceed(broker, ctx, _replace(request, transactional_ids=tuple(allowed)))
    return _then(broker, ctx, result, patch)


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

    return _then(broker, ctx, proceed(broker, ctx, request), patch)


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
        existing = broker.logs.topics()
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
            request = _replace(request, allow_auto_topic_creation=False)
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

    return _then(broker, ctx, proceed(broker, ctx, request), patch)


def _metadata_split(
    broker: Broker, ctx: RequestContext, request: Any, proceed: Handler, creatable: list[Any]
) -> Any:
    """Metadata where some missing topics may be auto-created and others may not: the first
    asked for with auto-creation, the second without, the answer in the request's order."""
    rest = [t for t in request.topics if t not in creatable]
    first = _metadata(broker, ctx, _replace(request, topics=tuple(creatable)), proceed)
    refused = frozenset(str(t.name) for t in rest)
    second = _metadata(
        broker, ctx, _replace(request, topics=tuple(rest), allow_auto_topic_creation=False), proceed, refused
    )
    first, second = _entity(broker, ctx, first), _entity(broker, ctx, second)
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
    return _then(
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
    return _split(
        broker, ctx, request, proceed, "topics", allowed, "topics",
        lambda topic_t, t: _blank(
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
    return _split(
        broker, ctx, request, proceed, asked, [i for i in getattr(request, asked) if ok(i)], "responses",
        lambda result_t, i: _blank(result_t, name=name_of(i), error_code=err(T)),
    )  # fmt: skip


def _describe_configs(broker: Broker, ctx: RequestContext, request: Any, proceed: Handler) -> Any:
    """DescribeConfigs (KafkaApis ``handleDescribeConfigsRequest``, 2966): DESCRIBE_CONFIGS on
    the cluster (broker resources) or the topic, else CLUSTER_ / TOPIC_AUTHORIZATION_FAILED."""

    def denied(res: Any) -> ErrorCode | None:
        rtype = int(res.resource_type)
        if rtype == 4 and not broker.allowed(ctx, Op.DESCRIBE_CONFIGS, Resource.CLUSTER, CLUSTER_NAME):
            return C
        if rtype == 2 and not broker.allowed(
            ctx, Op.DESCRIBE_CONFIGS, Resource.TOPIC, str(res.resource_name)
        ):
            return T
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

    return _then(broker, ctx, proceed(broker, ctx, request), patch)


def _alter_configs(broker: Broker, ctx: RequestContext, request: Any, proceed: Handler) -> Any:
    """AlterConfigs / IncrementalAlterConfigs (KafkaApis 2857, 2859, 2966): ALTER_CONFIGS on the
    cluster or the topic, else CLUSTER_ / TOPIC_AUTHORIZATION_FAILED (nothing changed)."""

    def denied(res: Any) -> ErrorCode | None:
        rtype = int(res.resource_type)
        if rtype == 4 and not broker.allowed(ctx, Op.ALTER_CONFIGS, Resource.CLUSTER, CLUSTER_NAME):
            return C
        if rtype == 2 and not broker.allowed(ctx, Op.ALTER_CONFIGS, Resource.TOPIC, str(res.resource_name)):
            return T
        return None

    return _split(
        broker, ctx, request, proceed,
        "resources", [r for r in request.resources if denied(r) is None], "responses",
        lambda result_t, r: _blank(
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
    return _split(
        broker, ctx, request, proceed, "topics", allowed, "results",
        lambda result_t, t: _blank(
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
    return _split(broker, ctx, request, proceed, "topics", allowed, "topics", refuse)


def _cluster(op: Op) -> Guard:
    """An API that needs ``op`` on the cluster as a whole (``authorizeClusterOperation``):
    DescribeAcls (AclApis: DESCRIBE), DescribeUserScramCredentials (KafkaApis 3520: DESCRIBE),
    AlterUserScramCredentials (3545: ALTER), DescribeClientQuotas (DESCRIBE_CONFIGS) and
    AlterClientQuotas (ALTER_CONFIGS, every entry answered with the error: the request's
    ``getErrorResponse``), else CLUSTER_AUTHORIZATION_FAILED."""

    def guard(broker: Broker, ctx: RequestContext, request: Any, proceed: Handler) -> Any:
        if broker.allowed(ctx, op, Resource.CLUSTER, CLUSTER_NAME):
            return proceed(broker, ctx, request)
        resp_t = _resp_t(broker, ctx)
        if has_field(resp_t, "error_code"):
            return _blank(resp_t, error_code=err(C), error_message=None)
        if ctx.api_key == ApiKey.ALTER_USER_SCRAM_CREDENTIALS:
            result_t = child(resp_t, "results")
            users = [u.name for u in (*request.deletions, *request.upsertions)]
            return _blank(resp_t, results=tuple(_blank(result_t, user=u, error_code=err(C)) for u in users))
        if ctx.api_key == ApiKey.CREATE_ACLS:
            result_t = child(resp_t, "results")
            return _blank(
                resp_t, results=tuple(_blank(result_t, error_code=err(C)) for _ in request.creations)
            )
        if ctx.api_key == ApiKey.DELETE_ACLS:
            result_t = child(resp_t, "filter_results")
            return _blank(
                resp_t, filter_results=tuple(_blank(result_t, error_code=err(C)) for _ in request.filters)
            )
        if ctx.api_key == ApiKey.ALTER_CLIENT_QUOTAS:
            entry_t = child(resp_t, "entries")
            entity_t = child(entry_t, "entity")
            return _blank(
                resp_t,
                entries=tuple(
                    _blank(
                        entry_t,
                        error_code=err(C),
                        error_message=None,
                        entity=tuple(
                            _blank(entity_t, entity_type=e.entity_type, entity_name=e.entity_name)
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
    ApiKey.JOIN_GROUP: _group_read,
    ApiKey.SYNC_GROUP: _group_read,
    ApiKey.HEARTBEAT: _group_read,
    ApiKey.LEAVE_GROUP: _group_read,
    ApiKey.OFFSET_COMMIT: _offset_commit,
    ApiKey.TXN_OFFSET_COMMIT: _txn_offset_commit,
    ApiKey.OFFSET_FETCH: _offset_fetch,
    ApiKey.FIND_COORDINATOR: _find_coordinator,
    ApiKey.DESCRIBE_GROUPS: _describe_groups,
    ApiKey.LIST_GROUPS: _list_groups,
    ApiKey.DELETE_GROUPS: _delete_groups,
    ApiKey.OFFSET_DELETE: _offset_delete,
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
