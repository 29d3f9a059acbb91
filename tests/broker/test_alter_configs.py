"""AlterConfigs (33) v0-2 and IncrementalAlterConfigs (44) v0-1 through two real admin clients
(confluent-kafka's AdminClient and kafka-python's KafkaAdminClient), each reading back what it
changed with DescribeConfigs, against one in-process broker on loopback.

Kafka's behaviour cited: ``ConfigAdminManager`` (broker-side checks: the broker id, the
non-dynamic broker configs refused with INVALID_REQUEST "Cannot update these configs
dynamically"), ``ConfigurationControlManager.incrementalAlterConfigResource`` (APPEND/SUBTRACT
only on LIST configs, INVALID_CONFIG otherwise), ``LogConfig.validate`` (unknown topic config
names and bad values: INVALID_CONFIG), ``ServerTopicConfigSynonyms`` (which broker properties
are dynamic synonyms of topic configs) and the config sources of ``DescribeConfigsResponse``.
"""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from aiokafka.admin import AIOKafkaAdminClient
from aiokafka.admin.config_resource import ConfigResource as AioConfigResource
from aiokafka.admin.config_resource import ConfigResourceType as AioType
from confluent_kafka import Consumer, KafkaError, KafkaException, Producer, TopicPartition
from confluent_kafka.admin import (
    AdminClient,
    AlterConfigOpType,
    ConfigEntry,
    ConfigResource,
    ConfigSource,
    NewTopic,
)
from kafka.admin import ConfigResource as KpConfigResource
from kafka.admin import ConfigResourceType as KpType
from kafka.admin import KafkaAdminClient

from groupcoord.formats.batch import build_batch
from groupcoord.protocol.client import WireClient
from groupcoord.storage.log_config import COMPRESSION_TYPES, TOPIC_CONFIGS
from groupcoord.testing import Broker

SET, DELETE, APPEND, SUBTRACT = (
    AlterConfigOpType.SET,
    AlterConfigOpType.DELETE,
    AlterConfigOpType.APPEND,
    AlterConfigOpType.SUBTRACT,
)


@pytest.fixture(scope="module")
def broker() -> Iterator[Broker]:
    with Broker() as b:
        yield b


@pytest.fixture(scope="module")
def admin(broker: Broker) -> AdminClient:
    return AdminClient({"bootstrap.servers": broker.bootstrap})


def new_topic(admin: AdminClient, partitions: int = 1, config: dict[str, str] | None = None) -> str:
    name = f"cfg-{uuid.uuid4().hex[:8]}"
    for fut in admin.create_topics([NewTopic(name, partitions, 1, config=config or {})]).values():
        fut.result(timeout=20)
    return name


def describe(admin: AdminClient, rtype: str, name: str) -> dict[str, ConfigEntry]:
    (fut,) = admin.describe_configs([ConfigResource(rtype, name)]).values()
    entries: dict[str, ConfigEntry] = fut.result(timeout=20)
    return entries


def incremental(admin: AdminClient, rtype: str, name: str, *ops: tuple[str, Any, str | None]) -> None:
    resource = ConfigResource(
        rtype,
        name,
        incremental_configs=[ConfigEntry(n, v, incremental_operation=op) for n, op, v in ops],
    )
    (fut,) = admin.incremental_alter_configs([resource]).values()
    fut.result(timeout=20)


def wire(broker: Broker) -> WireClient:
    host, port = broker.bootstrap.rsplit(":", 1)
    return WireClient(host, int(port))


def raw_incremental(broker: Broker, name: str, *ops: tuple[str, Any, str | None], version: int = 1) -> Any:
    """IncrementalAlterConfigs on the broker resource ``name`` over the raw wire (the admin clients
    cannot address the cluster-wide default, resource name "")."""
    configs = [{"name": n, "config_operation": getattr(op, "value", op), "value": v} for n, op, v in ops]
    with wire(broker) as c:
        r = c.call(
            44,
            version,
            resources=[{"resource_type": 4, "resource_name": name, "configs": configs}],
            validate_only=False,
        )
    (res,) = r.responses
    return res


def raw_describe_entries(broker: Broker, rtype: int, name: str, synonyms: bool = False) -> list[Any]:
    with wire(broker) as c:
        r = c.call(
            32,
            4,
            resources=[{"resource_type": rtype, "resource_name": name, "configuration_keys": None}],
            include_synonyms=synonyms,
            include_documentation=False,
        )
    (res,) = r.results
    assert res.error_code == 0
    return list(res.configs)


def raw_describe(broker: Broker, rtype: int, name: str) -> dict[str, tuple[str | None, int]]:
    return {e.name: (e.value, int(e.config_source)) for e in raw_describe_entries(broker, rtype, name)}


def error_of(fn: Any) -> KafkaError:
    with pytest.raises(KafkaException) as info:
        fn()
    err: KafkaError = info.value.args[0]
    return err


# -- topics ------------------------------------------------------------------------------------


def test_incremental_set_append_subtract_delete_on_a_topic_read_back_by_confluent(admin: AdminClient) -> None:
    topic = new_topic(admin)
    incremental(
        admin, "topic", topic, ("retention.ms", SET, "3600000"), ("cleanup.policy", APPEND, "compact")
    )
    got = describe(admin, "topic", topic)
    assert (got["retention.ms"].value, got["retention.ms"].source) == (
        "3600000",
        ConfigSource.DYNAMIC_TOPIC_CONFIG.value,
    )
    assert (got["cleanup.policy"].value, got["cleanup.policy"].source) == (
        "delete,compact",
        ConfigSource.DYNAMIC_TOPIC_CONFIG.value,
    )
    assert got["segment.bytes"].source == ConfigSource.DEFAULT_CONFIG.value

    incremental(admin, "topic", topic, ("cleanup.policy", SUBTRACT, "delete"), ("retention.ms", DELETE, None))
    got = describe(admin, "topic", topic)
    assert got["cleanup.policy"].value == "compact"
    assert (got["retention.ms"].value, got["retention.ms"].source) == (
        "604800000",
        ConfigSource.DEFAULT_CONFIG.value,
    )


def test_legacy_alter_configs_replaces_every_override_of_the_topic(admin: AdminClient) -> None:
    """AlterConfigs (not incremental) sets the whole override set: what it does not name goes."""
    topic = new_topic(admin, config={"retention.ms": "1000", "max.message.bytes": "2000"})
    (fut,) = admin.alter_configs(
        [ConfigResource("topic", topic, set_config={"segment.bytes": "1048576"})]
    ).values()
    fut.result(timeout=20)
    got = describe(admin, "topic", topic)
    assert {n: e.value for n, e in got.items() if e.source == ConfigSource.DYNAMIC_TOPIC_CONFIG.value} == {
        "segment.bytes": "1048576"
    }


def test_kafka_python_alters_topic_configs_both_ways_and_reads_them_back(
    broker: Broker, admin: AdminClient
) -> None:
    topic = new_topic(admin)
    kp = KafkaAdminClient(bootstrap_servers=broker.bootstrap)
    try:
        result = kp.alter_configs(
            [KpConfigResource(KpType.TOPIC, topic, configs={"retention.bytes": "123456"})], incremental=True
        )
        assert result == {"topic": {topic: "OK"}}
        result = kp.alter_configs(
            [KpConfigResource(KpType.TOPIC, topic, configs={"segment.ms": "60000"})], incremental=False
        )
        assert result == {"topic": {topic: "OK"}}
        described = kp.describe_configs([KpConfigResource(KpType.TOPIC, topic)], config_filter="modified")
        modified = described["topic"][topic]
        # kafka-python's legacy path carries the other modified keys along (AlterConfigs replaces all)
        assert {k: v["value"] for k, v in modified.items()} == {
            "retention.bytes": "123456",
            "segment.ms": "60000",
        }
        assert {v["config_source"] for v in modified.values()} == {"DYNAMIC_TOPIC_CONFIG"}
    finally:
        kp.close()
    got = describe(admin, "topic", topic)
    assert got["segment.ms"].value == "60000"


def test_validate_only_changes_nothing(admin: AdminClient) -> None:
    topic = new_topic(admin)
    resource = ConfigResource(
        "topic", topic, incremental_configs=[ConfigEntry("retention.ms", "5000", incremental_operation=SET)]
    )
    (fut,) = admin.incremental_alter_configs([resource], validate_only=True).values()
    fut.result(timeout=20)
    (fut,) = admin.alter_configs(
        [ConfigResource("topic", topic, set_config={"retention.ms": "5000"})], validate_only=True
    ).values()
    fut.result(timeout=20)
    assert describe(admin, "topic", topic)["retention.ms"].source == ConfigSource.DEFAULT_CONFIG.value
    bad = ConfigResource(
        "topic", topic, incremental_configs=[ConfigEntry("retention.ms", "soon", incremental_operation=SET)]
    )
    (fut,) = admin.incremental_alter_configs([bad], validate_only=True).values()
    assert error_of(lambda: fut.result(timeout=20)).code() == KafkaError.INVALID_CONFIG


@pytest.mark.parametrize(
    ("op", "name", "value", "code", "fragment"),
    [
        (SET, "retention.mss", "1", KafkaError.INVALID_CONFIG, "Unknown topic config name: retention.mss"),
        (
            SET,
            "retention.ms",
            "soon",
            KafkaError.INVALID_CONFIG,
            "Invalid value soon for configuration retention.ms",
        ),
        (SET, "cleanup.policy", "shred", KafkaError.INVALID_CONFIG, "cleanup.policy"),
        (SET, "compression.type", "brotli", KafkaError.INVALID_CONFIG, "compression.type"),
        (APPEND, "retention.ms", "1", KafkaError.INVALID_CONFIG, "because its type is not LIST"),
        (SUBTRACT, "segment.bytes", "1", KafkaError.INVALID_CONFIG, "because its type is not LIST"),
    ],
)
def test_bad_topic_changes_get_kafkas_error_codes(
    admin: AdminClient, op: Any, name: str, value: str, code: int, fragment: str
) -> None:
    topic = new_topic(admin)
    resource = ConfigResource(
        "topic", topic, incremental_configs=[ConfigEntry(name, value, incremental_operation=op)]
    )
    (fut,) = admin.incremental_alter_configs([resource]).values()
    err = error_of(lambda: fut.result(timeout=20))
    assert err.code() == code
    assert fragment in err.str()
    assert all(
        e.source != ConfigSource.DYNAMIC_TOPIC_CONFIG.value for e in describe(admin, "topic", topic).values()
    )


def test_unknown_topic_is_unknown_topic_or_partition(admin: AdminClient) -> None:
    resource = ConfigResource(
        "topic",
        "no-such-topic",
        incremental_configs=[ConfigEntry("retention.ms", "1", incremental_operation=SET)],
    )
    (fut,) = admin.incremental_alter_configs([resource]).values()
    assert error_of(lambda: fut.result(timeout=20)).code() == KafkaError.UNKNOWN_TOPIC_OR_PART


def test_every_kafka_topic_config_and_codec_is_accepted_by_create_and_alter(admin: AdminClient) -> None:
    """One list of topic configs (Kafka 3.9's TopicConfig): CreateTopics takes each name and every
    compression.type codec name (BrokerCompressionType: lz4 included), and so does AlterConfigs."""
    for codec in COMPRESSION_TYPES:
        topic = new_topic(admin, config={"compression.type": codec})
        assert describe(admin, "topic", topic)["compression.type"].value == codec
    sample = {
        "segment.jitter.ms": "10",
        "min.cleanable.dirty.ratio": "0.3",
        "preallocate": "true",
        "compression.lz4.level": "5",
        "message.timestamp.after.max.ms": "1000",
        "follower.replication.throttled.replicas": "0:0",
    }
    topic = new_topic(admin, config=sample)
    got = describe(admin, "topic", topic)
    assert {k: got[k].value for k in sample} == sample
    assert set(got) == set(TOPIC_CONFIGS)
    incremental(
        admin,
        "topic",
        topic,
        ("compression.type", SET, "zstd"),
        ("unclean.leader.election.enable", SET, "true"),
    )
    got = describe(admin, "topic", topic)
    assert (got["compression.type"].value, got["unclean.leader.election.enable"].value) == ("zstd", "true")


def test_segment_and_retention_changes_act_on_the_live_log(broker: Broker, admin: AdminClient) -> None:
    """segment.bytes set by AlterConfigs rolls the open partition's segments; retention.ms set
    afterwards deletes the rolled ones at the next retention check (Kafka's LogManager uses
    the topic's current LogConfig)."""
    topic = new_topic(admin)
    incremental(admin, "topic", topic, ("segment.bytes", SET, "1024"))
    p = Producer({"bootstrap.servers": broker.bootstrap, "linger.ms": 0})
    for i in range(40):
        p.produce(topic, value=b"x" * 200, key=str(i).encode())
        p.flush(10)
    pdir = broker.data_dir / f"{topic}-0"
    segments = sorted(pdir.glob("*.log"))
    assert len(segments) >= 5
    incremental(admin, "topic", topic, ("retention.ms", SET, "1000"))
    broker.advance(400)  # past log.retention.check.interval.ms (300 s) and retention.ms
    remaining = sorted(pdir.glob("*.log"))
    assert len(remaining) == 1  # only the active segment is kept
    assert remaining[0] == segments[-1]


# -- the broker's dynamic configs ----------------------------------------------------------------


def test_broker_dynamic_configs_per_broker_and_cluster_default(broker: Broker, admin: AdminClient) -> None:
    topic = new_topic(admin)
    resource = ConfigResource(
        "broker", "0", incremental_configs=[ConfigEntry("log.retention.ms", "1", incremental_operation=SET)]
    )
    (fut,) = admin.incremental_alter_configs([resource], validate_only=True).values()
    fut.result(timeout=20)
    assert describe(admin, "broker", "0")["log.retention.ms"].source == ConfigSource.DEFAULT_CONFIG.value
    incremental(admin, "broker", "0", ("log.retention.ms", SET, "7200000"))
    kp = KafkaAdminClient(bootstrap_servers=broker.bootstrap)
    try:
        result = kp.alter_configs(
            [
                KpConfigResource(
                    KpType.BROKER, "0", configs={"log.segment.bytes": "2097152", "compression.type": "gzip"}
                )
            ],
            incremental=True,
        )
        assert result == {"broker": {"0": "OK"}}
        node = kp.describe_configs([KpConfigResource(KpType.BROKER, "0")], config_filter="modified")[
            "broker"
        ]["0"]
        assert node["log.segment.bytes"]["value"] == "2097152"
        assert node["log.segment.bytes"]["config_source"] == "DYNAMIC_BROKER_CONFIG"
    finally:
        kp.close()
    got = describe(admin, "broker", "0")
    assert (got["log.retention.ms"].value, got["log.retention.ms"].source) == (
        "7200000",
        ConfigSource.DYNAMIC_BROKER_CONFIG.value,
    )
    assert got["log.retention.ms"].is_read_only is False
    assert got["num.partitions"].is_read_only is True
    topic_cfg = describe(admin, "topic", topic)
    assert (topic_cfg["retention.ms"].value, topic_cfg["retention.ms"].source) == (
        "7200000",
        ConfigSource.DYNAMIC_BROKER_CONFIG.value,
    )
    assert topic_cfg["segment.bytes"].value == "2097152"
    assert (topic_cfg["compression.type"].value, topic_cfg["compression.type"].source) == (
        "gzip",
        ConfigSource.DYNAMIC_BROKER_CONFIG.value,
    )
    # the cluster-wide default (resource name "") is overridden by the per-broker value
    res = raw_incremental(
        broker, "", ("log.retention.ms", SET, "60000"), ("log.cleanup.policy", SET, "compact")
    )
    assert res.error_code == 0
    topic_cfg = describe(admin, "topic", topic)
    assert topic_cfg["retention.ms"].value == "7200000"
    assert (topic_cfg["cleanup.policy"].value, topic_cfg["cleanup.policy"].source) == (
        "compact",
        ConfigSource.DYNAMIC_DEFAULT_BROKER_CONFIG.value,
    )
    assert raw_describe(broker, 4, "") == {
        "log.retention.ms": ("60000", ConfigSource.DYNAMIC_DEFAULT_BROKER_CONFIG.value),
        "log.cleanup.policy": ("compact", ConfigSource.DYNAMIC_DEFAULT_BROKER_CONFIG.value),
    }
    incremental(
        admin,
        "broker",
        "0",
        ("log.retention.ms", DELETE, None),
        ("log.segment.bytes", DELETE, None),
        ("compression.type", DELETE, None),
    )
    res = raw_incremental(
        broker, "", ("log.retention.ms", DELETE, None), ("log.cleanup.policy", DELETE, None)
    )
    assert res.error_code == 0
    topic_cfg = describe(admin, "topic", topic)
    assert (topic_cfg["retention.ms"].value, topic_cfg["retention.ms"].source) == (
        "604800000",
        ConfigSource.DEFAULT_CONFIG.value,
    )
    assert raw_describe(broker, 4, "") == {}


def test_oldest_versions_and_another_brokers_id(broker: Broker, admin: AdminClient) -> None:
    """AlterConfigs v0 and IncrementalAlterConfigs v0 (non-flexible) work as the newest do; a
    broker id other than this node's is INVALID_REQUEST (ConfigAdminManager)."""
    topic = new_topic(admin)
    with wire(broker) as c:
        r = c.call(
            33,
            0,
            resources=[
                {
                    "resource_type": 2,
                    "resource_name": topic,
                    "configs": [{"name": "retention.ms", "value": "42000"}],
                }
            ],
            validate_only=False,
        )
    assert [(x.error_code, x.resource_name) for x in r.responses] == [(0, topic)]
    assert raw_describe(broker, 2, topic)["retention.ms"] == (
        "42000",
        ConfigSource.DYNAMIC_TOPIC_CONFIG.value,
    )
    res = raw_incremental(broker, "7", ("log.retention.ms", SET, "1"), version=0)
    assert (res.error_code, res.error_message) == (42, "Unexpected broker id, expected 0, but received 7")
    # a resource named twice is refused both times, a repeated config key and an unknown
    # resource type are INVALID_REQUEST; the other resources of the request still apply
    entry = {"name": "retention.ms", "config_operation": 0, "value": "43000"}
    with wire(broker) as c:
        r = c.call(
            44,
            1,
            resources=[
                {"resource_type": 2, "resource_name": "x", "configs": [entry]},
                {"resource_type": 2, "resource_name": "x", "configs": [entry]},
                {"resource_type": 2, "resource_name": topic, "configs": [entry, entry]},
                {"resource_type": 9, "resource_name": "y", "configs": [entry]},
                {"resource_type": 2, "resource_name": topic, "configs": []},
            ],
            validate_only=False,
        )
    assert [(x.error_code, x.error_message) for x in r.responses] == [
        (42, "Each resource must appear at most once."),
        (42, "Each resource must appear at most once."),
        (42, "Each resource must appear at most once."),
        (42, "Unknown resource type 9"),
        (42, "Each resource must appear at most once."),
    ]
    with wire(broker) as c:
        r = c.call(
            44,
            1,
            resources=[
                {"resource_type": 2, "resource_name": topic, "configs": [entry, entry]},
                {"resource_type": 9, "resource_name": "y", "configs": [entry]},
            ],
            validate_only=False,
        )
    assert [(x.error_code, x.error_message) for x in r.responses] == [
        (42, "Error due to duplicate config keys"),
        (42, "Unknown resource type 9"),
    ]
    res = raw_incremental(broker, "0", ("log.cleanup.policy", APPEND, None), ("log.retention.ms", SET, None))
    assert (res.error_code, res.error_message) == (
        42,
        "Null value not supported for : log.cleanup.policy, log.retention.ms",
    )


@pytest.mark.parametrize(
    ("name", "value", "code", "fragment"),
    [
        ("num.partitions", "3", KafkaError.INVALID_REQUEST, "Cannot update these configs dynamically"),
        ("process.roles", "broker", KafkaError.INVALID_REQUEST, "Cannot update these configs dynamically"),
        ("log.retention.ms", "soon", KafkaError.INVALID_REQUEST, "Invalid value soon"),
        ("log.retention.mss", "1", KafkaError.INVALID_CONFIG, "did you mean 'log.retention.ms'?"),
        (
            "log.retention.ms",
            "1",
            KafkaError.INVALID_CONFIG,
            "append is not allowed for config key: log.retention.ms",
        ),
    ],
)
def test_bad_broker_changes_get_kafkas_error_codes(
    admin: AdminClient, name: str, value: str, code: int, fragment: str
) -> None:
    op = APPEND if "append" in fragment else SET
    resource = ConfigResource(
        "broker", "0", incremental_configs=[ConfigEntry(name, value, incremental_operation=op)]
    )
    (fut,) = admin.incremental_alter_configs([resource]).values()
    err = error_of(lambda: fut.result(timeout=20))
    assert (err.code(), fragment in err.str()) == (code, True)


def test_configs_persist_across_a_restart(tmp_path: Path) -> None:
    with Broker({"log.retention.hours": 48, "log.roll.hours": 2}, data_dir=tmp_path / "data") as b:
        admin = AdminClient({"bootstrap.servers": b.bootstrap})
        topic = new_topic(admin)
        incremental(
            admin, "topic", topic, ("retention.ms", SET, "5000"), ("cleanup.policy", SET, "compact,delete")
        )
        incremental(admin, "broker", "0", ("log.segment.bytes", SET, "4096"))
        assert raw_incremental(b, "", ("log.retention.bytes", SET, "1000000")).error_code == 0
        b.restart()
        admin = AdminClient({"bootstrap.servers": b.bootstrap})
        got = describe(admin, "topic", topic)
        assert {
            k: (got[k].value, got[k].source) for k in ("retention.ms", "cleanup.policy", "segment.bytes")
        } == {
            "retention.ms": ("5000", ConfigSource.DYNAMIC_TOPIC_CONFIG.value),
            "cleanup.policy": ("compact,delete", ConfigSource.DYNAMIC_TOPIC_CONFIG.value),
            "segment.bytes": ("4096", ConfigSource.DYNAMIC_BROKER_CONFIG.value),
        }
        assert (got["retention.bytes"].value, got["retention.bytes"].source) == (
            "1000000",
            ConfigSource.DYNAMIC_DEFAULT_BROKER_CONFIG.value,
        )
        # a static broker synonym in another unit (log.roll.hours -> segment.ms)
        assert (got["segment.ms"].value, got["segment.ms"].source) == (
            "7200000",
            ConfigSource.STATIC_BROKER_CONFIG.value,
        )
        # include_synonyms: every level with a value, highest first, each in its own property's unit
        entries = {e.name: e for e in raw_describe_entries(b, 2, topic, synonyms=True)}
        assert [(x.name, x.value, int(x.source)) for x in entries["retention.ms"].synonyms] == [
            ("retention.ms", "5000", ConfigSource.DYNAMIC_TOPIC_CONFIG.value),
            ("log.retention.hours", "48", ConfigSource.STATIC_BROKER_CONFIG.value),
            ("log.retention.ms", "604800000", ConfigSource.DEFAULT_CONFIG.value),
        ]
        assert [(x.name, x.value, int(x.source)) for x in entries["segment.bytes"].synonyms] == [
            ("log.segment.bytes", "4096", ConfigSource.DYNAMIC_BROKER_CONFIG.value),
            ("log.segment.bytes", "1073741824", ConfigSource.DEFAULT_CONFIG.value),
        ]


# -- keyless records to a compacted topic ---------------------------------------------------------


def test_keyless_records_to_a_compacted_topic_are_invalid_record_with_record_errors(
    broker: Broker, admin: AdminClient
) -> None:
    """Kafka's LogValidator.validateKey: a compacted topic refuses a batch holding a record
    without a key (INVALID_RECORD, one RecordError per keyless record, indexed in its batch);
    keyed records are appended. The topic becomes compacted through AlterConfigs here."""
    topic = new_topic(admin)
    incremental(admin, "topic", topic, ("cleanup.policy", SET, "compact"))
    batch = build_batch(
        [(b"a", b"1", []), (None, b"2", []), (b"c", b"3", []), (None, b"4", [])], timestamp_ms=1
    )
    with wire(broker) as c:
        for version in (3, 8, 10):
            r = c.call(
                0,
                version,
                transactional_id=None,
                acks=1,
                timeout=5000,
                topic_data=[{"name": topic, "partition_data": [{"index": 0, "records": batch}]}],
            )
            ((p,),) = [t.partition_responses for t in r.responses]
            assert (p.error_code, p.base_offset) == (KafkaError.INVALID_RECORD, -1)
            if version >= 8:
                text = f"Compacted topic cannot accept message without key in topic partition {topic}-0"
                assert [(e.batch_index, e.batch_index_error_message) for e in p.record_errors] == [
                    (1, text),
                    (3, text),
                ]
                assert p.error_message.startswith(
                    "One or more records have been rejected due to 2 record errors"
                )
    delivered: list[Any] = []
    p = Producer({"bootstrap.servers": broker.bootstrap, "linger.ms": 0, "retries": 0})
    p.produce(topic, value=b"no key", on_delivery=lambda err, msg: delivered.append(err))
    p.flush(20)  # its own batch: Kafka refuses a whole batch holding a keyless record
    p.produce(topic, key=b"k", value=b"keyed", on_delivery=lambda err, msg: delivered.append(err))
    p.flush(20)
    assert delivered[0] is not None and delivered[0].code() == KafkaError.INVALID_RECORD
    assert delivered[1] is None
    c2 = Consumer({"bootstrap.servers": broker.bootstrap, "group.id": "wm2"})
    try:
        assert c2.get_watermark_offsets(TopicPartition(topic, 0), timeout=10) == (0, 1)
    finally:
        c2.close()


def test_aiokafka_alters_and_describes_topic_configs(broker: Broker, admin: AdminClient) -> None:
    """aiokafka's admin client sends AlterConfigs (the whole override set) and reads it back."""
    topic = new_topic(admin)

    async def scenario() -> dict[str, tuple[str, int]]:
        client = AIOKafkaAdminClient(bootstrap_servers=broker.bootstrap)
        await client.start()
        try:
            (answer,) = [
                r
                for r in await client.alter_configs(
                    [
                        AioConfigResource(
                            AioType.TOPIC, topic, {"retention.ms": "90000", "cleanup.policy": "compact"}
                        )
                    ]
                )
                if r.resources
            ]
            assert [(res[0], res[3]) for res in answer.resources] == [(0, topic)]
            (described,) = await client.describe_configs([AioConfigResource(AioType.TOPIC, topic)])
            ((_code, _msg, _rtype, _name, entries),) = [tuple(res[:5]) for res in described.resources]
            return {e[0]: (e[1], e[3]) for e in entries}  # (value, config_source)
        finally:
            await client.close()

    got = asyncio.run(scenario())
    dynamic = ConfigSource.DYNAMIC_TOPIC_CONFIG.value
    assert (got["retention.ms"], got["cleanup.policy"]) == (("90000", dynamic), ("compact", dynamic))
    assert got["segment.bytes"] == ("1073741824", ConfigSource.DEFAULT_CONFIG.value)
