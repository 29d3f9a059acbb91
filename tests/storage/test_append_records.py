"""PartitionLog.append_records: the log frames a coordinator's records itself, at its own log end.

The coordinators (``__consumer_offsets``, ``__group_events``, ``__transaction_state``) used to
build a batch at offset 0 and hand it to :meth:`PartitionLog.append`, which validated it,
rewrote its base offset and, for LogAppendTime, stamped it and computed its CRC again.
``append_records`` builds the same batch where it goes. These tests hold the two paths to the
same outcome, byte for byte: the segment, index and journal files, the offsets and
:class:`AppendInfo`, the rolls, LogAppendTime, and the refusal of a batch above
``max.message.bytes`` (the same error, nothing written).
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import pytest

from groupcoord.clock import ManualClock
from groupcoord.formats.batch import build_batch, decode_records, parse_header
from groupcoord.storage.journal import HEADER_SIZE, JOURNAL_FILE
from groupcoord.storage.log import LogClosedError, PartitionLog, RecordTooLargeError
from groupcoord.storage.log_config import LogConfig
from groupcoord.storage.manager import LogManager

T0 = 1_700_000_000_000

Entry = tuple[bytes | None, bytes | None, Sequence[tuple[str, bytes | None]]]

#: (entries, timestamp_ms, timestamps, clock advance before the append)
WRITES: list[tuple[list[Entry], int, list[int] | None, int]] = [
    ([(b"\x00\x01group-a", b"\x00\x03" + bytes(30), ())], T0, None, 0),  # an offset commit
    ([(b"k%d" % i, b"v" * i, ()) for i in range(5)], T0 + 1, None, 1),  # one write, five records
    ([(b"tomb", None, ())], T0 + 2, None, 0),  # a tombstone
    ([(b"big", b"x" * 3000, ())], T0 + 3, None, 7),  # past the small-varint path
    ([(None, b"no-key", (("h", b"v"), ("n", None)))], T0 + 4, None, 0),  # headers, null key
    ([(b"a", b"1", ()), (b"b", b"2", ()), (b"c", b"3", ())], T0 + 5, [T0 + 5, T0 + 9, T0 + 6], 3),
    ([(b"late", b"z" * 200, ())], T0 + 20, None, 600_000),  # past segment.ms: a roll
]


def entries_of(plog: PartitionLog) -> list[tuple[int, int, bytes | None, bytes | None]]:
    out = []
    for _h, data in plog.iter_batches_from(plog.log_start_offset):
        out += [(r.offset, r.timestamp, r.key, r.value) for r in decode_records(data)]
    return out


def files_of(path: Path) -> dict[str, bytes]:
    return {p.name: p.read_bytes() for p in sorted(path.iterdir()) if p.is_file()}


@pytest.mark.parametrize("timestamp_type", ["CreateTime", "LogAppendTime"])
def test_append_records_writes_the_bytes_append_of_the_built_batch_writes(
    tmp_path: Path, timestamp_type: str
) -> None:
    config = LogConfig(segment_bytes=4096, segment_ms=300_000, message_timestamp_type=timestamp_type)
    clocks = ManualClock(T0), ManualClock(T0)
    old = PartitionLog(tmp_path / "old-0", config, clock=clocks[0])
    new = PartitionLog(tmp_path / "new-0", config, clock=clocks[1])
    for _round in range(6):  # enough bytes for several segment.bytes rolls
        for entries, ts, timestamps, advance in WRITES:
            for clock in clocks:
                clock.advance(advance)
            built = build_batch(entries, timestamp_ms=ts, timestamps=timestamps)
            info = old.append(built)
            assert new.append_records(entries, ts, timestamps) == len(built)
            assert new.log_end_offset == info.last_offset + 1
    assert old.segment_count > 2
    assert new.segment_base_offsets() == old.segment_base_offsets()
    assert (new.log_end_offset, new.size_bytes) == (old.log_end_offset, old.size_bytes)
    assert entries_of(new) == entries_of(old)
    assert new.max_timestamp_offset() == old.max_timestamp_offset()
    for ts in (T0, T0 + 7, T0 + 600_000, T0 + 10**7):
        assert new.offset_for_timestamp(ts) == old.offset_for_timestamp(ts)
    old.close()
    new.close()
    assert files_of(tmp_path / "new-0") == files_of(tmp_path / "old-0")


def test_log_append_time_stamps_the_batch_with_the_clock(tmp_path: Path) -> None:
    clock = ManualClock(T0)
    plog = PartitionLog(tmp_path / "t-0", LogConfig(message_timestamp_type="LogAppendTime"), clock=clock)
    clock.advance(5000)
    size = plog.append_records([(b"a", b"1", ()), (b"b", b"2", ())], 1)
    assert (plog.log_end_offset, plog.size_bytes, plog.max_timestamp_offset()) == (2, size, (0, T0 + 5000))
    data = plog.read(0, 1000).data
    header = parse_header(data)
    assert (header.timestamp_type, header.base_timestamp, header.max_timestamp) == (1, 1, T0 + 5000)
    assert [r.timestamp for r in decode_records(data)] == [T0 + 5000, T0 + 5000]


def test_a_batch_above_max_message_bytes_is_refused_as_append_refuses_it(tmp_path: Path) -> None:
    """The same RecordTooLargeError (MESSAGE_TOO_LARGE, 10) with the same message; nothing written."""
    clock = ManualClock(T0)
    plog = PartitionLog(tmp_path / "t-0", LogConfig(max_message_bytes=200), clock=clock)
    plog.append_records([(b"small", b"x", ())], T0)
    entries: list[Entry] = [(b"k", b"x" * 300, ())]
    with pytest.raises(RecordTooLargeError) as by_append:
        plog.append(build_batch(entries, timestamp_ms=T0))
    with pytest.raises(RecordTooLargeError) as by_records:
        plog.append_records(entries, T0)
    assert (by_records.value.code, str(by_records.value)) == (by_append.value.code, str(by_append.value))
    assert by_records.value.code == 10
    assert (plog.log_end_offset, plog.size_bytes) == (
        1,
        len(build_batch([(b"small", b"x", ())], timestamp_ms=T0)),
    )


def test_a_closed_log_refuses_append_records(tmp_path: Path) -> None:
    plog = PartitionLog(tmp_path / "t-0", LogConfig(), clock=ManualClock(T0))
    plog.close()
    with pytest.raises(LogClosedError):
        plog.append_records([(b"k", b"v", ())], T0)


def journal_batches(path: Path) -> list[bytes]:
    """The batches of every entry of a journal file (an entry: length u32, crc u32, topic id,
    partition i32, batches; see storage/journal.py), without the topic ids, which differ."""
    data = path.read_bytes()
    out = []
    pos = HEADER_SIZE
    while pos + 8 <= len(data):
        length = int.from_bytes(data[pos : pos + 4], "big")
        if length == 0:
            break
        out.append(data[pos + 8 + 20 : pos + 8 + length])
        pos += 8 + length
    return out


def test_a_journaled_partition_queues_the_same_journal_entries(tmp_path: Path) -> None:
    """After a flush round the journal holds the batches the segment holds, as for append."""
    topic = "__consumer_offsets"
    managers = [
        LogManager.open(tmp_path / name, LogConfig(), ManualClock(T0), journaled_topics=(topic,))
        for name in ("old", "new")
    ]
    for m in managers:
        m.create_topic(topic, 1, {}, internal=True)
    old, new = (m.partition(topic, 0) for m in managers)
    for entries, ts, timestamps, _advance in WRITES:
        old.append(build_batch(entries, timestamp_ms=ts, timestamps=timestamps))
        new.append_records(entries, ts, timestamps)
    for m in managers:
        assert m.journal is not None
        m.journal.flush()
    old_batches = journal_batches(tmp_path / "old" / JOURNAL_FILE)
    assert len(old_batches) == len(WRITES)
    assert journal_batches(tmp_path / "new" / JOURNAL_FILE) == old_batches
    assert (
        b"".join(old_batches)
        == (tmp_path / "new" / "__consumer_offsets-0" / "00000000000000000000.log").read_bytes()
    )
    for m in managers:
        m.close()
