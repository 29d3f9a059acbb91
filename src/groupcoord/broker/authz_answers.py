"""The pieces every authorization guard (``broker.authz``) answers with: Kafka's refusal codes, a
refused request's answer built from its response schema, and a partly denied request split
into what its handler answers and the refusals added to that answer.
"""

from __future__ import annotations

import dataclasses
import datetime
import inspect
import uuid
from collections.abc import Callable, Iterable, Sequence
from typing import Any

from kio.serial import entity_reader

from groupcoord.broker.state import Broker
from groupcoord.errors import ErrorCode
from groupcoord.handling import PreEncoded, RequestContext
from groupcoord.protocol.entities import NO_THROTTLE, child, err, make

Handler = Callable[[Broker, RequestContext, Any], Any]
Guard = Callable[[Broker, RequestContext, Any, Handler], Any]

G = ErrorCode.GROUP_AUTHORIZATION_FAILED
T = ErrorCode.TOPIC_AUTHORIZATION_FAILED
C = ErrorCode.CLUSTER_AUTHORIZATION_FAILED
X = ErrorCode.TRANSACTIONAL_ID_AUTHORIZATION_FAILED


def response_type(broker: Broker, ctx: RequestContext) -> type[Any]:
    return broker.registry.lookup(ctx.api_key, ctx.api_version).response_type


def response_entity(broker: Broker, ctx: RequestContext, response: Any) -> Any:
    """A response entity, decoding one its handler encoded itself (no file regions here)."""
    if type(response) is PreEncoded:
        body = b"".join(p for p in response.pieces if isinstance(p, bytes))
        entity, _ = entity_reader(response_type(broker, ctx))(body, 0)
        return entity
    return response


def then(broker: Broker, ctx: RequestContext, result: Any, patch: Callable[[Any], Any]) -> Any:
    """``patch`` applied to the handler's answer, now or when it is ready."""
    if result is None:
        return None
    if inspect.isawaitable(result):

        async def later() -> Any:
            answer = await result
            return None if answer is None else patch(response_entity(broker, ctx, answer))

        return later()
    return patch(response_entity(broker, ctx, result))


def blank(cls: type[Any], **values: Any) -> Any:
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
            out[f.name] = MINUS_ONE_MS
        else:
            out[f.name] = -1
    return make(cls, **{k: v for k, v in out.items()})


#: an unset timestamp field: the epoch (kio's readers refuse a negative timestamp)
MINUS_ONE_MS = datetime.datetime(1970, 1, 1, tzinfo=datetime.UTC)


def replace_fields(request: Any, **changes: Any) -> Any:
    if hasattr(request, "_replace"):  # a hand-decoded Heartbeat (protocol.hot) is a NamedTuple
        return request._replace(**changes)
    return dataclasses.replace(request, **changes)


def add_entries(response: Any, field: str, extra: Iterable[Any]) -> Any:
    return dataclasses.replace(response, **{field: (*getattr(response, field), *extra)})


def split(
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
    resp_t = response_type(broker, ctx)
    entry_t = child(resp_t, answered)
    denied = tuple(refuse(entry_t, i) for i in items if i not in allowed)
    if not allowed:
        return blank(resp_t, **{answered: denied})
    result = proceed(broker, ctx, replace_fields(request, **{asked: tuple(allowed)}))
    return then(broker, ctx, result, lambda r: add_entries(r, answered, denied))
