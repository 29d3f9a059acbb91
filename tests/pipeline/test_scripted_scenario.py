"""``analyze`` over the scripted scenario (tests/pipeline/scenario.py): every table, exact rows."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

from groupcoord.pipeline.analyze import AnalyzeResult

from .scenario import T0, Written

pytestmark = pytest.mark.spark


def ts(ms: int) -> datetime:
    return datetime.fromtimestamp((T0 + ms) / 1000, UTC).replace(tzinfo=None)


@pytest.fixture(scope="module")
def analysed(scripted: tuple[Written, AnalyzeResult]) -> tuple[Written, AnalyzeResult]:
    return scripted


def rows(spark: Any, result: AnalyzeResult, table: str, order: list[str]) -> list[dict[str, Any]]:
    df = spark.read.parquet(str(result.out / "tables" / table))
    return [r.asDict(recursive=True) for r in df.orderBy(*order).collect()]


def test_rebalances_have_known_causes_durations_and_movement(spark: Any, analysed: Any) -> None:
    _, result = analysed
    got = rows(spark, result, "rebalances", ["group_id", "started_at"])
    keep = [
        "group_id",
        "generation",
        "started_at",
        "join_completed_at",
        "completed_at",
        "duration_ms",
        "join_ms",
        "sync_ms",
        "trigger_reason",
        "cause",
        "trigger_instance_id",
        "members_before",
        "members_after",
        "partitions_moved",
        "extra_rounds",
        "outcome",
    ]
    assert [{k: r[k] for k in keep} for r in got] == [
        {
            "group_id": "shop",
            "generation": 1,
            "started_at": ts(1_000),
            "join_completed_at": ts(4_000),
            "completed_at": ts(4_050),
            "duration_ms": 3_050,
            "join_ms": 3_000,
            "sync_ms": 50,
            "trigger_reason": "new_member_joined",
            "cause": "new_member_joined",
            "trigger_instance_id": None,
            "members_before": 0,
            "members_after": 1,
            "partitions_moved": 2,
            "extra_rounds": 0,
            "outcome": "stable",
        },
        {
            "group_id": "shop",
            "generation": 2,
            "started_at": ts(15_000),
            "join_completed_at": ts(15_500),
            "completed_at": ts(15_600),
            "duration_ms": 600,
            "join_ms": 500,
            "sync_ms": 100,
            "trigger_reason": "new_member_joined",
            "cause": "new_member_joined",
            "trigger_instance_id": None,
            "members_before": 1,
            "members_after": 2,
            "partitions_moved": 1,
            "extra_rounds": 0,
            "outcome": "stable",
        },
        {
            "group_id": "shop",
            "generation": 3,
            "started_at": ts(40_000),
            "join_completed_at": ts(42_000),
            "completed_at": ts(42_200),
            "duration_ms": 2_200,
            "join_ms": 2_000,
            "sync_ms": 200,
            "trigger_reason": "member_left",
            "cause": "poll_timeout",
            "trigger_instance_id": None,
            "members_before": 2,
            "members_after": 1,
            "partitions_moved": 1,
            "extra_rounds": 0,
            "outcome": "stable",
        },
        {
            "group_id": "shop",
            "generation": 5,
            "started_at": ts(50_000),
            "join_completed_at": ts(51_000),
            "completed_at": ts(51_100),
            "duration_ms": 1_100,
            "join_ms": 1_000,
            "sync_ms": 100,
            "trigger_reason": "new_member_joined",
            "cause": "new_member_joined",
            "trigger_instance_id": "pod-c",
            "members_before": 1,
            "members_after": 1,
            "partitions_moved": 2,
            "extra_rounds": 1,
            "outcome": "stable",
        },
    ]
    assert got[2]["trigger_client_reason"] == "consumer poll timeout has expired."
    assert got[2]["trigger_member_id"] == "b-1"


def test_partition_ownership_uses_instance_id_else_client_and_host(spark: Any, analysed: Any) -> None:
    _, result = analysed
    got = [
        (r["generation"], r["topic"], r["partition"], r["owner"])
        for r in rows(spark, result, "partition_ownership", ["generation", "partition"])
    ]
    assert got == [
        (1, "orders", 0, "app-a@/10.0.0.1"),
        (1, "orders", 1, "app-a@/10.0.0.1"),
        (2, "orders", 0, "app-a@/10.0.0.1"),
        (2, "orders", 1, "app-b@/10.0.0.2"),
        (3, "orders", 0, "app-a@/10.0.0.1"),
        (3, "orders", 1, "app-a@/10.0.0.1"),
        (5, "orders", 0, "pod-c"),
        (5, "orders", 1, "pod-c"),
    ]


def test_group_generations_one_row_per_stored_generation(spark: Any, analysed: Any) -> None:
    _, result = analysed
    got = [
        (r["group_id"], r["generation"], r["leader"], r["member_count"], r["state_time"])
        for r in rows(spark, result, "group_generations", ["generation"])
    ]
    assert got == [
        ("shop", 1, "a-1", 1, ts(4_050)),
        ("shop", 2, "a-1", 2, ts(15_600)),
        ("shop", 3, "a-1", 1, ts(42_200)),
        ("shop", 5, "c-1", 1, ts(51_100)),
    ]


def test_lag_at_every_commit_in_offsets_and_time(spark: Any, analysed: Any) -> None:
    _, result = analysed
    got = [
        (
            r["group_id"],
            r["partition"],
            r["time"],
            r["committed_offset"],
            r["log_end_offset"],
            r["offset_lag"],
            r["time_lag_ms"],
        )
        for r in rows(spark, result, "lag", ["group_id", "partition", "time"])
    ]
    assert got == [
        ("audit", 0, ts(10_000), 20, 20, 0, 0),
        ("audit", 0, ts(20_000), 30, 30, 0, 0),
        ("audit", 0, ts(50_000), 60, 60, 0, 0),
        ("shop", 0, ts(5_000), 10, 10, 0, 0),
        ("shop", 0, ts(15_000), 20, 20, 0, 0),
        ("shop", 0, ts(25_000), 25, 30, 5, 5_000),
        ("shop", 0, ts(35_000), 30, 40, 10, 5_000),
        ("shop", 0, ts(45_000), 35, 50, 15, 15_000),
        ("shop", 0, ts(55_000), 40, 60, 20, 15_000),
        ("shop", 1, ts(5_000), 10, 10, 0, 0),
        ("shop", 1, ts(22_000), 15, 30, 15, 12_000),
        ("shop", 1, ts(26_000), 18, 30, 12, 16_000),
        ("shop", 1, ts(30_000), 20, 40, 20, 10_000),
    ]


def test_partition_and_group_status_by_burrows_rules(spark: Any, analysed: Any) -> None:
    _, result = analysed
    parts = [
        (r["group_id"], r["partition"], r["status"], r["current_lag"], r["time_lag_ms"], r["window_commits"])
        for r in rows(spark, result, "partition_status", ["group_id", "partition"])
    ]
    assert parts == [
        ("audit", 0, "OK", 0, 0, 3),
        ("shop", 0, "WARN", 20, 20_000, 3),
        ("shop", 1, "STOP", 20, 40_000, 3),
    ]
    groups = [
        (
            r["group_id"],
            r["status"],
            r["total_lag"],
            r["max_lag_partition"],
            r["max_lag"],
            r["max_time_lag_ms"],
        )
        for r in rows(spark, result, "group_status", ["group_id"])
    ]
    assert groups == [("audit", "OK", 0, 0, 0, 0), ("shop", "ERR", 40, 0, 20, 40_000)]


def test_rebalance_summary_percentiles_causes_and_storms(spark: Any, analysed: Any) -> None:
    _, result = analysed
    (s,) = rows(spark, result, "rebalance_summary", ["group_id"])
    assert s["group_id"] == "shop"
    assert (s["rebalances"], s["completed"]) == (4, 4)
    # durations 600, 1100, 2200, 3050 ms
    assert s["p50_duration_ms"] == 1_650.0
    assert s["p95_duration_ms"] == pytest.approx(2_922.5)
    assert (s["max_duration_ms"], s["total_duration_ms"], s["partitions_moved"]) == (3_050, 6_950, 6)
    assert s["by_cause"] == {"new_member_joined": 3, "poll_timeout": 1}
    # >= 3 rebalances within a minute: reached at the 3rd (t=40 s) and still at the 4th -> one storm
    assert (s["storms"], s["max_rebalances_in_window"]) == (1, 4)


def test_offset_commits_respect_until_and_corrupt_tail_is_flagged(spark: Any, analysed: Any) -> None:
    written, result = analysed
    commits = rows(spark, result, "offset_commits", ["commit_time"])
    assert len(commits) == 13
    assert max(r["commit_time"] for r in commits) == ts(55_000)
    raw = spark.read.parquet(str(result.out / "tables" / "_offsets_records"))
    corrupt = [(r["log_partition"], r["log_offset"]) for r in raw.where("corrupt").collect()]
    assert corrupt == [(written.corrupt_partition, written.corrupt_next_offset)]


def test_report_is_one_self_contained_html_file(analysed: Any) -> None:
    _, result = analysed
    assert result.report == result.out / "report.html"
    text = Path(result.report).read_text()
    # nothing loaded from elsewhere: no links, no external scripts, styles or images
    assert "http://" not in text and "https://" not in text
    assert "<script src" not in text and "<link" not in text and "<img" not in text
    assert "<section id='summary'>" in text and "<section id='legend'>" in text
    assert ">ERR<" in text and ">STOP<" in text
