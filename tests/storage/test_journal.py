"""The shared write-ahead journal (storage/journal.py): one sync for many partitions, and what a
power loss leaves.

A power loss is simulated by cutting every segment file back to what its own fsyncs made durable
(``flushed_offset``: the batches below it) and leaving the journal file as its syncs left it,
then opening the data directory again without a clean shutdown.
"""

from __future__ import annotations

import asyncio
import logging
import os
from pathlib import Path

import pytest

from groupcoord.broker.durability import Flusher
from groupcoord.clock import ManualClock
from groupcoord.errors import DataDirError
from groupcoord.formats.batch import build_batch, decode_records
from groupcoord.storage.journal import HEADER_SIZE, JOURNAL_FILE, Journal
from groupcoord.storage.log import PartitionLog
from groupcoord.storage.log_config import LogConfig
from groupcoord.storage.manager import LogManager
from power_loss import cut_segment_to

T0 = 1_700_000_000_000
TOPIC = "__consumer_offsets"


def open_manager(path: Path, journaled: tuple[str, ...] = (TOPIC,)) -> LogManager:
    return LogManager.open(path, LogConfig(), ManualClock(T0), journaled_topics=journaled)


def put(plog: PartitionLog, *values: bytes) -> int:
    batch = build_batch([(b"k", v, ()) for v in values], timestamp_ms=T0)
    return plog.append(batch).base_offset


def values(plog: PartitionLog) -> list[tuple[int, bytes]]:
    out = []
    for _h, data in plog.iter_batches_from(plog.log_start_offset):
        out.extend((r.offset, r.value) for r in decode_records(data) if r.value is not None)
    return out


def power_loss(manager: LogManager) -> None:
    """Cut each segment back to its fsynced batches; the old manager is never used again."""
    if manager.journal is not None:
        manager.journal.abandon()
    for plog in manager.partitions().values():
        for path in plog.segment_files():
            cut_segment_to(path, plog.flushed_offset)


def fifty_partitions(tmp_path: Path) -> tuple[LogManager, list[PartitionLog]]:
    m = open_manager(tmp_path)
    m.create_topic(TOPIC, 50, {}, internal=True)
    return m, [m.partition(TOPIC, p) for p in range(50)]


def test_a_round_over_fifty_journaled_partitions_is_one_journal_sync_and_no_fsync(tmp_path: Path) -> None:
    m, logs = fifty_partitions(tmp_path)
    assert m.journal is not None
    for p, plog in enumerate(logs):
        put(plog, b"commit-%d" % p)

    async def one_round() -> None:
        flusher = Flusher()
        try:
            await flusher.flush({(TOPIC, p): plog for p, plog in enumerate(logs)})
        finally:
            flusher.close()

    asyncio.run(one_round())
    assert (m.journal.syncs, m.journal.checkpoints) == (1, 0)
    assert [plog.flushed_offset for plog in logs] == [0] * 50  # no segment was fsynced
    m.close()


def test_a_power_loss_after_the_journal_sync_keeps_every_batch_with_its_offsets(tmp_path: Path) -> None:
    m, logs = fifty_partitions(tmp_path)
    assert m.journal is not None
    for p in (0, 7, 49):
        put(logs[p], b"a%d" % p)
        put(logs[p], b"b%d" % p, b"c%d" % p)
    m.journal.flush()
    put(logs[7], b"never-synced")  # queued only: a power loss may take it
    power_loss(m)
    assert m.partition(TOPIC, 7).segment_files()[0].stat().st_size == 0  # the segment lost it all

    again = open_manager(tmp_path)
    assert again.journal_report is not None
    assert (again.journal_report.batches_appended, again.journal_report.partitions) == (6, 3)
    for p in (0, 7, 49):
        assert values(again.partition(TOPIC, p)) == [(0, b"a%d" % p), (1, b"b%d" % p), (2, b"c%d" % p)]
        assert again.partition(TOPIC, p).log_end_offset == 3
        assert again.partition(TOPIC, p).flushed_offset == 3  # the replay fsynced what it appended
    assert again.partition(TOPIC, 1).log_end_offset == 0
    # The next appends continue after the replayed offsets.
    assert put(again.partition(TOPIC, 7), b"d") == 3
    again.close()


def test_without_the_journal_sync_a_power_loss_takes_the_unsynced_batches(tmp_path: Path) -> None:
    """The control for the test above: the promise covers what a round synced, no more."""
    m, logs = fifty_partitions(tmp_path)
    put(logs[3], b"x")
    power_loss(m)
    again = open_manager(tmp_path)
    assert values(again.partition(TOPIC, 3)) == []
    again.close()


def test_a_torn_last_round_is_ignored_and_the_rounds_before_it_replay(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    m, logs = fifty_partitions(tmp_path)
    assert m.journal is not None
    put(logs[0], b"synced")
    m.journal.flush()
    size = m.journal.end
    put(logs[0], b"torn")
    m.journal.flush()
    second = m.journal.end - size
    power_loss(m)
    # The second round's entry was only half written when the power went: its second half is
    # still the zeros the file was extended with.
    with open(tmp_path / JOURNAL_FILE, "r+b") as f:
        f.seek(size + second // 2)
        f.write(bytes(second - second // 2))
    with caplog.at_level(logging.INFO, logger="groupcoord.storage.journal"):
        again = open_manager(tmp_path)
    assert values(again.partition(TOPIC, 0)) == [(0, b"synced")]
    assert again.journal_report is not None
    assert (again.journal_report.entries, again.journal_report.stopped_at) == (1, size)
    assert "replayed 1 batches into 1 partitions" in caplog.text
    again.close()


def test_a_full_journal_checkpoints_the_partitions_and_older_entries_never_replay(tmp_path: Path) -> None:
    m = LogManager.open(tmp_path, LogConfig(), ManualClock(T0), journaled_topics=(TOPIC,))
    m.create_topic(TOPIC, 3, {}, internal=True)
    journal = m.journal
    assert journal is not None
    journal.capacity = HEADER_SIZE + 600  # a few rounds of one small batch each
    expected: dict[int, list[tuple[int, bytes]]] = {0: [], 1: [], 2: []}
    for i in range(20):
        p = i % 3
        off = put(m.partition(TOPIC, p), b"v%d" % i)
        expected[p].append((off, b"v%d" % i))
        journal.flush()
    # Each flush either synced the journal or, when the round would not fit, checkpointed it.
    assert journal.checkpoints >= 2
    assert journal.syncs + journal.checkpoints == 20
    # After a checkpoint every partition is fsynced up to what it held then.
    assert all(m.partition(TOPIC, p).flushed_offset > 0 for p in range(3))
    power_loss(m)
    again = open_manager(tmp_path)
    assert {p: values(again.partition(TOPIC, p)) for p in range(3)} == expected
    again.close()


def test_a_truncated_partition_does_not_get_its_truncated_batches_back(tmp_path: Path) -> None:
    m, logs = fifty_partitions(tmp_path)
    assert m.journal is not None
    for i in range(5):
        put(logs[2], b"old%d" % i)
    m.journal.flush()
    assert logs[2].truncate_to(2) == 2
    assert m.journal.checkpoints == 1  # the truncation checkpointed the journal first
    put(logs[2], b"new2")
    m.journal.flush()
    power_loss(m)
    again = open_manager(tmp_path)
    assert values(again.partition(TOPIC, 2)) == [(0, b"old0"), (1, b"old1"), (2, b"new2")]
    again.close()


def test_a_deleted_topics_entries_are_not_replayed_into_a_new_topic_of_its_name(tmp_path: Path) -> None:
    m = open_manager(tmp_path, journaled=("t",))
    m.create_topic("t", 1, {})
    assert m.journal is not None
    for i in range(3):
        put(m.partition("t", 0), b"old%d" % i)
    m.journal.flush()
    m.delete_topic("t")
    m.create_topic("t", 1, {})
    put(m.partition("t", 0), b"new")
    m.journal.flush()
    power_loss(m)
    again = open_manager(tmp_path, journaled=("t",))
    assert values(again.partition("t", 0)) == [(0, b"new")]
    assert again.journal_report is not None
    assert again.journal_report.unknown_partition_entries == 3  # one per append to the old topic
    again.close()


def test_a_clean_close_leaves_nothing_to_replay(tmp_path: Path) -> None:
    m, logs = fifty_partitions(tmp_path)
    put(logs[4], b"x")
    assert m.journal is not None
    m.journal.flush()
    m.close()
    again = open_manager(tmp_path)
    assert again.journal_report is not None
    assert (again.journal_report.entries, again.journal_report.batches_appended) == (0, 0)
    assert values(again.partition(TOPIC, 4)) == [(0, b"x")]
    again.close()


def test_a_journal_left_by_a_journaling_run_is_replayed_once_by_a_run_that_does_not_journal(
    tmp_path: Path,
) -> None:
    """An explicit log.flush.* policy turns the journal off; what an earlier run acknowledged
    through it is still brought back, and the file goes."""
    m, logs = fifty_partitions(tmp_path)
    assert m.journal is not None
    put(logs[9], b"acknowledged")
    m.journal.flush()
    power_loss(m)
    again = open_manager(tmp_path, journaled=())
    assert again.journal is None
    assert values(again.partition(TOPIC, 9)) == [(0, b"acknowledged")]
    assert not (tmp_path / JOURNAL_FILE).exists()
    again.close()


def test_a_failed_journal_write_fails_the_round_and_the_next_flush_checkpoints(tmp_path: Path) -> None:
    m, logs = fifty_partitions(tmp_path)
    journal = m.journal
    assert journal is not None
    put(logs[5], b"v")
    real_fd = journal.fd
    journal.fd = os.open(os.devnull, os.O_RDONLY)  # writes to it fail with EBADF
    try:
        with pytest.raises(OSError):
            journal.flush()
    finally:
        os.close(journal.fd)
        journal.fd = real_fd
    put(logs[5], b"w")
    journal.flush()  # the broken journal is not trusted: this round fsyncs the partitions
    assert journal.checkpoints == 1
    assert logs[5].flushed_offset == 2
    power_loss(m)
    again = open_manager(tmp_path)
    assert values(again.partition(TOPIC, 5)) == [(0, b"v"), (1, b"w")]
    again.close()


def test_journal_key_names_topic_id_and_partition() -> None:
    import uuid

    tid = uuid.UUID(int=7)
    assert Journal.key(tid, 3) == tid.bytes + (3).to_bytes(4, "big")


def test_an_entry_whose_batch_does_not_append_stops_the_open_naming_the_journal(tmp_path: Path) -> None:
    """The entry's own CRC checks but the batch inside it is damaged (its batch CRC fails): the
    open stops with a message naming the journal and the batch, and leaves the file as it is."""
    m, logs = fifty_partitions(tmp_path)
    journal = m.journal
    assert journal is not None
    batch = bytearray(build_batch([(b"k", b"v", ())], timestamp_ms=T0))
    batch[-1] ^= 0xFF  # a record byte: the batch CRC no longer matches
    journal.record(logs[0], Journal.key(m.topics_view[TOPIC].topic_id, 0), batch)
    journal.flush()
    power_loss(m)
    before = (tmp_path / JOURNAL_FILE).read_bytes()
    expected = r"write-ahead\.journal: could not replay batch 0-0 \(CorruptBatchError"
    with pytest.raises(DataDirError, match=expected):
        open_manager(tmp_path)
    assert (tmp_path / JOURNAL_FILE).read_bytes() == before


def test_appends_racing_flushes_and_checkpoints_on_another_thread_lose_nothing_a_flush_covered(
    tmp_path: Path,
) -> None:
    """The event loop appends while the flusher thread syncs and (with a small capacity)
    checkpoints: every append completed before a flush began is back after a power loss, in
    order, with its offset, and no partition has a gap or a duplicate. Each flush is started
    by the appending thread, which then goes on appending while it runs."""
    import threading

    m, logs = fifty_partitions(tmp_path)
    journal = m.journal
    assert journal is not None
    journal.capacity = HEADER_SIZE + 4096  # about 40 small entries: a checkpoint every few flushes
    parts = logs[:5]
    go, finished = threading.Semaphore(0), threading.Semaphore(0)
    stop = False
    errors: list[BaseException] = []

    def flusher() -> None:
        while True:
            go.acquire()
            if stop:
                return
            try:
                journal.flush()
            except BaseException as exc:  # reported below
                errors.append(exc)
            finished.release()

    thread = threading.Thread(target=flusher)
    thread.start()
    covered = 0
    total = 3000
    try:
        for block in range(0, total, 20):
            go.release()  # a flush starts now: everything appended so far is in it
            for i in range(block, block + 20):  # ... while these appends run beside it
                put(parts[i % 5], b"%d" % i)
            finished.acquire()
            covered = block
    finally:
        stop = True
        go.release()
        thread.join()
    assert errors == []
    assert journal.checkpoints >= 3  # the race included checkpoints, not only syncs
    assert journal.syncs >= 3
    power_loss(m)
    again = open_manager(tmp_path)
    for p in range(5):
        got = values(again.partition(TOPIC, p))
        assert [off for off, _v in got] == list(range(len(got)))  # no gap, no duplicate
        assert [v for _o, v in got] == [b"%d" % i for i in range(p, total, 5)][: len(got)]
        assert len(got) >= len(range(p, covered, 5))
    again.close()


def test_the_file_grows_ahead_of_its_entries_so_rounds_overwrite_in_place(tmp_path: Path) -> None:
    """A round that extends the file changes its size (a file-system journal commit at every
    sync); the journal extends it a step ahead, so the next rounds only overwrite zeros, and a
    replay stops at those zeros."""
    from groupcoord.storage.journal import GROW_STEP

    m, logs = fifty_partitions(tmp_path)
    journal = m.journal
    assert journal is not None
    put(logs[1], b"v0")
    journal.flush()
    path = tmp_path / JOURNAL_FILE
    assert path.stat().st_size == HEADER_SIZE + GROW_STEP
    for i in range(1, 11):
        put(logs[1], b"v%d" % i)
        journal.flush()
    assert path.stat().st_size == HEADER_SIZE + GROW_STEP  # ten more rounds, no growth
    power_loss(m)
    again = open_manager(tmp_path)
    assert values(again.partition(TOPIC, 1)) == [(i, b"v%d" % i) for i in range(11)]
    assert again.journal_report is not None and again.journal_report.entries == 11
    again.close()


def test_a_failed_checkpoint_of_one_partition_makes_the_next_flush_checkpoint_again(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A checkpoint whose partition fsync fails fails its round, and the journal is not trusted
    until a checkpoint succeeds: the next flush fsyncs the partition again (with one partition
    in the generation as with many). The failure is the operating system's: ``os.fsync`` of
    that partition's segment file fails once."""
    m, logs = fifty_partitions(tmp_path)
    journal = m.journal
    assert journal is not None
    journal.capacity = HEADER_SIZE  # every round that holds something checkpoints
    (segment_file,) = logs[6].dir.glob("*.log")
    inode = segment_file.stat().st_ino
    real_fsync = os.fsync
    calls: list[str] = []

    def failing_once(fd: int) -> None:
        if os.fstat(fd).st_ino == inode:
            calls.append("flush")
            if len(calls) == 1:
                raise OSError(5, "injected fsync failure")
        real_fsync(fd)

    monkeypatch.setattr(os, "fsync", failing_once)
    put(logs[6], b"a")
    with pytest.raises(OSError, match="injected"):
        journal.flush()
    assert journal.checkpoints == 0
    journal.capacity = 1 << 20  # room again: only the failure can make the next round checkpoint
    put(logs[6], b"b")
    journal.flush()
    assert (journal.checkpoints, journal.syncs, len(calls)) == (1, 0, 2)
    assert logs[6].flushed_offset == 2
