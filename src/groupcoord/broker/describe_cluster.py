"""DescribeCluster (key 60): the live brokers (this one alone, or the nodes of ``broker.cluster``)
with their racks, and the controller.

Endpoint type 1 (brokers) is the only one served. A request for controller endpoints (type 2,
KIP-919) is answered with INVALID_REQUEST: there is no separate controller quorum (Kafka's own
code for it, UNSUPPORTED_ENDPOINT_TYPE, is newer than the error table here).
"""

from __future__ import annotations

from typing import Any

from groupcoord.broker.acl import Resource
from groupcoord.broker.authorized_ops import NOT_REQUESTED, authorized_operations
from groupcoord.broker.metadata import brokers_entries
from groupcoord.broker.state import Broker
from groupcoord.errors import ErrorCode
from groupcoord.handling import RequestContext
from groupcoord.protocol.entities import NO_THROTTLE, child, err, make

BROKERS_ENDPOINT = 1


def handle(broker: Broker, ctx: RequestContext, request: Any) -> Any:
    messages = broker.registry.lookup(ctx.api_key, ctx.api_version)
    resp_t = messages.response_type
    broker_t = child(resp_t, "brokers")
    endpoint_type = int(getattr(request, "endpoint_type", BROKERS_ENDPOINT))
    if endpoint_type != BROKERS_ENDPOINT:
        return make(
            resp_t,
            throttle_time=NO_THROTTLE,
            error_code=err(ErrorCode.INVALID_REQUEST),
            error_message=f"endpoint type {endpoint_type} is not served: there are no separate controllers",
            endpoint_type=endpoint_type,
            cluster_id=broker.cluster_id,
            controller_id=-1,
            brokers=(),
        )
    include_ops = bool(getattr(request, "include_cluster_authorized_operations", False))
    return make(
        resp_t,
        throttle_time=NO_THROTTLE,
        error_code=err(ErrorCode.NONE),
        error_message=None,
        # AuthHelper.computeDescribeClusterResponse (KIP-430)
        cluster_authorized_operations=(
            authorized_operations(Resource.CLUSTER) if include_ops else NOT_REQUESTED
        ),
        endpoint_type=BROKERS_ENDPOINT,
        cluster_id=broker.cluster_id,
        controller_id=broker.node_id if broker.cluster is None else broker.cluster.controller_id,
        brokers=brokers_entries(broker, broker_t, ctx.listener, id_field="broker_id"),
    )
