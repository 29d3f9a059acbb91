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
