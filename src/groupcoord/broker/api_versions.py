"""ApiVersions (key 18): advertise exactly the registered (key, version range) table.

It is the first request on every client connection, and its answer depends only on the
version asked and the route table, so each version's answer body is encoded once.
"""

from __future__ import annotations

import io
from typing import Any

from groupcoord.broker.state import Broker
from groupcoord.errors import ErrorCode
from groupcoord.handling import PreEncoded, RequestContext
from groupcoord.protocol.entities import NO_THROTTLE, child, err, make

_ANSWERS: dict[tuple[int, tuple[tuple[int, int, int], ...]], PreEncoded] = {}


def answer_entity(broker: Broker, version: int) -> Any:
    """The ApiVersions response entity at ``version`` for this broker's routes."""
    resp_t = broker.registry.lookup(18, version).response_type
    key_t = child(resp_t, "api_keys")
    keys = tuple(
        make(key_t, api_key=key, min_version=lo, max_version=hi) for key, lo, hi in broker.registry.ranges()
    )
    return make(resp_t, error_code=err(ErrorCode.NONE), api_keys=keys, throttle_time=NO_THROTTLE)


def handle(broker: Broker, ctx: RequestContext, request: Any) -> PreEncoded:
    registry = broker.registry
    key = (ctx.api_version, tuple(registry.ranges()))
    answer = _ANSWERS.get(key)
    if answer is None:
        buf = io.BytesIO()
        registry.lookup(ctx.api_key, ctx.api_version).writer(buf, answer_entity(broker, ctx.api_version))
        answer = _ANSWERS[key] = PreEncoded(pieces=(buf.getvalue(),))
    return answer
