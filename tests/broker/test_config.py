from pathlib import Path

import pytest

from groupcoord.cli import main
from groupcoord.config import LONG_MAX, PROPERTIES, BrokerConfig, parse_properties
from groupcoord.coordinator.config import GroupConfig
from groupcoord.errors import ConfigError
from groupcoord.storage.log_config import log_config_for


def test_defaults_are_kafkas() -> None:
    c = BrokerConfig()
    assert c.num_partitions == 1
    assert c.log_segment_bytes == 1073741824
    assert c.effective_retention_ms == 168 * 3_600_000
    assert c.message_max_bytes == 1048588
    assert c.socket_request_max_bytes == 104857600
    assert c.log_flush_interval_messages == LONG_MAX
    assert c.group_min_session_timeout_ms == 6000
    assert c.group_max_session_timeout_ms == 1800000
    assert c.group_initial_rebalance_delay_ms == 3000
    assert c.offsets_topic_num_partitions == 50
    assert c.offsets_retention_minutes == 10080
    assert c.offset_metadata_max_bytes == 4096
    assert c.node_id == 0


def test_properties_syntax_comments_separators_continuations_escapes() -> None:
    text = "\n".join(
        [
            "# a comment",
            "! another comment",
            "num.partitions=3",
            "log.retention.ms : 1000",
            "auto.create.topics.enable false",
            "listeners = PLAINTEXT://127.0.0.1:\\",
            "    9093",
            "advertised.listeners=PLAINTEXT\\://localhost:9093",
            "",
        ]
    )
    props = parse_properties(text)
    assert props == {
        "num.partitions": "3",
        "log.retention.ms": "1000",
        "auto.create.topics.enable": "false",
        "listeners": "PLAINTEXT://127.0.0.1:9093",
        "advertised.listeners": "PLAINTEXT://localhost:9093",
    }


def test_file_then_set_overrides(tmp_path: Path) -> None:
    f = tmp_path / "server.properties"
    f.write_text("num.partitions=3\nlog.segment.bytes=1048576\ngroup.max.size=10\n")
    c = BrokerConfig.load(f, ["num.partitions=5", "broker.id=7"])
    assert (c.num_partitions, c.log_segment_bytes, c.group_max_size, c.node_id) == (5, 1048576, 10, 7)
    assert c.explicit == {"num.partitions", "log.segment.bytes", "group.max.size", "broker.id"}


def test_retention_resolution_prefers_ms_then_minutes_then_hours() -> None:
    assert BrokerConfig.load(None, ["log.retention.hours=1"]).effective_retention_ms == 3_600_000
    assert BrokerConfig.load(None, ["log.retention.minutes=2"]).effective_retention_ms == 120_000
    c = BrokerConfig.load(None, ["log.retention.minutes=2", "log.retention.ms=5"])
    assert c.effective_retention_ms == 5
    assert BrokerConfig.load(None, ["log.retention.ms=-1"]).effective_retention_ms == -1


@pytest.mark.parametrize(
    ("item", "fragment"),
    [
        ("no.such.key=1", "'no.such.key'"),
        ("num.partitions=zero", "num.partitions: 'zero'"),
        ("num.partitions=0", "num.partitions: '0'"),
        ("default.replication.factor=0", "default.replication.factor: '0'"),
        ("auto.create.topics.enable=yes", "auto.create.topics.enable: 'yes'"),
        ("log.cleanup.policy=shred", "log.cleanup.policy: 'shred'"),
        ("group.max.size=0", "group.max.size: '0'"),
        ("message.max.bytes=1_000", "message.max.bytes: '1_000'"),
        ("listeners=SSL://h:1", "listeners"),
        ("novalue", "key=value"),
    ],
)
def test_unknown_key_or_bad_value_names_them(item: str, fragment: str) -> None:
    with pytest.raises(ConfigError) as info:
        BrokerConfig.load(None, [item])
    assert fragment in str(info.value)


def test_min_session_above_max_is_rejected() -> None:
    with pytest.raises(ConfigError, match=r"group\.min\.session\.timeout\.ms"):
        BrokerConfig.load(None, ["group.min.session.timeout.ms=10", "group.max.session.timeout.ms=5"])


def test_offsets_topic_replication_factor_accepts_kafka_values() -> None:
    assert (
        BrokerConfig.load(None, ["offsets.topic.replication.factor=3"]).offsets_topic_replication_factor == 3
    )


def test_listener_parsing() -> None:
    c = BrokerConfig.load(None, ["listeners=PLAINTEXT://0.0.0.0:0", "advertised.listeners=PLAINTEXT://h:99"])
    assert (c.listener().host, c.listener().port) == ("0.0.0.0", 0)
    assert (c.advertised_listener().host, c.advertised_listener().port) == ("h", 99)
    assert BrokerConfig.load(None, ["listeners=127.0.0.1:5"]).listener().port == 5


def test_every_group_and_offsets_key_reaches_the_coordinator_config() -> None:
    overrides = [
        f"{k}=7"
        for k in PROPERTIES
        if k.startswith(("group.", "offsets.", "offset."))
        and k not in ("offsets.topic.compression.codec", "group.consumer.migration.policy", *_LIST_KEYS)
    ]
    overrides.append("group.max.session.timeout.ms=70")
    overrides.append("group.consumer.migration.policy=upgrade")
    # group.consumer.heartbeat.interval.ms must stay below group.consumer.session.timeout.ms
    overrides += ["group.consumer.heartbeat.interval.ms=6", "group.consumer.min.heartbeat.interval.ms=6"]
    c = BrokerConfig.load(None, overrides)
    g = GroupConfig.from_broker(c)
    assert g.group_min_session_timeout_ms == 7
    assert g.group_max_session_timeout_ms == 70
    assert g.group_initial_rebalance_delay_ms == 7
    assert g.group_max_size == 7
    assert g.offsets_topic_num_partitions == 7
    assert g.offsets_retention_minutes == 7
    assert g.offsets_commit_timeout_ms == 7
    assert g.offset_metadata_max_bytes == 7
    assert g.offsets_load_buffer_size == 7
    assert g.consumer_group_config().session_timeout_ms == 7
    assert g.consumer_group_config().heartbeat_interval_ms == 6
    assert g.consumer_group_config().max_size == 7
    assert g.consumer_group_config().classic_max_size == 7
    assert g.consumer_group_config().migration_policy == "upgrade"
    assert g.consumer_group_config().assignment_interval_ms == 7


_LIST_KEYS = ("group.coordinator.rebalance.protocols", "group.consumer.assignors")


def test_consumer_group_configs_take_kafkas_defaults() -> None:
    """Kafka 4.x ``GroupCoordinatorConfig``: session 45 s in [45 s, 60 s], heartbeat 5 s in
    [5 s, 15 s], uniform then range, both protocols."""
    g = GroupConfig.from_broker(BrokerConfig.load(None, []))
    cg = g.consumer_group_config()
    assert (cg.session_timeout_ms, cg.heartbeat_interval_ms, cg.assignors) == (
        45000,
        5000,
        ("uniform", "range"),
    )
    assert g.consumer_protocol_enabled
    assert cg.assignment_interval_ms == 1000  # Kafka 4.3, KIP-1263
    assert (cg.migration_policy, cg.upgrade_enabled, cg.downgrade_enabled) == ("bidirectional", True, True)


@pytest.mark.parametrize(
    ("value", "upgrade", "downgrade"),
    [("upgrade", True, False), ("DOWNGRADE", False, True), ("Disabled", False, False)],
)
def test_the_migration_policy_is_parsed_case_insensitively(
    value: str, upgrade: bool, downgrade: bool
) -> None:
    """Kafka's ``ConsumerGroupMigrationPolicy.parse`` (``ConsumerGroupMigrationPolicyTest``)."""
    cg = GroupConfig.from_broker(
        BrokerConfig.load(None, [f"group.consumer.migration.policy={value}"])
    ).consumer_group_config()
    assert (cg.upgrade_enabled, cg.downgrade_enabled) == (upgrade, downgrade)


@pytest.mark.parametrize(
    ("settings", "message"),
    [
        (["group.consumer.session.timeout.ms=44999"], "greater than or equal to group.consumer.min.session"),
        (["group.consumer.session.timeout.ms=60001"], "less than or equal to group.consumer.max.session"),
        (
            ["group.consumer.heartbeat.interval.ms=4999"],
            "greater than or equal to group.consumer.min.heartbeat",
        ),
        (
            ["group.consumer.heartbeat.interval.ms=15001"],
            "less than or equal to group.consumer.max.heartbeat",
        ),
        (
            ["group.consumer.min.session.timeout.ms=1000", "group.consumer.session.timeout.ms=5000"],
            "group.consumer.heartbeat.interval.ms must be less than group.consumer.session.timeout.ms",
        ),
        # Kafka 4.3 GroupCoordinatorConfig (KAFKA-20300): the assignment interval in [min, max].
        (
            ["group.consumer.assignment.interval.ms=15001"],
            "group.consumer.assignment.interval.ms must be less than or equal to "
            "group.consumer.max.assignment.interval.ms",
        ),
        (
            ["group.consumer.min.assignment.interval.ms=2000"],
            "group.consumer.assignment.interval.ms must be greater than or equal to "
            "group.consumer.min.assignment.interval.ms",
        ),
        (
            [
                "group.consumer.max.assignment.interval.ms=500",
                "group.consumer.min.assignment.interval.ms=600",
            ],
            "group.consumer.max.assignment.interval.ms must be greater than or equal to "
            "group.consumer.min.assignment.interval.ms",
        ),
        # the same max >= min requirement for every pair (GroupCoordinatorConfig's constructor)
        (
            [
                "group.consumer.max.session.timeout.ms=40000",
                "group.consumer.min.session.timeout.ms=50000",
            ],
            "group.consumer.max.session.timeout.ms must be greater than or equal to "
            "group.consumer.min.session.timeout.ms",
        ),
        (["group.consumer.assignment.interval.ms=-1"], "group.consumer.assignment.interval.ms"),
        (["group.coordinator.rebalance.protocols=consumer"], "must contain classic"),
        (["group.coordinator.rebalance.protocols=classic,share"], "group.coordinator.rebalance.protocols"),
        (["group.consumer.assignors=sticky"], "group.consumer.assignors"),
        (["group.consumer.migration.policy=sideways"], "group.consumer.migration.policy"),
    ],
)
def test_consumer_group_config_bounds_stop_startup(settings: list[str], message: str) -> None:
    """Out-of-bounds ``group.consumer.*`` values are refused as Kafka's config validation does."""
    with pytest.raises(ConfigError, match=message):
        BrokerConfig.load(None, settings)


def test_kafkas_assignor_class_names_are_accepted() -> None:
    c = BrokerConfig.load(
        None,
        [
            "group.consumer.assignors=org.apache.kafka.coordinator.group.assignor.RangeAssignor,"
            "org.apache.kafka.coordinator.group.assignor.UniformAssignor"
        ],
    )
    assert GroupConfig.from_broker(c).consumer_group_config().assignors == ("range", "uniform")
    assert not GroupConfig.from_broker(
        BrokerConfig.load(None, ["group.coordinator.rebalance.protocols=classic"])
    ).consumer_protocol_enabled


def test_log_config_carries_broker_defaults() -> None:
    c = BrokerConfig.load(
        None, ["log.segment.bytes=2048", "log.retention.bytes=100", "message.max.bytes=500"]
    )
    lc = log_config_for(c)
    assert (lc.segment_bytes, lc.retention_bytes, lc.max_message_bytes) == (2048, 100, 500)


def test_cli_exits_2_naming_the_bad_key(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    assert main(["serve", "--data-dir", str(tmp_path), "--set", "log.segment.bytes=huge"]) == 2
    err = capsys.readouterr().err
    assert "log.segment.bytes" in err
    assert "'huge'" in err


def test_cli_exits_2_on_a_misspelled_key_in_file_suggesting_the_key(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    f = tmp_path / "server.properties"
    f.write_text("log.retention.hour=24\n")
    assert main(["serve", "--data-dir", str(tmp_path), "--config", str(f)]) == 2
    err = capsys.readouterr().err
    assert "unknown configuration key 'log.retention.hour' (value '24')" in err
    assert "(did you mean 'log.retention.hours'?)" in err
