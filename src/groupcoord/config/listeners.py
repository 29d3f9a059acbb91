"""Listeners and their security settings, by Kafka's property names.

Kafka names each listener (``listeners=PLAINTEXT://:9092,SECURE://:9093``) and maps each name to
a security protocol (``listener.security.protocol.map=SECURE:SASL_SSL``; by default a listener
named after a protocol uses that protocol). Every security key may be given for all listeners
(``ssl.keystore.location``) or for one (``listener.name.secure.ssl.keystore.location``, the name in
lower case); a SASL mechanism's JAAS line for one listener and mechanism
(``listener.name.secure.plain.sasl.jaas.config``). Kafka's ``KafkaConfig.listeners``,
``ListenerName``, ``AbstractConfig.valuesWithPrefixOverride`` and ``JaasContext.loadServerContext``
resolve them the same way.

This module is a leaf: it parses and resolves settings; the server (TLS, SASL) and the broker
(ACLs, advertised addresses) read them.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field

from groupcoord.errors import ConfigError

__all__ = [
    "DEFAULT_PROTOCOL_MAP",
    "SECURITY_PROTOCOLS",
    "ListenerSpec",
    "SecuritySettings",
    "parse_jaas_users",
    "parse_listeners",
    "parse_protocol_map",
]

SECURITY_PROTOCOLS = ("PLAINTEXT", "SSL", "SASL_PLAINTEXT", "SASL_SSL")

#: Kafka's default ``listener.security.protocol.map`` (``SocketServerConfigs``).
DEFAULT_PROTOCOL_MAP = "PLAINTEXT:PLAINTEXT,SSL:SSL,SASL_PLAINTEXT:SASL_PLAINTEXT,SASL_SSL:SASL_SSL"

#: Keys that are Kafka's ``PASSWORD`` type: never logged, answered by DescribeConfigs as
#: sensitive with a null value (``ConfigDef.Type.PASSWORD`` in ``SslConfigs`` / ``SaslConfigs``).
SENSITIVE_KEYS = frozenset(
    {
        "ssl.keystore.password",
        "ssl.key.password",
        "ssl.truststore.password",
        "ssl.keystore.key",
        "ssl.keystore.certificate.chain",
        "ssl.truststore.certificates",
        "sasl.jaas.config",
    }
)


def is_sensitive(key: str) -> bool:
    """Whether a key (possibly listener- or mechanism-prefixed) holds a secret."""
    return any(key == s or key.endswith("." + s) for s in SENSITIVE_KEYS)


@dataclass(frozen=True, slots=True, kw_only=True)
class ListenerSpec:
    """One entry of ``listeners`` (or ``advertised.listeners``)."""

    name: str
    host: str
    port: int
    protocol: str

    @property
    def tls(self) -> bool:
        return self.protocol in ("SSL", "SASL_SSL")

    @property
    def sasl(self) -> bool:
        return self.protocol in ("SASL_PLAINTEXT", "SASL_SSL")


def parse_protocol_map(value: str | None) -> dict[str, str]:
    """``NAME:PROTOCOL,...`` -> {NAME: PROTOCOL}; Kafka's default when not set."""
    text = DEFAULT_PROTOCOL_MAP if value is None else value
    out: dict[str, str] = {}
    for item in (p.strip() for p in text.split(",")):
        if not item:
            continue
        name, sep, protocol = item.partition(":")
        name, protocol = name.strip().upper(), protocol.strip().upper()
        if not sep or not name or protocol not in SECURITY_PROTOCOLS:
            raise ConfigError(
                f"bad value for listener.security.protocol.map: {text!r} "
                f"(expected NAME:PROTOCOL pairs, PROTOCOL one of {', '.join(SECURITY_PROTOCOLS)})"
            )
        out[name] = protocol
    return out


_ENTRY = re.compile(r"(?:([A-Za-z_][A-Za-z0-9_]*)://)?(\[[^\]]*\]|[^:]*):(\d+)")


def parse_listeners(
    key: str, value: str, protocol_map: Mapping[str, str], skip: frozenset[str] = frozenset()
) -> tuple[ListenerSpec, ...]:
    """The entries of ``listeners`` / ``advertised.listeners``, in order, leaving out the
    controller listeners ``skip`` names (a KRaft ``CONTROLLER://`` entry: this broker has no
    separate controller quorum). An entry without ``NAME://`` is a PLAINTEXT listener."""
    out: list[ListenerSpec] = []
    for entry in (e.strip() for e in value.split(",")):
        if not entry:
            continue
        m = _ENTRY.fullmatch(entry)
        if m is None:
            raise ConfigError(f"bad value for {key}: {value!r} (expected NAME://HOST:PORT entries)")
        name = (m.group(1) or "PLAINTEXT").upper()
        if name in skip:
            continue
        protocol = protocol_map.get(name)
        if protocol is None:
            raise ConfigError(
                f"bad value for {key}: {value!r} (listener {name} has no security protocol: "
                "add it to listener.security.protocol.map)"
            )
        port = int(m.group(3))
        if port > 65535:
            raise ConfigError(f"bad value for {key}: {value!r} (port out of range)")
        if any(spec.name == name for spec in out):
            raise ConfigError(f"bad value for {key}: {value!r} (listener {name} named twice)")
        out.append(ListenerSpec(name=name, host=m.group(2).strip("[]"), port=port, protocol=protocol))
    if not out:
        raise ConfigError(f"bad value for {key}: {value!r} (no listener this broker serves)")
    return tuple(out)


_JAAS_OPTION = re.compile(r'([A-Za-z0-9_.\-]+)\s*=\s*"((?:[^"\\]|\\.)*)"')


def parse_jaas_users(jaas: str) -> dict[str, str]:
    """The ``user_<name>="<password>"`` options of a JAAS line (``PlainLoginModule``), as
    Kafka's ``PlainServerCallbackHandler`` reads them. Written by hand: JAAS has no Python parser,
    and only this quoted-option form is used in a ``sasl.jaas.config`` value."""
    users: dict[str, str] = {}
    for m in _JAAS_OPTION.finditer(jaas):
        option, raw = m.group(1), m.group(2)
        if option.startswith("user_"):
            users[option[len("user_") :]] = re.sub(r"\\(.)", r"\1", raw)
    return users


@dataclass(frozen=True, slots=True, kw_only=True)
class SecuritySettings:
    """The security keys of a configuration (``ssl.*``, ``sasl.*``, ``listener.name.*``,
    ``super.users`` ...), raw, with Kafka's per-listener resolution."""

    props: Mapping[str, str] = field(default_factory=dict)

    def get(self, key: str, default: str | None = None) -> str | None:
        return self.props.get(key, default)

    def for_listener(self, listener: str, key: str, default: str | None = None) -> str | None:
        """``listener.name.<listener>.<key>``, else ``<key>``, else ``default``."""
        prefixed = f"listener.name.{listener.lower()}.{key}"
        if prefixed in self.props:
            return self.props[prefixed]
        return self.props.get(key, default)

    def jaas_for(self, listener: str, mechanism: str) -> str | None:
        """The JAAS line of one listener and mechanism
        (``listener.name.<l>.<mechanism>.sasl.jaas.config``, else the listener's, else the
        broker-wide ``sasl.jaas.config``)."""
        mech = f"listener.name.{listener.lower()}.{mechanism.lower()}.sasl.jaas.config"
        if mech in self.props:
            return self.props[mech]
        return self.for_listener(listener, "sasl.jaas.config")

    def list_for(self, listener: str, key: str, default: str) -> tuple[str, ...]:
        raw = self.for_listener(listener, key, default) or ""
        return tuple(p.strip() for p in raw.split(",") if p.strip())
