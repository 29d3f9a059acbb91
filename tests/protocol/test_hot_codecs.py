"""The hand-written OffsetCommit, JoinGroup and Heartbeat codecs agree with kio, byte for byte.

For every version served, requests generated from kio's own types are written with kio's writer
and read by both paths (the guard plus kio's reader, and ``protocol/hot.py``): the values must be
the same, field by field (an OffsetCommit is read straight into the coordinator's request: it
must be the one built from kio's entity as the handler builds it for v1, see
:func:`_commit_request`; a JoinGroup's tuple must give the coordinator's request the handler
built from kio's entity, see :func:`_join_request`). Truncated and corrupted frames must be
refused by both or read to the same values by both. Answers written by :func:`offset_commit_response` and
:func:`consumer_group_heartbeat_response` must be the bytes kio's writer gives for the same entity.
"""

from __future__ import annotations

import dataclasses
import datetime
import io
import random
import uuid
import warnings
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from kio.static.primitive import i64Timedelta

from groupcoord.coordinator.consumer import kio_adapter
from groupcoord.errors import ErrorCode
from groupcoord.protocol.codec import encode_request
from groupcoord.protocol.consumer_group_messages import ConsumerGroupHeartbeatResponse
from groupcoord.protocol.entities import NO_THROTTLE, child, err, make, ms
from groupcoord.protocol.error_answers import error_answer
from groupcoord.protocol.group_messages import (
    JoinGroupRequest,
    OffsetCommitPartition,
    OffsetCommitRequest,
    OffsetCommitTopic,
)
from groupcoord.protocol.headers import MalformedRequestError, decode_request_header
from groupcoord.protocol.hot import (
    ConsumerGroupHeartbeatIn,
    HeartbeatIn,
    JoinGroupIn,
    offset_commit_response,
)
from groupcoord.protocol.registry import ApiMessages, load_messages

OFFSET_COMMIT, JOIN_GROUP, HEARTBEAT, CONSUMER_GROUP_HEARTBEAT = 8, 11, 12, 68
HOT = (
    [(OFFSET_COMMIT, v) for v in range(2, 10)]
    + [(JOIN_GROUP, v) for v in range(0, 10)]
    + [(HEARTBEAT, v) for v in range(0, 5)]
    + [(CONSUMER_GROUP_HEARTBEAT, v) for v in range(0, 2)]
)
_HOT_TYPES = {
    OFFSET_COMMIT: OffsetCommitRequest,
    JOIN_GROUP: JoinGroupIn,
    HEARTBEAT: HeartbeatIn,
    CONSUMER_GROUP_HEARTBEAT: ConsumerGroupHeartbeatIn,
}

# As in test_guard: whole milliseconds inside what kio's decoder can turn back into a timedelta.
_MS = 100_000 * 86_400_000
st.register_type_strategy(
    i64Timedelta, st.integers(-_MS, _MS).map(lambda ms: i64Timedelta(datetime.timedelta(milliseconds=ms)))
)

# What a handler's getattr(request, name, default) gives for a field the version lacks.
_ABSENT = {
    "group_instance_id": None,
    "subscribed_topic_regex": None,
}


_SCALARS = (int, str, type(None), datetime.timedelta, uuid.UUID)


def _same(hot: Any, entity: Any, path: str = "") -> None:
    """Every field of the kio entity has the same value in the hot reader's tuple."""
    names = {f.name for f in dataclasses.fields(entity)}
    for name in names:
        want = getattr(entity, name)
        got = getattr(hot, name)
        if isinstance(want, tuple):
            assert isinstance(got, tuple) and len(got) == len(want), f"{path}{name}"
            for i, (g, w) in enumerate(zip(got, want, strict=True)):
                if dataclasses.is_dataclass(w):
                    _same(g, w, f"{path}{name}[{i}].")
                else:  # an array of scalars (topic names, partitions)
                    assert g == w and type(g) in _SCALARS, f"{path}{name}[{i}]"
        else:
            assert got == want and type(got) in _SCALARS, f"{path}{name}"
    for name, default in _ABSENT.items():
        if name in getattr(type(hot), "_fields", ()) and name not in names:
            assert getattr(hot, name) == default, f"{path}{name}"


def _commit_request(entity: Any, version: int) -> OffsetCommitRequest:
    """The coordinator's request for a kio OffsetCommit entity, as ``group_handlers`` builds it
    from kio's entity (v1, and v2-9 before the hot reader built it): the generation, retention
    in milliseconds (-1 when the version has none), a negative or absent leader epoch as None,
    every topic and partition in the request's order."""
    retention = getattr(entity, "retention_time", None)
    return OffsetCommitRequest(
        group_id=entity.group_id,
        generation_id=int(entity.generation_id_or_member_epoch),
        member_id=entity.member_id,
        group_instance_id=getattr(entity, "group_instance_id", None),
        retention_time_ms=-1 if retention is None else ms(retention),
        topics=tuple(
            OffsetCommitTopic(
                name=t.name,
                partitions=tuple(
                    OffsetCommitPartition(
                        partition=int(p.partition_index),
                        offset=int(p.committed_offset),
                        leader_epoch=(
                            None
                            if getattr(p, "committed_leader_epoch", -1) < 0
                            else int(p.committed_leader_epoch)
                        ),
                        metadata=p.committed_metadata,
                    )
                    for p in t.partitions
                ),
            )
            for t in entity.topics
        ),
        version=version,
    )


def _same_commit(hot: Any, entity: Any, version: int) -> None:
    """The hot reader's OffsetCommit is the request built from kio's entity, field by field,
    with plain values (no kio primitive subclasses)."""
    assert type(hot) is OffsetCommitRequest
    assert hot == _commit_request(entity, version)
    scalars = [hot.group_id, hot.generation_id, hot.member_id, hot.group_instance_id, hot.retention_time_ms]
    for t in hot.topics:
        assert type(t) is OffsetCommitTopic and type(t.partitions) is tuple
        scalars.append(t.name)
        for p in t.partitions:
            assert type(p) is OffsetCommitPartition
            scalars += [p.partition, p.offset, p.leader_epoch, p.metadata]
    assert all(type(v) in (int, str, type(None)) for v in scalars)


def _join_request(entity: Any, version: int) -> JoinGroupRequest:
    """The coordinator's request for a kio JoinGroup entity, as ``group_handlers.join_group``
    built it from kio's entity before the hot reader: the timeouts through ``ms`` (v0: the
    rebalance timeout is the session timeout), the protocols as (name, metadata) pairs."""
    session_ms = ms(entity.session_timeout)
    return JoinGroupRequest(
        group_id=entity.group_id,
        session_timeout_ms=session_ms,
        rebalance_timeout_ms=ms(entity.rebalance_timeout) if version >= 1 else session_ms,
        member_id=entity.member_id,
        group_instance_id=getattr(entity, "group_instance_id", None),
        protocol_type=entity.protocol_type,
        protocols=tuple((p.name, bytes(p.metadata)) for p in entity.protocols),
        reason=getattr(entity, "reason", None),
        version=version,
    )


def _same_join(hot: Any, entity: Any, version: int) -> None:
    """The coordinator's request built from the hot reader's tuple (as the handler builds it
    now) is the one built from kio's entity (as it was built before), with plain values."""
    assert type(hot) is JoinGroupIn
    built = JoinGroupRequest(**hot._asdict(), version=version)
    assert built == _join_request(entity, version)
    for value in (hot.group_id, hot.member_id, hot.group_instance_id, hot.protocol_type, hot.reason):
        assert type(value) in (str, type(None))
    assert type(hot.session_timeout_ms) is int and type(hot.rebalance_timeout_ms) is int
    assert type(hot.protocols) is tuple
    assert all(type(p) is tuple and type(p[0]) is str and type(p[1]) is bytes for p in hot.protocols)


def _agree(key: int, version: int, hot: Any, entity: Any) -> None:
    if key == OFFSET_COMMIT:
        _same_commit(hot, entity, version)
    elif key == JOIN_GROUP:
        _same_join(hot, entity, version)
    else:
        _same(hot, entity)


def _body(m: ApiMessages, request: Any) -> tuple[bytes, int]:
    frame = encode_request(m, 7, request)[4:]
    return frame, decode_request_header(frame, m.request_header_version).body_offset


def _both(m: ApiMessages, frame: bytes, offset: int) -> tuple[Any, Any]:
    """(kio path's result or its error, hot reader's result or its error)."""
    assert m.hot_reader is not None
    out: list[Any] = []
    for read in (m.decode_request, m.hot_reader):
        try:
            out.append(read(frame, offset))
        except MalformedRequestError as exc:
            out.append(exc)
    return out[0], out[1]


@pytest.mark.parametrize(("key", "version"), HOT, ids=[f"{k}v{v}" for k, v in HOT])
@settings(max_examples=40, deadline=None)
@given(data=st.data())
def test_hot_reader_reads_what_kio_reads(key: int, version: int, data: st.DataObject) -> None:
    m = load_messages(key, version)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        request = data.draw(st.from_type(m.request_type))
    frame, offset = _body(m, request)
    assert m.hot_reader is not None
    got = m.hot_reader(frame, offset)
    assert type(got) is _HOT_TYPES[key]
    _agree(key, version, got, request)


@pytest.mark.parametrize(("key", "version"), HOT, ids=[f"{k}v{v}" for k, v in HOT])
def test_hot_reader_refuses_exactly_what_the_general_path_refuses(key: int, version: int) -> None:
    m = load_messages(key, version)
    rng = random.Random(key * 100 + version)
    strategy = st.from_type(m.request_type)
    refused = read = 0
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        requests = [strategy.example() for _ in range(4)]
    for request in requests:
        frame, offset = _body(m, request)
        for cut in range(offset, len(frame)):  # every truncation
            general, hot = _both(m, frame[:cut], offset)
            assert isinstance(general, MalformedRequestError) == isinstance(hot, MalformedRequestError)
            if not isinstance(hot, MalformedRequestError):
                _agree(key, version, hot, general)
        for _ in range(100):  # corruptions, nulls and forged counts among them
            b = bytearray(frame)
            for _ in range(rng.randint(1, 3)):
                at = rng.randrange(offset, len(b))
                if rng.random() < 0.3:
                    b[at : at + 4] = rng.choice(
                        [b"\xff\xff", b"\xff\xff\xff\xff", b"\x00", b"\x7f\xff\xff\xff"]
                    )
                else:
                    b[at] = rng.choice([0xFF, 0x7F, 0x80, 0x00, 0xC3, rng.randrange(256)])
            general, hot = _both(m, bytes(b), offset)
            assert isinstance(general, MalformedRequestError) == isinstance(hot, MalformedRequestError), (
                bytes(b)
            )
            if isinstance(hot, MalformedRequestError):
                refused += 1
            else:
                read += 1
                _agree(key, version, hot, general)
    assert refused and read  # both outcomes were exercised


def _kio_answer(version: int, topics: list[tuple[str, list[tuple[int, int]]]]) -> bytes:
    m = load_messages(OFFSET_COMMIT, version)
    resp_t = m.response_type
    topic_t = child(resp_t, "topics")
    part_t = child(topic_t, "partitions")
    fields: dict[str, Any] = {
        "topics": tuple(
            make(
                topic_t,
                name=name,
                partitions=tuple(make(part_t, partition_index=i, error_code=err(c)) for i, c in parts),
            )
            for name, parts in topics
        )
    }
    if any(f.name == "throttle_time" for f in dataclasses.fields(resp_t)):
        fields["throttle_time"] = NO_THROTTLE
    buf = io.BytesIO()
    m.writer(buf, make(resp_t, **fields))
    return buf.getvalue()


_CODES = st.sampled_from([0, 3, 15, 16, 22, 25, 27, 28, 79])
_TOPICS = st.lists(
    st.tuples(
        st.text(min_size=0, max_size=140),
        st.lists(st.tuples(st.integers(-(2**31), 2**31 - 1), _CODES), max_size=4),
    ),
    max_size=4,
)


@settings(max_examples=150, deadline=None)
@given(version=st.integers(2, 9), topics=_TOPICS)
def test_offset_commit_answer_is_the_bytes_kio_writes(
    version: int, topics: list[tuple[str, list[tuple[int, int]]]]
) -> None:
    assert offset_commit_response(version, topics) == _kio_answer(version, topics)


_TOPIC_IDS = st.uuids()
_CGH_ANSWERS = st.builds(
    ConsumerGroupHeartbeatResponse,
    error_code=st.sampled_from([ErrorCode.NONE, ErrorCode.FENCED_MEMBER_EPOCH, ErrorCode.UNKNOWN_MEMBER_ID]),
    error_message=st.none() | st.text(max_size=40),
    member_id=st.none() | st.text(max_size=30),
    member_epoch=st.integers(-2, 2**31 - 1),
    heartbeat_interval_ms=st.integers(0, 2**31 - 1),
    assignment=st.none()
    | st.dictionaries(_TOPIC_IDS, st.frozensets(st.integers(0, 2**31 - 1), max_size=20), max_size=5),
)


@settings(max_examples=200, deadline=None)
@given(version=st.integers(0, 1), answer=_CGH_ANSWERS)
def test_consumer_group_heartbeat_answer_is_the_bytes_kio_writes(
    version: int, answer: ConsumerGroupHeartbeatResponse
) -> None:
    """``consumer_group_heartbeat_response`` (through ``kio_adapter.heartbeat_response_body``)
    against kio's writer of the entity ``kio_adapter.heartbeat_response_to_kio`` makes: topics in
    ``Uuid.compareTo`` order (signed), partitions ascending, null and empty assignments."""
    m = load_messages(CONSUMER_GROUP_HEARTBEAT, version)
    buf = io.BytesIO()
    m.writer(buf, kio_adapter.heartbeat_response_to_kio(answer, api_version=version))
    assert kio_adapter.heartbeat_response_body(answer) == buf.getvalue()


def _join_frame(version: int) -> tuple[ApiMessages, bytes, int]:
    """A JoinGroup of ``version`` with known values: group "g", member "", protocol type
    "consumer", one protocol "range" with metadata b"ab" (and no instance id, no reason)."""
    m = load_messages(JOIN_GROUP, version)
    proto_t = child(m.request_type, "protocols")
    request = make(
        m.request_type,
        group_id="g",
        session_timeout=datetime.timedelta(milliseconds=45_000),
        rebalance_timeout=datetime.timedelta(milliseconds=300_000),
        member_id="",
        group_instance_id=None,
        protocol_type="consumer",
        protocols=(make(proto_t, name="range", metadata=b"ab"),),
        reason=None,
    )
    frame, offset = _body(m, request)
    return m, frame, offset


# (version, where in the body (after the fixed prefix), what replaces the bytes there): the
# protocol type null, the protocols array null or its count past the frame, a protocol's
# metadata null or longer than the frame, a negative string length. Every one is refused by
# the guard (kio's native reader would otherwise allocate from the count) and must be by the
# hot reader.
_FORGED = [
    (5, "protocol_type", b"\xff\xff"),
    (5, "protocols", b"\xff\xff\xff\xff"),
    (5, "protocols", b"\x7f\xff\xff\xff"),
    (5, "metadata", b"\xff\xff\xff\xff"),
    (5, "metadata", b"\x00\x00\x10\x00"),
    (5, "group_id", b"\xff\xfe"),
    (0, "protocols", b"\x7f\xff\xff\xff"),
    (9, "protocol_type", b"\x00"),
    (9, "protocols", b"\x00"),
    (9, "protocols", b"\xfe\xff\xff\xff\x0f"),
    (9, "metadata", b"\x00"),
    (9, "metadata", b"\x7f"),
    (9, "group_id", b"\x00"),
]


def _field_at(version: int, field: str) -> tuple[int, int]:
    """(offset in the body, width) of a field of :func:`_join_frame`'s request."""
    flexible = version >= 6
    s_len = 1 if flexible else 2  # a string's length prefix
    group = s_len + 1
    timeouts = 8 if version >= 1 else 4
    member = s_len
    instance = s_len if version >= 5 else 0
    ptype = group + timeouts + member + instance
    protocols = ptype + s_len + len("consumer")
    metadata = protocols + (1 if flexible else 4) + s_len + len("range")
    where = {"group_id": 0, "protocol_type": ptype, "protocols": protocols, "metadata": metadata}[field]
    width = {"group_id": s_len, "protocol_type": s_len, "protocols": 1 if flexible else 4}.get(
        field, 1 if flexible else 4
    )
    return where, width


@pytest.mark.parametrize(("version", "field", "forged"), _FORGED)
def test_hot_join_group_refuses_forged_counts_and_nulls_as_the_guard_does(
    version: int, field: str, forged: bytes
) -> None:
    m, frame, offset = _join_frame(version)
    assert m.hot_reader is not None
    rebalance_ms = 300_000 if version >= 1 else 45_000  # v0: the session timeout
    want = JoinGroupIn("g", 45_000, rebalance_ms, "", None, "consumer", (("range", b"ab"),), None)
    assert m.hot_reader(frame, offset) == want
    where, width = _field_at(version, field)
    at = offset + where
    bad = frame[:at] + forged + frame[at + width :]
    general, hot = _both(m, bad, offset)
    assert isinstance(general, MalformedRequestError), general
    assert isinstance(hot, MalformedRequestError), hot


@pytest.mark.parametrize("version", range(0, 10))
@settings(max_examples=10, deadline=None)
@given(data=st.data())
def test_join_group_error_answer_is_the_same_from_the_hot_tuple(version: int, data: st.DataObject) -> None:
    """The error answers built from a request (the SASL refusal's ILLEGAL_SASL_STATE, a fault
    injected by ``groupcoord.testing``) read the hot reader's tuple as they read kio's entity:
    the member id mirrored, the rest empty."""
    m = load_messages(JOIN_GROUP, version)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        request = data.draw(st.from_type(m.request_type))
    frame, offset = _body(m, request)
    assert m.hot_reader is not None
    hot = m.hot_reader(frame, offset)
    for code in (ErrorCode.ILLEGAL_SASL_STATE, ErrorCode.COORDINATOR_NOT_AVAILABLE):
        assert error_answer(JOIN_GROUP, m.response_type, hot, code) == error_answer(
            JOIN_GROUP, m.response_type, request, code
        )
