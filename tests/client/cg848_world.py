"""Consumer-protocol (KIP-848) member cores and the coordinator core in one process, under one
ManualClock.

:class:`World848` carries each member's outbound request to where it goes: FindCoordinator and
topic-id Metadata are answered from the world's own topics, ConsumerGroupHeartbeat and the
commits go to a real :class:`GroupCoordinator` through :mod:`groupcoord.runtime.in_process`. Time moves
only through :meth:`World848.run`, which jumps from deadline to deadline (the coordinator's timers
and every member's ``next_deadline_ms``). Rebalance callbacks are completed at once unless the
member ``holds`` them. ``timeline`` records, per member, what it sent and which callbacks ran, so
a test can assert the order of commit, revocation and acknowledgement.
"""

from __future__ import annotations

import itertools
import uuid
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from groupcoord.client import messages as m
from groupcoord.client.config import ConsumerConfig
from groupcoord.client.consumer_group_events import Outbound, RebalanceCallbackNeeded
from groupcoord.client.consumer_group_member import ConsumerGroupMember
from groupcoord.client.consumer_group_messages import (
    ConsumerGroupHeartbeatRequest,
    ConsumerGroupHeartbeatResponse,
    TopicIdMetadata,
    TopicIdsMetadataRequest,
    TopicIdsMetadataResponse,
)
from groupcoord.client.types import TopicPartition
from groupcoord.clock import ManualClock
from groupcoord.coordinator.config import GroupConfig
from groupcoord.coordinator.consumer.metadata import TopicMetadata, TopicsImage
from groupcoord.coordinator.records import encode_record
from groupcoord.errors import ErrorCode
from groupcoord.formats.batch import build_batch, parse_header
from groupcoord.runtime.group_coordinator import GroupCoordinator
from groupcoord.runtime.in_process import call_coordinator
from groupcoord.runtime.loader import OffsetsLoader

GROUP = "g848"
NODE = m.Node(node_id=1, host="127.0.0.1", port=9092)

MEMBER_DEFAULTS: dict[str, Any] = {
    "group.id": GROUP,
    "group.protocol": "consumer",
    "max.poll.interval.ms": 20_000,
    "enable.auto.commit": False,
    "retry.backoff.ms": 50,
    "retry.backoff.max.ms": 400,
}


@dataclass
class Sink:
    """Every coordinator write is durable at once."""

    appended: list[tuple[int, list[Any]]] = field(default_factory=list)

    def append(self, partition: int, records: Sequence[Any], done: Callable[[ErrorCode], None]) -> None:
        self.appended.append((partition, list(records)))
        done(ErrorCode.NONE)


@dataclass
class Member:
    name: str
    core: ConsumerGroupMember
    alive: bool = True
    polling: bool = True
    holds: bool = False
    """Callbacks wait (the application is busy) until released."""
    held: list[RebalanceCallbackNeeded] = field(default_factory=list)
    timeline: list[tuple[int, str, Any]] = field(default_factory=list)
    """(time, kind, detail): kind is "hb" (epoch, owned), "hb-resp" (error, epoch, assignment),
    "commit" (partitions), "cb" (method, partitions)."""
    inject: list[ErrorCode] = field(default_factory=list)
    """The next heartbeats' answers, instead of the coordinator's (the coordinator never sees them)."""

    def owned(self) -> frozenset[TopicPartition]:
        return self.core.assignment()

    def kinds(self, kind: str) -> list[tuple[int, Any]]:
        return [(i, d) for i, (_, k, d) in enumerate(self.timeline) if k == kind]


class World848:
    def __init__(self, topics: dict[str, int], **group_config: Any) -> None:
        cfg: dict[str, Any] = dict(
            group_coordinator_rebalance_protocols="classic,consumer",
            group_consumer_session_timeout_ms=45_000,
            group_consumer_heartbeat_interval_ms=5_000,
        )
        cfg.update(group_config)
        self.group_config = GroupConfig(**cfg)
        self.clock = ManualClock(1_000_000)
        self.sink = Sink()
        self._counter = itertools.count(1)
        self.coordinator = self._new_coordinator(owned_partitions=None)
        self.topics = dict(topics)
        self.topic_ids = {name: uuid.UUID(int=i + 1) for i, name in enumerate(sorted(topics))}
        self.names = {v: k for k, v in self.topic_ids.items()}
        self._image_version = 0
        self._publish_image()
        self.coordinator.poll()
        self.all_partitions = frozenset(TopicPartition(t, p) for t, n in topics.items() for p in range(n))
        self.members: dict[str, Member] = {}
        self.after_turn: Callable[[], None] | None = None

    def _new_coordinator(self, owned_partitions: Sequence[int] | None) -> GroupCoordinator:
        return GroupCoordinator(
            self.group_config,
            self.clock,
            record_sink=self.sink,
            member_id_factory=lambda prefix: f"{prefix}-{next(self._counter)}",
            owned_partitions=owned_partitions,
        )

    def _image(self) -> TopicsImage:
        return TopicsImage(
            [
                TopicMetadata(topic_id=self.topic_ids[t], name=t, num_partitions=n)
                for t, n in self.topics.items()
            ],
            version=self._image_version,
        )

    def _publish_image(self) -> None:
        self._image_version += 1
        self.coordinator.on_metadata_update(self._image())

    def create_topic(self, name: str, partitions: int) -> None:
        """A topic appears in the cluster: the coordinator sees the new image, and Metadata by
        id names it."""
        tid = uuid.UUID(int=len(self.topic_ids) + 1)
        self.topics[name] = partitions
        self.topic_ids[name] = tid
        self.names[tid] = name
        self._publish_image()

    # ------------------------------------------------------------ broker restart
    def coordinator_partition(self) -> int:
        return self.coordinator.partition_for(GROUP)

    def stop_coordinator(self) -> None:
        """The broker stops leading the group's ``__consumer_offsets`` partition (it goes down, or
        leadership moves): every request about the group is answered NOT_COORDINATOR."""
        self.coordinator.unload_partition(self.coordinator_partition())

    def start_coordinator(self) -> None:
        """The broker is back: a fresh coordinator core (no state but the log) leads the
        partition and starts loading it, answering COORDINATOR_LOAD_IN_PROGRESS meanwhile."""
        self.coordinator = self._new_coordinator(owned_partitions=())
        self.coordinator.on_metadata_update(self._image())
        self.coordinator.begin_loading(self.coordinator_partition())

    def finish_loading(self) -> int:
        """Replay the partition's log -- every record the old coordinator wrote, encoded into
        batches and decoded again by the broker's own loader -- then complete the load.
        Returns the number of records replayed."""
        p = self.coordinator_partition()
        loader = OffsetsLoader(self.coordinator, "__consumer_offsets", p)
        offset = 0
        for partition, records in self.sink.appended:
            if partition != p or not records:
                continue
            entries = [(*encode_record(r), ()) for r in records]
            batch = build_batch(entries, base_offset=offset, timestamp_ms=self.now())
            loader.feed(parse_header(batch), batch)
            offset += len(entries)
        replayed = loader.finish()
        self.coordinator.complete_loading(p)
        return replayed

    def now(self) -> int:
        return self.clock.now_ms()

    def add(self, name: str, topics: Sequence[str], **config: Any) -> Member:
        cfg = dict(MEMBER_DEFAULTS)
        cfg.update(config)
        mem = Member(name, ConsumerGroupMember(ConsumerConfig.from_dict(cfg), member_id=name))
        mem.core.subscribe(topics)
        self.members[name] = mem
        return mem

    def live(self) -> list[Member]:
        return [x for x in self.members.values() if x.alive]

    # ------------------------------------------------------------ carrying requests
    def _send(self, mem: Member, out: Outbound, replies: list[tuple[Member, int, Any]]) -> None:
        req = out.request
        now = self.now()

        def reply(resp: Any) -> None:
            replies.append((mem, out.request_id, resp))

        if isinstance(req, m.FindCoordinatorRequest):
            reply(m.FindCoordinatorResponse(error=ErrorCode.NONE, node=NODE))
        elif isinstance(req, TopicIdsMetadataRequest):
            reply(
                TopicIdsMetadataResponse(
                    topics=tuple(TopicIdMetadata(topic_id=t, name=self.names.get(t)) for t in req.topic_ids)
                )
            )
        elif isinstance(req, ConsumerGroupHeartbeatRequest):
            owned = None
            if req.topic_partitions is not None:
                owned = frozenset(
                    TopicPartition(self.names[t.topic_id], p)
                    for t in req.topic_partitions
                    for p in t.partitions
                )
            mem.timeline.append((now, "hb", (req.member_epoch, owned)))

            def hb_reply(resp: ConsumerGroupHeartbeatResponse) -> None:
                assigned = None
                if resp.assignment is not None:
                    assigned = frozenset(
                        TopicPartition(self.names[t], p) for t, ps in resp.assignment.items() for p in ps
                    )
                mem.timeline.append((now, "hb-resp", (resp.error_code, resp.member_epoch, assigned)))
                reply(resp)

            if mem.inject:
                hb_reply(ConsumerGroupHeartbeatResponse(error_code=mem.inject.pop(0)))
            else:
                call_coordinator(self.coordinator, req, hb_reply, client_id=mem.name)
        elif isinstance(req, m.OffsetCommitRequest):
            mem.timeline.append((now, "commit", frozenset(tp for tp, _ in m.committed_offsets(req))))
            call_coordinator(self.coordinator, req, reply, client_id=mem.name)
        elif isinstance(req, m.OffsetFetchRequest):
            call_coordinator(self.coordinator, req, reply, client_id=mem.name)
        else:
            raise AssertionError(f"unexpected request {req!r}")

    def _turn(self) -> bool:
        now = self.now()
        self.coordinator.poll()
        progress = False
        replies: list[tuple[Member, int, Any]] = []
        for mem in list(self.members.values()):
            if not mem.alive:
                continue
            outs = mem.core.poll(now) if mem.polling else mem.core.background(now)
            for out in outs:
                progress = True
                self._send(mem, out, replies)
        self.coordinator.poll()
        for mem, rid, resp in replies:
            if mem.alive:
                mem.core.on_response(rid, resp, now)
        for mem in self.members.values():
            if not mem.alive:
                continue
            for e in mem.core.events():
                progress = True
                if isinstance(e, RebalanceCallbackNeeded):
                    mem.timeline.append((now, "cb", (e.method, frozenset(e.partitions))))
                    mem.held.append(e)
            while mem.held and not mem.holds and mem.polling:
                progress = True
                cb = mem.held.pop(0)
                mem.core.callback_completed(cb.callback_id, None, now)
        if self.after_turn is not None:
            self.after_turn()
        return progress

    def settle(self) -> None:
        for _ in range(10_000):
            if not self._turn():
                return
        raise AssertionError("the world does not settle at one instant")

    def run(self, ms: int) -> None:
        """Let ``ms`` of protocol time pass, acting at every deadline on the way."""
        target = self.now() + ms
        while True:
            self.settle()
            now = self.now()
            candidates = [target]
            d = self.coordinator.next_deadline()
            if d is not None:
                candidates.append(d)
            for mem in self.live():
                d2 = mem.core.next_deadline_ms()
                if d2 is not None:
                    candidates.append(d2)
            later = [c for c in candidates if c > now]
            if now >= target or not later:
                break
            self.clock.set(min(later))
        self.settle()

    # ------------------------------------------------------------ views
    def owners(self) -> dict[TopicPartition, str]:
        """Who owns each partition; fails if two live members own one at once.

        A member whose application stopped polling does not count: past max.poll.interval.ms it has
        left the group and releases its partitions (onPartitionsLost) on the application's next
        poll, before that poll returns anything (Java ``transitionToStale``), so its application
        processes nothing meanwhile. Nor does one whose application is inside a rebalance callback
        (``held``): Java runs the callbacks on the application thread, which processes no record
        until they return, and a member fenced meanwhile (its rebalance timeout passed, its
        partitions given to others) runs onPartitionsLost on that thread before any record. Once
        its callbacks return it counts again, so a partition it kept wrongly is caught then."""
        own: dict[TopicPartition, str] = {}
        for mem in self.live():
            if not mem.polling or mem.held:
                continue
            for tp in mem.owned():
                assert tp not in own, f"{tp} owned by {own[tp]} and {mem.name} at {self.now()}"
                own[tp] = mem.name
        return own
