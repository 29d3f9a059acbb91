"""PartitionLog: append, read by offset and timestamp, indexes, rolling, retention, flush."""

from __future__ import annotations

import contextlib
import os
import struct
from pathlib import Path

import pytest

from groupcoord.clock import ManualClock
from groupcoord.formats.batch import (
    CorruptBatchError,
    build_batch,
    decode_records,
    iter_batches,
    parse_header,
)
from groupcoord.storage.log import (
    InvalidOffsetError,
    OffsetOutOfRangeError,
    PartitionLog,
    RecordTooLargeError,
)
from groupcoord.storage.log_config import InvalidConfigError, LogConfig

T0 = 1_700_000_000_000


def batch(n: int = 1, *, ts: int = T0, key: str = "k", size: int = 10, compression: int = 0) -> bytes:
    return build_batch(
        [(f"{key}{i}".encode(), b"x" * size, ()) for i in range(n)],
        timestamp_ms=ts,
        compression=compression,
    )


def offsets_in(data: bytes | memoryview) -> list[int]:
    out: list[int] = []
    for pos, _h in iter_batches(data):
        out += [r.offset for r in decode_records(data, pos)]
    return out


@pytest.fixture
def clock() -> ManualClock:
    return ManualClock(T0)


def open_log(path: Path, clock: ManualClock, **cfg: object) -> PartitionLog:
    plog, _report = PartitionLog.open(path, LogConfig(**cfg), clock)  # type: ignore[arg-type]
    return plog


def test_new_log_is_empty_with_one_kafka_named_segment(tmp_path: Path, clock: ManualClock) -> None:
    plog = open_log(tmp_path / "t-0", clock)
    assert (plog.log_start_offset, plog.log_end_offset, plog.high_watermark, plog.size_bytes) == (0, 0, 0, 0)
    assert sorted(p.name for p in (tmp_path / "t-0").iterdir()) == [
        "00000000000000000000.index",
        "00000000000000000000.log",
        "00000000000000000000.timeindex",
    ]
    assert plog.read(0, 1000).data == b""
    assert plog.max_timestamp_offset() == (-1, -1)
    assert plog.offset_for_timestamp(0) is None


def test_appends_get_consecutive_offsets_and_bytes_are_stored_as_sent(
    tmp_path: Path, clock: ManualClock
) -> None:
    plog = open_log(tmp_path / "t-0", clock)
    first = plog.append(batch(3))
    second = plog.append(batch(2) + batch(4, compression=4))
    assert (first.base_offset, first.last_offset, first.record_count) == (0, 2, 3)
    assert (second.base_offset, second.last_offset, second.record_count) == (3, 8, 6)
    assert (first.log_append_time, first.log_start_offset, first.max_timestamp) == (-1, 0, T0)
    assert plog.log_end_offset == 9
    on_disk = (tmp_path / "t-0" / "00000000000000000000.log").read_bytes()
    expected = bytearray(batch(3) + batch(2) + batch(4, compression=4))
    struct.pack_into(">q", expected, len(batch(3)), 3)
    struct.pack_into(">q", expected, len(batch(3)) + len(batch(2)), 5)
    assert on_disk == bytes(expected)


def test_read_returns_whole_batches_from_the_one_holding_the_offset(
    tmp_path: Path, clock: ManualClock
) -> None:
    plog = open_log(tmp_path / "t-0", clock)
    for _ in range(5):
        plog.append(batch(4))  # offsets 0-3, 4-7, ...
    result = plog.read(6, 10_000)
    assert offsets_in(result.data) == list(range(4, 20))
    assert (result.high_watermark, result.log_start_offset) == (20, 0)
    one = len(batch(4))
    two = plog.read(6, 2 * one + one // 2)
    assert offsets_in(two.data) == list(range(4, 12))
    assert two.file is not None and two.file[1:] == (one, 2 * one)


def test_read_returns_one_oversized_batch_only_when_min_one(tmp_path: Path, clock: ManualClock) -> None:
    plog = open_log(tmp_path / "t-0", clock)
    plog.append(batch(10, size=100))
    assert offsets_in(plog.read(3, 50).data) == list(range(10))
    assert plog.read(3, 50, min_one=False).data == b""


def test_reading_outside_the_log_raises_offset_out_of_range(tmp_path: Path, clock: ManualClock) -> None:
    plog = open_log(tmp_path / "t-0", clock)
    plog.append(batch(3))
    assert plog.read(3, 100).data == b""  # the log end itself is a valid, empty position
    with pytest.raises(OffsetOutOfRangeError) as err:
        plog.read(4, 100)
    assert err.value.code == 1
    plog.delete_records_before(2)
    with pytest.raises(OffsetOutOfRangeError):
        plog.read(1, 100)
    assert offsets_in(plog.read(2, 100).data) == [0, 1, 2]  # the whole batch holding offset 2


def test_sparse_index_finds_every_offset_across_many_batches_and_segments(
    tmp_path: Path, clock: ManualClock
) -> None:
    plog = open_log(tmp_path / "t-0", clock, segment_bytes=20_000, index_interval_bytes=300)
    sizes = [1 + (i * 7) % 5 for i in range(400)]
    for i, n in enumerate(sizes):
        plog.append(batch(n, key=f"b{i}-", size=3 + i % 40))
    total = sum(sizes)
    assert plog.log_end_offset == total
    assert plog.segment_count > 3
    starts = [0]
    for n in sizes:
        starts.append(starts[-1] + n)
    index = (tmp_path / "t-0" / "00000000000000000000.index").read_bytes()
    assert len(index) % 8 == 0 and len(index) > 8
    for offset in range(total):
        data = plog.read(offset, 1).data
        header = parse_header(data)
        assert header.base_offset <= offset <= header.last_offset
        assert header.base_offset in starts


def test_segments_roll_when_segment_bytes_would_be_exceeded(tmp_path: Path, clock: ManualClock) -> None:
    one = len(batch(2))
    plog = open_log(tmp_path / "t-0", clock, segment_bytes=3 * one)
    for _ in range(7):
        plog.append(batch(2))
    assert plog.segment_base_offsets() == [0, 6, 12]
    names = sorted(p.name for p in (tmp_path / "t-0").glob("*.log"))
    assert names == ["00000000000000000000.log", "00000000000000000006.log", "00000000000000000012.log"]
    assert [os.path.getsize(tmp_path / "t-0" / n) for n in names] == [3 * one, 3 * one, one]
    # one append of several batches spreads over segments too
    plog.append(batch(2) * 1 + batch(2) + batch(2))
    assert plog.segment_base_offsets() == [0, 6, 12, 18]
    assert offsets_in(plog.read(15, 10_000).data) == [14, 15, 16, 17]


def test_segment_rolls_after_segment_ms(tmp_path: Path, clock: ManualClock) -> None:
    plog = open_log(tmp_path / "t-0", clock, segment_ms=60_000)
    plog.append(batch())
    clock.advance(59_999)
    plog.append(batch())
    clock.advance(1)
    plog.append(batch())
    assert plog.segment_base_offsets() == [0, 2]


def test_oversized_and_corrupt_batches_are_refused_whole(tmp_path: Path, clock: ManualClock) -> None:
    plog = open_log(tmp_path / "t-0", clock, max_message_bytes=200)
    with pytest.raises(RecordTooLargeError) as err:
        plog.append(batch(1) + batch(1, size=300))
    assert err.value.code == 10
    bad = bytearray(batch(2))
    bad[-1] ^= 1
    with pytest.raises(CorruptBatchError, match="CRC"):
        plog.append(batch(1) + bytes(bad))
    with pytest.raises(CorruptBatchError, match="claims"):
        plog.append(batch(1)[:-3])
    assert (plog.log_end_offset, plog.size_bytes) == (0, 0)


def test_appending_with_own_offsets_keeps_them_and_refuses_going_backwards(
    tmp_path: Path, clock: ManualClock
) -> None:
    plog = open_log(tmp_path / "t-0", clock)
    b = bytearray(batch(2))
    struct.pack_into(">q", b, 0, 10)
    info = plog.append(bytes(b), assign_offsets=False)
    assert (info.base_offset, info.last_offset, plog.log_end_offset) == (10, 11, 12)
    with pytest.raises(InvalidOffsetError):
        plog.append(bytes(b), assign_offsets=False)


def test_log_append_time_topics_stamp_batches_with_the_clock(tmp_path: Path, clock: ManualClock) -> None:
    plog = open_log(tmp_path / "t-0", clock, message_timestamp_type="LogAppendTime")
    clock.advance(5000)
    info = plog.append(batch(2, ts=1))
    assert (info.log_append_time, info.max_timestamp) == (T0 + 5000, T0 + 5000)
    data = plog.read(0, 1000).data
    assert parse_header(data).timestamp_type == 1
    assert [r.timestamp for r in decode_records(data)] == [T0 + 5000, T0 + 5000]


def test_offset_for_timestamp_finds_first_record_at_or_after(tmp_path: Path, clock: ManualClock) -> None:
    plog = open_log(tmp_path / "t-0", clock, segment_bytes=2000, index_interval_bytes=100)
    # 100 batches of 3 records; timestamps T0 + 10*i + j, so every third record steps by 10.
    for i in range(100):
        plog.append(
            build_batch(
                [(b"k", b"v" * 20, ())] * 3,
                timestamp_ms=0,
                timestamps=[T0 + 10 * i, T0 + 10 * i + 3, T0 + 10 * i + 6],
            )
        )
    assert plog.segment_count > 5
    assert plog.offset_for_timestamp(0) == (0, T0)
    assert plog.offset_for_timestamp(T0 + 500) == (150, T0 + 500)
    assert plog.offset_for_timestamp(T0 + 501) == (151, T0 + 503)
    assert plog.offset_for_timestamp(T0 + 507) == (153, T0 + 510)
    assert plog.offset_for_timestamp(T0 + 996) == (299, T0 + 996)
    assert plog.offset_for_timestamp(T0 + 997) is None
    for i in range(0, 990, 37):
        _off, ts = plog.offset_for_timestamp(T0 + i) or (None, None)
        assert ts is not None and ts >= T0 + i and ts - (T0 + i) < 7


def test_max_timestamp_offset_is_the_earliest_record_with_the_largest_timestamp(
    tmp_path: Path, clock: ManualClock
) -> None:
    plog = open_log(tmp_path / "t-0", clock, segment_bytes=300)
    plog.append(build_batch([(b"a", b"1", ())] * 3, timestamp_ms=0, timestamps=[T0, T0 + 90, T0 + 5]))
    plog.append(build_batch([(b"b", b"2", ())] * 2, timestamp_ms=0, timestamps=[T0 + 1, T0 + 90]))
    plog.append(build_batch([(b"c", b"3", ())] * 2, timestamp_ms=0, timestamps=[T0 + 20, T0 + 30]))
    assert plog.max_timestamp_offset() == (1, T0 + 90)


def test_retention_by_time_deletes_whole_rolled_segments(tmp_path: Path, clock: ManualClock) -> None:
    one = len(batch(1))
    plog = open_log(tmp_path / "t-0", clock, segment_bytes=2 * one, retention_ms=1000)
    for i in range(7):
        plog.append(batch(1, ts=T0 + i * 100))
    assert plog.segment_base_offsets() == [0, 2, 4, 6]
    # segment 0 max ts T0+100, segment 2: T0+300, segment 4: T0+500, active 6
    assert plog.apply_retention(T0 + 1100) == 0
    assert plog.apply_retention(T0 + 1101) == 2 * one
    assert (plog.log_start_offset, plog.segment_base_offsets()) == (2, [2, 4, 6])
    assert plog.apply_retention(T0 + 100_000) == 4 * one  # never the active segment
    assert (plog.log_start_offset, plog.segment_base_offsets()) == (6, [6])
    assert not (tmp_path / "t-0" / "00000000000000000000.log").exists()
    with pytest.raises(OffsetOutOfRangeError):
        plog.read(5, 100)


def test_retention_by_bytes_keeps_the_newest_segments_within_the_limit(
    tmp_path: Path, clock: ManualClock
) -> None:
    one = len(batch(1))
    plog = open_log(tmp_path / "t-0", clock, segment_bytes=2 * one, retention_bytes=3 * one, retention_ms=-1)
    for _ in range(7):
        plog.append(batch(1))
    assert plog.apply_retention(T0 + 10**12) == 4 * one
    assert (plog.segment_base_offsets(), plog.size_bytes, plog.log_start_offset) == ([4, 6], 3 * one, 4)


def test_compact_only_topics_are_not_deleted_by_retention(tmp_path: Path, clock: ManualClock) -> None:
    plog = open_log(tmp_path / "t-0", clock, segment_bytes=100, retention_ms=1, cleanup_policy="compact")
    for _ in range(4):
        plog.append(batch(1))
    assert plog.apply_retention(T0 + 10**9) == 0
    assert plog.segment_count == 4


def test_delete_records_before_survives_reopen(tmp_path: Path, clock: ManualClock) -> None:
    one = len(batch(2))
    plog = open_log(tmp_path / "t-0", clock, segment_bytes=2 * one)
    for _ in range(5):
        plog.append(batch(2))
    assert plog.delete_records_before(5) == 5
    assert plog.segment_base_offsets() == [4, 8]
    with pytest.raises(OffsetOutOfRangeError):
        plog.delete_records_before(11)
    plog.close()
    again = open_log(tmp_path / "t-0", clock, segment_bytes=2 * one)
    assert (again.log_start_offset, again.log_end_offset) == (5, 10)


def test_truncate_to_drops_later_batches_and_segments(tmp_path: Path, clock: ManualClock) -> None:
    one = len(batch(2))
    plog = open_log(tmp_path / "t-0", clock, segment_bytes=2 * one, index_interval_bytes=1)
    for _ in range(5):
        plog.append(batch(2))
    assert plog.truncate_to(7) == 6  # the batch 6-7 straddles 7 and goes whole
    assert plog.segment_base_offsets() == [0, 4]
    info = plog.append(batch(1))
    assert info.base_offset == 6
    assert offsets_in(plog.read(4, 10_000).data) == [4, 5, 6]
    assert plog.truncate_to(0) == 0
    assert (plog.log_start_offset, plog.log_end_offset, plog.size_bytes) == (0, 0, 0)


def test_flush_messages_setting_fsyncs_by_count(tmp_path: Path, clock: ManualClock) -> None:
    plog = open_log(tmp_path / "t-0", clock, flush_interval_messages=5)
    plog.append(batch(3))
    assert plog.flushed_offset == 0
    plog.append(batch(2))
    assert plog.flushed_offset == 5
    plog.append(batch(1))
    assert plog.flush() == 6
    assert plog.flushed_offset == 6


def test_flush_ms_setting_fsyncs_by_time(tmp_path: Path, clock: ManualClock) -> None:
    plog = open_log(tmp_path / "t-0", clock, flush_interval_ms=1000)
    plog.append(batch(1))
    assert plog.flushed_offset == 0
    assert not plog.maybe_flush(clock.now_ms() + 999)
    assert plog.maybe_flush(clock.now_ms() + 1000)
    assert plog.flushed_offset == 1


def test_iter_batches_from_walks_every_segment(tmp_path: Path, clock: ManualClock) -> None:
    plog = open_log(tmp_path / "t-0", clock, segment_bytes=300)
    for i in range(10):
        plog.append(batch(2, key=f"r{i}-"))
    seen = [(h.base_offset, h.last_offset) for h, _raw in plog.iter_batches_from(5)]
    assert seen == [(4, 5), (6, 7), (8, 9), (10, 11), (12, 13), (14, 15), (16, 17), (18, 19)]
    _h, raw = next(plog.iter_batches_from(0))
    assert [r.key for r in decode_records(raw)] == [b"r0-0", b"r0-1"]


def test_topic_config_overrides_use_kafka_names(tmp_path: Path) -> None:
    base = LogConfig()
    cfg = base.with_overrides(
        {
            "retention.ms": "-1",
            "segment.bytes": "1048576",
            "cleanup.policy": "compact,delete",
            "min.insync.replicas": "1",
            "flush.ms": "9223372036854775807",
        }
    )
    assert (cfg.retention_ms, cfg.segment_bytes, cfg.compact, cfg.delete, cfg.flush_interval_ms) == (
        -1,
        1048576,
        True,
        True,
        None,
    )
    assert cfg.to_topic_configs()["segment.bytes"] == "1048576"
    with pytest.raises(InvalidConfigError, match=r"unknown topic config 'retention\.msec'"):
        base.with_overrides({"retention.msec": "1"})
    with pytest.raises(InvalidConfigError, match=r"'segment\.bytes' needs an integer"):
        base.with_overrides({"segment.bytes": "big"})
    with pytest.raises(InvalidConfigError, match=r"cleanup\.policy"):
        base.with_overrides({"cleanup.policy": "shred"})


def test_rolled_segments_keep_one_descriptor_each(tmp_path: Path, clock: ManualClock) -> None:
    def open_fds() -> int:
        """Descriptors open on the partition's files (not a process-wide count, which other
        threads change)."""
        here = str(tmp_path / "t-0")
        count = 0
        for fd in os.listdir("/proc/self/fd"):
            with contextlib.suppress(OSError):
                if os.readlink(f"/proc/self/fd/{fd}").startswith(here + "/"):
                    count += 1
        return count

    before = open_fds()
    assert before == 0
    plog = open_log(tmp_path / "t-0", clock, segment_bytes=len(batch()))
    for _ in range(10):
        plog.append(batch())
    assert plog.segment_count == 10
    # one .log each, plus the active segment's two indexes, open in the shared set of index
    # files (storage.index_files; test_index_files.py bounds it)
    assert open_fds() - before == 10 + 2
    plog.close()
    assert open_fds() == before
    again = open_log(tmp_path / "t-0", clock, segment_bytes=len(batch()))
    assert open_fds() - before == 10
    again.close()


def test_iter_batches_from_sees_segments_rolled_while_iterating(tmp_path: Path, clock: ManualClock) -> None:
    one = len(batch(1))
    plog = open_log(tmp_path / "t-0", clock, segment_bytes=one)
    plog.append(batch(1))
    plog.append(batch(1))
    seen = []
    for h, _raw in plog.iter_batches_from(0):
        seen.append(h.base_offset)
        if h.base_offset == 0:
            plog.append(batch(1))  # rolls a third segment after the walk started
    assert seen == [0, 1, 2]
