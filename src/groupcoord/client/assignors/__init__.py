"""Partition assignors of the consumer protocol: range, roundrobin, sticky, cooperative-sticky.

The interface and its values are in :mod:`groupcoord.client.assignors.base`.

``partition.assignment.strategy`` is parsed by :func:`parse_strategies`: a comma-separated
list (or a list) of names as librdkafka spells them (``range``, ``roundrobin``, ``sticky``,
``cooperative-sticky``), or Kafka's Java class names
(``org.apache.kafka.clients.consumer.RangeAssignor`` ...), or :class:`Assignor` objects for
custom assignors. The default is the Java client's: ``range,cooperative-sticky``.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable

from groupcoord.client.assignors.base import (
    Assignment,
    Assignor,
    BaseAssignor,
    RebalanceProtocol,
    Subscription,
    assignment_from_bytes,
    assignment_to_bytes,
    select_rebalance_protocol,
    subscription_from_bytes,
    subscription_to_bytes,
    validate_cooperative_assignment,
)
from groupcoord.client.assignors.range import RangeAssignor
from groupcoord.client.assignors.roundrobin import RoundRobinAssignor
from groupcoord.client.assignors.sticky import CooperativeStickyAssignor, StickyAssignor
from groupcoord.client.errors import ConfigError

__all__ = [
    "DEFAULT_STRATEGY",
    "Assignment",
    "Assignor",
    "BaseAssignor",
    "CooperativeStickyAssignor",
    "RangeAssignor",
    "RebalanceProtocol",
    "RoundRobinAssignor",
    "StickyAssignor",
    "Subscription",
    "assignment_from_bytes",
    "assignment_to_bytes",
    "get_assignor",
    "parse_strategies",
    "select_rebalance_protocol",
    "subscription_from_bytes",
    "subscription_to_bytes",
    "validate_cooperative_assignment",
]

DEFAULT_STRATEGY = "range,cooperative-sticky"
"""Kafka's Java default ``partition.assignment.strategy`` (``ConsumerConfig``): runs EAGER."""

_BUILT_IN: dict[str, Callable[[], Assignor]] = {
    "range": RangeAssignor,
    "roundrobin": RoundRobinAssignor,
    "sticky": StickyAssignor,
    "cooperative-sticky": CooperativeStickyAssignor,
}
_JAVA_CLASS_NAMES = {
    "org.apache.kafka.clients.consumer.RangeAssignor": "range",
    "org.apache.kafka.clients.consumer.RoundRobinAssignor": "roundrobin",
    "org.apache.kafka.clients.consumer.StickyAssignor": "sticky",
    "org.apache.kafka.clients.consumer.CooperativeStickyAssignor": "cooperative-sticky",
}
_KEY = "partition.assignment.strategy"


def get_assignor(name: str) -> Assignor:
    """A new instance of the built-in assignor ``name`` (librdkafka name or Java class name).

    An unknown name raises :class:`ConfigError` naming it and the known names.
    """
    key = name.strip()
    key = _JAVA_CLASS_NAMES.get(key, key)
    factory = _BUILT_IN.get(key)
    if factory is None:
        known = ", ".join(_BUILT_IN)
        raise ConfigError(f"{_KEY}: unknown assignor {name!r} (known: {known})")
    return factory()


def parse_strategies(value: str | Iterable[str | Assignor] = DEFAULT_STRATEGY) -> list[Assignor]:
    """The configured assignors, in preference order (the JoinGroup protocols' order).

    ``value`` is a comma-separated string or a list of names and/or :class:`Assignor` objects.
    Empty, duplicate names, or an object that is not an assignor raise :class:`ConfigError`.
    """
    items: list[str | Assignor] = (
        [part for part in value.split(",") if part.strip()] if isinstance(value, str) else list(value)
    )
    assignors: list[Assignor] = []
    for item in items:
        if isinstance(item, str):
            assignors.append(get_assignor(item))
        elif isinstance(item, Assignor) and isinstance(getattr(item, "name", None), str) and item.name:
            assignors.append(item)
        else:
            raise ConfigError(f"{_KEY}: {item!r} is neither an assignor name nor an Assignor with a name")
    if not assignors:
        raise ConfigError(f"{_KEY}: no assignor configured")
    names = [a.name for a in assignors]
    duplicates = sorted({n for n in names if names.count(n) > 1})
    if duplicates:
        raise ConfigError(f"{_KEY}: assignor {duplicates[0]!r} listed more than once")
    return assignors
