"""``groupcoord simulate``: consumer groups in virtual time, written as a real data directory.

The simulator drives the real coordinator core (:class:`CoordinatorRuntime` around the shard) under a
:class:`ManualClock` with simulated classic-protocol consumers (eager, range assignor, the Java
client's defaults scaled down): they join (with the KIP-394 member-id round trip), sync, heartbeat,
consume at a rate, auto-commit, and rejoin when a heartbeat says a rebalance is in progress.
Producers append a batch per partition every second. Everything the broker would persist is
written through the storage layer: the topics' logs, ``__consumer_offsets`` (the coordinator's own
records, via its record sink) and ``__group_events`` (its events, as JSON).

Disruptions are injected one at a time per group, spaced so that each produces exactly one
rebalance (or, for a static member restarting within its session timeout, none), and recorded in
``ground_truth.json`` with the cause the pipeline should report and when the rebalance must start:

- ``join``: a new (or restarted) consumer joins -> ``new_member_joined`` at that instant;
- ``leave``: a consumer closes and sends LeaveGroup -> ``member_left`` at that instant;
- ``crash``: a consumer dies silently -> ``session_timeout`` within one session timeout;
- ``slow``: a consumer stops polling; max.poll.interval.ms later its client sends LeaveGroup with
  "consumer poll timeout has expired." -> ``poll_timeout`` at that instant (it comes back later
  through a ``join``);
- ``static_restart``: a static member restarts within its session timeout -> no rebalance.
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

from groupcoord.clock import ManualClock
from groupcoord.constants import OFFSETS_TOPIC
from groupcoord.consumer_protocol import Assignment, Subscription, encode_assignment, encode_subscription
from groupcoord.coordinator.api import (
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
    SyncGroupRequest,
    SyncGroupResponse,
)
from groupcoord.coordinator.config import GroupConfig
from groupcoord.coordinator.events import GroupEvent
from groupcoord.coordinator.records import CoordinatorRecord, OffsetCommitValue, encode_record
from groupcoord.coordinator.state import GroupState
from groupcoord.errors import ErrorCode
from groupcoord.pipeline.datadir import DataDirWriter
from groupcoord.runtime.coordinator_runtime import CoordinatorRuntime

log = logging.getLogger(__name__)

POLL_TIMEOUT_REASON = "consumer poll timeout has expired."
CLOSE_REASON = "the consumer is being closed"
GROUND_TRUTH = "ground_truth.json"
#: Virtual time starts here (2026-01-01T00:00:00Z), so the data looks like a real broker's.
EPOCH_MS = 1_767_225_600_000


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
    group: _Group
    index: int
    client_id: str
    host: str
    instance_id: str | None
    member_id: str = ""
    generation: int = -1
    incarnation: int = 0
    state: str = "down"  # down | joining | syncing | stable | stalled
    assignment: tuple[int, ...] = ()
    positions: dict[int, int] = field(default_factory=dict)
    last_progress_ms: int = 0
    last_commit_ms: int = 0

    @property
    def label(self) -> str:
        return self.instance_id or self.client_id


@dataclass(slots=True)
class _Group:
    group_id: str
    topic: str
    members: list[_Member] = field(default_factory=list)
    committed: dict[int, int] = field(default_factory=dict)
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
        self.coordinator = CoordinatorRuntime(
            GroupConfig(offsets_topic_num_partitions=config.offsets_partitions),
            self.clock,
            record_sink=self.sink,
            event_sink=self.sink.event,
            member_id_factory=self._member_id,
        )
        self._queue: list[tuple[int, int, Callable[[], None]]] = []
        self._seq = itertools.count()
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

    def soon(self, fn: Callable[[], None]) -> None:
        self.at(self.now(), fn)

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
            while self._queue and self._queue[0][0] <= self.now():
                _t, _s, fn = heapq.heappop(self._queue)
                fn()
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

    def _starter(self, m: _Member) -> Callable[[], None]:
        def start() -> None:
            m.incarnation += 1
            m.member_id = ""
            m.generation = -1
            m.assignment = ()
            m.state = "joining"
            self._join(m)

        return start

    def _alive(self, m: _Member, inc: int) -> bool:
        return m.incarnation == inc and m.state != "down"

    def _subscription(self, m: _Member) -> bytes:
        return encode_subscription(Subscription(topics=(m.group.topic,)))

    def _join(self, m: _Member) -> None:
        inc = m.incarnation
        req = JoinGroupRequest(
            group_id=m.group.group_id,
            session_timeout_ms=self.config.session_timeout_ms,
            rebalance_timeout_ms=self.config.max_poll_interval_ms,
            member_id=m.member_id,
            group_instance_id=m.instance_id,
            protocol_type="consumer",
            protocols=(("range", self._subscription(m)),),
            reason=None,
            version=9,
            client_id=m.client_id,
            client_host=m.host,
        )
        self.coordinator.join_group(req, lambda resp: self.soon(lambda: self._on_join(m, inc, resp)))

    def _on_join(self, m: _Member, inc: int, resp: JoinGroupResponse) -> None:
        if not self._alive(m, inc):
            return
        if resp.error == ErrorCode.MEMBER_ID_REQUIRED:
            m.member_id = resp.member_id
            self._join(m)
            return
        if resp.error == ErrorCode.UNKNOWN_MEMBER_ID:
            m.member_id = ""
            self._join(m)
            return
        if resp.error != ErrorCode.NONE:

            def retry() -> None:
                if self._alive(m, inc):
                    self._join(m)

            self.at(self.now() + 100, retry)
            return
        m.member_id = resp.member_id
        m.generation = resp.generation_id
        m.state = "syncing"
        assignments: tuple[tuple[str, bytes], ...] = ()
        if resp.leader == resp.member_id and not resp.skip_assignment:
            assignments = self._range_assign(m.group, [jm.member_id for jm in resp.members])
        req = SyncGroupRequest(
            group_id=m.group.group_id,
            generation_id=resp.generation_id,
            member_id=m.member_id,
            group_instance_id=m.instance_id,
            protocol_type="consumer",
            protocol_name=resp.protocol_name,
            assignments=assignments,
            version=5,
        )
        self.coordinator.sync_group(req, lambda r: self.soon(lambda: self._on_sync(m, inc, r)))

    def _range_assign(self, group: _Group, member_ids: list[str]) -> tuple[tuple[str, bytes], ...]:
        ids = sorted(member_ids)
        n = self.config.partitions
        per, extra = divmod(n, len(ids))
        out = []
        start = 0
        for i, mid in enumerate(ids):
            count = per + (1 if i < extra else 0)
            parts = tuple(range(start, start + count))
            start += count
            body = Assignment(partitions=((group.topic, parts),) if parts else ())
            out.append((mid, encode_assignment(body)))
        return tuple(out)

    def _on_sync(self, m: _Member, inc: int, resp: SyncGroupResponse) -> None:
        if not self._alive(m, inc):
            return
        if resp.error != ErrorCode.NONE:
            if resp.error == ErrorCode.UNKNOWN_MEMBER_ID:
                m.member_id = ""
            m.state = "joining"
            self._join(m)
            return
        from groupcoord.consumer_protocol import decode_assignment

        parts: tuple[int, ...] = ()
        if resp.assignment:
            for topic, ps in decode_assignment(resp.assignment).partitions:
                if topic == m.group.topic:
                    parts = tuple(sorted(ps))
        was_stalled = m.state == "stalled"
        m.assignment = parts
        m.positions = {p: m.group.committed.get(p, 0) for p in parts}
        m.last_progress_ms = self.now()
        m.last_commit_ms = self.now()
        m.state = "stalled" if was_stalled else "stable"
        self._schedule_heartbeat(m, inc)
        self.at(self.now() + self.config.commit_interval_ms, lambda: self._auto_commit(m, inc))

    def _schedule_heartbeat(self, m: _Member, inc: int) -> None:
        gen = m.generation

        def beat() -> None:
            if not self._alive(m, inc) or m.generation != gen or m.state not in ("stable", "stalled"):
                return
            req = HeartbeatRequest(
                group_id=m.group.group_id,
                generation_id=m.generation,
                member_id=m.member_id,
                group_instance_id=m.instance_id,
                version=4,
            )
            self.coordinator.heartbeat(req, lambda r: self.soon(lambda: self._on_heartbeat(m, inc, gen, r)))

        self.at(self.now() + self.config.heartbeat_interval_ms, beat)

    def _on_heartbeat(self, m: _Member, inc: int, gen: int, resp: HeartbeatResponse) -> None:
        if not self._alive(m, inc) or m.generation != gen:
            return
        if resp.error == ErrorCode.NONE:
            self._schedule_heartbeat(m, inc)
            return
        if m.state == "stalled":
            # the heartbeat thread keeps going but the application is not polling: the client only
            # rejoins from poll(), so keep heartbeating until the poll timer fires
            if resp.error == ErrorCode.REBALANCE_IN_PROGRESS:
                self._schedule_heartbeat(m, inc)
            return
        if resp.error in (ErrorCode.UNKNOWN_MEMBER_ID, ErrorCode.FENCED_INSTANCE_ID):
            m.member_id = "" if resp.error == ErrorCode.UNKNOWN_MEMBER_ID else m.member_id
        # eager protocol: commit what was consumed, give up every partition, rejoin
        self._commit(m, inc)
        m.assignment = ()
        m.state = "joining"
        self._join(m)

    def _advance(self, m: _Member) -> None:
        """Consume up to the log end at ``consume_rate`` since the last progress (not while stalled)."""
        now = self.now()
        if m.state == "stable":
            budget = int(self.config.consume_rate * (now - m.last_progress_ms) / 1000)
            for p in m.assignment:
                leo = self.writer.log_end_offset(m.group.topic, p)
                m.positions[p] = min(leo, m.positions.get(p, 0) + budget)
        m.last_progress_ms = now

    def _commit(self, m: _Member, inc: int) -> None:
        if m.state not in ("stable",) or not m.assignment:
            return
        self._advance(m)
        offsets = dict(m.positions)
        req = OffsetCommitRequest(
            group_id=m.group.group_id,
            generation_id=m.generation,
            member_id=m.member_id,
            group_instance_id=m.instance_id,
            retention_time_ms=-1,
            topics=(
                OffsetCommitTopic(
                    name=m.group.topic,
                    partitions=tuple(
                        OffsetCommitPartition(partition=p, offset=o) for p, o in sorted(offsets.items())
                    ),
                ),
            ),
            version=8,
        )

        def done(resp: OffsetCommitResponse) -> None:
            for t in resp.topics:
                for pr in t.partitions:
                    if pr.error == ErrorCode.NONE:
                        m.group.committed[pr.partition] = offsets[pr.partition]

        self.coordinator.offset_commit(req, done)

    def _auto_commit(self, m: _Member, inc: int) -> None:
        if not self._alive(m, inc):
            return
        if m.state == "stable":
            self._commit(m, inc)
        if m.state in ("stable", "stalled", "syncing", "joining"):
            self.at(self.now() + self.config.commit_interval_ms, lambda: self._auto_commit(m, inc))

    def _leave(self, m: _Member, reason: str) -> None:
        self._commit(m, m.incarnation)
        req = LeaveGroupRequest(
            group_id=m.group.group_id,
            members=(
                LeaveGroupMember(member_id=m.member_id, group_instance_id=m.instance_id, reason=reason),
            ),
            version=5,
        )

        def ignore(_resp: LeaveGroupResponse) -> None:
            return None

        self.coordinator.leave_group(req, ignore)
        self._stop(m)

    def _stop(self, m: _Member) -> None:
        m.incarnation += 1
        m.state = "down"
        m.assignment = ()
        m.member_id = ""
        m.generation = -1

    # ------------------------------------------------------------------ disruptions
    def _group_stable(self, group: _Group) -> bool:
        g = self.coordinator.group(group.group_id)
        if g is None or g.state != GroupState.STABLE:
            return False
        return all(m.state in ("stable", "down") for m in group.members)

    def _plan_next(self, group: _Group) -> None:
        gap = self.rng.randint(self.config.min_gap_ms, self.config.max_gap_ms)
        self.at(max(self.now(), group.busy_until) + gap, lambda: self._disrupt(group))

    def _disrupt(self, group: _Group) -> None:
        if not self._group_stable(group):
            self.at(self.now() + 1_000, lambda: self._disrupt(group))
            return
        cfg = self.config
        up = [m for m in group.members if m.state == "stable"]
        down = [m for m in group.members if m.state == "down"]
        static_up = [m for m in up if m.instance_id is not None]
        choices = ["join"]
        if len(up) >= 2:
            choices += ["leave", "crash", "slow"]
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
            self._starter(m)()
            self._truth(group, "join", "new_member_joined", m, now, now)
        elif kind == "leave":
            m = self.rng.choice(up)
            self._leave(m, CLOSE_REASON)
            self._truth(group, "leave", "member_left", m, now, now)
        elif kind == "crash":
            m = self.rng.choice(up)
            self._stop(m)
            self._truth(group, "crash", "session_timeout", m, now, now + cfg.session_timeout_ms)
            busy = cfg.session_timeout_ms + 15_000
        elif kind == "slow":
            m = self.rng.choice(up)
            self._advance(m)
            m.state = "stalled"
            inc = m.incarnation
            leave_at = now + cfg.max_poll_interval_ms

            def poll_timeout() -> None:
                if m.incarnation == inc and m.state == "stalled":
                    self._leave(m, POLL_TIMEOUT_REASON)

            self.at(leave_at, poll_timeout)
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
