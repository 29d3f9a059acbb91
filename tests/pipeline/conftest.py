"""One local[2] SparkSession for the whole pipeline test run (JVM start-up costs seconds)."""

from __future__ import annotations

from collections.abc import Iterator

import pytest


@pytest.fixture(scope="session")
def spark() -> Iterator[object]:
    from groupcoord.pipeline.session import build_session

    session = build_session(
        master="local[2]",
        app_name="groupcoord-tests",
        shuffle_partitions=2,
        adaptive=False,
        extra_conf={"spark.sql.execution.arrow.maxRecordsPerBatch": "10000"},
    )
    yield session
    session.stop()


@pytest.fixture(scope="session")
def scripted(spark: object, tmp_path_factory: pytest.TempPathFactory) -> object:
    """The scripted scenario (scenario.py) written once and analysed once in local mode."""
    from groupcoord.pipeline.analyze import AnalyzeOptions, run_analysis
    from groupcoord.pipeline.health import BurrowConfig
    from groupcoord.pipeline.rebalances import StormConfig

    from .scenario import END, T0, write_scenario

    root = tmp_path_factory.mktemp("scripted")
    written = write_scenario(root / "data")
    options = AnalyzeOptions(
        until_ms=T0 + END,
        burrow=BurrowConfig(intervals=3, allowed_lag=0),
        storms=StormConfig(count=3, minutes=1),
    )
    result = run_analysis(spark, written.data_dir, root / "out", options)  # type: ignore[arg-type]
    return written, result


@pytest.fixture(scope="session")
def mixed_simulation(spark: object, tmp_path_factory: pytest.TempPathFactory) -> object:
    """``simulate --protocol mixed`` (classic and consumer-protocol twins of each group), written
    once and analysed once with its report: (ground truth, analyze result, the config)."""
    from groupcoord.pipeline.analyze import AnalyzeOptions, run_analysis
    from groupcoord.pipeline.simulate import SimulationConfig, simulate

    config = SimulationConfig(
        groups=2, members=3, minutes=8, seed=3, partitions=4, offsets_partitions=5, protocol="mixed"
    )
    root = tmp_path_factory.mktemp("sim-mixed-spark")
    truth = simulate(root / "data", config)
    result = run_analysis(spark, root / "data", root / "out", AnalyzeOptions(report=True))  # type: ignore[arg-type]
    return truth, result, config
