"""JoinGroup (v0-9) and SyncGroup (v0-5) response bodies, written with :class:`WireWriter`.

A rebalance answers every member's JoinGroup and SyncGroup at once, and the leader's JoinGroup
answer lists every member with its subscription; building kio entities for those and walking them
with kio's generic writer is much slower (docs/benchmarks.md). These writers produce the same bytes
(tested against kio at every version) from plain values. Versions 6+ of JoinGroup and 4+ of
SyncGroup are "flexible": compact lengths and an (empty) tagged-field section after every structure.
"""

from __future__ import annotations

from collections.abc import Iterable

from groupcoord.protocol.primitives import WireWriter


def join_group_response(
    version: int,
    *,
    error: int,
    generation_id: int,
    protocol_type: str | None,
    protocol_name: str | None,
    leader: str,
    skip_assignment: bool,
    member_id: str,
    members: Iterable[tuple[str, str | None, bytes]],
    throttle_ms: int = 0,
) -> bytes:
    """A JoinGroup response body; ``members`` are (member id, group instance id, metadata).

    Before v7 the protocol name is not nullable (None is written as ""), and protocol type
    and skip_assignment (v9) are not in the message; the instance id is there from v5.
    """
    w = WireWriter(flexible=version >= 6)
    if version >= 2:
        w.int32(throttle_ms)
    w.int16(error)
    w.int32(generation_id)
    if version >= 7:
        w.string(protocol_type)
        w.string(protocol_name)
    else:
        w.string(protocol_name or "")
    w.string(leader)
    if version >= 9:
        w.boolean(skip_assignment)
    w.string(member_id)
    listed = list(members)
    w.array_length(len(listed))
    for mid, instance_id, metadata in listed:
        w.string(mid)
        if version >= 5:
            w.string(instance_id)
        w.bytes_(metadata)
        w.tagged_fields()
    w.tagged_fields()
    return w.getvalue()


def sync_group_response(
    version: int,
    *,
    error: int,
    protocol_type: str | None,
    protocol_name: str | None,
    assignment: bytes,
    throttle_ms: int = 0,
) -> bytes:
    """A SyncGroup response body (protocol type and name from v5)."""
    w = WireWriter(flexible=version >= 4)
    if version >= 1:
        w.int32(throttle_ms)
    w.int16(error)
    if version >= 5:
        w.string(protocol_type)
        w.string(protocol_name)
    w.bytes_(assignment)
    w.tagged_fields()
    return w.getvalue()

