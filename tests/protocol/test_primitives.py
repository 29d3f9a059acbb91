"""The one wire-primitive writer (protocol.primitives.WireWriter): Kafka's classic and flexible
encodings of strings, bytes, arrays and tagged fields (``org.apache.kafka.common.protocol.types.Type``:
STRING/NULLABLE_STRING/COMPACT_STRING, BYTES/COMPACT_BYTES, ``ByteUtils.writeUnsignedVarint``)."""

from __future__ import annotations

import struct

import pytest

from groupcoord.protocol.primitives import WireWriter, uvarint_bytes


@pytest.mark.parametrize(
    ("n", "encoded"),
    [
        (0, b"\x00"),
        (127, b"\x7f"),
        (128, b"\x80\x01"),
        (300, b"\xac\x02"),
        (2**32 - 1, b"\xff\xff\xff\xff\x0f"),
    ],
)
def test_unsigned_varints_are_kafkas(n: int, encoded: bytes) -> None:
    assert uvarint_bytes(n) == encoded


def test_classic_encoding_uses_fixed_width_lengths_and_minus_one_for_null() -> None:
    w = WireWriter(flexible=False)
    w.int16(-2)
    w.string("ab")
    w.string(None)
    w.bytes_(b"xyz")
    w.bytes_(None)
    w.array_length(2)
    w.boolean(True)
    w.tagged_fields()  # nothing in a classic version
    assert w.getvalue() == (
        b"\xff\xfe"
        + b"\x00\x02ab"
        + b"\xff\xff"
        + b"\x00\x00\x00\x03xyz"
        + b"\xff\xff\xff\xff"
        + b"\x00\x00\x00\x02"
        + b"\x01"
    )


def test_flexible_encoding_uses_compact_lengths_and_closes_structures_with_tags() -> None:
    w = WireWriter(flexible=True)
    w.string("ab")
    w.string(None)
    w.bytes_(b"xyz")
    w.array_length(0)
    w.array_length(None)
    w.tagged_fields()
    assert w.getvalue() == b"\x03ab" + b"\x00" + b"\x04xyz" + b"\x01" + b"\x00" + b"\x00"


def test_a_checked_writer_names_what_does_not_fit() -> None:
    w = WireWriter(flexible=False, checked=True)
    with pytest.raises(ValueError, match="does not fit in 16 bits"):
        w.int16(40_000)
    with pytest.raises(ValueError, match="member_id is 32768 bytes"):
        w.string("m" * 32_768, "member_id")


def test_an_unchecked_writer_leaves_range_errors_to_struct() -> None:
    w = WireWriter(flexible=False)
    with pytest.raises(struct.error):
        w.int16(40_000)
