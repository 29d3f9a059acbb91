"""Spark-free lag computation over Arrow batches (what :func:`groupcoord.pipeline.lag.lag` maps
every partition of the commits through).

For each topic-partition the record-batch index is held twice: ordered by append time with the
running maximum of the end offset (the log-end offset at time t is the maximum of ``last_offset + 1``
over batches appended at or before t), and ordered by base offset (the batch holding offset o is the
one with the greatest base offset <= o; its append time is when the first unconsumed record arrived).
A commit's lag is then two binary searches.

The **last stable offset** (what a read_committed consumer can reach) at time t is the first offset
of the earliest transaction open at t, or the log end when none is: a transaction opens with its
producer's first transactional data batch (at that batch's append time) and closes with the
producer's next COMMIT/ABORT marker (at the marker's). It is held per partition as a step function
of time (a third binary search); ``read_committed_lag`` is that offset minus the committed one.
"""

from __future__ import annotations

import heapq
import itertools
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np
import numpy.typing as npt

if TYPE_CHECKING:
    import pyarrow as pa

I64 = npt.NDArray[np.int64]
Flags = npt.NDArray[np.bool_]

#: no open transaction (the step function's value then)
NO_TXN = np.iinfo(np.int64).max


@dataclass(frozen=True, kw_only=True, slots=True)
class PartitionBatches:
    append_ms: I64  # ascending
    leo_at: I64  # running max of last_offset + 1 in append order
    base_offset: I64  # ascending
    append_by_base: I64  # append time of the batch at each base offset
    #: from txn_points[k] on, the first offset of the earliest open transaction (NO_TXN: none)
    txn_points: I64
    txn_first: I64


def transactions(
    base: I64,
    append: I64,
    producer: I64,
    transactional: npt.NDArray[np.bool_],
    control: npt.NDArray[np.bool_],
) -> list[tuple[int, int, int]]:
    """(opened at, closed at or NO_TXN, first offset) of each transaction in one partition's
    batches (given in offset order)."""
    open_txns: dict[int, tuple[int, int]] = {}
    out: list[tuple[int, int, int]] = []
    for i in np.flatnonzero(transactional & (producer >= 0)).tolist():
        pid = int(producer[i])
        if control[i]:
            found = open_txns.pop(pid, None)
            if found is not None:
                out.append((found[1], int(append[i]), found[0]))
        elif pid not in open_txns:
            open_txns[pid] = (int(base[i]), int(append[i]))
    out.extend((t, int(NO_TXN), first) for first, t in open_txns.values())
    return out


def unstable_steps(txns: list[tuple[int, int, int]]) -> tuple[I64, I64]:
    """The first offset of the earliest open transaction as a step function of time: (points,
    values); a transaction is open from its opening time until (not at) its closing time (never,
    when the producer's clock put its marker at or before its first batch)."""
    txns = [x for x in txns if x[1] > x[0]]
    events = sorted(
        [(start, 1, k) for k, (start, _end, _first) in enumerate(txns)]
        + [(end, 0, k) for k, (_start, end, _first) in enumerate(txns) if end != NO_TXN]
    )
    points: list[int] = []
    values: list[int] = []
    heap: list[tuple[int, int]] = []
    active: set[int] = set()
    for when, group in itertools.groupby(events, key=lambda e: e[0]):
        for _when, kind, k in group:
            if kind:
                active.add(k)
                heapq.heappush(heap, (txns[k][2], k))
            else:
                active.discard(k)
        while heap and heap[0][1] not in active:
            heapq.heappop(heap)
        points.append(when)
        values.append(heap[0][0] if heap else int(NO_TXN))
    return np.asarray(points, dtype=np.int64), np.asarray(values, dtype=np.int64)


@dataclass(frozen=True, kw_only=True, slots=True)
class BatchIndex:
    partitions: dict[tuple[str, int], PartitionBatches]

    @classmethod
    def from_arrow(cls, table: pa.Table) -> BatchIndex:
        """From rows (topic, partition, base_offset, last_offset, append_ms, and optionally
        producer_id, is_transactional, is_control) with no nulls in the offsets and times (the
        non-corrupt batches)."""
        topic = table.column("topic").to_pylist()
        part = table.column("partition").to_pylist()
        base = np.asarray(table.column("base_offset").to_numpy(zero_copy_only=False), dtype=np.int64)
        last = np.asarray(table.column("last_offset").to_numpy(zero_copy_only=False), dtype=np.int64)
        append = np.asarray(table.column("append_ms").to_numpy(zero_copy_only=False), dtype=np.int64)
        n = len(base)
        if "is_transactional" in table.column_names:
            producer, _ = _ints(table.column("producer_id"))
            txn_flags = _flags(table.column("is_transactional"))
            control = _flags(table.column("is_control"))
        else:
            producer = np.full(n, -1, dtype=np.int64)
            txn_flags = control = np.zeros(n, dtype=np.bool_)
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
            points, first = unstable_steps(
                transactions(base[by_o], append[by_o], producer[by_o], txn_flags[by_o], control[by_o])
            )
            out[key] = PartitionBatches(
                append_ms=append[by_t],
                leo_at=np.maximum.accumulate(last[by_t] + 1),
                base_offset=base[by_o],
                append_by_base=append[by_o],
                txn_points=points,
                txn_first=first,
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


def _flags(col: pa.ChunkedArray | pa.Array) -> npt.NDArray[np.bool_]:
    """A boolean column with nulls as False."""
    import pyarrow.compute as pc

    return np.asarray(pc.fill_null(col, False).to_numpy(zero_copy_only=False), dtype=np.bool_)


def lag_arrays(
    index: BatchIndex,
    topic: pa.Array | pa.ChunkedArray,
    partition: pa.Array | pa.ChunkedArray,
    t_ms: pa.Array | pa.ChunkedArray,
    committed: pa.Array | pa.ChunkedArray,
) -> tuple[I64, I64, I64, I64, I64]:
    """(log_end_offset, offset_lag, time_lag_ms, last_stable_offset, read_committed_lag) for
    commits given as columns: topic, partition, commit time in epoch ms and committed offset (any
    of them may be null)."""
    import pyarrow.compute as pc

    n = len(topic)
    t, t_null = _ints(t_ms)
    c, c_null = _ints(committed)
    leo = np.zeros(n, dtype=np.int64)
    lso = np.zeros(n, dtype=np.int64)
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
        lso[rows] = leo[rows]
        if len(pb.txn_points):
            k = np.searchsorted(pb.txn_points, t[rows], side="right") - 1
            first = np.where((k >= 0) & ~t_null[rows], pb.txn_first[np.maximum(k, 0)], NO_TXN)
            lso[rows] = np.minimum(first, leo[rows])
        j = np.searchsorted(pb.base_offset, c[rows], side="right") - 1
        found = (j >= 0) & ~c_null[rows]
        pending[rows] = np.where(found, pb.append_by_base[np.maximum(j, 0)], 0)
        pending_null[rows] = ~found
    offset_lag = np.where(c_null, 0, np.maximum(leo - c, 0))
    caught_up = ~c_null & (c >= leo)
    time_lag = np.where(caught_up | t_null | pending_null, 0, np.maximum(t - pending, 0))
    committed_lag = np.where(c_null, 0, np.maximum(lso - c, 0))
    return leo, offset_lag, time_lag, lso, committed_lag


LAG_STRUCT = (
    "struct<log_end_offset:bigint,offset_lag:bigint,time_lag_ms:bigint,"
    "last_stable_offset:bigint,read_committed_lag:bigint>"
)


def lag_struct(
    index: BatchIndex,
    topic: pa.Array,
    partition: pa.Array,
    t_ms: pa.Array,
    committed: pa.Array,
) -> pa.Array:
    """:func:`lag_arrays` as one Arrow struct array (:data:`LAG_STRUCT`), what the Arrow UDF returns."""
    import pyarrow as pa

    arrays = lag_arrays(index, topic, partition, t_ms, committed)
    return pa.StructArray.from_arrays(
        [pa.array(a) for a in arrays],
        names=["log_end_offset", "offset_lag", "time_lag_ms", "last_stable_offset", "read_committed_lag"],
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
    leo, offset_lag, time_lag, lso, committed_lag = lag_arrays(
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
            pa.array(lso, type=pa.int64()),
            pa.array(committed_lag, type=pa.int64()),
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
            "last_stable_offset",
            "read_committed_lag",
        ],
    )
