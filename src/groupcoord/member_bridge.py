"""The member core's requests carried to the coordinator core in-process, and the answers back.

:func:`call_coordinator` translates one version-neutral ``client.messages`` request into the
coordinator's ``protocol.group_messages`` request, hands it to a :class:`GroupCoordinator` and maps the
answer back to the ``client.messages`` response the member core reads. :func:`error_response`
builds the response a request gets when it fails with one error code. No sockets, no wire
encoding: the simulator (``pipeline.simulate``) and the in-process member tests
(``tests/client/member_world.py``) both drive real member cores against the real coordinator
core through this one mapping; :func:`call_consumer_group_heartbeat` does the same for the
KIP-848 member's ConsumerGroupHeartbeat.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import replace

from groupcoord.client import consumer_group_messages as cgm
from groupcoord.client import messages as m
from groupcoord.runtime.group_coordinator import GroupCoordinator

log = logging.getLogger(__name__)

Reply = Callable[[m.Response], None]


def call_coordinator(
    c: GroupCoordinator,
    req: m.Request,
    reply: Reply,
    *,
    client_id: str,
    client_host: str = "/127.0.0.1",
) -> None:
    """Hand a group request to the coordinator core; ``reply`` gets the member-side response
    (at once, or later for a parked JoinGroup/SyncGroup or a commit awaiting its append)."""
    if isinstance(req, m.JoinGroupRequest):
        # the header's client id and the peer, as the broker's decoder attaches them
        c.join_group(replace(req, client_id=client_id, client_host=client_host), reply)
    elif isinstance(req, m.SyncGroupRequest):
        c.sync_group(req, reply)
    elif isinstance(req, m.HeartbeatRequest):
        c.heartbeat(req, reply)
    elif isinstance(req, m.LeaveGroupRequest):
        c.leave_group(req, reply)
    elif isinstance(req, m.OffsetCommitRequest):
        c.offset_commit(req, reply)
    elif isinstance(req, m.OffsetFetchRequest):
        c.offset_fetch(req, reply)
    else:
        raise ValueError(f"not a group request: {type(req).__name__}")


def call_consumer_group_heartbeat(
    c: GroupCoordinator,
    req: cgm.ConsumerGroupHeartbeatRequest,
    reply: Callable[[cgm.ConsumerGroupHeartbeatResponse], None],
    *,
    client_id: str,
    client_host: str = "/127.0.0.1",
) -> None:
    """KIP-848's ConsumerGroupHeartbeat to the coordinator core and back (the consumer-protocol
    member's one group request besides commits), with the header's client id and the peer."""
    c.consumer_group_heartbeat(replace(req, client_id=client_id, client_host=client_host), reply)
