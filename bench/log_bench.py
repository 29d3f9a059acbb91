"""Storage layer throughput: append, sequential read, random reads, timestamp lookups, recovery.

Plain script, not a test. Prints a table and writes bench/results/log_bench.json.

    .venv/bin/python bench/log_bench.py [--mb 256] [--batch-records 100] [--record-bytes 100]
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import random
import shutil
import statistics
import tempfile
import time
from pathlib import Path

from groupcoord.clock import ManualClock
from groupcoord.formats.batch import build_batch
from groupcoord.storage.log import PartitionLog
from groupcoord.storage.log_config import LogConfig

T0 = 1_700_000_000_000


def run_once(root: Path, args: argparse.Namespace) -> dict[str, float]:
    clock = ManualClock(T0)
    config = LogConfig(segment_bytes=args.segment_mb * 1024 * 1024)
    rng = random.Random(7)
    payloads = [rng.randbytes(args.record_bytes) for _ in range(args.batch_records)]
    batches = [
        build_batch(
            [(b"key-%d" % i, p, (("h", b"v"),)) for i, p in enumerate(payloads)],
            timestamp_ms=T0 + n,
            compression=args.compression,
        )
        for n in range(64)
    ]
    batch_size = len(batches[0])
    n_batches = args.mb * 1024 * 1024 // batch_size
    out: dict[str, float] = {"batch_bytes": batch_size, "batches": n_batches}

    plog, _ = PartitionLog.open(root / "bench-0", config, clock)
    start = time.perf_counter()
    for i in range(n_batches):
        plog.append(batches[i % 64])
    elapsed = time.perf_counter() - start
    total = plog.size_bytes
    out["append_mb_s"] = total / elapsed / 1e6
    out["append_batches_s"] = n_batches / elapsed
    start = time.perf_counter()
    plog.flush()
    out["flush_s"] = time.perf_counter() - start

    # Sequential consumption with 1 MiB fetches, as a consumer would.
    start = time.perf_counter()
    offset = 0
    read_bytes = 0
    leo = plog.log_end_offset
    while offset < leo:
        result = plog.read(offset, 1024 * 1024)
        data = result.data
        read_bytes += len(data)
        # next offset: last batch's last offset + 1 (header fields at 0 and 23)
        pos = 0
        last = offset
        view = memoryview(data)
        while pos < len(view):
            base = int.from_bytes(view[pos : pos + 8], "big")
            length = int.from_bytes(view[pos + 8 : pos + 12], "big")
            delta = int.from_bytes(view[pos + 23 : pos + 27], "big")
            last = base + delta
            pos += length + 12
        offset = last + 1
    elapsed = time.perf_counter() - start
    out["read_seq_mb_s"] = read_bytes / elapsed / 1e6

    # Random single-batch reads (index lookup + scan).
    lookups = 20_000
    targets = [rng.randrange(leo) for _ in range(lookups)]
    start = time.perf_counter()
    for t in targets:
        plog.read(t, 1)
    out["read_random_per_s"] = lookups / (time.perf_counter() - start)

    # Timestamp lookups.
    ts_lookups = 2_000
    start = time.perf_counter()
    for _ in range(ts_lookups):
        plog.offset_for_timestamp(T0 + rng.randrange(64))
    out["offset_for_timestamp_per_s"] = ts_lookups / (time.perf_counter() - start)

    plog.close()
    # Recovery of the active segment without a clean-shutdown marker (full CRC check).
    (root / "bench-0" / ".clean_shutdown").unlink()
    start = time.perf_counter()
    again, report = PartitionLog.open(root / "bench-0", config, clock)
    elapsed = time.perf_counter() - start
    active_bytes = again.segment_files()[-1].stat().st_size
    out["recovery_mb_s"] = active_bytes / elapsed / 1e6
    out["recovery_active_segment_mb"] = active_bytes / 1e6
    out["segments"] = again.segment_count
    assert report.truncated_bytes == 0 and again.log_end_offset == leo
    again.close()
    # Clean reopen.
    start = time.perf_counter()
    third, report = PartitionLog.open(root / "bench-0", config, clock)
    out["clean_open_ms"] = (time.perf_counter() - start) * 1000
    third.close()
    out["total_mb"] = total / 1e6
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--mb", type=int, default=256)
    parser.add_argument("--batch-records", type=int, default=100)
    parser.add_argument("--record-bytes", type=int, default=100)
    parser.add_argument("--segment-mb", type=int, default=1024, help="1 GiB, Kafka's default")
    parser.add_argument("--compression", type=int, default=0)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--dir", type=Path, default=None, help="where to write (default: a temp dir)")
    args = parser.parse_args()
    runs = []
    for _ in range(args.repeat):
        root = Path(tempfile.mkdtemp(prefix="log-bench-", dir=args.dir))
        try:
            runs.append(run_once(root, args))
        finally:
            shutil.rmtree(root, ignore_errors=True)
    keys = [k for k in runs[0] if k.endswith(("_s", "_ms"))]
    summary = {}
    for k in keys:
        values = [r[k] for r in runs]
        higher_better = not (k.endswith("_ms") or k == "flush_s")
        best = max(values) if higher_better else min(values)
        summary[k] = {"best": best, "median": statistics.median(values)}
        print(f"{k:28s} best {best:14,.1f}   median {statistics.median(values):14,.1f}")
    result = {
        "command": "bench/log_bench.py "
        + " ".join(f"--{k.replace('_', '-')} {v}" for k, v in vars(args).items()),
        "machine": {
            "cpus": os.cpu_count(),
            "python": platform.python_version(),
            "platform": platform.platform(),
        },
        "load_average": os.getloadavg(),
        "batch_bytes": runs[0]["batch_bytes"],
        "batches": runs[0]["batches"],
        "total_mb": runs[0]["total_mb"],
        "summary": summary,
        "runs": runs,
    }
    out = Path(__file__).parent / "results" / "log_bench.json"
    out.parent.mkdir(exist_ok=True)
    out.write_text(json.dumps(result, indent=1) + "\n")
    print(f"wrote {out}")


if __name__ == "__main__":
    main()
