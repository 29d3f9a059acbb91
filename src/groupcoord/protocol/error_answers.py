"""Any API's answer carrying one error code, built from its response schema: Kafka's
``AbstractRequest.getErrorResponse``, which the request layer answers with when it refuses a
request before its handler runs (a fault a test injects, ``testing.faults``; a request other
than SaslAuthenticate in the middle of a SASL exchange, ``server.session``).
"""

from __future__ import annotations

import dataclasses
import datetime
import types
import typing
import uuid
from collections.abc import Mapping
from typing import Any

from groupcoord.errors import ErrorCode
from groupcoord.protocol.entities import err

__all__ = ["error_answer"]

_FETCH = 1

# One generic builder for every API's error answer, driven by the response schema: each list of
# the response is filled from the request's list it answers (one entry per topic, partition,
# group, resource or key the request named, with its name or index), every error code field
# (``error_code``, ``partition_error_code``) carries the error, and every other field is empty
# in Kafka's way (-1 for offsets, epochs, ids, ports and timestamps; "", 0, None, no lists).
# So the code sits wherever that API's clients read it: per partition for Produce, Fetch,
# ListOffsets, OffsetCommit, TxnOffsetCommit, DeleteRecords, AddPartitionsToTxn; per topic for
# Metadata, CreateTopics, DeleteTopics, CreatePartitions; per resource for the config APIs; per
# group for DescribeGroups, DeleteGroups, OffsetFetch v8+ and ConsumerGroupDescribe; per key
# for FindCoordinator v4+; at the top for the rest (and also at the top where a response has
# both, e.g. OffsetFetch v2+, LeaveGroup v3+, OffsetDelete), with one exception: Fetch (below).

#: A response list -> the request lists it answers, where the names differ (tried in order).
_LIST_SOURCES: Mapping[str, tuple[str, ...]] = {
    "responses": ("topic_data", "topics", "topic_names", "resources"),
    "partition_responses": ("partition_data",),
    "partitions": ("partitions", "partition_data", "partition_indexes"),
    # CreateAcls answers its creations; AlterUserScramCredentials its users (upserted, else
    # deleted: one list is mirrored)
    "results": ("resources", "topics", "groups_names", "creations", "upsertions", "deletions"),
    "filter_results": ("filters",),
    "results_by_topic_v3_and_below": ("v3_and_below_topics",),
    "results_by_partition": ("partitions",),
    "transaction_states": ("transactional_ids",),
    "coordinators": ("coordinator_keys",),
    "groups": ("groups", "group_ids"),  # ConsumerGroupDescribe names them group_ids
}
#: Fields that name the item a response entry answers: copied from the request's item (under
#: these names or their synonyms), or set from it where the request lists bare names or indexes.
_IDENTITY: Mapping[str, tuple[str, ...]] = {
    "partition_index": ("partition_index", "partition", "index"),
    "index": ("index", "partition_index", "partition"),
    "partition": ("partition", "partition_index", "index"),
    "name": ("name", "topic"),
    "topic": ("topic", "name"),
    "topic_id": ("topic_id",),
    "group_id": ("group_id",),
    "transactional_id": ("transactional_id",),
    "key": ("key",),
    "resource_type": ("resource_type",),
    "resource_name": ("resource_name",),
    "member_id": ("member_id",),
    "user": ("user", "name"),
    "group_instance_id": ("group_instance_id",),
}
#: Int fields Kafka answers with -1 when there is no value.
_MINUS_ONE = frozenset(
    {
        "base_offset",
        "high_watermark",
        "last_stable_offset",
        "log_start_offset",
        "low_watermark",
        "committed_offset",
        "committed_leader_epoch",
        "offset",
        "timestamp",
        "leader_epoch",
        "leader_id",
        "node_id",
        "port",
        "controller_id",
        "producer_id",
        "producer_epoch",
        "generation_id",
        "preferred_read_replica",
    }
)
#: Fetch errors about the fetch session: Kafka answers them at the top of the response.
_FETCH_SESSION_ERRORS = frozenset(
    {
        ErrorCode.FETCH_SESSION_ID_NOT_FOUND,
        ErrorCode.INVALID_FETCH_SESSION_EPOCH,
        ErrorCode.FETCH_SESSION_TOPIC_ID_ERROR,
    }
)


def error_answer(api_key: int, response_type: type[Any], request: Any, error: ErrorCode) -> Any:
    """The answer of ``response_type`` (the request's version) to ``request`` with ``error``.

    See the comment above for where the code goes. Fetch: a partition's error goes in that
    partition's entry only, the top-level code (v7+) staying NONE, because clients act on a
    top-level Fetch error for the whole request (Kafka's consumer takes it for a failed fetch
    session and drops the answer, ``FetchSessionHandler.handleResponse``; the application never
    sees it); a fetch-session error goes at the top only, with no partitions, as Kafka's
    fetch-session cache answers it.
    """
    answer = _mirror(response_type, request, error)
    if api_key == _FETCH and _has(response_type, "error_code"):
        if error in _FETCH_SESSION_ERRORS:
            answer = dataclasses.replace(answer, responses=())
        else:
            answer = dataclasses.replace(answer, error_code=_code(ErrorCode.NONE))
    return answer


def _has(cls: type[Any], name: str) -> bool:
    return any(f.name == name for f in dataclasses.fields(cls))


def _code(error: ErrorCode) -> Any:
    return err(error)


def _is_error_field(name: str) -> bool:
    return name == "error_code" or (name.endswith("_error_code") and name != "topic_config_error_code")


def _source_list(source: Any, name: str) -> Any:
    if source is None:
        return None
    for candidate in (name, *_LIST_SOURCES.get(name, ())):
        found = getattr(source, candidate, None)
        if isinstance(found, tuple | list):
            return found
    return None


def _mirror(cls: type[Any], source: Any, error: ErrorCode) -> Any:
    """An entity of ``cls`` answering ``source`` (a request, a request's list item, a bare
    name or index, or None) with ``error``."""
    hints = typing.get_type_hints(cls)
    fields = dataclasses.fields(cls)
    values: dict[str, Any] = {}
    scalar = source if isinstance(source, str | int) and not isinstance(source, bool) else None
    scalar_used = False
    for f in fields:
        tp = hints[f.name]
        if _is_error_field(f.name):
            values[f.name] = _code(error)
            continue
        item_t = _list_item(tp)
        if item_t is not None:
            items = _source_list(source, f.name) if scalar is None else None
            if items is not None and dataclasses.is_dataclass(item_t):
                values[f.name] = tuple(_mirror(item_t, s, error) for s in items)  # type: ignore[arg-type]
            elif f.default is dataclasses.MISSING:
                values[f.name] = ()
            continue
        if f.name in _IDENTITY:
            if scalar is not None and not scalar_used and _accepts(tp, scalar):
                values[f.name] = _coerce(tp, scalar)
                scalar_used = True
                continue
            if scalar is None and source is not None:
                found = _first_attr(source, _IDENTITY[f.name])
                if found is not _MISSING:
                    values[f.name] = found
                    continue
        if f.default is not dataclasses.MISSING:
            continue
        values[f.name] = _empty(f.name, tp)
    return cls(**values)


_MISSING = object()


def _first_attr(source: Any, names: tuple[str, ...]) -> Any:
    for name in names:
        value = getattr(source, name, _MISSING)
        if value is not _MISSING and not dataclasses.is_dataclass(value):
            return value
    return _MISSING


def _list_item(tp: Any) -> Any:
    """The item type of a tuple-typed field (also when nullable), else None."""
    for candidate in (tp, *_union_args(tp)):
        if typing.get_origin(candidate) is tuple:
            return typing.get_args(candidate)[0]
    return None


def _union_args(tp: Any) -> tuple[Any, ...]:
    if isinstance(tp, types.UnionType) or typing.get_origin(tp) is typing.Union:
        return typing.get_args(tp)
    return ()


def _is_nullable(tp: Any) -> bool:
    return type(None) in _union_args(tp)


def _accepts(tp: Any, value: str | int) -> bool:
    base = next((a for a in _union_args(tp) if a is not type(None)), tp)
    if isinstance(value, str):
        return isinstance(base, type) and issubclass(base, str)
    return isinstance(base, type) and issubclass(base, int) and not issubclass(base, bool)


def _coerce(tp: Any, value: str | int) -> Any:
    base = next((a for a in _union_args(tp) if a is not type(None)), tp)
    return base(value)


def _empty(name: str, tp: Any) -> Any:
    if name == "records":  # Kafka answers an empty record set, never null (clients reject null)
        base = next(a for a in (*_union_args(tp), tp) if a is not type(None))
        return base(b"")
    if _is_nullable(tp):
        return None
    if dataclasses.is_dataclass(tp):
        return _mirror(tp, None, ErrorCode.NONE)  # type: ignore[arg-type]
    if isinstance(tp, type):
        if issubclass(tp, datetime.timedelta):
            return tp(datetime.timedelta(0))  # type: ignore[arg-type]
        if issubclass(tp, datetime.datetime):
            return tp.fromtimestamp(0, datetime.UTC)
        if issubclass(tp, bool):
            return False
        if issubclass(tp, int):
            return tp(-1 if name in _MINUS_ONE else 0)
        if issubclass(tp, str):
            return tp("")
        if issubclass(tp, bytes):
            return tp(b"")
        if issubclass(tp, uuid.UUID):
            return uuid.UUID(int=0)
    return None
