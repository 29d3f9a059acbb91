"""The retention decision on its own (``storage/retention.py``), over real segment files.

Kafka: ``UnifiedLog.deleteOldSegments`` applies ``deleteLogStartOffsetBreachedSegments``,
``deleteRetentionMsBreachedSegments`` and ``deleteRetentionSizeBreachedSegments``, each to a run
of the oldest segments and never to the active one (``UnifiedLogTest.testSizeBasedLogRetention``,
``testTimeBasedLogRetention``, ``testLogDeletionAfterDeleteRecords``). The deleting itself is
``tests/storage/test_partition_log.py``'s.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from groupcoord.formats.batch import build_batch
from groupcoord.storage.log_config import LogConfig
from groupcoord.storage.retention import segments_to_delete
from groupcoord.storage.segment import Segment

T0 = 1_700_000_000_000


def make_segments(directory: Path, newest: list[int]) -> list[Segment]:
    """Segments of two one-record batches each at bases 0, 2, 4, ... (the last is active), the
    records of segment ``i`` stamped ``newest[i]``."""
    segs = []
    for i, ts in enumerate(newest):
        seg = Segment(directory, 2 * i, T0)
        for k in range(2):
            data = build_batch([(b"k", b"v", ())], base_offset=2 * i + k, timestamp_ms=ts)
            seg.append(memoryview(data), [(0, len(data), 2 * i + k, ts)], 4096)
        segs.append(seg)
    return segs


@pytest.fixture
def segments(tmp_path: Path) -> Iterator[list[Segment]]:
    """Four segments (bases 0, 2, 4, 6); segment ``i``'s records are stamped ``T0 + 100 * i``."""
    segs = make_segments(tmp_path, [T0, T0 + 100, T0 + 200, T0 + 300])
    yield segs
    for seg in segs:
        seg.close()


def test_nothing_goes_within_every_limit(segments: list[Segment]) -> None:
    assert segments_to_delete(segments, 0, LogConfig(retention_ms=1000), T0 + 1000) == 0


def test_age_deletes_the_oldest_run_only_past_retention_ms(segments: list[Segment]) -> None:
    config = LogConfig(retention_ms=1000)
    assert segments_to_delete(segments, 0, config, T0 + 100 + 1000) == 1  # segment 1 is exactly 1000 old
    assert segments_to_delete(segments, 0, config, T0 + 100 + 1001) == 2
    assert segments_to_delete(segments, 0, config, T0 + 10**9) == 3  # never the active segment


def test_size_deletes_while_the_rest_stays_at_retention_bytes(segments: list[Segment]) -> None:
    size = segments[0].size
    config = LogConfig(retention_ms=-1, retention_bytes=2 * size + 1)
    assert segments_to_delete(segments, 0, config, T0) == 1  # three segments would be under the limit
    assert segments_to_delete(segments, 0, LogConfig(retention_ms=-1, retention_bytes=0), T0) == 3


def test_the_log_start_deletes_segments_below_it_even_under_compact_only(segments: list[Segment]) -> None:
    compact = LogConfig(cleanup_policy="compact", retention_ms=0, retention_bytes=0)
    assert segments_to_delete(segments, 3, compact, T0 + 10**9) == 1  # offset 3 is inside segment 2
    assert segments_to_delete(segments, 4, compact, T0 + 10**9) == 2
    assert segments_to_delete(segments, 0, compact, T0 + 10**9) == 0


def test_the_age_rule_runs_on_from_where_the_log_start_rule_stopped(tmp_path: Path) -> None:
    # segment 0 is young, segment 1 old: age alone deletes nothing (the run starts at the oldest),
    # but once the log start (offset 2) has taken segment 0, segment 1 goes by age as well (Kafka,
    # whose log start rule runs last, gets there one retention check later).
    segs = make_segments(tmp_path, [T0 + 5000, T0, T0 + 5000, T0 + 5000])
    try:
        config = LogConfig(retention_ms=1000)
        assert segments_to_delete(segs, 0, config, T0 + 2000) == 0
        assert segments_to_delete(segs, 2, config, T0 + 2000) == 2
    finally:
        for seg in segs:
            seg.close()
