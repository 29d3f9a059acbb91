"""``__transaction_state`` records in Kafka's format (``TransactionLogKey`` / ``TransactionLogValue``).

Both halves start with a big-endian int16 version.

* Key version 0: ``transactionalId`` string (int16 length).
* Value version 0 (classic encoding; what Kafka writes until ``transaction.version`` 1 is
  enabled, and what we write): producerId int64, producerEpoch int16,
  transactionTimeoutMs int32, transactionStatus int8 (the state byte of
  :class:`~groupcoord.transactions.state.TransactionState`), transactionPartitions nullable
  array (int32 count, -1 null) of {topic string, partitionIds array of int32},
  transactionLastUpdateTimestampMs int64, transactionStartTimestampMs int64.
* Value version 1 (flexible: compact lengths, tagged-field sections): the same fields, plus
  tagged fields previousProducerId (tag 0), nextProducerId (tag 1) and
  clientTransactionVersion (tag 2). We read it and keep the tagged values.

The partitions are null exactly when the state is Empty (Kafka's ``TransactionLog.valueToBytes``
refuses an Empty state with partitions). A ``None`` value is a tombstone (the id was removed).
Decoding is strict: truncated input or trailing bytes raise :class:`TxnRecordDecodeError`.
"""

from __future__ import annotations

import struct
from dataclasses import dataclass, field

from groupcoord.protocol.primitives import WireWriter
from groupcoord.transactions.state import TransactionState

__all__ = [
    "TransactionLogValue",
    "TxnRecord",
    "TxnRecordDecodeError",
    "decode_key",
    "decode_value",
    "encode_key",
    "encode_value",
    "partition_for",
]

KEY_VERSION = 0
VALUE_VERSION = 0
MAX_VALUE_VERSION = 1


class TxnRecordDecodeError(ValueError):
    """Bytes that are not a valid ``__transaction_state`` key or value."""


@dataclass(frozen=True, slots=True, kw_only=True)
class TransactionLogValue:
    producer_id: int
    producer_epoch: int
    timeout_ms: int
    state: TransactionState
    #: topic -> partitions, in the order written; empty (written as null) in Empty.
    partitions: tuple[tuple[str, tuple[int, ...]], ...]
    last_update_ms: int
    start_ms: int
    previous_producer_id: int = -1
    next_producer_id: int = -1
    client_transaction_version: int = 0


@dataclass(frozen=True, slots=True, kw_only=True)
class TxnRecord:
    """One ``__transaction_state`` record: a transactional id and its value (None: tombstone)."""

    transactional_id: str
    value: TransactionLogValue | None = field(default=None)


def encode_key(transactional_id: str) -> bytes:
    w = WireWriter(flexible=False, checked=True)
    w.int16(KEY_VERSION)
    w.string(transactional_id, "transactional id")
    return w.getvalue()


def encode_value(value: TransactionLogValue | None, version: int = VALUE_VERSION) -> bytes | None:
    if value is None:
        return None
    if version not in (0, 1):
        raise ValueError(f"unsupported TransactionLogValue version {version}")
    if value.state is TransactionState.EMPTY and value.partitions:
        raise ValueError("an Empty transaction has no partitions")
    flexible = version >= 1
    w = WireWriter(flexible=flexible, checked=True)
    w.int16(version)
    w.int64(value.producer_id)
    w.int16(value.producer_epoch)
    w.int32(value.timeout_ms)
    w.int8(value.state.value)
    if value.state is TransactionState.EMPTY:
        w.array_length(None)
    else:
        w.array_length(len(value.partitions))
        for topic, parts in value.partitions:
            w.string(topic, "topic")
            w.array_length(len(parts))
            for p in parts:
                w.int32(p)
            w.tagged_fields()
    w.int64(value.last_update_ms)
    w.int64(value.start_ms)
    if flexible:
        tags: list[tuple[int, bytes]] = []
        if value.previous_producer_id != -1:
            tags.append((0, struct.pack(">q", value.previous_producer_id)))
        if value.next_producer_id != -1:
            tags.append((1, struct.pack(">q", value.next_producer_id)))
        if value.client_transaction_version != 0:
            tags.append((2, struct.pack(">h", value.client_transaction_version)))
        w.uvarint(len(tags))
        for tag, data in tags:
            w.uvarint(tag)
            w.uvarint(len(data))
            w.raw(data)
    return w.getvalue()


class _Reader:
    __slots__ = ("buf", "flexible", "pos")

    def __init__(self, buf: bytes, flexible: bool = False) -> None:
        self.buf = buf
        self.pos = 0
        self.flexible = flexible

    def _take(self, n: int) -> bytes:
        if n < 0 or self.pos + n > len(self.buf):
            raise TxnRecordDecodeError("truncated transaction log record")
        b = self.buf[self.pos : self.pos + n]
        self.pos += n
        return b

    def int8(self) -> int:
        return int(struct.unpack(">b", self._take(1))[0])

    def int16(self) -> int:
        return int(struct.unpack(">h", self._take(2))[0])

    def int32(self) -> int:
        return int(struct.unpack(">i", self._take(4))[0])

    def int64(self) -> int:
        return int(struct.unpack(">q", self._take(8))[0])

    def uvarint(self) -> int:
        shift = 0
        out = 0
        while True:
            b = self._take(1)[0]
            out |= (b & 0x7F) << shift
            if not b & 0x80:
                return out
            shift += 7
            if shift > 63:
                raise TxnRecordDecodeError("varint too long")

    def length(self) -> int | None:
        """An array length; None for null."""
        if self.flexible:
            n = self.uvarint()
            return None if n == 0 else n - 1
        n = self.int32()
        if n < -1:
            raise TxnRecordDecodeError(f"negative array length {n}")
        return None if n == -1 else n

    def string(self) -> str:
        n = self.uvarint() - 1 if self.flexible else self.int16()
        if n < 0:
            raise TxnRecordDecodeError("null or negative-length string where a string is required")
        try:
            return self._take(n).decode("utf-8")
        except UnicodeDecodeError as exc:
            raise TxnRecordDecodeError(f"invalid UTF-8: {exc}") from None

    def tagged(self) -> dict[int, bytes]:
        out: dict[int, bytes] = {}
        for _ in range(self.uvarint()):
            tag = self.uvarint()
            out[tag] = self._take(self.uvarint())
        return out

    def done(self) -> None:
        if self.pos != len(self.buf):
            raise TxnRecordDecodeError(f"{len(self.buf) - self.pos} trailing bytes")


def decode_key(data: bytes) -> str:
    r = _Reader(data)
    version = r.int16()
    if version != KEY_VERSION:
        raise TxnRecordDecodeError(f"unknown TransactionLogKey version {version}")
    tid = r.string()
    r.done()
    return tid


def decode_value(data: bytes | None) -> TransactionLogValue | None:
    if data is None:
        return None
    r = _Reader(data)
    version = r.int16()
    if not 0 <= version <= MAX_VALUE_VERSION:
        raise TxnRecordDecodeError(f"unknown TransactionLogValue version {version}")
    r.flexible = version >= 1
    pid = r.int64()
    epoch = r.int16()
    timeout = r.int32()
    try:
        state = TransactionState.from_byte(r.int8())
    except ValueError as exc:
        raise TxnRecordDecodeError(str(exc)) from None
    n = r.length()
    parts: list[tuple[str, tuple[int, ...]]] = []
    for _ in range(n or 0):
        topic = r.string()
        m = r.length()
        ids = tuple(r.int32() for _ in range(m or 0))
        if r.flexible:
            r.tagged()
        parts.append((topic, ids))
    last = r.int64()
    start = r.int64()
    tags = r.tagged() if r.flexible else {}
    r.done()
    try:
        prev = struct.unpack(">q", tags[0])[0] if 0 in tags else -1
        nxt = struct.unpack(">q", tags[1])[0] if 1 in tags else -1
        ctv = struct.unpack(">h", tags[2])[0] if 2 in tags else 0
    except struct.error:
        raise TxnRecordDecodeError("malformed tagged field") from None
    return TransactionLogValue(
        producer_id=pid,
        producer_epoch=epoch,
        timeout_ms=timeout,
        state=state,
        partitions=tuple(parts),
        last_update_ms=last,
        start_ms=start,
        previous_producer_id=int(prev),
        next_producer_id=int(nxt),
        client_transaction_version=int(ctv),
    )


def partition_for(key: str, num_partitions: int) -> int:
    """The partition of an internal topic that owns ``key`` (a transactional id or a group id).

    Kafka's ``Utils.abs(key.hashCode()) % numPartitions`` (``TransactionStateManager.partitionFor``,
    ``GroupCoordinator.partitionFor``), where ``hashCode`` is Java's ``String.hashCode`` over
    UTF-16 code units and ``Utils.abs`` maps ``Integer.MIN_VALUE`` to 0.
    """
    if num_partitions <= 0:
        raise ValueError(f"num_partitions must be positive, got {num_partitions}")
    raw = key.encode("utf-16-be", "surrogatepass")
    h = 0
    for i in range(0, len(raw), 2):
        h = (31 * h + ((raw[i] << 8) | raw[i + 1])) & 0xFFFFFFFF
    if h & 0x80000000:
        h = 0 if h == 0x80000000 else 0x100000000 - h
    return h % num_partitions
