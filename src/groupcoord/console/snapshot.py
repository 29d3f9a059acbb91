"""The console's reads of coordinator and log state: run on the broker's loop, which owns that
state (design.md, "one owner, no locks"), returning the plain values of
:mod:`groupcoord.console.views`.

They read what the metrics snapshot reads (``metrics/snapshot.py``): the coordinator's groups
and their committed offsets, the partitions' log start and end, and for time lag the append time
of the first unconsumed record (:func:`groupcoord.metrics.snapshot.append_time`, cached by
(topic, partition, offset) from one sample to the next). Lag is defined as there, and as in the
analytics pipeline.

One group (:func:`group_detail`, :func:`group_summary`) costs in proportion to its members and
partitions. The overview (:func:`overview`) walks every group and yields to the loop every
:data:`CHUNK` groups or offsets, as the metrics snapshot does (in smaller slices).
"""

from __future__ import annotations

import asyncio
from collections.abc import Mapping

from groupcoord.broker.state import Broker
from groupcoord.console.history import GroupHistory, LagHistory, Owners
from groupcoord.console.views import (
    GroupDetail,
    GroupSummary,
    MemberView,
    Overview,
    PartitionEnds,
    PartitionLag,
    Partitions,
    TopicView,
)
from groupcoord.coordinator.group import ClassicGroup, Member
from groupcoord.formats.consumer_protocol import ConsumerProtocolError, decode_assignment
from groupcoord.metrics.snapshot import TimestampCache, append_time
from groupcoord.runtime.group_runtime import GroupRuntime
from groupcoord.storage.log import PartitionLog

#: groups or offsets between two yields to the loop (~5 ms of the loop's time each)
CHUNK = 500
#: append times cached at most (an overview walk prunes the cache to the offsets it used)
CACHE_MAX = 200_000


class Reader:
    """The broker's state as the console reads it; every method runs on the loop."""

    def __init__(self, broker: Broker, groups: GroupRuntime, history: GroupHistory, lags: LagHistory) -> None:
        self.broker = broker
        self.groups = groups
        self.history = history
        self.lags = lags
        #: append times of first unconsumed records, kept between samples
        self.cache: TimestampCache = {}
        #: loop time the last walk of every group took (:meth:`summaries`)
        self.last_walk_s = 0.0

    def now_ms(self) -> int:
        return self.broker.clock.now_ms()

    # ------------------------------------------------------------------ one group
    def group(self, group_id: str) -> ClassicGroup | None:
        return self.groups.coordinator.group(group_id)

    def owners(self, group_id: str) -> Owners | None:
        """(topic, partition) -> member id, from the members' assignments (consumer groups)."""
        group = self.group(group_id)
        if group is None or group.protocol_type != "consumer":
            return None
        owners: dict[tuple[str, int], str] = {}
        for m in group.members.values():
            for tp in _assignment(m) or ():
                owners[tp] = m.member_id
        return owners

    def _lag(
        self, group: ClassicGroup, logs: Mapping[tuple[str, int], PartitionLog], now_ms: int
    ) -> tuple[int | None, float | None, list[tuple[str, int, int, int | None, int | None, float | None]]]:
        """(total lag, worst time lag, rows of (topic, partition, committed, log end, lag, time lag))."""
        total: int | None = None
        worst: float | None = None
        rows = []
        for (topic, partition), committed in group.offsets.items():  # no await in here
            plog = logs.get((topic, partition))
            end = lag = None
            time_lag: float | None = None
            if plog is not None and not plog.closed:
                end = plog.log_end_offset
                lag = max(end - committed.offset, 0)
                if lag == 0:
                    time_lag = 0.0
                else:
                    appended = append_time(plog, topic, partition, committed.offset, self.cache)
                    if appended is not None:
                        if len(self.cache) >= CACHE_MAX:
                            self.cache.clear()
                        self.cache[topic, partition, committed.offset] = appended
                        time_lag = float(max(now_ms - appended, 0))
                total = (total or 0) + lag
                if time_lag is not None:
                    worst = time_lag if worst is None else max(worst, time_lag)
            rows.append((topic, partition, committed.offset, end, lag, time_lag))
        return total, worst, rows

    def _summary(self, group: ClassicGroup, lag: int | None, time_lag: float | None) -> GroupSummary:
        return GroupSummary(
            group_id=group.group_id,
            group_type="classic",
            protocol_type=group.protocol_type or "",
            protocol_name=group.protocol_name or "",
            state=group.state.value,
            generation=group.generation,
            members=len(group.members),
            lag=lag,
            time_lag_ms=time_lag,
            last_rebalance=self.history.last_rebalance(group.group_id),
        )

    def group_summary(self, group_id: str) -> GroupSummary | None:
        group = self.group(group_id)
        if group is None:
            return None
        now = self.now_ms()
        lag, time_lag, _ = self._lag(group, self.broker.logs.partitions(), now)
        return self._summary(group, lag, time_lag)

    def group_detail(self, group_id: str, *, sample: bool = False) -> GroupDetail | None:
        """The group page's values; with ``sample``, its lag is also recorded in the history."""
        group = self.group(group_id)
        if group is None:
            return None
        now = self.now_ms()
        lag, time_lag, rows = self._lag(group, self.broker.logs.partitions(), now)
        if sample and lag is not None:
            self.lags.add(group_id, now, lag, time_lag or 0.0, force=True)
        consumer = group.protocol_type == "consumer"
        members = []
        owners: dict[tuple[str, int], Member] = {}
        for m in group.members.values():
            assigned = _assignment(m) if consumer else None
            for tp in assigned or ():
                owners[tp] = m
            members.append(
                MemberView(
                    member_id=m.member_id,
                    client_id=m.client_id,
                    client_host=m.client_host,
                    instance_id=m.group_instance_id,
                    leader=m.member_id == group.leader_id,
                    assignment=assigned,
                    assignment_bytes=len(m.assignment),
                )
            )
        partitions = []
        seen = set()
        logs = self.broker.logs.partitions()
        for topic, partition, committed, end, plag, ptime in rows:
            seen.add((topic, partition))
            owner = owners.get((topic, partition))
            partitions.append(
                PartitionLag(
                    topic=topic,
                    partition=partition,
                    committed=committed,
                    log_end=end,
                    lag=plag,
                    time_lag_ms=ptime,
                    owner=None if owner is None else owner.member_id,
                    owner_client=None if owner is None else owner.client_id,
                )
            )
        for (topic, partition), owner in owners.items():
            if (topic, partition) in seen:
                continue
            plog = logs.get((topic, partition))
            partitions.append(
                PartitionLag(
                    topic=topic,
                    partition=partition,
                    committed=None,
                    log_end=None if plog is None or plog.closed else plog.log_end_offset,
                    lag=None,
                    time_lag_ms=None,
                    owner=owner.member_id,
                    owner_client=owner.client_id,
                )
            )
        partitions.sort(key=lambda p: (p.topic, p.partition))
        return GroupDetail(
            now_ms=now,
            summary=self._summary(group, lag, time_lag),
            leader=group.leader_id,
            members=tuple(members),
            pending_members=len(group.pending_members),
            partitions=tuple(partitions),
            rebalances=self.history.rebalances(group_id),
            events=self.history.events(group_id),
            lag_history=self.lags.points(group_id),
        )

    # ------------------------------------------------------------------ every group
    async def summaries(self, *, sample: bool) -> tuple[GroupSummary, ...]:
        """Every group's row (yielding to the loop every :data:`CHUNK` rows); with ``sample``,
        each group's lag is also recorded in the lag history. :attr:`last_walk_s` is then the
        loop time it took (yields excluded)."""
        loop = asyncio.get_running_loop()
        busy = 0.0
        began = loop.time()
        now = self.now_ms()
        logs = self.broker.logs.partitions()
        out: list[GroupSummary] = []
        used: TimestampCache = {}
        rows = 0
        cache = self.cache
        for group in self.groups.coordinator.groups():
            # _lag's sums, without its per-partition rows (this runs for every group)
            lag: int | None = None
            time_lag: float | None = None
            for (topic, partition), committed in group.offsets.items():
                plog = logs.get((topic, partition))
                if plog is None or plog.closed:
                    continue
                behind = plog.log_end_offset - committed.offset
                if behind <= 0:
                    lag = lag or 0
                    time_lag = time_lag or 0.0
                    continue
                lag = (lag or 0) + behind
                key = (topic, partition, committed.offset)
                appended = cache.get(key)
                if appended is None:
                    appended = append_time(plog, topic, partition, committed.offset, cache)
                if appended is not None:
                    used[key] = appended
                    waited = float(max(now - appended, 0))
                    time_lag = waited if time_lag is None else max(time_lag, waited)
            out.append(self._summary(group, lag, time_lag))
            if sample and lag is not None:
                self.lags.add(group.group_id, now, lag, time_lag or 0.0)
            rows += 1 + len(group.offsets)
            if rows >= CHUNK:
                rows = 0
                busy += loop.time() - began
                await asyncio.sleep(0)
                began = loop.time()
                logs = self.broker.logs.partitions()
        # keep only the append times this walk used (the cache stays as large as the lagging offsets)
        self.cache = used
        self.last_walk_s = busy + loop.time() - began
        return tuple(out)

    def topics(self) -> tuple[TopicView, ...]:
        metas = self.broker.logs.topics()
        by_topic: dict[str, list[PartitionEnds]] = {}
        for (topic, partition), plog in self.broker.logs.partitions().items():
            if plog.closed:
                continue
            by_topic.setdefault(topic, []).append(
                PartitionEnds(
                    partition=partition,
                    log_start=plog.log_start_offset,
                    log_end=plog.log_end_offset,
                    size_bytes=plog.size_bytes,
                )
            )
        return tuple(
            TopicView(
                name=name,
                internal=bool(metas[name].internal) if name in metas else name.startswith("__"),
                partitions=tuple(sorted(parts, key=lambda p: p.partition)),
            )
            for name, parts in sorted(by_topic.items())
        )

    async def overview(self) -> Overview:
        groups = await self.summaries(sample=True)
        return Overview(now_ms=self.now_ms(), groups=groups, topics=self.topics())


def _assignment(member: Member) -> Partitions | None:
    """The partitions of a consumer's ConsumerProtocol assignment; None if it does not decode."""
    if not member.assignment:
        return ()
    try:
        decoded = decode_assignment(member.assignment)
    except ConsumerProtocolError:
        return None
    return tuple(sorted((t, p) for t, ps in decoded.partitions for p in ps))
