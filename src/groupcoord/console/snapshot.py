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
from collections.abc import Iterable, Mapping

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
from groupcoord.coordinator.consumer.assignment import Assignment
from groupcoord.coordinator.consumer.group import ConsumerGroup
from groupcoord.coordinator.consumer.metadata import TopicsImage
from groupcoord.coordinator.group import ClassicGroup, CommittedOffset, Member
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

    def consumer_group(self, group_id: str) -> tuple[ConsumerGroup, str, TopicsImage] | None:
        """A KIP-848 group (with its assignor and the topics image naming its topic ids), if
        ``group_id`` is one its shard serves."""
        coordinator = self.groups.coordinator
        shard = coordinator.runtime.shard(coordinator.partition_for(group_id))
        if shard is None:
            return None
        part = shard.groups.consumer
        served = part.served(group_id)
        return (served[0][0], served[0][1], part.manager.image) if served else None

    def _offsets(self, group_id: str) -> Mapping[tuple[str, int], CommittedOffset]:
        """A consumer group's committed offsets (kept in the classic table's offsets holder)."""
        holder = self.group(group_id)
        return {} if holder is None else holder.offsets

    def owners(self, group_id: str) -> Owners | None:
        """(topic, partition) -> member id, from the members' assignments (consumer groups)."""
        found = self.consumer_group(group_id)
        if found is not None:
            cgroup, _, image = found
            return {tp: mid for mid, tps in _consumer_owners(cgroup, image).items() for tp in tps}
        group = self.group(group_id)
        if group is None or group.protocol_type != "consumer":
            return None
        owners: dict[tuple[str, int], str] = {}
        for m in group.members.values():
            for tp in _assignment(m) or ():
                owners[tp] = m.member_id
        return owners

    def _lag(
        self,
        offsets: Mapping[tuple[str, int], CommittedOffset],
        logs: Mapping[tuple[str, int], PartitionLog],
        now_ms: int,
    ) -> tuple[int | None, float | None, list[tuple[str, int, int, int | None, int | None, float | None]]]:
        """(total lag, worst time lag, rows of (topic, partition, committed, log end, lag, time lag))."""
        total: int | None = None
        worst: float | None = None
        rows = []
        for (topic, partition), committed in offsets.items():  # no await in here
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

    def _consumer_summary(
        self, group: ConsumerGroup, assignor: str, lag: int | None, time_lag: float | None
    ) -> GroupSummary:
        """A KIP-848 group's row: its protocol type and assignor as its events name them, its
        group epoch where a classic group has its generation."""
        return GroupSummary(
            group_id=group.group_id,
            group_type="consumer",
            protocol_type="consumer",
            protocol_name=assignor,
            state=group.state.value,
            generation=group.group_epoch,
            members=len(group.members),
            lag=lag,
            time_lag_ms=time_lag,
            last_rebalance=self.history.last_rebalance(group.group_id),
        )

    def group_summary(self, group_id: str) -> GroupSummary | None:
        found = self.consumer_group(group_id)
        now = self.now_ms()
        if found is not None:
            lag, time_lag, _ = self._lag(self._offsets(group_id), self.broker.logs.partitions(), now)
            return self._consumer_summary(found[0], found[1], lag, time_lag)
        group = self.group(group_id)
        if group is None:
            return None
        lag, time_lag, _ = self._lag(group.offsets, self.broker.logs.partitions(), now)
        return self._summary(group, lag, time_lag)

    def group_detail(self, group_id: str, *, sample: bool = False) -> GroupDetail | None:
        """The group page's values; with ``sample``, its lag is also recorded in the history."""
        found = self.consumer_group(group_id)
        if found is not None:
            return self._consumer_detail(group_id, *found, sample=sample)
        group = self.group(group_id)
        if group is None:
            return None
        now = self.now_ms()
        lag, time_lag, rows = self._lag(group.offsets, self.broker.logs.partitions(), now)
        if sample and lag is not None:
            self.lags.add(group_id, now, lag, time_lag or 0.0, force=True)
        consumer = group.protocol_type == "consumer"
        members = []
        owners: dict[tuple[str, int], tuple[str, str]] = {}
        for m in group.members.values():
            assigned = _assignment(m) if consumer else None
            for tp in assigned or ():
                owners[tp] = (m.member_id, m.client_id)
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
        return GroupDetail(
            now_ms=now,
            summary=self._summary(group, lag, time_lag),
            leader=group.leader_id,
            members=tuple(members),
            pending_members=len(group.pending_members),
            partitions=self._partitions(rows, owners),
            rebalances=self.history.rebalances(group_id),
            events=self.history.events(group_id),
            lag_history=self.lags.points(group_id),
        )

    def _consumer_detail(
        self, group_id: str, group: ConsumerGroup, assignor: str, image: TopicsImage, *, sample: bool
    ) -> GroupDetail:
        """A KIP-848 group's page: ConsumerGroupDescribe's fields (group and assignment epochs;
        per member its epoch, the partitions it owns and its target), and the partitions each
        member still owns pending revocation, which own a partition as much as its assignment."""
        now = self.now_ms()
        lag, time_lag, rows = self._lag(self._offsets(group_id), self.broker.logs.partitions(), now)
        if sample and lag is not None:
            self.lags.add(group_id, now, lag, time_lag or 0.0, force=True)
        members = []
        owners: dict[tuple[str, int], tuple[str, str]] = {}
        for m in sorted(group.members.values(), key=lambda m: m.member_id):
            assigned = _named(m.assigned_partitions, image)
            revoking = _named(m.partitions_pending_revocation, image)
            for tp in (*assigned, *revoking):
                owners[tp] = (m.member_id, m.client_id)
            members.append(
                MemberView(
                    member_id=m.member_id,
                    client_id=m.client_id,
                    client_host=m.client_host,
                    instance_id=m.instance_id,
                    leader=False,
                    assignment=assigned,
                    assignment_bytes=0,
                    member_epoch=m.member_epoch,
                    target_assignment=_named(group.target(m.member_id), image),
                    pending_revocation=revoking,
                )
            )
        return GroupDetail(
            now_ms=now,
            summary=self._consumer_summary(group, assignor, lag, time_lag),
            leader=None,
            members=tuple(members),
            pending_members=0,
            partitions=self._partitions(rows, owners),
            rebalances=self.history.rebalances(group_id),
            events=self.history.events(group_id),
            lag_history=self.lags.points(group_id),
            group_epoch=group.group_epoch,
            assignment_epoch=group.assignment_epoch,
        )

    def _partitions(
        self,
        rows: Iterable[tuple[str, int, int, int | None, int | None, float | None]],
        owners: Mapping[tuple[str, int], tuple[str, str]],
    ) -> tuple[PartitionLag, ...]:
        """The committed partitions (``rows`` of :meth:`_lag`) and the owned ones, with their
        owners ((topic, partition) -> (member id, client id))."""
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
                    owner=None if owner is None else owner[0],
                    owner_client=None if owner is None else owner[1],
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
                    owner=owner[0],
                    owner_client=owner[1],
                )
            )
        partitions.sort(key=lambda p: (p.topic, p.partition))
        return tuple(partitions)

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
        consumer: dict[str, tuple[ConsumerGroup, str]] = {}
        for shard in self.groups.coordinator.runtime.shards():
            consumer.update((g.group_id, (g, assignor)) for g, assignor in shard.groups.consumer.served())
        for group in self.groups.coordinator.groups():
            gid = group.group_id
            found = consumer.pop(gid, None)
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
            if found is None:
                out.append(self._summary(group, lag, time_lag))
            else:  # a consumer group's offsets holder: the row is the consumer group's
                out.append(self._consumer_summary(found[0], found[1], lag, time_lag))
            if sample and lag is not None:
                self.lags.add(gid, now, lag, time_lag or 0.0)
            rows += 1 + len(group.offsets)
            if rows >= CHUNK:
                rows = 0
                busy += loop.time() - began
                await asyncio.sleep(0)
                began = loop.time()
                logs = self.broker.logs.partitions()
        # consumer groups that never committed (read before the yields: one list of rows)
        out.extend(self._consumer_summary(g, assignor, None, None) for g, assignor in consumer.values())
        # keep only the append times this walk used (the cache stays as large as the lagging offsets)
        self.cache = used
        self.last_walk_s = busy + loop.time() - began
        return tuple(out)

    def topics(self) -> tuple[TopicView, ...]:
        metas = self.broker.logs.topics_view
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


def _named(assignment: Assignment, image: TopicsImage) -> Partitions:
    """A consumer group's assignment (topic id -> partitions) by topic name, sorted; topics
    missing from the metadata are left out, as ConsumerGroupDescribe leaves them out."""
    out: list[tuple[str, int]] = []
    for topic_id, parts in assignment.items():
        topic = image.by_id(topic_id)
        if topic is not None:
            out.extend((topic.name, p) for p in parts)
    return tuple(sorted(out))


def _consumer_owners(group: ConsumerGroup, image: TopicsImage) -> dict[str, Partitions]:
    """member id -> the partitions it owns: assigned, or still held pending revocation."""
    return {
        m.member_id: _named(m.assigned_partitions, image) + _named(m.partitions_pending_revocation, image)
        for m in group.members.values()
    }
