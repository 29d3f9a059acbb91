"""Burrow's partition and group status rules, case by case, on hand-made lag windows."""

from __future__ import annotations

from typing import Any

import pytest

from groupcoord.pipeline import health

pytestmark = pytest.mark.spark

NOW = 1_000_000
LAG_DDL = (
    "group_id string, topic string, partition int, time timestamp, committed_offset bigint, "
    "log_end_offset bigint, offset_lag bigint, time_lag_ms bigint, log_offset bigint"
)
BATCH_DDL = (
    "topic string, partition int, base_offset bigint, last_offset bigint, record_count int, "
    "first_timestamp timestamp, max_timestamp timestamp, timestamp_type string, attributes int, "
    "size_bytes int, segment string, corrupt boolean, corrupt_reason string"
)

# (group, partition, current log-end offset, [(commit time ms, committed offset, log-end offset then)])
# Lag stored with each commit = max(log-end then - committed, 0). Every case runs with intervals=3
# and allowed_lag=0; the expected status is Burrow's, by the rule named in the comment.
CASES: list[tuple[str, int, int, list[tuple[int, int, int]], str]] = [
    # current lag 0 -> OK before any other rule, even though the window looks stalled
    ("g-ok", 0, 100, [(990_000, 100, 120), (995_000, 100, 130), (999_000, 100, 140)], "OK"),
    # lag was 0 inside the window -> rule 4 does not fire -> OK
    ("g-ok", 1, 80, [(990_000, 50, 55), (995_000, 60, 60), (999_000, 70, 75)], "OK"),
    # lag never 0 and never decreasing, offsets moving -> WARN
    ("g-warn", 0, 200, [(990_000, 100, 101), (995_000, 110, 112), (999_000, 120, 123)], "WARN"),
    # offsets went back (60 -> 40) but recovered to 60 later -> no REWIND; lags grow -> WARN
    ("g-warn", 1, 300, [(990_000, 60, 65), (995_000, 40, 50), (999_000, 60, 70)], "WARN"),
    # last commit 40 s ago, window spans 20 s, no sample <= last committed offset -> STOP
    ("g-stop", 0, 500, [(940_000, 300, 325), (950_000, 310, 335), (960_000, 320, 345)], "STOP"),
    # stopped the same way, but a sample (the log end at the first commit, 315) <= 320 -> not STOP;
    # lag was 0 at the first commit -> OK
    ("g-ok", 2, 500, [(940_000, 315, 315), (950_000, 318, 330), (960_000, 320, 340)], "OK"),
    # the same offset committed over and over with lag -> STALL
    ("g-stall", 0, 90, [(990_000, 42, 50), (995_000, 42, 60), (999_000, 42, 70)], "STALL"),
    # a single commit with lag, made just now (not stopped): offsets trivially all equal -> STALL
    ("g-stall", 1, 30, [(1_000_000, 10, 20)], "STALL"),
    # offsets went back (90 -> 70) and never returned to 90 -> REWIND
    ("g-rewind", 0, 400, [(990_000, 90, 95), (995_000, 70, 100), (999_000, 80, 110)], "REWIND"),
    # lag decreasing but never 0, offsets moving -> OK (neither STALL nor WARN)
    ("g-ok", 3, 700, [(990_000, 500, 600), (995_000, 560, 640), (999_000, 650, 700)], "OK"),
]


def _frames(spark: Any) -> tuple[Any, Any]:
    from datetime import UTC, datetime

    lag_rows = []
    batch_rows = []
    log_offset = 0
    for i, (group, _part, leo, commits, _) in enumerate(CASES):
        topic = f"t{i}"
        for t, off, leo_then in commits:
            log_offset += 1
            lag_rows.append(
                (
                    group,
                    topic,
                    0,
                    datetime.fromtimestamp(t / 1000, UTC),
                    off,
                    leo_then,
                    max(leo_then - off, 0),
                    0,
                    log_offset,
                )
            )
        ts = datetime.fromtimestamp(900, UTC)
        batch_rows.append((topic, 0, 0, leo - 1, leo, ts, ts, "CreateTime", 0, 100, "x.log", False, None))
    return spark.createDataFrame(lag_rows, LAG_DDL), spark.createDataFrame(batch_rows, BATCH_DDL)


def test_partition_status_follows_burrows_rules_for_every_status(spark: Any) -> None:
    lag_df, batches = _frames(spark)
    config = health.BurrowConfig(intervals=3, allowed_lag=0)
    got = {
        r["topic"]: r["status"]
        for r in health.partition_status(lag_df, batches, now_ms=NOW, config=config).collect()
    }
    expected = {f"t{i}": case[4] for i, case in enumerate(CASES)}
    assert got == expected


def test_window_keeps_only_the_last_intervals_commits(spark: Any) -> None:
    lag_df, batches = _frames(spark)
    config = health.BurrowConfig(intervals=2, allowed_lag=0)
    rows = {
        r["topic"]: r for r in health.partition_status(lag_df, batches, now_ms=NOW, config=config).collect()
    }
    # t1: with only the last two commits (lags 0 and 5) the lag is still 0 once -> OK
    assert [w["offset"] for w in rows["t1"]["window"]] == [60, 70]
    assert rows["t1"]["window_commits"] == 2
    assert rows["t1"]["complete"] == 1.0
    # t7 (one commit) is half complete with intervals=2
    assert rows["t7"]["complete"] == 0.5
    # t4 (STOP case) with the last two commits: span 10 s, silent 40 s, no sample <= 320 -> STOP
    assert rows["t4"]["status"] == "STOP"
    assert rows["t4"]["current_lag"] == 180


def test_allowed_lag_turns_small_lag_into_ok(spark: Any) -> None:
    lag_df, batches = _frames(spark)
    config = health.BurrowConfig(intervals=3, allowed_lag=80)
    got = {
        r["topic"]: r["status"]
        for r in health.partition_status(lag_df, batches, now_ms=NOW, config=config).collect()
    }
    # t2 WARN case: current lag 200 - 120 = 80 <= 80 -> OK; t6 STALL case: 90 - 42 = 48 -> OK
    assert got["t2"] == "OK"
    assert got["t6"] == "OK"
    # t4 STOP case: current lag 180 > 80 stays STOP
    assert got["t4"] == "STOP"


def test_group_status_is_err_for_stop_stall_rewind_warn_for_warn_else_ok(spark: Any) -> None:
    lag_df, batches = _frames(spark)
    config = health.BurrowConfig(intervals=3, allowed_lag=0)
    parts = health.partition_status(lag_df, batches, now_ms=NOW, config=config)
    got = {r["group_id"]: r.asDict() for r in health.group_status(parts).collect()}
    assert {g: r["status"] for g, r in got.items()} == {
        "g-ok": "OK",
        "g-warn": "WARN",
        "g-stop": "ERR",
        "g-stall": "ERR",
        "g-rewind": "ERR",
    }
    # g-ok: current lags t0 0, t1 10, t5 180, t9 50 -> total 240, max on t5
    assert got["g-ok"]["total_lag"] == 240
    assert got["g-ok"]["max_lag"] == 180
    assert got["g-ok"]["partition_count"] == 4
    assert got["g-ok"]["ok_partitions"] == 4
    assert got["g-stall"]["stall_partitions"] == 2
    assert got["g-warn"]["warn_partitions"] == 2
