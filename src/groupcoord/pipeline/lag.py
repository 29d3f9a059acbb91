"""Consumer lag at every commit, as pure ``DataFrame -> DataFrame`` functions.

The log-end offset at time t is one past the last offset of every batch appended at or before t
(taken from the topic's own log); the offset lag is that minus the committed offset (clipped at
0); the time lag is how long the first unconsumed record (the one at the committed offset) had
been in the log at t, 0 when the consumer is caught up. The tests hold the same definition as
two window sorts (``tests/pipeline/lag_oracle.py``) and check :func:`lag` against it.
"""

from __future__ import annotations

import warnings
from typing import Any

from pyspark.sql import DataFrame
from pyspark.sql import functions as F

from groupcoord.pipeline.frames import ms


def topic_batches(batches: DataFrame) -> DataFrame:
    """The topics' record batches reduced to what lag needs: offsets, append time (ms) and the
    producer and transaction flags (the last stable offset); a frame without those columns is
    read as having no transactions."""
    have = set(batches.columns)
    flags = [
        F.col(name) if name in have else F.lit(default).cast(kind).alias(name)
        for name, kind, default in (
            ("producer_id", "bigint", -1),
            ("is_transactional", "boolean", False),
            ("is_control", "boolean", False),
        )
    ]
    return batches.where(~F.col("corrupt")).select(
        "topic",
        "partition",
        "base_offset",
        "last_offset",
        ms("max_timestamp").alias("append_ms"),
        *flags,
    )


#: the index columns :class:`groupcoord.pipeline.lagmap.BatchIndex` reads
INDEX_COLUMNS = (
    "topic",
    "partition",
    "base_offset",
    "last_offset",
    "append_ms",
    "producer_id",
    "is_transactional",
    "is_control",
)

LAG_DDL = (
    "group_id string, topic string, partition int, time timestamp, committed_offset bigint, "
    "log_end_offset bigint, offset_lag bigint, time_lag_ms bigint, log_offset bigint, "
    "last_stable_offset bigint, read_committed_lag bigint"
)


def lag(commits: DataFrame, batches: DataFrame) -> DataFrame:
    """Lag at every commit, as the module docstring defines it, computed without a shuffle:
    the topics' batch index (one row per record batch, small) is collected once and each commit's
    log-end offset and pending-since time are as-of lookups in it (numpy ``searchsorted``) in an
    Arrow UDF that sees only (topic, partition, time, committed offset); the other columns stay in
    the JVM."""
    from pyspark.sql.pandas.functions import ArrowUDFType, arrow_udf

    from groupcoord.pipeline.lagmap import LAG_STRUCT, BatchIndex, lag_struct

    rows = topic_batches(batches).select(*INDEX_COLUMNS)
    index = BatchIndex.from_arrow(rows.toArrow())

    def compute(topic: Any, partition: Any, t_ms: Any, committed: Any) -> Any:
        # pyarrow arrays in and out (untyped: the declared function type tells Spark)
        return lag_struct(index, topic, partition, t_ms, committed)

    with warnings.catch_warnings():  # "prefer type hints": ours are strings under __future__
        warnings.simplefilter("ignore", UserWarning)
        lag_udf = arrow_udf(compute, LAG_STRUCT, ArrowUDFType.SCALAR)  # type: ignore[call-overload]
    with_lag = commits.select(
        "group_id",
        "topic",
        "partition",
        F.col("commit_time").alias("time"),
        "committed_offset",
        "log_offset",
        lag_udf("topic", "partition", ms("commit_time"), "committed_offset").alias("_lag"),
    )
    return with_lag.select(
        "group_id",
        "topic",
        "partition",
        "time",
        "committed_offset",
        F.col("_lag.log_end_offset").alias("log_end_offset"),
        F.col("_lag.offset_lag").alias("offset_lag"),
        F.col("_lag.time_lag_ms").alias("time_lag_ms"),
        "log_offset",
        F.col("_lag.last_stable_offset").alias("last_stable_offset"),
        F.col("_lag.read_committed_lag").alias("read_committed_lag"),
    )


def group_lag_series(lag_df: DataFrame, bucket_ms: int) -> DataFrame:
    """Per group and time bucket: total offset lag (sum over partitions of each partition's last
    lag in the bucket) and the worst time lag; what the report plots."""
    t = ms("time")
    b = lag_df.withColumn("bucket", (F.floor(t / bucket_ms) * bucket_ms).cast("bigint"))
    per_part = b.groupBy("group_id", "topic", "partition", "bucket").agg(
        F.max_by("offset_lag", "log_offset").alias("lag"),
        F.max("time_lag_ms").alias("time_lag_ms"),
    )
    return (
        per_part.groupBy("group_id", "bucket")
        .agg(F.sum("lag").alias("total_lag"), F.max("time_lag_ms").alias("max_time_lag_ms"))
        .select("group_id", F.timestamp_millis("bucket").alias("time"), "total_lag", "max_time_lag_ms")
    )
