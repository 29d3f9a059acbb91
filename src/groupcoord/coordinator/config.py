"""The coordinator's settings: Kafka's ``group.*`` and ``offsets.*`` broker properties.

Field names are the Kafka property names in snake case. Defaults and value checks are not
written here: each field takes its default and its check from the broker's property table
(:data:`groupcoord.config.PROPERTIES`, Kafka's ``GroupCoordinatorConfig`` defaults), so the
two cannot drift apart.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Any

from groupcoord.config import PROPERTIES, BrokerConfig, consumer_assignor_names
from groupcoord.coordinator.consumer.config import ConsumerGroupConfig
from groupcoord.errors import ConfigError

_BROKER_DEFAULTS: dict[str, Any] = {f.name: f.default for f in dataclasses.fields(BrokerConfig)}


def _default(prop: str) -> int:
    """The broker's default for property ``prop`` (an integer for every group property)."""
    value = _BROKER_DEFAULTS[PROPERTIES[prop].field]
    assert isinstance(value, int)
    return value


def _default_text(prop: str) -> str:
    value = _BROKER_DEFAULTS[PROPERTIES[prop].field]
    assert isinstance(value, str)
    return value


#: The Kafka property behind each field that has one.
_PROPERTY_OF_FIELD: dict[str, str] = {
    spec.field: prop
    for prop, spec in PROPERTIES.items()
    if prop.startswith(("group.", "offsets.", "offset."))
}


@dataclass(frozen=True, kw_only=True, slots=True)
class GroupConfig:
    group_min_session_timeout_ms: int = _default("group.min.session.timeout.ms")
    group_max_session_timeout_ms: int = _default("group.max.session.timeout.ms")
    group_initial_rebalance_delay_ms: int = _default("group.initial.rebalance.delay.ms")
    group_max_size: int = _default("group.max.size")
    offsets_topic_num_partitions: int = _default("offsets.topic.num.partitions")
    offsets_topic_replication_factor: int = _default("offsets.topic.replication.factor")
    offsets_topic_segment_bytes: int = _default("offsets.topic.segment.bytes")
    offsets_load_buffer_size: int = _default("offsets.load.buffer.size")
    offsets_topic_compression_codec: int = _default("offsets.topic.compression.codec")
    offsets_retention_minutes: int = _default("offsets.retention.minutes")
    offsets_retention_check_interval_ms: int = _default("offsets.retention.check.interval.ms")
    offsets_commit_timeout_ms: int = _default("offsets.commit.timeout.ms")
    offset_metadata_max_bytes: int = _default("offset.metadata.max.bytes")
    group_coordinator_rebalance_protocols: str = _default_text("group.coordinator.rebalance.protocols")
    group_consumer_session_timeout_ms: int = _default("group.consumer.session.timeout.ms")
    group_consumer_heartbeat_interval_ms: int = _default("group.consumer.heartbeat.interval.ms")
    group_consumer_assignment_interval_ms: int = _default("group.consumer.assignment.interval.ms")
    group_consumer_max_size: int = _default("group.consumer.max.size")
    group_consumer_assignors: str = _default_text("group.consumer.assignors")
    group_consumer_migration_policy: str = _default_text("group.consumer.migration.policy")
    #: Kafka's internal, non-configurable CLASSIC_GROUP_NEW_MEMBER_JOIN_TIMEOUT_MS.
    group_new_member_join_timeout_ms: int = 300_000

    def __post_init__(self) -> None:
        for f in dataclasses.fields(self):
            prop = _PROPERTY_OF_FIELD.get(f.name)
            if prop is None:
                continue
            spec = PROPERTIES[prop]
            value = getattr(self, f.name)
            if not spec.check(value):
                raise ConfigError(f"bad value for {prop}: {value!r} ({spec.expectation})")
        if self.group_max_session_timeout_ms < self.group_min_session_timeout_ms:
            raise ConfigError("group.max.session.timeout.ms must be >= group.min.session.timeout.ms")

    @classmethod
    def from_broker(cls, config: BrokerConfig) -> GroupConfig:
        """The coordinator's settings from the broker's ``group.*`` and ``offsets.*`` properties."""
        names = {f.name for f in dataclasses.fields(cls)}
        return cls(**{name: config.get(prop) for name, prop in _PROPERTY_OF_FIELD.items() if name in names})

    @property
    def consumer_protocol_enabled(self) -> bool:
        """Whether ``group.coordinator.rebalance.protocols`` lists ``consumer`` (KIP-848)."""
        return "consumer" in {
            p.strip().lower() for p in self.group_coordinator_rebalance_protocols.split(",")
        }

    def consumer_group_config(self) -> ConsumerGroupConfig:
        """The ``group.consumer.*`` settings the consumer group core reads."""
        return ConsumerGroupConfig(
            session_timeout_ms=self.group_consumer_session_timeout_ms,
            heartbeat_interval_ms=self.group_consumer_heartbeat_interval_ms,
            max_size=self.group_consumer_max_size,
            assignors=consumer_assignor_names(self.group_consumer_assignors),
            migration_policy=self.group_consumer_migration_policy.strip().lower(),
            classic_max_size=self.group_max_size,
            assignment_interval_ms=self.group_consumer_assignment_interval_ms,
        )

    @property
    def offsets_retention_ms(self) -> int:
        return self.offsets_retention_minutes * 60_000
