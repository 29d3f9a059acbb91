"""fail_next for every API the broker routes: the error comes back in that API's own answer,
where its clients read it (per partition, per topic, per group, per key or at the top).

Each routed API, at each version the broker serves, is sent a request over the wire with one
entry in every list (one topic, one partition, one group, ...) after a ``fail_next`` for it,
and the decoded answer is checked at the place Kafka's clients look for the code.
"""

from __future__ import annotations

import dataclasses
import datetime
import typing
import uuid
from collections.abc import Iterator
from typing import Any, cast

import pytest

from groupcoord.app import routes
from groupcoord.errors import ErrorCode
from groupcoord.protocol.client import WireClient
from groupcoord.protocol.registry import load_messages
from groupcoord.testing import Broker
from groupcoord.testing.faults import API_NAMES, api_key_of, api_name_of, error_code_of

#: The route table, as the broker builds it (the group handlers bound to a stand-in runtime:
#: only the keys and version ranges are read here).
ROUTES = routes(cast(Any, object()))
INJECTED = ErrorCode.CLUSTER_AUTHORIZATION_FAILED

#: Where a client reads an API's error, most specific first: the first path whose fields exist
#: in the response version is checked (each list holds the one entry the request named).
WHERE: dict[int, tuple[str, ...]] = {
    0: ("responses.partition_responses.error_code",),  # Produce
    1: ("responses.partitions.error_code",),  # Fetch (top-level code, v7+: NONE)
    2: ("topics.partitions.error_code",),  # ListOffsets
    3: ("topics.error_code",),  # Metadata
    8: ("topics.partitions.error_code",),  # OffsetCommit
    9: ("groups.error_code", "error_code", "topics.partitions.error_code"),  # OffsetFetch v8+, v2-7, v1
    10: ("coordinators.error_code", "error_code"),  # FindCoordinator v4+, v0-3
    15: ("groups.error_code",),  # DescribeGroups
    19: ("topics.error_code",),  # CreateTopics
    20: ("responses.error_code",),  # DeleteTopics
    49: ("entries.error_code",),  # AlterClientQuotas
    21: ("topics.partitions.error_code",),  # DeleteRecords
    24: ("results_by_topic_v3_and_below.results_by_partition.partition_error_code",),  # AddPartitionsToTxn
    28: ("topics.partitions.error_code",),  # TxnOffsetCommit
    32: ("results.error_code",),  # DescribeConfigs
    33: ("responses.error_code",),  # AlterConfigs
    37: ("results.error_code",),  # CreatePartitions
    42: ("results.error_code",),  # DeleteGroups
    44: ("responses.error_code",),  # IncrementalAlterConfigs
    65: ("transaction_states.error_code",),  # DescribeTransactions
    30: ("results.error_code",),  # CreateAcls
    31: ("filter_results.error_code",),  # DeleteAcls
    51: ("results.error_code",),  # AlterUserScramCredentials
    69: ("groups.error_code",),  # ConsumerGroupDescribe
}
#: Names a response entry must carry back, by field (the probe request's values).
NAMES = {"name": "probe", "topic": "probe", "group_id": "probe", "key": "probe", "resource_name": "probe"}


def probe_request(cls: type[Any]) -> Any:
    """A request of ``cls`` with one entry in every list, names "probe", indexes 0, acks=-1."""
    hints = typing.get_type_hints(cls)
    values: dict[str, Any] = {}
    for f in dataclasses.fields(cls):
        tp = hints[f.name]
        args = [a for a in typing.get_args(tp) if a is not type(None)] if _is_union(tp) else [tp]
        base = args[0]
        if typing.get_origin(base) is tuple:
            item = typing.get_args(base)[0]
            values[f.name] = (
                probe_request(item) if dataclasses.is_dataclass(item) else _scalar(item, f.name),
            )
        elif dataclasses.is_dataclass(base):
            values[f.name] = probe_request(base)  # type: ignore[arg-type]
        elif f.name == "acks":
            values[f.name] = base(-1)
        elif f.default is not dataclasses.MISSING and f.name not in NAMES:
            continue
        elif _is_union(tp) and not (isinstance(base, type) and issubclass(base, str)):
            values[f.name] = None
        else:
            values[f.name] = _scalar(base, f.name)
    return cls(**values)


def _is_union(tp: Any) -> bool:
    import types

    return isinstance(tp, types.UnionType) or typing.get_origin(tp) is typing.Union


def _scalar(tp: Any, name: str) -> Any:
    if issubclass(tp, bool):
        return False
    if issubclass(tp, int):
        return tp(0)
    if issubclass(tp, str):
        return tp("probe")
    if issubclass(tp, bytes):
        return tp(b"")
    if issubclass(tp, datetime.timedelta):
        return tp(datetime.timedelta(milliseconds=100))
    if issubclass(tp, uuid.UUID):
        return uuid.UUID(int=1)
    if issubclass(tp, float):  # AlterClientQuotas' op value
        return tp(1.0)
    raise AssertionError(f"no probe value for {name}: {tp}")


def at(entity: Any, path: str) -> Iterator[tuple[Any, Any]]:
    """(value, the entity holding it) of every field along ``path`` (lists flattened)."""
    head, _, rest = path.partition(".")
    value = getattr(entity, head)
    if not rest:
        yield value, entity
        return
    for item in value if isinstance(value, tuple) else (value,):
        yield from at(item, rest)


def has_path(cls: type[Any], path: str) -> bool:
    head, _, rest = path.partition(".")
    hints = typing.get_type_hints(cls)
    if head not in hints:
        return False
    if not rest:
        return True
    tp = hints[head]
    for cand in (tp, *typing.get_args(tp)):
        if typing.get_origin(cand) is tuple:
            cand = typing.get_args(cand)[0]
        if dataclasses.is_dataclass(cand):
            return has_path(cand, rest)  # type: ignore[arg-type]
    return False


@pytest.fixture(scope="module")
def broker() -> Iterator[Broker]:
    with Broker() as b:
        yield b


def test_the_parametrised_apis_are_the_route_table() -> None:
    """Every routed API has a Kafka name here (so it can be named in fail_next) and a case below."""
    assert {int(k) for k in ROUTES} <= set(API_NAMES.values())


@pytest.mark.parametrize("api_key", sorted(int(k) for k in ROUTES), ids=lambda k: api_name_of(k))
def test_fail_next_answers_every_routed_api_with_the_error_where_its_clients_read_it(
    broker: Broker, api_key: int
) -> None:
    route = ROUTES[cast(Any, api_key)]
    client_id = f"probe-{api_key}"
    checked = []
    with WireClient("127.0.0.1", broker.port, client_id=client_id) as client:
        for version in range(route.min_version, route.max_version + 1):
            messages = load_messages(api_key, version)
            broker.fail_next(api_name_of(api_key), INJECTED, client_id=client_id)

            answer = client.call_entity(messages, probe_request(messages.request_type))

            assert broker.faults.pending_failures() == 0, f"v{version}: the rule was not used"
            resp_t = messages.response_type
            path = next((p for p in (*WHERE.get(api_key, ()), "error_code") if has_path(resp_t, p)), None)
            assert path is not None, (
                f"v{version}: no error field known for {resp_t.__name__}; add it to WHERE"
            )
            found = list(at(answer, path))
            assert [int(code) for code, _ in found] == [int(INJECTED)], f"v{version} {path}: {answer}"
            for _, holder in found:  # the entry answers what the request named
                for field, want in NAMES.items():
                    if hasattr(holder, field) and path.count(".") > 0:
                        assert getattr(holder, field) == want, f"v{version} {field}: {holder}"
            if api_key == 1 and hasattr(answer, "error_code"):
                assert int(answer.error_code) == 0, "Fetch: the partition's error, not the request's"
            checked.append(version)
    assert checked == list(range(route.min_version, route.max_version + 1))


def test_fetch_session_errors_are_answered_at_the_top_of_a_fetch(broker: Broker) -> None:
    """Kafka's fetch-session cache answers a bad session at the top with no partitions
    (FetchSession.scala / FetchResponse ``of(error, ...)`` with empty responses)."""
    messages = load_messages(1, 12)
    broker.fail_next("Fetch", "FETCH_SESSION_ID_NOT_FOUND", client_id="probe-session")
    with WireClient("127.0.0.1", broker.port, client_id="probe-session") as client:
        answer = client.call_entity(messages, probe_request(messages.request_type))
    assert int(answer.error_code) == int(ErrorCode.FETCH_SESSION_ID_NOT_FOUND)
    assert answer.responses == ()


def test_a_group_filter_never_matches_requests_without_a_group_and_client_ids_filter(broker: Broker) -> None:
    """``group=`` matches only requests naming that group; ``client_id=`` any request's header."""
    broker.fail_next("Metadata", "UNKNOWN_TOPIC_OR_PARTITION", group="app")
    broker.fail_next("Metadata", "LEADER_NOT_AVAILABLE", client_id="other")
    broker.create_topic("present", 1)
    messages = load_messages(3, 9)
    request = probe_request(messages.request_type)
    request = dataclasses.replace(request, topics=(dataclasses.replace(request.topics[0], name="present"),))
    with WireClient("127.0.0.1", broker.port, client_id="mine") as client:
        answer = client.call_entity(messages, request)
    assert [(t.name, int(t.error_code)) for t in answer.topics] == [("present", 0)]  # the real answer
    assert broker.faults.pending_failures() == 2
    with WireClient("127.0.0.1", broker.port, client_id="other") as client:
        answer = client.call_entity(messages, request)
    assert [(t.name, int(t.error_code)) for t in answer.topics] == [
        ("present", int(ErrorCode.LEADER_NOT_AVAILABLE))
    ]
    broker.clear_faults()
    assert broker.faults.pending_failures() == 0


def test_a_failed_acks_0_produce_is_not_answered(broker: Broker) -> None:
    """Kafka never answers a Produce with acks=0, not even with an error: an answer would be
    taken for the answer of the client's next request. The next answer on the connection is
    the next request's, and the dropped records are not appended."""
    broker.create_topic("fire", 1)
    messages = load_messages(0, 9)
    request = probe_request(messages.request_type)
    topic = dataclasses.replace(request.topic_data[0], name="fire")
    request = dataclasses.replace(request, acks=type(request.acks)(0), topic_data=(topic,))
    broker.fail_next("Produce", "NOT_LEADER_OR_FOLLOWER", client_id="fire")
    with WireClient("127.0.0.1", broker.port, client_id="fire") as client:
        client.send_entity(messages, request, answered=False)
        answer = client.call(18, 3, client_software_name="t", client_software_version="1")
    assert int(answer.error_code) == 0 and answer.api_keys  # ApiVersions' own answer
    assert broker.faults.pending_failures() == 0
    assert broker.records("fire") == []


def test_names_and_numbers_of_apis_and_errors() -> None:
    assert api_key_of("OffsetCommit") == 8 == api_key_of(8)
    assert api_key_of("Produce") == 0 and api_name_of(0) == "Produce"
    assert error_code_of("rebalance_in_progress") == ErrorCode.REBALANCE_IN_PROGRESS == error_code_of(27)
    with pytest.raises(ValueError, match="unknown API"):
        api_key_of("OffsetComit")
    with pytest.raises(ValueError, match="unknown Kafka error"):
        error_code_of("NOT_AN_ERROR")
