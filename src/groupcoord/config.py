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
"""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from groupcoord.constants import INT32_MAX as INT_MAX
from groupcoord.constants import LONG_MAX
from groupcoord.errors import ConfigError

__all__ = [
    "INT_MAX",
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
    log_cleaner_backoff_ms: int = 15000
    log_message_timestamp_type: str = "CreateTime"
    message_max_bytes: int = 1048588
    socket_request_max_bytes: int = 104857600
    # Connections (Kafka's socket server): idle expiry (-1: never) and the broker-wide cap.
    connections_max_idle_ms: int = 600000
    max_connections: int = INT_MAX
    # Group coordinator (reference §3 defaults).
    group_min_session_timeout_ms: int = 6000
    group_max_session_timeout_ms: int = 1800000
    group_initial_rebalance_delay_ms: int = 3000
    group_max_size: int = INT_MAX
    offsets_topic_num_partitions: int = 50
    offsets_topic_replication_factor: int = 3
    offsets_topic_segment_bytes: int = 104857600
    offsets_topic_compression_codec: int = 0
    offsets_load_buffer_size: int = 5242880
    offsets_retention_minutes: int = 10080
    offsets_retention_check_interval_ms: int = 600000
    offsets_commit_timeout_ms: int = 5000
    offset_metadata_max_bytes: int = 4096
    # Prometheus endpoint (docs/operations.md): HOST:PORT, or None for none.
    metrics_listen: str | None = None
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
    def flush_policy_explicit(self) -> bool:
        """True when the operator chose a flush policy; acks=-1 then follows it instead of fsyncing."""
        return bool(self.explicit & {"log.flush.interval.messages", "log.flush.interval.ms"})

    def listener(self) -> Listener:
        return parse_listener("listeners", self.listeners)

    def advertised_listener(self) -> Listener:
        if self.advertised_listeners:
            return parse_listener("advertised.listeners", self.advertised_listeners)
        return self.listener()

    def metrics_listener(self) -> Listener | None:
        """Where ``/metrics`` is served (``metrics.listen``), or None: not served."""
        if self.metrics_listen is None:
            return None
        return parse_listener("metrics.listen", self.metrics_listen)

    def get(self, prop: str) -> Any:
        """The value of a property by its Kafka name."""
        spec = PROPERTIES[prop]
        return getattr(self, spec.field)

    def replace(self, **changes: Any) -> BrokerConfig:
        return dataclasses.replace(self, **changes)

    # ------------------------------------------------------------------ loading
    @classmethod
    def from_properties(cls, props: Mapping[str, str]) -> BrokerConfig:
        values: dict[str, Any] = {}
        explicit: set[str] = set()
        for key, raw in props.items():
            spec = PROPERTIES.get(key)
            if spec is None:
                raise ConfigError(f"unknown configuration key {key!r} (value {raw!r})")
            values[spec.field] = spec.parse(key, raw)
            explicit.add(key)
        config = cls(**values, explicit=frozenset(explicit))
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

    def validate(self) -> None:
        if self.group_min_session_timeout_ms > self.group_max_session_timeout_ms:
            raise ConfigError(
                "group.min.session.timeout.ms "
                f"({self.group_min_session_timeout_ms}) exceeds group.max.session.timeout.ms "
                f"({self.group_max_session_timeout_ms})"
            )
        self.listener()
        self.advertised_listener()
        self.metrics_listener()


def parse_listener(key: str, value: str) -> Listener:
    first = value.split(",")[0].strip()
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


def _host_port(text: str) -> str:
    """``HOST:PORT`` (a bracketed IPv6 host allowed, an empty host = every address)."""
    m = re.fullmatch(r"(\[[^\]]*\]|[^:/\s\[\]]*):(\d{1,5})", text)
    if m is None or int(m.group(2)) > 65535:
        raise ValueError(text)
    return text


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
    "log.cleaner.backoff.ms": PropertySpec(field="log_cleaner_backoff_ms", **_int_at_least(0)),
    "log.message.timestamp.type": PropertySpec(
        field="log_message_timestamp_type", **_choice("CreateTime", "LogAppendTime")
    ),
    "message.max.bytes": PropertySpec(field="message_max_bytes", **_int_at_least(0, INT_MAX)),
    "socket.request.max.bytes": PropertySpec(field="socket_request_max_bytes", **_int_at_least(1, INT_MAX)),
    "connections.max.idle.ms": PropertySpec(field="connections_max_idle_ms", **_int_at_least(-1)),
    "max.connections": PropertySpec(field="max_connections", **_int_at_least(0, INT_MAX)),
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
    "offsets.commit.timeout.ms": PropertySpec(field="offsets_commit_timeout_ms", **_int_at_least(1, INT_MAX)),
    "offset.metadata.max.bytes": PropertySpec(field="offset_metadata_max_bytes", **_int_at_least(0, INT_MAX)),
    # groupcoord's own: not a Kafka property (Kafka's metrics go through JMX).
    "metrics.listen": PropertySpec(
        field="metrics_listen",
        nullable=True,
        parse_value=_host_port,
        expectation="HOST:PORT, e.g. 127.0.0.1:9404",
    ),
}



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
