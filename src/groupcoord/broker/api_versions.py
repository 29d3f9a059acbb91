"""ApiVersions (key 18): advertise exactly the registered (key, version range) table.

It is the first request on every client connection, and its answer depends only on the
version asked and the route table, so each version's answer body is encoded once.
"""

from __future__ import annotations

import io
from typing import Any

from kio.static.primitive import i16, i64

from groupcoord.broker.state import Broker
from groupcoord.errors import ErrorCode
from groupcoord.handling import PreEncoded, RequestContext
from groupcoord.protocol.api_keys import ApiKey
from groupcoord.protocol.entities import NO_THROTTLE, child, err, make

_ANSWERS: dict[tuple[int, tuple[tuple[int, int, int], ...]], PreEncoded] = {}


#: Kafka 4.x's ``group.version`` feature: level 1 is KIP-848's consumer group protocol.
GROUP_VERSION_FEATURE = "group.version"
GROUP_VERSION_LEVEL = 1
#: The epoch of the finalized features (Kafka: the metadata offset they were finalized at;
#: they never change here).
FINALIZED_FEATURES_EPOCH = 1


def answer_entity(broker: Broker, version: int) -> Any:
    """The ApiVersions response entity at ``version`` for this broker's routes.

    From v3 (KIP-584) the answer carries features, where the group coordinator's APIs are
    routed: ``group.version`` finalized at 1 (a Kafka 4.x cluster's default, whatever
    ``group.coordinator.rebalance.protocols`` says) and, from v4, supported in 0..1 (Kafka
    leaves features whose minimum is 0 out of answers to older versions, KAFKA-17492), as
    ``ApiVersionsResponse.createApiVersionsResponse`` writes them.
    """
    registry = broker.registry
    resp_t = registry.lookup(18, version).response_type
    key_t = child(resp_t, "api_keys")
    keys = tuple(
        make(key_t, api_key=key, min_version=lo, max_version=hi) for key, lo, hi in registry.ranges()
    )
    features: dict[str, Any] = {}
    if version >= 3 and registry.supported(ApiKey.CONSUMER_GROUP_HEARTBEAT) is not None:
        supported_t = child(resp_t, "supported_features")
        finalized_t = child(resp_t, "finalized_features")
        supported = (
            (
                supported_t(
                    name=GROUP_VERSION_FEATURE, min_version=i16(0), max_version=i16(GROUP_VERSION_LEVEL)
                ),
            )
            if version >= 4
            else ()
        )
        features = {
            "supported_features": supported,
            "finalized_features_epoch": i64(FINALIZED_FEATURES_EPOCH),
            "finalized_features": (
                finalized_t(
                    name=GROUP_VERSION_FEATURE,
                    max_version_level=i16(GROUP_VERSION_LEVEL),
                    min_version_level=i16(GROUP_VERSION_LEVEL),
                ),
            ),
        }
    return make(resp_t, error_code=err(ErrorCode.NONE), api_keys=keys, throttle_time=NO_THROTTLE, **features)


def handle(broker: Broker, ctx: RequestContext, request: Any) -> PreEncoded:
    registry = broker.registry
    key = (ctx.api_version, tuple(registry.ranges()))
    answer = _ANSWERS.get(key)
    if answer is None:
        buf = io.BytesIO()
        registry.lookup(ctx.api_key, ctx.api_version).writer(buf, answer_entity(broker, ctx.api_version))
        answer = _ANSWERS[key] = PreEncoded(pieces=(buf.getvalue(),))
    return answer
