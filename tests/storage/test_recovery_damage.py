"""Damage to any segment of a multi-segment partition, then a restart (issue 11 item 9).

Each test writes a partition over several rolled segments, flushes it (so every offset was
acknowledged to an ``acks=all`` producer), shuts down cleanly or crashes, damages one segment
(truncation mid-batch, at a batch boundary, to zero; a flipped byte under a batch's CRC) and
opens the log again as the broker does. Then it asserts exactly that

* every record of every undamaged segment is readable at its original offset, and so is every
  record of the damaged segment that lies before the damage;
* nothing else changed: the undamaged segments' files and indexes are as before, the damaged
  segment's indexes equal a rebuild from scratch;
* the log end offset is where it was, so the next produce gets a new offset, never one already
  acknowledged; the lost range stays a gap, and a fetch inside it returns the next batch after it.

Kafka recovers from the recovery point only and never drops the segments after a damaged one
unless they too lie after the recovery point (``LogLoader.recoverLog``: unflushed segments after
a corrupt one are deleted; ``LogLoader.loadSegmentFiles``: a segment below the recovery point
whose index fails ``sanityCheck`` is recovered on its own with ``LogSegment.recover``, which
truncates it at the first invalid batch and leaves later segments alone). A fetch returns the
first batch at or after the fetch offset, moving on to later segments (``LocalLog.read``).
"""

from __future__ import annotations

import importlib.util
import logging
import shutil
import struct
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from groupcoord.clock import ManualClock
from groupcoord.formats.batch import (
    CorruptBatchError,
    build_batch,
    decode_records,
    iter_batches,
    parse_header,
    validate_batch,
)
from groupcoord.storage.log import PartitionLog
from groupcoord.storage.log_config import LogConfig

T0 = 1_700_000_000_000
CONFIG = LogConfig(segment_bytes=1500, index_interval_bytes=200)
BATCHES = 40


def batch(i: int, n: int = 3) -> bytes:
    return build_batch(
        [(b"key-%d-%d" % (i, j), b"value-%d-%d" % (i, j) * 3, ()) for j in range(n)],
        timestamp_ms=T0 + i,
    )


@dataclass(frozen=True, slots=True, kw_only=True)
class Batch:
    segment: int  # index of its segment
    position: int
    size: int
    base: int
    last: int


@dataclass(frozen=True, slots=True, kw_only=True)
class Written:
    dir: Path
    records: dict[int, tuple[bytes | None, bytes | None]]
    bases: list[int]
    batches: list[Batch]
    log_end: int
    files: dict[str, bytes]  # every file of the partition directory as left by the writer

    def segment_batches(self, segment: int) -> list[Batch]:
        return [b for b in self.batches if b.segment == segment]

    def log_file(self, segment: int) -> Path:
        return self.dir / f"{self.bases[segment]:020d}.log"


def reopen(path: Path) -> PartitionLog:
    plog, _ = PartitionLog.open(path, CONFIG, ManualClock(T0 + 10_000))
    return plog


def segment_files(path: Path) -> dict[str, bytes]:
    return {p.name: p.read_bytes() for p in path.iterdir() if p.suffix in (".log", ".index", ".timeindex")}


def recover(path: Path, caplog: pytest.LogCaptureFixture) -> PartitionLog:
    """Open the log as the broker does and check that every segment file recovery created,
    changed or deleted is named in a WARNING line of the log's logger."""
    before = segment_files(path)
    caplog.clear()
    with caplog.at_level(logging.WARNING, logger="groupcoord.storage.log"):
        plog = reopen(path)
    after = segment_files(path)
    changed = {name for name in before.keys() | after.keys() if before.get(name) != after.get(name)}
    lines = [
        r.getMessage()
        for r in caplog.records
        if r.levelno >= logging.WARNING and r.name.startswith("groupcoord.storage")
    ]
    for name in changed:
        assert any(name in line for line in lines), (name, lines)
    return plog


def write_partition(root: Path, *, clean: bool) -> Written:
    """A flushed partition of BATCHES batches (3 records each) over several segments.

    ``clean``: closed (clean-shutdown marker); otherwise a copy of the directory taken while the
    log is open, as SIGKILL leaves it."""
    live = root / "live" / "t-0"
    plog, _ = PartitionLog.open(live, CONFIG, ManualClock(T0))
    for i in range(BATCHES):
        plog.append(batch(i))
    plog.flush()  # acks=all: the producer is answered after this
    path = root / "t-0"
    if clean:
        plog.close()
        shutil.copytree(live, path)
    else:
        shutil.copytree(live, path)
        plog.close()
        (path / ".clean_shutdown").unlink(missing_ok=True)
    records: dict[int, tuple[bytes | None, bytes | None]] = {}
    batches: list[Batch] = []
    bases = sorted(int(p.name[:20]) for p in path.glob("*.log"))
    for s, base in enumerate(bases):
        data = (path / f"{base:020d}.log").read_bytes()
        for pos, h in iter_batches(data):
            batches.append(
                Batch(segment=s, position=pos, size=h.size, base=h.base_offset, last=h.last_offset)
            )
            for r in decode_records(data, pos):
                records[r.offset] = (r.key, r.value)
    assert len(bases) >= 6 and len(records) == 3 * BATCHES
    files = {p.name: p.read_bytes() for p in path.iterdir() if p.is_file()}
    return Written(dir=path, records=records, bases=bases, batches=batches, log_end=3 * BATCHES, files=files)


def readable(plog: PartitionLog) -> dict[int, tuple[bytes | None, bytes | None]]:
    """Every record the log serves, by offset, reading batch after batch with ``read``."""
    out: dict[int, tuple[bytes | None, bytes | None]] = {}
    offset = plog.log_start_offset
    while offset < plog.log_end_offset:
        data = plog.read(offset, 1).data
        if not data:
            break
        records = decode_records(data)
        for r in records:
            assert r.offset not in out
            out[r.offset] = (r.key, r.value)
        offset = records[-1].offset + 1
    return out


def rebuilt_indexes(path: Path, tmp: Path) -> dict[str, bytes]:
    """The index files a from-scratch rebuild of ``path``'s segments produces."""
    copy = tmp / "rebuild" / "t-0"
    shutil.copytree(path, copy)
    for p in [*copy.glob("*.index"), *copy.glob("*.timeindex")]:
        p.unlink()
    reopen(copy).close()
    out = {p.name: p.read_bytes() for p in [*copy.glob("*.index"), *copy.glob("*.timeindex")]}
    shutil.rmtree(tmp / "rebuild")
    return out


def damage_points(w: Written, segment: int) -> Iterator[tuple[str, int]]:
    """(name, byte position to truncate at) for one segment."""
    batches = w.segment_batches(segment)
    middle = batches[len(batches) // 2]
    yield "mid-batch", middle.position + middle.size // 2
    yield "batch-boundary", middle.position
    yield "first-batch-torn", batches[0].size - 1
    yield "zero", 0


def check_after_damage(w: Written, plog: PartitionLog, *, segment: int, lost: list[Batch], tmp: Path) -> None:
    """The exact state after recovery when ``lost`` (batches of ``segment``) are gone."""
    lost_offsets = {o for b in lost for o in range(b.base, b.last + 1)}
    expected = {o: kv for o, kv in w.records.items() if o not in lost_offsets}
    assert readable(plog) == expected
    # Offsets never move back: everything below the old log end was acknowledged.
    assert plog.log_end_offset == plog.high_watermark == w.log_end
    assert plog.log_start_offset == w.bases[0]
    last_segment = segment == len(w.bases) - 1
    assert plog.segment_base_offsets() == w.bases + ([w.log_end] if last_segment and lost else [])
    if lost:
        gap_start = lost[0].base
        gap_end = w.log_end if last_segment else w.bases[segment + 1]
        assert plog.recovery_report.gaps == ((gap_start, gap_end),)
        # A fetch inside the gap returns the first batch after it (or nothing at the log end),
        # whether the batches are copied or sent from the file.
        for offset in (gap_start, gap_end - 1):
            data = plog.read(offset, 1).data
            region = plog.read_region(offset, 1).data
            if not isinstance(region, bytes):
                region_bytes = region.read()
                region.close()
            else:
                region_bytes = region
            assert bytes(data) == region_bytes
            if last_segment:
                assert bytes(data) == b""
            else:
                assert parse_header(data).base_offset == gap_end
    # Undamaged segments are untouched, byte for byte, indexes included.
    for s, base in enumerate(w.bases):
        if s == segment:
            continue
        for suffix in (".log", ".index", ".timeindex"):
            name = f"{base:020d}{suffix}"
            assert (w.dir / name).read_bytes() == w.files[name], name
    # The damaged segment: its kept batches unchanged, its indexes as a rebuild makes them.
    damaged = w.log_file(segment)
    kept = [b for b in w.segment_batches(segment) if b not in lost]
    kept_size = kept[-1].position + kept[-1].size if kept else 0
    assert damaged.read_bytes() == w.files[damaged.name][:kept_size]
    plog.close()
    assert rebuilt_indexes(w.dir, tmp) == {
        p.name: p.read_bytes() for p in [*w.dir.glob("*.index"), *w.dir.glob("*.timeindex")]
    }
    # The next produce gets the next new offset.
    again = reopen(w.dir)
    assert again.append(batch(99)).base_offset == w.log_end
    assert readable(again) == {
        **expected,
        **{w.log_end + j: (b"key-99-%d" % j, b"value-99-%d" % j * 3) for j in range(3)},
    }
    again.close()


@pytest.mark.parametrize("clean", [True, False], ids=["clean-shutdown", "crash"])
def test_truncating_any_segment_loses_only_the_batches_it_cut(
    tmp_path: Path, clean: bool, caplog: pytest.LogCaptureFixture
) -> None:
    """Every segment in turn, truncated mid-batch, at a batch boundary, inside its first batch
    and to zero bytes: only the batches at and after the cut are lost; every later segment
    survives whole and the log end offset stays where it was."""
    original = write_partition(tmp_path / "original", clean=clean)
    for segment in range(len(original.bases)):
        for name, cut in damage_points(original, segment):
            case = tmp_path / f"{segment}-{name}"
            shutil.copytree(original.dir, case / "t-0")
            w = Written(
                dir=case / "t-0",
                records=original.records,
                bases=original.bases,
                batches=original.batches,
                log_end=original.log_end,
                files=original.files,
            )
            victim = w.log_file(segment)
            with open(victim, "r+b") as f:
                f.truncate(cut)
            lost = [b for b in w.segment_batches(segment) if b.position + b.size > cut]
            plog = recover(w.dir, caplog)
            assert victim.name in caplog.text, (segment, name)
            check_after_damage(w, plog, segment=segment, lost=lost, tmp=case)
            shutil.rmtree(case)


def test_flipped_byte_in_a_rolled_segment_is_served_as_stored_and_loses_nothing(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """Rolled segments below the recovery point are trusted at open, as in Kafka (only an index
    that fails its sanity check makes ``LogLoader.loadSegmentFiles`` recover a rolled segment):
    a byte flipped inside a batch's CRC-protected body changes nothing at open, and every other
    batch is read as before. The damaged batch goes out as stored; a client that checks CRCs
    detects it."""
    w = write_partition(tmp_path, clean=False)
    segment = len(w.bases) // 2
    victim_batch = w.segment_batches(segment)[1]
    path = w.log_file(segment)
    data = bytearray(path.read_bytes())
    data[victim_batch.position + victim_batch.size - 5] ^= 0xFF
    path.write_bytes(bytes(data))
    plog = recover(w.dir, caplog)
    assert plog.recovery_report.gaps == ()
    assert plog.log_end_offset == w.log_end
    with pytest.raises(CorruptBatchError):
        validate_batch(plog.read(victim_batch.base, 1).data)
    served = readable(plog)
    assert {o: kv for o, kv in served.items() if not victim_batch.base <= o <= victim_batch.last} == {
        o: kv for o, kv in w.records.items() if not victim_batch.base <= o <= victim_batch.last
    }
    assert plog.append(batch(99)).base_offset == w.log_end


@pytest.mark.parametrize("clean", [True, False], ids=["clean-shutdown", "crash"])
def test_crc_damage_found_by_an_index_rebuild_cuts_only_that_segment(
    tmp_path: Path, clean: bool, caplog: pytest.LogCaptureFixture
) -> None:
    """A middle segment with a flipped byte under a batch's CRC and a missing index is rebuilt
    with every batch validated (``LogSegment.recover`` calls ``ensureValid``): it is cut at the
    corrupt batch; the later segments and the log end offset are kept."""
    w = write_partition(tmp_path / "w", clean=clean)
    segment = len(w.bases) // 2
    batches = w.segment_batches(segment)
    victim_batch = batches[len(batches) // 2]
    path = w.log_file(segment)
    data = bytearray(path.read_bytes())
    data[victim_batch.position + victim_batch.size - 5] ^= 0xFF
    path.write_bytes(bytes(data))
    path.with_suffix(".index").unlink()
    plog = recover(w.dir, caplog)
    lost = [b for b in batches if b.position >= victim_batch.position]
    check_after_damage(w, plog, segment=segment, lost=lost, tmp=tmp_path)


def test_crc_damage_in_the_active_segment_after_a_crash_keeps_the_log_end(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """After a crash the active segment is validated batch by batch and cut at the corrupt one
    (as Kafka's recovery of the segments after the recovery point); every offset below the
    flushed log end was acknowledged, so the log end stays and the cut range is a gap."""
    w = write_partition(tmp_path / "w", clean=False)
    segment = len(w.bases) - 1
    batches = w.segment_batches(segment)
    victim_batch = batches[0]
    path = w.log_file(segment)
    data = bytearray(path.read_bytes())
    data[victim_batch.position + victim_batch.size - 5] ^= 0xFF
    path.write_bytes(bytes(data))
    plog = recover(w.dir, caplog)
    check_after_damage(w, plog, segment=segment, lost=batches, tmp=tmp_path)


@pytest.mark.parametrize("clean", [True, False], ids=["clean-shutdown", "crash"])
def test_batch_whose_offsets_run_into_the_next_segment_is_cut(
    tmp_path: Path, clean: bool, caplog: pytest.LogCaptureFixture
) -> None:
    """The base offset is outside a batch's CRC: a damaged one that makes the last batch of a
    rolled segment reach the next segment's base offset is cut, and nothing else is."""
    w = write_partition(tmp_path / "w", clean=clean)
    segment = len(w.bases) // 2
    victim_batch = w.segment_batches(segment)[-1]
    path = w.log_file(segment)
    data = bytearray(path.read_bytes())
    struct.pack_into(">q", data, victim_batch.position, w.bases[segment + 1])
    path.write_bytes(bytes(data))
    plog = recover(w.dir, caplog)
    assert plog.recovery_report.truncated_from_offset == victim_batch.base
    check_after_damage(w, plog, segment=segment, lost=[victim_batch], tmp=tmp_path)


def test_deleted_segment_files_leave_a_gap_and_keep_the_log_end(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """A middle segment whose files are gone (and the last one too): the offsets between stay a
    gap, a fetch in it returns the next batch, and the log end offset does not move back."""
    w = write_partition(tmp_path, clean=True)
    middle = len(w.bases) // 2
    for s in (middle, len(w.bases) - 1):
        for suffix in (".log", ".index", ".timeindex"):
            (w.dir / f"{w.bases[s]:020d}{suffix}").unlink()
    plog = recover(w.dir, caplog)
    lost = {
        o for b in w.batches if b.segment in (middle, len(w.bases) - 1) for o in range(b.base, b.last + 1)
    }
    assert readable(plog) == {o: kv for o, kv in w.records.items() if o not in lost}
    assert plog.log_end_offset == w.log_end
    assert parse_header(plog.read(w.bases[middle], 1).data).base_offset == w.bases[middle + 1]
    assert plog.append(batch(99)).base_offset == w.log_end


# ---------------------------------------------------------------------------------------------
# Through a broker process and a real client
# ---------------------------------------------------------------------------------------------


def _broker_process_class() -> type[Any]:
    """``BrokerProcess`` of the end-to-end harness (tests/e2e/conftest.py)."""
    path = Path(__file__).resolve().parents[1] / "e2e" / "conftest.py"
    spec = importlib.util.spec_from_file_location("_e2e_broker_harness", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    cls: type[Any] = module.BrokerProcess
    return cls


def _segment_batches(partition_dir: Path) -> list[tuple[Path, int, int, int]]:
    """(segment file, batch position, base offset, last offset) of every batch, in order."""
    out: list[tuple[Path, int, int, int]] = []
    for path in sorted(partition_dir.glob("*.log")):
        for pos, h in iter_batches(path.read_bytes()):
            out.append((path, pos, h.base_offset, h.last_offset))
    return out


def _cut_segment(partition_dir: Path, which: int) -> tuple[int, int | None]:
    """Truncate segment number ``which`` (negative: from the end) of a partition inside its
    second batch (its first if it has only one); returns ``(first offset lost, next segment's
    base or None for the last)``."""
    batches = _segment_batches(partition_dir)
    files = sorted({b[0] for b in batches})
    assert len(files) >= 4, files
    victim = files[which]
    in_victim = [b for b in batches if b[0] == victim]
    _path, pos, base, _last = in_victim[min(1, len(in_victim) - 1)]
    with open(victim, "r+b") as f:
        f.truncate(pos + 30)  # inside the header of the second batch (or the only one)
    later = files.index(victim) + 1
    return base, int(files[later].name[:20]) if later < len(files) else None


def _consume(consumer: Any, count: int) -> dict[int, tuple[bytes, bytes]]:
    """Up to ``count`` records by offset, waiting at most 60 s for them."""
    got: dict[int, tuple[bytes, bytes]] = {}
    deadline = time.monotonic() + 60
    while len(got) < count and time.monotonic() < deadline:
        for m in consumer.consume(num_messages=min(500, count - len(got)), timeout=1.0):
            assert m.error() is None, m.error()
            assert m.offset() not in got
            got[m.offset()] = (m.key(), m.value())
    return got


@pytest.mark.e2e
@pytest.mark.parametrize("stop", ["sigterm", "sigkill"])
def test_broker_restart_after_truncated_segments_keeps_later_records_and_offsets(
    tmp_path: Path, stop: str
) -> None:
    """A broker process with a topic and ``__consumer_offsets`` over many small segments is
    stopped (SIGTERM: clean shutdown; SIGKILL: crash); a middle segment of each and the topic's
    last segment are truncated, and the broker restarts. With confluent-kafka: every record
    outside the cut batches is consumed at its original offset, a consumer positioned in the
    gap gets the first record after it (``LocalLog.read`` moves on to the next segment), the
    low/high watermarks are unchanged, the next produce gets the next new offset (and reaches a
    consumer waiting in the gap at the log end), and the group's last committed offset
    (written to a later, undamaged segment of ``__consumer_offsets``) is loaded."""
    from confluent_kafka import Consumer, KafkaException, Producer, TopicPartition
    from confluent_kafka.admin import AdminClient, NewTopic

    broker = _broker_process_class()(
        tmp_path / "data",
        settings=(
            "offsets.topic.num.partitions=1",
            "offsets.topic.segment.bytes=1024",
            "log.cleaner.backoff.ms=3600000",  # keep the offsets segments as written
        ),
    )
    broker.start()
    try:
        admin = AdminClient({"bootstrap.servers": broker.bootstrap})
        topic = "damaged"
        futures = admin.create_topics(
            [NewTopic(topic, 1, 1, config={"segment.bytes": "4096"})], operation_timeout=10
        )
        assert futures[topic].result(timeout=30) is None

        acked: dict[int, tuple[bytes, bytes]] = {}

        def delivered(err: Any, msg: Any) -> None:
            if err is not None:
                raise KafkaException(err)
            acked[msg.offset()] = (msg.key(), msg.value())

        producer = Producer({"bootstrap.servers": broker.bootstrap, "acks": "all", "linger.ms": 0})
        n = 400
        for i in range(n):
            producer.produce(topic, key=b"k%d" % i, value=b"value-%d-" % i + b"x" * 60, on_delivery=delivered)
            if i % 10 == 9:
                assert producer.flush(30) == 0  # one batch per 10 records
        assert sorted(acked) == list(range(n))

        group = "damage-group"
        committer = Consumer(
            {"bootstrap.servers": broker.bootstrap, "group.id": group, "enable.auto.commit": False}
        )
        commits = 60
        for k in range(1, commits + 1):
            committer.commit(offsets=[TopicPartition(topic, 0, k)], asynchronous=False)
        committer.close()
        del producer  # destroys the client, so it does not keep reconnecting during the restart

        if stop == "sigterm":
            assert broker.stop() == 0
        else:
            broker.kill()
        data = tmp_path / "data"
        topic_dir, offsets_dir = data / f"{topic}-0", data / "__consumer_offsets-0"
        middle_start, middle_end = _cut_segment(topic_dir, len(list(topic_dir.glob("*.log"))) // 2)
        last_start, _ = _cut_segment(topic_dir, -1)
        _cut_segment(offsets_dir, len(list(offsets_dir.glob("*.log"))) // 2)
        broker.start()

        assert middle_end is not None
        expected = {o: kv for o, kv in acked.items() if not middle_start <= o < middle_end and o < last_start}
        consumer = Consumer(
            {"bootstrap.servers": broker.bootstrap, "group.id": "reader", "enable.auto.commit": False}
        )
        try:
            # The watermarks did not move: nothing acknowledged is handed out again.
            assert consumer.get_watermark_offsets(TopicPartition(topic, 0), timeout=30) == (0, n)
            consumer.assign([TopicPartition(topic, 0, 0)])
            assert _consume(consumer, len(expected)) == expected  # in offset order: an extra one shows
            # Positioned inside the gap: the next record is the first one after it.
            consumer.assign([TopicPartition(topic, 0, middle_start)])
            assert list(_consume(consumer, 1)) == [middle_end]

            checker = Consumer(
                {"bootstrap.servers": broker.bootstrap, "group.id": group, "enable.auto.commit": False}
            )
            try:
                assert checker.committed([TopicPartition(topic, 0)], timeout=30)[0].offset == commits
            finally:
                checker.close()

            # The next produce gets the next new offset; a consumer waiting in the gap at the
            # log end receives it.
            consumer.assign([TopicPartition(topic, 0, last_start)])
            again: list[int] = []
            producer = Producer({"bootstrap.servers": broker.bootstrap, "acks": "all"})
            producer.produce(
                topic, key=b"after", value=b"after", on_delivery=lambda err, msg: again.append(msg.offset())
            )
            assert producer.flush(30) == 0
            del producer
            assert again == [n]
            assert _consume(consumer, 1) == {n: (b"after", b"after")}
        finally:
            consumer.close()
    finally:
        broker.stop()


# ---------------------------------------------------------------------------------------------
# The recovery point
# ---------------------------------------------------------------------------------------------


def _crash_copy(src: Path, dst: Path) -> Path:
    shutil.copytree(src, dst)
    (dst / ".clean_shutdown").unlink(missing_ok=True)
    return dst


def _active_batches(path: Path) -> list[tuple[int, int, int]]:
    """(position, size, base offset) of each batch of the last segment."""
    active = sorted(path.glob("*.log"))[-1]
    return [(pos, h.size, h.base_offset) for pos, h in iter_batches(active.read_bytes())]


def test_unflushed_tail_can_be_cut_down_to_the_recovery_point_but_not_below(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """Batches appended after the last flush were not acknowledged to ``acks=all`` producers: a
    torn write among them is cut as before (the log end moves back, to at most the recovery
    point). Damage below the recovery point keeps the log end at the recovery point."""
    plog, _ = PartitionLog.open(tmp_path / "live" / "t-0", CONFIG, ManualClock(T0))
    for i in range(12):
        plog.append(batch(i))
    plog.flush()
    assert (tmp_path / "live" / "t-0" / "recovery-point.checkpoint").read_text() == f"{36:020d}\n"
    plog.append(batch(12))
    plog.append(batch(13))  # 36..41, not flushed
    live = tmp_path / "live" / "t-0"
    by_base = {base: (pos, size) for pos, size, base in _active_batches(live)}
    active = sorted(live.glob("*.log"))[-1].name

    above = _crash_copy(live, tmp_path / "above" / "t-0")
    pos, size = by_base[39]
    with open(above / active, "r+b") as f:
        f.truncate(pos + size // 2)
    plog_above = recover(above, caplog)
    assert (plog_above.log_end_offset, plog_above.recovery_report.gaps) == (39, ())
    assert plog_above.append(batch(99)).base_offset == 39

    below = _crash_copy(live, tmp_path / "below" / "t-0")
    pos, size = by_base[33]
    with open(below / active, "r+b") as f:
        f.truncate(pos + size // 2)
    plog_below = recover(below, caplog)
    assert (plog_below.log_end_offset, plog_below.recovery_report.gaps) == (36, ((33, 36),))
    assert plog_below.segment_base_offsets()[-1] == 36
    assert plog_below.append(batch(99)).base_offset == 36
    plog.close()


def test_a_deliberate_truncation_lowers_the_recovery_point(tmp_path: Path) -> None:
    """``truncate_to`` moves the log end back on purpose: a restart (clean or not) keeps it there
    instead of raising it to the old recovery point."""
    plog, _ = PartitionLog.open(tmp_path / "t-0", CONFIG, ManualClock(T0))
    for i in range(20):
        plog.append(batch(i))
    plog.flush()
    assert plog.truncate_to(31) == 30  # the batch 30..32 straddles 31 and goes whole
    crashed = reopen(_crash_copy(tmp_path / "t-0", tmp_path / "crash" / "t-0"))
    assert (crashed.log_end_offset, crashed.recovery_report.gaps) == (30, ())
    plog.close()
    again = reopen(tmp_path / "t-0")
    assert (again.log_end_offset, again.recovery_report.gaps) == (30, ())
    assert again.append(batch(99)).base_offset == 30


def test_unreadable_recovery_point_file_is_ignored_and_rewritten(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    plog, _ = PartitionLog.open(tmp_path / "t-0", CONFIG, ManualClock(T0))
    for i in range(5):
        plog.append(batch(i))
    plog.close()
    checkpoint = tmp_path / "t-0" / "recovery-point.checkpoint"
    checkpoint.write_bytes(b"\xff\xfegarbage that is longer than an offset line\n")
    caplog.clear()
    with caplog.at_level(logging.WARNING, logger="groupcoord.storage.log"):
        again = reopen(tmp_path / "t-0")
    assert "recovery-point.checkpoint" in caplog.text
    assert again.log_end_offset == 15
    assert checkpoint.read_text() == f"{15:020d}\n"
