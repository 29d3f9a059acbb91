"""The console's memory of rebalances, fed the coordinator's group events in the order the
coordinator emits them (``docs/group-events.md``: a member event before the state change it
causes; the move to Stable when the assignment is durable).

A rebalance is what the group-events page defines: it begins with the move to
PreparingRebalance (its cause is that event's reason, its trigger that event's member), later
moves back to PreparingRebalance restart it, and it ends with the group Stable, Empty or Dead.
"""

from __future__ import annotations

from groupcoord.console.history import EVENTS_KEPT, LAG_REPEAT_MS, GroupHistory, LagHistory, Owners
from groupcoord.console.views import Move
from groupcoord.coordinator.events import EventReason, GroupEvent


def event(
    t: int,
    typ: str,
    reason: EventReason,
    *,
    to: str | None = None,
    frm: str | None = None,
    gen: int = 1,
    member: str | None = None,
    client: str | None = None,
    count: int = 1,
    group: str = "g",
) -> GroupEvent:
    return GroupEvent(
        time_ms=t,
        group_id=group,
        generation=gen,
        type=typ,
        from_state=frm,
        to_state=to,
        reason=reason,
        member_id=member,
        group_instance_id=None,
        client_id=client,
        client_host="/127.0.0.1" if member else None,
        client_reason=None,
        protocol_type="consumer",
        protocol_name="range",
        member_count=count,
    )


R = EventReason


def test_a_rebalance_runs_from_preparing_to_stable_with_its_cause_trigger_and_moves() -> None:
    owners: dict[str, Owners] = {"g": {("t", 0): "a", ("t", 1): "a"}}
    history = GroupHistory(lambda gid: owners[gid])
    history.on_event(event(1000, "state_change", R.GROUP_CREATED, to="Empty", gen=0, count=0))
    history.on_event(event(1010, "member_added", R.NEW_MEMBER_JOINED, member="a", client="ca", gen=0))
    history.on_event(
        event(
            1010, "state_change", R.NEW_MEMBER_JOINED, frm="Empty", to="PreparingRebalance", member="a", gen=0
        )
    )
    history.on_event(
        event(1300, "state_change", R.JOIN_COMPLETED, frm="PreparingRebalance", to="CompletingRebalance")
    )
    history.on_event(
        event(1350, "state_change", R.ASSIGNMENT_PERSISTED, frm="CompletingRebalance", to="Stable")
    )
    first = history.last_rebalance("g")
    assert first is not None
    assert (first.cause, first.member_id, first.started_ms, first.ended_ms, first.outcome) == (
        "new_member_joined",
        "a",
        1010,
        1350,
        "Stable",
    )
    assert first.stood_still_ms(now_ms=99_999) == 340
    assert (first.members_before, first.members_after, first.generation_before, first.generation_after) == (
        0,
        1,
        0,
        1,
    )
    assert first.moved == (
        Move(topic="t", partition=0, before=None, after="a"),
        Move(topic="t", partition=1, before=None, after="a"),
    )

    # b joins; the rebalance restarts once (a sync timeout) before it ends; one partition moves
    owners["g"] = {("t", 0): "a", ("t", 1): "b"}
    history.on_event(event(2000, "member_added", R.NEW_MEMBER_JOINED, member="b", client="cb", count=2))
    history.on_event(
        event(
            2000,
            "state_change",
            R.NEW_MEMBER_JOINED,
            frm="Stable",
            to="PreparingRebalance",
            member="b",
            client="cb",
            count=2,
        )
    )
    running = history.last_rebalance("g")
    assert running is not None and running.ended_ms is None and running.outcome is None
    assert running.stood_still_ms(now_ms=2500) == 500
    history.on_event(
        event(
            2100,
            "state_change",
            R.JOIN_COMPLETED,
            frm="PreparingRebalance",
            to="CompletingRebalance",
            gen=2,
            count=2,
        )
    )
    history.on_event(
        event(
            2200,
            "state_change",
            R.SYNC_TIMEOUT,
            frm="CompletingRebalance",
            to="PreparingRebalance",
            gen=2,
            count=2,
        )
    )
    history.on_event(
        event(
            2300,
            "state_change",
            R.JOIN_COMPLETED,
            frm="PreparingRebalance",
            to="CompletingRebalance",
            gen=3,
            count=2,
        )
    )
    history.on_event(
        event(
            2400,
            "state_change",
            R.ASSIGNMENT_PERSISTED,
            frm="CompletingRebalance",
            to="Stable",
            gen=3,
            count=2,
        )
    )
    rebalances = history.rebalances("g")
    assert len(rebalances) == 2
    second = rebalances[1]
    assert (second.cause, second.client_id, second.restarts, second.outcome) == (
        "new_member_joined",
        "cb",
        ("sync_timeout",),
        "Stable",
    )
    assert (second.members_before, second.members_after, second.generation_after) == (1, 2, 3)
    assert second.moved == (Move(topic="t", partition=1, before="a", after="b"),)
    # events: newest first
    assert [e.reason for e in history.events("g")][:2] == ["assignment_persisted", "join_completed"]


def test_a_group_left_empty_ends_its_rebalance_and_a_dead_group_is_forgotten() -> None:
    history = GroupHistory(lambda gid: {})
    history.on_event(event(1000, "member_removed", R.MEMBER_LEFT, member="a", client="ca", count=0))
    history.on_event(
        event(1000, "state_change", R.MEMBER_LEFT, frm="Stable", to="PreparingRebalance", member="a", count=0)
    )
    history.on_event(
        event(1005, "state_change", R.JOIN_COMPLETED, frm="PreparingRebalance", to="Empty", gen=2, count=0)
    )
    last = history.last_rebalance("g")
    assert last is not None and (last.cause, last.outcome, last.ended_ms) == ("member_left", "Empty", 1005)
    history.on_event(event(3000, "state_change", R.GROUP_DELETED, frm="Empty", to="Dead", gen=2, count=0))
    assert history.rebalances("g") == () and history.events("g") == ()


def test_events_kept_per_group_are_bounded() -> None:
    history = GroupHistory(lambda gid: None)
    for i in range(EVENTS_KEPT + 10):
        history.on_event(event(i, "member_updated", R.MEMBER_REJOINED_WITH_NEW_METADATA, member="a"))
    kept = history.events("g")
    assert len(kept) == EVENTS_KEPT and kept[0].time_ms == EVENTS_KEPT + 9


def test_lag_history_skips_repeats_until_they_are_old() -> None:
    lags = LagHistory()
    lags.add("g", 1000, 5, 100.0)
    lags.add("g", 2000, 5, 100.0)  # the same: skipped
    lags.add("g", 3000, 7, 200.0)
    lags.add("g", 3000 + LAG_REPEAT_MS, 7, 200.0)  # the same, but the last is old: kept
    assert [(p.time_ms, p.lag, p.time_lag_ms) for p in lags.points("g")] == [
        (1000, 5, 100.0),
        (3000, 7, 200.0),
        (3000 + LAG_REPEAT_MS, 7, 200.0),
    ]
    lags.forget("g")
    assert lags.points("g") == ()


def test_consumer_group_epoch_bumps_are_rebalances_until_reconciled() -> None:
    """KIP-848: a bump (a member joined: Stable -> Reconciling) runs until the group is Stable
    again; a bump the group stays Stable through was reconciled in its own write (duration 0);
    a leave's bump names no member, so the member_removed event before it and the member's
    earlier events name it. Event order as coordinator/consumer_groups.py emits a write's events:
    the core's member events and the bump, then the state changes."""
    owners: dict[str, Owners] = {"g": {("t", 0): "a", ("t", 1): "a"}}
    history = GroupHistory(lambda gid: owners[gid])
    on = history.on_event
    on(event(1000, "member_added", R.NEW_MEMBER_JOINED, member="a", client="ca", gen=1))
    on(event(1000, "epoch_bump", R.GROUP_CREATED, member="a", client="ca", gen=1))
    on(event(1000, "state_change", R.GROUP_CREATED, to="Empty", gen=1))
    on(event(1000, "state_change", R.GROUP_CREATED, frm="Empty", to="Stable", gen=1))
    on(event(2000, "member_added", R.NEW_MEMBER_JOINED, member="b", client="cb", gen=2, count=2))
    on(event(2000, "epoch_bump", R.NEW_MEMBER_JOINED, member="b", client="cb", gen=2, count=2))
    on(event(2000, "state_change", R.NEW_MEMBER_JOINED, frm="Stable", to="Reconciling", gen=2, count=2))
    # the consumer group's first commit creates its offsets-only classic entry: not a change
    on(event(2100, "state_change", R.GROUP_CREATED, to="Empty", gen=0, count=0))
    owners["g"] = {("t", 0): "a", ("t", 1): "b"}
    on(event(2500, "state_change", R.RECONCILED, frm="Reconciling", to="Stable", gen=2, count=2))
    # a subscription change that moves nothing: the group stays Stable (no state change)
    on(event(3000, "epoch_bump", R.SUBSCRIPTION_CHANGED, member="a", client="ca", gen=3, count=2))
    (first, join, same) = history.rebalances("g")
    assert (first.protocol, first.cause, first.client_id, first.ended_ms, first.outcome) == (
        "consumer",
        "group_created",
        "ca",
        1000,
        "Stable",
    )
    assert (join.cause, join.client_id, join.members_before, join.members_after) == (
        "new_member_joined",
        "cb",
        1,
        2,
    )
    assert (join.generation_before, join.generation_after, join.ended_ms, join.outcome) == (
        1,
        2,
        2500,
        "Stable",
    )
    assert join.moved == (Move(topic="t", partition=1, before="a", after="b"),)
    assert (same.cause, same.started_ms, same.ended_ms, same.outcome, same.moved) == (
        "subscription_changed",
        3000,
        3000,
        "Stable",
        (),
    )
    # b leaves (the bump names nobody), a is still reconciling when a's own change bumps again
    on(event(4000, "member_removed", R.MEMBER_LEFT, member="b", gen=4, count=1))
    on(event(4000, "epoch_bump", R.MEMBER_LEFT, gen=4, count=1))
    on(event(4000, "state_change", R.MEMBER_LEFT, frm="Stable", to="Assigning", gen=4, count=1))
    on(event(4200, "epoch_bump", R.SUBSCRIPTION_CHANGED, member="a", client="ca", gen=5, count=1))
    leave, overtaken = history.rebalances("g")[-2:]
    assert (leave.cause, leave.member_id, leave.client_id, leave.members_before) == (
        "member_left",
        "b",
        "cb",
        2,
    )
    assert (leave.ended_ms, leave.outcome) == (4200, "Superseded")
    assert (overtaken.ended_ms, overtaken.outcome) == (None, None)


def test_a_leave_whose_removal_event_names_its_client_keeps_that_client() -> None:
    """The member_removed event before a leave's bump may carry the member's client itself (the
    member was still in the group when the event was made); the bump is named by it, although
    that event has already dropped the member from the known clients."""
    history = GroupHistory(lambda gid: {})
    on = history.on_event
    on(event(1000, "member_added", R.NEW_MEMBER_JOINED, member="a", client="ca", gen=1))
    on(event(1000, "epoch_bump", R.GROUP_CREATED, member="a", client="ca", gen=1))
    on(event(2000, "member_removed", R.MEMBER_LEFT, member="a", client="ca", gen=2, count=0))
    on(event(2000, "epoch_bump", R.MEMBER_LEFT, gen=2, count=0))
    leave = history.rebalances("g")[-1]
    assert (leave.cause, leave.member_id, leave.client_id) == ("member_left", "a", "ca")
