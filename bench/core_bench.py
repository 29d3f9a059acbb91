#!/usr/bin/env python3
"""Coordinator-core benchmarks (no network, no disk): plain script, not a test.

    .venv/bin/python bench/core_bench.py [--quick]

Measures
* heartbeats/s against a Stable group (the hot path of every consumer),
* offset commits/s (one partition per request; sink confirms at once), with and without
  encoding the records to bytes,
* a 1,000-member group formed in virtual time (two-step join, one leader sync): wall time
  for the coordinator work and the virtual time the rebalance took,
The KeyedTimer's own benchmark (1,000,000 timers under constant rescheduling) is
bench/timer_bench.py.

Prints a summary and writes bench/results/core.json.
"""

from __future__ import annotations

import argparse
import gc
import itertools
import json
import platform
import sys
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from groupcoord.clock import ManualClock
from groupcoord.coordinator.config import GroupConfig
from groupcoord.coordinator.records import CoordinatorRecord, encode_record
from groupcoord.errors import ErrorCode
from groupcoord.protocol.group_messages import (
    HeartbeatRequest,
    JoinGroupRequest,
    JoinGroupResponse,
    OffsetCommitPartition,
    OffsetCommitRequest,
    OffsetCommitTopic,
    SyncGroupRequest,
)
from groupcoord.runtime.group_coordinator import GroupCoordinator

ROOT = Path(__file__).resolve().parents[1]
PROTOCOLS = (("range", b"\x00\x00\x00\x00\x00\x01\x00\x05topic\xff\xff\xff\xff"),)


class Sink:
    def __init__(self, encode: bool = False) -> None:
        self.encode = encode
        self.count = 0

    def append(
        self, partition: int, records: Sequence[CoordinatorRecord], done: Callable[[ErrorCode], None]
    ) -> None:
        if self.encode:
            for r in records:
                encode_record(r)
        self.count += len(records)
        done(ErrorCode.NONE)


def _noop(_: Any) -> None:
    return None


def _coordinator(encode: bool = False) -> tuple[GroupCoordinator, ManualClock]:
    clock = ManualClock()
    counter = itertools.count()
    config = GroupConfig(group_initial_rebalance_delay_ms=3_000)
    c = GroupCoordinator(
        config, clock, record_sink=Sink(encode), member_id_factory=lambda p: f"{p}-{next(counter)}"
    )
    return c, clock


def form_group(
    c: GroupCoordinator, clock: ManualClock, group: str, n: int, rebalance_ms: int = 300_000
) -> tuple[list[str], int, int]:
    """n members two-step join; returns (member ids, generation, virtual ms until Stable)."""
    start = clock.now_ms()
    ids: list[str] = []
    answers: list[JoinGroupResponse] = []

    def req(member_id: str, i: int) -> JoinGroupRequest:
        return JoinGroupRequest(
            group_id=group,
            session_timeout_ms=600_000,  # groups are formed one after another in virtual time
            rebalance_timeout_ms=rebalance_ms,
            member_id=member_id,
            group_instance_id=None,
            protocol_type="consumer",
            protocols=PROTOCOLS,
            version=9,
            client_id=f"c{i}",
            client_host="/127.0.0.1",
        )

    for i in range(n):
        first: list[JoinGroupResponse] = []
        c.join_group(req("", i), first.append)
        ids.append(first[0].member_id)
        c.join_group(req(first[0].member_id, i), answers.append)
    while len(answers) < n:
        d = c.next_deadline()
        assert d is not None
        clock.set(max(d, clock.now_ms()))
        c.poll()
    gen = answers[0].generation_id
    leader = answers[0].leader
    plan = tuple((m, b"assignment") for m in ids)
    c.sync_group(
        SyncGroupRequest(
            group_id=group,
            generation_id=gen,
            member_id=leader,
            group_instance_id=None,
            protocol_type="consumer",
            protocol_name="range",
            assignments=plan,
            version=5,
        ),
        _noop,
    )
    for m in ids:
        if m != leader:
            c.sync_group(
                SyncGroupRequest(
                    group_id=group,
                    generation_id=gen,
                    member_id=m,
                    group_instance_id=None,
                    protocol_type="consumer",
                    protocol_name="range",
                    assignments=(),
                    version=5,
                ),
                _noop,
            )
    g = c.group(group)
    assert g is not None and g.state.value == "Stable", g and g.state
    return ids, gen, clock.now_ms() - start


def bench_heartbeats(n_groups: int, members: int, rounds: int) -> dict[str, Any]:
    c, clock = _coordinator()
    reqs = []
    for gi in range(n_groups):
        ids, gen, _ = form_group(c, clock, f"g{gi}", members)
        reqs += [HeartbeatRequest(group_id=f"g{gi}", generation_id=gen, member_id=m) for m in ids]
    errors: list[ErrorCode] = []

    def reply(r: Any) -> None:
        if r.error is not ErrorCode.NONE:
            errors.append(r.error)

    gc.collect()
    t0 = time.perf_counter()
    for _ in range(rounds):
        for r in reqs:
            c.heartbeat(r, reply)
        clock.advance(1)
    dt = time.perf_counter() - t0
    assert not errors, errors[:3]
    total = rounds * len(reqs)
    return {
        "heartbeats": total,
        "seconds": dt,
        "per_second": total / dt,
        "groups": n_groups,
        "members": members,
    }


def bench_commits(n: int, encode: bool) -> dict[str, Any]:
    c, clock = _coordinator(encode)
    ids, gen, _ = form_group(c, clock, "g", 10)
    reqs = [
        OffsetCommitRequest(
            group_id="g",
            generation_id=gen,
            member_id=ids[i % 10],
            group_instance_id=None,
            retention_time_ms=-1,
            topics=(
                OffsetCommitTopic(
                    name="topic",
                    partitions=(
                        OffsetCommitPartition(partition=i % 10, offset=i, leader_epoch=3, metadata=""),
                    ),
                ),
            ),
            version=8,
        )
        for i in range(n)
    ]
    gc.collect()
    t0 = time.perf_counter()
    for r in reqs:
        c.offset_commit(r, _noop)
    dt = time.perf_counter() - t0
    return {"commits": n, "seconds": dt, "per_second": n / dt, "records_encoded": encode}


def bench_big_join(n: int) -> dict[str, Any]:
    c, clock = _coordinator()
    gc.collect()
    t0 = time.perf_counter()
    ids, gen, virtual_ms = form_group(c, clock, "big", n)
    dt = time.perf_counter() - t0
    return {
        "members": len(ids),
        "generation": gen,
        "wall_seconds": dt,
        "virtual_ms_to_stable": virtual_ms,
        "note": "virtual time = initial rebalance delay re-armed once (all joined inside the first delay)",
    }


def machine() -> dict[str, Any]:
    import os

    cpu = platform.processor() or ""
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    return {
        "python": platform.python_version(),
        "cpus": os.cpu_count(),
        "cpu": cpu,
        "platform": platform.platform(),
    }


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--quick", action="store_true", help="smaller sizes (smoke run)")
    ap.add_argument("--out", default=str(ROOT / "bench" / "results" / "core.json"))
    args = ap.parse_args()
    q = args.quick
    results = {
        "machine": machine(),
        "heartbeat": bench_heartbeats(n_groups=10, members=100, rounds=20 if q else 200),
        "commit": bench_commits(20_000 if q else 200_000, encode=False),
        "commit_with_encoding": bench_commits(20_000 if q else 200_000, encode=True),
        "join_1000_members": bench_big_join(1_000),
    }
    out = Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(results, indent=2) + "\n")
    hb, cm, ce, jn = (
        results["heartbeat"],
        results["commit"],
        results["commit_with_encoding"],
        results["join_1000_members"],
    )
    print(
        f"heartbeats/s                 {hb['per_second']:>12,.0f}  "
        f"({hb['heartbeats']:,} over {hb['groups']} groups)"
    )
    print(f"commits/s (core)             {cm['per_second']:>12,.0f}")
    print(f"commits/s (+record encoding) {ce['per_second']:>12,.0f}")
    print(
        f"1,000-member join            {jn['wall_seconds'] * 1000:>12,.1f} ms wall, "
        f"{jn['virtual_ms_to_stable']:,} ms virtual"
    )
    print(f"wrote {out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
