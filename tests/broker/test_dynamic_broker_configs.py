"""Dynamic broker configs beyond the log synonyms: AlterConfigs / IncrementalAlterConfigs on the
broker resource accept what Kafka updates at run time, store it, keep it across a restart and
describe it with Kafka's source; the rest gets Kafka's error (issue 27, librdkafka's 0081).

Kafka's behaviour cited: ``DynamicBrokerConfig`` (``AllDynamicConfigs``, ``PerBrokerConfigs``,
``validateConfigs``: "Cannot update these configs dynamically", the SSL configs dynamic only
per listener, "Cannot update these configs at default cluster level, broker id must be
specified"), ``DynamicThreadPool.validateReconfiguration`` (half / double the current size),
``ConfigAdminManager.validateBrokerConfigChange`` (every ConfigException is INVALID_REQUEST,
KAFKA-13609) and ``DynamicBrokerConfigTest`` (``testSecurityConfigs``,
``testUpdateDynamicThreadPool``, ``testLogRetentionTimeMinutesIsNotDynamicallyReconfigurable``).
confluent-kafka cannot name the cluster-wide resource (""): those calls go over the raw wire.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from confluent_kafka import KafkaError, KafkaException
from confluent_kafka.admin import AdminClient, AlterConfigOpType, ConfigEntry, ConfigResource, ConfigSource

from groupcoord.protocol.client import WireClient
from groupcoord.testing import Broker

SET, DELETE, APPEND, SUBTRACT = (
    AlterConfigOpType.SET,
    AlterConfigOpType.DELETE,
    AlterConfigOpType.APPEND,
    AlterConfigOpType.SUBTRACT,
)
DYNAMIC_BROKER = ConfigSource.DYNAMIC_BROKER_CONFIG.value
DYNAMIC_DEFAULT = ConfigSource.DYNAMIC_DEFAULT_BROKER_CONFIG.value
DEFAULT = ConfigSource.DEFAULT_CONFIG.value
INVALID_REQUEST = 42


@pytest.fixture
def broker(tmp_path: Path) -> Iterator[Broker]:
    with Broker(data_dir=tmp_path / "data") as b:
        yield b


def admin_of(broker: Broker) -> AdminClient:
    return AdminClient({"bootstrap.servers": broker.bootstrap})


def describe(admin: AdminClient, name: str = "0") -> dict[str, ConfigEntry]:
    (fut,) = admin.describe_configs([ConfigResource("broker", name)]).values()
    entries: dict[str, ConfigEntry] = fut.result(timeout=20)
    return entries


def incremental(admin: AdminClient, name: str, *ops: tuple[str, Any, str | None]) -> None:
    resource = ConfigResource(
        "broker", name, incremental_configs=[ConfigEntry(n, v, incremental_operation=op) for n, op, v in ops]
    )
    (fut,) = admin.incremental_alter_configs([resource]).values()
    fut.result(timeout=20)


def raw_alter(
    broker: Broker, name: str, configs: dict[str, str], *, incremental: bool = True
) -> tuple[int, Any]:
    """(error_code, error_message) of one broker resource's AlterConfigs (v2) or
    IncrementalAlterConfigs (v1, every config SET) over the raw wire."""
    host, port = broker.bootstrap.rsplit(":", 1)
    with WireClient(host, int(port)) as c:
        if incremental:
            entries = [{"name": n, "config_operation": 0, "value": v} for n, v in configs.items()]
            r = c.call(
                44,
                1,
                resources=[{"resource_type": 4, "resource_name": name, "configs": entries}],
                validate_only=False,
            )
        else:
            plain = [{"name": n, "value": v} for n, v in configs.items()]
            r = c.call(
                33,
                2,
                resources=[{"resource_type": 4, "resource_name": name, "configs": plain}],
                validate_only=False,
            )
    (res,) = r.responses
    return int(res.error_code), res.error_message


def raw_describe(broker: Broker, name: str) -> dict[str, tuple[str | None, int, bool]]:
    host, port = broker.bootstrap.rsplit(":", 1)
    with WireClient(host, int(port)) as c:
        r = c.call(
            32,
            4,
            resources=[{"resource_type": 4, "resource_name": name, "configuration_keys": None}],
            include_synonyms=False,
            include_documentation=False,
        )
    (res,) = r.results
    assert res.error_code == 0
    return {e.name: (e.value, int(e.config_source), bool(e.read_only)) for e in res.configs}


def test_librdkafka_0081_broker_configs_are_accepted_and_described(broker: Broker) -> None:
    """0081's AlterConfigs sets ``sasl.kerberos.min.time.before.relogin=58000`` on broker "0" and
    expects NO_ERROR (a ``DynamicListenerConfig`` config); its IncrementalAlterConfigs helper SETs
    ``background.threads=9`` (``DynamicThreadPool``: 9 is within half and double of Kafka's 10),
    APPENDs ``compact`` to ``log.cleanup.policy``, then DELETEs and SUBTRACTs them again."""
    admin = admin_of(broker)
    resource = ConfigResource("broker", "0", set_config={"sasl.kerberos.min.time.before.relogin": "58000"})
    with pytest.warns(DeprecationWarning):
        (fut,) = admin.alter_configs([resource]).values()
    fut.result(timeout=20)
    got = describe(admin)["sasl.kerberos.min.time.before.relogin"]
    assert (got.value, got.source, got.is_read_only, got.is_sensitive) == (
        "58000",
        DYNAMIC_BROKER,
        False,
        False,
    )

    incremental(admin, "0", ("background.threads", SET, "9"), ("log.cleanup.policy", APPEND, "compact"))
    got_all = describe(admin)
    assert (got_all["background.threads"].value, got_all["background.threads"].source) == (
        "9",
        DYNAMIC_BROKER,
    )
    assert (got_all["log.cleanup.policy"].value, got_all["log.cleanup.policy"].source) == (
        "delete,compact",
        DYNAMIC_BROKER,
    )
    # IncrementalAlterConfigs changes only the configs it names
    assert got_all["sasl.kerberos.min.time.before.relogin"].source == DYNAMIC_BROKER
    incremental(admin, "0", ("background.threads", DELETE, ""), ("log.cleanup.policy", SUBTRACT, "compact"))
    got_all = describe(admin)
    assert (got_all["background.threads"].value, got_all["background.threads"].source) == ("10", DEFAULT)
    assert (got_all["log.cleanup.policy"].value, got_all["log.cleanup.policy"].source) == (
        "delete",
        DYNAMIC_BROKER,
    )


def test_cluster_wide_and_per_broker_levels_and_their_sources(broker: Broker) -> None:
    """A cluster-wide config (resource "") is DYNAMIC_DEFAULT_BROKER_CONFIG; this node's own
    value wins and is DYNAMIC_BROKER_CONFIG; the "" listing holds only the cluster-wide ones.
    A per-broker config (the listener, SSL and SASL ones) is refused at the cluster level."""
    admin = admin_of(broker)
    assert raw_alter(broker, "", {"num.io.threads": "12", "max.connections.per.ip": "100"}) == (0, None)
    assert raw_describe(broker, "") == {
        "max.connections.per.ip": ("100", DYNAMIC_DEFAULT, False),
        "num.io.threads": ("12", DYNAMIC_DEFAULT, False),
    }
    got = describe(admin)
    assert (got["num.io.threads"].value, got["num.io.threads"].source) == ("12", DYNAMIC_DEFAULT)
    incremental(admin, "0", ("num.io.threads", SET, "16"))
    got = describe(admin)
    assert (got["num.io.threads"].value, got["num.io.threads"].source) == ("16", DYNAMIC_BROKER)
    assert raw_alter(broker, "", {"sasl.kerberos.min.time.before.relogin": "58000"}) == (
        INVALID_REQUEST,
        "Cannot update these configs at default cluster level, broker id must be specified: "
        "Set(sasl.kerberos.min.time.before.relogin)",
    )
    assert raw_alter(broker, "", {"listener.name.plaintext.ssl.keystore.location": "/ks.jks"}) == (
        INVALID_REQUEST,
        "Cannot update these configs at default cluster level, broker id must be specified: "
        "Set(listener.name.plaintext.ssl.keystore.location)",
    )
    # the connection limits of a listener may be cluster-wide (ClusterLevelListenerConfigs)
    assert raw_alter(broker, "", {"listener.name.plaintext.max.connections": "50"}) == (0, None)


@pytest.mark.parametrize(
    ("configs", "message"),
    [
        ({"num.partitions": "3"}, "Cannot update these configs dynamically: Set(num.partitions)"),
        ({"broker.rack": "r1"}, "Cannot update these configs dynamically: Set(broker.rack)"),
        # only the first synonym of a topic config is dynamic
        ({"log.retention.hours": "1"}, "Cannot update these configs dynamically: Set(log.retention.hours)"),
        (
            {"log.message.format.version": "3.0"},
            "Cannot update these configs dynamically: Set(log.message.format.version)",
        ),
        (
            {"ssl.keystore.location": "/ks.jks"},
            "These security configs can be dynamically updated only per-listener using the listener prefix: "
            "Set(ssl.keystore.location)",
        ),
        (
            {"background.threads": "many"},
            "Invalid value many for configuration background.threads: Not a number of type INT",
        ),
        (
            {"background.threads": "0"},
            "Invalid value 0 for configuration background.threads: Value must be at least 1",
        ),
        (
            {"sasl.login.refresh.window.factor": "2"},
            "Invalid value 2 for configuration sasl.login.refresh.window.factor: "
            "Value must be no more than 1.0",
        ),
        (
            {"ssl.client.auth": "sometimes"},
            "Invalid value sometimes for configuration ssl.client.auth: String must be one of: "
            "required, requested, none",
        ),
        (
            {"num.io.threads": "17"},
            "Dynamic thread count update validation failed for num.io.threads=17, "
            "value should not be greater than double the current value 8",
        ),
        (
            {"background.threads": "4"},
            "Dynamic thread count update validation failed for background.threads=4, "
            "value should be at least half the current value 10",
        ),
    ],
)
def test_what_kafka_refuses_is_invalid_request_with_its_message(
    broker: Broker, configs: dict[str, str], message: str
) -> None:
    for incremental_api in (True, False):
        assert raw_alter(broker, "0", configs, incremental=incremental_api) == (INVALID_REQUEST, message)
    assert raw_describe(broker, "") == {}


def test_refusal_reaches_confluent_kafka_as_invalid_request(broker: Broker) -> None:
    admin = admin_of(broker)
    resource = ConfigResource(
        "broker", "0", incremental_configs=[ConfigEntry("broker.rack", "r1", incremental_operation=SET)]
    )
    (fut,) = admin.incremental_alter_configs([resource]).values()
    with pytest.raises(KafkaException) as info:
        fut.result(timeout=20)
    err: KafkaError = info.value.args[0]
    assert err.code() == KafkaError.INVALID_REQUEST


def test_passwords_are_described_as_sensitive_without_their_value(broker: Broker) -> None:
    """A PASSWORD config (``sasl.jaas.config``, a listener's ``ssl.keystore.password``) is stored
    but described with a null value and is_sensitive (DescribeConfigs never returns secrets)."""
    admin = admin_of(broker)
    incremental(
        admin,
        "0",
        ("sasl.jaas.config", SET, "org.example.Login required;"),
        ("listener.name.plaintext.ssl.keystore.password", SET, "s3cret"),
    )
    got = describe(admin)
    for name in ("sasl.jaas.config", "listener.name.plaintext.ssl.keystore.password"):
        assert (got[name].value, got[name].source, got[name].is_sensitive) == (None, DYNAMIC_BROKER, True)


def test_dynamic_broker_configs_survive_a_restart(broker: Broker) -> None:
    """Both levels are kept in the data dir (``__topics.json``) and described after a restart
    with the same sources, as Kafka reloads them from its metadata log."""
    admin = admin_of(broker)
    incremental(
        admin,
        "0",
        ("sasl.kerberos.min.time.before.relogin", SET, "58000"),
        ("listener.name.plaintext.ssl.keystore.location", SET, "/ks.jks"),
    )
    assert raw_alter(broker, "", {"background.threads": "12", "metric.reporters": ""}) == (0, None)
    broker.restart()
    got = describe(admin_of(broker))
    assert {
        n: (got[n].value, got[n].source)
        for n in (
            "sasl.kerberos.min.time.before.relogin",
            "listener.name.plaintext.ssl.keystore.location",
            "background.threads",
        )
    } == {
        "sasl.kerberos.min.time.before.relogin": ("58000", DYNAMIC_BROKER),
        "listener.name.plaintext.ssl.keystore.location": ("/ks.jks", DYNAMIC_BROKER),
        "background.threads": ("12", DYNAMIC_DEFAULT),
    }
    assert raw_describe(broker, "") == {
        "background.threads": ("12", DYNAMIC_DEFAULT, False),
        "metric.reporters": ("", DYNAMIC_DEFAULT, False),
    }
