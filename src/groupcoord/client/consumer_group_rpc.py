"""Blocking calls of the consumer-protocol requests over ``NetworkClient``: one request, its
member-core answer (mapping in ``consumer_group_wire.py``, through ``wire``)."""

from __future__ import annotations

from typing import Any

from groupcoord.client import wire
from groupcoord.client.connection import NetworkClient
from groupcoord.client.consumer_group_events import Request
from groupcoord.client.consumer_group_messages import (
    ConsumerGroupDescribeRequest,
    ConsumerGroupDescribeResponse,
    ConsumerGroupHeartbeatRequest,
    ConsumerGroupHeartbeatResponse,
)
from groupcoord.client.consumer_group_wire import too_old, unsupported
from groupcoord.protocol import codec


def send(
    client: NetworkClient, node_id: int, request: Request | ConsumerGroupDescribeRequest, timeout_ms: int
) -> Any:
    """Send ``request`` to ``node_id`` over the blocking client and return the member-core
    answer. A broker without the API, or with a version too old for the request, is answered
    locally (see the module docstring); a transport failure raises as ``NetworkClient`` does."""
    table = client.versions(node_id)
    loose: Any = request  # wire maps the classic member's types and hands ours to consumer_group_wire
    api_key, fields = wire.request_fields(loose)
    if table is not None:
        if not table.supports(api_key):
            return unsupported(request)
        local = too_old(request, table.version(api_key))
        if local is not None:
            return local
    inflight = client.send(node_id, api_key, fields, timeout_ms=timeout_ms)
    client.wait([inflight], None)
    try:
        response = inflight.result()
    except codec.UnsupportedApiError:
        return unsupported(request)
    local = too_old(request, inflight.version)  # the connection negotiated while it was queued
    return local if local is not None else wire.read_response(loose, response)


def heartbeat(
    client: NetworkClient, coordinator_id: int, request: ConsumerGroupHeartbeatRequest, timeout_ms: int
) -> ConsumerGroupHeartbeatResponse:
    answer: ConsumerGroupHeartbeatResponse = send(client, coordinator_id, request, timeout_ms)
    return answer


def describe(
    client: NetworkClient, node_id: int, group_ids: tuple[str, ...], timeout_ms: int
) -> ConsumerGroupDescribeResponse:
    answer: ConsumerGroupDescribeResponse = send(
        client, node_id, ConsumerGroupDescribeRequest(group_ids=group_ids), timeout_ms
    )
    return answer
