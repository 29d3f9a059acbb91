"""Message formats v0/v1: reading, up-conversion to v2 batches, down-conversion from them.

The byte vectors are the messages of sarama 1.22's own ``message_test.go`` (the client library
Burrow 1.2.1 is built with), so the reader is checked against bytes another implementation wrote,
not only against our writer. The rules are Kafka 3.9's ``LogValidator`` (produce) and
``RecordsUtil.downConvert`` / ``MemoryRecordsBuilder`` (fetch).
"""

from __future__ import annotations

import gzip
import struct
import zlib

import lz4.frame
import pytest

from groupcoord.errors import ErrorCode
from groupcoord.formats.batch import (
    ATTR_CONTROL,
    ATTR_TIMESTAMP_TYPE,
    COMPRESSION_GZIP,
    COMPRESSION_LZ4,
    COMPRESSION_NONE,
    COMPRESSION_SNAPPY,
    COMPRESSION_ZSTD,
    Record,
    build_batch,
    decode_records,
    parse_header,
)
from groupcoord.storage.message_format import (
    MessageFormatError,
    downconvert,
    fix_lz4_header_checksum,
    inner_messages,
    iter_messages,
    lz4_frame,
    upconvert,
    write_message_set,
    xxh32,
)

# sarama v1.22.1 message_test.go
EMPTY_V0 = bytes([167, 236, 104, 3, 0x00, 0x00, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF])
EMPTY_V1 = bytes(
    [204, 47, 121, 217, 0x01, 0x00, 0, 0, 0, 0, 0, 0, 0, 0, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF]
)
BULK_SNAPPY_V0 = (
    bytes([180, 47, 53, 209, 0x00, 0x02, 0xFF, 0xFF, 0xFF, 0xFF, 0, 0, 0, 42, 130, 83, 78, 65, 80, 80, 89, 0])
    + bytes(
        [0, 0, 0, 1, 0, 0, 0, 1, 0, 0, 0, 22, 52, 0, 0, 25, 1, 16, 14, 227, 138, 104, 118, 25, 15, 13, 1, 8]
    )
    + bytes([1, 0, 0, 62, 26, 0])
)
BULK_GZIP_V0 = (
    bytes([139, 160, 63, 141, 0x00, 0x01, 0xFF, 0xFF, 0xFF, 0xFF, 0x00, 0x00, 0x00, 0x27, 0x1F, 0x8B, 0x08])
    + bytes([0, 0, 0, 0, 0, 0, 0, 99, 96, 128, 3, 190, 202, 112, 143, 7, 12, 12, 255, 129, 0, 33, 200, 192])
    + bytes([136, 41, 3, 0, 199, 226, 155, 70, 52, 0, 0, 0])
)


def entry(offset: int, message: bytes) -> bytes:
    return struct.pack(">qi", offset, len(message)) + message


def records(n: int, base: int = 0, ts: int = 1_000) -> list[Record]:
    return [
        Record(offset=base + i, timestamp=ts + i, key=f"k{i}".encode(), value=f"v{i}".encode())
        for i in range(n)
    ]


# -- reading -------------------------------------------------------------------------------------


def test_sarama_empty_messages_read_and_write_back_to_the_same_bytes() -> None:
    for magic, message, timestamp in ((0, EMPTY_V0, -1), (1, EMPTY_V1, 0)):
        (m,) = iter_messages(entry(7, message))
        assert (m.offset, m.magic, m.codec, m.timestamp, m.key, m.value) == (
            7,
            magic,
            0,
            timestamp,
            None,
            None,
        )
        again = write_message_set([Record(offset=7, timestamp=timestamp, key=None, value=None)], magic=magic)
        assert again == entry(7, message)


@pytest.mark.parametrize(
    ("message", "codec", "keys"),
    [(BULK_SNAPPY_V0, COMPRESSION_SNAPPY, [b"", b""]), (BULK_GZIP_V0, COMPRESSION_GZIP, [None, None])],
)
def test_sarama_compressed_v0_wrappers_open_to_their_two_messages(
    message: bytes, codec: int, keys: list[object]
) -> None:
    (wrapper,) = iter_messages(entry(1, message))
    assert (wrapper.magic, wrapper.codec, wrapper.key) == (0, codec, None)
    inner = inner_messages(wrapper)
    assert [(m.offset, m.magic, m.key, m.value, m.timestamp) for m in inner] == [
        (0, 0, keys[0], b"", -1),
        (1, 0, keys[1], b"", -1),
    ]
    batch = upconvert(entry(1, message))
    header = parse_header(batch)
    assert (header.compression, header.record_count, header.base_offset, header.producer_id) == (
        codec,
        2,
        0,
        -1,
    )
    assert [(r.offset, r.key, r.value, r.timestamp) for r in decode_records(batch)] == [
        (0, keys[0], b"", -1),
        (1, keys[1], b"", -1),
    ]


def test_inner_messages_of_another_magic_are_invalid_record() -> None:
    """``LogValidator.validateRecord``: a record whose magic does not match the outer magic is
    INVALID_RECORD, checked before its CRC (a wrong inner CRC is CORRUPT_MESSAGE)."""
    inner_v0 = write_message_set(records(2), magic=0)
    with pytest.raises(MessageFormatError) as caught:
        upconvert(entry(1, _wrapper(1, COMPRESSION_GZIP, gzip.compress(inner_v0))))
    assert caught.value.code == ErrorCode.INVALID_RECORD
    bad_crc = bytearray(write_message_set(records(2), magic=1))
    bad_crc[12] ^= 0xFF
    with pytest.raises(MessageFormatError) as caught:
        upconvert(entry(1, _wrapper(1, COMPRESSION_GZIP, gzip.compress(bytes(bad_crc)))))
    assert caught.value.code == ErrorCode.CORRUPT_MESSAGE


def test_a_message_with_a_wrong_crc_is_corrupt() -> None:
    bad = bytearray(EMPTY_V1)
    bad[0] ^= 0xFF
    with pytest.raises(MessageFormatError) as caught:
        list(iter_messages(entry(0, bytes(bad))))
    assert caught.value.code == ErrorCode.CORRUPT_MESSAGE


def test_a_partial_trailing_entry_is_ignored() -> None:
    data = write_message_set(records(2), magic=1)
    assert [m.offset for m in iter_messages(data[:-3])] == [0]


# -- up-conversion (produce) ----------------------------------------------------------------------


@pytest.mark.parametrize("codec", [COMPRESSION_NONE, COMPRESSION_GZIP, COMPRESSION_SNAPPY, COMPRESSION_LZ4])
@pytest.mark.parametrize("magic", [0, 1])
def test_upconvert_keeps_keys_values_codec_and_magic_1_timestamps(magic: int, codec: int) -> None:
    data = write_message_set(records(3, base=0), magic=magic, compression=codec)
    batch = upconvert(data)
    header = parse_header(batch)
    assert (header.magic, header.compression, header.record_count, header.timestamp_type) == (2, codec, 3, 0)
    expected_ts = [1000, 1001, 1002] if magic == 1 else [-1, -1, -1]
    assert [(r.offset, r.key, r.value, r.timestamp) for r in decode_records(batch)] == [
        (i, f"k{i}".encode(), f"v{i}".encode(), expected_ts[i]) for i in range(3)
    ]


def test_upconvert_refuses_what_kafka_refuses() -> None:
    one = write_message_set(records(1), magic=0, compression=COMPRESSION_GZIP)

    def code(data: bytes) -> ErrorCode:
        with pytest.raises(MessageFormatError) as caught:
            upconvert(data)
        return caught.value.code

    # two compressed wrappers in one message set ("Compressed outer record has more than one batch")
    assert code(one + one) == ErrorCode.INVALID_RECORD
    # entries of two magics
    assert (
        code(write_message_set(records(1), magic=0) + write_message_set(records(1), magic=1))
        == ErrorCode.INVALID_RECORD
    )
    # a producer claiming LogAppendTime: refused on a LogAppendTime topic, or without a timestamp
    # (LogValidator.validateTimestamp); on a CreateTime topic its timestamp is kept
    for codec in (COMPRESSION_NONE, COMPRESSION_GZIP):
        claimed = write_message_set(records(2), magic=1, compression=codec, log_append_time=5)
        with pytest.raises(MessageFormatError) as caught:
            upconvert(claimed, log_append_time_topic=True)
        assert caught.value.code == ErrorCode.INVALID_TIMESTAMP
        assert [r.timestamp for r in decode_records(upconvert(claimed))] == [5, 5]
    no_time = write_message_set(
        [Record(offset=0, timestamp=-1, key=None, value=b"")], magic=1, log_append_time=-1
    )
    assert code(no_time) == ErrorCode.INVALID_TIMESTAMP
    # zstd did not exist before v2 batches
    zstd = bytearray(write_message_set(records(1), magic=1))
    zstd[12 + 5] = COMPRESSION_ZSTD
    assert code(_recrc(bytes(zstd))) == ErrorCode.UNSUPPORTED_COMPRESSION_TYPE
    # a compressed message inside a compressed message
    nested = write_message_set([Record(offset=0, timestamp=1, key=None, value=b"")], magic=1)
    inner_wrapper = write_message_set(records(1), magic=1, compression=COMPRESSION_GZIP)
    outer = entry(0, _wrapper(1, COMPRESSION_GZIP, gzip.compress(inner_wrapper + nested)))
    assert code(outer) == ErrorCode.INVALID_RECORD
    assert code(b"") == ErrorCode.CORRUPT_MESSAGE


def _recrc(entry_bytes: bytes) -> bytes:
    """One message set entry with its CRC recomputed after an edit."""
    body = entry_bytes[16:]
    return entry_bytes[:12] + struct.pack(">I", zlib.crc32(body)) + body


def _wrapper(magic: int, codec: int, payload: bytes) -> bytes:
    body = struct.pack(">Bb", magic, codec) + (struct.pack(">q", 0) if magic else b"")
    body += struct.pack(">i", -1) + struct.pack(">i", len(payload)) + payload
    return struct.pack(">I", zlib.crc32(body)) + body


# -- down-conversion (fetch) ----------------------------------------------------------------------


def test_downconvert_uncompressed_batch_drops_records_before_the_fetch_offset() -> None:
    batch = build_batch([(b"k", f"v{i}".encode(), ()) for i in range(4)], base_offset=10, timestamp_ms=500)
    for magic in (0, 1):
        out = downconvert(batch, magic, 12)
        assert [(m.offset, m.magic, m.codec, m.timestamp, m.value) for m in iter_messages(out)] == [
            (12, magic, 0, 500 if magic else -1, b"v2"),
            (13, magic, 0, 500 if magic else -1, b"v3"),
        ]


@pytest.mark.parametrize("codec", [COMPRESSION_GZIP, COMPRESSION_SNAPPY, COMPRESSION_LZ4])
def test_downconvert_compressed_batch_is_one_wrapper_with_magic_1_relative_offsets(codec: int) -> None:
    batch = build_batch(
        [(b"k", f"v{i}".encode(), ()) for i in range(3)],
        base_offset=20,
        timestamp_ms=0,
        timestamps=[700, 900, 800],
        compression=codec,
    )
    (wrapper,) = iter_messages(downconvert(batch, 1, 21))  # a compressed batch is kept whole
    assert (wrapper.offset, wrapper.magic, wrapper.codec, wrapper.timestamp, wrapper.key) == (
        22,
        1,
        codec,
        900,
        None,
    )
    payload = wrapper.value
    assert payload is not None
    raw = {
        COMPRESSION_GZIP: gzip.decompress,
        COMPRESSION_LZ4: lambda b: lz4.frame.decompress(b),
        COMPRESSION_SNAPPY: None,
    }[codec]
    if raw is not None:
        assert [m.offset for m in iter_messages(raw(payload))] == [0, 1, 2]  # relative in magic 1
    assert [(m.offset, m.timestamp, m.value) for m in inner_messages(wrapper)] == [
        (20, 700, b"v0"),
        (21, 900, b"v1"),
        (22, 800, b"v2"),
    ]
    (wrapper0,) = iter_messages(downconvert(batch, 0, 20))
    assert (wrapper0.offset, wrapper0.magic, wrapper0.timestamp) == (22, 0, -1)
    assert [m.offset for m in inner_messages(wrapper0)] == [20, 21, 22]  # absolute in magic 0


def test_downconvert_log_append_time_batch_stamps_every_message_with_it() -> None:
    batch = build_batch(
        [(None, b"a", ()), (None, b"b", ())],
        base_offset=0,
        timestamp_ms=0,
        timestamps=[5, 6],
        attributes=ATTR_TIMESTAMP_TYPE,
    )
    # the batch's max timestamp is the append time (convertRecordBatch's logAppendTime)
    out = list(iter_messages(downconvert(batch, 1, 0)))
    assert [(m.timestamp, m.log_append_time) for m in out] == [(6, True), (6, True)]


def test_downconvert_skips_control_batches_and_stops_at_zstd() -> None:
    control = build_batch(
        [(b"\x00\x00\x00\x00", b"\x00\x00\x00\x00\x00\x00", ())],
        base_offset=0,
        timestamp_ms=1,
        attributes=ATTR_CONTROL,
    )
    data = build_batch([(None, b"x", ())], base_offset=1, timestamp_ms=1)
    assert [m.offset for m in iter_messages(downconvert(control + data, 1, 0))] == [1]
    zstd = build_batch([(None, b"x", ())], base_offset=2, timestamp_ms=1, compression=COMPRESSION_ZSTD)
    with pytest.raises(MessageFormatError) as caught:
        downconvert(zstd, 1, 0)
    assert caught.value.code == ErrorCode.UNSUPPORTED_COMPRESSION_TYPE
    # after convertible batches, a zstd batch ends the answer (LazyDownConversionRecordsSend):
    # the next fetch starts at it and gets the error
    after = build_batch([(None, b"y", ())], base_offset=3, timestamp_ms=1)
    assert [m.offset for m in iter_messages(downconvert(control + data + zstd + after, 1, 0))] == [1]


# -- LZ4 as Kafka frames it -----------------------------------------------------------------------


def test_xxh32_matches_the_reference_values() -> None:
    assert xxh32(b"") == 0x02CC5D05
    assert xxh32(b"a") == 0x550D7456
    data = bytes(range(256)) * 3  # more than 16 bytes: the striped path, checked against liblz4
    frame = lz4.frame.compress(data, content_checksum=True)
    assert struct.unpack("<I", frame[-4:])[0] == xxh32(data)


def test_magic_0_lz4_frame_carries_kafkas_broken_descriptor_checksum() -> None:
    """KAFKA-3160: magic 0 frames hash the frame magic with the descriptor; standard readers
    refuse them until the checksum is fixed, and magic 1 frames are standard."""
    good = lz4_frame(b"hello" * 10)
    broken = lz4_frame(b"hello" * 10, broken_checksum=True)
    assert good[4:6] == broken[4:6] == b"\x60\x40"  # independent blocks, 64 KiB, no checksums or size
    assert good[6] == (xxh32(b"\x60\x40") >> 8) & 0xFF
    assert broken[6] == (xxh32(b"\x04\x22\x4d\x18\x60\x40") >> 8) & 0xFF != good[6]
    assert lz4.frame.decompress(good) == b"hello" * 10
    with pytest.raises(RuntimeError):
        lz4.frame.decompress(broken)
    assert fix_lz4_header_checksum(broken) == good
    data = write_message_set(records(2), magic=0, compression=COMPRESSION_LZ4)
    assert [m.value for m in inner_messages(next(iter_messages(data)))] == [b"v0", b"v1"]
