"""Static replacement and group deletion, from the audit against Kafka's source (issue 11, 6-8).

* A static member replaced by a new process keeps the client id and host it joined with.
* A replacement between the leader's SyncGroup and the member's own leaves the old member id
  pending, so the pending-sync timeout starts a rebalance.
* DeleteGroups whose tombstones cannot be written leaves the group as it was, in memory as in
  the log, and answers the write error as Kafka maps it.
"""

from __future__ import annotations

import pytest
from coord_harness import DELAY, GROUP, PROTOCOLS, REBALANCE, SESSION, Harness, ListSink, Reply

from groupcoord.clock import ManualClock
from groupcoord.coordinator.records import GroupMetadataValue
from groupcoord.errors import ErrorCode
from groupcoord.protocol.group_messages import (
    DeleteGroupResult,
    DeleteGroupsResponse,
    DescribeGroupsResponse,
    JoinGroupRequest,
    JoinGroupResponse,
)
from groupcoord.runtime.group_coordinator import GroupCoordinator

NONE = ErrorCode.NONE


def _join(
    h: Harness, instance: str, *, member_id: str = "", client_id: str, client_host: str
) -> Reply[JoinGroupResponse]:
    r: Reply[JoinGroupResponse] = Reply()
    h.c.join_group(
        JoinGroupRequest(
            group_id=GROUP,
            session_timeout_ms=SESSION,
            rebalance_timeout_ms=REBALANCE,
            member_id=member_id,
            group_instance_id=instance,
            protocol_type="consumer",
            protocols=PROTOCOLS,
            version=9,
            client_id=client_id,
            client_host=client_host,
        ),
        r,
    )
    return r


def _reload(h: Harness) -> GroupCoordinator:
    """A fresh coordinator that loads the group's partition from the writes that were durable."""
    fresh = GroupCoordinator(h.config, ManualClock(h.clock.now_ms()), record_sink=ListSink())
    p = fresh.partition_for(GROUP)
    fresh.unload_partition(p)
    fresh.begin_loading(p)
    for _, records in h.sink.appended:
        for rec in records:
            fresh.replay(rec)
    fresh.complete_loading(p)
    return fresh


# ------------------------------------------------------------------ item 6: client id and host
def test_static_member_replaced_by_a_new_process_keeps_its_client_id_and_host() -> None:
    """``ClassicGroup.replaceStaticMember`` (4.x) builds the new member from the removed one's
    ``clientId()`` and ``clientHost()`` (3.x ``GroupMetadata.replaceStaticMember`` re-keys the
    same ``MemberMetadata``): the new process's client id and host are not taken, in memory,
    in DescribeGroups, or in the persisted group record."""
    h = Harness()
    lead = _join(h, "L", client_id="app-1", client_host="/10.0.0.1")
    h.advance(DELAY)
    gen = lead.generation_id
    assert h.sync(lead.member_id, gen, ((lead.member_id, b"L"),)).error is NONE
    again = _join(h, "L", client_id="app-2", client_host="/10.0.0.2")
    assert again.error is NONE and again.member_id != lead.member_id
    member = h.c.group(GROUP).members[again.member_id]  # type: ignore[union-attr]
    assert (member.client_id, member.client_host) == ("app-1", "/10.0.0.1")
    d: Reply[DescribeGroupsResponse] = Reply()
    h.c.describe_groups([GROUP], d)
    ((described,),) = [g.members for g in d.value.groups]
    assert (described.member_id, described.client_id, described.client_host) == (
        again.member_id,
        "app-1",
        "/10.0.0.1",
    )
    value = h.sink.records[-1].value
    assert isinstance(value, GroupMetadataValue)
    assert [(m.member_id, m.client_id, m.client_host) for m in value.members] == [
        (again.member_id, "app-1", "/10.0.0.1")
    ]
    loaded = _reload(h).group(GROUP)
    assert loaded is not None
    assert [(m.member_id, m.client_id, m.client_host) for m in loaded.members.values()] == [
        (again.member_id, "app-1", "/10.0.0.1")
    ]


# ------------------------------------------------------------------ item 7: pending sync
def test_static_replacement_between_the_leaders_sync_and_its_own_rebalances_at_the_sync_timeout() -> None:
    """``ClassicGroup.replaceStaticMember`` leaves ``pendingSyncMembers`` alone, so the old id
    stays pending after the new process's SyncGroup; ``GroupMetadataManager.expirePendingSync``
    (3.x ``GroupCoordinator.onExpirePendingSync``) then finds the group has not received every
    sync, removes the (already gone) old id and prepares a rebalance. Both live members stay."""
    h = Harness()
    lead = _join(h, "L", client_id="c", client_host="/h")
    fol = _join(h, "F", client_id="c", client_host="/h")
    h.advance(2 * DELAY)  # join complete: CompletingRebalance, sync deadline = now + REBALANCE
    gen = lead.generation_id
    l_id, f_id = lead.member_id, fol.member_id
    assert h.sync(l_id, gen, ((l_id, b"L"), (f_id, b"F"))).error is NONE
    assert h.state() == "Stable"
    # F's process is replaced before F's SyncGroup arrived
    new = _join(h, "F", client_id="c", client_host="/h")
    assert new.error is NONE and new.member_id != f_id
    synced = h.sync(new.member_id, gen, instance="F")
    assert (synced.error, synced.assignment) == (NONE, b"F")
    h.advance(REBALANCE // 2)
    assert h.heartbeat(l_id, gen, instance="L") is NONE
    assert h.heartbeat(new.member_id, gen, instance="F") is NONE
    assert h.state() == "Stable"
    h.advance(REBALANCE - REBALANCE // 2)  # the pending-sync deadline
    assert h.state() == "PreparingRebalance"
    assert list(h.c.group(GROUP).members) == [l_id, new.member_id]  # type: ignore[union-attr]
    assert h.heartbeat(new.member_id, gen, instance="F") is ErrorCode.REBALANCE_IN_PROGRESS
    assert [e.reason.value for e in h.events if e.type == "state_change"][-1] == "sync_timeout"


# ------------------------------------------------------------------ item 8: DeleteGroups write failure
@pytest.mark.parametrize(
    ("storage_error", "answered"),
    [
        (ErrorCode.KAFKA_STORAGE_ERROR, ErrorCode.NOT_COORDINATOR),
        (ErrorCode.NOT_LEADER_OR_FOLLOWER, ErrorCode.NOT_COORDINATOR),
        (ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, ErrorCode.COORDINATOR_NOT_AVAILABLE),
        (ErrorCode.NOT_ENOUGH_REPLICAS, ErrorCode.COORDINATOR_NOT_AVAILABLE),
        (ErrorCode.REQUEST_TIMED_OUT, ErrorCode.COORDINATOR_NOT_AVAILABLE),
        (ErrorCode.MESSAGE_TOO_LARGE, ErrorCode.UNKNOWN_SERVER_ERROR),
    ],
)
def test_delete_groups_whose_tombstones_fail_keeps_the_group_and_answers_the_mapped_error(
    storage_error: ErrorCode, answered: ErrorCode
) -> None:
    """Kafka 4.x ``GroupCoordinatorService.deleteGroups``: the write fails, ``GroupCoordinator``
    reverts the shard to its last committed state (the group is back, offsets and all) and the
    error is mapped by ``CoordinatorOperationExceptionHelper.handleOperationException``
    (see ``GroupCoordinatorServiceTest.testDeleteGroupsWithException``). Memory agrees with the
    log, so a restart shows the same group, and a later DeleteGroups succeeds."""
    h = Harness()
    (a,), gen = h.stable_group(1)
    h.commit({("t", 0): 7}, member_id=a, generation=gen)
    h.leave((a, None))
    h.advance(1)
    assert h.state() == "Empty"
    generation = h.c.group(GROUP).generation  # type: ignore[union-attr]
    events_before = len(h.events)
    h.sink.fail = storage_error
    r: Reply[DeleteGroupsResponse] = Reply()
    h.c.delete_groups([GROUP], r)
    assert r.value == DeleteGroupsResponse(results=(DeleteGroupResult(group_id=GROUP, error=answered),))
    group = h.c.group(GROUP)
    assert group is not None
    assert (group.state.value, group.generation) == ("Empty", generation)
    assert h.fetch(None) == {("t", 0): (7, None, "", NONE)}
    assert h.events[events_before:] == []  # the group never died
    loaded = _reload(h).group(GROUP)
    assert loaded is not None
    assert (loaded.state.value, loaded.generation, loaded.offsets) == ("Empty", generation, group.offsets)
    # the retry succeeds, and then the group is gone in memory and in the log
    h.sink.fail = None
    r2: Reply[DeleteGroupsResponse] = Reply()
    h.c.delete_groups([GROUP], r2)
    assert r2.value == DeleteGroupsResponse(results=(DeleteGroupResult(group_id=GROUP, error=NONE),))
    assert h.c.group(GROUP) is None
    assert _reload(h).group(GROUP) is None
    assert [e.reason.value for e in h.events[events_before:]] == ["group_deleted"]


def test_delete_groups_answers_each_group_and_keeps_only_the_ones_whose_write_failed() -> None:
    """Groups are deleted per ``__consumer_offsets`` partition write; one failing write does not
    change another group's answer (4.x schedules one write operation per partition)."""
    h = Harness()
    h.commit({("t", 0): 1}, group="kept")
    h.commit({("t", 0): 2}, group="gone")
    h.sink.hold = True
    r: Reply[DeleteGroupsResponse] = Reply()
    h.c.delete_groups(["kept", "gone"], r)
    (_, fail_kept), (_, ok_gone) = h.sink.held
    h.sink.held.clear()
    fail_kept(ErrorCode.KAFKA_STORAGE_ERROR)
    assert not r.done
    assert h.c.group("kept") is not None and h.c.group("kept").state.value == "Empty"  # type: ignore[union-attr]
    ok_gone(NONE)
    assert r.value == DeleteGroupsResponse(
        results=(
            DeleteGroupResult(group_id="kept", error=ErrorCode.NOT_COORDINATOR),
            DeleteGroupResult(group_id="gone", error=NONE),
        )
    )
    assert h.fetch(None, group="kept") == {("t", 0): (1, None, "", NONE)}
    assert h.c.group("gone") is None


def test_group_whose_deletion_is_in_flight_takes_no_new_members_until_it_is_decided() -> None:
    """While the tombstones are being written the group is Dead to other requests, as in Kafka
    3.x (``GroupMetadata`` in state Dead: JoinGroup answers COORDINATOR_NOT_AVAILABLE); when the
    write fails it is Empty again and the same JoinGroup succeeds."""
    h = Harness()
    h.commit({("t", 0): 1})
    h.sink.hold = True
    r: Reply[DeleteGroupsResponse] = Reply()
    h.c.delete_groups([GROUP], r)
    assert h.join("").error is ErrorCode.COORDINATOR_NOT_AVAILABLE
    h.sink.hold = False
    h.sink.release(ErrorCode.KAFKA_STORAGE_ERROR)
    assert r.value.results == (DeleteGroupResult(group_id=GROUP, error=ErrorCode.NOT_COORDINATOR),)
    assert h.join("").error is ErrorCode.MEMBER_ID_REQUIRED
    assert h.fetch(None) == {("t", 0): (1, None, "", NONE)}
