"""One pass over ``__consumer_offsets`` that writes ``offset_commits`` and ``lag`` and hands Spark
only each group-partition's last commits (the ``commit-tables`` data source).

The general path has the JVM take every decoded commit from Python as Arrow batches, write them as
``offset_commits``, read them back, send four columns through an Arrow UDF for the lag and write the
``lag`` rows, most of its cost row conversion and Parquet encoding in the JVM. Here each Spark task
decodes its splits (the same vectorised decoder, with the same decode memo for the later
``rows=others`` pass), computes the lag with the same :func:`groupcoord.pipeline.lagmap.lag_of` the
general path's tests check, and writes both tables' rows with pyarrow's Parquet writer straight into
the table directories, at about a third of the CPU (docs/benchmarks.md, "The commit pass").

What the task returns to Spark is small: per group-partition, the commits with the ``intervals``
largest ``log_offset`` values among that task's rows (ties kept). Every commit of the last
``intervals`` of a group-partition overall is among the last ``intervals`` of its own task, so
:func:`groupcoord.pipeline.health.partition_status` over these rows equals it over all of ``lag``
(tests/pipeline/test_commit_pass.py runs both).

Files: ``part-NNNNN.parquet`` per input partition (NNNNN its index), written to a hidden temporary
name and renamed, so a retried or speculative attempt replaces the file with identical content. Like
Spark's own file writer with a ``file:`` path, the table directory must be the same shared path for
every executor (trivially so in local mode).
"""

from __future__ import annotations

import logging
import os
import threading
import uuid
from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np
from pyspark.sql.datasource import CaseInsensitiveDict, DataSource, DataSourceReader, InputPartition
from pyspark.sql.types import (
    DataType,
    IntegerType,
    LongType,
    StringType,
    StructField,
    StructType,
    TimestampType,
)

from groupcoord.constants import OFFSETS_TOPIC
from groupcoord.pipeline import decoders
from groupcoord.pipeline.lagmap import BatchIndex, lag_of
from groupcoord.pipeline.rebalances import OFFSET_COMMITS_COLUMNS
from groupcoord.pipeline.source import ConsumerOffsetsReader, SplitPartition, is_placeholder

if TYPE_CHECKING:
    import pyarrow as pa

log = logging.getLogger(__name__)

#: the columns of ``offset_commits``: the general path's, in its order
COMMIT_COLUMNS = OFFSET_COMMITS_COLUMNS

#: what each task hands back to Spark: the lag rows of its last commits per group-partition, the
#: columns :func:`groupcoord.pipeline.health.partition_status` reads
TAIL_COLUMNS: tuple[tuple[str, str], ...] = (
    ("group_id", "string"),
    ("topic", "string"),
    ("partition", "int"),
    ("time", "timestamp"),
    ("committed_offset", "bigint"),
    ("log_end_offset", "bigint"),
    ("offset_lag", "bigint"),
    ("time_lag_ms", "bigint"),
    ("log_offset", "bigint"),
    ("last_stable_offset", "bigint"),
    ("read_committed_lag", "bigint"),
)

#: the commit columns :func:`groupcoord.pipeline.lagmap.lag_of` reads
_LAG_INPUT = ("group_id", "topic", "partition", "commit_time", "committed_offset", "log_offset")

_SPARK_TYPES: dict[str, DataType] = {
    "string": StringType(),
    "int": IntegerType(),
    "bigint": LongType(),
    "timestamp": TimestampType(),
}


def struct_type(columns: Sequence[tuple[str, str]]) -> StructType:
    """A StructType of simple columns, built without a JVM (executors' Python has none)."""
    return StructType([StructField(name, _SPARK_TYPES[typ], True) for name, typ in columns])


def commits_struct() -> StructType:
    types = dict(decoders.OFFSETS_COLUMNS)
    return struct_type([(c, types[c]) for c in COMMIT_COLUMNS])


def part_name(index: int) -> str:
    return f"part-{index:05d}.parquet"


def last_n_per_key(table: pa.Table, n: int) -> pa.Table:
    """The rows of ``table`` whose ``log_offset`` is among the ``n`` largest of their (group_id,
    topic, partition) — rows tied with the n-th are kept too, so whichever of them a
    ``row_number()`` picks over the whole table is here. Nulls form their own keys; a null
    ``log_offset`` ranks last, as in a descending sort."""
    import pyarrow as pa
    import pyarrow.compute as pc

    rows = table.num_rows
    if rows == 0 or n <= 0:
        return table.slice(0, 0)
    codes = []
    for name in ("group_id", "topic"):
        col = table.column(name)
        enc = pc.dictionary_encode(col.combine_chunks() if isinstance(col, pa.ChunkedArray) else col)
        codes.append(np.asarray(pc.fill_null(enc.indices, -1).to_numpy(zero_copy_only=False), dtype=np.int64))
    part = table.column("partition")
    codes.append(
        np.where(
            np.asarray(pc.is_null(part).to_numpy(zero_copy_only=False), dtype=np.bool_),
            np.int64(-(2**40)),
            np.asarray(pc.fill_null(part, 0).to_numpy(zero_copy_only=False), dtype=np.int64),
        )
    )
    lo_col = table.column("log_offset")
    lo = np.asarray(
        pc.fill_null(lo_col, np.iinfo(np.int64).min).to_numpy(zero_copy_only=False), dtype=np.int64
    )
    order = np.lexsort((lo, codes[2], codes[1], codes[0]))
    g, t, p, o = codes[0][order], codes[1][order], codes[2][order], lo[order]
    new_key = np.ones(rows, dtype=np.bool_)
    new_key[1:] = (g[1:] != g[:-1]) | (t[1:] != t[:-1]) | (p[1:] != p[:-1])
    starts = np.flatnonzero(new_key)
    ends = np.append(starts[1:], rows)  # exclusive
    threshold = o[np.maximum(ends - n, starts)]
    keep = o >= np.repeat(threshold, ends - starts)
    return table.take(pa.array(np.sort(order[keep])))


_INDEX_LOCK = threading.Lock()
_INDEX_CACHE: dict[tuple[str, tuple[tuple[str, int, int], ...]], BatchIndex] = {}


def batch_index(log_batches: Path) -> BatchIndex:
    """The lag index from the ``_log_batches`` table's Parquet files (what
    :func:`groupcoord.pipeline.lag.topic_batches` selects: sound batches, append time in epoch
    ms), cached per process for unchanged files."""
    import pyarrow as pa
    import pyarrow.compute as pc
    import pyarrow.parquet as pq

    files = sorted(f for f in log_batches.glob("*.parquet") if not f.name.startswith((".", "_")))
    stamp = tuple((f.name, f.stat().st_size, f.stat().st_mtime_ns) for f in files)
    key = (str(log_batches), stamp)
    with _INDEX_LOCK:
        cached = _INDEX_CACHE.get(key)
    if cached is not None:
        return cached
    columns = ["topic", "partition", "base_offset", "last_offset", "max_timestamp", "corrupt"]
    flags = ["producer_id", "is_transactional", "is_control"]  # the last stable offset's inputs
    if files and all(name in pq.read_schema(files[0]).names for name in flags):
        columns += flags
    pieces = [pq.read_table(f, columns=columns) for f in files]
    if pieces:
        table = pa.concat_tables(pieces)
    else:
        table = pa.table(
            {
                "topic": pa.array([], pa.string()),
                "partition": pa.array([], pa.int32()),
                "base_offset": pa.array([], pa.int64()),
                "last_offset": pa.array([], pa.int64()),
                "max_timestamp": pa.array([], pa.timestamp("us", tz="UTC")),
                "corrupt": pa.array([], pa.bool_()),
            }
        )
    # topic_batches: where(~corrupt) — a null `corrupt` is not kept either
    table = table.filter(pc.fill_null(pc.invert(table.column("corrupt")), False))
    ts = table.column("max_timestamp")
    micros = np.asarray(
        pc.cast(pc.cast(ts, pa.timestamp("us", tz="UTC")), pa.int64()).to_numpy(zero_copy_only=False),
        dtype=np.int64,
    )
    rows = pa.table(
        {
            "topic": table.column("topic"),
            "partition": table.column("partition"),
            "base_offset": table.column("base_offset"),
            "last_offset": table.column("last_offset"),
            "append_ms": pa.array(np.floor_divide(micros, 1000), type=pa.int64()),
            **{name: table.column(name) for name in flags if name in table.column_names},
        }
    )
    index = BatchIndex.from_arrow(rows)
    with _INDEX_LOCK:
        _INDEX_CACHE.clear()
        _INDEX_CACHE[key] = index
    return index


def within_ms(
    batch: pa.RecordBatch, column: str, since_ms: int | None, until_ms: int | None
) -> pa.RecordBatch:
    """:func:`groupcoord.pipeline.frames.within` on one Arrow batch: rows whose ``column`` in
    epoch milliseconds (floored) lies in [since, until); null times are dropped when bounded."""
    import pyarrow as pa
    import pyarrow.compute as pc

    if since_ms is None and until_ms is None:
        return batch
    col = batch.column(column)
    micros = pc.cast(pc.cast(col, pa.timestamp("us", tz="UTC")), pa.int64())
    ms = np.floor_divide(np.asarray(pc.fill_null(micros, 0).to_numpy(zero_copy_only=False)), 1000)
    keep = ~np.asarray(pc.is_null(col).to_numpy(zero_copy_only=False), dtype=np.bool_)
    if since_ms is not None:
        keep &= ms >= since_ms
    if until_ms is not None:
        keep &= ms < until_ms
    if bool(keep.all()):
        return batch
    return batch.filter(pa.array(keep))


def _spark_metadata(schema: StructType) -> dict[bytes, bytes]:
    # what Spark's own writer puts in the footer, so a schema-less read gets the Spark types back
    return {b"org.apache.spark.sql.parquet.row.metadata": schema.json().encode()}


class _TableFile:
    """One ``part-NNNNN.parquet`` of a table, written under a hidden name and renamed on close."""

    def __init__(self, directory: Path, index: int, schema: pa.Schema, compression: str) -> None:
        import pyarrow.parquet as pq

        self.target = directory / part_name(index)
        self.tmp = directory / f".{part_name(index)}.{os.getpid()}.{uuid.uuid4().hex[:8]}.tmp"
        self.writer = pq.ParquetWriter(str(self.tmp), schema, compression=compression)

    def write(self, batch: pa.RecordBatch) -> None:
        if batch.num_rows:
            self.writer.write_batch(batch)

    def close(self) -> None:
        self.writer.close()
        os.replace(self.tmp, self.target)

    def abort(self) -> None:
        try:
            self.writer.close()
        finally:
            self.tmp.unlink(missing_ok=True)


class IndexedSplitPartition(SplitPartition):
    """A :class:`SplitPartition` that knows its place in the plan (its output files' number)."""

    def __init__(self, splits: tuple[Any, ...], index: int) -> None:
        super().__init__(splits)
        self.index = index


class CommitTablesReader(ConsumerOffsetsReader):
    def __init__(self, schema: StructType, options: Mapping[str, str]) -> None:
        merged = CaseInsensitiveDict(options)
        merged["rows"] = "commits"
        super().__init__(commits_struct(), merged, frozenset({OFFSETS_TOPIC}))
        self.tail_schema = schema
        tables = options.get("tablesDir")
        if not tables:
            raise ValueError("commit-tables needs option tablesDir (the directory of the tables)")
        self.tables_dir = Path(tables)
        self.log_batches = Path(options.get("logBatches") or self.tables_dir / "_log_batches")
        self.intervals = int(options.get("intervals", "10"))
        since, until = options.get("sinceMs"), options.get("untilMs")
        self.since_ms = int(since) if since not in (None, "") else None
        self.until_ms = int(until) if until not in (None, "") else None
        self.compression = options.get("compression", "snappy")

    def partitions(self) -> Sequence[InputPartition]:
        planned = super().partitions()
        return [
            IndexedSplitPartition(p.splits, i) for i, p in enumerate(planned) if isinstance(p, SplitPartition)
        ]

    def read(self, partition: InputPartition) -> Iterator[pa.RecordBatch]:
        import pyarrow as pa
        from pyspark.sql.pandas.types import to_arrow_schema

        if is_placeholder(partition):
            return
        if not isinstance(partition, IndexedSplitPartition):
            raise TypeError(f"unexpected input partition {partition!r}")
        index = batch_index(self.log_batches)
        commit_schema = self.arrow_schema()
        tail_schema = to_arrow_schema(self.tail_schema, timezone="UTC")
        lag_schema = to_arrow_schema(struct_type(TAIL_COLUMNS), timezone="UTC")
        commits_out = _TableFile(
            self.tables_dir / "offset_commits",
            partition.index,
            commit_schema.with_metadata(_spark_metadata(self.schema)),
            self.compression,
        )
        lag_out = _TableFile(
            self.tables_dir / "lag",
            partition.index,
            lag_schema.with_metadata(_spark_metadata(struct_type(TAIL_COLUMNS))),
            self.compression,
        )
        tails: list[pa.Table] = []
        try:
            for batch in super().read(partition):
                rb = within_ms(batch, "commit_time", self.since_ms, self.until_ms)
                if rb.num_rows == 0:
                    continue
                commits_out.write(rb)
                lag_rb = lag_of(index, rb.select(list(_LAG_INPUT)))
                lag_out.write(lag_rb)
                tails.append(last_n_per_key(pa.Table.from_batches([lag_rb]), self.intervals))
        except BaseException:
            commits_out.abort()
            lag_out.abort()
            raise
        commits_out.close()
        lag_out.close()
        if not tails:
            return
        last = last_n_per_key(pa.concat_tables(tails), self.intervals).cast(tail_schema)
        yield from last.to_batches()


class CommitTablesDataSource(DataSource):  # type: ignore[misc]
    """``spark.read.format("commit-tables").option("tablesDir", OUT/tables).load(DIR)``: writes
    ``offset_commits`` and ``lag`` under ``tablesDir`` as a side effect of the scan and returns each
    group-partition's last ``intervals`` lag rows per task. Options as ``consumer-offsets`` plus
    ``tablesDir``, ``logBatches`` (default ``tablesDir/_log_batches``), ``intervals``, ``sinceMs``,
    ``untilMs``, ``compression`` (default snappy, as Spark)."""

    @classmethod
    def name(cls) -> str:
        return "commit-tables"

    def schema(self) -> str:
        return decoders.ddl(TAIL_COLUMNS)

    def reader(self, schema: StructType) -> DataSourceReader:
        return CommitTablesReader(schema, self.options)
