"""The two protocols side by side (``pipeline/compare.py``) and the topic names a data directory
gives the consumer-group records' topic ids (``segments.topic_names_by_id``). No Spark."""

from __future__ import annotations

import uuid
from pathlib import Path

import pandas as pd

from groupcoord.clock import ManualClock
from groupcoord.pipeline.compare import ALL, has_both_protocols, markdown_table, protocol_comparison
from groupcoord.pipeline.datadir import DataDirWriter
from groupcoord.pipeline.segments import topic_names_by_id
from groupcoord.storage.log_config import LogConfig
from groupcoord.storage.manager import LogManager


def _rebalances() -> pd.DataFrame:
    cols = [
        "group_id",
        "cause",
        "protocol",
        "stop_the_world",
        "members_before",
        "members_after",
        "members_affected",
        "partitions_moved",
        "duration_ms",
        "outcome",
    ]
    rows = [
        ("k", "new_member_joined", "classic", True, 0, 2, None, 4, 3000, "stable"),
        ("k", "new_member_joined", "classic", True, 2, 3, None, 3, 1000, "stable"),
        ("k", "member_left", "classic", True, 3, 2, None, 2, 500, "stable"),
        ("c", "group_created", "consumer", False, 0, 1, 1, 4, 0, "stable"),
        ("c", "new_member_joined", "consumer", False, 1, 2, 2, 2, 3000, "stable"),
        ("c", "new_member_joined", "consumer", False, 2, 3, 2, 1, 3000, "stable"),
        ("c", "member_left", "consumer", False, 3, 2, 2, 1, 2000, "stable"),
        ("c", "member_left", "consumer", False, 2, 1, None, None, 4000, "incomplete"),
    ]
    return pd.DataFrame(rows, columns=cols)


def test_each_protocol_and_cause_gets_its_counts_and_times() -> None:
    rb = _rebalances()
    assert has_both_protocols(rb) and not has_both_protocols(rb[rb["protocol"] == "classic"])
    table = protocol_comparison(rb)
    got = {(r["cause"], r["protocol"]): r.to_dict() for _, r in table.iterrows()}
    assert list(table["cause"][:2]) == [ALL, ALL]
    classic = got[(ALL, "classic")]
    # members stopped: present before and after each classic rebalance (0 + 2 + 2)
    assert (classic["rebalances"], classic["members_stopped"], classic["partitions_moved"]) == (3, 4, 9)
    assert classic["members_reconciling"] is None or pd.isna(classic["members_reconciling"])
    assert (classic["median_reconcile_ms"], classic["max_reconcile_ms"], classic["group_stopped_ms"]) == (
        1000.0,
        3000,
        4500,
    )
    consumer = got[(ALL, "consumer")]
    assert (consumer["rebalances"], consumer["members_stopped"], consumer["group_stopped_ms"]) == (5, 0, 0)
    assert (consumer["members_reconciling"], consumer["partitions_moved"]) == (7, 8)
    # the incomplete leave gives no time
    assert (consumer["median_reconcile_ms"], consumer["max_reconcile_ms"]) == (2500.0, 3000)
    joins = got[("new_member_joined", "consumer")]
    assert (joins["rebalances"], joins["median_partitions_moved"]) == (2, 1.5)
    assert sorted(got) == sorted(
        [
            (ALL, "classic"),
            (ALL, "consumer"),
            ("group_created", "consumer"),
            ("member_left", "classic"),
            ("member_left", "consumer"),
            ("new_member_joined", "classic"),
            ("new_member_joined", "consumer"),
        ]
    )
    md = markdown_table(table)
    assert md.splitlines()[2] == "| (all) | classic | 3 | 4 | - | 9 | 3 | 1000 | 3000 | 4500 |"
    assert len(md.splitlines()) == len(table) + 2


def test_topic_ids_are_named_from_the_registry_and_the_partition_metadata_files(tmp_path: Path) -> None:
    """The broker's topic registry (``__topics.json``, written by the storage layer) and Kafka's
    ``partition.metadata`` files (written by the simulator's writer as by the broker) both name
    topic ids; a deleted topic's id is no longer named."""
    manager = LogManager.open(tmp_path, LogConfig(), ManualClock(0))
    orders = manager.create_topic("orders", 2, {})
    gone = manager.create_topic("gone", 1, {})
    manager.delete_topic("gone")
    manager.close()
    simulated = uuid.UUID("8a16daf4-757a-4786-b53a-3ecef484a25f")
    writer = DataDirWriter(tmp_path, offsets_partitions=1, events_partitions=1)
    writer.create_topic("topic-0-consumer", 3, simulated)
    writer.close()
    names = topic_names_by_id(tmp_path)
    assert names[str(orders.topic_id)] == "orders"
    assert names[str(simulated)] == "topic-0-consumer"
    assert str(gone.topic_id) not in names


def test_the_reports_movements_compare_each_protocols_generations_apart() -> None:
    """A group upgraded from classic to the consumer protocol has classic generations and target
    assignment epochs; the report pairs each with the previous one of its own protocol."""
    from groupcoord.pipeline.report import partition_moves

    own = pd.DataFrame(
        [
            (1, "t", 0, "a", "classic"),
            (1, "t", 1, "a", "classic"),
            (2, "t", 0, "a", "classic"),
            (2, "t", 1, "b", "classic"),
            (3, "t", 0, "c", "consumer"),
            (3, "t", 1, "c", "consumer"),
            (4, "t", 0, "c", "consumer"),
            (4, "t", 1, "d", "consumer"),
        ],
        columns=["generation", "topic", "partition", "owner", "protocol"],
    )
    moves = partition_moves(own)
    assert [tuple(r) for r in moves.itertuples(index=False)] == [(2, "t", 1, "a", "b"), (4, "t", 1, "c", "d")]
