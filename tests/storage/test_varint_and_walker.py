"""The one varint module and the one record walker (formats.varint, formats.batch.iter_record_spans).

Kafka's zig-zag varints: ``ByteUtils.writeVarint`` / ``readVarint`` (clients/src/main/java/org/apache/
kafka/common/utils/ByteUtils.java; ByteUtilsTest.testVarintSerde checks the same boundary values)."""

from __future__ import annotations

import pytest

from groupcoord.formats.batch import (
    COMPRESSION_GZIP,
    CorruptBatchError,
    build_batch,
    decode_record_tuples,
    iter_record_spans,
    records_block,
)
from groupcoord.formats.varint import VarintError, read_varint, write_varint


@pytest.mark.parametrize(
    ("value", "encoded"),
    [
        (0, b"\x00"),
        (-1, b"\x01"),
        (1, b"\x02"),
        (63, b"\x7e"),
        (-64, b"\x7f"),
        (64, b"\x80\x01"),
        (2**31 - 1, b"\xfe\xff\xff\xff\x0f"),
        (-(2**31), b"\xff\xff\xff\xff\x0f"),
        (2**63 - 1, b"\xfe" + b"\xff" * 8 + b"\x01"),
        (-(2**63), b"\xff" * 9 + b"\x01"),
    ],
)
def test_zigzag_varints_have_kafkas_bytes_and_read_back(value: int, encoded: bytes) -> None:
    out = bytearray()
    write_varint(out, value)
    assert bytes(out) == encoded
    assert read_varint(b"\xaa" + encoded + b"\xbb", 1) == (value, 1 + len(encoded))


def test_a_varint_cut_short_or_longer_than_ten_bytes_is_refused() -> None:
    with pytest.raises(VarintError, match="ends inside a varint"):
        read_varint(b"\x80\x80", 0)
    with pytest.raises(VarintError, match="longer than 10 bytes"):
        read_varint(b"\xff" * 11, 0)


def _block(records: list[tuple[bytes | None, bytes | None, list[tuple[str, bytes | None]]]]) -> bytes:
    batch = build_batch(records, base_offset=100, timestamp_ms=5_000, compression=COMPRESSION_GZIP)
    return records_block(batch)[1]


def test_the_walker_says_where_each_key_and_value_lie() -> None:
    records = [(b"k0", b"value-0", []), (None, b"v1", [("h", b"x")]), (b"k2", None, [])]
    data = _block(records)
    spans = list(iter_record_spans(data, 3))
    assert [s[2] for s in spans] == [0, 1, 2]  # offset deltas
    got = [
        (
            data[kp : kp + klen] if klen >= 0 else None,
            data[vp : vp + vlen] if vlen >= 0 else None,
        )
        for _a, _t, _o, kp, klen, vp, vlen, _hp, _end in spans
    ]
    assert got == [(b"k0", b"value-0"), (None, b"v1"), (b"k2", None)]
    # record headers start where the walker says and end at the record's end
    assert [data[hp] for *_rest, hp, _end in spans] == [0, 2, 0]  # header counts, zig-zag


def test_the_walker_refuses_a_block_that_ends_inside_a_record() -> None:
    data = _block([(b"key", b"value", [])])
    with pytest.raises(CorruptBatchError, match="runs past the records block"):
        list(iter_record_spans(data[:-1], 1))
    with pytest.raises(CorruptBatchError, match="ends inside a record"):
        list(iter_record_spans(data, 2))


def test_a_record_whose_fields_overrun_its_length_is_corrupt() -> None:
    data = bytearray(_block([(b"key", b"value", [])]))
    data[0] -= 4  # the length two smaller (zig-zag): the value now runs past the record
    with pytest.raises(CorruptBatchError, match="run past the record length"):
        list(iter_record_spans(bytes(data), 1))


def test_decoded_records_come_from_the_walker_with_their_headers() -> None:
    batch = build_batch(
        [(b"a", b"1", [("trace", b"t1"), ("none", None)]), (b"b", None, [])],
        base_offset=7,
        timestamp_ms=1_000,
    )
    _header, rows = decode_record_tuples(batch)
    assert rows == [
        (7, 1_000, b"a", b"1", (("trace", b"t1"), ("none", None)), 0),
        (8, 1_000, b"b", None, (), 0),
    ]
