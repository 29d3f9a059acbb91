"""Benchmark: ``groupcoord analyze`` over a data directory with N offset commits on local[2].

The directory is generated fast: ``__consumer_offsets`` batches are built directly with
``groupcoord.formats.batch.build_batch`` (keys and values with the coordinator's own codecs, keys
cached) and written as Kafka segment files; topic logs get one batch every 30 s per partition; each
group also rebalances every 12 minutes (events on ``__group_events`` and a GroupMetadata record).

    .venv/bin/python bench/analyze_bench.py --commits 10000000 --workdir /tmp/gc-bench

Prints the numbers and writes bench/results/analyze.json.
"""

from __future__ import annotations

import argparse
import json
import multiprocessing
import os
import platform
import subprocess
import sys
import time
from pathlib import Path

from groupcoord.coordinator.records import (
    GroupMetadataKey,
    GroupMetadataValue,
    MemberMetadataRecord,
    OffsetCommitKey,
    OffsetCommitValue,
    encode_key,
    encode_value,
    partition_for,
)
from groupcoord.formats.batch import build_batch
from groupcoord.formats.consumer_protocol import (
    Assignment,
    Subscription,
    encode_assignment,
    encode_subscription,
)

EPOCH_MS = 1_767_225_600_000
OFFSETS_PARTITIONS = 50
TOPICS = 20
PARTITIONS = 12
TOPICS_PER_GROUP = 2
PRODUCE_RATE = 100  # records/s per partition
TOPIC_BATCH_EVERY_MS = 30_000
REBALANCE_EVERY_MS = 12 * 60_000
SEGMENT_NAME = "00000000000000000000.log"


def _group_topics(g: int) -> list[str]:
    return [f"topic-{(g * TOPICS_PER_GROUP + i) % TOPICS}" for i in range(TOPICS_PER_GROUP)]


def _write_offsets_partition(args: tuple[str, int, list[int], int, int]) -> int:
    """All records of the groups that map to one ``__consumer_offsets`` partition, in time order."""
    out, part, groups, rounds, interval_ms = args
    pdir = Path(out) / f"__consumer_offsets-{part}"
    pdir.mkdir(parents=True, exist_ok=True)
    keys = {
        g: [
            (t, p, encode_key(OffsetCommitKey(group=f"group-{g}", topic=t, partition=p)))
            for t in _group_topics(g)
            for p in range(PARTITIONS)
        ]
        for g in groups
    }
    template = encode_value(
        OffsetCommitValue(offset=0, leader_epoch=None, metadata="", commit_timestamp=0, expire_timestamp=None)
    )
    # OffsetCommitValue v3: version, offset, leader epoch, metadata (empty), commit timestamp
    head, tail = template[:2], template[10:16]
    assert len(template) == 24
    base = 0
    written = 0
    phases = {g: (g * 137) % interval_ms for g in groups}
    with open(pdir / SEGMENT_NAME, "wb") as f:
        for k in range(rounds):
            for g in sorted(groups, key=lambda x: phases[x]):
                t = EPOCH_MS + k * interval_ms + phases[g]
                elapsed = t - EPOCH_MS
                recs = []
                for _topic, p, key in keys[g]:
                    leo = PRODUCE_RATE * (elapsed // TOPIC_BATCH_EVERY_MS) * TOPIC_BATCH_EVERY_MS // 1000
                    lag = (g * 7 + p * 13 + k) % 40
                    off = max(0, leo - lag)
                    value = head + off.to_bytes(8, "big") + tail + t.to_bytes(8, "big")
                    recs.append((key, value, ()))
                if k > 0 and k % (REBALANCE_EVERY_MS // interval_ms) == 0:
                    recs.append(
                        (encode_key(GroupMetadataKey(group=f"group-{g}")), _group_metadata(g, k, t), ())
                    )
                f.write(build_batch(recs, base_offset=base, timestamp_ms=t))
                base += len(recs)
                written += len(recs)
    return written


def _group_metadata(g: int, generation: int, t: int) -> bytes:
    topics = _group_topics(g)
    members = []
    for i in range(3):
        parts = tuple(p for p in range(PARTITIONS) if p % 3 == (i + generation) % 3)
        members.append(
            MemberMetadataRecord(
                member_id=f"consumer-{g}-{i}-{generation}",
                group_instance_id=None,
                client_id=f"app-{g}-{i}",
                client_host=f"/10.1.{g % 250}.{i}",
                rebalance_timeout=300_000,
                session_timeout=45_000,
                subscription=encode_subscription(Subscription(topics=tuple(topics))),
                assignment=encode_assignment(Assignment(partitions=tuple((tp, parts) for tp in topics))),
            )
        )
    value = encode_value(
        GroupMetadataValue(
            protocol_type="consumer",
            generation=generation,
            protocol="range",
            leader=members[0].member_id,
            current_state_timestamp=t,
            members=tuple(members),
        )
    )
    return value


def _write_topics(out: Path, span_ms: int) -> None:
    for t in range(TOPICS):
        for p in range(PARTITIONS):
            pdir = out / f"topic-{t}-{p}"
            pdir.mkdir(parents=True, exist_ok=True)
            per = PRODUCE_RATE * TOPIC_BATCH_EVERY_MS // 1000
            # One record per batch at the batch's last offset: the log end advances by `per` every
            # 30 s (as if the topic were compacted) without writing millions of records the lag
            # computation never reads (it uses batch headers only).
            with open(pdir / SEGMENT_NAME, "wb") as f:
                base = 0
                for step in range(span_ms // TOPIC_BATCH_EVERY_MS + 1):
                    ts = EPOCH_MS + step * TOPIC_BATCH_EVERY_MS
                    f.write(build_batch([(None, b"v" * 8, ())], base_offset=base + per - 1, timestamp_ms=ts))
                    base += per


def _write_events(out: Path, groups: int, span_ms: int) -> int:
    pdir = out / "__group_events-0"
    pdir.mkdir(parents=True, exist_ok=True)
    n = 0
    rows = []
    for g in range(groups):
        phase = (g * 137) % 1000
        for k in range(1, span_ms // REBALANCE_EVERY_MS + 1):
            start = EPOCH_MS + k * REBALANCE_EVERY_MS - 2_000 + phase
            for dt, frm, to, reason, gen in (
                (0, "Stable", "PreparingRebalance", "member_left", k - 1),
                (1_200 + g % 500, "PreparingRebalance", "CompletingRebalance", "join_completed", k),
                (1_500 + g % 500, "CompletingRebalance", "Stable", "assignment_persisted", k),
            ):
                ev = {
                    "time_ms": start + dt,
                    "group_id": f"group-{g}",
                    "generation": gen,
                    "type": "state_change",
                    "from_state": frm,
                    "to_state": to,
                    "reason": reason,
                    "member_id": None,
                    "group_instance_id": None,
                    "client_id": f"app-{g}-1",
                    "client_host": None,
                    "client_reason": "consumer poll timeout has expired." if k % 3 == 0 else None,
                    "protocol_type": "consumer",
                    "protocol_name": "range",
                    "member_count": 3,
                }
                rows.append((start + dt, f"group-{g}".encode(), json.dumps(ev).encode()))
    rows.sort(key=lambda r: r[0])
    with open(pdir / SEGMENT_NAME, "wb") as f:
        for i in range(0, len(rows), 100):
            chunk = rows[i : i + 100]
            f.write(
                build_batch(
                    [(k, v, ()) for _t, k, v in chunk],
                    base_offset=n,
                    timestamp_ms=chunk[0][0],
                    timestamps=[t for t, _k, _v in chunk],
                )
            )
            n += len(chunk)
    return n


def generate(out: Path, commits: int, groups: int, span_ms: int) -> dict[str, float]:
    started = time.perf_counter()
    out.mkdir(parents=True, exist_ok=True)
    per_round = TOPICS_PER_GROUP * PARTITIONS
    rounds = max(1, commits // (groups * per_round))
    interval_ms = max(1, span_ms // rounds)
    by_part: dict[int, list[int]] = {}
    for g in range(groups):
        by_part.setdefault(partition_for(f"group-{g}", OFFSETS_PARTITIONS), []).append(g)
    jobs = [(str(out), p, by_part.get(p, []), rounds, interval_ms) for p in range(OFFSETS_PARTITIONS)]
    with multiprocessing.Pool(os.cpu_count() or 2) as pool:
        total = sum(pool.map(_write_offsets_partition, jobs))
    _write_topics(out, span_ms)
    events = _write_events(out, groups, span_ms)
    return {
        "records": total,
        "commits": rounds * groups * per_round,
        "events": events,
        "seconds": round(time.perf_counter() - started, 1),
        "bytes": sum(p.stat().st_size for p in out.rglob("*.log")),
    }


def _code_version() -> str:
    """The commit of this checkout, or the PYTHONPATH that overrides it (before/after runs)."""
    override = os.environ.get("PYTHONPATH")
    if override:
        return f"PYTHONPATH={override}"
    try:
        out = subprocess.run(
            ["git", "rev-parse", "--short", "HEAD"],
            capture_output=True,
            text=True,
            check=False,
            cwd=Path(__file__).parent,
        )
    except OSError:
        return "unknown"
    return out.stdout.strip() or "unknown"


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--commits", type=int, default=10_000_000)
    ap.add_argument("--groups", type=int, default=200)
    ap.add_argument("--hours", type=float, default=1.0)
    ap.add_argument("--workdir", type=Path, default=Path("/tmp/groupcoord-analyze-bench"))
    ap.add_argument("--regenerate", action="store_true")
    ap.add_argument("--master", default="local[2]")
    ap.add_argument("--concurrent", action="store_true", help="analyze --concurrent")
    ap.add_argument("--conf", action="append", default=[], metavar="KEY=VALUE", help="passed to analyze")
    ap.add_argument(
        "--results", default="analyze.json", help="file name under bench/results/ (default analyze.json)"
    )
    args = ap.parse_args()
    data = args.workdir / f"data-{args.commits}"
    marker = data / "generated.json"
    if args.regenerate or not marker.exists():
        if data.exists():
            subprocess.run(["rm", "-rf", str(data)], check=True)
        gen = generate(data, args.commits, args.groups, int(args.hours * 3_600_000))
        marker.write_text(json.dumps(gen))
    gen = json.loads(marker.read_text())
    print(f"data: {gen}", flush=True)
    out = args.workdir / f"out-{args.commits}"
    stats = args.workdir / f"stats-{args.commits}.json"
    cmd = [
        sys.executable,
        "-m",
        "groupcoord.pipeline.cli",
        "analyze",
        "--data-dir",
        str(data),
        "--out",
        str(out),
        "--master",
        args.master,
        "--stats-json",
        str(stats),
        *(["--concurrent"] if args.concurrent else []),
        *[f"--conf={c}" for c in args.conf],
    ]
    load_before = list(os.getloadavg())
    started = time.perf_counter()
    subprocess.run(cmd, check=True)
    wall = time.perf_counter() - started
    st = json.loads(stats.read_text())
    result = {
        "benchmark": "analyze",
        "commits": gen["commits"],
        "records_in_consumer_offsets": gen["records"],
        "data_bytes": gen["bytes"],
        "generate_seconds": gen["seconds"],
        "master": args.master,
        "wall_seconds_end_to_end": round(wall, 1),
        "session_start_seconds": st["session_seconds"],
        "stage_seconds": st["stage_seconds"],
        "stage_cpu_seconds": st.get("stage_cpu_seconds", {}),
        "code": _code_version(),
        "load_average_before": load_before,
        "load_average_after": list(os.getloadavg()),
        "row_counts": st["row_counts"],
        "machine": {
            "cpus": os.cpu_count(),
            "platform": platform.platform(),
            "python": platform.python_version(),
        },
        "command": " ".join(
            [
                "bench/analyze_bench.py",
                f"--commits {args.commits}",
                *(["--concurrent"] if args.concurrent else []),
                *[f"--conf {c}" for c in args.conf],
            ]
        ),
    }
    print(json.dumps(result, indent=1))
    res_dir = Path(__file__).parent / "results"
    res_dir.mkdir(exist_ok=True)
    (res_dir / args.results).write_text(json.dumps(result, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
