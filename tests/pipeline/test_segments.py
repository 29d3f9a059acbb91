"""Planning and walking log segments written by the storage layer (no Spark)."""

from __future__ import annotations

import itertools
from pathlib import Path

from groupcoord.clock import ManualClock
from groupcoord.formats.batch import (
    COMPRESSION_GZIP,
    COMPRESSION_LZ4,
    COMPRESSION_SNAPPY,
    COMPRESSION_ZSTD,
    build_batch,
    iter_batches,
)
from groupcoord.pipeline import segments
from groupcoord.storage.log import PartitionLog
from groupcoord.storage.log_config import LogConfig
from groupcoord.storage.manager import parse_partition_dir


def _write(
    pdir: Path, batches: int, *, per_batch: int = 5, segment_bytes: int = 1 << 30, index_interval: int = 4096
) -> PartitionLog:
    config = LogConfig(segment_bytes=segment_bytes, index_interval_bytes=index_interval, retention_ms=-1)
    log, _ = PartitionLog.open(pdir, config, ManualClock(0))
    codecs = [0, COMPRESSION_GZIP, COMPRESSION_SNAPPY, COMPRESSION_LZ4, COMPRESSION_ZSTD]
    for i in range(batches):
        recs = [(f"k{i}-{j}".encode(), f"v{i}-{j}".encode() * 4, (("h", b"1"),)) for j in range(per_batch)]
        log.append(build_batch(recs, timestamp_ms=1000 + i, compression=codecs[i % len(codecs)]))
    return log


def _offsets(split: segments.SegmentSplit) -> list[int]:
    walk = segments.walk_split(split)
    return [rec.offset for _h, rec in segments.iter_records(walk)]


def test_partition_dirs_are_parsed_with_dashes_in_topic_names(tmp_path: Path) -> None:
    assert parse_partition_dir("my-topic-name-12") == ("my-topic-name", 12)
    assert parse_partition_dir("__consumer_offsets-0") == ("__consumer_offsets", 0)
    assert parse_partition_dir("no_partition") is None
    for name in ("b-1", "b-0", "a-10", "a-2", "__topics.json.d", "lost+found"):
        (tmp_path / name).mkdir()
    assert [(t, p) for t, p, _ in segments.list_partitions(tmp_path)] == [
        ("a", 2),
        ("a", 10),
        ("b", 0),
        ("b", 1),
    ]
    assert [(t, p) for t, p, _ in segments.list_partitions(tmp_path, frozenset({"b"}))] == [
        ("b", 0),
        ("b", 1),
    ]


def test_one_split_per_segment_and_every_record_read_once(tmp_path: Path) -> None:
    log = _write(tmp_path / "orders-0", 40, segment_bytes=2000)
    log.close()
    splits = segments.plan_splits(tmp_path)
    seg_files = sorted(p.name for p in (tmp_path / "orders-0").glob("*.log"))
    assert len(seg_files) > 3
    assert [Path(s.path).name for s in splits] == seg_files
    assert all(s.start == 0 and s.last_in_segment for s in splits)
    offsets = [o for s in splits for o in _offsets(s)]
    assert offsets == list(range(200))


def test_large_segment_is_split_at_offset_index_points(tmp_path: Path) -> None:
    log = _write(tmp_path / "orders-0", 60, index_interval=300)
    log.close()
    size = (tmp_path / "orders-0" / "00000000000000000000.log").stat().st_size
    splits = segments.plan_splits(tmp_path, split_bytes=size // 4)
    assert len(splits) >= 3
    assert splits[0].start == 0 and splits[-1].end == size
    assert all(a.end == b.start for a, b in itertools.pairwise(splits))
    assert [s.last_in_segment for s in splits] == [False] * (len(splits) - 1) + [True]
    index_positions = set(segments.read_index_positions(tmp_path / "orders-0" / "00000000000000000000.index"))
    assert all(s.start in index_positions for s in splits[1:])
    per_split = [_offsets(s) for s in splits]
    assert all(per_split)
    assert [o for chunk in per_split for o in chunk] == list(range(300))


def test_torn_tail_is_reported_with_the_next_offset(tmp_path: Path) -> None:
    log = _write(tmp_path / "t-0", 4)
    log.close()
    seg = tmp_path / "t-0" / "00000000000000000000.log"
    data = seg.read_bytes()
    seg.write_bytes(data[:-7])
    (split,) = segments.plan_splits(tmp_path)
    walk = segments.walk_split(split)
    assert [r.offset for _h, r in segments.iter_records(walk)] == list(range(15))
    assert walk.tail is not None
    assert walk.tail.next_offset == 15
    assert walk.tail.reason.startswith("torn batch:")
    last_batch_at = [pos for pos, _h in iter_batches(data)][-1]
    assert walk.tail.position == last_batch_at


def test_crc_mismatch_stops_the_walk_at_that_batch(tmp_path: Path) -> None:
    log = _write(tmp_path / "t-0", 4, per_batch=2)
    log.close()
    seg = tmp_path / "t-0" / "00000000000000000000.log"
    data = bytearray(seg.read_bytes())
    positions = [pos for pos, _h in iter_batches(bytes(data))]
    third = positions[2]
    data[third + 70] ^= 0xFF
    seg.write_bytes(bytes(data))
    (split,) = segments.plan_splits(tmp_path)
    walk = segments.walk_split(split)
    assert [r.offset for _h, r in segments.iter_records(walk)] == [0, 1, 2, 3]
    assert walk.tail is not None
    assert (walk.tail.next_offset, walk.tail.position) == (4, third)
    assert walk.tail.reason.startswith("corrupt batch:")


def test_small_segments_can_share_an_input_partition(tmp_path: Path) -> None:
    from groupcoord.pipeline.source import pack_splits

    for p in range(5):
        _write(tmp_path / f"t-{p}", 3).close()
    splits = segments.plan_splits(tmp_path)
    assert len(splits) == 5
    assert pack_splits(splits, 0) == [(s,) for s in splits]
    size = splits[0].end
    packed = pack_splits(splits, 2 * size)
    assert [len(g) for g in packed] == [2, 2, 1]
    assert [s for g in packed for s in g] == splits
    assert pack_splits(splits, 1) == [(s,) for s in splits]


def test_lean_key_value_walk_agrees_with_decode_records_on_every_codec(tmp_path: Path) -> None:
    from groupcoord.formats.batch import (
        ATTR_TIMESTAMP_TYPE,
        decode_records,
        records_block,
        set_log_append_time,
    )

    big = b"v" * 300  # lengths above 63 need multi-byte varints
    recs = [
        (b"k", b"v", ()),
        (None, big, (("h1", b"x"), ("h2", None))),
        (b"k" * 70, None, ()),
        (b"", b"", (("h", b""),)),
    ]
    for codec in (0, COMPRESSION_GZIP, COMPRESSION_SNAPPY, COMPRESSION_LZ4, COMPRESSION_ZSTD):
        for log_append in (False, True):
            buf = bytearray(
                build_batch(
                    recs,
                    base_offset=1000,
                    timestamp_ms=5_000,
                    timestamps=[5_000, 5_100, 4_900, 9_000],
                    compression=codec,
                    attributes=ATTR_TIMESTAMP_TYPE if log_append else 0,
                )
            )
            if log_append:
                set_log_append_time(buf, 0, 77_777)
            header, block = records_block(bytes(buf), 0)
            lean = list(segments.iter_key_values(header, block))
            reference = [(r.offset, r.timestamp, r.key, r.value) for r in decode_records(bytes(buf), 0)]
            assert lean == reference
            assert [o for o, _t, _k, _v in lean] == [1000, 1001, 1002, 1003]
