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

import logging
import shutil
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from groupcoord.clock import ManualClock
from groupcoord.storage.batch import (
    CorruptBatchError,
    build_batch,
    decode_records,
    iter_batches,
    parse_header,
    validate_batch,
)
from groupcoord.storage.log import LogConfig, PartitionLog

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
        # A fetch inside the gap returns the first batch after it (or nothing at the log end).
        for offset in (gap_start, gap_end - 1):
            data = plog.read(offset, 1).data
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
            caplog.clear()
            with caplog.at_level(logging.WARNING, logger="groupcoord.storage.log"):
                plog = reopen(w.dir)
            assert victim.name in caplog.text, (segment, name)
            check_after_damage(w, plog, segment=segment, lost=lost, tmp=case)
            shutil.rmtree(case)


def test_flipped_byte_in_a_rolled_segment_is_served_as_stored_and_loses_nothing(tmp_path: Path) -> None:
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
    plog = reopen(w.dir)
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
def test_crc_damage_found_by_an_index_rebuild_cuts_only_that_segment(tmp_path: Path, clean: bool) -> None:
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
    plog = reopen(w.dir)
    lost = [b for b in batches if b.position >= victim_batch.position]
    check_after_damage(w, plog, segment=segment, lost=lost, tmp=tmp_path)


def test_crc_damage_in_the_active_segment_after_a_crash_keeps_the_log_end(tmp_path: Path) -> None:
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
    plog = reopen(w.dir)
    check_after_damage(w, plog, segment=segment, lost=batches, tmp=tmp_path)


def test_deleted_segment_files_leave_a_gap_and_keep_the_log_end(tmp_path: Path) -> None:
    """A middle segment whose files are gone (and the last one too): the offsets between stay a
    gap, a fetch in it returns the next batch, and the log end offset does not move back."""
    w = write_partition(tmp_path, clean=True)
    middle = len(w.bases) // 2
    for s in (middle, len(w.bases) - 1):
        for suffix in (".log", ".index", ".timeindex"):
            (w.dir / f"{w.bases[s]:020d}{suffix}").unlink()
    plog = reopen(w.dir)
    lost = {
        o for b in w.batches if b.segment in (middle, len(w.bases) - 1) for o in range(b.base, b.last + 1)
    }
    assert readable(plog) == {o: kv for o, kv in w.records.items() if o not in lost}
    assert plog.log_end_offset == w.log_end
    assert parse_header(plog.read(w.bases[middle], 1).data).base_offset == w.bases[middle + 1]
    assert plog.append(batch(99)).base_offset == w.log_end
