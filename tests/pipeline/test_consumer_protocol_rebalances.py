"""A KIP-848 consumer group's rebalances in the pipeline: confluent-kafka 2.16 members with
``group.protocol=consumer`` and one classic member write a data directory through the in-process
broker; the real local Spark analyses it.

A consumer group's rebalance is an epoch bump (Kafka's ``GroupMetadataManager`` bumps the group
epoch on a join, a leave or a subscription change and computes a new target assignment) until its
members have reconciled (the group is Stable again). Members that keep their partitions never
stop, so the row says ``stop_the_world`` false and has no join/sync phases; partitions moved
compare the target assignments (ConsumerGroupTargetAssignmentMember records) of the two epochs.
The classic group's rebalances keep their own rows (``protocol`` classic).
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from groupcoord.pipeline.analyze import AnalyzeOptions, AnalyzeResult, run_analysis
from groupcoord.testing import Broker

pytestmark = [pytest.mark.spark, pytest.mark.e2e]

TOPIC = "orders"
SETTINGS = {
    "group.initial.rebalance.delay.ms": 0,
    "group.min.session.timeout.ms": 1000,
    "group.consumer.heartbeat.interval.ms": 500,
    "group.consumer.min.heartbeat.interval.ms": 500,
}


def wait_for(what: str, cond: Callable[[], bool], consumers: list[Any], timeout: float = 60.0) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        for c in consumers:
            c.poll(0.05)
        if cond():
            return
    raise TimeoutError(what)


@pytest.fixture(scope="module")
def run(spark: Any, tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[AnalyzeResult, Path]]:
    from confluent_kafka import Consumer

    root = tmp_path_factory.mktemp("cg848")
    open_consumers: list[Any] = []

    def consumer(client_id: str, group: str, **extra: Any) -> Any:
        c = Consumer(
            {
                "bootstrap.servers": broker.bootstrap,
                "group.id": group,
                "client.id": client_id,
                "enable.auto.commit": False,
                **extra,
            }
        )
        c.subscribe([TOPIC])
        open_consumers.append(c)
        return c

    def owned(c: Any) -> list[int]:
        return sorted(tp.partition for tp in c.assignment())

    def close(c: Any) -> None:
        open_consumers.remove(c)
        c.close()

    with Broker(SETTINGS, data_dir=root / "data") as broker:
        broker.create_topic(TOPIC, 4)
        try:
            c1 = consumer("c1", "cg", **{"group.protocol": "consumer"})
            wait_for("c1 owns all four", lambda: owned(c1) == [0, 1, 2, 3], [c1])
            c2 = consumer("c2", "cg", **{"group.protocol": "consumer"})
            wait_for(
                "c1 and c2 split, and the group is Stable",
                lambda: (
                    len(owned(c1)) == 2
                    and len(owned(c2)) == 2
                    and broker.describe_group("cg").state == "Stable"
                ),
                [c1, c2],
            )
            close(c2)
            wait_for(
                "c1 owns all four again",
                lambda: owned(c1) == [0, 1, 2, 3] and broker.describe_group("cg").state == "Stable",
                [c1],
            )
            close(c1)
            broker.wait_for_group("cg", state="Empty", members=0)

            k = consumer("k1", "classic", **{"session.timeout.ms": 6000, "heartbeat.interval.ms": 300})
            wait_for("the classic member owns all four", lambda: owned(k) == [0, 1, 2, 3], [k])
            close(k)
            broker.wait_for_group("classic", state="Empty", members=0)
        finally:
            for c in list(open_consumers):
                c.close()
    result = run_analysis(spark, root / "data", root / "out", AnalyzeOptions(report=True))
    yield result, root / "out"


def _rows(spark: Any, result: AnalyzeResult, table: str, order: list[str]) -> list[dict[str, Any]]:
    df = spark.read.parquet(str(result.out / "tables" / table))
    return [r.asDict(recursive=True) for r in df.orderBy(*order).collect()]


def test_each_epoch_bump_is_a_rebalance_of_the_consumer_protocol(spark: Any, run: Any) -> None:
    result, _ = run
    rows = [r for r in _rows(spark, result, "rebalances", ["started_at"]) if r["group_id"] == "cg"]
    got = [
        (
            r["generation"],
            r["cause"],
            r["trigger_client_id"],
            r["members_before"],
            r["members_after"],
            r["partitions_moved"],
            r["outcome"],
            r["protocol"],
            r["stop_the_world"],
            r["members_affected"],
        )
        for r in rows
    ]
    assert got == [
        (1, "group_created", "c1", 0, 1, 4, "stable", "consumer", False, 1),
        # c1 gives up two partitions, c2 takes them
        (2, "new_member_joined", "c2", 1, 2, 2, "stable", "consumer", False, 2),
        # c2's two partitions go to c1 (c2, gone, counts as changed)
        (3, "member_left", "c2", 2, 1, 2, "stable", "consumer", False, 2),
        # the last member's leave empties the group: no new target assignment is computed
        (4, "member_left", "c1", 1, 0, None, "empty", "consumer", False, None),
    ]
    for r in rows:
        assert r["duration_ms"] >= 0 and r["completed_at"] >= r["started_at"]
        assert (r["join_ms"], r["sync_ms"], r["join_completed_at"], r["extra_rounds"]) == (
            None,
            None,
            None,
            0,
        )


def test_classic_rebalances_stay_beside_them(spark: Any, run: Any) -> None:
    result, _ = run
    rows = [r for r in _rows(spark, result, "rebalances", ["started_at"]) if r["group_id"] == "classic"]
    assert [
        (r["cause"], r["outcome"], r["protocol"], r["stop_the_world"], r["members_affected"]) for r in rows
    ] == [
        ("new_member_joined", "stable", "classic", True, None),
        ("member_left", "empty", "classic", True, None),
    ]
    assert all(r["join_ms"] + r["sync_ms"] == r["duration_ms"] for r in rows)


def test_the_summary_counts_epoch_bumps_and_only_classic_stops(spark: Any, run: Any) -> None:
    result, _ = run
    summary = {r["group_id"]: r for r in _rows(spark, result, "rebalance_summary", ["group_id"])}
    cg, classic = summary["cg"], summary["classic"]
    assert (cg["rebalances"], cg["completed"], cg["epoch_bumps"], cg["stopped_ms"]) == (4, 4, 4, 0)
    assert cg["partitions_moved"] == 8
    assert (classic["rebalances"], classic["epoch_bumps"]) == (2, 0)
    assert classic["stopped_ms"] == classic["total_duration_ms"]


def test_the_consumer_group_records_are_decoded(spark: Any, run: Any) -> None:
    result, _ = run
    records = [r for r in _rows(spark, result, "_offsets_records", ["log_offset"]) if r["group_id"] == "cg"]
    epochs = [r["generation"] for r in records if r["record_type"] == "consumer_group_metadata"]
    assert epochs == [1, 2, 3, 4]
    targets = [
        r["generation"] for r in records if r["record_type"] == "consumer_group_target_assignment_metadata"
    ]
    assert targets == [1, 2, 3]
    members = {
        r["members"][0]["client_id"]
        for r in records
        if r["record_type"] == "consumer_group_member_metadata" and not r["tombstone"]
    }
    assert members == {"c1", "c2"}
    assert not [r for r in records if r["record_type"] == "unknown"]


def test_the_report_says_the_consumer_group_did_not_stop(run: Any) -> None:
    _, out = run
    html = (out / "report.html").read_text()
    assert "4 epoch bumps of the consumer group protocol (KIP-848)" in html
    assert "none (2 member(s) moved partitions; 2 in the group)" in html
    assert "none (incremental)" in html  # the last leave: no target assignment to compare
    assert html.count("nobody stopped; reconciled in") == 4  # the consumer group's bars
    assert html.count(", stopped ") == 2  # the classic group's
