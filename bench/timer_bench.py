"""KeyedTimer benchmark: schedule, reschedule (heartbeat pattern), cancel, expire, memory.

Usage: .venv/bin/python bench/timer_bench.py [--timers 1000000] [--repeat 3]

Prints one line per phase and writes bench/results/timer.json. Each phase is run
``--repeat`` times on a fresh timer; the best and median rates are reported (best is the
least disturbed by other processes on a shared machine).
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import random
import statistics
import sys
import time
import tracemalloc
from collections.abc import Callable
from pathlib import Path
from typing import Any

from groupcoord.timer import KeyedTimer

RESULTS = Path(__file__).resolve().parent / "results" / "timer.json"
SESSION_MS = 45_000


def _deadlines(n: int, seed: int) -> list[int]:
    rng = random.Random(seed)
    return [rng.randrange(0, 10 * SESSION_MS) for _ in range(n)]


def phase_schedule(n: int) -> tuple[float, int]:
    """n distinct keys, random deadlines: cost of arming fresh timers."""
    deadlines = _deadlines(n, 1)
    t: KeyedTimer[int, None] = KeyedTimer()
    start = time.perf_counter()
    for key, d in enumerate(deadlines):
        t.schedule(key, d, None)
    return time.perf_counter() - start, n


def phase_heartbeats(n: int, members: int = 10_000) -> tuple[float, int, dict[str, Any]]:
    """n reschedules spread over ``members`` keys, each pushing its key's expiry forward."""
    t: KeyedTimer[int, None] = KeyedTimer()
    for m in range(members):
        t.schedule(m, SESSION_MS, None)
    max_heap = 0
    start = time.perf_counter()
    for i in range(n):
        t.schedule(i % members, i + SESSION_MS, None)
        if not i & 0x3FF:
            max_heap = max(max_heap, len(t._heap))
    elapsed = time.perf_counter() - start
    return elapsed, n, {"members": members, "max_heap_entries_sampled": max_heap, "live": len(t)}


def phase_reschedule_all(n: int) -> tuple[float, int]:
    """n live timers, each rescheduled once to a later deadline (half the heap becomes garbage)."""
    deadlines = _deadlines(n, 2)
    t: KeyedTimer[int, None] = KeyedTimer()
    for key, d in enumerate(deadlines):
        t.schedule(key, d, None)
    start = time.perf_counter()
    for key, d in enumerate(deadlines):
        t.schedule(key, d + SESSION_MS, None)
    return time.perf_counter() - start, n


def phase_cancel(n: int) -> tuple[float, int]:
    deadlines = _deadlines(n, 3)
    t: KeyedTimer[int, None] = KeyedTimer()
    for key, d in enumerate(deadlines):
        t.schedule(key, d, None)
    start = time.perf_counter()
    for key in range(n):
        t.cancel(key)
    return time.perf_counter() - start, n


def phase_expire(n: int) -> tuple[float, int]:
    """n live timers (plus one stale entry each from a reschedule), expired in 100 time steps."""
    deadlines = _deadlines(n, 4)
    t: KeyedTimer[int, None] = KeyedTimer()
    for key, d in enumerate(deadlines):
        t.schedule(key, d, None)
    for key in range(0, n, 2):
        t.schedule(key, deadlines[key] + 1, None)
    horizon = 10 * SESSION_MS + 2
    fired = 0
    start = time.perf_counter()
    for step in range(1, 101):
        for _ in t.expire(horizon * step // 100):
            fired += 1
    elapsed = time.perf_counter() - start
    assert fired == n and len(t) == 0, (fired, len(t))
    return elapsed, n


def memory_per_timer(n: int) -> dict[str, float]:
    deadlines = _deadlines(n, 5)
    tracemalloc.start()
    base = tracemalloc.get_traced_memory()[0]
    t: KeyedTimer[int, None] = KeyedTimer()
    for key, d in enumerate(deadlines):
        t.schedule(key, d, None)
    live_bytes = tracemalloc.get_traced_memory()[0] - base
    for key, d in enumerate(deadlines):  # every key rescheduled once: garbage doubles the heap
        t.schedule(key, d + 1, None)
    after_bytes = tracemalloc.get_traced_memory()[0] - base
    tracemalloc.stop()
    del t
    return {
        "bytes_per_live_timer": live_bytes / n,
        "bytes_per_timer_after_one_reschedule_each": after_bytes / n,
    }


def run(n: int, repeat: int) -> dict[str, Any]:
    phases: dict[str, Callable[[int], tuple[Any, ...]]] = {
        "schedule_fresh": phase_schedule,
        "reschedule_heartbeat_10k_members": phase_heartbeats,
        "reschedule_every_live_timer": phase_reschedule_all,
        "cancel": phase_cancel,
        "expire": phase_expire,
    }
    out: dict[str, Any] = {}
    for name, fn in phases.items():
        rates = []
        extra: dict[str, Any] = {}
        for _ in range(repeat):
            res = fn(n)
            rates.append(res[1] / res[0])
            if len(res) > 2:
                extra = res[2]
        out[name] = {
            "ops": n,
            "best_ops_per_s": round(max(rates)),
            "median_ops_per_s": round(statistics.median(rates)),
            **extra,
        }
        print(f"{name:36s} best {max(rates):>12,.0f} ops/s  median {statistics.median(rates):>12,.0f} ops/s")
    mem = memory_per_timer(n)
    out["memory"] = {k: round(v, 1) for k, v in mem.items()}
    print(
        f"{'memory':36s} {mem['bytes_per_live_timer']:.0f} B/live timer, "
        f"{mem['bytes_per_timer_after_one_reschedule_each']:.0f} B/timer after one reschedule each"
    )
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--timers", type=int, default=1_000_000)
    ap.add_argument("--repeat", type=int, default=3)
    args = ap.parse_args()
    results = run(args.timers, args.repeat)
    doc = {
        "benchmark": "KeyedTimer",
        "command": " ".join(["python", "bench/timer_bench.py", *sys.argv[1:]]),
        "python": platform.python_version(),
        "machine": {"cpus": os.cpu_count(), "processor": platform.processor() or platform.machine()},
        "timers": args.timers,
        "repeat": args.repeat,
        "results": results,
    }
    RESULTS.parent.mkdir(parents=True, exist_ok=True)
    RESULTS.write_text(json.dumps(doc, indent=2) + "\n")
    print(f"wrote {RESULTS}")


if __name__ == "__main__":
    main()
