"""ApiVersions (key 18): advertise exactly the registered (key, version range) table."""

from __future__ import annotations

from typing import Any

from groupcoord.broker.state import Broker
from groupcoord.errors import ErrorCode
from groupcoord.protocol.entities import NO_THROTTLE, child, err, make
from groupcoord.server.context import RequestContext


def handle(broker: Broker, ctx: RequestContext, request: Any) -> Any:
    messages = broker.dispatcher.registry.lookup(ctx.api_key, ctx.api_version)
    resp_t = messages.response_type
    key_t = child(resp_t, "api_keys")
    keys = tuple(
        make(key_t, api_key=key, min_version=lo, max_version=hi)
        for key, lo, hi in broker.dispatcher.registry.ranges()
    )
    return make(resp_t, error_code=err(ErrorCode.NONE), api_keys=keys, throttle_time=NO_THROTTLE)
