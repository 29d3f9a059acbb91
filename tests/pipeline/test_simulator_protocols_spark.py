"""``simulate --protocol mixed`` analysed by the real local Spark: the ``rebalances`` table equals
the simulator's ground truth exactly, for the classic twins and the KIP-848 consumer twins alike.

For every rebalance the truth lists, exactly one row has its group, cause, trigger member and a
start inside the truth's window, with the group's protocol; no other row exists, and none starts in
a quiet window (a static member's restart). Partitions moved are checked against what the member
cores themselves saw (``simledger``: partitions processed by another member once the group settled
than before the disruption): for a classic group the pipeline compares two generations'
assignments, for a consumer group two target assignments (Kafka's
ConsumerGroupTargetAssignmentMember records), and both must give the ledger's number.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest

from groupcoord.pipeline.analyze import AnalyzeResult
from groupcoord.pipeline.compare import ALL, protocol_comparison
from groupcoord.pipeline.simulate import GroundTruth, SimulationConfig

pytestmark = pytest.mark.spark

#: the workload of the ``mixed_simulation`` fixture (conftest.py)
MIXED = SimulationConfig(
    groups=2, members=3, minutes=8, seed=3, partitions=4, offsets_partitions=5, protocol="mixed"
)


@pytest.fixture(scope="module")
def mixed(mixed_simulation: Any) -> tuple[GroundTruth, AnalyzeResult]:
    truth, result, config = mixed_simulation
    assert config == MIXED
    return truth, result


def _found(spark: Any, result: AnalyzeResult) -> list[dict[str, Any]]:
    rows = [
        r.asDict()
        for r in spark.read.parquet(str(result.out / "tables" / "rebalances"))
        .selectExpr(
            "group_id",
            "cause",
            "unix_millis(started_at) AS start_ms",
            "coalesce(trigger_instance_id, trigger_client_id) AS member",
            "trigger_reason",
            "protocol",
            "partitions_moved",
            "outcome",
        )
        .collect()
    ]
    for r in rows:
        # a consumer group's first epoch bump is its creation by the first member's heartbeat: the
        # event (and so the row) says group_created, the truth a member joining, as for classic
        if r["cause"] == "group_created":
            assert r["protocol"] == "consumer" and r["trigger_reason"] == "group_created"
            assert r["start_ms"] == min(x["start_ms"] for x in rows if x["group_id"] == r["group_id"])
            r["cause"] = "new_member_joined"
    return rows


def test_the_rebalances_table_is_the_ground_truth_for_both_protocols(spark: Any, mixed: Any) -> None:
    truth, result = mixed
    protocols = dict(truth.protocols)
    assert sorted(set(protocols.values())) == ["classic", "consumer"]
    found = _found(spark, result)
    assert len(found) == len(truth.rebalances)
    episodes = {(e.group_id, e.disruption, e.member, e.start_ms): e for e in truth.episodes}
    by_protocol = {"classic": 0, "consumer": 0}
    moved_checked = {"classic": 0, "consumer": 0}
    for t in truth.rebalances:
        matches = [
            f
            for f in found
            if f["group_id"] == t.group_id
            and f["cause"] == t.cause
            and f["member"] == t.member
            and t.earliest_start_ms <= f["start_ms"] <= t.latest_start_ms
        ]
        assert len(matches) == 1, (t, found)
        (row,) = matches
        protocol = protocols[t.group_id]
        assert row["protocol"] == protocol, (t, row)
        # members join a forming consumer group 100 ms apart: an epoch can be overtaken by the next
        # member's before everyone reconciled to it
        superseded = protocol == "consumer" and t.disruption == "initial_join"
        assert row["outcome"] in (("stable", "superseded") if superseded else ("stable",)), (t, row)
        by_protocol[protocol] += 1
        episode = episodes.get((t.group_id, t.disruption, t.member, t.earliest_start_ms))
        if episode is not None:
            assert row["partitions_moved"] == episode.moved, (t, row, episode)
            moved_checked[protocol] += 1
        elif t.disruption == "initial_join" and protocol == "classic":
            # the group's first generation: every partition is newly assigned
            assert row["partitions_moved"] == MIXED.partitions, (t, row)
    for q in truth.quiet:
        assert not [f for f in found if f["group_id"] == q.group_id and q.from_ms <= f["start_ms"] <= q.to_ms]
    # both twins saw the same disruptions; the consumer twins' formation is one epoch per member
    assert by_protocol["consumer"] == by_protocol["classic"] + MIXED.groups * (MIXED.members - 1)
    assert moved_checked["classic"] == moved_checked["consumer"] > 0
    # every consumer-group epoch (formation included) moved the partitions the coordinator core's
    # own target assignments say, epoch to epoch
    target_moves = {(g, e): n for g, e, n in truth.target_moves}
    epochs = spark.read.parquet(str(result.out / "tables" / "rebalances")).where("protocol = 'consumer'")
    consumer_rows = [r.asDict() for r in epochs.collect()]
    # (with Kafka 4.3's assignment batching, the default, a bump inside the interval has no target
    # of its own: it moved nothing, and the next computed target's row counts the moves)
    assert consumer_rows and set(target_moves) <= {(r["group_id"], r["generation"]) for r in consumer_rows}
    assert len(target_moves) < len(consumer_rows)  # some bumps were batched
    for r in consumer_rows:
        assert r["partitions_moved"] == target_moves.get((r["group_id"], r["generation"]), 0), r
    # the consumer group's first epoch gives its first member every partition
    for g in range(MIXED.groups):
        first = min((f for f in found if f["group_id"] == f"group-{g}-consumer"), key=lambda f: f["start_ms"])
        assert first["partitions_moved"] == MIXED.partitions


def test_consumer_groups_own_partitions_by_topic_name_beside_classic_ones(spark: Any, mixed: Any) -> None:
    """The consumer-group records name topics by id; the data directory's ``partition.metadata``
    files (Kafka's, written by the broker and the simulator) name them, so both protocols' groups
    show their partitions by topic name. A consumer group's owner at each target assignment epoch
    is the static instance id, else the member id."""
    truth, result = mixed
    tables = result.out / "tables"
    own = [r.asDict() for r in spark.read.parquet(str(tables / "partition_ownership")).collect()]
    protocols = dict(truth.protocols)
    for group_id, protocol in protocols.items():
        mine = [r for r in own if r["group_id"] == group_id]
        assert mine, group_id
        assert {r["protocol"] for r in mine} == {protocol}
        # topic-N-classic for group-N-classic, topic-N-consumer for group-N-consumer
        assert {r["topic"] for r in mine} == {group_id.replace("group-", "topic-")}
        for gen in {r["generation"] for r in mine}:
            parts = sorted(r["partition"] for r in mine if r["generation"] == gen)
            assert parts == list(range(MIXED.partitions)), (group_id, gen, parts)  # each once
        if protocol == "consumer":
            for r in mine:
                assert r["owner"] == (r["group_instance_id"] or r["member_id"]), r
                assert r["client_id"].startswith(f"{group_id}-"), r
    # partition_movement holds both protocols' generations; the rebalances take their counts
    movement = {
        (r["group_id"], r["generation"], r["protocol"]): r["partitions_moved"]
        for r in spark.read.parquet(str(tables / "partition_movement")).collect()
    }
    rebalances = spark.read.parquet(str(tables / "rebalances")).collect()
    consumer_rows = [r for r in rebalances if r["protocol"] == "consumer"]
    assert consumer_rows
    for r in consumer_rows:  # a batched bump (no target of its own) moved nothing
        assert movement.get((r["group_id"], r["generation"], "consumer"), 0) == r["partitions_moved"], r


def test_the_report_sets_the_two_protocols_side_by_side(spark: Any, mixed: Any) -> None:
    truth, result = mixed
    rb = spark.read.parquet(str(result.out / "tables" / "rebalances")).toPandas()
    table = protocol_comparison(rb)
    overall = {r["protocol"]: r for _, r in table[table["cause"] == ALL].iterrows()}
    protocols = dict(truth.protocols)
    for protocol in ("classic", "consumer"):
        assert overall[protocol]["rebalances"] == len(
            [t for t in truth.rebalances if protocols[t.group_id] == protocol]
        )
    # KIP-848: nobody stops; every classic rebalance after the first stops the members it keeps
    assert (overall["consumer"]["members_stopped"], overall["consumer"]["group_stopped_ms"]) == (0, 0)
    assert overall["classic"]["members_stopped"] > 0 and overall["classic"]["group_stopped_ms"] > 0
    assert overall["consumer"]["members_reconciling"] > 0
    html = Path(result.report).read_text()
    section = re.search(r"<section id='protocols'>(.*?)</section>", html, re.S)
    assert section is not None
    body = section.group(1)
    assert "<a href='#protocols'>" in html
    # one row per (cause, protocol) and per protocol, each with its count
    assert body.count("<tr>") == len(table) + 1
    for _, r in table.iterrows():
        cells = f"<td>{r['cause']}</td><td>{r['protocol']}</td><td data-v='{r['rebalances']}' class='num'>"
        assert cells in body, cells
