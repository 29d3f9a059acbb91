"""The pipeline's tables as pure ``DataFrame -> DataFrame`` functions.

Inputs are what the data sources produce (see :mod:`groupcoord.pipeline.source`): decoded
``__consumer_offsets`` rows, the raw ``__group_events`` records and the record-batch index of the
topics' own logs. Nothing here reads or writes files; :mod:`groupcoord.pipeline.analyze` does that.
Column meanings are documented in ``docs/pipeline.md``.
"""

from __future__ import annotations

import logging
import warnings
from collections.abc import Iterator
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from pyspark.sql import Column, DataFrame, Window
from pyspark.sql import functions as F

from groupcoord.pipeline import decoders

if TYPE_CHECKING:
    import pyarrow as pa

log = logging.getLogger(__name__)

STATUS_RANK = {"OK": 1, "WARN": 2, "ERR": 3, "STOP": 4, "STALL": 5, "REWIND": 6}
END_STATES = ("Stable", "Empty", "Dead")


@dataclass(frozen=True, kw_only=True, slots=True)
class BurrowConfig:
    """Burrow's evaluator settings: window of the last ``intervals`` commits, ``allowed_lag``."""

    intervals: int = 10
    allowed_lag: int = 0


@dataclass(frozen=True, kw_only=True, slots=True)
class StormConfig:
    """A storm: at least ``count`` rebalances of one group within ``minutes`` minutes."""

    count: int = 3
    minutes: float = 10.0


def _ms(c: Column | str) -> Column:
    return F.unix_millis(F.col(c) if isinstance(c, str) else c)


def within(df: DataFrame, column: str, since_ms: int | None, until_ms: int | None) -> DataFrame:
    """Rows whose ``column`` (a timestamp) lies in [since, until)."""
    if since_ms is not None:
        df = df.where(_ms(column) >= F.lit(since_ms))
    if until_ms is not None:
        df = df.where(_ms(column) < F.lit(until_ms))
    return df


# --------------------------------------------------------------------------- offsets topic


OFFSET_COMMITS_COLUMNS = (
    "group_id",
    "topic",
    "partition",
    "committed_offset",
    "leader_epoch",
    "metadata",
    "commit_time",
    "expire_time",
    "log_partition",
    "log_offset",
    "record_time",
)
#: the columns of the decoded records that :func:`offset_commits` reads
OFFSET_COMMITS_INPUT = (*OFFSET_COMMITS_COLUMNS, "record_type", "tombstone", "corrupt", "decode_error")


def offset_commits(offsets: DataFrame) -> DataFrame:
    """Every offset commit (tombstones, corrupt markers and undecodable rows left out)."""
    return offsets.where(
        (F.col("record_type") == decoders.OFFSET_COMMIT)
        & ~F.col("tombstone")
        & ~F.col("corrupt")
        & F.col("decode_error").isNull()
    ).select(*OFFSET_COMMITS_COLUMNS)


def group_generations(offsets: DataFrame) -> DataFrame:
    """One row per (group, generation): the last GroupMetadata record written for it."""
    gm = offsets.where(
        (F.col("record_type") == decoders.GROUP_METADATA)
        & ~F.col("tombstone")
        & ~F.col("corrupt")
        & F.col("generation").isNotNull()
    )
    w = Window.partitionBy("group_id", "generation").orderBy(F.col("log_offset").desc())
    return (
        gm.withColumn("_rn", F.row_number().over(w))
        .where(F.col("_rn") == 1)
        .select(
            "group_id",
            "generation",
            "protocol_type",
            "protocol",
            "leader",
            "state_time",
            "record_time",
            F.size("members").alias("member_count"),
            "members",
            "log_partition",
            "log_offset",
        )
    )


def owner_key(instance_id: Column, client_id: Column, client_host: Column) -> Column:
    """Who owns a partition across rejoins: the static instance id, else ``client_id@client_host``
    (member ids change on every dynamic rejoin, so they would count every rejoin as movement)."""
    return F.coalesce(instance_id, F.concat_ws("@", client_id, client_host))


def partition_ownership(generations: DataFrame) -> DataFrame:
    """(group, generation, topic, partition) -> owner, from the members' decoded assignments."""
    members = generations.select("group_id", "generation", F.explode("members").alias("m"))
    assigned = members.select(
        "group_id", "generation", "m", F.explode(F.coalesce(F.col("m.assignment"), F.array())).alias("a")
    )
    return assigned.select(
        "group_id",
        "generation",
        F.col("a.topic").alias("topic"),
        F.explode("a.partitions").alias("partition"),
        owner_key(F.col("m.group_instance_id"), F.col("m.client_id"), F.col("m.client_host")).alias("owner"),
        F.col("m.member_id").alias("member_id"),
        F.col("m.group_instance_id").alias("group_instance_id"),
        F.col("m.client_id").alias("client_id"),
        F.col("m.client_host").alias("client_host"),
    )


def partition_movement(generations: DataFrame, ownership: DataFrame) -> DataFrame:
    """Per (group, generation): partitions whose owner differs from the previous generation's
    (newly assigned and no-longer-assigned partitions count as moved), and the previous generation."""
    w = Window.partitionBy("group_id").orderBy("generation")
    gens = generations.select(
        "group_id", "generation", F.lag("generation").over(w).alias("previous_generation")
    )
    nxt = gens.where(F.col("previous_generation").isNotNull()).select(
        "group_id",
        F.col("previous_generation").alias("generation"),
        F.col("generation").alias("next_generation"),
    )
    before = ownership.join(nxt, ["group_id", "generation"]).select(
        "group_id",
        F.col("next_generation").alias("generation"),
        "topic",
        "partition",
        F.col("owner").alias("owner_before"),
    )
    after = ownership.select(
        "group_id", "generation", "topic", "partition", F.col("owner").alias("owner_after")
    )
    both = after.join(before, ["group_id", "generation", "topic", "partition"], "full_outer")
    moved = both.groupBy("group_id", "generation").agg(
        F.sum(F.when(~F.col("owner_before").eqNullSafe(F.col("owner_after")), 1).otherwise(0))
        .cast("int")
        .alias("partitions_moved"),
        F.count(F.col("owner_after")).cast("int").alias("partitions_assigned"),
    )
    return gens.join(moved, ["group_id", "generation"], "left").select(
        "group_id",
        "generation",
        "previous_generation",
        F.coalesce("partitions_moved", F.lit(0)).alias("partitions_moved"),
        F.coalesce("partitions_assigned", F.lit(0)).alias("partitions_assigned"),
    )


# --------------------------------------------------------------------------- group events


def group_events(records: DataFrame) -> DataFrame:
    """Typed group events from raw ``__group_events`` records (``kafka-log`` rows)."""
    schema = decoders.ddl(decoders.EVENT_COLUMNS)
    parsed = records.where(~F.col("corrupt") & F.col("value").isNotNull()).select(
        F.col("partition").alias("log_partition"),
        F.col("offset").alias("log_offset"),
        F.from_json(F.col("value").cast("string"), schema).alias("e"),
    )
    return parsed.where(F.col("e.group_id").isNotNull() & F.col("e.time_ms").isNotNull()).select(
        F.timestamp_millis(F.col("e.time_ms")).alias("time"),
        *[F.col(f"e.{name}").alias(name) for name, _ in decoders.EVENT_COLUMNS if name != "time_ms"],
        "log_partition",
        "log_offset",
    )


def cause(reason: Column, client_reason: Column) -> Column:
    """The rebalance cause: the coordinator's reason, except that a LeaveGroup the client sent
    because max.poll.interval.ms expired is reported as ``poll_timeout``."""
    return F.when(
        (reason == "member_left") & F.lower(F.coalesce(client_reason, F.lit(""))).contains("poll timeout"),
        F.lit("poll_timeout"),
    ).otherwise(reason)


def rebalances(events: DataFrame, generations: DataFrame, movement: DataFrame) -> DataFrame:
    """One row per rebalance: from a group's transition into PreparingRebalance out of Stable or
    Empty (its reason is the trigger) until it next reaches Stable, Empty or Dead. A return to
    PreparingRebalance from CompletingRebalance is an extra join round of the same rebalance."""
    sc = events.where(F.col("type") == "state_change").withColumn("t", _ms("time"))
    order = Window.partitionBy("group_id").orderBy("t", "log_offset")
    starts = (F.col("to_state") == "PreparingRebalance") & (
        F.col("from_state").isNull() | F.col("from_state").isin("Stable", "Empty")
    )
    sc = sc.withColumn("_start", starts.cast("int")).withColumn(
        "episode", F.sum("_start").over(order.rowsBetween(Window.unboundedPreceding, 0))
    )
    sc = sc.where(F.col("episode") > 0)
    ordkey = F.struct("t", "log_offset")
    is_end = F.col("to_state").isin(*END_STATES) & (F.col("_start") == 0)
    ep = sc.groupBy("group_id", "episode").agg(
        F.min_by(
            F.struct(
                "t",
                "reason",
                "client_reason",
                "member_id",
                "group_instance_id",
                "client_id",
                "generation",
                "member_count",
            ),
            F.when(F.col("_start") == 1, ordkey),
        ).alias("s"),
        F.min_by(
            F.struct("t", "to_state", "generation", "member_count", "log_offset"), F.when(is_end, ordkey)
        ).alias("e"),
        F.collect_list(F.struct("t", "log_offset", "to_state")).alias("_all"),
    )
    # Transitions after the end (e.g. Empty -> Dead) belong to no rebalance; count rounds and find
    # the last join completion strictly before the end.
    ep = ep.withColumn(
        "_before_end",
        F.filter(
            "_all",
            lambda x: (
                F.col("e").isNull()
                | (x["t"] < F.col("e.t"))
                | ((x["t"] == F.col("e.t")) & (x["log_offset"] < F.col("e.log_offset")))
            ),
        ),
    )
    ep = ep.select(
        "group_id",
        F.col("s.generation").alias("generation_before"),
        F.col("e.generation").alias("generation"),
        F.timestamp_millis(F.col("s.t")).alias("started_at"),
        F.array_max(
            F.transform(
                F.filter("_before_end", lambda x: x["to_state"] == "CompletingRebalance"), lambda x: x["t"]
            )
        ).alias("_join_t"),
        F.col("e.t").alias("_end_t"),
        F.col("s.t").alias("_start_t"),
        F.lower(F.coalesce(F.col("e.to_state"), F.lit("incomplete"))).alias("outcome"),
        F.col("s.reason").alias("trigger_reason"),
        cause(F.col("s.reason"), F.col("s.client_reason")).alias("cause"),
        F.col("s.client_reason").alias("trigger_client_reason"),
        F.col("s.member_id").alias("trigger_member_id"),
        owner_key(F.col("s.group_instance_id"), F.col("s.client_id"), F.lit(None).cast("string")).alias(
            "_trigger_owner"
        ),
        F.col("s.group_instance_id").alias("trigger_instance_id"),
        F.col("s.client_id").alias("trigger_client_id"),
        (F.size(F.filter("_before_end", lambda x: x["to_state"] == "PreparingRebalance")) - 1).alias(
            "extra_rounds"
        ),
        F.col("e.member_count").alias("_end_members"),
    ).drop("_trigger_owner")
    join_t = F.coalesce(F.col("_join_t"), F.when(F.col("outcome").isin("empty", "dead"), F.col("_end_t")))
    ep = ep.select(
        "*",
        F.timestamp_millis(join_t).alias("join_completed_at"),
        F.timestamp_millis(F.col("_end_t")).alias("completed_at"),
        (F.col("_end_t") - F.col("_start_t")).alias("duration_ms"),
        (join_t - F.col("_start_t")).alias("join_ms"),
        (F.col("_end_t") - join_t).alias("sync_ms"),
    )
    gens = generations.select("group_id", "generation", "member_count")
    mv = movement.select("group_id", "generation", "previous_generation", "partitions_moved")
    prev = gens.select(
        "group_id",
        F.col("generation").alias("previous_generation"),
        F.col("member_count").alias("members_before"),
    )
    out = (
        ep.join(gens, ["group_id", "generation"], "left")
        .join(mv, ["group_id", "generation"], "left")
        .join(prev, ["group_id", "previous_generation"], "left")
    )
    return out.select(
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
        "trigger_client_reason",
        "trigger_member_id",
        "trigger_instance_id",
        "trigger_client_id",
        F.when(F.col("previous_generation").isNull() & F.col("generation").isNotNull(), F.lit(0))
        .otherwise(F.col("members_before"))
        .cast("int")
        .alias("members_before"),
        F.coalesce(F.col("member_count"), F.col("_end_members")).cast("int").alias("members_after"),
        F.col("partitions_moved").cast("int").alias("partitions_moved"),
        "extra_rounds",
        "outcome",
    )


def rebalance_summary(rebalances_df: DataFrame, storms: StormConfig) -> DataFrame:
    """Per group: how many rebalances, p50/p95/max duration, counts by cause, and storms (runs of
    rebalances where at least ``storms.count`` started within ``storms.minutes``)."""
    span_ms = int(storms.minutes * 60_000)
    r = rebalances_df.withColumn("_t", _ms("started_at"))
    w = Window.partitionBy("group_id").orderBy("_t").rangeBetween(-(span_ms - 1), 0)
    r = r.withColumn("_in_window", F.count(F.lit(1)).over(w)).withColumn(
        "_storm", (F.col("_in_window") >= storms.count).cast("int")
    )
    w2 = Window.partitionBy("group_id").orderBy("_t", "completed_at")
    r = r.withColumn(
        "_storm_start",
        ((F.col("_storm") == 1) & (F.coalesce(F.lag("_storm").over(w2), F.lit(0)) == 0)).cast("int"),
    )
    by_cause = (
        r.groupBy("group_id", "cause")
        .agg(F.count(F.lit(1)).alias("n"))
        .groupBy("group_id")
        .agg(
            F.map_from_entries(
                F.sort_array(F.collect_list(F.struct(F.coalesce("cause", F.lit("unknown")), "n")))
            ).alias("by_cause")
        )
    )
    agg = r.groupBy("group_id").agg(
        F.count(F.lit(1)).alias("rebalances"),
        F.sum((F.col("outcome") != "incomplete").cast("int")).alias("completed"),
        F.expr("percentile(duration_ms, 0.5)").alias("p50_duration_ms"),
        F.expr("percentile(duration_ms, 0.95)").alias("p95_duration_ms"),
        F.max("duration_ms").alias("max_duration_ms"),
        F.sum("duration_ms").alias("total_duration_ms"),
        F.sum("partitions_moved").alias("partitions_moved"),
        F.sum("_storm_start").alias("storms"),
        F.max("_in_window").alias("max_rebalances_in_window"),
        F.min("started_at").alias("first_started_at"),
        F.max("started_at").alias("last_started_at"),
    )
    return agg.join(by_cause, "group_id", "left").select(
        "group_id",
        "rebalances",
        "completed",
        "p50_duration_ms",
        "p95_duration_ms",
        "max_duration_ms",
        "total_duration_ms",
        "partitions_moved",
        "by_cause",
        "storms",
        "max_rebalances_in_window",
        "first_started_at",
        "last_started_at",
    )


# --------------------------------------------------------------------------- lag


def topic_batches(batches: DataFrame) -> DataFrame:
    """The topics' record batches reduced to what lag needs: offsets and append time (ms)."""
    return batches.where(~F.col("corrupt")).select(
        "topic",
        "partition",
        "base_offset",
        "last_offset",
        _ms("max_timestamp").alias("append_ms"),
    )


LAG_DDL = (
    "group_id string, topic string, partition int, time timestamp, committed_offset bigint, "
    "log_end_offset bigint, offset_lag bigint, time_lag_ms bigint, log_offset bigint"
)


def lag(commits: DataFrame, batches: DataFrame) -> DataFrame:
    """Lag at every commit, exactly as :func:`lag_windowed` defines it, computed without a shuffle:
    the topics' batch index (one row per record batch, small) is collected once and each commit's
    log-end offset and pending-since time are as-of lookups in it (numpy ``searchsorted``) in an
    Arrow UDF that sees only (topic, partition, time, committed offset); the other columns stay in
    the JVM."""
    from pyspark.sql.pandas.functions import ArrowUDFType, arrow_udf

    from groupcoord.pipeline.lagmap import LAG_STRUCT, BatchIndex, lag_struct

    rows = topic_batches(batches).select("topic", "partition", "base_offset", "last_offset", "append_ms")
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
        lag_udf("topic", "partition", _ms("commit_time"), "committed_offset").alias("_lag"),
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
    )


def lag_mapped(commits: DataFrame, batches: DataFrame) -> DataFrame:
    """:func:`lag` as a ``mapInArrow`` over whole commit batches (every column goes through
    Python; kept for comparison — slower than the Arrow UDF)."""
    from groupcoord.pipeline.lagmap import BatchIndex, lag_batches

    rows = topic_batches(batches).select("topic", "partition", "base_offset", "last_offset", "append_ms")
    index = BatchIndex.from_arrow(rows.toArrow())
    c = commits.select("group_id", "topic", "partition", "commit_time", "committed_offset", "log_offset")

    def run(it: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        return lag_batches(index, it)

    return c.mapInArrow(run, LAG_DDL)


def lag_windowed(commits: DataFrame, batches: DataFrame) -> DataFrame:
    """Lag at every commit (the reference definition, with two window sorts; tests check
    :func:`lag` against it)."""
    return _lag_windowed(commits, batches)


def _lag_windowed(commits: DataFrame, batches: DataFrame) -> DataFrame:
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
        _ms("commit_time").alias("t"),
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
                    _ms("time").alias("t"),
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


def group_lag_series(lag_df: DataFrame, bucket_ms: int) -> DataFrame:
    """Per group and time bucket: total offset lag (sum over partitions of each partition's last
    lag in the bucket) and the worst time lag; what the report plots."""
    t = _ms("time")
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
