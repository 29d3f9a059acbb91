"""A manual-clock harness around :class:`ConsumerGroupManager` for the consumer-group tests.

It plays the shard's part: it keeps a keyed timer table (scheduling a key replaces its timer,
cancelling removes it), fires due timers when time advances, and after every call checks that
(1) every record survives its own encoding byte for byte and (2) replaying the whole log into a
fresh manager gives the same groups as the live one ("records are the only way state changes").
"""

from __future__ import annotations

import uuid
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field

from groupcoord.coordinator.consumer.api import (
    ConsumerGroupHeartbeatRequest,
    ConsumerGroupHeartbeatResponse,
    ConsumerGroupResult,
    TimerCancel,
    TimerSchedule,
)
from groupcoord.coordinator.consumer.assignment import (
    Assignment,
    GroupSpec,
    PartitionAssignor,
    PartitionAssignorError,
    TopicDescriber,
    assignment_of,
)
from groupcoord.coordinator.consumer.config import ConsumerGroupConfig
from groupcoord.coordinator.consumer.group import ConsumerGroup
from groupcoord.coordinator.consumer.manager import ConsumerGroupManager
from groupcoord.coordinator.consumer.metadata import TopicMetadata, TopicsImage
from groupcoord.coordinator.consumer.range_assignor import RangeAssignor
from groupcoord.coordinator.consumer.records import ConsumerGroupRecord, decode_record, encode_record
from groupcoord.coordinator.consumer.uniform_assignor import UniformAssignor

GROUP = "group-foo"
FOO = uuid.UUID("00000000-0000-0000-0000-00000000f001")
BAR = uuid.UUID("00000000-0000-0000-0000-00000000ba02")
ZAR = uuid.UUID("00000000-0000-0000-0000-0000000024a3")


def image(*topics: tuple[str, uuid.UUID, int], version: int = 1) -> TopicsImage:
    return TopicsImage(
        [TopicMetadata(topic_id=tid, name=name, num_partitions=n) for name, tid, n in topics], version=version
    )


def tps(**kw: Iterable[int]) -> Assignment:
    names = {"foo": FOO, "bar": BAR, "zar": ZAR}
    return assignment_of({names[k]: v for k, v in kw.items()})


def owned(a: Assignment) -> tuple[tuple[uuid.UUID, tuple[int, ...]], ...]:
    return tuple((t, tuple(sorted(p))) for t, p in sorted(a.items()))


class PreparedAssignor:
    """Kafka's ``MockPartitionAssignor``: returns the target the test prepared (or raises)."""

    def __init__(self, name: str) -> None:
        self._name = name
        self.prepared: dict[str, Assignment] = {}
        self.fail = False
        self.calls: list[GroupSpec] = []

    @property
    def name(self) -> str:
        return self._name

    def assign(self, group: GroupSpec, topics: TopicDescriber) -> dict[str, Assignment]:
        self.calls.append(group)
        if self.fail:
            raise PartitionAssignorError("Assignment failed.")
        return {m: self.prepared.get(m, {}) for m in group.members}


@dataclass
class Harness:
    manager: ConsumerGroupManager
    now: int = 0
    log: list[ConsumerGroupRecord] = field(default_factory=list)
    timers: dict[str, TimerSchedule] = field(default_factory=dict)
    last: ConsumerGroupResult | None = None

    @classmethod
    def make(
        cls,
        topics: TopicsImage | None = None,
        *,
        assignor: PreparedAssignor | None = None,
        config: ConsumerGroupConfig | None = None,
        ids: Iterable[str] = (),
    ) -> Harness:
        pending = list(ids)
        assignors: dict[str, PartitionAssignor] = {"uniform": UniformAssignor(), "range": RangeAssignor()}
        if assignor is not None:
            assignors[assignor.name] = assignor
        cfg = config or ConsumerGroupConfig(assignors=(assignor.name,) if assignor else ("uniform", "range"))
        manager = ConsumerGroupManager(
            config=cfg,
            assignors=assignors,
            image=topics or TopicsImage(),
            member_id_factory=lambda: pending.pop(0) if pending else uuid.uuid4().hex,
        )
        return cls(manager=manager)

    @property
    def group(self) -> ConsumerGroup:
        return self.manager.groups[GROUP]

    def apply(self, result: ConsumerGroupResult) -> ConsumerGroupResult:
        self.last = result
        self.log.extend(result.records)
        for record in result.records:
            key, value = encode_record(record)
            assert decode_record(key, value) == record
        for t in result.timers:
            if isinstance(t, TimerCancel):
                self.timers.pop(t.key, None)
            else:
                self.timers[t.key] = t
        self.check_replay()
        return result

    def heartbeat(self, **kw: object) -> ConsumerGroupHeartbeatResponse:
        kw.setdefault("group_id", GROUP)
        request = ConsumerGroupHeartbeatRequest(**kw)  # type: ignore[arg-type]
        result = self.apply(self.manager.consumer_group_heartbeat(request, self.now))
        assert result.response is not None
        return result.response

    def join(
        self,
        member_id: str,
        topics: Iterable[str] = ("foo",),
        *,
        rebalance_timeout_ms: int = 5000,
        **kw: object,
    ) -> ConsumerGroupHeartbeatResponse:
        return self.heartbeat(
            member_id=member_id,
            member_epoch=0,
            rebalance_timeout_ms=rebalance_timeout_ms,
            subscribed_topic_names=tuple(topics),
            topic_partitions=(),
            **kw,
        )

    def advance(self, ms: int) -> list[ConsumerGroupResult]:
        """Move time forward, firing due timers in deadline order."""
        self.now += ms
        fired: list[ConsumerGroupResult] = []
        while True:
            due = sorted(
                (t for t in self.timers.values() if t.deadline_ms <= self.now), key=lambda t: t.deadline_ms
            )
            if not due:
                return fired
            timer = due[0]
            del self.timers[timer.key]
            fired.append(self.apply(self.manager.on_timer(timer, self.now)))

    def check_replay(self) -> None:
        fresh = ConsumerGroupManager()
        for record in self.log:
            fresh.replay(record)
        assert set(fresh.groups) == set(self.manager.groups)
        for gid, live in self.manager.groups.items():
            loaded = fresh.groups[gid]
            assert _snapshot(loaded) == _snapshot(live), gid


def _snapshot(group: ConsumerGroup) -> Mapping[str, object]:
    return {
        "epoch": group.group_epoch,
        "assignment_epoch": group.assignment_epoch,
        "assignment_timestamp": group.assignment_timestamp,
        "hash": group.metadata_hash,
        "members": dict(group.members),
        "targets": dict(group.target_assignment),
        "owners": {t: dict(o) for t, o in group.partition_owners.items()},
        "regexes": dict(group.resolved_regexes),
        "state": group.state,
    }


def record_kinds(records: Iterable[ConsumerGroupRecord]) -> list[str]:
    """Short names of records: R3 ... R16, with a trailing '-' for a tombstone and the member."""
    from groupcoord.coordinator.consumer.records import RECORD_TYPES

    types = {k: t for t, (k, _) in RECORD_TYPES.items()}
    out = []
    for r in records:
        name = f"R{types[type(r.key)]}"
        member = getattr(r.key, "member_id", None)
        if member is not None:
            name += f"({member})"
        if r.value is None:
            name += "-"
        out.append(name)
    return out
