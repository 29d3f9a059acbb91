#!/usr/bin/env python3
"""Coordinator-core cost per heartbeat and per offset commit in CPU time: plain script, not a test.

    PYTHONPATH=<tree>/src .venv/bin/python bench/core_cpu_bench.py [--bench-dir <tree>/bench]

``bench/core_bench.py`` reports wall-clock rates, which a machine shared with other jobs moves by
a factor of two; this script times the same in-process work with ``time.process_time`` and keeps
the best of several repetitions, so two trees can be compared on a loaded machine. It builds a
Stable group of 10 members with ``core_bench``'s helpers (taken from ``--bench-dir``, so an old
tree is driven by its own helpers), then times 50,000 heartbeats and 20,000 single-partition
offset commits (the sink confirms each write at once). Prints one line of microseconds.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--bench-dir", default=str(Path(__file__).resolve().parent))
    ap.add_argument("--repeat", type=int, default=7)
    args = ap.parse_args()
    sys.path.insert(0, args.bench_dir)
    import core_bench as cb  # the helpers of the tree being measured
    from groupcoord.protocol.group_messages import (
        HeartbeatRequest,
        OffsetCommitPartition,
        OffsetCommitRequest,
        OffsetCommitTopic,
    )

    c, clock = cb._coordinator()
    ids, gen, _ = cb.form_group(c, clock, "g", 10)
    heartbeats = [HeartbeatRequest(group_id="g", generation_id=gen, member_id=m) for m in ids]
    commits = [
        OffsetCommitRequest(
            group_id="g",
            generation_id=gen,
            member_id=m,
            group_instance_id=None,
            retention_time_ms=-1,
            topics=(OffsetCommitTopic(name="t", partitions=(OffsetCommitPartition(partition=i, offset=5),)),),
        )
        for i, m in enumerate(ids)
    ]
    noop = cb._noop

    def heartbeat_us(n: int = 50_000) -> float:
        t = time.process_time()
        for i in range(n):
            c.heartbeat(heartbeats[i % 10], noop)
        return (time.process_time() - t) / n * 1e6

    def commit_us(n: int = 20_000) -> float:
        t = time.process_time()
        for i in range(n):
            c.offset_commit(commits[i % 10], noop)
        return (time.process_time() - t) / n * 1e6

    hb = min(heartbeat_us() for _ in range(args.repeat))
    cm = min(commit_us() for _ in range(args.repeat))
    print(f"{args.bench_dir} heartbeat_us {hb:.2f} commit_us {cm:.2f}")


if __name__ == "__main__":
    main()
