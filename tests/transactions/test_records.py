"""``__transaction_state`` records, byte for byte in Kafka's layout.

The expected bytes are built field by field from Kafka's message definitions
(``transaction-coordinator/src/main/resources/common/message/TransactionLogKey.json`` and
``TransactionLogValue.json``) and the rules of ``TransactionLog.valueToBytes`` (partitions null
in Empty; value version 0 until ``transaction.version`` 1), as Kafka's ``TransactionLogTest``
round-trips them.
"""

from __future__ import annotations

import struct

import pytest

from groupcoord.transactions.records import (
    TransactionLogValue,
    TxnRecordDecodeError,
    decode_key,
    decode_value,
    encode_key,
    encode_value,
    partition_for,
)
from groupcoord.transactions.state import TransactionState


def _s16(s: str) -> bytes:
    raw = s.encode()
    return struct.pack(">h", len(raw)) + raw


def test_key_is_version_0_and_an_int16_length_string() -> None:
    assert encode_key("my-txn") == b"\x00\x00" + b"\x00\x06my-txn"
    assert decode_key(encode_key("my-txn")) == "my-txn"


def test_ongoing_value_v0_matches_kafkas_layout() -> None:
    value = TransactionLogValue(
        producer_id=1001,
        producer_epoch=3,
        timeout_ms=60_000,
        state=TransactionState.ONGOING,
        partitions=(("out", (0, 2)), ("__consumer_offsets", (7,))),
        last_update_ms=1_700_000_000_500,
        start_ms=1_700_000_000_000,
    )
    expected = (
        struct.pack(">hqhib", 0, 1001, 3, 60_000, 1)
        + struct.pack(">i", 2)
        + _s16("out")
        + struct.pack(">iii", 2, 0, 2)
        + _s16("__consumer_offsets")
        + struct.pack(">ii", 1, 7)
        + struct.pack(">qq", 1_700_000_000_500, 1_700_000_000_000)
    )
    assert encode_value(value) == expected
    assert decode_value(expected) == value


def test_empty_state_writes_null_partitions() -> None:
    value = TransactionLogValue(
        producer_id=5,
        producer_epoch=0,
        timeout_ms=1000,
        state=TransactionState.EMPTY,
        partitions=(),
        last_update_ms=10,
        start_ms=9,
    )
    assert encode_value(value) == struct.pack(">hqhib", 0, 5, 0, 1000, 0) + b"\xff\xff\xff\xff" + struct.pack(
        ">qq", 10, 9
    )


def test_complete_state_writes_an_empty_partition_array_not_null() -> None:
    value = TransactionLogValue(
        producer_id=5,
        producer_epoch=1,
        timeout_ms=1000,
        state=TransactionState.COMPLETE_COMMIT,
        partitions=(),
        last_update_ms=10,
        start_ms=9,
    )
    assert encode_value(value) == struct.pack(">hqhib", 0, 5, 1, 1000, 4) + b"\x00\x00\x00\x00" + struct.pack(
        ">qq", 10, 9
    )


def test_empty_state_with_partitions_is_refused() -> None:
    value = TransactionLogValue(
        producer_id=5,
        producer_epoch=0,
        timeout_ms=1000,
        state=TransactionState.EMPTY,
        partitions=(("t", (0,)),),
        last_update_ms=10,
        start_ms=9,
    )
    with pytest.raises(ValueError):
        encode_value(value)


def test_value_v1_flexible_with_tagged_fields_reads_back() -> None:
    """Version 1 (KIP-890): compact lengths, tagged previous/next producer id and client version."""
    value = TransactionLogValue(
        producer_id=7,
        producer_epoch=2,
        timeout_ms=500,
        state=TransactionState.PREPARE_COMMIT,
        partitions=(("t", (1,)),),
        last_update_ms=3,
        start_ms=2,
        previous_producer_id=6,
        next_producer_id=-1,
        client_transaction_version=2,
    )
    data = encode_value(value, version=1)
    assert data is not None
    expected = (
        struct.pack(">hqhib", 1, 7, 2, 500, 2)
        + b"\x02"  # one partition entry, compact
        + b"\x02t"  # compact string "t"
        + b"\x02"
        + struct.pack(">i", 1)  # compact array [1]
        + b"\x00"  # entry's tagged fields
        + struct.pack(">qq", 3, 2)
        + b"\x02"  # two tagged fields
        + b"\x00\x08"
        + struct.pack(">q", 6)
        + b"\x02\x02"
        + struct.pack(">h", 2)
    )
    assert data == expected
    assert decode_value(data) == value


def test_tombstone_round_trips_as_none() -> None:
    assert encode_value(None) is None
    assert decode_value(None) is None


@pytest.mark.parametrize(
    "data",
    [
        b"\x00",
        struct.pack(">hqhib", 0, 5, 0, 1000, 9) + b"\xff\xff\xff\xff" + struct.pack(">qq", 1, 1),
        struct.pack(">hqhib", 0, 5, 0, 1000, 0) + b"\xff\xff\xff\xff" + struct.pack(">qq", 1, 1) + b"x",
        struct.pack(">h", 2) + b"\x00" * 30,
    ],
    ids=["truncated", "unknown-state", "trailing-bytes", "unknown-version"],
)
def test_malformed_values_raise_decode_error(data: bytes) -> None:
    with pytest.raises(TxnRecordDecodeError):
        decode_value(data)


def test_partition_for_uses_javas_string_hash() -> None:
    """Kafka's ``TransactionStateManager.partitionFor``: Utils.abs(id.hashCode) % partitions."""
    assert partition_for("hello", 50) == 99162322 % 50  # "hello".hashCode() == 99162322
    # "polygenelubricants".hashCode() == Integer.MIN_VALUE, which Utils.abs maps to 0
    assert partition_for("polygenelubricants", 50) == 0
