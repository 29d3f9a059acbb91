"""A server.properties written for Kafka starts groupcoord: Kafka's own broker keys that do not
apply to one Python broker are accepted and ignored with one log line each, the keys groupcoord
shares with Kafka are applied, and a misspelled key still stops startup with a suggestion.

The key list is Kafka 3.9's ``config/kraft/server.properties`` (the combined broker+controller
example of the quickstart); the known names are those of Kafka's ``AbstractKafkaConfig.CONFIG_DEF``.
"""

from __future__ import annotations

import logging
import subprocess
import sys
import threading
import uuid
from pathlib import Path

import pytest
from confluent_kafka.admin import AdminClient, ConfigResource, ConfigSource, NewTopic

from groupcoord.cli import main
from groupcoord.config import (
    CAPTURED_BUT_IGNORED,
    KAFKA_BROKER_CONFIG_NAMES,
    PROPERTIES,
    SECURITY_KEYS,
    BrokerConfig,
    parse_properties,
)
from groupcoord.errors import ConfigError

#: Kafka 3.9's config/kraft/server.properties, its keys and values (comments are ours).
STOCK_KRAFT_SERVER_PROPERTIES = """\
# Kafka 3.9 config/kraft/server.properties: a combined broker and controller on one node.
process.roles=broker,controller
node.id=1
controller.quorum.voters=1@localhost:9093
listeners=PLAINTEXT://:9092,CONTROLLER://:9093
inter.broker.listener.name=PLAINTEXT
advertised.listeners=PLAINTEXT://localhost:9092,CONTROLLER://localhost:9093
controller.listener.names=CONTROLLER
listener.security.protocol.map=CONTROLLER:PLAINTEXT,PLAINTEXT:PLAINTEXT,SSL:SSL,SASL_PLAINTEXT:SASL_PLAINTEXT,SASL_SSL:SASL_SSL
num.network.threads=3
num.io.threads=8
socket.send.buffer.bytes=102400
socket.receive.buffer.bytes=102400
socket.request.max.bytes=104857600
log.dirs=/tmp/kraft-combined-logs
num.partitions=1
num.recovery.threads.per.data.dir=1
offsets.topic.replication.factor=1
transaction.state.log.replication.factor=1
transaction.state.log.min.isr=1
log.retention.hours=168
log.segment.bytes=1073741824
log.retention.check.interval.ms=300000
"""


def test_every_stock_key_is_known_to_kafka() -> None:
    keys = set(parse_properties(STOCK_KRAFT_SERVER_PROPERTIES))
    assert keys <= KAFKA_BROKER_CONFIG_NAMES


def test_stock_kraft_server_properties_starts_the_broker_and_applies_the_shared_keys(tmp_path: Path) -> None:
    """``groupcoord serve --config server.properties``: starts, serves a client, and the file's
    values of keys groupcoord shares are what DescribeConfigs reports (STATIC_BROKER_CONFIG)."""
    props = tmp_path / "server.properties"
    props.write_text(STOCK_KRAFT_SERVER_PROPERTIES.replace("num.partitions=1", "num.partitions=3"))
    data = tmp_path / "kraft-combined-logs"
    argv = [
        sys.executable,
        "-m",
        "groupcoord",
        "serve",
        "--config",
        str(props),
        "--listen",
        "127.0.0.1:0",
        "--set",
        f"log.dirs={data}",
        "--set",
        "advertised.listeners=PLAINTEXT://127.0.0.1:0",
    ]
    proc = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        line: list[str] = []
        reader = threading.Thread(target=lambda: line.append(proc.stdout.readline() if proc.stdout else ""))
        reader.start()
        reader.join(60)
        assert line and line[0].startswith("groupcoord listening on "), line
        bootstrap = line[0].split()[-1]
        admin = AdminClient({"bootstrap.servers": bootstrap})
        topic = f"stock-{uuid.uuid4().hex[:6]}"
        for fut in admin.create_topics([NewTopic(topic)]).values():  # num.partitions from the file
            fut.result(timeout=20)
        assert len(admin.list_topics(topic, timeout=10).topics[topic].partitions) == 3
        (fut,) = admin.describe_configs([ConfigResource("broker", "1")]).values()  # node.id=1
        got = fut.result(timeout=20)
        assert {k: (got[k].value, got[k].source) for k in ("num.partitions", "log.retention.hours")} == {
            "num.partitions": ("3", ConfigSource.STATIC_BROKER_CONFIG.value),
            "log.retention.hours": ("168", ConfigSource.STATIC_BROKER_CONFIG.value),
        }
        assert (data / "meta.properties").exists()  # log.dirs is the data dir
    finally:
        proc.terminate()
        _out, err = proc.communicate(timeout=60)
    assert proc.returncode == 0, err[-2000:]
    ignored = [
        ln.split("ignoring Kafka broker key ", 1)[1].split("=", 1)[0]
        for ln in err.splitlines()
        if "ignoring Kafka broker key" in ln
    ]
    # the security keys groupcoord uses (listener.security.protocol.map) are applied, not ignored
    used = SECURITY_KEYS - CAPTURED_BUT_IGNORED
    expected = set(parse_properties(STOCK_KRAFT_SERVER_PROPERTIES)) - set(PROPERTIES) - used
    assert sorted(ignored) == sorted(expected)  # one line each
    assert {"process.roles", "controller.quorum.voters", "controller.listener.names"} <= set(ignored)


@pytest.mark.parametrize(
    ("typo", "suggestion"),
    [
        ("log.retention.hour=24", "log.retention.hours"),
        ("proces.roles=broker", "process.roles"),
        ("group.initial.rebalance.delay=0", "group.initial.rebalance.delay.ms"),
    ],
)
def test_a_misspelled_key_stops_startup_naming_it_and_the_likely_key(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], typo: str, suggestion: str
) -> None:
    props = tmp_path / "server.properties"
    props.write_text(STOCK_KRAFT_SERVER_PROPERTIES + typo + "\n")
    assert main(["serve", "--config", str(props), "--data-dir", str(tmp_path / "d")]) == 2
    err = capsys.readouterr().err
    assert f"unknown configuration key {typo.split('=')[0]!r}" in err
    assert f"(did you mean {suggestion!r}?)" in err
    assert not (tmp_path / "d").exists()


def test_a_key_far_from_any_known_one_gets_no_suggestion() -> None:
    with pytest.raises(ConfigError) as info:
        BrokerConfig.load(None, ["completely.unrelated=1"])
    assert str(info.value) == "unknown configuration key 'completely.unrelated' (value '1')"


def test_per_listener_keys_are_kept_for_their_listener(caplog: pytest.LogCaptureFixture) -> None:
    """``listener.name.<l>.<key>`` overrides ``<key>`` for listener ``l`` (Kafka's
    ``AbstractConfig.valuesWithPrefixOverride``); neither is logged as ignored."""
    key = "listener.name.plaintext.sasl.enabled.mechanisms"
    with caplog.at_level(logging.INFO, logger="groupcoord.config"):
        c = BrokerConfig.load(None, [f"{key}=PLAIN", "sasl.enabled.mechanisms=SCRAM-SHA-256"])
    assert not [r for r in caplog.records if "sasl.enabled.mechanisms" in r.getMessage()]
    settings = c.security_settings
    assert settings.for_listener("PLAINTEXT", "sasl.enabled.mechanisms") == "PLAIN"
    assert settings.for_listener("OTHER", "sasl.enabled.mechanisms") == "SCRAM-SHA-256"


def test_the_plaintext_listener_is_used_whichever_comes_first() -> None:
    c = BrokerConfig.load(
        None,
        [
            "listeners=CONTROLLER://:9093,PLAINTEXT://:9092",
            "advertised.listeners=CONTROLLER://localhost:9093,PLAINTEXT://localhost:9092",
        ],
    )
    assert (c.listener().host, c.listener().port) == ("0.0.0.0", 9092)
    assert (c.advertised_listener().host, c.advertised_listener().port) == ("localhost", 9092)
