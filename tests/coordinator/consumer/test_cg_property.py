"""Property: random schedules of joins, leaves, crashes (session timeouts), subscription changes,
topic changes and heartbeats that do or do not acknowledge never give a partition to two members
at once; and once every member keeps heartbeating and acknowledging, every subscribed partition
ends up owned, with the group Stable. The same core, a manual clock and no sleeps (the harness
also replays the log after every step)."""

from __future__ import annotations

import uuid

import pytest
from cg_harness import GROUP, Harness, image, owned
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from groupcoord.coordinator.consumer.config import ConsumerGroupConfig
from groupcoord.coordinator.consumer.group import ConsumerGroup, ConsumerGroupState

T = [uuid.UUID(int=i + 1) for i in range(3)]
NAMES = ["t0", "t1", "t2"]

step = st.one_of(
    st.tuples(st.just("join"), st.integers(0, 4), st.sets(st.sampled_from(NAMES), max_size=3)),
    st.tuples(st.just("beat"), st.integers(0, 4), st.booleans()),
    st.tuples(st.just("leave"), st.integers(0, 4), st.just(False)),
    st.tuples(st.just("crash"), st.integers(0, 4), st.just(False)),
    st.tuples(st.just("subscribe"), st.integers(0, 4), st.sets(st.sampled_from(NAMES), max_size=3)),
    st.tuples(st.just("topics"), st.integers(1, 6), st.integers(0, 2)),
)


def _check_single_owner(h: Harness) -> None:
    group = h.manager.groups.get(GROUP)
    if group is None:
        return
    _check_state_counted_right(group)
    seen: dict[tuple[uuid.UUID, int], str] = {}
    for m in group.members.values():
        for assignment in (m.assigned_partitions, m.partitions_pending_revocation):
            for t, parts in assignment.items():
                for p in parts:
                    assert (t, p) not in seen, f"{t}-{p} owned by {seen[(t, p)]} and {m.member_id}"
                    seen[(t, p)] = m.member_id


def _check_state_counted_right(group: ConsumerGroup) -> None:
    """The group keeps a count of its unreconciled members instead of scanning them on every
    request; the state it gives is the one Kafka's ``ConsumerGroup.maybeUpdateGroupState``
    computes from every member."""
    if not group.members:
        scanned = ConsumerGroupState.EMPTY
    elif group.group_epoch > group.assignment_epoch:
        scanned = ConsumerGroupState.ASSIGNING
    elif any(not m.is_reconciled_to(group.assignment_epoch) for m in group.members.values()):
        scanned = ConsumerGroupState.RECONCILING
    else:
        scanned = ConsumerGroupState.STABLE
    assert group.state is scanned


@pytest.mark.parametrize("interval", [0, 1000], ids=["computed-per-bump", "batched-1000ms"])
@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(step, max_size=40))
def test_no_partition_has_two_owners_and_everything_converges(
    interval: int, steps: list[tuple[str, int, object]]
) -> None:
    """With the target computed on every epoch bump (interval 0, Kafka 4.1) and with Kafka 4.3's
    assignment batching (KIP-1263: steps 10 ms apart, so most bumps fall inside the interval and
    members reconcile with the last target while the group is Assigning)."""
    counts = [4, 3, 2]
    h = Harness.make(
        image(*((NAMES[i], T[i], counts[i]) for i in range(3))),
        config=ConsumerGroupConfig(assignment_interval_ms=interval),
    )
    subs: dict[str, set[str]] = {}
    for kind, who, arg in steps:
        mid = f"m{who}"
        member = h.manager.groups[GROUP].members.get(mid) if GROUP in h.manager.groups else None
        if kind == "join" and member is None:
            assert isinstance(arg, set)
            r = h.join(mid, tuple(sorted(arg)))
            assert r.error_code == 0
            subs[mid] = arg
        elif kind == "beat" and member is not None:
            ack = owned(member.assigned_partitions) if arg else None
            r = h.heartbeat(member_id=mid, member_epoch=member.member_epoch, topic_partitions=ack)
            assert r.error_code == 0
        elif kind == "subscribe" and member is not None:
            assert isinstance(arg, set)
            r = h.heartbeat(
                member_id=mid, member_epoch=member.member_epoch, subscribed_topic_names=tuple(sorted(arg))
            )
            assert r.error_code == 0
        elif kind == "leave" and member is not None:
            assert h.heartbeat(member_id=mid, member_epoch=-1).error_code == 0
        elif kind == "crash" and member is not None:
            timer = h.timers.pop(f"session-timeout-{GROUP}-{mid}")
            h.apply(h.manager.on_timer(timer, h.now))
        elif kind == "topics":
            assert isinstance(arg, int)
            counts[arg] = who
            h.manager.on_metadata_update(
                image(*((NAMES[i], T[i], counts[i]) for i in range(3)), version=len(steps))
            )
        _check_single_owner(h)
        h.now += 10
    if GROUP not in h.manager.groups or not h.manager.groups[GROUP].members:
        return
    # Everyone heartbeats and acknowledges until nothing changes (a round per interval, so that a
    # batched target is computed by the first heartbeat of the round).
    for _ in range(12):
        h.now += interval
        for mid, m in sorted(h.manager.groups[GROUP].members.items()):
            r = h.heartbeat(
                member_id=mid, member_epoch=m.member_epoch, topic_partitions=owned(m.assigned_partitions)
            )
            assert r.error_code == 0
            _check_single_owner(h)
    group = h.manager.groups[GROUP]
    assert group.state is ConsumerGroupState.STABLE
    wanted = {
        (T[i], p)
        for m in group.members.values()
        for i, n in enumerate(NAMES)
        if n in m.subscribed_topic_names
        for p in range(counts[i])
    }
    got = {
        (t, p) for m in group.members.values() for t, parts in m.assigned_partitions.items() for p in parts
    }
    assert got == wanted
