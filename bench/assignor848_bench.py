"""The ``uniform`` server assignor (KIP-848) on its own: 1,000 members x 10,000 partitions.

Plain script, not a test. In process, no broker: builds the assignor's input (``GroupSpec``) as the
coordinator does and times ``UniformAssignor.assign`` (and ``RangeAssignor`` for comparison).

Cases (members x partitions, default 1,000 x 10,000):

* ``homogeneous``: every member subscribes to the same 10 topics of 1,000 partitions;
* ``heterogeneous``: member i subscribes to topics i mod 10 and (i + 1) mod 10 (10 topics of
  1,000 partitions, each topic with 200 subscribers);

and for each, three moments of a group's life: ``fresh`` (no previous target: the group's first
epoch), ``stable`` (every member has its previous target, nothing changed: what each epoch bump of
an unrelated change costs), ``join`` (one member more than the previous target knew: the sticky
path). Each is run ``--repeat`` times; the median and the best are reported, in ms. Kafka reports
15-20 ms for 1,000 members x 50,000 partitions in Java (KIP-1263); our target is under 200 ms.

Also ``joins``: the coordinator core itself (``ConsumerGroupManager``, no wire, no log): ``--members``
first heartbeats (epoch 0) into one group subscribed to one topic of ``--partitions`` partitions,
one after another, as a join storm arrives; each bumps the group epoch and computes a new target
(Kafka 4.1 does the same per heartbeat). CPU seconds in all and per join, ``--repeat`` times.
The wire benchmark (``stable848_bench.py``) cannot create 10,000 partitions on this machine.

    .venv/bin/python bench/assignor848_bench.py [--members 1000] [--partitions 10000] [--topics 10]
        [--repeat 5] [--joins-repeat 3] [--out bench/results/assignor848.json]
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import sys
import time
import uuid
from pathlib import Path
from typing import Any

from groupcoord.coordinator.consumer.assignment import (
    Assignment,
    GroupSpec,
    MemberSpec,
    PartitionAssignor,
    SubscriptionType,
)
from groupcoord.coordinator.consumer.range_assignor import RangeAssignor
from groupcoord.coordinator.consumer.uniform_assignor import UniformAssignor

RESULTS = Path(__file__).resolve().parent / "results"


def _inverted(targets: dict[str, Assignment]) -> dict[uuid.UUID, dict[int, str]]:
    out: dict[uuid.UUID, dict[int, str]] = {}
    for mid, assignment in targets.items():
        for topic_id, parts in assignment.items():
            owners = out.setdefault(topic_id, {})
            for p in parts:
                owners[p] = mid
    return out


def _spec(
    subs: dict[str, frozenset[uuid.UUID]], kind: SubscriptionType, previous: dict[str, Assignment]
) -> GroupSpec:
    return GroupSpec(
        members={
            mid: MemberSpec(subscribed_topic_ids=topics, assignment=previous.get(mid, {}))
            for mid, topics in subs.items()
        },
        subscription_type=kind,
        assigned_partitions=_inverted(previous),
    )


def _time(
    assignor: PartitionAssignor, spec: GroupSpec, counts: dict[uuid.UUID, int], repeat: int
) -> list[float]:
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        assignor.assign(spec, counts)
        times.append((time.perf_counter() - start) * 1000)
    return times


def case(
    assignor: PartitionAssignor,
    kind: SubscriptionType,
    members: int,
    partitions: int,
    n_topics: int,
    repeat: int,
) -> list[dict[str, Any]]:
    topic_ids = [uuid.uuid4() for _ in range(n_topics)]
    counts = {t: partitions // n_topics for t in topic_ids}
    member_ids = [f"member-{i:05d}-{uuid.uuid4().hex[:12]}" for i in range(members + 1)]
    if kind is SubscriptionType.HOMOGENEOUS:
        every = frozenset(topic_ids)
        subs = {mid: every for mid in member_ids}
    else:
        subs = {
            mid: frozenset({topic_ids[i % n_topics], topic_ids[(i + 1) % n_topics]})
            for i, mid in enumerate(member_ids)
        }
    base = {mid: subs[mid] for mid in member_ids[:members]}
    rows = []
    fresh = _spec(base, kind, {})
    rows.append(("fresh", fresh))
    previous = assignor.assign(fresh, counts)
    rows.append(("stable", _spec(base, kind, previous)))
    rows.append(("join", _spec(subs, kind, previous)))
    out = []
    for moment, spec in rows:
        times = _time(assignor, spec, counts, repeat)
        row = {
            "assignor": assignor.name,
            "subscriptions": kind.value.lower(),
            "moment": moment,
            "members": len(spec.members),
            "partitions": sum(counts.values()),
            "topics": n_topics,
            "median_ms": round(statistics.median(times), 1),
            "best_ms": round(min(times), 1),
        }
        print(json.dumps(row), flush=True)
        out.append(row)
    return out


def joins(members: int, partitions: int, repeat: int) -> dict[str, Any]:
    """``members`` first heartbeats into one group of one ``partitions``-partition topic."""
    from groupcoord.coordinator.consumer.api import ConsumerGroupHeartbeatRequest
    from groupcoord.coordinator.consumer.manager import ConsumerGroupManager
    from groupcoord.coordinator.consumer.metadata import TopicMetadata, TopicsImage

    cpu: list[float] = []
    epoch = 0
    for _ in range(repeat):
        topic = TopicMetadata(topic_id=uuid.uuid4(), name="t", num_partitions=partitions)
        manager = ConsumerGroupManager(image=TopicsImage([topic], version=1))
        requests = [
            ConsumerGroupHeartbeatRequest(
                group_id="g",
                member_id=uuid.uuid4().hex,
                member_epoch=0,
                rebalance_timeout_ms=60_000,
                subscribed_topic_names=("t",),
                server_assignor="uniform",
                topic_partitions=(),
            )
            for _ in range(members)
        ]
        start = time.process_time()
        for request in requests:
            manager.consumer_group_heartbeat(request, 1_000)
        cpu.append(time.process_time() - start)
        epoch = manager.groups["g"].group_epoch
    row = {
        "case": "joins",
        "members": members,
        "partitions": partitions,
        "group_epoch": epoch,
        "median_cpu_s": round(statistics.median(cpu), 2),
        "best_cpu_s": round(min(cpu), 2),
        "median_ms_per_join": round(statistics.median(cpu) / members * 1000, 2),
    }
    print(json.dumps(row), flush=True)
    return row


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--members", type=int, default=1000)
    ap.add_argument("--partitions", type=int, default=10_000)
    ap.add_argument("--topics", type=int, default=10)
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--assignors", default="uniform,range")
    ap.add_argument("--joins-repeat", type=int, default=3, help="0: skip the join storm")
    ap.add_argument("--out", default=str(RESULTS / "assignor848.json"))
    args = ap.parse_args()
    known: dict[str, PartitionAssignor] = {"uniform": UniformAssignor(), "range": RangeAssignor()}
    results: dict[str, Any] = {
        "command": " ".join([Path(sys.executable).name, *sys.argv]),
        "started": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        "machine": {
            "platform": platform.platform(),
            "python": platform.python_version(),
            "cpus": os.cpu_count(),
            "load_average_at_start": os.getloadavg(),
        },
        "rows": [],
    }
    for name in args.assignors.split(","):
        for kind in SubscriptionType:
            results["rows"] += case(
                known[name], kind, args.members, args.partitions, args.topics, args.repeat
            )
    if args.joins_repeat > 0:
        results["joins"] = joins(args.members, args.partitions, args.joins_repeat)
    results["machine"]["load_average_at_end"] = os.getloadavg()
    Path(args.out).parent.mkdir(parents=True, exist_ok=True)
    Path(args.out).write_text(json.dumps(results, indent=1) + "\n")


if __name__ == "__main__":
    main()
