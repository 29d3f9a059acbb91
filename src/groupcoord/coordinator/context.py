"""What every part of the group coordinator shard shares: time, timers, partitions, events.

The shard (:mod:`groupcoord.coordinator.shard`) is composed of a groups manager
(:mod:`~groupcoord.coordinator.groups`, with the classic protocol's handlers in
:mod:`~groupcoord.coordinator.classic_group`) and an offsets manager
(:mod:`~groupcoord.coordinator.offsets`), as Kafka 4.x's ``GroupCoordinatorShard`` is of a
``GroupMetadataManager`` and an ``OffsetMetadataManager``. They hold their own state and share
only this context: the configuration, the injected clock, the shard's one keyed timer, the
``__consumer_offsets`` partitions the shard leads or is loading, and the way a change becomes a
group event. Nothing here holds a result: every handler is given the
:class:`~groupcoord.coordinator.result.CoordinatorResult` it adds to, and returns it.
"""

from __future__ import annotations

import logging
import uuid
from collections.abc import Callable, Iterable

from groupcoord.clock import Clock
from groupcoord.coordinator.config import GroupConfig
from groupcoord.coordinator.events import EventReason, GroupEvent
from groupcoord.coordinator.group import ClassicGroup, Member
from groupcoord.coordinator.records import partition_for
from groupcoord.coordinator.result import CoordinatorResult
from groupcoord.coordinator.state import GroupState
from groupcoord.coordinator.timers import TimerKey
from groupcoord.errors import ErrorCode
from groupcoord.timer import KeyedTimer

log = logging.getLogger(__name__)

EMPTY = GroupState.EMPTY
PREPARING = GroupState.PREPARING_REBALANCE
COMPLETING = GroupState.COMPLETING_REBALANCE
STABLE = GroupState.STABLE
DEAD = GroupState.DEAD

UNKNOWN_MEMBER_ID = ""
NO_GENERATION = -1


def default_member_id(prefix: str) -> str:
    return f"{prefix}-{uuid.uuid4()}"


class ShardContext:
    """Args:
    config: the coordinator's settings.
    clock: protocol time.
    emit_events: build group events (a driver without an event sink asks for none).
    member_id_factory: makes a member id from a client id or instance id prefix.
    owned_partitions: the ``__consumer_offsets`` partitions led from the start (all by default).
    """

    def __init__(
        self,
        config: GroupConfig,
        clock: Clock,
        *,
        emit_events: bool = True,
        member_id_factory: Callable[[str], str] | None = None,
        owned_partitions: Iterable[int] | None = None,
    ) -> None:
        self.config = config
        self.clock = clock
        self.emit_events = emit_events
        self.new_member_id: Callable[[str], str] = member_id_factory or default_member_id
        n = config.offsets_topic_num_partitions
        #: The partitions this shard leads, and those of them still loading.
        self.owned: set[int] = set(range(n)) if owned_partitions is None else set(owned_partitions)
        self.loading: set[int] = set()
        #: The shard's one keyed timer (Kafka's ``CoordinatorTimer``), keys in ``timers.py``.
        self.timer: KeyedTimer[TimerKey, object] = KeyedTimer()
        self._partition_cache: dict[str, int] = {}

    def now(self) -> int:
        return self.clock.now_ms()

    def partition_for(self, group_id: str) -> int:
        p = self._partition_cache.get(group_id)
        if p is None:
            p = partition_for(group_id, self.config.offsets_topic_num_partitions)
            if len(self._partition_cache) > 100_000:
                self._partition_cache.clear()
            self._partition_cache[group_id] = p
        return p

    def status(self, group_id: str) -> ErrorCode | None:
        """Coordinator-level checks, in Kafka's order: loading, then ownership."""
        p = self.partition_for(group_id)
        if p in self.loading:
            return ErrorCode.COORDINATOR_LOAD_IN_PROGRESS
        if p not in self.owned:
            return ErrorCode.NOT_COORDINATOR
        return None

    def serves(self, group_id: str) -> bool:
        """Whether the group's partition is led and loaded (what expiry and listing look at)."""
        p = self.partition_for(group_id)
        return p in self.owned and p not in self.loading

    def emit(
        self,
        out: CoordinatorResult,
        group: ClassicGroup,
        type_: str,
        reason: EventReason,
        *,
        member: Member | None = None,
        member_id: str | None = None,
        from_state: GroupState | None = None,
        to_state: GroupState | None = None,
        client_reason: str | None = None,
    ) -> None:
        if not self.emit_events:
            return
        event = GroupEvent(
            time_ms=self.now(),
            group_id=group.group_id,
            generation=group.generation,
            type=type_,
            from_state=from_state.value if from_state is not None else None,
            to_state=to_state.value if to_state is not None else None,
            reason=reason,
            member_id=member_id if member_id is not None else (member.member_id if member else None),
            group_instance_id=member.group_instance_id if member else None,
            client_id=member.client_id if member else None,
            client_host=member.client_host if member else None,
            client_reason=client_reason,
            protocol_type=group.protocol_type,
            protocol_name=group.protocol_name,
            member_count=len(group.members),
        )
        out.events.append(event)

    def transition(
        self,
        out: CoordinatorResult,
        group: ClassicGroup,
        target: GroupState,
        reason: EventReason,
        *,
        member: Member | None = None,
        client_reason: str | None = None,
    ) -> None:
        source = group.transition_to(target, self.now())
        log.info(
            "group=%s generation=%d %s -> %s reason=%s",
            group.group_id,
            group.generation,
            source.value,
            target.value,
            reason.value,
        )
        self.emit(
            out,
            group,
            "state_change",
            reason,
            member=member,
            from_state=source,
            to_state=target,
            client_reason=client_reason,
        )
