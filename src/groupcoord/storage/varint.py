"""Zig-zag varints, as the v2 record format frames records (Kafka's ``ByteUtils.readVarint`` /
``writeVarint``).

A value is zig-zag mapped (0, -1, 1, -2 ... -> 0, 1, 2, 3 ...) and written seven bits a byte,
least significant first, the high bit set on every byte but the last. The record format uses
them for every length and delta; at most 10 bytes (a 64-bit value).

Hot loops read a one-byte varint inline (``b < 0x80`` -> ``(b >> 1) ^ -(b & 1)``) and call
:func:`read_varint` only for longer ones; every reader of records does that through the one
walker, :func:`groupcoord.storage.batch.iter_record_spans`.
"""

from __future__ import annotations

__all__ = ["VarintError", "read_varint", "write_varint"]


class VarintError(ValueError):
    """Bytes that end inside a varint, or a varint longer than 10 bytes."""


def read_varint(b: bytes | bytearray | memoryview, pos: int) -> tuple[int, int]:
    """The zig-zag varint at ``pos``: ``(value, position after it)``.

    Raises:
        VarintError: the data ends inside the varint, or it is longer than 10 bytes.
    """
    result = 0
    shift = 0
    while True:
        try:
            byte = b[pos]
        except IndexError:
            raise VarintError("record data ends inside a varint") from None
        pos += 1
        result |= (byte & 0x7F) << shift
        if not byte & 0x80:
            return (result >> 1) ^ -(result & 1), pos
        shift += 7
        if shift > 63:
            raise VarintError("varint longer than 10 bytes")


def write_varint(out: bytearray, value: int) -> None:
    """Append ``value`` (a signed 64-bit integer) as a zig-zag varint."""
    v = ((value << 1) ^ (value >> 63)) & 0xFFFFFFFFFFFFFFFF
    while v >= 0x80:
        out.append((v & 0x7F) | 0x80)
        v >>= 7
    out.append(v)

