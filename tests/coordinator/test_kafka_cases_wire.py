"""Kafka's ``testListGroupsWithTypes`` over the wire: the group-type filter of ListGroups v5
(KIP-848) is applied by the broker, not the core, so it is tested against a running broker with
confluent-kafka's AdminClient and with raw ListGroups v5 requests (for the filter strings the
client cannot send: another case, an unknown type)."""

from __future__ import annotations

import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from confluent_kafka import Consumer, ConsumerGroupState, ConsumerGroupType
from confluent_kafka.admin import AdminClient, NewTopic

from groupcoord.errors import ErrorCode
from groupcoord.protocol.client import WireClient
from groupcoord.protocol.entities import make
from groupcoord.protocol.registry import load_messages

LISTENING_PREFIX = "groupcoord listening on "
LIST_GROUPS = 16
TOPIC = "kafka-cases-topic"
GROUP_ID = "groupId"


@pytest.fixture
def bootstrap(tmp_path: Path) -> Iterator[str]:
    argv = [
        sys.executable,
        "-m",
        "groupcoord",
        "serve",
        "--listen",
        "127.0.0.1:0",
        "--data-dir",
        str(tmp_path / "data"),
        "--set",
        "group.initial.rebalance.delay.ms=0",
    ]
    log = open(tmp_path / "broker.log", "w")  # noqa: SIM115 - handed to the child process
    proc = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=log, text=True)
    log.close()
    line: list[str] = []
    reader = threading.Thread(target=lambda: line.append(proc.stdout.readline() if proc.stdout else ""))
    reader.start()
    reader.join(30)
    try:
        assert line and line[0].startswith(LISTENING_PREFIX), (line, (tmp_path / "broker.log").read_text())
        yield line[0][len(LISTENING_PREFIX) :].strip()
    finally:
        proc.terminate()
        try:
            proc.wait(15)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
        if proc.stdout is not None:
            proc.stdout.close()


def _list_groups_v5(bootstrap: str, types: list[str]) -> tuple[ErrorCode, list[tuple[str, str, str, str]]]:
    host, port = bootstrap.rsplit(":", 1)
    messages = load_messages(LIST_GROUPS, 5)
    request = make(messages.request_type, states_filter=(), types_filter=tuple(types))
    with WireClient(host, int(port), client_id="kafka-cases") as wire:
        response = wire.call_entity(messages, request)
    groups = [(g.group_id, g.protocol_type, g.group_state, g.group_type) for g in response.groups]
    return ErrorCode(int(response.error_code)), groups


def _listed(admin: AdminClient, types: set[ConsumerGroupType] | None) -> list[tuple[str, Any, Any]]:
    kwargs: dict[str, Any] = {"request_timeout": 15}
    if types is not None:
        kwargs["types"] = types
    result = admin.list_consumer_groups(**kwargs).result(timeout=20)
    assert not result.errors
    return [(g.group_id, g.state, g.type) for g in result.valid]


def test_list_groups_type_filter_lists_classic_groups_only_for_the_classic_type(bootstrap: str) -> None:
    """Kafka: testListGroupsWithTypes (GroupCoordinatorTest). A Stable group of one
    confluent-kafka consumer: the "classic" filter lists it (any case), "consumer" and an
    unknown type list nothing, no filter lists it as type "classic"; every answer is NONE."""
    admin = AdminClient({"bootstrap.servers": bootstrap})
    admin.create_topics([NewTopic(TOPIC, 1, 1)])[TOPIC].result(timeout=20)
    consumer = Consumer(
        {
            "bootstrap.servers": bootstrap,
            "group.id": GROUP_ID,
            "session.timeout.ms": 10_000,
            "auto.offset.reset": "earliest",
        }
    )
    try:
        consumer.subscribe([TOPIC])
        deadline = time.monotonic() + 60
        while not consumer.assignment():
            assert time.monotonic() < deadline, "consumer never got its assignment"
            consumer.poll(0.2)
        stable = (GROUP_ID, ConsumerGroupState.STABLE, ConsumerGroupType.CLASSIC)
        assert _listed(admin, {ConsumerGroupType.CLASSIC}) == [stable]
        assert _listed(admin, {ConsumerGroupType.CONSUMER}) == []
        assert _listed(admin, None) == [stable]
        row = (GROUP_ID, "consumer", "Stable", "classic")
        assert _list_groups_v5(bootstrap, ["classic"]) == (ErrorCode.NONE, [row])
        assert _list_groups_v5(bootstrap, ["Classic"]) == (ErrorCode.NONE, [row])
        assert _list_groups_v5(bootstrap, ["consumer"]) == (ErrorCode.NONE, [])
        assert _list_groups_v5(bootstrap, ["Invalid"]) == (ErrorCode.NONE, [])
        assert _list_groups_v5(bootstrap, []) == (ErrorCode.NONE, [row])
    finally:
        consumer.close()
