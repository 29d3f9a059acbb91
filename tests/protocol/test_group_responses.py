"""The struct writers for JoinGroup/SyncGroup answers give kio's bytes at every version."""

from __future__ import annotations

import datetime
import io
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st
from kio.schema.errors import ErrorCode as KioErrorCode

from groupcoord.protocol.entities import child, make
from groupcoord.protocol.hot import join_group_response, sync_group_response
from groupcoord.protocol.registry import load_messages

_text = st.text(max_size=30)
_maybe_text = st.one_of(st.none(), _text)
_errors = st.sampled_from([0, 15, 16, 22, 25, 27, 79, 82])
_members = st.lists(st.tuples(_text, _maybe_text, st.binary(max_size=60)), max_size=5)


def _kio_body(api_key: int, version: int, **values: Any) -> bytes:
    messages = load_messages(api_key, version)
    buf = io.BytesIO()
    messages.writer(buf, make(messages.response_type, **values))
    return buf.getvalue()


@settings(max_examples=60, deadline=None)
@given(
    error=_errors,
    generation=st.integers(-1, 2**31 - 1),
    protocol_type=_maybe_text,
    protocol_name=_maybe_text,
    leader=_text,
    skip=st.booleans(),
    member_id=_text,
    members=_members,
    throttle=st.integers(0, 10_000),
)
def test_join_group_answer_bytes_equal_kio_at_every_version(
    error: int,
    generation: int,
    protocol_type: str | None,
    protocol_name: str | None,
    leader: str,
    skip: bool,
    member_id: str,
    members: list[tuple[str, str | None, bytes]],
    throttle: int,
) -> None:
    for version in range(0, 10):
        resp_t = load_messages(11, version).response_type
        member_t = child(resp_t, "members")
        expected = _kio_body(
            11,
            version,
            throttle_time=datetime.timedelta(milliseconds=throttle),
            error_code=KioErrorCode(error),
            generation_id=generation,
            protocol_type=protocol_type,
            protocol_name=protocol_name if version >= 7 else (protocol_name or ""),
            leader=leader,
            skip_assignment=skip,
            member_id=member_id,
            members=tuple(
                make(member_t, member_id=m, group_instance_id=i if version >= 5 else None, metadata=md)
                for m, i, md in members
            ),
        )
        ours = join_group_response(
            version,
            error=error,
            generation_id=generation,
            protocol_type=protocol_type,
            protocol_name=protocol_name,
            leader=leader,
            skip_assignment=skip,
            member_id=member_id,
            members=members,
            throttle_ms=throttle,
        )
        assert ours == expected, version


@settings(max_examples=60, deadline=None)
@given(
    error=_errors,
    protocol_type=_maybe_text,
    protocol_name=_maybe_text,
    assignment=st.binary(max_size=80),
    throttle=st.integers(0, 10_000),
)
def test_sync_group_answer_bytes_equal_kio_at_every_version(
    error: int, protocol_type: str | None, protocol_name: str | None, assignment: bytes, throttle: int
) -> None:
    for version in range(0, 6):
        expected = _kio_body(
            14,
            version,
            throttle_time=datetime.timedelta(milliseconds=throttle),
            error_code=KioErrorCode(error),
            protocol_type=protocol_type,
            protocol_name=protocol_name,
            assignment=assignment,
        )
        ours = sync_group_response(
            version,
            error=error,
            protocol_type=protocol_type,
            protocol_name=protocol_name,
            assignment=assignment,
            throttle_ms=throttle,
        )
        assert ours == expected, version
