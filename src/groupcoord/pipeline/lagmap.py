"""Spark-free lag computation over Arrow batches (what :func:`groupcoord.pipeline.lag.lag` maps
every partition of the commits through).

For each topic-partition the record-batch index is held twice: ordered by append time with the
running maximum of the end offset (the log-end offset at time t is the maximum of ``last_offset + 1``
over batches appended at or before t), and ordered by base offset (the batch holding offset o is the
one with the greatest base offset <= o; its append time is when the first unconsumed record arrived).
A commit's lag is then two binary searches.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np
import numpy.typing as npt

if TYPE_CHECKING:
    import pyarrow as pa

I64 = npt.NDArray[np.int64]


@dataclass(frozen=True, kw_only=True, slots=True)
class PartitionBatches:
    append_ms: I64  # ascending
    leo_at: I64  # running max of last_offset + 1 in append order
    base_offset: I64  # ascending
    append_by_base: I64  # append time of the batch at each base offset


@dataclass(frozen=True, kw_only=True, slots=True)
class BatchIndex:
    partitions: dict[tuple[str, int], PartitionBatches]

    @classmethod
    def from_arrow(cls, table: pa.Table) -> BatchIndex:
        """From rows (topic, partition, base_offset, last_offset, append_ms) with no nulls in the
        offsets and times (the non-corrupt batches)."""
        topic = table.column("topic").to_pylist()
        part = table.column("partition").to_pylist()
        base = np.asarray(table.column("base_offset").to_numpy(zero_copy_only=False), dtype=np.int64)
        last = np.asarray(table.column("last_offset").to_numpy(zero_copy_only=False), dtype=np.int64)
        append = np.asarray(table.column("append_ms").to_numpy(zero_copy_only=False), dtype=np.int64)
        groups: dict[tuple[str, int], list[int]] = {}
        for i, key in enumerate(zip(topic, part, strict=True)):
            if key[0] is None or key[1] is None:
                continue
            groups.setdefault(key, []).append(i)
        out: dict[tuple[str, int], PartitionBatches] = {}
        for key, idx_list in groups.items():
            idx = np.asarray(idx_list, dtype=np.int64)
            by_t = idx[np.argsort(append[idx], kind="stable")]
            by_o = idx[np.argsort(base[idx], kind="stable")]
            out[key] = PartitionBatches(
                append_ms=append[by_t],
                leo_at=np.maximum.accumulate(last[by_t] + 1),
                base_offset=base[by_o],
                append_by_base=append[by_o],
            )
        return cls(partitions=out)


def _ints(col: pa.ChunkedArray | pa.Array) -> tuple[I64, npt.NDArray[np.bool_]]:
    """(values with nulls as 0, null mask) of an integer or timestamp column."""
    import pyarrow as pa
    import pyarrow.compute as pc

    if pa.types.is_timestamp(col.type):
        col = col.cast(pa.int64())
    mask = np.asarray(pc.is_null(col).to_numpy(zero_copy_only=False), dtype=np.bool_)
    values = np.asarray(pc.fill_null(col, 0).to_numpy(zero_copy_only=False), dtype=np.int64)
    return values, mask


def lag_arrays(
    index: BatchIndex,
    topic: pa.Array | pa.ChunkedArray,
    partition: pa.Array | pa.ChunkedArray,
    t_ms: pa.Array | pa.ChunkedArray,
    committed: pa.Array | pa.ChunkedArray,
) -> tuple[I64, I64, I64]:
    """(log_end_offset, offset_lag, time_lag_ms) for commits given as columns: topic, partition,
    commit time in epoch ms and committed offset (any of them may be null)."""
    import pyarrow.compute as pc

    n = len(topic)
    t, t_null = _ints(t_ms)
    c, c_null = _ints(committed)
    leo = np.zeros(n, dtype=np.int64)
    pending = np.zeros(n, dtype=np.int64)
    pending_null = np.ones(n, dtype=np.bool_)
    topic_enc = pc.dictionary_encode(topic)
    if hasattr(topic_enc, "combine_chunks"):
        topic_enc = topic_enc.combine_chunks()
    t_codes = np.asarray(pc.fill_null(topic_enc.indices, -1).to_numpy(zero_copy_only=False), dtype=np.int64)
    topics = topic_enc.dictionary.to_pylist()
    p_vals, p_null = _ints(partition)
    combined = np.where((t_codes < 0) | p_null, -1, t_codes * (1 << 32) + (p_vals & 0xFFFFFFFF))
    uniq, inverse = np.unique(combined, return_inverse=True)
    order = np.argsort(inverse, kind="stable")
    bounds = np.searchsorted(inverse[order], np.arange(len(uniq) + 1))
    for u, code in enumerate(uniq.tolist()):
        if code < 0:
            continue
        key = (topics[code >> 32], int(np.int32(np.uint32(code & 0xFFFFFFFF))))
        pb = index.partitions.get(key)
        if pb is None:
            continue
        rows = order[bounds[u] : bounds[u + 1]]
        i = np.searchsorted(pb.append_ms, t[rows], side="right") - 1
        leo[rows] = np.where((i >= 0) & ~t_null[rows], pb.leo_at[np.maximum(i, 0)], 0)
        j = np.searchsorted(pb.base_offset, c[rows], side="right") - 1
        found = (j >= 0) & ~c_null[rows]
        pending[rows] = np.where(found, pb.append_by_base[np.maximum(j, 0)], 0)
        pending_null[rows] = ~found
    offset_lag = np.where(c_null, 0, np.maximum(leo - c, 0))
    caught_up = ~c_null & (c >= leo)
    time_lag = np.where(caught_up | t_null | pending_null, 0, np.maximum(t - pending, 0))
    return leo, offset_lag, time_lag


LAG_STRUCT = "struct<log_end_offset:bigint,offset_lag:bigint,time_lag_ms:bigint>"


def lag_struct(
    index: BatchIndex,
    topic: pa.Array,
    partition: pa.Array,
    t_ms: pa.Array,
    committed: pa.Array,
) -> pa.Array:
    """:func:`lag_arrays` as one Arrow struct array (:data:`LAG_STRUCT`), what the Arrow UDF returns."""
    import pyarrow as pa

    leo, offset_lag, time_lag = lag_arrays(index, topic, partition, t_ms, committed)
    return pa.StructArray.from_arrays(
        [pa.array(leo), pa.array(offset_lag), pa.array(time_lag)],
        names=["log_end_offset", "offset_lag", "time_lag_ms"],
    )


def lag_of(index: BatchIndex, rb: pa.RecordBatch) -> pa.RecordBatch:
    """The lag rows (``groupcoord.pipeline.lag.LAG_DDL``) of one batch of commits (group_id, topic, partition,
    commit_time, committed_offset, log_offset)."""
    import pyarrow as pa

    time_col = rb.column("commit_time")
    unit = time_col.type.unit if pa.types.is_timestamp(time_col.type) else "ms"
    per_ms = {"s": 0, "ms": 1, "us": 1_000, "ns": 1_000_000}[unit]
    raw = time_col.cast(pa.int64()) if pa.types.is_timestamp(time_col.type) else time_col
    t_ms = pa.array(np.floor_divide(raw.to_numpy(zero_copy_only=False), per_ms) if per_ms else raw)
    t_ms = t_ms if raw.null_count == 0 else pa.array(t_ms.to_numpy(zero_copy_only=False), mask=raw.is_null())
    leo, offset_lag, time_lag = lag_arrays(
        index, rb.column("topic"), rb.column("partition"), t_ms, rb.column("committed_offset")
    )
    return pa.RecordBatch.from_arrays(
        [
            rb.column("group_id"),
            rb.column("topic"),
            rb.column("partition"),
            time_col,
            rb.column("committed_offset"),
            pa.array(leo, type=pa.int64()),
            pa.array(offset_lag, type=pa.int64()),
            pa.array(time_lag, type=pa.int64()),
            rb.column("log_offset"),
        ],
        names=[
            "group_id",
            "topic",
            "partition",
            "time",
            "committed_offset",
            "log_end_offset",
            "offset_lag",
            "time_lag_ms",
            "log_offset",
        ],
    )

