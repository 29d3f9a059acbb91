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
from dataclasses import dataclass, field, fields, replace

from groupcoord.config import BrokerConfig
from groupcoord.constants import INT32_MAX, LONG_MAX
from groupcoord.errors import ErrorCode, KafkaError

__all__ = [
    "BROKER_SYNONYMS",
    "COMPRESSION_TYPES",
    "KAFKA_TOPIC_CONFIG_NAMES",
    "TOPIC_CONFIGS",
    "TOPIC_CONFIG_FIELDS",
    "ConfigEntry",
    "ConfigSynonym",
    "DynamicDefault",
    "InvalidConfigError",
    "LogConfig",
    "TopicConfigSpec",
    "broker_value_as_topic_value",
    "describe_topic_configs",
    "dynamic_topic_defaults",
    "list_config",
    "log_config_for",
    "validate_topic_configs",
]


class InvalidConfigError(KafkaError):
    def __init__(self, message: str) -> None:
        super().__init__(ErrorCode.INVALID_CONFIG, message)


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
    "min.compaction.lag.ms": "min_compaction_lag_ms",
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
    #: Records younger than this are not compacted: a rolled segment whose newest timestamp is
    #: within it, and every segment after it, are left out of a pass (Kafka's
    #: ``LogCleanerManager.cleanableOffsets``).
    min_compaction_lag_ms: int = 0
    #: ``message.timestamp.type`` is LogAppendTime: derived, set once by ``__post_init__`` (every
    #: append reads it; ``replace`` and ``with_overrides`` recompute it)
    log_append_time: bool = field(init=False, repr=False, compare=False, default=False)

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
        if self.min_compaction_lag_ms < 0:
            raise InvalidConfigError(f"min.compaction.lag.ms must be >= 0, got {self.min_compaction_lag_ms}")
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
        object.__setattr__(self, "log_append_time", self.message_timestamp_type == "LogAppendTime")

    @property
    def compact(self) -> bool:
        return "compact" in self.cleanup_policy

    @property
    def delete(self) -> bool:
        return "delete" in self.cleanup_policy

    def with_overrides(self, configs: Mapping[str, str]) -> LogConfig:
        """This config with Kafka topic-config overrides applied (``{"retention.ms": "1000"}``).

        Unknown names and bad values raise :class:`InvalidConfigError` naming the key.
        Known Kafka names that the log does not act on are accepted and ignored.
        """
        changes: dict[str, object] = {}
        for name, raw in configs.items():
            if name not in KAFKA_TOPIC_CONFIG_NAMES:
                raise InvalidConfigError(f"unknown topic config {name!r}")
            attr = TOPIC_CONFIG_FIELDS.get(name)
            if attr is None:
                continue
            value = raw.strip()
            if attr in ("cleanup_policy", "message_timestamp_type"):
                changes[attr] = value.replace(" ", "")
                continue
            try:
                number = int(value)
            except ValueError:
                raise InvalidConfigError(f"topic config {name!r} needs an integer, got {raw!r}") from None
            if attr == "flush_interval_ms":
                changes[attr] = None if number >= LONG_MAX else number
            else:
                changes[attr] = number
        try:
            return replace(self, **changes)  # type: ignore[arg-type]
        except InvalidConfigError as exc:
            raise InvalidConfigError(f"{exc.message} (from {dict(configs)})") from None

    def to_topic_configs(self) -> dict[str, str]:
        """The settings the log implements, under Kafka's topic config names."""
        out: dict[str, str] = {}
        for name, attr in TOPIC_CONFIG_FIELDS.items():
            value = getattr(self, attr)
            if attr == "flush_interval_ms" and value is None:
                value = LONG_MAX
            out[name] = str(value)
        return out


assert {f.name for f in fields(LogConfig) if f.init} == set(TOPIC_CONFIG_FIELDS.values())


def log_config_for(config: BrokerConfig) -> LogConfig:
    """The broker-level log defaults (``log.*`` properties) as a :class:`LogConfig`."""
    return LogConfig(
        segment_bytes=config.log_segment_bytes,
        segment_ms=config.effective_roll_ms,
        retention_ms=config.effective_retention_ms,
        retention_bytes=config.log_retention_bytes,
        index_interval_bytes=config.log_index_interval_bytes,
        flush_interval_messages=config.log_flush_interval_messages,
        flush_interval_ms=config.log_flush_interval_ms,
        max_message_bytes=config.message_max_bytes,
        cleanup_policy=config.log_cleanup_policy,
        delete_retention_ms=config.log_cleaner_delete_retention_ms,
        message_timestamp_type=config.log_message_timestamp_type,
        min_compaction_lag_ms=config.log_cleaner_min_compaction_lag_ms,
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
SOURCE_DYNAMIC_BROKER = 2
SOURCE_DYNAMIC_DEFAULT_BROKER = 3
SOURCE_STATIC_BROKER = 4
SOURCE_DEFAULT = 5


TYPE_DOUBLE = 6

#: compression.type values Kafka accepts (BrokerCompressionType's names).
COMPRESSION_TYPES = ("uncompressed", "zstd", "lz4", "snappy", "gzip", "producer")


@dataclass(frozen=True, slots=True, kw_only=True)
class TopicConfigSpec:
    """One topic config Kafka defines: its type, validation, default and broker synonyms.

    ``synonyms`` are the broker properties that supply the default, highest priority first,
    each with the factor that turns its value into the topic config's unit (``log.retention.hours``
    -> ``retention.ms``: 3600000); Kafka's ``ServerTopicConfigSynonyms``.
    """

    name: str
    synonyms: tuple[tuple[str, int], ...]
    config_type: int
    check: Callable[[str], bool]
    expectation: str
    default: Callable[[BrokerConfig], str]

    @property
    def broker_property(self) -> str | None:
        return self.synonyms[0][0] if self.synonyms else None


def _int_check(lo: int, hi: int = LONG_MAX) -> Callable[[str], bool]:
    def check(value: str) -> bool:
        try:
            n = int(value.strip())
        except ValueError:
            return False
        return lo <= n <= hi and "_" not in value

    return check


def _choice(*options: str) -> Callable[[str], bool]:
    return lambda value: value.strip() in options


def _list_of(*options: str) -> Callable[[str], bool]:
    def check(value: str) -> bool:
        items = [item.strip() for item in value.split(",")]
        return bool(items) and all(item in options for item in items)

    return check


def _bool_check(value: str) -> bool:
    return value.strip().lower() in ("true", "false")


def _ratio_check(value: str) -> bool:
    try:
        number = float(value)
    except ValueError:
        return False
    return 0.0 <= number <= 1.0


def _any(_value: str) -> bool:
    return True


def _gzip_level(value: str) -> bool:
    return _int_check(1, 9)(value) or value.strip() == "-1"


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


_HOUR_MS = 3_600_000
_MINUTE_MS = 60_000
_LONG_MAX_TEXT = str(LONG_MAX)


def _spec(
    name: str,
    synonyms: tuple[str | tuple[str, int], ...],
    config_type: int,
    check: Callable[[str], bool],
    expectation: str,
    default: Callable[[BrokerConfig], str],
) -> TopicConfigSpec:
    return TopicConfigSpec(
        name=name,
        synonyms=tuple((s, 1) if isinstance(s, str) else s for s in synonyms),
        config_type=config_type,
        check=check,
        expectation=expectation,
        default=default,
    )


#: Every topic config Kafka 3.9 defines (``TopicConfig`` / ``LogConfig``), accepted by
#: CreateTopics, AlterConfigs and IncrementalAlterConfigs alike and listed by DescribeConfigs.
#: Those in :data:`TOPIC_CONFIG_FIELDS` change how the log behaves; the others are stored and
#: reported back but have no effect on a single broker without tiered storage.
TOPIC_CONFIGS: dict[str, TopicConfigSpec] = {
    spec.name: spec
    for spec in (
        _spec(
            "cleanup.policy",
            ("log.cleanup.policy",),
            TYPE_LIST,
            _list_of("delete", "compact"),
            "[compact, delete]",
            _prop("log.cleanup.policy"),
        ),
        _spec(
            "compression.gzip.level",
            ("compression.gzip.level",),
            TYPE_INT,
            _gzip_level,
            "[1,...,9] or -1",
            _const("-1"),
        ),
        _spec(
            "compression.lz4.level",
            ("compression.lz4.level",),
            TYPE_INT,
            _int_check(1, 17),
            "[1,...,17]",
            _const("9"),
        ),
        _spec(
            "compression.type",
            ("compression.type",),
            TYPE_STRING,
            _choice(*COMPRESSION_TYPES),
            "[" + ", ".join(COMPRESSION_TYPES) + "]",
            _const("producer"),
        ),
        _spec(
            "compression.zstd.level",
            ("compression.zstd.level",),
            TYPE_INT,
            _int_check(-131072, 22),
            "[-131072,...,22]",
            _const("3"),
        ),
        _spec(
            "delete.retention.ms",
            ("log.cleaner.delete.retention.ms",),
            TYPE_LONG,
            _int_check(0),
            "an integer >= 0",
            _prop("log.cleaner.delete.retention.ms"),
        ),
        _spec(
            "file.delete.delay.ms",
            ("log.segment.delete.delay.ms",),
            TYPE_LONG,
            _int_check(0),
            "an integer >= 0",
            _const("60000"),
        ),
        _spec(
            "flush.messages",
            ("log.flush.interval.messages",),
            TYPE_LONG,
            _int_check(1),
            "an integer >= 1",
            _prop("log.flush.interval.messages"),
        ),
        _spec(
            "flush.ms",
            ("log.flush.interval.ms", "log.flush.scheduler.interval.ms"),
            TYPE_LONG,
            _int_check(0),
            "an integer >= 0",
            lambda c: str(c.log_flush_interval_ms if c.log_flush_interval_ms is not None else LONG_MAX),
        ),
        _spec("follower.replication.throttled.replicas", (), TYPE_LIST, _any, "a list", _const("")),
        _spec(
            "index.interval.bytes",
            ("log.index.interval.bytes",),
            TYPE_INT,
            _int_check(0, INT32_MAX),
            "an integer >= 0",
            _prop("log.index.interval.bytes"),
        ),
        _spec("leader.replication.throttled.replicas", (), TYPE_LIST, _any, "a list", _const("")),
        _spec(
            "local.retention.bytes",
            ("log.local.retention.bytes",),
            TYPE_LONG,
            _int_check(-2),
            "an integer >= -2",
            _const("-2"),
        ),
        _spec(
            "local.retention.ms",
            ("log.local.retention.ms",),
            TYPE_LONG,
            _int_check(-2),
            "an integer >= -2",
            _const("-2"),
        ),
        _spec(
            "max.compaction.lag.ms",
            ("log.cleaner.max.compaction.lag.ms",),
            TYPE_LONG,
            _int_check(1),
            "an integer >= 1",
            _const(_LONG_MAX_TEXT),
        ),
        _spec(
            "max.message.bytes",
            ("message.max.bytes",),
            TYPE_INT,
            _int_check(0, INT32_MAX),
            "an integer in [0, 2147483647]",
            _prop("message.max.bytes"),
        ),
        _spec(
            "message.downconversion.enable",
            ("log.message.downconversion.enable",),
            TYPE_BOOLEAN,
            _bool_check,
            "true or false",
            _const("true"),
        ),
        _spec(
            "message.format.version",
            ("log.message.format.version",),
            TYPE_STRING,
            _any,
            "a Kafka version",
            _const("3.0-IV1"),
        ),
        _spec(
            "message.timestamp.after.max.ms",
            ("log.message.timestamp.after.max.ms",),
            TYPE_LONG,
            _int_check(0),
            "an integer >= 0",
            _const(_LONG_MAX_TEXT),
        ),
        _spec(
            "message.timestamp.before.max.ms",
            ("log.message.timestamp.before.max.ms",),
            TYPE_LONG,
            _int_check(0),
            "an integer >= 0",
            _const(_LONG_MAX_TEXT),
        ),
        _spec(
            "message.timestamp.difference.max.ms",
            ("log.message.timestamp.difference.max.ms",),
            TYPE_LONG,
            _int_check(0),
            "an integer >= 0",
            _const(_LONG_MAX_TEXT),
        ),
        _spec(
            "message.timestamp.type",
            ("log.message.timestamp.type",),
            TYPE_STRING,
            _choice("CreateTime", "LogAppendTime"),
            "CreateTime or LogAppendTime",
            _prop("log.message.timestamp.type"),
        ),
        _spec(
            "min.cleanable.dirty.ratio",
            ("log.cleaner.min.cleanable.ratio",),
            TYPE_DOUBLE,
            _ratio_check,
            "a number in [0, 1]",
            _const("0.5"),
        ),
        _spec(
            "min.compaction.lag.ms",
            ("log.cleaner.min.compaction.lag.ms",),
            TYPE_LONG,
            _int_check(0),
            "an integer >= 0",
            _prop("log.cleaner.min.compaction.lag.ms"),
        ),
        _spec(
            "min.insync.replicas",
            ("min.insync.replicas",),
            TYPE_INT,
            _choice("1"),
            "1 (single broker)",
            _const("1"),
        ),
        _spec(
            "preallocate", ("log.preallocate",), TYPE_BOOLEAN, _bool_check, "true or false", _const("false")
        ),
        _spec("remote.log.copy.disable", (), TYPE_BOOLEAN, _bool_check, "true or false", _const("false")),
        _spec(
            "remote.log.delete.on.disable", (), TYPE_BOOLEAN, _bool_check, "true or false", _const("false")
        ),
        _spec(
            "remote.storage.enable",
            (),
            TYPE_BOOLEAN,
            _choice("false"),
            "false (no tiered storage)",
            _const("false"),
        ),
        _spec(
            "retention.bytes",
            ("log.retention.bytes",),
            TYPE_LONG,
            _int_check(-1),
            "an integer >= -1",
            _prop("log.retention.bytes"),
        ),
        _spec(
            "retention.ms",
            ("log.retention.ms", ("log.retention.minutes", _MINUTE_MS), ("log.retention.hours", _HOUR_MS)),
            TYPE_LONG,
            _int_check(-1),
            "an integer >= -1",
            lambda c: str(c.effective_retention_ms),
        ),
        _spec(
            "segment.bytes",
            ("log.segment.bytes",),
            TYPE_INT,
            _int_check(14, INT32_MAX),
            "an integer in [14, 2147483647]",
            _prop("log.segment.bytes"),
        ),
        _spec(
            "segment.index.bytes",
            ("log.index.size.max.bytes",),
            TYPE_INT,
            _int_check(4, INT32_MAX),
            "an integer >= 4",
            _const("10485760"),
        ),
        _spec(
            "segment.jitter.ms",
            ("log.roll.jitter.ms", ("log.roll.jitter.hours", _HOUR_MS)),
            TYPE_LONG,
            _int_check(0),
            "an integer >= 0",
            _const("0"),
        ),
        _spec(
            "segment.ms",
            ("log.roll.ms", ("log.roll.hours", _HOUR_MS)),
            TYPE_LONG,
            _int_check(1),
            "an integer >= 1",
            lambda c: str(c.effective_roll_ms),
        ),
        _spec(
            "unclean.leader.election.enable",
            ("unclean.leader.election.enable",),
            TYPE_BOOLEAN,
            _bool_check,
            "true or false",
            _const("false"),
        ),
    )
}

#: Topic config names Kafka defines (the keys of :data:`TOPIC_CONFIGS`).
KAFKA_TOPIC_CONFIG_NAMES = frozenset(TOPIC_CONFIGS)

#: Broker property -> (topic config, factor), for every broker synonym of a topic config. These
#: are the broker configs Kafka lets AlterConfigs change at run time (``DynamicLogConfig``).
BROKER_SYNONYMS: Mapping[str, tuple[str, int]] = {
    prop: (spec.name, factor) for spec in TOPIC_CONFIGS.values() for prop, factor in spec.synonyms
}


def list_config(name: str) -> bool:
    """True for configs of type LIST (the only ones IncrementalAlterConfigs may APPEND/SUBTRACT)."""
    spec = TOPIC_CONFIGS.get(name)
    return spec is not None and spec.config_type == TYPE_LIST


def broker_value_as_topic_value(prop: str, value: str) -> str:
    """A dynamic broker synonym's value in its topic config's unit (hours -> ms, -1 stays -1)."""
    _topic, factor = BROKER_SYNONYMS[prop]
    if factor == 1:
        return value.strip()
    number = int(value.strip())
    return str(-1 if number < 0 else number * factor)


@dataclass(frozen=True, slots=True, kw_only=True)
class DynamicDefault:
    """A topic config's default set by a dynamic broker config."""

    #: in the topic config's unit (``retention.ms`` from ``log.retention.hours``: milliseconds)
    value: str
    #: SOURCE_DYNAMIC_BROKER or SOURCE_DYNAMIC_DEFAULT_BROKER
    source: int
    #: the broker property that set it, and its value as set
    prop: str
    raw: str


def dynamic_topic_defaults(
    per_broker: Mapping[str, str], cluster_default: Mapping[str, str]
) -> dict[str, DynamicDefault]:
    """Topic config -> its default set by dynamic broker configs: a per-broker config wins over a
    cluster-wide default, and within one level the synonym listed first wins (``log.retention.ms``
    over ``.hours``)."""
    out: dict[str, DynamicDefault] = {}
    for spec in TOPIC_CONFIGS.values():
        for level, source in (
            (per_broker, SOURCE_DYNAMIC_BROKER),
            (cluster_default, SOURCE_DYNAMIC_DEFAULT_BROKER),
        ):
            found = next((prop for prop, _f in spec.synonyms if prop in level), None)
            if found is not None:
                out[spec.name] = DynamicDefault(
                    value=broker_value_as_topic_value(found, level[found]),
                    source=source,
                    prop=found,
                    raw=level[found],
                )
                break
    return out


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
class ConfigSynonym:
    name: str
    value: str | None
    source: int


@dataclass(frozen=True, slots=True, kw_only=True)
class ConfigEntry:
    name: str
    value: str | None
    source: int
    config_type: int
    read_only: bool = False
    is_sensitive: bool = False
    #: where the value could come from, highest priority first (DescribeConfigs include_synonyms)
    synonyms: tuple[ConfigSynonym, ...] = ()


_KAFKA_DEFAULTS = BrokerConfig()


def describe_topic_configs(
    config: BrokerConfig,
    overrides: Mapping[str, str],
    dynamic: Mapping[str, DynamicDefault] | None = None,
) -> list[ConfigEntry]:
    """Every topic config with its value and source: the topic's override
    (DYNAMIC_TOPIC_CONFIG), else a dynamic broker config (``dynamic``, from
    :func:`dynamic_topic_defaults`), else a broker property set in the file
    (STATIC_BROKER_CONFIG), else Kafka's default (DEFAULT_CONFIG)."""
    dynamic = dynamic or {}
    out = []
    for name, spec in sorted(TOPIC_CONFIGS.items()):
        synonyms: list[ConfigSynonym] = []
        if name in overrides:
            value: str | None = overrides[name]
            synonyms.append(ConfigSynonym(name=name, value=overrides[name], source=SOURCE_DYNAMIC_TOPIC))
        if name in dynamic:
            d = dynamic[name]
            if not synonyms:
                value = d.value
            synonyms.append(ConfigSynonym(name=d.prop, value=d.raw, source=d.source))
        static = next((prop for prop, _f in spec.synonyms if prop in config.explicit), None)
        if static is not None:
            if not synonyms:
                value = spec.default(config)
            synonyms.append(
                ConfigSynonym(name=static, value=_prop(static)(config), source=SOURCE_STATIC_BROKER)
            )
        if not synonyms:
            value = spec.default(config)
        synonyms.append(
            ConfigSynonym(
                name=spec.broker_property or name, value=spec.default(_KAFKA_DEFAULTS), source=SOURCE_DEFAULT
            )
        )
        out.append(
            ConfigEntry(
                name=name,
                value=value,
                source=synonyms[0].source,
                config_type=spec.config_type,
                synonyms=tuple(synonyms),
            )
        )
    return out
