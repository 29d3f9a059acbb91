"""A structural check of a request frame before kio's native decoder sees it.

kio's native reader sizes its vectors from the array counts it reads, before it knows whether
the bytes are there: a forged compact-array count of 2^32-2 makes it ask for tens of gigabytes,
and the process aborts (Rust's allocation-failure handler cannot be caught). One frame would stop
the whole broker. :func:`check_request` walks the same schema (kio's dataclasses and their
``kafka_type`` metadata) and verifies every length and count against the bytes that remain, so
the native decoder only ever sees counts that the frame can back. Tagged fields of known tags
are checked inside their own size; unknown tags are only bounds-checked (kio skips them).

A null (a count or length of -1, or 0 in the compact forms) is accepted only where the schema
allows it at that version (Kafka's ``nullableVersions``, which kio's types carry as ``| None``).
kio's decoder turns a null array into ``None`` whatever the schema says, and a handler that
iterates it would fail far from the cause; here it is a malformed frame like any other.

It validates structure only (no values), in pure Python, once per request; plans are cached
per class.
"""

from __future__ import annotations

import dataclasses
from types import NoneType, UnionType
from typing import Any, Union, get_args, get_origin

from kio.serial._introspect import (
    EntityField,
    EntityTupleField,
    PrimitiveField,
    PrimitiveTupleField,
    classify_field,
    get_field_tag,
    get_schema_field_type,
    is_optional,
)

from groupcoord.protocol.framing import MalformedRequestError

_FIXED = {
    "int8": 1,
    "uint8": 1,
    "bool": 1,
    "int16": 2,
    "uint16": 2,
    "error_code": 2,
    "int32": 4,
    "uint32": 4,
    "timedelta_i32": 4,
    "int64": 8,
    "uint64": 8,
    "float64": 8,
    "timedelta_i64": 8,
    "datetime_i64": 8,
    "uuid": 16,
}
_VARIABLE = {"string", "bytes", "records"}

# A field step: (kind, payload, is_array, optional, nullable, element_nullable, name)
#   kind "fixed": payload = size; "var": payload = kafka_type; "entity": payload = class
#   optional: a nullable struct, preceded by an int8 marker (-1 for null)
#   nullable: the field itself may be null (an array's count or a string's length of -1)
#   element_nullable: an array's elements may be null
_Step = tuple[str, Any, bool, bool, bool, bool, str]
_Plan = tuple[list[_Step], dict[int, _Step], bool]

_PLANS: dict[type[Any], _Plan] = {}


class _Bad(Exception):
    pass


def _admits_none(annotation: Any) -> bool:
    return get_origin(annotation) in (UnionType, Union) and NoneType in get_args(annotation)


def _nullability(f: dataclasses.Field[Any]) -> tuple[bool, bool]:
    """Whether the field may be null, and (for an array) whether its elements may be."""
    annotation = f.type
    nullable = _admits_none(annotation)
    if nullable:
        annotation = next(a for a in get_args(annotation) if a is not NoneType)
    elements = get_args(annotation) if get_origin(annotation) is tuple else ()
    return nullable, bool(elements) and _admits_none(elements[0])


def _plan(cls: type[Any]) -> _Plan:
    plan = _PLANS.get(cls)
    if plan is not None:
        return plan
    flexible = bool(getattr(cls, "__flexible__", False))
    steps: list[_Step] = []
    tagged: dict[int, _Step] = {}
    for f in dataclasses.fields(cls):
        tag = get_field_tag(f)
        kind_class = classify_field(f)
        optional = False if tag is not None else is_optional(f)
        nulls = _nullability(f)
        payload: Any
        if isinstance(kind_class, (EntityField, EntityTupleField)):
            kind, payload = "entity", kind_class.type_
        else:
            assert isinstance(kind_class, (PrimitiveField, PrimitiveTupleField))
            ktype = get_schema_field_type(f)
            if ktype in _FIXED:
                kind, payload = "fixed", _FIXED[ktype]
            elif ktype in _VARIABLE:
                kind, payload = "var", ktype
            else:  # pragma: no cover - a kio type this module does not know
                raise TypeError(f"unknown kafka_type {ktype!r} in {cls.__qualname__}.{f.name}")
        step: _Step = (kind, payload, kind_class.is_array, optional, *nulls, f.name)
        if tag is not None:
            tagged[int(tag)] = step
        else:
            steps.append(step)
    plan = (steps, tagged, flexible)
    _PLANS[cls] = plan
    return plan


def _uvarint(buf: bytes, pos: int, end: int) -> tuple[int, int]:
    value = 0
    shift = 0
    while True:
        if pos >= end:
            raise _Bad("truncated varint")
        b = buf[pos]
        pos += 1
        value |= (b & 0x7F) << shift
        if not b & 0x80:
            return value, pos
        shift += 7
        if shift > 28:
            raise _Bad("varint too long")


def _int(buf: bytes, pos: int, size: int, end: int) -> tuple[int, int]:
    if pos + size > end:
        raise _Bad("truncated")
    return int.from_bytes(buf[pos : pos + size], "big", signed=True), pos + size


def _var(buf: bytes, pos: int, end: int, step: _Step, flexible: bool) -> int:
    ktype = step[1]
    if flexible:
        n, pos = _uvarint(buf, pos, end)
        length = n - 1
    elif ktype == "string":
        length, pos = _int(buf, pos, 2, end)
    else:
        length, pos = _int(buf, pos, 4, end)
    if length < 0:
        if length < -1:
            raise _Bad("negative length")
        if not step[4]:
            raise _Bad(f"null {ktype} {step[6]!r}, which the schema does not allow to be null")
        return pos
    if pos + length > end:
        raise _Bad(f"{ktype} of {length} bytes overruns the frame")
    return pos + length


def _one(buf: bytes, pos: int, end: int, step: _Step, flexible: bool) -> int:
    kind, payload, _is_array, optional = step[:4]
    if kind == "fixed":
        if pos + payload > end:
            raise _Bad("truncated")
        return int(pos + payload)
    if kind == "var":
        return _var(buf, pos, end, step, flexible)
    if optional:
        marker, pos = _int(buf, pos, 1, end)
        if marker == -1:
            return pos
    return _entity(buf, pos, end, payload)


def _step(buf: bytes, pos: int, end: int, step: _Step, flexible: bool) -> int:
    if not step[2]:
        return _one(buf, pos, end, step, flexible)
    if flexible:
        n, pos = _uvarint(buf, pos, end)
        count = n - 1
    else:
        count, pos = _int(buf, pos, 4, end)
    if count < 0:
        if count < -1:
            raise _Bad("negative array count")
        if not step[4]:
            raise _Bad(f"null array {step[6]!r}, which the schema does not allow to be null")
        return pos
    if count > end - pos:
        raise _Bad(f"array of {count} elements overruns the {end - pos} remaining bytes")
    elem: _Step = (step[0], step[1], False, False, step[5], False, f"{step[6]}[]")
    for _ in range(count):
        pos = _one(buf, pos, end, elem, flexible)
    return pos


def _entity(buf: bytes, pos: int, end: int, cls: type[Any]) -> int:
    steps, tagged, flexible = _plan(cls)
    for step in steps:
        pos = _step(buf, pos, end, step, flexible)
    if flexible:
        pos = _tags(buf, pos, end, tagged, flexible)
    return pos


def _tags(buf: bytes, pos: int, end: int, tagged: dict[int, _Step], flexible: bool) -> int:
    count, pos = _uvarint(buf, pos, end)
    if count > end - pos:
        raise _Bad("tagged field count overruns the frame")
    for _ in range(count):
        tag, pos = _uvarint(buf, pos, end)
        size, pos = _uvarint(buf, pos, end)
        if pos + size > end:
            raise _Bad("tagged field overruns the frame")
        step = tagged.get(tag)
        if step is not None:
            _step(buf, pos, pos + size, step, flexible)
        pos += size
    return pos


def check_request(frame: bytes, body_offset: int, request_type: type[Any]) -> None:
    """Raise :class:`MalformedRequestError` unless every count and length in the body fits."""
    try:
        _entity(frame, body_offset, len(frame), request_type)
    except _Bad as exc:
        raise MalformedRequestError(f"bad {request_type.__qualname__} body: {exc}") from None


def check_header_tags(frame: bytes, pos: int) -> int:
    """Bounds-check a request header v2's tagged-field section starting at ``pos``; its end."""
    try:
        return _tags(frame, pos, len(frame), {}, True)
    except _Bad as exc:
        raise MalformedRequestError(f"bad request header tagged fields: {exc}") from None
