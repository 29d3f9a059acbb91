"""Record batch v2 framing, validation, rewrites and codecs.

Independent encoders: kafka-python's DefaultRecordBatchBuilder (a real client's encoder) and the
codec libraries themselves.
"""

from __future__ import annotations

import gzip
import struct

import lz4.frame
import pytest
import snappy
import zstandard
from hypothesis import given, settings
from hypothesis import strategies as st
from kafka.record.default_records import DefaultRecordBatchBuilder

from groupcoord.formats.batch import (
    BATCH_HEADER_SIZE,
    CorruptBatchError,
    Record,
    build_batch,
    decode_record_tuples,
    decode_records,
    encode_batch,
    iter_batches,
    parse_header,
    rewrite_base_offset,
    set_log_append_time,
    validate_batch,
)

TS = 1_700_000_000_000

GOLDEN_HEADER = bytes.fromhex(
    "0000000000000000"  # base offset 0
    "00000044"  # batch length 68
    "00000000"  # partition leader epoch 0
    "02"  # magic
    "16c8334a"  # crc32c
    "0000"  # attributes
    "00000000"  # last offset delta
    "0000018bcfe56800"  # base timestamp
    "0000018bcfe56800"  # max timestamp
    "ffffffffffffffff"  # producer id -1
    "ffff"  # producer epoch -1
    "ffffffff"  # base sequence -1
    "00000001"  # record count
)
GOLDEN_RECORD = bytes.fromhex("24 00 00 00 06 6b6579 0a 76616c7565 02 02 68 02 31".replace(" ", ""))


def kafka_python_batch(codec: int, n: int, *, base_ts: int = TS) -> bytes:
    builder = DefaultRecordBatchBuilder(
        magic=2,
        compression_type=codec,
        is_transactional=False,
        producer_id=-1,
        producer_epoch=-1,
        base_sequence=-1,
        batch_size=1 << 22,
    )
    for i in range(n):
        builder.append(
            i,
            timestamp=base_ts + i,
            key=b"key-%d" % i if i % 7 else None,
            value=(b"value-%d-" % i) * (i % 13) if i % 5 else None,
            headers=[("trace", b"t%d" % i), ("empty", None)] if i % 2 else [],
        )
    return bytes(builder.build())


def test_single_record_batch_has_the_golden_header_and_record_bytes() -> None:
    buf = build_batch([(b"key", b"value", [("h", b"1")])], base_offset=0, timestamp_ms=TS)
    assert buf[:BATCH_HEADER_SIZE] == GOLDEN_HEADER
    assert buf[BATCH_HEADER_SIZE:] == GOLDEN_RECORD
    header = parse_header(buf)
    assert header.size == len(buf) == 80
    assert (header.base_offset, header.last_offset, header.record_count) == (0, 0, 1)
    assert (header.compression, header.timestamp_type) == (0, 0)
    assert not header.is_transactional and not header.is_control


@pytest.mark.parametrize("codec", [0, 2, 3, 4])
def test_build_batch_is_byte_identical_to_kafka_python(codec: int) -> None:
    theirs = kafka_python_batch(codec, 200)
    records = decode_records(theirs)
    ours = build_batch(
        [(r.key, r.value, r.headers) for r in records],
        timestamp_ms=0,
        timestamps=[r.timestamp for r in records],
        compression=codec,
    )
    assert ours == theirs


@pytest.mark.parametrize("codec", [0, 1, 2, 3, 4])
def test_kafka_python_batches_validate_and_decode_for_every_codec(codec: int) -> None:
    buf = kafka_python_batch(codec, 300)
    header = validate_batch(buf, 0)
    assert header.compression == codec
    assert (header.record_count, header.last_offset_delta, header.max_timestamp) == (300, 299, TS + 299)
    records = decode_records(buf)
    assert len(records) == 300
    assert records[16] == Record(
        offset=16, timestamp=TS + 16, key=b"key-16", value=b"value-16-" * 3, headers=(), attributes=0
    )
    assert records[7] == Record(
        offset=7,
        timestamp=TS + 7,
        key=None,
        value=b"value-7-" * 7,
        headers=(("trace", b"t7"), ("empty", None)),
    )
    assert records[10].value is None


def _uncompressed_records(n: int) -> tuple[bytes, list[Record]]:
    buf = build_batch([(b"k%d" % i, b"v%d" % i * 50, ()) for i in range(n)], timestamp_ms=TS)
    return buf[BATCH_HEADER_SIZE:], decode_records(buf)


def _frame_with(codec: int, payload: bytes, n: int) -> bytes:
    """A batch whose records block is ``payload`` as compressed by the codec's own library."""
    plain = bytearray(build_batch([(b"k%d" % i, b"v%d" % i * 50, ()) for i in range(n)], timestamp_ms=TS))
    out = bytearray(plain[:BATCH_HEADER_SIZE]) + payload
    struct.pack_into(">i", out, 8, len(out) - 12)
    struct.pack_into(">h", out, 21, codec)
    import crc32c

    struct.pack_into(">I", out, 17, crc32c.crc32c(bytes(out[21:])))
    return bytes(out)


@pytest.mark.parametrize(
    ("codec", "compress"),
    [
        (1, lambda b: gzip.compress(b)),
        (2, lambda b: snappy.compress(b)),  # raw snappy, as librdkafka sometimes sends
        (3, lambda b: lz4.frame.compress(b)),
        (4, lambda b: zstandard.ZstdCompressor(write_content_size=False).compress(b)),
    ],
    ids=["gzip", "snappy-raw", "lz4-frame", "zstd-no-content-size"],
)
def test_blocks_compressed_by_the_codec_libraries_decode(codec: int, compress) -> None:  # type: ignore[no-untyped-def]
    raw, expected = _uncompressed_records(40)
    buf = _frame_with(codec, compress(raw), 40)
    validate_batch(buf, 0)
    assert decode_records(buf) == expected


def test_xerial_snappy_with_several_blocks_decodes() -> None:
    raw, expected = _uncompressed_records(2000)
    assert len(raw) > 64 * 1024
    built = build_batch([(r.key, r.value, ()) for r in expected], timestamp_ms=TS, compression=2)
    assert built[BATCH_HEADER_SIZE : BATCH_HEADER_SIZE + 8] == b"\x82SNAPPY\x00"
    assert decode_records(built) == expected


def test_crc_mismatch_anywhere_in_the_covered_range_is_rejected() -> None:
    buf = build_batch([(b"a", b"b", ())] * 3, timestamp_ms=TS)
    for pos in range(21, len(buf)):
        damaged = bytearray(buf)
        damaged[pos] ^= 0x40
        with pytest.raises(CorruptBatchError, match="CRC"):
            validate_batch(damaged, 0)


def test_base_offset_and_leader_epoch_are_outside_the_crc() -> None:
    buf = bytearray(build_batch([(b"a", b"b", ())] * 3, timestamp_ms=TS))
    rewrite_base_offset(buf, 0, 123456789)
    header = validate_batch(buf, 0)
    assert (header.base_offset, header.last_offset) == (123456789, 123456791)
    assert [r.offset for r in decode_records(buf)] == [123456789, 123456790, 123456791]


def test_short_bad_magic_and_truncated_batches_are_corrupt() -> None:
    buf = build_batch([(b"a", b"b", ())], timestamp_ms=TS)
    with pytest.raises(CorruptBatchError, match="short"):
        parse_header(buf[:60])
    bad_magic = bytearray(buf)
    bad_magic[16] = 1
    with pytest.raises(CorruptBatchError, match="magic 1"):
        validate_batch(bad_magic, 0)
    with pytest.raises(CorruptBatchError, match="claims 70 bytes"):
        validate_batch(buf[:-1], 0)
    bad_length = bytearray(buf)
    struct.pack_into(">i", bad_length, 8, 10)
    with pytest.raises(CorruptBatchError, match="impossible length 10"):
        validate_batch(bad_length, 0)


def test_iter_batches_yields_complete_batches_and_stops_at_a_partial_tail() -> None:
    a = build_batch([(b"a", b"1", ())] * 2, base_offset=0, timestamp_ms=TS)
    b = build_batch([(b"b", b"2", ())] * 3, base_offset=2, timestamp_ms=TS, compression=3)
    c = build_batch([(b"c", b"3", ())], base_offset=5, timestamp_ms=TS)
    stream = a + b + c
    assert [(p, h.base_offset, h.record_count) for p, h in iter_batches(stream)] == [
        (0, 0, 2),
        (len(a), 2, 3),
        (len(a) + len(b), 5, 1),
    ]
    for cut in range(len(a) + len(b), len(stream)):
        assert [h.base_offset for _, h in iter_batches(memoryview(stream)[:cut])] == [0, 2]


def test_log_append_time_stamps_every_record_and_keeps_crc_valid() -> None:
    buf = bytearray(build_batch([(b"a", b"1", ()), (b"b", b"2", ())], timestamp_ms=TS, timestamps=[5, 9]))
    set_log_append_time(buf, 0, TS + 42)
    header = validate_batch(buf, 0)
    assert (header.timestamp_type, header.max_timestamp, header.base_timestamp) == (1, TS + 42, 5)
    assert [r.timestamp for r in decode_records(buf)] == [TS + 42, TS + 42]


def test_encode_batch_keeps_offsets_of_a_thinned_batch() -> None:
    full = build_batch([(b"k%d" % i, b"v", ()) for i in range(5)], base_offset=100, timestamp_ms=TS)
    kept = [r for r in decode_records(full) if r.offset in (101, 103)]
    thin = encode_batch(kept, base_offset=100, base_timestamp=TS, last_offset_delta=4)
    header = validate_batch(thin, 0)
    assert (header.base_offset, header.last_offset, header.record_count) == (100, 104, 2)
    assert [r.offset for r in decode_records(thin)] == [101, 103]


def test_transactional_and_control_bits_come_through_attributes() -> None:
    buf = build_batch(
        [(b"k", b"v", ())],
        timestamp_ms=TS,
        attributes=0x30,
        compression=4,
        producer_id=7,
        producer_epoch=1,
        base_sequence=0,
    )
    header = validate_batch(buf, 0)
    assert header.is_transactional and header.is_control
    assert (header.compression, header.producer_id, header.producer_epoch, header.base_sequence) == (
        4,
        7,
        1,
        0,
    )


_record = st.tuples(
    st.one_of(st.none(), st.binary(max_size=300)),
    st.one_of(st.none(), st.binary(max_size=300)),
    st.lists(st.tuples(st.text(max_size=20), st.one_of(st.none(), st.binary(max_size=80))), max_size=4),
)


@settings(max_examples=150)
@given(
    records=st.lists(_record, min_size=1, max_size=80),
    timestamps=st.data(),
    codec=st.sampled_from([0, 1, 2, 3, 4]),
    base=st.integers(min_value=0, max_value=2**62),
)
def test_any_records_round_trip_through_build_and_decode(
    records: list[tuple[bytes | None, bytes | None, list[tuple[str, bytes | None]]]],
    timestamps: st.DataObject,
    codec: int,
    base: int,
) -> None:
    ts = timestamps.draw(
        st.lists(
            st.integers(min_value=TS - 10**6, max_value=TS + 10**6),
            min_size=len(records),
            max_size=len(records),
        )
    )
    buf = build_batch(records, base_offset=base, timestamp_ms=0, timestamps=ts, compression=codec)
    header = validate_batch(buf, 0)
    assert (header.base_offset, header.record_count, header.max_timestamp) == (base, len(records), max(ts))
    decoded = decode_records(buf)
    assert [(r.offset, r.timestamp, r.key, r.value, r.headers) for r in decoded] == [
        (base + i, ts[i], k, v, tuple(h)) for i, (k, v, h) in enumerate(records)
    ]
    _header, rows = decode_record_tuples(buf)
    assert rows == [(r.offset, r.timestamp, r.key, r.value, r.headers, r.attributes) for r in decoded]


@settings(max_examples=100)
@given(cut=st.integers(min_value=0, max_value=400), flip=st.integers(min_value=0, max_value=255))
def test_damaged_records_decode_to_eight_records_or_raise_corrupt_batch(cut: int, flip: int) -> None:
    buf = bytearray(build_batch([(b"k%d" % i, b"v" * i, [("h", b"x")]) for i in range(8)], timestamp_ms=TS))
    pos = BATCH_HEADER_SIZE + cut % (len(buf) - BATCH_HEADER_SIZE)
    buf[pos] ^= flip or 1
    try:
        outcome: object = len(decode_records(buf))
    except CorruptBatchError:
        outcome = "corrupt"
    assert outcome in (8, "corrupt")


@settings(max_examples=200, deadline=None)
@given(
    records=st.lists(
        st.tuples(
            st.one_of(st.none(), st.binary(max_size=40)),
            st.one_of(st.none(), st.binary(max_size=2000)),
            st.lists(st.tuples(st.text(max_size=5), st.one_of(st.none(), st.binary(max_size=5))), max_size=2),
        ),
        min_size=1,
        max_size=6,
    ),
    base_offset=st.integers(0, 2**40),
    ts=st.integers(0, 2**45),
    producer=st.tuples(st.integers(-1, 2**40), st.integers(-1, 30000), st.integers(-1, 2**30)),
    attributes=st.sampled_from([0, 0x10, 0x20, 0x30]),
)
def test_one_timestamp_for_all_records_frames_as_the_same_timestamp_given_per_record(
    records: list[tuple[bytes | None, bytes | None, list[tuple[str, bytes | None]]]],
    base_offset: int,
    ts: int,
    producer: tuple[int, int, int],
    attributes: int,
) -> None:
    """``build_batch`` with one timestamp for all records and with the same timestamp given per
    record (the per-record delta path) must frame the same bytes."""
    pid, epoch, seq = producer
    kw = dict(base_offset=base_offset, producer_id=pid, producer_epoch=epoch, base_sequence=seq)
    fast = build_batch(records, timestamp_ms=ts, attributes=attributes, **kw)  # type: ignore[arg-type]
    general = build_batch(
        records,
        timestamp_ms=ts,
        timestamps=[ts] * len(records),
        attributes=attributes,
        **kw,  # type: ignore[arg-type]
    )
    assert fast == general
    assert validate_batch(fast).record_count == len(records)
