"""Scale: many groups heartbeating for a long time (10,000 groups x 10 members, every 10 s).

Plain script, not a test. One broker process (``group.initial.rebalance.delay.ms=0``), then:

1. forming: the groups are formed ``--parallel`` at a time over sets of 10 connections (member i
   of a group joins on connection i of its set; a JoinGroup mutes its connection until answered,
   so a set forms one group at a time), each group through the real JoinGroup (with
   MEMBER_ID_REQUIRED) / SyncGroup exchange; a formed group's members heartbeat at once, on a
   second set of connections (so no heartbeat waits behind a parked JoinGroup);
2. steady state, for ``--duration`` seconds: every member sends a Heartbeat every ``--interval``
   seconds, the members' phases spread evenly over the interval. Requests are pre-encoded and
   pipelined on the shared connections; each answer's latency is taken from the write of the
   request to the arrival of its answer at the client. The sender wakes every ``--tick-ms``
   (0.5 ms) and sends the heartbeats that are due: a real fleet of members sends each at its own
   moment, and a coarse tick would instead fire them in bursts (50 at once every 5 ms), which
   measures the bursts. With ``--pin`` (the default) the broker runs on the last CPU and this
   client on the others: on one machine the kernel otherwise tends to put both on one core.

Reported: false session expirations (heartbeats answered UNKNOWN_MEMBER_ID: the coordinator
expired a member that never stopped heartbeating) and rebalances (answers REBALANCE_IN_PROGRESS
or ILLEGAL_GENERATION), heartbeat latency percentiles, the broker's resident memory (sampled every
second; peak and end), the broker's and the client's CPU, the client's own collections, and a
per-second timeline (answers, answers over 10 ms, the worst).

    .venv/bin/python bench/scale_bench.py [--groups 10000] [--members 10] [--interval 10] [--duration 600]
        [--tick-ms 0.5] [--pin | --no-pin] [--protocol classic|consumer]

``--protocol consumer`` forms consumer-protocol (KIP-848) groups instead, each subscribed to one
topic with a partition per member, through ``stable848_bench``'s members (ConsumerGroupHeartbeat v1,
heartbeating every 20 ms until the group is stable); the steady state then sends each member's
ConsumerGroupHeartbeat at its epoch with every other field null, every ``--interval``, and counts
an answer's error code instead of comparing bytes (each answer names its member).

Results: bench/results/scale_bench.json.
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import heapq
import json
import os
import random
import struct
import sys
import time
from array import array
from collections.abc import Callable
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
import group_bench
import peer
import stable848_bench
from group_bench import HEARTBEAT, Conn, GroupWatch, Member, Template, heartbeat_request
from groupcoord.protocol.entities import NO_THROTTLE, err, make

_CORR = struct.Struct(">i")
#: The topic every consumer-protocol group subscribes to (``--protocol consumer``).
CONSUMER_TOPIC = "scale-topic"
_IDX_BITS = 24
_IDX_MASK = (1 << _IDX_BITS) - 1


class LatencyConn(Conn):
    """A connection that records, per answered heartbeat, its latency and its error code."""

    def __init__(self) -> None:
        super().__init__()
        self.sent: dict[int, tuple[float, int]] = {}
        self.latencies_us: array[int] | None = None
        #: Per measured answer, its arrival in ms after the steady state began (the timeline).
        self.arrivals_ms: array[int] = array("I")
        self.t0 = 0.0
        self.expected: bytes = b""
        self.errors: dict[int, int] = {}
        self.erring_members: set[int] = set()
        self.expired_members: set[int] = set()
        self.answered = 0
        self.measuring = False
        #: With the consumer protocol every member's answer differs (it names the member): the
        #: error code is read at this offset of the frame instead of comparing bytes.
        self.error_at: int | None = None

    def data_received(self, data: bytes) -> None:
        if self.latencies_us is None:
            super().data_received(data)
            return
        now = time.perf_counter()
        self.decoder.feed(data)
        while (frame := self.decoder.next_frame()) is not None:
            (corr,) = _CORR.unpack_from(frame, 0)
            sent = self.sent.pop(corr, None)
            if sent is None:  # an answer to a forming request (JoinGroup, SyncGroup) on this connection
                fut = self.waiting.pop(corr, None)
                if fut is not None and not fut.done():
                    fut.set_result(frame)
                continue
            t, member = sent
            self.answered += 1
            if self.measuring:
                self.latencies_us.append(min(int((now - t) * 1e6), 0xFFFFFFFF))
                self.arrivals_ms.append(int((now - self.t0) * 1000))
            if self.error_at is not None:
                (code,) = struct.unpack_from(">h", frame, self.error_at)
                if code:
                    self.errors[code] = self.errors.get(code, 0) + 1
                    self.erring_members.add(member)
                    if code == group_bench.UNKNOWN_MEMBER_ID:
                        self.expired_members.add(member)
            elif frame[4:] != self.expected:
                (code,) = struct.unpack_from(">h", frame, len(frame) - 3)
                self.errors[code] = self.errors.get(code, 0) + 1
                self.erring_members.add(member)
                if code == group_bench.UNKNOWN_MEMBER_ID:
                    self.expired_members.add(member)


async def form_groups(
    host: str,
    port: int,
    *,
    groups: int,
    members: int,
    parallel: int,
    session_ms: int,
    timeout_s: float,
    on_formed: Callable[[list[tuple[LatencyConn, bytearray]]], None],
    protocol: str = "classic",
) -> int:
    """Form every group; each formed group's members are handed to ``on_formed`` at once.

    Member i of a group joins on connection i of its set and heartbeats on connection i of a
    second set: a JoinGroup mutes its connection until it is answered (as in Kafka), and the
    heartbeats of members formed earlier must not wait behind it. ``on_formed`` gets, per
    member, its heartbeat connection and its pre-encoded heartbeat.
    """
    sets: list[list[LatencyConn]] = []
    heartbeat_sets: list[list[LatencyConn]] = []
    loop = asyncio.get_running_loop()
    for _ in range(parallel):
        for which in (sets, heartbeat_sets):
            conns = []
            for _ in range(members):
                _, c = await loop.create_connection(LatencyConn, host, port)
                conns.append(c)
            which.append(conns)
    next_group = iter(range(groups))
    formed = 0
    t0 = time.perf_counter()

    async def worker(s: int) -> None:
        nonlocal formed
        for g in next_group:
            gid = f"scale-{g:06d}"
            if protocol == "consumer":
                on_formed(await _form_consumer_group(sets[s], heartbeat_sets[s], gid, members, timeout_s))
                formed += 1
                if formed % 1000 == 0:
                    print(f"  formed {formed} groups in {time.perf_counter() - t0:.1f} s", flush=True)
                continue
            watch = GroupWatch(size=members)
            ms = [
                Member(
                    i,
                    sets[s][i],
                    watch,
                    group=gid,
                    topic="scale-topic",
                    partitions=members,
                    session_ms=session_ms,
                    rebalance_ms=max(session_ms, 60_000),
                    heartbeat_interval_s=0.02,
                )
                for i in range(members)
            ]
            tasks = [asyncio.create_task(m.run()) for m in ms]
            await group_bench.wait_in_sync(watch, tasks, timeout_s)
            await asyncio.gather(*tasks)
            on_formed(
                [
                    (
                        heartbeat_sets[s][m.index],
                        Template(HEARTBEAT, heartbeat_request(gid, m.generation, m.member_id)).base,
                    )
                    for m in ms
                ]
            )
            formed += 1
            if formed % 1000 == 0:
                print(f"  formed {formed} groups in {time.perf_counter() - t0:.1f} s", flush=True)

    await asyncio.gather(*(worker(s) for s in range(parallel)))
    return formed


async def _form_consumer_group(
    conns: list[LatencyConn], heartbeat_conns: list[LatencyConn], gid: str, members: int, timeout_s: float
) -> list[tuple[LatencyConn, bytearray]]:
    """One consumer-protocol group of ``members`` over ``CONSUMER_TOPIC`` (one partition per
    member), formed by ``stable848_bench``'s members heartbeating every 20 ms until stable; then
    each member's steady-state ConsumerGroupHeartbeat (its epoch, all else null)."""
    watch = stable848_bench.ConsumerWatch(members, members)
    watch.members = [
        stable848_bench.ConsumerMember(conns[i], watch, gid, CONSUMER_TOPIC, 0.02, own_interval=True)
        for i in range(members)
    ]
    tasks = [asyncio.create_task(m.run()) for m in watch.members]
    try:
        deadline = time.perf_counter() + timeout_s
        while not watch.done.is_set():
            for t in tasks:
                if t.done() and t.exception() is not None:
                    raise t.exception()  # type: ignore[misc]
            if time.perf_counter() > deadline:
                raise TimeoutError(f"{gid} not stable after {timeout_s} s")
            watch.check()
            await asyncio.sleep(0.01)
    finally:
        for m in watch.members:
            m.stop.set()
        await asyncio.gather(*tasks, return_exceptions=True)
    return [
        (
            heartbeat_conns[i],
            Template(stable848_bench.CGH, stable848_bench.cgh_request(gid, m.member_id, m.epoch)).base,
        )
        for i, m in enumerate(watch.members)
    ]


def _expected_answer() -> bytes:
    """A successful Heartbeat answer without size prefix and correlation id."""
    frame = HEARTBEAT.encode_response(
        0, make(HEARTBEAT.response_type, throttle_time=NO_THROTTLE, error_code=err(0))
    )
    return frame[8:]


async def scale(args: argparse.Namespace, broker: peer.BrokerProcess) -> dict[str, Any]:
    """Form the groups while heartbeating those already formed; then the measured steady state."""
    result: dict[str, Any] = {}
    rss_samples: list[tuple[float, int]] = []
    expected = _expected_answer()
    members: list[tuple[LatencyConn, bytearray]] = []
    conns: dict[int, LatencyConn] = {}
    # A heap of the members' next heartbeats, each an int: time in microseconds << 24 | member
    # index. Not tuples: a tuple per heartbeat living 10 s, each replacing one that died, fills
    # this process's youngest GC generation without tripping its counter, and the collection
    # that finally runs walks 100,000 of them (the same trap the broker's timer fell into).
    due: list[int] = []
    interval = args.interval

    def on_formed(new: list[tuple[LatencyConn, bytearray]]) -> None:
        now = time.perf_counter()
        for conn, base in new:
            if id(conn) not in conns:
                conns[id(conn)] = conn
                conn.latencies_us = array("I")
                conn.expected = expected
                if args.protocol == "consumer":
                    # ConsumerGroupHeartbeat v1 answer: correlation id, tagged fields, throttle
                    conn.error_at = 4 + 1 + 4
            # The first heartbeat of a member is one interval after its group formed, at a
            # random phase so that the heartbeats of a group spread out.
            first = now + interval * (0.5 + random.random() / 2)
            heapq.heappush(due, int(first * 1e6) << _IDX_BITS | len(members))
            members.append((conn, base))

    client_gc = _GcPauses()
    state = {"corr": 1_000_000_000, "sent": 0, "stop": False, "lag_max": 0.0, "measuring": False}

    async def sender() -> None:
        next_rss = time.perf_counter()
        while not state["stop"]:
            now = time.perf_counter()
            bound = int(now * 1e6) + 1 << _IDX_BITS
            while due and due[0] < bound:
                k = heapq.heappop(due) & _IDX_MASK
                conn, base = members[k]
                frame = bytearray(base)
                corr = state["corr"]
                _CORR.pack_into(frame, 8, corr)
                conn.sent[corr] = (time.perf_counter(), k)
                conn.transport.write(frame)  # type: ignore[union-attr]
                state["corr"] = corr + 1
                state["sent"] += 1
                heapq.heappush(due, int((now + interval) * 1e6) << _IDX_BITS | k)
            if state["measuring"]:
                state["lag_max"] = max(state["lag_max"], time.perf_counter() - now)
            if now >= next_rss:
                rss_samples.append((now, broker.rss_bytes()))
                next_rss += 1.0
                if len(rss_samples) % 30 == 0:
                    answered = sum(c.answered for c in conns.values())
                    errs = sum(sum(c.errors.values()) for c in conns.values())
                    print(
                        f"  members={len(members)} sent={state['sent']} answered={answered} errors={errs} "
                        f"rss={rss_samples[-1][1] / 2**20:.0f} MiB",
                        flush=True,
                    )
            await asyncio.sleep(args.tick_ms / 1000)

    send_task = asyncio.create_task(sender())
    t_form = time.perf_counter()
    try:
        await form_groups(
            broker.host,
            broker.port,
            groups=args.groups,
            members=args.members,
            parallel=args.parallel,
            session_ms=args.session_ms,
            timeout_s=args.timeout,
            on_formed=on_formed,
            protocol=args.protocol,
        )
        result["forming_seconds"] = time.perf_counter() - t_form
        # This process holds 100,000 members' state; its own full garbage collections (about
        # 0.1-0.25 s each, measured) would pause the reading of answers and show up as broker
        # latency. Everything made so far lives until the end: take it out of the collector.
        gc.collect()
        gc.freeze()
        gc.callbacks.append(client_gc.on_gc)
        result["members"] = len(members)
        # Each member's phase was set when its group formed, and groups formed at a varying pace:
        # some moments of the 10 s cycle carried 15-25% more heartbeats than others, the same
        # moments every cycle. A fleet of independent members has uniformly random phases: give
        # every member one now (its next heartbeat within one interval, so no session lapses).
        if args.uniform_phases:
            now = time.perf_counter()
            due[:] = [
                int((now + interval * random.random()) * 1e6) << _IDX_BITS | k for k in range(len(members))
            ]
            heapq.heapify(due)
        result["rss_after_forming_bytes"] = broker.rss_bytes()
        forming_errors: dict[int, int] = {}
        for c in conns.values():
            for code, cnt in c.errors.items():
                forming_errors[code] = forming_errors.get(code, 0) + cnt
            c.errors.clear()
            c.erring_members.clear()
        result["error_codes_while_forming"] = forming_errors
        print(
            f"formed {args.groups} groups ({len(members)} members) in {result['forming_seconds']:.1f} s; "
            f"heartbeat errors meanwhile: {forming_errors}",
            flush=True,
        )
        # Steady state: measure for --duration seconds.
        start = time.perf_counter()
        result["steady_state_began_unix"] = time.time()
        sent0 = state["sent"]
        cpu0 = time.process_time()
        bcpu0 = broker.cpu_seconds()
        for c in conns.values():
            c.t0 = start
            c.measuring = True
        state["measuring"] = True
        await asyncio.sleep(args.duration)
        wall = time.perf_counter() - start
        cpu = time.process_time() - cpu0
        bcpu = broker.cpu_seconds() - bcpu0
        for c in conns.values():
            c.measuring = False
        state["measuring"] = False
    finally:
        state["stop"] = True
        await send_task
    t_drain = time.perf_counter()
    while any(c.sent for c in conns.values()) and time.perf_counter() - t_drain < 30:
        await asyncio.sleep(0.05)
    lat = array("I")
    errors: dict[int, int] = {}
    erring: set[tuple[int, int]] = set()
    for c in conns.values():
        assert c.latencies_us is not None
        lat.extend(c.latencies_us)
        for code, cnt in c.errors.items():
            errors[code] = errors.get(code, 0) + cnt
        erring |= {(id(c), m) for m in c.erring_members}
    ordered = sorted(lat)
    timeline = _timeline(conns.values())

    def pct(q: float) -> float | None:
        return ordered[min(len(ordered) - 1, int(len(ordered) * q))] / 1000 if ordered else None

    steady_rss = [r for t, r in rss_samples if t >= start]
    result.update(
        duration_seconds=wall,
        heartbeats_sent=state["sent"] - sent0,
        heartbeats_answered_in_window=len(ordered),
        unanswered_at_end=sum(len(c.sent) for c in conns.values()),
        heartbeats_per_second=len(ordered) / wall,
        false_session_expirations=errors.get(group_bench.UNKNOWN_MEMBER_ID, 0)
        + result["error_codes_while_forming"].get(group_bench.UNKNOWN_MEMBER_ID, 0),
        rebalance_answers=errors.get(group_bench.REBALANCE_IN_PROGRESS, 0)
        + errors.get(group_bench.ILLEGAL_GENERATION, 0),
        error_codes=errors,
        members_with_errors=len(erring),
        members_expired=len(set().union(*(c.expired_members for c in conns.values()))),
        latency_ms={"p50": pct(0.5), "p90": pct(0.9), "p99": pct(0.99), "p999": pct(0.999), "max": pct(1.0)},
        over_10ms_fraction=sum(slow for _, _, slow, _ in timeline) / max(1, len(ordered)),
        latency_timeline=timeline,
        broker_rss_peak_bytes=max(steady_rss, default=-1),
        broker_rss_end_bytes=broker.rss_bytes(),
        broker_vmhwm_bytes=broker.peak_rss_bytes(),
        broker_cpu_fraction=bcpu / wall,
        client_cpu_fraction=cpu / wall,
        client_send_lag_max_ms=state["lag_max"] * 1000,
        client_gc_pauses=client_gc.summary(),
        rss_samples_mib=[
            (round(t - t_form), round(r / 2**20)) for t, r in rss_samples[:: max(1, len(rss_samples) // 60)]
        ],
    )
    for c in conns.values():
        c.close()
    return result


class _GcPauses:
    """This (client) process's own collections in the steady state: a pause here delays the
    reading of answers and would be counted as broker latency."""

    def __init__(self) -> None:
        self.started = 0.0
        self.pauses_ms: list[float] = []

    def on_gc(self, phase: str, info: dict[str, int]) -> None:
        if phase == "start":
            self.started = time.perf_counter()
        else:
            self.pauses_ms.append((time.perf_counter() - self.started) * 1000)

    def summary(self) -> dict[str, float]:
        p = self.pauses_ms
        return {"count": len(p), "max_ms": max(p, default=0.0), "total_ms": sum(p)}


def _pin(broker_pid: int) -> dict[str, list[int]]:
    """Broker (every thread) on the last CPU, this client on the others.

    On one machine the kernel tends to wake the receiver of a loopback message on the sender's CPU
    (to share its cache), so the broker and the client can end up taking turns on one core while
    the other idles, and the client's own work shows up as broker latency."""
    cpus = sorted(os.sched_getaffinity(0))
    if len(cpus) < 2:
        return {}
    broker_cpus, client_cpus = {cpus[-1]}, set(cpus[:-1])
    for task in Path(f"/proc/{broker_pid}/task").iterdir():
        os.sched_setaffinity(int(task.name), broker_cpus)
    os.sched_setaffinity(0, client_cpus)
    return {"broker": sorted(broker_cpus), "client": sorted(client_cpus)}


def _timeline(conns: Any) -> list[tuple[int, int, int, float]]:
    """Per second of the steady state (by arrival): answers, answers slower than 10 ms, max ms.

    Shows whether the tail is spread evenly (queueing) or comes in bursts (pauses)."""
    answers: dict[int, list[int]] = {}
    for c in conns:
        assert c.latencies_us is not None
        for at, us in zip(c.arrivals_ms, c.latencies_us, strict=True):
            cell = answers.setdefault(at // 1000, [0, 0, 0])
            cell[0] += 1
            if us > 10_000:
                cell[1] += 1
            cell[2] = max(cell[2], us)
    return [(sec, n, slow, worst / 1000) for sec, (n, slow, worst) in sorted(answers.items())]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--groups", type=int, default=10_000)
    ap.add_argument("--members", type=int, default=10)
    ap.add_argument("--interval", type=float, default=10.0, help="seconds between a member's heartbeats")
    ap.add_argument("--duration", type=float, default=600.0, help="seconds of steady state")
    ap.add_argument("--session-ms", type=int, default=30_000)
    ap.add_argument("--parallel", type=int, default=100, help="connection sets (groups formed at once)")
    ap.add_argument(
        "--tick-ms",
        type=float,
        default=0.5,
        help="how often the sender wakes to send the heartbeats that are due (smaller: smaller bursts)",
    )
    ap.add_argument(
        "--uniform-phases",
        action=argparse.BooleanOptionalAction,
        default=True,
        help="after forming, give every member a uniformly random phase (--no-uniform-phases: keep "
        "the phases set as groups formed)",
    )
    ap.add_argument(
        "--pin",
        action=argparse.BooleanOptionalAction,
        default=True,
        help="broker on the last CPU, the client on the others (Linux; --no-pin: leave it to the kernel)",
    )
    ap.add_argument("--timeout", type=float, default=120.0)
    ap.add_argument(
        "--protocol",
        choices=("classic", "consumer"),
        default="classic",
        help="classic: JoinGroup/SyncGroup/Heartbeat; consumer: ConsumerGroupHeartbeat (KIP-848)",
    )
    ap.add_argument("--out", default=str(group_bench.RESULTS / "scale_bench.json"))
    args = ap.parse_args()
    out: dict[str, Any] = {"machine": group_bench.machine(), "args": vars(args)}
    settings = {"group.initial.rebalance.delay.ms": "0"}
    if args.protocol == "consumer":
        # Members keep their session with the bench's own --interval (10 s), as classic ones do.
        settings["group.consumer.session.timeout.ms"] = str(max(args.session_ms, 45_000))
        # Groups are formed fast and then only heartbeat: a target per join (Kafka 4.1's order),
        # so that stable848_bench's members-side test of "formed" holds (with KIP-1263's batching
        # the members would agree on the last assignment epoch while the group is Assigning).
        settings["group.consumer.assignment.interval.ms"] = "0"
    out["settings"] = settings
    broker = peer.start_groupcoord(settings)
    if args.pin:
        out["pinned"] = _pin(broker.pid)
    try:
        time.sleep(0.3)
        if args.protocol == "consumer":
            asyncio.run(group_bench.create_topic(broker.host, broker.port, CONSUMER_TOPIC, args.members))
        out["result"] = asyncio.run(scale(args, broker))
        out["broker_alive_after"] = broker.alive()
    finally:
        broker.stop()
    r = out["result"]
    print(
        f"{r['members']} members, {r['duration_seconds']:.0f} s: {r['heartbeats_per_second']:.0f} hb/s, "
        f"false expirations {r['false_session_expirations']}, rebalance answers {r['rebalance_answers']}, "
        f"p99 {r['latency_ms']['p99']} ms, peak RSS {r['broker_rss_peak_bytes'] / 2**20:.0f} MiB"
    )
    Path(args.out).parent.mkdir(parents=True, exist_ok=True)
    Path(args.out).write_text(json.dumps(out, indent=2, default=str) + "\n")
    print(f"wrote {args.out}")


if __name__ == "__main__":
    main()
