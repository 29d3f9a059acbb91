"""Drive the coordinator in process (runtime and shard) under a manual clock; writes go to a list.

Kafka's own coordinator tests use: min session 10 ms, max session 600 000 ms, session and
rebalance timeouts 500 ms, initial delay 50 ms. We use the same scale.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, Generic, TypeVar

from groupcoord.clock import ManualClock
from groupcoord.coordinator.config import GroupConfig
from groupcoord.coordinator.events import GroupEvent
from groupcoord.coordinator.records import CoordinatorRecord
from groupcoord.errors import ErrorCode
from groupcoord.protocol.group_messages import (
    HeartbeatRequest,
    HeartbeatResponse,
    JoinGroupRequest,
    JoinGroupResponse,
    LeaveGroupMember,
    LeaveGroupRequest,
    LeaveGroupResponse,
    OffsetCommitPartition,
    OffsetCommitRequest,
    OffsetCommitResponse,
    OffsetCommitTopic,
    OffsetFetchGroup,
    OffsetFetchRequest,
    OffsetFetchResponse,
    OffsetFetchTopic,
    SyncGroupRequest,
    SyncGroupResponse,
)
from groupcoord.runtime.group_coordinator import GroupCoordinator

T = TypeVar("T")

SESSION = 500
REBALANCE = 500
DELAY = 50
GROUP = "group"
PROTOCOLS: tuple[tuple[str, bytes], ...] = (("range", b"range-md"), ("roundrobin", b"rr-md"))


class Reply(Generic[T]):
    """Captures the replies a handler gives; a handler must reply exactly once."""

    def __init__(self) -> None:
        self.values: list[T] = []

    def __call__(self, value: T) -> None:
        self.values.append(value)

    @property
    def done(self) -> bool:
        return bool(self.values)

    @property
    def value(self) -> T:
        assert len(self.values) == 1, f"expected exactly one reply, got {self.values!r}"
        return self.values[0]

    def __getattr__(self, name: str) -> Any:
        return getattr(self.value, name)


@dataclass
class ListSink:
    """Writes are "durable" at once (``fail`` set: fail with that code; ``hold``: park them)."""

    appended: list[tuple[int, list[CoordinatorRecord]]] = field(default_factory=list)
    fail: ErrorCode | None = None
    hold: bool = False
    held: list[tuple[list[CoordinatorRecord], Callable[[ErrorCode], None]]] = field(default_factory=list)

    def append(
        self, partition: int, records: Sequence[CoordinatorRecord], done: Callable[[ErrorCode], None]
    ) -> None:
        if self.fail is not None:
            done(self.fail)
            return
        if self.hold:
            self.held.append((list(records), done))
            self.appended.append((partition, list(records)))
            return
        self.appended.append((partition, list(records)))
        done(ErrorCode.NONE)

    def release(self, error: ErrorCode = ErrorCode.NONE) -> None:
        held, self.held = self.held, []
        for _, done in held:
            done(error)

    @property
    def records(self) -> list[CoordinatorRecord]:
        return [r for _, rs in self.appended for r in rs]


class Harness:
    def __init__(
        self, *, sink: ListSink | None = None, clock: ManualClock | None = None, **config: Any
    ) -> None:
        defaults: dict[str, Any] = dict(
            group_min_session_timeout_ms=10,
            group_max_session_timeout_ms=600_000,
            group_initial_rebalance_delay_ms=DELAY,
        )
        defaults.update(config)
        self.config = GroupConfig(**defaults)
        #: a ManualClock, or anything with its now_ms/advance/set
        self.clock = clock if clock is not None else ManualClock(1_000_000)
        self.sink = sink if sink is not None else ListSink()
        self.events: list[GroupEvent] = []
        counter = itertools.count(1)
        self.coordinator = GroupCoordinator(
            self.config,
            self.clock,
            record_sink=self.sink,
            event_sink=self.events.append,
            member_id_factory=lambda prefix: f"{prefix}-{next(counter)}",
        )

    @property
    def c(self) -> GroupCoordinator:
        return self.coordinator

    # ------------------------------------------------------------ time
    def advance(self, ms: int) -> None:
        """Move time forward, firing every timer at its own deadline on the way."""
        target = self.clock.now_ms() + ms
        while True:
            d = self.c.next_deadline()
            if d is None or d > target:
                break
            if d > self.clock.now_ms():
                self.clock.set(d)
            self.c.poll()
        self.clock.set(target)
        self.c.poll()

    # ------------------------------------------------------------ requests
    def join(
        self,
        member_id: str = "",
        *,
        group: str = GROUP,
        instance: str | None = None,
        protocols: tuple[tuple[str, bytes], ...] = PROTOCOLS,
        protocol_type: str = "consumer",
        session: int = SESSION,
        rebalance: int = REBALANCE,
        version: int = 9,
        client_id: str = "client",
        reason: str | None = None,
    ) -> Reply[JoinGroupResponse]:
        r: Reply[JoinGroupResponse] = Reply()
        self.c.join_group(
            JoinGroupRequest(
                group_id=group,
                session_timeout_ms=session,
                rebalance_timeout_ms=rebalance,
                member_id=member_id,
                group_instance_id=instance,
                protocol_type=protocol_type,
                protocols=protocols,
                reason=reason,
                version=version,
                client_id=client_id,
                client_host="/127.0.0.1",
            ),
            r,
        )
        return r

    def join_new(self, **kw: Any) -> Reply[JoinGroupResponse]:
        """A dynamic v4+ member's two-step join: MEMBER_ID_REQUIRED, then the real join."""
        first = self.join("", **kw)
        assert first.error is ErrorCode.MEMBER_ID_REQUIRED, first.value
        return self.join(first.member_id, **kw)

    def sync(
        self,
        member_id: str,
        generation: int,
        assignments: tuple[tuple[str, bytes], ...] = (),
        *,
        group: str = GROUP,
        instance: str | None = None,
        protocol_type: str | None = "consumer",
        protocol_name: str | None = "range",
        version: int = 5,
    ) -> Reply[SyncGroupResponse]:
        r: Reply[SyncGroupResponse] = Reply()
        self.c.sync_group(
            SyncGroupRequest(
                group_id=group,
                generation_id=generation,
                member_id=member_id,
                group_instance_id=instance,
                protocol_type=protocol_type,
                protocol_name=protocol_name,
                assignments=assignments,
                version=version,
            ),
            r,
        )
        return r

    def heartbeat(
        self, member_id: str, generation: int, *, group: str = GROUP, instance: str | None = None
    ) -> ErrorCode:
        r: Reply[HeartbeatResponse] = Reply()
        self.c.heartbeat(
            HeartbeatRequest(
                group_id=group, generation_id=generation, member_id=member_id, group_instance_id=instance
            ),
            r,
        )
        return r.value.error

    def leave(
        self,
        *members: tuple[str, str | None],
        group: str = GROUP,
        version: int = 5,
        reason: str | None = None,
    ) -> LeaveGroupResponse:
        r: Reply[LeaveGroupResponse] = Reply()
        self.c.leave_group(
            LeaveGroupRequest(
                group_id=group,
                members=tuple(
                    LeaveGroupMember(member_id=m, group_instance_id=i, reason=reason) for m, i in members
                ),
                version=version,
            ),
            r,
        )
        return r.value

    def commit(
        self,
        offsets: dict[tuple[str, int], int],
        *,
        member_id: str = "",
        generation: int = -1,
        group: str = GROUP,
        instance: str | None = None,
        metadata: str = "",
        leader_epoch: int | None = None,
        retention: int = -1,
        version: int = 8,
    ) -> dict[tuple[str, int], ErrorCode]:
        by_topic: dict[str, list[OffsetCommitPartition]] = {}
        for (t, p), o in offsets.items():
            by_topic.setdefault(t, []).append(
                OffsetCommitPartition(partition=p, offset=o, leader_epoch=leader_epoch, metadata=metadata)
            )
        r: Reply[OffsetCommitResponse] = Reply()
        self.c.offset_commit(
            OffsetCommitRequest(
                group_id=group,
                generation_id=generation,
                member_id=member_id,
                group_instance_id=instance,
                retention_time_ms=retention,
                topics=tuple(OffsetCommitTopic(name=t, partitions=tuple(ps)) for t, ps in by_topic.items()),
                version=version,
            ),
            r,
        )
        return {(t.name, p.partition): p.error for t in r.value.topics for p in t.partitions}

    def fetch(
        self, topics: dict[str, tuple[int, ...]] | None, *, group: str = GROUP
    ) -> dict[tuple[str, int], tuple[int, int | None, str, ErrorCode]]:
        r: Reply[OffsetFetchResponse] = Reply()
        fetch_topics = (
            None
            if topics is None
            else tuple(OffsetFetchTopic(name=t, partitions=ps) for t, ps in topics.items())
        )
        self.c.offset_fetch(
            OffsetFetchRequest(groups=(OffsetFetchGroup(group_id=group, topics=fetch_topics),)),
            r,
        )
        (g,) = r.value.groups
        assert g.error is ErrorCode.NONE, g
        return {
            (t.name, p.partition): (p.offset, p.leader_epoch, p.metadata, p.error)
            for t in g.topics
            for p in t.partitions
        }

    # ------------------------------------------------------------ composite
    def state(self, group: str = GROUP) -> str:
        g = self.c.group(group)
        return "Dead" if g is None else g.state.value

    def stable_group(
        self, n: int = 2, *, assignments: dict[int, bytes] | None = None, **kw: Any
    ) -> tuple[list[str], int]:
        """n dynamic members joined and synced: returns (member ids in join order, generation)."""
        joins = [self.join_new(**kw) for _ in range(n)]
        # joiners after the first extend the initial delay once: done at 2 x delay
        self.advance(2 * DELAY if n > 1 else DELAY)
        assert all(j.done for j in joins), [j.values for j in joins]
        ids = [j.member_id for j in joins]
        gen = joins[0].generation_id
        leader = joins[0].leader
        assert leader == ids[0]
        given = assignments or {i: f"assignment-{i}".encode() for i in range(n)}
        plan = tuple((ids[i], given[i]) for i in range(n) if i in given)
        skw: dict[str, Any] = {"protocol_name": joins[0].protocol_name}
        if "group" in kw:
            skw["group"] = kw["group"]
        if "protocol_type" in kw:
            skw["protocol_type"] = kw["protocol_type"]
        syncs = [self.sync(leader, gen, plan, **skw)] + [self.sync(m, gen, **skw) for m in ids[1:]]
        assert all(s.error is ErrorCode.NONE for s in syncs)
        assert self.state(kw.get("group", GROUP)) == "Stable"
        return ids, gen
