"""A member core's group request handed to the coordinator core in one process, no sockets.

Member cores and the coordinator speak one vocabulary (:mod:`groupcoord.protocol.group_messages`,
:mod:`groupcoord.protocol.consumer_group_messages`), so this is wiring only: pick the
:class:`GroupCoordinator` entry for the request's type and, for the requests whose answer names
the member's client (JoinGroup, ConsumerGroupHeartbeat), attach the header's client id and the
peer as the broker's decoder does. The simulator (``pipeline.simulate``) and the in-process member
tests (``tests/client/member_world.py``, ``tests/client/cg848_world.py``) drive real member cores
against the real coordinator core through it.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace
from typing import Any

from groupcoord.protocol.consumer_group_messages import ConsumerGroupHeartbeatRequest
from groupcoord.protocol.group_messages import (
    HeartbeatRequest,
    JoinGroupRequest,
    LeaveGroupRequest,
    OffsetCommitRequest,
    OffsetFetchRequest,
    SyncGroupRequest,
)
from groupcoord.runtime.group_coordinator import GroupCoordinator


def call_coordinator(
    c: GroupCoordinator,
    req: object,
    reply: Callable[[Any], None],
    *,
    client_id: str,
    client_host: str = "/127.0.0.1",
) -> None:
    """Hand a member's group request to the coordinator core; ``reply`` gets the answer (at once,
    or later for a parked JoinGroup/SyncGroup or a write awaiting its append): the response type
    of the request's API (typed ``Any`` so one caller's reply can take each API's answer)."""
    if isinstance(req, JoinGroupRequest):
        c.join_group(replace(req, client_id=client_id, client_host=client_host), reply)
    elif isinstance(req, SyncGroupRequest):
        c.sync_group(req, reply)
    elif isinstance(req, HeartbeatRequest):
        c.heartbeat(req, reply)
    elif isinstance(req, LeaveGroupRequest):
        c.leave_group(req, reply)
    elif isinstance(req, OffsetCommitRequest):
        # the version both member cores negotiate with our broker over the wire: a
        # consumer-protocol member's commit below v9 is refused UNSUPPORTED_VERSION (Kafka's
        # OffsetMetadataManager.validateOffsetCommit), and v9 means the same as v8 to a classic one
        if req.version < 9:
            req = OffsetCommitRequest(
                group_id=req.group_id,
                generation_id=req.generation_id,
                member_id=req.member_id,
                group_instance_id=req.group_instance_id,
                retention_time_ms=req.retention_time_ms,
                topics=req.topics,
                version=9,
            )
        c.offset_commit(req, reply)
    elif isinstance(req, OffsetFetchRequest):
        c.offset_fetch(req, reply)
    elif isinstance(req, ConsumerGroupHeartbeatRequest):
        c.consumer_group_heartbeat(replace(req, client_id=client_id, client_host=client_host), reply)
    else:
        raise ValueError(f"not a group request: {type(req).__name__}")
