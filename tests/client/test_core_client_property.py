"""Property: random schedules of up to 10 member cores against the coordinator core.

Joins, poll gaps (some past max.poll.interval.ms), crashes, restarts (static members keep
their group.instance.id) and cut connections, all under one ManualClock. After every instant:
no partition is owned by two STABLE members of the same generation. Once the members stay up
(no more gaps, cuts or crashes): every member is STABLE in the coordinator's generation and
every partition is owned by exactly one of them. For the eager assignors (range, roundrobin,
sticky) and the cooperative one (cooperative-sticky).
"""

from __future__ import annotations

from dataclasses import dataclass

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from member_world import GROUP, World

from groupcoord.client.states import MemberState
from groupcoord.client.types import TopicPartition

TOPICS = {"t": 5, "u": 3}
MAX_MEMBERS = 10
_KEEP: dict[int, object] = {}


@dataclass(frozen=True)
class Op:
    kind: str  # add | crash | restart | stall | cut | run
    who: int = 0
    ms: int = 0
    static: bool = False


ops = st.one_of(
    st.builds(Op, kind=st.just("add"), static=st.booleans()),
    st.builds(Op, kind=st.just("crash"), who=st.integers(0, 20)),
    st.builds(Op, kind=st.just("restart"), who=st.integers(0, 20)),
    st.builds(Op, kind=st.just("stall"), who=st.integers(0, 20), ms=st.sampled_from([500, 2000, 3500])),
    st.builds(Op, kind=st.just("cut"), who=st.integers(0, 20), ms=st.sampled_from([300, 1200])),
    st.builds(Op, kind=st.just("run"), ms=st.integers(0, 1500)),
)


def _check_same_generation_disjoint(
    w: World, history: dict[int, dict[int | str, frozenset[TopicPartition]]]
) -> None:
    """No partition owned by two STABLE members of one generation, now or at any earlier instant
    (``history``: generation -> owner -> what it held while STABLE in it; crashed members'
    entries stay). A static member's owner is its group.instance.id: a restarted instance
    legitimately resumes its predecessor's assignment in the same generation (KIP-345)."""
    by_gen: dict[int, dict[TopicPartition, str]] = {}
    for mm in w.live():
        core = mm.core
        if core.state is not MemberState.STABLE:
            continue
        gen = core.generation.generation_id
        seen = by_gen.setdefault(gen, {})
        for tp in core.assignment():
            assert tp not in seen, f"{tp} owned by {seen[tp]} and {mm.name} in generation {gen}"
            seen[tp] = mm.name
        held = history.setdefault(gen, {})
        owner: int | str = core.rebalance_config.group_instance_id or id(core)
        _KEEP.setdefault(id(core), core)  # ids stay unique: no history owner is ever collected
        held[owner] = held.get(owner, frozenset()) | core.assignment()
        for other, parts in held.items():
            if other != owner:
                both = parts & held[owner]
                assert not both, f"{sorted(both)} held by two members of generation {gen}"


def _run_schedule(strategy: str, schedule: list[Op]) -> None:
    w = World(dict(TOPICS))
    history: dict[int, dict[int | str, frozenset[TopicPartition]]] = {}
    _KEEP.clear()
    w.after_turn = lambda: _check_same_generation_disjoint(w, history)
    names: list[str] = []
    static_of: dict[str, str | None] = {}

    def add(static: bool) -> None:
        name = f"m{len(names)}"
        instance = f"i-{name}" if static else None
        static_of[name] = instance
        names.append(name)
        if instance is None:
            w.add(name, partition_assignment_strategy=strategy)
        else:
            w.add(name, partition_assignment_strategy=strategy, group_instance_id=instance)

    add(False)
    for op in schedule:
        live = [n for n in names if w.members[n].alive]
        if op.kind == "add":
            if len(names) < MAX_MEMBERS:
                add(op.static)
        elif op.kind == "crash":
            if live:
                w.crash(live[op.who % len(live)])
        elif op.kind == "restart":
            name = names[op.who % len(names)]
            instance = static_of[name]
            if instance is None:
                w.restart(name, partition_assignment_strategy=strategy)
            else:
                w.restart(name, partition_assignment_strategy=strategy, group_instance_id=instance)
        elif op.kind == "stall":
            if live:
                mm = w.members[live[op.who % len(live)]]
                mm.stalled = True
                w.run(op.ms)
                mm.stalled = False
        elif op.kind == "cut":
            if live:
                mm = w.members[live[op.who % len(live)]]
                mm.cut = True
                w.run(op.ms)
                mm.cut = False
        else:
            w.run(op.ms)
    # from here on everybody stays up
    if not w.live():
        add(False)
    w.run(15_000)
    live = w.live()
    gen = w.generation()
    assert w.group_state() == "Stable", w.group_state()
    for mm in live:
        assert mm.core.state is MemberState.STABLE, (mm.name, mm.core.state)
        assert mm.core.generation.generation_id == gen, (mm.name, mm.core.generation, gen)
    owners: dict[TopicPartition, list[str]] = {}
    for mm in live:
        for tp in mm.owned():
            owners.setdefault(tp, []).append(mm.name)
    assert set(owners) == w.all_partitions(), owners
    assert all(len(v) == 1 for v in owners.values()), owners
    g = w.coordinator.group(GROUP)
    assert g is not None and len(g.members) == len(live)


@pytest.mark.parametrize("strategy", ["range", "cooperative-sticky", "roundrobin", "sticky"])
# derandomize: the same 150 schedules on every run (CI stays deterministic); widen locally with
# e.g. max_examples=1500 and derandomize=False to search (that is how the test below was found)
@settings(
    max_examples=150,
    deadline=None,
    derandomize=True,
    database=None,
    suppress_health_check=[HealthCheck.too_slow],
)
@given(schedule=st.lists(ops, max_size=25))
def test_random_schedules_never_double_own_and_converge(strategy: str, schedule: list[Op]) -> None:
    _run_schedule(strategy, schedule)


def test_static_member_reset_between_cooperative_rounds_still_hands_over_the_partition() -> None:
    """Found by the property above: a static cooperative member receives the round-one
    assignment (one partition to revoke) while its application is stalled, its poll timeout
    resets it, and its rejoin is a static restart that gets the old assignment back without a
    rebalance. The revoked partition must still find an owner (docs/client.md, where we differ)."""
    _run_schedule(
        "cooperative-sticky",
        [
            Op(kind="add", static=False),
            Op(kind="add", static=True),
            Op(kind="stall", who=0, ms=500),
            Op(kind="restart", who=1),
            Op(kind="stall", who=0, ms=500),
            Op(kind="stall", who=2, ms=3500),
        ],
    )
