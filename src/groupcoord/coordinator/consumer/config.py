"""The consumer group's broker configs (``group.consumer.*``) with Kafka 4.1's defaults (and 4.3's
assignment interval, KIP-1263), and the per-group overrides Kafka takes through
IncrementalAlterConfigs on GROUP resources.

Bounds (min/max session timeout and heartbeat interval) are checked where configs are parsed
(``groupcoord.config``), not here; this is what the core reads."""

from __future__ import annotations

from dataclasses import dataclass

from groupcoord.constants import INT32_MAX

__all__ = ["ConsumerGroupConfig", "GroupOverrides"]


@dataclass(frozen=True, slots=True, kw_only=True)
class ConsumerGroupConfig:
    #: group.consumer.session.timeout.ms
    session_timeout_ms: int = 45_000
    #: group.consumer.heartbeat.interval.ms
    heartbeat_interval_ms: int = 5_000
    #: group.consumer.max.size
    max_size: int = INT32_MAX
    #: group.consumer.assignors; the first is the default
    assignors: tuple[str, ...] = ("uniform", "range")
    #: group.consumer.regex.refresh.interval.ms (4.1, internal)
    regex_refresh_interval_ms: int = 600_000
    #: group.consumer.migration.policy, lower case: bidirectional, upgrade, downgrade, disabled
    migration_policy: str = "bidirectional"
    #: group.max.size: a downgrade to a classic group bigger than this is not made
    classic_max_size: int = INT32_MAX
    #: group.consumer.assignment.interval.ms (Kafka 4.3, KIP-1263): a group's target assignment
    #: is computed at most once per interval since the last computation; 0 computes it on every
    #: epoch bump, as Kafka 4.1 did.
    assignment_interval_ms: int = 1000

    @property
    def upgrade_enabled(self) -> bool:
        """``ConsumerGroupMigrationPolicy.isUpgradeEnabled``."""
        return self.migration_policy in ("bidirectional", "upgrade")

    @property
    def downgrade_enabled(self) -> bool:
        """``ConsumerGroupMigrationPolicy.isDowngradeEnabled``."""
        return self.migration_policy in ("bidirectional", "downgrade")


@dataclass(frozen=True, slots=True, kw_only=True)
class GroupOverrides:
    """``consumer.session.timeout.ms``, ``consumer.heartbeat.interval.ms`` and (4.3)
    ``consumer.assignment.interval.ms`` of one group."""

    session_timeout_ms: int | None = None
    heartbeat_interval_ms: int | None = None
    assignment_interval_ms: int | None = None
