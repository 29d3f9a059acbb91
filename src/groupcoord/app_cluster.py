"""The composition root's part for several brokers in one process (``docs/cluster.md``).

:class:`~groupcoord.app.BrokerApp` with ``brokers=N > 1`` serves nodes 0..N-1, each on its own
listeners, over one broker state, one storage and one runtime per coordinator. This module wires
what that takes:

* :func:`build_cluster`: the :class:`~groupcoord.broker.cluster.ClusterMetadata` (placement,
  leaders, epochs), with the racks of ``broker.rack``;
* :func:`node_interceptor`: tells the coordinators, before each request's handler runs, which node
  the request came to, so that a group or transactional id led elsewhere is answered
  NOT_COORDINATOR;
* :func:`follow_leadership`: moves the coordinator shards and wakes parked fetches when a
  leader changes;
* :class:`LeaderBalancer`: ``auto.leader.rebalance.enable``'s periodic preferred-leader election;
* :class:`ClusterNodes` (``BrokerApp.nodes``): stopping and starting nodes, electing leaders, each
  node's announced addresses (what ``groupcoord.testing.Cluster`` drives).
"""

from __future__ import annotations

import logging
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from groupcoord.broker import offset_for_leader_epoch
from groupcoord.broker.cluster import ClusterMetadata
from groupcoord.broker.state import Broker
from groupcoord.config import BrokerConfig
from groupcoord.constants import OFFSETS_TOPIC, TRANSACTION_STATE_TOPIC
from groupcoord.errors import ConfigError
from groupcoord.handling import Interceptor, Proceed, RequestContext, Route
from groupcoord.protocol.api_keys import ApiKey
from groupcoord.runtime.group_runtime import GroupRuntime
from groupcoord.runtime.txn_runtime import TxnRuntime

log = logging.getLogger(__name__)

#: The APIs served only with several brokers: OffsetForLeaderEpoch (one broker reports no leader
#: epochs, and clients then never ask). Versions 2-4: Kafka 4.0's, as kio has them.
CLUSTER_ROUTES: tuple[Route[Broker], ...] = (
    Route(
        api_key=ApiKey.OFFSET_FOR_LEADER_EPOCH,
        min_version=2,
        max_version=4,
        handler=offset_for_leader_epoch.handle,
    ),
)


def racks_of(config: BrokerConfig, brokers: int) -> dict[int, str | None]:
    """Each node's rack: ``broker.rack`` is one rack for every node, or one per node,
    comma-separated (:class:`ConfigError` naming it for another count); a node's own
    ``node.<id>.broker.rack`` wins over it."""
    racks: list[str | None] = [None] * brokers
    if config.broker_rack is not None:
        given = [r.strip() for r in config.broker_rack.split(",")]
        if len(given) == 1:
            given = given * brokers
        if len(given) != brokers or not all(given):
            raise ConfigError(
                f"bad value for broker.rack: {config.broker_rack!r} (one rack, or one per broker: {brokers})"
            )
        racks = list(given)
    nodes = config.node_settings
    return {n: nodes.rack(n) or racks[n] for n in range(brokers)}


def build_cluster(config: BrokerConfig, broker: Broker, brokers: int, data_dir: Path) -> ClusterMetadata:
    """The cluster of nodes 0..brokers-1 over ``broker``'s logs; :class:`ConfigError` for a
    replication factor above the number of brokers."""
    if config.default_replication_factor > brokers:
        raise ConfigError(
            f"bad value for default.replication.factor: {config.default_replication_factor} "
            f"(at most the number of brokers, {brokers})"
        )
    logs = broker.logs

    def log_end_offset(topic: str, partition: int) -> int:
        try:
            return int(logs.partition(topic, partition).log_end_offset)
        except KeyError:
            return 0

    cluster = ClusterMetadata(
        range(brokers),
        racks=racks_of(config, brokers),
        default_replication_factor=config.default_replication_factor,
        internal_replication_factor=config.offsets_topic_replication_factor,
        log_end_offset=log_end_offset,
        state_dir=data_dir,
    )
    logs.topic_listeners.append(lambda: _topics_changed(cluster, broker))
    return cluster


def _topics_changed(cluster: ClusterMetadata, broker: Broker) -> None:
    """A new topic (or partition) is placed at once, on the brokers running then, as Kafka's
    controller places it at creation; a deleted topic's placement goes with it (a topic made
    again under its name is new)."""
    known = broker.logs.topics_view
    for topic in {tp[0] for tp in cluster.placed()} - set(known):
        cluster.forget_topic(topic)
    cluster.known((m.name, m.partitions) for m in known.values())


def node_interceptor(groups: GroupRuntime, txn: TxnRuntime, inner: Interceptor | None) -> Interceptor:
    """An interceptor that sets the coordinators' node to the request's just before its handler
    runs (after ``inner``'s faults, which may hold a request back)."""

    def intercept(ctx: RequestContext, request: object, proceed: Proceed) -> object:
        def handler(c: RequestContext, r: object) -> object:
            groups.coordinator.node = c.node_id
            txn.node = c.node_id
            return proceed(c, r)

        if inner is not None:
            return inner(ctx, request, handler)
        return handler(ctx, request)

    return intercept


def follow_leadership(
    cluster: ClusterMetadata, broker: Broker, groups: GroupRuntime, txn: TxnRuntime
) -> None:
    """Leader changes move the coordinators' shards (Kafka's ``onElection`` / ``onResignation``)
    and answer the fetches parked on the partition (they learn of the change)."""
    groups.coordinator.leader_of = lambda p: cluster.leader(OFFSETS_TOPIC, p)
    txn.leader_of = lambda p: cluster.leader(TRANSACTION_STATE_TOPIC, p)

    def changed(topic: str, partition: int, _old: int, new: int) -> None:
        if topic == OFFSETS_TOPIC:
            groups.move_partition(partition, new)
        elif topic == TRANSACTION_STATE_TOPIC:
            txn.move_partition(partition, new)
        broker.fetch_waiters.wake((topic, partition))

    cluster.leadership_listeners.append(changed)


class LeaderBalancer:
    """``auto.leader.rebalance.enable``: every ``leader.imbalance.check.interval.seconds`` (on the
    broker's clock) the partitions of each node leading less than ``100 -
    leader.imbalance.per.broker.percentage`` percent of those it is preferred for go back to it
    (Kafka's ``QuorumController`` periodic task ``maybeBalancePartitionLeaders``)."""

    KEY = ("cluster", "leader-imbalance-check")

    def __init__(self, cluster: ClusterMetadata, broker: Broker) -> None:
        self.cluster = cluster
        self.broker = broker
        config = broker.config
        self.enabled = config.auto_leader_rebalance_enable
        self.interval_ms = config.leader_imbalance_check_interval_seconds * 1000
        self.percentage = config.leader_imbalance_per_broker_percentage

    def start(self) -> None:
        if self.enabled:
            self.broker.schedule(self.KEY, self.broker.clock.now_ms() + self.interval_ms, self.check)

    def check(self) -> None:
        try:
            moved = self.cluster.elect_preferred(self.cluster.imbalanced(self.percentage))
            if moved:
                log.info("preferred leader election moved %d partitions", len(moved))
        finally:
            self.broker.schedule(self.KEY, self.broker.clock.now_ms() + self.interval_ms, self.check)


class StartError(Exception):
    """A stopped node cannot listen again (its port is taken); one line for the operator."""


def _shown(host: str) -> str:
    """The host a client is told for a listener bound to ``host`` (a wildcard: 127.0.0.1)."""
    return host if host not in ("0.0.0.0", "::", "") else "127.0.0.1"


class ClusterNodes:
    """What moves between the nodes of one process: stopping and starting them, electing leaders,
    and where each node's listeners are announced."""

    def __init__(
        self,
        cluster: ClusterMetadata,
        broker: Broker,
        groups: GroupRuntime,
        servers: Mapping[int, Sequence[Any]],
    ) -> None:
        self.cluster = cluster
        self.broker = broker
        self.groups = groups
        #: each node's ``KafkaServer`` per listener
        self.servers = servers
        self.balancer = LeaderBalancer(cluster, broker)

    def started(self, config: BrokerConfig) -> None:
        """The servers listen and the internal topics exist: announce each node's addresses,
        place every partition, start the imbalance check.

        A listener of a node is announced at the node's own ``node.<id>.advertised.listeners``
        entry (its port 0: the bound one) if it has one; else, if the node has its own
        ``node.<id>.listeners``, at that listener's host and bound port (Kafka's
        ``advertised.listeners`` defaults to ``listeners``); else the first node's as the broker
        does, the others' at their bound ports on the advertised host if one is given."""
        first = self.cluster.node_ids[0]
        listeners = config.listener_specs()
        advertised = config.advertised_specs()
        for node, servers in self.servers.items():
            own = config.node_listener_specs(node)
            own_advertised = config.node_advertised_specs(node)
            for j, (spec, server) in enumerate(zip(listeners, servers, strict=True)):
                given = own_advertised.get(spec.name)
                if given is not None:
                    self.cluster.endpoints[node][spec.name] = (_shown(given.host), given.port or server.port)
                elif own is not None:
                    self.cluster.endpoints[node][spec.name] = (_shown(own[j].host), server.port)
                elif node == first:
                    self.cluster.endpoints[node][spec.name] = self.broker.endpoint(spec.name)
                else:
                    shared = advertised.get(spec.name)
                    self.cluster.endpoints[node][spec.name] = (
                        _shown(shared.host if shared is not None else ""),
                        server.port,
                    )
        self._place_all()
        self.balancer.start()

    def _place_all(self) -> ClusterMetadata:
        self.cluster.known((m.name, m.partitions) for m in self.broker.logs.topics_view.values())
        return self.cluster

    def _check(self, node: int) -> ClusterMetadata:
        cluster = self._place_all()
        if node not in cluster.node_ids:
            raise ValueError(f"no broker {node} (brokers: {list(cluster.node_ids)})")
        return cluster

    async def stop(self, node: int, grace_s: float = 1.0) -> None:
        """Take node ``node`` away as a controlled shutdown does: its leaderships move to live
        in-sync replicas (the coordinators' shards with them: parked joins and syncs answered
        NOT_COORDINATOR), it leaves every ISR, then its listeners close with their connections."""
        cluster = self._check(node)
        if node not in cluster.alive:
            return
        if len(cluster.alive) == 1:
            raise ValueError(f"broker {node} is the last one running")
        cluster.stop(node)
        for server in self.servers[node]:
            await server.stop(grace_s)
        log.info("broker %d stopped", node)

    async def start(self, node: int) -> None:
        """Bring node ``node`` back on its ports: in sync again for its partitions, leader of
        those that had none; with ``auto.leader.rebalance.enable`` it becomes the preferred leader
        again at the next imbalance check."""
        cluster = self._check(node)
        if node in cluster.alive:
            return
        for server in self.servers[node]:
            try:
                await server.start()
            except OSError as exc:
                raise StartError(f"cannot listen on {server.host}:{server.port}: {exc.strerror}") from None
        cluster.start(node)
        log.info("broker %d started", node)

    def move_leader(self, topic: str, partition: int, node: int) -> None:
        """Make ``node`` the partition's leader (a reassignment's election): a new leader epoch;
        for a coordinator partition, its shard moves."""
        cluster = self._place_all()
        meta = self.broker.logs.topics_view.get(topic)
        if meta is None or not 0 <= partition < meta.partitions:
            raise ValueError(f"no partition {topic}-{partition}")
        cluster.elect(topic, partition, node)

    def elect_preferred(self) -> int:
        """Kafka's preferred leader election over every partition; how many moved."""
        return len(self._place_all().elect_preferred())

    async def settled(self) -> None:
        """Wait until every coordinator partition that moved has loaded."""
        await self.groups.reloaded()
