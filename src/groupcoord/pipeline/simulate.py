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
"""

from __future__ import annotations

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
from groupcoord.client.events import FatalErrorEvent, PartitionsLost, PartitionsRevoked, StartingPositions
from groupcoord.client.outbox import Outbound
from groupcoord.client.states import MemberState
from groupcoord.client.types import OffsetAndMetadata, TopicPartition
from groupcoord.clock import ManualClock
from groupcoord.constants import OFFSETS_TOPIC
from groupcoord.coordinator.config import GroupConfig
from groupcoord.coordinator.events import GroupEvent
from groupcoord.coordinator.records import CoordinatorRecord, OffsetCommitValue, encode_record
from groupcoord.coordinator.state import GroupState
from groupcoord.errors import ErrorCode
from groupcoord.pipeline.datadir import DataDirWriter
from groupcoord.runtime.group_coordinator import GroupCoordinator
from groupcoord.runtime.in_process import call_coordinator

log = logging.getLogger(__name__)

POLL_TIMEOUT_REASON = "consumer poll timeout has expired."
GROUND_TRUTH = "ground_truth.json"
#: Virtual time starts here (2026-01-01T00:00:00Z), so the data looks like a real broker's.
EPOCH_MS = 1_767_225_600_000
#: The one broker the simulated consumers find as their coordinator.
BROKER = msg.Node(node_id=0, host="127.0.0.1", port=9092)
#: A healthy consumer's application calls poll() at least this often.
POLL_EVERY_MS = 1_000
ASSIGNORS = ("range", "roundrobin", "cooperative-sticky")


@dataclass(frozen=True, kw_only=True, slots=True)
class SimulationConfig:
    groups: int = 3
    members: int = 4
    minutes: float = 30.0
    seed: int = 1
    partitions: int = 6
    offsets_partitions: int = 50
    produce_rate: float = 50.0  # records/s per partition
    consume_rate: float = 150.0  # records/s per partition a healthy consumer can process
    commit_interval_ms: int = 5_000
    heartbeat_interval_ms: int = 3_000
    session_timeout_ms: int = 10_000
    max_poll_interval_ms: int = 30_000
    static_every: int = 3  # every 3rd member is static (group.instance.id)
    min_gap_ms: int = 20_000
    max_gap_ms: int = 60_000
    assignor: str = "range"  # partition.assignment.strategy of every consumer: one of ASSIGNORS

    def __post_init__(self) -> None:
        if self.assignor not in ASSIGNORS:
            raise ValueError(f"assignor must be one of {', '.join(ASSIGNORS)}, not {self.assignor!r}")


@dataclass(frozen=True, kw_only=True, slots=True)
class TruthRebalance:
    group_id: str
    disruption: str
    cause: str
    member: str
    earliest_start_ms: int
    latest_start_ms: int


@dataclass(frozen=True, kw_only=True, slots=True)
class TruthQuiet:
    """An injected event that must NOT start a rebalance between its two times."""

    group_id: str
    disruption: str
    member: str
    from_ms: int
    to_ms: int


@dataclass(frozen=True, kw_only=True, slots=True)
class GroundTruth:
    path: Path
    rebalances: tuple[TruthRebalance, ...]
    quiet: tuple[TruthQuiet, ...]
    commits: int
    produced: int
    end_ms: int

    @staticmethod
    def load(path: Path) -> GroundTruth:
        obj = json.loads(path.read_text())
        return GroundTruth(
            path=path,
            rebalances=tuple(TruthRebalance(**r) for r in obj["rebalances"]),
            quiet=tuple(TruthQuiet(**q) for q in obj["quiet"]),
            commits=int(obj["commits"]),
            produced=int(obj["produced"]),
            end_ms=int(obj["end_ms"]),
        )


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
    core: ConsumerCoordinator | None = None
    incarnation: int = 0
    stalled: bool = False  # the application stopped calling poll(); the heartbeat thread goes on
    closing: bool = False  # the application is in close()
    inbox: list[tuple[int, msg.Response]] = field(default_factory=list)
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
            GroupConfig(offsets_topic_num_partitions=config.offsets_partitions),
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

    def _member_id(self, prefix: str) -> str:
        """Like the broker's ``prefix-uuid4``, but drawn from the seeded generator (reproducible)."""
        return f"{prefix}-{uuid.UUID(int=self._ids.getrandbits(128), version=4)}"

    # ------------------------------------------------------------------ scheduling
    def now(self) -> int:
        return self.clock.now_ms()

    def at(self, t: int, fn: Callable[[], None]) -> None:
        heapq.heappush(self._queue, (t, next(self._seq), fn))

    def run(self) -> GroundTruth:
        cfg = self.config
        for g in range(cfg.groups):
            group = _Group(group_id=f"group-{g}", topic=f"topic-{g}")
            self.writer.create_topic(group.topic, cfg.partitions)
            for k in range(cfg.members):
                group.members.append(self._new_member(group, g, k))
            self.groups.append(group)
            # the group forms: members start 100 ms apart from t = 500 ms + 50 ms per group
            first = EPOCH_MS + 500 + 50 * g
            for k, m in enumerate(group.members):
                self.at(first + 100 * k, self._starter(m))
            self.truth.append(
                TruthRebalance(
                    group_id=group.group_id,
                    disruption="initial_join",
                    cause="new_member_joined",
                    member=group.members[0].label,
                    earliest_start_ms=first,
                    latest_start_ms=first,
                )
            )
            group.busy_until = first + 20_000
            self._plan_next(group)
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

    def _core(self, m: _Member) -> ConsumerCoordinator:
        cfg = self.config
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
            outs: list[Outbound] = []
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
            if m.stalled and core.state is MemberState.UNJOINED:
                # the poll timeout made it leave; the stuck process is considered gone
                self._stop(m)
                return
            if not progress:
                break
        else:
            raise RuntimeError(f"{m.client_id} does not settle at {now}")
        self._dirty.pop(id(m), None)
        self._schedule(m)

    def _send(self, m: _Member, out: Outbound) -> None:
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
        if isinstance(req, msg.JoinGroupRequest) and m.follow_up:
            m.follow_up = False
            self._follow_up(m)
        inc = m.incarnation

        def reply(resp: msg.Response) -> None:
            if m.incarnation == inc:
                m.inbox.append((rid, resp))
                self._dirty[id(m)] = m

        call_coordinator(self.coordinator, req, reply, client_id=m.client_id, client_host=m.host)

    def _on_event(self, m: _Member, event: object) -> None:
        core = m.core
        assert core is not None
        if isinstance(event, StartingPositions):
            for tp, om in event.positions:
                m.positions[tp] = 0 if om is None else om.offset
            m.last_progress_ms = self.now()
        elif isinstance(event, (PartitionsRevoked, PartitionsLost)):
            for tp in event.partitions:
                m.positions.pop(tp, None)
            if (
                isinstance(event, PartitionsRevoked)
                and event.partitions
                and self.config.assignor == "cooperative-sticky"
                and not m.closing
            ):
                m.follow_up = True
        elif isinstance(event, FatalErrorEvent):
            log.warning("%s: fatal error %s", m.client_id, event)

    def _follow_up(self, m: _Member) -> None:
        """Cooperative: a member that gave partitions up rejoins; the first such JoinGroup of a
        stable group starts the follow-up rebalance (KIP-429)."""
        g = self.coordinator.group(m.group.group_id)
        core = m.core
        if g is None or g.state != GroupState.STABLE or core is None:
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
    def _healthy(self, m: _Member) -> bool:
        return (
            m.core is not None
            and not m.stalled
            and not m.closing
            and m.core.state is MemberState.STABLE
            and not m.core.rejoin_needed_or_pending()
        )

    def _group_stable(self, group: _Group) -> bool:
        g = self.coordinator.group(group.group_id)
        if g is None or g.state != GroupState.STABLE:
            return False
        return all(self._healthy(m) or not m.up for m in group.members)

    def _plan_next(self, group: _Group) -> None:
        gap = self.rng.randint(self.config.min_gap_ms, self.config.max_gap_ms)
        self.at(max(self.now(), group.busy_until) + gap, lambda: self._disrupt(group))

    def _disrupt(self, group: _Group) -> None:
        if not self._group_stable(group):
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
        kind = self.rng.choice(choices)
        now = self.now()
        busy = 15_000
        if kind == "join":
            if down:
                m = self.rng.choice(down)
            else:
                g = int(group.group_id.split("-")[1])
                m = self._new_member(group, g, len(group.members))
                group.members.append(m)
            self._truth(group, "join", "new_member_joined", m, now, now)
            self._starter(m)()
        elif kind == "leave":
            m = self.rng.choice(dynamic_up)  # a static member's close() sends no LeaveGroup
            self._truth(group, "leave", "member_left", m, now, now)
            assert m.core is not None
            m.closing = True
            m.core.close(now)
            self._activate(m)
        elif kind == "crash":
            m = self.rng.choice(up)
            self._stop(m)
            self._truth(group, "crash", "session_timeout", m, now, now + cfg.session_timeout_ms)
            busy = cfg.session_timeout_ms + 15_000
        elif kind == "slow":
            m = self.rng.choice(dynamic_up)
            self._activate(m)  # its last poll() is now
            m.stalled = True
            leave_at = m.last_poll_ms + cfg.max_poll_interval_ms
            self._truth(group, "slow", "poll_timeout", m, leave_at, leave_at)
            busy = cfg.max_poll_interval_ms + 15_000
        else:
            m = self.rng.choice(static_up)
            # the process dies without LeaveGroup (static members do not send one) and comes back
            # with the same group.instance.id well within the session timeout
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
