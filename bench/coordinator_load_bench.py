"""Coordinator-partition load: how long one ``__consumer_offsets`` partition takes to load, by size.

Plain script, not a test. When a broker becomes the leader of a ``__consumer_offsets`` partition
(a broker start, or a coordinator moving to it in a cluster), its coordinator shard answers that
partition's groups with COORDINATOR_LOAD_IN_PROGRESS until it has replayed the partition; this
measures that window for partitions of 1,000 / 10,000 / 100,000 offset commits (``--sizes``).

For each size the script writes partition 0 of ``__consumer_offsets`` directly with the broker's
own storage and record codec, as ``bench/recovery_bench.py`` does: groups that map to partition 0,
each with one GroupMetadata record (Empty, generation 1) and then offset commits in batches of
``--batch`` records (OffsetCommitValue v3, what OffsetCommit v6+ writes), 100 commits per group,
every commit key distinct unless ``--topics`` is smaller than 10. Then, ``--runs`` times, it opens
the data dir (log recovery after a clean shutdown: ``open`` below) and times what a leadership
move costs on the loop: ``begin_loading`` + the runtime's replay of the partition from its
segments + ``complete_loading`` (``load`` below: wall and this thread's CPU). Medians are reported,
and each run's figures are kept.

    .venv/bin/python bench/coordinator_load_bench.py [--sizes 1000,10000,100000] [--runs 7]
    GROUPCOORD_PURE=1 .venv/bin/python bench/coordinator_load_bench.py     # the interpreted build

The JSON names the build (``compiled with mypyc`` or ``pure Python``). Results:
bench/results/coordinator_load_bench.json (``--out``).
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import json
import os
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from groupcoord import native
from groupcoord.broker.state import Broker
from groupcoord.clock import SystemClock
from groupcoord.config import BrokerConfig
from groupcoord.coordinator.records import (
    CoordinatorRecord,
    GroupMetadataKey,
    GroupMetadataValue,
    OffsetCommitKey,
    OffsetCommitValue,
    encode_record,
    partition_for,
)
from groupcoord.formats.batch import build_batch
from groupcoord.runtime.group_runtime import OFFSETS_TOPIC, GroupRuntime

sys.path.insert(0, str(Path(__file__).resolve().parent))
import group_bench

PARTITION = 0
COMMITS_PER_GROUP = 100


def write_partition(data_dir: Path, *, commits: int, topics: int, batch: int) -> dict[str, Any]:
    """Partition 0 of ``__consumer_offsets`` with ``commits`` offset commits."""
    broker = Broker.open(BrokerConfig.load(None, []), data_dir, SystemClock())
    runtime = GroupRuntime(broker)
    runtime.ensure_topics()
    nparts = broker.logs.topics_view[OFFSETS_TOPIC].partitions
    plog = broker.logs.partition(OFFSETS_TOPIC, PARTITION)
    ngroups = max(1, commits // COMMITS_PER_GROUP)
    groups: list[str] = []
    n = 0
    while len(groups) < ngroups:
        gid = f"load-group-{n:07d}"
        n += 1
        if partition_for(gid, nparts) == PARTITION:
            groups.append(gid)
    now = int(time.time() * 1000)
    written = nbytes = 0
    for g, gid in enumerate(groups):
        group_value = GroupMetadataValue(
            protocol_type="consumer",
            generation=1,
            protocol=None,
            leader=None,
            current_state_timestamp=now,
            members=(),
        )
        group_record = CoordinatorRecord(key=GroupMetadataKey(group=gid), value=group_value)
        entries = [(*encode_record(group_record), ())]
        data = build_batch(entries, timestamp_ms=now)
        plog.append(data)
        nbytes += len(data)
        mine = min(COMMITS_PER_GROUP, commits - g * COMMITS_PER_GROUP)
        for start in range(0, mine, batch):
            entries = []
            for i in range(start, min(mine, start + batch)):
                slot = i % (topics * 10)
                record = CoordinatorRecord(
                    key=OffsetCommitKey(group=gid, topic=f"topic-{slot // 10}", partition=slot % 10),
                    value=OffsetCommitValue(
                        offset=1000 + i,
                        leader_epoch=None,
                        metadata="",
                        commit_timestamp=now,
                        expire_timestamp=None,
                    ),
                )
                entries.append((*encode_record(record), ()))
            data = build_batch(entries, timestamp_ms=now)
            plog.append(data)
            nbytes += len(data)
            written += len(entries)
    broker.logs.flush_all()
    broker.logs.close()
    return {"offset_commit_records": written, "group_records": len(groups), "bytes": nbytes}


async def _load_once(data_dir: Path) -> dict[str, Any]:
    t0 = time.perf_counter()
    broker = Broker.open(BrokerConfig.load(None, []), data_dir, SystemClock())
    open_s = time.perf_counter() - t0
    runtime = GroupRuntime(broker)
    coordinator = runtime.coordinator
    gc_was_enabled = gc.isenabled()
    gc.disable()  # as GroupRuntime._load_all does while it loads
    try:
        t1 = time.perf_counter()
        c1 = time.thread_time()
        coordinator.begin_loading(PARTITION)
        records = await runtime._load_partition(PARTITION)
        coordinator.complete_loading(PARTITION)
        load_s = time.perf_counter() - t1
        load_cpu = time.thread_time() - c1
    finally:
        if gc_was_enabled:
            gc.enable()
    groups = len(coordinator.groups())
    offsets = sum(len(g.offsets) for g in coordinator.groups())
    await runtime.close()
    await broker.close()
    return {
        "open_seconds": open_s,
        "load_seconds": load_s,
        "load_cpu_seconds": load_cpu,
        "records": records,
        "groups": groups,
        "offsets": offsets,
    }


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--sizes", default="1000,10000,100000", help="offset commits per partition")
    ap.add_argument("--runs", type=int, default=7)
    ap.add_argument("--topics", type=int, default=10, help="topics per group; 10: every commit key distinct")
    ap.add_argument("--batch", type=int, default=100, help="records per batch (one commit request)")
    ap.add_argument("--out", default=str(group_bench.RESULTS / "coordinator_load_bench.json"))
    args = ap.parse_args()
    status = native.status()
    result: dict[str, Any] = {
        "machine": group_bench.machine(),
        "build": status.describe(),
        "args": vars(args),
        "sizes": {},
    }
    print("build:", status.describe(), flush=True)
    for size in (int(s) for s in args.sizes.split(",")):
        data_dir = Path(tempfile.mkdtemp(prefix="groupcoord-load-"))
        try:
            written = write_partition(data_dir, commits=size, topics=args.topics, batch=args.batch)
            runs = [asyncio.run(_load_once(data_dir)) for _ in range(args.runs)]
        finally:
            shutil.rmtree(data_dir, ignore_errors=True)
        row = {
            "written": written,
            "median_load_seconds": statistics.median(r["load_seconds"] for r in runs),
            "median_load_cpu_seconds": statistics.median(r["load_cpu_seconds"] for r in runs),
            "median_open_seconds": statistics.median(r["open_seconds"] for r in runs),
            "runs": runs,
        }
        result["sizes"][str(size)] = row
        print(
            f"{size:>8} commits ({written['group_records']} groups, {written['bytes'] / 1e6:.1f} MB): "
            f"load median {row['median_load_seconds'] * 1000:.1f} ms wall, "
            f"{row['median_load_cpu_seconds'] * 1000:.1f} ms CPU; "
            f"open {row['median_open_seconds'] * 1000:.1f} ms",
            flush=True,
        )
    result["loadavg_after"] = os.getloadavg()
    Path(args.out).parent.mkdir(parents=True, exist_ok=True)
    Path(args.out).write_text(json.dumps(result, indent=2, default=str) + "\n")
    print(f"wrote {args.out}")


if __name__ == "__main__":
    main()
