"""Per-node keys for ``groupcoord serve --brokers N``: ``node.<id>.<key>`` (``docs/cluster.md``).

In a Kafka cluster each broker has its own ``server.properties``, and three of its keys are what
tells one broker from another to a client: ``listeners``, ``advertised.listeners`` and
``broker.rack``. One groupcoord process serving N brokers reads one configuration, so a node's own
value of one of those keys is written with the node's id in front, the way Kafka scopes a key to a
listener (``listener.name.<l>.<key>``)::

    listeners=PLAINTEXT://127.0.0.1:9092
    node.1.listeners=PLAINTEXT://127.0.0.1:9192
    node.1.advertised.listeners=PLAINTEXT://broker1.test:9192
    node.2.broker.rack=rack-b

A node without its own ``listeners`` serves each listener on the listener's port + its id, as
before. A node's ``listeners`` names the same listeners as ``listeners`` (every broker of a
cluster serves the same listener names, which ``listener.security.protocol.map``,
``inter.broker.listener.name`` and the ``listener.name.<l>.*`` keys refer to); its
``advertised.listeners`` names some of them.

Any other ``node.<id>.*`` key, or an id that is not a node of the process, stops startup with a
:class:`ConfigError` naming the key. ``node.id`` itself is the ordinary Kafka key.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence

from groupcoord.config.listeners import ListenerSpec, parse_listeners
from groupcoord.errors import ConfigError

#: The keys a node may have its own value of.
NODE_KEYS = ("listeners", "advertised.listeners", "broker.rack")

_NODE_KEY = re.compile(r"node\.(\d+)\.(.+)")


def is_node_key(key: str) -> bool:
    """Whether ``key`` is a per-node key (``node.<digits>.<anything>``), valid or not."""
    return _NODE_KEY.fullmatch(key) is not None


def check_node_key(key: str, raw: str) -> None:
    """:class:`ConfigError` naming ``key`` unless it is ``node.<id>.<one of NODE_KEYS>``."""
    m = _NODE_KEY.fullmatch(key)
    if m is None or m.group(2) not in NODE_KEYS:
        raise ConfigError(
            f"unknown configuration key {key!r} (value {raw!r}): a node's own keys are "
            + ", ".join(f"node.<id>.{k}" for k in NODE_KEYS)
        )


def node_of(key: str) -> tuple[int, str]:
    """``node.<id>.<name>`` -> (id, name); the key must have passed :func:`check_node_key`."""
    m = _NODE_KEY.fullmatch(key)
    assert m is not None
    return int(m.group(1)), m.group(2)


class NodeSettings:
    """The ``node.<id>.*`` keys of one configuration, checked against the nodes served."""

    def __init__(self, props: Mapping[str, str]) -> None:
        self._values: dict[int, dict[str, str]] = {}
        for key, raw in props.items():
            node, name = node_of(key)
            self._values.setdefault(node, {})[name] = raw

    def __bool__(self) -> bool:
        return bool(self._values)

    def validate(
        self,
        node_ids: Sequence[int],
        listeners: Sequence[ListenerSpec],
        protocol_map: Mapping[str, str],
        skip: frozenset[str],
    ) -> None:
        """:class:`ConfigError` naming the first bad key: a node this process does not serve
        (per-node keys need ``--brokers N``, N > 1), a node's ``listeners`` that do not name the
        same listeners as ``listeners``, an ``advertised.listeners`` naming a listener the node
        does not have."""
        for node in sorted(self._values):
            for name in sorted(self._values[node]):
                key = f"node.{node}.{name}"
                if len(node_ids) < 2:
                    raise ConfigError(
                        f"{key} is set but this process serves one broker: per-node keys need "
                        "`groupcoord serve --brokers N` with N > 1 (docs/cluster.md)"
                    )
                if node not in node_ids:
                    raise ConfigError(
                        f"{key} is set but there is no node {node} (nodes: {', '.join(map(str, node_ids))})"
                    )
            self.listeners(node, listeners, protocol_map, skip)
            self.advertised(node, listeners, protocol_map, skip)
            rack = self._values[node].get("broker.rack")
            if rack is not None and not rack.strip():
                raise ConfigError(f"bad value for node.{node}.broker.rack: {rack!r} (empty)")

    def listeners(
        self,
        node: int,
        listeners: Sequence[ListenerSpec],
        protocol_map: Mapping[str, str],
        skip: frozenset[str],
    ) -> tuple[ListenerSpec, ...] | None:
        """The node's own listeners in ``listeners``' order, or None: it has none of its own."""
        raw = self._values.get(node, {}).get("listeners")
        if raw is None:
            return None
        key = f"node.{node}.listeners"
        own = {spec.name: spec for spec in parse_listeners(key, raw, protocol_map, skip)}
        names = [spec.name for spec in listeners]
        if sorted(own) != sorted(names):
            raise ConfigError(
                f"bad value for {key}: {raw!r} (it must name the listeners of listeners: {', '.join(names)})"
            )
        return tuple(own[name] for name in names)

    def advertised(
        self,
        node: int,
        listeners: Sequence[ListenerSpec],
        protocol_map: Mapping[str, str],
        skip: frozenset[str],
    ) -> dict[str, ListenerSpec]:
        """Listener name -> the node's own ``advertised.listeners`` entry (none: empty)."""
        raw = self._values.get(node, {}).get("advertised.listeners")
        if raw is None:
            return {}
        key = f"node.{node}.advertised.listeners"
        given = parse_listeners(key, raw, protocol_map, skip)
        names = {spec.name for spec in listeners}
        for spec in given:
            if spec.name not in names:
                raise ConfigError(f"bad value for {key}: {raw!r} (listener {spec.name} is not in listeners)")
        return {spec.name: spec for spec in given}

    def rack(self, node: int) -> str | None:
        """The node's own ``broker.rack``, or None."""
        raw = self._values.get(node, {}).get("broker.rack")
        return raw.strip() if raw is not None else None
