"""``groupcoord simulate``: consumer groups in virtual time, written as a real data directory.

The simulator drives the real coordinator core (:class:`GroupCoordinator` and its shards) under a
:class:`ManualClock` with the real member cores of ``groupcoord.client``: every simulated consumer is
a :class:`~groupcoord.client.consumer_core.ConsumerCoordinator` (the Java client's defaults scaled
down), driven as ``docs/client.md`` describes -- its application thread calls ``poll`` (once a
second while it is healthy, and whenever the core has work), its heartbeat thread calls
``heartbeat_poll`` whenever that is due, and ``events`` are drained from the application's thread,
so a JoinGroup waits for the revocation of its preparation as in the Java client. Requests reach
the coordinator core through :mod:`groupcoord.runtime.in_process` (no sockets); FindCoordinator and
Metadata are answered by the simulator as a one-broker cluster would. Consumers consume at a rate
from their starting positions (``auto.offset.reset=earliest``) and the core auto-commits.
Producers append a batch per partition every second. Everything the broker would persist is
written through the storage layer: the topics' logs, ``__consumer_offsets`` (the coordinator's own
records, via its record sink) and ``__group_events`` (its events, as JSON).

Disruptions are injected one at a time per group, spaced so that each produces exactly one
rebalance (or, for a static member restarting within its session timeout, none), and recorded in
``ground_truth.json`` with the cause the pipeline should report and when the rebalance must start:

- ``join``: a new (or restarted) consumer joins -> ``new_member_joined`` at that instant;
- ``leave``: a dynamic consumer is closed (commits, then LeaveGroup) -> ``member_left`` at that
  instant (a static member's ``close`` sends no LeaveGroup, as in the Java client);
- ``crash``: a consumer dies silently -> ``session_timeout`` within one session timeout;
- ``slow``: a dynamic consumer's application stops calling ``poll``; its heartbeat thread goes on
  and max.poll.interval.ms later sends LeaveGroup with "consumer poll timeout has expired." ->
  ``poll_timeout`` at that instant (the process is then considered gone; it comes back later
  through a ``join``). Static members never send that LeaveGroup, so only dynamic ones are slowed;
- ``static_restart``: a static member restarts within its session timeout -> no rebalance.

With ``assignor="cooperative-sticky"`` a rebalance that moves partitions is followed by a second
one (KIP-429): the members that gave partitions up rejoin at once. The simulator records each such
follow-up in the ground truth from the member cores themselves (the instant the first of them
sends its JoinGroup, cause ``member_rejoined_with_new_metadata``), so the truth stays exact.

``protocol="consumer"`` makes every group a KIP-848 consumer group: each consumer is the
consumer-protocol member core behind the engine's interface
(:class:`~groupcoord.client.consumer_group_adapter.ConsumerGroupCoordinator`, ``group.protocol=
consumer``), whose ConsumerGroupHeartbeats reach the coordinator core through
:func:`~groupcoord.runtime.in_process.call_coordinator`; the broker's
``group.consumer.session.timeout.ms`` and ``group.consumer.heartbeat.interval.ms`` are the classic
members' values, so both protocols detect a dead member in the same time. A rebalance is then a
group-epoch bump (the ``epoch_bump`` group event), and the truth lists every one: each member's
first heartbeat during formation (the group's first carries the event reason ``group_created``;
the truth says ``new_member_joined`` for it, as for the classic group's first rebalance), a join,
a leave (epoch -1, cause ``member_left``), a crash (``session_timeout``), a slow member (its
heartbeat leaves with epoch -1 at the poll timeout: ``member_left``, no reason on the wire). A
static restart is a leave with epoch -2 and a return within the session timeout: no epoch bump
(a static member that died without it would be refused UNRELEASED_INSTANCE_ID until its session
expired, as in Kafka). There are no follow-up rebalances.

``protocol="mixed"`` runs every group twice, ``group-N-classic`` and ``group-N-consumer`` on
twin topics, each with the disruption plan drawn from the same seeded generator (the same kinds
on the same members, in the same order; only the instants may differ, since a disruption waits
for its group to be stable), so the two protocols' rebalances sit side by side in one data
directory. Every group draws its plan from its own generator in every mode.

What each disruption cost is measured from the member cores themselves
(:mod:`~groupcoord.pipeline.simledger`: settle time, partitions moved, partition-milliseconds
nobody processed, which other members stopped, revoked or were untouched) and written to the
ground truth as ``episodes``. Time is virtual and the network instantaneous, so a classic
member's revocation and its next assignment can fall on one instant: what differs is who stops,
how many partitions move, and how long the group takes to settle.
"""

from __future__ import annotations

import base64
import heapq
import itertools
import json
import logging
import random
import shutil
import uuid
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from groupcoord.client import messages as msg
from groupcoord.client.config import ConsumerConfig
from groupcoord.client.consumer_core import ConsumerCoordinator
from groupcoord.client.consumer_group_adapter import (
    CallbackAssigned,
    CallbackLost,
    CallbackRevoked,
    ConsumerGroupCoordinator,
)
from groupcoord.client.consumer_group_events import Outbound as ConsumerGroupOutbound
from groupcoord.client.consumer_group_messages import (
    TopicIdMetadata,
    TopicIdsMetadataRequest,
    TopicIdsMetadataResponse,
)
from groupcoord.client.consumer_group_states import ConsumerGroupMemberState
from groupcoord.client.events import (
    FatalErrorEvent,
    PartitionsAssigned,
    PartitionsLost,
    PartitionsRevoked,
    StartingPositions,
)
from groupcoord.client.outbox import Outbound
from groupcoord.client.states import MemberState
from groupcoord.client.types import OffsetAndMetadata, TopicPartition
from groupcoord.clock import ManualClock
from groupcoord.constants import OFFSETS_TOPIC
from groupcoord.coordinator.config import GroupConfig
from groupcoord.coordinator.consumer.group import ConsumerGroupState
from groupcoord.coordinator.consumer.metadata import TopicMetadata, TopicsImage
from groupcoord.coordinator.events import GroupEvent
from groupcoord.coordinator.records import CoordinatorRecord, OffsetCommitValue, encode_record
from groupcoord.coordinator.state import GroupState
from groupcoord.errors import ErrorCode
from groupcoord.pipeline.datadir import DataDirWriter
from groupcoord.pipeline.simledger import OwnershipLedger
from groupcoord.pipeline.simtruth import (
    EPOCH_MS,
    GROUND_TRUTH,
    GroundTruth,
    SimulationConfig,
    TruthQuiet,
    TruthRebalance,
)
from groupcoord.runtime.group_coordinator import GroupCoordinator
from groupcoord.runtime.in_process import call_coordinator

__all__ = [
    "EPOCH_MS",
    "GROUND_TRUTH",
    "GroundTruth",
    "Simulation",
    "SimulationConfig",
    "TruthQuiet",
    "TruthRebalance",
    "simulate",
]

log = logging.getLogger(__name__)

POLL_TIMEOUT_REASON = "consumer poll timeout has expired."
#: The one broker the simulated consumers find as their coordinator.
BROKER = msg.Node(node_id=0, host="127.0.0.1", port=9092)
#: A healthy consumer's application calls poll() at least this often.
POLL_EVERY_MS = 1_000


class _Sink:
    """The coordinator's record sink and event sink, writing through the storage layer."""

    def __init__(self, writer: DataDirWriter, clock: ManualClock) -> None:
        self.writer = writer
        self.clock = clock
        self.commits = 0

    def append(self, partition: int, records: Any, done: Callable[[ErrorCode], None]) -> None:
        recs: list[CoordinatorRecord] = list(records)
        if recs:
            encoded = [encode_record(r) for r in recs]
            self.writer.append(OFFSETS_TOPIC, partition, encoded, self.clock.now_ms())
            self.commits += sum(1 for r in recs if isinstance(r.value, OffsetCommitValue))
        done(ErrorCode.NONE)

    def event(self, event: GroupEvent) -> None:
        self.writer.event(event.to_json())


@dataclass(slots=True)
class _Member:
    """One consumer process: its client core while it runs (``core`` None = down)."""

    group: _Group
    index: int
    client_id: str
    host: str
    instance_id: str | None
    core: ConsumerCoordinator | ConsumerGroupCoordinator | None = None
    incarnation: int = 0
    stalled: bool = False  # the application stopped calling poll(); the heartbeat thread goes on
    closing: bool = False  # the application is in close()
    inbox: list[tuple[int, Any]] = field(default_factory=list)
    positions: dict[TopicPartition, int] = field(default_factory=dict)
    last_progress_ms: int = 0
    last_poll_ms: int = 0
    wake_at: int | None = None
    follow_up: bool = False  # cooperative: partitions were revoked, its next JoinGroup is a follow-up

    @property
    def label(self) -> str:
        return self.instance_id or self.client_id

    @property
    def up(self) -> bool:
        return self.core is not None


@dataclass(slots=True)
class _Group:
    group_id: str
    topic: str
    index: int
    protocol: str  # classic or consumer
    rng: random.Random  # its disruption plan (twins of a mixed run draw the same plan)
    members: list[_Member] = field(default_factory=list)
    busy_until: int = 0


class Simulation:
    def __init__(self, out: Path, config: SimulationConfig) -> None:
        self.out = out
        self.config = config
        self.rng = random.Random(config.seed)
        self._ids = random.Random(config.seed * 7919 + 1)
        self.clock = ManualClock(EPOCH_MS)
        self.writer = DataDirWriter(out, offsets_partitions=config.offsets_partitions, events_partitions=1)
        self.sink = _Sink(self.writer, self.clock)
        self.coordinator = GroupCoordinator(
            GroupConfig(
                offsets_topic_num_partitions=config.offsets_partitions,
                group_coordinator_rebalance_protocols="classic,consumer",
                # the consumer groups get the classic groups' session and heartbeat settings, so
                # both protocols detect a dead member in the same time (the broker sets them under
                # KIP-848; the member cannot)
                group_consumer_session_timeout_ms=config.session_timeout_ms,
                group_consumer_heartbeat_interval_ms=config.heartbeat_interval_ms,
            ),
            self.clock,
            record_sink=self.sink,
            event_sink=self.sink.event,
            member_id_factory=self._member_id,
        )
        self._queue: list[tuple[int, int, Callable[[], None]]] = []
        self._seq = itertools.count()
        self._dirty: dict[int, _Member] = {}  # members with answers waiting, in arrival order
        self.groups: list[_Group] = []
        self.truth: list[TruthRebalance] = []
        self.quiet: list[TruthQuiet] = []
        self.produced = 0
        self.end_ms = EPOCH_MS + int(config.minutes * 60_000)
        self.ledger = OwnershipLedger()
        self._topic_ids: dict[str, uuid.UUID] = {}
        self._topic_names: dict[uuid.UUID, str] = {}
        self._targets: dict[str, tuple[int, dict[tuple[str, int], str]]] = {}
        self.target_moves: list[tuple[str, int, int]] = []

    def _member_id(self, prefix: str) -> str:
        """Like the broker's ``prefix-uuid4``, but drawn from the seeded generator (reproducible)."""
        return f"{prefix}-{uuid.UUID(int=self._ids.getrandbits(128), version=4)}"

    # ------------------------------------------------------------------ scheduling
    def now(self) -> int:
        return self.clock.now_ms()

    def at(self, t: int, fn: Callable[[], None]) -> None:
        heapq.heappush(self._queue, (t, next(self._seq), fn))

    def _groups_of_run(self) -> list[_Group]:
        cfg = self.config
        out: list[_Group] = []
        for g in range(cfg.groups):
            protocols = ("classic", "consumer") if cfg.protocol == "mixed" else (cfg.protocol,)
            for protocol in protocols:
                suffix = f"-{protocol}" if cfg.protocol == "mixed" else ""
                out.append(
                    _Group(
                        group_id=f"group-{g}{suffix}",
                        topic=f"topic-{g}{suffix}",
                        index=g,
                        protocol=protocol,
                        rng=random.Random(f"{cfg.seed}/plan/{g}"),
                    )
                )
        return out

    def run(self) -> GroundTruth:
        cfg = self.config
        ids = random.Random(f"{cfg.seed}/topic-ids")
        for group in self._groups_of_run():
            g = group.index
            topic_id = uuid.UUID(int=ids.getrandbits(128), version=4)
            self._topic_ids[group.topic] = topic_id
            self._topic_names[topic_id] = group.topic
            self.writer.create_topic(group.topic, cfg.partitions, topic_id)
            self.ledger.add_group(group.group_id, [(group.topic, p) for p in range(cfg.partitions)])
            for k in range(cfg.members):
                group.members.append(self._new_member(group, g, k))
            self.groups.append(group)
            # the group forms: members start 100 ms apart from t = 500 ms + 50 ms per group
            first = EPOCH_MS + 500 + 50 * g
            for k, m in enumerate(group.members):
                self.at(first + 100 * k, self._starter(m))
            # classic: the first JoinGroup starts one rebalance the others join (the initial
            # delay); consumer: every member's first heartbeat is a new group epoch
            joiners = group.members if group.protocol == "consumer" else group.members[:1]
            for k, m in enumerate(joiners):
                t = first + 100 * k
                self._truth(group, "initial_join", "new_member_joined", m, t, t)
            group.busy_until = first + 20_000
            self._plan_next(group)
        self.coordinator.on_metadata_update(
            TopicsImage(
                [
                    TopicMetadata(topic_id=tid, name=name, num_partitions=cfg.partitions)
                    for name, tid in sorted(self._topic_ids.items())
                ],
                version=1,
            )
        )
        self.at(EPOCH_MS, self._produce_tick)
        while self._queue or self.coordinator.next_deadline() is not None:
            t_queue = self._queue[0][0] if self._queue else None
            t_timer = self.coordinator.next_deadline()
            t = min(x for x in (t_queue, t_timer) if x is not None)
            if t > self.end_ms:
                break
            if t > self.now():
                self.clock.advance(t - self.now())
            if t_timer is not None and t_timer <= t:
                self.coordinator.poll()
                self._settle()
            while self._queue and self._queue[0][0] <= self.now():
                _t, _s, fn = heapq.heappop(self._queue)
                fn()
                self._settle()
            self._close_episodes()
            self._note_targets()
        self.writer.close()
        return self._write_truth()

    def _write_truth(self) -> GroundTruth:
        path = self.out / GROUND_TRUTH
        obj = {
            "config": asdict(self.config),
            "end_ms": self.end_ms,
            "commits": self.sink.commits,
            "produced": self.produced,
            "rebalances": [
                asdict(r) for r in sorted(self.truth, key=lambda r: (r.group_id, r.earliest_start_ms))
            ],
            "quiet": [asdict(q) for q in self.quiet],
            "episodes": [asdict(e) for e in self.ledger.closed],
            "protocols": {g.group_id: g.protocol for g in self.groups},
            "target_moves": self.target_moves,
        }
        tmp = path.with_suffix(".tmp")
        tmp.write_text(json.dumps(obj, indent=1))
        tmp.replace(path)
        return GroundTruth.load(path)

    # ------------------------------------------------------------------ producers
    def _produce_tick(self) -> None:
        per_batch = max(1, round(self.config.produce_rate))
        for group in self.groups:
            for p in range(self.config.partitions):
                self.writer.produce(group.topic, p, per_batch, self.now())
                self.produced += per_batch
        self.at(self.now() + 1_000, self._produce_tick)

    # ------------------------------------------------------------------ members
    def _new_member(self, group: _Group, g: int, k: int) -> _Member:
        static = self.config.static_every > 0 and k % self.config.static_every == self.config.static_every - 1
        return _Member(
            group=group,
            index=k,
            client_id=f"{group.group_id}-consumer-{k}",
            host=f"/10.0.{g}.{k}",
            instance_id=f"{group.group_id}-pod-{k}" if static else None,
        )

    def _core(self, m: _Member) -> ConsumerCoordinator | ConsumerGroupCoordinator:
        cfg = self.config
        if m.group.protocol == "consumer":
            return self._consumer_protocol_core(m)
        settings: dict[str, Any] = {
            "group.id": m.group.group_id,
            "client.id": m.client_id,
            "session.timeout.ms": cfg.session_timeout_ms,
            "heartbeat.interval.ms": cfg.heartbeat_interval_ms,
            "max.poll.interval.ms": cfg.max_poll_interval_ms,
            "partition.assignment.strategy": cfg.assignor,
            "enable.auto.commit": True,
            "auto.commit.interval.ms": cfg.commit_interval_ms,
            "auto.offset.reset": "earliest",
        }
        if m.instance_id is not None:
            settings["group.instance.id"] = m.instance_id
        core = ConsumerCoordinator(
            ConsumerConfig.from_dict(settings), rng=random.Random(f"{cfg.seed}/{m.client_id}/{m.incarnation}")
        )
        core.subscribe((m.group.topic,))
        return core

    def _consumer_protocol_core(self, m: _Member) -> ConsumerGroupCoordinator:
        """A KIP-848 member: session and heartbeat are the broker's; the assignor is the broker's
        (``group.remote.assignor``); the rest as the classic member's."""
        cfg = self.config
        settings: dict[str, Any] = {
            "group.id": m.group.group_id,
            "group.protocol": "consumer",
            "group.remote.assignor": cfg.remote_assignor,
            "client.id": m.client_id,
            "max.poll.interval.ms": cfg.max_poll_interval_ms,
            "enable.auto.commit": True,
            "auto.commit.interval.ms": cfg.commit_interval_ms,
            "auto.offset.reset": "earliest",
        }
        if m.instance_id is not None:
            settings["group.instance.id"] = m.instance_id
        # the member generates its own id (KIP-1082); drawn from the seeded generator, like the
        # classic members' broker-made ids, so a run is reproducible
        raw = self._ids.getrandbits(128).to_bytes(16, "big")
        member_id = base64.urlsafe_b64encode(raw).decode("ascii").rstrip("=")
        if member_id.startswith("-"):  # never a leading '-' (KIP-1082), as generate_member_id
            member_id = "A" + member_id[1:]
        core = ConsumerGroupCoordinator(ConsumerConfig.from_dict(settings), member_id=member_id)
        core.subscribe((m.group.topic,))
        return core

    def _starter(self, m: _Member) -> Callable[[], None]:
        def start() -> None:
            self._stop(m)
            m.incarnation += 1
            m.core = self._core(m)
            m.last_progress_ms = m.last_poll_ms = self.now()
            self._activate(m)

        return start

    def _stop(self, m: _Member) -> None:
        """The process is gone: nothing more is sent, answers to it are dropped."""
        self.ledger.gone(m.group.group_id, m.label, self.now())
        m.core = None
        m.incarnation += 1
        m.stalled = m.closing = m.follow_up = False
        m.inbox.clear()
        m.positions.clear()
        m.wake_at = None
        self._dirty.pop(id(m), None)

    def _wake(self, m: _Member, inc: int, t: int) -> Callable[[], None]:
        def wake() -> None:
            if m.incarnation == inc and m.wake_at == t:
                m.wake_at = None
                self._activate(m)

        return wake

    def _schedule(self, m: _Member) -> None:
        core = m.core
        if core is None:
            return
        candidates = [core.next_heartbeat_deadline_ms()]
        if not m.stalled:
            # a stalled application thread does not act on the core's poll work (auto-commit
            # due, events waiting): only its heartbeat thread wakes it
            candidates.append(core.next_deadline_ms())
            if not m.closing:
                candidates.append(m.last_poll_ms + POLL_EVERY_MS)
        t = max(self.now() + 1, min(c for c in candidates if c is not None))
        if m.wake_at is None or t < m.wake_at or m.wake_at < self.now():
            m.wake_at = t
            self.at(t, self._wake(m, m.incarnation, t))

    def _settle(self) -> None:
        while self._dirty:
            key = next(iter(self._dirty))
            self._activate(self._dirty.pop(key))

    def _activate(self, m: _Member) -> None:
        """Everything member ``m`` does at this instant: its application thread (unless stalled or
        closing: poll, then events), its heartbeat thread, and the answers waiting for it."""
        now = self.now()
        for _ in range(1_000):
            core = m.core
            if core is None:
                return
            outs: list[Outbound | ConsumerGroupOutbound] = []
            if not m.stalled and not m.closing:
                self._consume(m)
                outs += core.poll(now)
                m.last_poll_ms = now
            outs += core.heartbeat_poll(now)
            outs += core.pending(now)
            progress = bool(outs or m.inbox)
            for out in outs:
                self._send(m, out)
            while m.inbox and m.core is core:
                rid, resp = m.inbox.pop(0)
                core.on_response(rid, resp, now)
            if not m.stalled:
                for event in core.events():
                    progress = True
                    self._on_event(m, event)
            if m.closing and core.closed:
                self._stop(m)
                return
            if m.stalled and self._left_on_poll_timeout(core):
                # the poll timeout made it leave; the stuck process is considered gone
                self._stop(m)
                return
            if not progress:
                break
        else:
            raise RuntimeError(f"{m.client_id} does not settle at {now}")
        self._dirty.pop(id(m), None)
        self._schedule(m)

    def _send(self, m: _Member, out: Outbound | ConsumerGroupOutbound) -> None:
        req = out.request
        rid = out.request_id
        if isinstance(req, msg.FindCoordinatorRequest):
            m.inbox.append((rid, msg.FindCoordinatorResponse(error=ErrorCode.NONE, node=BROKER)))
            return
        if isinstance(req, msg.MetadataRequest):
            topics = tuple(
                msg.TopicMetadata(name=t, error=ErrorCode.NONE, partitions=self.config.partitions)
                if t in {g.topic for g in self.groups}
                else msg.TopicMetadata(name=t, error=ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, partitions=0)
                for t in (req.topics if req.topics is not None else [g.topic for g in self.groups])
            )
            m.inbox.append((rid, msg.MetadataResponse(topics=topics)))
            return
        if isinstance(req, TopicIdsMetadataRequest):
            found = tuple(
                TopicIdMetadata(topic_id=t, name=self._topic_names.get(t))
                if t in self._topic_names
                else TopicIdMetadata(topic_id=t, name=None, error=ErrorCode.UNKNOWN_TOPIC_ID)
                for t in req.topic_ids
            )
            m.inbox.append((rid, TopicIdsMetadataResponse(topics=found)))
            return
        if isinstance(req, msg.JoinGroupRequest) and m.follow_up:
            m.follow_up = False
            self._follow_up(m)
        inc = m.incarnation

        def reply(resp: Any) -> None:
            if m.incarnation == inc:
                m.inbox.append((rid, resp))
                self._dirty[id(m)] = m

        call_coordinator(self.coordinator, req, reply, client_id=m.client_id, client_host=m.host)

    def _on_event(self, m: _Member, event: object) -> None:
        core = m.core
        assert core is not None
        gid, now = m.group.group_id, self.now()
        if isinstance(event, StartingPositions):
            for tp, om in event.positions:
                m.positions[tp] = 0 if om is None else om.offset
            m.last_progress_ms = now
        elif isinstance(event, PartitionsAssigned):
            self.ledger.assigned(gid, m.label, [(tp.topic, tp.partition) for tp in event.partitions], now)
        elif isinstance(event, (PartitionsRevoked, PartitionsLost)):
            for tp in event.partitions:
                m.positions.pop(tp, None)
            self.ledger.released(gid, m.label, [(tp.topic, tp.partition) for tp in event.partitions], now)
            if (
                isinstance(event, PartitionsRevoked)
                and event.partitions
                and m.group.protocol == "classic"
                and self.config.assignor == "cooperative-sticky"
                and not m.closing
            ):
                m.follow_up = True
        elif isinstance(event, FatalErrorEvent):
            log.warning("%s: fatal error %s", m.client_id, event)
        if isinstance(event, (CallbackAssigned, CallbackRevoked, CallbackLost)):
            # the consumer-protocol member's reconciliation goes on once the application's
            # callback returned: the simulated application has nothing to do in it
            assert isinstance(core, ConsumerGroupCoordinator)
            core.callback_done(event.callback_id, None)

    def _follow_up(self, m: _Member) -> None:
        """Cooperative: a member that gave partitions up rejoins; the first such JoinGroup of a
        stable group starts the follow-up rebalance (KIP-429)."""
        g = self.coordinator.group(m.group.group_id)
        core = m.core
        if g is None or g.state != GroupState.STABLE or not isinstance(core, ConsumerCoordinator):
            return
        leader = g.leader_id == core.generation.member_id
        self._truth(
            m.group,
            "cooperative_follow_up",
            "leader_rejoined" if leader else "member_rejoined_with_new_metadata",
            m,
            self.now(),
            self.now(),
        )

    def _consume(self, m: _Member) -> None:
        """Consume up to the log end at ``consume_rate`` since the last progress."""
        core = m.core
        assert core is not None
        now = self.now()
        budget = int(self.config.consume_rate * (now - m.last_progress_ms) / 1000)
        if budget <= 0 or not m.positions:
            return
        advanced: dict[TopicPartition, OffsetAndMetadata] = {}
        for tp, pos in m.positions.items():
            new = min(self.writer.log_end_offset(tp.topic, tp.partition), pos + budget)
            if new != pos:
                m.positions[tp] = new
                advanced[tp] = OffsetAndMetadata(offset=new)
        if advanced:
            core.update_positions(advanced)
        m.last_progress_ms = now

    # ------------------------------------------------------------------ disruptions
    @staticmethod
    def _left_on_poll_timeout(core: ConsumerCoordinator | ConsumerGroupCoordinator) -> bool:
        """The heartbeat thread left the group because the application stopped polling."""
        if isinstance(core, ConsumerGroupCoordinator):
            return core.member.state is ConsumerGroupMemberState.STALE
        return core.state is MemberState.UNJOINED

    def _healthy(self, m: _Member) -> bool:
        core = m.core
        if core is None or m.stalled or m.closing:
            return False
        if isinstance(core, ConsumerGroupCoordinator):
            return core.member.state is ConsumerGroupMemberState.STABLE
        return core.state is MemberState.STABLE and not core.rejoin_needed_or_pending()

    def _group_stable(self, group: _Group) -> bool:
        if group.protocol == "consumer":
            cg = self.coordinator.consumer_group(group.group_id)
            if cg is None or cg.state is not ConsumerGroupState.STABLE:
                return False
        else:
            g = self.coordinator.group(group.group_id)
            if g is None or g.state != GroupState.STABLE:
                return False
        return all(self._healthy(m) or not m.up for m in group.members)

    def _settled(self, group: _Group) -> bool:
        """Stable, and every partition processed by a live member (the end of an episode)."""
        return self._group_stable(group) and self.ledger.all_processed(group.group_id)

    def _note_targets(self) -> None:
        """Each consumer group's target assignment at every new target epoch (the coordinator core's
        memory), and the partitions whose owner changed from the previous epoch (when the previous
        epoch was seen: two in one instant leave the second uncounted)."""
        for group in self.groups:
            cg = self.coordinator.consumer_group(group.group_id) if group.protocol == "consumer" else None
            seen, before = self._targets.get(group.group_id, (0, {}))
            if cg is None or cg.assignment_epoch == seen:
                continue
            owners = {
                (self._topic_names[tid], p): (m.instance_id if (m := cg.members.get(mid)) else None) or mid
                for mid, assignment in cg.target_assignment.items()
                for tid, parts in assignment.items()
                for p in parts
            }
            # with assignment batching (an interval above 0) a computation follows the previous
            # one by at least the interval, so an epoch skipped had no target of its own; at 0, two
            # targets in one instant leave the second uncounted
            batched = self.coordinator.config.group_consumer_assignment_interval_ms > 0
            if cg.assignment_epoch == seen + 1 or (batched and seen > 0):
                moved = sum(1 for tp in before.keys() | owners.keys() if before.get(tp) != owners.get(tp))
                self.target_moves.append((group.group_id, cg.assignment_epoch, moved))
            self._targets[group.group_id] = (cg.assignment_epoch, owners)

    def _close_episodes(self) -> None:
        for group in self.groups:
            if self.ledger.episode_open(group.group_id) and self._settled(group):
                self.ledger.close(group.group_id, self.now(), [m.label for m in group.members if m.up])

    def _open_episode(self, group: _Group, kind: str, m: _Member) -> None:
        self.ledger.open(
            group.group_id,
            group.protocol,
            kind,
            m.label,
            self.now(),
            [x.label for x in group.members if x.up],
        )

    def _plan_next(self, group: _Group) -> None:
        gap = group.rng.randint(self.config.min_gap_ms, self.config.max_gap_ms)
        self.at(max(self.now(), group.busy_until) + gap, lambda: self._disrupt(group))

    def _disrupt(self, group: _Group) -> None:
        if not self._group_stable(group) or self.ledger.episode_open(group.group_id):
            self.at(self.now() + 1_000, lambda: self._disrupt(group))
            return
        cfg = self.config
        if self.now() + max(cfg.session_timeout_ms, cfg.max_poll_interval_ms) > self.end_ms:
            return  # its rebalance might fall after the end: the truth could not say whether it happened
        up = [m for m in group.members if m.up]
        down = [m for m in group.members if not m.up]
        static_up = [m for m in up if m.instance_id is not None]
        dynamic_up = [m for m in up if m.instance_id is None]
        choices = ["join"]
        if len(up) >= 2:
            choices.append("crash")
            if dynamic_up:
                choices += ["leave", "slow"]
            if static_up:
                choices.append("static_restart")
        kind = group.rng.choice(choices)
        now = self.now()
        busy = 15_000
        consumer = group.protocol == "consumer"
        if kind == "join":
            if down:
                m = group.rng.choice(down)
            else:
                m = self._new_member(group, group.index, len(group.members))
                group.members.append(m)
            self._truth(group, "join", "new_member_joined", m, now, now)
            self._open_episode(group, kind, m)
            self._starter(m)()
        elif kind == "leave":
            m = group.rng.choice(dynamic_up)  # a static member's close() sends no LeaveGroup
            self._truth(group, "leave", "member_left", m, now, now)
            self._open_episode(group, kind, m)
            assert m.core is not None
            m.closing = True
            m.core.close(now)
            self._activate(m)
        elif kind == "crash":
            m = group.rng.choice(up)
            self._open_episode(group, kind, m)
            self._stop(m)
            self._truth(group, "crash", "session_timeout", m, now, now + cfg.session_timeout_ms)
            busy = cfg.session_timeout_ms + 15_000
        elif kind == "slow":
            m = group.rng.choice(dynamic_up)
            self._activate(m)  # its last poll() is now
            m.stalled = True
            leave_at = m.last_poll_ms + cfg.max_poll_interval_ms
            # the classic LeaveGroup says why ("consumer poll timeout has expired."); the
            # consumer protocol's leave heartbeat (epoch -1) carries no reason
            self._truth(group, "slow", "member_left" if consumer else "poll_timeout", m, leave_at, leave_at)
            self.at(leave_at, lambda: self._open_episode(group, "slow", m))
            busy = cfg.max_poll_interval_ms + 15_000
        else:
            m = group.rng.choice(static_up)
            self._open_episode(group, kind, m)
            if consumer:
                # a KIP-848 static member that restarts leaves with epoch -2 (its assignment is
                # kept for it); one that dies without it would be refused UNRELEASED_INSTANCE_ID
                # until its session expired (Kafka's GroupMetadataManager)
                assert isinstance(m.core, ConsumerGroupCoordinator)
                m.closing = True
                m.core.close(now)
                self._activate(m)
            # the classic process dies without LeaveGroup (static members do not send one); both
            # come back with the same group.instance.id well within the session timeout
            self._stop(m)
            back = now + cfg.session_timeout_ms // 3
            self.at(back, self._starter(m))
            self.quiet.append(
                TruthQuiet(
                    group_id=group.group_id,
                    disruption="static_restart",
                    member=m.label,
                    from_ms=now,
                    to_ms=now + cfg.session_timeout_ms + cfg.heartbeat_interval_ms,
                )
            )
            busy = cfg.session_timeout_ms + 15_000
        group.busy_until = now + busy
        self._plan_next(group)

    def _truth(self, group: _Group, kind: str, cause: str, m: _Member, earliest: int, latest: int) -> None:
        if earliest > self.end_ms:
            return
        self.truth.append(
            TruthRebalance(
                group_id=group.group_id,
                disruption=kind,
                cause=cause,
                member=m.label,
                earliest_start_ms=earliest,
                latest_start_ms=latest,
            )
        )


def simulate(out: Path, config: SimulationConfig) -> GroundTruth:
    """Run the simulation into a fresh directory ``out`` and return its ground truth."""
    if out.exists() and any(out.iterdir()):
        if not (out / GROUND_TRUTH).exists():
            raise FileExistsError(f"{out} exists and is not a previous simulation; refusing to overwrite")
        shutil.rmtree(out)
    out.mkdir(parents=True, exist_ok=True)
    return Simulation(out, config).run()
