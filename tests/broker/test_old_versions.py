"""The request versions Kafka 3.9 serves that kio 0.6.5 (Kafka 4.x's specs) no longer has.

One in-process broker (``groupcoord.testing.Broker``: the whole app, the real log on disk, the
real server on loopback) serves the module; requests go over the raw wire with the package's
client (``protocol.client.WireClient``), and the ones Burrow 1.2.1 sends (through sarama 1.22)
are framed byte by byte here, as sarama's encoders write them, and their answers are read the
same way, so the check does not rest on our own schemas.
"""

from __future__ import annotations

import datetime
import socket
import struct
from collections.abc import Iterator
from pathlib import Path

import pytest
from broker_harness import Env, run_broker

from groupcoord.errors import ErrorCode
from groupcoord.protocol.client import WireClient
from groupcoord.testing import Broker
from wire_testing import WireReader, wire_client

PRODUCE, FETCH, LIST_OFFSETS, METADATA = 0, 1, 2, 3
OFFSET_COMMIT, OFFSET_FETCH, CREATE_TOPICS, DELETE_TOPICS, DESCRIBE_CONFIGS = 8, 9, 19, 20, 32

TOPIC = "old-versions"


@pytest.fixture(scope="module")
def broker() -> Iterator[Broker]:
    with Broker() as b:
        b.create_topic(TOPIC, 3)
        b.produce(TOPIC, [b"a", b"b", b"c"], partition=0)
        yield b


@pytest.fixture
def client(broker: Broker) -> Iterator[WireClient]:
    with wire_client(broker) as c:
        yield c


# -- raw frames, as sarama 1.22 writes them ----------------------------------------------------


def _string(s: str) -> bytes:
    b = s.encode()
    return struct.pack(">h", len(b)) + b


def _frame(api_key: int, version: int, correlation: int, body: bytes, client_id: str = "sarama") -> bytes:
    header = struct.pack(">hhi", api_key, version, correlation) + _string(client_id)
    return struct.pack(">i", len(header) + len(body)) + header + body


def _exchange(broker: Broker, frame: bytes) -> WireReader:
    host, port = broker.bootstrap.split(":")
    with socket.create_connection((host, int(port)), timeout=15) as sock:
        sock.sendall(frame)
        f = sock.makefile("rb")
        (size,) = struct.unpack(">i", f.read(4))
        return WireReader(f.read(size))


def _list_offsets_v0(broker: Broker, asks: list[tuple[int, int, int]]) -> list[tuple[int, int, list[int]]]:
    """Send sarama's OffsetRequest (v0) for TOPIC; [(partition, error, offsets)] in order."""
    body = struct.pack(">i", -1) + struct.pack(">i", 1) + _string(TOPIC) + struct.pack(">i", len(asks))
    for partition, time, max_offsets in asks:
        body += struct.pack(">iqi", partition, time, max_offsets)
    r = _exchange(broker, _frame(LIST_OFFSETS, 0, 7, body))
    assert r.take(">i") == 7  # correlation id; response header v0 has nothing else
    assert r.take(">i") == 1
    assert r.string() == TOPIC
    out = []
    for _ in range(r.take(">i")):
        partition, error = r.take(">i"), r.take(">h")
        out.append((partition, error, [r.take(">q") for _ in range(r.take(">i"))]))
    assert r.done()
    return out


def test_list_offsets_v0_as_burrow_sends_it_answers_old_style_offsets(broker: Broker) -> None:
    """Burrow 1.2.1 builds ``&sarama.OffsetRequest{}`` (version 0) itself, whatever its
    kafka-version, with ``AddBlock(topic, p, OffsetNewest, 1)`` (core/internal/cluster/kafka_cluster.go).
    Kafka 3.9 answers v0 from ``UnifiedLog.legacyFetchOffsetsBefore``: the log end offset for
    latest when the active segment has data, the log start for earliest, newest first."""
    got = _list_offsets_v0(broker, [(0, -1, 1), (0, -2, 1), (1, -1, 1), (9, -1, 1)])
    assert got == [
        (0, ErrorCode.NONE, [3]),
        (0, ErrorCode.NONE, [0]),
        (1, ErrorCode.NONE, [0]),  # empty: the active segment's base offset
        (9, ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, []),
    ]


def test_list_offsets_v0_returns_up_to_max_num_offsets_newest_first(broker: Broker) -> None:
    """``maxNumOffsets`` > 1 walks back over the segment base offsets (one segment here: its
    base 0 after the log end 3); earliest gives only the first; timestamps below -2 are
    UNSUPPORTED_VERSION in v0 (``KafkaApis.handleListOffsetRequestV0``)."""
    far_future = 2**62
    asks = [(0, -1, 10), (0, -2, 10), (0, -3, 1), (0, 0, 5), (0, far_future, 5), (0, far_future, 1)]
    assert _list_offsets_v0(broker, asks) == [
        (0, ErrorCode.NONE, [3, 0]),
        (0, ErrorCode.NONE, [0]),
        (0, ErrorCode.UNSUPPORTED_VERSION, []),
        (0, ErrorCode.NONE, []),  # no segment was last modified at or before the epoch
        (0, ErrorCode.NONE, [3, 0]),  # by timestamp: every point is older, newest first
        (0, ErrorCode.NONE, [3]),
    ]


def test_list_offsets_v0_leaves_the_connection_open(client: WireClient) -> None:
    r = client.call(
        LIST_OFFSETS,
        0,
        replica_id=-1,
        topics=[
            {"name": TOPIC, "partitions": [{"partition_index": 0, "timestamp": -1, "max_num_offsets": 1}]}
        ],
    )
    assert [(p.partition_index, p.error_code, p.old_style_offsets) for p in r.topics[0].partitions] == [
        (0, ErrorCode.NONE, (3,))
    ]
    r = client.call(
        LIST_OFFSETS,
        1,
        replica_id=-1,
        topics=[{"name": TOPIC, "partitions": [{"partition_index": 0, "timestamp": -1}]}],
    )
    assert (r.topics[0].partitions[0].offset, r.topics[0].partitions[0].timestamp) == (3, -1)


def test_metadata_v0_and_v1_as_sarama_sends_them(broker: Broker) -> None:
    """sarama 1.22 asks Metadata v0 below kafka-version 0.10 (v1 up to 0.11, v5 from 1.0):
    an empty topic array is every topic at v0 (null is every topic from v1)."""
    body = struct.pack(">i", 1) + _string(TOPIC)
    r = _exchange(broker, _frame(METADATA, 0, 3, body))
    assert r.take(">i") == 3
    brokers = [(r.take(">i"), r.string(), r.take(">i")) for _ in range(r.take(">i"))]
    host, port = broker.bootstrap.split(":")
    assert [(b[1], b[2]) for b in brokers] == [(host, int(port))]
    assert r.take(">i") == 1
    assert (r.take(">h"), r.string()) == (ErrorCode.NONE, TOPIC)
    partitions = []
    for _ in range(r.take(">i")):
        error, index, leader = r.take(">h"), r.take(">i"), r.take(">i")
        replicas = [r.take(">i") for _ in range(r.take(">i"))]
        isr = [r.take(">i") for _ in range(r.take(">i"))]
        partitions.append((error, index, leader == brokers[0][0], replicas == isr == [brokers[0][0]]))
    assert r.done()
    assert sorted(partitions) == [(0, 0, True, True), (0, 1, True, True), (0, 2, True, True)]


def test_offset_commit_and_fetch_v0_are_zookeeper_versions_refused_per_partition(client: WireClient) -> None:
    """Kafka 3.9 keeps v0 offsets in ZooKeeper; a KRaft broker answers UNSUPPORTED_VERSION for
    every partition (``KafkaApis.commitOffsetsToZookeeper`` / ``handleOffsetFetchRequestFromZookeeper``
    via ``MetadataSupport.requireZkOrThrow``), after the unknown-topic check of OffsetCommit."""
    r = client.call(
        OFFSET_COMMIT,
        0,
        group_id="zk-group",
        topics=[
            {
                "name": TOPIC,
                "partitions": [{"partition_index": 0, "committed_offset": 1, "committed_metadata": ""}],
            },
            {
                "name": "nope",
                "partitions": [{"partition_index": 0, "committed_offset": 1, "committed_metadata": ""}],
            },
        ],
    )
    assert [(t.name, [(p.partition_index, p.error_code) for p in t.partitions]) for t in r.topics] == [
        (TOPIC, [(0, ErrorCode.UNSUPPORTED_VERSION)]),
        ("nope", [(0, ErrorCode.UNSUPPORTED_VERSION)]),
    ]
    r = client.call(
        OFFSET_COMMIT,
        0,
        group_id="zk-group",
        topics=[
            {
                "name": "nope",
                "partitions": [{"partition_index": 0, "committed_offset": 1, "committed_metadata": ""}],
            }
        ],
    )
    assert r.topics[0].partitions[0].error_code == ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
    r = client.call(
        OFFSET_FETCH, 0, group_id="zk-group", topics=[{"name": TOPIC, "partition_indexes": [0, 1]}]
    )
    assert [
        (p.partition_index, p.committed_offset, p.metadata, p.error_code) for p in r.topics[0].partitions
    ] == [
        (0, -1, "", ErrorCode.UNSUPPORTED_VERSION),
        (1, -1, "", ErrorCode.UNSUPPORTED_VERSION),
    ]
    # nothing reached the coordinator
    r = client.call(OFFSET_FETCH, 1, group_id="zk-group", topics=[{"name": TOPIC, "partition_indexes": [0]}])
    assert (r.topics[0].partitions[0].committed_offset, r.topics[0].partitions[0].error_code) == (
        -1,
        ErrorCode.NONE,
    )


def test_offset_commit_v1_commits_to_the_coordinator_and_fetch_v1_reads_it(client: WireClient) -> None:
    """sarama's offset manager commits with v1 (generation -1, no member: a simple commit) and
    reads back with OffsetFetch v1."""
    r = client.call(
        OFFSET_COMMIT,
        1,
        group_id="sarama-group",
        generation_id_or_member_epoch=-1,
        member_id="",
        topics=[
            {
                "name": TOPIC,
                "partitions": [
                    {
                        "partition_index": 0,
                        "committed_offset": 2,
                        "commit_timestamp": -1,
                        "committed_metadata": "m",
                    }
                ],
            }
        ],
    )
    assert r.topics[0].partitions[0].error_code == ErrorCode.NONE
    r = client.call(
        OFFSET_FETCH, 1, group_id="sarama-group", topics=[{"name": TOPIC, "partition_indexes": [0]}]
    )
    p = r.topics[0].partitions[0]
    assert (p.committed_offset, p.metadata, p.error_code) == (2, "m", ErrorCode.NONE)
    # a member the (empty) group does not have is refused, as at v2+ (ClassicGroup.validateOffsetCommit)
    r = client.call(
        OFFSET_COMMIT,
        1,
        group_id="sarama-group",
        generation_id_or_member_epoch=3,
        member_id="m-1",
        topics=[
            {
                "name": TOPIC,
                "partitions": [{"partition_index": 0, "committed_offset": 2, "committed_metadata": ""}],
            }
        ],
    )
    assert r.topics[0].partitions[0].error_code == ErrorCode.UNKNOWN_MEMBER_ID


def _topic(name: str) -> dict[str, object]:
    return {"name": name, "num_partitions": 2, "replication_factor": 1, "assignments": [], "configs": []}


def test_create_topics_v0_and_v1_and_delete_topics_v0(client: WireClient) -> None:
    r = client.call(CREATE_TOPICS, 0, topics=[_topic("ov-created-v0"), _topic(TOPIC)], timeout=5000)
    assert [(t.name, t.error_code) for t in r.topics] == [
        ("ov-created-v0", ErrorCode.NONE),
        (TOPIC, ErrorCode.TOPIC_ALREADY_EXISTS),
    ]
    r = client.call(CREATE_TOPICS, 1, topics=[_topic("ov-validated-v1")], timeout=5000, validate_only=True)
    assert [(t.name, t.error_code, t.error_message) for t in r.topics] == [
        ("ov-validated-v1", ErrorCode.NONE, None)
    ]
    r = client.call(CREATE_TOPICS, 1, topics=[{**_topic("ov-bad-v1"), "num_partitions": 0}], timeout=5000)
    assert r.topics[0].error_code == ErrorCode.INVALID_PARTITIONS and r.topics[0].error_message
    meta = client.call(METADATA, 1, topics=None)
    names = {t.name for t in meta.topics}
    assert "ov-created-v0" in names and "ov-validated-v1" not in names
    r = client.call(DELETE_TOPICS, 0, topic_names=["ov-created-v0", "ov-missing"], timeout=5000)
    assert [(t.name, t.error_code) for t in r.responses] == [
        ("ov-created-v0", ErrorCode.NONE),
        ("ov-missing", ErrorCode.UNKNOWN_TOPIC_OR_PARTITION),
    ]


def test_describe_configs_v0_says_is_default_instead_of_a_source(client: WireClient) -> None:
    client.call(
        CREATE_TOPICS,
        0,
        topics=[{**_topic("ov-compacted"), "configs": [{"name": "cleanup.policy", "value": "compact"}]}],
        timeout=5000,
    )
    r = client.call(
        DESCRIBE_CONFIGS,
        0,
        resources=[
            {
                "resource_type": 2,
                "resource_name": "ov-compacted",
                "configuration_keys": ["cleanup.policy", "retention.ms"],
            },
            {"resource_type": 2, "resource_name": "ov-none", "configuration_keys": None},
        ],
    )
    found, missing = r.results
    assert (found.error_code, found.resource_name) == (ErrorCode.NONE, "ov-compacted")
    assert sorted((c.name, c.value, c.is_default, c.read_only) for c in found.configs) == [
        ("cleanup.policy", "compact", False, False),
        ("retention.ms", "604800000", True, False),
    ]
    assert (missing.error_code, missing.configs) == (ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, ())


def test_delete_topics_before_v3_with_deletion_disabled_is_invalid_request(tmp_path: Path) -> None:
    """``ControllerApis.deleteTopics``: InvalidRequestException below v3, TOPIC_DELETION_DISABLED from v3."""

    async def scenario(env: Env) -> None:
        env.broker.logs.create_topic("kept", 1, {})
        c = await env.connect()
        for version, code in (
            (0, ErrorCode.INVALID_REQUEST),
            (2, ErrorCode.INVALID_REQUEST),
            (3, ErrorCode.TOPIC_DELETION_DISABLED),
        ):
            r = await c.call(
                DELETE_TOPICS, version, topic_names=("kept",), timeout=datetime.timedelta(seconds=5)
            )
            assert [(t.name, t.error_code) for t in r.responses] == [("kept", code)]
        c.close()

    run_broker(tmp_path, scenario, settings=("delete.topic.enable=false",))
