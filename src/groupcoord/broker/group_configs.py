"""Dynamic group configs (KIP-848): IncrementalAlterConfigs and DescribeConfigs on resource type
GROUP (32), Kafka 4.x ``GroupConfig`` / ``GroupConfigManager``.

A consumer group may override three of the broker's consumer group configs:

* ``consumer.session.timeout.ms`` (default: ``group.consumer.session.timeout.ms``);
* ``consumer.heartbeat.interval.ms`` (default: ``group.consumer.heartbeat.interval.ms``);
* ``consumer.assignment.interval.ms`` (default: ``group.consumer.assignment.interval.ms``; Kafka
  4.3, KAFKA-20251: the assignment batching of KIP-1263).

``GroupConfig.validate``: each is an int within the broker's ``group.consumer.{min,max}.*`` bounds
and the session timeout must be greater than the heartbeat interval, else INVALID_CONFIG; a name
that is not a group config is INVALID_CONFIG ("Unknown group config name"). Kafka 4.1's
``share.*`` and ``streams.*`` group configs are not served here (no share or streams groups):
they are refused as unknown. The overrides are kept in ``__topics.json`` (Kafka keeps them in its
metadata log) and apply from each member's next heartbeat (its session timer and the interval the
heartbeat hands out), as Kafka's.
"""

from __future__ import annotations

from collections.abc import Mapping

from groupcoord.config import BrokerConfig
from groupcoord.storage.log_config import SOURCE_DEFAULT, TYPE_INT, ConfigEntry, ConfigSynonym

RESOURCE_GROUP = 32
#: Kafka's ConfigSource.GROUP_CONFIG
SOURCE_GROUP = 8

SESSION = "consumer.session.timeout.ms"
HEARTBEAT = "consumer.heartbeat.interval.ms"
ASSIGNMENT = "consumer.assignment.interval.ms"
NAMES = (SESSION, HEARTBEAT, ASSIGNMENT)


class GroupConfigError(ValueError):
    """A group config refused (INVALID_CONFIG) with Kafka's message."""


def defaults(config: BrokerConfig) -> dict[str, int]:
    return {
        SESSION: config.group_consumer_session_timeout_ms,
        HEARTBEAT: config.group_consumer_heartbeat_interval_ms,
        ASSIGNMENT: config.group_consumer_assignment_interval_ms,
    }


def validate(config: BrokerConfig, configs: Mapping[str, str]) -> dict[str, int]:
    """``GroupConfig.validate`` of a group's whole set of overrides; returns them as ints."""
    for name in configs:
        if name not in NAMES:
            raise GroupConfigError(f"Unknown group config name: {name}")
    values = defaults(config)
    parsed: dict[str, int] = {}
    for name, text in configs.items():
        try:
            parsed[name] = values[name] = int(text.strip())
        except ValueError:
            raise GroupConfigError(
                f"Invalid value {text} for configuration {name}: Not a number of type INT"
            ) from None
    bounds = (
        (
            HEARTBEAT,
            "group.consumer.min.heartbeat.interval.ms",
            config.group_consumer_min_heartbeat_interval_ms,
            "group.consumer.max.heartbeat.interval.ms",
            config.group_consumer_max_heartbeat_interval_ms,
        ),
        (
            SESSION,
            "group.consumer.min.session.timeout.ms",
            config.group_consumer_min_session_timeout_ms,
            "group.consumer.max.session.timeout.ms",
            config.group_consumer_max_session_timeout_ms,
        ),
        (
            ASSIGNMENT,
            "group.consumer.min.assignment.interval.ms",
            config.group_consumer_min_assignment_interval_ms,
            "group.consumer.max.assignment.interval.ms",
            config.group_consumer_max_assignment_interval_ms,
        ),
    )
    for name, min_name, lo, max_name, hi in bounds:
        if values[name] < lo:
            raise GroupConfigError(f"{name} must be greater than or equal to {min_name}")
        if values[name] > hi:
            raise GroupConfigError(f"{name} must be less than or equal to {max_name}")
    if values[HEARTBEAT] >= values[SESSION]:
        raise GroupConfigError(f"{HEARTBEAT} must be less than {SESSION}")
    return parsed


def describe(config: BrokerConfig, overrides: Mapping[str, str]) -> list[ConfigEntry]:
    """DescribeConfigs of one group: its override (GROUP_CONFIG), else the broker's default
    (DEFAULT_CONFIG), as Kafka's ``createGroupConfigEntry``."""
    out = []
    for name, default in defaults(config).items():
        default_synonym = ConfigSynonym(name=name, value=str(default), source=SOURCE_DEFAULT)
        if name in overrides:
            out.append(
                ConfigEntry(
                    name=name,
                    value=overrides[name],
                    source=SOURCE_GROUP,
                    config_type=TYPE_INT,
                    synonyms=(
                        ConfigSynonym(name=name, value=overrides[name], source=SOURCE_GROUP),
                        default_synonym,
                    ),
                )
            )
        else:
            out.append(
                ConfigEntry(
                    name=name,
                    value=str(default),
                    source=SOURCE_DEFAULT,
                    config_type=TYPE_INT,
                    synonyms=(default_synonym,),
                )
            )
    return out
