"""fail_next's answers encode at every version the broker serves, with the code in every error field."""

from __future__ import annotations

import dataclasses
import io
from typing import Any

import pytest

from groupcoord.errors import ErrorCode
from groupcoord.testing import Broker
from groupcoord.testing.faults import FAILABLE_APIS, _mirror, api_key_of, error_code_of


def error_codes(entity: Any) -> list[int]:
    found = []
    for f in dataclasses.fields(entity):
        value = getattr(entity, f.name)
        if f.name == "error_code":
            found.append(int(value))
        elif isinstance(value, tuple):
            for item in value:
                if dataclasses.is_dataclass(item):
                    found += error_codes(item)
    return found


def test_every_failable_api_answers_with_the_error_at_every_served_version(kafka_broker: Broker) -> None:
    registry = kafka_broker._app.dispatcher.registry
    served = {key: (low, high) for key, low, high in registry.ranges()}
    checked = 0
    for key in sorted(FAILABLE_APIS):
        low, high = served[key]
        for version in range(low, high + 1):
            messages = registry.lookup(key, version)
            answer = _mirror(messages.response_type, None, ErrorCode.NOT_COORDINATOR)
            buf = io.BytesIO()
            messages.writer(buf, answer)
            assert buf.getvalue()
            codes = error_codes(answer)
            assert set(codes) <= {int(ErrorCode.NOT_COORDINATOR)}
            if key in (11, 12, 13, 14):  # the others carry codes per item of the request's lists
                assert codes == [int(ErrorCode.NOT_COORDINATOR)], f"api {key} v{version}"
            checked += 1
    assert checked > 40


def test_names_and_numbers_of_apis_and_errors() -> None:
    assert api_key_of("OffsetCommit") == 8 == api_key_of(8)
    assert error_code_of("rebalance_in_progress") == ErrorCode.REBALANCE_IN_PROGRESS == error_code_of(27)
    with pytest.raises(ValueError, match="unknown API"):
        api_key_of("OffsetComit")
    with pytest.raises(ValueError, match="unknown Kafka error"):
        error_code_of("NOT_AN_ERROR")


def test_fail_next_refuses_apis_whose_answers_it_cannot_build(kafka_broker: Broker) -> None:
    with pytest.raises(ValueError, match="group APIs"):
        kafka_broker.fail_next("Produce", "NOT_LEADER_OR_FOLLOWER")
