"""Consumer configuration: Kafka's key names, the Java client's defaults, validation.

``ConsumerConfig.from_dict({"group.id": "g", "session.timeout.ms": 10000})`` checks every key
and value; an unknown key or a bad value raises :class:`ConfigError` naming the key. Values may
be given as their Python type or as strings (as they appear in properties files):
``"true"``/``"false"`` for booleans, decimal strings for integers.

Defaults are the Java client's (``ConsumerConfig`` / ``CommonClientConfigs``), including
``partition.assignment.strategy`` = ``range,cooperative-sticky`` (names as librdkafka spells
them). ``heartbeat.interval.ms`` must be below ``session.timeout.ms`` (Java ``Heartbeat``'s
constructor).

:class:`RebalanceConfig` (Java ``GroupRebalanceConfig``) is the part every member core reads,
whatever its protocol type; :func:`rebalance_config_of` takes it from a consumer's settings.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping
from dataclasses import dataclass, fields
from typing import Any

from groupcoord.client.errors import ConfigError

log = logging.getLogger(__name__)

AUTO_OFFSET_RESET = ("earliest", "latest", "none")
ISOLATION_LEVELS = ("read_uncommitted", "read_committed")
#: ``group.protocol``: ``classic`` (the default; JoinGroup/SyncGroup, ``member.py``) or
#: ``consumer`` (KIP-848's ConsumerGroupHeartbeat, ``consumer_group_member.py``). As in the Java
#: client (``ConsumerConfig``'s ``CONSUMER_PROTOCOL_UNSUPPORTED_CONFIGS`` /
#: ``CLASSIC_PROTOCOL_UNSUPPORTED_CONFIGS``) and librdkafka, ``consumer`` refuses the keys below
#: (the broker owns the session, the interval and the assignment) and ``classic`` refuses
#: ``group.remote.assignor``.
GROUP_PROTOCOLS = ("classic", "consumer")
#: Keys the consumer group protocol (KIP-848) refuses: the broker decides these.
CONSUMER_PROTOCOL_UNSUPPORTED = (
    "partition.assignment.strategy",
    "heartbeat.interval.ms",
    "session.timeout.ms",
)
#: Keys the classic protocol refuses.
CLASSIC_PROTOCOL_UNSUPPORTED = ("group.remote.assignor",)


@dataclass(frozen=True, kw_only=True, slots=True)
class RebalanceConfig:
    """What the generic member needs (Java ``GroupRebalanceConfig``)."""

    group_id: str
    group_instance_id: str | None = None
    session_timeout_ms: int = 45_000
    rebalance_timeout_ms: int = 300_000  # max.poll.interval.ms for consumers
    heartbeat_interval_ms: int = 3_000
    retry_backoff_ms: int = 100
    retry_backoff_max_ms: int = 1_000
    request_timeout_ms: int = 30_000
    leave_group_on_close: bool = True


@dataclass(frozen=True, kw_only=True, slots=True)
class ConsumerConfig:
    """Validated consumer settings; attribute names are the keys with dots as underscores."""

    bootstrap_servers: str = ""
    group_id: str | None = None
    group_instance_id: str | None = None
    client_id: str = ""
    client_rack: str = ""
    session_timeout_ms: int = 45_000
    heartbeat_interval_ms: int = 3_000
    max_poll_interval_ms: int = 300_000
    partition_assignment_strategy: str = "range,cooperative-sticky"
    enable_auto_commit: bool = True
    auto_commit_interval_ms: int = 5_000
    auto_offset_reset: str = "latest"
    fetch_min_bytes: int = 1
    fetch_max_wait_ms: int = 500
    fetch_max_bytes: int = 52_428_800
    max_partition_fetch_bytes: int = 1_048_576
    max_poll_records: int = 500
    isolation_level: str = "read_uncommitted"
    retry_backoff_ms: int = 100
    retry_backoff_max_ms: int = 1_000
    request_timeout_ms: int = 30_000
    default_api_timeout_ms: int = 60_000
    metadata_max_age_ms: int = 300_000
    exclude_internal_topics: bool = True
    internal_leave_group_on_close: bool = True
    group_protocol: str = "classic"
    group_remote_assignor: str | None = None

    # ------------------------------------------------------------------ construction
    @classmethod
    def keys(cls) -> tuple[str, ...]:
        """Every accepted key, in Kafka spelling."""
        return tuple(f.name.replace("_", ".") for f in fields(cls))

    @classmethod
    def from_dict(cls, settings: Mapping[str, Any]) -> ConsumerConfig:
        values = field_values(cls, settings, _coerce)
        if isinstance(values.get("group_protocol"), str):
            values["group_protocol"] = values["group_protocol"].strip().lower()  # Java: case-insensitive
        config = cls(**values)
        config.validate()
        config.check_protocol_keys(settings)
        return config

    def check_protocol_keys(self, given: Mapping[str, Any]) -> None:
        """Refuse the keys ``group.protocol`` does not support, as Java ``ConsumerConfig``'s
        ``checkUnsupportedConfigs`` does: a key given with a non-blank value (even the default)
        is an error, and the message names every such key."""
        consumer = self.group_protocol == "consumer"
        refused = CONSUMER_PROTOCOL_UNSUPPORTED if consumer else CLASSIC_PROTOCOL_UNSUPPORTED
        invalid = [k for k in refused if given.get(k) is not None and str(given[k]).strip() != ""]
        if invalid:
            raise ConfigError(
                f"{', '.join(invalid)} cannot be set when group.protocol={self.group_protocol.upper()}"
            )

    def validate(self) -> None:
        for name in (
            "session_timeout_ms",
            "heartbeat_interval_ms",
            "max_poll_interval_ms",
            "auto_commit_interval_ms",
            "request_timeout_ms",
            "default_api_timeout_ms",
            "max_poll_records",
        ):
            if getattr(self, name) <= 0:
                raise ConfigError(f"{name.replace('_', '.')} must be positive, got {getattr(self, name)}")
        for name in ("fetch_min_bytes", "fetch_max_wait_ms", "retry_backoff_ms", "retry_backoff_max_ms"):
            if getattr(self, name) < 0:
                raise ConfigError(f"{name.replace('_', '.')} must not be negative, got {getattr(self, name)}")
        if self.heartbeat_interval_ms >= self.session_timeout_ms:
            raise ConfigError(
                f"heartbeat.interval.ms ({self.heartbeat_interval_ms}) must be lower than "
                f"session.timeout.ms ({self.session_timeout_ms})"
            )
        if self.auto_offset_reset not in AUTO_OFFSET_RESET:
            raise ConfigError(
                f"auto.offset.reset must be one of {', '.join(AUTO_OFFSET_RESET)}, "
                f"got {self.auto_offset_reset!r}"
            )
        if self.isolation_level not in ISOLATION_LEVELS:
            raise ConfigError(
                f"isolation.level must be one of {', '.join(ISOLATION_LEVELS)}, got {self.isolation_level!r}"
            )
        if self.group_instance_id is not None and self.group_instance_id == "":
            raise ConfigError("group.instance.id must not be empty when set")
        if not self.strategies:
            raise ConfigError("partition.assignment.strategy must name at least one assignor")
        if self.group_protocol not in GROUP_PROTOCOLS:
            raise ConfigError(
                f"group.protocol must be one of {', '.join(GROUP_PROTOCOLS)}, got {self.group_protocol!r}"
            )

    # ------------------------------------------------------------------ derived
    @property
    def strategies(self) -> tuple[str, ...]:
        """The assignor names of ``partition.assignment.strategy`` in preference order."""
        return tuple(s.strip() for s in self.partition_assignment_strategy.split(",") if s.strip())

    @property
    def is_static(self) -> bool:
        return self.group_instance_id is not None


def field_values(
    cls: type[Any], settings: Mapping[str, Any], coerce: Callable[[str, Any, Any], Any]
) -> dict[str, Any]:
    """The dataclass ``cls``'s keyword arguments for ``settings`` in Kafka spelling (dots for
    underscores), each value passed through ``coerce(key, raw, field default)``; an unknown key
    is a :class:`ConfigError`."""
    known = {f.name.replace("_", "."): f for f in fields(cls)}
    values: dict[str, Any] = {}
    for key, raw in settings.items():
        f = known.get(key)
        if f is None:
            raise ConfigError(f"unknown configuration key {key!r}")
        values[f.name] = coerce(key, raw, f.default)
    return values


def _coerce(key: str, raw: Any, default: Any) -> Any:
    if isinstance(default, bool):
        if isinstance(raw, bool):
            return raw
        if isinstance(raw, str) and raw.strip().lower() in ("true", "false"):
            return raw.strip().lower() == "true"
        raise ConfigError(f"{key} must be a boolean, got {raw!r}")
    if isinstance(default, int):
        if isinstance(raw, bool):
            raise ConfigError(f"{key} must be an integer, got {raw!r}")
        if isinstance(raw, int):
            return raw
        if isinstance(raw, str):
            try:
                return int(raw.strip())
            except ValueError:
                pass
        raise ConfigError(f"{key} must be an integer, got {raw!r}")
    # strings (some nullable)
    if raw is None:
        if default is None:
            return None
        raise ConfigError(f"{key} must be a string, got None")
    if isinstance(raw, (list, tuple)) and key == "partition.assignment.strategy":
        return ",".join(str(x) for x in raw)
    if not isinstance(raw, str):
        raise ConfigError(f"{key} must be a string, got {raw!r}")
    return raw


def rebalance_config_of(config: ConsumerConfig) -> RebalanceConfig:
    """The member core's settings of a consumer (``max.poll.interval.ms`` is its rebalance timeout)."""
    return RebalanceConfig(
        group_id=config.group_id or "",
        group_instance_id=config.group_instance_id,
        session_timeout_ms=config.session_timeout_ms,
        rebalance_timeout_ms=config.max_poll_interval_ms,
        heartbeat_interval_ms=config.heartbeat_interval_ms,
        retry_backoff_ms=config.retry_backoff_ms,
        retry_backoff_max_ms=config.retry_backoff_max_ms,
        request_timeout_ms=config.request_timeout_ms,
        leave_group_on_close=config.internal_leave_group_on_close,
    )
