"""Broker CPU per request under the many-groups workload, split by thread and user/system time.

Plain script, not a test. Starts one broker (groupcoord from this tree, groupcoord from another
tree with ``--src``, or the peer with ``--broker tansu``), forms the groups, runs
``group_bench.many_groups_loop`` and reads the broker's ``/proc/PID/task/*/stat`` before and after
the measured window, so the figures are CPU time, not wall time: on a shared machine they hold
where throughput does not. With ``--profile`` it attaches py-spy to the broker for the measured
window and writes a flame graph (and the raw collapsed stacks) under ``bench/results/``; with
``--native`` the stacks go down into C (system calls, uvloop, the cyclic collector).

    .venv/bin/python bench/commit_probe.py --kind commit --depth 1 --seconds 5 [--profile NAME]
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
import group_bench
import peer

TICKS = os.sysconf("SC_CLK_TCK")


def thread_cpu(pid: int) -> dict[str, tuple[float, float]]:
    """(user s, system s) per thread name (threads of one name summed)."""
    out: dict[str, tuple[float, float]] = {}
    for task in Path(f"/proc/{pid}/task").iterdir():
        try:
            name = (task / "comm").read_text().strip()
            fields = (task / "stat").read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        u, s = int(fields[11]) / TICKS, int(fields[12]) / TICKS
        pu, ps = out.get(name, (0.0, 0.0))
        out[name] = (pu + u, ps + s)
    return out


def process_cpu(pid: int) -> tuple[float, float]:
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return int(fields[11]) / TICKS, int(fields[12]) / TICKS


async def probe(host: str, port: int, b: peer.BrokerProcess, args: argparse.Namespace) -> dict[str, Any]:
    state: dict[str, Any] = {}
    orig = b.cpu_seconds
    spy: list[subprocess.Popen[bytes]] = []

    def cpu_seconds() -> float:
        # many_groups_loop reads this at the start and at the end of the measured window.
        if "start" not in state:
            state["start"] = (process_cpu(b.pid), thread_cpu(b.pid))
            if args.profile:
                fmt = "raw" if args.raw else "flamegraph"
                out = group_bench.RESULTS / f"{args.profile}.{'txt' if args.raw else 'svg'}"
                spy.append(
                    subprocess.Popen(
                        [
                            str(Path(sys.executable).parent / "py-spy"), "record", "--pid", str(b.pid),
                            "--rate", "250", "--duration", str(int(args.seconds)), "--threads",
                            # --native pauses the broker to unwind C frames (throughput drops); the
                            # share of each frame is what it is for.
                            "--native" if args.native else "--nonblocking",
                            "--output", str(out), "--format", fmt,
                        ],
                        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                    )
                )  # fmt: skip
        else:
            state["end"] = (process_cpu(b.pid), thread_cpu(b.pid))
        return orig()

    b.cpu_seconds = cpu_seconds  # type: ignore[method-assign]
    r = await group_bench.many_groups_loop(
        host, port, kind=args.kind, connections=args.connections, depth=args.depth,
        seconds=args.seconds, session_ms=10_000, timeout_s=120, broker=b,
    )  # fmt: skip
    for p in spy:
        p.wait(60)
    if "end" in state and r.get("requests"):
        n = r["requests"]
        (u0, s0), t0 = state["start"]
        (u1, s1), t1 = state["end"]
        r["broker_user_us_per_request"] = (u1 - u0) / n * 1e6
        r["broker_sys_us_per_request"] = (s1 - s0) / n * 1e6
        r["broker_threads_us_per_request"] = {
            name: {
                "user": (u - t0.get(name, (0.0, 0.0))[0]) / n * 1e6,
                "sys": (s - t0.get(name, (0.0, 0.0))[1]) / n * 1e6,
            }
            for name, (u, s) in t1.items()
        }
    return r


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--broker", default="groupcoord")
    ap.add_argument("--src", help="run groupcoord from this tree's src/")
    ap.add_argument("--kind", default="commit", choices=("commit", "heartbeat"))
    ap.add_argument("--depth", type=int, default=1)
    ap.add_argument("--connections", type=int, default=50)
    ap.add_argument("--seconds", type=float, default=5.0)
    ap.add_argument("--set", action="append", default=[], help="broker property key=value")
    ap.add_argument("--profile", help="py-spy flame graph name under bench/results/")
    ap.add_argument("--raw", action="store_true", help="with --profile: collapsed stacks (.txt), not svg")
    ap.add_argument(
        "--native", action="store_true",
        help="with --profile: C frames too (uvloop, libc, the interpreter's gc); pauses the broker to sample",
    )  # fmt: skip
    ap.add_argument("--out", help="append the JSON result to this file (one line per run)")
    args = ap.parse_args()
    name = args.broker
    if args.src:
        name = "groupcoord-src"
        peer.GROUPCOORD_VARIANTS[name] = {"PYTHONPATH": str(Path(args.src) / "src")}
    settings = dict(group_bench.GROUPCOORD_SETTINGS)
    settings.update(kv.split("=", 1) for kv in args.set)
    r = group_bench.run_on(name, lambda h, p, b: probe(h, p, b, args), settings)
    r["broker"] = name
    r["src"] = args.src
    r["settings"] = settings
    r["loadavg"] = os.getloadavg()
    r["date_utc"] = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
    keys = ("per_second", "broker_us_per_request", "broker_user_us_per_request", "broker_sys_us_per_request")
    print(name, args.kind, f"d{args.depth}", {k: round(r[k], 1) for k in keys if r.get(k) is not None},
          "load", [round(x, 1) for x in r["loadavg"]], r.get("error", ""))  # fmt: skip
    if r.get("broker_request_path"):
        print(f"    request path: {r['broker_request_path']}")
    threads = r.get("broker_threads_us_per_request") or {}
    for tname, v in sorted(threads.items(), key=lambda kv: -(kv[1]["user"] + kv[1]["sys"])):
        if v["user"] + v["sys"] > 0.5:
            print(f"    {tname:<20} user {v['user']:7.1f} us  sys {v['sys']:7.1f} us")
    if args.out:
        with open(args.out, "a") as f:
            f.write(json.dumps(r, default=str) + "\n")


if __name__ == "__main__":
    main()
