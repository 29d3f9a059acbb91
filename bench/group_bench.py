"""Consumer groups over the wire: rebalance latency and coordinator throughput.

Plain script, not a test. Every member is a raw asyncio connection speaking the real protocol
with the project's codec (``groupcoord.protocol``): JoinGroup v7 (with the KIP-394
MEMBER_ID_REQUIRED round trip), SyncGroup v5 (the leader computes a round-robin assignment of an
N-partition topic in the consumer protocol's format), Heartbeat v4, OffsetCommit v8.

Workloads (each against a fresh broker process):

* ``rebalance``: N = 1, 10, 100, 1000 members join one new group (group.initial.rebalance.delay.ms=0);
  the clock runs from the first JoinGroup sent until every member holds the SyncGroup answer of
  the one generation that contains all N members.
* ``rejoin``: a stable group of 100; one member rejoins with new metadata; time (and loopback
  round trips) from the last member's rejoin until every member holds the new generation's
  assignment.
* ``heartbeat`` / ``commit``: 50 connections, one member each (one group of 50), closed loop:
  each connection sends its next request as soon as the previous answer arrives. Requests are
  pre-encoded (only the correlation id, and for commits the offset, is patched per request) and
  answers are recognised by comparing bytes, so the client does little work per request; the
  client's own CPU time is reported next to the broker's to show whether it is the bottleneck.

    .venv/bin/python bench/group_bench.py [--sizes 1,10,100,1000] [--seconds 5] [--connections 50]

Results: bench/results/group_bench.json. ``bench/compare.py`` runs the same workloads against
the peer broker.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import datetime
import json
import os
import platform
import statistics
import struct
import subprocess
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from groupcoord.formats.consumer_protocol import (
    Assignment,
    Subscription,
    decode_assignment,
    encode_assignment,
    encode_subscription,
)
from groupcoord.protocol.client import PipelinedWireClient
from groupcoord.protocol.codec import decode_response, encode_request
from groupcoord.protocol.entities import make
from groupcoord.protocol.registry import ApiMessages, load_messages

sys.path.insert(0, str(Path(__file__).resolve().parent))
import peer

RESULTS = Path(__file__).resolve().parent / "results"

JOIN = load_messages(11, 7)
SYNC = load_messages(14, 5)
HEARTBEAT = load_messages(12, 4)
COMMIT = load_messages(8, 8)
LEAVE = load_messages(13, 4)
CREATE_TOPICS = load_messages(19, 5)
METADATA = load_messages(3, 9)

NONE = 0
MEMBER_ID_REQUIRED = 79
REBALANCE_IN_PROGRESS = 27
ILLEGAL_GENERATION = 22
UNKNOWN_MEMBER_ID = 25
COORDINATOR_LOAD_IN_PROGRESS = 14
COORDINATOR_NOT_AVAILABLE = 15
TOPIC_ALREADY_EXISTS = 36

_CORR = struct.Struct(">i")
_I64 = struct.Struct(">q")
_SENTINEL_OFFSET = 0x0123456789ABCDEF
#: Seconds between a broker's "listening" and the first measured request.
SETTLE_S = 1.0


# ============================================================================ connection
class Conn(PipelinedWireClient):
    """One client connection: pipelined requests matched to answers by correlation id."""

    client_id = "bench"


class Template:
    """A pre-encoded request: per send only the correlation id (and optionally an i64) changes."""

    def __init__(self, messages: ApiMessages, request: Any, patch_i64: int | None = None) -> None:
        self.messages = messages
        self.base = bytearray(encode_request(messages, 0, request, client_id="bench"))
        self.i64_at = -1
        if patch_i64 is not None:
            self.i64_at = bytes(self.base).index(_I64.pack(patch_i64))

    def frame(self, corr: int, value: int | None = None) -> bytearray:
        buf = bytearray(self.base)
        _CORR.pack_into(buf, 8, corr)
        if value is not None:
            _I64.pack_into(buf, self.i64_at, value)
        return buf


# ============================================================================ protocol helpers
def subscription(topic: str, user_data: bytes | None = None) -> bytes:
    return encode_subscription(Subscription(topics=(topic,), user_data=user_data))


def round_robin(members: list[str], topic: str, partitions: int) -> dict[str, bytes]:
    """The leader's assignment: partitions dealt round-robin over members sorted by id."""
    order = sorted(members)
    owned: dict[str, list[int]] = {m: [] for m in order}
    for p in range(partitions):
        owned[order[p % len(order)]].append(p)
    return {
        m: encode_assignment(Assignment(partitions=((topic, tuple(ps)),) if ps else ()))
        for m, ps in owned.items()
    }


def join_request(group: str, member_id: str, metadata: bytes, session_ms: int, rebalance_ms: int) -> Any:
    t = JOIN.request_type
    proto_cls = _child(t, "protocols")
    return make(
        t,
        group_id=group,
        session_timeout=datetime.timedelta(milliseconds=session_ms),
        rebalance_timeout=datetime.timedelta(milliseconds=rebalance_ms),
        member_id=member_id,
        group_instance_id=None,
        protocol_type="consumer",
        protocols=(make(proto_cls, name="range", metadata=metadata),),
        reason=None,
    )


def _child(t: Any, name: str) -> Any:
    from groupcoord.protocol.entities import child

    return child(t, name)


def sync_request(
    group: str, generation: int, member_id: str, assignments: dict[str, bytes], protocol_name: str
) -> Any:
    t = SYNC.request_type
    a_t = _child(t, "assignments")
    return make(
        t,
        group_id=group,
        generation_id=generation,
        member_id=member_id,
        group_instance_id=None,
        protocol_type="consumer",
        protocol_name=protocol_name,
        assignments=tuple(make(a_t, member_id=m, assignment=a) for m, a in assignments.items()),
    )


def heartbeat_request(group: str, generation: int, member_id: str) -> Any:
    return make(
        HEARTBEAT.request_type,
        group_id=group,
        generation_id=generation,
        member_id=member_id,
        group_instance_id=None,
    )


def commit_request(
    group: str, generation: int, member_id: str, topic: str, partition: int, offset: int
) -> Any:
    t = COMMIT.request_type
    topic_t = _child(t, "topics")
    part_t = _child(topic_t, "partitions")
    return make(
        t,
        group_id=group,
        generation_id_or_member_epoch=generation,
        member_id=member_id,
        group_instance_id=None,
        retention_time=datetime.timedelta(milliseconds=-1),
        topics=(
            make(
                topic_t,
                name=topic,
                partitions=(
                    make(
                        part_t,
                        partition_index=partition,
                        committed_offset=offset,
                        committed_leader_epoch=-1,
                        committed_metadata="",
                    ),
                ),
            ),
        ),
    )


async def create_topic(host: str, port: int, topic: str, partitions: int) -> None:
    """CreateTopics v5 over a raw connection; an existing topic is fine."""
    conn = await Conn.open(host, port)
    try:
        t = CREATE_TOPICS.request_type
        topic_t = _child(t, "topics")
        req = make(
            t,
            topics=(
                make(
                    topic_t,
                    name=topic,
                    num_partitions=partitions,
                    replication_factor=1,
                    assignments=(),
                    configs=(),
                ),
            ),
            timeout=datetime.timedelta(seconds=30),
            validate_only=False,
        )
        resp = await conn.call(CREATE_TOPICS, req)
        code = int(resp.topics[0].error_code)
        if code not in (NONE, TOPIC_ALREADY_EXISTS):
            raise RuntimeError(f"CreateTopics {topic}: error {code} {resp.topics[0].error_message}")
    finally:
        conn.close()


# ============================================================================ members
@dataclass
class GroupWatch:
    """Shared bookkeeping of one group's members, to see when the whole group is in sync."""

    size: int
    members_of_generation: dict[int, int] = field(default_factory=dict)
    synced: dict[int, tuple[int, float]] = field(default_factory=dict)  # index -> (generation, time)
    done: asyncio.Event = field(default_factory=asyncio.Event)
    done_generation: int = -1
    done_at: float = 0.0
    errors: dict[str, int] = field(default_factory=dict)
    joins: int = 0
    syncs: int = 0
    heartbeats: int = 0
    min_generation: int = -1  # only generations above this count (rejoin workload)
    t0: float = 0.0
    #: generation -> [first join answer, last join answer, first sync answer, last sync answer] (s after t0)
    phases: dict[int, list[float]] = field(default_factory=dict)

    def mark(self, generation: int, which: int) -> None:
        t = time.perf_counter() - self.t0
        ph = self.phases.setdefault(generation, [t, t, -1.0, -1.0] if which == 0 else [-1.0, -1.0, t, t])
        first, last = (0, 1) if which == 0 else (2, 3)
        if ph[first] < 0:
            ph[first] = t
        ph[last] = t

    def timeline(self) -> dict[str, dict[str, float]]:
        names = ("first_join_answer_ms", "last_join_answer_ms", "first_sync_answer_ms", "last_sync_answer_ms")
        return {
            str(g): {n: round(v * 1000, 2) for n, v in zip(names, ph, strict=True)}
            for g, ph in sorted(self.phases.items())
        }

    def count(self, what: str) -> None:
        self.errors[what] = self.errors.get(what, 0) + 1

    def check(self) -> None:
        if self.done.is_set():
            return
        gens = {g for g, _ in self.synced.values()}
        if len(self.synced) < self.size or len(gens) != 1:
            return
        (gen,) = gens
        if gen <= self.min_generation or self.members_of_generation.get(gen) != self.size:
            return
        self.done_generation = gen
        self.done_at = max(t for _, t in self.synced.values())
        self.done.set()


class Member:
    """One consumer-group member on its own connection, driven like a real client."""

    def __init__(
        self,
        index: int,
        conn: Conn,
        watch: GroupWatch,
        *,
        group: str,
        topic: str,
        partitions: int,
        session_ms: int,
        rebalance_ms: int,
        heartbeat_interval_s: float,
    ) -> None:
        self.index = index
        self.conn = conn
        self.watch = watch
        self.group = group
        self.topic = topic
        self.partitions = partitions
        self.session_ms = session_ms
        self.rebalance_ms = rebalance_ms
        self.heartbeat_interval_s = heartbeat_interval_s
        self.member_id = ""
        self.generation = -1
        self.protocol_name = "range"
        self.metadata = subscription(topic)
        self.assignment: Assignment | None = None
        self.rejoin_now = asyncio.Event()
        self.last_join_sent = 0.0
        self.requests = 0

    async def join_and_sync(self) -> None:
        """Join (with the MEMBER_ID_REQUIRED round trip) and sync until a generation is held."""
        while True:
            self.last_join_sent = time.perf_counter()
            self.requests += 1
            resp = await self.conn.call(
                JOIN,
                join_request(self.group, self.member_id, self.metadata, self.session_ms, self.rebalance_ms),
            )
            self.watch.joins += 1
            code = int(resp.error_code)
            if code == MEMBER_ID_REQUIRED:
                self.member_id = resp.member_id
                continue
            if code == UNKNOWN_MEMBER_ID:
                self.member_id = ""
                self.watch.count("join:UNKNOWN_MEMBER_ID")
                continue
            if code in (COORDINATOR_LOAD_IN_PROGRESS, COORDINATOR_NOT_AVAILABLE, REBALANCE_IN_PROGRESS):
                self.watch.count(f"join:{code}")
                await asyncio.sleep(0.01)
                continue
            if code != NONE:
                self.watch.count(f"join:{code}")
                raise RuntimeError(f"member {self.index}: JoinGroup error {code}")
            self.member_id = resp.member_id
            self.generation = int(resp.generation_id)
            self.watch.mark(self.generation, 0)
            self.protocol_name = resp.protocol_name or "range"
            assignments: dict[str, bytes] = {}
            if resp.leader == self.member_id:
                ids = [m.member_id for m in resp.members]
                self.watch.members_of_generation[self.generation] = len(ids)
                assignments = round_robin(ids, self.topic, self.partitions)
            self.requests += 1
            sresp = await self.conn.call(
                SYNC,
                sync_request(self.group, self.generation, self.member_id, assignments, self.protocol_name),
            )
            self.watch.syncs += 1
            scode = int(sresp.error_code)
            if scode == NONE:
                self.watch.mark(self.generation, 1)
                self.assignment = decode_assignment(bytes(sresp.assignment)) if sresp.assignment else None
                self.watch.synced[self.index] = (self.generation, time.perf_counter())
                self.watch.check()
                return
            self.watch.count(f"sync:{scode}")
            if scode == UNKNOWN_MEMBER_ID:
                self.member_id = ""
            await asyncio.sleep(0)

    async def run(self) -> None:
        """Join, then heartbeat every interval; rejoin when the coordinator asks for it."""
        await self.join_and_sync()
        while not self.watch.done.is_set() or self.rejoin_now.is_set():
            if self.rejoin_now.is_set():
                self.rejoin_now.clear()
                await self.join_and_sync()
                continue
            with contextlib.suppress(asyncio.TimeoutError):
                await asyncio.wait_for(self.rejoin_now.wait(), self.heartbeat_interval_s)
                continue
            self.requests += 1
            resp = await self.conn.call(
                HEARTBEAT, heartbeat_request(self.group, self.generation, self.member_id)
            )
            self.watch.heartbeats += 1
            code = int(resp.error_code)
            if code == NONE:
                continue
            self.watch.count(f"heartbeat:{code}")
            if code == UNKNOWN_MEMBER_ID:
                self.member_id = ""
            await self.join_and_sync()

    async def heartbeat_until(self, stop: asyncio.Event) -> None:
        """Keep the membership alive (and follow rebalances) until ``stop`` is set."""
        while not stop.is_set():
            with contextlib.suppress(asyncio.TimeoutError):
                await asyncio.wait_for(stop.wait(), self.heartbeat_interval_s)
                return
            resp = await self.conn.call(
                HEARTBEAT, heartbeat_request(self.group, self.generation, self.member_id)
            )
            code = int(resp.error_code)
            if code != NONE:
                self.watch.count(f"heartbeat:{code}")
                if code == UNKNOWN_MEMBER_ID:
                    self.member_id = ""
                await self.join_and_sync()


async def open_members(
    host: str,
    port: int,
    n: int,
    watch: GroupWatch,
    *,
    group: str,
    topic: str,
    partitions: int,
    session_ms: int,
    heartbeat_interval_s: float,
) -> list[Member]:
    conns: list[Conn] = []
    for start in range(0, n, 100):  # connect in waves so the listen backlog never overflows
        conns += await asyncio.gather(*(Conn.open(host, port) for _ in range(start, min(n, start + 100))))
    return [
        Member(
            i,
            c,
            watch,
            group=group,
            topic=topic,
            partitions=partitions,
            session_ms=session_ms,
            rebalance_ms=max(session_ms, 60_000),
            heartbeat_interval_s=heartbeat_interval_s,
        )
        for i, c in enumerate(conns)
    ]


def close_members(members: list[Member]) -> None:
    for m in members:
        m.conn.close()


# ============================================================================ workloads
async def wait_in_sync(watch: GroupWatch, tasks: list[asyncio.Task[None]], timeout_s: float) -> None:
    """Until the whole group is in sync; a member that fails, or the timeout, raises."""
    deadline = time.perf_counter() + timeout_s
    done_wait = asyncio.create_task(watch.done.wait())
    try:
        while not watch.done.is_set():
            left = deadline - time.perf_counter()
            if left <= 0:
                raise TimeoutError(
                    f"{watch.size} members not in sync after {timeout_s} s (errors {watch.errors})"
                )
            pending = [done_wait, *(t for t in tasks if not t.done())]
            finished, _ = await asyncio.wait(pending, timeout=left, return_when=asyncio.FIRST_COMPLETED)
            for t in finished:
                if t is not done_wait and t.exception() is not None:
                    raise t.exception()  # type: ignore[misc]
    finally:
        done_wait.cancel()


async def rebalance_latency(
    host: str,
    port: int,
    n: int,
    *,
    session_ms: int,
    heartbeat_interval_s: float,
    timeout_s: float,
    broker: peer.BrokerProcess | None = None,
) -> dict[str, Any]:
    """N members join a new group; ms until all hold the SyncGroup answer of the full generation."""
    group = f"bench-rebalance-{n}-{time.time_ns()}"
    topic = "bench-rebalance"
    watch = GroupWatch(size=n)
    members = await open_members(
        host,
        port,
        n,
        watch,
        group=group,
        topic=topic,
        partitions=n,
        session_ms=session_ms,
        heartbeat_interval_s=heartbeat_interval_s,
    )
    cpu0 = time.process_time()
    bcpu0 = broker.cpu_seconds() if broker else float("nan")
    t0 = watch.t0 = time.perf_counter()
    tasks = [asyncio.create_task(m.run()) for m in members]
    result: dict[str, Any] = {"members": n, "session_timeout_ms": session_ms}
    try:
        await wait_in_sync(watch, tasks, timeout_s)
        # Every member's assignment must be disjoint and together cover the topic.
        owned: list[int] = []
        for m in members:
            if m.assignment is not None:
                for _, parts in m.assignment.partitions:
                    owned += parts
        result.update(
            ok=True,
            latency_ms=(watch.done_at - t0) * 1000,
            generation=watch.done_generation,
            joins=watch.joins,
            syncs=watch.syncs,
            heartbeats=watch.heartbeats,
            errors=dict(watch.errors),
            partitions_assigned_once=sorted(owned) == list(range(n)),
            timeline=watch.timeline(),
            members_per_generation={str(g): c for g, c in sorted(watch.members_of_generation.items())},
            client_cpu_s=time.process_time() - cpu0,
            broker_cpu_s=(broker.cpu_seconds() - bcpu0) if broker else None,
        )
    except Exception as exc:
        result.update(ok=False, error=repr(exc), errors=dict(watch.errors))
    finally:
        for t in tasks:
            t.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
        close_members(members)
    return result


async def stable_group(
    host: str,
    port: int,
    n: int,
    *,
    group: str,
    topic: str,
    partitions: int,
    session_ms: int,
    heartbeat_interval_s: float,
    timeout_s: float,
) -> tuple[list[Member], GroupWatch, list[asyncio.Task[None]]]:
    """N members in one stable group (every member synced on the generation holding all N)."""
    watch = GroupWatch(size=n)
    members = await open_members(
        host,
        port,
        n,
        watch,
        group=group,
        topic=topic,
        partitions=partitions,
        session_ms=session_ms,
        heartbeat_interval_s=heartbeat_interval_s,
    )
    tasks = [asyncio.create_task(m.run()) for m in members]
    try:
        await wait_in_sync(watch, tasks, timeout_s)
    except BaseException:
        for t in tasks:
            t.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
        close_members(members)
        raise
    # The run() loops return once the group is in sync: the caller drives from here.
    await asyncio.gather(*tasks, return_exceptions=True)
    return members, watch, tasks


async def loopback_rtt_ms(conn: Conn, req: Any, count: int = 200) -> float:
    samples = []
    for _ in range(count):
        t = time.perf_counter()
        await conn.call(HEARTBEAT, req)
        samples.append(time.perf_counter() - t)
    return statistics.median(samples) * 1000


async def rejoin_latency(
    host: str, port: int, n: int, *, session_ms: int, heartbeat_interval_s: float, timeout_s: float
) -> dict[str, Any]:
    """A stable group of N; one member rejoins with new metadata; time until all hold the new generation."""
    group = f"bench-rejoin-{n}-{time.time_ns()}"
    topic = "bench-rejoin"
    result: dict[str, Any] = {
        "members": n,
        "session_timeout_ms": session_ms,
        "heartbeat_interval_ms": heartbeat_interval_s * 1000,
    }
    try:
        members, watch, _ = await stable_group(
            host,
            port,
            n,
            group=group,
            topic=topic,
            partitions=n,
            session_ms=session_ms,
            heartbeat_interval_s=heartbeat_interval_s,
            timeout_s=timeout_s,
        )
    except Exception as exc:
        return {**result, "ok": False, "error": f"forming the stable group: {exc!r}"}
    try:
        stable_gen = watch.done_generation
        rtt = await loopback_rtt_ms(
            members[0].conn, heartbeat_request(group, stable_gen, members[0].member_id), count=100
        )
        # Reset the watch for the next generation and keep everyone heartbeating.
        watch.done = asyncio.Event()
        watch.synced.clear()
        watch.min_generation = stable_gen
        watch.errors.clear()
        stop = asyncio.Event()
        rejoiner = members[-1]
        rejoiner.metadata = subscription(topic, user_data=b"changed")
        t0 = time.perf_counter()
        before = sum(m.requests for m in members)
        hb = [asyncio.create_task(m.heartbeat_until(stop)) for m in members if m is not rejoiner]
        rj = asyncio.create_task(rejoiner.join_and_sync())
        try:
            await asyncio.wait_for(watch.done.wait(), timeout_s)
        finally:
            stop.set()
            await asyncio.gather(*hb, rj, return_exceptions=True)
        last_rejoin = max(m.last_join_sent for m in members)
        elapsed_ms = (watch.done_at - last_rejoin) * 1000
        result.update(
            ok=True,
            total_ms=(watch.done_at - t0) * 1000,
            from_last_rejoin_ms=elapsed_ms,
            loopback_rtt_ms=rtt,
            round_trips_from_last_rejoin=elapsed_ms / rtt if rtt > 0 else None,
            new_generation=watch.done_generation,
            requests=sum(m.requests for m in members) - before,
            errors=dict(watch.errors),
        )
    except Exception as exc:
        result.update(ok=False, error=repr(exc))
    finally:
        close_members(members)
    return result


@dataclass(frozen=True, kw_only=True, slots=True)
class _Lane:
    """One closed loop of requests on a member's connection; a connection with ``depth`` lanes
    keeps ``depth`` requests in flight. Lane ``lane`` of ``depth`` commits the offsets
    ``n * depth + lane`` (n = 1, 2, ...), so no two lanes commit the same offset."""

    member: Member
    template: Template
    slot: int  #: the lane's index among all lanes (slot 0 samples latencies)
    lane: int = 0
    depth: int = 1


def _template(kind: str, group: str, generation: int, member_id: str, topic: str, partition: int) -> Template:
    if kind == "heartbeat":
        return Template(HEARTBEAT, heartbeat_request(group, generation, member_id))
    return Template(
        COMMIT,
        commit_request(group, generation, member_id, topic, partition, _SENTINEL_OFFSET),
        _SENTINEL_OFFSET,
    )


async def _drive(
    lanes: list[_Lane],
    members: list[Member],
    *,
    kind: str,
    seconds: float,
    warmup_s: float,
    broker: peer.BrokerProcess | None,
    result: dict[str, Any],
) -> dict[str, Any]:
    """Run every lane as fast as its answers come back: ``warmup_s`` unmeasured, then ``seconds``
    measured (requests, client and broker CPU, latencies of slot 0); closes ``members``."""
    counts = [0] * len(lanes)
    bad: dict[str, int] = {}
    phase = {"measuring": False, "stop": False}
    latencies: list[float] = []

    async def driver(ln: _Lane) -> None:
        tmpl, conn = ln.template, ln.member.conn
        # The first answer is decoded in full and checked; later answers must match it byte for byte.
        corr = 10_000 + ln.lane * 100_000_000
        frame = await conn.send_frame(tmpl.frame(corr, 0 if kind == "commit" else None), corr)
        _, resp = decode_response(tmpl.messages, frame)
        codes = (
            [int(resp.error_code)]
            if kind == "heartbeat"
            else [int(p.error_code) for t in resp.topics for p in t.partitions]
        )
        if any(codes):
            raise RuntimeError(f"{kind} answered with error codes {codes}")
        expected = frame[4:]
        n = 1
        sample = ln.slot == 0
        while not phase["stop"]:
            corr += 1
            t = time.perf_counter()
            frame = await conn.send_frame(
                tmpl.frame(corr, n * ln.depth + ln.lane if kind == "commit" else None), corr
            )
            if frame[4:] != expected:
                _, resp = decode_response(tmpl.messages, frame)
                key = repr(resp)[:200]
                bad[key] = bad.get(key, 0) + 1
            if phase["measuring"]:
                counts[ln.slot] += 1
                if sample:
                    latencies.append(time.perf_counter() - t)
            n += 1

    tasks = [asyncio.create_task(driver(ln)) for ln in lanes]
    try:
        await asyncio.sleep(warmup_s)
        for t in tasks:
            if t.done() and t.exception() is not None:
                raise t.exception()  # type: ignore[misc]
        cpu0 = time.process_time()
        bcpu0 = broker.cpu_seconds() if broker else float("nan")
        t0 = time.perf_counter()
        phase["measuring"] = True
        await asyncio.sleep(seconds)
        phase["measuring"] = False
        wall = time.perf_counter() - t0
        cpu = time.process_time() - cpu0
        bcpu = broker.cpu_seconds() - bcpu0 if broker else float("nan")
        phase["stop"] = True
        await asyncio.wait_for(asyncio.gather(*tasks, return_exceptions=True), 30)
        total = sum(counts)
        latencies.sort()
        result.update(
            ok=not bad and total > 0,
            per_second=total / wall,
            requests=total,
            seconds=wall,
            unexpected_answers=bad,
            client_cpu_fraction=cpu / wall,
            broker_cpu_fraction=bcpu / wall,
            client_us_per_request=cpu / total * 1e6 if total else None,
            broker_us_per_request=bcpu / total * 1e6 if total else None,
            p50_ms=latencies[len(latencies) // 2] * 1000 if latencies else None,
            p99_ms=latencies[int(len(latencies) * 0.99)] * 1000 if latencies else None,
        )
        if bad:
            result["error"] = f"{sum(bad.values())} unexpected answers"
    except Exception as exc:
        result.update(ok=False, error=repr(exc))
    finally:
        phase["stop"] = True
        for t in tasks:
            t.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
        close_members(members)
    return result


async def closed_loop(
    host: str,
    port: int,
    *,
    kind: str,
    connections: int,
    seconds: float,
    session_ms: int,
    timeout_s: float,
    broker: peer.BrokerProcess | None = None,
    warmup_s: float = 1.0,
) -> dict[str, Any]:
    """Heartbeats or offset commits, closed loop, one member per connection."""
    group = f"bench-{kind}-{time.time_ns()}"
    topic = "bench-commits"
    if kind == "commit":
        await create_topic(host, port, topic, connections)
    result: dict[str, Any] = {"connections": connections, "kind": kind, "session_timeout_ms": session_ms}
    try:
        members, watch, _ = await stable_group(
            host,
            port,
            connections,
            group=group,
            topic=topic,
            partitions=connections,
            session_ms=session_ms,
            heartbeat_interval_s=1.0,
            timeout_s=timeout_s,
        )
    except Exception as exc:
        return {**result, "ok": False, "error": f"forming the group: {exc!r}"}
    gen = watch.done_generation

    def lane(i: int, m: Member) -> _Lane:
        partition = 0
        if m.assignment is not None and m.assignment.partitions and m.assignment.partitions[0][1]:
            partition = m.assignment.partitions[0][1][0]
        return _Lane(member=m, template=_template(kind, group, gen, m.member_id, topic, partition), slot=i)

    return await _drive(
        [lane(i, m) for i, m in enumerate(members)],
        members,
        kind=kind,
        seconds=seconds,
        warmup_s=warmup_s,
        broker=broker,
        result=result,
    )


async def many_groups_loop(
    host: str,
    port: int,
    *,
    kind: str,
    connections: int,
    depth: int,
    seconds: float,
    session_ms: int,
    timeout_s: float,
    broker: peer.BrokerProcess | None = None,
    warmup_s: float = 1.0,
) -> dict[str, Any]:
    """Many small groups: each connection is the one member of its own group, ``depth`` requests in flight.

    Commits go to partition ``i`` of a ``connections``-partition topic; the group ids differ, so
    their records spread over the partitions of ``__consumer_offsets`` (on the peer too).
    """
    stamp = time.time_ns()
    topic = f"bench-many-groups-{stamp}"
    if kind == "commit":
        await create_topic(host, port, topic, connections)
    result: dict[str, Any] = {
        "connections": connections,
        "groups": connections,
        "depth": depth,
        "kind": kind,
        "session_timeout_ms": session_ms,
    }
    conns: list[Conn] = []
    members: list[Member] = []
    try:
        for start in range(0, connections, 100):
            conns += await asyncio.gather(
                *(Conn.open(host, port) for _ in range(start, min(connections, start + 100)))
            )
        members = [
            Member(
                i, c, GroupWatch(size=1), group=f"bench-mg-{stamp}-{i}", topic=topic,
                partitions=connections, session_ms=session_ms, rebalance_ms=max(session_ms, 60_000),
                heartbeat_interval_s=1.0,
            )
            for i, c in enumerate(conns)
        ]  # fmt: skip
        await asyncio.wait_for(asyncio.gather(*(m.join_and_sync() for m in members)), timeout_s)
    except Exception as exc:
        for c in conns:
            c.close()
        return {**result, "ok": False, "error": f"forming the groups: {exc!r}"}
    lanes = [
        _Lane(
            member=m,
            template=_template(kind, m.group, m.generation, m.member_id, topic, i),
            slot=i * depth + lane,
            lane=lane,
            depth=depth,
        )
        for i, m in enumerate(members)
        for lane in range(depth)
    ]
    return await _drive(
        lanes, members, kind=kind, seconds=seconds, warmup_s=warmup_s, broker=broker, result=result
    )


# ============================================================================ running
GROUPCOORD_SETTINGS = {"group.initial.rebalance.delay.ms": "0"}


def machine() -> dict[str, Any]:
    model = ""
    with contextlib.suppress(Exception):
        for line in subprocess.run(["lscpu"], capture_output=True, text=True).stdout.splitlines():
            if line.startswith("Model name:"):
                model = line.split(":", 1)[1].strip()
    return {
        "nproc": os.cpu_count(),
        "cpu_model": model,
        "python": platform.python_version(),
        "platform": platform.platform(),
        "date_utc": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        "loadavg": os.getloadavg(),
        "broker_event_loop": broker_event_loop(),
        "client_event_loop": "asyncio",
    }


def broker_event_loop() -> str:
    """The loop a groupcoord started by ``peer.start_groupcoord`` (this interpreter) runs on."""
    try:
        import uvloop
    except ImportError:
        return "asyncio"
    return f"uvloop {uvloop.__version__}"


def run_on(
    broker_name: str,
    workload: Callable[[str, int, peer.BrokerProcess], Any],
    settings: dict[str, str] | None = None,
) -> dict[str, Any]:
    """Start a fresh broker, run one async workload against it, stop the broker by PID."""
    broker = peer.start(broker_name, settings if settings is not None else GROUPCOORD_SETTINGS)
    try:
        # Every broker gets the same second after it listens to finish its start-up work
        # (groupcoord loads __consumer_offsets and builds its protocol codecs in the
        # background for a few hundred ms): the workloads measure a running broker.
        time.sleep(SETTLE_S)
        out: dict[str, Any] = asyncio.run(workload(broker.host, broker.port, broker))
        out["broker_rss_bytes"] = broker.rss_bytes()
        out["broker_alive_after"] = broker.alive()
        if "request_path" in broker.extra:  # groupcoord: compiled (mypyc) or pure Python
            out["broker_request_path"] = broker.extra["request_path"]
        return out
    except Exception as exc:
        return {"ok": False, "error": repr(exc)}
    finally:
        broker.stop()


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--sizes", default="1,10,100,1000")
    ap.add_argument("--seconds", type=float, default=5.0, help="measuring time of each throughput run")
    ap.add_argument("--connections", type=int, default=50)
    ap.add_argument("--session-ms", type=int, default=10_000)
    ap.add_argument(
        "--heartbeat-interval-ms",
        type=int,
        default=100,
        help="heartbeat interval of members that hold an assignment (rebalance workloads)",
    )
    ap.add_argument("--rejoin-members", type=int, default=100)
    ap.add_argument("--timeout", type=float, default=120.0)
    ap.add_argument(
        "--workloads",
        default="rebalance,rejoin,heartbeat,commit",
        help="comma-separated subset to run (e.g. commit)",
    )
    ap.add_argument("--out", default=str(RESULTS / "group_bench.json"))
    args = ap.parse_args()
    workloads = set(args.workloads.split(","))
    hb_s = args.heartbeat_interval_ms / 1000
    results: dict[str, Any] = {"machine": machine(), "settings": GROUPCOORD_SETTINGS, "args": vars(args)}

    for n in [int(x) for x in args.sizes.split(",") if x and "rebalance" in workloads]:
        r = run_on(
            "groupcoord",
            lambda h, p, b, n=n: rebalance_latency(
                h,
                p,
                n,
                session_ms=args.session_ms,
                heartbeat_interval_s=hb_s,
                timeout_s=args.timeout,
                broker=b,
            ),
        )
        results[f"rebalance_{n}"] = r
        print(f"rebalance N={n}: {r.get('latency_ms', float('nan')):.1f} ms  {r}", flush=True)

    if "rejoin" in workloads:
        r = run_on(
            "groupcoord",
            lambda h, p, b: rejoin_latency(
                h,
                p,
                args.rejoin_members,
                session_ms=args.session_ms,
                heartbeat_interval_s=hb_s,
                timeout_s=args.timeout,
            ),
        )
        results["rejoin"] = r
        print(f"rejoin of 1 in {args.rejoin_members}: {r}", flush=True)

    for kind in [k for k in ("heartbeat", "commit") if k in workloads]:
        r = run_on(
            "groupcoord",
            lambda h, p, b, kind=kind: closed_loop(
                h,
                p,
                kind=kind,
                connections=args.connections,
                seconds=args.seconds,
                session_ms=args.session_ms,
                timeout_s=args.timeout,
                broker=b,
            ),
        )
        results[f"{kind}s_per_s"] = r
        print(f"{kind}: {r.get('per_second', float('nan')):,.0f}/s  {r}", flush=True)

    Path(args.out).parent.mkdir(parents=True, exist_ok=True)
    Path(args.out).write_text(json.dumps(results, indent=2, default=str) + "\n")
    print(f"wrote {args.out}")


if __name__ == "__main__":
    main()
