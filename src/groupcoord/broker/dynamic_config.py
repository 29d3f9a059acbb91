"""Which broker configs AlterConfigs may change at run time, and how Kafka checks them.

Kafka 3.9's ``DynamicBrokerConfig.AllDynamicConfigs`` is the union of what its reconfigurable
parts declare: the log configs that are broker synonyms of topic configs (``DynamicLogConfig``,
all but ``log.message.format.version``), the log cleaner's (``LogCleaner.ReconfigurableConfigs``),
the thread pools' (``DynamicThreadPool``), the listener, SSL and SASL configs
(``DynamicListenerConfig``), the connection limits (``SocketServer``), ``metric.reporters``, the
producer-state configs (``DynamicProducerStateManagerConfig``) and the remote-log ones
(``DynamicRemoteLogConfig``); ``DynamicConfig.Broker`` adds the replication quotas
(``QuotaConfigs.brokerQuotaConfigs``). Every other broker property Kafka defines is static:
setting it answers INVALID_REQUEST "Cannot update these configs dynamically: Set(...)".

:func:`validate` is ``DynamicBrokerConfig.validateConfigs`` plus the reconfigurables'
``validateReconfiguration`` checks that apply here (the thread-pool bounds), in Kafka's order:
static names, SSL keystore/truststore configs without a listener prefix, value types, per-broker
configs at the cluster-wide level. Its failures are ConfigExceptions, which Kafka's
``ConfigAdminManager`` answers as INVALID_REQUEST (KAFKA-13609).

groupcoord stores every accepted value (``__topics.json``), describes it with Kafka's source, and
keeps it across restarts. The log synonyms act at once on every partition; the others have no
effect on one Python broker (docs/operations.md lists them).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from dataclasses import dataclass

from groupcoord.config import KAFKA_BROKER_CONFIG_NAMES, PROPERTIES, BrokerConfig
from groupcoord.constants import INT32_MAX, LONG_MAX
from groupcoord.storage.log_config import (
    BROKER_SYNONYMS,
    TOPIC_CONFIGS,
    TYPE_BOOLEAN,
    TYPE_DOUBLE,
    TYPE_INT,
    TYPE_LIST,
    TYPE_LONG,
    TYPE_STRING,
    broker_value_as_topic_value,
)

# DescribeConfigs config_type codes log_config does not define (KIP-569).
TYPE_SHORT = 4
TYPE_CLASS = 8
TYPE_PASSWORD = 9

_SHORT_MAX = 32767
_DOUBLE_MAX = "1.7976931348623157E308"


class DynamicConfigError(Exception):
    """A dynamic broker config Kafka refuses with a ConfigException (INVALID_REQUEST)."""


@dataclass(frozen=True, slots=True, kw_only=True)
class DynamicKey:
    """One dynamic broker config: its DescribeConfigs type, Kafka's default and its check."""

    name: str
    config_type: int
    default: str | None
    #: Kafka's ``PerBrokerConfigs``: refused at the cluster-wide level (resource name "")
    per_broker: bool = False
    #: a PASSWORD config: described with a null value and is_sensitive
    sensitive: bool = False
    #: the least value a number may take (Kafka's ``atLeast``), or None
    at_least: float | None = None
    #: the greatest value a number may take (Kafka's ``between``), or None
    at_most: float | None = None
    #: the values a string may take (Kafka's ``in``), or ()
    choices: tuple[str, ...] = ()


def _int(name: str, default: int, *, at_least: int | None = None, per_broker: bool = False) -> DynamicKey:
    return DynamicKey(
        name=name, config_type=TYPE_INT, default=str(default), at_least=at_least, per_broker=per_broker
    )


def _long(name: str, default: int, *, at_least: int | None = None) -> DynamicKey:
    return DynamicKey(name=name, config_type=TYPE_LONG, default=str(default), at_least=at_least)


def _listener(
    name: str,
    config_type: int,
    default: str | None,
    *,
    sensitive: bool = False,
    at_least: float | None = None,
    at_most: float | None = None,
    choices: tuple[str, ...] = (),
) -> DynamicKey:
    """A ``DynamicListenerConfig`` config: per broker (``PerBrokerConfigs``)."""
    return DynamicKey(
        name=name,
        config_type=config_type,
        default=default,
        per_broker=True,
        sensitive=sensitive,
        at_least=at_least,
        at_most=at_most,
        choices=choices,
    )


#: SslConfigs.RECONFIGURABLE_CONFIGS: dynamic only per listener (``listener.name.<l>.<name>``).
SSL_LISTENER_ONLY = frozenset(
    {
        "ssl.keystore.type",
        "ssl.keystore.location",
        "ssl.keystore.password",
        "ssl.key.password",
        "ssl.truststore.type",
        "ssl.truststore.location",
        "ssl.truststore.password",
        "ssl.keystore.certificate.chain",
        "ssl.keystore.key",
        "ssl.truststore.certificates",
    }
)

#: DynamicBrokerConfig.ClusterLevelListenerConfigs: listener configs that may also be cluster-wide.
_CLUSTER_LEVEL_LISTENER = frozenset(
    {"max.connections", "max.connection.creation.rate", "num.network.threads"}
)

#: DynamicThreadPool.ReconfigurableConfigs: a new size must be >= 1 and within [current/2, current*2].
THREAD_POOLS = frozenset(
    {"num.io.threads", "num.replica.fetchers", "num.recovery.threads.per.data.dir", "background.threads"}
)

_NOT_SYNONYMS = frozenset({"log.message.format.version"})  # DynamicLogConfig.NonReconfigrableLogConfigs

_KEYS: tuple[DynamicKey, ...] = (
    # LogCleaner.ReconfigurableConfigs (message.max.bytes is a log synonym, below)
    _int("log.cleaner.threads", 1, at_least=0),
    _long("log.cleaner.dedupe.buffer.size", 134217728),
    DynamicKey(name="log.cleaner.io.buffer.load.factor", config_type=TYPE_DOUBLE, default="0.9"),
    _int("log.cleaner.io.buffer.size", 524288, at_least=0),
    DynamicKey(name="log.cleaner.io.max.bytes.per.second", config_type=TYPE_DOUBLE, default=_DOUBLE_MAX),
    _long("log.cleaner.backoff.ms", 15000, at_least=0),
    # DynamicThreadPool
    _int("num.io.threads", 8, at_least=1),
    _int("num.replica.fetchers", 1),
    _int("num.recovery.threads.per.data.dir", 1, at_least=1),
    _int("background.threads", 10, at_least=1),
    # DynamicMetricsReporters
    DynamicKey(name="metric.reporters", config_type=TYPE_LIST, default=""),
    # DynamicListenerConfig: listeners
    _listener("advertised.listeners", TYPE_STRING, None),
    _listener("listeners", TYPE_STRING, "PLAINTEXT://:9092"),
    _listener(
        "listener.security.protocol.map",
        TYPE_STRING,
        "SASL_SSL:SASL_SSL,PLAINTEXT:PLAINTEXT,SSL:SSL,SASL_PLAINTEXT:SASL_PLAINTEXT",
    ),
    # DynamicListenerConfig: SSL
    _listener(
        "principal.builder.class",
        TYPE_CLASS,
        "org.apache.kafka.common.security.authenticator.DefaultKafkaPrincipalBuilder",
    ),
    _listener("ssl.protocol", TYPE_STRING, "TLSv1.3"),
    _listener("ssl.provider", TYPE_STRING, None),
    _listener("ssl.cipher.suites", TYPE_LIST, ""),
    _listener("ssl.enabled.protocols", TYPE_LIST, "TLSv1.2,TLSv1.3"),
    _listener("ssl.keystore.type", TYPE_STRING, "JKS"),
    _listener("ssl.keystore.location", TYPE_STRING, None),
    _listener("ssl.keystore.password", TYPE_PASSWORD, None, sensitive=True),
    _listener("ssl.key.password", TYPE_PASSWORD, None, sensitive=True),
    _listener("ssl.truststore.type", TYPE_STRING, "JKS"),
    _listener("ssl.truststore.location", TYPE_STRING, None),
    _listener("ssl.truststore.password", TYPE_PASSWORD, None, sensitive=True),
    _listener("ssl.keymanager.algorithm", TYPE_STRING, "SunX509"),
    _listener("ssl.trustmanager.algorithm", TYPE_STRING, "PKIX"),
    _listener("ssl.endpoint.identification.algorithm", TYPE_STRING, "https"),
    _listener("ssl.secure.random.implementation", TYPE_STRING, None),
    _listener("ssl.client.auth", TYPE_STRING, "none", choices=("required", "requested", "none")),
    _listener("ssl.engine.factory.class", TYPE_CLASS, None),
    _listener("ssl.keystore.certificate.chain", TYPE_PASSWORD, None, sensitive=True),
    _listener("ssl.keystore.key", TYPE_PASSWORD, None, sensitive=True),
    _listener("ssl.truststore.certificates", TYPE_PASSWORD, None, sensitive=True),
    # DynamicListenerConfig: SASL
    _listener("sasl.mechanism.inter.broker.protocol", TYPE_STRING, "GSSAPI"),
    _listener("sasl.jaas.config", TYPE_PASSWORD, None, sensitive=True),
    _listener("sasl.enabled.mechanisms", TYPE_LIST, "GSSAPI"),
    _listener("sasl.kerberos.service.name", TYPE_STRING, None),
    _listener("sasl.kerberos.kinit.cmd", TYPE_STRING, "/usr/bin/kinit"),
    _listener("sasl.kerberos.ticket.renew.window.factor", TYPE_DOUBLE, "0.8"),
    _listener("sasl.kerberos.ticket.renew.jitter", TYPE_DOUBLE, "0.05"),
    _listener("sasl.kerberos.min.time.before.relogin", TYPE_LONG, "60000"),
    _listener("sasl.kerberos.principal.to.local.rules", TYPE_LIST, "DEFAULT"),
    _listener("sasl.login.refresh.window.factor", TYPE_DOUBLE, "0.8", at_least=0.5, at_most=1.0),
    _listener("sasl.login.refresh.window.jitter", TYPE_DOUBLE, "0.05", at_least=0.0, at_most=0.25),
    _listener("sasl.login.refresh.min.period.seconds", TYPE_SHORT, "60", at_least=0, at_most=900),
    _listener("sasl.login.refresh.buffer.seconds", TYPE_SHORT, "300", at_least=0, at_most=3600),
    # SocketServer.ReconfigurableConfigs and the network threads (cluster-wide allowed)
    _int("max.connections", INT32_MAX, at_least=0),
    _int("max.connection.creation.rate", INT32_MAX, at_least=0),
    _int("num.network.threads", 3, at_least=1),
    _int("max.connections.per.ip", INT32_MAX, at_least=0),
    DynamicKey(name="max.connections.per.ip.overrides", config_type=TYPE_STRING, default=""),
    # DynamicProducerStateManagerConfig
    _int("producer.id.expiration.ms", 86400000, at_least=1),
    DynamicKey(name="transaction.partition.verification.enable", config_type=TYPE_BOOLEAN, default="true"),
    # DynamicRemoteLogConfig
    _long("remote.log.index.file.cache.total.size.bytes", 1073741824, at_least=1),
    _int("remote.fetch.max.wait.ms", 500, at_least=1),
    _long("remote.log.manager.copy.max.bytes.per.second", LONG_MAX, at_least=1),
    _long("remote.log.manager.fetch.max.bytes.per.second", LONG_MAX, at_least=1),
    # DynamicConfig.Broker: QuotaConfigs.brokerQuotaConfigs
    _long("leader.replication.throttled.rate", LONG_MAX, at_least=0),
    _long("follower.replication.throttled.rate", LONG_MAX, at_least=0),
    _long("replica.alter.log.dirs.io.max.bytes.per.second", LONG_MAX, at_least=0),
)

#: The dynamic broker configs that are not broker synonyms of topic configs, by name.
OTHER_DYNAMIC: Mapping[str, DynamicKey] = {k.name: k for k in _KEYS}

#: The broker synonyms of topic configs Kafka updates dynamically (``DynamicLogConfig``): the
#: first synonym of each topic config only (``ServerTopicConfigSynonyms.TOPIC_CONFIG_SYNONYMS``),
#: so ``log.retention.ms`` is dynamic and ``log.retention.hours`` / ``.minutes`` are not
#: (``DynamicBrokerConfigTest.testLogRetentionTimeMinutesIsNotDynamicallyReconfigurable``).
LOG_SYNONYMS: frozenset[str] = (
    frozenset(spec.synonyms[0][0] for spec in TOPIC_CONFIGS.values() if spec.synonyms) - _NOT_SYNONYMS
)

#: Every broker config name AlterConfigs may set on the broker resource.
DYNAMIC_NAMES: frozenset[str] = LOG_SYNONYMS | frozenset(OTHER_DYNAMIC)

_KAFKA_DEFAULTS = BrokerConfig()


def is_dynamic(name: str) -> bool:
    return name in DYNAMIC_NAMES or listener_base(name) is not None


def listener_base(name: str) -> str | None:
    """``<config>`` of ``listener.name.<listener>.<config>`` (Kafka's ListenerConfigRegex), else None."""
    if not name.startswith("listener.name."):
        return None
    rest = name[len("listener.name.") :]
    _listener, dot, base = rest.partition(".")
    return base if dot and base else None


def known(name: str) -> bool:
    """A broker config name Kafka defines (static or dynamic) or a listener-prefixed one."""
    return (
        name in DYNAMIC_NAMES
        or name in BROKER_SYNONYMS
        or name in PROPERTIES
        or name in KAFKA_BROKER_CONFIG_NAMES
        or listener_base(name) is not None
    )


def config_type(name: str) -> int:
    """The DescribeConfigs type of a dynamic config (STRING for a listener-prefixed unknown one)."""
    key = OTHER_DYNAMIC.get(listener_base(name) or name)
    if key is not None:
        return key.config_type
    synonym = BROKER_SYNONYMS.get(name)
    if synonym is not None:
        return TOPIC_CONFIGS[synonym[0]].config_type
    return TYPE_STRING


def is_list(name: str) -> bool:
    return config_type(name) == TYPE_LIST


def sensitive(name: str) -> bool:
    """A password config (Kafka's DynamicBrokerConfig.isPasswordConfig matches by suffix)."""
    return any(name.endswith(k.name) for k in _KEYS if k.sensitive)


def default(name: str) -> str | None:
    """Kafka's default of a dynamic config (None where it has none, or for a listener override)."""
    key = OTHER_DYNAMIC.get(name)
    if key is not None:
        return key.default
    synonym = BROKER_SYNONYMS.get(name)
    if synonym is not None and synonym[1] == 1:
        return TOPIC_CONFIGS[synonym[0]].default(_KAFKA_DEFAULTS)
    return None


def _kafka_set(names: list[str] | set[str]) -> str:
    return "Set(" + ", ".join(sorted(names)) + ")"


def _check_value(name: str, value: str) -> str | None:
    """Kafka's ConfigDef.parse of one value: None if it parses and is in range, else the message."""
    synonym = BROKER_SYNONYMS.get(name)
    if synonym is not None:
        spec = TOPIC_CONFIGS[synonym[0]]
        try:
            ok = spec.check(broker_value_as_topic_value(name, value))
        except ValueError:
            ok = False
        return None if ok else f"Invalid value {value} for configuration {name}: expected {spec.expectation}"
    key = OTHER_DYNAMIC.get(name)
    if key is None:
        return None
    text = value.strip()
    number: float
    if key.config_type in (TYPE_INT, TYPE_LONG, TYPE_SHORT):
        bound = {TYPE_INT: INT32_MAX, TYPE_LONG: LONG_MAX, TYPE_SHORT: _SHORT_MAX}[key.config_type]
        kind = {TYPE_INT: "INT", TYPE_LONG: "LONG", TYPE_SHORT: "SHORT"}[key.config_type]
        try:
            number = int(text)
        except ValueError:
            return f"Invalid value {value} for configuration {name}: Not a number of type {kind}"
        if not -bound - 1 <= number <= bound:
            return f"Invalid value {value} for configuration {name}: Not a number of type {kind}"
    elif key.config_type == TYPE_DOUBLE:
        try:
            number = float(text)
        except ValueError:
            return f"Invalid value {value} for configuration {name}: Not a number of type DOUBLE"
        if math.isnan(number):
            return f"Invalid value {value} for configuration {name}: Not a number of type DOUBLE"
    elif key.config_type == TYPE_BOOLEAN:
        if text.lower() not in ("true", "false"):
            return (
                f"Invalid value {value} for configuration {name}: Expected value to be either true or false"
            )
        return None
    else:
        if key.choices and text not in key.choices:
            allowed = ", ".join(key.choices)
            return f"Invalid value {value} for configuration {name}: String must be one of: {allowed}"
        return None
    if key.at_least is not None and number < key.at_least:
        if key.at_most is not None:
            return (
                f"Invalid value {value} for configuration {name}: "
                f"Value must be no less than {_num(key.at_least)}"
            )
        return f"Invalid value {value} for configuration {name}: Value must be at least {_num(key.at_least)}"
    if key.at_most is not None and number > key.at_most:
        return (
            f"Invalid value {value} for configuration {name}: Value must be no more than {_num(key.at_most)}"
        )
    return None


def _num(bound: float) -> str:
    """A bound as Kafka prints it: ``0`` for an integer bound, ``0.5`` for a double one."""
    return str(bound)


def validate(
    props: Mapping[str, str],
    *,
    per_broker: bool,
    current: Callable[[str], str | None],
    shadowed: frozenset[str] = frozenset(),
) -> None:
    """Kafka's ``DynamicBrokerConfig.validate`` of one level's complete new configs.

    ``current(name)`` is the value in force now (for the thread-pool bounds); ``shadowed`` are
    names whose new value would not take effect (a cluster-wide value this node overrides). Raises
    :class:`DynamicConfigError` with Kafka's message."""
    static = {n for n in props if not is_dynamic(n) and known(n)}
    if static:
        raise DynamicConfigError(f"Cannot update these configs dynamically: {_kafka_set(static)}")
    bare_ssl = {n for n in props if n in SSL_LISTENER_ONLY}
    if bare_ssl:
        raise DynamicConfigError(
            "These security configs can be dynamically updated only per-listener using the listener prefix: "
            + _kafka_set(bare_ssl)
        )
    for name, value in props.items():
        # A listener override is checked as its base config (validateConfigTypes).
        message = _check_value(listener_base(name) or name, value)
        if message is not None:
            raise DynamicConfigError(message)
    if not per_broker:
        per = {n for n in props if (OTHER_DYNAMIC.get(n) is not None and OTHER_DYNAMIC[n].per_broker)}
        per |= {
            n for n in props if (base := listener_base(n)) is not None and base not in _CLUSTER_LEVEL_LISTENER
        }
        if per:
            raise DynamicConfigError(
                "Cannot update these configs at default cluster level, broker id must be specified: "
                + _kafka_set(per)
            )
    for name in sorted((THREAD_POOLS & set(props)) - shadowed):
        new, old_text = int(props[name].strip()), current(name)
        old = int(old_text) if old_text is not None else new
        if new == old:
            continue
        prefix = f"Dynamic thread count update validation failed for {name}={props[name]}"
        if new <= 0:
            raise DynamicConfigError(f"{prefix}, value should be at least 1")
        if new < old // 2:
            raise DynamicConfigError(f"{prefix}, value should be at least half the current value {old}")
        if new > old * 2:
            raise DynamicConfigError(
                f"{prefix}, value should not be greater than double the current value {old}"
            )
