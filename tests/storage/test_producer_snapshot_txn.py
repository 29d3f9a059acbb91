"""Producer-state snapshots: ``<offset>.snapshot`` files in Kafka's format, written at each roll and
at a clean close, loaded when the log opens with only the batches after them read again.

Kafka: ``ProducerStateManager`` (``writeSnapshot`` / ``readSnapshot`` / ``loadFromSnapshot``,
``CorruptSnapshotException`` -> the snapshot is deleted and an older one or the log is used),
``UnifiedLog.roll`` and ``close`` (``takeSnapshot``), ``LogLoader.rebuildProducerState``.
"""

from __future__ import annotations

import logging
import shutil
import struct
from pathlib import Path

import crc32c
import pytest

from groupcoord.clock import ManualClock
from groupcoord.formats.batch import ATTR_TRANSACTIONAL, build_batch
from groupcoord.storage.control import build_marker_batch
from groupcoord.storage.log import PartitionLog
from groupcoord.storage.log_config import LogConfig
from groupcoord.storage.producer_state import ProducerEntry, ProducerStateManager, write_snapshot

T0 = 1_700_000_000_000


def _open(path: Path) -> PartitionLog:
    plog, _ = PartitionLog.open(path, LogConfig(), ManualClock(T0))
    return plog


def _data(pid: int, epoch: int, seq: int, n: int = 1, *, txn: bool = True) -> bytes:
    return build_batch(
        [(None, b"v", ()) for _ in range(n)],
        timestamp_ms=T0,
        producer_id=pid,
        producer_epoch=epoch,
        base_sequence=seq,
        attributes=ATTR_TRANSACTIONAL if txn else 0,
    )


def _marker(pid: int, epoch: int, *, commit: bool) -> bytes:
    return build_marker_batch(
        producer_id=pid, producer_epoch=epoch, commit=commit, coordinator_epoch=4, timestamp_ms=T0
    )


def _state(plog: PartitionLog) -> tuple[object, ...]:
    ps = plog.producer_state()
    producers = sorted(
        (
            e.producer_id,
            e.epoch,
            e.last_sequence,
            e.last_offset,
            e.coordinator_epoch,
            e.current_txn_first_offset,
        )
        for e in ps.producers()
    )
    return tuple(producers), plog.last_stable_offset, tuple(plog.aborted_transactions(0, 1 << 40))


def _written(path: Path) -> PartitionLog:
    """Two rolled segments and an active one: an aborted and a committed transaction, an
    idempotent producer, and pid 12's transaction left open in the active segment."""
    plog = _open(path)
    plog.append(_data(10, 0, 0, 3))  # 0-2
    plog.append(_data(11, 2, 0, 1, txn=False))  # 3, idempotent
    plog.append(_marker(10, 0, commit=False))  # 4
    plog.roll()  # snapshot at 5
    plog.append(_data(10, 1, 0, 2))  # 5-6, a new epoch
    plog.append(_marker(10, 1, commit=True))  # 7
    plog.roll()  # snapshot at 8
    plog.append(_data(11, 2, 1, 2, txn=False))  # 8-9
    plog.append(_data(12, 0, 0, 1))  # 10, open
    plog.append(_data(10, 1, 2, 1))  # 11, open
    return plog


def _rebuild_lines(caplog: pytest.LogCaptureFixture) -> list[str]:
    return [r.getMessage() for r in caplog.records if "producer state rebuilt" in r.getMessage()]


def test_clean_restart_loads_the_snapshot_and_reads_no_batch(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    d = tmp_path / "t-0"
    plog = _written(d)
    before = _state(plog)
    assert before[1] == 10  # pid 12's open transaction
    plog.close()
    assert sorted(p.name for p in d.glob("*.snapshot")) == [
        "00000000000000000005.snapshot",
        "00000000000000000008.snapshot",
        "00000000000000000012.snapshot",  # the clean close, at the log end
    ]
    caplog.set_level(logging.INFO, logger="groupcoord.storage.log")
    again = _open(d)
    assert _rebuild_lines(caplog) == []  # nothing after the snapshot to read
    assert _state(again) == before
    entry = again.producer_state().producer(11)
    assert entry is not None and (entry.epoch, entry.last_sequence, entry.last_offset) == (2, 2, 9)
    again.append(_marker(12, 0, commit=True))  # 12
    again.append(_marker(10, 1, commit=False))  # 13
    assert again.last_stable_offset == again.log_end_offset == 14


def test_crash_restart_reads_only_the_batches_after_the_last_roll(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    plog = _written(tmp_path / "t-0")
    plog.flush()
    before = _state(plog)
    crashed = tmp_path / "crashed" / "t-0"
    shutil.copytree(tmp_path / "t-0", crashed)  # no clean close: the newest snapshot is the roll's
    caplog.set_level(logging.INFO, logger="groupcoord.storage.log")
    again = _open(crashed)
    assert _rebuild_lines(caplog) == [
        f"log {crashed}: producer state rebuilt from offset 8 (3 batches read, 3 producers)"
    ]
    assert _state(again) == before
    assert (crashed / "00000000000000000012.snapshot").exists()  # written after the replay


def test_a_corrupt_snapshot_falls_back_to_reading_the_log_with_one_warning(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    d = tmp_path / "t-0"
    plog = _written(d)
    before = _state(plog)
    plog.close()
    for snap in d.glob("*.snapshot"):
        if snap.name != "00000000000000000012.snapshot":
            snap.unlink()
    newest = d / "00000000000000000012.snapshot"
    raw = bytearray(newest.read_bytes())
    raw[-1] ^= 0xFF  # the open transaction's first offset, under the CRC
    newest.write_bytes(bytes(raw))
    caplog.set_level(logging.INFO, logger="groupcoord.storage.log")
    again = _open(d)
    # only the log's own lines: a client thread left by an earlier test on this worker may log too
    warnings = [
        r.getMessage()
        for r in caplog.records
        if r.levelno >= logging.WARNING and r.name.startswith("groupcoord.storage")
    ]
    assert len(warnings) == 1
    assert warnings[0].startswith(
        f"log {d}: producer snapshot 00000000000000000012.snapshot is unusable (CRC-32C"
    )
    assert warnings[0].endswith("deleted, rebuilding from the log start 0")
    assert _rebuild_lines(caplog) == [
        f"log {d}: producer state rebuilt from offset 0 (8 batches read, 3 producers)"
    ]
    assert _state(again) == before
    assert newest.read_bytes() != bytes(raw)  # a good one written in its place


def test_snapshot_is_kafkas_layout(tmp_path: Path) -> None:
    """ProducerStateManager.writeSnapshot: version int16 1, crc uint32 (CRC-32C of the rest), an
    int32 count, then per producer id int64, epoch int16, last sequence int32, last offset int64,
    offset delta int32, timestamp int64, coordinator epoch int32, current txn first offset int64."""
    state = ProducerStateManager()
    state.load_entries(
        [
            ProducerEntry(
                producer_id=7,
                epoch=3,
                last_sequence=41,
                last_offset=100,
                offset_delta=4,
                last_timestamp=T0,
                coordinator_epoch=2,
                current_txn_first_offset=96,
            )
        ]
    )
    path = write_snapshot(tmp_path, 101, state)
    assert path.name == "00000000000000000101.snapshot"
    body = struct.pack(">i", 1) + struct.pack(">qhiqiqiq", 7, 3, 41, 100, 4, T0, 2, 96)
    assert path.read_bytes() == struct.pack(">hI", 1, crc32c.crc32c(body)) + body


def test_segment_deletion_deletes_the_snapshots_below_the_new_log_start(tmp_path: Path) -> None:
    """Kafka: ProducerStateManager.deleteSnapshotsBefore(logStartOffset)."""
    d = tmp_path / "t-0"
    plog = _written(d)
    assert plog.delete_records_before(8) == 8
    assert sorted(p.name for p in d.glob("*.snapshot")) == ["00000000000000000008.snapshot"]
    assert plog.aborted_transactions(0, 100) == []  # its marker's segment is gone
    assert plog.last_stable_offset == 10
