"""One flush round over many files: fsync each in a row, at once on threads, one syncfs, or the
shared write-ahead journal (``groupcoord.storage.journal``: one write and one fdatasync).

Plain script, not a test. Models a flush round of ``__consumer_offsets`` with commits spread over
all its partitions: ``--files`` files (50) each get a small append (150 bytes, one offset-commit
batch), then the round makes them durable, ``--rounds`` times per strategy, strategies interleaved.

    .venv/bin/python bench/fsync_bench.py [--dir /path/on/the/data/disk] [--files 50] [--rounds 15]

Results: bench/results/fsync_bench.json (median and p90 ms per round).
"""

from __future__ import annotations

import argparse
import ctypes
import json
import os
import shutil
import statistics
import sys
import tempfile
import time
import uuid
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import group_bench
from groupcoord.storage.journal import Journal


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--dir", default=None, help="where to create the files (default: the temp dir)")
    ap.add_argument("--files", type=int, default=50)
    ap.add_argument("--rounds", type=int, default=15)
    ap.add_argument("--threads", type=int, default=8)
    ap.add_argument("--journal-capacity", type=int, default=None, help="bytes (default: the broker's)")
    ap.add_argument("--out", default=str(group_bench.RESULTS / "fsync_bench.json"))
    args = ap.parse_args()
    d = tempfile.mkdtemp(prefix="groupcoord-fsync-", dir=args.dir)
    fds = [
        os.open(os.path.join(d, f"p{i}.log"), os.O_WRONLY | os.O_CREAT | os.O_APPEND)
        for i in range(args.files)
    ]
    pool = ThreadPoolExecutor(args.threads)
    libc = ctypes.CDLL(None, use_errno=True)
    journal = Journal(Path(d) / "write-ahead.journal")
    if args.journal_capacity:
        journal.capacity = args.journal_capacity
    journal.replay(lambda _key: None, lambda _log, _batch: None)  # writes the first header

    class _File:
        """A partition file as the journal sees it (a checkpoint would fsync it)."""

        def __init__(self, fd: int) -> None:
            self.fd = fd
            self.log_end_offset = 0

        def flush(self) -> None:
            os.fsync(self.fd)

    files = [_File(fd) for fd in fds]
    keys = [Journal.key(uuid.UUID(int=1), i) for i in range(args.files)]
    record = b"x" * 150

    def journal_round() -> None:
        for f, key in zip(files, keys, strict=True):
            journal.record(f, key, record)
        journal.flush()

    def syncfs() -> None:
        if libc.syncfs(fds[0]) != 0:
            raise OSError(ctypes.get_errno(), "syncfs")

    strategies: dict[str, Callable[[], object]] = {
        "fsync each, in a row": lambda: [os.fsync(fd) for fd in fds],
        "fdatasync each, in a row": lambda: [os.fdatasync(fd) for fd in fds],
        f"fsync each, {args.threads} threads at once": lambda: list(pool.map(os.fsync, fds)),
        f"fdatasync each, {args.threads} threads at once": lambda: list(pool.map(os.fdatasync, fds)),
        "one syncfs (the whole file system)": syncfs,
        "write-ahead journal: one write, one fdatasync": journal_round,
    }
    times: dict[str, list[float]] = {name: [] for name in strategies}
    cpu: dict[str, list[float]] = {name: [] for name in strategies}
    try:
        for _ in range(2):
            for name, fn in strategies.items():
                for _ in range(args.rounds):
                    for fd in fds:
                        os.write(fd, b"x" * 150)
                    t = time.perf_counter()
                    c = time.process_time()
                    fn()
                    times[name].append(time.perf_counter() - t)
                    cpu[name].append(time.process_time() - c)
    finally:
        journal.close()
        for fd in fds:
            os.close(fd)
        pool.shutdown()
        shutil.rmtree(d, ignore_errors=True)
    result = {}
    for name, ts in times.items():
        ts.sort()
        result[name] = {
            "median_ms": statistics.median(ts) * 1000,
            "p90_ms": ts[int(len(ts) * 0.9)] * 1000,
            # CPU of this process (all threads) per round: what the broker pays for the round
            "cpu_ms_per_round": statistics.mean(cpu[name]) * 1000,
        }
        r = result[name]
        print(
            f"{name:40s} median {r['median_ms']:7.2f} ms  p90 {r['p90_ms']:7.2f} ms"
            f"  cpu {r['cpu_ms_per_round']:6.2f} ms"
        )
    out = {"machine": group_bench.machine(), "args": vars(args), "result": result}
    Path(args.out).write_text(json.dumps(out, indent=2) + "\n")
    print(f"wrote {args.out}")


if __name__ == "__main__":
    main()
