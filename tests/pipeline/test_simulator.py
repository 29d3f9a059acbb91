"""The simulator's data directory, analysed, reproduces the ground truth it recorded."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from groupcoord.pipeline.analyze import AnalyzeOptions, AnalyzeResult, run_analysis
from groupcoord.pipeline.simulate import GroundTruth, SimulationConfig, simulate

pytestmark = pytest.mark.spark

CONFIG = SimulationConfig(groups=2, members=3, minutes=6, seed=1, partitions=4, offsets_partitions=5)
COOPERATIVE = SimulationConfig(
    groups=2, members=3, minutes=6, seed=1, partitions=4, offsets_partitions=5, assignor="cooperative-sticky"
)


@pytest.fixture(scope="module")
def simulated(spark: Any, tmp_path_factory: pytest.TempPathFactory) -> tuple[GroundTruth, AnalyzeResult]:
    root = tmp_path_factory.mktemp("sim")
    truth = simulate(root / "data", CONFIG)
    result = run_analysis(spark, root / "data", root / "out", AnalyzeOptions(report=False))
    return truth, result


@pytest.fixture(scope="module")
def cooperative(spark: Any, tmp_path_factory: pytest.TempPathFactory) -> tuple[GroundTruth, AnalyzeResult]:
    root = tmp_path_factory.mktemp("sim-coop")
    truth = simulate(root / "data", COOPERATIVE)
    result = run_analysis(spark, root / "data", root / "out", AnalyzeOptions(report=False))
    return truth, result


def test_simulation_is_deterministic_for_a_seed(tmp_path: Path) -> None:
    small = SimulationConfig(groups=1, members=3, minutes=3, seed=11, partitions=2, offsets_partitions=3)
    a = simulate(tmp_path / "a", small)
    b = simulate(tmp_path / "b", small)
    assert (a.rebalances, a.quiet, a.commits, a.produced) == (b.rebalances, b.quiet, b.commits, b.produced)
    for name in ("__consumer_offsets-0", "__group_events-0", "topic-0-1"):
        da = sorted(p.name for p in (tmp_path / "a" / name).iterdir())
        assert da == sorted(p.name for p in (tmp_path / "b" / name).iterdir())
    seg = "00000000000000000000.log"
    assert (tmp_path / "a" / "__group_events-0" / seg).read_bytes() == (
        tmp_path / "b" / "__group_events-0" / seg
    ).read_bytes()


def test_ground_truth_covers_every_kind_of_disruption(simulated: Any) -> None:
    truth, _ = simulated
    kinds = {r.disruption for r in truth.rebalances} | {q.disruption for q in truth.quiet}
    assert kinds == {"initial_join", "join", "crash", "leave", "slow", "static_restart"}


def _assert_truth_found(spark: Any, truth: GroundTruth, result: AnalyzeResult) -> None:
    found = [
        r.asDict()
        for r in spark.read.parquet(str(result.out / "tables" / "rebalances"))
        .selectExpr(
            "group_id",
            "cause",
            "unix_millis(started_at) AS start_ms",
            "coalesce(trigger_instance_id, trigger_client_id) AS member",
            "outcome",
        )
        .collect()
    ]
    assert len(found) == len(truth.rebalances)
    for t in truth.rebalances:
        matches = [
            f
            for f in found
            if f["group_id"] == t.group_id
            and f["cause"] == t.cause
            and t.earliest_start_ms <= f["start_ms"] <= t.latest_start_ms
            and f["member"] == t.member
        ]
        assert len(matches) == 1, (t, found)
        assert matches[0]["outcome"] == "stable"
    for q in truth.quiet:
        assert not [f for f in found if f["group_id"] == q.group_id and q.from_ms <= f["start_ms"] <= q.to_ms]


def test_every_injected_rebalance_is_found_with_its_cause_and_start(spark: Any, simulated: Any) -> None:
    truth, result = simulated
    _assert_truth_found(spark, truth, result)


def test_cooperative_follow_up_rebalances_are_in_the_ground_truth_and_found(
    spark: Any, cooperative: Any
) -> None:
    """KIP-429: with cooperative-sticky, a rebalance that moves partitions is followed by a second
    one started by a member that gave partitions up (Kafka's ConsumerCoordinator.onJoinComplete
    requests the rejoin after revoking); the simulator records it and analyze finds it."""
    truth, result = cooperative
    kinds = {r.disruption for r in truth.rebalances}
    assert {"join", "cooperative_follow_up"} <= kinds
    _assert_truth_found(spark, truth, result)


def test_every_commit_is_in_the_tables_with_a_lag(spark: Any, simulated: Any) -> None:
    truth, result = simulated
    tables = result.out / "tables"
    assert result.row_counts["offset_commits"] == truth.commits
    lag = spark.read.parquet(str(tables / "lag"))
    assert lag.count() == truth.commits
    # consumers commit what they consumed, never beyond the log end at that time
    assert lag.where("committed_offset > log_end_offset OR offset_lag < 0 OR time_lag_ms < 0").count() == 0
    # healthy consumers are at most about a second of production behind when they commit
    assert lag.where("time_lag_ms > 0").count() > 0
    groups = {r["group_id"]: r["status"] for r in spark.read.parquet(str(tables / "group_status")).collect()}
    assert set(groups) == {"group-0", "group-1"}
