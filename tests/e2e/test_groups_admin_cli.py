"""``groupcoord groups list|describe`` end to end: a broker process, a real confluent-kafka
group with known committed offsets, and the CLI run as its own process."""

from __future__ import annotations

import contextlib
import json
import subprocess
import sys
import time
from collections.abc import Iterator
from typing import Any

import pytest
from confluent_kafka import Consumer, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic
from conftest import BrokerProcess

TOPIC = "cli-orders"
GROUP = "cli-billing"
PRODUCED = {0: 10, 1: 20, 2: 30}
SETTINGS = (
    "group.initial.rebalance.delay.ms=0",
    "group.min.session.timeout.ms=1000",
    "offsets.topic.num.partitions=7",
)


def cli(broker: BrokerProcess, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "groupcoord", "groups", *args],
        capture_output=True,
        text=True,
        timeout=60,
    )


def table(text: str, first_header: str) -> list[list[str]]:
    """The rows (split on whitespace) of the aligned table whose header starts with ``first_header``."""
    lines = text.splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith(first_header + " "))
    rows = []
    for line in lines[start + 1 :]:
        if not line.strip():
            break
        rows.append(line.split())
    return rows


def heading(text: str) -> dict[str, str]:
    out = {}
    for line in text.splitlines():
        if not line.strip():
            break
        key, _, value = line.partition(":")
        out[key] = value.strip()
    return out


def consumer(broker: BrokerProcess, client_id: str) -> Any:
    return Consumer(
        {
            "bootstrap.servers": broker.bootstrap,
            "group.id": GROUP,
            "client.id": client_id,
            "enable.auto.commit": False,
            "session.timeout.ms": 6000,
            "heartbeat.interval.ms": 300,
            "partition.assignment.strategy": "range",
        }
    )


def poll_until(consumers: list[Any], done: Any, what: str, timeout: float = 20.0) -> None:
    deadline = time.monotonic() + timeout
    while not done():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {what}")
        for c in consumers:
            c.poll(0.05)


def owned(c: Any) -> list[int]:
    return sorted(tp.partition for tp in c.assignment())


@pytest.fixture(scope="module")
def cli_broker(tmp_path_factory: pytest.TempPathFactory) -> Iterator[BrokerProcess]:
    base = tmp_path_factory.mktemp("cli")
    b = BrokerProcess(base / "data", settings=SETTINGS)
    b.start()
    try:
        admin = AdminClient({"bootstrap.servers": b.bootstrap})  # kept alive until the result
        admin.create_topics([NewTopic(TOPIC, 3, 1)])[TOPIC].result(15)
        p = Producer({"bootstrap.servers": b.bootstrap})
        for partition, n in PRODUCED.items():
            for i in range(n):
                p.produce(TOPIC, f"v{i}".encode(), partition=partition)
        assert p.flush(15) == 0
        yield b
    finally:
        b.stop()


@pytest.fixture(scope="module")
def group(cli_broker: BrokerProcess) -> Iterator[dict[str, Any]]:
    """Two confluent-kafka consumers, Stable in generation 2 (alpha joined first and leads):
    alpha owns partitions 0 and 1 and committed 4 on 0; beta owns 2 and committed 25."""
    alpha = consumer(cli_broker, "c-alpha")
    beta = consumer(cli_broker, "c-beta")
    try:
        alpha.subscribe([TOPIC])
        poll_until([alpha], lambda: owned(alpha) == [0, 1, 2], "alpha alone in generation 1")
        beta.subscribe([TOPIC])
        poll_until(
            [alpha, beta],
            lambda: owned(alpha) == [0, 1] and owned(beta) == [2],
            "the range assignment of generation 2",
        )
        alpha.commit(offsets=[TopicPartition(TOPIC, 0, 4)], asynchronous=False)
        beta.commit(offsets=[TopicPartition(TOPIC, 2, 25)], asynchronous=False)
        yield {"alpha": alpha, "beta": beta}
    finally:
        for c in (alpha, beta):
            with contextlib.suppress(RuntimeError):  # already closed by a test
                c.close()


def test_describe_shows_state_generation_leader_members_and_lag_per_partition(
    cli_broker: BrokerProcess, group: dict[str, Any]
) -> None:
    alpha_id, beta_id = group["alpha"].memberid(), group["beta"].memberid()
    r = cli(cli_broker, "describe", GROUP, "--bootstrap", cli_broker.bootstrap)
    assert r.returncode == 0, r.stderr
    head = heading(r.stdout)
    assert head == {
        "Group": GROUP,
        "Coordinator": cli_broker.bootstrap,
        "Type": "classic",
        "State": "Stable",
        "Protocol type": "consumer",
        "Protocol": "range",
        "Generation": "2",
        "Leader": alpha_id,
        "Members": "2",
    }
    assert table(r.stdout, "MEMBER-ID") == [
        [alpha_id, "-", "c-alpha", "/127.0.0.1", f"{TOPIC}:0,1"],
        [beta_id, "-", "c-beta", "/127.0.0.1", f"{TOPIC}:2"],
    ]
    # partition, committed, log end, lag, owner member id, host, owner client id
    assert table(r.stdout, "TOPIC") == [
        [TOPIC, "0", "4", "10", "6", alpha_id, "/127.0.0.1", "c-alpha"],
        [TOPIC, "1", "-", "20", "-", alpha_id, "/127.0.0.1", "c-alpha"],
        [TOPIC, "2", "25", "30", "5", beta_id, "/127.0.0.1", "c-beta"],
    ]


def test_describe_json_carries_the_same_facts(cli_broker: BrokerProcess, group: dict[str, Any]) -> None:
    r = cli(cli_broker, "describe", GROUP, "--bootstrap", cli_broker.bootstrap, "--json")
    assert r.returncode == 0, r.stderr
    d = json.loads(r.stdout)
    assert (d["state"], d["protocol"], d["generation"], d["leader"]) == (
        "Stable",
        "range",
        2,
        group["alpha"].memberid(),
    )
    assert [(m["client_id"], m["assignment"]) for m in d["members"]] == [
        ("c-alpha", [[TOPIC, [0, 1]]]),
        ("c-beta", [[TOPIC, [2]]]),
    ]
    assert [
        (p["partition"], p["client_id"], p["committed"], p["log_end"], p["lag"]) for p in d["partitions"]
    ] == [
        (0, "c-alpha", 4, 10, 6),
        (1, "c-alpha", None, 20, None),
        (2, "c-beta", 25, 30, 5),
    ]


def test_list_shows_groups_and_filters_by_state(cli_broker: BrokerProcess, group: dict[str, Any]) -> None:
    # An offsets-only ("simple") group: Empty, no protocol type.
    simple = Consumer({"bootstrap.servers": cli_broker.bootstrap, "group.id": "cli-simple"})
    try:
        simple.commit(offsets=[TopicPartition(TOPIC, 1, 7)], asynchronous=False)
    finally:
        simple.close()
    r = cli(cli_broker, "list", "--bootstrap", cli_broker.bootstrap)
    assert r.returncode == 0, r.stderr
    assert table(r.stdout, "GROUP") == [
        [GROUP, "classic", "Stable", "consumer"],
        ["cli-simple", "classic", "Empty", "-"],
    ]
    r = cli(cli_broker, "list", "--bootstrap", cli_broker.bootstrap, "--state", "empty")
    assert table(r.stdout, "GROUP") == [["cli-simple", "classic", "Empty", "-"]]
    r = cli(cli_broker, "list", "--bootstrap", cli_broker.bootstrap, "--state", "Stable,PreparingRebalance")
    assert table(r.stdout, "GROUP") == [[GROUP, "classic", "Stable", "consumer"]]
    r = cli(cli_broker, "list", "--bootstrap", cli_broker.bootstrap, "--json", "--state", "Empty")
    assert json.loads(r.stdout) == [
        {"group_id": "cli-simple", "state": "Empty", "protocol_type": "", "group_type": "classic"}
    ]
    r = cli(cli_broker, "describe", "cli-simple", "--bootstrap", cli_broker.bootstrap)
    assert (heading(r.stdout)["State"], heading(r.stdout)["Generation"], heading(r.stdout)["Members"]) == (
        "Empty",
        "-",  # a simple group never wrote GroupMetadata
        "0",
    )
    assert table(r.stdout, "TOPIC") == [[TOPIC, "1", "7", "20", "13", "-", "-", "-"]]


def test_describe_after_everyone_left_shows_empty_group_with_its_offsets(
    cli_broker: BrokerProcess, group: dict[str, Any]
) -> None:
    alpha, beta = group["alpha"], group["beta"]
    beta.close()
    poll_until([alpha], lambda: owned(alpha) == [0, 1, 2], "alpha alone in generation 3")
    alpha.close()
    deadline = time.monotonic() + 15
    while True:
        r = cli(cli_broker, "describe", GROUP, "--bootstrap", cli_broker.bootstrap)
        if heading(r.stdout).get("State") == "Empty" or time.monotonic() > deadline:
            break
    head = heading(r.stdout)
    # The last member leaving completes a join with nobody: generation 4, written as an Empty
    # GroupMetadata record without protocol or leader.
    assert (head["State"], head["Protocol"], head["Generation"], head["Leader"], head["Members"]) == (
        "Empty",
        "-",
        "4",
        "-",
        "0",
    )
    assert table(r.stdout, "TOPIC") == [
        [TOPIC, "0", "4", "10", "6", "-", "-", "-"],
        [TOPIC, "2", "25", "30", "5", "-", "-", "-"],
    ]


def test_describe_unknown_group_and_unreachable_broker(cli_broker: BrokerProcess) -> None:
    r = cli(cli_broker, "describe", "cli-nobody", "--bootstrap", cli_broker.bootstrap)
    assert r.returncode == 1  # like kafka-consumer-groups.sh, an unknown group is an error
    assert r.stderr == "groupcoord groups: group 'cli-nobody' does not exist\n"
    assert heading(r.stdout)["State"] == "Dead"
    assert "Group 'cli-nobody' does not exist (or was deleted)." in r.stdout
    r = cli(cli_broker, "list", "--bootstrap", "127.0.0.1:1", "--timeout", "2")
    assert r.returncode == 1
    assert r.stderr.startswith("groupcoord groups: cannot connect to 127.0.0.1:1")


def test_describe_during_a_rebalance_reports_the_last_completed_generation(cli_broker: BrokerProcess) -> None:
    # Raw-wire members (no client library) so the group can be held in PreparingRebalance.
    from test_groups_wire import Wire, join, send_join, stable_single

    a, b = Wire(cli_broker.port, "raw-a"), Wire(cli_broker.port, "raw-b")
    try:
        a_id, _ = stable_single(a, "cli-rebalancing")
        pending = join(b, "cli-rebalancing")
        send_join(b, "cli-rebalancing", pending.member_id)  # parked until A rejoins
        r = cli(cli_broker, "describe", "cli-rebalancing", "--bootstrap", cli_broker.bootstrap)
        assert r.returncode == 0, r.stderr
        head = heading(r.stdout)
        assert (head["State"], head["Protocol"], head["Generation"], head["Leader"], head["Members"]) == (
            "PreparingRebalance",
            "-",
            "1 (last completed generation; a rebalance is in progress)",
            a_id,
            "2",
        )
        assert sorted(table(r.stdout, "MEMBER-ID")) == sorted(
            [[a_id, "-", "raw-a", "/127.0.0.1", "-"], [pending.member_id, "-", "raw-b", "/127.0.0.1", "-"]]
        )
    finally:
        a.close()
        b.close()
