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
* :class:`LeaderBalancer`: ``auto.leader.rebalance.enable``'s periodic preferred-leader election.
"""

from __future__ import annotations

import logging
from pathlib import Path

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
    comma-separated; :class:`ConfigError` naming it for another count."""
    if config.broker_rack is None:
        return {n: None for n in range(brokers)}
    racks = [r.strip() for r in config.broker_rack.split(",")]
    if len(racks) == 1:
        racks = racks * brokers
    if len(racks) != brokers or not all(racks):
        raise ConfigError(
            f"bad value for broker.rack: {config.broker_rack!r} (one rack, or one per broker: {brokers})"
        )
    return dict(enumerate(racks))


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
    logs.topic_listeners.append(lambda: _forget_deleted(cluster, broker))
    return cluster


def _forget_deleted(cluster: ClusterMetadata, broker: Broker) -> None:
    """A deleted topic's placement goes with it (a topic made again under its name is new)."""
    known = broker.logs.topics()
    for topic in {tp[0] for tp in cluster.placed()} - set(known):
        cluster.forget_topic(topic)


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
