"""CPU of one scrape's rendering: the snapshot's families through ``prometheus_client``'s generic
path against ``groupcoord.metrics.exposition.render``, in both exposition formats.

Plain script, not a test. A synthetic snapshot of ``--groups`` groups, each with committed offsets
of ``--partitions`` partitions of one topic (a broker of 10,000 groups of 10 partitions exposes
about 500,000 series). CPU time (``time.process_time``), best of ``--repeat``; the two outputs
are compared byte for byte.

    .venv/bin/python bench/metrics_bench.py [--groups 10000] [--partitions 10] [--repeat 3]

Results: bench/results/metrics_render.json.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path
from typing import Any

from prometheus_client import CollectorRegistry, generate_latest
from prometheus_client.openmetrics.exposition import generate_latest as generate_openmetrics

from groupcoord.metrics.endpoint import snapshot_families
from groupcoord.metrics.exposition import Family, as_prometheus_metric, render
from groupcoord.metrics.snapshot import GroupRow, OffsetRow, PartitionRow, Snapshot

RESULTS = Path(__file__).resolve().parent / "results"


def synthetic(groups: int, partitions: int) -> Snapshot:
    topics = [f"topic-{t}" for t in range(100)]
    return Snapshot(
        now_ms=1_700_000_000_000,
        groups=tuple(
            GroupRow(
                group_id=f"group-{g}", state="Stable", protocol_type="consumer", generation=g % 7, members=3
            )
            for g in range(groups)
        ),
        offsets=tuple(
            OffsetRow(
                group_id=f"group-{g}",
                topic=topics[g % 100],
                partition=p,
                committed=1_000 * g + p,
                log_end=1_000 * g + p + 17,
                lag=17,
                time_lag_s=2.5,
            )
            for g in range(groups)
            for p in range(partitions)
        ),
        partitions=tuple(
            PartitionRow(topic=t, partition=p, log_start=0, log_end=10**9)
            for t in topics
            for p in range(partitions)
        ),
        rebalances={(f"group-{g}", "new_member_joined"): 1 for g in range(groups)},
        connections=100,
        connections_accepted=100,
        connections_refused=0,
        bytes_in=1,
        bytes_out=1,
        took_s=0.1,
    )


class _Fixed:
    def __init__(self, families: list[Family]) -> None:
        self._families = families

    def collect(self) -> Any:
        for f in self._families:
            yield as_prometheus_metric(f)


def best(fn: Any, repeat: int) -> tuple[float, bytes]:
    times, result = [], b""
    for _ in range(repeat):
        t = time.process_time()
        result = fn()
        times.append(time.process_time() - t)
    return min(times), result


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--groups", type=int, default=10_000)
    ap.add_argument("--partitions", type=int, default=10)
    ap.add_argument("--repeat", type=int, default=3)
    args = ap.parse_args()
    snap = synthetic(args.groups, args.partitions)
    families = snapshot_families(snap)
    series = sum(len(f.samples) for f in families)
    registry = CollectorRegistry()
    registry.register(_Fixed(families))  # type: ignore[arg-type]
    out: dict[str, Any] = {"groups": args.groups, "partitions": args.partitions, "series": series}
    for fmt, generic, ours in (
        (
            "text 0.0.4",
            lambda: generate_latest(registry),
            lambda: render(families, openmetrics=False).encode(),
        ),
        (
            "openmetrics",
            lambda: generate_openmetrics(registry),
            lambda: render(families, openmetrics=True).encode() + b"# EOF\n",
        ),
    ):
        g, g_text = best(generic, args.repeat)
        o, o_text = best(ours, args.repeat)
        out[fmt] = {
            "prometheus_client_s": g,
            "render_s": o,
            "bytes": len(o_text),
            "same_bytes": g_text == o_text,
        }
        print(f"{fmt:12} {series:,} series: prometheus_client {g:.2f} s, render {o:.2f} s ({g / o:.1f}x)")
    out["families_s"] = best(lambda: snapshot_families(snap), args.repeat)[0]
    print(f"building the families from the snapshot: {out['families_s']:.2f} s")
    RESULTS.mkdir(exist_ok=True)
    (RESULTS / "metrics_render.json").write_text(json.dumps(out, indent=2) + "\n")
    print(f"wrote {RESULTS / 'metrics_render.json'}", file=sys.stderr)


if __name__ == "__main__":
    main()
