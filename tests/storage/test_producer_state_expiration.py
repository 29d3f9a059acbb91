"""Idempotent producers expire from a partition's producer state after producer.id.expiration.ms.

Kafka's ``ProducerStateManager.removeExpiredProducers``: a producer is expired when it has no
transaction open on the partition and ``now - lastTimestamp >= producer.id.expiration.ms``, where
``lastTimestamp`` is the max timestamp of its last batch or marker (``isProducerExpired``).
The cases follow Kafka's ``ProducerStateManagerTest`` (``testPidExpirationTimeout``,
``testProducersWithOngoingTransactionsDontExpire``), on a real partition log on disk.
"""

from __future__ import annotations

from pathlib import Path

from groupcoord.clock import ManualClock
from groupcoord.formats.batch import ATTR_TRANSACTIONAL, build_batch
from groupcoord.storage.control import build_marker_batch
from groupcoord.storage.log import PartitionLog
from groupcoord.storage.log_config import LogConfig

T0 = 1_700_000_000_000
EXPIRATION_MS = 1_000


def _open(path: Path) -> PartitionLog:
    plog, _ = PartitionLog.open(path, LogConfig(), ManualClock(T0))
    return plog


def _data(pid: int, seq: int, ts: int, *, txn: bool = False) -> bytes:
    return build_batch(
        [(None, b"v", ())],
        timestamp_ms=ts,
        producer_id=pid,
        producer_epoch=0,
        base_sequence=seq,
        attributes=ATTR_TRANSACTIONAL if txn else 0,
    )


def _ids(plog: PartitionLog) -> list[int]:
    return sorted(e.producer_id for e in plog.producer_state().producers())


def test_a_producer_expires_when_its_last_batch_is_exactly_the_expiration_old(tmp_path: Path) -> None:
    """Ages count from each producer's own last batch timestamp, not from the append."""
    plog = _open(tmp_path / "t-0")
    try:
        plog.append(_data(1, 0, T0))
        plog.append(_data(2, 0, T0 - 5_000))  # appended later, but its batch is older
        plog.append(_data(2, 1, T0 + 500))  # its last batch is what counts
        assert plog.remove_expired_producers(T0 + 999, EXPIRATION_MS) == []
        assert _ids(plog) == [1, 2]
        assert plog.remove_expired_producers(T0 + 1_000, EXPIRATION_MS) == [1]
        assert _ids(plog) == [2]
        assert plog.remove_expired_producers(T0 + 1_499, EXPIRATION_MS) == []
        assert plog.remove_expired_producers(T0 + 1_500, EXPIRATION_MS) == [2]
        assert _ids(plog) == []
        # The log itself is untouched: only the producer state forgets.
        assert plog.log_end_offset == 3
    finally:
        plog.close()


def test_a_producer_with_an_open_transaction_never_expires_and_its_marker_restarts_the_clock(
    tmp_path: Path,
) -> None:
    plog = _open(tmp_path / "t-0")
    try:
        plog.append(_data(3, 0, T0, txn=True))
        assert plog.last_stable_offset == 0
        assert plog.remove_expired_producers(T0 + 1_000_000, EXPIRATION_MS) == []
        assert _ids(plog) == [3]
        assert plog.last_stable_offset == 0  # still open
        plog.append(
            build_marker_batch(
                producer_id=3, producer_epoch=0, commit=True, coordinator_epoch=1, timestamp_ms=T0 + 2_000
            )
        )
        assert plog.last_stable_offset == 2
        assert plog.remove_expired_producers(T0 + 2_999, EXPIRATION_MS) == []
        assert plog.remove_expired_producers(T0 + 3_000, EXPIRATION_MS) == [3]
        assert _ids(plog) == []
    finally:
        plog.close()


def test_a_clean_restart_does_not_bring_an_expired_producer_back(tmp_path: Path) -> None:
    """The snapshot written at close holds only the producers still known."""
    plog = _open(tmp_path / "t-0")
    plog.append(_data(1, 0, T0))
    plog.append(_data(2, 0, T0 + 5_000))
    assert plog.remove_expired_producers(T0 + 1_000, EXPIRATION_MS) == [1]
    plog.close()
    again = _open(tmp_path / "t-0")
    try:
        assert _ids(again) == [2]
    finally:
        again.close()
