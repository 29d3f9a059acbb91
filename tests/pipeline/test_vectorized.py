"""The fast paths of the pipeline give exactly the rows of the general ones.

- ``consumer-offsets`` decoding: the vectorised numpy walk (:mod:`groupcoord.pipeline.vectorized`)
  against the per-record reader, on a segment mixing every key and value version, tombstones,
  group metadata, garbage keys, invalid UTF-8, record headers, all compression codecs, control and
  LogAppendTime batches and a torn tail.
- ``lag``: the shuffle-free as-of lookup (``mapInArrow``) against the two-window definition.
"""

from __future__ import annotations

import json
import random
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest

from groupcoord.coordinator.records import (
    GroupMetadataKey,
    GroupMetadataValue,
    MemberMetadataRecord,
    OffsetCommitKey,
    OffsetCommitValue,
    encode_key,
    encode_value,
)
from groupcoord.formats.batch import (
    ATTR_CONTROL,
    ATTR_TIMESTAMP_TYPE,
    ATTR_TRANSACTIONAL,
    COMPRESSION_GZIP,
    COMPRESSION_LZ4,
    COMPRESSION_SNAPPY,
    COMPRESSION_ZSTD,
    build_batch,
    records_block,
)
from groupcoord.formats.consumer_protocol import (
    Assignment,
    Subscription,
    encode_assignment,
    encode_subscription,
)
from groupcoord.pipeline import decoders, rebalances, segments, vectorized
from groupcoord.pipeline.analyze import TABLES
from groupcoord.pipeline.lag import lag

from .lag_oracle import lag_mapped, lag_windowed

T0 = 1_767_225_600_000
Rec = tuple[bytes | None, bytes | None, tuple[tuple[str, bytes | None], ...]]


def _key(group: str, topic: str, partition: int, version: int = 1) -> bytes:
    raw = encode_key(OffsetCommitKey(group=group, topic=topic, partition=partition))
    return version.to_bytes(2, "big") + raw[2:]


def _value(version: int, offset: int, **over: Any) -> bytes:
    fields: dict[str, Any] = {
        "offset": offset,
        "leader_epoch": None,
        "metadata": "",
        "commit_timestamp": T0 + offset,
        "expire_timestamp": None,
    }
    fields.update(over)
    value = encode_value(OffsetCommitValue(**fields), version=version)
    assert value is not None
    return value


def _group_metadata(generation: int) -> bytes:
    member = MemberMetadataRecord(
        member_id=f"m-{generation}",
        group_instance_id=None,
        client_id="app",
        client_host="/10.0.0.1",
        rebalance_timeout=30_000,
        session_timeout=10_000,
        subscription=encode_subscription(Subscription(topics=("orders",))),
        assignment=encode_assignment(Assignment(partitions=(("orders", (0, 1)),))),
    )
    value = encode_value(
        GroupMetadataValue(
            protocol_type="consumer",
            generation=generation,
            protocol="range",
            leader=member.member_id,
            current_state_timestamp=T0,
            members=(member,),
        )
    )
    assert value is not None
    return value


def _mixed_batches() -> list[bytes]:
    """Batches of every kind the fast path must either decode or hand to the per-record path."""
    batches: list[bytes] = []
    base = 0

    def add(records: list[Rec], **kw: Any) -> None:
        nonlocal base
        batches.append(build_batch(records, base_offset=base, **kw))
        base += len(records)

    plain = [(_key("g1", "orders", p), _value(3, 100 + p), ()) for p in range(6)]
    add(plain, timestamp_ms=T0)  # all fixed layouts: the vectorised path
    add(
        [
            (_key("g1", "orders", 0, version=0), _value(3, 7, leader_epoch=4, metadata="héllo"), ()),
            (_key("g2", "pay-ments", 11), _value(1, 8, expire_timestamp=T0 + 99), ()),
            (_key("g2", "pay-ments", 11), _value(1, 9, metadata="x" * 200, expire_timestamp=T0), ()),
            (_key("g3", "orders", 2), _value(0, 10), ()),  # v0: per record
            (_key("g3", "orders", 2), _value(2, 11, metadata="m"), ()),  # v2: per record
            (_key("g3", "orders", 2), _value(4, 12, leader_epoch=1), ()),  # v4 (flexible): per record
            (_key("g3", "orders", 2), None, ()),  # tombstone
            (encode_key(GroupMetadataKey(group="g3")), _group_metadata(5), ()),
            (encode_key(GroupMetadataKey(group="g4")), None, ()),
            (b"\x00\x07garbage", b"\x00\x00", ()),  # unknown key version
            (b"\x00", b"\x00\x03", ()),  # short key
            (None, _value(3, 13), ()),  # no key
            (_key("g5", "orders", 1), b"\x00\x03" + b"\x00" * 4, ()),  # truncated value
            (_key("g5", "orders", 1), _value(3, 14)[:-1], ()),  # value one byte short
            (_key("g5", "orders", 1), _value(3, 15) + b"\x00", ()),  # trailing byte
            (_key("g6", "orders", 1), _value(3, 16, metadata="ok"), (("h1", b"v"), ("h2", None))),
            (_key("g6", "orders", -1), _value(3, -1, leader_epoch=0), ()),
        ],
        timestamp_ms=T0 + 10,
        timestamps=[T0 + 10 + i * 1_000_000 for i in range(17)],  # multi-byte timestamp deltas
    )
    for codec in (COMPRESSION_GZIP, COMPRESSION_SNAPPY, COMPRESSION_LZ4, COMPRESSION_ZSTD):
        add(
            [(_key("g7", "orders", codec), _value(3, 200 + codec), ())],
            timestamp_ms=T0 + 20,
            compression=codec,
        )
    # a control (transaction marker) batch is skipped by both paths
    add(
        [(b"\x00\x00\x00\x01", b"\x00\x00\x00\x00\x00\x00", ())],
        timestamp_ms=T0 + 30,
        attributes=ATTR_CONTROL | ATTR_TRANSACTIONAL,
    )
    add(plain[:3], timestamp_ms=T0 + 40, attributes=ATTR_TIMESTAMP_TYPE)  # LogAppendTime
    # invalid UTF-8 metadata inside an otherwise fixed layout
    bad = bytearray(_value(3, 300, metadata="ab"))
    bad[16] = 0xFF
    add([(_key("g8", "orders", 0), bytes(bad), ()), *plain[:2]], timestamp_ms=T0 + 50)
    # keys long enough for two-byte varint lengths
    add([(_key("g" * 90, "t" * 70, 3), _value(3, 400, metadata="z" * 130), ())], timestamp_ms=T0 + 60)
    # many records in one batch, a few odd ones among them
    many: list[Rec] = [(_key("g9", "orders", i % 12), _value(3, 500 + i), ()) for i in range(300)]
    many[17] = (_key("g9", "orders", 5), None, ())
    many[250] = (encode_key(GroupMetadataKey(group="g9")), _group_metadata(6), ())
    add(many, timestamp_ms=T0 + 70)
    return batches


@pytest.fixture(scope="module")
def offsets_schema(spark: Any) -> pa.Schema:
    from pyspark.sql.pandas.types import to_arrow_schema

    struct = spark.createDataFrame([], decoders.ddl(decoders.OFFSETS_COLUMNS)).schema
    return to_arrow_schema(struct, timezone="UTC")


@pytest.fixture(scope="module")
def mixed_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("vectorized")
    for part, tail in ((0, b""), (1, None)):
        pdir = root / f"__consumer_offsets-{part}"
        pdir.mkdir()
        data = b"".join(_mixed_batches())
        if tail is None:
            # a torn tail: half of a valid batch
            extra = build_batch(
                [(_key("g1", "orders", 0), _value(3, 1), ())], base_offset=10_000, timestamp_ms=T0
            )
            data += extra[: len(extra) // 2]
        (pdir / "00000000000000000000.log").write_bytes(data)
    return root


def _per_record(split: segments.SegmentSplit, schema: pa.Schema) -> pa.Table:
    walk = segments.walk_split(split)
    cols = decoders.OffsetsColumns()
    for pos, header in walk.batches():
        if header.is_control:
            continue
        _h, block = records_block(walk.buf, pos)
        for offset, ts, key, value in segments.iter_key_values(header, block):
            cols.add(split.partition, offset, ts, key, value)
    if walk.tail is not None:
        cols.add_row(decoders.corrupt_row(split.partition, walk.tail.next_offset, walk.tail.reason))
    columns, nulls = cols.take_with_nulls()
    return pa.Table.from_batches([decoders.to_record_batch(columns, schema, nulls)], schema=schema)


def _vectorised(split: segments.SegmentSplit, schema: pa.Schema, batch_rows: int) -> pa.Table:
    walk = segments.walk_split(split)
    headers = list(walk.batches())
    out = list(vectorized.iter_offsets_batches(walk.buf, headers, split.partition, schema, batch_rows))
    table = pa.Table.from_batches(out, schema=schema)
    if walk.tail is not None:
        cols = decoders.OffsetsColumns()
        cols.add_row(decoders.corrupt_row(split.partition, walk.tail.next_offset, walk.tail.reason))
        columns, nulls = cols.take_with_nulls()
        tail = decoders.to_record_batch(columns, schema, nulls)
        table = pa.concat_tables([table, pa.Table.from_batches([tail])])
    return table


@pytest.mark.parametrize("batch_rows", [1, 7, 65536])
def test_vectorised_decode_gives_the_per_record_rows_in_order(
    mixed_dir: Path, offsets_schema: pa.Schema, batch_rows: int
) -> None:
    splits = segments.plan_splits(mixed_dir)
    assert len(splits) == 2
    for split in splits:
        want = _per_record(split, offsets_schema)
        got = _vectorised(split, offsets_schema, batch_rows)
        assert got.num_rows == want.num_rows
        assert got.to_pylist() == want.to_pylist()
    # the fixture really holds what it claims
    rows = _per_record(splits[1], offsets_schema).to_pylist()
    kinds = {(r["record_type"], r["tombstone"], r["value_version"]) for r in rows}
    assert ("offset_commit", False, 3) in kinds and ("offset_commit", False, 1) in kinds
    assert ("offset_commit", True, None) in kinds and ("group_metadata", False, 3) in kinds
    assert any(r["decode_error"] and "value" in r["decode_error"] for r in rows)
    assert (
        rows[-1]["corrupt"] is True and rows[-1]["log_offset"] == 335
    )  # the next offset after the last whole batch
    assert len(rows) == 6 + 17 + 4 + 3 + 3 + 1 + 300 + 1


def _arrays_equal(a: vectorized.BatchArrays, b: vectorized.BatchArrays) -> bool:
    names = ("pos", "size", "base_offset", "attributes", "record_count", "base_timestamp", "max_timestamp")
    return all(getattr(a, n).tolist() == getattr(b, n).tolist() for n in names)


def test_bulk_header_scan_reads_every_header_the_batch_walk_reads(mixed_dir: Path) -> None:
    clean, torn = segments.plan_splits(mixed_dir)
    walk = segments.walk_split(clean)
    headers = list(walk.batches())
    assert walk.tail is None and len(headers) == 11
    scanned = vectorized.scan_batches(walk.buf)
    assert scanned is not None
    assert _arrays_equal(scanned, vectorized.BatchArrays.from_headers(headers))
    assert scanned.pos.tolist() == [p for p, _h in headers]
    # a torn tail is left to the general walk, which reports it
    assert vectorized.scan_batches(segments.read_split_bytes(torn)) is None
    empty = vectorized.scan_batches(b"")
    assert empty is not None and len(empty) == 0


@pytest.mark.parametrize(
    "damage",
    ["crc", "magic", "length", "trailing", "record_count", "codec"],
)
def test_bulk_header_scan_hands_every_irregular_split_to_the_general_walk(
    mixed_dir: Path, damage: str
) -> None:
    clean = segments.plan_splits(mixed_dir)[0]
    data = bytearray(segments.read_split_bytes(clean))
    headers = list(segments.SplitWalk(split=clean, buf=bytes(data)).batches())
    pos, header = headers[3]
    if damage == "crc":
        data[pos + header.size - 1] ^= 0x01  # last byte of a record: only the CRC notices
    elif damage == "magic":
        data[pos + 16] = 1
    elif damage == "length":
        data[pos + 8 : pos + 12] = (10).to_bytes(4, "big")
    elif damage == "trailing":
        data += b"\x00" * 5
    elif damage == "record_count":
        data[pos + 57 : pos + 61] = (-1).to_bytes(4, "big", signed=True)
    else:
        data[pos + 22] |= 0x07  # compression codec 7
    assert vectorized.scan_batches(bytes(data)) is None
    walk = segments.SplitWalk(split=clean, buf=bytes(data))
    list(walk.batches())
    assert walk.tail is not None  # and the general walk flags it


@pytest.mark.parametrize("batch_rows", [1, 7, 65536])
def test_vectorised_decode_over_bulk_headers_gives_the_per_record_rows(
    mixed_dir: Path, offsets_schema: pa.Schema, batch_rows: int
) -> None:
    clean = segments.plan_splits(mixed_dir)[0]
    data = segments.read_split_bytes(clean)
    scanned = vectorized.scan_batches(data)
    assert scanned is not None
    out = list(vectorized.iter_offsets_batches(data, scanned, clean.partition, offsets_schema, batch_rows))
    got = pa.Table.from_batches(out, schema=offsets_schema)
    assert got.to_pylist() == _per_record(clean, offsets_schema).to_pylist()


def test_fixed_layout_commits_never_reach_the_per_record_decoder(
    mixed_dir: Path, offsets_schema: pa.Schema, monkeypatch: pytest.MonkeyPatch
) -> None:
    split = segments.plan_splits(mixed_dir)[0]
    walk = segments.walk_split(split)
    headers = list(walk.batches())[:1]  # six v1-key / v3-value commits

    def refuse(*_args: object) -> None:
        raise AssertionError("per-record path used")

    every = list(walk.batches())
    # the two all-commit batches (six records, then three with LogAppendTime) in one chunk
    pure = [every[0], every[7]]
    want = [(h.base_offset + i) for _p, h in pure for i in range(h.record_count)]
    monkeypatch.setattr(decoders.OffsetsColumns, "add", refuse)
    both = vectorized.decode_offsets(walk.buf, pure, 0, offsets_schema)
    assert both.column("log_offset").to_pylist() == want  # log order, not record index order
    table = vectorized.decode_offsets(walk.buf, headers, 0, offsets_schema)
    assert table.column("committed_offset").to_pylist() == [100, 101, 102, 103, 104, 105]
    assert table.column("partition").to_pylist() == [0, 1, 2, 3, 4, 5]
    assert set(table.column("group_id").to_pylist()) == {"g1"}
    assert table.column("commit_time").to_pylist()[0] == datetime.fromtimestamp((T0 + 100) / 1000, UTC)


def test_row_selections_split_the_records_between_commits_and_the_rest(
    mixed_dir: Path, offsets_schema: pa.Schema
) -> None:
    for split in segments.plan_splits(mixed_dir):
        walk = segments.walk_split(split)
        headers = list(walk.batches())
        every = vectorized.decode_offsets(walk.buf, headers, split.partition, offsets_schema).to_pylist()
        commits = vectorized.decode_offsets(walk.buf, headers, split.partition, offsets_schema, "commits")
        others = vectorized.decode_offsets(walk.buf, headers, split.partition, offsets_schema, "others")
        is_commit = [
            r["record_type"] == "offset_commit" and not r["tombstone"] and r["decode_error"] is None
            for r in every
        ]
        assert any(is_commit) and not all(is_commit)
        assert commits.to_pylist() == [r for r, c in zip(every, is_commit, strict=True) if c]
        assert others.to_pylist() == [r for r, c in zip(every, is_commit, strict=True) if not c]


def _read_source(path: Path, struct: Any, **options: str) -> list[dict[str, Any]]:
    """Rows of the consumer-offsets reader run in this process, split by split, in log order."""
    from groupcoord.pipeline.source import ConsumerOffsetsReader

    reader = ConsumerOffsetsReader(struct, {"path": str(path), **options}, frozenset({"__consumer_offsets"}))
    rows: list[dict[str, Any]] = []
    for partition in reader.partitions():
        rows.extend(r for b in reader.read(partition) for r in b.to_pylist())
    return rows


def test_others_read_from_the_commits_pass_memo_gives_the_full_reads_rows(
    spark: Any, mixed_dir: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import shutil

    data_dir = tmp_path / "data"
    shutil.copytree(mixed_dir, data_dir)
    memo = tmp_path / "memo"
    struct = spark.createDataFrame([], decoders.ddl(decoders.OFFSETS_COLUMNS)).schema
    want_others = _read_source(data_dir, struct, rows="others")
    want_commits = _read_source(data_dir, struct, rows="commits")
    assert _read_source(data_dir, struct, rows="commits", memo=str(memo)) == want_commits
    # only the clean split gets a memo (the torn one is always read in full), and it lists only
    # the batches holding records outside the fixed-layout commits
    notes = [json.loads(p.read_text()) for p in memo.glob("*.json")]
    assert [n["path"].endswith("__consumer_offsets-0/00000000000000000000.log") for n in notes] == [True]
    clean = segments.plan_splits(data_dir)[0]
    headers = list(segments.walk_split(clean).batches())
    assert notes[0]["batches"] == [headers[i][0] for i in (1, 2, 3, 4, 5, 8, 10)]

    scans: list[int] = []
    real_scan = vectorized.scan_batches

    def counting_scan(data: bytes) -> vectorized.BatchArrays | None:
        scans.append(len(data))
        return real_scan(data)

    monkeypatch.setattr(vectorized, "scan_batches", counting_scan)
    assert _read_source(data_dir, struct, rows="others", memo=str(memo)) == want_others
    assert len(scans) == 1  # the torn split only: the clean one came from its memo

    # changed bytes of the same length: the memo no longer applies and the split is read in full
    seg = data_dir / "__consumer_offsets-0" / "00000000000000000000.log"
    raw = bytearray(seg.read_bytes())
    first = headers[0][0] + headers[0][1].size - 1
    raw[first] ^= 0x01  # breaks the first batch's CRC: a corrupt tail there
    seg.write_bytes(bytes(raw))
    want_damaged = _read_source(data_dir, struct, rows="others")
    scans.clear()
    got = _read_source(data_dir, struct, rows="others", memo=str(memo))
    assert got == want_damaged
    assert got[0]["corrupt"] is True and got[0]["log_offset"] == 0
    assert len(scans) == 2


def _sorted_rows(df: Any) -> list[tuple[Any, ...]]:
    return sorted((tuple(r) for r in df.collect()), key=repr)


def test_spark_source_vectorised_equals_per_record_and_narrow_schema_selects(
    spark: Any, mixed_dir: Path
) -> None:
    path = str(mixed_dir)
    fast = spark.read.format("consumer-offsets").load(path)
    slow = spark.read.format("consumer-offsets").option("decoder", "records").load(path)
    assert _sorted_rows(fast) == _sorted_rows(slow)
    types = dict(decoders.OFFSETS_COLUMNS)
    narrow = (
        spark.read.format("consumer-offsets")
        .schema(decoders.ddl((c, types[c]) for c in rebalances.OFFSET_COMMITS_INPUT))
        .option("rows", "commits")
        .load(path)
    )
    assert narrow.columns == list(rebalances.OFFSET_COMMITS_INPUT)
    assert _sorted_rows(rebalances.offset_commits(narrow)) == _sorted_rows(rebalances.offset_commits(slow))
    only = (
        spark.read.format("consumer-offsets")
        .schema(decoders.ddl((c, types[c]) for c in rebalances.OFFSET_COMMITS_COLUMNS))
        .option("rows", "commits")
        .load(path)
    )
    assert _sorted_rows(only) == _sorted_rows(rebalances.offset_commits(slow))
    for decoder in ("vectorized", "records"):
        many = spark.read.format("consumer-offsets").option("decoder", decoder).option("batchRows", "5")
        assert _sorted_rows(many.option("rows", "commits").load(path)) == _sorted_rows(
            slow.where(
                "record_type = 'offset_commit' and not tombstone and not corrupt and decode_error is null"
            )
        )
    others = spark.read.format("consumer-offsets").option("rows", "others").load(path)
    assert others.count() + narrow.count() == slow.count()
    assert _sorted_rows(rebalances.group_generations(others)) == _sorted_rows(
        rebalances.group_generations(slow)
    )


def test_shuffle_free_lag_equals_the_window_definition(spark: Any) -> None:
    rng = random.Random(6)
    batches = []
    for topic in ("a", "b"):
        for part in (0, 1):
            leo = 0
            for k in range(40):
                size = rng.randint(1, 30)
                # append times not in offset order now and then; some batches share a time
                t = T0 + k * 1_000 + rng.choice([0, 0, 0, -1_500, 250])
                batches.append((topic, part, leo, leo + size - 1, t, False))
                leo += size
    batches.append(("a", 0, 5_000, None, None, True))  # a corrupt marker row
    commits = []
    for i in range(600):
        topic, part = rng.choice([("a", 0), ("a", 1), ("b", 0), ("b", 1), ("c", 0)])
        t = T0 + rng.randint(-3_000, 45_000)
        if rng.random() < 0.1:
            t = T0 + 1_000 * rng.randint(0, 40)  # exactly a batch time
        offset = rng.choice([-1, 0, rng.randint(0, 800), rng.randint(0, 800), 10_000])
        commits.append((f"g{i % 7}", topic, part, offset, i, datetime.fromtimestamp(t / 1000, UTC)))
    bdf = spark.createDataFrame(
        batches,
        "topic string, partition int, base_offset bigint, last_offset bigint, max_ts bigint, corrupt boolean",
    ).selectExpr("*", "timestamp_millis(max_ts) as max_timestamp")
    cdf = spark.createDataFrame(
        commits,
        "group_id string, topic string, partition int, committed_offset bigint, log_offset bigint, "
        "commit_time timestamp",
    )
    fast = _sorted_rows(lag(cdf, bdf))
    reference = _sorted_rows(lag_windowed(cdf, bdf))
    assert len(fast) == 600
    assert fast == reference
    assert any(r[6] > 0 for r in fast) and any(r[7] > 0 for r in fast)  # some offset and time lag


def test_lag_of_the_scripted_scenario_equals_the_window_definition(spark: Any, scripted: Any) -> None:
    _written, result = scripted
    t = result.out / "tables"
    commits = spark.read.parquet(str(t / "offset_commits"))
    batches = spark.read.parquet(str(t / "_log_batches"))
    assert _sorted_rows(lag(commits, batches)) == _sorted_rows(lag_windowed(commits, batches))


def test_mapped_lag_equals_the_window_definition(spark: Any, scripted: Any) -> None:
    _written, result = scripted
    t = result.out / "tables"
    commits = spark.read.parquet(str(t / "offset_commits"))
    batches = spark.read.parquet(str(t / "_log_batches"))
    assert _sorted_rows(lag_mapped(commits, batches)) == _sorted_rows(lag_windowed(commits, batches))


def test_row_counts_from_parquet_footers_equal_spark_counts(spark: Any, scripted: Any) -> None:
    _written, result = scripted
    # every table plus the work tables (_lag_tails: the commit pass's last commits per group-partition)
    assert set(result.row_counts) == {*TABLES, "_log_batches", "_offsets_records", "_lag_tails"}
    for name, n in result.row_counts.items():
        assert n == spark.read.parquet(str(result.out / "tables" / name)).count(), name
    assert result.row_counts["offset_commits"] == 13


def test_time_ranges_from_parquet_footers_equal_spark_min_max(
    spark: Any, scripted: Any, tmp_path: Path
) -> None:
    from pyspark.sql import functions as F

    from groupcoord.pipeline.analyze import parquet_ms_range

    _written, result = scripted
    tdir = result.out / "tables"
    cases = [
        ("offset_commits", "commit_time"),
        ("_log_batches", "max_timestamp"),
        ("group_events", "time"),
        ("lag", "time"),
        ("rebalances", "started_at"),
    ]
    # sub-millisecond and pre-epoch instants floor like unix_millis; nulls are ignored
    odd = spark.sql(
        "select timestamp_micros(col) as t from values (-1500L), (2000001L), (cast(null as bigint)) as v(col)"
    )
    odd.write.parquet(str(tmp_path / "odd"))
    for directory, column in [*((tdir / n, c) for n, c in cases), (tmp_path / "odd", "t")]:
        row = (
            spark.read.parquet(str(directory))
            .agg(F.min(F.unix_millis(column)), F.max(F.unix_millis(column)))
            .first()
        )
        assert parquet_ms_range(directory, column) == (row[0], row[1]), directory
    assert parquet_ms_range(tmp_path / "odd", "t") == (-2, 2000)
    assert parquet_ms_range(tdir / "lag", "no_such_column") is None


def test_big_endian_gather_reads_signed_integers_like_int_from_bytes() -> None:
    import numpy as np

    rng = np.random.default_rng(7)
    buf = rng.integers(0, 256, 4096, dtype=np.uint8)
    buf[:8] = 0xFF  # -1 at every width
    buf[8:16] = [0x80, 0, 0, 0, 0, 0, 0, 0]  # the most negative 64-bit value
    pos = np.concatenate([np.array([0, 8], dtype=np.int64), rng.integers(0, len(buf) - 8, 500)])
    for width in (2, 4, 8):
        want = [int.from_bytes(buf[p : p + width].tobytes(), "big", signed=True) for p in pos.tolist()]
        got = vectorized._be(buf, pos, width)
        assert got.dtype == np.int64 and got.tolist() == want
    assert vectorized._be(buf, np.zeros(0, dtype=np.int64), 4).tolist() == []
