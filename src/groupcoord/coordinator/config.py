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

from groupcoord.config import PROPERTIES, BrokerConfig
from groupcoord.errors import ConfigError

_BROKER_DEFAULTS: dict[str, Any] = {f.name: f.default for f in dataclasses.fields(BrokerConfig)}


def _default(prop: str) -> int:
    """The broker's default for property ``prop`` (an integer for every group property)."""
    value = _BROKER_DEFAULTS[PROPERTIES[prop].field]
    assert isinstance(value, int)
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
    def offsets_retention_ms(self) -> int:
        return self.offsets_retention_minutes * 60_000
