"""``groupcoord topics alter --config/--delete-config`` (IncrementalAlterConfigs) and
``groupcoord topics delete-records`` (DeleteRecords) against an in-process broker, read back
with confluent-kafka."""

from __future__ import annotations

import json
from collections.abc import Iterator

import pytest
from confluent_kafka import Consumer, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, ConfigResource, ConfigSource, NewTopic

from groupcoord.cli import main
from groupcoord.testing import Broker


@pytest.fixture(scope="module")
def broker() -> Iterator[Broker]:
    with Broker() as b:
        admin = AdminClient({"bootstrap.servers": b.bootstrap})
        for fut in admin.create_topics([NewTopic("cli-t", 2, 1)]).values():
            fut.result(timeout=20)
        p = Producer({"bootstrap.servers": b.bootstrap, "linger.ms": 0})
        for i in range(10):
            for partition in (0, 1):
                p.produce("cli-t", value=f"v{i}".encode(), partition=partition)
        assert p.flush(20) == 0
        del p  # destroyed now: a live producer would retry the stopped broker for the rest of the run
        yield b


def cli(broker: Broker, capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str, str]:
    status = main([*args, "--bootstrap", broker.bootstrap])
    out = capsys.readouterr()
    return status, out.out, out.err


def test_topics_alter_config_and_delete_config(broker: Broker, capsys: pytest.CaptureFixture[str]) -> None:
    status, out, err = cli(
        broker,
        capsys,
        "topics",
        "alter",
        "cli-t",
        "--config",
        "retention.ms=60000",
        "--config",
        "compression.type=lz4",
    )
    assert (status, out) == (0, "Altered topic cli-t.\n"), err
    admin = AdminClient({"bootstrap.servers": broker.bootstrap})
    (fut,) = admin.describe_configs([ConfigResource("topic", "cli-t")]).values()
    got = fut.result(timeout=20)
    assert (got["retention.ms"].value, got["retention.ms"].source) == (
        "60000",
        ConfigSource.DYNAMIC_TOPIC_CONFIG.value,
    )
    assert got["compression.type"].value == "lz4"
    status, _out, err = cli(broker, capsys, "topics", "alter", "cli-t", "--delete-config", "retention.ms")
    assert status == 0, err
    status, out, _err = cli(broker, capsys, "topics", "describe", "cli-t", "--json")
    assert json.loads(out)[0]["configs"] == {"compression.type": "lz4"}
    status, _out, err = cli(broker, capsys, "topics", "alter", "cli-t", "--config", "retention.mss=1")
    assert status == 1
    assert "INVALID_CONFIG" in err and "retention.mss" in err


def test_topics_delete_records_moves_the_start_of_each_partition(
    broker: Broker, capsys: pytest.CaptureFixture[str]
) -> None:
    status, out, err = cli(
        broker, capsys, "topics", "delete-records", "cli-t", "--offset", "4", "--partition", "0", "--json"
    )
    assert (status, json.loads(out)) == (0, {"0": 4}), err
    status, out, err = cli(broker, capsys, "topics", "delete-records", "cli-t", "--offset", "-1")
    assert status == 0, err
    assert out.split() == ["PARTITION", "LOW_WATERMARK", "0", "10", "1", "10"]
    status, out, _err = cli(broker, capsys, "topics", "delete-records", "cli-t", "--offset", "99", "--json")
    assert (status, json.loads(out)) == (1, {"0": "OFFSET_OUT_OF_RANGE", "1": "OFFSET_OUT_OF_RANGE"})
    c = Consumer({"bootstrap.servers": broker.bootstrap, "group.id": "cli-wm"})
    try:
        assert c.get_watermark_offsets(TopicPartition("cli-t", 1), timeout=10) == (10, 10)
    finally:
        c.close()
