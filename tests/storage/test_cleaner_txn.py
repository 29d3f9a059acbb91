"""Compaction of transactional data on the real log, pass by pass, with the exact offsets kept.

Each scenario follows a case of Kafka's ``LogCleanerTest`` (named in its docstring); the rules
are ``LogCleaner.cleanInto`` / ``CleanedTransactionMetadata``: records of aborted transactions go,
a COMMIT/ABORT marker stays while a batch of its transaction is still read and then for
``delete.retention.ms`` after the pass that first finds it alone (its delete horizon), the batch
holding a producer's last data offset stays as an empty header, and only segments below the last
stable offset are cleaned. ``now`` plays Kafka's ``currentTime``; ``two_pass`` is Kafka's
``runTwoPassClean`` (a pass at ``now``, then one past the horizon).
"""

from __future__ import annotations

from pathlib import Path

import pytest

from groupcoord.clock import ManualClock
from groupcoord.formats.batch import ATTR_TRANSACTIONAL, build_batch, decode_records, parse_header
from groupcoord.storage.cleaner import ATTR_DELETE_HORIZON
from groupcoord.storage.control import build_marker_batch
from groupcoord.storage.log import PartitionLog
from groupcoord.storage.log_config import LogConfig
from groupcoord.storage.txnindex import AbortedTxn, read_txn_index

T0 = 1_700_000_000_000
DAY = 86_400_000


class Log:
    """A compacted partition plus Kafka's test helpers (``appendTransactionalAsLeader``,
    ``commitMarker``/``abortMarker``, ``keysInLog``, ``offsetsInLog``, ...)."""

    def __init__(self, path: Path, *, delete_retention_ms: int = DAY) -> None:
        self.path = path
        self.clock = ManualClock(T0)
        self.config = LogConfig(cleanup_policy="compact", delete_retention_ms=delete_retention_ms)
        self.plog, _ = PartitionLog.open(path, self.config, self.clock)
        self.seq: dict[int, int] = {}

    def txn(self, pid: int, keys: list[int], epoch: int = 0, *, seq: int | None = None) -> int:
        seq = self.seq.get(pid, 0) if seq is None else seq
        self.seq[pid] = seq + len(keys)
        batch = build_batch(
            [(str(k).encode(), str(k).encode(), ()) for k in keys],
            timestamp_ms=T0,
            producer_id=pid,
            producer_epoch=epoch,
            base_sequence=seq,
            attributes=ATTR_TRANSACTIONAL,
        )
        return self.plog.append(batch).base_offset

    def record(self, key: int, value: int) -> int:
        batch = build_batch([(str(key).encode(), str(value).encode(), ())], timestamp_ms=T0)
        return self.plog.append(batch).base_offset

    def marker(self, pid: int, *, commit: bool, epoch: int = 0) -> int:
        batch = build_marker_batch(
            producer_id=pid, producer_epoch=epoch, commit=commit, coordinator_epoch=0, timestamp_ms=T0
        )
        return self.plog.append(batch).base_offset

    def clean(self, now: int) -> None:
        self.plog.compact(now)

    def two_pass(self, now: int) -> None:
        self.plog.compact(now)
        self.plog.compact(now + DAY + 1)

    # -- what is in the log ------------------------------------------------------------------
    def _batches(self) -> list[tuple[object, bytes]]:
        return list(self.plog.iter_batches_from(0))

    def keys(self) -> list[int]:
        out = []
        for h, raw in self.plog.iter_batches_from(0):
            if not h.is_control:
                out += [int(r.key) for r in decode_records(raw) if r.key is not None]
        return out

    def offsets(self) -> list[int]:
        return [r.offset for _h, raw in self.plog.iter_batches_from(0) for r in decode_records(raw)]

    def last_offsets(self) -> list[int]:
        return [h.last_offset for h, _raw in self.plog.iter_batches_from(0)]

    def base_offsets(self) -> list[int]:
        return [h.base_offset for h, _raw in self.plog.iter_batches_from(0)]

    def aborted(self) -> list[AbortedTxn]:
        return self.plog.aborted_transactions(0, 1 << 40)


@pytest.fixture
def log(tmp_path: Path) -> Log:
    return Log(tmp_path / "c-0")


def test_aborted_records_go_and_the_abort_marker_goes_a_retention_after_its_data(log: Log) -> None:
    """Kafka: LogCleanerTest.testAbortMarkerRemoval."""
    log.txn(1, [1])  # 0
    log.txn(1, [2, 3])  # 1-2
    log.marker(1, commit=False)  # 3
    log.txn(1, [3])  # 4
    log.marker(1, commit=True)  # 5
    log.plog.roll()
    log.clean(T0)
    assert (log.keys(), log.offsets()) == ([3], [3, 4, 5])
    # the marker still has data read in this pass: its index entry stays
    assert log.aborted() == [AbortedTxn(producer_id=1, first_offset=0, last_offset=3, last_stable_offset=4)]
    log.clean(T0)  # alone now: the horizon is set (now + delete.retention.ms), the entry goes
    (marker,) = [h for h, _raw in log.plog.iter_batches_from(0) if h.base_offset == 3]
    assert marker.attributes & ATTR_DELETE_HORIZON and marker.base_timestamp == T0 + DAY
    assert (log.offsets(), log.aborted()) == ([3, 4, 5], [])
    assert read_txn_index(log.path / "00000000000000000000.txnindex") == []
    log.clean(T0 + DAY - 1)
    assert log.offsets() == [3, 4, 5]
    log.clean(T0 + DAY)
    assert (log.keys(), log.offsets()) == ([3], [4, 5])


def test_commit_marker_stays_while_its_transaction_has_batches(log: Log) -> None:
    """Kafka: LogCleanerTest.testCommitMarkerRemoval."""
    log.txn(1, [1])  # 0
    log.txn(1, [2, 3])  # 1-2
    log.marker(1, commit=True)  # 3
    log.txn(1, [2])  # 4
    log.marker(1, commit=True)  # 5
    log.plog.roll()
    log.clean(T0)
    assert (log.keys(), log.offsets()) == ([1, 3, 2], [0, 2, 3, 4, 5])
    log.txn(1, [1, 3])  # 6-7
    log.marker(1, commit=True)  # 8
    log.plog.roll()
    # the first transaction's batches go; its marker stays, since this pass still read them
    log.clean(T0)
    assert (log.keys(), log.offsets()) == ([2, 1, 3], [3, 4, 5, 6, 7, 8])
    log.clean(T0)  # alone now: not removed early, only given its horizon
    assert (log.keys(), log.offsets()) == ([2, 1, 3], [3, 4, 5, 6, 7, 8])
    log.clean(T0 + DAY)
    assert (log.keys(), log.offsets()) == ([2, 1, 3], [4, 5, 6, 7, 8])


def test_aborted_record_does_not_shadow_an_older_committed_value(log: Log) -> None:
    """Kafka: LogCleanerTest.testBasicTransactionAwareCleaning (aborted records stay out of the
    key map, so key 3 keeps its committed value at offset 3)."""
    log.txn(1, [1, 2])  # 0-1
    log.txn(2, [2, 3])  # 2-3
    log.txn(1, [3, 4])  # 4-5
    log.marker(1, commit=False)  # 6
    log.marker(2, commit=True)  # 7
    log.txn(1, [2])  # 8
    log.marker(1, commit=True)  # 9
    before = log.aborted()
    log.plog.roll()
    log.clean(T0)
    assert (log.keys(), log.offsets()) == ([3, 2], [3, 6, 7, 8, 9])
    assert (
        log.aborted()
        == before
        == [AbortedTxn(producer_id=1, first_offset=0, last_offset=6, last_stable_offset=2)]
    )


def test_aborted_transaction_spanning_segments_keeps_its_last_batch_and_marker(log: Log) -> None:
    """Kafka: LogCleanerTest.testAbortedTransactionSpanningSegments - the batch stays (empty) as
    the producer's last, and so the marker stays, pass after pass."""
    log.txn(1, [1])  # 0
    log.plog.roll()
    log.marker(1, commit=False)  # 1
    log.plog.roll()
    log.clean(T0)
    assert (log.offsets(), log.last_offsets()) == ([1], [0, 1])
    empty = parse_header(log._batches()[0][1])
    assert (empty.record_count, empty.producer_id, empty.base_sequence, empty.is_transactional) == (
        0,
        1,
        0,
        True,
    )
    log.clean(T0 + 10 * DAY)
    assert (log.offsets(), log.last_offsets()) == ([1], [0, 1])
    assert [a.producer_id for a in log.aborted()] == [1]


def test_committed_transaction_spanning_segments_is_kept(log: Log) -> None:
    """Kafka: LogCleanerTest.testCommittedTransactionSpanningSegments."""
    log.txn(1, [1])  # 0
    log.plog.roll()
    log.marker(1, commit=True)  # 1
    log.plog.roll()
    log.two_pass(T0)
    assert (log.offsets(), log.last_offsets()) == ([0, 1], [0, 1])


def test_markers_of_interleaved_transactions_over_three_passes(log: Log) -> None:
    """Kafka: LogCleanerTest.testMultiPassSegmentCleaningWithAbortedTransactions. Kafka's test
    uses an offset map of 4 slots, so its first passes keep more; our map holds every key, and
    the final state is Kafka's."""
    log.txn(1, [1, 2])  # 0-1
    log.txn(2, [2, 3])  # 2-3
    log.txn(1, [3, 4])  # 4-5
    log.marker(1, commit=True)  # 6
    log.marker(2, commit=True)  # 7
    log.txn(1, [2, 3])  # 8-9
    log.marker(1, commit=False)  # 10
    log.txn(2, [4, 5])  # 11-12
    log.txn(1, [5, 6])  # 13-14
    log.marker(1, commit=True)  # 15
    log.marker(2, commit=False)  # 16
    log.txn(2, [6, 7])  # 17-18
    log.marker(2, commit=True)  # 19
    log.plog.roll()
    expected = [
        AbortedTxn(producer_id=1, first_offset=8, last_offset=10, last_stable_offset=11),
        AbortedTxn(producer_id=2, first_offset=11, last_offset=16, last_stable_offset=17),
    ]
    assert log.aborted() == expected
    log.clean(T0)  # aborted data goes, markers stay (their data was read in this pass)
    assert log.base_offsets() == [0, 2, 4, 6, 7, 10, 13, 15, 16, 17, 19]
    assert log.offsets() == [0, 2, 4, 5, 6, 7, 10, 13, 15, 16, 17, 18, 19]
    assert log.aborted() == expected
    log.clean(T0)  # no aborted data left: the markers get their horizon, the index empties
    assert log.offsets() == [0, 2, 4, 5, 6, 7, 10, 13, 15, 16, 17, 18, 19]
    assert log.aborted() == []
    log.clean(T0 + DAY)  # the abort markers (10, 16) go
    assert log.base_offsets() == [0, 2, 4, 6, 7, 13, 15, 17, 19]
    assert log.offsets() == [0, 2, 4, 5, 6, 7, 13, 15, 17, 18, 19]
    assert log.plog.producer_state().ongoing() == {}


def test_empty_batch_goes_once_the_producer_writes_again(log: Log) -> None:
    """Kafka: LogCleanerTest.testAbortMarkerRetentionWithEmptyBatch. The new transaction is still
    open when cleaned, so its segment is above the last stable offset and not touched."""
    log.txn(1, [2, 3])  # 0-1
    log.marker(1, commit=False)  # 2
    log.plog.roll()
    indexed = [AbortedTxn(producer_id=1, first_offset=0, last_offset=2, last_stable_offset=3)]
    assert log.aborted() == indexed
    log.clean(T0)
    assert (log.keys(), log.offsets(), log.last_offsets(), log.aborted()) == ([], [2], [1, 2], indexed)
    log.two_pass(T0)  # the empty batch holds the last sequence: it and so the marker stay
    assert (log.keys(), log.offsets(), log.last_offsets(), log.aborted()) == ([], [2], [1, 2], indexed)
    log.txn(1, [1])  # 3, a new transaction (open)
    log.plog.roll()
    assert log.plog.last_stable_offset == 3
    log.clean(T0)
    # the marker stays because this pass read the (now removable) empty batch
    assert (log.keys(), log.offsets(), log.last_offsets()) == ([1], [2, 3], [2, 3])
    log.two_pass(T0)
    assert (log.keys(), log.offsets(), log.last_offsets()) == ([1], [3], [3])
    assert log.aborted() == []


def test_a_lone_commit_marker_stays_as_the_producers_empty_last_batch(log: Log) -> None:
    """Kafka: LogCleanerTest.testCleanEmptyControlBatch."""
    log.marker(1, commit=True)  # 0
    log.record(2, 2)  # 1
    log.record(3, 3)  # 2
    log.plog.roll()
    log.two_pass(T0)
    assert (log.keys(), log.offsets(), log.last_offsets()) == ([2, 3], [1, 2], [0, 1, 2])
    log.clean(T0 + 100 * DAY)  # an empty control batch is cleaned again without harm
    assert (log.keys(), log.offsets(), log.last_offsets()) == ([2, 3], [1, 2], [0, 1, 2])


def test_compaction_never_crosses_the_last_stable_offset(log: Log) -> None:
    """Kafka: LogCleanerManager.cutOffsetToClean (the first uncleanable offset is at most the
    last stable offset). A segment holding part of an open transaction is not cleaned, nor is
    any later one, until the transaction ends."""
    log.record(1, 1)  # 0
    log.record(1, 2)  # 1
    log.plog.roll()
    log.txn(7, [5])  # 2: open
    log.record(1, 3)  # 3
    log.plog.roll()
    log.record(2, 1)  # 4
    log.plog.roll()
    assert log.plog.last_stable_offset == 2
    log.clean(T0)
    # only the first segment was cleaned, against the keys below the LSO
    assert log.offsets() == [1, 2, 3, 4]
    log.marker(7, commit=False)  # 5
    log.plog.roll()
    log.clean(T0)
    assert (log.offsets(), log.keys()) == ([3, 4, 5], [1, 2])


def test_a_cleaned_log_reopens_with_the_same_producer_state(tmp_path: Path) -> None:
    """Kafka: LogCleanerTest.testDuplicateCheckAfterCleaning - the empty batches the cleaner
    keeps carry each producer's epoch and last sequence, so a full rebuild (no snapshot) after
    cleaning finds the same state."""
    log = Log(tmp_path / "c-0")
    log.txn(1, [1, 2, 3])  # 0-2
    log.marker(1, commit=False)  # 3
    log.txn(2, [1], epoch=3)  # 4
    log.marker(2, commit=True, epoch=3)  # 5
    log.record(1, 9)  # 6
    log.plog.roll()
    log.two_pass(T0)
    log.clean(T0 + 3 * DAY)
    before = {
        e.producer_id: (e.epoch, e.last_sequence, e.last_offset)
        for e in log.plog.producer_state().producers()
    }
    assert before == {1: (0, 2, 2), 2: (3, 0, 4)}
    # pid 1's aborted batch stays empty as its last, so its marker stays too (as in Kafka)
    assert log.offsets() == [3, 5, 6]
    assert log.last_offsets() == [2, 3, 4, 5, 6]
    aborted = log.aborted()
    assert aborted == [AbortedTxn(producer_id=1, first_offset=0, last_offset=3, last_stable_offset=4)]
    log.plog.close()
    for snap in (tmp_path / "c-0").glob("*.snapshot"):
        snap.unlink()
    again, _ = PartitionLog.open(tmp_path / "c-0", log.config, log.clock)
    after = {
        e.producer_id: (e.epoch, e.last_sequence, e.last_offset) for e in again.producer_state().producers()
    }
    assert after == before
    assert again.aborted_transactions(0, 100) == aborted


def test_a_batch_emptied_by_keys_frees_its_transactions_markers(log: Log) -> None:
    """Kafka: LogCleanerTest.testDeletedBatchesWithNoMessagesRead."""
    log.txn(1, [1])  # 0
    log.marker(1, commit=False)  # 1
    log.txn(1, [2])  # 2
    log.txn(1, [2])  # 3
    log.marker(1, commit=True)  # 4
    log.plog.roll()
    log.clean(T0)
    assert (log.keys(), log.offsets()) == ([2], [1, 3, 4])
    log.two_pass(T0)
    assert (log.keys(), log.offsets()) == ([2], [3, 4])


def test_empty_batches_and_markers_go_when_sequences_start_again(log: Log) -> None:
    """Kafka: LogCleanerTest.testEmptyBatchRemovalWithSequenceReuse (the group coordinator starts
    every transactional batch at sequence 0)."""
    log.txn(1, [1], seq=0)  # 0
    log.marker(1, commit=True)  # 1
    log.txn(1, [2], seq=0)  # 2
    log.marker(1, commit=True)  # 3
    log.record(1, 1)  # 4
    log.record(2, 1)  # 5
    log.plog.roll()
    log.clean(T0)
    assert (log.offsets(), log.last_offsets()) == ([1, 3, 4, 5], [1, 2, 3, 4, 5])
    log.two_pass(T0)
    assert (log.offsets(), log.last_offsets()) == ([3, 4, 5], [2, 3, 4, 5])


def test_commit_markers_stay_while_their_producers_empty_batches_do(log: Log) -> None:
    """Kafka: LogCleanerTest.testCommitMarkerRetentionWithEmptyBatch."""
    log.txn(1, [2, 3])  # 0-1
    log.plog.roll()
    log.txn(2, [2, 3])  # 2-3
    log.marker(2, commit=True)  # 4
    log.plog.roll()
    log.record(2, 2)  # 5
    log.record(3, 3)  # 6
    log.marker(1, commit=True)  # 7
    log.plog.roll()
    log.clean(T0)  # both transactions' records go; their batches stay empty as the producers' last
    assert (log.keys(), log.offsets(), log.last_offsets()) == ([2, 3], [4, 5, 6, 7], [1, 3, 4, 5, 6, 7])
    log.clean(T0)
    assert (log.keys(), log.offsets(), log.last_offsets()) == ([2, 3], [4, 5, 6, 7], [1, 3, 4, 5, 6, 7])
    log.txn(2, [1])  # 8
    log.marker(2, commit=True)  # 9
    log.plog.roll()
    log.clean(T0)  # pid 2's empty batch goes; its marker stays, the pass read that batch
    assert (log.keys(), log.offsets(), log.last_offsets()) == (
        [2, 3, 1],
        [4, 5, 6, 7, 8, 9],
        [1, 4, 5, 6, 7, 8, 9],
    )
    log.two_pass(T0)
    assert (log.keys(), log.offsets(), log.last_offsets()) == ([2, 3, 1], [5, 6, 7, 8, 9], [1, 5, 6, 7, 8, 9])
