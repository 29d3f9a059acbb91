"""Random interleavings of join, sync, heartbeat, leave, commit and time, against invariants.

Up to 10 clients (dynamic or static; JoinGroup v3, v8 or v9; writes confirmed at once or
deferred until a "release" step) behave like simple Kafka consumers: they react to
each response the way a client would (take the member id from MEMBER_ID_REQUIRED and
rejoin, reset on UNKNOWN_MEMBER_ID, the leader assigns ``"<generation>:<client>"`` to
every member it was told about). After every step we check that

* no transition outside the table happens (an IllegalStateError would propagate),
* the group's leader is one of its members, and one client leads each generation,
* the generation never goes down,
* every SyncGroup success hands a client exactly what the leader assigned to it, and a
  Stable group's stored assignments are the leader's,
* no reply is given twice,

and at the end (and at random checkpoints) that replaying every record the coordinator
emitted, through the byte codec, into a fresh coordinator reproduces the persisted state.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from coord_harness import GROUP, ListSink
from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st

from groupcoord.clock import ManualClock
from groupcoord.coordinator.config import GroupConfig
from groupcoord.coordinator.group import ClassicGroup
from groupcoord.coordinator.records import decode_record, encode_record
from groupcoord.coordinator.state import GroupState
from groupcoord.errors import ErrorCode
from groupcoord.protocol.group_messages import (
    HeartbeatRequest,
    JoinGroupRequest,
    JoinGroupResponse,
    LeaveGroupMember,
    LeaveGroupRequest,
    OffsetCommitPartition,
    OffsetCommitRequest,
    OffsetCommitTopic,
    SyncGroupRequest,
    SyncGroupResponse,
)
from groupcoord.runtime.group_coordinator import GroupCoordinator

PROTOCOL_CHOICES: tuple[tuple[tuple[str, bytes], ...], ...] = (
    (("range", b"r1"),),
    (("range", b"r2"),),
    (("range", b"r1"), ("roundrobin", b"x")),
    (("roundrobin", b"x"), ("range", b"r1")),
)


class Once:
    """A reply callable that fails the test when called twice."""

    def __init__(self, on_value: Callable[[Any], None]) -> None:
        self.called = False
        self.on_value = on_value

    def __call__(self, value: Any) -> None:
        assert not self.called, f"reply given twice: {value!r}"
        self.called = True
        self.on_value(value)


@dataclass
class Client:
    index: int
    instance: str | None
    session: int
    rebalance: int
    version: int = 9
    member_id: str = ""
    generation: int = -1
    join_seq: int = 0
    plan: tuple[str, ...] | None = None  # member ids to assign, when this client leads


@dataclass
class World:
    clients: list[Client]
    clock: ManualClock = field(default_factory=lambda: ManualClock(1_000_000))
    sink: ListSink = field(default_factory=ListSink)
    owner: dict[str, int] = field(default_factory=dict)  # member id -> client index
    leaders: dict[int, set[str]] = field(default_factory=dict)  # generation -> leader ids
    last_generation: int = 0
    coordinator: GroupCoordinator = field(init=False)

    def __post_init__(self) -> None:
        counter = itertools.count(1)
        self.coordinator = GroupCoordinator(
            CONFIG,
            self.clock,
            record_sink=self.sink,
            event_sink=lambda _e: None,
            member_id_factory=lambda prefix: f"{prefix}-{next(counter)}",
        )

    # ------------------------------------------------------------ client behaviour
    def join(self, c: Client, protocols: tuple[tuple[str, bytes], ...]) -> None:
        c.join_seq += 1
        seq = c.join_seq

        def on_join(resp: JoinGroupResponse) -> None:
            if resp.member_id:
                self.owner.setdefault(resp.member_id, c.index)
            if seq != c.join_seq:
                return  # an answer to a request this client gave up on
            if resp.error is ErrorCode.NONE:
                c.member_id, c.generation = resp.member_id, resp.generation_id
                self.leaders.setdefault(resp.generation_id, set()).add(resp.leader)
                leads = resp.leader == resp.member_id and not resp.skip_assignment
                c.plan = tuple(m.member_id for m in resp.members) if leads else None
            elif resp.error is ErrorCode.MEMBER_ID_REQUIRED:
                c.member_id = resp.member_id
                self.join(c, protocols)
            elif resp.error in (
                ErrorCode.UNKNOWN_MEMBER_ID,
                ErrorCode.FENCED_INSTANCE_ID,
                ErrorCode.GROUP_MAX_SIZE_REACHED,
            ):
                c.member_id, c.generation, c.plan = "", -1, None

        self.coordinator.join_group(
            JoinGroupRequest(
                group_id=GROUP,
                session_timeout_ms=c.session,
                rebalance_timeout_ms=c.rebalance,
                member_id=c.member_id,
                group_instance_id=c.instance,
                protocol_type="consumer",
                protocols=protocols,
                version=c.version,
                client_id=f"client{c.index}",
                client_host="/127.0.0.1",
            ),
            Once(on_join),
        )

    def sync(self, c: Client) -> None:
        if not c.member_id or c.generation < 0:
            return
        gen = c.generation
        plan = ()
        if c.plan is not None:
            plan = tuple((m, f"{gen}:{self.owner[m]}".encode()) for m in c.plan)

        def on_sync(resp: SyncGroupResponse) -> None:
            if resp.error is ErrorCode.NONE:
                assert resp.assignment == f"{gen}:{c.index}".encode(), (resp, gen, c)
            elif resp.error in (ErrorCode.UNKNOWN_MEMBER_ID, ErrorCode.FENCED_INSTANCE_ID):
                c.member_id, c.generation, c.plan = "", -1, None

        self.coordinator.sync_group(
            SyncGroupRequest(
                group_id=GROUP,
                generation_id=gen,
                member_id=c.member_id,
                group_instance_id=c.instance,
                protocol_type="consumer",
                protocol_name=None,
                assignments=plan,
                version=4,
            ),
            Once(on_sync),
        )

    def heartbeat(self, c: Client) -> None:
        def on_hb(resp: Any) -> None:
            if resp.error in (ErrorCode.UNKNOWN_MEMBER_ID, ErrorCode.FENCED_INSTANCE_ID):
                c.member_id, c.generation, c.plan = "", -1, None

        self.coordinator.heartbeat(
            HeartbeatRequest(
                group_id=GROUP,
                generation_id=c.generation,
                member_id=c.member_id,
                group_instance_id=c.instance,
            ),
            Once(on_hb),
        )

    def leave(self, c: Client) -> None:
        member = LeaveGroupMember(member_id=c.member_id, group_instance_id=c.instance)
        self.coordinator.leave_group(
            LeaveGroupRequest(group_id=GROUP, members=(member,), version=5), Once(lambda _r: None)
        )
        c.member_id, c.generation, c.plan = "", -1, None

    def commit(self, c: Client, offset: int, simple: bool) -> None:
        part = OffsetCommitPartition(partition=c.index % 3, offset=offset, leader_epoch=None, metadata="")
        self.coordinator.offset_commit(
            OffsetCommitRequest(
                group_id=GROUP,
                generation_id=-1 if simple else c.generation,
                member_id="" if simple else c.member_id,
                group_instance_id=None if simple else c.instance,
                retention_time_ms=-1,
                topics=(OffsetCommitTopic(name="topic", partitions=(part,)),),
                version=8,
            ),
            Once(lambda _r: None),
        )

    def advance(self, ms: int) -> None:
        target = self.clock.now_ms() + ms
        while (d := self.coordinator.next_deadline()) is not None and d <= target:
            self.clock.set(max(d, self.clock.now_ms()))
            self.coordinator.poll()
        self.clock.set(target)
        self.coordinator.poll()

    # ------------------------------------------------------------ invariants
    def check(self) -> None:
        g = self.coordinator.group(GROUP)
        if g is None:
            return
        assert g.leader_id is None or g.leader_id in g.members
        assert (g.leader_id is None) == (not g.members)
        assert g.generation >= self.last_generation
        self.last_generation = g.generation
        assert g.num_awaiting_join == sum(1 for m in g.members.values() if m.awaiting_join is not None)
        assert set(g.static_members.values()) <= set(g.members)
        if g.state is GroupState.EMPTY:
            assert not g.members
        for gen, leader_ids in self.leaders.items():
            owners = {self.owner[leader] for leader in leader_ids if leader in self.owner}
            assert len(owners) <= 1, (gen, leader_ids)
        if g.state is GroupState.STABLE:
            for mid, m in g.members.items():
                assert m.assignment == f"{g.generation}:{self.owner[mid]}".encode(), (mid, m.assignment)


def persisted_view(g: ClassicGroup) -> dict[str, Any]:
    protocol = g.protocol_name
    return {
        "generation": g.generation,
        "protocol_type": g.protocol_type,
        "protocol": protocol,
        "leader": g.leader_id,
        "members": [
            (
                m.member_id,
                m.group_instance_id,
                m.client_id,
                m.client_host,
                m.session_timeout_ms,
                m.rebalance_timeout_ms,
                m.metadata(protocol) if protocol else b"",
                m.assignment,
            )
            for m in g.members.values()
        ],
    }


def check_replay(world: World) -> None:
    fresh = GroupCoordinator(CONFIG, ManualClock(world.clock.now_ms()), record_sink=ListSink())
    p = fresh.partition_for(GROUP)
    fresh.unload_partition(p)
    fresh.begin_loading(p)
    for _, records in world.sink.appended:
        for rec in records:
            decoded = decode_record(*encode_record(rec))
            assert decoded is not None
            fresh.replay(decoded)
    fresh.complete_loading(p)
    live = world.coordinator.group(GROUP)
    loaded = fresh.group(GROUP)
    if live is None:
        assert loaded is None
        return
    if loaded is None:
        # nothing persisted yet: the first generation is still being formed
        assert not live.offsets
        assert live.state in (GroupState.PREPARING_REBALANCE, GroupState.COMPLETING_REBALANCE) or (
            live.state is GroupState.EMPTY and live.generation == 0
        )
        return
    assert loaded.offsets == live.offsets
    if live.state in (GroupState.STABLE, GroupState.EMPTY):
        assert loaded.state is live.state
        assert persisted_view(loaded) == persisted_view(live)


CONFIG = GroupConfig(
    group_min_session_timeout_ms=10,
    group_max_session_timeout_ms=600_000,
    group_initial_rebalance_delay_ms=50,
    offsets_retention_check_interval_ms=10**12,
)

client_st = st.builds(
    lambda i, static, session, rebalance, version: Client(
        index=i,
        instance=f"inst{i}" if static else None,
        session=session,
        rebalance=rebalance,
        # JoinGroup v3 (no MEMBER_ID_REQUIRED) is dynamic only; static members need v5+
        version=max(version, 5) if static else version,
    ),
    st.just(0),
    st.booleans(),
    st.sampled_from([200, 500, 1_000]),
    st.sampled_from([200, 500, 2_000]),
    st.sampled_from([3, 8, 9]),
)

join_st = st.tuples(st.just("join"), st.integers(0, 9), st.integers(0, len(PROTOCOL_CHOICES) - 1))
sync_st = st.tuples(st.just("sync"), st.integers(0, 9), st.just(0))
heartbeat_st = st.tuples(st.just("heartbeat"), st.integers(0, 9), st.just(0))
advance_st = st.tuples(st.just("advance"), st.sampled_from([1, 50, 150, 300, 600, 2_500]), st.just(0))
# weighted towards the actions that move a group through generations
action_st = st.one_of(
    join_st,
    join_st,
    join_st,
    sync_st,
    sync_st,
    sync_st,
    heartbeat_st,
    heartbeat_st,
    advance_st,
    advance_st,
    st.tuples(st.just("leave"), st.integers(0, 9), st.just(0)),
    st.tuples(st.just("commit"), st.integers(0, 9), st.integers(0, 1)),
    st.tuples(st.just("replay"), st.just(0), st.just(0)),
    st.tuples(st.just("release"), st.just(0), st.just(0)),
)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    clients=st.lists(client_st, min_size=1, max_size=10),
    actions=st.lists(action_st, min_size=10, max_size=80),
    deferred_writes=st.booleans(),
)
def test_random_interleavings_keep_the_group_invariants(
    clients: list[Client], actions: list[tuple[str, int, int]], deferred_writes: bool
) -> None:
    for i, c in enumerate(clients):
        c.index = i
        if c.instance is not None:
            c.instance = f"inst{i}"
    world = World(clients)
    # deferred: the sink confirms writes only on "release" (or before a replay check), so
    # replies that wait for durability interleave with everything else
    world.sink.hold = deferred_writes
    offset = 0
    for kind, a, b in actions:
        if kind == "advance":
            world.advance(a)
        elif kind == "release":
            world.sink.release()
        elif kind == "replay":
            world.sink.release()
            check_replay(world)
        else:
            c = clients[a % len(clients)]
            if kind == "join":
                world.join(c, PROTOCOL_CHOICES[b])
            elif kind == "sync":
                world.sync(c)
            elif kind == "heartbeat":
                world.heartbeat(c)
            elif kind == "leave":
                world.leave(c)
            elif kind == "commit":
                offset += 1
                world.commit(c, offset, simple=bool(b))
        world.check()
    # let the group settle: everyone keeps syncing/heartbeating as a client would
    world.sink.hold = False
    world.sink.release()
    for _ in range(6):
        for c in clients:
            if c.member_id:
                world.sync(c)
                world.heartbeat(c)
        world.advance(60)
        world.check()
    g = world.coordinator.group(GROUP)
    event(f"final state: {'none' if g is None else g.state.value}")
    event(f"generations reached: {min(world.last_generation, 5)}{'+' if world.last_generation >= 5 else ''}")
    check_replay(world)
