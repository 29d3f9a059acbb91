"""Message formats v0 and v1 (magic 0 and 1 message sets), converted to and from the log's v2 batches.

The log holds only v2 record batches (``formats.batch``). Produce v0-v2 carry message sets of the
older formats and Fetch v0-v3 expect them back, so, as Kafka 3.9 does, a produced message set is
up-converted to one v2 batch before it is appended (``LogValidator``: uncompressed messages become
one uncompressed batch; a compressed wrapper becomes one batch compressed with the same codec),
and what a Fetch below v4 reads is down-converted (``RecordsUtil.downConvert``): to magic 0 for
Fetch v0-v1, to magic 1 for v2-v3.

A message set entry, both formats::

    offset int64 | message_size int32 | crc uint32 | magic int8 | attributes int8
    | timestamp int64 (magic 1 only) | key bytes (int32 length, -1 null) | value bytes

The CRC (CRC-32, as ``zlib.crc32``) covers magic to the end. Attributes: bits 0-2 the codec
(0 none, 1 gzip, 2 snappy, 3 lz4), bit 3 (magic 1) the timestamp type (1 = LogAppendTime). A
compressed message is a *wrapper*: null key, its value is the compressed message set of the inner
messages; with magic 1 the inner offsets are relative (0..n-1) and the wrapper carries the
absolute offset of the last one, with magic 0 they are absolute. Record headers, producer ids and
transactions do not exist in these formats; control batches are left out when down-converting.

Kafka's LZ4 for magic 0 wrote a wrong frame-descriptor checksum (KAFKA-3160: the checksum covers
the frame magic too); such frames are read, and written for magic 0, the way Kafka does
(``KafkaLZ4BlockOutputStream(useBrokenFlagDescriptorChecksum = magic == 0)``). zstd exists only
in v2 batches: a zstd batch cannot be down-converted (UNSUPPORTED_COMPRESSION_TYPE).
"""

from __future__ import annotations

import struct
import zlib
from collections.abc import Iterator, Sequence
from dataclasses import dataclass

import lz4.frame

from groupcoord.errors import ErrorCode
from groupcoord.formats.batch import (
    ATTR_TIMESTAMP_TYPE,
    COMPRESSION_LZ4,
    COMPRESSION_NONE,
    COMPRESSION_ZSTD,
    CorruptBatchError,
    Record,
    build_batch,
    compress,
    decode_records,
    decompress,
    iter_batches,
)

MAGIC_V0 = 0
MAGIC_V1 = 1
NO_TIMESTAMP = -1
LOG_OVERHEAD = 12  # offset + message size
_MAGIC_POS = 16  # where a message set entry and a v2 batch both keep their magic byte
_CODEC_MASK = 0x07

_ENTRY = struct.Struct(">qi")
_HEAD_V0 = struct.Struct(">IBb")  # crc, magic, attributes
_HEAD_V1 = struct.Struct(">IBbq")  # + timestamp
_I32 = struct.Struct(">i")

#: the smallest message (null key and value) of each magic, after offset and size
_MIN_SIZE = {MAGIC_V0: 4 + 1 + 1 + 4 + 4, MAGIC_V1: 4 + 1 + 1 + 8 + 4 + 4}


class MessageFormatError(ValueError):
    """A message set that cannot be converted; ``code`` is the error Kafka answers with."""

    def __init__(self, code: ErrorCode, message: str) -> None:
        super().__init__(message)
        self.code = code


@dataclass(frozen=True, slots=True, kw_only=True)
class LegacyMessage:
    """One message of a v0/v1 message set, as written (a wrapper keeps its compressed value)."""

    offset: int
    magic: int
    attributes: int
    timestamp: int
    key: bytes | None
    value: bytes | None
    #: whether the CRC matched (inner messages are read first, then checked in Kafka's order)
    crc_ok: bool = True

    @property
    def codec(self) -> int:
        return self.attributes & _CODEC_MASK

    @property
    def log_append_time(self) -> bool:
        return self.magic > MAGIC_V0 and bool(self.attributes & ATTR_TIMESTAMP_TYPE)


def magic_of(data: bytes | bytearray | memoryview) -> int | None:
    """The magic byte of the first entry (message set or v2 batch), None if there is none."""
    return data[_MAGIC_POS] if len(data) > _MAGIC_POS else None


# --------------------------------------------------------------------------------------------
# Reading message sets
# --------------------------------------------------------------------------------------------


def iter_messages(data: bytes | bytearray | memoryview, *, verify: bool = True) -> Iterator[LegacyMessage]:
    """The shallow entries of a message set (wrappers not opened), each checked against its CRC
    unless ``verify`` is false (then ``crc_ok`` tells).

    A trailing partial entry is ignored, as Kafka's readers do (a fetch may cut one); anything
    else malformed raises :class:`MessageFormatError` (CORRUPT_MESSAGE)."""
    view = memoryview(data)
    pos, end = 0, len(view)
    while end - pos >= LOG_OVERHEAD:
        offset, size = _ENTRY.unpack_from(view, pos)
        body = pos + LOG_OVERHEAD
        if size < 0:
            raise MessageFormatError(ErrorCode.CORRUPT_MESSAGE, f"negative message size {size}")
        if body + size > end:
            return  # partial trailing entry
        yield _parse_message(view[body : body + size], offset, verify)
        pos = body + size


def _parse_message(msg: memoryview, offset: int, verify: bool = True) -> LegacyMessage:
    if len(msg) < _MIN_SIZE[MAGIC_V0]:
        raise MessageFormatError(ErrorCode.CORRUPT_MESSAGE, f"message at offset {offset} is too short")
    magic = msg[4]
    if magic not in (MAGIC_V0, MAGIC_V1):
        raise MessageFormatError(ErrorCode.CORRUPT_MESSAGE, f"message at offset {offset} has magic {magic}")
    if len(msg) < _MIN_SIZE[magic]:
        raise MessageFormatError(ErrorCode.CORRUPT_MESSAGE, f"message at offset {offset} is too short")
    if magic == MAGIC_V0:
        crc, _, attributes = _HEAD_V0.unpack_from(msg, 0)
        timestamp, pos = NO_TIMESTAMP, _HEAD_V0.size
    else:
        crc, _, attributes, timestamp = _HEAD_V1.unpack_from(msg, 0)
        pos = _HEAD_V1.size
    crc_ok = zlib.crc32(msg[4:]) == crc
    if verify and not crc_ok:
        raise _corrupt(offset)
    key, pos = _read_bytes(msg, pos, offset)
    value, pos = _read_bytes(msg, pos, offset)
    if pos != len(msg):
        raise MessageFormatError(ErrorCode.CORRUPT_MESSAGE, f"message at offset {offset} has trailing bytes")
    return LegacyMessage(
        offset=offset,
        magic=magic,
        attributes=attributes,
        timestamp=timestamp,
        key=key,
        value=value,
        crc_ok=crc_ok,
    )


def _corrupt(offset: int) -> MessageFormatError:
    return MessageFormatError(
        ErrorCode.CORRUPT_MESSAGE, f"message at offset {offset} is corrupt (CRC does not match)"
    )


def _read_bytes(msg: memoryview, pos: int, offset: int) -> tuple[bytes | None, int]:
    if pos + 4 > len(msg):
        raise MessageFormatError(ErrorCode.CORRUPT_MESSAGE, f"message at offset {offset} is truncated")
    (n,) = _I32.unpack_from(msg, pos)
    pos += 4
    if n < 0:
        return None, pos
    if pos + n > len(msg):
        raise MessageFormatError(ErrorCode.CORRUPT_MESSAGE, f"message at offset {offset} is truncated")
    return bytes(msg[pos : pos + n]), pos + n


def inner_messages(wrapper: LegacyMessage) -> list[LegacyMessage]:
    """The messages inside a compressed wrapper, at absolute offsets; a LogAppendTime wrapper's
    timestamp is every inner message's (Kafka's ``AbstractLegacyRecordBatch`` deep iterator)."""
    codec = wrapper.codec
    if codec == COMPRESSION_ZSTD or codec > COMPRESSION_ZSTD:
        raise MessageFormatError(
            ErrorCode.UNSUPPORTED_COMPRESSION_TYPE
            if codec == COMPRESSION_ZSTD
            else ErrorCode.CORRUPT_MESSAGE,
            f"compression codec {codec} is not valid for message format v{wrapper.magic}",
        )
    if wrapper.value is None:
        raise MessageFormatError(ErrorCode.CORRUPT_MESSAGE, "compressed message without a value")
    payload = wrapper.value
    if codec == COMPRESSION_LZ4:
        payload = fix_lz4_header_checksum(payload)
    try:
        raw = decompress(codec, payload)
    except CorruptBatchError as exc:
        raise MessageFormatError(ErrorCode.CORRUPT_MESSAGE, str(exc)) from None
    inner = list(iter_messages(raw, verify=False))
    if not inner:
        raise MessageFormatError(ErrorCode.CORRUPT_MESSAGE, "compressed message holds no message")
    out = []
    shift = wrapper.offset - inner[-1].offset if wrapper.magic > MAGIC_V0 else 0
    for m in inner:
        # LogValidator's order: the codec, the magic, then the CRC of each inner record
        if m.codec != COMPRESSION_NONE:
            raise MessageFormatError(
                ErrorCode.INVALID_RECORD, "a compressed message holds a message with a compression codec"
            )
        if m.magic != wrapper.magic:
            raise MessageFormatError(
                ErrorCode.INVALID_RECORD,
                f"inner message magic {m.magic} does not match the wrapper's magic {wrapper.magic}",
            )
        if not m.crc_ok:
            raise _corrupt(m.offset)
        out.append(
            LegacyMessage(
                offset=m.offset + shift,
                magic=m.magic,
                attributes=m.attributes,
                timestamp=wrapper.timestamp if wrapper.log_append_time else m.timestamp,
                key=m.key,
                value=m.value,
            )
        )
    return out


# --------------------------------------------------------------------------------------------
# Produce: up-conversion to one v2 batch
# --------------------------------------------------------------------------------------------


def upconvert(data: bytes | bytearray | memoryview, *, log_append_time_topic: bool = False) -> bytes:
    """One v2 batch (base offset 0, no producer) holding the messages of a v0/v1 message set.

    Kafka's ``LogValidator`` rules: all entries have one magic; a compressed set is exactly one
    wrapper, whose codec the batch keeps; a message claiming LogAppendTime is refused unless the
    topic uses CreateTime and the message has a timestamp (``validateTimestamp``); magic 0
    messages have no timestamp (-1). Raises :class:`MessageFormatError` with Kafka's code."""
    shallow = list(iter_messages(data))
    if not shallow:
        raise MessageFormatError(ErrorCode.CORRUPT_MESSAGE, "empty or truncated message set")
    magic = shallow[0].magic
    if any(m.magic != magic for m in shallow):
        raise MessageFormatError(
            ErrorCode.INVALID_RECORD, "messages of more than one magic in one message set"
        )
    codec = shallow[0].codec
    if codec != COMPRESSION_NONE:
        if len(shallow) != 1:
            raise MessageFormatError(
                ErrorCode.INVALID_RECORD, "Compressed outer record has more than one batch"
            )
        messages = inner_messages(shallow[0])
    else:
        if any(m.codec != COMPRESSION_NONE for m in shallow):
            raise MessageFormatError(
                ErrorCode.INVALID_RECORD, "Compressed outer record has more than one batch"
            )
        messages = shallow
    if codec != COMPRESSION_NONE:
        claims = [(shallow[0], m.timestamp) for m in messages]
    else:
        claims = [(m, m.timestamp) for m in shallow]
    for outer, timestamp in claims:
        if outer.log_append_time and (log_append_time_topic or timestamp == NO_TIMESTAMP):
            raise MessageFormatError(
                ErrorCode.INVALID_TIMESTAMP, "Producer should not set timestamp type to LogAppendTime."
            )
    return build_batch(
        [(m.key, m.value, ()) for m in messages],
        timestamp_ms=NO_TIMESTAMP,
        timestamps=[m.timestamp if magic > MAGIC_V0 else NO_TIMESTAMP for m in messages],
        compression=codec,
    )


# --------------------------------------------------------------------------------------------
# Fetch: down-conversion of v2 batches
# --------------------------------------------------------------------------------------------


def downconvert(data: bytes | bytearray | memoryview, to_magic: int, first_offset: int) -> bytes:
    """The v2 batches in ``data`` as a magic ``to_magic`` message set (``RecordsUtil.downConvert``).

    Control batches are left out; an uncompressed batch becomes one message per record from
    ``first_offset`` on; a compressed batch becomes one wrapper of the same codec holding all its
    records. A trailing partial batch is left out. A zstd batch ends the answer; raises
    :class:`MessageFormatError` (UNSUPPORTED_COMPRESSION_TYPE) when nothing comes before it."""
    if to_magic not in (MAGIC_V0, MAGIC_V1):
        raise ValueError(f"cannot down-convert to magic {to_magic}")
    out = bytearray()
    buf = bytes(data)
    for pos, header in iter_batches(buf):
        if header.magic < 2:
            # already an old message set (cannot happen in a log of v2 batches): as is
            out += buf[pos : pos + header.size]
            continue
        if header.is_control:
            continue
        codec = header.compression
        if codec == COMPRESSION_ZSTD:
            if out:
                # what came before is answered; the next fetch starts at this batch and gets the
                # error (Kafka's LazyDownConversionRecordsSend sends what it converted)
                break
            raise MessageFormatError(
                ErrorCode.UNSUPPORTED_COMPRESSION_TYPE,
                "Down-conversion of zstandard-compressed batches is not supported",
            )
        records = decode_records(buf, pos)
        if codec == COMPRESSION_NONE:
            records = [r for r in records if r.offset >= first_offset]
        if not records:
            continue
        log_append = header.timestamp_type == 1
        append_time = header.max_timestamp if log_append else NO_TIMESTAMP
        out += write_message_set(
            records, magic=to_magic, compression=codec, log_append_time=append_time if log_append else None
        )
    return bytes(out)


def write_message_set(
    records: Sequence[Record],
    *,
    magic: int,
    compression: int = COMPRESSION_NONE,
    log_append_time: int | None = None,
) -> bytes:
    """``records`` (at their own offsets) as a magic 0/1 message set, as Kafka's
    ``MemoryRecordsBuilder`` writes one: one message each when uncompressed, else one wrapper
    (offset of the last record; magic 1 inner offsets relative to the first record, and the
    wrapper's timestamp the largest, or the LogAppendTime)."""
    if not records:
        return b""
    ts_type = 1 if log_append_time is not None and magic > MAGIC_V0 else 0

    def stamp(r: Record) -> int:
        if magic == MAGIC_V0:
            return NO_TIMESTAMP
        return log_append_time if log_append_time is not None else r.timestamp

    if compression == COMPRESSION_NONE:
        return b"".join(
            _entry(r.offset, _message(magic, ts_type, COMPRESSION_NONE, stamp(r), r.key, r.value))
            for r in records
        )
    base = records[0].offset
    inner = b"".join(
        _entry(
            r.offset - base if magic > MAGIC_V0 else r.offset,
            _message(magic, ts_type, COMPRESSION_NONE, stamp(r), r.key, r.value),
        )
        for r in records
    )
    if compression == COMPRESSION_LZ4:
        payload = lz4_frame(inner, broken_checksum=magic == MAGIC_V0)
    else:
        payload = compress(compression, inner)
    wrapper_ts = NO_TIMESTAMP
    if magic > MAGIC_V0:
        wrapper_ts = log_append_time if log_append_time is not None else max(r.timestamp for r in records)
    return _entry(records[-1].offset, _message(magic, ts_type, compression, wrapper_ts, None, payload))


def _message(
    magic: int, ts_type: int, codec: int, timestamp: int, key: bytes | None, value: bytes | None
) -> bytes:
    attributes = codec | (ATTR_TIMESTAMP_TYPE if ts_type and magic > MAGIC_V0 else 0)
    body = bytearray(struct.pack(">Bb", magic, attributes))
    if magic > MAGIC_V0:
        body += struct.pack(">q", timestamp)
    for part in (key, value):
        if part is None:
            body += _I32.pack(-1)
        else:
            body += _I32.pack(len(part))
            body += part
    return struct.pack(">I", zlib.crc32(body)) + bytes(body)


def _entry(offset: int, message: bytes) -> bytes:
    return _ENTRY.pack(offset, len(message)) + message


# --------------------------------------------------------------------------------------------
# LZ4 frames as Kafka writes them
# --------------------------------------------------------------------------------------------

_LZ4_MAGIC = b"\x04\x22\x4d\x18"


def lz4_frame(data: bytes, *, broken_checksum: bool = False) -> bytes:
    """An LZ4 frame as Kafka's ``KafkaLZ4BlockOutputStream`` writes it: independent 64 KiB
    blocks, no content size or checksums; with ``broken_checksum`` (magic 0) the descriptor
    checksum covers the frame magic too, as Kafka's did before message format v1."""
    frame = bytearray(
        lz4.frame.compress(
            data,
            block_size=lz4.frame.BLOCKSIZE_MAX64KB,
            block_linked=False,
            content_checksum=False,
            store_size=False,
        )
    )
    if broken_checksum:
        frame[6] = (xxh32(bytes(frame[0:6])) >> 8) & 0xFF
    return bytes(frame)


def fix_lz4_header_checksum(frame: bytes) -> bytes:
    """``frame`` with its descriptor checksum recomputed (a magic 0 frame from Kafka carries a
    wrong one that standard decoders refuse); anything that is not an LZ4 frame is unchanged."""
    if len(frame) < 7 or frame[:4] != _LZ4_MAGIC:
        return frame
    flg = frame[4]
    end = 6 + (8 if flg & 0x08 else 0) + (4 if flg & 0x01 else 0)
    if len(frame) <= end:
        return frame
    good = (xxh32(frame[4:end]) >> 8) & 0xFF
    if frame[end] == good:
        return frame
    return frame[:end] + bytes([good]) + frame[end + 1 :]


_P1, _P2, _P3, _P4, _P5 = 2654435761, 2246822519, 3266489917, 668265263, 374761393
_M32 = 0xFFFFFFFF


def _rotl(x: int, r: int) -> int:
    return ((x << r) | (x >> (32 - r))) & _M32


def xxh32(data: bytes, seed: int = 0) -> int:
    """XXH32 of ``data`` (the LZ4 frame descriptor checksum); pure Python, for short inputs."""
    n = len(data)
    pos = 0
    if n >= 16:
        v = [(seed + _P1 + _P2) & _M32, (seed + _P2) & _M32, seed & _M32, (seed - _P1) & _M32]
        while pos + 16 <= n:
            for i in range(4):
                (lane,) = struct.unpack_from("<I", data, pos + 4 * i)
                v[i] = (_rotl((v[i] + lane * _P2) & _M32, 13) * _P1) & _M32
            pos += 16
        h = (_rotl(v[0], 1) + _rotl(v[1], 7) + _rotl(v[2], 12) + _rotl(v[3], 18)) & _M32
    else:
        h = (seed + _P5) & _M32
    h = (h + n) & _M32
    while pos + 4 <= n:
        (word,) = struct.unpack_from("<I", data, pos)
        h = (_rotl((h + word * _P3) & _M32, 17) * _P4) & _M32
        pos += 4
    while pos < n:
        h = (_rotl((h + data[pos] * _P5) & _M32, 11) * _P1) & _M32
        pos += 1
    h ^= h >> 15
    h = (h * _P2) & _M32
    h ^= h >> 13
    h = (h * _P3) & _M32
    h ^= h >> 16
    return h
