"""min.compaction.lag.ms: no record is compacted away for a newer one still inside the lag.

Kafka's ``LogCleanerManager.cleanableOffsets``: the first uncleanable offset is the base of the
first segment whose largest timestamp is newer than ``now - min.compaction.lag.ms``; the pass
cleans only below it, and builds its key map only from there (``LogCleanerManagerTest
.testCleanableOffsetsForTime``: segments written at t0 are cleanable, the first one written at t1
starts the uncleanable part).
"""

from __future__ import annotations

from pathlib import Path

from test_log_compaction import contents, put

from groupcoord.clock import ManualClock
from groupcoord.config import BrokerConfig
from groupcoord.storage.log import PartitionLog
from groupcoord.storage.log_config import TOPIC_CONFIGS, LogConfig, log_config_for

T0 = 1_700_000_000_000
LAG = 60_000


def test_a_young_segment_stops_the_pass_and_its_records_shadow_nothing_until_they_age(tmp_path: Path) -> None:
    plog, _ = PartitionLog.open(
        tmp_path / "c-0",
        # One batch per segment: each ~70-byte batch rolls the next.
        LogConfig(cleanup_policy="compact", segment_bytes=100, min_compaction_lag_ms=LAG),
        ManualClock(T0),
    )
    try:
        put(plog, ("a", "a1"), ts=T0)  # 0
        put(plog, ("b", "b1"), ts=T0)  # 1
        put(plog, ("a", "a2"), ts=T0 + 30_000)  # 2: inside the lag until T0 + 90 s
        put(plog, ("b", "b2"), ts=T0)  # 3: old, but after the young segment
        put(plog, ("c", "c1"), ts=T0)  # 4: the active segment, never cleaned
        assert plog.segment_base_offsets() == [0, 1, 2, 3, 4]
        everything = [
            (0, b"a", b"a1"),
            (1, b"b", b"b1"),
            (2, b"a", b"a2"),
            (3, b"b", b"b2"),
            (4, b"c", b"c1"),
        ]

        report = plog.compact(T0 + 89_999)
        assert (report.records_removed, report.segments_cleaned) == (0, 0)
        assert contents(plog) == everything

        # The next pass at the same time is skipped; at T0 + 90 s segment 2 leaves the lag.
        assert plog.compact(T0 + 89_999).skipped
        report = plog.compact(T0 + 90_000)
        assert report.records_removed == 2
        assert contents(plog) == [(2, b"a", b"a2"), (3, b"b", b"b2"), (4, b"c", b"c1")]
    finally:
        plog.close()


def test_without_a_lag_the_same_log_is_compacted_at_once(tmp_path: Path) -> None:
    plog, _ = PartitionLog.open(
        tmp_path / "c-0", LogConfig(cleanup_policy="compact", segment_bytes=100), ManualClock(T0)
    )
    try:
        put(plog, ("a", "a1"), ts=T0)
        put(plog, ("b", "b1"), ts=T0)
        put(plog, ("a", "a2"), ts=T0 + 30_000)
        put(plog, ("b", "b2"), ts=T0)
        put(plog, ("c", "c1"), ts=T0)
        assert plog.compact(T0).records_removed == 2
    finally:
        plog.close()


def test_the_lag_comes_from_the_topic_config_or_the_broker_default() -> None:
    """``min.compaction.lag.ms`` (topic) over ``log.cleaner.min.compaction.lag.ms`` (broker),
    Kafka's synonym pair; DescribeConfigs' default follows the broker's value."""
    broker = BrokerConfig.load(None, ["log.cleaner.min.compaction.lag.ms=7000"])
    assert log_config_for(broker).min_compaction_lag_ms == 7000
    assert (
        log_config_for(broker).with_overrides({"min.compaction.lag.ms": "5000"}).min_compaction_lag_ms == 5000
    )
    assert LogConfig().min_compaction_lag_ms == 0
    assert TOPIC_CONFIGS["min.compaction.lag.ms"].default(broker) == "7000"
