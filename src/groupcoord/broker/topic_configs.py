"""Topic-level configs: which names a topic accepts, their validation, and their broker defaults.

Names are Kafka's topic config names; each maps to the broker property that supplies its
default. CreateTopics validates with :func:`validate_topic_configs`; DescribeConfigs lists
:func:`describe_topic_configs`.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass

from groupcoord.config import LONG_MAX, BrokerConfig

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
