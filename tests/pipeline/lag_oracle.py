"""Test oracles for the lag table: the same lag computed in two other ways.

:func:`lag_windowed` is the reference definition (two window sorts over commits and batches);
:func:`lag_mapped` runs :func:`groupcoord.pipeline.lagmap.lag_of` over whole commit batches with
``mapInArrow``. The product computes lag with :func:`groupcoord.pipeline.lag.lag` (and the commit
pass); the tests check it equals both.
"""

from __future__ import annotations

from collections.abc import Iterator

import pyarrow as pa
from pyspark.sql import DataFrame, Window
from pyspark.sql import functions as F

from groupcoord.pipeline.frames import ms
from groupcoord.pipeline.lag import LAG_DDL, topic_batches
from groupcoord.pipeline.lagmap import BatchIndex, lag_of


def lag_mapped(commits: DataFrame, batches: DataFrame) -> DataFrame:
    """Lag as a ``mapInArrow`` over whole commit batches (every column goes through Python)."""
    rows = topic_batches(batches).select("topic", "partition", "base_offset", "last_offset", "append_ms")
    index = BatchIndex.from_arrow(rows.toArrow())
    c = commits.select("group_id", "topic", "partition", "commit_time", "committed_offset", "log_offset")

    def run(it: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        for rb in it:
            if rb.num_rows:
                yield lag_of(index, rb)

    return c.mapInArrow(run, LAG_DDL)


def lag_windowed(commits: DataFrame, batches: DataFrame) -> DataFrame:
    """Lag at every commit. The log-end offset at time t is one past the last offset of every batch
    appended at or before t (taken from the topic's own log); the offset lag is that minus the
    committed offset (clipped at 0); the time lag is how long the first unconsumed record (the one at
    the committed offset) had been in the log at t, 0 when the consumer is caught up."""
    b = topic_batches(batches)
    c = commits.select(
        "group_id",
        "topic",
        "partition",
        "committed_offset",
        "log_offset",
        "commit_time",
        ms("commit_time").alias("t"),
    )
    cols = ["group_id", "committed_offset", "log_offset", "commit_time"]
    rows = c.select(
        "topic",
        "partition",
        "t",
        F.lit(1).alias("kind"),
        *cols,
        F.lit(None).cast("bigint").alias("leo"),
        F.lit(None).cast("bigint").alias("base_offset"),
        F.lit(None).cast("bigint").alias("append_ms"),
    ).unionByName(
        b.select(
            "topic",
            "partition",
            F.col("append_ms").alias("t"),
            F.lit(0).alias("kind"),
            *[
                F.lit(None).cast(t).alias(n)
                for n, t in (
                    ("group_id", "string"),
                    ("committed_offset", "bigint"),
                    ("log_offset", "bigint"),
                    ("commit_time", "timestamp"),
                )
            ],
            (F.col("last_offset") + 1).alias("leo"),
            "base_offset",
            "append_ms",
        )
    )
    by_time = (
        Window.partitionBy("topic", "partition")
        .orderBy("t", "kind")
        .rowsBetween(Window.unboundedPreceding, 0)
    )
    rows = rows.withColumn("leo_at", F.max("leo").over(by_time))
    # The batch holding offset `committed_offset` is the one with the greatest base offset <= it.
    rows = rows.withColumn("okey", F.coalesce("committed_offset", "base_offset"))
    by_offset = (
        Window.partitionBy("topic", "partition")
        .orderBy("okey", "kind")
        .rowsBetween(Window.unboundedPreceding, 0)
    )
    rows = rows.withColumn("_pending_since", F.last("append_ms", ignorenulls=True).over(by_offset))
    out = rows.where(F.col("kind") == 1)
    leo = F.coalesce(F.col("leo_at"), F.lit(0))
    offset_lag = F.greatest(leo - F.col("committed_offset"), F.lit(0))
    time_lag = F.when(F.col("committed_offset") >= leo, F.lit(0)).otherwise(
        F.greatest(F.col("t") - F.col("_pending_since"), F.lit(0))
    )
    return out.select(
        "group_id",
        "topic",
        "partition",
        F.col("commit_time").alias("time"),
        "committed_offset",
        leo.alias("log_end_offset"),
        offset_lag.cast("bigint").alias("offset_lag"),
        time_lag.cast("bigint").alias("time_lag_ms"),
        "log_offset",
    )
