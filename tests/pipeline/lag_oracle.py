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
from groupcoord.pipeline.lag import INDEX_COLUMNS, LAG_DDL, topic_batches
from groupcoord.pipeline.lagmap import BatchIndex, lag_of


def lag_mapped(commits: DataFrame, batches: DataFrame) -> DataFrame:
    """Lag as a ``mapInArrow`` over whole commit batches (every column goes through Python)."""
    rows = topic_batches(batches).select(*INDEX_COLUMNS)
    index = BatchIndex.from_arrow(rows.toArrow())
    c = commits.select("group_id", "topic", "partition", "commit_time", "committed_offset", "log_offset")

    def run(it: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        for rb in it:
            if rb.num_rows:
                yield lag_of(index, rb)

    return c.mapInArrow(run, LAG_DDL)


def transactions_windowed(b: DataFrame) -> DataFrame:
    """(topic, partition, start_ms, end_ms or null while open, first_offset) of every transaction:
    a producer's transactional data batch that follows its marker (or nothing) opens one, its
    next marker closes it."""
    tb = b.where(F.col("is_transactional") & (F.col("producer_id") >= 0))
    by_producer = Window.partitionBy("topic", "partition", "producer_id").orderBy("base_offset")
    after = by_producer.rowsBetween(0, Window.unboundedFollowing)
    tb = tb.withColumn("_prev_control", F.lag("is_control").over(by_producer)).withColumn(
        "_next_marker",
        F.min(F.when(F.col("is_control"), F.struct("base_offset", "append_ms"))).over(after),
    )
    starts = tb.where(~F.col("is_control") & F.coalesce(F.col("_prev_control"), F.lit(True)))
    return starts.select(
        "topic",
        "partition",
        F.col("append_ms").alias("start_ms"),
        F.col("_next_marker.append_ms").alias("end_ms"),
        F.col("base_offset").alias("first_offset"),
    )


def lag_windowed(commits: DataFrame, batches: DataFrame) -> DataFrame:
    """Lag at every commit. The log-end offset at time t is one past the last offset of every batch
    appended at or before t (taken from the topic's own log); the offset lag is that minus the
    committed offset (clipped at 0); the time lag is how long the first unconsumed record (the one at
    the committed offset) had been in the log at t, 0 when the consumer is caught up. The last stable
    offset at t is the first offset of the earliest transaction open at t (opened at or before t,
    closed after t), else the log end; the read_committed lag is that minus the committed offset."""
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
    res = out.select(
        "group_id",
        "topic",
        "partition",
        F.col("commit_time").alias("time"),
        "committed_offset",
        leo.alias("log_end_offset"),
        offset_lag.cast("bigint").alias("offset_lag"),
        time_lag.cast("bigint").alias("time_lag_ms"),
        "log_offset",
        "t",
    )
    # the LSO depends on (topic, partition, t) only: the earliest first offset of the
    # transactions open at t, found by a range join
    tx = transactions_windowed(b)
    keys = res.select("topic", "partition", "t").distinct()
    open_at = keys.join(
        tx,
        (keys["topic"] == tx["topic"])
        & (keys["partition"] == tx["partition"])
        & (tx["start_ms"] <= keys["t"])
        & (tx["end_ms"].isNull() | (keys["t"] < tx["end_ms"])),
    )
    first = open_at.groupBy(keys["topic"], keys["partition"], keys["t"]).agg(
        F.min(tx["first_offset"]).alias("_first")
    )
    res = res.join(first, ["topic", "partition", "t"], "left")
    lso = F.least(F.coalesce(F.col("_first"), F.col("log_end_offset")), F.col("log_end_offset"))
    return res.select(
        "group_id",
        "topic",
        "partition",
        "time",
        "committed_offset",
        "log_end_offset",
        "offset_lag",
        "time_lag_ms",
        "log_offset",
        lso.alias("last_stable_offset"),
        F.greatest(lso - F.col("committed_offset"), F.lit(0)).cast("bigint").alias("read_committed_lag"),
    )
