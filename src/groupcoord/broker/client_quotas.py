"""AlterClientQuotas (key 49) and DescribeClientQuotas (key 48) over the broker's
:class:`~groupcoord.broker.quota_store.ClientQuotaStore` (``Broker.client_quotas``): the wire
side; validation, matching and persistence are the store's."""

from __future__ import annotations

from typing import Any

from groupcoord.broker.quota_store import QuotaError
from groupcoord.broker.state import Broker
from groupcoord.errors import ErrorCode
from groupcoord.handling import RequestContext
from groupcoord.protocol.entities import NO_THROTTLE, child, err, make


def alter_client_quotas(broker: Broker, ctx: RequestContext, request: Any) -> Any:
    store = broker.client_quotas
    messages = broker.registry.lookup(ctx.api_key, ctx.api_version)
    resp_t = messages.response_type
    entry_t = child(resp_t, "entries")
    entity_t = child(entry_t, "entity")
    entries = [
        (
            [
                (str(e.entity_type), None if e.entity_name is None else str(e.entity_name))
                for e in entry.entity
            ],
            [(str(op.key), None if op.remove else float(op.value)) for op in entry.ops],
        )
        for entry in request.entries
    ]
    results = store.alter(entries, bool(request.validate_only))
    return make(
        resp_t,
        throttle_time=NO_THROTTLE,
        entries=tuple(
            make(
                entry_t,
                error_code=err(code),
                error_message=message,
                entity=tuple(make(entity_t, entity_type=t, entity_name=n) for t, n in pairs),
            )
            for pairs, code, message in results
        ),
    )


def describe_client_quotas(broker: Broker, ctx: RequestContext, request: Any) -> Any:
    store = broker.client_quotas
    messages = broker.registry.lookup(ctx.api_key, ctx.api_version)
    resp_t = messages.response_type
    entry_t = child(resp_t, "entries")
    entity_t = child(entry_t, "entity")
    value_t = child(entry_t, "values")
    components = [(str(c.entity_type), int(c.match_type), c.match) for c in request.components]
    try:
        found = store.describe(components, bool(request.strict))
    except QuotaError as exc:
        return make(
            resp_t,
            throttle_time=NO_THROTTLE,
            error_code=err(exc.code),
            error_message=exc.message,
            entries=None,
        )
    return make(
        resp_t,
        throttle_time=NO_THROTTLE,
        error_code=err(ErrorCode.NONE),
        error_message=None,
        entries=tuple(
            make(
                entry_t,
                entity=tuple(make(entity_t, entity_type=t, entity_name=n) for t, n in entity),
                values=tuple(make(value_t, key=k, value=v) for k, v in sorted(values.items())),
            )
            for entity, values in found
        ),
    )
