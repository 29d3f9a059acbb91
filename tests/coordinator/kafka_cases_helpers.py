"""Shared set-up of the Kafka GroupCoordinatorTest equivalents (test_kafka_cases*.py)."""

from __future__ import annotations

from coord_harness import DELAY, GROUP, REBALANCE, SESSION, Harness, Reply

from groupcoord.coordinator.state import GroupState
from groupcoord.errors import ErrorCode
from groupcoord.protocol.group_messages import DeleteGroupsResponse, JoinGroupResponse

NONE = ErrorCode.NONE
MAX_SIZE = 4  # Kafka's GroupCoordinatorTest GroupMaxSize
SUPERSET = (("range", b"range-md"), ("roundrobin", b"rr-md"))
RANGE_ONLY = (("range", b"range-md"),)
RR_ONLY = (("roundrobin", b"rr-md"),)
OTHER_GROUP = "otherGroup"


def static_pair(h: Harness, *, session: int = SESSION, rebalance: int = REBALANCE) -> tuple[int, str, str]:
    """Kafka's ``staticMembersJoinAndRebalance``: static leader "leader" and follower "follower"
    (both offering range and roundrobin) joined and synced; returns (generation, leader, follower)."""
    lead = h.join(instance="leader", protocols=SUPERSET, session=session, rebalance=rebalance)
    fol = h.join(instance="follower", protocols=SUPERSET, session=session, rebalance=rebalance)
    h.advance(2 * DELAY)
    assert (lead.error, fol.error, lead.generation_id, fol.generation_id) == (NONE, NONE, 1, 1)
    l_id, f_id = lead.member_id, fol.member_id
    assert lead.leader == l_id
    assert h.sync(l_id, 1, ((l_id, b"L"), (f_id, b"F")), instance="leader").error is NONE
    assert h.sync(f_id, 1, instance="follower").assignment == b"F"
    assert h.state() == "Stable"
    return 1, l_id, f_id


def instances(r: Reply[JoinGroupResponse]) -> set[str | None]:
    return {m.group_instance_id for m in r.members}


def dead_group(h: Harness, group: str = "deadGroupId") -> None:
    """A group in state Dead, as Kafka's tests add one to the cache: here a DeleteGroups whose
    tombstones are still being written (Kafka marks the group Dead before it appends them)."""
    assert h.commit({("t", 0): 1}, group=group) == {("t", 0): NONE}
    h.sink.hold = True
    deleted: Reply[DeleteGroupsResponse] = Reply()
    h.c.delete_groups([group], deleted)
    g = h.c.group(group)
    assert not deleted.done and g is not None and g.state is GroupState.DEAD


def unowned_group(h: Harness) -> str:
    """A group whose __consumer_offsets partition this coordinator does not own (Kafka's
    ``otherGroup``, which hashes to the partition its suite never adds as owned)."""
    p = h.c.partition_for(OTHER_GROUP)
    assert p != h.c.partition_for(GROUP)
    h.c.unload_partition(p)
    return OTHER_GROUP
