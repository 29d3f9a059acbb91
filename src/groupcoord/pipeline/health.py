"""Group health: Burrow's evaluation of each group-partition's recent commits, and each group's
worst status, as pure ``DataFrame -> DataFrame`` functions (rules: ``docs/pipeline.md``)."""

from __future__ import annotations

from dataclasses import dataclass

from pyspark.sql import DataFrame, Window
from pyspark.sql import functions as F

from groupcoord.pipeline.frames import ms
from groupcoord.pipeline.lag import topic_batches


@dataclass(frozen=True, kw_only=True, slots=True)
class BurrowConfig:
    """Burrow's evaluator settings: window of the last ``intervals`` commits, ``allowed_lag``."""

    intervals: int = 10
    allowed_lag: int = 0


def log_end_at(batches: DataFrame, now_ms: int) -> DataFrame:
    """(topic, partition) -> log-end offset at ``now_ms``."""
    b = topic_batches(batches).where(F.col("append_ms") <= F.lit(now_ms))
    return b.groupBy("topic", "partition").agg((F.max("last_offset") + 1).alias("current_log_end_offset"))


def partition_status(
    lag_df: DataFrame, batches: DataFrame, *, now_ms: int, config: BurrowConfig
) -> DataFrame:
    """Burrow's partition status over the last ``intervals`` commits of each group-partition.

    Window W (oldest first) of commits ordered by their position in ``__consumer_offsets``; each
    commit carries the lag at the time it was stored and the log-end offset then (Burrow's broker
    offset samples). Rules in Burrow's order: current lag <= allowed -> OK; stopped (time since the
    last commit > the window's span) and not caught up at any sample -> STOP; an offset went back and
    never recovered -> REWIND; lag never <= allowed in the window: all offsets equal -> STALL, lags
    never decreasing -> WARN; otherwise OK.
    """
    n = config.intervals
    allowed = config.allowed_lag
    # the last n commits by position in __consumer_offsets: row_number() <= n, which Spark turns
    # into a per-partition group limit before the shuffle (WindowGroupLimit), then collected
    key = ["group_id", "topic", "partition"]
    last_first = Window.partitionBy(*key).orderBy(F.col("log_offset").desc())
    recent = (
        lag_df.select(*key, "log_offset", "committed_offset", "time", "offset_lag", "log_end_offset")
        .withColumn("_rn", F.row_number().over(last_first))
        .where(F.col("_rn") <= n)
    )
    win = recent.groupBy(*key).agg(
        F.sort_array(
            F.collect_list(
                F.struct(
                    "log_offset",
                    F.col("committed_offset").alias("offset"),
                    ms("time").alias("t"),
                    F.col("offset_lag").alias("lag"),
                    F.col("log_end_offset").alias("leo"),
                )
            )
        ).alias("window")
    )
    win = win.join(log_end_at(batches, now_ms), ["topic", "partition"], "left")
    cnt = F.size("window")
    first = F.get(F.col("window"), 0)
    last = F.get(F.col("window"), cnt - 1)
    win = win.select(
        "*",
        last["offset"].alias("last_committed_offset"),
        F.greatest(F.col("current_log_end_offset") - last["offset"], F.lit(0)).alias("current_lag"),
        first["t"].alias("_t0"),
        last["t"].alias("_tn"),
    )
    idx = F.sequence(F.lit(1), F.greatest(cnt - 1, F.lit(1)))
    decreases = F.filter(
        idx,
        lambda i: (i < cnt) & (F.get(F.col("window"), i)["offset"] < F.get(F.col("window"), i - 1)["offset"]),
    )
    first_dec = F.get(decreases, 0)
    rewind = F.when(F.size(decreases) == 0, F.lit(False)).otherwise(
        ~F.exists(
            F.sequence(first_dec, cnt - 1),
            lambda j: F.get(F.col("window"), j)["offset"] >= F.get(F.col("window"), first_dec - 1)["offset"],
        )
    )
    stopped = (F.lit(now_ms) - F.col("_tn")) > (F.col("_tn") - F.col("_t0"))
    samples = F.concat(
        F.transform("window", lambda x: x["leo"]),
        F.array(F.col("current_log_end_offset")),
    )
    recent_zero = F.exists(samples, lambda b: b <= F.col("last_committed_offset"))
    lags = F.filter(F.transform("window", lambda x: x["lag"]), lambda v: v.isNotNull())
    lag_ever_ok = F.exists(lags, lambda v: v <= allowed)
    all_same = F.forall("window", lambda x: x["offset"] == first["offset"])
    lag_idx = F.sequence(F.lit(1), F.greatest(F.size(lags) - 1, F.lit(1)))
    never_decreasing = F.forall(
        lag_idx, lambda i: (i >= F.size(lags)) | (F.get(lags, i) >= F.get(lags, i - 1))
    )
    status = (
        F.when(F.coalesce(F.col("current_lag") <= allowed, F.lit(False)), F.lit("OK"))
        .when(stopped & ~F.coalesce(recent_zero, F.lit(False)), F.lit("STOP"))
        .when(rewind, F.lit("REWIND"))
        .when(~lag_ever_ok & all_same, F.lit("STALL"))
        .when(~lag_ever_ok & never_decreasing, F.lit("WARN"))
        .otherwise(F.lit("OK"))
    )
    out = win.withColumn("status", status)
    # Current time lag: how long the first unconsumed record has waited at `now` (the append time of
    # the batch holding the last committed offset). One chain (no self-join), so the window above is
    # computed once.
    b = (
        topic_batches(batches)
        .where(F.col("append_ms") <= F.lit(now_ms))
        .select(
            F.col("topic").alias("_bt"),
            F.col("partition").alias("_bp"),
            F.col("base_offset").alias("_bb"),
            F.col("last_offset").alias("_bl"),
            F.col("append_ms").alias("_ba"),
        )
    )
    holding = (
        (F.col("topic") == F.col("_bt"))
        & (F.col("partition") == F.col("_bp"))
        & (F.col("_bb") <= F.col("last_committed_offset"))
        & (F.col("_bl") >= F.col("last_committed_offset"))
    )
    out = (
        out.join(F.broadcast(b), holding, "left")
        .withColumn("_pending_since", F.min("_ba").over(Window.partitionBy(*key)))
        .drop("_bt", "_bp", "_bb", "_bl", "_ba")
        .dropDuplicates(key)
    )
    time_lag = F.when(F.coalesce(F.col("current_lag"), F.lit(0)) == 0, F.lit(0)).otherwise(
        F.greatest(F.lit(now_ms) - F.col("_pending_since"), F.lit(0))
    )
    return out.select(
        "group_id",
        "topic",
        "partition",
        "status",
        F.col("current_lag").cast("bigint").alias("current_lag"),
        time_lag.cast("bigint").alias("time_lag_ms"),
        "current_log_end_offset",
        "last_committed_offset",
        F.timestamp_millis(F.col("_tn")).alias("last_commit_time"),
        F.timestamp_millis(F.col("_t0")).alias("window_start"),
        (F.col("_tn") - F.col("_t0")).alias("window_span_ms"),
        cnt.alias("window_commits"),
        (cnt / F.lit(float(n))).alias("complete"),
        F.timestamp_millis(F.lit(now_ms)).alias("evaluated_at"),
        "window",
    )


def group_status(partitions: DataFrame) -> DataFrame:
    """Burrow's group status: the worst partition status, with STOP/STALL/REWIND reported as ERR."""
    rank = (
        F.when(F.col("status").isin("STOP", "STALL", "REWIND"), 3)
        .when(F.col("status") == "WARN", 2)
        .otherwise(1)
    )
    agg = partitions.groupBy("group_id").agg(
        F.max(rank).alias("_rank"),
        F.sum("current_lag").alias("total_lag"),
        F.max_by(
            F.struct("topic", "partition", "current_lag"),
            F.struct("current_lag", F.lit(0) - F.col("partition")),
        ).alias("_max"),
        F.count(F.lit(1)).alias("partition_count"),
        F.avg((F.col("complete") >= 1.0).cast("double")).alias("complete"),
        F.max("time_lag_ms").alias("max_time_lag_ms"),
        *[
            F.sum((F.col("status") == s).cast("int")).alias(f"{s.lower()}_partitions")
            for s in ("OK", "WARN", "STOP", "STALL", "REWIND")
        ],
    )
    return agg.select(
        "group_id",
        F.when(F.col("_rank") == 3, "ERR").when(F.col("_rank") == 2, "WARN").otherwise("OK").alias("status"),
        "total_lag",
        F.col("_max.topic").alias("max_lag_topic"),
        F.col("_max.partition").alias("max_lag_partition"),
        F.col("_max.current_lag").alias("max_lag"),
        "max_time_lag_ms",
        "partition_count",
        "complete",
        "ok_partitions",
        "warn_partitions",
        "stop_partitions",
        "stall_partitions",
        "rewind_partitions",
    )
