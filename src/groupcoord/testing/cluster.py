"""``Cluster``: several groupcoord brokers in one process, for tests of what a cluster does to
clients: coordinators and leaders that move, brokers that go away (``docs/cluster.md``).

``Cluster(brokers=3)`` is a :class:`~groupcoord.testing.broker.Broker` (in-process or
``subprocess=True``, time control, faults and observation alike) whose process serves broker
nodes 0..N-1, each on its own port. One copy of each partition's log is shared by all nodes;
what moves is what Kafka's controller decides and clients see: leaders, leader epochs, ISRs,
and with the leaders of ``__consumer_offsets`` and ``__transaction_state`` the coordinators.

    with Cluster(brokers=3) as cluster:
        cluster.create_topic("orders", partitions=6, replication_factor=3)
        ...  # clients on cluster.bootstrap
        cluster.move_coordinator("my-group", 2)   # the group's shard unloads and reloads on 2
        cluster.stop_broker(cluster.leader_of("orders", 0))   # its leaderships move
        cluster.start_broker(0)

Test defaults over :data:`~groupcoord.testing.broker.DEFAULT_SETTINGS`: ``default.replication.factor``
and ``offsets.topic.replication.factor`` min(3, N) (so a stopped broker's partitions have somewhere
to go), ``offsets.topic.num.partitions`` 2N (groups spread over every node),
``auto.leader.rebalance.enable`` false (a test moves leaders itself;
:meth:`Cluster.elect_preferred_leaders` is Kafka's preferred election).
"""

from __future__ import annotations

import logging
import time
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

from groupcoord.admin.client import AdminClient, AdminError
from groupcoord.constants import OFFSETS_TOPIC, TRANSACTION_STATE_TOPIC
from groupcoord.coordinator.records import partition_for
from groupcoord.protocol.api_keys import ApiKey
from groupcoord.testing import wire
from groupcoord.testing.broker import Broker
from groupcoord.transactions.records import partition_for as txn_partition_for
from groupcoord.transactions.shard import TxnConfig

if TYPE_CHECKING:
    from groupcoord.app import BrokerApp
    from groupcoord.app_cluster import ClusterNodes

log = logging.getLogger(__name__)

__all__ = ["Cluster"]

_CLIENT_ID = "groupcoord-testing"
#: ``transaction.state.log.num.partitions``
TXN_PARTITIONS = TxnConfig().num_partitions


class Cluster(Broker):
    """N brokers in one process for a test; every :class:`Broker` argument, and:

    Args:
        brokers: how many (node ids 0..brokers-1; node 0 is also the controller).
        racks: each node's ``broker.rack`` (Metadata and DescribeCluster report them).
    """

    def __init__(
        self,
        settings: Mapping[str, object] | None = None,
        *,
        brokers: int = 3,
        racks: Sequence[str] | None = None,
        **kwargs: Any,
    ) -> None:
        if brokers < 2:
            raise ValueError("a Cluster has at least 2 brokers (Broker is one)")
        rf = min(3, brokers)
        defaults: dict[str, object] = {
            "default.replication.factor": rf,
            "offsets.topic.replication.factor": rf,
            "offsets.topic.num.partitions": 2 * brokers,
            "auto.leader.rebalance.enable": False,
        }
        if racks is not None:
            if len(racks) != brokers:
                raise ValueError(f"{len(racks)} racks for {brokers} brokers")
            defaults["broker.rack"] = ",".join(racks)
        self.brokers = brokers
        #: each node's port (0 until started; kept across restarts)
        self.ports: list[int] = [0] * brokers
        super().__init__({**defaults, **(settings or {})}, **kwargs)

    # ------------------------------------------------------------------ addresses
    @property
    def node_ids(self) -> tuple[int, ...]:
        return tuple(range(self.brokers))

    @property
    def bootstrap(self) -> str:
        """Every node's ``host:port``, comma-separated, for ``bootstrap.servers``."""
        if not self.running:
            raise RuntimeError("the cluster is not running")
        return ",".join(self.address_of(n) for n in self.node_ids)

    def address_of(self, node: int) -> str:
        return f"{self.host}:{self.ports[node]}"

    @property
    def wire_address(self) -> str:
        """A running node's address (the observation helpers find leaders and coordinators)."""
        alive = self.alive()
        return self.address_of(alive[0] if alive else 0)

    # ------------------------------------------------------------------ what clients see
    def alive(self) -> list[int]:
        """The running nodes (Metadata's brokers)."""
        if not self.running:
            return []
        for node in self.node_ids:
            try:
                with AdminClient(self.address_of(node), client_id=_CLIENT_ID, timeout_s=5.0) as admin:
                    r = admin.metadata(())
                return sorted(int(b.node_id) for b in r.brokers)
            except (OSError, AdminError):  # a stopped node
                continue
        return []

    def coordinator_of(self, group: str, *, transactional: bool = False) -> int:
        """The node FindCoordinator names for ``group`` (or transactional id); -1: none."""
        with AdminClient(self.wire_address, client_id=_CLIENT_ID) as admin:
            r = admin.bootstrap.call(ApiKey.FIND_COORDINATOR, key=group, key_type=1 if transactional else 0)
        return int(r.node_id) if int(r.error_code) == 0 else -1

    def leader_of(self, topic: str, partition: int) -> int:
        """The partition's leader in Metadata (-1: none)."""
        return int(self.partition_state(topic, partition)["leader"])

    def partition_state(self, topic: str, partition: int) -> dict[str, Any]:
        """The partition as Metadata reports it: leader, leader_epoch, replicas, isr, offline."""
        with AdminClient(self.wire_address, client_id=_CLIENT_ID) as admin:
            r = admin.metadata([topic])
        for t in r.topics:
            for p in t.partitions:
                if int(p.partition_index) == partition:
                    return {
                        "leader": int(p.leader_id),
                        "leader_epoch": int(p.leader_epoch),
                        "replicas": [int(n) for n in p.replica_nodes],
                        "isr": [int(n) for n in p.isr_nodes],
                        "offline": [int(n) for n in p.offline_replicas],
                    }
        raise KeyError(f"no partition {topic}-{partition}")

    def coordinator_partition(self, group: str) -> int:
        """``partitionFor(group)``: the ``__consumer_offsets`` partition of the group."""
        return partition_for(group, int(self.settings["offsets.topic.num.partitions"]))

    # ------------------------------------------------------------------ moving things
    def stop_broker(self, node: int) -> None:
        """Stop node ``node`` (a controlled shutdown): its leaderships move to live in-sync
        replicas, the coordinator shards with them; then its listener and connections close."""
        if self.subprocess:
            self._remote("stop_broker", node)
            return
        self._on_loop(lambda: self._nodes().stop(node))
        self._on_loop(lambda: self._nodes().settled())

    def start_broker(self, node: int) -> None:
        """Start node ``node`` again on its port: a follower in sync, leader of what had none."""
        if self.subprocess:
            self._remote("start_broker", node)
            return
        self._on_loop(lambda: self._nodes().start(node))
        self._on_loop(lambda: self._nodes().settled())

    def move_leader(self, topic: str, partition: int, node: int) -> None:
        """Make ``node`` (a live replica) the partition's leader: a new leader epoch; for a
        coordinator partition its shard unloads on the old leader and loads on ``node``
        (returns once loaded)."""
        if self.subprocess:
            self._remote("move_leader", topic, partition, node)
            return
        self._on_loop(lambda: self._nodes().move_leader(topic, partition, node))
        self._on_loop(lambda: self._nodes().settled())

    def move_coordinator(self, group: str, node: int) -> None:
        """Move ``group``'s coordinator to ``node`` (the leader of its ``__consumer_offsets``
        partition, with every other group of that partition)."""
        self.move_leader(OFFSETS_TOPIC, self.coordinator_partition(group), node)

    def move_transaction_coordinator(self, transactional_id: str, node: int) -> None:
        """Move ``transactional_id``'s transaction coordinator to ``node`` (the leader of its
        ``__transaction_state`` partition): the old shard unloads, the new one replays the
        partition and finishes what it left half-way."""
        self.move_leader(TRANSACTION_STATE_TOPIC, txn_partition_for(transactional_id, TXN_PARTITIONS), node)

    def elect_preferred_leaders(self) -> int:
        """Kafka's preferred leader election (``kafka-leader-election --election-type
        PREFERRED``): each partition back to its first replica if that one runs and is in sync;
        how many moved."""
        if self.subprocess:
            return int(self._remote("elect_preferred_leaders"))

        moved: int = self._on_loop(lambda: self._nodes().elect_preferred())
        self._on_loop(lambda: self._nodes().settled())
        return moved

    def create_topic(
        self,
        name: str,
        partitions: int = 1,
        configs: Mapping[str, str] | None = None,
        *,
        replication_factor: int | None = None,
    ) -> None:
        """Create ``name`` with ``replication_factor`` replicas (``default.replication.factor``
        if None); a topic that exists is left as it is."""
        rf = replication_factor if replication_factor is not None else -1
        wire.create_topic(self.wire_address, name, partitions, dict(configs or {}), replication_factor=rf)

    def wait_for_leader(self, topic: str, partition: int, timeout: float = 30.0) -> int:
        """Poll Metadata until the partition has a leader; that leader."""
        deadline = time.monotonic() + timeout
        while True:
            leader = self.leader_of(topic, partition)
            if leader >= 0:
                return leader
            if time.monotonic() > deadline:
                raise AssertionError(f"{topic}-{partition} has no leader after {timeout}s")
            time.sleep(0.05)

    # ------------------------------------------------------------------ Broker's hooks
    def _nodes(self) -> ClusterNodes:
        if self._app is None or self._app.nodes is None:
            raise RuntimeError("the cluster is not running")
        return self._app.nodes

    def _app_options(self) -> dict[str, Any]:
        return {"brokers": self.brokers, "node_ports": tuple(self.ports) if any(self.ports) else ()}

    def _started_app(self, app: BrokerApp) -> None:
        self.ports = [app.node_servers[n][0].port for n in self.node_ids]

    def _process_args(self) -> list[str]:
        args = ["--brokers", str(self.brokers)]
        if any(self.ports):
            args += ["--node-ports", ",".join(str(p) for p in self.ports)]
        return args

    def _listening(self, addresses: str) -> None:
        self.ports = [int(a.rsplit(":", 1)[1]) for a in addresses.split(",")]
        self.port = self.ports[0]
