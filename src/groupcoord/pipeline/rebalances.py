"""Rebalance history as pure ``DataFrame -> DataFrame`` functions: commits, generations,
partition ownership and movement from ``__consumer_offsets``; rebalances and storms from
``__group_events``. Both group protocols: a classic group's rebalance is its way through
PreparingRebalance; a KIP-848 consumer group's is an epoch bump until its members have reconciled
(:func:`consumer_rebalances`, with partitions moved between target assignments from the
consumer-group records, :func:`consumer_target_ownership`); the ``rebalances`` table holds both,
keyed by ``protocol``.

Inputs are what the data sources produce (see :mod:`groupcoord.pipeline.source`); nothing here
reads or writes files (:mod:`groupcoord.pipeline.analyze` does). Column meanings are documented in
``docs/pipeline.md``.
"""

from __future__ import annotations

from dataclasses import dataclass

from pyspark.sql import Column, DataFrame, Window
from pyspark.sql import functions as F

from groupcoord.pipeline import decoders
from groupcoord.pipeline.frames import ms

#: Group states that end a rebalance.
END_STATES = ("Stable", "Empty", "Dead")
#: The ``protocol`` of a rebalance: the classic rebalance protocol (JoinGroup/SyncGroup) or the
#: consumer group protocol of KIP-848 (ConsumerGroupHeartbeat).
CLASSIC, CONSUMER = "classic", "consumer"


@dataclass(frozen=True, kw_only=True, slots=True)
class StormConfig:
    """A storm: at least ``count`` rebalances of one group within ``minutes`` minutes."""

    count: int = 3
    minutes: float = 10.0


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
    sc = events.where(F.col("type") == "state_change").withColumn("t", ms("time"))
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
        F.lit(CLASSIC).alias("protocol"),
        F.lit(True).alias("stop_the_world"),
        F.lit(None).cast("int").alias("members_affected"),
    )


# --------------------------------------------------------------------------- consumer groups


def consumer_members(offsets: DataFrame) -> DataFrame:
    """(group, member id) -> the member's instance id, client id and host: its last
    ConsumerGroupMemberMetadata record (one row per member; a tombstone does not erase what the
    member was)."""
    ok = ~F.col("corrupt") & F.col("decode_error").isNull()
    meta = offsets.where(
        ok & (F.col("record_type") == decoders.CG_MEMBER_METADATA) & ~F.col("tombstone")
    ).select(
        "group_id", F.col("leader").alias("member_id"), "log_offset", F.col("members").getItem(0).alias("m")
    )
    last = meta.groupBy("group_id", "member_id").agg(F.max_by("m", "log_offset").alias("m"))
    return last.select(
        "group_id",
        "member_id",
        F.col("m.group_instance_id").alias("group_instance_id"),
        F.col("m.client_id").alias("client_id"),
        F.col("m.client_host").alias("client_host"),
    )


def consumer_target_ownership(
    offsets: DataFrame, topic_names: DataFrame | None = None
) -> tuple[DataFrame, DataFrame]:
    """A KIP-848 consumer group's target assignment at each target assignment epoch, from its
    records: ``(generations, ownership)`` shaped as :func:`group_generations` and
    :func:`partition_ownership` are (``generation`` = the target assignment epoch), so
    :func:`partition_movement` counts the partitions that moved between two target assignments.

    Kafka writes a member's ConsumerGroupTargetAssignmentMember record only when its target changes,
    then the ConsumerGroupTargetAssignmentMetadata record with the new epoch; so the assignment at
    an epoch is each member's newest target record before that metadata record (a tombstone: the
    member left). Each member record is valid from the first metadata record after it up to the
    first one after the member's next record: numbering a group's metadata records in log order
    turns that into a range of numbers, and exploding the range gives the member's rows at each
    epoch directly (work linear in the rows produced; no join of every epoch with every earlier
    member record).

    ``owner`` is the member's static ``group.instance.id``, else its member id: a consumer-protocol
    member keeps its id for its whole life, and a static member that restarts is replaced under a
    new id with its assignment kept (Kafka's static member replacement), which is no movement.
    The records name topics by id; ``topic_names`` (``topic_id``, ``topic``) names them, and an id it
    does not know (a deleted topic) stays as its text.
    """
    ok = ~F.col("corrupt") & F.col("decode_error").isNull()
    meta = offsets.where(
        ok & (F.col("record_type") == decoders.CG_TARGET_METADATA) & ~F.col("tombstone")
    ).select("group_id", F.col("generation"), F.col("log_offset").alias("_offset"))
    last = Window.partitionBy("group_id", "generation").orderBy(F.col("_offset").desc())
    meta = meta.withColumn("_rn", F.row_number().over(last)).where(F.col("_rn") == 1).drop("_rn")
    members = offsets.where(ok & (F.col("record_type") == decoders.CG_TARGET_MEMBER)).select(
        "group_id",
        F.col("leader").alias("member_id"),
        "tombstone",
        F.col("log_offset").alias("_offset"),
        F.col("members").getItem(0).getField("assignment").alias("assignment"),
    )
    cols = ["group_id", "_offset", "generation", "member_id", "tombstone", "assignment"]
    both = meta.select(
        "group_id",
        "_offset",
        "generation",
        F.lit(None).cast("string").alias("member_id"),
        F.lit(False).alias("tombstone"),
        F.lit(None).cast(members.schema["assignment"].dataType).alias("assignment"),
    ).unionByName(
        members.select(*[c if c != "generation" else F.lit(None).cast("int").alias(c) for c in cols])
    )
    is_meta = F.col("member_id").isNull()
    in_log = Window.partitionBy("group_id").orderBy("_offset").rowsBetween(Window.unboundedPreceding, 0)
    # metadata records up to this row: a member record's first epoch is the next one's number
    both = both.withColumn("_metas", F.sum(is_meta.cast("int")).over(in_log))
    numbered = both.where(is_meta).select("group_id", F.col("_metas").alias("_n"), "generation")
    total = numbered.groupBy("group_id").agg(F.max("_n").alias("_total"))
    by_member = Window.partitionBy("group_id", "member_id").orderBy("_offset")
    spans = (
        both.where(~is_meta)
        .withColumn("_until", F.lead("_metas").over(by_member))
        .join(total, "group_id")
        .where(~F.col("tombstone"))
        .select(
            "group_id",
            "member_id",
            "assignment",
            (F.col("_metas") + 1).alias("_from"),
            F.coalesce("_until", "_total").alias("_to"),
        )
        .where(F.col("_from") <= F.col("_to"))
    )
    at = spans.select(
        "group_id", "member_id", "assignment", F.explode(F.sequence("_from", "_to")).alias("_n")
    ).join(numbered, ["group_id", "_n"])
    people = consumer_members(offsets)
    rows = (
        at.select(
            "group_id", "generation", "member_id", F.explode(F.coalesce("assignment", F.array())).alias("a")
        )
        .select(
            "group_id",
            "generation",
            "member_id",
            F.col("a.topic").alias("topic_id"),
            F.explode("a.partitions").alias("partition"),
        )
        .join(people, ["group_id", "member_id"], "left")
    )
    if topic_names is not None:
        rows = rows.join(F.broadcast(topic_names), "topic_id", "left")
    else:
        rows = rows.withColumn("topic", F.lit(None).cast("string"))
    ownership = rows.select(
        "group_id",
        "generation",
        F.coalesce("topic", "topic_id").alias("topic"),
        "partition",
        F.coalesce("group_instance_id", "member_id").alias("owner"),
        "member_id",
        "group_instance_id",
        "client_id",
        "client_host",
    )
    return numbered.select("group_id", "generation"), ownership


def consumer_members_affected(generations: DataFrame, ownership: DataFrame) -> DataFrame:
    """Per (group, target assignment epoch): how many members' target assignments changed from the
    previous epoch's (those that gained or lost a partition, a departed member included). The
    other members reconcile nothing: they keep consuming through the rebalance."""
    w = Window.partitionBy("group_id").orderBy("generation")
    gens = generations.select("group_id", "generation", F.lag("generation").over(w).alias("_previous"))
    nxt = gens.where(F.col("_previous").isNotNull()).select(
        "group_id", F.col("_previous").alias("generation"), F.col("generation").alias("_next")
    )
    before = ownership.join(nxt, ["group_id", "generation"]).select(
        "group_id", F.col("_next").alias("generation"), "topic", "partition", F.col("owner").alias("_before")
    )
    after = ownership.select("group_id", "generation", "topic", "partition", F.col("owner").alias("_after"))
    moved = after.join(before, ["group_id", "generation", "topic", "partition"], "full_outer").where(
        ~F.col("_before").eqNullSafe(F.col("_after"))
    )
    owners = moved.select(
        "group_id", "generation", F.explode(F.array_compact(F.array("_before", "_after"))).alias("_member")
    )
    counts = owners.groupBy("group_id", "generation").agg(F.countDistinct("_member").alias("_n"))
    return gens.join(counts, ["group_id", "generation"], "left").select(
        "group_id", "generation", F.coalesce("_n", F.lit(0)).cast("int").alias("members_affected")
    )


def consumer_rebalances(
    events: DataFrame, movement: DataFrame, affected: DataFrame | None = None
) -> DataFrame:
    """One row per epoch bump of a KIP-848 consumer group, in the columns of :func:`rebalances`.

    A consumer group's rebalance starts with its ``epoch_bump`` event (the coordinator computed a
    new target assignment; the bump's reason is the trigger) and lasts until every member has
    reconciled to it: the group's next state change to Stable, Empty or Dead. A bump after which
    the group stays Stable (no state change) was reconciled at once (duration 0); one overtaken by
    the next bump before the group was Stable is ``superseded`` (ended by that bump). There is no
    join or sync phase and no stop of the world: members keep consuming every partition they keep
    while others reconcile (``stop_the_world`` false; ``join_ms``/``sync_ms`` null). Partitions moved
    compare the target assignment at this epoch with the previous one
    (:func:`consumer_target_ownership`), ``members_affected`` counts the members whose target changed
    (:func:`consumer_members_affected`): the others reconcile nothing. Under Kafka 4.3's assignment
    batching a bump inside ``group.consumer.assignment.interval.ms`` gets no target of its own (the
    next computation covers it): such a bump, followed by a target, moved nothing and affected
    nobody (0, 0), and the moves are counted at the epoch whose target made them. A bump with no
    target after it (the last member left: an empty group gets none) keeps null."""
    bumped = events.where(F.col("type") == "epoch_bump").select("group_id").distinct()
    order = Window.partitionBy("group_id").orderBy("t", "log_offset")
    ev = events.join(bumped, "group_id", "left_semi").withColumn("t", ms("time"))
    # A bump caused by a leave or a fencing names no member: the member_removed event written just
    # before it, at the same time, does.
    removed = (F.lag("type").over(order) == "member_removed") & (F.lag("t").over(order) == F.col("t"))
    ev = ev.withColumn(
        "member_id",
        F.when(
            (F.col("type") == "epoch_bump") & F.col("member_id").isNull() & removed,
            F.lag("member_id").over(order),
        ).otherwise(F.col("member_id")),
    ).where(F.col("type").isin("epoch_bump", "state_change"))
    is_bump = F.col("type") == "epoch_bump"
    is_change = F.col("type") == "state_change"
    ev = ev.withColumn(
        "episode", F.sum(is_bump.cast("int")).over(order.rowsBetween(Window.unboundedPreceding, 0))
    ).withColumn(
        "_state_before",
        F.last(F.when(is_change, F.col("to_state")), ignorenulls=True).over(
            order.rowsBetween(Window.unboundedPreceding, -1)
        ),
    )
    ev = ev.where(F.col("episode") > 0)
    ordkey = F.struct("t", "log_offset")
    # a group's creation (no from_state: it is born Empty in the bump's own write) ends nothing
    is_end = is_change & F.col("from_state").isNotNull() & F.col("to_state").isin(*END_STATES)
    ep = ev.groupBy("group_id", "episode").agg(
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
                "_state_before",
            ),
            F.when(is_bump, ordkey),
        ).alias("s"),
        F.min_by(F.struct("t", "to_state", "member_count"), F.when(is_end, ordkey)).alias("e"),
        F.sum((is_change & F.col("from_state").isNotNull()).cast("int")).alias("_changes"),
    )
    by_episode = Window.partitionBy("group_id").orderBy("episode")
    ep = ep.withColumn("_next_t", F.lead("s.t").over(by_episode))
    at_once = F.col("e").isNull() & (F.col("_changes") == 0) & F.col("s._state_before").isin(*END_STATES)
    outcome = (
        F.when(F.col("e").isNotNull(), F.lower(F.col("e.to_state")))
        .when(at_once, F.lower(F.col("s._state_before")))
        .when(F.col("_next_t").isNotNull(), F.lit("superseded"))
        .otherwise(F.lit("incomplete"))
    )
    end_t = F.coalesce(F.col("e.t"), F.when(at_once, F.col("s.t")), F.col("_next_t"))
    members_after = F.coalesce(F.col("e.member_count"), F.col("s.member_count"))
    ep = ep.select(
        "group_id",
        "episode",
        F.col("s.generation").alias("generation"),
        F.col("s.t").alias("_start_t"),
        end_t.alias("_end_t"),
        outcome.alias("outcome"),
        F.col("s.reason").alias("trigger_reason"),
        F.col("s.member_id").alias("trigger_member_id"),
        F.col("s.group_instance_id").alias("trigger_instance_id"),
        F.col("s.client_id").alias("trigger_client_id"),
        members_after.alias("members_after"),
    ).withColumn("members_before", F.coalesce(F.lag("members_after").over(by_episode), F.lit(0)))
    mv = movement.select("group_id", "generation", "partitions_moved")
    # A leave's bump is written after the member is gone, so its event names only the member id:
    # the client id and instance id are those the member's earlier events carried.
    known = (
        events.where(F.col("member_id").isNotNull() & F.col("client_id").isNotNull())
        .groupBy("group_id", F.col("member_id").alias("trigger_member_id"))
        .agg(
            F.max_by("client_id", "log_offset").alias("_known_client_id"),
            F.max_by("group_instance_id", "log_offset").alias("_known_instance_id"),
        )
    )
    if affected is None:
        affected = movement.select(
            "group_id", "generation", F.lit(None).cast("int").alias("members_affected")
        )
    targeted = movement.groupBy("group_id").agg(F.max("generation").alias("_last_target"))
    out = (
        ep.join(mv, ["group_id", "generation"], "left")
        .join(
            affected.select("group_id", "generation", "members_affected"), ["group_id", "generation"], "left"
        )
        .join(targeted, "group_id", "left")
        .withColumn("partitions_moved", _zero_if_targeted("partitions_moved"))
        .withColumn("members_affected", _zero_if_targeted("members_affected"))
        .join(known, ["group_id", "trigger_member_id"], "left")
        .withColumn("trigger_client_id", F.coalesce("trigger_client_id", "_known_client_id"))
        .withColumn("trigger_instance_id", F.coalesce("trigger_instance_id", "_known_instance_id"))
    )
    return out.select(
        "group_id",
        "generation",
        F.timestamp_millis(F.col("_start_t")).alias("started_at"),
        F.lit(None).cast("timestamp").alias("join_completed_at"),
        F.timestamp_millis(F.col("_end_t")).alias("completed_at"),
        (F.col("_end_t") - F.col("_start_t")).alias("duration_ms"),
        F.lit(None).cast("bigint").alias("join_ms"),
        F.lit(None).cast("bigint").alias("sync_ms"),
        "trigger_reason",
        F.col("trigger_reason").alias("cause"),
        F.lit(None).cast("string").alias("trigger_client_reason"),
        "trigger_member_id",
        "trigger_instance_id",
        "trigger_client_id",
        F.col("members_before").cast("int").alias("members_before"),
        F.col("members_after").cast("int").alias("members_after"),
        F.col("partitions_moved").cast("int").alias("partitions_moved"),
        F.lit(0).alias("extra_rounds"),
        "outcome",
        F.lit(CONSUMER).alias("protocol"),
        F.lit(False).alias("stop_the_world"),
        F.col("members_affected").cast("int").alias("members_affected"),
    )


def _zero_if_targeted(column: str) -> Column:
    """``column``, or 0 for an epoch without a target of its own that a later target covers."""
    covered = F.col(column).isNull() & (F.col("generation") < F.col("_last_target"))
    return F.when(covered, F.lit(0)).otherwise(F.col(column))


def all_ownership(classic: DataFrame, consumer: DataFrame) -> DataFrame:
    """The ``partition_ownership`` table: a classic group's owners per generation
    (:func:`partition_ownership`) and a consumer group's target owners per target assignment epoch
    (:func:`consumer_target_ownership`), with the ``protocol`` each row comes from."""
    return classic.withColumn("protocol", F.lit(CLASSIC)).unionByName(
        consumer.withColumn("protocol", F.lit(CONSUMER))
    )


def all_movement(generations: DataFrame, cg_generations: DataFrame, ownership: DataFrame) -> DataFrame:
    """The ``partition_movement`` table: :func:`partition_movement` of each protocol's generations
    apart (a group upgraded from classic has both, numbered independently), with ``protocol``."""
    out = None
    for protocol, gens in ((CLASSIC, generations), (CONSUMER, cg_generations)):
        mine = ownership.where(F.col("protocol") == protocol)
        mv = partition_movement(gens.select("group_id", "generation"), mine).withColumn(
            "protocol", F.lit(protocol)
        )
        out = mv if out is None else out.unionByName(mv)
    assert out is not None
    return out


def all_rebalances(
    events: DataFrame, generations: DataFrame, movement: DataFrame, ownership: DataFrame
) -> DataFrame:
    """The ``rebalances`` table: classic rebalances (:func:`rebalances`) and consumer-group epoch
    bumps (:func:`consumer_rebalances`), from the two protocols' rows of ``movement`` and
    ``ownership`` (:func:`all_movement`, :func:`all_ownership`)."""
    cg_movement = movement.where(F.col("protocol") == CONSUMER)
    affected = consumer_members_affected(
        cg_movement.select("group_id", "generation"), ownership.where(F.col("protocol") == CONSUMER)
    )
    classic = rebalances(events, generations, movement.where(F.col("protocol") == CLASSIC))
    return classic.unionByName(consumer_rebalances(events, cg_movement, affected))


def rebalance_summary(rebalances_df: DataFrame, storms: StormConfig) -> DataFrame:
    """Per group: how many rebalances, p50/p95/max duration, counts by cause, and storms (runs of
    rebalances where at least ``storms.count`` started within ``storms.minutes``); how long the
    group stood still (``stopped_ms``: its classic rebalances' durations) and how many of its
    rebalances were consumer-protocol epoch bumps (``epoch_bumps``), which stop nobody."""
    span_ms = int(storms.minutes * 60_000)
    r = rebalances_df.withColumn("_t", ms("started_at"))
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
        F.coalesce(F.sum(F.when(F.col("stop_the_world"), F.col("duration_ms"))), F.lit(0)).alias(
            "stopped_ms"
        ),
        F.sum((F.col("protocol") == CONSUMER).cast("int")).alias("epoch_bumps"),
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
        "stopped_ms",
        "epoch_bumps",
        "partitions_moved",
        "by_cause",
        "storms",
        "max_rebalances_in_window",
        "first_started_at",
        "last_started_at",
    )
