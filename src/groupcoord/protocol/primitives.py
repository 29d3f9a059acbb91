"""Kafka's wire primitives, written: the one writer behind our hand-written encoders.

Kafka encodes every message and every ``__consumer_offsets`` record from the same primitives
(``org.apache.kafka.common.protocol.types.Type``): big-endian fixed-width integers, and strings,
bytes and arrays prefixed by their length. A version is either *classic* (int16 string lengths,
int32 bytes and array lengths, -1 for null) or *flexible* (KIP-482: unsigned-varint lengths
offset by one, 0 for null, and a tagged-field section closing every structure).

:class:`WireWriter` writes both. Encoders of hot responses use it unchecked (the values come
from the coordinator's own state); encoders of records pass ``checked=True``, so a value that
does not fit its field (an integer out of range, a string over 32767 bytes) raises
``ValueError`` naming it instead of a ``struct.error`` or a truncated length.
"""

from __future__ import annotations

import struct

from groupcoord.constants import INT16_MAX

__all__ = ["WireWriter", "uvarint_bytes"]


_I8 = struct.Struct(">b")
_I16 = struct.Struct(">h")
_I32 = struct.Struct(">i")
_I64 = struct.Struct(">q")
_ONE_BYTE = [bytes((n,)) for n in range(0x80)]
_pack_i8 = _I8.pack
_pack_i16 = _I16.pack
_pack_i32 = _I32.pack
_pack_i64 = _I64.pack


def _checked(s: struct.Struct, v: int) -> bytes:
    try:
        return s.pack(v)
    except struct.error as exc:
        raise ValueError(f"integer {v} does not fit in {s.size * 8} bits") from exc


def uvarint_bytes(n: int) -> bytes:
    """``n`` (non-negative) as an unsigned varint (Kafka's ``ByteUtils.writeUnsignedVarint``)."""
    if n < 0x80:
        return _ONE_BYTE[n]
    out = bytearray()
    while n >= 0x80:
        out.append((n & 0x7F) | 0x80)
        n >>= 7
    out.append(n)
    return bytes(out)


class WireWriter:
    """Appends primitives in the classic or the flexible encoding; :meth:`getvalue` joins them.

    Args:
        flexible: write compact (varint) lengths and tagged-field sections.
        checked: raise ``ValueError`` for integers that do not fit their width and for strings
            longer than 32767 UTF-8 bytes (otherwise ``struct.error`` / an unchecked length).
    """

    __slots__ = ("checked", "flexible", "parts")

    def __init__(self, *, flexible: bool, checked: bool = False) -> None:
        self.parts: list[bytes] = []
        self.flexible = flexible
        self.checked = checked

    def getvalue(self) -> bytes:
        return b"".join(self.parts)

    def raw(self, data: bytes) -> None:
        """Bytes written as they are (no length prefix)."""
        self.parts.append(data)

    def int8(self, v: int) -> None:
        self.parts.append(_checked(_I8, v) if self.checked else _pack_i8(v))

    def boolean(self, v: bool) -> None:
        self.parts.append(b"\x01" if v else b"\x00")

    def int16(self, v: int) -> None:
        self.parts.append(_checked(_I16, v) if self.checked else _pack_i16(v))

    def int32(self, v: int) -> None:
        self.parts.append(_checked(_I32, v) if self.checked else _pack_i32(v))

    def int64(self, v: int) -> None:
        self.parts.append(_checked(_I64, v) if self.checked else _pack_i64(v))

    def uvarint(self, v: int) -> None:
        self.parts.append(uvarint_bytes(v))

    def _length(self, n: int | None) -> None:
        """A bytes or array length (int32 when classic), or None for null."""
        if self.flexible:
            self.parts.append(uvarint_bytes(0 if n is None else n + 1))
        else:
            self.int32(-1 if n is None else n)

    def string(self, s: str | None, field: str = "string") -> None:
        """A (nullable) string; ``field`` names it in the error of a checked writer."""
        if s is None:
            self.parts.append(b"\x00" if self.flexible else b"\xff\xff")
            return
        raw = s.encode("utf-8")
        n = len(raw)
        if self.checked and n > INT16_MAX:
            raise ValueError(f"{field} is {n} bytes in UTF-8; a Kafka string holds at most 32767")
        self.parts.append(uvarint_bytes(n + 1) if self.flexible else _pack_i16(n))
        self.parts.append(raw)

    def bytes_(self, b: bytes | None) -> None:
        """A (nullable) bytes field."""
        parts = self.parts
        if b is None:
            parts.append(b"\x00" if self.flexible else b"\xff\xff\xff\xff")
            return
        n = len(b)
        if self.flexible:
            parts.append(uvarint_bytes(n + 1))
        else:
            parts.append(_checked(_I32, n) if self.checked else _pack_i32(n))
        parts.append(b if type(b) is bytes else bytes(b))

    def array_length(self, n: int | None) -> None:
        """The element count that precedes an array (None: a null array)."""
        self._length(n)

    def tagged_fields(self) -> None:
        """An empty tagged-field section (flexible versions only; we write no tagged fields)."""
        if self.flexible:
            self.parts.append(b"\x00")
