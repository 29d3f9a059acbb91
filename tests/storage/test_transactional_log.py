"""Transactional and control batches on the real log: producer state, the last stable offset and
the aborted-transaction index (``.txnindex``), rebuilt when the log is opened again.

Kafka: ``ProducerStateManager`` (open transactions, ``firstUnstableOffset``), ``UnifiedLog``
(``lastStableOffset``, ``collectAbortedTransactions``), ``TransactionIndex`` / ``AbortedTxn``
(34-byte entries), ``EndTransactionMarker`` (control record key/value).
"""

from __future__ import annotations

import struct
from pathlib import Path

from groupcoord.clock import ManualClock
from groupcoord.errors import ErrorCode
from groupcoord.formats.batch import ATTR_TRANSACTIONAL, build_batch, decode_records, parse_header
from groupcoord.storage.control import ControlType, build_marker_batch, decode_marker
from groupcoord.storage.log import PartitionLog
from groupcoord.storage.log_config import LogConfig
from groupcoord.storage.txnindex import AbortedTxn, read_txn_index

T0 = 1_700_000_000_000


def _open(path: Path, **cfg: int) -> PartitionLog:
    plog, _ = PartitionLog.open(path, LogConfig(**cfg), ManualClock(T0))  # type: ignore[arg-type]
    return plog


def _data(pid: int, epoch: int, seq: int, n: int = 1, *, txn: bool = True) -> bytes:
    return build_batch(
        [(None, f"v{seq + i}".encode(), ()) for i in range(n)],
        timestamp_ms=T0,
        producer_id=pid,
        producer_epoch=epoch,
        base_sequence=seq,
        attributes=ATTR_TRANSACTIONAL if txn else 0,
    )


def _marker(pid: int, epoch: int, commit: bool, coordinator_epoch: int = 0) -> bytes:
    return build_marker_batch(
        producer_id=pid,
        producer_epoch=epoch,
        commit=commit,
        coordinator_epoch=coordinator_epoch,
        timestamp_ms=T0,
    )


def test_marker_batch_is_kafkas_end_transaction_marker() -> None:
    batch = _marker(7, 3, commit=True, coordinator_epoch=5)
    h = parse_header(batch)
    assert (h.is_transactional, h.is_control, h.producer_id, h.producer_epoch, h.base_sequence) == (
        True,
        True,
        7,
        3,
        -1,
    )
    (rec,) = decode_records(batch)
    assert rec.key == struct.pack(">hh", 0, 1) and rec.value == struct.pack(">hi", 0, 5)
    m = decode_marker(rec.key, rec.value)
    assert (m.type, m.coordinator_epoch) == (ControlType.COMMIT, 5)
    (abort,) = decode_records(_marker(7, 3, commit=False))
    assert abort.key == struct.pack(">hh", 0, 0)


def test_lso_stops_at_the_first_open_transaction_and_moves_on_commit(tmp_path: Path) -> None:
    plog = _open(tmp_path / "t-0")
    plog.append(_data(-1, -1, -1, 2, txn=False))  # offsets 0-1, plain
    plog.append(_data(10, 0, 0, 3))  # 2-4, pid 10 opens a transaction
    plog.append(_data(11, 0, 0, 1))  # 5, pid 11 opens one
    assert (plog.log_end_offset, plog.last_stable_offset) == (6, 2)
    plog.append(_marker(10, 0, commit=True))  # 6
    assert plog.last_stable_offset == 5  # pid 11's transaction is still open
    plog.append(_marker(11, 0, commit=True))  # 7
    assert plog.last_stable_offset == plog.log_end_offset == 8
    assert plog.aborted_transactions(0, 8) == []


def test_an_abort_is_indexed_in_the_segments_txnindex_in_kafkas_layout(tmp_path: Path) -> None:
    plog = _open(tmp_path / "t-0")
    plog.append(_data(10, 0, 0, 2))  # 0-1
    plog.append(_data(11, 0, 0, 1))  # 2
    plog.append(_marker(10, 0, commit=False))  # 3: pid 10 aborted while pid 11 is still open
    expected = AbortedTxn(producer_id=10, first_offset=0, last_offset=3, last_stable_offset=2)
    assert plog.aborted_transactions(0, 4) == [expected]
    raw = (tmp_path / "t-0" / "00000000000000000000.txnindex").read_bytes()
    assert raw == struct.pack(">hqqqq", 0, 10, 0, 3, 2)
    # a fetch that starts past the marker does not need it; one ending at the first offset neither
    assert plog.aborted_transactions(4, 10) == []
    assert plog.aborted_transactions(0, 0) == []


def test_producer_state_tracks_epoch_and_last_sequence(tmp_path: Path) -> None:
    plog = _open(tmp_path / "t-0")
    plog.append(_data(10, 0, 0, 3))
    plog.append(_data(10, 0, 3, 2))
    entry = plog.producer_state().producer(10)
    assert entry is not None
    assert (entry.epoch, entry.last_sequence, entry.last_offset, entry.current_txn_first_offset) == (
        0,
        4,
        4,
        0,
    )
    plog.append(_marker(10, 1, commit=False, coordinator_epoch=2))  # a fenced abort at a bumped epoch
    assert (entry.epoch, entry.last_sequence, entry.coordinator_epoch, entry.current_txn_first_offset) == (
        1,
        -1,
        2,
        None,
    )
    old = parse_header(_data(10, 0, 5))
    assert plog.producer_state().check(old) is ErrorCode.INVALID_PRODUCER_EPOCH


def test_reopen_recovers_open_transactions_producers_and_aborted_index(tmp_path: Path) -> None:
    d = tmp_path / "t-0"
    plog = _open(d, segment_bytes=200)
    plog.append(_data(10, 0, 0, 2))  # 0-1
    plog.append(_marker(10, 0, commit=False))  # 2
    plog.append(_data(10, 0, 2, 1))  # 3: a new transaction of pid 10, left open
    plog.append(_data(12, 4, 0, 1, txn=False))  # 4: an idempotent producer
    assert plog.segment_count > 1
    lso, aborted = plog.last_stable_offset, plog.aborted_transactions(0, 100)
    plog.close()
    again = _open(d, segment_bytes=200)
    assert again.last_stable_offset == lso == 3
    assert (
        again.aborted_transactions(0, 100)
        == aborted
        == [AbortedTxn(producer_id=10, first_offset=0, last_offset=2, last_stable_offset=3)]
    )
    entry = again.producer_state().producer(12)
    assert entry is not None and (entry.epoch, entry.last_sequence) == (4, 0)
    again.append(_marker(10, 0, commit=True))
    assert again.last_stable_offset == again.log_end_offset


def test_reopen_rewrites_a_missing_or_stale_txnindex(tmp_path: Path) -> None:
    d = tmp_path / "t-0"
    plog = _open(d)
    plog.append(_data(10, 0, 0, 1))
    plog.append(_marker(10, 0, commit=False))
    plog.close()
    idx = d / "00000000000000000000.txnindex"
    good = idx.read_bytes()
    idx.write_bytes(struct.pack(">hqqqq", 0, 99, 7, 8, 9) + b"\x00\x01")  # stale entry + torn bytes
    again = _open(d)
    assert [a.producer_id for a in again.aborted_transactions(0, 10)] == [10]
    assert idx.read_bytes() == good
    again.close()
    idx.unlink()
    # A missing .txnindex below a producer snapshot is trusted as empty (as in Kafka); without
    # a snapshot the whole partition is read and the index written again.
    for snap in d.glob("*.snapshot"):
        snap.unlink()
    third = _open(d)
    third.producer_state()
    assert read_txn_index(idx) == [
        AbortedTxn(producer_id=10, first_offset=0, last_offset=1, last_stable_offset=2)
    ]


def test_truncation_below_a_marker_reopens_the_transaction_and_drops_its_index_entry(tmp_path: Path) -> None:
    d = tmp_path / "t-0"
    plog = _open(d)
    plog.append(_data(10, 0, 0, 2))  # 0-1
    plog.append(_marker(10, 0, commit=False))  # 2
    assert plog.aborted_transactions(0, 3) != []
    plog.truncate_to(2)
    assert plog.last_stable_offset == 0
    assert plog.aborted_transactions(0, 3) == []
    assert not (d / "00000000000000000000.txnindex").exists()


def test_deleting_a_segment_deletes_its_txnindex(tmp_path: Path) -> None:
    d = tmp_path / "t-0"
    plog = _open(d, segment_bytes=150)
    plog.append(_data(10, 0, 0, 1))
    plog.append(_marker(10, 0, commit=False))
    plog.append(_data(-1, -1, -1, 3, txn=False))
    plog.append(_data(-1, -1, -1, 3, txn=False))
    assert (d / "00000000000000000000.txnindex").exists()
    assert plog.segment_count > 1
    plog.delete_records_before(plog.segment_base_offsets()[-1])
    plog.apply_retention(T0)
    assert plog.segment_base_offsets()[0] > 0
    assert not (d / "00000000000000000000.txnindex").exists()


def test_read_region_with_max_offset_stops_before_the_open_transaction(tmp_path: Path) -> None:
    """A read_committed fetch reads whole batches below the LSO only (``UnifiedLog.read``)."""
    plog = _open(tmp_path / "t-0")
    plog.append(_data(-1, -1, -1, 2, txn=False))  # 0-1
    plog.append(_data(10, 0, 0, 2))  # 2-3: open
    plog.append(_data(-1, -1, -1, 1, txn=False))  # 4
    lso = plog.last_stable_offset
    assert lso == 2
    full = plog.read_region(0, 1 << 20, copy_below=1 << 30).data
    capped = plog.read_region(0, 1 << 20, max_offset=lso, copy_below=1 << 30).data
    assert isinstance(full, bytes) and isinstance(capped, bytes)
    assert [r.offset for r in decode_records(capped)] == [0, 1]
    assert capped == full[: len(capped)]
    assert plog.read_region(2, 1 << 20, max_offset=lso, copy_below=1 << 30).data == b""
    assert plog.read_region(4, 1 << 20, max_offset=lso, copy_below=1 << 30).data == b""
