"""Several brokers in one process: who is alive, and who leads, follows and is in sync for each
partition (Kafka's client-visible cluster metadata; ``docs/cluster.md``).

One process serves N broker nodes (ids 0..N-1), each on its own listeners; there is one copy of
each partition's log, shared by all of them. What differs between the nodes is what Kafka's
controller decides and clients observe: each partition's replicas (placed as Kafka places them),
its leader, its leader epoch and its in-sync replicas. A request for a partition on a node that
does not lead it is answered as Kafka's broker answers it (NOT_LEADER_OR_FOLLOWER, NOT_COORDINATOR,
FENCED_LEADER_EPOCH ...); the handlers ask :meth:`ClusterMetadata.check` and :meth:`leader`.

* **Placement** is Kafka's replica assignment (``AdminUtils.assignReplicasToBrokers``; its
  rack-aware variant when every node has a rack): without racks partition ``p``'s first replica
  is node ``p % N``, and the others follow it at a shift that grows every N partitions. Kafka
  starts at a random node and a random shift; here both start at 0, so that a test knows where
  each partition lives (design principle 8). The preferred
  leader is the first replica. A partition is placed when its topic is created (the composition
  root listens for topic changes) or first asked for, with the topic's replication factor
  (CreateTopics, ``default.replication.factor``; the internal topics
  ``offsets.topic.replication.factor``, capped at N as Kafka caps it for them).
* **Leader epochs** start at 0 and grow by one at every leader change, to no leader included
  (KRaft's ``PartitionRegistration.merge``; an ISR change alone keeps the leader epoch). Each
  epoch's start offset (the log end offset when its leader took over, Kafka's
  ``LeaderEpochFileCache.assign`` in ``Partition.makeLeader``) is kept, and OffsetForLeaderEpoch
  answers from that history.
* **Stopping a node** takes it out of every ISR it is in (but the last: Kafka keeps the last
  member of an offline partition's ISR) and moves every leadership it held to the first live
  replica in the ISR, in replica order; without one the partition has no leader (-1) until a
  replica returns (no unclean election). **Starting it** puts it back in the ISR of its
  partitions that have a leader (its log is the shared one: it is caught up at once), makes it
  leader of those without one whose last ISR it was in, and, with
  ``auto.leader.rebalance.enable``, gives back the leaderships it is preferred for at the next
  imbalance check.
* Listeners (``leadership_listeners``) hear of each leader change; the composition root moves
  the coordinator shards with them (unload on the old leader, load on the new).

The state (placement, leaders, epochs and their start offsets) is kept in ``cluster.json`` in
the data dir, so that leader epochs never go backwards across restarts (clients refuse metadata
with an epoch older than one they have seen).
"""

from __future__ import annotations

import json
import logging
import os
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path

from groupcoord.constants import OFFSETS_TOPIC, TRANSACTION_STATE_TOPIC
from groupcoord.errors import ErrorCode

log = logging.getLogger(__name__)

TopicPartition = tuple[str, int]

#: A leader change: (topic, partition, old leader, new leader); -1 for none.
LeadershipListener = Callable[[str, int, int, int], None]

#: Kafka's ``RecordBatch.NO_PARTITION_LEADER_EPOCH`` / ``UNDEFINED_EPOCH``.
NO_EPOCH = -1
UNDEFINED_EPOCH_OFFSET = -1

STATE_FILE = "cluster.json"


@dataclass(slots=True)
class PartitionState:
    """One partition as the controller sees it."""

    replicas: tuple[int, ...]
    isr: list[int]
    leader: int
    leader_epoch: int = 0
    #: (epoch, start offset) of every leader epoch, oldest first
    epochs: list[tuple[int, int]] = field(default_factory=list)

    @property
    def preferred(self) -> int:
        return self.replicas[0]


def _replica_index(first: int, shift: int, j: int, n: int) -> int:
    return (first + 1 + (shift + j) % (n - 1)) % n


def place(
    partition: int,
    replication_factor: int,
    nodes: tuple[int, ...],
    racks: Mapping[int, str | None] | None = None,
) -> tuple[int, ...]:
    """The replicas of ``partition``: Kafka's replica assignment (``AdminUtils
    .assignReplicasToBrokers``) with start index and first shift 0, rack-aware when every node
    has a rack (``assignReplicasToBrokersRackAware``: nodes alternate between racks, and each
    replica goes to a rack, then a node, that has none yet while there is one)."""
    if racks and all(racks.get(n) for n in nodes):
        return _place_rack_aware(partition, replication_factor, nodes, racks)
    n = len(nodes)
    first = partition % n
    shift = partition // n  # +1 each time the partition id passes a multiple of n
    out = [nodes[first]]
    for j in range(replication_factor - 1):
        out.append(nodes[_replica_index(first, shift, j, n)])
    return tuple(out)


def rack_alternated(nodes: tuple[int, ...], racks: Mapping[int, str | None]) -> list[int]:
    """Kafka's ``getRackAlternatedBrokerList``: racks in name order, each rack's nodes in id
    order, taken one rack at a time."""
    by_rack: dict[str, list[int]] = {}
    for node in sorted(nodes):
        by_rack.setdefault(str(racks[node]), []).append(node)
    queues = [by_rack[r] for r in sorted(by_rack)]
    out: list[int] = []
    i = 0
    while len(out) < len(nodes):
        queue = queues[i % len(queues)]
        if queue:
            out.append(queue.pop(0))
        i += 1
    return out


def _place_rack_aware(
    partition: int, replication_factor: int, nodes: tuple[int, ...], racks: Mapping[int, str | None]
) -> tuple[int, ...]:
    arranged = rack_alternated(nodes, racks)
    n = len(arranged)
    num_racks = len({racks[x] for x in nodes})
    first = partition % n
    shift = partition // n
    leader = arranged[first]
    out = [leader]
    with_racks = {racks[leader]}
    k = 0
    for _ in range(replication_factor - 1):
        while True:
            node = arranged[_replica_index(first, shift * num_racks, k, n)]
            k += 1
            rack = racks[node]
            if (rack not in with_racks or len(with_racks) == num_racks) and (
                node not in out or len(out) == n
            ):
                out.append(node)
                with_racks.add(rack)
                break
    return tuple(out)


class ClusterMetadata:
    """Args:
    node_ids: the broker nodes (0..N-1); the first is also the controller.
    racks: each node's ``broker.rack`` (None: not set).
    default_replication_factor: for topics created without one (``default.replication.factor``).
    internal_replication_factor: ``offsets.topic.replication.factor`` (capped at N), for
        ``__consumer_offsets``, ``__transaction_state`` and ``__group_events``.
    log_end_offset: the log end offset of a partition (an epoch's start offset).
    state_dir: where ``cluster.json`` is kept (None: in memory only).
    """

    def __init__(
        self,
        node_ids: Iterable[int],
        *,
        racks: dict[int, str | None] | None = None,
        default_replication_factor: int = 1,
        internal_replication_factor: int = 3,
        log_end_offset: Callable[[str, int], int] = lambda _t, _p: 0,
        state_dir: Path | None = None,
    ) -> None:
        self.node_ids: tuple[int, ...] = tuple(node_ids)
        if not self.node_ids:
            raise ValueError("a cluster needs at least one node")
        self.controller_id = self.node_ids[0]
        self.racks: dict[int, str | None] = dict(racks or {})
        self.alive: set[int] = set(self.node_ids)
        self.default_replication_factor = default_replication_factor
        self.internal_replication_factor = min(internal_replication_factor, len(self.node_ids))
        self._log_end_offset = log_end_offset
        #: node -> listener name -> advertised (host, port)
        self.endpoints: dict[int, dict[str, tuple[str, int]]] = {n: {} for n in self.node_ids}
        self._topic_rf: dict[str, int] = {}
        self._partitions: dict[TopicPartition, PartitionState] = {}
        self.leadership_listeners: list[LeadershipListener] = []
        self._state_path = state_dir / STATE_FILE if state_dir is not None else None
        self._load_state()

    # ------------------------------------------------------------------ nodes
    @property
    def size(self) -> int:
        return len(self.node_ids)

    def is_alive(self, node: int) -> bool:
        return node in self.alive

    def endpoint(self, node: int, listener: str) -> tuple[str, int] | None:
        """The advertised (host, port) of ``node``'s listener ``listener`` (its first if unknown)."""
        by_listener = self.endpoints.get(node)
        if not by_listener:
            return None
        found = by_listener.get(listener)
        return found if found is not None else next(iter(by_listener.values()))

    # ------------------------------------------------------------------ placement
    def set_replication_factor(self, topic: str, replication_factor: int) -> None:
        """The replication factor ``topic``'s partitions are placed with (CreateTopics)."""
        self._topic_rf[topic] = replication_factor
        self._save()

    def replication_factor(self, topic: str) -> int:
        rf = self._topic_rf.get(topic)
        if rf is not None:
            return rf
        if topic.startswith("__"):
            return self.internal_replication_factor
        return min(self.default_replication_factor, self.size)

    def partition(self, topic: str, partition: int) -> PartitionState:
        """The partition's state, placed on first use."""
        tp = (topic, partition)
        state = self._partitions.get(tp)
        if state is None:
            replicas = place(partition, self.replication_factor(topic), self.node_ids, self.racks)
            live = [r for r in replicas if r in self.alive]
            leader = live[0] if live else NO_EPOCH
            state = PartitionState(
                replicas=replicas, isr=live or [replicas[0]], leader=leader, epochs=[(0, 0)]
            )
            self._partitions[tp] = state
        return state

    def assign(self, topic: str, partition: int, replicas: tuple[int, ...]) -> None:
        """Place a partition on the given replicas (CreateTopics' explicit assignment)."""
        live = [r for r in replicas if r in self.alive]
        self._partitions[(topic, partition)] = PartitionState(
            replicas=replicas,
            isr=live or [replicas[0]],
            leader=live[0] if live else NO_EPOCH,
            epochs=[(0, 0)],
        )
        self._save()

    def forget_topic(self, topic: str) -> None:
        """``topic`` was deleted: a topic made again under its name is placed anew."""
        for tp in [tp for tp in self._partitions if tp[0] == topic]:
            del self._partitions[tp]
        self._topic_rf.pop(topic, None)
        self._save()

    def leader(self, topic: str, partition: int) -> int:
        """The partition's leader, -1 if it has none (every in-sync replica is down)."""
        return self.partition(topic, partition).leader

    def check(
        self, topic: str, partition: int, node: int, current_epoch: int, *, follower_ok: bool = False
    ) -> ErrorCode:
        """Whether ``node`` may serve a client's read or write of the partition, as Kafka's
        ``Partition.localLogWithEpochOrThrow``: a stated leader epoch older than the partition's
        is FENCED_LEADER_EPOCH, a newer one UNKNOWN_LEADER_EPOCH (KIP-320); then a node that is not
        the leader is NOT_LEADER_OR_FOLLOWER, unless ``follower_ok`` (a consumer's Fetch from v11,
        KIP-392) and it is a replica."""
        state = self.partition(topic, partition)
        if current_epoch >= 0:
            if current_epoch < state.leader_epoch:
                return ErrorCode.FENCED_LEADER_EPOCH
            if current_epoch > state.leader_epoch:
                return ErrorCode.UNKNOWN_LEADER_EPOCH
        if state.leader == node:
            return ErrorCode.NONE
        if follower_ok and node in state.replicas and node in state.isr:
            return ErrorCode.NONE
        return ErrorCode.NOT_LEADER_OR_FOLLOWER

    # ------------------------------------------------------------------ leader epochs
    def epoch_of(self, topic: str, partition: int, offset: int) -> int:
        """The leader epoch ``offset`` was written in (ListOffsets' ``leader_epoch``): the latest
        epoch that began at or before it."""
        found = NO_EPOCH
        for epoch, start in self.partition(topic, partition).epochs:
            if start <= offset:
                found = epoch
        return found

    def end_offset_for(self, topic: str, partition: int, epoch: int) -> tuple[int, int]:
        """(epoch, end offset) for OffsetForLeaderEpoch, Kafka's ``LeaderEpochFileCache.endOffsetFor``:
        the latest epoch ends at the log end offset; an older one where the next epoch began
        (the largest epoch not above the one asked for, with its end); an epoch newer than the
        latest, or -1, is undefined (-1, -1)."""
        state = self.partition(topic, partition)
        epochs = state.epochs
        latest = epochs[-1][0]
        if epoch == NO_EPOCH or epoch > latest:
            return NO_EPOCH, UNDEFINED_EPOCH_OFFSET
        if epoch == latest:
            return latest, self._log_end_offset(topic, partition)
        floor: tuple[int, int] | None = None
        higher: tuple[int, int] | None = None
        for entry in epochs:
            if entry[0] <= epoch:
                floor = entry
            elif higher is None:
                higher = entry
        assert higher is not None
        if floor is None:  # older than every epoch kept: it ends where the oldest kept begins
            return epoch, higher[1]
        return floor[0], higher[1]

    # ------------------------------------------------------------------ leadership changes
    def elect(self, topic: str, partition: int, leader: int) -> None:
        """Make ``leader`` (a live replica, or -1 for none) the partition's leader: a new leader
        epoch starting at the log end offset."""
        state = self.partition(topic, partition)
        if leader != NO_EPOCH:
            if leader not in state.replicas:
                raise ValueError(f"node {leader} is not a replica of {topic}-{partition}: {state.replicas}")
            if leader not in self.alive:
                raise ValueError(f"node {leader} is not running")
            # the live followers are caught up at once (one log): in sync under the new leader
            state.isr.extend(r for r in state.replicas if r in self.alive and r not in state.isr)
        old = state.leader
        if old == leader:
            return
        state.leader = leader
        # every leader change bumps the epoch, to no leader too (KRaft's PartitionRegistration
        # .merge); only a leader starts an epoch in the log's history
        state.leader_epoch += 1
        if leader != NO_EPOCH:
            state.epochs.append((state.leader_epoch, self._log_end_offset(topic, partition)))
        self._save()
        log.info("%s-%d: leader %d -> %d (epoch %d)", topic, partition, old, leader, state.leader_epoch)
        for listener in list(self.leadership_listeners):
            listener(topic, partition, old, leader)

    def known(self, topics: Iterable[tuple[str, int]]) -> None:
        """Place every partition of the given (topic, partition count) now."""
        before = len(self._partitions)
        for topic, count in topics:
            for p in range(count):
                self.partition(topic, p)
        if len(self._partitions) != before:
            self._save()

    def stop(self, node: int) -> list[TopicPartition]:
        """``node`` went away: out of every ISR (but the last member's), its leaderships moved to
        the next live in-sync replica, or to none. The partitions whose leader changed."""
        if node not in self.alive:
            return []
        self.alive.discard(node)
        moved: list[TopicPartition] = []
        for tp, state in list(self._partitions.items()):
            if node in state.isr and len(state.isr) > 1:
                state.isr.remove(node)
            if state.leader == node:
                nxt = next((r for r in state.replicas if r in state.isr and r in self.alive), NO_EPOCH)
                self.elect(tp[0], tp[1], nxt)
                moved.append(tp)
        self._save()
        return moved

    def start(self, node: int) -> list[TopicPartition]:
        """``node`` is back: in the ISR of its partitions again, and leader of those without one.
        The partitions whose leader changed."""
        if node not in self.node_ids:
            raise ValueError(f"no node {node}")
        if node in self.alive:
            return []
        self.alive.add(node)
        moved: list[TopicPartition] = []
        for tp, state in list(self._partitions.items()):
            if node not in state.replicas:
                continue
            if state.leader == NO_EPOCH:
                # offline: only a member of the last ISR may lead again (no unclean election)
                if node in state.isr:
                    self.elect(tp[0], tp[1], node)
                    moved.append(tp)
            elif node not in state.isr:
                state.isr.append(node)  # caught up at once: the log is the one the leader has
        self._save()
        return moved

    def imbalanced(self, percentage: int) -> list[TopicPartition]:
        """Partitions led elsewhere than their live, in-sync preferred leader, on every node whose
        share of such partitions exceeds ``leader.imbalance.per.broker.percentage`` (Kafka's
        ``checkAndTriggerAutoLeaderRebalance``)."""
        out: list[TopicPartition] = []
        for node in self.node_ids:
            mine = [tp for tp, s in self._partitions.items() if s.preferred == node]
            if not mine or node not in self.alive:
                continue
            off = [
                tp for tp in mine if self._partitions[tp].leader != node and node in self._partitions[tp].isr
            ]
            if len(off) * 100 > percentage * len(mine):
                out.extend(off)
        return sorted(out)

    def elect_preferred(self, partitions: Iterable[TopicPartition] | None = None) -> list[TopicPartition]:
        """Preferred leader election: each partition back to its first replica when that one is
        alive and in sync. The partitions whose leader changed."""
        chosen = sorted(self._partitions) if partitions is None else list(partitions)
        moved = []
        for tp in chosen:
            state = self.partition(*tp)
            if (
                state.leader != state.preferred
                and state.preferred in self.alive
                and state.preferred in state.isr
            ):
                self.elect(tp[0], tp[1], state.preferred)
                moved.append(tp)
        return moved

    def placed(self) -> list[TopicPartition]:
        """Every partition placed so far."""
        return sorted(self._partitions)

    def partitions_led_by(self, node: int) -> list[TopicPartition]:
        return sorted(tp for tp, s in self._partitions.items() if s.leader == node)

    # ------------------------------------------------------------------ persistence
    def _load_state(self) -> None:
        path = self._state_path
        if path is None or not path.exists():
            return
        try:
            saved = json.loads(path.read_text(encoding="utf-8"))
        except (OSError, ValueError) as exc:
            log.warning("%s unreadable (%s): placing partitions anew", path, exc)
            return
        if saved.get("nodes") != list(self.node_ids):
            log.info("%s was written for nodes %s: placing partitions anew", path, saved.get("nodes"))
            return
        self._topic_rf = {str(k): int(v) for k, v in saved.get("replication_factors", {}).items()}
        for entry in saved.get("partitions", []):
            state = PartitionState(
                replicas=tuple(entry["replicas"]),
                isr=list(entry["replicas"]),  # every node starts: all in sync again
                leader=int(entry["replicas"][0]),
                leader_epoch=int(entry["leader_epoch"]),
                epochs=[(int(e), int(o)) for e, o in entry["epochs"]],
            )
            tp = (str(entry["topic"]), int(entry["partition"]))
            if state.leader != int(entry["leader"]):
                # a restart makes the preferred leader lead again: a new epoch
                state.leader_epoch += 1
                state.epochs.append((state.leader_epoch, self._log_end_offset(*tp)))
            self._partitions[tp] = state

    def _save(self) -> None:
        path = self._state_path
        if path is None:
            return
        saved = {
            "nodes": list(self.node_ids),
            "replication_factors": self._topic_rf,
            "partitions": [
                {
                    "topic": tp[0],
                    "partition": tp[1],
                    "replicas": list(s.replicas),
                    "leader": s.leader,
                    "leader_epoch": s.leader_epoch,
                    "epochs": [list(e) for e in s.epochs[-32:]],
                }
                for tp, s in sorted(self._partitions.items())
            ],
        }
        tmp = path.with_suffix(".tmp")
        try:
            tmp.write_text(json.dumps(saved), encoding="utf-8")
            os.replace(tmp, path)
        except OSError as exc:
            log.warning("cannot write %s: %s", path, exc)


#: The coordinators' internal topics, whose leaders are the coordinators.
COORDINATOR_TOPICS = (OFFSETS_TOPIC, TRANSACTION_STATE_TOPIC)
