"""AlterConfigs (key 33) and IncrementalAlterConfigs (key 44): topic configs and this broker's
dynamic configs; IncrementalAlterConfigs also takes a consumer group's configs (resource type 32,
``groupcoord.broker.group_configs``).

Topics (resource type 2) take every topic config Kafka defines (:data:`TOPIC_CONFIGS`); the
overrides are kept in ``__topics.json`` and the topic's partitions act on them at once
(retention, cleanup.policy, segment size and roll time, max.message.bytes, ...).

The broker (resource type 4) takes, at run time, the broker configs Kafka updates dynamically
(:mod:`groupcoord.broker.dynamic_config`, after Kafka's ``DynamicBrokerConfig``): resource name
``""`` sets the cluster-wide defaults (DYNAMIC_DEFAULT_BROKER_CONFIG), this node's id sets its own
(DYNAMIC_BROKER_CONFIG, which wins); the per-broker ones (listener, SSL, SASL configs) only by id.
They are kept in ``__topics.json`` and survive restarts. The broker synonyms of topic configs
(``log.retention.ms``, ``log.segment.bytes``, ``log.cleanup.policy``, ``message.max.bytes`` ...)
apply at once to every topic without its own override; the others are stored and described but
change nothing on one Python broker (docs/operations.md).

Error codes as Kafka's ``ConfigAdminManager`` / ``ConfigurationControlManager`` answer them:
unknown topic UNKNOWN_TOPIC_OR_PARTITION; unknown topic config name or bad topic value
INVALID_CONFIG; APPEND/SUBTRACT on a config that is not a list INVALID_CONFIG; a broker config
that cannot change at run time, a bad broker value, a null value in AlterConfigs, a repeated
config name or another broker's id INVALID_REQUEST. One difference: Kafka stores broker config
names it does not know as custom configs; groupcoord refuses them with INVALID_CONFIG (a typo
would otherwise be stored silently).
"""

from __future__ import annotations

import difflib
import logging
from collections.abc import Mapping
from typing import Any

from groupcoord.broker import dynamic_config, group_configs
from groupcoord.broker.dynamic_config import DynamicConfigError
from groupcoord.broker.state import Broker
from groupcoord.config import PROPERTIES
from groupcoord.errors import ErrorCode
from groupcoord.handling import RequestContext
from groupcoord.protocol.entities import NO_THROTTLE, child, err, make
from groupcoord.storage.log_config import (
    TOPIC_CONFIGS,
    InvalidConfigError,
    list_config,
    validate_topic_configs,
)

log = logging.getLogger(__name__)

RESOURCE_TOPIC = 2
RESOURCE_BROKER = 4

OP_SET, OP_DELETE, OP_APPEND, OP_SUBTRACT = 0, 1, 2, 3
_OP_NAMES = {OP_APPEND: "APPEND", OP_SUBTRACT: "SUBTRACT"}


class _Fail(Exception):
    def __init__(self, code: ErrorCode, message: str) -> None:
        super().__init__(message)
        self.code = code
        self.message = message


def _incremental(
    current: Mapping[str, str],
    ops: list[tuple[str, int, str | None]],
    *,
    is_list: Any,
    default_of: Any,
    not_list: Any,
) -> dict[str, str]:
    """``current`` with IncrementalAlterConfigs operations applied (Kafka's
    ``ConfigurationControlManager.incrementalAlterConfigResource`` for topics,
    ``ConfigAdminManager.prepareIncrementalConfigs`` for the broker); ``not_list(name, op)`` is
    the message for APPEND/SUBTRACT on a config that is not a list."""
    out = dict(current)
    for name, op, value in ops:
        if op == OP_SET:
            if value is None:
                raise _Fail(ErrorCode.INVALID_REQUEST, f"Null value not supported for : {name}")
            out[name] = value
        elif op == OP_DELETE:
            out.pop(name, None)
        elif op in (OP_APPEND, OP_SUBTRACT):
            if not is_list(name):
                raise _Fail(ErrorCode.INVALID_CONFIG, not_list(name, op))
            old = out[name] if name in out else default_of(name)
            items = [item.strip() for item in (old or "").split(",") if item.strip()]
            for item in (value or "").split(","):
                item = item.strip()
                if op == OP_APPEND and item and item not in items:
                    items.append(item)
                elif op == OP_SUBTRACT and item in items:
                    items.remove(item)
            out[name] = ",".join(items)
        else:
            raise _Fail(ErrorCode.INVALID_REQUEST, f"Unknown alter config operation {op} for {name}")
    return out


def _topic_not_list(name: str, op: int) -> str:
    return f"Can't {_OP_NAMES[op]} to key {name} because its type is not LIST."


def _broker_not_list(name: str, op: int) -> str:
    if not dynamic_config.known(name):
        return f"Unknown config name: {name}"
    return f"Config value {_OP_NAMES[op].lower()} is not allowed for config key: {name}"


def _repeated_resources(resources: Any) -> set[tuple[int, str]]:
    """(type, name) of the resources a request names more than once: each of them is refused
    with INVALID_REQUEST (ConfigAdminManager.preprocess)."""
    seen: set[tuple[int, str]] = set()
    repeated: set[tuple[int, str]] = set()
    for res in resources:
        key = (int(res.resource_type), res.resource_name)
        (repeated if key in seen else seen).add(key)
    return repeated


def _check_duplicates(names: list[str]) -> None:
    if len(set(names)) != len(names):
        raise _Fail(ErrorCode.INVALID_REQUEST, "Error due to duplicate config keys")


# -- topics ------------------------------------------------------------------------------------


def _topic_default(broker: Broker, name: str) -> str | None:
    spec = TOPIC_CONFIGS.get(name)
    if spec is None:
        return None
    dynamic = broker.logs.dynamic_topic_defaults().get(name)
    return dynamic.value if dynamic is not None else spec.default(broker.config)


def _alter_topic(broker: Broker, name: str, new: dict[str, str], validate_only: bool) -> None:
    meta = broker.logs.topics_view.get(name)
    if meta is None:
        raise _Fail(ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, f"The topic '{name}' does not exist.")
    bad = validate_topic_configs(new)
    if bad is not None:
        raise _Fail(ErrorCode.INVALID_CONFIG, bad[1])
    try:
        broker.logs.default_config.with_overrides(new)
    except InvalidConfigError as exc:
        raise _Fail(ErrorCode.INVALID_CONFIG, exc.message or str(exc)) from None
    if validate_only:
        return
    if dict(meta.configs) != new:
        broker.logs.alter_topic_configs(name, new)
        log.info("topic %s configs now %s", name, new)


def _topic_current(broker: Broker, name: str) -> dict[str, str]:
    meta = broker.logs.topics_view.get(name)
    if meta is None:
        raise _Fail(ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, f"The topic '{name}' does not exist.")
    return dict(meta.configs)


# -- the broker --------------------------------------------------------------------------------


def _broker_level(broker: Broker, name: str) -> bool:
    """True for this node's own configs (its id), False for the cluster-wide defaults ("").
    With several brokers in one process every node's id names the one broker config they share
    (docs/cluster.md)."""
    if name == "":
        return False
    try:
        node = int(name)
    except ValueError:
        raise _Fail(ErrorCode.INVALID_REQUEST, f"Node id must be an integer, but it is: {name}") from None
    if broker.cluster is not None and node in broker.cluster.node_ids:
        return True
    if node != broker.node_id:
        raise _Fail(
            ErrorCode.INVALID_REQUEST, f"Unexpected broker id, expected {broker.node_id}, but received {name}"
        )
    return True


def _check_broker_names(names: list[str]) -> None:
    """groupcoord's one difference from Kafka: a name Kafka does not define is refused with
    INVALID_CONFIG (Kafka would store it as a custom config; a typo would pass silently)."""
    unknown = [n for n in names if not dynamic_config.known(n)]
    if unknown:
        name = unknown[0]
        close = difflib.get_close_matches(name, sorted(dynamic_config.DYNAMIC_NAMES), n=1)
        hint = f" (did you mean '{close[0]}'?)" if close else ""
        raise _Fail(ErrorCode.INVALID_CONFIG, f"Unknown broker config name: {name}{hint}")


def _in_force(broker: Broker, name: str, levels: tuple[bool, ...]) -> str | None:
    """The value of a broker config from the first of the dynamic ``levels`` (True: this
    node's, False: the cluster-wide one) that has it, else the config file's, else Kafka's
    default."""
    for level in levels:
        stored = broker.logs.broker_configs(per_broker=level)
        if name in stored:
            return stored[name]
    if name in PROPERTIES:
        value = broker.config.get(name)
        return None if value is None else str(value)
    return dynamic_config.default(name)


def _broker_current(broker: Broker, name: str) -> str | None:
    """The value of a broker config in force now: this node's dynamic one, the cluster-wide
    one, the config file's, else Kafka's default."""
    return _in_force(broker, name, (True, False))


def _alter_broker(broker: Broker, per_broker: bool, new: dict[str, str], validate_only: bool) -> None:
    """Replace one level's dynamic broker configs with ``new``, checked as Kafka's
    ``DynamicBrokerConfig.validate`` checks them (every failure INVALID_REQUEST)."""
    _check_broker_names(list(new))
    # A cluster-wide value this node overrides changes nothing in force (Kafka compares the
    # resulting config): the thread-pool bounds apply only to the values that would take effect.
    shadowed = set(broker.logs.broker_configs(per_broker=True)) if not per_broker else set()
    try:
        dynamic_config.validate(
            new,
            per_broker=per_broker,
            current=lambda n: _broker_current(broker, n),
            shadowed=frozenset(shadowed),
        )
    except DynamicConfigError as exc:
        raise _Fail(ErrorCode.INVALID_REQUEST, str(exc)) from None
    current = dict(broker.logs.broker_configs(per_broker=per_broker))
    if current == new or validate_only:
        return
    try:
        broker.logs.alter_broker_configs(new, per_broker=per_broker)
    except InvalidConfigError as exc:
        raise _Fail(ErrorCode.INVALID_REQUEST, exc.message or str(exc)) from None


def _broker_default(broker: Broker, per_broker: bool, name: str) -> str | None:
    """What APPEND / SUBTRACT start from when the level has no value: the value in force
    below it (for this node's level, the cluster-wide one first)."""
    return _in_force(broker, name, (False,) if per_broker else ())


# -- groups ------------------------------------------------------------------------------------


def _alter_group(
    broker: Broker, group_id: str, ops: list[tuple[str, int, str | None]], validate_only: bool
) -> None:
    """IncrementalAlterConfigs of a GROUP resource (``groupcoord.broker.group_configs``)."""
    current = dict(broker.logs.group_configs().get(group_id, {}))
    new = _incremental(
        current,
        ops,
        is_list=lambda _n: False,
        default_of=lambda _n: None,
        not_list=lambda n, op: f"Can't {_OP_NAMES[op]} to key {n} because its type is not LIST.",
    )
    try:
        group_configs.validate(broker.config, new)
    except group_configs.GroupConfigError as exc:
        raise _Fail(ErrorCode.INVALID_CONFIG, str(exc)) from None
    if validate_only or new == current:
        return
    broker.logs.alter_group_configs(group_id, new)
    log.info("group %s configs now %s", group_id, new)


# -- handlers ----------------------------------------------------------------------------------


def _response(broker: Broker, ctx: RequestContext, results: list[tuple[Any, ErrorCode, str | None]]) -> Any:
    resp_t = broker.registry.lookup(ctx.api_key, ctx.api_version).response_type
    entry_t = child(resp_t, "responses")
    return make(
        resp_t,
        throttle_time=NO_THROTTLE,
        responses=tuple(
            make(
                entry_t,
                error_code=err(code),
                error_message=message,
                resource_type=int(res.resource_type),
                resource_name=res.resource_name,
            )
            for res, code, message in results
        ),
    )


def _outcome(fn: Any) -> tuple[ErrorCode, str | None]:
    try:
        fn()
    except _Fail as fail:
        return fail.code, fail.message
    return ErrorCode.NONE, None


def alter_configs(broker: Broker, ctx: RequestContext, request: Any) -> Any:
    """AlterConfigs v0-2: each resource's configs are replaced by the ones given."""
    validate_only = bool(request.validate_only)
    repeated = _repeated_resources(request.resources)
    results: list[tuple[Any, ErrorCode, str | None]] = []
    for res in request.resources:
        rtype, name = int(res.resource_type), res.resource_name
        configs = list(res.configs)
        if (rtype, name) in repeated:
            results.append((res, ErrorCode.INVALID_REQUEST, "Each resource must appear at most once."))
            continue

        def run(rtype: int = rtype, name: str = name, configs: list[Any] = configs) -> None:
            _check_duplicates([c.name for c in configs])
            nulls = [c.name for c in configs if c.value is None]
            if nulls:
                raise _Fail(ErrorCode.INVALID_REQUEST, f"Null value not supported for : {', '.join(nulls)}")
            new = {c.name: c.value for c in configs}
            if rtype == RESOURCE_TOPIC:
                _topic_current(broker, name)
                _alter_topic(broker, name, new, validate_only)
            elif rtype == RESOURCE_BROKER:
                _alter_broker(broker, _broker_level(broker, name), new, validate_only)
            else:
                raise _Fail(ErrorCode.INVALID_REQUEST, f"Unknown resource type {rtype}")

        code, message = _outcome(run)
        results.append((res, code, message))
    return _response(broker, ctx, results)


def incremental_alter_configs(broker: Broker, ctx: RequestContext, request: Any) -> Any:
    """IncrementalAlterConfigs v0-1: SET, DELETE, APPEND and SUBTRACT per config."""
    validate_only = bool(request.validate_only)
    repeated = _repeated_resources(request.resources)
    results: list[tuple[Any, ErrorCode, str | None]] = []
    for res in request.resources:
        rtype, name = int(res.resource_type), res.resource_name
        ops = [(c.name, int(c.config_operation), c.value) for c in res.configs]
        if (rtype, name) in repeated:
            results.append((res, ErrorCode.INVALID_REQUEST, "Each resource must appear at most once."))
            continue

        def run(rtype: int = rtype, name: str = name, ops: list[tuple[str, int, str | None]] = ops) -> None:
            _check_duplicates([n for n, _op, _v in ops])
            nulls = [n for n, op, v in ops if op != OP_DELETE and v is None]
            if nulls:
                raise _Fail(ErrorCode.INVALID_REQUEST, f"Null value not supported for : {', '.join(nulls)}")
            if rtype == RESOURCE_TOPIC:
                current = _topic_current(broker, name)
                new = _incremental(
                    current,
                    ops,
                    is_list=list_config,
                    default_of=lambda n: _topic_default(broker, n),
                    not_list=_topic_not_list,
                )
                _alter_topic(broker, name, new, validate_only)
            elif rtype == group_configs.RESOURCE_GROUP:
                _alter_group(broker, name, ops, validate_only)
            elif rtype == RESOURCE_BROKER:
                per_broker = _broker_level(broker, name)
                _check_broker_names([n for n, op, _v in ops if op != OP_DELETE])
                current = dict(broker.logs.broker_configs(per_broker=per_broker))
                new = _incremental(
                    current,
                    ops,
                    is_list=dynamic_config.is_list,
                    default_of=lambda n: _broker_default(broker, per_broker, n),
                    not_list=_broker_not_list,
                )
                _alter_broker(broker, per_broker, new, validate_only)
            else:
                raise _Fail(ErrorCode.INVALID_REQUEST, f"Unknown resource type {rtype}")

        code, message = _outcome(run)
        results.append((res, code, message))
    return _response(broker, ctx, results)
