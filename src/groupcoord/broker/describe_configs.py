"""DescribeConfigs (key 32) for topics (resource type 2) and this broker (resource type 4)."""

from __future__ import annotations

from typing import Any

from groupcoord.broker.state import Broker
from groupcoord.config import PROPERTIES, BrokerConfig
from groupcoord.errors import ErrorCode
from groupcoord.handling import RequestContext
from groupcoord.protocol.entities import NO_THROTTLE, child, err, has_field, make
from groupcoord.storage.log_config import (
    SOURCE_DEFAULT,
    SOURCE_STATIC_BROKER,
    TYPE_BOOLEAN,
    TYPE_INT,
    TYPE_LONG,
    TYPE_STRING,
    ConfigEntry,
    describe_topic_configs,
)

RESOURCE_TOPIC = 2
RESOURCE_BROKER = 4


def _broker_entries(config: BrokerConfig) -> list[ConfigEntry]:
    out = []
    for name in sorted(PROPERTIES):
        value = config.get(name)
        if isinstance(value, bool):
            text: str | None = "true" if value else "false"
            ctype = TYPE_BOOLEAN
        elif isinstance(value, int):
            text = str(value)
            ctype = TYPE_LONG if name.endswith((".ms", ".bytes", ".messages")) else TYPE_INT
        else:
            text = value
            ctype = TYPE_STRING
        source = SOURCE_STATIC_BROKER if name in config.explicit else SOURCE_DEFAULT
        out.append(ConfigEntry(name=name, value=text, source=source, config_type=ctype, read_only=True))
    return out


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
            meta = broker.logs.topics().get(name)
            if meta is None:
                code, message = ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, f"Topic {name} does not exist."
            else:
                entries = describe_topic_configs(broker.config, meta.configs)
        elif rtype == RESOURCE_BROKER:
            if name not in ("", str(broker.node_id)):
                code, message = ErrorCode.INVALID_REQUEST, f"Unexpected broker id, expected {broker.node_id}"
            else:
                entries = _broker_entries(broker.config)
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
                    (make(syn_t, name=e.name, value=e.value, source=e.source),) if include_synonyms else ()
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
