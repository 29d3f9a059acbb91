"""``groupcoord groups reset-offsets|delete|delete-offsets`` and ``groupcoord topics ...`` end to end:
a broker process, offsets committed by confluent-kafka, the CLI run as its own process, and every
change read back with a real client.

Reset semantics follow Kafka's ConsumerGroupCommand
(tools/src/main/java/org/apache/kafka/tools/consumer/group/ConsumerGroupCommand.java):
``prepareOffsetsToReset`` puts ``--to-offset`` and ``--shift-by`` through ``checkOffsetsRange`` (an
offset outside [log start, log end] moves to the nearer end) and, for ``--to-datetime``, takes the
offset ListOffsets gives for the time (the log end when there is none); ``resetOffsets`` refuses a
group that is not Empty or Dead ("Assignments can only be reset if the group ... is inactive"), and
nothing is committed without ``--execute`` (ResetConsumerGroupOffsetTest). Where Kafka prints that
refusal and exits 0, we exit 1 (issue 15: errors exit non-zero).
"""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Iterator
from typing import Any

import pytest
from confluent_kafka import Consumer, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic
from conftest import BrokerProcess

TOPIC = "rs-orders"
RECORDS = 10  # per partition, record i at T0 + i seconds
T0 = 1_700_000_000_000
SETTINGS = ("group.initial.rebalance.delay.ms=0", "group.min.session.timeout.ms=1000")


def run(broker: BrokerProcess, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "groupcoord", *args, "--bootstrap", broker.bootstrap],
        capture_output=True,
        text=True,
        timeout=60,
    )


@pytest.fixture(scope="module")
def rs_broker(tmp_path_factory: pytest.TempPathFactory) -> Iterator[BrokerProcess]:
    b = BrokerProcess(tmp_path_factory.mktemp("rs") / "data", settings=SETTINGS)
    b.start()
    try:
        admin = AdminClient({"bootstrap.servers": b.bootstrap})
        admin.create_topics([NewTopic(TOPIC, 2, 1)])[TOPIC].result(15)
        p = Producer({"bootstrap.servers": b.bootstrap, "linger.ms": 0})
        for partition in (0, 1):
            for i in range(RECORDS):
                p.produce(TOPIC, f"v{i}".encode(), partition=partition, timestamp=T0 + i * 1000)
                p.flush(15)  # one batch per record: ListOffsets by time resolves to the record
        assert p.flush(15) == 0
        yield b
    finally:
        b.stop()


def _client(broker: BrokerProcess, group: str) -> Any:
    return Consumer({"bootstrap.servers": broker.bootstrap, "group.id": group, "enable.auto.commit": False})


def commit(broker: BrokerProcess, group: str, offsets: dict[int, int]) -> None:
    """Commit as a consumer that never joins (the group stays Empty)."""
    c = _client(broker, group)
    try:
        c.commit(offsets=[TopicPartition(TOPIC, p, o) for p, o in offsets.items()], asynchronous=False)
    finally:
        c.close()


def committed(broker: BrokerProcess, group: str) -> dict[int, int]:
    c = _client(broker, group)
    try:
        got = c.committed([TopicPartition(TOPIC, 0), TopicPartition(TOPIC, 1)], timeout=15)
    finally:
        c.close()
    return {tp.partition: tp.offset for tp in got if tp.offset >= 0}


MODES = [
    (("--to-earliest",), {0: 0, 1: 0}),
    (("--to-latest",), {0: RECORDS, 1: RECORDS}),
    (("--to-offset", "3"), {0: 3, 1: 3}),
    (("--to-offset", "99"), {0: RECORDS, 1: RECORDS}),  # past the log end: the log end
    (("--shift-by", "-2"), {0: 3, 1: 5}),
    (("--shift-by", "-20"), {0: 0, 1: 0}),  # before the log start: the log start
    (("--shift-by", "4"), {0: 9, 1: RECORDS}),
    (("--to-datetime", "2023-11-14T22:13:24.000Z"), {0: 4, 1: 4}),  # T0 + 4 s
    (("--to-datetime", str(T0 + 3_500)), {0: 4, 1: 4}),  # the first record at or after the time
    (("--to-datetime", "2030-01-01T00:00:00"), {0: RECORDS, 1: RECORDS}),  # none: the log end
]


@pytest.mark.parametrize(
    ("mode", "expected"), MODES, ids=lambda v: "_".join(v) if isinstance(v, tuple) else ""
)
def test_reset_offsets_dry_run_changes_nothing_and_execute_commits_the_shown_offsets(
    rs_broker: BrokerProcess, mode: tuple[str, ...], expected: dict[int, int]
) -> None:
    group = "rs-" + "-".join(mode).replace(":", "").replace(".", "")
    commit(rs_broker, group, {0: 5, 1: 7})
    args = ("groups", "reset-offsets", "--group", group, "--topic", TOPIC, *mode, "--json")
    dry = run(rs_broker, *args)
    assert dry.returncode == 0, dry.stderr
    shown = json.loads(dry.stdout)
    assert shown["executed"] is False
    assert {r["partition"]: (r["current"], r["new_offset"]) for r in shown["offsets"]} == {
        0: (5, expected[0]),
        1: (7, expected[1]),
    }
    assert "dry run" in dry.stderr
    assert committed(rs_broker, group) == {0: 5, 1: 7}

    done = run(rs_broker, *args, "--execute")
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["executed"] is True
    assert committed(rs_broker, group) == expected


def test_reset_offsets_of_named_partitions_and_of_all_groups(rs_broker: BrokerProcess) -> None:
    commit(rs_broker, "rs-all-a", {0: 5, 1: 5})
    commit(rs_broker, "rs-all-b", {0: 6})
    r = run(
        rs_broker,
        "groups",
        "reset-offsets",
        "--group",
        "rs-all-a",
        "--topic",
        f"{TOPIC}:1",
        "--to-earliest",
        "--execute",
    )
    assert r.returncode == 0, r.stderr
    assert committed(rs_broker, "rs-all-a") == {0: 5, 1: 0}
    r = run(rs_broker, "groups", "reset-offsets", "--all-groups", "--all-topics", "--to-latest", "--execute")
    assert r.returncode == 0, r.stderr
    assert committed(rs_broker, "rs-all-a") == {0: RECORDS, 1: RECORDS}
    assert committed(rs_broker, "rs-all-b") == {0: RECORDS}  # only what it had committed


def test_reset_offsets_of_an_active_group_is_refused(rs_broker: BrokerProcess) -> None:
    c = Consumer(
        {
            "bootstrap.servers": rs_broker.bootstrap,
            "group.id": "rs-active",
            "enable.auto.commit": False,
            "session.timeout.ms": 6000,
        }
    )
    try:
        c.subscribe([TOPIC])
        for _ in range(400):
            c.poll(0.05)
            if c.assignment():
                break
        assert c.assignment(), "the consumer never got its partitions"
        c.commit(offsets=[TopicPartition(TOPIC, 0, 2)], asynchronous=False)
        r = run(
            rs_broker,
            "groups",
            "reset-offsets",
            "--group",
            "rs-active",
            "--all-topics",
            "--to-earliest",
            "--execute",
        )
        assert r.returncode == 1
        assert (
            "Assignments can only be reset if the group 'rs-active' is inactive, "
            "but the current state is Stable." in r.stderr
        )
        got = c.committed([TopicPartition(TOPIC, 0)], timeout=15)
        assert got[0].offset == 2
    finally:
        c.close()


def test_reset_offsets_without_a_target_or_scope_is_a_usage_error(rs_broker: BrokerProcess) -> None:
    r = run(rs_broker, "groups", "reset-offsets", "--group", "rs-x", "--topic", TOPIC)
    assert r.returncode == 2
    assert "--to-earliest" in r.stderr
    r = run(rs_broker, "groups", "reset-offsets", "--group", "rs-x", "--to-earliest")
    assert r.returncode == 2
    assert "--all-topics" in r.stderr


def test_delete_groups_and_unknown_group_exit_status(rs_broker: BrokerProcess) -> None:
    """DeleteGroups: an Empty group goes (GroupCoordinator.handleDeleteGroups); an unknown one is
    GROUP_ID_NOT_FOUND and the command exits 1."""
    commit(rs_broker, "rs-del-a", {0: 1})
    commit(rs_broker, "rs-del-b", {1: 1})
    r = run(rs_broker, "groups", "delete", "--group", "rs-del-a", "--group", "rs-del-b", "--json")
    assert r.returncode == 0, r.stderr
    assert json.loads(r.stdout) == {"rs-del-a": "ok", "rs-del-b": "ok"}
    assert committed(rs_broker, "rs-del-a") == {}
    r = run(rs_broker, "groups", "describe", "rs-del-a")
    assert r.returncode == 1
    assert "group 'rs-del-a' does not exist" in r.stderr
    r = run(rs_broker, "groups", "delete", "--group", "rs-del-a")
    assert r.returncode == 1
    assert r.stdout.split() == ["GROUP", "RESULT", "rs-del-a", "GROUP_ID_NOT_FOUND"]


def test_delete_offsets_removes_only_the_named_partitions(rs_broker: BrokerProcess) -> None:
    commit(rs_broker, "rs-deloff", {0: 3, 1: 4})
    r = run(rs_broker, "groups", "delete-offsets", "--group", "rs-deloff", "--topic", f"{TOPIC}:0", "--json")
    assert r.returncode == 0, r.stderr
    assert json.loads(r.stdout) == [{"topic": TOPIC, "partition": 0, "result": "ok"}]
    assert committed(rs_broker, "rs-deloff") == {1: 4}


def test_bad_state_name_is_a_usage_error_with_a_suggestion(rs_broker: BrokerProcess) -> None:
    r = run(rs_broker, "groups", "list", "--state", "Stabel")
    assert r.returncode == 2
    assert r.stdout == ""
    assert "unknown group state 'Stabel' (did you mean Stable?)" in r.stderr
    r = run(rs_broker, "groups", "list", "--state", "empty", "--json")
    assert r.returncode == 0, r.stderr
    assert all(g["state"] == "Empty" for g in json.loads(r.stdout))


def test_topic_verbs_create_list_describe_alter_delete(rs_broker: BrokerProcess) -> None:
    r = run(rs_broker, "topics", "create", "tv-a", "--partitions", "2", "--config", "cleanup.policy=compact")
    assert r.returncode == 0, r.stderr
    r = run(rs_broker, "topics", "create", "tv-a", "--partitions", "2")
    assert r.returncode == 1
    assert "TOPIC_ALREADY_EXISTS" in r.stderr
    r = run(rs_broker, "topics", "list", "--json")
    assert r.returncode == 0, r.stderr
    names = json.loads(r.stdout)
    assert "tv-a" in names and TOPIC in names and "__consumer_offsets" not in names
    r = run(rs_broker, "topics", "alter", "tv-a", "--partitions", "3")
    assert r.returncode == 0, r.stderr
    r = run(rs_broker, "topics", "describe", "tv-a", "--json")
    assert r.returncode == 0, r.stderr
    (d,) = json.loads(r.stdout)
    assert [p["partition"] for p in d["partitions"]] == [0, 1, 2]
    assert d["configs"] == {"cleanup.policy": "compact"}
    meta = AdminClient({"bootstrap.servers": rs_broker.bootstrap}).list_topics(timeout=15)
    assert len(meta.topics["tv-a"].partitions) == 3
    r = run(rs_broker, "topics", "delete", "tv-a", "tv-missing", "--json")
    assert r.returncode == 1
    assert json.loads(r.stdout) == {"tv-a": "ok", "tv-missing": "UNKNOWN_TOPIC_OR_PARTITION"}
    r = run(rs_broker, "topics", "list", "--json")
    assert "tv-a" not in json.loads(r.stdout)


def test_topic_alter_config_uses_incremental_alter_configs_or_names_it(rs_broker: BrokerProcess) -> None:
    from groupcoord.admin.client import INCREMENTAL_ALTER_CONFIGS
    from groupcoord.admin.client import AdminClient as WireAdmin

    with WireAdmin(rs_broker.bootstrap) as wire:
        served = wire.bootstrap.serves(INCREMENTAL_ALTER_CONFIGS)
    run(rs_broker, "topics", "create", "tv-conf", "--partitions", "1")
    r = run(rs_broker, "topics", "alter", "tv-conf", "--config", "retention.ms=60000")
    if served:
        assert r.returncode == 0, r.stderr
        d = json.loads(run(rs_broker, "topics", "describe", "tv-conf", "--json").stdout)[0]
        assert d["configs"] == {"retention.ms": "60000"}
    else:
        assert r.returncode == 1
        assert "serves neither IncrementalAlterConfigs nor AlterConfigs" in r.stderr


def test_describe_all_groups_lists_every_group_and_needs_a_target(rs_broker: BrokerProcess) -> None:
    commit(rs_broker, "rs-desc-a", {0: 2})
    commit(rs_broker, "rs-desc-b", {1: 3})
    r = run(rs_broker, "groups", "describe", "--all-groups", "--json")
    assert r.returncode == 0, r.stderr
    described = {d["group_id"]: d for d in json.loads(r.stdout)}
    assert {"rs-desc-a", "rs-desc-b"} <= set(described)
    assert [
        (p["partition"], p["committed"], p["log_end"], p["lag"]) for p in described["rs-desc-b"]["partitions"]
    ] == [(1, 3, RECORDS, RECORDS - 3)]
    r = run(rs_broker, "groups", "describe")
    assert r.returncode == 2
    assert "name a GROUP or give --all-groups" in r.stderr
