"""Recovery: how long the broker takes to load a ``__consumer_offsets`` of 1,000,000 offset commits.

Plain script, not a test. It writes the internal topic's segments directly, with the broker's own
storage (``groupcoord.storage``) and record codec (``groupcoord.coordinator.records``): every group
first gets a GroupMetadata record (an Empty group of generation 1), then offset commits in batches
of ``--batch`` records, each group committing its partitions over and over (later commits supersede
earlier ones, as in a topic the cleaner has not compacted yet). Then it times two loads:

* in-process: ``GroupRuntime.start()`` until ``loaded`` is set (replay of every partition);
* a real broker process: from ``Popen`` of ``python -m groupcoord serve`` to its
  "loaded N records from __consumer_offsets" log line (includes interpreter start-up and imports).

    .venv/bin/python bench/recovery_bench.py [--records 1000000] [--groups 10000] [--profile]
        [--runs N] [--data-dir DIR]

``--profile`` adds a cProfile of the in-process load (top functions by own time) to the JSON.
Results: bench/results/recovery_bench.json.
"""

from __future__ import annotations

import argparse
import asyncio
import cProfile
import io
import json
import os
import pstats
import re
import shutil
import subprocess
import sys
import tempfile
import threading
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
import peer

_LOADED = re.compile(r"loaded (\d+) records from __consumer_offsets \((\d+) groups\)")


def write_offsets_topic(
    data_dir: Path, *, records: int, groups: int, topics: int, batch: int
) -> dict[str, Any]:
    """Fill ``__consumer_offsets`` with ``records`` offset commits (plus one group record per group)."""
    config = BrokerConfig.load(None, [])
    broker = Broker.open(config, data_dir, SystemClock())
    runtime = GroupRuntime(broker)
    runtime.ensure_topics()
    nparts = broker.logs.topics_view[OFFSETS_TOPIC].partitions
    now = int(time.time() * 1000)
    group_ids = [f"recovery-group-{g:06d}" for g in range(groups)]
    by_partition: dict[int, list[str]] = {}
    for gid in group_ids:
        by_partition.setdefault(partition_for(gid, nparts), []).append(gid)
    per_group = records // groups
    t0 = time.perf_counter()
    written = 0
    nbytes = 0
    for p, gids in sorted(by_partition.items()):
        plog = broker.logs.partition(OFFSETS_TOPIC, p)
        entries: list[tuple[bytes | None, bytes | None, tuple[()]]] = []

        def flush(plog: Any = plog, entries: list[Any] = entries) -> None:
            nonlocal nbytes
            if entries:
                data = build_batch(entries, timestamp_ms=now)
                plog.append(data)
                nbytes += len(data)
                entries.clear()

        for gid in gids:
            key, value = encode_record(
                CoordinatorRecord(
                    key=GroupMetadataKey(group=gid),
                    value=GroupMetadataValue(
                        protocol_type="consumer",
                        generation=1,
                        protocol=None,
                        leader=None,
                        current_state_timestamp=now,
                        members=(),
                    ),
                )
            )
            entries.append((key, value, ()))
            flush()
            for i in range(per_group):
                # Commits cycle over topics x 10 partitions, so most keys are written several times.
                slot = i % (topics * 10)
                rec = CoordinatorRecord(
                    key=OffsetCommitKey(group=gid, topic=f"topic-{slot // 10}", partition=slot % 10),
                    value=OffsetCommitValue(
                        offset=1000 + i,
                        leader_epoch=None,
                        metadata="",
                        commit_timestamp=now,
                        expire_timestamp=None,
                    ),
                )
                key, value = encode_record(rec)
                entries.append((key, value, ()))
                written += 1
                if len(entries) >= batch:
                    flush()
            flush()
    broker.logs.flush_all()
    broker.logs.close()
    return {
        "offset_commit_records": written,
        "group_records": groups,
        "bytes": nbytes,
        "partitions_used": len(by_partition),
        "write_seconds": time.perf_counter() - t0,
    }


async def _load(data_dir: Path) -> tuple[float, float, int]:
    """(wall seconds, CPU seconds of this process, groups) from Broker.open to ``loaded``."""
    config = BrokerConfig.load(None, [])
    t0 = time.perf_counter()
    cpu0 = time.process_time()
    broker = Broker.open(config, data_dir, SystemClock())
    runtime = GroupRuntime(broker)
    runtime.start()
    await runtime.loaded.wait()
    elapsed = time.perf_counter() - t0
    cpu = time.process_time() - cpu0
    groups = len(runtime.coordinator.groups())
    await runtime.close()
    await broker.close()
    return elapsed, cpu, groups


def load_in_process(data_dir: Path, profile: bool) -> dict[str, Any]:
    prof = cProfile.Profile() if profile else None
    if prof is not None:
        prof.enable()
    elapsed, cpu, groups = asyncio.run(_load(data_dir))
    out: dict[str, Any] = {"seconds": elapsed, "cpu_seconds": cpu, "groups": groups}
    if prof is not None:
        prof.disable()
        s = io.StringIO()
        pstats.Stats(prof, stream=s).sort_stats("tottime").print_stats(15)
        out["profile_top_tottime"] = s.getvalue().splitlines()
    return out


def load_in_broker_process(data_dir: Path, timeout_s: float) -> dict[str, Any]:
    """Start ``groupcoord serve`` on the data dir; seconds until its "loaded N records" line."""
    cmd = peer.serve_command(data_dir, log_level=None)  # the "loaded" line is logged at INFO
    t0 = time.perf_counter()
    proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    found: list[tuple[float, int, int]] = []
    listening: list[float] = []

    def watch() -> None:
        assert proc.stderr is not None
        for raw in proc.stderr:
            line = raw.decode(errors="replace")
            if "listening on" in line and not listening:
                listening.append(time.perf_counter() - t0)
            m = _LOADED.search(line)
            if m and not found:
                found.append((time.perf_counter() - t0, int(m.group(1)), int(m.group(2))))

    def cpu_seconds() -> float | None:
        """user+sys CPU of the broker process so far (from /proc), or None off Linux."""
        try:
            return peer.cpu_seconds(proc.pid)
        except OSError:
            return None

    reader = threading.Thread(target=watch, daemon=True)
    reader.start()
    try:
        deadline = time.perf_counter() + timeout_s
        while not found and time.perf_counter() < deadline and proc.poll() is None:
            time.sleep(0.01)
        if not found:
            return {"ok": False, "error": f"no 'loaded' line within {timeout_s} s (exit {proc.poll()})"}
        cpu = cpu_seconds()
        seconds, records, groups = found[0]
        return {
            "ok": True,
            "seconds_from_process_start": seconds,
            "cpu_seconds_at_loaded": cpu,
            "seconds_to_listening": listening[0] if listening else None,
            "records_loaded": records,
            "groups": groups,
        }
    finally:
        proc.terminate()
        try:
            proc.wait(30)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--records", type=int, default=1_000_000)
    ap.add_argument("--groups", type=int, default=10_000)
    ap.add_argument(
        "--topics",
        type=int,
        default=10,
        help="topics per group (10 partitions each); 10: all 1M commit keys distinct, none superseded",
    )
    ap.add_argument("--batch", type=int, default=100, help="records per batch (one commit request)")
    ap.add_argument("--profile", action="store_true")
    ap.add_argument("--timeout", type=float, default=600.0)
    ap.add_argument("--keep", action="store_true", help="keep the data dir (printed)")
    ap.add_argument("--runs", type=int, default=1, help="loads of each kind, alternating")
    ap.add_argument(
        "--data-dir",
        help="use this data dir: written first if it has no __consumer_offsets yet, reused (not "
        "rewritten, not deleted) if it has one",
    )
    ap.add_argument("--out", default=str(group_bench.RESULTS / "recovery_bench.json"))
    args = ap.parse_args()
    reuse = args.data_dir is not None and (Path(args.data_dir) / f"{OFFSETS_TOPIC}-0").exists()
    if args.data_dir is not None:
        data_dir = Path(args.data_dir)
        data_dir.mkdir(parents=True, exist_ok=True)
        args.keep = True
    else:
        data_dir = Path(tempfile.mkdtemp(prefix="groupcoord-recovery-"))
    result: dict[str, Any] = {
        "machine": group_bench.machine(),
        "build": native.status().describe(),  # the broker process runs the same sources
        "args": vars(args),
    }
    try:
        if reuse:
            result["written"] = {"reused_data_dir": str(data_dir)}
        else:
            result["written"] = write_offsets_topic(
                data_dir, records=args.records, groups=args.groups, topics=args.topics, batch=args.batch
            )
        print("written:", result["written"], flush=True)
        runs: list[dict[str, Any]] = []
        for _ in range(args.runs):
            run: dict[str, Any] = {}
            run["in_process"] = load_in_process(data_dir, args.profile)
            print(f"in-process load: {run['in_process']['seconds']:.2f} s", flush=True)
            if args.profile:
                print("\n".join(run["in_process"]["profile_top_tottime"][:30]))
            run["broker_process"] = load_in_broker_process(data_dir, args.timeout)
            print("broker process:", run["broker_process"], flush=True)
            runs.append(run)
        result.update(runs[0])
        if len(runs) > 1:
            result["runs"] = runs
        result["loadavg_after"] = os.getloadavg()
    finally:
        if args.keep:
            print("data dir kept:", data_dir)
        else:
            shutil.rmtree(data_dir, ignore_errors=True)
    Path(args.out).parent.mkdir(parents=True, exist_ok=True)
    Path(args.out).write_text(json.dumps(result, indent=2, default=str) + "\n")
    print(f"wrote {args.out}")


if __name__ == "__main__":
    main()
