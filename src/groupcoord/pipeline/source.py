"""Spark Python data sources over a data directory in Kafka's on-disk layout.

- ``kafka-log``: one row per record (topic, partition, offset, timestamp, timestamp type, key, value,
  headers, batch attributes, the batch's producer id and epoch, whether it is transactional, and for
  control records their type: ``COMMIT`` / ``ABORT`` for transaction markers), decompressed; a torn
  or corrupt tail yields one row with ``corrupt = true`` (and the reason) instead of failing the job.
- ``kafka-log-batches``: one row per record batch (offsets, counts, timestamps, producer and
  transaction flags, a control batch's type) without decoding data records; this is what the lag
  table needs from the topics' own logs (the log end and the last stable offset over time).
- ``consumer-offsets``: the ``__consumer_offsets`` records decoded in the same pass
  (:mod:`groupcoord.pipeline.decoders`), so 10 M commits cross the Python/JVM boundary once.
  Records of aborted transactions (transactional offset commits whose transaction was aborted,
  found in the partition's ``.txnindex`` files) are left out, as the group coordinator leaves them
  out when it loads the log.

All three plan one input partition per segment (large segments split at offset-index points, see
:mod:`groupcoord.pipeline.segments`) and yield Arrow record batches whose schema equals Spark's.

Options: ``path`` (or ``load(DIR)``), ``topics`` (comma-separated; ``kafka-log`` and
``kafka-log-batches`` default to every topic, ``consumer-offsets`` to ``__consumer_offsets``),
``splitBytes`` (default 64 MiB), ``batchRows`` (rows per Arrow batch, default 65536), ``packBytes``
(default 0: exactly one input partition per segment split; N > 0: consecutive small segments share an
input partition of up to N bytes, which saves the per-task cost on directories with many tiny
partitions).
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar

import crc32c
from pyspark.sql.datasource import DataSource, DataSourceReader, InputPartition
from pyspark.sql.types import StructType

from groupcoord.constants import OFFSETS_TOPIC
from groupcoord.formats.batch import BatchHeader, CorruptBatchError, decode_records, records_block
from groupcoord.pipeline import decoders, vectorized
from groupcoord.pipeline.segments import (
    DEFAULT_SPLIT_BYTES,
    SegmentSplit,
    SplitWalk,
    iter_key_values,
    iter_records,
    plan_splits,
    read_split_bytes,
    record_timestamp,
    walk_split,
)
from groupcoord.storage.control import control_record_type
from groupcoord.storage.txnindex import read_txn_index

if TYPE_CHECKING:
    import pyarrow as pa

log = logging.getLogger(__name__)

DEFAULT_BATCH_ROWS = 65536

RECORD_COLUMNS: tuple[tuple[str, str], ...] = (
    ("topic", "string"),
    ("partition", "int"),
    ("offset", "bigint"),
    ("timestamp", "timestamp"),
    ("timestamp_type", "string"),
    ("key", "binary"),
    ("value", "binary"),
    ("headers", "array<struct<key:string,value:binary>>"),
    ("attributes", "int"),
    ("producer_id", "bigint"),
    ("producer_epoch", "int"),
    ("is_transactional", "boolean"),
    ("is_control", "boolean"),
    ("control_type", "string"),
    ("segment", "string"),
    ("corrupt", "boolean"),
    ("corrupt_reason", "string"),
)

BATCH_COLUMNS: tuple[tuple[str, str], ...] = (
    ("topic", "string"),
    ("partition", "int"),
    ("base_offset", "bigint"),
    ("last_offset", "bigint"),
    ("record_count", "int"),
    ("first_timestamp", "timestamp"),
    ("max_timestamp", "timestamp"),
    ("timestamp_type", "string"),
    ("attributes", "int"),
    ("producer_id", "bigint"),
    ("producer_epoch", "int"),
    ("is_transactional", "boolean"),
    ("is_control", "boolean"),
    ("control_type", "string"),
    ("size_bytes", "int"),
    ("segment", "string"),
    ("corrupt", "boolean"),
    ("corrupt_reason", "string"),
)

_TIMESTAMP_TYPES = ("CreateTime", "LogAppendTime")


def batch_control_type(header: BatchHeader, buf: bytes, pos: int) -> str | None:
    """A control batch's record type (``COMMIT``, ``ABORT``, ...; ``UNKNOWN`` if unreadable or
    empty, as a cleaned marker can be); None for a data batch."""
    if not header.is_control:
        return None
    try:
        records = decode_records(buf, pos)
    except CorruptBatchError:
        return "UNKNOWN"
    return control_record_type(records[0].key) if records else "UNKNOWN"


class SplitPartition(InputPartition):  # type: ignore[misc]
    """An input partition: one :class:`SegmentSplit`, or several small ones when ``packBytes`` asks
    for consecutive small segments to share a task (picklable)."""

    def __init__(self, splits: tuple[SegmentSplit, ...]) -> None:
        super().__init__(splits)
        self.splits = splits


def is_placeholder(partition: InputPartition) -> bool:
    """Whether Spark handed a reader the one empty partition it plans when ``partitions()`` returned
    none (an empty or new data directory): such a task reads nothing."""
    return type(partition) is InputPartition and getattr(partition, "value", None) is None


def pack_splits(splits: Sequence[SegmentSplit], pack_bytes: int) -> list[tuple[SegmentSplit, ...]]:
    """Group consecutive splits into tasks of up to ``pack_bytes`` (0: one split per task)."""
    if pack_bytes <= 0:
        return [(s,) for s in splits]
    groups: list[tuple[SegmentSplit, ...]] = []
    current: list[SegmentSplit] = []
    size = 0
    for s in splits:
        n = s.end - s.start
        if current and size + n > pack_bytes:
            groups.append(tuple(current))
            current, size = [], 0
        current.append(s)
        size += n
    if current:
        groups.append(tuple(current))
    return groups


def _options_topics(options: Mapping[str, str], default: frozenset[str] | None) -> frozenset[str] | None:
    raw = options.get("topics")
    if raw is None or raw.strip() == "":
        return default
    if raw.strip() == "*":
        return None
    return frozenset(t.strip() for t in raw.split(",") if t.strip())


class _SegmentReader(DataSourceReader):  # type: ignore[misc]
    columns: tuple[tuple[str, str], ...] = ()

    def __init__(self, schema: StructType, options: Mapping[str, str], topics: frozenset[str] | None) -> None:
        self.schema = schema
        path = options.get("path")
        if not path:
            raise ValueError("kafka-log sources need a data directory: .load(DIR) or .option('path', DIR)")
        self.data_dir = path
        self.topics = topics
        self.split_bytes = int(options.get("splitBytes", DEFAULT_SPLIT_BYTES))
        self.batch_rows = int(options.get("batchRows", DEFAULT_BATCH_ROWS))
        self.pack_bytes = int(options.get("packBytes", 0))

    def partitions(self) -> Sequence[InputPartition]:
        splits = plan_splits(Path(self.data_dir), topics=self.topics, split_bytes=self.split_bytes)
        return [SplitPartition(group) for group in pack_splits(splits, self.pack_bytes)]

    def arrow_schema(self) -> pa.Schema:
        from pyspark.sql.pandas.types import to_arrow_schema

        return to_arrow_schema(self.schema, timezone="UTC")

    def read(self, partition: InputPartition) -> Iterator[pa.RecordBatch]:
        schema = self.arrow_schema()
        names = tuple(name for name, _ in self.columns)
        buffer = decoders.ColumnBuffer(names=names)
        if is_placeholder(partition):
            return
        if not isinstance(partition, SplitPartition):
            raise TypeError(f"unexpected input partition {partition!r}")
        for split in partition.splits:
            for row in self.rows(walk_split(split)):
                buffer.add(row)
                if len(buffer) >= self.batch_rows:
                    yield decoders.to_record_batch(buffer.take(), schema)
        if len(buffer):
            yield decoders.to_record_batch(buffer.take(), schema)

    def rows(self, walk: SplitWalk) -> Iterator[dict[str, Any]]:
        raise NotImplementedError


class KafkaLogReader(_SegmentReader):
    columns = RECORD_COLUMNS

    def rows(self, walk: SplitWalk) -> Iterator[dict[str, Any]]:
        split = walk.split
        segment = Path(split.path).name
        for header, rec in iter_records(walk):
            yield {
                "topic": split.topic,
                "partition": split.partition,
                "offset": rec.offset,
                "timestamp": record_timestamp(header, rec),
                "timestamp_type": _TIMESTAMP_TYPES[header.timestamp_type],
                "key": rec.key,
                "value": rec.value,
                "headers": [{"key": k, "value": v} for k, v in rec.headers],
                "attributes": header.attributes,
                "producer_id": header.producer_id,
                "producer_epoch": header.producer_epoch,
                "is_transactional": header.is_transactional,
                "is_control": header.is_control,
                "control_type": control_record_type(rec.key) if header.is_control else None,
                "segment": segment,
                "corrupt": False,
                "corrupt_reason": None,
            }
        if walk.tail is not None:
            yield {
                "topic": split.topic,
                "partition": split.partition,
                "offset": walk.tail.next_offset,
                "timestamp": None,
                "timestamp_type": None,
                "key": None,
                "value": None,
                "headers": [],
                "attributes": None,
                "producer_id": None,
                "producer_epoch": None,
                "is_transactional": None,
                "is_control": None,
                "control_type": None,
                "segment": segment,
                "corrupt": True,
                "corrupt_reason": walk.tail.reason,
            }


class KafkaLogBatchesReader(_SegmentReader):
    columns = BATCH_COLUMNS

    def rows(self, walk: SplitWalk) -> Iterator[dict[str, Any]]:
        split = walk.split
        segment = Path(split.path).name
        for pos, h in walk.batches():
            yield {
                "topic": split.topic,
                "partition": split.partition,
                "base_offset": h.base_offset,
                "last_offset": h.last_offset,
                "record_count": h.record_count,
                "first_timestamp": h.base_timestamp,
                "max_timestamp": h.max_timestamp,
                "timestamp_type": _TIMESTAMP_TYPES[h.timestamp_type],
                "attributes": h.attributes,
                "producer_id": h.producer_id,
                "producer_epoch": h.producer_epoch,
                "is_transactional": h.is_transactional,
                "is_control": h.is_control,
                "control_type": batch_control_type(h, walk.buf, pos),
                "size_bytes": h.size,
                "segment": segment,
                "corrupt": False,
                "corrupt_reason": None,
            }
        if walk.tail is not None:
            yield {
                "topic": split.topic,
                "partition": split.partition,
                "base_offset": walk.tail.next_offset,
                "last_offset": None,
                "record_count": None,
                "first_timestamp": None,
                "max_timestamp": None,
                "timestamp_type": None,
                "attributes": None,
                "producer_id": None,
                "producer_epoch": None,
                "is_transactional": None,
                "is_control": None,
                "control_type": None,
                "size_bytes": None,
                "segment": segment,
                "corrupt": True,
                "corrupt_reason": walk.tail.reason,
            }


class ConsumerOffsetsReader(_SegmentReader):
    columns = decoders.OFFSETS_COLUMNS

    def __init__(self, schema: StructType, options: Mapping[str, str], topics: frozenset[str] | None) -> None:
        super().__init__(schema, options, topics)
        #: ``decoder=records`` selects the per-record reference path (tests compare the two)
        self.vectorized = options.get("decoder", "vectorized") != "records"
        known = {name for name, _ in decoders.OFFSETS_COLUMNS}
        unknown = [f.name for f in schema.fields if f.name not in known]
        if unknown:
            raise ValueError(f"consumer-offsets has no columns {unknown}; a schema may only narrow it")
        #: ``memo=DIR``: a ``rows=commits`` read leaves in DIR, per sound split, where its non-commit
        #: records are; a later ``rows=others`` read of the same bytes decodes only those batches
        memo = options.get("memo")
        self.memo_dir = Path(memo) if memo else None
        self.row_selection = options.get("rows", "all")
        self._aborted_cache: dict[Path, vectorized.AbortedRanges] = {}
        if self.row_selection not in vectorized.ROW_SELECTIONS:
            raise ValueError(
                f"option rows must be one of {vectorized.ROW_SELECTIONS}, not {self.row_selection!r}"
            )

    def _aborted(self, split: SegmentSplit) -> vectorized.AbortedRanges:
        """The aborted transactions of the split's partition, from its ``.txnindex`` files."""
        pdir = Path(split.path).parent
        cache = self._aborted_cache
        found = cache.get(pdir)
        if found is None:
            found = {}
            for index in sorted(pdir.glob("*.txnindex")):
                for a in read_txn_index(index):
                    found.setdefault(a.producer_id, []).append((a.first_offset, a.last_offset))
            cache[pdir] = found
        return found

    def _batch(self, cols: decoders.OffsetsColumns, schema: pa.Schema) -> pa.RecordBatch:
        """The accumulated rows that the ``rows`` option keeps, as an Arrow batch of ``schema``."""
        columns, nulls = cols.take_with_nulls()
        if self.row_selection != "all":
            keep = vectorized.select_mask(columns, self.row_selection)
            columns = {
                name: [v for v, k in zip(values, keep, strict=True) if k] for name, values in columns.items()
            }
        return decoders.to_record_batch(columns, schema, nulls)

    def read(self, partition: InputPartition) -> Iterator[pa.RecordBatch]:
        if is_placeholder(partition):
            return
        if not isinstance(partition, SplitPartition):
            raise TypeError(f"unexpected input partition {partition!r}")
        schema = self.arrow_schema()
        if self.vectorized:
            for split in partition.splits:
                data = read_split_bytes(split)
                aborted = self._aborted(split)
                if self.memo_dir is not None and self.row_selection == "others":
                    remembered = _recall(self.memo_dir, split, data)
                    if remembered is not None:
                        # the commits pass saw these exact bytes (length and CRC-32C of the whole
                        # split match), all batches sound; only its batches with other rows are read
                        yield from vectorized.iter_offsets_batches(
                            data,
                            remembered,
                            split.partition,
                            schema,
                            self.batch_rows,
                            "others",
                            None,
                            aborted,
                        )
                        continue
                scanned = vectorized.scan_batches(data)
                if scanned is not None:
                    # every batch sound: headers and CRCs checked in bulk, no tail to report
                    touched: list[int] | None = None
                    if self.memo_dir is not None and self.row_selection == "commits":
                        touched = []
                    yield from vectorized.iter_offsets_batches(
                        data,
                        scanned,
                        split.partition,
                        schema,
                        self.batch_rows,
                        self.row_selection,
                        touched,
                        aborted,
                    )
                    if touched is not None and self.memo_dir is not None:
                        _remember(self.memo_dir, split, data, touched)
                    continue
                # something irregular: the general walk finds where and reports it
                walk = SplitWalk(split=split, buf=data)
                headers = list(walk.batches())
                yield from vectorized.iter_offsets_batches(
                    walk.buf,
                    headers,
                    split.partition,
                    schema,
                    self.batch_rows,
                    self.row_selection,
                    None,
                    aborted,
                )
                if walk.tail is not None:
                    row = decoders.corrupt_row(split.partition, walk.tail.next_offset, walk.tail.reason)
                    cols = decoders.OffsetsColumns()
                    cols.add_row(row)
                    yield self._batch(cols, schema)
            return
        cols = decoders.OffsetsColumns()
        for split in partition.splits:
            walk = walk_split(split)
            ranges = self._aborted(split)
            for pos, header in walk.batches():
                if header.is_control or _is_aborted(header, ranges):
                    continue
                _h, block = records_block(walk.buf, pos)
                for offset, ts, key, value in iter_key_values(header, block):
                    cols.add(split.partition, offset, ts, key, value)
                if len(cols) >= self.batch_rows:
                    yield self._batch(cols, schema)
            if walk.tail is not None:
                cols.add_row(decoders.corrupt_row(split.partition, walk.tail.next_offset, walk.tail.reason))
        if len(cols):
            yield self._batch(cols, schema)


def _is_aborted(header: BatchHeader, aborted: vectorized.AbortedRanges) -> bool:
    """:func:`groupcoord.pipeline.vectorized.aborted_batches` for one batch header."""
    if not header.is_transactional:
        return False
    return any(first <= header.base_offset <= last for first, last in aborted.get(header.producer_id, ()))


def _memo_path(memo_dir: Path, split: SegmentSplit) -> Path:
    digest = hashlib.sha1(f"{split.path}\0{split.start}\0{split.end}".encode()).hexdigest()
    return memo_dir / f"{digest}.json"


def _remember(memo_dir: Path, split: SegmentSplit, data: bytes, positions: list[int]) -> None:
    """Note where the split's batches with non-commit records are (``memo`` option)."""
    memo = {
        "path": split.path,
        "start": split.start,
        "end": split.end,
        "length": len(data),
        "crc32c": crc32c.crc32c(data),
        "batches": sorted(set(positions)),
    }
    try:
        memo_dir.mkdir(parents=True, exist_ok=True)
        target = _memo_path(memo_dir, split)
        tmp = target.with_suffix(f".{os.getpid()}.tmp")
        tmp.write_text(json.dumps(memo))
        tmp.replace(target)
    except OSError as exc:  # a memo is an optimisation only
        log.warning("cannot write decode memo for %s: %s", split.path, exc)


def _recall(memo_dir: Path, split: SegmentSplit, data: bytes) -> vectorized.BatchArrays | None:
    """The batches a ``rows=commits`` read noted for exactly these bytes, or ``None`` (no memo,
    another split, different bytes)."""
    try:
        memo = json.loads(_memo_path(memo_dir, split).read_text())
    except (OSError, ValueError):
        return None
    if (
        not isinstance(memo, dict)
        or memo.get("path") != split.path
        or memo.get("start") != split.start
        or memo.get("end") != split.end
        or memo.get("length") != len(data)
        or memo.get("crc32c") != crc32c.crc32c(data)
    ):
        return None
    import numpy as np

    return vectorized.batches_at(data, np.asarray(memo.get("batches", []), dtype=np.int64))


class _SegmentDataSource(DataSource):  # type: ignore[misc]
    """A source over the segments under DIR: its short name, columns, reader and default topics."""

    short_name: ClassVar[str]
    columns: ClassVar[tuple[tuple[str, str], ...]]
    reader_class: ClassVar[type[_SegmentReader]]
    #: the topics read when the ``topics`` option is absent (None: all)
    default_topics: ClassVar[frozenset[str] | None] = None

    @classmethod
    def name(cls) -> str:
        return cls.short_name

    def schema(self) -> str:
        return decoders.ddl(self.columns)

    def reader(self, schema: StructType) -> DataSourceReader:
        return self.reader_class(schema, self.options, _options_topics(self.options, self.default_topics))


class KafkaLogDataSource(_SegmentDataSource):
    """``spark.read.format("kafka-log").load(DIR)``: every record of every segment under DIR."""

    short_name = "kafka-log"
    columns = RECORD_COLUMNS
    reader_class = KafkaLogReader


class KafkaLogBatchesDataSource(_SegmentDataSource):
    """``spark.read.format("kafka-log-batches").load(DIR)``: one row per record batch."""

    short_name = "kafka-log-batches"
    columns = BATCH_COLUMNS
    reader_class = KafkaLogBatchesReader


class ConsumerOffsetsDataSource(_SegmentDataSource):
    """``spark.read.format("consumer-offsets").load(DIR)``: decoded ``__consumer_offsets`` records.

    A user schema (``.schema(...)``) may name a subset of the columns (same types): only those cross
    from Python to the JVM."""

    short_name = "consumer-offsets"
    columns = decoders.OFFSETS_COLUMNS
    reader_class = ConsumerOffsetsReader
    default_topics = frozenset({OFFSETS_TOPIC})


SOURCES: tuple[type[DataSource], ...] = (
    KafkaLogDataSource,
    KafkaLogBatchesDataSource,
    ConsumerOffsetsDataSource,
)
