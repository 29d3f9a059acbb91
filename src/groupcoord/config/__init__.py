"""Broker configuration, keyed by Kafka's own broker property names.

:class:`BrokerConfig` is a frozen dataclass; :data:`PROPERTIES` maps each accepted property
name (``log.segment.bytes``, ``group.min.session.timeout.ms`` ...) to a field, its parser and
its validation. Loading is a Java ``.properties`` file first, then ``--set key=value``
overrides; an unknown key or a bad value raises :class:`ConfigError` naming both.

Single-broker choices (documented, not hidden):

* ``default.replication.factor`` is at most the number of brokers (``groupcoord serve --brokers N``,
  checked at start; 1 by default): one process serves N brokers with one copy of each log
  (``docs/cluster.md``). ``broker.rack`` may name one rack per node, comma-separated.
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
* ``node.<id>.listeners``, ``node.<id>.advertised.listeners``, ``node.<id>.broker.rack``: one
  node's own value with ``--brokers N`` (:mod:`groupcoord.config.nodes`).
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

from groupcoord.config.kafka_names import (
    CAPTURED_BUT_IGNORED,
    KAFKA_BROKER_CONFIG_NAMES,
    KAFKA_BROKER_CONFIG_PREFIXES,
    SECURITY_KEYS,
)
from groupcoord.config.listeners import (
    ListenerSpec,
    SecuritySettings,
    is_sensitive,
    parse_listeners,
    parse_protocol_map,
)
from groupcoord.config.nodes import NodeSettings, check_node_key, is_node_key
from groupcoord.config.properties_file import parse_properties
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
    # Several brokers in one process (docs/cluster.md).
    broker_rack: str | None = None
    auto_leader_rebalance_enable: bool = True
    leader_imbalance_check_interval_seconds: int = 300
    leader_imbalance_per_broker_percentage: int = 10
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
    #: controller_mutation_rate's token bucket: its burst is this many windows of the rate
    controller_quota_window_num: int = 11
    controller_quota_window_size_seconds: int = 1
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
    # Kafka 4.3 (KIP-1263): the target assignment at most once per interval.
    group_consumer_assignment_interval_ms: int = 1000
    group_consumer_min_assignment_interval_ms: int = 0
    group_consumer_max_assignment_interval_ms: int = 15000
    group_consumer_max_size: int = INT_MAX
    group_consumer_assignors: str = "uniform,range"
    group_consumer_migration_policy: str = "bidirectional"
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
    #: The per-node keys as given (``node.<id>.listeners`` ...: :mod:`groupcoord.config.nodes`).
    node_keys: tuple[tuple[str, str], ...] = ()
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

    @property
    def node_settings(self) -> NodeSettings:
        """The ``node.<id>.*`` keys (``groupcoord serve --brokers N``; docs/cluster.md)."""
        return NodeSettings(dict(self.node_keys))

    def check_nodes(self, node_ids: tuple[int, ...]) -> None:
        """:class:`ConfigError` naming the first bad ``node.<id>.*`` key for these nodes."""
        self.node_settings.validate(node_ids, self.listener_specs(), self._protocol_map(), self._skip())

    def node_listener_specs(self, node: int) -> tuple[ListenerSpec, ...] | None:
        """Node ``node``'s own listeners (``node.<id>.listeners``), in ``listeners`` order, or
        None: it serves each listener on the listener's port + its id."""
        specs = self.listener_specs()
        return self.node_settings.listeners(node, specs, self._protocol_map(), self._skip())

    def node_advertised_specs(self, node: int) -> dict[str, ListenerSpec]:
        """Listener name -> node ``node``'s own ``node.<id>.advertised.listeners`` entry."""
        specs = self.listener_specs()
        return self.node_settings.advertised(node, specs, self._protocol_map(), self._skip())

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
        node_keys: dict[str, str] = {}
        for key, raw in props.items():
            if is_node_key(key):
                check_node_key(key, raw)
                node_keys[key] = raw.strip()
                explicit.add(key)
                continue
            if key in SECURITY_KEYS or key.startswith(KAFKA_BROKER_CONFIG_PREFIXES):
                security[key] = raw.strip()
                explicit.add(key)
                if key in CAPTURED_BUT_IGNORED and key not in _IGNORED_LOGGED:
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
        config = cls(
            **values,
            security=tuple(sorted(security.items())),
            node_keys=tuple(sorted(node_keys.items())),
            explicit=frozenset(explicit),
        )
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
            (
                "group.consumer.assignment.interval.ms",
                self.group_consumer_assignment_interval_ms,
                "group.consumer.min.assignment.interval.ms",
                self.group_consumer_min_assignment_interval_ms,
                "group.consumer.max.assignment.interval.ms",
                self.group_consumer_max_assignment_interval_ms,
            ),
        )
        # Kafka's GroupCoordinatorConfig requires each pair's max >= min before the value's bounds
        for name, value, min_name, lo, max_name, hi in checks:
            if hi < lo:
                raise ConfigError(f"{max_name} must be greater than or equal to {min_name}")
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
        self.listener_max_connections()

    def listener_max_connections(self) -> dict[str, int]:
        """``listener.name.<listener>.max.connections`` by listener name (upper case), as Kafka's
        per-listener connection limit (``DynamicListenerConfig``; at least 0). A listener not
        named here has no limit of its own: only ``max.connections`` applies to it."""
        out: dict[str, int] = {}
        names = {spec.name.lower(): spec.name for spec in self.listener_specs()}
        for key, raw in self.security_settings.props.items():
            m = re.fullmatch(r"listener\.name\.([^.]+)\.max\.connections", key)
            if m is None:
                continue
            name = names.get(m.group(1))
            if name is None:
                continue  # another listener's (a controller listener's): not served here
            try:
                value = int(str(raw).strip())
            except ValueError:
                value = -1
            if not 0 <= value <= INT_MAX:
                raise ConfigError(f"bad value for {key}: {raw!r} (expected an integer from 0 to {INT_MAX})")
            out[name] = value
        return out

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
        check=lambda v: 1 <= v <= 32767,
        expectation="a positive number, at most the number of brokers (--brokers)",
    ),
    "broker.rack": PropertySpec(field="broker_rack", nullable=True, **_TEXT),
    "auto.leader.rebalance.enable": PropertySpec(field="auto_leader_rebalance_enable", **_BOOL),
    "leader.imbalance.check.interval.seconds": PropertySpec(
        field="leader_imbalance_check_interval_seconds", **_int_at_least(1)
    ),
    "leader.imbalance.per.broker.percentage": PropertySpec(
        field="leader_imbalance_per_broker_percentage", **_int_at_least(0, 100)
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
    "controller.quota.window.num": PropertySpec(
        field="controller_quota_window_num", **_int_at_least(1, INT_MAX)
    ),
    "controller.quota.window.size.seconds": PropertySpec(
        field="controller_quota_window_size_seconds", **_int_at_least(1, INT_MAX)
    ),
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
    # Kafka 4.3's GroupCoordinatorConfig (KAFKA-20300): int, at least 0.
    "group.consumer.assignment.interval.ms": PropertySpec(
        field="group_consumer_assignment_interval_ms", **_int_at_least(0, INT_MAX)
    ),
    "group.consumer.min.assignment.interval.ms": PropertySpec(
        field="group_consumer_min_assignment_interval_ms", **_int_at_least(0, INT_MAX)
    ),
    "group.consumer.max.assignment.interval.ms": PropertySpec(
        field="group_consumer_max_assignment_interval_ms", **_int_at_least(0, INT_MAX)
    ),
    "group.consumer.max.size": PropertySpec(field="group_consumer_max_size", **_int_at_least(1, INT_MAX)),
    "group.consumer.assignors": PropertySpec(field="group_consumer_assignors", **_TEXT),
    # Kafka's ConsumerGroupMigrationPolicy.parse: case-insensitive, one of four names.
    "group.consumer.migration.policy": PropertySpec(
        field="group_consumer_migration_policy",
        parse_value=_str,
        check=lambda v: str(v).strip().lower() in ("bidirectional", "upgrade", "downgrade", "disabled"),
        expectation="one of bidirectional, upgrade, downgrade, disabled",
    ),
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
