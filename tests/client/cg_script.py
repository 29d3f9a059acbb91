"""A scripted broker for the consumer-protocol member core: the tests answer each request by hand.

The broker side of KIP-848 (ConsumerGroupHeartbeat in groupcoord's coordinator) is not available
yet, so these tests drive :class:`ConsumerGroupMember` with the answers Kafka's coordinator gives
(reference ``kafka-consumer-protocol.md`` sections 1-3) under a :class:`ManualClock`, as Kafka's
own ``ConsumerMembershipManagerTest`` and ``ConsumerHeartbeatRequestManagerTest`` drive the Java
member with hand-made responses.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from groupcoord.client.config import ConsumerConfig
from groupcoord.client.consumer_group_events import (
    CallbackMethod,
    MemberEvent,
    Outbound,
    RebalanceCallbackNeeded,
)
from groupcoord.client.consumer_group_member import ConsumerGroupMember
from groupcoord.client.consumer_group_messages import (
    ConsumerGroupHeartbeatRequest,
    ConsumerGroupHeartbeatResponse,
    TopicIdPartitions,
)
from groupcoord.client.messages import FindCoordinatorRequest, FindCoordinatorResponse, Node
from groupcoord.client.types import TopicPartition
from groupcoord.clock import ManualClock
from groupcoord.errors import ErrorCode

GROUP = "g"
MEMBER = "member-one-xxxxxxxxxxx"
T = uuid.UUID(int=0x1111)
U = uuid.UUID(int=0x2222)
NAMES = {T: "t", U: "u"}
COORDINATOR = Node(node_id=1, host="127.0.0.1", port=9092)
START = 1_000_000


def tp(topic: str, *parts: int) -> tuple[TopicPartition, ...]:
    return tuple(TopicPartition(topic, p) for p in parts)


def owned(*entries: tuple[uuid.UUID, tuple[int, ...]]) -> tuple[TopicIdPartitions, ...]:
    return tuple(TopicIdPartitions(topic_id=t, partitions=ps) for t, ps in entries)


def ok(
    epoch: int, interval: int = 5_000, assignment: tuple[TopicIdPartitions, ...] | None = None
) -> ConsumerGroupHeartbeatResponse:
    return ConsumerGroupHeartbeatResponse(
        error_code=ErrorCode.NONE,
        member_id=MEMBER,
        member_epoch=epoch,
        heartbeat_interval_ms=interval,
        assignment=None if assignment is None else {t.topic_id: frozenset(t.partitions) for t in assignment},
    )


def err(code: ErrorCode, message: str | None = None) -> ConsumerGroupHeartbeatResponse:
    return ConsumerGroupHeartbeatResponse(error_code=code, error_message=message)


@dataclass
class Script:
    """One member core, its clock and everything it sent, in order."""

    core: ConsumerGroupMember
    clock: ManualClock
    sent: list[Outbound] = field(default_factory=list)
    unanswered: list[Outbound] = field(default_factory=list)
    callbacks: list[RebalanceCallbackNeeded] = field(default_factory=list)
    log: list[str] = field(default_factory=list)
    other_events: list[MemberEvent] = field(default_factory=list)

    @classmethod
    def new(cls, topics: Iterable[str] | None = ("t",), names: bool = True, **settings: Any) -> Script:
        config = ConsumerConfig.from_dict({"group.id": GROUP, "group.protocol": "consumer", **settings})
        core = ConsumerGroupMember(config, member_id=MEMBER, backoff_jitter=0.0)
        if names:
            core.update_topic_names(NAMES)
        s = cls(core=core, clock=ManualClock(START))
        if topics is not None:
            core.subscribe(topics)
        return s

    @property
    def now(self) -> int:
        return self.clock.now_ms()

    def _take(self, out: list[Outbound]) -> list[Outbound]:
        self.sent.extend(out)
        self.unanswered.extend(out)
        for o in out:
            self.log.append(type(o.request).__name__)
        self._collect()
        return out

    def _collect(self) -> None:
        for e in self.core.events():
            if isinstance(e, RebalanceCallbackNeeded):
                self.callbacks.append(e)
                self.log.append(f"{e.method.name}{[f'{p.topic}-{p.partition}' for p in e.partitions]}")
            else:
                self.other_events.append(e)

    def poll(self) -> list[Outbound]:
        return self._take(self.core.poll(self.now))

    def turn(self) -> list[Outbound]:
        return self._take(self.core.background(self.now))

    def advance(self, ms: int) -> list[Outbound]:
        self.clock.advance(ms)
        return self.turn()

    def answer(self, outbound: Outbound, response: object) -> list[Outbound]:
        self.unanswered.remove(outbound)
        self.core.on_response(outbound.request_id, response, self.now)  # type: ignore[arg-type]
        self._collect()
        return self.turn()

    def fail(self, outbound: Outbound) -> list[Outbound]:
        self.unanswered.remove(outbound)
        self.core.on_failure(outbound.request_id, self.now)
        self._collect()
        return self.turn()

    def pending(self, kind: type) -> list[Outbound]:
        return [o for o in self.unanswered if isinstance(o.request, kind)]

    def one(self, kind: type) -> Outbound:
        found = self.pending(kind)
        assert len(found) == 1, f"expected one unanswered {kind.__name__}, got {self.unanswered}"
        return found[0]

    def heartbeats(self) -> list[ConsumerGroupHeartbeatRequest]:
        return [o.request for o in self.sent if isinstance(o.request, ConsumerGroupHeartbeatRequest)]

    def find_coordinator(self) -> None:
        found = FindCoordinatorResponse(error=ErrorCode.NONE, node=COORDINATOR)
        self.answer(self.one(FindCoordinatorRequest), found)

    def complete(self, method: CallbackMethod, error: BaseException | None = None) -> RebalanceCallbackNeeded:
        """Complete the oldest outstanding callback, which must be ``method``."""
        cb = self.callbacks.pop(0)
        assert cb.method is method, f"expected {method.name}, next is {cb.method.name}{cb.partitions}"
        self.log.append(f"done {method.name}")
        self.core.callback_completed(cb.callback_id, error, self.now)
        self._collect()
        self.turn()
        return cb

    def join(
        self, epoch: int = 1, assignment: tuple[TopicIdPartitions, ...] = (), interval: int = 5_000
    ) -> None:
        """Poll, find the coordinator, send the join, answer it with ``assignment``, run the
        reconciliation's callbacks and send the acknowledgement: the member ends STABLE."""
        self.poll()
        self.find_coordinator()
        self.answer(self.one(ConsumerGroupHeartbeatRequest), ok(epoch, interval, assignment))
        self.complete(CallbackMethod.ON_PARTITIONS_ASSIGNED)
        ack = self.one(ConsumerGroupHeartbeatRequest)
        self.answer(ack, ok(epoch, interval))
