"""Vectorised decoding of ``__consumer_offsets`` segments with numpy (the bulk path of the
``consumer-offsets`` source).

The per-record path (:class:`groupcoord.pipeline.decoders.OffsetsColumns` over
:func:`groupcoord.pipeline.segments.iter_key_values`) costs a few microseconds of Python per record.
Here the records of all uncompressed batches of a split are walked together, one record index at a
time across every batch (varints decoded on whole arrays), and offset commits whose key and value have
the fixed layouts brokers write (key v0/v1; value v3, or v1 with an expire timestamp) become Arrow
columns built straight from buffers.

Everything else keeps the per-record path, record by record or batch by batch, so the rows are the
same as the per-record reader's, in the same order: compressed batches, batches whose record walk is
irregular in any way (which the per-record path then reports exactly as before), tombstones, group
metadata, other key or value versions, metadata strings that are not valid UTF-8.
"""

from __future__ import annotations

import itertools
import logging
import struct
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import crc32c as _crc32c
import numpy as np
import numpy.typing as npt

from groupcoord.formats.batch import (
    BATCH_HEADER_SIZE,
    COMPRESSION_ZSTD,
    CRC_START,
    CURRENT_MAGIC,
    LOG_OVERHEAD,
    MIN_BATCH_LENGTH,
    BatchHeader,
    records_block,
)
from groupcoord.pipeline import decoders
from groupcoord.pipeline.segments import iter_key_values

if TYPE_CHECKING:
    import pyarrow as pa

log = logging.getLogger(__name__)

I64 = npt.NDArray[np.int64]
U8 = npt.NDArray[np.uint8]
Bool = npt.NDArray[np.bool_]

_PAD = 32
_TS_TYPE = 0x08
_COMPRESSION = 0x07


def _be(buf: U8, pos: I64, width: int) -> I64:
    """Big-endian signed integers of ``width`` bytes (2, 4 or 8) at ``pos``."""
    if len(pos) == 0:
        return np.zeros(0, dtype=np.int64)
    # one gather per byte, most significant first (the first one sign-extended): ~3x faster than
    # gathering (n, width) windows and viewing them as big-endian integers
    acc: I64 = buf[pos].view(np.int8).astype(np.int64)
    for k in range(1, width):
        acc = (acc << 8) | buf[pos + k]
    return acc


def _varint(buf: U8, pos: I64, max_bytes: int) -> tuple[I64, I64, Bool]:
    """Zig-zag varints at ``pos``: (value, bytes used, too long)."""
    n = len(pos)
    acc = np.zeros(n, dtype=np.uint64)
    used = np.zeros(n, dtype=np.int64)
    going = np.ones(n, dtype=np.bool_)
    limit = len(buf) - 1
    for i in range(max_bytes):
        b = buf[np.minimum(pos + i, limit)].astype(np.uint64)
        acc |= np.where(going, (b & np.uint64(0x7F)) << np.uint64(7 * i), np.uint64(0))
        used += going
        going &= (b & np.uint64(0x80)) != 0
        if not going.any():
            break
    value = (acc >> np.uint64(1)).astype(np.int64) ^ -(acc & np.uint64(1)).astype(np.int64)
    return value, used, going


def _strings(buf: U8, start: I64, length: I64) -> pa.Array:
    """A StringArray of the byte ranges [start, start + length) (already known to be UTF-8)."""
    import pyarrow as pa

    offsets = np.zeros(len(start) + 1, dtype=np.int64)
    np.cumsum(length, out=offsets[1:])
    total = int(offsets[-1])
    if total >= 2**31:
        raise ValueError("string column too large for one Arrow batch")
    idx = np.repeat(start - offsets[:-1], length) + np.arange(total, dtype=np.int64)
    data = buf[idx]
    arr = pa.StringArray.from_buffers(
        len(start), pa.py_buffer(offsets.astype(np.int32)), pa.py_buffer(data.tobytes())
    )
    return arr


_LENGTH = struct.Struct(">i")
_CONTROL = 0x20
_TRANSACTIONAL = 0x10
_PRODUCER_ID_AT = 43

#: per producer id, the (first offset, ABORT marker offset) of each of its aborted transactions
#: (a partition's ``.txnindex`` entries)
AbortedRanges = dict[int, list[tuple[int, int]]]


def aborted_batches(data: bytes, headers: BatchArrays, aborted: AbortedRanges | None) -> Bool:
    """Which batches belong to an aborted transaction: transactional, of a producer with an
    aborted transaction whose range holds the batch's base offset (what a read_committed consumer
    drops, Kafka's ``FetchResponse.abortedTransactions`` rule)."""
    out = np.zeros(len(headers), dtype=np.bool_)
    if not aborted or len(headers) == 0:
        return out
    buf = np.frombuffer(data, dtype=np.uint8)
    pid = _be(buf, headers.pos + _PRODUCER_ID_AT, 8)
    txn = (headers.attributes & _TRANSACTIONAL) != 0
    for producer, ranges in aborted.items():
        sel = txn & (pid == producer)
        if not sel.any():
            continue
        for first, last in ranges:
            out |= sel & (headers.base_offset >= first) & (headers.base_offset <= last)
    return out


@dataclass(frozen=True, kw_only=True, slots=True)
class BatchArrays:
    """The headers of a run of batches as numpy arrays (one element per batch), instead of one
    :class:`BatchHeader` object per batch."""

    pos: I64
    size: I64
    base_offset: I64
    attributes: I64
    record_count: I64
    base_timestamp: I64
    max_timestamp: I64

    def __len__(self) -> int:
        return len(self.pos)

    def take(self, idx: I64) -> BatchArrays:
        return BatchArrays(
            pos=self.pos[idx],
            size=self.size[idx],
            base_offset=self.base_offset[idx],
            attributes=self.attributes[idx],
            record_count=self.record_count[idx],
            base_timestamp=self.base_timestamp[idx],
            max_timestamp=self.max_timestamp[idx],
        )

    @classmethod
    def from_headers(cls, headers: Sequence[tuple[int, BatchHeader]]) -> BatchArrays:
        n = len(headers)

        def col(values: Iterator[int]) -> I64:
            return np.fromiter(values, dtype=np.int64, count=n)

        return cls(
            pos=col(p for p, _h in headers),
            size=col(h.size for _p, h in headers),
            base_offset=col(h.base_offset for _p, h in headers),
            attributes=col(h.attributes for _p, h in headers),
            record_count=col(h.record_count for _p, h in headers),
            base_timestamp=col(h.base_timestamp for _p, h in headers),
            max_timestamp=col(h.max_timestamp for _p, h in headers),
        )


def scan_batches(data: bytes) -> BatchArrays | None:
    """Every batch of a split, validated as :meth:`~groupcoord.pipeline.segments.SplitWalk.batches`
    validates them (length, magic 2, record count, last offset delta, codec, CRC-32C), as arrays.

    Returns ``None`` when anything is irregular — an impossible length, a bad magic or CRC, a torn
    or partial tail — so that the caller walks that split with the general path, which reports the
    corrupt tail exactly as before. Only the framing (one length per batch) is a Python loop; the
    header fields are read with numpy and the CRC is one ``crc32c`` call per batch."""
    end = len(data)
    unpack = _LENGTH.unpack_from
    positions: list[int] = []
    append = positions.append
    pos = 0
    while end - pos >= LOG_OVERHEAD:
        (length,) = unpack(data, pos + 8)
        if length < MIN_BATCH_LENGTH:
            return None
        size = length + LOG_OVERHEAD
        if pos + size > end:
            return None
        append(pos)
        pos += size
    if pos != end:
        return None
    arrays = batches_at(data, np.asarray(positions, dtype=np.int64))
    if arrays is None:
        return None
    buf = np.frombuffer(data, dtype=np.uint8)
    p = arrays.pos
    stored = _be(buf, p + 17, 4) & 0xFFFFFFFF
    crc = _crc32c.crc32c
    view = memoryview(data)
    for start, n, want in zip(p.tolist(), arrays.size.tolist(), stored.tolist(), strict=True):
        if crc(view[start + CRC_START : start + n]) != want:
            return None
    return arrays


def batches_at(data: bytes, p: I64) -> BatchArrays | None:
    """The headers of the batches starting at byte positions ``p`` of ``data`` (whole batches known
    to be there), or ``None`` if one has a bad magic, a negative record count or last offset delta,
    or an unknown codec. The CRC is not checked here."""
    if len(p) == 0:
        return BatchArrays(
            pos=p, size=p, base_offset=p, attributes=p, record_count=p, base_timestamp=p, max_timestamp=p
        )
    buf = np.frombuffer(data, dtype=np.uint8)
    if int(p.max()) + BATCH_HEADER_SIZE > len(buf):
        return None
    size = _be(buf, p + 8, 4) + LOG_OVERHEAD
    magic = buf[p + 16]
    attributes = _be(buf, p + 21, 2)
    last_delta = _be(buf, p + 23, 4)
    count = _be(buf, p + 57, 4)
    if (
        (magic != CURRENT_MAGIC).any()
        or (size < BATCH_HEADER_SIZE).any()
        or (p + size > len(buf)).any()
        or (count < 0).any()
        or (last_delta < 0).any()
        or ((attributes & _COMPRESSION) > COMPRESSION_ZSTD).any()
    ):
        return None
    return BatchArrays(
        pos=p,
        size=size,
        base_offset=_be(buf, p, 8),
        attributes=attributes,
        record_count=count,
        base_timestamp=_be(buf, p + 27, 8),
        max_timestamp=_be(buf, p + 35, 8),
    )


class _Walked:
    """Records of the walkable batches, flattened (batch index, record index within the batch)."""

    def __init__(self) -> None:
        self.batch: list[I64] = []
        self.index: list[I64] = []
        self.offset: list[I64] = []
        self.time: list[I64] = []
        self.kstart: list[I64] = []
        self.klen: list[I64] = []
        self.vstart: list[I64] = []
        self.vlen: list[I64] = []


def _walk(buf: U8, headers: BatchArrays, fast: I64) -> tuple[dict[str, I64], Bool]:
    """Walk the records of the batches ``fast`` (indices into ``headers``) vectorised.

    Returns the flattened record fields and, per batch of ``fast``, whether its walk was irregular
    (such batches are decoded by the per-record path instead, which reports the problem as before).
    """
    hs = headers.take(fast)
    nb = len(hs)
    pos = hs.pos
    size = hs.size
    count = hs.record_count
    base_off = hs.base_offset
    base_ts = hs.base_timestamp
    max_ts = hs.max_timestamp
    log_append = (hs.attributes & _TS_TYPE) != 0
    end = pos + size
    cur = pos + BATCH_HEADER_SIZE
    bad = np.zeros(nb, dtype=np.bool_)
    w = _Walked()
    max_count = int(count.max()) if nb else 0
    for j in range(max_count):
        act = np.flatnonzero(count > j)
        p = cur[act]
        e = end[act]
        length, used, long1 = _varint(buf, p, 5)
        p = p + used
        rec_end = p + length
        broken = long1 | (length < 0) | (rec_end > e)
        p = p + 1  # attributes
        tsd, used, long2 = _varint(buf, p, 10)
        p = p + used
        offd, used, long3 = _varint(buf, p, 5)
        p = p + used
        klen, used, long4 = _varint(buf, p, 5)
        p = p + used
        kstart = p
        p = p + np.maximum(klen, 0)
        vlen, used, long5 = _varint(buf, p, 5)
        p = p + used
        vstart = p
        p = p + np.maximum(vlen, 0)
        broken |= long2 | long3 | long4 | long5 | (p > rec_end)
        bad[act] |= broken
        cur[act] = np.where(broken, e, rec_end)
        w.batch.append(act)
        w.index.append(np.full(len(act), j, dtype=np.int64))
        w.offset.append(base_off[act] + offd)
        w.time.append(np.where(log_append[act], max_ts[act], base_ts[act] + tsd))
        w.kstart.append(kstart)
        w.klen.append(klen)
        w.vstart.append(vstart)
        w.vlen.append(vlen)

    def cat(parts: list[I64]) -> I64:
        return np.concatenate(parts) if parts else np.zeros(0, dtype=np.int64)

    fields = {
        "batch": cat(w.batch),
        "index": cat(w.index),
        "offset": cat(w.offset),
        "time": cat(w.time),
        "kstart": cat(w.kstart),
        "klen": cat(w.klen),
        "vstart": cat(w.vstart),
        "vlen": cat(w.vlen),
    }
    keep = np.flatnonzero(~bad[fields["batch"]])
    # back to log order (the walk collected record index by record index across batches)
    keep = keep[np.lexsort((fields["index"][keep], fields["batch"][keep]))]
    return {k: v[keep] for k, v in fields.items()}, bad


def _commit_mask(buf: U8, f: dict[str, I64]) -> tuple[Bool, dict[str, Any]]:
    """Which walked records are offset commits with the fixed layouts, and their decoded fields."""
    ks, kl, vs, vl = f["kstart"], f["klen"], f["vstart"], f["vlen"]
    ok = (kl >= 10) & (vl >= 24)
    kver = np.where(ok, _be(buf, np.where(ok, ks, 0), 2), -1)
    ok &= (kver == 0) | (kver == 1)
    glen = np.where(ok, _be(buf, np.where(ok, ks + 2, 0), 2), -1)
    ok &= (glen >= 0) & (4 + glen + 6 <= kl)
    tpos = ks + 4 + np.maximum(glen, 0)
    tlen = np.where(ok, _be(buf, np.where(ok, tpos, 0), 2), -1)
    ok &= (tlen >= 0) & (kl == 4 + glen + 2 + tlen + 4)
    vver = np.where(ok, _be(buf, np.where(ok, vs, 0), 2), -1)
    v3 = ok & (vver == 3)
    v1 = ok & (vver == 1) & (vl >= 28)
    m3 = np.where(v3, _be(buf, np.where(v3, vs + 14, 0), 2), -1)
    m1 = np.where(v1, _be(buf, np.where(v1, vs + 10, 0), 2), -1)
    v3 &= (m3 >= 0) & (vl == 24 + m3)
    v1 &= (m1 >= 0) & (vl == 28 + m1)
    ok = v3 | v1
    # strings must be UTF-8 as the codec requires: all-ASCII ranges are; the few others are
    # checked one by one and, if invalid, left to the per-record path (which reports them)
    mlen_all = np.where(v3, m3, m1)
    ranges = (
        (ks + 4, glen),
        (ks + 6 + glen, tlen),
        (np.where(v3, vs + 16, vs + 12), mlen_all),
    )
    ok &= _utf8_ok(buf, ok, ranges)
    idx = np.flatnonzero(ok)
    is3 = v3[idx]
    ks, vs = ks[idx], vs[idx]
    glen, tlen = glen[idx], tlen[idx]
    mlen = np.where(is3, m3[idx], m1[idx])
    mstart = np.where(is3, vs + 16, vs + 12)
    epoch = np.where(is3, _be(buf, vs + 10, 4), -1)
    expire = np.where(is3, -1, _be(buf, vs + 20 + mlen, 8))
    out = {
        "key_version": kver[idx],
        "value_version": np.where(is3, 3, 1),
        "group_start": ks + 4,
        "group_len": glen,
        "topic_start": ks + 6 + glen,
        "topic_len": tlen,
        "partition": _be(buf, ks + 6 + glen + tlen, 4),
        "committed_offset": _be(buf, vs + 2, 8),
        "leader_epoch": epoch,
        "meta_start": mstart,
        "meta_len": mlen,
        "commit_time": _be(buf, mstart + mlen, 8),
        "expire_time": expire,
    }
    return ok, out


def _utf8_ok(buf: U8, candidates: Bool, ranges: tuple[tuple[I64, I64], ...]) -> Bool:
    """For each candidate record, whether all its string byte ranges decode as UTF-8."""
    good = np.ones(len(candidates), dtype=np.bool_)
    cand = np.flatnonzero(candidates)
    if len(cand) == 0:
        return good
    suspect = np.zeros(len(cand), dtype=np.bool_)
    for start, n in ranges:
        lengths = np.maximum(n[cand], 0)
        offsets = np.zeros(len(cand) + 1, dtype=np.int64)
        np.cumsum(lengths, out=offsets[1:])
        idx = np.repeat(start[cand] - offsets[:-1], lengths) + np.arange(int(offsets[-1]), dtype=np.int64)
        high = buf[idx] >= 0x80
        if not high.any():  # the usual case: nothing but ASCII
            continue
        counts = np.zeros(len(high) + 1, dtype=np.int64)
        np.cumsum(high, out=counts[1:])
        suspect |= (counts[offsets[1:]] - counts[offsets[:-1]]) > 0
    if not suspect.any():
        return good
    raw = buf.tobytes()
    for r in cand[suspect]:
        for start, n in ranges:
            first, end = int(start[r]), int(start[r] + n[r])
            try:
                raw[first:end].decode("utf-8")
            except UnicodeDecodeError:
                good[r] = False
    return good


def _timestamp_ms(values: I64, null: Bool | None, typ: pa.DataType) -> pa.Array:
    import pyarrow as pa

    arr = pa.array(values, type=pa.int64(), mask=null)
    return arr.cast(pa.timestamp("ms", tz="UTC")).cast(typ)


def _fast_batch(
    buf: U8, f: dict[str, I64], c: dict[str, Any], log_partition: int, schema: pa.Schema
) -> pa.RecordBatch:
    import pyarrow as pa

    n = len(f["offset"])
    arrays: list[pa.Array] = []
    for field in schema:
        name = field.name
        t = field.type
        if name == "log_partition":
            arr = pa.array(np.full(n, log_partition, dtype=np.int32), type=t)
        elif name == "log_offset":
            arr = pa.array(f["offset"], type=t)
        elif name == "record_time":
            arr = _timestamp_ms(f["time"], None, t)
        elif name == "record_type":
            arr = pa.repeat(pa.scalar(decoders.OFFSET_COMMIT, type=t), n)
        elif name in ("key_version", "value_version", "partition"):
            arr = pa.array(c[name].astype(np.int32), type=t)
        elif name in ("tombstone", "corrupt"):
            arr = pa.array(np.zeros(n, dtype=np.bool_), type=t)
        elif name == "group_id":
            arr = _strings(buf, c["group_start"], c["group_len"])
        elif name == "topic":
            arr = _strings(buf, c["topic_start"], c["topic_len"])
        elif name == "metadata":
            arr = _strings(buf, c["meta_start"], c["meta_len"])
        elif name == "committed_offset":
            arr = pa.array(c[name], type=t)
        elif name == "leader_epoch":
            e = c["leader_epoch"]
            arr = pa.array(e.astype(np.int32), type=t, mask=e == -1)
        elif name == "commit_time":
            arr = _timestamp_ms(c["commit_time"], None, t)
        elif name == "expire_time":
            x = c["expire_time"]
            arr = _timestamp_ms(x, x == -1, t)
        else:
            arr = pa.nulls(n, type=t)
        arrays.append(arr)
    return pa.RecordBatch.from_arrays(arrays, schema=schema)


def decode_offsets(
    data: bytes,
    headers: Sequence[tuple[int, BatchHeader]] | BatchArrays,
    log_partition: int,
    schema: pa.Schema,
    rows: str = "all",
    touched: list[int] | None = None,
) -> pa.Table:
    """The rows of ``__consumer_offsets`` for the (non-control) batches ``headers`` of ``data`` —
    exactly what :class:`~groupcoord.pipeline.decoders.OffsetsColumns` gives record by record, in
    the same order. ``rows`` keeps ``all`` of them, only the ``commits`` or only the ``others``
    (see :func:`select_rows`).

    ``touched``, if given, receives the byte positions of the batches that hold any record outside
    the fixed-layout commits (every batch that can have a row ``rows=others`` keeps; a superset)."""
    import pyarrow as pa

    if not isinstance(headers, BatchArrays):
        headers = BatchArrays.from_headers(headers)
    nb = len(headers)
    if nb == 0:
        return schema.empty_table()
    buf = np.frombuffer(data, dtype=np.uint8)
    padded = np.concatenate([buf, np.zeros(_PAD, dtype=np.uint8)])
    walkable = ((headers.attributes & _COMPRESSION) == 0) & (headers.record_count > 0)
    fast = np.flatnonzero(walkable)
    f, bad = _walk(padded, headers, fast)
    # batch indices back into `headers`
    f["batch"] = fast[f["batch"]]
    slow_batches = np.flatnonzero(~walkable)
    slow_batches = np.sort(np.concatenate([slow_batches, fast[bad]]))
    is_commit, c = _commit_mask(padded, f)
    if touched is not None:
        some = np.union1d(np.unique(f["batch"][~is_commit]), slow_batches)
        touched.extend(headers.pos[some].tolist())
    if rows == "others":
        fast_rb = pa.RecordBatch.from_pylist([], schema=schema)
    else:
        fast_rb = _fast_batch(padded, {k: v[is_commit] for k, v in f.items()}, c, log_partition, schema)
    order = [(f["batch"][is_commit] << 32) | f["index"][is_commit]]
    # the rest: record by record through the per-record decoder
    cols = decoders.OffsetsColumns()
    slow_keys: list[int] = []
    rest = np.flatnonzero(~is_commit)
    for r in rest:
        ks, kl, vs, vl = int(f["kstart"][r]), int(f["klen"][r]), int(f["vstart"][r]), int(f["vlen"][r])
        key = data[ks : ks + kl] if kl >= 0 else None
        value = data[vs : vs + vl] if vl >= 0 else None
        cols.add(log_partition, int(f["offset"][r]), int(f["time"][r]), key, value)
        slow_keys.append((int(f["batch"][r]) << 32) | int(f["index"][r]))
    for b in slow_batches:
        pos = int(headers.pos[int(b)])
        header, block = records_block(data, pos)
        for i, (offset, ts, key, value) in enumerate(iter_key_values(header, block)):
            cols.add(log_partition, offset, ts, key, value)
            slow_keys.append((int(b) << 32) | i)
    if not slow_keys:
        return pa.Table.from_batches([fast_rb], schema=schema)
    columns, nulls = cols.take_with_nulls()
    slow_order = np.asarray(slow_keys, dtype=np.int64)
    if rows != "all":
        mask = select_mask(columns, rows)
        columns = {
            name: [v for v, k in zip(values, mask, strict=True) if k] for name, values in columns.items()
        }
        slow_order = slow_order[mask]
    slow_rb = decoders.to_record_batch(columns, schema, nulls)
    by_log = np.argsort(slow_order, kind="stable")
    slow = pa.Table.from_batches([slow_rb], schema=schema).take(by_log)
    if fast_rb.num_rows == 0:
        return slow
    # merge the (few) per-record rows into the fast rows, both in log order, by slicing
    fast = pa.Table.from_batches([fast_rb], schema=schema)
    at = np.searchsorted(order[0], slow_order[by_log])
    pieces: list[pa.Table] = []
    prev = 0
    for k, p in enumerate(at.tolist()):
        if p > prev:
            pieces.append(fast.slice(prev, p - prev))
        pieces.append(slow.slice(k, 1))
        prev = p
    if prev < fast.num_rows:
        pieces.append(fast.slice(prev))
    return pa.concat_tables(pieces).combine_chunks()


ROW_SELECTIONS = ("all", "commits", "others")


def select_mask(columns: dict[str, list[Any]], rows: str) -> npt.NDArray[np.bool_]:
    """Which rows (given as :class:`~groupcoord.pipeline.decoders.OffsetsColumns` columns) ``rows``
    keeps: ``commits`` = offset commits that decoded (what the ``offset_commits`` table is made of:
    record type offset_commit, not a tombstone, no decode error, not a corrupt marker),
    ``others`` = every other row, ``all`` = all."""
    if rows not in ROW_SELECTIONS:
        raise ValueError(f"rows must be one of {ROW_SELECTIONS}, not {rows!r}")
    commit = np.fromiter(
        (
            t == decoders.OFFSET_COMMIT and not tomb and not bad and err is None
            for t, tomb, bad, err in zip(
                columns["record_type"],
                columns["tombstone"],
                columns["corrupt"],
                columns["decode_error"],
                strict=True,
            )
        ),
        dtype=np.bool_,
        count=len(columns["record_type"]),
    )
    if rows == "all":
        return np.ones(len(commit), dtype=np.bool_)
    return commit if rows == "commits" else ~commit


def iter_offsets_batches(
    data: bytes,
    headers: Sequence[tuple[int, BatchHeader]] | BatchArrays,
    log_partition: int,
    schema: pa.Schema,
    batch_rows: int,
    rows: str = "all",
    touched: list[int] | None = None,
    aborted: AbortedRanges | None = None,
) -> Iterator[pa.RecordBatch]:
    """:func:`decode_offsets` in chunks of batches, as Arrow record batches of about ``batch_rows``
    (control batches and batches of aborted transactions skipped)."""
    if not isinstance(headers, BatchArrays):
        headers = BatchArrays.from_headers(headers)
    skip = ((headers.attributes & _CONTROL) != 0) | aborted_batches(data, headers, aborted)
    data_batches = headers.take(np.flatnonzero(~skip))
    if len(data_batches) == 0:
        return
    # chunk ends: a chunk closes at the batch that brings its record count to batch_rows
    total = np.cumsum(data_batches.record_count)
    starts = [0]
    while True:
        base = int(total[starts[-1] - 1]) if starts[-1] > 0 else 0
        cut = int(np.searchsorted(total, base + batch_rows, side="left")) + 1
        if cut >= len(total):
            break
        starts.append(cut)
    bounds = [*starts, len(total)]
    for a, b in itertools.pairwise(bounds):
        chunk = data_batches.take(np.arange(a, b))
        yield from decode_offsets(data, chunk, log_partition, schema, rows, touched).to_batches()
