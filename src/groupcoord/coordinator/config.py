"""The coordinator's settings: Kafka's ``group.*`` and ``offsets.*`` broker properties.

Field names are the Kafka property names in snake case, defaults are Kafka's
(``GroupCoordinatorConfig``). The broker's own config maps its keys onto this dataclass.
"""

from __future__ import annotations

from dataclasses import dataclass

from groupcoord.errors import ConfigError

INT32_MAX = 2_147_483_647


@dataclass(frozen=True, kw_only=True, slots=True)
class GroupConfig:
    group_min_session_timeout_ms: int = 6_000
    group_max_session_timeout_ms: int = 1_800_000
    group_initial_rebalance_delay_ms: int = 3_000
    group_max_size: int = INT32_MAX
    offsets_topic_num_partitions: int = 50
    offsets_topic_replication_factor: int = 3
    offsets_topic_segment_bytes: int = 104_857_600
    offsets_load_buffer_size: int = 5_242_880
    offsets_topic_compression_codec: int = 0
    offsets_retention_minutes: int = 10_080
    offsets_retention_check_interval_ms: int = 600_000
    offsets_commit_timeout_ms: int = 5_000
    offset_metadata_max_bytes: int = 4_096
    #: Kafka's internal, non-configurable CLASSIC_GROUP_NEW_MEMBER_JOIN_TIMEOUT_MS.
    group_new_member_join_timeout_ms: int = 300_000

    def __post_init__(self) -> None:
        if self.group_min_session_timeout_ms < 0:
            raise ConfigError("group.min.session.timeout.ms must be >= 0")
        if self.group_max_session_timeout_ms < self.group_min_session_timeout_ms:
            raise ConfigError("group.max.session.timeout.ms must be >= group.min.session.timeout.ms")
        if self.group_initial_rebalance_delay_ms < 0:
            raise ConfigError("group.initial.rebalance.delay.ms must be >= 0")
        if self.group_max_size < 1:
            raise ConfigError("group.max.size must be >= 1")
        if self.offsets_topic_num_partitions < 1:
            raise ConfigError("offsets.topic.num.partitions must be >= 1")
        if self.offsets_retention_minutes < 1:
            raise ConfigError("offsets.retention.minutes must be >= 1")
        if self.offsets_retention_check_interval_ms < 1:
            raise ConfigError("offsets.retention.check.interval.ms must be >= 1")
        if self.offset_metadata_max_bytes < 0:
            raise ConfigError("offset.metadata.max.bytes must be >= 0")

    @property
    def offsets_retention_ms(self) -> int:
        return self.offsets_retention_minutes * 60_000
