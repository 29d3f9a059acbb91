"""A partition log's settings: Kafka's topic configs, their validation and their broker defaults.

:class:`LogConfig` holds the settings the log acts on (Kafka's topic-level configs, snake_cased);
:meth:`LogConfig.with_overrides` applies a topic's overrides to the broker's defaults
(:func:`log_config_for`). The topic config table (:data:`TOPIC_CONFIGS`) says which names a topic
accepts, how CreateTopics validates them (:func:`validate_topic_configs`) and what
DescribeConfigs lists (:func:`describe_topic_configs`), each name mapped to the broker property
that supplies its default.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, fields, replace

from groupcoord.config import BrokerConfig
from groupcoord.constants import INT32_MAX, LONG_MAX
from groupcoord.errors import ErrorCode, KafkaError

__all__ = [
    "KAFKA_TOPIC_CONFIG_NAMES",
    "TOPIC_CONFIGS",
    "TOPIC_CONFIG_FIELDS",
    "ConfigEntry",
    "InvalidConfigError",
    "LogConfig",
    "TopicConfigSpec",
    "describe_topic_configs",
    "log_config_for",
    "validate_topic_configs",
]


class InvalidConfigError(KafkaError):
    def __init__(self, message: str) -> None:
        super().__init__(ErrorCode.INVALID_CONFIG, message)



#: Topic config names Kafka defines. Those we act on map to :class:`LogConfig` fields; the rest
#: are accepted (so admin tools that set them work) and reported back, but have no effect.
KAFKA_TOPIC_CONFIG_NAMES = frozenset(
    {
        "cleanup.policy",
        "compression.type",
        "compression.gzip.level",
        "compression.lz4.level",
        "compression.zstd.level",
        "delete.retention.ms",
        "file.delete.delay.ms",
        "flush.messages",
        "flush.ms",
        "follower.replication.throttled.replicas",
        "index.interval.bytes",
        "leader.replication.throttled.replicas",
        "local.retention.bytes",
        "local.retention.ms",
        "max.compaction.lag.ms",
        "max.message.bytes",
        "message.downconversion.enable",
        "message.format.version",
        "message.timestamp.after.max.ms",
        "message.timestamp.before.max.ms",
        "message.timestamp.difference.max.ms",
        "message.timestamp.type",
        "min.cleanable.dirty.ratio",
        "min.compaction.lag.ms",
        "min.insync.replicas",
        "preallocate",
        "remote.storage.enable",
        "retention.bytes",
        "retention.ms",
        "segment.bytes",
        "segment.index.bytes",
        "segment.jitter.ms",
        "segment.ms",
        "unclean.leader.election.enable",
    }
)

#: Kafka topic config name -> LogConfig field, for the configs the log implements.
TOPIC_CONFIG_FIELDS: Mapping[str, str] = {
    "segment.bytes": "segment_bytes",
    "segment.ms": "segment_ms",
    "retention.ms": "retention_ms",
    "retention.bytes": "retention_bytes",
    "index.interval.bytes": "index_interval_bytes",
    "flush.messages": "flush_interval_messages",
    "flush.ms": "flush_interval_ms",
    "max.message.bytes": "max_message_bytes",
    "cleanup.policy": "cleanup_policy",
    "delete.retention.ms": "delete_retention_ms",
    "message.timestamp.type": "message_timestamp_type",
}


@dataclass(frozen=True, slots=True, kw_only=True)
class LogConfig:
    """Per-partition log settings (Kafka's topic-level configs, snake_cased)."""

    segment_bytes: int = 1073741824
    segment_ms: int = 604800000
    retention_ms: int = 604800000
    retention_bytes: int = -1
    index_interval_bytes: int = 4096
    flush_interval_messages: int = LONG_MAX
    flush_interval_ms: int | None = None
    max_message_bytes: int = 1048588
    cleanup_policy: str = "delete"
    delete_retention_ms: int = 86400000
    message_timestamp_type: str = "CreateTime"

    def __post_init__(self) -> None:
        if self.segment_bytes < 14:
            raise InvalidConfigError(f"segment.bytes must be at least 14, got {self.segment_bytes}")
        if self.segment_bytes > INT32_MAX:
            raise InvalidConfigError(f"segment.bytes must fit in an int32, got {self.segment_bytes}")
        if self.segment_ms < 1:
            raise InvalidConfigError(f"segment.ms must be at least 1, got {self.segment_ms}")
        if self.retention_ms < -1:
            raise InvalidConfigError(f"retention.ms must be -1 or more, got {self.retention_ms}")
        if self.retention_bytes < -1:
            raise InvalidConfigError(f"retention.bytes must be -1 or more, got {self.retention_bytes}")
        if self.index_interval_bytes < 0:
            raise InvalidConfigError(f"index.interval.bytes must be >= 0, got {self.index_interval_bytes}")
        if self.flush_interval_messages < 1:
            raise InvalidConfigError(f"flush.messages must be >= 1, got {self.flush_interval_messages}")
        if self.flush_interval_ms is not None and self.flush_interval_ms < 0:
            raise InvalidConfigError(f"flush.ms must be >= 0, got {self.flush_interval_ms}")
        if self.max_message_bytes < 0:
            raise InvalidConfigError(f"max.message.bytes must be >= 0, got {self.max_message_bytes}")
        if self.delete_retention_ms < 0:
            raise InvalidConfigError(f"delete.retention.ms must be >= 0, got {self.delete_retention_ms}")
        policies = {p.strip() for p in self.cleanup_policy.split(",") if p.strip()}
        if not policies or not policies <= {"delete", "compact"}:
            raise InvalidConfigError(
                f"cleanup.policy must be delete and/or compact, got {self.cleanup_policy!r}"
            )
        if self.message_timestamp_type not in ("CreateTime", "LogAppendTime"):
            raise InvalidConfigError(
                "message.timestamp.type must be CreateTime or LogAppendTime, "
                f"got {self.message_timestamp_type!r}"
            )

    @property
    def compact(self) -> bool:
        return "compact" in self.cleanup_policy

    @property
    def delete(self) -> bool:
        return "delete" in self.cleanup_policy

    @property
    def log_append_time(self) -> bool:
        return self.message_timestamp_type == "LogAppendTime"

    def with_overrides(self, configs: Mapping[str, str]) -> LogConfig:
        """This config with Kafka topic-config overrides applied (``{"retention.ms": "1000"}``).

        Unknown names and bad values raise :class:`InvalidConfigError` naming the key.
        Known Kafka names that the log does not act on are accepted and ignored.
        """
        changes: dict[str, object] = {}
        for name, raw in configs.items():
            if name not in KAFKA_TOPIC_CONFIG_NAMES:
                raise InvalidConfigError(f"unknown topic config {name!r}")
            field = TOPIC_CONFIG_FIELDS.get(name)
            if field is None:
                continue
            value = raw.strip()
            if field in ("cleanup_policy", "message_timestamp_type"):
                changes[field] = value.replace(" ", "")
                continue
            try:
                number = int(value)
            except ValueError:
                raise InvalidConfigError(f"topic config {name!r} needs an integer, got {raw!r}") from None
            if field == "flush_interval_ms":
                changes[field] = None if number >= LONG_MAX else number
            else:
                changes[field] = number
        try:
            return replace(self, **changes)  # type: ignore[arg-type]
        except InvalidConfigError as exc:
            raise InvalidConfigError(f"{exc.message} (from {dict(configs)})") from None

    def to_topic_configs(self) -> dict[str, str]:
        """The settings the log implements, under Kafka's topic config names."""
        out: dict[str, str] = {}
        for name, field in TOPIC_CONFIG_FIELDS.items():
            value = getattr(self, field)
            if field == "flush_interval_ms" and value is None:
                value = LONG_MAX
            out[name] = str(value)
        return out


assert {f.name for f in fields(LogConfig)} == set(TOPIC_CONFIG_FIELDS.values())


def log_config_for(config: BrokerConfig) -> LogConfig:
    """The broker-level log defaults (``log.*`` properties) as a :class:`LogConfig`."""
    return LogConfig(
        segment_bytes=config.log_segment_bytes,
        retention_ms=config.effective_retention_ms,
        retention_bytes=config.log_retention_bytes,
        index_interval_bytes=config.log_index_interval_bytes,
        flush_interval_messages=config.log_flush_interval_messages,
        flush_interval_ms=config.log_flush_interval_ms,
        max_message_bytes=config.message_max_bytes,
        cleanup_policy=config.log_cleanup_policy,
        delete_retention_ms=config.log_cleaner_delete_retention_ms,
        message_timestamp_type=config.log_message_timestamp_type,
    )


# ----------------------------------------------------------------------------------------------
# The topic config table (CreateTopics validation, DescribeConfigs)
# ----------------------------------------------------------------------------------------------

# DescribeConfigs config_type codes (KIP-569).
TYPE_BOOLEAN = 1
TYPE_STRING = 2
TYPE_INT = 3
TYPE_LONG = 5
TYPE_LIST = 7

# DescribeConfigs config_source codes.
SOURCE_DYNAMIC_TOPIC = 1
SOURCE_STATIC_BROKER = 4
SOURCE_DEFAULT = 5


@dataclass(frozen=True, slots=True, kw_only=True)
class TopicConfigSpec:
    name: str
    broker_property: str | None
    config_type: int
    check: Callable[[str], bool]
    expectation: str
    default: Callable[[BrokerConfig], str]


def _int_check(lo: int, hi: int = LONG_MAX) -> Callable[[str], bool]:
    def check(value: str) -> bool:
        try:
            n = int(value)
        except ValueError:
            return False
        return lo <= n <= hi and "_" not in value

    return check


def _choice(*options: str) -> Callable[[str], bool]:
    return lambda value: value in options


def _prop(prop: str) -> Callable[[BrokerConfig], str]:
    def default(config: BrokerConfig) -> str:
        value = config.get(prop)
        if value is None:
            return ""
        if isinstance(value, bool):
            return "true" if value else "false"
        return str(value)

    return default


def _const(value: str) -> Callable[[BrokerConfig], str]:
    return lambda _config: value


TOPIC_CONFIGS: dict[str, TopicConfigSpec] = {
    spec.name: spec
    for spec in (
        TopicConfigSpec(
            name="cleanup.policy",
            broker_property="log.cleanup.policy",
            config_type=TYPE_LIST,
            check=_choice("delete", "compact"),
            expectation="delete or compact",
            default=_prop("log.cleanup.policy"),
        ),
        TopicConfigSpec(
            name="retention.ms",
            broker_property="log.retention.ms",
            config_type=TYPE_LONG,
            check=_int_check(-1),
            expectation="an integer >= -1",
            default=lambda c: str(c.effective_retention_ms),
        ),
        TopicConfigSpec(
            name="retention.bytes",
            broker_property="log.retention.bytes",
            config_type=TYPE_LONG,
            check=_int_check(-1),
            expectation="an integer >= -1",
            default=_prop("log.retention.bytes"),
        ),
        TopicConfigSpec(
            name="segment.bytes",
            broker_property="log.segment.bytes",
            config_type=TYPE_INT,
            check=_int_check(14, 2147483647),
            expectation="an integer in [14, 2147483647]",
            default=_prop("log.segment.bytes"),
        ),
        TopicConfigSpec(
            name="max.message.bytes",
            broker_property="message.max.bytes",
            config_type=TYPE_INT,
            check=_int_check(0, 2147483647),
            expectation="an integer in [0, 2147483647]",
            default=_prop("message.max.bytes"),
        ),
        TopicConfigSpec(
            name="message.timestamp.type",
            broker_property="log.message.timestamp.type",
            config_type=TYPE_STRING,
            check=_choice("CreateTime", "LogAppendTime"),
            expectation="CreateTime or LogAppendTime",
            default=_prop("log.message.timestamp.type"),
        ),
        TopicConfigSpec(
            name="delete.retention.ms",
            broker_property="log.cleaner.delete.retention.ms",
            config_type=TYPE_LONG,
            check=_int_check(0),
            expectation="an integer >= 0",
            default=_prop("log.cleaner.delete.retention.ms"),
        ),
        TopicConfigSpec(
            name="flush.messages",
            broker_property="log.flush.interval.messages",
            config_type=TYPE_LONG,
            check=_int_check(1),
            expectation="an integer >= 1",
            default=_prop("log.flush.interval.messages"),
        ),
        TopicConfigSpec(
            name="flush.ms",
            broker_property="log.flush.interval.ms",
            config_type=TYPE_LONG,
            check=_int_check(0),
            expectation="an integer >= 0",
            default=lambda c: str(
                c.log_flush_interval_ms if c.log_flush_interval_ms is not None else LONG_MAX
            ),
        ),
        TopicConfigSpec(
            name="index.interval.bytes",
            broker_property="log.index.interval.bytes",
            config_type=TYPE_INT,
            check=_int_check(0, 2147483647),
            expectation="an integer >= 0",
            default=_prop("log.index.interval.bytes"),
        ),
        TopicConfigSpec(
            name="min.insync.replicas",
            broker_property=None,
            config_type=TYPE_INT,
            check=_choice("1"),
            expectation="1 (single broker)",
            default=_const("1"),
        ),
        TopicConfigSpec(
            name="compression.type",
            broker_property=None,
            config_type=TYPE_STRING,
            check=_choice("producer"),
            expectation="producer (batches are stored as the producer compressed them)",
            default=_const("producer"),
        ),
    )
}


def validate_topic_configs(configs: Mapping[str, str | None]) -> tuple[str, str] | None:
    """None if every entry is acceptable, else (name, message) of the first bad one."""
    for name, value in configs.items():
        spec = TOPIC_CONFIGS.get(name)
        if spec is None:
            return name, f"Unknown topic config name: {name}"
        if value is None or not spec.check(value):
            return name, f"Invalid value {value} for configuration {name}: expected {spec.expectation}"
    return None


@dataclass(frozen=True, slots=True, kw_only=True)
class ConfigEntry:
    name: str
    value: str | None
    source: int
    config_type: int
    read_only: bool = False
    is_sensitive: bool = False


def describe_topic_configs(config: BrokerConfig, overrides: Mapping[str, str]) -> list[ConfigEntry]:
    out = []
    for name, spec in sorted(TOPIC_CONFIGS.items()):
        if name in overrides:
            out.append(
                ConfigEntry(
                    name=name,
                    value=overrides[name],
                    source=SOURCE_DYNAMIC_TOPIC,
                    config_type=spec.config_type,
                )
            )
        else:
            explicit = spec.broker_property is not None and spec.broker_property in config.explicit
            out.append(
                ConfigEntry(
                    name=name,
                    value=spec.default(config),
                    source=SOURCE_STATIC_BROKER if explicit else SOURCE_DEFAULT,
                    config_type=spec.config_type,
                )
            )
    return out
