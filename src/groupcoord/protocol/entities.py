"""Helpers to build kio entities of whatever version a request arrived in.

Every API version is its own set of kio dataclasses. Handlers describe a response once with
the union of fields they know, and :func:`make` keeps the ones that exist in the class at
hand; nested classes come from the parent's type hints (:func:`child`), so a handler never
names a versioned module.
"""

from __future__ import annotations

import dataclasses
import datetime
import types
import typing
from collections.abc import Callable
from typing import Any

from kio.schema.errors import ErrorCode as KioErrorCode

from groupcoord.errors import ErrorCode
from groupcoord.protocol.group_messages import OffsetCommitRequest

_ZERO = datetime.timedelta(0)


_FIELD_NAMES: dict[type[Any], frozenset[str]] = {}
_CHILD_TYPES: dict[type[Any], dict[str, type[Any]]] = {}


def _field_names(cls: type[Any]) -> frozenset[str]:
    names = _FIELD_NAMES.get(cls)
    if names is None:
        names = _FIELD_NAMES[cls] = frozenset(f.name for f in dataclasses.fields(cls))
    return names


def _child_types(cls: type[Any]) -> dict[str, type[Any]]:
    cached = _CHILD_TYPES.get(cls)
    if cached is not None:
        return cached
    hints = typing.get_type_hints(cls)
    out: dict[str, type[Any]] = {}
    for f in dataclasses.fields(cls):
        found = _find_dataclass(hints[f.name])
        if found is not None:
            out[f.name] = found
    _CHILD_TYPES[cls] = out
    return out


def _find_dataclass(tp: Any) -> type[Any] | None:
    if isinstance(tp, type) and dataclasses.is_dataclass(tp):
        return tp
    if typing.get_origin(tp) in (tuple, typing.Union, types.UnionType):
        for arg in typing.get_args(tp):
            found = _find_dataclass(arg)
            if found is not None:
                return found
    return None


def has_field(cls: type[Any], name: str) -> bool:
    return name in _field_names(cls)


def make(cls: type[Any], **values: Any) -> Any:
    """Instantiate ``cls`` with those of ``values`` that it has as fields."""
    names = _field_names(cls)
    return cls(**{k: v for k, v in values.items() if k in names})


def child(cls: type[Any], field_name: str) -> type[Any]:
    """The dataclass type held by ``cls.field_name`` (an entity, a tuple of them, or optional)."""
    try:
        return _child_types(cls)[field_name]
    except KeyError:
        raise KeyError(f"{cls.__qualname__}.{field_name} holds no entity type") from None


def err(code: ErrorCode | int) -> KioErrorCode:
    return KioErrorCode(int(code))


def offset_commit_entities(
    resp_t: type[Any],
    request: Any,
    code: Callable[[str, int], ErrorCode],
    *,
    by_partition: bool = False,
    **top: Any,
) -> Any:
    """An OffsetCommit response of class ``resp_t`` answering every partition of ``request`` with
    ``code(topic, partition)``; ``top`` holds the response's own fields (``make`` drops those the
    version lacks). ``request`` is kio's entity (OffsetCommit v0-1, TxnOffsetCommit) or the
    coordinator's :class:`OffsetCommitRequest` that ``protocol/hot.py`` reads v2-9 into.

    Kafka lists a topic sent with no partitions in one answer and not in the other:
    ``by_partition`` answers as ``KafkaApis`` does partition by partition through
    ``OffsetCommitResponse.Builder.addPartitions``, which makes a topic's entry only with its
    first partition (no partitions, no topic); without it, as ``OffsetCommitRequest.getErrorResponse``
    (one error for the whole request: every topic of the request, partitions or none)."""
    topic_t = child(resp_t, "topics")
    part_t = child(topic_t, "partitions")
    read = type(request) is OffsetCommitRequest
    return make(
        resp_t,
        **top,
        topics=tuple(
            make(
                topic_t,
                name=t.name,
                partitions=tuple(
                    make(part_t, partition_index=index, error_code=err(code(t.name, index)))
                    for index in (
                        [p.partition for p in t.partitions]
                        if read
                        else [int(p.partition_index) for p in t.partitions]
                    )
                ),
            )
            for t in request.topics
            if t.partitions or not by_partition
        ),
    )


def ms(delta: datetime.timedelta | int | None) -> int:
    """A kio timedelta field (or a plain int) as whole milliseconds."""
    if delta is None:
        return 0
    if isinstance(delta, datetime.timedelta):
        return delta // datetime.timedelta(milliseconds=1)
    return int(delta)


NO_THROTTLE = _ZERO
