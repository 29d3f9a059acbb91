"""The consumer-protocol member behind the interface ``ConsumerEngine`` drives.

``engine.make_core`` returns a :class:`ConsumerGroupCoordinator` when ``group.protocol`` is
``consumer``: the same calls as the classic ``consumer_core.ConsumerCoordinator`` (``subscribe``,
``poll``, ``heartbeat_poll``, ``pending``, ``on_response``, ``commit``, ``fetch_committed``,
``close``...), and the same events, so ``Consumer`` and ``AsyncConsumer`` run either member:

* a :class:`~groupcoord.client.consumer_group_events.RebalanceCallbackNeeded` becomes the
  classic ``PartitionsRevoked`` / ``PartitionsAssigned`` / ``PartitionsLost`` with its
  ``callback_id``; ``ConsumerEngine.deliver`` reports back through :meth:`callback_done` once the
  application's callback returned (from any thread: completions are queued and applied at the
  next call, under the adapter's lock), and the member's reconciliation goes on only then;
* the partitions a reconciliation adds get their committed offsets fetched, delivered as the
  classic ``StartingPositions``;
* ``close`` runs as Java's ``AsyncKafkaConsumer.close``: the release callbacks are handed to the
  application (revoked while the member holds an epoch, else lost) and the leave heartbeat does
  not wait for them.
"""

from __future__ import annotations

import logging
from collections import deque
from collections.abc import Mapping
from dataclasses import dataclass

from groupcoord.client.config import ConsumerConfig
from groupcoord.client.consumer_group_events import (
    CallbackMethod,
    CommittedOffsets,
    MemberEvent,
    Outbound,
    PartitionsAssigned,
    PartitionsLost,
    PartitionsRevoked,
    RebalanceCallbackNeeded,
    StartingPositions,
)
from groupcoord.client.consumer_group_member import ConsumerGroupMember
from groupcoord.client.types import OffsetAndMetadata, TopicPartition

log = logging.getLogger(__name__)


@dataclass(frozen=True, kw_only=True, slots=True)
class CallbackRevoked(PartitionsRevoked):
    callback_id: int


@dataclass(frozen=True, kw_only=True, slots=True)
class CallbackAssigned(PartitionsAssigned):
    callback_id: int


@dataclass(frozen=True, kw_only=True, slots=True)
class CallbackLost(PartitionsLost):
    callback_id: int


class ConsumerGroupCoordinator:
    """``ConsumerGroupMember`` as the engine's member core (see the module docstring)."""

    def __init__(self, config: ConsumerConfig, *, member_id: str | None = None) -> None:
        self.member = ConsumerGroupMember(config, member_id=member_id)
        self._completed: deque[tuple[int, BaseException | None]] = deque()
        self._starts: dict[int, tuple[TopicPartition, ...]] = {}
        self._released: list[MemberEvent] = []
        self._now = 0

    # -- what the engine's deliver() reports (any thread) ------------------------------------
    def callback_done(self, callback_id: int, error: BaseException | None) -> None:
        self._completed.append((callback_id, error))

    def _apply(self, now: int) -> None:
        self._now = max(self._now, now)
        while self._completed:
            callback_id, error = self._completed.popleft()
            self.member.callback_completed(callback_id, error, self._now)

    # -- the engine's calls ------------------------------------------------------------------
    def subscribe(self, topics: tuple[str, ...]) -> None:
        self.member.subscribe(topics)

    def subscribe_pattern(self, regex: str) -> None:
        """The pattern goes to the broker as ``SubscribedTopicRegex`` (RE2J syntax)."""
        self.member.subscribe_pattern(regex)

    def assign(self, partitions: tuple[TopicPartition, ...]) -> None:
        """Manual assignment: no membership; commits and offset fetches still work (epoch -1)."""

    def unsubscribe(self, now_ms: int) -> None:
        self._apply(now_ms)
        self.member.unsubscribe(now_ms)

    def poll(self, now_ms: int) -> list[Outbound]:
        self._apply(now_ms)
        return self.member.poll(now_ms)

    def pending(self, now_ms: int) -> list[Outbound]:
        self._apply(now_ms)
        return self.member.background(now_ms)

    heartbeat_poll = pending

    def on_response(self, request_id: int, response: object, now_ms: int) -> None:
        self.member.on_response(request_id, response, now_ms)  # type: ignore[arg-type]

    def on_failure(self, request_id: int, now_ms: int) -> None:
        self.member.on_failure(request_id, now_ms)

    def next_deadline_ms(self) -> int | None:
        if self._completed:
            return self._now
        return self.member.next_deadline_ms()

    next_heartbeat_deadline_ms = next_deadline_ms

    def update_positions(self, positions: Mapping[TopicPartition, OffsetAndMetadata]) -> None:
        self.member.update_positions(positions)

    def commit(
        self, offsets: Mapping[TopicPartition, OffsetAndMetadata] | None, now_ms: int, *, asynchronous: bool
    ) -> int:
        return self.member.commit(offsets, now_ms, asynchronous=asynchronous)

    def fetch_committed(self, partitions: tuple[TopicPartition, ...], now_ms: int) -> int:
        return self.member.fetch_committed(partitions, now_ms)

    def close(self, now_ms: int) -> None:
        self._apply(now_ms)
        owned = tuple(sorted(self.member.assignment()))
        if owned and not self.member.closed:
            if self.member.member_epoch > 0:
                self._released.append(PartitionsRevoked(partitions=owned))
            else:
                self._released.append(PartitionsLost(partitions=owned))
        self.member.close(now_ms, run_callbacks=False)

    @property
    def closed(self) -> bool:
        return self.member.closed

    def assignment(self) -> frozenset[TopicPartition]:
        return self.member.assignment()

    def events(self) -> list[MemberEvent]:
        out, self._released = self._released, []
        for event in self.member.events():
            if isinstance(event, RebalanceCallbackNeeded):
                out.append(self._classic(event))
            elif isinstance(event, CommittedOffsets) and event.fetch_id in self._starts:
                parts = self._starts.pop(event.fetch_id)
                if event.error is not None:
                    log.info(
                        "committed offsets of %s unavailable (%s): auto.offset.reset", parts, event.error
                    )
                found = dict(event.offsets)
                out.append(StartingPositions(positions=tuple((tp, found.get(tp)) for tp in parts)))
            else:
                out.append(event)
        return out

    def _classic(self, event: RebalanceCallbackNeeded) -> MemberEvent:
        cid, parts = event.callback_id, event.partitions
        if event.method is CallbackMethod.ON_PARTITIONS_REVOKED:
            return CallbackRevoked(partitions=parts, callback_id=cid)
        if event.method is CallbackMethod.ON_PARTITIONS_LOST:
            return CallbackLost(partitions=parts, callback_id=cid)
        if parts:
            self._starts[self.member.fetch_committed(parts, self._now)] = parts
        return CallbackAssigned(partitions=parts, generation_id=self.member.member_epoch, callback_id=cid)
