"""Member cores and groupcoord's coordinator core in one process, under one ManualClock.

No sockets: :class:`World` carries each :class:`~groupcoord.client.member.Outbound` to the
coordinator core of the broker it names (translating ``client.messages`` to the coordinator's
``api`` types and back) and hands the answers to the member's ``on_response``. Time moves only
through :meth:`World.run`, which jumps from deadline to deadline (the coordinator's timers,
every member's ``next_deadline_ms`` / ``next_heartbeat_deadline_ms``).

A member "polls" (its application calls ``poll``) unless ``stalled``; its heartbeat thread
(``heartbeat_poll``) turns whenever it is due, stalled or not. ``cut`` members' requests fail
(``on_failure``) as if their connection broke. ``inject`` replaces the coordinator's answer to
a member's next request of a given type with an error, for table rows the coordinator does not
produce on its own in a scenario.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from groupcoord.client import messages as m
from groupcoord.client.config import ConsumerConfig
from groupcoord.client.consumer_core import (
    ConsumerCoordinator,
    PartitionsAssigned,
    PartitionsLost,
    PartitionsRevoked,
)
from groupcoord.client.events import MemberEvent
from groupcoord.client.outbox import Outbound
from groupcoord.client.states import MemberState
from groupcoord.client.types import TopicPartition
from groupcoord.clock import ManualClock
from groupcoord.coordinator.config import GroupConfig
from groupcoord.coordinator.records import CoordinatorRecord
from groupcoord.errors import ErrorCode
from groupcoord.runtime.group_coordinator import GroupCoordinator
from groupcoord.runtime.in_process import call_coordinator

GROUP = "g"


@dataclass
class LogSink:
    """The coordinator's record sink: every write is durable at once and kept for reloads."""

    appended: list[tuple[int, list[CoordinatorRecord]]] = field(default_factory=list)

    def append(
        self, partition: int, records: Sequence[CoordinatorRecord], done: Callable[[ErrorCode], None]
    ) -> None:
        self.appended.append((partition, list(records)))
        done(ErrorCode.NONE)


MEMBER_DEFAULTS: dict[str, Any] = {
    "group.id": GROUP,
    "session.timeout.ms": 1000,
    "heartbeat.interval.ms": 300,
    "max.poll.interval.ms": 3000,
    "retry.backoff.ms": 50,
    "retry.backoff.max.ms": 400,
    "request.timeout.ms": 5000,
    "enable.auto.commit": False,
}


@dataclass(frozen=True)
class Sent:
    at: int
    request: m.Request
    node_id: int | None  # None: any broker
    state: MemberState  # the member's state when it sent


CRASH = "crash"
"""Injection: the member dies as it sends this request (the request is lost)."""


@dataclass
class Member:
    name: str
    core: ConsumerCoordinator
    events: list[MemberEvent] = field(default_factory=list)
    sent: list[Sent] = field(default_factory=list)
    alive: bool = True
    stalled: bool = False
    cut: bool = False
    outstanding: dict[int, int] = field(default_factory=dict)  # request id -> node id (None = -1)

    def owned(self) -> frozenset[TopicPartition]:
        return self.core.assignment()

    def sent_of(self, kind: type) -> list[Sent]:
        return [s for s in self.sent if isinstance(s.request, kind)]

    def events_of(self, kind: type) -> list[Any]:
        return [e for e in self.events if isinstance(e, kind)]


class Broker:
    def __init__(self, world: World, node: m.Node) -> None:
        self.node = node
        counter = world.member_ids
        self.coordinator = GroupCoordinator(
            world.group_config,
            world.clock,
            record_sink=world.sink,
            member_id_factory=lambda prefix: f"{prefix}-{next(counter)}",
        )


class World:
    def __init__(self, topics: dict[str, int], **group_config: Any) -> None:
        defaults: dict[str, Any] = dict(
            group_min_session_timeout_ms=10,
            group_max_session_timeout_ms=600_000,
            group_initial_rebalance_delay_ms=0,
        )
        defaults.update(group_config)
        self.group_config = GroupConfig(**defaults)
        self.clock = ManualClock(1_000_000)
        self.sink = LogSink()
        self.member_ids = itertools.count(1)
        self.topics = dict(topics)
        self.brokers: dict[int, Broker] = {}
        self.add_broker(1)
        self.coordinator_node = 1
        self.members: dict[str, Member] = {}
        self.inject: dict[tuple[str, type], list[Any]] = {}
        self.find_error: ErrorCode | None = None
        self.metadata_delay_ms = 0
        self._later: list[tuple[int, Member, int, m.Response]] = []
        self._inbox: list[tuple[Member, int, m.Response]] = []
        self.log: list[tuple[int, str, str]] = []
        self.after_turn: Callable[[], None] | None = None

    # ------------------------------------------------------------ setup
    def add_broker(self, node_id: int) -> Broker:
        b = Broker(self, m.Node(node_id=node_id, host="127.0.0.1", port=9000 + node_id))
        self.brokers[node_id] = b
        return b

    @property
    def coordinator(self) -> GroupCoordinator:
        return self.brokers[self.coordinator_node].coordinator

    def now(self) -> int:
        return self.clock.now_ms()

    def add(self, name: str, *, subscribe: tuple[str, ...] | None = None, **config: Any) -> Member:
        settings = dict(MEMBER_DEFAULTS)
        settings.update({k.replace("_", "."): v for k, v in config.items()})
        core = ConsumerCoordinator(ConsumerConfig.from_dict(settings))
        core.subscribe(subscribe if subscribe is not None else tuple(sorted(self.topics)))
        member = Member(name=name, core=core)
        self.members[name] = member
        return member

    def add_core(self, name: str, core: Any) -> Member:
        """A member driven by any AbstractCoordinator (custom protocol types)."""
        member = Member(name=name, core=core)
        self.members[name] = member
        return member

    def crash(self, name: str) -> None:
        """The process dies: nothing more is sent, answers are dropped."""
        self.members[name].alive = False

    def restart(self, name: str, **config: Any) -> Member:
        """A new process with the same name (and configuration overrides, e.g. the same instance id)."""
        old = self.members[name]
        old.alive = False
        return self.add(name, subscribe=tuple(sorted(old.core.subscription())), **config)

    def inject_error(self, name: str, kind: type, error: Any, *, after: int = 0, delay_ms: int = 0) -> None:
        """Answer ``name``'s next request of type ``kind`` (after letting ``after`` of them through)
        with ``error`` (an ErrorCode, a callable request -> response, or :data:`CRASH`).
        ``ErrorCode.NONE`` injects nothing: the coordinator answers."""
        if error is ErrorCode.NONE:
            return
        self.inject.setdefault((name, kind), []).append([after, error, delay_ms])

    # ------------------------------------------------------------ transport
    def _send(self, member: Member, out: Outbound) -> None:
        member.sent.append(
            Sent(
                at=self.now(),
                request=out.request,
                node_id=None if out.node is None else out.node.node_id,
                state=member.core.state,
            )
        )
        if member.cut:
            member.core.on_failure(out.request_id, self.now())
            return
        injected = self.inject.get((member.name, type(out.request)))
        if injected and injected[0][0] > 0:
            injected[0][0] -= 1
            injected = None
        if injected:
            _, err, delay = injected.pop(0)
            if err == CRASH:
                member.alive = False
                return
            resp = err(out.request) if callable(err) else _error_response(out.request, err)
            if resp is not None and delay:
                self._later.append((self.now() + delay, member, out.request_id, resp))
            elif resp is not None:  # None: the request vanishes (no answer, no error)
                self._inbox.append((member, out.request_id, resp))
            return
        req = out.request
        if isinstance(req, m.FindCoordinatorRequest):
            if self.find_error is not None:
                self._inbox.append(
                    (member, out.request_id, m.FindCoordinatorResponse(error=self.find_error, node=None))
                )
            else:
                node = self.brokers[self.coordinator_node].node
                self._inbox.append(
                    (member, out.request_id, m.FindCoordinatorResponse(error=ErrorCode.NONE, node=node))
                )
            return
        if isinstance(req, m.MetadataRequest):
            names = sorted(self.topics) if req.topics is None else list(req.topics)
            topics = tuple(
                m.TopicMetadata(name=t, error=ErrorCode.NONE, partitions=self.topics[t])
                if t in self.topics
                else m.TopicMetadata(name=t, error=ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, partitions=0)
                for t in names
            )
            resp = m.MetadataResponse(topics=topics)
            if self.metadata_delay_ms:
                self._later.append((self.now() + self.metadata_delay_ms, member, out.request_id, resp))
            else:
                self._inbox.append((member, out.request_id, resp))
            return
        assert out.node is not None, req
        broker = self.brokers.get(out.node.node_id)
        if broker is None:
            member.core.on_failure(out.request_id, self.now())
            return
        member.outstanding[out.request_id] = out.node.node_id
        call_coordinator(broker.coordinator, req, self._reply(member, out.request_id), client_id=member.name)

    def _reply(self, member: Member, rid: int) -> Callable[[m.Response], None]:
        def deliver(resp: m.Response) -> None:
            self._inbox.append((member, rid, resp))

        return deliver

    def restart_broker(self, node_id: int) -> Broker:
        """The broker process restarts: its connections break, and a new coordinator core starts
        loading the group's partition from the log (COORDINATOR_LOAD_IN_PROGRESS until
        :meth:`finish_loading`)."""
        for member in self.members.values():
            for rid, nid in list(member.outstanding.items()):
                if nid == node_id:
                    del member.outstanding[rid]
                    if member.alive:
                        member.core.on_failure(rid, self.now())
        b = self.add_broker(node_id)
        p = b.coordinator.partition_for(GROUP)
        b.coordinator.unload_partition(p)
        b.coordinator.begin_loading(p)
        for partition, records in self.sink.appended:
            if partition == p:
                for rec in records:
                    b.coordinator.replay(rec)
        return b

    def finish_loading(self, node_id: int) -> None:
        c = self.brokers[node_id].coordinator
        c.complete_loading(c.partition_for(GROUP))

    def move_coordinator(self, to_node: int) -> None:
        """The group's partition moves: the old broker answers NOT_COORDINATOR, the new one loads it."""
        old = self.brokers[self.coordinator_node].coordinator
        old.unload_partition(old.partition_for(GROUP))
        if to_node not in self.brokers:
            self.add_broker(to_node)
        new = self.brokers[to_node].coordinator
        p = new.partition_for(GROUP)
        new.unload_partition(p)
        new.begin_loading(p)
        for partition, records in self.sink.appended:
            if partition == p:
                for rec in records:
                    new.replay(rec)
        new.complete_loading(p)
        self.coordinator_node = to_node

    # ------------------------------------------------------------ time
    def _turn(self) -> bool:
        """Everything that happens at the current instant, once; True if anything did."""
        now = self.now()
        progress = False
        for b in self.brokers.values():
            b.coordinator.poll()
        due = [x for x in self._later if x[0] <= now]
        self._later = [x for x in self._later if x[0] > now]
        for _, target, rid, resp in due:
            self._inbox.append((target, rid, resp))
        for member in list(self.members.values()):
            if not member.alive:
                continue
            outs: list[Outbound] = []
            if not member.stalled:
                outs += member.core.poll(now)
            outs += member.core.heartbeat_poll(now)
            outs += member.core.pending(now)
            for out in outs:
                progress = True
                self._send(member, out)
        while self._inbox:
            progress = True
            member, rid, resp = self._inbox.pop(0)
            member.outstanding.pop(rid, None)
            if member.alive:
                member.core.on_response(rid, resp, now)
        for member in self.members.values():
            if member.alive and not member.stalled:
                evs = member.core.events()
                if evs:
                    progress = True
                    member.events.extend(evs)
                    for e in evs:
                        self.log.append((now, member.name, repr(e)))
        if self.after_turn is not None:
            self.after_turn()
        return progress

    def settle(self) -> None:
        for _ in range(10_000):
            if not self._turn():
                return
        raise AssertionError("the world does not settle at one instant")

    def run(self, ms: int) -> None:
        """Let ``ms`` of protocol time pass, acting at every deadline on the way."""
        target = self.now() + ms
        while True:
            self.settle()
            now = self.now()
            candidates = [target] + [x[0] for x in self._later]
            for b in self.brokers.values():
                d = b.coordinator.next_deadline()
                if d is not None:
                    candidates.append(d)
            for member in self.members.values():
                if not member.alive:
                    continue
                for d2 in (member.core.next_deadline_ms(), member.core.next_heartbeat_deadline_ms()):
                    if d2 is not None:
                        candidates.append(d2)
            nxt = min(c for c in candidates if c > now) if any(c > now for c in candidates) else target
            if nxt > target or now >= target:
                break
            self.clock.set(nxt)
        if self.now() < target:
            self.clock.set(target)
        self.settle()

    # ------------------------------------------------------------ views
    def live(self) -> list[Member]:
        return [mm for mm in self.members.values() if mm.alive]

    def group_state(self) -> str:
        g = self.coordinator.group(GROUP)
        return "Dead" if g is None else g.state.value

    def generation(self) -> int:
        g = self.coordinator.group(GROUP)
        return -1 if g is None else g.generation

    def ownership(self) -> dict[TopicPartition, list[str]]:
        out: dict[TopicPartition, list[str]] = {}
        for mm in self.live():
            for tp in mm.owned():
                out.setdefault(tp, []).append(mm.name)
        return out

    def all_partitions(self) -> set[TopicPartition]:
        return {TopicPartition(t, p) for t, n in self.topics.items() for p in range(n)}


def partition_events(member: Member) -> list[tuple[str, tuple[TopicPartition, ...]]]:
    out: list[tuple[str, tuple[TopicPartition, ...]]] = []
    for e in member.events:
        if isinstance(e, PartitionsAssigned):
            out.append(("assigned", e.partitions))
        elif isinstance(e, PartitionsRevoked):
            out.append(("revoked", e.partitions))
        elif isinstance(e, PartitionsLost):
            out.append(("lost", e.partitions))
    return out


def _error_response(req: m.Request, err: ErrorCode) -> m.Response:
    """The answer to ``req`` carrying ``err`` (on every partition of a commit); a JoinGroup's keeps
    the member id it was sent with."""
    if isinstance(req, m.JoinGroupRequest):
        return m.JoinGroupResponse(error=err, member_id=req.member_id)
    response = m.failure_response(req, err)
    if response is None:
        raise ValueError(f"no error response for {type(req).__name__}")
    return response
