"""Dynamic group configs (KIP-848, Kafka 4.x ``GroupConfig``): confluent-kafka's AdminClient sets
``consumer.heartbeat.interval.ms`` / ``consumer.session.timeout.ms`` of one group with
IncrementalAlterConfigs on a GROUP resource and reads them with DescribeConfigs; the group's next
ConsumerGroupHeartbeat hands out the new interval; bad values get INVALID_CONFIG with Kafka's
messages; the overrides survive a restart. Mirrors
``GroupMetadataManagerTest#testConsumerGroupDynamicConfigs`` and ``GroupConfigTest``
(group-coordinator module) with a real client over 127.0.0.1.
"""

from __future__ import annotations

import datetime
from collections.abc import Iterator
from typing import Any

import pytest
from confluent_kafka import KafkaException
from confluent_kafka.admin import (
    AdminClient,
    AlterConfigOpType,
    ConfigEntry,
    ConfigResource,
    ConfigSource,
    ResourceType,
)
from kio.schema.consumer_group_heartbeat.v1.request import ConsumerGroupHeartbeatRequest
from kio.static.primitive import i32Timedelta

from groupcoord.protocol.client import WireClient
from groupcoord.protocol.registry import load_messages
from groupcoord.testing import Broker

pytestmark = pytest.mark.e2e

TOPIC = "tcfg"


@pytest.fixture
def broker() -> Iterator[Broker]:
    with Broker({"group.initial.rebalance.delay.ms": 0}) as b:
        b.create_topic(TOPIC, 2)
        yield b


def alter(admin: AdminClient, group: str, *entries: tuple[str, str | None]) -> None:
    entries_ = [
        ConfigEntry(
            name,
            value,
            incremental_operation=AlterConfigOpType.SET if value is not None else AlterConfigOpType.DELETE,
        )
        for name, value in entries
    ]
    resource = ConfigResource(ResourceType.GROUP, group, incremental_configs=entries_)
    admin.incremental_alter_configs([resource])[resource].result(20)


def describe(admin: AdminClient, group: str) -> dict[str, Any]:
    resource = ConfigResource(ResourceType.GROUP, group)
    return admin.describe_configs([resource])[resource].result(20)


def interval_handed_out(broker: Broker, group: str) -> int:
    """A consumer-protocol member's first heartbeat over the wire: the interval it is given."""
    host, port = broker.bootstrap.split(":")
    with WireClient(host, int(port)) as c:
        response = c.call_entity(
            load_messages(68, 1),
            ConsumerGroupHeartbeatRequest(
                group_id=group,
                member_id="m-" + group,
                member_epoch=0,
                instance_id=None,
                rack_id=None,
                rebalance_timeout=i32Timedelta.parse(datetime.timedelta(seconds=30)),
                subscribed_topic_names=(TOPIC,),
                subscribed_topic_regex=None,
                server_assignor=None,
                topic_partitions=(),
            ),
        )
    assert int(response.error_code) == 0, response
    return int(response.heartbeat_interval.total_seconds() * 1000)


def test_group_configs_are_set_described_applied_and_kept_across_a_restart(broker: Broker) -> None:
    admin = AdminClient({"bootstrap.servers": broker.bootstrap})
    before = describe(admin, "g1")
    assert before["consumer.heartbeat.interval.ms"].value == "5000"
    assert before["consumer.session.timeout.ms"].value == "45000"
    assert before["consumer.session.timeout.ms"].source == ConfigSource.DEFAULT_CONFIG.value
    assert before["consumer.assignment.interval.ms"].value == "1000"  # Kafka 4.3 (KAFKA-20251)

    alter(
        admin,
        "g1",
        ("consumer.heartbeat.interval.ms", "6000"),
        ("consumer.session.timeout.ms", "50000"),
        ("consumer.assignment.interval.ms", "0"),
    )
    after = describe(admin, "g1")
    assert after["consumer.assignment.interval.ms"].value == "0"
    assert after["consumer.assignment.interval.ms"].source == ConfigSource.GROUP_CONFIG.value
    assert after["consumer.heartbeat.interval.ms"].value == "6000"
    assert after["consumer.session.timeout.ms"].value == "50000"
    assert after["consumer.session.timeout.ms"].source == ConfigSource.GROUP_CONFIG.value
    assert describe(admin, "g2")["consumer.heartbeat.interval.ms"].value == "5000"
    assert interval_handed_out(broker, "g1") == 6000
    assert interval_handed_out(broker, "g2") == 5000

    broker.restart()
    admin = AdminClient({"bootstrap.servers": broker.bootstrap})
    assert describe(admin, "g1")["consumer.heartbeat.interval.ms"].value == "6000"
    assert describe(admin, "g1")["consumer.session.timeout.ms"].value == "50000"
    assert describe(admin, "g1")["consumer.assignment.interval.ms"].value == "0"
    assert interval_handed_out(broker, "g1") == 6000  # its member rejoins the reloaded group
    alter(admin, "g4", ("consumer.heartbeat.interval.ms", "7000"))
    assert interval_handed_out(broker, "g4") == 7000

    alter(admin, "g1", ("consumer.heartbeat.interval.ms", None))
    assert describe(admin, "g1")["consumer.heartbeat.interval.ms"].value == "5000"


@pytest.mark.parametrize(
    ("entries", "message"),
    [
        ((("consumer.heartbeat.interval.ms", "4000"),), "must be greater than or equal to"),
        ((("consumer.heartbeat.interval.ms", "16000"),), "must be less than or equal to"),
        ((("consumer.session.timeout.ms", "61000"),), "must be less than or equal to"),
        (
            (("consumer.assignment.interval.ms", "15001"),),
            "consumer.assignment.interval.ms must be less than or equal to",
        ),
        ((("consumer.heartbeat.interval.ms", "soon"),), "Not a number of type INT"),
        ((("consumer.poll.ms", "1"),), "Unknown group config name: consumer.poll.ms"),
    ],
)
def test_bad_group_configs_are_invalid_config(
    broker: Broker, entries: tuple[tuple[str, str], ...], message: str
) -> None:
    """``GroupConfig.validate``: the broker's bounds and known names, else INVALID_CONFIG;
    nothing is stored."""
    admin = AdminClient({"bootstrap.servers": broker.bootstrap})
    with pytest.raises(KafkaException) as caught:
        alter(admin, "g", *entries)
    error = caught.value.args[0]
    assert error.name() == "INVALID_CONFIG", error
    assert message in error.str()
    assert describe(admin, "g")["consumer.heartbeat.interval.ms"].value == "5000"
