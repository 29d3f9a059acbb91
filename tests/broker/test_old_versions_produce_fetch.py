"""Produce v0-v2 and Fetch v0-v3 over the wire: message formats v0/v1 converted as Kafka 3.9 does.

One in-process broker (``groupcoord.testing.Broker``) serves the module; each test writes to its
own topics. Produce v0-v2 message sets are up-converted to one v2 batch (``LogValidator``); Fetch
v0-v1 read magic 0 message sets and v2-v3 magic 1 (``KafkaApis.maybeConvertFetchedData``,
``RecordsUtil.downConvert``). The Burrow test frames its requests byte by byte as sarama 1.22
writes them for Burrow 1.2.1 and decodes ``__consumer_offsets`` the way Burrow's
``kafka_client.go`` does.
"""

from __future__ import annotations

import socket
import struct
from collections.abc import Iterator
from typing import Any

import pytest

from groupcoord.errors import ErrorCode
from groupcoord.formats.batch import (
    COMPRESSION_GZIP,
    COMPRESSION_LZ4,
    COMPRESSION_NONE,
    COMPRESSION_SNAPPY,
    COMPRESSION_ZSTD,
    Record,
    build_batch,
    decode_records,
    iter_batches,
    parse_header,
)
from groupcoord.protocol.client import WireClient
from groupcoord.storage.message_format import LegacyMessage, inner_messages, iter_messages, write_message_set
from groupcoord.testing import Broker
from wire_testing import WireReader, fetch_partition, wire_client

PRODUCE, FETCH, LIST_OFFSETS, METADATA, OFFSET_COMMIT = 0, 1, 2, 3, 8
MAX = 1 << 20


@pytest.fixture(scope="module")
def broker() -> Iterator[Broker]:
    with Broker() as b:
        yield b


@pytest.fixture
def client(broker: Broker) -> Iterator[WireClient]:
    with wire_client(broker) as c:
        yield c


def records(n: int, ts: int = 1_000) -> list[Record]:
    return [
        Record(offset=i, timestamp=ts + i, key=f"k{i}".encode(), value=f"v{i}".encode()) for i in range(n)
    ]


def produce(client: WireClient, version: int, topic: str, data: bytes) -> Any:
    r = client.call(
        PRODUCE,
        version,
        acks=-1,
        timeout=5000,
        topic_data=[{"name": topic, "partition_data": [{"index": 0, "records": data}]}],
    )
    return r.responses[0].partition_responses[0]


def fetch(client: WireClient, version: int, topic: str, offset: int) -> Any:
    return fetch_partition(client, version, topic, offset)


def flat(data: bytes) -> list[LegacyMessage]:
    out: list[LegacyMessage] = []
    for m in iter_messages(data):
        out.extend(inner_messages(m) if m.codec else [m])
    return out


@pytest.mark.parametrize(
    ("version", "magic", "codec"),
    [
        (0, 0, COMPRESSION_NONE),
        (0, 0, COMPRESSION_GZIP),
        (1, 0, COMPRESSION_SNAPPY),
        (1, 0, COMPRESSION_LZ4),
        (2, 1, COMPRESSION_NONE),
        (2, 1, COMPRESSION_GZIP),
        (2, 1, COMPRESSION_SNAPPY),
        (2, 1, COMPRESSION_LZ4),
    ],
)
def test_produce_v0_to_v2_message_sets_are_stored_as_one_v2_batch(
    broker: Broker, client: WireClient, version: int, magic: int, codec: int
) -> None:
    """``LogValidator.convertAndAssignOffsetsNonCompressed`` / ``buildRecordsAndAssignOffsets``:
    the messages become one v2 batch with the wrapper's codec, magic 0 messages without timestamp."""
    topic = f"produce-v{version}-m{magic}-c{codec}"
    broker.create_topic(topic, 1)
    first = produce(client, version, topic, write_message_set(records(3), magic=magic, compression=codec))
    second = produce(client, version, topic, write_message_set(records(2), magic=magic, compression=codec))
    assert (first.error_code, first.base_offset, second.error_code, second.base_offset) == (0, 0, 0, 3)
    if version == 2:
        assert first.log_append_time is None  # CreateTime topic: -1
    got = fetch(client, 4, topic, 0)
    batches = [parse_header(got.records, pos) for pos, _ in iter_batches(got.records)]
    assert [(h.magic, h.compression, h.base_offset, h.record_count) for h in batches] == [
        (2, codec, 0, 3),
        (2, codec, 3, 2),
    ]
    ts = (lambda i: 1000 + i) if magic == 1 else (lambda i: -1)
    assert [
        (r.offset, r.key, r.value, r.timestamp)
        for pos, _ in iter_batches(got.records)
        for r in decode_records(got.records, pos)
    ] == [
        (0, b"k0", b"v0", ts(0)),
        (1, b"k1", b"v1", ts(1)),
        (2, b"k2", b"v2", ts(2)),
        (3, b"k0", b"v0", ts(0)),
        (4, b"k1", b"v1", ts(1)),
    ]


def test_produce_of_old_message_sets_refuses_what_kafka_refuses(broker: Broker, client: WireClient) -> None:
    broker.create_topic("produce-refused", 1)
    bad = bytearray(write_message_set(records(1), magic=1))
    bad[-1] ^= 0xFF  # the value changes under its CRC
    assert produce(client, 2, "produce-refused", bytes(bad)).error_code == ErrorCode.CORRUPT_MESSAGE
    # v3+ must carry v2 batches (ProduceRequest.validateRecords)
    assert (
        produce(client, 3, "produce-refused", write_message_set(records(1), magic=1)).error_code
        == ErrorCode.INVALID_RECORD
    )
    # two compressed wrappers in one set
    one = write_message_set(records(1), magic=1, compression=COMPRESSION_GZIP)
    assert produce(client, 2, "produce-refused", one + one).error_code == ErrorCode.INVALID_RECORD
    assert fetch(client, 4, "produce-refused", 0).high_watermark == 0
    # a v2 batch in a v2 request needs no conversion
    ok = produce(client, 2, "produce-refused", build_batch([(None, b"x", ())], timestamp_ms=5))
    assert (ok.error_code, ok.base_offset) == (ErrorCode.NONE, 0)


def test_fetch_v0_to_v3_down_convert_to_magic_0_and_1(broker: Broker, client: WireClient) -> None:
    """Fetch v0-v1 get magic 0, v2-v3 magic 1; an uncompressed batch is cut at the fetch offset,
    a compressed one is one wrapper holding all its records (``RecordsUtil.downConvert``)."""
    topic = "fetch-down"
    broker.create_topic(topic, 1)
    plain = build_batch(
        [(f"k{i}".encode(), f"v{i}".encode(), ()) for i in range(3)], timestamp_ms=0, timestamps=[10, 11, 12]
    )
    packed = build_batch(
        [(None, b"z0", ()), (None, b"z1", ())],
        timestamp_ms=0,
        timestamps=[30, 20],
        compression=COMPRESSION_GZIP,
    )
    assert produce(client, 3, topic, plain).base_offset == 0
    assert produce(client, 3, topic, packed).base_offset == 3
    for version in range(4):
        magic = 0 if version < 2 else 1
        got = fetch(client, version, topic, 1)
        assert (got.error_code, got.high_watermark) == (ErrorCode.NONE, 5)
        shallow = list(iter_messages(got.records))
        assert [(m.offset, m.magic, m.codec) for m in shallow] == [
            (1, magic, 0),
            (2, magic, 0),
            (4, magic, COMPRESSION_GZIP),  # the wrapper carries its last offset
        ]
        ts = (lambda t: t) if magic else (lambda t: -1)
        assert [(m.offset, m.key, m.value, m.timestamp) for m in flat(got.records)] == [
            (1, b"k1", b"v1", ts(11)),
            (2, b"k2", b"v2", ts(12)),
            (3, None, b"z0", ts(30)),
            (4, None, b"z1", ts(20)),
        ]
        assert shallow[2].timestamp == ts(30)  # a magic 1 wrapper has the largest timestamp


def test_log_append_time_topic_stamps_old_produce_and_old_fetch(broker: Broker, client: WireClient) -> None:
    topic = "fetch-append-time"
    broker.create_topic(topic, 1, {"message.timestamp.type": "LogAppendTime"})
    sent = produce(client, 2, topic, write_message_set(records(2), magic=1))
    assert sent.error_code == ErrorCode.NONE and sent.log_append_time is not None
    stamp = int(sent.log_append_time.timestamp() * 1000)
    got = list(iter_messages(fetch(client, 3, topic, 0).records))
    assert [(m.offset, m.timestamp, m.log_append_time) for m in got] == [(0, stamp, True), (1, stamp, True)]


def test_fetch_below_v10_of_zstd_is_unsupported_compression_type(broker: Broker, client: WireClient) -> None:
    """``KafkaApis.maybeConvertFetchedData``: a zstd topic refuses fetches below v10; a zstd batch
    cannot be down-converted."""
    broker.create_topic("fetch-zstd-topic", 1, {"compression.type": "zstd"})
    for version in (0, 3, 4, 9):
        assert (
            fetch(client, version, "fetch-zstd-topic", 0).error_code == ErrorCode.UNSUPPORTED_COMPRESSION_TYPE
        )
    assert fetch(client, 10, "fetch-zstd-topic", 0).error_code == ErrorCode.NONE
    broker.create_topic("fetch-zstd-batch", 1)
    batch = build_batch([(None, b"x", ())], timestamp_ms=1, compression=COMPRESSION_ZSTD)
    assert produce(client, 7, "fetch-zstd-batch", batch).error_code == ErrorCode.NONE
    assert fetch(client, 3, "fetch-zstd-batch", 0).error_code == ErrorCode.UNSUPPORTED_COMPRESSION_TYPE
    assert fetch(client, 4, "fetch-zstd-batch", 0).error_code == ErrorCode.NONE
    # after a convertible batch, the zstd one ends the answer; fetched from there it is the error
    # (LazyDownConversionRecordsSend)
    plain = build_batch([(None, b"p", ())], timestamp_ms=1)
    broker.create_topic("fetch-zstd-later", 1)
    assert produce(client, 7, "fetch-zstd-later", plain).base_offset == 0
    assert produce(client, 7, "fetch-zstd-later", batch).base_offset == 1
    got = fetch(client, 3, "fetch-zstd-later", 0)
    assert (got.error_code, [(m.offset, m.value) for m in iter_messages(got.records)]) == (
        ErrorCode.NONE,
        [(0, b"p")],
    )
    assert fetch(client, 3, "fetch-zstd-later", 1).error_code == ErrorCode.UNSUPPORTED_COMPRESSION_TYPE


def test_fetch_below_v4_of_a_topic_without_down_conversion_is_unsupported_version(
    broker: Broker, client: WireClient
) -> None:
    """``KafkaApis.maybeConvertFetchedData``: ``message.downconversion.enable=false`` refuses the
    fetches that would need a conversion (a consumer's, below v4)."""
    broker.create_topic("fetch-no-down", 1, {"message.downconversion.enable": "false"})
    broker.produce("fetch-no-down", [b"x"])
    for version in range(4):
        assert fetch(client, version, "fetch-no-down", 0).error_code == ErrorCode.UNSUPPORTED_VERSION
    got = fetch(client, 4, "fetch-no-down", 0)
    assert (got.error_code, got.high_watermark) == (ErrorCode.NONE, 1)


# -- Burrow 1.2.1 (sarama 1.22) against the broker, byte by byte -----------------------------------


def _string(s: str) -> bytes:
    b = s.encode()
    return struct.pack(">h", len(b)) + b


def _call(broker: Broker, api_key: int, version: int, body: bytes) -> bytes:
    host, port = broker.bootstrap.split(":")
    header = struct.pack(">hhi", api_key, version, 42) + _string("burrow")
    with socket.create_connection((host, int(port)), timeout=15) as sock:
        sock.sendall(struct.pack(">i", len(header) + len(body)) + header + body)
        f = sock.makefile("rb")
        (size,) = struct.unpack(">i", f.read(4))
        answer = f.read(size)
    assert struct.unpack_from(">i", answer)[0] == 42
    return answer[4:]


def _fetch_offsets_topic(broker: Broker, version: int) -> bytes:
    """sarama's FetchRequest for ``__consumer_offsets`` partition 0 from offset 0; the records
    (a magic 0/1 message set below v4, v2 batches from v4)."""
    body = struct.pack(">iii", -1, 100, 1)  # replica, max wait, min bytes
    if version >= 3:
        body += struct.pack(">i", MAX)
    if version >= 4:
        body += b"\x00"  # isolation level: read uncommitted
    body += (
        struct.pack(">i", 1)
        + _string("__consumer_offsets")
        + struct.pack(">i", 1)
        + struct.pack(">iqi", 0, 0, MAX)
    )
    r = WireReader(_call(broker, FETCH, version, body))
    if version >= 1:
        assert r.take(">i") == 0  # throttle
    assert (r.take(">i"), r.string(), r.take(">i")) == (1, "__consumer_offsets", 1)
    partition, error, _hw = r.take(">i"), r.take(">h"), r.take(">q")
    assert (partition, error) == (0, ErrorCode.NONE)
    if version >= 4:
        r.take(">q")  # last stable offset
        assert r.take(">i") == -1  # no aborted transactions (null) for read_uncommitted
    return r.raw(r.take(">i"))


def _nullable_string(b: WireReader) -> str | None:
    n = b.take(">h")
    if n < 0:
        return None
    b.pos -= 2
    return b.string()


def _metadata(broker: Broker, version: int, topic: str) -> tuple[tuple[int, str, int], dict[int, int]]:
    """sarama's MetadataRequest (v0, v1 or v5) for one topic: the one broker, and each partition's leader."""
    body = struct.pack(">i", 1) + _string(topic)
    if version >= 4:
        body += b"\x01"  # allow_auto_topic_creation
    m = WireReader(_call(broker, METADATA, version, body))
    if version >= 3:
        assert m.take(">i") == 0  # throttle
    assert m.take(">i") == 1
    node = (m.take(">i"), m.string(), m.take(">i"))
    if version >= 1:
        assert _nullable_string(m) is None  # rack
    if version >= 2:
        assert _nullable_string(m)  # cluster id
    if version >= 1:
        assert m.take(">i") == node[0]  # controller
    assert m.take(">i") == 1
    assert (m.take(">h"), m.string()) == (ErrorCode.NONE, topic)
    if version >= 1:
        assert m.take(">b") == 0  # not internal
    leaders = {}
    for _ in range(m.take(">i")):
        error, index, leader = m.take(">h"), m.take(">i"), m.take(">i")
        replicas = [m.take(">i") for _ in range(m.take(">i"))]
        isr = [m.take(">i") for _ in range(m.take(">i"))]
        if version >= 5:
            assert [m.take(">i") for _ in range(m.take(">i"))] == []  # offline replicas
        assert (error, replicas, isr) == (ErrorCode.NONE, [leader], [leader])
        leaders[index] = leader
    assert m.pos == len(m.data)
    return node, leaders


def _burrow_commits(message_set: bytes) -> list[tuple[str, str, int, int]]:
    """(group, topic, partition, offset) of each offset commit, decoded as Burrow's
    ``processConsumerOffsetsMessage``: key version 0/1 is a commit, value version 0/1/3."""
    out = []
    if message_set[16:17] == b"\x02":  # v2 batches (Fetch v4+)
        entries = [
            (r.key, r.value) for pos, _ in iter_batches(message_set) for r in decode_records(message_set, pos)
        ]
    else:
        entries = [(m.key, m.value) for m in flat(message_set)]
    for raw_key, raw_value in entries:
        if raw_key is None or raw_value is None:
            continue
        key = WireReader(raw_key)
        if key.take(">h") not in (0, 1):
            continue  # group metadata (2) and anything else
        group, topic, partition = key.string(), key.string(), key.take(">i")
        value = WireReader(raw_value)
        version = value.take(">h")
        assert version in (0, 1, 3), f"Burrow 1.2.1 cannot read offset value version {version}"
        offset = value.take(">q")
        out.append((group, topic, partition, offset))
    return out


@pytest.mark.parametrize(
    ("kafka_version", "metadata_version", "fetch_version"),
    [("0.8", 0, 0), ("0.10.2", 1, 3), ("2.0.0", 5, 4)],
)
def test_burrow_sees_commits_and_log_end_offsets(
    broker: Broker, client: WireClient, kafka_version: str, metadata_version: int, fetch_version: int
) -> None:
    """What Burrow 1.2.1 sends for its ``kafka-version`` (sarama 1.22: Metadata v0 below 0.10,
    v1 below 1.0, v5 from 1.0; Fetch v0 below 0.9 ... v3 below 0.11, v4 from 0.11) to read
    ``__consumer_offsets``, and the ListOffsets v0 it builds itself for every partition
    (``kafka_cluster.go``: ``&sarama.OffsetRequest{}``, ``AddBlock(topic, p, OffsetNewest, 1)``)."""
    topic, group = f"burrow-{kafka_version}", f"burrow-group-{kafka_version}"
    broker.create_topic(topic, 2)
    broker.produce(topic, [b"a", b"b", b"c", b"d"], partition=0)
    broker.produce(topic, [b"e"], partition=1)
    r = client.call(
        OFFSET_COMMIT,
        2,
        group_id=group,
        generation_id_or_member_epoch=-1,
        member_id="",
        retention_time=-1,
        topics=[
            {
                "name": topic,
                "partitions": [
                    {"partition_index": 0, "committed_offset": 3, "committed_metadata": ""},
                    {"partition_index": 1, "committed_offset": 1, "committed_metadata": ""},
                ],
            }
        ],
    )
    assert [p.error_code for p in r.topics[0].partitions] == [0, 0]

    # the client's metadata, at the version its kafka-version picks: every partition led by this broker
    host, port = broker.bootstrap.split(":")
    node, leaders = _metadata(broker, metadata_version, topic)
    assert node[1:] == (host, int(port))
    assert leaders == {0: node[0], 1: node[0]}

    # the commits, read from __consumer_offsets as Burrow reads them
    commits = _burrow_commits(_fetch_offsets_topic(broker, fetch_version))
    assert [c for c in commits if c[0] == group] == [(group, topic, 0, 3), (group, topic, 1, 1)]

    # the log end offsets Burrow computes lag from
    body = struct.pack(">i", -1) + struct.pack(">i", 1) + _string(topic) + struct.pack(">i", 2)
    body += struct.pack(">iqi", 0, -1, 1) + struct.pack(">iqi", 1, -1, 1)
    lo = WireReader(_call(broker, LIST_OFFSETS, 0, body))
    assert (lo.take(">i"), lo.string(), lo.take(">i")) == (1, topic, 2)
    answers = [
        (lo.take(">i"), lo.take(">h"), [lo.take(">q") for _ in range(lo.take(">i"))]) for _ in range(2)
    ]
    assert answers == [(0, 0, [4]), (1, 0, [1])]
