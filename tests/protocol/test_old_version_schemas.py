"""The hand-written schemas of ``protocol.old_versions`` against Kafka 3.9's message specs.

Each case writes the bytes the spec (``clients/src/main/resources/common/message/*.json`` at
3.9: field order, types and the versions each field exists in) gives for one message, packed by
hand with ``struct``, and checks that the registry's codec writes exactly those bytes for the
entity and reads them back to it (requests) or writes them (responses).
"""

from __future__ import annotations

import datetime
import io
import struct
from typing import Any

import pytest
from kio.schema.errors import ErrorCode as E
from kio.serial import entity_reader, entity_writer

from groupcoord.protocol.codec import build_request
from groupcoord.protocol.old_versions import OLD_VERSIONS
from groupcoord.protocol.registry import load_messages


def s(text: str | None) -> bytes:
    if text is None:
        return struct.pack(">h", -1)
    raw = text.encode()
    return struct.pack(">h", len(raw)) + raw


def b(raw: bytes | None) -> bytes:
    return struct.pack(">i", -1) if raw is None else struct.pack(">i", len(raw)) + raw


def i8(v: int) -> bytes:
    return struct.pack(">b", v)


def i16(v: int) -> bytes:
    return struct.pack(">h", v)


def i32(v: int) -> bytes:
    return struct.pack(">i", v)


def i64(v: int) -> bytes:
    return struct.pack(">q", v)


MS = datetime.timedelta(milliseconds=1)

# (api key, version, "request"/"response", fields, spec bytes)
CASES: list[tuple[int, int, str, dict[str, Any], bytes]] = [
    # ListOffsetsRequest v0: ReplicaId, Topics[Name, Partitions[PartitionIndex, Timestamp, MaxNumOffsets]]
    (
        2,
        0,
        "request",
        {
            "replica_id": -1,
            "topics": [
                {"name": "t", "partitions": [{"partition_index": 3, "timestamp": -1, "max_num_offsets": 1}]}
            ],
        },
        i32(-1) + i32(1) + s("t") + i32(1) + i32(3) + i64(-1) + i32(1),
    ),
    # ListOffsetsResponse v0: Topics[Name, Partitions[PartitionIndex, ErrorCode, OldStyleOffsets[int64]]]
    (
        2,
        0,
        "response",
        {
            "topics": [
                {
                    "name": "t",
                    "partitions": [{"partition_index": 3, "error_code": E(0), "old_style_offsets": [9, 0]}],
                }
            ]
        },
        i32(1) + s("t") + i32(1) + i32(3) + i16(0) + i32(2) + i64(9) + i64(0),
    ),
    # OffsetCommitRequest v0: GroupId, Topics[Name, Partitions[PartitionIndex, CommittedOffset,
    #   CommittedMetadata]]
    (
        8,
        0,
        "request",
        {
            "group_id": "g",
            "topics": [
                {
                    "name": "t",
                    "partitions": [{"partition_index": 1, "committed_offset": 5, "committed_metadata": None}],
                }
            ],
        },
        s("g") + i32(1) + s("t") + i32(1) + i32(1) + i64(5) + s(None),
    ),
    # OffsetCommitRequest v1: + GenerationIdOrMemberEpoch, MemberId; CommitTimestamp per partition
    (
        8,
        1,
        "request",
        {
            "group_id": "g",
            "generation_id_or_member_epoch": 4,
            "member_id": "m",
            "topics": [
                {
                    "name": "t",
                    "partitions": [
                        {
                            "partition_index": 1,
                            "committed_offset": 5,
                            "commit_timestamp": 77,
                            "committed_metadata": "x",
                        }
                    ],
                }
            ],
        },
        s("g") + i32(4) + s("m") + i32(1) + s("t") + i32(1) + i32(1) + i64(5) + i64(77) + s("x"),
    ),
    # OffsetCommitResponse v0/v1: Topics[Name, Partitions[PartitionIndex, ErrorCode]] (no throttle before v3)
    (
        8,
        1,
        "response",
        {"topics": [{"name": "t", "partitions": [{"partition_index": 1, "error_code": E(35)}]}]},
        i32(1) + s("t") + i32(1) + i32(1) + i16(35),
    ),
    # OffsetFetchRequest v0: GroupId, Topics[Name, PartitionIndexes[int32]] (not nullable before v2)
    (
        9,
        0,
        "request",
        {"group_id": "g", "topics": [{"name": "t", "partition_indexes": [0, 2]}]},
        s("g") + i32(1) + s("t") + i32(2) + i32(0) + i32(2),
    ),
    # OffsetFetchResponse v0: Topics[Name, Partitions[PartitionIndex, CommittedOffset, Metadata, ErrorCode]]
    (
        9,
        0,
        "response",
        {
            "topics": [
                {
                    "name": "t",
                    "partitions": [
                        {"partition_index": 0, "committed_offset": -1, "metadata": "", "error_code": E(35)}
                    ],
                }
            ]
        },
        i32(1) + s("t") + i32(1) + i32(0) + i64(-1) + s("") + i16(35),
    ),
    # CreateTopicsRequest v0: Topics[Name, NumPartitions, ReplicationFactor, Assignments[..],
    #   Configs[Name, Value]], TimeoutMs
    (
        19,
        0,
        "request",
        {
            "topics": [
                {
                    "name": "n",
                    "num_partitions": 2,
                    "replication_factor": 1,
                    "assignments": [{"partition_index": 0, "broker_ids": [1]}],
                    "configs": [{"name": "k", "value": None}],
                }
            ],
            "timeout": 5 * MS,
        },
        i32(1)
        + s("n")
        + i32(2)
        + i16(1)
        + i32(1)
        + i32(0)
        + i32(1)
        + i32(1)
        + i32(1)
        + s("k")
        + s(None)
        + i32(5),
    ),
    # CreateTopicsRequest v1: + ValidateOnly
    (
        19,
        1,
        "request",
        {"topics": [], "timeout": 5 * MS, "validate_only": True},
        i32(0) + i32(5) + i8(1),
    ),
    # CreateTopicsResponse v0: Topics[Name, ErrorCode]; v1: + ErrorMessage
    (19, 0, "response", {"topics": [{"name": "n", "error_code": E(36)}]}, i32(1) + s("n") + i16(36)),
    (
        19,
        1,
        "response",
        {"topics": [{"name": "n", "error_code": E(36), "error_message": "e"}]},
        i32(1) + s("n") + i16(36) + s("e"),
    ),
    # DeleteTopicsRequest v0: TopicNames[string], TimeoutMs; response v0: Responses[Name, ErrorCode]
    (20, 0, "request", {"topic_names": ["a", "b"], "timeout": 7 * MS}, i32(2) + s("a") + s("b") + i32(7)),
    (20, 0, "response", {"responses": [{"name": "a", "error_code": E(0)}]}, i32(1) + s("a") + i16(0)),
    # DescribeConfigsRequest v0: Resources[ResourceType, ResourceName, ConfigurationKeys (nullable)]
    (
        32,
        0,
        "request",
        {"resources": [{"resource_type": 2, "resource_name": "t", "configuration_keys": None}]},
        i32(1) + i8(2) + s("t") + i32(-1),
    ),
    # DescribeConfigsResponse v0: ThrottleTimeMs, Results[ErrorCode, ErrorMessage, ResourceType, ResourceName,
    #   Configs[Name, Value, ReadOnly, IsDefault, IsSensitive]]
    (
        32,
        0,
        "response",
        {
            "throttle_time": 0 * MS,
            "results": [
                {
                    "error_code": E(0),
                    "error_message": None,
                    "resource_type": 2,
                    "resource_name": "t",
                    "configs": [
                        {
                            "name": "k",
                            "value": "v",
                            "read_only": False,
                            "is_default": True,
                            "is_sensitive": False,
                        }
                    ],
                }
            ],
        },
        i32(0)
        + i32(1)
        + i16(0)
        + s(None)
        + i8(2)
        + s("t")
        + i32(1)
        + s("k")
        + s("v")
        + i8(0)
        + i8(1)
        + i8(0),
    ),
    # ProduceRequest v0-v2: Acks, TimeoutMs, TopicData[Name, PartitionData[Index, Records]]
    (
        0,
        2,
        "request",
        {
            "acks": -1,
            "timeout": 9 * MS,
            "topic_data": [{"name": "t", "partition_data": [{"index": 0, "records": b"xyz"}]}],
        },
        i16(-1) + i32(9) + i32(1) + s("t") + i32(1) + i32(0) + b(b"xyz"),
    ),
    # ProduceResponse v0: Responses[Name, PartitionResponses[Index, ErrorCode, BaseOffset]]
    (
        0,
        0,
        "response",
        {
            "responses": [
                {"name": "t", "partition_responses": [{"index": 0, "error_code": E(0), "base_offset": 12}]}
            ]
        },
        i32(1) + s("t") + i32(1) + i32(0) + i16(0) + i64(12),
    ),
    # ProduceResponse v1: + ThrottleTimeMs at the end; v2: + LogAppendTimeMs per partition
    (
        0,
        1,
        "response",
        {
            "responses": [
                {"name": "t", "partition_responses": [{"index": 0, "error_code": E(0), "base_offset": 12}]}
            ],
            "throttle_time": 3 * MS,
        },
        i32(1) + s("t") + i32(1) + i32(0) + i16(0) + i64(12) + i32(3),
    ),
    (
        0,
        2,
        "response",
        {
            "responses": [
                {
                    "name": "t",
                    "partition_responses": [
                        {"index": 0, "error_code": E(0), "base_offset": 12, "log_append_time": None}
                    ],
                }
            ],
            "throttle_time": 0 * MS,
        },
        i32(1) + s("t") + i32(1) + i32(0) + i16(0) + i64(12) + i64(-1) + i32(0),
    ),
    # FetchRequest v0: ReplicaId, MaxWaitMs, MinBytes, Topics[Topic, Partitions[Partition, FetchOffset,
    #   PartitionMaxBytes]]
    (
        1,
        0,
        "request",
        {
            "replica_id": -1,
            "max_wait": 100 * MS,
            "min_bytes": 1,
            "topics": [
                {
                    "topic": "t",
                    "partitions": [{"partition": 0, "fetch_offset": 5, "partition_max_bytes": 1024}],
                }
            ],
        },
        i32(-1) + i32(100) + i32(1) + i32(1) + s("t") + i32(1) + i32(0) + i64(5) + i32(1024),
    ),
    # FetchRequest v3: + MaxBytes after MinBytes
    (
        1,
        3,
        "request",
        {"replica_id": -1, "max_wait": 100 * MS, "min_bytes": 1, "max_bytes": 4096, "topics": []},
        i32(-1) + i32(100) + i32(1) + i32(4096) + i32(0),
    ),
    # FetchResponse v0: Responses[Topic, Partitions[PartitionIndex, ErrorCode, HighWatermark, Records]];
    # v1+: ThrottleTimeMs first
    (
        1,
        0,
        "response",
        {
            "responses": [
                {
                    "topic": "t",
                    "partitions": [
                        {"partition_index": 0, "error_code": E(0), "high_watermark": 8, "records": b"ab"}
                    ],
                }
            ]
        },
        i32(1) + s("t") + i32(1) + i32(0) + i16(0) + i64(8) + b(b"ab"),
    ),
    (
        1,
        2,
        "response",
        {
            "throttle_time": 0 * MS,
            "responses": [
                {
                    "topic": "t",
                    "partitions": [
                        {"partition_index": 0, "error_code": E(1), "high_watermark": -1, "records": None}
                    ],
                }
            ],
        },
        i32(0) + i32(1) + s("t") + i32(1) + i32(0) + i16(1) + i64(-1) + b(None),
    ),
]


@pytest.mark.parametrize(
    ("key", "version", "kind", "fields", "spec"), CASES, ids=[f"{c[0]}v{c[1]}-{c[2]}" for c in CASES]
)
def test_old_version_codec_writes_and_reads_the_spec_bytes(
    key: int, version: int, kind: str, fields: dict[str, Any], spec: bytes
) -> None:
    messages = load_messages(key, version)
    cls = messages.request_type if kind == "request" else messages.response_type
    entity = build_request(cls, fields)
    out = io.BytesIO()
    entity_writer(cls)(out, entity)
    assert out.getvalue() == spec
    assert entity_reader(cls)(spec, 0) == (entity, len(spec))
    assert messages.request_header_version == 1 and messages.response_header_version == 0


def test_every_old_version_is_covered_here_and_by_the_registry() -> None:
    # Fetch v1 is v0 with the throttle time that v2 (checked above) has
    assert {(k, v) for k, v, *_ in CASES} | {(1, 1)} == set(OLD_VERSIONS)
    for key, version in OLD_VERSIONS:
        m = load_messages(key, version)
        assert (m.request_type, m.response_type) == OLD_VERSIONS[(key, version)]
        assert m.request_type.__version__ == m.response_type.__version__ == version
        assert m.request_type.__api_key__ == key
