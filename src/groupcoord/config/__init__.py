"""Broker configuration, keyed by Kafka's own broker property names.

:class:`BrokerConfig` is a frozen dataclass; :data:`PROPERTIES` maps each accepted property
name (``log.segment.bytes``, ``group.min.session.timeout.ms`` ...) to a field, its parser and
its validation. Loading is a Java ``.properties`` file first, then ``--set key=value``
overrides; an unknown key or a bad value raises :class:`ConfigError` naming both.

Single-broker choices (documented, not hidden):

* ``default.replication.factor`` must be 1: there is one broker.
* ``offsets.topic.replication.factor`` accepts any positive value (Kafka's default is 3, and a
  server.properties written for Kafka should load) and the offsets topic is created with 1.
* ``broker.id`` and ``node.id`` are the same setting; this broker is also the controller.
* A ``server.properties`` written for Kafka loads: every broker key Kafka 3.9 defines
  (:data:`KAFKA_BROKER_CONFIG_NAMES`) that is not in :data:`PROPERTIES` is accepted and ignored
  with one log line; any other unknown key stops startup with a "did you mean" suggestion.
* ``listeners`` / ``advertised.listeners``: every named listener is served, with its protocol from
  ``listener.security.protocol.map`` (``groupcoord.config.listeners``); Kafka's ``CONTROLLER://`` entries
  (and those ``controller.listener.names`` names) are skipped; ``log.dirs``: its first directory is
  the data dir.
* Security keys (:data:`SECURITY_KEYS`, ``listener.name.<l>.*``) are kept raw in
  :attr:`BrokerConfig.security` and resolved per listener by :class:`SecuritySettings`.
"""

from __future__ import annotations

import dataclasses
import difflib
import logging
import re
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from groupcoord.config.listeners import (
    ListenerSpec,
    SecuritySettings,
    is_sensitive,
    parse_listeners,
    parse_protocol_map,
)
from groupcoord.constants import INT32_MAX as INT_MAX
from groupcoord.constants import LONG_MAX
from groupcoord.errors import ConfigError

LONG_MIN = -(1 << 63)

log = logging.getLogger(__name__)

__all__ = [
    "INT_MAX",
    "KAFKA_BROKER_CONFIG_NAMES",
    "LONG_MAX",
    "PROPERTIES",
    "BrokerConfig",
    "Listener",
    "PropertySpec",
    "parse_listener",
    "parse_properties",
]


@dataclass(frozen=True, slots=True, kw_only=True)
class Listener:
    host: str
    port: int


@dataclass(frozen=True, slots=True, kw_only=True)
class BrokerConfig:
    # Node and listeners.
    node_id: int = 0
    listeners: str = "PLAINTEXT://127.0.0.1:9092"
    advertised_listeners: str | None = None
    log_dirs: str = "./data"
    # Topics.
    num_partitions: int = 1
    default_replication_factor: int = 1
    auto_create_topics_enable: bool = True
    delete_topic_enable: bool = True
    # Log defaults (topic configs override them).
    log_segment_bytes: int = 1073741824
    log_roll_hours: int = 168
    log_roll_ms: int | None = None
    log_retention_hours: int = 168
    log_retention_minutes: int | None = None
    log_retention_ms: int | None = None
    log_retention_bytes: int = -1
    log_retention_check_interval_ms: int = 300000
    log_index_interval_bytes: int = 4096
    log_flush_interval_messages: int = LONG_MAX
    log_flush_interval_ms: int | None = None
    log_cleanup_policy: str = "delete"
    log_cleaner_delete_retention_ms: int = 86400000
    log_cleaner_min_compaction_lag_ms: int = 0
    log_cleaner_backoff_ms: int = 15000
    log_cleaner_enable: bool = True
    log_message_timestamp_type: str = "CreateTime"
    message_max_bytes: int = 1048588
    socket_request_max_bytes: int = 104857600
    # Connections (Kafka's socket server): idle expiry (-1: never) and the broker-wide cap.
    connections_max_idle_ms: int = 600000
    max_connections: int = INT_MAX
    # Connection quotas (Kafka's ConnectionQuotas): per IP, its overrides ("host:count,..."),
    # and the broker-wide rate of new connections per second.
    max_connections_per_ip: int = INT_MAX
    max_connections_per_ip_overrides: str = ""
    max_connection_creation_rate: int = INT_MAX
    # Bytes of requests read and not yet handled, broker-wide (Kafka's MemoryPool; <= 0: no bound).
    queued_max_request_bytes: int = -1
    # Client quotas (KIP-13/124): the rate windows of ClientQuotaManager.
    quota_window_num: int = 11
    quota_window_size_seconds: int = 1
    # Group coordinator (reference §3 defaults).
    group_min_session_timeout_ms: int = 6000
    group_max_session_timeout_ms: int = 1800000
    group_initial_rebalance_delay_ms: int = 3000
    group_max_size: int = INT_MAX
    # KIP-848 (Kafka 4.x GroupCoordinatorConfig): the protocols served and the consumer group's.
    group_coordinator_rebalance_protocols: str = "classic,consumer"
    group_consumer_session_timeout_ms: int = 45000
    group_consumer_min_session_timeout_ms: int = 45000
    group_consumer_max_session_timeout_ms: int = 60000
    group_consumer_heartbeat_interval_ms: int = 5000
    group_consumer_min_heartbeat_interval_ms: int = 5000
    group_consumer_max_heartbeat_interval_ms: int = 15000
    group_consumer_max_size: int = INT_MAX
    group_consumer_assignors: str = "uniform,range"
    offsets_topic_num_partitions: int = 50
    offsets_topic_replication_factor: int = 3
    offsets_topic_segment_bytes: int = 104857600
    offsets_topic_compression_codec: int = 0
    offsets_load_buffer_size: int = 5242880
    offsets_retention_minutes: int = 10080
    offsets_retention_check_interval_ms: int = 600000
    # Transaction coordinator (Kafka's TransactionStateManagerConfig defaults).
    transaction_max_timeout_ms: int = 900000
    transactional_id_expiration_ms: int = 604800000
    transaction_remove_expired_transaction_cleanup_interval_ms: int = 3600000
    # Idempotent producers' state per partition (Kafka's ProducerStateManagerConfig defaults).
    producer_id_expiration_ms: int = 86400000
    producer_id_expiration_check_interval_ms: int = 600000
    offsets_commit_timeout_ms: int = 5000
    offset_metadata_max_bytes: int = 4096
    # Prometheus endpoint (docs/operations.md): HOST:PORT, or None for none.
    metrics_listen: str | None = None
    # The live web console (docs/operations.md): HOST:PORT, or None for none.
    console_listen: str | None = None
    # Who may open the console: "none" (anyone who reaches it) or "basic" (a broker user, HTTP Basic).
    console_auth: str = "none"
    #: The security keys as given (:data:`SECURITY_KEYS` and ``listener.name.*``), name -> value.
    security: tuple[tuple[str, str], ...] = ()
    #: Property names that were set explicitly (file or --set), as opposed to defaults.
    explicit: frozenset[str] = field(default=frozenset())

    # ------------------------------------------------------------------ derived values
    @property
    def effective_retention_ms(self) -> int:
        """log.retention.ms, else .minutes, else .hours, as Kafka resolves them (-1 = forever)."""
        if self.log_retention_ms is not None:
            return self.log_retention_ms
        if self.log_retention_minutes is not None:
            return -1 if self.log_retention_minutes < 0 else self.log_retention_minutes * 60_000
        return -1 if self.log_retention_hours < 0 else self.log_retention_hours * 3_600_000

    @property
    def effective_roll_ms(self) -> int:
        """log.roll.ms, else log.roll.hours (segment.ms's broker synonyms)."""
        return self.log_roll_ms if self.log_roll_ms is not None else self.log_roll_hours * 3_600_000

    @property
    def flush_policy_explicit(self) -> bool:
        """True when the operator chose a flush policy; acks=-1 then follows it instead of fsyncing."""
        return bool(self.explicit & {"log.flush.interval.messages", "log.flush.interval.ms"})

    def listener(self) -> Listener:
        """The first listener: where ``make run`` and single-listener tests listen."""
        first = self.listener_specs()[0]
        return Listener(host=first.host or "0.0.0.0", port=first.port)

    def advertised_listener(self) -> Listener:
        """The first listener's advertised address."""
        first = self.listener_specs()[0]
        spec = self.advertised_specs().get(first.name, first)
        return Listener(host=spec.host or "0.0.0.0", port=spec.port)

    @property
    def security_settings(self) -> SecuritySettings:
        return SecuritySettings(props=dict(self.security))

    def _skip(self) -> frozenset[str]:
        names = self.security_settings.get("controller.listener.names") or "CONTROLLER"
        return frozenset(n.strip().upper() for n in names.split(",") if n.strip())

    def _protocol_map(self) -> dict[str, str]:
        return parse_protocol_map(self.security_settings.get("listener.security.protocol.map"))

    def listener_specs(self) -> tuple[ListenerSpec, ...]:
        """Every listener this broker serves, in ``listeners`` order (Kafka's names)."""
        return parse_listeners("listeners", self.listeners, self._protocol_map(), self._skip())

    def advertised_specs(self) -> dict[str, ListenerSpec]:
        """Listener name -> the address clients are told (``advertised.listeners``, else the
        listener's own), as Kafka's ``effectiveAdvertisedListeners``."""
        own = {spec.name: spec for spec in self.listener_specs()}
        if not self.advertised_listeners:
            return own
        given = parse_listeners(
            "advertised.listeners", self.advertised_listeners, self._protocol_map(), self._skip()
        )
        for spec in given:
            if spec.name not in own:
                raise ConfigError(
                    f"bad value for advertised.listeners: {self.advertised_listeners!r} "
                    f"(listener {spec.name} is not in listeners)"
                )
        return {**own, **{spec.name: spec for spec in given}}

    def metrics_listener(self) -> Listener | None:
        """Where ``/metrics`` is served (``metrics.listen``), or None: not served."""
        if self.metrics_listen is None:
            return None
        return parse_listener("metrics.listen", self.metrics_listen)

    def console_listener(self) -> Listener | None:
        """Where the web console is served (``console.listen``), or None: not served."""
        if self.console_listen is None:
            return None
        return parse_listener("console.listen", self.console_listen)

    def get(self, prop: str) -> Any:
        """The value of a property by its Kafka name."""
        if prop in SECURITY_KEYS or prop.startswith(KAFKA_BROKER_CONFIG_PREFIXES):
            return dict(self.security).get(prop)
        spec = PROPERTIES[prop]
        return getattr(self, spec.field)

    def replace(self, **changes: Any) -> BrokerConfig:
        return dataclasses.replace(self, **changes)

    # ------------------------------------------------------------------ loading
    @classmethod
    def from_properties(cls, props: Mapping[str, str]) -> BrokerConfig:
        values: dict[str, Any] = {}
        explicit: set[str] = set()
        security: dict[str, str] = {}
        for key, raw in props.items():
            if key in SECURITY_KEYS or key.startswith(KAFKA_BROKER_CONFIG_PREFIXES):
                security[key] = raw.strip()
                explicit.add(key)
                if key in _CAPTURED_BUT_IGNORED and key not in _IGNORED_LOGGED:
                    _IGNORED_LOGGED.add(key)
                    log.info("ignoring Kafka broker key %s=%s: it does not apply to groupcoord", key, raw)
                continue
            spec = PROPERTIES.get(key)
            if spec is None:
                if key in KAFKA_BROKER_CONFIG_NAMES or key.startswith(KAFKA_BROKER_CONFIG_PREFIXES):
                    if key not in _IGNORED_LOGGED:
                        _IGNORED_LOGGED.add(key)
                        shown = "[hidden]" if is_sensitive(key) else raw
                        log.info(
                            "ignoring Kafka broker key %s=%s: it does not apply to groupcoord", key, shown
                        )
                    continue
                raise ConfigError(f"unknown configuration key {key!r} (value {raw!r}){_suggestion(key)}")
            values[spec.field] = spec.parse(key, raw)
            explicit.add(key)
        config = cls(**values, security=tuple(sorted(security.items())), explicit=frozenset(explicit))
        config.validate()
        return config

    @classmethod
    def load(cls, path: Path | str | None = None, overrides: Iterable[str] = ()) -> BrokerConfig:
        props: dict[str, str] = {}
        if path is not None:
            try:
                text = Path(path).read_text(encoding="utf-8")
            except OSError as exc:
                raise ConfigError(f"cannot read configuration file {str(path)!r}: {exc.strerror}") from exc
            props.update(parse_properties(text))
        for item in overrides:
            key, sep, value = item.partition("=")
            if not sep or not key.strip():
                raise ConfigError(f"--set expects key=value, got {item!r}")
            props[key.strip()] = value.strip()
        return cls.from_properties(props)

    def rebalance_protocols(self) -> tuple[str, ...]:
        """``group.coordinator.rebalance.protocols`` as a tuple of lower-case names."""
        return tuple(
            p.strip().lower() for p in self.group_coordinator_rebalance_protocols.split(",") if p.strip()
        )

    def consumer_assignors(self) -> tuple[str, ...]:
        """``group.consumer.assignors`` as assignor names (Kafka's class names map to their names)."""
        return consumer_assignor_names(self.group_consumer_assignors)

    def _validate_consumer_group(self) -> None:
        """Kafka 4.x ``GroupCoordinatorConfig``'s checks of the consumer group configs."""
        protocols = self.rebalance_protocols()
        unknown = [p for p in protocols if p not in ("classic", "consumer")]
        if unknown:
            raise ConfigError(
                f"bad value for group.coordinator.rebalance.protocols: {unknown[0]!r} "
                "(a list of classic, consumer)"
            )
        if "classic" not in protocols:
            raise ConfigError("group.coordinator.rebalance.protocols must contain classic")
        assignors = self.consumer_assignors()
        bad = [a for a in assignors if a not in ("uniform", "range")]
        if not assignors or bad:
            raise ConfigError(
                f"bad value for group.consumer.assignors: {self.group_consumer_assignors!r} "
                "(a list of uniform, range or their Kafka class names)"
            )
        checks = (
            (
                "group.consumer.session.timeout.ms",
                self.group_consumer_session_timeout_ms,
                "group.consumer.min.session.timeout.ms",
                self.group_consumer_min_session_timeout_ms,
                "group.consumer.max.session.timeout.ms",
                self.group_consumer_max_session_timeout_ms,
            ),
            (
                "group.consumer.heartbeat.interval.ms",
                self.group_consumer_heartbeat_interval_ms,
                "group.consumer.min.heartbeat.interval.ms",
                self.group_consumer_min_heartbeat_interval_ms,
                "group.consumer.max.heartbeat.interval.ms",
                self.group_consumer_max_heartbeat_interval_ms,
            ),
        )
        for name, value, min_name, lo, max_name, hi in checks:
            if value < lo:
                raise ConfigError(f"{name} must be greater than or equal to {min_name}")
            if value > hi:
                raise ConfigError(f"{name} must be less than or equal to {max_name}")
        if self.group_consumer_heartbeat_interval_ms >= self.group_consumer_session_timeout_ms:
            raise ConfigError(
                "group.consumer.heartbeat.interval.ms must be less than group.consumer.session.timeout.ms"
            )

    def validate(self) -> None:
        if self.group_min_session_timeout_ms > self.group_max_session_timeout_ms:
            raise ConfigError(
                "group.min.session.timeout.ms "
                f"({self.group_min_session_timeout_ms}) exceeds group.max.session.timeout.ms "
                f"({self.group_max_session_timeout_ms})"
            )
        self._validate_consumer_group()
        if 0 < self.queued_max_request_bytes < self.socket_request_max_bytes:
            # KafkaConfig.validateValues
            raise ConfigError(
                f"queued.max.request.bytes ({self.queued_max_request_bytes}) must be larger or equal "
                f"to socket.request.max.bytes ({self.socket_request_max_bytes})"
            )
        overrides = self.connections_per_ip_overrides()
        if self.max_connections_per_ip == 0 and not overrides:
            raise ConfigError(
                "max.connections.per.ip can be set to zero only if max.connections.per.ip.overrides "
                "property is set."
            )
        settings = self.security_settings
        for spec in self.listener_specs():
            has_store = settings.for_listener(spec.name, "ssl.keystore.location") or settings.for_listener(
                spec.name, "ssl.keystore.certificate.chain"
            )
            if spec.tls and not has_store:
                raise ConfigError(
                    f"listener {spec.name} in listeners is {spec.protocol} and needs a keystore: set "
                    f"ssl.keystore.location (or ssl.keystore.certificate.chain and ssl.keystore.key), "
                    f"or listener.name.{spec.name.lower()}.ssl.keystore.location"
                )
        self.advertised_specs()
        self.metrics_listener()
        self.console_listener()

    def connections_per_ip_overrides(self) -> dict[str, int]:
        """``max.connections.per.ip.overrides`` as {host or IP: count} (Kafka's ``host:count``
        list, comma-separated; a host name is resolved when a connection is checked)."""
        return parse_connection_overrides(self.max_connections_per_ip_overrides)


#: Ignored Kafka keys already logged in this process (one line per key, not per load).
_IGNORED_LOGGED: set[str] = set()


def _suggestion(key: str) -> str:
    """`` (did you mean 'x'?)`` for the closest known key, or nothing."""
    close = difflib.get_close_matches(key, [*PROPERTIES, *KAFKA_BROKER_CONFIG_NAMES], n=1, cutoff=0.8)
    return f" (did you mean {close[0]!r}?)" if close else ""


def parse_listener(key: str, value: str) -> Listener:
    """One ``[PLAINTEXT://]HOST:PORT`` address (``metrics.listen``; for a broker's listeners
    see :meth:`BrokerConfig.listener_specs`). Of several entries the first PLAINTEXT one."""
    entries = [e.strip() for e in value.split(",") if e.strip()] or [value.strip()]
    plain = [e for e in entries if "://" not in e or e.split("://", 1)[0].upper() == "PLAINTEXT"]
    first = plain[0] if plain else entries[0]
    m = re.fullmatch(r"(?:([A-Za-z_][A-Za-z0-9_]*)://)?(\[[^\]]*\]|[^:]*):(\d+)", first)
    if m is None:
        raise ConfigError(f"bad value for {key}: {value!r} (expected [PLAINTEXT://]HOST:PORT)")
    protocol = m.group(1)
    if protocol is not None and protocol.upper() != "PLAINTEXT":
        raise ConfigError(f"bad value for {key}: {value!r} (only PLAINTEXT listeners are supported)")
    host = m.group(2).strip("[]") or "0.0.0.0"
    port = int(m.group(3))
    if port > 65535:
        raise ConfigError(f"bad value for {key}: {value!r} (port out of range)")
    return Listener(host=host, port=port)


# ---------------------------------------------------------------------- property table


@dataclass(frozen=True, slots=True, kw_only=True)
class PropertySpec:
    field: str
    parse_value: Callable[[str], Any]
    check: Callable[[Any], bool] = lambda _v: True
    expectation: str = ""
    nullable: bool = False

    def parse(self, key: str, raw: str) -> Any:
        text = raw.strip()
        if self.nullable and text in ("", "null"):
            return None
        try:
            value = self.parse_value(text)
        except ValueError:
            raise ConfigError(f"bad value for {key}: {raw!r} ({self.expectation})") from None
        if not self.check(value):
            raise ConfigError(f"bad value for {key}: {raw!r} ({self.expectation})")
        return value


def _int(text: str) -> int:
    if "_" in text:  # Python accepts 1_000; Kafka does not
        raise ValueError(text)
    return int(text)


def _bool(text: str) -> bool:
    lowered = text.lower()
    if lowered == "true":
        return True
    if lowered == "false":
        return False
    raise ValueError(text)


def _str(text: str) -> str:
    return text


def _int_at_least(lo: int, hi: int = LONG_MAX) -> dict[str, Any]:
    bound = f"an integer >= {lo}" if hi == LONG_MAX else f"an integer in [{lo}, {hi}]"
    return {"parse_value": _int, "check": lambda v: lo <= v <= hi, "expectation": bound}


def _choice(*options: str) -> dict[str, Any]:
    return {
        "parse_value": _str,
        "check": lambda v: v in options,
        "expectation": "one of " + ", ".join(options),
    }


def parse_connection_overrides(text: str) -> dict[str, int]:
    """``host:count,host:count`` (Kafka's ``Utils.parseMap``; entries trimmed, empty = none)."""
    out: dict[str, int] = {}
    for entry in text.split(","):
        entry = entry.strip()
        if not entry:
            continue
        host, sep, count = entry.rpartition(":")
        if not sep or not host.strip():
            raise ValueError(entry)
        value = _int(count.strip())
        if value < 0:
            raise ValueError(entry)
        out[host.strip()] = value
    return out


def _connection_overrides(text: str) -> str:
    parse_connection_overrides(text)
    return text


def _host_port(text: str) -> str:
    """``HOST:PORT`` (a bracketed IPv6 host allowed, an empty host = every address)."""
    m = re.fullmatch(r"(\[[^\]]*\]|[^:/\s\[\]]*):(\d{1,5})", text)
    if m is None or int(m.group(2)) > 65535:
        raise ValueError(text)
    return text


#: Kafka's assignor class names (its default ``group.consumer.assignors``) -> our names.
_ASSIGNOR_CLASSES = {
    "org.apache.kafka.coordinator.group.assignor.UniformAssignor": "uniform",
    "org.apache.kafka.coordinator.group.assignor.RangeAssignor": "range",
}


def consumer_assignor_names(text: str) -> tuple[str, ...]:
    """A ``group.consumer.assignors`` value as assignor names, Kafka's class names mapped."""
    return tuple(_ASSIGNOR_CLASSES.get(a.strip(), a.strip()) for a in text.split(",") if a.strip())


_BOOL: dict[str, Any] = {"parse_value": _bool, "expectation": "true or false"}
_TEXT: dict[str, Any] = {"parse_value": _str, "check": lambda v: bool(v), "expectation": "a non-empty string"}

PROPERTIES: dict[str, PropertySpec] = {
    "node.id": PropertySpec(field="node_id", **_int_at_least(0, INT_MAX)),
    "broker.id": PropertySpec(field="node_id", **_int_at_least(0, INT_MAX)),
    "listeners": PropertySpec(field="listeners", **_TEXT),
    "advertised.listeners": PropertySpec(field="advertised_listeners", nullable=True, **_TEXT),
    "log.dirs": PropertySpec(field="log_dirs", **_TEXT),
    "log.dir": PropertySpec(field="log_dirs", **_TEXT),
    "num.partitions": PropertySpec(field="num_partitions", **_int_at_least(1, INT_MAX)),
    "default.replication.factor": PropertySpec(
        field="default_replication_factor",
        parse_value=_int,
        check=lambda v: v == 1,
        expectation="must be 1: groupcoord is a single broker",
    ),
    "auto.create.topics.enable": PropertySpec(field="auto_create_topics_enable", **_BOOL),
    "delete.topic.enable": PropertySpec(field="delete_topic_enable", **_BOOL),
    "log.segment.bytes": PropertySpec(field="log_segment_bytes", **_int_at_least(14, INT_MAX)),
    "log.retention.hours": PropertySpec(field="log_retention_hours", **_int_at_least(-1, INT_MAX)),
    "log.roll.hours": PropertySpec(field="log_roll_hours", **_int_at_least(1, INT_MAX)),
    "log.roll.ms": PropertySpec(field="log_roll_ms", nullable=True, **_int_at_least(1)),
    "log.retention.minutes": PropertySpec(
        field="log_retention_minutes", nullable=True, **_int_at_least(-1, INT_MAX)
    ),
    "log.retention.ms": PropertySpec(field="log_retention_ms", nullable=True, **_int_at_least(-1)),
    "log.retention.bytes": PropertySpec(field="log_retention_bytes", **_int_at_least(-1)),
    "log.retention.check.interval.ms": PropertySpec(
        field="log_retention_check_interval_ms", **_int_at_least(1)
    ),
    "log.index.interval.bytes": PropertySpec(field="log_index_interval_bytes", **_int_at_least(0, INT_MAX)),
    "log.flush.interval.messages": PropertySpec(field="log_flush_interval_messages", **_int_at_least(1)),
    "log.flush.interval.ms": PropertySpec(field="log_flush_interval_ms", nullable=True, **_int_at_least(0)),
    "log.cleanup.policy": PropertySpec(field="log_cleanup_policy", **_choice("delete", "compact")),
    "log.cleaner.delete.retention.ms": PropertySpec(
        field="log_cleaner_delete_retention_ms", **_int_at_least(0)
    ),
    "log.cleaner.min.compaction.lag.ms": PropertySpec(
        field="log_cleaner_min_compaction_lag_ms", **_int_at_least(0)
    ),
    "log.cleaner.backoff.ms": PropertySpec(field="log_cleaner_backoff_ms", **_int_at_least(0)),
    "log.cleaner.enable": PropertySpec(field="log_cleaner_enable", **_BOOL),
    "log.message.timestamp.type": PropertySpec(
        field="log_message_timestamp_type", **_choice("CreateTime", "LogAppendTime")
    ),
    "message.max.bytes": PropertySpec(field="message_max_bytes", **_int_at_least(0, INT_MAX)),
    "socket.request.max.bytes": PropertySpec(field="socket_request_max_bytes", **_int_at_least(1, INT_MAX)),
    "connections.max.idle.ms": PropertySpec(field="connections_max_idle_ms", **_int_at_least(-1)),
    "max.connections": PropertySpec(field="max_connections", **_int_at_least(0, INT_MAX)),
    "max.connections.per.ip": PropertySpec(field="max_connections_per_ip", **_int_at_least(0, INT_MAX)),
    "max.connections.per.ip.overrides": PropertySpec(
        field="max_connections_per_ip_overrides",
        parse_value=lambda text: _connection_overrides(text),
        expectation="a comma-separated list of host:count, e.g. hostName:100,127.0.0.1:200",
    ),
    "max.connection.creation.rate": PropertySpec(
        field="max_connection_creation_rate", **_int_at_least(0, INT_MAX)
    ),
    "queued.max.request.bytes": PropertySpec(field="queued_max_request_bytes", **_int_at_least(LONG_MIN)),
    "quota.window.num": PropertySpec(field="quota_window_num", **_int_at_least(1, INT_MAX)),
    "quota.window.size.seconds": PropertySpec(field="quota_window_size_seconds", **_int_at_least(1, INT_MAX)),
    "group.min.session.timeout.ms": PropertySpec(
        field="group_min_session_timeout_ms", **_int_at_least(0, INT_MAX)
    ),
    "group.max.session.timeout.ms": PropertySpec(
        field="group_max_session_timeout_ms", **_int_at_least(0, INT_MAX)
    ),
    "group.initial.rebalance.delay.ms": PropertySpec(
        field="group_initial_rebalance_delay_ms", **_int_at_least(0, INT_MAX)
    ),
    "group.max.size": PropertySpec(field="group_max_size", **_int_at_least(1, INT_MAX)),
    "group.coordinator.rebalance.protocols": PropertySpec(
        field="group_coordinator_rebalance_protocols", **_TEXT
    ),
    "group.consumer.session.timeout.ms": PropertySpec(
        field="group_consumer_session_timeout_ms", **_int_at_least(1, INT_MAX)
    ),
    "group.consumer.min.session.timeout.ms": PropertySpec(
        field="group_consumer_min_session_timeout_ms", **_int_at_least(1, INT_MAX)
    ),
    "group.consumer.max.session.timeout.ms": PropertySpec(
        field="group_consumer_max_session_timeout_ms", **_int_at_least(1, INT_MAX)
    ),
    "group.consumer.heartbeat.interval.ms": PropertySpec(
        field="group_consumer_heartbeat_interval_ms", **_int_at_least(1, INT_MAX)
    ),
    "group.consumer.min.heartbeat.interval.ms": PropertySpec(
        field="group_consumer_min_heartbeat_interval_ms", **_int_at_least(1, INT_MAX)
    ),
    "group.consumer.max.heartbeat.interval.ms": PropertySpec(
        field="group_consumer_max_heartbeat_interval_ms", **_int_at_least(1, INT_MAX)
    ),
    "group.consumer.max.size": PropertySpec(field="group_consumer_max_size", **_int_at_least(1, INT_MAX)),
    "group.consumer.assignors": PropertySpec(field="group_consumer_assignors", **_TEXT),
    "offsets.topic.num.partitions": PropertySpec(
        field="offsets_topic_num_partitions", **_int_at_least(1, INT_MAX)
    ),
    "offsets.topic.replication.factor": PropertySpec(
        field="offsets_topic_replication_factor", **_int_at_least(1, 32767)
    ),
    "offsets.topic.segment.bytes": PropertySpec(
        field="offsets_topic_segment_bytes", **_int_at_least(1, INT_MAX)
    ),
    "offsets.topic.compression.codec": PropertySpec(
        field="offsets_topic_compression_codec", **_int_at_least(0, 4)
    ),
    "offsets.load.buffer.size": PropertySpec(field="offsets_load_buffer_size", **_int_at_least(1, INT_MAX)),
    "offsets.retention.minutes": PropertySpec(field="offsets_retention_minutes", **_int_at_least(1, INT_MAX)),
    "offsets.retention.check.interval.ms": PropertySpec(
        field="offsets_retention_check_interval_ms", **_int_at_least(1)
    ),
    "transaction.max.timeout.ms": PropertySpec(
        field="transaction_max_timeout_ms", **_int_at_least(1, INT_MAX)
    ),
    "transactional.id.expiration.ms": PropertySpec(
        field="transactional_id_expiration_ms", **_int_at_least(1, INT_MAX)
    ),
    "transaction.remove.expired.transaction.cleanup.interval.ms": PropertySpec(
        field="transaction_remove_expired_transaction_cleanup_interval_ms", **_int_at_least(1, INT_MAX)
    ),
    "producer.id.expiration.ms": PropertySpec(field="producer_id_expiration_ms", **_int_at_least(1, INT_MAX)),
    "producer.id.expiration.check.interval.ms": PropertySpec(
        field="producer_id_expiration_check_interval_ms", **_int_at_least(1, INT_MAX)
    ),
    "offsets.commit.timeout.ms": PropertySpec(field="offsets_commit_timeout_ms", **_int_at_least(1, INT_MAX)),
    "offset.metadata.max.bytes": PropertySpec(field="offset_metadata_max_bytes", **_int_at_least(0, INT_MAX)),
    # groupcoord's own: not a Kafka property (Kafka's metrics go through JMX).
    "metrics.listen": PropertySpec(
        field="metrics_listen",
        nullable=True,
        parse_value=_host_port,
        expectation="HOST:PORT, e.g. 127.0.0.1:9404",
    ),
    # groupcoord's own: the live web console (docs/operations.md).
    "console.listen": PropertySpec(
        field="console_listen",
        nullable=True,
        parse_value=_host_port,
        expectation="HOST:PORT, e.g. 127.0.0.1:9405",
    ),
    # groupcoord's own: whether the console asks for one of the broker's users (docs/operations.md).
    "console.auth": PropertySpec(field="console_auth", **_choice("none", "basic")),
}


# ---------------------------------------------------------------------- Kafka's own broker keys

#: Every broker property Kafka 3.9 defines (the names of ``AbstractKafkaConfig.CONFIG_DEF``:
#: ``ServerConfigs``, ``KRaftConfigs``, ``SocketServerConfigs``, ``ReplicationConfigs``,
#: ``GroupCoordinatorConfig``, ``CleanerConfig``, ``LogConfig.SERVER_CONFIG_DEF``,
#: ``TransactionLogConfigs``, ``QuorumConfig``, ``QuotaConfigs``, ``BrokerSecurityConfigs``, the
#: remote-log, metrics, delegation-token and ZooKeeper configs). A server.properties written for
#: Kafka may set any of them: those in :data:`PROPERTIES` are applied, the others are accepted and
#: ignored with one log line each (they concern replication, the controller quorum, security,
#: quotas or tuning that a single Python broker does not have).
_KAFKA_BROKER_CONFIG_NAMES_TEXT = """
    advertised.listeners alter.config.policy.class.name alter.log.dirs.replication.quota.window.num
    alter.log.dirs.replication.quota.window.size.seconds authorizer.class.name auto.create.topics.enable
    auto.include.jmx.reporter auto.leader.rebalance.enable background.threads broker.heartbeat.interval.ms
    broker.id broker.id.generation.enable broker.rack broker.session.timeout.ms client.quota.callback.class
    compression.gzip.level compression.lz4.level compression.type compression.zstd.level
    connection.failed.authentication.delay.ms connections.max.idle.ms connections.max.reauth.ms
    control.plane.listener.name controlled.shutdown.enable controlled.shutdown.max.retries
    controlled.shutdown.retry.backoff.ms controller.listener.names controller.quorum.append.linger.ms
    controller.quorum.bootstrap.servers controller.quorum.election.backoff.max.ms
    controller.quorum.election.timeout.ms controller.quorum.fetch.timeout.ms
    controller.quorum.request.timeout.ms controller.quorum.retry.backoff.ms controller.quorum.voters
    controller.quota.window.num controller.quota.window.size.seconds controller.socket.timeout.ms
    create.topic.policy.class.name default.replication.factor delegation.token.expiry.check.interval.ms
    delegation.token.expiry.time.ms delegation.token.master.key delegation.token.max.lifetime.ms
    delegation.token.secret.key delete.records.purgatory.purge.interval.requests delete.topic.enable
    early.start.listeners eligible.leader.replicas.enable fetch.max.bytes
    fetch.purgatory.purge.interval.requests group.consumer.assignors group.consumer.heartbeat.interval.ms
    group.consumer.max.heartbeat.interval.ms group.consumer.max.session.timeout.ms group.consumer.max.size
    group.consumer.migration.policy group.consumer.min.heartbeat.interval.ms
    group.consumer.min.session.timeout.ms group.consumer.session.timeout.ms
    group.coordinator.append.linger.ms group.coordinator.new.enable group.coordinator.rebalance.protocols
    group.coordinator.threads group.initial.rebalance.delay.ms group.max.session.timeout.ms group.max.size
    group.min.session.timeout.ms group.share.delivery.count.limit group.share.enable
    group.share.heartbeat.interval.ms group.share.max.groups group.share.max.heartbeat.interval.ms
    group.share.max.record.lock.duration.ms group.share.max.session.timeout.ms group.share.max.size
    group.share.min.heartbeat.interval.ms group.share.min.record.lock.duration.ms
    group.share.min.session.timeout.ms group.share.partition.max.record.locks
    group.share.record.lock.duration.ms group.share.session.timeout.ms
    initial.broker.registration.timeout.ms inter.broker.listener.name inter.broker.protocol.version
    kafka.metrics.polling.interval.secs kafka.metrics.reporters leader.imbalance.check.interval.seconds
    leader.imbalance.per.broker.percentage listener.security.protocol.map listeners log.cleaner.backoff.ms
    log.cleaner.dedupe.buffer.size log.cleaner.delete.retention.ms log.cleaner.enable
    log.cleaner.io.buffer.load.factor log.cleaner.io.buffer.size log.cleaner.io.max.bytes.per.second
    log.cleaner.max.compaction.lag.ms log.cleaner.min.cleanable.ratio log.cleaner.min.compaction.lag.ms
    log.cleaner.threads log.cleanup.policy log.dir log.dir.failure.timeout.ms log.dirs
    log.flush.interval.messages log.flush.interval.ms log.flush.offset.checkpoint.interval.ms
    log.flush.scheduler.interval.ms log.flush.start.offset.checkpoint.interval.ms log.index.interval.bytes
    log.index.size.max.bytes log.initial.task.delay.ms log.local.retention.bytes log.local.retention.ms
    log.message.downconversion.enable log.message.format.version log.message.timestamp.after.max.ms
    log.message.timestamp.before.max.ms log.message.timestamp.difference.max.ms log.message.timestamp.type
    log.preallocate log.retention.bytes log.retention.check.interval.ms log.retention.hours
    log.retention.minutes log.retention.ms log.roll.hours log.roll.jitter.hours log.roll.jitter.ms
    log.roll.ms log.segment.bytes log.segment.delete.delay.ms max.connection.creation.rate max.connections
    max.connections.per.ip max.connections.per.ip.overrides max.incremental.fetch.session.cache.slots
    max.request.partition.size.limit message.max.bytes metadata.log.dir
    metadata.log.max.record.bytes.between.snapshots metadata.log.max.snapshot.interval.ms
    metadata.log.segment.bytes metadata.log.segment.min.bytes metadata.log.segment.ms
    metadata.max.idle.interval.ms metadata.max.retention.bytes metadata.max.retention.ms metric.reporters
    metrics.num.samples metrics.recording.level metrics.sample.window.ms min.insync.replicas node.id
    num.io.threads num.network.threads num.partitions num.recovery.threads.per.data.dir
    num.replica.alter.log.dirs.threads num.replica.fetchers offset.metadata.max.bytes
    offsets.commit.required.acks offsets.commit.timeout.ms offsets.load.buffer.size
    offsets.retention.check.interval.ms offsets.retention.minutes offsets.topic.compression.codec
    offsets.topic.num.partitions offsets.topic.replication.factor offsets.topic.segment.bytes
    password.encoder.cipher.algorithm password.encoder.iterations password.encoder.key.length
    password.encoder.keyfactory.algorithm password.encoder.old.secret password.encoder.secret
    principal.builder.class process.roles producer.id.expiration.check.interval.ms producer.id.expiration.ms
    producer.purgatory.purge.interval.requests queued.max.request.bytes queued.max.requests quota.window.num
    quota.window.size.seconds remote.fetch.max.wait.ms remote.log.index.file.cache.total.size.bytes
    remote.log.manager.copier.thread.pool.size remote.log.manager.copy.max.bytes.per.second
    remote.log.manager.copy.quota.window.num remote.log.manager.copy.quota.window.size.seconds
    remote.log.manager.expiration.thread.pool.size remote.log.manager.fetch.max.bytes.per.second
    remote.log.manager.fetch.quota.window.num remote.log.manager.fetch.quota.window.size.seconds
    remote.log.manager.task.interval.ms remote.log.manager.task.retry.backoff.max.ms
    remote.log.manager.task.retry.backoff.ms remote.log.manager.task.retry.jitter
    remote.log.manager.thread.pool.size remote.log.metadata.custom.metadata.max.bytes
    remote.log.metadata.manager.class.name remote.log.metadata.manager.class.path
    remote.log.metadata.manager.impl.prefix remote.log.metadata.manager.listener.name
    remote.log.reader.max.pending.tasks remote.log.reader.threads remote.log.storage.manager.class.name
    remote.log.storage.manager.class.path remote.log.storage.manager.impl.prefix
    remote.log.storage.system.enable replica.fetch.backoff.ms replica.fetch.max.bytes
    replica.fetch.min.bytes replica.fetch.response.max.bytes replica.fetch.wait.max.ms
    replica.high.watermark.checkpoint.interval.ms replica.lag.time.max.ms replica.selector.class
    replica.socket.receive.buffer.bytes replica.socket.timeout.ms replication.quota.window.num
    replication.quota.window.size.seconds request.timeout.ms reserved.broker.max.id
    sasl.client.callback.handler.class sasl.enabled.mechanisms sasl.jaas.config sasl.kerberos.kinit.cmd
    sasl.kerberos.min.time.before.relogin sasl.kerberos.principal.to.local.rules sasl.kerberos.service.name
    sasl.kerberos.ticket.renew.jitter sasl.kerberos.ticket.renew.window.factor
    sasl.login.callback.handler.class sasl.login.class sasl.login.connect.timeout.ms
    sasl.login.read.timeout.ms sasl.login.refresh.buffer.seconds sasl.login.refresh.min.period.seconds
    sasl.login.refresh.window.factor sasl.login.refresh.window.jitter sasl.login.retry.backoff.max.ms
    sasl.login.retry.backoff.ms sasl.mechanism.controller.protocol sasl.mechanism.inter.broker.protocol
    sasl.oauthbearer.clock.skew.seconds sasl.oauthbearer.expected.audience sasl.oauthbearer.expected.issuer
    sasl.oauthbearer.jwks.endpoint.refresh.ms sasl.oauthbearer.jwks.endpoint.retry.backoff.max.ms
    sasl.oauthbearer.jwks.endpoint.retry.backoff.ms sasl.oauthbearer.jwks.endpoint.url
    sasl.oauthbearer.scope.claim.name sasl.oauthbearer.sub.claim.name sasl.oauthbearer.token.endpoint.url
    sasl.server.callback.handler.class sasl.server.max.receive.size security.inter.broker.protocol
    security.providers server.max.startup.time.ms socket.connection.setup.timeout.max.ms
    socket.connection.setup.timeout.ms socket.listen.backlog.size socket.receive.buffer.bytes
    socket.request.max.bytes socket.send.buffer.bytes ssl.allow.dn.changes ssl.allow.san.changes
    ssl.cipher.suites ssl.client.auth ssl.enabled.protocols ssl.endpoint.identification.algorithm
    ssl.engine.factory.class ssl.key.password ssl.keymanager.algorithm ssl.keystore.certificate.chain
    ssl.keystore.key ssl.keystore.location ssl.keystore.password ssl.keystore.type
    ssl.principal.mapping.rules ssl.protocol ssl.provider ssl.secure.random.implementation
    ssl.trustmanager.algorithm ssl.truststore.certificates ssl.truststore.location ssl.truststore.password
    ssl.truststore.type telemetry.max.bytes transaction.abort.timed.out.transaction.cleanup.interval.ms
    transaction.max.timeout.ms transaction.partition.verification.enable
    transaction.remove.expired.transaction.cleanup.interval.ms transaction.state.log.load.buffer.size
    transaction.state.log.min.isr transaction.state.log.num.partitions
    transaction.state.log.replication.factor transaction.state.log.segment.bytes
    transactional.id.expiration.ms unclean.leader.election.enable unclean.leader.election.interval.ms
    unstable.api.versions.enable unstable.feature.versions.enable zookeeper.clientCnxnSocket
    zookeeper.connect zookeeper.connection.timeout.ms zookeeper.max.in.flight.requests
    zookeeper.metadata.migration.enable zookeeper.metadata.migration.min.batch.size
    zookeeper.session.timeout.ms zookeeper.set.acl zookeeper.ssl.cipher.suites zookeeper.ssl.client.enable
    zookeeper.ssl.crl.enable zookeeper.ssl.enabled.protocols zookeeper.ssl.endpoint.identification.algorithm
    zookeeper.ssl.keystore.location zookeeper.ssl.keystore.password zookeeper.ssl.keystore.type
    zookeeper.ssl.ocsp.enable zookeeper.ssl.protocol zookeeper.ssl.truststore.location
    zookeeper.ssl.truststore.password zookeeper.ssl.truststore.type
"""
KAFKA_BROKER_CONFIG_NAMES: frozenset[str] = frozenset(_KAFKA_BROKER_CONFIG_NAMES_TEXT.split())

#: Prefixes of Kafka's per-listener and per-mechanism keys (``listener.name.<l>.<key>``): kept
#: in :attr:`BrokerConfig.security`.
KAFKA_BROKER_CONFIG_PREFIXES = ("listener.name.",)

#: The security keys groupcoord acts on (TLS, SASL, listeners, the authorizer), kept raw in
#: :attr:`BrokerConfig.security` (``groupcoord.config.listeners.SecuritySettings`` resolves them per
#: listener). ``super.users`` and ``allow.everyone.if.no.acl.found`` are the authorizer's keys
#: (``StandardAuthorizer``), not in Kafka's broker ``CONFIG_DEF``.
SECURITY_KEYS = frozenset(
    {
        "listener.security.protocol.map",
        "controller.listener.names",
        "inter.broker.listener.name",
        "security.inter.broker.protocol",
        "ssl.keystore.type",
        "ssl.keystore.location",
        "ssl.keystore.password",
        "ssl.key.password",
        "ssl.keystore.certificate.chain",
        "ssl.keystore.key",
        "ssl.truststore.type",
        "ssl.truststore.location",
        "ssl.truststore.password",
        "ssl.truststore.certificates",
        "ssl.client.auth",
        "ssl.enabled.protocols",
        "ssl.protocol",
        "ssl.cipher.suites",
        "ssl.principal.mapping.rules",
        "ssl.endpoint.identification.algorithm",
        "sasl.enabled.mechanisms",
        "sasl.jaas.config",
        "sasl.mechanism.inter.broker.protocol",
        "connection.failed.authentication.delay.ms",
        "connections.max.reauth.ms",
        "authorizer.class.name",
        "super.users",
        "allow.everyone.if.no.acl.found",
    }
)

#: Security keys kept (the listeners use them) that configure what a single broker does not
#: have (inter-broker traffic, a controller quorum): logged as ignored, as other such keys.
_CAPTURED_BUT_IGNORED = frozenset(
    {
        "controller.listener.names",
        "inter.broker.listener.name",
        "security.inter.broker.protocol",
        "sasl.mechanism.inter.broker.protocol",
        "ssl.endpoint.identification.algorithm",
        "connections.max.reauth.ms",  # KIP-368 re-authentication: no client tested asks for it
    }
)


# ---------------------------------------------------------------------- .properties syntax

_KEY_END = re.compile(r"(?<!\\)[=:\s]")


def _unescape(text: str) -> str:
    out: list[str] = []
    i = 0
    while i < len(text):
        ch = text[i]
        if ch == "\\" and i + 1 < len(text):
            nxt = text[i + 1]
            if nxt == "u" and i + 6 <= len(text):
                try:
                    out.append(chr(int(text[i + 2 : i + 6], 16)))
                    i += 6
                    continue
                except ValueError:
                    pass
            out.append({"t": "\t", "n": "\n", "r": "\r", "f": "\f"}.get(nxt, nxt))
            i += 2
            continue
        out.append(ch)
        i += 1
    return "".join(out)


def _logical_lines(text: str) -> Iterable[str]:
    pending = ""
    for raw in text.splitlines():
        line = raw.lstrip() if pending else raw.strip()
        if not pending and (not line or line[0] in "#!"):
            continue
        trailing = len(line) - len(line.rstrip("\\"))
        if trailing % 2 == 1:
            pending += line[:-1]
            continue
        yield pending + line
        pending = ""
    if pending:
        yield pending


def parse_properties(text: str) -> dict[str, str]:
    """Java ``.properties`` syntax: ``#``/``!`` comments, ``=``, ``:`` or whitespace separators,
    backslash line continuations and escapes. Later keys win."""
    props: dict[str, str] = {}
    for line in _logical_lines(text):
        m = _KEY_END.search(line)
        if m is None:
            key, value = line, ""
        else:
            key = line[: m.start()]
            rest = line[m.start() :].lstrip(" \t\f")
            if rest[:1] in ("=", ":"):
                rest = rest[1:].lstrip(" \t\f")
            value = rest
        props[_unescape(key)] = _unescape(value)
    return props
