"""Recovery at open: torn writes, corrupt CRCs, clean shutdown, index rebuilds."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest

from groupcoord.clock import ManualClock
from groupcoord.formats.batch import build_batch, decode_records, iter_batches, parse_header
from groupcoord.storage.log import PartitionLog
from groupcoord.storage.log_config import LogConfig
from groupcoord.storage.recovery import RecoveryReport

T0 = 1_700_000_000_000
CONFIG = LogConfig(segment_bytes=1500, index_interval_bytes=200)


def batch(i: int, n: int = 3, compression: int = 0) -> bytes:
    return build_batch(
        [(b"key-%d-%d" % (i, j), b"value-%d-%d" % (i, j) * 3, (("h", b"%d" % j),)) for j in range(n)],
        timestamp_ms=T0 + i,
        compression=compression,
    )


def crashed_copy(src: Path, dst: Path) -> Path:
    """The partition directory as a crash would leave it: files as written, no shutdown marker."""
    shutil.copytree(src, dst)
    assert not (dst / ".clean_shutdown").exists()
    return dst


def reopen(path: Path) -> tuple[PartitionLog, RecoveryReport]:
    return PartitionLog.open(path, CONFIG, ManualClock(T0))


def all_offsets(plog: PartitionLog) -> list[int]:
    out: list[int] = []
    for _h, raw in plog.iter_batches_from(0):
        out += [r.offset for r in decode_records(raw)]
    return out


@pytest.fixture
def written(tmp_path: Path) -> tuple[Path, int, int]:
    """A log of 30 batches (3 records each, the last one zstd) over several segments, not closed.

    Returns (dir, size of the active segment before the last batch, size of the last batch).
    """
    plog, _ = PartitionLog.open(tmp_path / "live" / "t-0", CONFIG, ManualClock(T0))
    for i in range(29):
        plog.append(batch(i))
    assert plog.segment_count >= 3
    active = plog.segment_files()[-1]
    before = active.stat().st_size
    plog.append(batch(29, compression=4))
    last_size = active.stat().st_size - before
    assert plog.log_end_offset == 90
    return tmp_path / "live" / "t-0", before, last_size


def test_torn_write_at_every_byte_of_the_last_batch_is_truncated_exactly(
    written: tuple[Path, int, int], tmp_path: Path
) -> None:
    src, before, last_size = written
    for cut in range(last_size):
        path = crashed_copy(src, tmp_path / f"cut{cut}" / "t-0")
        active = sorted(path.glob("*.log"))[-1]
        os.truncate(active, before + cut)
        plog, report = reopen(path)
        assert report.truncated_bytes == cut, cut
        assert report.truncated_from_offset == (87 if cut else None)
        assert report.segments_checked == 1
        assert plog.log_end_offset == 87
        assert active.stat().st_size == before
        assert all_offsets(plog) == list(range(87))
        assert plog.append(batch(99)).base_offset == 87
        plog.close()
        shutil.rmtree(tmp_path / f"cut{cut}")


def test_complete_last_batch_survives_a_crash(written: tuple[Path, int, int], tmp_path: Path) -> None:
    src, _before, _last = written
    plog, report = reopen(crashed_copy(src, tmp_path / "copy" / "t-0"))
    assert report == RecoveryReport(
        truncated_bytes=0, truncated_from_offset=None, segments_checked=1, indexes_rebuilt=0
    )
    assert plog.log_end_offset == 90
    assert [r.key for r in decode_records(plog.read(89, 1).data)] == [b"key-29-0", b"key-29-1", b"key-29-2"]


def test_corrupt_crc_in_the_tail_truncates_from_that_batch(
    written: tuple[Path, int, int], tmp_path: Path
) -> None:
    src, _before, _last_size = written
    path = crashed_copy(src, tmp_path / "copy" / "t-0")
    active = sorted(path.glob("*.log"))[-1]
    data = bytearray(active.read_bytes())
    positions = [p for p, _h in iter_batches(data)]
    victim = positions[-2]  # the batch before the last one
    data[victim + 70] ^= 0xFF
    active.write_bytes(bytes(data))
    plog, report = reopen(path)
    victim_base = parse_header(data, victim).base_offset
    assert victim_base == 84
    assert report.truncated_from_offset == 84
    assert report.truncated_bytes == len(data) - victim
    assert plog.log_end_offset == 84
    assert active.stat().st_size == victim


def test_garbage_after_the_last_batch_is_truncated(written: tuple[Path, int, int], tmp_path: Path) -> None:
    src, _before, _last_size = written
    path = crashed_copy(src, tmp_path / "copy" / "t-0")
    active = sorted(path.glob("*.log"))[-1]
    with open(active, "ab") as f:
        f.write(b"\x00" * 4096)  # zero-filled blocks, as a crash after extending the file leaves
    plog, report = reopen(path)
    assert (report.truncated_bytes, report.truncated_from_offset, plog.log_end_offset) == (4096, 90, 90)


def test_clean_shutdown_skips_validation_and_keeps_everything(tmp_path: Path) -> None:
    plog, _ = reopen(tmp_path / "t-0")
    for i in range(20):
        plog.append(batch(i))
    plog.close()
    assert (tmp_path / "t-0" / ".clean_shutdown").exists()
    again, report = reopen(tmp_path / "t-0")
    assert report == RecoveryReport(
        truncated_bytes=0,
        truncated_from_offset=None,
        segments_checked=0,
        indexes_rebuilt=0,
        clean_shutdown=True,
    )
    assert not (tmp_path / "t-0" / ".clean_shutdown").exists()
    assert (again.log_end_offset, all_offsets(again)) == (60, list(range(60)))
    assert again.offset_for_timestamp(T0 + 7) == (21, T0 + 7)
    assert again.max_timestamp_offset() == (57, T0 + 19)


def test_marker_that_does_not_match_the_files_falls_back_to_validation(tmp_path: Path) -> None:
    plog, _ = reopen(tmp_path / "t-0")
    for i in range(5):
        plog.append(batch(i))
    plog.close()
    active = sorted((tmp_path / "t-0").glob("*.log"))[-1]
    with open(active, "ab") as f:
        f.write(batch(5)[:30])
    again, report = reopen(tmp_path / "t-0")
    assert (report.clean_shutdown, report.segments_checked, report.truncated_bytes) == (False, 1, 30)
    assert again.log_end_offset == 15


@pytest.mark.parametrize("damage", ["missing", "garbage", "emptied"])
def test_missing_or_damaged_index_of_a_rolled_segment_is_rebuilt(tmp_path: Path, damage: str) -> None:
    plog, _ = reopen(tmp_path / "t-0")
    for i in range(30):
        plog.append(batch(i))
    plog.close()
    index = tmp_path / "t-0" / "00000000000000000000.index"
    timeindex = tmp_path / "t-0" / "00000000000000000000.timeindex"
    original = (index.read_bytes(), timeindex.read_bytes())
    assert len(original[0]) >= 16
    if damage == "missing":
        index.unlink()
        timeindex.unlink()
    elif damage == "garbage":
        index.write_bytes(b"\x7f" * 13)
    else:
        index.write_bytes(b"")
    again, report = reopen(tmp_path / "t-0")
    assert (report.indexes_rebuilt, report.truncated_bytes, report.clean_shutdown) == (1, 0, True)
    assert (index.read_bytes(), timeindex.read_bytes()) == original
    for offset in range(90):
        header = parse_header(again.read(offset, 1).data)
        assert header.base_offset <= offset <= header.last_offset


def test_index_file_of_the_active_segment_is_rebuilt_after_a_crash(
    written: tuple[Path, int, int], tmp_path: Path
) -> None:
    src, _before, _last = written
    path = crashed_copy(src, tmp_path / "copy" / "t-0")
    active_index = sorted(path.glob("*.index"))[-1]
    original = active_index.read_bytes()
    active_index.unlink()
    plog, report = reopen(path)
    assert (report.indexes_rebuilt, report.segments_checked, plog.log_end_offset) == (1, 1, 90)
    assert active_index.read_bytes() == original


def test_stray_files_from_an_interrupted_compaction_are_removed(tmp_path: Path) -> None:
    plog, _ = reopen(tmp_path / "t-0")
    plog.append(batch(0))
    plog.close()
    (tmp_path / "t-0" / "00000000000000000000.log.cleaned").write_bytes(b"partial")
    (tmp_path / "t-0" / "00000000000000000077.index").write_bytes(b"")
    again, _ = reopen(tmp_path / "t-0")
    assert sorted(p.name for p in (tmp_path / "t-0").iterdir()) == [
        "00000000000000000000.index",
        "00000000000000000000.log",
        "00000000000000000000.timeindex",
        "00000000000000000003.snapshot",  # producer state at the clean close (Kafka's layout)
        "recovery-point.checkpoint",
    ]
    assert again.log_end_offset == 3
