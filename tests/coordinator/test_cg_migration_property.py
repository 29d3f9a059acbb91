"""Property: in a group upgraded from classic, random schedules of consumer-protocol members
joining, heartbeating (acknowledging or not) and leaving, and of classic members (eager or
cooperative) joining, heartbeating, re-joining when told and leaving, never leave a partition in
two clients' hands; and once everybody keeps heartbeating, every partition is owned and the
group is Stable. Clients are modelled as Kafka's: a classic member owns what its last SyncGroup
gave it (an eager one drops everything before it re-joins), a consumer-protocol member what its
last heartbeat's assignment said. The coordinator and runtime under a manual clock; the policy
is ``upgrade`` so the group stays a consumer group (the downgrade has its own tests)."""

from __future__ import annotations

from dataclasses import dataclass, field

from coord_harness import Harness
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from migration_helpers import (
    GROUP,
    PARTITIONS,
    TOPIC_ID,
    harness,
    heartbeat,
    partitions_of,
    protocols,
    stable_classic_group,
)

from groupcoord.errors import ErrorCode


@dataclass
class Client:
    name: str
    classic: bool
    eager: bool = False
    member_id: str = ""
    epoch: int = 0
    owned: frozenset[int] = field(default_factory=frozenset)
    live: bool = False


step = st.one_of(
    st.tuples(st.just("cjoin"), st.integers(0, 2), st.booleans()),
    st.tuples(st.just("cbeat"), st.integers(0, 2), st.booleans()),
    st.tuples(st.just("cleave"), st.integers(0, 2), st.booleans()),
    st.tuples(st.just("kjoin"), st.integers(0, 2), st.booleans()),
    st.tuples(st.just("kbeat"), st.integers(0, 2), st.booleans()),
    st.tuples(st.just("kleave"), st.integers(0, 2), st.booleans()),
    st.tuples(st.just("tick"), st.just(0), st.booleans()),
)


def _single_owner(clients: list[Client]) -> None:
    seen: dict[int, str] = {}
    for c in clients:
        if not c.live:
            continue
        for p in c.owned:
            assert p not in seen, f"partition {p} owned by {seen[p]} and {c.name}"
            seen[p] = c.name


def _consumer_beat(h: Harness, c: Client, ack: bool) -> None:
    r = heartbeat(h, c.member_id, c.epoch, tuple(sorted(c.owned)) if ack else None)
    assert r.value.error_code == 0, r.value
    c.epoch = r.value.member_epoch
    if r.value.assignment is not None:
        c.owned = frozenset(r.value.assignment.get(TOPIC_ID, ()))


def _classic_rejoin(h: Harness, c: Client) -> None:
    if c.eager:
        c.owned = frozenset()  # an eager client revokes everything before it re-joins
    join = h.join(c.member_id, protocols=protocols(tuple(sorted(c.owned))))
    assert join.error is ErrorCode.NONE, join.value
    c.epoch = join.generation_id
    sync = h.sync(c.member_id, c.epoch, protocol_name=join.protocol_name)
    if sync.error is ErrorCode.REBALANCE_IN_PROGRESS:
        return  # the epoch moved on meanwhile: its next heartbeat sends it back
    c.owned = frozenset(partitions_of(sync.value))


def _classic_beat(h: Harness, c: Client) -> None:
    error = h.heartbeat(c.member_id, c.epoch)
    assert error in (ErrorCode.NONE, ErrorCode.REBALANCE_IN_PROGRESS), error
    if error is ErrorCode.REBALANCE_IN_PROGRESS:
        _classic_rejoin(h, c)


@settings(max_examples=120, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(step, max_size=30), st.booleans())
def test_mixed_groups_never_give_a_partition_to_two_members(
    steps: list[tuple[str, int, bool]], eager: bool
) -> None:
    h = harness(group_consumer_migration_policy="upgrade")
    k0, k1 = stable_classic_group(h, ((0, 1), (2, 3)))
    consumers = [Client(f"c{i}", classic=False, member_id=f"c{i}") for i in range(3)]
    classics = [Client(f"k{i}", classic=True, eager=eager) for i in range(3)]
    classics[0].member_id, classics[0].owned, classics[0].epoch, classics[0].live = (
        k0,
        frozenset({0, 1}),
        1,
        True,
    )
    classics[1].member_id, classics[1].owned, classics[1].epoch, classics[1].live = (
        k1,
        frozenset({2, 3}),
        1,
        True,
    )
    clients = consumers + classics
    # The upgrade.
    c0 = consumers[0]
    c0.live = True
    _consumer_beat(h, c0, True)
    _single_owner(clients)

    for kind, who, flag in steps:
        c = consumers[who] if kind[0] == "c" else classics[who]
        group = h.c.consumer_group(GROUP)
        assert group is not None
        if kind == "cjoin" and not c.live:
            c.live, c.epoch, c.owned = True, 0, frozenset()
            _consumer_beat(h, c, True)
        elif kind == "cbeat" and c.live:
            _consumer_beat(h, c, flag)
        elif kind == "cleave" and c.live:
            r = heartbeat(h, c.member_id, -1, None)
            assert r.value.error_code == 0
            c.live, c.owned = False, frozenset()
        elif kind == "kjoin" and not c.live and group.members:
            first = h.join("", protocols=protocols())
            assert first.error is ErrorCode.MEMBER_ID_REQUIRED
            c.member_id, c.live, c.owned = first.member_id, True, frozenset()
            _classic_rejoin(h, c)
        elif kind == "kbeat" and c.live:
            _classic_beat(h, c)
        elif kind == "kleave" and c.live:
            out = h.leave((c.member_id, None))
            assert out.members[0].error is ErrorCode.NONE
            c.live, c.owned = False, frozenset()
        elif kind == "tick":
            h.advance(100)
            for k in classics:  # classic sessions (500 ms) are kept by the heartbeat thread
                if k.live:
                    _classic_beat(h, k)
        _single_owner(clients)

    # Everybody keeps heartbeating and acknowledging: the group converges.
    for _ in range(12):
        for c in clients:
            if c.live:
                _consumer_beat(h, c, True) if not c.classic else _classic_beat(h, c)
            _single_owner(clients)
    live = [c for c in clients if c.live]
    group = h.c.consumer_group(GROUP)
    assert group is not None
    if live:
        assert frozenset().union(*(c.owned for c in live)) == frozenset(range(PARTITIONS))
        assert group.state.value == "Stable"
        assert {m.member_id for m in group.members.values()} == {c.member_id for c in live}
