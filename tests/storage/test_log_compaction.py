"""Compaction: latest record per key, tombstones, offsets preserved, concurrency with appends."""

from __future__ import annotations

import threading
from pathlib import Path
from typing import Any

from groupcoord.clock import ManualClock
from groupcoord.formats.batch import build_batch as _build
from groupcoord.formats.batch import decode_records, parse_header
from groupcoord.storage.log import PartitionLog
from groupcoord.storage.log_config import LogConfig

T0 = 1_700_000_000_000
DAY = 86_400_000


def put(plog: PartitionLog, *pairs: tuple[str, str | None], ts: int = T0, compression: int = 0) -> int:
    records = [(k.encode(), None if v is None else v.encode(), ()) for k, v in pairs]
    return plog.append(_build(records, timestamp_ms=ts, compression=compression)).base_offset


def contents(plog: PartitionLog) -> list[tuple[int, bytes | None, bytes | None]]:
    out = []
    for _h, raw in plog.iter_batches_from(0):
        out += [(r.offset, r.key, r.value) for r in decode_records(raw)]
    return out


def compacted_log(tmp_path: Path) -> PartitionLog:
    plog, _ = PartitionLog.open(
        tmp_path / "c-0",
        LogConfig(cleanup_policy="compact", segment_bytes=250, delete_retention_ms=DAY),
        ManualClock(T0),
    )
    return plog


def test_compaction_keeps_the_latest_record_per_key_at_its_original_offset(tmp_path: Path) -> None:
    plog = compacted_log(tmp_path)
    put(plog, ("a", "a1"), ("b", "b1"), ("c", "c1"))  # 0-2
    put(plog, ("a", "a2"), ("b", "b2"), compression=1)  # 3-4
    put(plog, ("c", "c2"), ("d", "d1"), compression=3)  # 5-6
    put(plog, ("a", "a3"))  # 7
    put(plog, ("e", "e1"))  # 8
    put(plog, ("a", "a4"))  # 9, active segment
    assert plog.segment_count >= 3
    bases_before = plog.segment_base_offsets()
    report = plog.compact(T0)
    assert report.records_removed == 4  # a1, b1, c1, a2
    assert report.tombstones_removed == 0
    assert report.bytes_after < report.bytes_before
    assert contents(plog) == [
        (4, b"b", b"b2"),
        (5, b"c", b"c2"),
        (6, b"d", b"d1"),
        (7, b"a", b"a3"),  # superseded only by the active segment, which is never cleaned
        (8, b"e", b"e1"),
        (9, b"a", b"a4"),
    ]
    assert plog.segment_base_offsets() == bases_before
    assert (plog.log_start_offset, plog.log_end_offset) == (0, 10)
    # Reading a removed offset returns the next batch holding later offsets.
    assert [r.offset for r in decode_records(plog.read(0, 1).data)] == [4]
    # The rewritten batch keeps its span and codec.
    header = parse_header(plog.read(3, 1).data)
    assert (header.base_offset, header.last_offset, header.record_count, header.compression) == (3, 4, 1, 1)
    assert plog.compact(T0).skipped
    put(plog, ("f", "f1"))  # lands in the active segment: still nothing to clean
    assert plog.compact(T0).skipped
    segments = plog.segment_count
    while plog.segment_count == segments:
        put(plog, ("g", "g1"))
    assert not plog.compact(T0).skipped  # a segment rolled: the next pass runs again


def test_tombstones_stay_for_delete_retention_then_go(tmp_path: Path) -> None:
    plog = compacted_log(tmp_path)
    put(plog, ("a", "a1"), ("b", "b1"))  # 0-1
    put(plog, ("a", None))  # 2: tombstone for a
    put(plog, ("b", "b2"))  # 3
    put(plog, ("z", "z1"))  # 4 (active by the end)
    put(plog, ("z", "z2"))
    first = plog.compact(T0 + DAY - 1)
    assert (first.records_removed, first.tombstones_removed) == (2, 0)
    assert [(o, k, v) for o, k, v in contents(plog) if k != b"z"] == [(2, b"a", None), (3, b"b", b"b2")]
    # Nothing rolled and the tombstone has not expired yet: the next pass is skipped.
    assert plog.compact(T0 + DAY).skipped
    second = plog.compact(T0 + DAY + 1)
    assert not second.skipped
    assert (second.records_removed, second.tombstones_removed) == (1, 1)
    assert plog.compact(T0 + 10 * DAY).skipped
    assert [(o, k, v) for o, k, v in contents(plog) if k != b"z"] == [(3, b"b", b"b2")]


def test_compacted_log_reopens_with_the_same_contents(tmp_path: Path) -> None:
    plog = compacted_log(tmp_path)
    for i in range(40):
        put(plog, (f"k{i % 4}", f"v{i}"), ts=T0 + i)
    plog.compact(T0 + 100)
    expected = contents(plog)
    assert len(expected) < 40
    plog.close()
    again, report = PartitionLog.open(
        tmp_path / "c-0", LogConfig(cleanup_policy="compact", segment_bytes=250), ManualClock(T0)
    )
    assert (report.indexes_rebuilt, report.truncated_bytes) == (0, 0)
    assert contents(again) == expected
    assert again.log_end_offset == 40


def test_delete_policy_logs_are_not_compacted(tmp_path: Path) -> None:
    plog, _ = PartitionLog.open(tmp_path / "d-0", LogConfig(segment_bytes=100), ManualClock(T0))
    for _ in range(5):
        put(plog, ("a", "same"))
    assert plog.compact(T0).segments_cleaned == 0
    assert len(contents(plog)) == 5


def test_compaction_in_a_worker_thread_while_the_owner_appends(tmp_path: Path) -> None:
    plog, _ = PartitionLog.open(
        tmp_path / "c-0", LogConfig(cleanup_policy="compact", segment_bytes=2000), ManualClock(T0)
    )
    for i in range(300):
        put(plog, (f"k{i % 10}", f"v{i}"))
    done = threading.Event()
    reports = []

    def worker() -> None:
        while not done.is_set():
            reports.append(plog.compact(T0))

    thread = threading.Thread(target=worker)
    thread.start()
    try:
        for i in range(300, 1300):
            put(plog, (f"k{i % 10}", f"v{i}"))
            if i % 100 == 0:
                assert plog.read(plog.log_end_offset - 1, 100).data
    finally:
        done.set()
        thread.join()
    plog.compact(T0)
    final = contents(plog)
    assert plog.log_end_offset == 1300
    offsets = [o for o, _k, _v in final]
    assert offsets == sorted(offsets)
    latest = {k: (o, v) for o, k, v in final}
    assert latest == {f"k{j}".encode(): (1290 + j, f"v{1290 + j}".encode()) for j in range(10)}
    assert sum(r.segments_cleaned for r in reports) > 0


def test_a_segment_emptied_by_compaction_stays_readable_and_reopens(tmp_path: Path) -> None:
    config = LogConfig(cleanup_policy="compact", segment_bytes=100, delete_retention_ms=0)
    plog, _ = PartitionLog.open(tmp_path / "c-0", config, ManualClock(T0))
    put(plog, ("a", "1"), ("b", "1"))  # 0-1
    put(plog, ("a", "2"), ("b", "2"))  # 2-3
    put(plog, ("a", "3"), ("b", "3"))  # 4-5
    put(plog, ("c", "1"))  # 6 (active)
    assert plog.segment_base_offsets() == [0, 2, 4, 6]
    report = plog.compact(T0)
    assert (report.segments_cleaned, report.records_removed) == (2, 4)
    assert (tmp_path / "c-0" / "00000000000000000000.log").stat().st_size == 0
    assert (tmp_path / "c-0" / "00000000000000000002.log").stat().st_size == 0
    assert [r.offset for r in decode_records(plog.read(0, 1).data)] == [4, 5]
    assert plog.log_start_offset == 0
    plog.close()
    for marker in (True, False):
        if not marker:
            (tmp_path / "c-0" / ".clean_shutdown").unlink()
        again, report2 = PartitionLog.open(tmp_path / "c-0", config, ManualClock(T0))
        assert (report2.truncated_bytes, report2.indexes_rebuilt, again.log_end_offset) == (0, 0, 7)
        assert again.segment_base_offsets() == [0, 2, 4, 6]
        assert [o for o, _k, _v in contents(again)] == [4, 5, 6]
        assert [r.offset for r in decode_records(again.read(1, 1).data)] == [4, 5]
        if marker:
            again.close()


def test_a_segment_rolled_while_a_pass_runs_is_cleaned_by_the_next_pass(tmp_path: Path) -> None:
    """A pass that saw segments A..B must not mark a segment rolled during it as clean: the
    next pass cleans it (Kafka's cleaner checkpoints only the offsets it actually cleaned,
    ``LogCleanerManager.doneCleaning``). Seen as a broker whose __consumer_offsets stopped being
    compacted when commits rolled a segment in the middle of a pass."""
    plog = compacted_log(tmp_path)
    i = 0
    while plog.segment_count < 3:  # two rolled segments of key "a", one active
        put(plog, ("a", f"a{i}"))
        i += 1
    rolled_during_pass = False

    class RollingAfterSwap:
        """The log as the cleaner sees it (``cleaner.CleanerLog``), rolling a segment after the
        pass's first swap. A stand-in the pass is handed, not a patch of the log: the log's
        class is compiled (setup.py), and its methods cannot be replaced on an instance."""

        def __getattr__(self, name: str) -> object:
            return getattr(plog, name)

        def swap_cleaned(self, *args: Any) -> bool:
            nonlocal rolled_during_pass
            done = plog.swap_cleaned(*args)
            if not rolled_during_pass:  # appends while the pass is still running roll a segment
                rolled_during_pass = True
                segments = plog.segment_count
                while plog.segment_count == segments:
                    put(plog, ("a", "a-late"))
            return done

    config = plog.config
    first = plog._cleaner.compact(
        RollingAfterSwap(),  # type: ignore[arg-type]
        T0,
        delete_retention_ms=config.delete_retention_ms,
        index_interval_bytes=config.index_interval_bytes,
        min_compaction_lag_ms=config.min_compaction_lag_ms,
    )
    assert first.segments_cleaned >= 1
    assert rolled_during_pass
    # Nothing changes between the two passes: only the segment rolled during the first is dirty.
    second = plog.compact(T0)
    assert not second.skipped
    assert second.records_removed >= 1
    keys = [k for _off, k, _v in contents(plog)]
    assert keys.count(b"a") == 2  # the last in the rolled segments, and the active segment's one
