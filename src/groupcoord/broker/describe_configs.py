"""DescribeConfigs (key 32) for topics (resource type 2), this broker (resource type 4) and
consumer groups (resource type 32, ``groupcoord.broker.group_configs``).

A topic's configs are its overrides (DYNAMIC_TOPIC_CONFIG), else the dynamic broker configs
AlterConfigs set (DYNAMIC_BROKER_CONFIG for this node's id, DYNAMIC_DEFAULT_BROKER_CONFIG for the
cluster-wide ""), else the config file (STATIC_BROKER_CONFIG), else Kafka's default
(DEFAULT_CONFIG); ``include_synonyms`` lists every level that has a value, highest first.
"""

from __future__ import annotations

from typing import Any

from groupcoord.broker import dynamic_config, group_configs
from groupcoord.broker.state import Broker
from groupcoord.config import PROPERTIES, BrokerConfig
from groupcoord.config.listeners import is_sensitive
from groupcoord.errors import ErrorCode
from groupcoord.handling import RequestContext
from groupcoord.protocol.entities import NO_THROTTLE, child, err, has_field, make
from groupcoord.storage.log_config import (
    BROKER_SYNONYMS,
    SOURCE_DEFAULT,
    SOURCE_DYNAMIC_BROKER,
    SOURCE_DYNAMIC_DEFAULT_BROKER,
    SOURCE_STATIC_BROKER,
    TOPIC_CONFIGS,
    TYPE_BOOLEAN,
    TYPE_INT,
    TYPE_LONG,
    TYPE_STRING,
    ConfigEntry,
    ConfigSynonym,
    describe_topic_configs,
)

RESOURCE_TOPIC = 2
RESOURCE_BROKER = 4


def _text(value: object) -> str | None:
    if value is None:
        return None
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)


def _broker_type(name: str, value: object) -> int:
    if dynamic_config.is_dynamic(name) and name not in BROKER_SYNONYMS:
        return dynamic_config.config_type(name)
    if isinstance(value, bool):
        return TYPE_BOOLEAN
    if isinstance(value, int):
        return TYPE_LONG if name.endswith((".ms", ".bytes", ".messages")) else TYPE_INT
    synonym = BROKER_SYNONYMS.get(name)
    if synonym is not None:
        return TOPIC_CONFIGS[synonym[0]].config_type
    return TYPE_STRING


def _broker_entries(broker: Broker, *, per_broker: bool) -> list[ConfigEntry]:
    """This node's configs (``per_broker``): every property with its value and source, the
    dynamic ones first; else (resource name "") only the cluster-wide dynamic defaults, as
    Kafka lists them."""
    config: BrokerConfig = broker.config
    node = broker.logs.broker_configs(per_broker=True)
    default = broker.logs.broker_configs(per_broker=False)
    out = []
    if not per_broker:
        for name in sorted(default):
            value = None if dynamic_config.sensitive(name) else default[name]
            out.append(
                ConfigEntry(
                    name=name,
                    value=value,
                    source=SOURCE_DYNAMIC_DEFAULT_BROKER,
                    config_type=_broker_type(name, None),
                    read_only=False,
                    is_sensitive=dynamic_config.sensitive(name),
                    synonyms=(ConfigSynonym(name=name, value=value, source=SOURCE_DYNAMIC_DEFAULT_BROKER),),
                )
            )
        return out
    for name in sorted({*PROPERTIES, *BROKER_SYNONYMS, *dynamic_config.OTHER_DYNAMIC, *node, *default}):
        static = config.get(name) if name in PROPERTIES else None
        synonyms: list[ConfigSynonym] = []
        if name in node:
            synonyms.append(ConfigSynonym(name=name, value=node[name], source=SOURCE_DYNAMIC_BROKER))
        if name in default:
            synonyms.append(
                ConfigSynonym(name=name, value=default[name], source=SOURCE_DYNAMIC_DEFAULT_BROKER)
            )
        if name in config.explicit:
            synonyms.append(ConfigSynonym(name=name, value=_text(static), source=SOURCE_STATIC_BROKER))
        if name in PROPERTIES:
            synonyms.append(
                ConfigSynonym(name=name, value=_text(_KAFKA_DEFAULTS.get(name)), source=SOURCE_DEFAULT)
            )
        elif name in BROKER_SYNONYMS:  # a dynamic Kafka config groupcoord has no property for
            synonyms.append(ConfigSynonym(name=name, value=_synonym_default(name), source=SOURCE_DEFAULT))
        elif name in dynamic_config.OTHER_DYNAMIC:
            synonyms.append(
                ConfigSynonym(name=name, value=dynamic_config.default(name), source=SOURCE_DEFAULT)
            )
        hidden = dynamic_config.sensitive(name)
        if hidden:
            synonyms = [ConfigSynonym(name=s.name, value=None, source=s.source) for s in synonyms]
        first = synonyms[0]
        out.append(
            ConfigEntry(
                name=name,
                value=first.value,
                source=first.source,
                config_type=_broker_type(name, static),
                read_only=not dynamic_config.is_dynamic(name),
                is_sensitive=hidden,
                synonyms=tuple(synonyms),
            )
        )
    out.extend(_security_entries(config))
    return out


#: Kafka's ``ConfigType.PASSWORD`` (DescribeConfigs v3+ ``config_type``)
TYPE_PASSWORD = 9


def _security_entries(config: BrokerConfig) -> list[ConfigEntry]:
    """The security keys the config file set (``ssl.*``, ``sasl.*``, ``listener.name.*`` ...):
    a secret (Kafka's PASSWORD type) is answered with a null value and ``is_sensitive``, as
    Kafka's ``ConfigHelper.createBrokerConfigEntry`` does; the others with their value."""
    out = []
    for name, raw in config.security:
        sensitive = is_sensitive(name)
        value = None if sensitive else raw
        out.append(
            ConfigEntry(
                name=name,
                value=value,
                source=SOURCE_STATIC_BROKER,
                config_type=TYPE_PASSWORD if sensitive else TYPE_STRING,
                read_only=True,
                is_sensitive=sensitive,
                synonyms=(ConfigSynonym(name=name, value=value, source=SOURCE_STATIC_BROKER),),
            )
        )
    return out


_KAFKA_DEFAULTS = BrokerConfig()


def _synonym_default(name: str) -> str | None:
    """Kafka's default of a broker synonym of a topic config, from the topic config's default
    (None where the units differ: ``log.roll.jitter.hours``)."""
    topic, factor = BROKER_SYNONYMS[name]
    return TOPIC_CONFIGS[topic].default(_KAFKA_DEFAULTS) if factor == 1 else None


def handle(broker: Broker, ctx: RequestContext, request: Any) -> Any:
    messages = broker.registry.lookup(ctx.api_key, ctx.api_version)
    resp_t = messages.response_type
    result_t = child(resp_t, "results")
    config_t = child(result_t, "configs")
    include_synonyms = bool(getattr(request, "include_synonyms", False))
    results = []
    for res in request.resources:
        rtype = int(res.resource_type)
        name = res.resource_name
        code, message = ErrorCode.NONE, None
        entries: list[ConfigEntry] = []
        if rtype == RESOURCE_TOPIC:
            meta = broker.logs.topics_view.get(name)
            if meta is None:
                code, message = ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, f"Topic {name} does not exist."
            else:
                entries = describe_topic_configs(
                    broker.config, meta.configs, broker.logs.dynamic_topic_defaults()
                )
        elif rtype == group_configs.RESOURCE_GROUP:
            entries = group_configs.describe(broker.config, broker.logs.group_configs().get(name, {}))
        elif rtype == RESOURCE_BROKER:
            # the node asked (several brokers in one process: the one the request came to)
            own = ctx.node_id if broker.cluster is not None else broker.node_id
            if name not in ("", str(own)):
                code, message = ErrorCode.INVALID_REQUEST, f"Unexpected broker id, expected {own}"
            else:
                entries = _broker_entries(broker, per_broker=name != "")
        else:
            code, message = ErrorCode.INVALID_REQUEST, f"Unsupported resource type {rtype}"
        keys = res.configuration_keys
        if keys:
            wanted = set(keys)
            entries = [e for e in entries if e.name in wanted]
        configs = []
        for e in entries:
            values: dict[str, Any] = {
                "name": e.name,
                "value": e.value,
                "read_only": e.read_only,
                "config_source": e.source,
                "is_sensitive": e.is_sensitive,
                "config_type": e.config_type,
                "documentation": None,
                "is_default": e.source == SOURCE_DEFAULT,
            }
            if has_field(config_t, "synonyms"):
                syn_t = child(config_t, "synonyms")
                values["synonyms"] = (
                    tuple(make(syn_t, name=s.name, value=s.value, source=s.source) for s in e.synonyms)
                    if include_synonyms
                    else ()
                )
            configs.append(make(config_t, **values))
        results.append(
            make(
                result_t,
                error_code=err(code),
                error_message=message,
                resource_type=rtype,
                resource_name=name,
                configs=tuple(configs),
            )
        )
    return make(resp_t, throttle_time=NO_THROTTLE, results=tuple(results))
