"""Schemas of the request versions Kafka 3.9 still serves and kio 0.6.5 no longer has.

kio is generated from Kafka 4.x's message specs, which dropped these versions (KIP-896):
Produce v0-v2, Fetch v0-v3, ListOffsets v0, OffsetCommit v0-v1, OffsetFetch v0, CreateTopics
v0-v1, DeleteTopics v0 and DescribeConfigs v0. Kafka 3.9 serves all of them (its
``clients/src/main/resources/common/message/*.json``: ``"validVersions": "0-..."``), and tools
built on old clients send them: Burrow 1.2.1 (sarama 1.22) asks for ListOffsets v0 whatever
Kafka version it is told, and Fetch v0-v3 and Metadata v0/v1 for an old ``kafka-version``.

The schemas are written here once, in kio's own form (frozen dataclasses whose fields carry
``kafka_type`` metadata, in wire order), so kio's native reader and writer encode them like
every other version and ``protocol.guard`` checks their frames; handlers build responses with
``protocol.entities.make`` as for any version. Field names are Kafka's (snake_case, as kio
spells them); a field that exists only in these versions is named as Kafka's spec names it
(``max_num_offsets``, ``old_style_offsets``, ``commit_timestamp``, ``is_default``).
Every non-flexible version before v3 of these APIs uses request header v1 and response header
v0, as the registry derives from ``__flexible__``.

:data:`OLD_VERSIONS` maps ``(api_key, version)`` to ``(request class, response class)``;
``tests/protocol/test_old_version_schemas.py`` checks the bytes against Kafka's specs.
The module has no ``from __future__ import annotations``: kio reads the field types as objects.
"""

import datetime
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, TypeVar

from kio.schema.errors import ErrorCode
from kio.schema.request_header.v1.header import RequestHeader
from kio.schema.response_header.v0.header import ResponseHeader
from kio.schema.types import BrokerId, GroupId, TopicName
from kio.static.constants import EntityType
from kio.static.primitive import Records, TZAware, i8, i16, i32, i32Timedelta, i64

_T = TypeVar("_T")

_NO_THROTTLE = i32Timedelta.parse(datetime.timedelta(0))


def _entity(api_key: int, version: int, kind: EntityType) -> Callable[[type[_T]], type[_T]]:
    """Give a schema class the class attributes kio's generated classes carry."""

    def mark(cls: type[_T]) -> type[_T]:
        attrs: dict[str, Any] = {
            "__type__": kind,
            "__version__": i16(version),
            "__flexible__": False,
            "__api_key__": i16(api_key),
            "__header_schema__": ResponseHeader if kind is EntityType.response else RequestHeader,
        }
        for name, value in attrs.items():
            setattr(cls, name, value)
        return cls

    return mark


_INT8: dict[str, Any] = {"kafka_type": "int8"}
_INT16: dict[str, Any] = {"kafka_type": "int16"}
_INT32: dict[str, Any] = {"kafka_type": "int32"}
_INT64: dict[str, Any] = {"kafka_type": "int64"}
_BOOL: dict[str, Any] = {"kafka_type": "bool"}
_STRING: dict[str, Any] = {"kafka_type": "string"}
_ERROR: dict[str, Any] = {"kafka_type": "error_code"}
_RECORDS: dict[str, Any] = {"kafka_type": "records"}
_MS32: dict[str, Any] = {"kafka_type": "timedelta_i32"}
_TIME64: dict[str, Any] = {"kafka_type": "datetime_i64"}

_REQ = EntityType.request
_RESP = EntityType.response
_NESTED = EntityType.nested

# --------------------------------------------------------------------------------------------
# Produce (key 0) v0-v2: no transactional id; v1 adds throttle time, v2 the log append time.
# The records are message sets of magic 0 or 1 (or, rarely, v2 batches); see
# ``storage.message_format``.
# --------------------------------------------------------------------------------------------


@_entity(0, 0, _NESTED)
@dataclass(frozen=True, slots=True, kw_only=True)
class PartitionProduceDataV0:
    index: i32 = field(metadata=_INT32)
    records: Records | None = field(metadata=_RECORDS)


@_entity(0, 0, _NESTED)
@dataclass(frozen=True, slots=True, kw_only=True)
class TopicProduceDataV0:
    name: TopicName = field(metadata=_STRING)
    partition_data: tuple[PartitionProduceDataV0, ...]


@_entity(0, 0, _REQ)
@dataclass(frozen=True, slots=True, kw_only=True)
class ProduceRequestV0:
    acks: i16 = field(metadata=_INT16)
    timeout: i32Timedelta = field(metadata=_MS32)
    topic_data: tuple[TopicProduceDataV0, ...]


@_entity(0, 1, _REQ)
@dataclass(frozen=True, slots=True, kw_only=True)
class ProduceRequestV1:
    acks: i16 = field(metadata=_INT16)
    timeout: i32Timedelta = field(metadata=_MS32)
    topic_data: tuple[TopicProduceDataV0, ...]


@_entity(0, 2, _REQ)
@dataclass(frozen=True, slots=True, kw_only=True)
class ProduceRequestV2:
    acks: i16 = field(metadata=_INT16)
    timeout: i32Timedelta = field(metadata=_MS32)
    topic_data: tuple[TopicProduceDataV0, ...]


@_entity(0, 0, _NESTED)
@dataclass(frozen=True, slots=True, kw_only=True)
class PartitionProduceResponseV0:
    index: i32 = field(metadata=_INT32)
    error_code: ErrorCode = field(metadata=_ERROR)
    base_offset: i64 = field(metadata=_INT64)


@_entity(0, 0, _NESTED)
@dataclass(frozen=True, slots=True, kw_only=True)
class TopicProduceResponseV0:
    name: TopicName = field(metadata=_STRING)
    partition_responses: tuple[PartitionProduceResponseV0, ...]


@_entity(0, 0, _RESP)
@dataclass(frozen=True, slots=True, kw_only=True)
class ProduceResponseV0:
    responses: tuple[TopicProduceResponseV0, ...]


@_entity(0, 1, _RESP)
@dataclass(frozen=True, slots=True, kw_only=True)
class ProduceResponseV1:
    responses: tuple[TopicProduceResponseV0, ...]
    throttle_time: i32Timedelta = field(metadata=_MS32, default=_NO_THROTTLE)


@_entity(0, 2, _NESTED)
@dataclass(frozen=True, slots=True, kw_only=True)
class PartitionProduceResponseV2:
    index: i32 = field(metadata=_INT32)
    error_code: ErrorCode = field(metadata=_ERROR)
    base_offset: i64 = field(metadata=_INT64)
    log_append_time: TZAware | None = field(metadata=_TIME64, default=None)


@_entity(0, 2, _NESTED)
@dataclass(frozen=True, slots=True, kw_only=True)
class TopicProduceResponseV2:
    name: TopicName = field(metadata=_STRING)
    partition_responses: tuple[PartitionProduceResponseV2, ...]


@_entity(0, 2, _RESP)
@dataclass(frozen=True, slots=True, kw_only=True)
class ProduceResponseV2:
    responses: tuple[TopicProduceResponseV2, ...]
    throttle_time: i32Timedelta = field(metadata=_MS32, default=_NO_THROTTLE)


# --------------------------------------------------------------------------------------------
# Fetch (key 1) v0-v3: v3 adds the response-wide max_bytes. The response is encoded by
# ``protocol.fetch_response`` (the record bytes stay out of Python objects); these response
# classes are what kio would write, for the registry and for tests that decode answers.
# --------------------------------------------------------------------------------------------


@_entity(1, 0, _NESTED)
@dataclass(frozen=True, slots=True, kw_only=True)
class FetchPartitionV0:
    partition: i32 = field(metadata=_INT32)
    fetch_offset: i64 = field(metadata=_INT64)
    partition_max_bytes: i32 = field(metadata=_INT32)


@_entity(1, 0, _NESTED)
@dataclass(frozen=True, slots=True, kw_only=True)
class FetchTopicV0:
    topic: TopicName = field(metadata=_STRING)
    partitions: tuple[FetchPartitionV0, ...]


@_entity(1, 0, _REQ)
@dataclass(frozen=True, slots=True, kw_only=True)
class FetchRequestV0:
    replica_id: BrokerId = field(metadata=_INT32, default=BrokerId(-1))
    max_wait: i32Timedelta = field(metadata=_MS32)
    min_bytes: i32 = field(metadata=_INT32)
    topics: tuple[FetchTopicV0, ...]


@_entity(1, 1, _REQ)
@dataclass(frozen=True, slots=True, kw_only=True)
class FetchRequestV1:
    replica_id: BrokerId = field(metadata=_INT32, default=BrokerId(-1))
    max_wait: i32Timedelta = field(metadata=_MS32)
    min_bytes: i32 = field(metadata=_INT32)
    topics: tuple[FetchTopicV0, ...]


@_entity(1, 2, _REQ)
@dataclass(frozen=True, slots=True, kw_only=True)
class FetchRequestV2:
    replica_id: BrokerId = field(metadata=_INT32, default=BrokerId(-1))
    max_wait: i32Timedelta = field(metadata=_MS32)
    min_bytes: i32 = field(metadata=_INT32)
    topics: tuple[FetchTopicV0, ...]


@_entity(1, 3, _REQ)
@dataclass(frozen=True, slots=True, kw_only=True)
class FetchRequestV3:
    replica_id: BrokerId = field(metadata=_INT32, default=BrokerId(-1))
    max_wait: i32Timedelta = field(metadata=_MS32)
    min_bytes: i32 = field(metadata=_INT32)
    max_bytes: i32 = field(metadata=_INT32, default=i32(2147483647))
    topics: tuple[FetchTopicV0, ...]


@_entity(1, 0, _NESTED)
@dataclass(frozen=True, slots=True, kw_only=True)
class FetchPartitionDataV0:
    partition_index: i32 = field(metadata=_INT32)
    error_code: ErrorCode = field(metadata=_ERROR)
    high_watermark: i64 = field(metadata=_INT64)
    records: Records | None = field(metadata=_RECORDS)


@_entity(1, 0, _NESTED)
@dataclass(frozen=True, slots=True, kw_only=True)
class FetchableTopicResponseV0:
    topic: TopicName = field(metadata=_STRING)
    partitions: tuple[FetchPartitionDataV0, ...]


@_entity(1, 0, _RESP)
@dataclass(frozen=True, slots=True, kw_only=True)
class FetchResponseV0:
    responses: tuple[FetchableTopicResponseV0, ...]


@_entity(1, 1, _RESP)
@dataclass(frozen=True, slots=True, kw_only=True)
class FetchResponseV1:
    throttle_time: i32Timedelta = field(metadata=_MS32)
    responses: tuple[FetchableTopicResponseV0, ...]


@_entity(1, 2, _RESP)
@dataclass(frozen=True, slots=True, kw_only=True)
class FetchResponseV2:
    throttle_time: i32Timedelta = field(metadata=_MS32)
    responses: tuple[FetchableTopicResponseV0, ...]


@_entity(1, 3, _RESP)
@dataclass(frozen=True, slots=True, kw_only=True)
class FetchResponseV3:
    throttle_time: i32Timedelta = field(metadata=_MS32)
    responses: tuple[FetchableTopicResponseV0, ...]


# --------------------------------------------------------------------------------------------
# ListOffsets (key 2) v0: MaxNumOffsets in, an array of offsets (OldStyleOffsets) out.
# --------------------------------------------------------------------------------------------


@_entity(2, 0, _NESTED)
@dataclass(frozen=True, slots=True, kw_only=True)
class ListOffsetsPartitionV0:
    partition_index: i32 = field(metadata=_INT32)
    timestamp: i64 = field(metadata=_INT64)
    max_num_offsets: i32 = field(metadata=_INT32, default=i32(1))


@_entity(2, 0, _NESTED)
@dataclass(frozen=True, slots=True, kw_only=True)
class ListOffsetsTopicV0:
    name: TopicName = field(metadata=_STRING)
    partitions: tuple[ListOffsetsPartitionV0, ...]


@_entity(2, 0, _REQ)
@dataclass(frozen=True, slots=True, kw_only=True)
class ListOffsetsRequestV0:
    replica_id: BrokerId = field(metadata=_INT32)
    topics: tuple[ListOffsetsTopicV0, ...]


@_entity(2, 0, _NESTED)
@dataclass(frozen=True, slots=True, kw_only=True)
class ListOffsetsPartitionResponseV0:
    partition_index: i32 = field(metadata=_INT32)
    error_code: ErrorCode = field(metadata=_ERROR)
    old_style_offsets: tuple[i64, ...] = field(metadata=_INT64, default=())


@_entity(2, 0, _NESTED)
@dataclass(frozen=True, slots=True, kw_only=True)
class ListOffsetsTopicResponseV0:
    name: TopicName = field(metadata=_STRING)
    partitions: tuple[ListOffsetsPartitionResponseV0, ...]


@_entity(2, 0, _RESP)
@dataclass(frozen=True, slots=True, kw_only=True)
class ListOffsetsResponseV0:
    topics: tuple[ListOffsetsTopicResponseV0, ...]


# --------------------------------------------------------------------------------------------
# OffsetCommit (key 8) v0-v1: v0 has no generation or member; v1 adds them and a commit
# timestamp per partition (dropped again in v2).
# --------------------------------------------------------------------------------------------


@_entity(8, 0, _NESTED)
@dataclass(frozen=True, slots=True, kw_only=True)
class OffsetCommitRequestPartitionV0:
    partition_index: i32 = field(metadata=_INT32)
    committed_offset: i64 = field(metadata=_INT64)
    committed_metadata: str | None = field(metadata=_STRING)


@_entity(8, 0, _NESTED)
@dataclass(frozen=True, slots=True, kw_only=True)
class OffsetCommitRequestTopicV0:
    name: TopicName = field(metadata=_STRING)
    partitions: tuple[OffsetCommitRequestPartitionV0, ...]


@_entity(8, 0, _REQ)
@dataclass(frozen=True, slots=True, kw_only=True)
class OffsetCommitRequestV0:
    group_id: GroupId = field(metadata=_STRING)
    topics: tuple[OffsetCommitRequestTopicV0, ...]


@_entity(8, 1, _NESTED)
@dataclass(frozen=True, slots=True, kw_only=True)
class OffsetCommitRequestPartitionV1:
    partition_index: i32 = field(metadata=_INT32)
    committed_offset: i64 = field(metadata=_INT64)
    commit_timestamp: i64 = field(metadata=_INT64, default=i64(-1))
    committed_metadata: str | None = field(metadata=_STRING)


@_entity(8, 1, _NESTED)
@dataclass(frozen=True, slots=True, kw_only=True)
class OffsetCommitRequestTopicV1:
    name: TopicName = field(metadata=_STRING)
    partitions: tuple[OffsetCommitRequestPartitionV1, ...]


@_entity(8, 1, _REQ)
@dataclass(frozen=True, slots=True, kw_only=True)
class OffsetCommitRequestV1:
    group_id: GroupId = field(metadata=_STRING)
    generation_id_or_member_epoch: i32 = field(metadata=_INT32, default=i32(-1))
    member_id: str = field(metadata=_STRING)
    topics: tuple[OffsetCommitRequestTopicV1, ...]


@_entity(8, 0, _NESTED)
@dataclass(frozen=True, slots=True, kw_only=True)
class OffsetCommitResponsePartitionV0:
    partition_index: i32 = field(metadata=_INT32)
    error_code: ErrorCode = field(metadata=_ERROR)


@_entity(8, 0, _NESTED)
@dataclass(frozen=True, slots=True, kw_only=True)
class OffsetCommitResponseTopicV0:
    name: TopicName = field(metadata=_STRING)
    partitions: tuple[OffsetCommitResponsePartitionV0, ...]


@_entity(8, 0, _RESP)
@dataclass(frozen=True, slots=True, kw_only=True)
class OffsetCommitResponseV0:
    topics: tuple[OffsetCommitResponseTopicV0, ...]


@_entity(8, 1, _RESP)
@dataclass(frozen=True, slots=True, kw_only=True)
class OffsetCommitResponseV1:
    topics: tuple[OffsetCommitResponseTopicV0, ...]


# --------------------------------------------------------------------------------------------
# OffsetFetch (key 9) v0: the shape of v1 (in Kafka, v0 read ZooKeeper's offsets).
# --------------------------------------------------------------------------------------------


@_entity(9, 0, _NESTED)
@dataclass(frozen=True, slots=True, kw_only=True)
class OffsetFetchRequestTopicV0:
    name: TopicName = field(metadata=_STRING)
    partition_indexes: tuple[i32, ...] = field(metadata=_INT32, default=())


@_entity(9, 0, _REQ)
@dataclass(frozen=True, slots=True, kw_only=True)
class OffsetFetchRequestV0:
    group_id: GroupId = field(metadata=_STRING)
    topics: tuple[OffsetFetchRequestTopicV0, ...]


@_entity(9, 0, _NESTED)
@dataclass(frozen=True, slots=True, kw_only=True)
class OffsetFetchResponsePartitionV0:
    partition_index: i32 = field(metadata=_INT32)
    committed_offset: i64 = field(metadata=_INT64)
    metadata: str | None = field(metadata=_STRING)
    error_code: ErrorCode = field(metadata=_ERROR)


@_entity(9, 0, _NESTED)
@dataclass(frozen=True, slots=True, kw_only=True)
class OffsetFetchResponseTopicV0:
    name: TopicName = field(metadata=_STRING)
    partitions: tuple[OffsetFetchResponsePartitionV0, ...]


@_entity(9, 0, _RESP)
@dataclass(frozen=True, slots=True, kw_only=True)
class OffsetFetchResponseV0:
    topics: tuple[OffsetFetchResponseTopicV0, ...]


# --------------------------------------------------------------------------------------------
# CreateTopics (key 19) v0-v1: v1 adds validate_only and the error message; no throttle time.
# --------------------------------------------------------------------------------------------


@_entity(19, 0, _NESTED)
@dataclass(frozen=True, slots=True, kw_only=True)
class CreatableReplicaAssignmentV0:
    partition_index: i32 = field(metadata=_INT32)
    broker_ids: tuple[BrokerId, ...] = field(metadata=_INT32, default=())


@_entity(19, 0, _NESTED)
@dataclass(frozen=True, slots=True, kw_only=True)
class CreatableTopicConfigV0:
    name: str = field(metadata=_STRING)
    value: str | None = field(metadata=_STRING)


@_entity(19, 0, _NESTED)
@dataclass(frozen=True, slots=True, kw_only=True)
class CreatableTopicV0:
    name: TopicName = field(metadata=_STRING)
    num_partitions: i32 = field(metadata=_INT32)
    replication_factor: i16 = field(metadata=_INT16)
    assignments: tuple[CreatableReplicaAssignmentV0, ...]
    configs: tuple[CreatableTopicConfigV0, ...]


@_entity(19, 0, _REQ)
@dataclass(frozen=True, slots=True, kw_only=True)
class CreateTopicsRequestV0:
    topics: tuple[CreatableTopicV0, ...]
    timeout: i32Timedelta = field(metadata=_MS32)


@_entity(19, 1, _REQ)
@dataclass(frozen=True, slots=True, kw_only=True)
class CreateTopicsRequestV1:
    topics: tuple[CreatableTopicV0, ...]
    timeout: i32Timedelta = field(metadata=_MS32)
    validate_only: bool = field(metadata=_BOOL, default=False)


@_entity(19, 0, _NESTED)
@dataclass(frozen=True, slots=True, kw_only=True)
class CreatableTopicResultV0:
    name: TopicName = field(metadata=_STRING)
    error_code: ErrorCode = field(metadata=_ERROR)


@_entity(19, 0, _RESP)
@dataclass(frozen=True, slots=True, kw_only=True)
class CreateTopicsResponseV0:
    topics: tuple[CreatableTopicResultV0, ...]


@_entity(19, 1, _NESTED)
@dataclass(frozen=True, slots=True, kw_only=True)
class CreatableTopicResultV1:
    name: TopicName = field(metadata=_STRING)
    error_code: ErrorCode = field(metadata=_ERROR)
    error_message: str | None = field(metadata=_STRING)


@_entity(19, 1, _RESP)
@dataclass(frozen=True, slots=True, kw_only=True)
class CreateTopicsResponseV1:
    topics: tuple[CreatableTopicResultV1, ...]


# --------------------------------------------------------------------------------------------
# DeleteTopics (key 20) v0: no throttle time in the response.
# --------------------------------------------------------------------------------------------


@_entity(20, 0, _REQ)
@dataclass(frozen=True, slots=True, kw_only=True)
class DeleteTopicsRequestV0:
    topic_names: tuple[TopicName, ...] = field(metadata=_STRING, default=())
    timeout: i32Timedelta = field(metadata=_MS32)


@_entity(20, 0, _NESTED)
@dataclass(frozen=True, slots=True, kw_only=True)
class DeletableTopicResultV0:
    name: TopicName = field(metadata=_STRING)
    error_code: ErrorCode = field(metadata=_ERROR)


@_entity(20, 0, _RESP)
@dataclass(frozen=True, slots=True, kw_only=True)
class DeleteTopicsResponseV0:
    responses: tuple[DeletableTopicResultV0, ...]


# --------------------------------------------------------------------------------------------
# DescribeConfigs (key 32) v0: no include_synonyms; each config says is_default instead of
# its source, and has no synonyms.
# --------------------------------------------------------------------------------------------


@_entity(32, 0, _NESTED)
@dataclass(frozen=True, slots=True, kw_only=True)
class DescribeConfigsResourceV0:
    resource_type: i8 = field(metadata=_INT8)
    resource_name: str = field(metadata=_STRING)
    configuration_keys: tuple[str, ...] | None = field(metadata=_STRING, default=())


@_entity(32, 0, _REQ)
@dataclass(frozen=True, slots=True, kw_only=True)
class DescribeConfigsRequestV0:
    resources: tuple[DescribeConfigsResourceV0, ...]


@_entity(32, 0, _NESTED)
@dataclass(frozen=True, slots=True, kw_only=True)
class DescribeConfigsResourceResultV0:
    name: str = field(metadata=_STRING)
    value: str | None = field(metadata=_STRING)
    read_only: bool = field(metadata=_BOOL)
    is_default: bool = field(metadata=_BOOL)
    is_sensitive: bool = field(metadata=_BOOL)


@_entity(32, 0, _NESTED)
@dataclass(frozen=True, slots=True, kw_only=True)
class DescribeConfigsResultV0:
    error_code: ErrorCode = field(metadata=_ERROR)
    error_message: str | None = field(metadata=_STRING)
    resource_type: i8 = field(metadata=_INT8)
    resource_name: str = field(metadata=_STRING)
    configs: tuple[DescribeConfigsResourceResultV0, ...]


@_entity(32, 0, _RESP)
@dataclass(frozen=True, slots=True, kw_only=True)
class DescribeConfigsResponseV0:
    throttle_time: i32Timedelta = field(metadata=_MS32)
    results: tuple[DescribeConfigsResultV0, ...]


#: ``(api_key, version) -> (request class, response class)`` of every version kept here.
OLD_VERSIONS: dict[tuple[int, int], tuple[type[Any], type[Any]]] = {
    (0, 0): (ProduceRequestV0, ProduceResponseV0),
    (0, 1): (ProduceRequestV1, ProduceResponseV1),
    (0, 2): (ProduceRequestV2, ProduceResponseV2),
    (1, 0): (FetchRequestV0, FetchResponseV0),
    (1, 1): (FetchRequestV1, FetchResponseV1),
    (1, 2): (FetchRequestV2, FetchResponseV2),
    (1, 3): (FetchRequestV3, FetchResponseV3),
    (2, 0): (ListOffsetsRequestV0, ListOffsetsResponseV0),
    (8, 0): (OffsetCommitRequestV0, OffsetCommitResponseV0),
    (8, 1): (OffsetCommitRequestV1, OffsetCommitResponseV1),
    (9, 0): (OffsetFetchRequestV0, OffsetFetchResponseV0),
    (19, 0): (CreateTopicsRequestV0, CreateTopicsResponseV0),
    (19, 1): (CreateTopicsRequestV1, CreateTopicsResponseV1),
    (20, 0): (DeleteTopicsRequestV0, DeleteTopicsResponseV0),
    (32, 0): (DescribeConfigsRequestV0, DescribeConfigsResponseV0),
}
