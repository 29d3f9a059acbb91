"""Consumer configuration: Kafka's key names, the Java client's defaults, clear errors."""

from __future__ import annotations

import pytest

from groupcoord.client.config import ConsumerConfig
from groupcoord.client.consumer_core import ConsumerCoordinator
from groupcoord.client.errors import ConfigError


def test_defaults_are_the_java_clients() -> None:
    """ConsumerConfig / CommonClientConfigs defaults (session 45 s, heartbeat 3 s, poll 300 s,
    range + cooperative-sticky, auto-commit every 5 s, retry backoff 100 ms up to 1 s)."""
    c = ConsumerConfig.from_dict({"group.id": "g"})
    assert c.session_timeout_ms == 45_000
    assert c.heartbeat_interval_ms == 3_000
    assert c.max_poll_interval_ms == 300_000
    assert c.partition_assignment_strategy == "range,cooperative-sticky"
    assert c.strategies == ("range", "cooperative-sticky")
    assert c.enable_auto_commit is True and c.auto_commit_interval_ms == 5_000
    assert c.auto_offset_reset == "latest" and c.isolation_level == "read_uncommitted"
    assert (c.retry_backoff_ms, c.retry_backoff_max_ms) == (100, 1_000)
    assert (c.fetch_min_bytes, c.fetch_max_wait_ms, c.max_partition_fetch_bytes) == (1, 500, 1_048_576)
    assert c.group_instance_id is None and not c.is_static


def test_default_strategy_runs_the_eager_protocol() -> None:
    """[range, cooperative-sticky]: range supports only EAGER, so the group rebalances eagerly;
    cooperative-sticky alone runs COOPERATIVE (ConsumerCoordinatorTest.testSelectRebalanceProtocol)."""
    core = ConsumerCoordinator(ConsumerConfig.from_dict({"group.id": "g"}))
    assert [a.name for a in core.assignors] == ["range", "cooperative-sticky"]
    assert core.rebalance_protocol.name == "EAGER"
    coop = ConsumerCoordinator(
        ConsumerConfig.from_dict({"group.id": "g", "partition.assignment.strategy": "cooperative-sticky"})
    )
    assert coop.rebalance_protocol.name == "COOPERATIVE"


def test_every_issue_key_is_accepted() -> None:
    keys = {
        "bootstrap.servers": "127.0.0.1:9092",
        "group.id": "g",
        "group.instance.id": "i",
        "client.id": "c",
        "session.timeout.ms": "10000",
        "heartbeat.interval.ms": 1000,
        "max.poll.interval.ms": 60000,
        "partition.assignment.strategy": "roundrobin",
        "enable.auto.commit": "false",
        "auto.commit.interval.ms": 100,
        "auto.offset.reset": "earliest",
        "fetch.min.bytes": 10,
        "fetch.max.wait.ms": 100,
        "max.partition.fetch.bytes": 1000,
        "isolation.level": "read_committed",
    }
    c = ConsumerConfig.from_dict(keys)
    assert c.session_timeout_ms == 10_000 and c.enable_auto_commit is False and c.is_static
    assert set(keys) <= set(ConsumerConfig.keys())


@pytest.mark.parametrize(
    ("settings", "named"),
    [
        ({"group.idd": "g"}, "group.idd"),
        ({"session.timeout.ms": "soon"}, "session.timeout.ms"),
        ({"enable.auto.commit": "yes"}, "enable.auto.commit"),
        ({"auto.offset.reset": "middle"}, "auto.offset.reset"),
        ({"isolation.level": "serializable"}, "isolation.level"),
        ({"heartbeat.interval.ms": 45_000}, "heartbeat.interval.ms"),
        ({"group.instance.id": ""}, "group.instance.id"),
        ({"max.poll.interval.ms": 0}, "max.poll.interval.ms"),
    ],
)
def test_bad_key_or_value_is_a_config_error_naming_the_key(settings: dict[str, object], named: str) -> None:
    with pytest.raises(ConfigError) as e:
        ConsumerConfig.from_dict(settings)
    assert named in str(e.value)


def test_unknown_assignor_is_a_config_error() -> None:
    with pytest.raises(ConfigError, match="sticki"):
        ConsumerCoordinator(
            ConsumerConfig.from_dict({"group.id": "g", "partition.assignment.strategy": "sticki"})
        )
